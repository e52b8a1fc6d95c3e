//! The world's storage and queries: the entity registry, component pools, `world!` rosters,
//! owned groups, joins and the exact sparse probe, command buffers and `respawn`, no allocation
//! after init; the registry, pools, groups and joins also against models over random operation
//! sequences; with feature `rayon`, parallel iteration.

#[path = "../support/mod.rs"]
mod support;

mod exact_sparse;
mod groups;
mod joins;
mod model;
mod no_alloc_after_init;
#[cfg(feature = "rayon")]
mod parallel;
mod pool;
mod pool_model;
mod registry;
mod respawn;
mod respawn_overlap;
mod roster;
