//! Sorting and finding by UUID in about two passes: a counting pass into 65 536 buckets on the
//! top 16 bits of the order, then each bucket sorted on its own.
//!
//! Random (v4) UUIDs leave a handful per bucket, so a sort costs two passes over the items and a
//! lookup one bucket, instead of `log n` cache misses. Keys crafted to share their top bits end
//! up in one bucket, which costs what one ordinary sort or binary search costs (`n log n`,
//! `log n`): never worse than the plain algorithms, never quadratic.

use core::cmp::Ordering;

/// Buckets: one per value of the order's top 16 bits.
const BUCKETS: usize = 1 << 16;

/// Below this many items a plain sort is cheaper than the bucket table.
const MIN_ITEMS: usize = BUCKETS / 16;

/// Where each bucket starts in a [`bucket_sort`]ed slice (`BUCKETS + 1` entries), or nothing
/// when the slice was sorted the plain way.
#[derive(Debug, Default)]
pub(crate) struct Starts(Vec<u32>);

impl Starts {
    /// The range of `items` that can hold keys whose top 16 bits are `top`: the whole slice
    /// when there is no table.
    #[inline]
    pub(crate) fn range(&self, top: u16, len: usize) -> core::ops::Range<usize> {
        match self.0.get(usize::from(top)..usize::from(top) + 2) {
            Some(&[a, b]) => a as usize..b as usize,
            _ => 0..len,
        }
    }
}

/// Sorts `items` by `cmp`, where `top` is the order's first 16 bits (`top(a) < top(b)` implies
/// `cmp(a, b) == Less`), and returns the bucket starts (module docs).
pub(crate) fn bucket_sort<T: Copy>(
    items: &mut Vec<T>,
    top: impl Fn(&T) -> u16,
    cmp: impl FnMut(&T, &T) -> Ordering,
) -> Starts {
    if items.len() < MIN_ITEMS || u32::try_from(items.len()).is_err() {
        items.sort_unstable_by(cmp);
        return Starts::default();
    }
    Starts(scatter::<T, 16>(items, top, cmp))
}

/// Sorts `items` (fewer than 2^32) into `2^BITS` buckets on the top `BITS` of `top`, each
/// bucket then sorted on its own, and returns the bucket starts (`2^BITS + 1` entries).
/// Generic in `BITS` only so Miri can run the same code on a few buckets.
fn scatter<T: Copy, const BITS: u32>(
    items: &mut Vec<T>,
    top: impl Fn(&T) -> u16,
    mut cmp: impl FnMut(&T, &T) -> Ordering,
) -> Vec<u32> {
    // The cursors are `u32`: more items would wrap them and leave indices unwritten.
    assert!(
        u32::try_from(items.len()).is_ok(),
        "bucket_sort: 2^32 items or more"
    );
    let buckets = 1usize << BITS;
    let bucket = |it: &T| usize::from(top(it) >> (16 - BITS));
    let mut next = vec![0u32; buckets + 1];
    for it in items.iter() {
        next[bucket(it) + 1] += 1;
    }
    for b in 0..buckets {
        next[b + 1] += next[b];
    }
    let starts = next.clone();
    let mut out: Vec<T> = Vec::with_capacity(items.len());
    let spare = &mut out.spare_capacity_mut()[..items.len()];
    for it in items.iter() {
        let slot = &mut next[bucket(it)];
        spare[*slot as usize].write(*it);
        *slot += 1;
    }
    // Each cursor walked its bucket from its start; ending at the next bucket's start means
    // it wrote every index of its bucket (checked in release: `top` is a caller's closure).
    assert!(
        next[..buckets] == starts[1..],
        "bucket_sort: `top` changed its answer"
    );
    // SAFETY: by the check above every index in `0..starts[buckets] == items.len()` was
    // written (bounds-checked writes into the spare capacity, never past it; fewer than 2^32
    // items, asserted first, so no `u32` cursor wrapped).
    unsafe { out.set_len(items.len()) };
    for w in starts.windows(2) {
        if w[1] - w[0] > 1 {
            out[w[0] as usize..w[1] as usize].sort_unstable_by(&mut cmp);
        }
    }
    *items = out;
    starts
}

/// Below this many items [`sort_by_high32`] uses a plain stable sort.
const RADIX_MIN: usize = 1024;

/// Sorts `items` by their top 32 bits, stably (items with equal top bits keep their order):
/// three counting passes of 11 bits, each a scatter into 2048 cursors that stay in L1.
///
/// Callers pack `order << 32 | index`, so the low half names the item and the sort moves 8
/// bytes per item; [`sort_ties`] then orders the runs whose top bits tie.
pub(crate) fn sort_by_high32(items: &mut Vec<u64>) {
    if items.len() < RADIX_MIN || u32::try_from(items.len()).is_err() {
        items.sort_by_key(|&v| v >> 32);
        return;
    }
    const SHIFTS: [u32; 3] = [32, 43, 54];
    const DIGIT: u64 = 0x7ff;
    let mut next = [[0u32; 2048]; 3];
    for &v in items.iter() {
        for (count, shift) in next.iter_mut().zip(SHIFTS) {
            count[(v >> shift & DIGIT) as usize] += 1;
        }
    }
    let mut other = vec![0u64; items.len()];
    for (cursor, shift) in next.iter_mut().zip(SHIFTS) {
        let mut sum = 0u32;
        for c in cursor.iter_mut() {
            (*c, sum) = (sum, sum + *c);
        }
        for &v in items.iter() {
            let c = &mut cursor[(v >> shift & DIGIT) as usize];
            other[*c as usize] = v;
            *c += 1;
        }
        core::mem::swap(items, &mut other);
    }
}

