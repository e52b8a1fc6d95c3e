//! `AllocationDomain`: an immutable name, tag and backend with mutable counters, and (feature
//! `capture`) the slot an activity capture attaches to. Its byte API is in `byte_api.rs`.

use super::backend::Backend;
#[cfg(feature = "capture")]
use super::capture::{ActivityCapture, Observer};
use super::counters::DomainCounters;
use super::tag::{domain_tag, DomainName, RegisterError};
use super::usage::{CounterMode, MemoryUsage};

/// Which allocator runtime frees a block and which budget its bytes count against.
///
/// Process-lifetime: registered domains live in a `static` registry and are never removed.
/// Backend and tag never change; only the counters do.
#[derive(Debug)]
pub struct AllocationDomain {
    name: DomainName,
    tag: u32,
    backend: Backend,
    counters: DomainCounters,
    #[cfg(feature = "capture")]
    observer: Observer,
}

impl AllocationDomain {
    /// A domain with zero counters (registry use).
    #[cfg(not(loom))]
    pub(crate) const fn with_name(name: DomainName, backend: Backend, mode: CounterMode) -> Self {
        Self {
            tag: domain_tag(name.as_str_const()),
            name,
            backend,
            counters: DomainCounters::new(mode),
            #[cfg(feature = "capture")]
            observer: Observer::new(),
        }
    }

    /// A domain with zero counters (registry use; loom is not `const`).
    #[cfg(loom)]
    pub(crate) fn with_name(name: DomainName, backend: Backend, mode: CounterMode) -> Self {
        Self {
            tag: domain_tag(name.as_str()),
            name,
            backend,
            counters: DomainCounters::new(mode),
            #[cfg(feature = "capture")]
            observer: Observer::new(),
        }
    }

    /// A standalone domain outside the registry, e.g. over a failure-injecting backend in a
    /// test, with sharded counters. Its name is not reserved and need not be unique.
    ///
    /// # Errors
    /// [`RegisterError`] for an invalid name.
    pub fn with_backend(name: &str, backend: Backend) -> Result<Self, RegisterError> {
        Self::with_mode(name, backend, CounterMode::Sharded)
    }

    /// A standalone domain with counters in `mode`.
    ///
    /// # Errors
    /// [`RegisterError`] for an invalid name.
    pub fn with_mode(
        name: &str,
        backend: Backend,
        mode: CounterMode,
    ) -> Result<Self, RegisterError> {
        Ok(Self::with_name(DomainName::new(name)?, backend, mode))
    }

    /// A standalone domain whose counters start from `start`, in `start.mode` (near-limit
    /// tests).
    ///
    /// # Errors
    /// [`RegisterError`] for an invalid name.
    pub fn with_counters(
        name: &str,
        backend: Backend,
        start: MemoryUsage,
    ) -> Result<Self, RegisterError> {
        Ok(Self {
            counters: DomainCounters::with_start(start),
            ..Self::with_name(DomainName::new(name)?, backend, start.mode)
        })
    }

    /// The domain's name.
    pub fn name(&self) -> &str {
        self.name.as_str()
    }

    /// The stable tag: [`domain_tag`] of the name.
    #[inline(always)] // read by the byte API's hot path
    pub fn tag(&self) -> u32 {
        self.tag
    }

    /// The backend that owns this domain's blocks.
    #[inline(always)] // read by the byte API's hot path
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// How this domain keeps its counters.
    pub fn counter_mode(&self) -> CounterMode {
        self.counters.mode()
    }

    /// The counters: the byte API charges them, a [`BoundDomain`](super::BoundDomain) takes
    /// its shard from them.
    #[inline(always)] // read by the byte API's hot path
    pub(crate) fn counters(&self) -> &DomainCounters {
        &self.counters
    }

    /// The current figures with their validity (samples while other threads allocate, exact at
    /// quiescence; [`MemoryUsage`] says what high-water means in each [`CounterMode`]).
    pub fn usage(&self) -> MemoryUsage {
        self.counters.usage()
    }
}

#[cfg(feature = "capture")]
impl AllocationDomain {
    /// The attached capture, if any: one load and a branch when idle.
    #[inline(always)] // read by the byte API's hot path
    pub(crate) fn capture(&self) -> Option<&'static ActivityCapture> {
        self.observer.get()
    }

    /// Attaches `c` unless a capture is attached (`false` then).
    pub(crate) fn attach(&self, c: &'static ActivityCapture) -> bool {
        self.observer.attach(c)
    }

    /// Detaches `c` if it is the one attached.
    pub(crate) fn detach(&self, c: &'static ActivityCapture) {
        self.observer.detach(c);
    }
}
