//! Durable content at the world boundary — planned, not implemented.
//!
//! This module is empty: it defines no types or functions yet. It is the planned home of the
//! next stage: World records, migration manifests, graph duplication, two-pass restore and
//! checkpoints, built on [`world`](mod@crate::world) and [`identity`](crate::identity). Until
//! then the only durable, serialisable types are the ids in [`identity`](crate::identity)
//! (`AssetId`, `SourceObjectId`, `InstanceId`, `PersistentObjectKey`; serde behind the `serde`
//! feature).
