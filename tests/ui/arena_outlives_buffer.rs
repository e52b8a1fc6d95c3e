// Neither the arena nor its allocations outlive the borrowed bytes.
use ludus::memory::LinearArena;

fn main() {
    let x;
    {
        let mut bytes = [0u8; 64];
        let arena = LinearArena::new(&mut bytes);
        x = arena.try_alloc_pod(1u64).unwrap();
    }
    *x += 1;
}
