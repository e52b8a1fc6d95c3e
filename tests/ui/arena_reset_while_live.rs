// `reset` needs `&mut`: no allocation may be alive across it.
use ludus::memory::LinearArena;

fn main() {
    let mut bytes = [0u8; 64];
    let mut arena = LinearArena::new(&mut bytes);
    let x = arena.try_alloc_pod(1u64).unwrap();
    arena.reset();
    *x += 1;
}
