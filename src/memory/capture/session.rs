//! Capture sessions: [`ActivityCapture::begin`] attaches a capture to its domains at a
//! quiescent boundary, [`CaptureSession::end`] detaches and drains its events into a
//! [`CaptureReport`] with the domains' gauges at both ends, and [`CaptureReport::reconcile`]
//! checks the events against those gauges.

use super::{
    lock, now_ns, ActivityCapture, CaptureError, CaptureEvent, CoverageLoss, Entry, EventKind,
    LifetimeId,
};
use crate::memory::domain::AllocationDomain;
use crate::memory::usage::MemoryUsage;
use crate::sync::{process, Ordering};

/// Session epochs of this process (the last one issued; the first session gets 1).
static EPOCHS: process::AtomicU64 = process::AtomicU64::new(0);

impl ActivityCapture {
    /// Starts a session on `domains` at a quiescent boundary the caller owns (no thread inside
    /// an operation of these domains until this returns). Resets the buffer, the live table
    /// and the loss bits, records each domain's gauges as the baseline, then attaches.
    ///
    /// # Errors
    /// [`CaptureError::Busy`] if a session runs; [`CaptureError::AlreadyAttached`] if a domain
    /// has another capture (nothing is attached then); [`CaptureError::EpochsExhausted`].
    pub fn begin(
        &'static self,
        domains: &[&'static AllocationDomain],
    ) -> Result<CaptureSession, CaptureError> {
        if self
            .in_session
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return Err(CaptureError::Busy);
        }
        let result = self.begin_locked(domains);
        if result.is_err() {
            self.in_session.store(false, Ordering::Release);
        }
        result
    }

    fn begin_locked(
        &'static self,
        domains: &[&'static AllocationDomain],
    ) -> Result<CaptureSession, CaptureError> {
        let epoch = EPOCHS
            .fetch_update(
                process::Ordering::Relaxed,
                process::Ordering::Relaxed,
                |e| e.checked_add(1),
            )
            .map_err(|_| CaptureError::EpochsExhausted)?
            + 1;
        {
            let mut live = lock(&self.live);
            live.table.fill(Entry::default());
            live.len = 0;
            live.next_seq = 1;
        }
        self.cursor.store(0, Ordering::Relaxed);
        self.dropped.store(0, Ordering::Relaxed);
        self.loss.store(0, Ordering::Relaxed);
        self.epoch.store(epoch, Ordering::Relaxed);
        self.start_ns.store(now_ns(), Ordering::Relaxed);
        let baseline: Vec<_> = domains.iter().map(|d| d.usage()).collect();
        for (i, d) in domains.iter().enumerate() {
            if !d.attach(self) {
                for d in &domains[..i] {
                    d.detach(self);
                }
                return Err(CaptureError::AlreadyAttached {
                    domain: d.name().to_owned(),
                });
            }
        }
        Ok(CaptureSession {
            capture: self,
            domains: domains.to_vec(),
            baseline,
            epoch,
            open: true,
        })
    }
}

/// A running capture session; [`end`](Self::end) it at a quiescent boundary.
#[derive(Debug)]
pub struct CaptureSession {
    capture: &'static ActivityCapture,
    domains: Vec<&'static AllocationDomain>,
    baseline: Vec<MemoryUsage>,
    epoch: u64,
    /// Until `end` or drop: the capture is this session's.
    open: bool,
}

impl CaptureSession {
    /// The session's epoch (the `epoch` of every [`LifetimeId`] it issues).
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The loss bits so far.
    pub fn loss(&self) -> CoverageLoss {
        self.capture.loss()
    }

    /// Detaches from every domain, then drains the events. Call it at a quiescent boundary the
    /// caller owns; an event slot still unwritten at the drain is reported as `IN_FLIGHT`.
    pub fn end(mut self) -> CaptureReport {
        let c = self.capture;
        self.detach_all();
        let claimed = c.cursor.load(Ordering::Relaxed).min(c.slots.len());
        let mut events = Vec::with_capacity(claimed);
        for slot in &c.slots[..claimed] {
            if slot.ready.load(Ordering::Acquire) != self.epoch {
                c.lose(CoverageLoss::IN_FLIGHT);
                continue;
            }
            let head = slot.head.load(Ordering::Relaxed);
            let seq = slot.seq.load(Ordering::Relaxed);
            events.push(CaptureEvent {
                kind: match head & 0xff {
                    0 => EventKind::Allocate,
                    1 => EventKind::Free,
                    _ => EventKind::Resize,
                },
                lifetime: (head >> 16 & 1 == 1).then_some(LifetimeId {
                    epoch: self.epoch,
                    seq,
                }),
                domain: (head >> 32) as u32,
                address: slot.address.load(Ordering::Relaxed) as usize,
                size: slot.size.load(Ordering::Relaxed) as usize,
                old_size: slot.old_size.load(Ordering::Relaxed) as usize,
                align: 1 << ((head >> 8) & 0xff),
                thread: slot.thread.load(Ordering::Relaxed),
                time_ns: slot.time_ns.load(Ordering::Relaxed),
            });
        }
        let live = lock(&c.live);
        let mut still_live: Vec<_> = live
            .table
            .iter()
            .filter(|e| e.addr != 0 && e.seq != 0)
            .map(|e| {
                let id = LifetimeId {
                    epoch: self.epoch,
                    seq: e.seq,
                };
                (id, e.size)
            })
            .collect();
        drop(live);
        still_live.sort_unstable();
        let end = self.domains.iter().map(|d| d.usage()).collect();
        let report = CaptureReport {
            epoch: self.epoch,
            domains: self.domains.iter().map(|d| d.tag()).collect(),
            events,
            dropped: c.dropped.load(Ordering::Relaxed),
            loss: c.loss(),
            baseline: core::mem::take(&mut self.baseline),
            end,
            still_live,
        };
        self.release();
        report
    }

