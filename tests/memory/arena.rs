//! `LinearArena` / `ScratchScope`: alignment from the real address (padding counted), an arena
//! moved to another thread with its bytes, exhaustion that leaves the cursor where it was,
//! zero-sized slices, scopes that rewind and nest (a panicking one too), byte views that are
//! always initialized; and a property test of random allocate / scope / reset sequences against
//! a model of live ranges.

use ludus::memory::{AllocationLayout, ArenaError, LinearArena, ScratchScope};
use proptest::prelude::*;

fn layout(size: usize, align: usize) -> AllocationLayout {
    AllocationLayout::new(size, align).unwrap()
}

#[test]
fn alignment_comes_from_the_real_address_and_padding_counts() {
    // Start one byte past an 8-aligned address, so offset 0 is misaligned for `u64`.
    let mut backing = [0u64; 9];
    let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut backing);
    let arena = LinearArena::new(&mut bytes[1..]);
    arena.try_alloc_pod(1u8).unwrap();
    assert_eq!(arena.used(), 1);
    let x = arena.try_alloc_pod(2u64).unwrap();
    assert_eq!((x as *mut u64).addr() % 8, 0);
    // base is 8k+1; after one byte the cursor is at 8k+2; padding 6 bytes, then 8 bytes.
    assert_eq!(arena.used(), 1 + 6 + 8);
    assert_eq!(arena.high_water(), 15);
}

#[test]
fn an_arena_can_move_to_another_thread_with_its_bytes() {
    // 8-aligned backing: the `used() == 4` below must not depend on where the allocator (or
    // Miri, whose addresses depend on everything allocated before) puts a byte vector.
    let mut backing = vec![0u64; 8];
    let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut backing);
    let mut arena = LinearArena::new(bytes);
    arena.try_alloc_pod(1u32).unwrap();
    let used = std::thread::scope(|s| {
        s.spawn(move || {
            arena.scope(|sc| sc.try_alloc_pod(2u64).map(|x| *x).unwrap());
            arena.used()
        })
        .join()
        .unwrap()
    });
    assert_eq!(used, 4);
}

#[test]
fn exhaustion_leaves_the_cursor_unchanged() {
    #[repr(align(64))]
    struct Buf([u8; 32]);
    let mut buf = Buf([0; 32]);
    let arena = LinearArena::new(&mut buf.0);
    arena.try_alloc_slice_fill(20, 0u8).unwrap();
    let used = arena.used();
    let err = arena.try_alloc_bytes(layout(16, 1)).unwrap_err();
    assert_eq!(
        err,
        ArenaError::Exhausted {
            size: 16,
            align: 1,
            remaining: 12
        }
    );
    assert_eq!(arena.used(), used);
    // Padding can be what does not fit: cursor 20 rounds up to 32 for a 16-aligned byte.
    assert_eq!(
        arena.try_alloc_bytes(layout(1, 16)).unwrap_err(),
        ArenaError::Exhausted {
            size: 1,
            align: 16,
            remaining: 12
        }
    );
    assert!(arena.try_alloc_slice_zeroed::<u64>(usize::MAX).is_err());
    assert_eq!(arena.used(), used);
    assert_eq!(arena.capacity(), 32);
    // The exact remainder still fits: no hidden reserve.
    arena.try_alloc_bytes(layout(12, 1)).unwrap();
    assert_eq!(arena.remaining(), 0);
}

#[test]
fn zero_sized_slices_of_any_length_return_at_once_and_take_no_bytes() {
    // A per-element loop over `usize::MAX` ZSTs would not finish in debug builds or under Miri;
    // the fill must skip the writes, and the cursor must not move (`()` has alignment 1).
    let mut bytes = [0u8; 8];
    let mut arena = LinearArena::new(&mut bytes);
    arena.try_alloc_pod(1u8).unwrap();
    let (used, high) = (arena.used(), arena.high_water());
    let units = arena.try_alloc_slice_fill(usize::MAX, ()).unwrap();
    assert_eq!(units.len(), usize::MAX);
    assert_eq!(
        arena
            .try_alloc_slice_zeroed::<()>(usize::MAX)
            .unwrap()
            .len(),
        usize::MAX
    );
    assert_eq!((arena.used(), arena.high_water()), (used, high));
    arena.scope(|s| {
        assert_eq!(
            s.try_alloc_slice_fill(usize::MAX, ()).unwrap().len(),
            usize::MAX
        );
        assert_eq!(
            s.try_alloc_slice_zeroed::<()>(usize::MAX).unwrap().len(),
            usize::MAX
        );
        assert_eq!(s.used(), used);
    });
    assert_eq!((arena.used(), arena.high_water()), (used, high));
}

