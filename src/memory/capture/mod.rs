//! Activity capture (feature `capture`): a bounded, preallocated record of
//! the allocations, frees and resizes of chosen domains during a session.
//!
//! ```text
//! ActivityCapture ('static, preallocated once)
//!   events[0 .. cap]    one slot per event; a producer claims index `cursor++`, writes the
//!                       fields, then stores the session epoch in `ready` (Release)
//!   live table          address -> (lifetime seq, size), under a mutex that also issues seqs
//!   loss                sticky bits: events full, live table full, ids exhausted, in flight
//! CaptureSession        attached to its domains from `begin` to `end`
//! ```
//!
//! Mode: *activity* capture. It observes what starts during the session: existing live bytes
//! come from the domains' gauges (the report's baseline), a free or resize of a block that
//! existed before `begin` is labelled unknown-origin (and a resized pre-existing block stays
//! unknown at its new address). It never claims a whole-domain live set.
//!
//! Protocol: `begin` and `end` are quiescent boundaries owned by the caller (no thread is inside
//! an allocation, free or resize of the captured domains). A capture is `'static`, so a producer
//! that violates the protocol can cost accuracy but never memory safety: an event still being
//! written at `end` is reported as `IN_FLIGHT`, but a producer that stalls across `end` and the
//! next `begin` can land its event in the next session, or mix it with that session's event in
//! the same slot, without any loss flag (every field is an atomic: no torn read is UB).
//! Nothing here allocates, calls user code or does I/O on the hot path, so capture cannot
//! recurse into itself; a capture that runs out of room stops recording and says so, and the
//! domain counters never depend on it.
//!
//! This file holds the recorder the domains feed (event slots, live table, each domain's
//! observer); `session.rs` holds the sessions over domains and their reports.

mod session;

use std::cell::Cell;
use std::ops::DerefMut;
use std::sync::OnceLock;
use std::time::Instant;

use crate::sync::process;
use crate::sync::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Mutex, Ordering};

pub use session::{CaptureReport, CaptureSession, ReconcileError};

/// Why a capture's history is incomplete. Bits are sticky for the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CoverageLoss(u32);

impl CoverageLoss {
    /// The event buffer was full: later events were counted, not stored.
    pub const EVENTS_FULL: u32 = 1;
    /// The live table was full: later blocks have no lifetime id, so their frees look
    /// unknown-origin.
    pub const LIVE_TABLE_FULL: u32 = 2;
    /// The session's lifetime sequence reached `u64::MAX`: no identity was reused.
    pub const IDS_EXHAUSTED: u32 = 4;
    /// At `end`, a claimed event slot was still unwritten: a producer was inside the capture
    /// (the caller did not quiesce).
    pub const IN_FLIGHT: u32 = 8;

    /// No loss: the session's history is complete.
    pub fn is_complete(self) -> bool {
        self.0 == 0
    }

    /// Whether loss `bit` happened.
    pub fn has(self, bit: u32) -> bool {
        self.0 & bit != 0
    }

    /// The raw bits.
    pub fn bits(self) -> u32 {
        self.0
    }
}

/// A block's identity for one capture session: never reused, never wraps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LifetimeId {
    /// The session (process-wide, from 1).
    pub epoch: u64,
    /// Order of the allocation within the session (from 1).
    pub seq: u64,
}

/// What happened to a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// A block was allocated.
    Allocate,
    /// A block was freed.
    Free,
    /// A block changed size (`old_size -> size`), perhaps address.
    Resize,
}

/// One record of a capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CaptureEvent {
    /// What happened.
    pub kind: EventKind,
    /// The block's identity; `None` for a block that existed before the session
    /// (unknown-origin) or one recorded after the live table filled.
    pub lifetime: Option<LifetimeId>,
    /// The domain's tag.
    pub domain: u32,
    /// Block address (diagnostic only; addresses are reused).
    pub address: usize,
    /// Requested size after the event (the freed size for a free).
    pub size: usize,
    /// Size before a resize; 0 otherwise.
    pub old_size: usize,
    /// Requested alignment.
    pub align: usize,
    /// The emitting thread (a process-wide number, from 1; never a TLS address).
    pub thread: u64,
    /// Nanoseconds since `begin` (monotonic).
    pub time_ns: u64,
}

