// Scopes carry invariant brands: two scopes can never be swapped (which would make one arena's
// rewind run while its allocations are still in use).
use ludus::memory::LinearArena;

fn main() {
    let (mut b1, mut b2) = ([0u8; 64], [0u8; 64]);
    let (mut a1, mut a2) = (LinearArena::new(&mut b1), LinearArena::new(&mut b2));
    a1.scope(|s1| {
        a2.scope(|s2| {
            std::mem::swap(s1, s2);
        });
    });
}