#[test]
fn scopes_rewind_and_nest() {
    let mut bytes = vec![0u8; 256];
    let mut arena = LinearArena::new(&mut bytes);
    arena.scope(|outer| {
        let a = outer.try_alloc_slice_copy(&[1u16, 2, 3]).unwrap();
        let mark = outer.used();
        outer.scope(|inner| {
            inner.try_alloc_slice_fill(10, 9u32).unwrap();
            assert!(inner.used() > mark);
        });
        assert_eq!(outer.used(), mark);
        a[0] = 7;
        assert_eq!(a, &[7, 2, 3]);
    });
    assert_eq!(arena.used(), 0);
    assert!(arena.high_water() >= 46);
}

#[test]
fn a_panicking_scope_still_rewinds() {
    let mut bytes = [0u8; 64];
    let mut arena = LinearArena::new(&mut bytes);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        arena.scope(|s| {
            s.try_alloc_pod(1u64).unwrap();
            panic!("boom");
        })
    }));
    assert!(r.is_err());
    assert_eq!(arena.used(), 0);
}

#[test]
#[cfg(debug_assertions)]
fn rewound_bytes_are_poisoned_in_debug_builds() {
    let mut bytes = [0u8; 16];
    {
        let mut arena = LinearArena::new(&mut bytes);
        arena.try_alloc_pod(0u32).unwrap();
        arena.scope(|s| {
            s.try_alloc_pod(0x1111_1111u32).unwrap();
        });
        arena.reset();
    }
    assert!(
        bytes[..8].iter().all(|&b| b == ludus::memory::POISON),
        "{bytes:?}"
    );
}

/// Byte views never expose uninitialized memory (Miri checks every read here): over an
/// uninitialized buffer they come zeroed, even where earlier allocations wrote and were
/// rewound; over an initialized buffer the caller reads every byte back once the arena is gone.
#[test]
fn byte_views_are_always_initialized() {
    let mut backing: Vec<u8> = Vec::with_capacity(64);
    {
        let mut arena = LinearArena::from_uninit(backing.spare_capacity_mut());
        arena.scope(|s| {
            s.try_alloc_pod(u64::MAX).unwrap();
            assert!(s
                .try_alloc_bytes(layout(24, 1))
                .unwrap()
                .iter()
                .all(|&b| b == 0));
        });
        let b = arena.try_alloc_bytes(layout(40, 8)).unwrap();
        assert!(b.iter().all(|&b| b == 0), "{b:?}");
        b.fill(9);
        arena.reset();
        assert!(arena
            .try_alloc_bytes(layout(64, 1))
            .unwrap()
            .iter()
            .all(|&b| b == 0));
    }
    let mut bytes = [7u8; 16];
    {
        let arena = LinearArena::new(&mut bytes);
        arena.try_alloc_pod(1u16).unwrap();
        let b = arena.try_alloc_bytes(layout(8, 1)).unwrap();
        // The caller's bytes, as they were.
        assert_eq!(b, &[7; 8]);
        b.fill(3);
    }
    let sum: u32 = bytes.iter().map(|&b| u32::from(b)).sum();
    assert_eq!(sum, 1 + 3 * 8 + 7 * 6);
}

#[derive(Debug, Clone)]
enum Op {
    Alloc { size: usize, align_shift: u32 },
    Push,
    Pop,
    Reset,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0usize..48, 0u32..7).prop_map(|(size, align_shift)| Op::Alloc { size, align_shift }),
        2 => Just(Op::Push),
        2 => Just(Op::Pop),
        1 => Just(Op::Reset),
    ]
}

/// The model: live ranges `[start, end)` with their fill byte, and the arena's cursor.
struct Model {
    base: usize,
    capacity: usize,
    cursor: usize,
    high_water: usize,
    live: Vec<(usize, usize, u8)>,
    next_fill: u8,
}