/// Why a capture could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CaptureError {
    /// A capacity was zero.
    #[error("capture capacities must be nonzero")]
    ZeroCapacity,
    /// The preallocation failed.
    #[error("could not preallocate a capture of {bytes} bytes")]
    OutOfMemory {
        /// Bytes requested.
        bytes: usize,
    },
    /// The capture is already in a session.
    #[error("the capture is already in a session")]
    Busy,
    /// A domain already has a capture attached; nothing was attached.
    #[error("domain {domain:?} already has a capture attached")]
    AlreadyAttached {
        /// The domain's name.
        domain: String,
    },
    /// The session epochs of this process are exhausted.
    #[error("capture session epochs exhausted")]
    EpochsExhausted,
}

/// One event slot: written by the producer that claimed it, published by `ready`.
#[derive(Debug, Default)]
struct Slot {
    /// The session epoch once the fields are written (Release); 0 or an older epoch before.
    ready: AtomicU64,
    /// kind (bits 0..8) | align log2 (8..16) | has lifetime (16) | domain tag (32..64)
    head: AtomicU64,
    seq: AtomicU64,
    address: AtomicU64,
    size: AtomicU64,
    old_size: AtomicU64,
    thread: AtomicU64,
    time_ns: AtomicU64,
}

#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    /// 0 = empty.
    addr: usize,
    /// 0 = unknown origin (a resized pre-existing block).
    seq: u64,
    size: usize,
}

#[derive(Debug)]
struct Live {
    /// Open addressing, linear probing, backward-shift deletion; a power of two.
    table: Box<[Entry]>,
    len: usize,
    next_seq: u64,
}

/// A preallocated activity capture. Make one with [`ActivityCapture::leak`], run sessions
/// with [`begin`](Self::begin).
#[derive(Debug)]
pub struct ActivityCapture {
    slots: Box<[Slot]>,
    cursor: AtomicUsize,
    /// Events claimed past capacity.
    dropped: AtomicU64,
    loss: AtomicU32,
    epoch: AtomicU64,
    /// Session start, in nanoseconds after [`ANCHOR`].
    start_ns: AtomicU64,
    live: Mutex<Live>,
    in_session: AtomicBool,
}

/// The process's time origin for capture timestamps.
static ANCHOR: OnceLock<Instant> = OnceLock::new();

fn now_ns() -> u64 {
    u64::try_from(ANCHOR.get_or_init(Instant::now).elapsed().as_nanos()).unwrap_or(u64::MAX)
}
static THREADS: process::AtomicU64 = process::AtomicU64::new(0);

std::thread_local! {
    static THREAD: Cell<u64> = const { Cell::new(0) };
}

fn thread_number() -> u64 {
    THREAD.with(|t| {
        if t.get() == 0 {
            t.set(THREADS.fetch_add(1, process::Ordering::Relaxed) + 1);
        }
        t.get()
    })
}

fn home(addr: usize, mask: usize) -> usize {
    (addr.wrapping_mul(0x9E37_79B9_7F4A_7C15_u64 as usize) >> 7) & mask
}

impl Live {
    fn find(&self, addr: usize) -> Option<usize> {
        let mask = self.table.len() - 1;
        let mut i = home(addr, mask);
        for _ in 0..self.table.len() {
            match self.table[i].addr {
                0 => return None,
                a if a == addr => return Some(i),
                _ => i = (i + 1) & mask,
            }
        }
        None
    }

    /// `false` when full (the table keeps one empty slot so probes end).
    fn insert(&mut self, e: Entry) -> bool {
        if self.len + 1 >= self.table.len() {
            return false;
        }
        let mask = self.table.len() - 1;
        let mut i = home(e.addr, mask);
        while self.table[i].addr != 0 && self.table[i].addr != e.addr {
            i = (i + 1) & mask;
        }
        if self.table[i].addr == 0 {
            self.len += 1;
        }
        self.table[i] = e;
        true
    }

