//! Durable content at the world boundary: version-2 World records, migration manifests, graph
//! duplication, two-pass restore and checkpoints.