    fn detach_all(&self) {
        for d in &self.domains {
            d.detach(self.capture);
        }
    }

    /// Lets the capture start another session (once, at `end` or drop).
    fn release(&mut self) {
        if core::mem::take(&mut self.open) {
            self.capture.in_session.store(false, Ordering::Release);
        }
    }
}

impl Drop for CaptureSession {
    /// A session dropped without [`end`](Self::end) detaches and discards its events.
    fn drop(&mut self) {
        self.detach_all();
        self.release();
    }
}

/// What a session saw, with the domains' gauges at both ends.
#[derive(Debug, Clone)]
pub struct CaptureReport {
    /// The session's epoch.
    pub epoch: u64,
    /// Tags of the captured domains, in `begin` order.
    pub domains: Vec<u32>,
    /// Every stored event, in claim order.
    pub events: Vec<CaptureEvent>,
    /// Events that did not fit.
    pub dropped: u64,
    /// Why the history is incomplete, if it is.
    pub loss: CoverageLoss,
    /// Each domain's gauges at `begin`.
    pub baseline: Vec<MemoryUsage>,
    /// Each domain's gauges at `end`.
    pub end: Vec<MemoryUsage>,
    /// Session blocks still live at `end`, with their sizes, by lifetime.
    pub still_live: Vec<(LifetimeId, usize)>,
}

/// A session whose events do not explain its domains' gauges.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReconcileError {
    /// The history is incomplete: no reconciliation is claimed.
    #[error("the capture lost coverage ({0:?}): nothing to reconcile against")]
    Incomplete(CoverageLoss),
    /// A domain's live bytes or blocks differ from baseline plus events.
    #[error("domain {tag:#010x}: gauges say {gauge_bytes} B / {gauge_blocks} blocks live, baseline plus events say {event_bytes} B / {event_blocks}")]
    Mismatch {
        /// The domain.
        tag: u32,
        /// Live bytes at end, from the gauges.
        gauge_bytes: i128,
        /// Live blocks at end, from the gauges.
        gauge_blocks: i128,
        /// Baseline live bytes plus the events' net bytes.
        event_bytes: i128,
        /// Baseline live blocks plus the events' net blocks.
        event_blocks: i128,
    },
}

impl CaptureReport {
    /// Checks, for each domain, that the gauges at `end` equal the baseline plus the events'
    /// net bytes and blocks. Exact only for a complete history taken between two quiescent
    /// boundaries with no other capture of the same domains.
    ///
    /// # Errors
    /// [`ReconcileError::Incomplete`] after any loss; [`ReconcileError::Mismatch`].
    pub fn reconcile(&self) -> Result<(), ReconcileError> {
        if !self.loss.is_complete() {
            return Err(ReconcileError::Incomplete(self.loss));
        }
        for (i, &tag) in self.domains.iter().enumerate() {
            let (mut bytes, mut blocks) = (0i128, 0i128);
            for e in self.events.iter().filter(|e| e.domain == tag) {
                match e.kind {
                    EventKind::Allocate => (bytes, blocks) = (bytes + e.size as i128, blocks + 1),
                    EventKind::Free => (bytes, blocks) = (bytes - e.size as i128, blocks - 1),
                    EventKind::Resize => bytes += e.size as i128 - e.old_size as i128,
                }
            }
            let (b, end) = (&self.baseline[i], &self.end[i]);
            let event_bytes = b.live_bytes as i128 + bytes;
            let event_blocks = b.live_blocks as i128 + blocks;
            if (end.live_bytes as i128, end.live_blocks as i128) != (event_bytes, event_blocks) {
                return Err(ReconcileError::Mismatch {
                    tag,
                    gauge_bytes: end.live_bytes as i128,
                    gauge_blocks: end.live_blocks as i128,
                    event_bytes,
                    event_blocks,
                });
            }
        }
        Ok(())
    }
}
