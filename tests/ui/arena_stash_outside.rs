// An inner scope's allocation cannot be stored in a variable that outlives the scope.
use ludus::memory::LinearArena;

fn main() {
    let mut bytes = [0u8; 64];
    let mut arena = LinearArena::new(&mut bytes);
    arena.scope(|outer| {
        let mut keep: Option<&mut u32> = None;
        outer.scope(|inner| {
            keep = Some(inner.try_alloc_pod(1u32).unwrap());
        });
        if let Some(k) = keep {
            *k += 1;
        }
    });
}
