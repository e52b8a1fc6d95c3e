// A scope cannot open while an arena-level allocation is alive (the scope would rewind over it
// only if it came later, but the arena could also hand out overlapping blocks afterwards).
use ludus::memory::LinearArena;

fn main() {
    let mut bytes = [0u8; 64];
    let mut arena = LinearArena::new(&mut bytes);
    let x = arena.try_alloc_pod(1u64).unwrap();
    arena.scope(|s| {
        s.try_alloc_pod(2u64).unwrap();
    });
    *x += 1;
}
