//! A domain's figures ([`MemoryUsage`]) and how they are kept ([`CounterMode`]), as both
//! counter modes report them.

/// How a domain keeps its figures. Both are exact at quiescence and carry sticky validity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CounterMode {
    /// Per-thread shards written without lock-prefixed instructions; reads sum them.
    /// `high_water_bytes` is an upper bound of the true peak (see [`MemoryUsage`]).
    #[default]
    Sharded,
    /// One shared set of atomics: every update is a read-modify-write on a shared cache line
    /// (threads allocating from one domain serialise on it); `high_water_bytes` is exact.
    Exact,
}

/// A domain's figures with their validity. Bytes are requested bytes (not backend usable size).
///
/// A resize is one logical record: it counts in `reallocations`, and its growth (or shrink)
/// counts in `allocated_bytes` (or `freed_bytes`); block counts do not move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryUsage {
    /// Requested bytes currently live.
    pub live_bytes: usize,
    /// Nonzero blocks currently live.
    pub live_blocks: usize,
    /// [`Exact`](CounterMode::Exact): the highest `live_bytes` ever reached.
    /// [`Sharded`](CounterMode::Sharded): an upper bound of it, the sum of each thread slot's
    /// own highest net bytes; never below the true peak, above it when blocks are freed on other
    /// threads than the one that allocated them.
    pub high_water_bytes: usize,
    /// Successful nonzero allocations.
    pub allocations: u64,
    /// Frees of nonzero blocks.
    pub frees: u64,
    /// Bytes handed out (allocations plus resize growth).
    pub allocated_bytes: u64,
    /// Bytes handed back (frees plus resize shrink).
    pub freed_bytes: u64,
    /// Successful resizes that changed the size.
    pub reallocations: u64,
    /// Refused allocation or resize requests.
    pub failures: u64,
    /// `false` once any counter overflowed or underflowed; sticky.
    pub valid: bool,
    /// How the figures were kept (what `high_water_bytes` means).
    pub mode: CounterMode,
}

/// All zero and valid, in sharded mode: the figures of a fresh domain.
pub(super) const ZERO: MemoryUsage = MemoryUsage {
    live_bytes: 0,
    live_blocks: 0,
    high_water_bytes: 0,
    allocations: 0,
    frees: 0,
    allocated_bytes: 0,
    freed_bytes: 0,
    reallocations: 0,
    failures: 0,
    valid: true,
    mode: CounterMode::Sharded,
};

impl Default for MemoryUsage {
    fn default() -> Self {
        ZERO
    }
}