/// Sorts each run of `items` (sorted by [`sort_by_high32`]) whose top 32 bits tie by `cmp` of
/// the items' low halves. Random keys leave few and short runs; keys crafted to tie cost one
/// comparison sort of their run (`n log n`), never more.
pub(crate) fn sort_ties(items: &mut [u64], mut cmp: impl FnMut(u32, u32) -> Ordering) {
    let mut start = 0;
    while start < items.len() {
        let top = items[start] >> 32;
        let len = items[start..]
            .iter()
            .take_while(|&&v| v >> 32 == top)
            .count();
        if len > 1 {
            items[start..start + len].sort_unstable_by(|&a, &b| cmp(a as u32, b as u32));
        }
        start += len;
    }
}

/// The top 16 bits of a UUID held as a big-endian `u128`.
#[inline]
pub(crate) fn top16(key: u128) -> u16 {
    (key >> 112) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A xorshift64 stream from `state` (nonzero).
    fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    /// Against a plain sort and a plain binary search, small and large, with random keys and
    /// with keys that all share their top bits.
    #[test]
    fn agrees_with_a_plain_sort_and_search() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        let sizes: &[usize] = if cfg!(miri) {
            &[0, 1, 100]
        } else {
            &[0, 1, 100, MIN_ITEMS, 20_000]
        };
        for &n in sizes {
            for shared in [false, true] {
                let mut items: Vec<(u128, u32)> = (0..n as u32)
                    .map(|i| {
                        let k = u128::from(next()) << 64 | u128::from(next());
                        let k = if shared {
                            k & !(0xffff << 112) | 0x4242 << 112
                        } else {
                            k
                        };
                        (k, i)
                    })
                    .collect();
                let mut plain = items.clone();
                plain.sort_unstable();
                let starts = bucket_sort(&mut items, |e| top16(e.0), |a, b| a.cmp(b));
                assert_eq!(items, plain, "n {n} shared {shared}");
                for probe in plain
                    .iter()
                    .map(|e| e.0)
                    .chain([0, u128::MAX, next().into()])
                {
                    let r = starts.range(top16(probe), items.len());
                    let found = items[r].binary_search_by_key(&probe, |e| e.0).is_ok();
                    assert_eq!(found, plain.binary_search_by_key(&probe, |e| e.0).is_ok());
                }
            }
        }
    }

    /// The bucket path itself on few buckets (so Miri runs its `set_len`), against a plain
    /// sort; and a `top` that changes its answer is refused, never trusted.
    #[test]
    fn scatter_agrees_and_refuses_an_unstable_top() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for n in [1usize, 7, 300] {
            for shared in [false, true] {
                let mut items: Vec<(u16, u32)> = (0..n as u32)
                    .map(|i| {
                        state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                        ((state >> 48) as u16 | if shared { 0xf000 } else { 0 }, i)
                    })
                    .collect();
                let mut plain = items.clone();
                plain.sort_unstable();
                let starts = scatter::<_, 4>(&mut items, |e| e.0, |a, b| a.cmp(b));
                assert_eq!(items, plain, "n {n} shared {shared}");
                assert_eq!((starts.len(), starts[16]), (17, n as u32));
            }
        }
        let calls = core::cell::Cell::new(0u32);
        let unstable = |_: &(u16, u32)| {
            calls.set(calls.get() + 1);
            if calls.get() % 3 == 0 {
                0xffff
            } else {
                0
            }
        };
        let mut items: Vec<(u16, u32)> = (0..8).map(|i| (0, i)).collect();
        let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            scatter::<_, 4>(&mut items, unstable, |a, b| a.cmp(b))
        }));
        assert!(refused.is_err());
    }

    /// `sort_by_high32` against a plain stable sort (random tops, tops drawn from three
    /// values, about two items per value; below and above the radix threshold), and
    /// `sort_ties` against a plain sort by (top, rank of the low half in an outside table), as
    /// save uses them.
    #[test]
    fn radix_and_ties_agree_with_plain_sorts() {
        let mut next = xorshift(0x6a09_e667_f3bc_c909);
        let sizes: &[usize] = if cfg!(miri) {
            &[0, 1, 50, RADIX_MIN + 3]
        } else {
            &[0, 1, 50, RADIX_MIN - 1, RADIX_MIN, 30_000]
        };
        for &n in sizes {
            // Random tops; three tops; about two items per top (runs of every short length).
            // Under Miri the radix size runs with random tops only (the unsafe part is the
            // same for every tie pattern).
            let ties = [0, 3, n as u64 / 2 + 1];
            let ties = if cfg!(miri) && n >= RADIX_MIN {
                &ties[..1]
            } else {
                &ties[..]
            };
            for &tied in ties {
                // The low half is the item's index, so stability is visible.
                let items: Vec<u64> = (0..n as u64)
                    .map(|i| {
                        let top = if tied == 0 {
                            next() >> 32
                        } else {
                            next() % tied
                        };
                        top << 32 | i
                    })
                    .collect();
                let mut radix = items.clone();
                sort_by_high32(&mut radix);
                let mut plain = items.clone();
                plain.sort_by_key(|&v| v >> 32);
                assert_eq!(radix, plain, "n {n} tied {tied}");
                // Ties by an outside key of the index (a permutation, so no equal keys).
                let outside: Vec<u64> = (0..n as u64)
                    .map(|i| i.wrapping_mul(0x9e37) % 65_521 * 1_000_000 + i)
                    .collect();
                sort_ties(&mut radix, |a, b| {
                    outside[a as usize].cmp(&outside[b as usize])
                });
                plain.sort_by_key(|&v| (v >> 32, outside[v as u32 as usize]));
                assert_eq!(radix, plain, "ties: n {n} tied {tied}");
            }
        }
    }
}