    fn remove(&mut self, addr: usize) -> Option<Entry> {
        let i = self.find(addr)?;
        let found = self.table[i];
        let mask = self.table.len() - 1;
        let (mut hole, mut j) = (i, (i + 1) & mask);
        while self.table[j].addr != 0 {
            let h = home(self.table[j].addr, mask);
            if (j.wrapping_sub(h) & mask) >= (j.wrapping_sub(hole) & mask) {
                self.table[hole] = self.table[j];
                hole = j;
            }
            j = (j + 1) & mask;
        }
        self.table[hole] = Entry::default();
        self.len -= 1;
        Some(found)
    }
}

impl ActivityCapture {
    /// Preallocates a capture of `events` event slots and a live table for `live_blocks`
    /// blocks, for the process lifetime (sessions reuse it).
    ///
    /// # Errors
    /// [`CaptureError::ZeroCapacity`]; [`CaptureError::OutOfMemory`] when the preallocation
    /// fails (nothing is leaked then).
    pub fn leak(events: usize, live_blocks: usize) -> Result<&'static Self, CaptureError> {
        if events == 0 || live_blocks == 0 {
            return Err(CaptureError::ZeroCapacity);
        }
        let table_len = live_blocks
            .checked_add(1)
            .and_then(usize::checked_next_power_of_two);
        let oom = |n: usize, size: usize| CaptureError::OutOfMemory {
            bytes: n.saturating_mul(size),
        };
        let table_len = table_len.ok_or(oom(usize::MAX, 1))?;
        let mut slots = Vec::new();
        slots
            .try_reserve_exact(events)
            .map_err(|_| oom(events, size_of::<Slot>()))?;
        slots.resize_with(events, Slot::default);
        let mut table = Vec::new();
        table
            .try_reserve_exact(table_len)
            .map_err(|_| oom(table_len, size_of::<Entry>()))?;
        table.resize(table_len, Entry::default());
        Ok(Box::leak(Box::new(ActivityCapture {
            slots: slots.into_boxed_slice(),
            cursor: AtomicUsize::new(0),
            dropped: AtomicU64::new(0),
            loss: AtomicU32::new(0),
            epoch: AtomicU64::new(0),
            start_ns: AtomicU64::new(0),
            live: Mutex::new(Live {
                table: table.into_boxed_slice(),
                len: 0,
                next_seq: 1,
            }),
            in_session: AtomicBool::new(false),
        })))
    }

    /// Event slots.
    pub fn event_capacity(&self) -> usize {
        self.slots.len()
    }

    fn lose(&self, bit: u32) {
        self.loss.fetch_or(bit, Ordering::Relaxed);
    }

    fn elapsed_ns(&self) -> u64 {
        now_ns().saturating_sub(self.start_ns.load(Ordering::Relaxed))
    }

    #[allow(clippy::too_many_arguments)]
    fn emit(
        &self,
        kind: EventKind,
        seq: u64,
        tag: u32,
        address: usize,
        size: usize,
        old_size: usize,
        align: usize,
    ) {
        let i = self.cursor.fetch_add(1, Ordering::Relaxed);
        let Some(slot) = self.slots.get(i) else {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            self.lose(CoverageLoss::EVENTS_FULL);
            return;
        };
        let kind_bits = match kind {
            EventKind::Allocate => 0,
            EventKind::Free => 1,
            EventKind::Resize => 2,
        };
        let head = kind_bits
            | u64::from(align.trailing_zeros()) << 8
            | u64::from(seq != 0) << 16
            | u64::from(tag) << 32;
        slot.head.store(head, Ordering::Relaxed);
        slot.seq.store(seq, Ordering::Relaxed);
        slot.address.store(address as u64, Ordering::Relaxed);
        slot.size.store(size as u64, Ordering::Relaxed);
        slot.old_size.store(old_size as u64, Ordering::Relaxed);
        slot.thread.store(thread_number(), Ordering::Relaxed);
        slot.time_ns.store(self.elapsed_ns(), Ordering::Relaxed);
        slot.ready
            .store(self.epoch.load(Ordering::Relaxed), Ordering::Release);
    }

    /// Registers a new block of the domain tagged `tag` (before its pointer is returned) and
    /// records it.
    #[inline(never)] // keeps the domain's hot path small enough to inline
    pub(crate) fn on_allocate(&self, tag: u32, addr: usize, size: usize, align: usize) {
        let seq = {
            let mut live = lock(&self.live);
            let seq = live.next_seq;
            if seq == u64::MAX {
                self.lose(CoverageLoss::IDS_EXHAUSTED);
                0
            } else if live.insert(Entry { addr, seq, size }) {
                live.next_seq += 1;
                seq
            } else {
                self.lose(CoverageLoss::LIVE_TABLE_FULL);
                0
            }
        };
        self.emit(EventKind::Allocate, seq, tag, addr, size, 0, align);
    }

    /// Records a free in the domain tagged `tag`: the entry leaves the table before the
    /// backend may reuse the address.
    #[inline(never)] // keeps the domain's hot path small enough to inline
    pub(crate) fn on_free(&self, tag: u32, addr: usize, size: usize, align: usize) {
        let seq = lock(&self.live).remove(addr).map_or(0, |e| e.seq);
        self.emit(EventKind::Free, seq, tag, addr, size, 0, align);
    }

    /// First half of a resize: takes the block's entry out of the table before the backend may
    /// release its address (another thread could be handed it at once). Returns its seq (0:
    /// unknown origin) for [`on_resize`](Self::on_resize) or [`restore`](Self::restore).
    pub(crate) fn take(&self, addr: usize) -> u64 {
        lock(&self.live).remove(addr).map_or(0, |e| e.seq)
    }

    /// A failed resize: the block keeps its address and identity.
    pub(crate) fn restore(&self, addr: usize, seq: u64, size: usize) {
        if !lock(&self.live).insert(Entry { addr, seq, size }) {
            self.lose(CoverageLoss::LIVE_TABLE_FULL);
        }
    }

    /// Second half of a successful resize: the lifetime taken by [`take`](Self::take) (or its
    /// unknown origin) moves to the new address, and the resize is recorded for the domain
    /// tagged `tag`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn on_resize(
        &self,
        tag: u32,
        seq: u64,
        new_addr: usize,
        old_size: usize,
        size: usize,
        align: usize,
    ) {
        self.restore(new_addr, seq, size);
        self.emit(EventKind::Resize, seq, tag, new_addr, size, old_size, align);
    }

    /// The loss bits so far (visible while the session runs).
    pub fn loss(&self) -> CoverageLoss {
        CoverageLoss(self.loss.load(Ordering::Relaxed))
    }
}