impl Model {
    /// Checks an allocation result (block address and length) against the model and
    /// records it; returns the byte the caller must fill the block with.
    fn alloc(
        &mut self,
        got: Result<(usize, usize), ArenaError>,
        l: AllocationLayout,
        used: usize,
    ) -> Option<u8> {
        let addr = self.base + self.cursor;
        let pad = addr.wrapping_neg() & (l.align() - 1);
        let fits = self.cursor + pad + l.size() <= self.capacity;
        match got {
            Ok((block, len)) => {
                assert!(fits, "allocation beyond capacity");
                let start = block - self.base;
                let end = start + len;
                assert_eq!(len, l.size());
                assert_eq!(block % l.align(), 0, "misaligned");
                assert_eq!(
                    start,
                    self.cursor + pad,
                    "padding computed from the real address"
                );
                assert!(end <= self.capacity);
                for &(s, e, _) in &self.live {
                    assert!(
                        end <= s || e <= start || start == end,
                        "overlap [{start},{end}) with [{s},{e})"
                    );
                }
                self.cursor = end;
                self.high_water = self.high_water.max(end);
                assert_eq!(used, self.cursor);
                let fill = self.next_fill;
                self.next_fill = self.next_fill.wrapping_add(1);
                self.live.push((start, end, fill));
                Some(fill)
            }
            Err(e) => {
                assert!(!fits, "refused a request that fits: {e}");
                assert_eq!(used, self.cursor, "failure moved the cursor");
                None
            }
        }
    }

    /// Forgets allocations at or above `mark`.
    fn rewind(&mut self, mark: usize, live_len: usize) {
        self.cursor = mark;
        self.live.truncate(live_len);
    }
}

/// Runs ops inside `scope` until a `Pop` (or the end); checks its own blocks on exit.
fn run_scope(s: &mut ScratchScope<'_>, ops: &mut std::slice::Iter<'_, Op>, m: &mut Model) {
    let mark = s.used();
    let live_len = m.live.len();
    let mut mine: Vec<(&mut [u8], u8)> = Vec::new();
    while let Some(op) = ops.next() {
        match *op {
            Op::Alloc { size, align_shift } => {
                let l = layout(size, 1 << align_shift);
                match s.try_alloc_bytes(l) {
                    Ok(b) => {
                        let fill = m
                            .alloc(Ok((b.as_ptr().addr(), b.len())), l, s.used())
                            .unwrap();
                        b.fill(fill);
                        mine.push((b, fill));
                    }
                    Err(e) => assert_eq!(m.alloc(Err(e), l, s.used()), None),
                }
            }
            Op::Push => s.scope(|inner| run_scope(inner, ops, m)),
            Op::Pop => break,
            Op::Reset => {} // not allowed while a scope lives: the API has no way to ask
        }
        assert!(s.used() <= s.capacity());
    }
    for (b, f) in &mine {
        let intact = b.iter().all(|x| x == f);
        assert!(intact, "a nested scope overwrote a live block");
    }
    drop(mine);
    m.rewind(mark, live_len);
}

proptest! {
    #![proptest_config(crate::support::proptest_config(256, 8))]

    #[test]
    fn random_sequences_match_the_model(ops in proptest::collection::vec(op(), 0..64), offset in 0usize..8, cap in 0usize..200) {
        let mut backing = vec![0u8; cap + 8];
        let bytes = &mut backing[offset..offset + cap];
        let base = bytes.as_ptr().addr();
        let mut arena = LinearArena::new(bytes);
        let mut m = Model { base, capacity: cap, cursor: 0, high_water: 0, live: Vec::new(), next_fill: 1 };
        let mut it = ops.iter();
        while let Some(op) = it.next() {
            match *op {
                Op::Reset => {
                    arena.reset();
                    m.rewind(0, 0);
                }
                Op::Push => {
                    let mut rest = it.clone();
                    arena.scope(|s| run_scope(s, &mut rest, &mut m));
                    it = rest;
                }
                Op::Pop => {}
                Op::Alloc { size, align_shift } => {
                    // Top-level allocations only live until the next top-level op.
                    let l = layout(size, 1 << align_shift);
                    let got = arena.try_alloc_bytes(l).map(|b| (b.as_ptr().addr(), b.len()));
                    let used = arena.used();
                    m.alloc(got, l, used);
                }
            }
            prop_assert_eq!(arena.used(), m.cursor);
            prop_assert!(arena.used() <= arena.capacity());
            prop_assert_eq!(arena.high_water(), m.high_water);
        }
    }
}
