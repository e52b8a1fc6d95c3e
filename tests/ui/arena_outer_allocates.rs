// While an inner scope lives, its parent can neither allocate nor open another scope.
use ludus::memory::LinearArena;

fn main() {
    let mut bytes = [0u8; 64];
    let mut arena = LinearArena::new(&mut bytes);
    arena.scope(|outer| {
        outer.scope(|inner| {
            let a = inner.try_alloc_pod(1u32).unwrap();
            let b = outer.try_alloc_pod(2u32).unwrap();
            *a += *b;
        });
    });
}
