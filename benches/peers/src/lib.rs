//! Peer comparison workloads (see `benches/`).
