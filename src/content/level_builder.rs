//! [`LevelBuilder`]: authoring a level file in code, with the world's own component types.
//!
//! Each entity gets a fresh `SourceObjectId` (minted once through the caller's entropy
//! source, never one already in the level) and a [`LevelRef`]; a component value is given as
//! its typed value, whose entity fields hold [`LevelRef::entity`] placeholders (the target's
//! UUID bits, as a record restore stages them) or `EntityId::NULL`. The builder writes each
//! value in its serde form with references as UUID text, so the [`LevelFile`] it builds is the
//! one a hand-written file would be, checked by the same rules.
//!
//! ```
//! use ludus::content::{restore_level, LevelBuilder};
//! use ludus::identity::test_entropy::SeqEntropy;
//! use ludus::prelude::*;
//! #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable, serde::Serialize, serde::Deserialize)]
//! #[repr(C)]
//! struct Hp(u32);
//! ludus::world! { struct W { hp: Hp } durable }
//! let mut entropy = SeqEntropy::new(7);
//! let mut level = LevelBuilder::<W>::new();
//! let room = level.entity("room", &mut entropy).unwrap();
//! let door = level.entity("door", &mut entropy).unwrap();
//! level.set_parent(door, room).unwrap();
//! level.insert(door, Hp(3)).unwrap();
//! let file = level.build().unwrap();
//! let mut w = W::try_new_durable(8, DurableConfig::default()).unwrap();
//! w.begin_structural();
//! let restored = restore_level(&file, None, &mut w).unwrap();
//! assert_eq!(w.hp.get(restored.entities[1]).map(|h| h.0), Some(3));
//! ```

use std::collections::HashMap;

use uuid::Uuid;

use super::level::{LevelEntity, LevelError, LevelFile};
use super::mapping::{uuid_bits, RecordComponent, RecordList};
use crate::durable::{DurableRoster, MAX_LABEL_LEN};
use crate::identity::{is_legacy_id, EntropySource, MintError, SourceObjectId};
use crate::world::roster::{ComponentList, TypeVisitor};
use crate::world::EntityId;

/// An entity of a [`LevelBuilder`], by its UUID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LevelRef {
    uuid: Uuid,
}

impl LevelRef {
    /// Its UUID (the `SourceObjectId` it is bound under when restored into an instance).
    pub fn uuid(self) -> Uuid {
        self.uuid
    }

    /// The placeholder a component's entity field holds to reference this entity.
    pub fn entity(self) -> EntityId {
        uuid_bits(self.uuid)
    }
}

/// Why a [`LevelBuilder`] call was refused; the builder is unchanged.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LevelBuildError {
    /// The entropy source failed, or every candidate UUID was taken.
    #[error(transparent)]
    Mint(#[from] MintError),
    /// A [`LevelRef`] of another builder.
    #[error("entity {0} is not of this level")]
    ForeignRef(Uuid),
    /// The type is not a component of the world's roster.
    #[error("{0} is not a component of this world")]
    UnknownComponent(&'static str),
    /// The value has no JSON form, or an entity field holds a runtime handle (whose bits are
    /// no UUID). A placeholder of another builder's entity is not caught here: `build`
    /// leaves it to the restore, which refuses a reference to an entity the level lacks.
    #[error("component {component}: {message}")]
    Component {
        /// The component's roster name.
        component: &'static str,
        /// serde's message.
        message: String,
    },
    /// A parent link would close a loop (or an entity would be its own parent).
    #[error("parent links would form a cycle")]
    Cycle,
    /// A label breaks the legacy-id rule or is held by another entity.
    #[error("label {0:?} is not a legacy id, or another entity holds it")]
    Label(String),
}

/// Builds a [`LevelFile`] for world type `W` (module docs).
pub struct LevelBuilder<W> {
    /// In creation order (`parent` unset: the links are below).
    entities: Vec<LevelEntity>,
    /// Each entity's place in `entities`.
    index: HashMap<Uuid, usize>,
    /// Each entity's parent and children (in order), by place.
    parents: Vec<Option<usize>>,
    children: Vec<Vec<usize>>,
    _world: core::marker::PhantomData<fn() -> W>,
}

impl<W> core::fmt::Debug for LevelBuilder<W> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LevelBuilder")
            .field("entities", &self.entities)
            .finish()
    }
}

impl<W: DurableRoster> Default for LevelBuilder<W>
where
    W::Components: RecordList,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<W: DurableRoster> LevelBuilder<W>