/// Locks a capture mutex; a panic while it was held (none of its critical sections can
/// panic) would leave the data consistent, so poison is ignored.
fn lock<T>(m: &Mutex<T>) -> impl DerefMut<Target = T> + '_ {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A domain's observer: null, or a `&'static ActivityCapture`.
#[derive(Debug)]
pub(crate) struct Observer(AtomicPtr<ActivityCapture>);

impl Observer {
    #[cfg(not(loom))]
    pub(crate) const fn new() -> Self {
        Self(AtomicPtr::new(core::ptr::null_mut()))
    }

    #[cfg(loom)]
    pub(crate) fn new() -> Self {
        Self(AtomicPtr::new(core::ptr::null_mut()))
    }

    /// The attached capture, if any: one load and a branch when idle.
    #[inline(always)]
    pub(crate) fn get(&self) -> Option<&'static ActivityCapture> {
        let p = self.0.load(Ordering::Acquire);
        // SAFETY: the only non-null values ever stored come from `&'static ActivityCapture`
        // (`attach`), which lives for the rest of the process.
        unsafe { p.as_ref() }
    }

    pub(crate) fn attach(&self, c: &'static ActivityCapture) -> bool {
        let p = core::ptr::from_ref(c).cast_mut();
        self.0
            .compare_exchange(
                core::ptr::null_mut(),
                p,
                Ordering::Release,
                Ordering::Relaxed,
            )
            .is_ok()
    }

    pub(crate) fn detach(&self, c: &'static ActivityCapture) {
        let p = core::ptr::from_ref(c).cast_mut();
        let _ = self.0.compare_exchange(
            p,
            core::ptr::null_mut(),
            Ordering::Release,
            Ordering::Relaxed,
        );
    }
}
