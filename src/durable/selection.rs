//! Stale-operation checks for editors: a [`Selection`] keeps durable keys, the expected
//! document revision and optional cached handles — never component pointers. Using it
//! revalidates each cached handle through the binding table and re-resolves keys whose handle
//! went stale (after an unload and reload).

use crate::durable::binding::Resolution;
use crate::durable::durable_ops::DurableOps;
use crate::identity::PersistentObjectKey;
use crate::world::raw::keys::EntityId;

/// Why a selection could not be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SelectionError {
    /// The document changed since the selection was taken: re-take it.
    #[error("document revision {current}, selection expects {expected}")]
    DocumentChanged {
        /// The selection's revision.
        expected: u64,
        /// The document's revision now.
        current: u64,
    },
}

/// One selected object: its durable key and the handle it last resolved to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SelectionEntry {
    /// The durable key (what the selection really holds).
    pub key: PersistentObjectKey,
    /// The handle it resolved to last; a cache, revalidated on every use.
    pub cached: Option<EntityId>,
}

/// An editor selection (or undo record target set): durable keys, the expected document
/// revision, cached handles (module docs). Editor-side, so it owns a `Vec`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    entries: Vec<SelectionEntry>,
    document_revision: u64,
}

impl Selection {
    /// Selects `entities` of `world` (those with a binding; the others have no durable
    /// name and are skipped) at `document_revision`.
    pub fn capture<W: DurableOps>(
        world: &W,
        entities: &[EntityId],
        document_revision: u64,
    ) -> Self {
        let entries = entities
            .iter()
            .filter_map(|&e| {
                world.key_of(e).map(|key| SelectionEntry {
                    key,
                    cached: Some(e),
                })
            })
            .collect();
        Self {
            entries,
            document_revision,
        }
    }

    /// A selection of keys with no cached handles.
    pub fn of_keys(keys: &[PersistentObjectKey], document_revision: u64) -> Self {
        Self {
            entries: keys
                .iter()
                .map(|&key| SelectionEntry { key, cached: None })
                .collect(),
            document_revision,
        }
    }

    /// The entries.
    pub fn entries(&self) -> &[SelectionEntry] {
        &self.entries
    }

    /// The document revision the selection expects.
    pub fn document_revision(&self) -> u64 {
        self.document_revision
    }

    /// Revalidates every entry against `world` for a document now at `document_revision`:
    /// a cached handle is kept only while it is alive and still bound to the entry's key;
    /// otherwise the key is resolved again (`None` when it does not resolve). Returns the
    /// entries, now current.
    ///
    /// # Errors
    /// [`SelectionError::DocumentChanged`] when the document moved on; nothing changes.
    pub fn revalidate<W: DurableOps>(
        &mut self,
        world: &W,
        document_revision: u64,
    ) -> Result<&[SelectionEntry], SelectionError> {
        if document_revision != self.document_revision {
            return Err(SelectionError::DocumentChanged {
                expected: self.document_revision,
                current: document_revision,
            });
        }
        for entry in &mut self.entries {
            let valid = entry.cached.is_some_and(|e| {
                world.registry().is_alive(e) && world.key_of(e) == Some(entry.key)
            });
            if !valid {
                entry.cached = match world.resolve(&entry.key) {
                    Resolution::Resolved(e) => Some(e),
                    _ => None,
                };
            }
        }
        Ok(&self.entries)
    }
}