where
    W::Components: RecordList,
{
    /// An empty level.
    pub fn new() -> Self {
        Self {
            entities: Vec::new(),
            index: HashMap::new(),
            parents: Vec::new(),
            children: Vec::new(),
            _world: core::marker::PhantomData,
        }
    }

    /// Adds a root entity named `name` with a freshly minted `SourceObjectId`.
    ///
    /// # Errors
    /// [`LevelBuildError::Mint`]; nothing is added.
    pub fn entity<S: EntropySource + ?Sized>(
        &mut self,
        name: &str,
        entropy: &mut S,
    ) -> Result<LevelRef, LevelBuildError> {
        let object =
            SourceObjectId::mint_unique(entropy, |o| self.index.contains_key(&o.as_uuid()))?;
        let uuid = object.as_uuid();
        let index = self.entities.len();
        self.index.insert(uuid, index);
        self.parents.push(None);
        self.children.push(Vec::new());
        self.entities.push(LevelEntity {
            uuid,
            label: String::new(),
            name: name.to_owned(),
            parent: None,
            components: super::record::Components::new(),
        });
        Ok(LevelRef { uuid })
    }

    /// Puts `child` under `parent`, last among its children.
    ///
    /// # Errors
    /// [`LevelBuildError::ForeignRef`], [`LevelBuildError::Cycle`].
    pub fn set_parent(&mut self, child: LevelRef, parent: LevelRef) -> Result<(), LevelBuildError> {
        let (c, p) = (self.index_of(child)?, self.index_of(parent)?);
        // Walk up from the parent: the child must not be found (the links are acyclic, so
        // the walk ends at a root).
        let mut at = Some(p);
        while let Some(x) = at {
            if x == c {
                return Err(LevelBuildError::Cycle);
            }
            at = self.parents[x];
        }
        if let Some(old) = self.parents[c] {
            self.children[old].retain(|&k| k != c);
        }
        self.parents[c] = Some(p);
        self.children[p].push(c);
        Ok(())
    }

    /// Gives `e` a label (a legacy id no other entity of the level holds).
    ///
    /// # Errors
    /// [`LevelBuildError::ForeignRef`], [`LevelBuildError::Label`].
    pub fn set_label(&mut self, e: LevelRef, label: &str) -> Result<(), LevelBuildError> {
        let i = self.index_of(e)?;
        let taken = self
            .entities
            .iter()
            .enumerate()
            .any(|(j, x)| j != i && x.label == label);
        if !is_legacy_id(label) || label.len() > MAX_LABEL_LEN || taken {
            return Err(LevelBuildError::Label(label.to_owned()));
        }
        self.entities[i].label = label.to_owned();
        Ok(())
    }

    /// Sets `e`'s value of component type `T` (replacing one it had).
    ///
    /// # Errors
    /// [`LevelBuildError::ForeignRef`], [`LevelBuildError::UnknownComponent`],
    /// [`LevelBuildError::Component`].
    pub fn insert<T: RecordComponent>(
        &mut self,
        e: LevelRef,
        value: T,
    ) -> Result<(), LevelBuildError> {
        let i = self.index_of(e)?;
        let component = component_name::<W, T>().ok_or(LevelBuildError::UnknownComponent(
            core::any::type_name::<T>(),
        ))?;
        let form = serde_json::to_value(value).map_err(|err| LevelBuildError::Component {
            component,
            message: err.to_string(),
        })?;
        self.entities[i]
            .components
            .insert(component.to_owned(), form);
        Ok(())
    }

    /// The level file, checked by the level rules (every reference must name an entity of the
    /// level: a restore refuses one that does not).
    ///
    /// # Errors
    /// [`LevelError`] naming the first rule broken (at line 0: no bytes were read).
    pub fn build(self) -> Result<LevelFile, LevelError> {
        // File order: each root in creation order, then its subtree depth first in child
        // order (a restore appends children in file order).
        let mut order = Vec::with_capacity(self.entities.len());
        let mut stack = Vec::new();
        for root in (0..self.entities.len()).filter(|&i| self.parents[i].is_none()) {
            stack.push(root);
            while let Some(i) = stack.pop() {
                order.push(i);
                stack.extend(self.children[i].iter().rev());
            }
        }
        let uuids: Vec<Uuid> = self.entities.iter().map(|e| e.uuid).collect();
        let mut slots: Vec<Option<LevelEntity>> = self.entities.into_iter().map(Some).collect();
        let entities = order
            .into_iter()
            .filter_map(|i| {
                let mut e = slots[i].take()?;
                e.parent = self.parents[i].map(|p| uuids[p]);
                Some(e)
            })
            .collect();
        let file = LevelFile { entities };
        file.check()
            .map_err(|f| f.locate(std::path::Path::new("<builder>"), b""))?;
        Ok(file)
    }

    fn index_of(&self, e: LevelRef) -> Result<usize, LevelBuildError> {
        self.index
            .get(&e.uuid)
            .copied()
            .ok_or(LevelBuildError::ForeignRef(e.uuid))
    }
}

/// The roster name of component type `T` in `W`.
fn component_name<W: DurableRoster, T: 'static>() -> Option<&'static str> {
    struct Find {
        want: core::any::TypeId,
        at: usize,
        found: Option<usize>,
    }
    impl TypeVisitor for Find {
        fn visit<U: crate::world::Component>(&mut self) {
            if self.found.is_none() && core::any::TypeId::of::<U>() == self.want {
                self.found = Some(self.at);
            }
            self.at += 1;
        }
    }
    let mut f = Find {
        want: core::any::TypeId::of::<T>(),
        at: 0,
        found: None,
    };
    W::Components::each(&mut f);
    f.found.and_then(|i| W::NAMES.get(i).copied())
}
