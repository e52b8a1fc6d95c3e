//! Minting: OS-backed single and batched samples are version-4 and distinct, `mint_unique`
//! through a batched minter, entropy failure told apart from a conflict, typed errors from
//! every door, a batched minter recovering from a failed refill without repeats, fills of
//! every size never handing out zeroed or repeated bytes, and a forked child that does not
//! repeat its parent's ids.

use std::collections::HashSet;

use ludus::identity::test_entropy::{FailingEntropy, SeqEntropy};
use ludus::identity::{
    mint_unique, mint_v4, AssetId, BatchedMinter, EntropyError, EntropySource, MintError,
    OsEntropy, PersistentId, SourceObjectId, BATCH_BYTES, BATCH_IDS, MINT_ATTEMPTS,
};
use uuid::Uuid;

fn sample_size() -> usize {
    if cfg!(miri) {
        64
    } else {
        4096
    }
}

fn assert_v4_distinct(ids: impl IntoIterator<Item = Uuid>) {
    let mut seen = HashSet::new();
    for id in ids {
        assert_eq!(id.get_version_num(), 4, "{id}");
        assert_eq!(id.get_variant(), uuid::Variant::RFC4122, "{id}");
        assert!(seen.insert(id), "duplicate {id}");
    }
    assert_eq!(seen.len(), sample_size());
}

#[test]
fn os_single_and_batched_samples_are_v4_and_distinct() {
    assert_v4_distinct((0..sample_size()).map(|_| mint_v4(&mut OsEntropy).unwrap()));
    let mut minter = BatchedMinter::new();
    assert_v4_distinct((0..sample_size()).map(|_| minter.mint().unwrap()));
}

#[test]
fn batched_minter_serves_mint_unique() {
    let mut minter = BatchedMinter::with_source(SeqEntropy::new(1));
    let taken: HashSet<Uuid> = (0..3).map(|_| minter.mint().unwrap()).collect();
    let mut replay = BatchedMinter::with_source(SeqEntropy::new(1));
    let mut calls = 0;
    let id = mint_unique(&mut replay, |c| {
        calls += 1;
        taken.contains(c)
    })
    .unwrap();
    assert_eq!(calls, MINT_ATTEMPTS);
    assert!(!taken.contains(&id));
}

#[test]
fn entropy_failure_and_conflict_are_distinct() {
    let mut dead = FailingEntropy::new(OsEntropy, 1);
    assert!(matches!(
        mint_unique(&mut dead, |_| false),
        Err(MintError::Entropy(_))
    ));
    assert!(matches!(
        mint_unique(&mut OsEntropy, |_| true),
        Err(MintError::Conflict(_))
    ));
    let mut minter = BatchedMinter::with_source(FailingEntropy::new(OsEntropy, 1));
    assert_eq!(minter.mint(), Err(EntropyError::Source { code: 1 }));
}

/// Fails exactly its `n`-th call (scribbling over dest), succeeds otherwise.
struct FlakyOnce {
    inner: SeqEntropy,
    calls: u64,
    fail_on: u64,
}
impl EntropySource for FlakyOnce {
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), EntropyError> {
        self.calls += 1;
        if self.calls == self.fail_on {
            dest.fill(0xEE);
            return Err(EntropyError::Source { code: 7 });
        }
        self.inner.fill(dest)
    }
}

/// A failed refill in the middle of a run: the error is typed, nothing is minted, and the
/// recovered minter never repeats an id or byte window.
#[test]
#[cfg_attr(
    miri,
    ignore = "safe code only (Miri runs the formatting, handle and token tests)"
)]
fn batched_minter_recovers_after_transient_failure_without_repeats() {
    let mut m = BatchedMinter::with_source(FlakyOnce {
        inner: SeqEntropy::new(3),
        calls: 0,
        fail_on: 2,
    });
    let mut ids = HashSet::new();
    for _ in 0..BATCH_IDS {
        assert!(ids.insert(m.mint().unwrap()));
    }
    assert_eq!(m.mint(), Err(EntropyError::Source { code: 7 }));
    assert_eq!(m.buffered_bytes(), 0);
    let rounds = if cfg!(miri) { 4 } else { 3 * BATCH_IDS };
    for _ in 0..rounds {
        let id = m.mint().unwrap();
        assert_eq!(id.get_version_num(), 4);
        assert!(ids.insert(id), "repeat {id}");
    }
}

