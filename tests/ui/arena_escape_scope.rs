// An allocation cannot be returned out of its scope's closure.
use ludus::memory::LinearArena;

fn main() {
    let mut bytes = [0u8; 64];
    let mut arena = LinearArena::new(&mut bytes);
    let leaked = arena.scope(|s| s.try_alloc_pod(1u32).unwrap());
    *leaked += 1;
}
