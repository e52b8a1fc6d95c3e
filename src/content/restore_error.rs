//! Why a World record or a level file was not restored: [`RestoreErrorKind`], with the path
//! of the offending value ([`RestoreError`]).

use super::error::{Fault, Line};
use super::level::LevelErrorKind;
use super::record::RecordErrorKind;
use crate::durable::DurableError;
use crate::identity::PersistentObjectKey;

/// Why a document was not restored; the world is unchanged.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RestoreErrorKind {
    /// The document breaks a rule of its format.
    #[error(transparent)]
    Record(#[from] RecordErrorKind),
    /// The world's roster has no component of this name.
    #[error("the world has no component named {name:?}")]
    UnknownComponent {
        /// The component name.
        name: String,
    },
    /// The properties do not decode into the component's type (a property the type lacks, a
    /// missing or mistyped one, an entity reference that is no UUID text).
    #[error("component {component:?}: {}", Line(message))]
    Component {
        /// The component name.
        component: String,
        /// serde's description.
        message: String,
    },
    /// An entity-typed property names a UUID that is not one of the document's entities.
    #[error("component {component:?}: unresolved reference to {uuid}")]
    UnresolvedReference {
        /// The component holding the link.
        component: String,
        /// The target.
        uuid: String,
    },
    /// The level file breaks a level-file rule (a parent not in the file, a cycle, a UUID
    /// outside the policy or inserted twice, ...).
    #[error(transparent)]
    Level(#[from] LevelErrorKind),
    /// The key is already bound in the world (another restore of the same instance, say).
    #[error("identity {key} is already bound in the world")]
    DuplicateIdentity {
        /// The key.
        key: PersistentObjectKey,
    },
    /// A binding was asked for, but the entity's UUID is not version 4 (binding keys are).
    #[error("uuid {uuid} cannot be bound (binding keys are version-4 UUIDs)")]
    Unbindable {
        /// The UUID.
        uuid: String,
    },
    /// The world refused: not durable, not in the structural phase, capacity, sequence,
    /// revision, name or binding budgets.
    #[error(transparent)]
    World(#[from] DurableError),
}

/// A refused restore: the kind and the path of the offending value in the document (empty
/// for a refusal of the world as a whole).
pub type RestoreError = Fault<RestoreErrorKind>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn component_message_is_one_line() {
        let e = RestoreErrorKind::Component {
            component: "enemy".into(),
            message: "unknown variant `a\nb`, expected `x`".into(),
        };
        assert_eq!(
            e.to_string(),
            r#"component "enemy": unknown variant `a\nb`, expected `x`"#
        );
    }
}