/// Mixed-size fills through a BatchedMinter: no 8-byte window repeats, none is all-0xEE or
/// all-zero (would indicate a scribbled or zeroed buffer handed out).
#[test]
#[cfg_attr(
    miri,
    ignore = "safe code only (Miri runs the formatting, handle and token tests)"
)]
fn batched_fill_sizes_never_hand_out_zeroed_or_repeated_bytes() {
    let mut m = BatchedMinter::with_source(SeqEntropy::new(42));
    let sizes: &[usize] = if cfg!(miri) {
        &[0, 1, 16, 4000, 97, BATCH_BYTES, BATCH_BYTES + 8]
    } else {
        &[
            0,
            1,
            7,
            8,
            15,
            16,
            17,
            4000,
            96,
            97,
            BATCH_BYTES,
            BATCH_BYTES - 1,
            BATCH_BYTES + 8,
            3,
        ]
    };
    let mut windows = HashSet::new();
    for &len in sizes.iter().cycle().take(sizes.len() * 3) {
        let mut d = vec![0u8; len];
        m.fill(&mut d).unwrap();
        for w in d.chunks_exact(8) {
            assert!(w != [0; 8], "zero window from len {len}");
            assert!(windows.insert(w.to_vec()), "repeated window (len {len})");
        }
    }
}

#[test]
#[cfg_attr(
    miri,
    ignore = "safe code only (Miri runs the formatting, handle and token tests)"
)]
fn failing_sources_give_typed_errors_everywhere() {
    let fail = || FailingEntropy::new(SeqEntropy::new(1), 1);
    assert_eq!(mint_v4(&mut fail()), Err(EntropyError::Source { code: 1 }));
    assert_eq!(
        mint_unique(&mut fail(), |_| false),
        Err(MintError::Entropy(EntropyError::Source { code: 1 }))
    );
    assert!(AssetId::mint(&mut fail()).is_err());
    assert!(SourceObjectId::mint_unique(&mut fail(), |_| false).is_err());
    assert!(PersistentId::mint_spawned(&mut fail()).is_err());
    let mut m = BatchedMinter::with_source(fail());
    assert_eq!(m.mint(), Err(EntropyError::Source { code: 1 }));
    let mut big = vec![0u8; BATCH_BYTES + 1];
    assert!(m.fill(&mut big).is_err());
}

/// Real fork with the default OS-backed minter: the child's next ids are not the parent's.
#[test]
#[cfg(unix)]
#[cfg_attr(miri, ignore)]
fn forked_child_of_os_minter_does_not_repeat_parent_ids() {
    let mut m = BatchedMinter::new();
    let _ = m.mint().unwrap();
    let mut fds = [0i32; 2];
    // SAFETY: `fds` is two writable c_ints.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: the child mints (no allocation: the buffer is inline; getrandom on refill),
    // writes to a pipe and `_exit`s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let mut out = [0u8; 64];
        for k in 0..4 {
            let id = m.mint().map(|u| *u.as_bytes()).unwrap_or([0; 16]);
            out[16 * k..16 * k + 16].copy_from_slice(&id);
        }
        // SAFETY: open write end; 64 readable bytes.
        let n = unsafe { libc::write(fds[1], out.as_ptr().cast(), 64) };
        // SAFETY: ends the child without destructors.
        unsafe { libc::_exit(i32::from(n != 64)) };
    }
    let mut child = [0u8; 64];
    // SAFETY: open read end; 64 writable bytes.
    let n = unsafe { libc::read(fds[0], child.as_mut_ptr().cast(), 64) };
    let mut status = 0;
    // SAFETY: our child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    // SAFETY: both descriptors are ours.
    unsafe {
        libc::close(fds[0]);
        libc::close(fds[1]);
    }
    assert_eq!(n, 64);
    let parent: HashSet<[u8; 16]> = (1..BATCH_IDS)
        .map(|_| *m.mint().unwrap().as_bytes())
        .collect();
    for c in child.chunks_exact(16) {
        assert!(!parent.contains(c), "child reused a parent id");
    }
}
