//! Memory: allocation layouts, domains with per-domain counters, system / mimalloc backends,
//! the allocator-api2 adapter and the fixed-capacity `LinearArena`.
