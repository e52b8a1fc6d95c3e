//! Persistent spawn, atomic transactions and the identity invariant.
//!
//! **One identity per durable entity.** Every entity a durable world can name across a
//! boundary has exactly one [`PersistentId`], whatever made it:
//!
//! - a runtime spawn (a [`PreparedSpawn`] applied by a transaction) has `spawned:<uuid>`, held
//!   in the world's stable-id index;
//! - an authored entity — one bound to a [`PersistentObjectKey`] (a level or record restore,
//!   an `activate`, a duplicate's copy) — has `authored:<instance ‖ object>`: its binding key's
//!   32 bytes *are* its id, so the binding table is its index and nothing is stored twice.
//!
//! [`stable_id`](PersistentOps::stable_id) returns the first of the two an entity has (a
//! spawned entity that was also bound keeps its spawned id; its key still resolves it), and
//! [`entity_of`](PersistentOps::entity_of) finds either. Transactions, references, checkpoints
//! and digests all address entities by this id, so a level entity is updated, deleted,
//! referenced and checkpointed exactly as a spawned one. The two namespaces never share key
//! bytes: a spawned key ends in 16 zero bytes, a binding key's object half is nonnil.
//!
//! A spawned id *is* the entity's identity component: it is published only by an accepted
//! transaction or a restore, removed only with the whole entity, and no other path can set,
//! change or remove it — so the identity invariant (every spawned-namespace entity carries a
//! canonical id and a matching identity; any identity equals its entity's stable id; a
//! surviving entity's identity never changes) holds by construction: transactions and restores
//! accept canonical ids only, and never two ids with the same key bytes. An authored id lives
//! exactly as long as its binding, which the world removes only with the entity.
//! [`PersistentOps::check_identity_invariant`] checks the whole world again on demand. Records
//! that carry an explicit identity component (checkpoints) are validated against it at the
//! boundary.
//!
//! A [`PreparedSpawn`] is minted once at trusted ingress and carries copies of its component
//! values; retries and replays submit the recorded command and never mint again. A
//! [`Transaction`] of creates, updates, removals and deletes by stable id is validated as a
//! whole and then applied all or nothing.

use core::any::TypeId;
use std::borrow::Cow;
use std::collections::HashMap;

use crate::world::store::component::{self, Component};
use serde::{Deserialize, Serialize};

use crate::durable::binding::Activation;
use crate::durable::binding::BindingKind;
use crate::durable::durable_ops::DurableOps;
use crate::durable::error::DurableError;
pub use crate::durable::hex_bytes::HexBytes;
use crate::durable::tables::{enabled, enabled_mut, has_refs_of, rewrite_refs_of, DurableRoster};
use crate::identity::{
    EntropyError, EntropySource, PersistentId, PersistentObjectKey, TERMINAL_GENERATION,
};
use crate::world::command::buffer::{sealed, BundleSink, CommandBundle};
use crate::world::command::structural::{insert_bytes, remove_type};
use crate::world::raw::keys::EntityId;
use crate::world::store::error::WorldError;
use crate::world::store::roster::{ComponentList, Roster, TypeVisitor};
use crate::world::world_ops::WorldOps;

/// The component name reserved for the identity itself: no prepared command or transaction may
/// carry it (an explicit identity override), and checkpoints use it for the identity record.
pub const IDENTITY_COMPONENT: &str = "persistent_identity";

/// Most components one prepared command or update may carry.
pub const MAX_COMMAND_COMPONENTS: usize = 64;

/// One component value by its roster name: the bytes of the value, and the identity
/// of every entity it references.
///
/// A reference is never a handle here: each entity-typed field (those its
/// [`EntityRefs`](crate::durable::EntityRefs) impl visits, in visit order) is null in
/// `bytes` and its target's stable id is in `refs` (`None`: no target), so a value means the
/// same entity in every world that holds that id — the one it was prepared in, a replay's
/// fresh world, a restored checkpoint. A component without entity fields has no `refs`.
/// Build one from a typed value with [`ComponentValue::of`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComponentValue {
    /// The component's roster name (the `world!` field name): borrowed from the roster when
    /// the value was built from a typed value, owned when it was parsed.
    pub component: Cow<'static, str>,
    /// The value's bytes, every entity-typed field null.
    pub bytes: HexBytes,
    /// The stable id of each entity-typed field's target, in visit order (`None`: null).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refs: Vec<Option<PersistentId>>,
}

/// A bounded create command with its stable id, minted once at ingress (see
/// [`PreparedSpawn::prepare`]). Serialisable, so it is recorded with the accepted command and
/// replayed as is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreparedSpawn {
    /// The minted stable id (`spawned:` namespace).
    pub id: PersistentId,
    /// Copies of the component values.
    pub components: Vec<ComponentValue>,
}

/// Why a spawn could not be prepared; nothing was minted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrepareError {
    /// A value references a live entity that has no stable id (a reference travels as its
    /// target's identity, and this target has none).
    #[error("component {component} references a live entity without a stable id")]
    Unidentified {
        /// The component.
        component: String,
    },
    /// A value's entity fields and identities disagree (see [`ComponentValue`]).
    #[error("component {0}: its entity fields must be null and its refs one per field")]
    References(String),
    /// The entropy source failed.
    #[error(transparent)]
    Entropy(#[from] EntropyError),
    /// A component the world does not name.
    #[error("component {0} is not in the world's roster")]
    UnknownComponent(String),
    /// The components carry an identity of their own.
    #[error("an explicit identity override ({IDENTITY_COMPONENT}) is not accepted")]
    IdentityOverride,
    /// A component appears twice, or more than [`MAX_COMMAND_COMPONENTS`] are given.
    #[error("component {0} repeated, or too many components")]
    Components(String),
}

/// One roster component: its name, type, size, and the check that bytes of that size hold a
/// value of it (a `bool` is 0 or 1; none for a type whose every pattern is a value).
pub(crate) type SchemaEntry = (&'static str, TypeId, usize, Option<ValueCheck>);

/// Whether bytes hold a value of one component type.
pub(crate) type ValueCheck = fn(&[u8]) -> bool;

/// Whether `bytes`, of the entry's size, hold a value of its component.
#[inline(always)]
pub(crate) fn holds_value(check: Option<ValueCheck>, bytes: &[u8]) -> bool {
    check.is_none_or(|valid| valid(bytes))
}

/// The roster's components: type, size and check, in roster order.
struct Describe {
    ids: Vec<(TypeId, usize, Option<ValueCheck>)>,
}

impl TypeVisitor for Describe {
    fn visit<T: Component>(&mut self) {
        let check: ValueCheck = component::is_valid::<T>;
        self.ids.push((
            TypeId::of::<T>(),
            core::mem::size_of::<T>(),
            (!component::any_pattern::<T>()).then_some(check),
        ));
    }
}

/// `(name, type, size, check)` of every component of `W`.
pub(crate) fn schema<W: Roster>() -> Vec<SchemaEntry> {
    let mut d = Describe { ids: Vec::new() };
    W::Components::each(&mut d);
    W::NAMES
        .iter()
        .zip(d.ids)
        .map(|(n, (t, s, v))| (*n, t, s, v))
        .collect()
}

/// The value of component `name` (type `ty`) as a [`ComponentValue`]: its bytes with every
/// entity-typed field nulled, and each field's target as its stable id in `world` (`None`
/// for a null, stale or foreign handle: it names no entity of `world`). Without a world,
/// only null fields are accepted.
///
/// # Errors
/// The entity a field names when it is alive in `world` without a stable id (without a
/// world: when it is not null).
pub(crate) fn identified<W: PersistentOps>(
    world: Option<&W>,
    name: &'static str,
    ty: TypeId,
    bytes: &[u8],
) -> Result<ComponentValue, EntityId> {
    let mut bytes = HexBytes::from(bytes);
    let (mut refs, mut unidentified) = (Vec::new(), None);
    rewrite_refs_of::<W>(ty, &mut bytes, &mut |_, e| {
        let id = match world {
            Some(w) if w.registry().is_alive(*e) => {
                let id = w.stable_id(*e);
                if id.is_none() {
                    unidentified.get_or_insert(*e);
                }
                id
            }
            Some(_) => None,
            None => {
                if !e.is_null() {
                    unidentified.get_or_insert(*e);
                }
                None
            }
        };
        refs.push(id);
        *e = EntityId::NULL;
    });
    match unidentified {
        Some(e) => Err(e),
        None => Ok(ComponentValue {
            component: Cow::Borrowed(name),
            bytes,
            refs,
        }),
    }
}

/// Whether `value`'s references are well formed for type `ty` of `W`: every entity field of
/// its bytes null, and one identity per field (none for a type without entity fields).
pub(crate) fn refs_well_formed<W: DurableRoster>(ty: TypeId, value: &ComponentValue) -> bool {
    if !has_refs_of::<W>(ty) {
        return value.refs.is_empty();
    }
    let mut bytes = value.bytes.clone();
    let (mut fields, mut null) = (0usize, true);
    let typed = rewrite_refs_of::<W>(ty, &mut bytes, &mut |_, e| {
        fields += 1;
        null &= e.is_null();
    });
    if typed {
        null && fields == value.refs.len()
    } else {
        value.refs.is_empty()
    }
}

/// Writes `value`'s bytes into `out` with each entity field set to its identity's live entity
/// in `world` (null for `None`; a validated identity is live).
fn resolved_into<W: PersistentOps>(
    world: &W,
    ty: TypeId,
    value: &ComponentValue,
    out: &mut std::vec::Vec<u8>,
) {
    out.clear();
    out.extend_from_slice(&value.bytes);
    let mut refs = value.refs.iter();
    rewrite_refs_of::<W>(ty, out, &mut |_, e| {
        *e = refs
            .next()
            .copied()
            .flatten()
            .and_then(|id| world.entity_of(&id))
            .unwrap_or(EntityId::NULL);
    });
}

impl ComponentValue {
    /// `value` as component of `W` named by the roster, each entity it references by its
    /// stable id in `world`.
    ///
    /// # Errors
    /// [`PrepareError::UnknownComponent`] for a type `W` does not hold;
    /// [`PrepareError::Unidentified`] for a reference to a live entity without a stable id.
    pub fn of<W: PersistentOps, T: Component>(world: &W, value: &T) -> Result<Self, PrepareError> {
        let ty = TypeId::of::<T>();
        let schema = schema::<W>();
        let (name, ..) = schema
            .iter()
            .find(|(_, t, ..)| *t == ty)
            .ok_or_else(|| PrepareError::UnknownComponent(core::any::type_name::<T>().into()))?;
        identified(Some(world), name, ty, bytemuck::bytes_of(value)).map_err(|_| {
            PrepareError::Unidentified {
                component: (*name).to_owned(),
            }
        })
    }
}

/// Names a bundle's components by the roster's names and copies their values with their
/// references as identities; a type outside the roster sets `unknown`, a reference to an
/// entity without a stable id `unidentified`.
struct Named<'w, W> {
    world: Option<&'w W>,
    schema: Vec<SchemaEntry>,
    components: Vec<ComponentValue>,
    unknown: bool,
    unidentified: Option<String>,
}

impl<W> sealed::Sealed for Named<'_, W> {}

impl<W: PersistentOps> BundleSink for Named<'_, W> {
    fn push<C: Component>(&mut self, value: &C) {
        let ty = TypeId::of::<C>();
        match self.schema.iter().find(|(_, t, ..)| *t == ty) {
            Some((name, ..)) => match identified(self.world, name, ty, bytemuck::bytes_of(value)) {
                Ok(v) => self.components.push(v),
                Err(_) => {
                    self.unidentified.get_or_insert_with(|| (*name).to_owned());
                }
            },
            None => self.unknown = true,
        }
    }
}

/// Checks a component list against `W`'s roster: known names, sizes, no repeat, no identity,
/// references as identities (entity fields null, one identity per field).
fn check_components<W: DurableRoster>(
    schema: &[SchemaEntry],
    components: &[ComponentValue],
    types: &mut Vec<TypeId>,
) -> Result<(), TxRejection> {
    if components.len() > MAX_COMMAND_COMPONENTS {
        return Err(TxRejection::TooManyComponents);
    }
    for (i, c) in components.iter().enumerate() {
        if c.component == IDENTITY_COMPONENT {
            return Err(TxRejection::IdentityOverride);
        }
        match schema.iter().find(|(n, ..)| *n == c.component) {
            None => return Err(TxRejection::UnknownComponent(c.component.to_string())),
            Some((_, _, size, _)) if *size != c.bytes.len() => {
                return Err(TxRejection::ComponentSize {
                    component: c.component.to_string(),
                    expected: *size,
                    found: c.bytes.len(),
                })
            }
            Some((.., check)) if !holds_value(*check, &c.bytes) => {
                return Err(TxRejection::InvalidValue(c.component.to_string()))
            }
            Some((_, t, ..)) => {
                if !refs_well_formed::<W>(*t, c) {
                    return Err(TxRejection::References(c.component.to_string()));
                }
                types.push(*t)
            }
        }
        if components[..i].iter().any(|d| d.component == c.component) {
            return Err(TxRejection::RepeatedComponent(c.component.to_string()));
        }
    }
    Ok(())
}

impl PreparedSpawn {
    /// Prepares a persistent spawn of `bundle` for worlds of type `W`: mints a `spawned:` id
    /// once from `entropy` and copies the component values (later changes to the caller's
    /// values do not leak in). Touches no world, so every entity field of the bundle must be
    /// null: a bundle that references entities is prepared with
    /// [`prepare_in`](Self::prepare_in).
    ///
    /// # Errors
    /// [`PrepareError::Entropy`]; `UnknownComponent` for a type `W` does not name;
    /// `Components` for a repeated type; `Unidentified` for an entity field that is not
    /// null. Nothing is minted on any error.
    pub fn prepare<W: PersistentOps, B: CommandBundle, S: EntropySource + ?Sized>(
        bundle: B,
        entropy: &mut S,
    ) -> Result<Self, PrepareError> {
        Self::prepare_with::<W, B, S>(None, bundle, entropy)
    }

    /// [`prepare`](Self::prepare) of a bundle whose entity fields name entities of `world`:
    /// each is recorded as its target's stable id, so the command means the same entities
    /// wherever it is applied or replayed (a replay's fresh world included). Changes no
    /// world.
    ///
    /// # Errors
    /// As [`prepare`](Self::prepare), with `Unidentified` for a reference to a live entity of
    /// `world` without a stable id (a stale or foreign handle names no entity: recorded as
    /// no target).
    pub fn prepare_in<W: PersistentOps, B: CommandBundle, S: EntropySource + ?Sized>(
        world: &W,
        bundle: B,
        entropy: &mut S,
    ) -> Result<Self, PrepareError> {
        Self::prepare_with(Some(world), bundle, entropy)
    }

    fn prepare_with<W: PersistentOps, B: CommandBundle, S: EntropySource + ?Sized>(
        world: Option<&W>,
        bundle: B,
        entropy: &mut S,
    ) -> Result<Self, PrepareError> {
        if let Some(t) = B::duplicate() {
            return Err(PrepareError::Components(t.to_owned()));
        }
        let mut named = Named {
            world,
            schema: schema::<W>(),
            components: Vec::with_capacity(B::LEN),
            unknown: false,
            unidentified: None,
        };
        bundle.record_into(&mut named);
        let Named {
            components,
            unknown,
            unidentified,
            ..
        } = named;
        if unknown {
            return Err(PrepareError::UnknownComponent(
                "(a type outside the roster)".into(),
            ));
        }
        if let Some(component) = unidentified {
            return Err(PrepareError::Unidentified { component });
        }
        Self::prepare_values::<W, S>(components, entropy)
    }

    /// Prepares a persistent spawn of component values given by name (untrusted ingress):
    /// validated against `W`'s roster, then an id is minted once.
    ///
    /// # Errors
    /// As [`prepare`](Self::prepare); `IdentityOverride` when the values carry
    /// [`IDENTITY_COMPONENT`]; `References` when a value's entity fields are not null or its
    /// identities are not one per field. (Whether the identities are live is checked when
    /// the command is applied.)
    pub fn prepare_values<W: DurableRoster, S: EntropySource + ?Sized>(
        components: Vec<ComponentValue>,
        entropy: &mut S,
    ) -> Result<Self, PrepareError> {
        check_components::<W>(&schema::<W>(), &components, &mut Vec::new()).map_err(
            |r| match r {
                TxRejection::IdentityOverride => PrepareError::IdentityOverride,
                TxRejection::UnknownComponent(c) => PrepareError::UnknownComponent(c),
                TxRejection::References(c) => PrepareError::References(c),
                other => PrepareError::Components(other.to_string()),
            },
        )?;
        let id = PersistentId::mint_spawned(entropy)?;
        Ok(Self { id, components })
    }
}

/// One command of a [`Transaction`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum TxCommand {
    /// Create the prepared entity.
    Create {
        /// The recorded command.
        spawn: PreparedSpawn,
    },
    /// Insert or replace components of a live entity.
    Update {
        /// Its stable id.
        id: PersistentId,
        /// The new values.
        components: Vec<ComponentValue>,
    },
    /// Remove one component of a live entity.
    Remove {
        /// Its stable id.
        id: PersistentId,
        /// The component's roster name.
        component: String,
    },
    /// Delete the whole entity.
    Delete {
        /// Its stable id.
        id: PersistentId,
    },
}

/// Creates, updates and deletes by stable id, applied all or nothing. The label is a label:
/// no request deduplication is promised.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Transaction {
    /// A label for logs.
    pub label: String,
    /// The commands, applied in order.
    pub commands: Vec<TxCommand>,
}

/// Why a transaction was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TxRejection {
    /// A create's id is already live (a repeated accepted create, or a collision), or its
    /// 32 key bytes are those of a live id of the other namespace.
    #[error("{0} is already live")]
    LiveId(PersistentId),
    /// An id built without parsing that is not canonical (nil, not version 4, nonzero
    /// padding, an all-zero digest).
    #[error("{0:?} is not a canonical id")]
    NotCanonical(PersistentId),
    /// A delete of a protected entity.
    #[error("{0} is protected")]
    Protected(PersistentId),
    /// A create's id is not in the spawned namespace (authored ids come from content).
    #[error("{0} is not a spawned id")]
    NotSpawned(PersistentId),
    /// An update, removal or delete names an id that is not live (at that point of the
    /// transaction).
    #[error("{0} is not live")]
    UnknownId(PersistentId),
    /// A component the world does not name.
    #[error("component {0} is not in the world's roster")]
    UnknownComponent(String),
    /// A value of the wrong size.
    #[error("component {component} takes {expected} bytes, found {found}")]
    ComponentSize {
        /// The component.
        component: String,
        /// Its size.
        expected: usize,
        /// The value's length.
        found: usize,
    },
    /// A value of the right size that is no value of its component (a `bool` byte other
    /// than 0 or 1, an enum discriminant no variant has).
    #[error("component {0}: the bytes hold no valid value")]
    InvalidValue(String),
    /// A component named twice in one command.
    #[error("component {0} repeated")]
    RepeatedComponent(String),
    /// More than [`MAX_COMMAND_COMPONENTS`] components.
    #[error("too many components")]
    TooManyComponents,
    /// The command sets, changes or removes the identity ([`IDENTITY_COMPONENT`]).
    #[error("the identity of a surviving entity cannot be set, changed or removed")]
    IdentityOverride,
    /// A value's entity fields are not null, or its identities are not one per field (see
    /// [`ComponentValue`]).
    #[error("component {0}: its entity fields must be null and its refs one per field")]
    References(String),
    /// A value references an id that is not live at that point of the transaction.
    #[error("component {component} references {id}, which is not live")]
    UnresolvedReference {
        /// The component.
        component: String,
        /// The identity referenced.
        id: PersistentId,
    },
}

/// Failure of [`PersistentOps::transact`]; no live state changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TxError {
    /// Command `index` was refused.
    #[error("command {index} refused: {reason}")]
    Command {
        /// Position in the transaction.
        index: usize,
        /// Why.
        reason: TxRejection,
    },
    /// The world refused the transaction as a whole (phase, capacity, budgets, disabled).
    #[error(transparent)]
    World(#[from] DurableError),
}

/// What [`PersistentOps::transact`] changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TxReport {
    /// Entities created.
    pub created: usize,
    /// Components inserted or replaced.
    pub updated: usize,
    /// Components removed.
    pub removed: usize,
    /// Entities deleted.
    pub deleted: usize,
}

/// A violation of the identity invariant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum InvariantViolation {
    /// A stable-id entry whose entity is not alive or whose index entries disagree.
    #[error("stable id of slot {slot} is stale or inconsistent")]
    Stale {
        /// The slot.
        slot: u32,
    },
    /// A stored id that is not canonical (bad namespace tag, version or padding).
    #[error("stable id of slot {slot} is not canonical")]
    NotCanonical {
        /// The slot.
        slot: u32,
    },
}

/// Transactions queued for the next structural boundary (the deferred form of
/// [`PersistentOps::transact`]).
#[derive(Debug, Clone, Default)]
pub struct TransactionQueue {
    queued: Vec<Transaction>,
}

impl TransactionQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues `tx` (applied by [`PersistentOps::apply_deferred`]).
    pub fn defer(&mut self, tx: Transaction) {
        self.queued.push(tx);
    }

    /// Transactions waiting.
    pub fn len(&self) -> usize {
        self.queued.len()
    }

    /// Nothing waiting.
    pub fn is_empty(&self) -> bool {
        self.queued.is_empty()
    }
}

/// Whether `id` is canonical (what its text form would parse to): a nonnil version-4 RFC UUID
/// when spawned, a nonzero digest when authored (as `from_key` of its tag and key requires).
pub(crate) fn is_canonical(id: &PersistentId) -> bool {
    match id {
        PersistentId::Spawned(uuid) => PersistentId::spawned(*uuid).is_ok(),
        PersistentId::Authored(digest) => *digest != [0; 32],
    }
}

/// Whether `id`'s 32 key bytes are bound in the stable index under any namespace.
pub(crate) fn key_taken<W: DurableRoster>(world: &W, id: &PersistentId) -> bool {
    let (key, _) = stable_key(id);
    world
        .durable()
        .stable
        .lookup(world.registry(), &key)
        .is_some()
}

/// The checks every persistent operation makes before it validates anything else: durable
/// tables with stable ids, and pools that are exactly the world's own (a pool swapped in from
/// another world would refuse half way).
pub(crate) fn check_persistent_world<W: DurableRoster>(world: &mut W) -> Result<(), DurableError> {
    let (registry, durable) = enabled_mut(world)?;
    registry.check_phase()?;
    if durable.stable.capacity() == 0 {
        return Err(DurableError::Disabled);
    }
    // What a batch of creates left in the stable index's scratch list when a panic (in a
    // hand-written roster's code) cut it short is settled before anything is validated: its
    // unpublished reservations would otherwise look free to validation and then refuse the
    // binding half way.
    if !durable.stable.scratch_is_empty() {
        durable.stable.abandon_scratch();
    }
    // The same for a duplication a panic cut short: its reservations in the binding table
    // would otherwise skew a checkpoint restore's refill check.
    if !durable.bindings.scratch_is_empty() {
        durable.bindings.abandon_scratch();
    }
    if !crate::world::command::structural::roster_intact(world) {
        return Err(WorldError::ForeignPool.into());
    }
    Ok(())
}

/// `id` as the stable index's key and kind.
fn stable_key(id: &PersistentId) -> (PersistentObjectKey, BindingKind) {
    (
        bytemuck::cast(id.key_bytes()),
        BindingKind(id.namespace_tag()),
    )
}

/// The simulated state of one id while a transaction is validated.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sim {
    Live,
    Deleted,
}

/// Persistent spawn, transactions and the stable-id index of every durable world.
pub trait PersistentOps: DurableOps {
    /// The stable id of `entity`, if it has one: its spawned id, else its binding key as an
    /// authored id (module docs).
    fn stable_id(&self, entity: EntityId) -> Option<PersistentId> {
        let durable = self.durable();
        match durable.stable.binding_of(entity) {
            Some((key, kind)) => PersistentId::from_key(kind.0, bytemuck::cast(key)).ok(),
            None => {
                let (key, _) = durable.bindings.binding_of(entity)?;
                Some(PersistentId::Authored(bytemuck::cast(key)))
            }
        }
    }

    /// The live entity with stable id `id`: a spawned id in the stable-id index, an authored
    /// id as a binding key.
    fn entity_of(&self, id: &PersistentId) -> Option<EntityId> {
        let durable = self.durable();
        match id {
            PersistentId::Spawned(_) => {
                let (key, kind) = stable_key(id);
                let (e, found) = durable.stable.lookup(self.registry(), &key)?;
                (found == kind).then_some(e)
            }
            PersistentId::Authored(bytes) => durable
                .bindings
                .lookup(self.registry(), &bytemuck::cast(*bytes))
                .map(|(e, _)| e),
        }
    }

    /// Validates `tx` as a whole against the world, then applies it all or nothing: creates
    /// bind their prepared id to a fresh entity; updates insert or replace components;
    /// removals remove one; deletes destroy the entity (its id is unbound). A failed
    /// transaction changes no live state and leaves its prepared ids usable for a retry.
    ///
    /// # Errors
    /// [`TxError::Command`] naming the first refused command ([`TxRejection`]);
    /// [`TxError::World`] for the phase, capacity and budgets.
    fn transact(&mut self, tx: &Transaction) -> Result<TxReport, TxError> {
        check_persistent_world(self)?;
        let schema = schema::<Self>();
        if let Some(done) = transact_creates(self, tx, &schema) {
            return done;
        }
        let (registry, _) = enabled(self)?;
        // Validate in order, simulating which ids are live and how many slots are free (a
        // create may take a slot a delete earlier in the transaction freed).
        let mut sim: HashMap<PersistentId, Sim> = HashMap::with_capacity(tx.commands.len());
        // One entity may answer to two ids (a spawned entity that is also bound): the
        // simulation keys a live entity by its own stable id, so a delete through either id
        // is seen through the other.
        let canon = |id: &PersistentId| {
            self.entity_of(id)
                .and_then(|e| self.stable_id(e))
                .unwrap_or(*id)
        };
        let live = |sim: &HashMap<PersistentId, Sim>, id: &PersistentId| {
            let id = canon(id);
            match sim.get(&id) {
                Some(s) => *s == Sim::Live,
                None => self.entity_of(&id).is_some(),
            }
        };
        // The first identity `values` reference that is not live at this point.
        let unresolved = |sim: &HashMap<PersistentId, Sim>, values: &[ComponentValue]| {
            values.iter().find_map(|c| {
                let id = c.refs.iter().flatten().find(|id| !live(sim, id))?;
                Some(TxRejection::UnresolvedReference {
                    component: c.component.to_string(),
                    id: *id,
                })
            })
        };
        // The roster type of every value, in order (resolved once, applied without names).
        let mut types: Vec<TypeId> = Vec::new();
        let mut room = registry.available();
        let (mut creates, mut revisions) = (0u64, 0u64);
        let pools = Self::Components::LEN as u64;
        for (index, c) in tx.commands.iter().enumerate() {
            let refuse = |reason| TxError::Command { index, reason };
            match c {
                TxCommand::Create { spawn } => {
                    if !spawn.id.is_spawned() {
                        return Err(refuse(TxRejection::NotSpawned(spawn.id)));
                    }
                    if !is_canonical(&spawn.id) {
                        return Err(refuse(TxRejection::NotCanonical(spawn.id)));
                    }
                    // Live, or its key bytes taken by an id of the other namespace. A delete
                    // earlier in this transaction frees its own id only: the other namespace's
                    // id sharing its key bytes stays refused (conservative).
                    let taken = match sim.get(&spawn.id) {
                        Some(s) => *s == Sim::Live,
                        None => key_taken(self, &spawn.id),
                    };
                    if taken {
                        return Err(refuse(TxRejection::LiveId(spawn.id)));
                    }
                    check_components::<Self>(&schema, &spawn.components, &mut types)
                        .map_err(refuse)?;
                    if room == 0 {
                        return Err(DurableError::from(registry.capacity_error(1)).into());
                    }
                    room -= 1;
                    // Live before its values are read: a value may reference its own entity.
                    sim.insert(spawn.id, Sim::Live);
                    if let Some(r) = unresolved(&sim, &spawn.components) {
                        return Err(refuse(r));
                    }
                    creates += 1;
                    revisions += 1 + spawn.components.len() as u64;
                }
                TxCommand::Update { id, components } => {
                    if !live(&sim, id) {
                        return Err(refuse(TxRejection::UnknownId(*id)));
                    }
                    check_components::<Self>(&schema, components, &mut types).map_err(refuse)?;
                    if let Some(r) = unresolved(&sim, components) {
                        return Err(refuse(r));
                    }
                    revisions += components.len() as u64;
                }
                TxCommand::Remove { id, component } => {
                    if !live(&sim, id) {
                        return Err(refuse(TxRejection::UnknownId(*id)));
                    }
                    if component == IDENTITY_COMPONENT {
                        return Err(refuse(TxRejection::IdentityOverride));
                    }
                    if !schema.iter().any(|(n, ..)| n == component) {
                        return Err(refuse(TxRejection::UnknownComponent(component.clone())));
                    }
                    revisions += 1;
                }
                TxCommand::Delete { id } => {
                    if !live(&sim, id) {
                        return Err(refuse(TxRejection::UnknownId(*id)));
                    }
                    if self.entity_of(id).is_some_and(|e| self.is_protected(e)) {
                        return Err(refuse(TxRejection::Protected(*id)));
                    }
                    // A release at the terminal generation retires the slot instead (an
                    // entity created by this transaction is counted as freeing nothing).
                    let key = canon(id);
                    let frees = !sim.contains_key(&key)
                        && self
                            .entity_of(id)
                            .is_some_and(|e| e.generation() != TERMINAL_GENERATION);
                    room += usize::from(frees);
                    sim.insert(key, Sim::Deleted);
                    revisions += 1 + pools;
                }
            }
        }
        if u64::MAX - registry.last_sequence() < creates {
            return Err(DurableError::from(WorldError::SequenceExhausted).into());
        }
        registry
            .check_revisions(revisions)
            .map_err(DurableError::from)?;
        // Apply: nothing below can fail (everything was checked against the same state).
        let mut report = TxReport::default();
        let mut types = types.iter();
        let mut scratch = std::vec::Vec::new();
        for c in &tx.commands {
            let applied = match c {
                TxCommand::Create { spawn } => {
                    report.created += 1;
                    // Bound first: a value may reference the entity itself.
                    self.create().and_then(|e| {
                        bind_stable(self, e, &spawn.id)?;
                        insert_resolved(self, &mut types, e, &spawn.components, &mut scratch)
                    })
                }
                TxCommand::Update { id, components } => {
                    report.updated += components.len();
                    self.entity_of(id)
                        .ok_or(WorldError::UnknownComponent)
                        .and_then(|e| {
                            insert_resolved(self, &mut types, e, components, &mut scratch)
                        })
                }
                TxCommand::Remove { id, component } => {
                    report.removed += 1;
                    self.entity_of(id)
                        .ok_or(WorldError::UnknownComponent)
                        .and_then(|e| remove_named(self, &schema, e, component))
                }
                TxCommand::Delete { id } => {
                    report.deleted += 1;
                    self.entity_of(id)
                        .ok_or(WorldError::UnknownComponent)
                        .and_then(|e| self.destroy(e))
                }
            };
            // Only a roster that hands out other parts than it was checked with fails here.
            applied.map_err(DurableError::from)?;
        }
        Ok(report)
    }

    /// Applies every queued transaction in order at the structural boundary, each all or
    /// nothing, and empties the queue; returns each one's outcome.
    fn apply_deferred(&mut self, queue: &mut TransactionQueue) -> Vec<Result<TxReport, TxError>> {
        core::mem::take(&mut queue.queued)
            .iter()
            .map(|tx| self.transact(tx))
            .collect()
    }

    /// Checks the identity invariant over the whole world (O(capacity)): every stable id is
    /// canonical and bound to a live entity consistently in both directions.
    ///
    /// # Errors
    /// The first [`InvariantViolation`].
    fn check_identity_invariant(&self) -> Result<(), InvariantViolation> {
        let (registry, durable) = (self.registry(), self.durable());
        for (key, e, kind) in durable.stable.iter() {
            let slot = e.slot();
            if !registry.is_alive(e) {
                return Err(InvariantViolation::Stale { slot });
            }
            // The stable-id index holds spawned ids only (authored ids are binding keys).
            let id = PersistentId::from_key(kind.0, bytemuck::cast(key))
                .ok()
                .filter(PersistentId::is_spawned)
                .ok_or(InvariantViolation::NotCanonical { slot })?;
            if self.entity_of(&id) != Some(e) {
                return Err(InvariantViolation::Stale { slot });
            }
        }
        if !durable.stable.check_consistent() {
            return Err(InvariantViolation::Stale { slot: u32::MAX });
        }
        // Authored ids: every binding resolves back to its entity (a spawned entity that is
        // also bound keeps its spawned id).
        for (key, e, _) in durable.bindings.iter() {
            if !registry.is_alive(e) {
                return Err(InvariantViolation::Stale { slot: e.slot() });
            }
            if self.entity_of(&PersistentId::Authored(bytemuck::cast(key))) != Some(e) {
                return Err(InvariantViolation::Stale { slot: e.slot() });
            }
        }
        Ok(())
    }
}

impl<R: DurableOps> PersistentOps for R {}

/// [`PersistentOps::transact`] of a transaction of creates only, in batches: every command
/// validated as the general path does, then every id reserved in the stable index (a live or
/// repeated id fails its reservation), the entities created together, each component written
/// a column at a time, and the ids published in one activation.
///
/// `None` when a check fails, a reservation is refused or the transaction holds anything but
/// creates: nothing changed, and the general path then decides, naming the refusal as it
/// always has.
fn transact_creates<W: PersistentOps>(
    world: &mut W,
    tx: &Transaction,
    schema: &[SchemaEntry],
) -> Option<Result<TxReport, TxError>> {
    let n = tx.commands.len();
    // Runs of consecutive creates with the same component types: (first create, types).
    let mut runs: Vec<(usize, core::ops::Range<usize>)> = Vec::new();
    let mut lists: Vec<TypeId> = Vec::new();
    let mut types: Vec<TypeId> = Vec::new();
    let mut revisions = 0u64;
    let mut previous: Option<&PreparedSpawn> = None;
    for (k, spawn) in tx.commands.iter().enumerate() {
        let spawn = created(spawn)?;
        if !spawn.id.is_spawned() || !is_canonical(&spawn.id) {
            return None;
        }
        // The same names and sizes as the previous create (which passed), and no references:
        // the same checks pass, and the same types follow. Values with references take the
        // general path (resolved one by one).
        if !previous.is_some_and(|p| same_shape(&p.components, &spawn.components)) {
            if spawn.components.iter().any(|c| !c.refs.is_empty()) {
                return None;
            }
            types.clear();
            check_components::<W>(schema, &spawn.components, &mut types).ok()?;
            let same = runs
                .last()
                .is_some_and(|(_, r)| lists[r.clone()] == types[..]);
            if !same {
                runs.push((k, lists.len()..lists.len() + types.len()));
                lists.extend_from_slice(&types);
            }
        }
        previous = Some(spawn);
        revisions += 1 + spawn.components.len() as u64;
    }
    {
        let (registry, durable) = enabled_mut(world).ok()?;
        if registry.available() < n
            || u64::MAX - registry.last_sequence() < n as u64
            || registry.check_revisions(revisions).is_err()
            || registry.check_create_budget(n).is_err()
            || !durable.stable.scratch_is_empty()
        {
            return None;
        }
        let key = |k: usize| created(&tx.commands[k]).map(|s| stable_key(&s.id).0);
        if !durable.stable.reserve_each(n, key) {
            durable.stable.abandon_scratch();
            return None;
        }
    }
    // Nothing below can fail (everything was checked against the same state): each run in
    // chunks of at most `CREATE_CHUNK` entities, created together, then a column per
    // component, then their ids published.
    let mut entities = vec![EntityId::from_raw_parts(0, 0, 0); n.min(CREATE_CHUNK)];
    let mut published = true;
    for (r, (first, list)) in runs.iter().enumerate() {
        let end = runs.get(r + 1).map_or(n, |next| next.0);
        let mut at = *first;
        while at < end {
            let m = (end - at).min(CREATE_CHUNK);
            let commands = &tx.commands[at..at + m];
            let entities = &mut entities[..m];
            let applied = world.create_batch(entities).and_then(|()| {
                for (component, ty) in lists[list.clone()].iter().enumerate() {
                    let mut insert = InsertColumn {
                        world: &mut *world,
                        entities,
                        commands,
                        component,
                        result: Err(WorldError::UnknownComponent),
                    };
                    W::Components::dispatch(*ty, &mut insert);
                    insert.result?;
                }
                Ok(())
            });
            if let Err(e) = applied {
                // Only a roster that hands out other parts than it was checked with gets
                // here: keep the binding table whole (what was published stays bound).
                if let Ok((_, durable)) = enabled_mut(world) {
                    durable.stable.abandon_scratch();
                }
                return Some(Err(DurableError::from(e).into()));
            }
            let Ok((_, durable)) = enabled_mut(world) else {
                return Some(Err(DurableError::Disabled.into()));
            };
            for (k, (&e, c)) in entities.iter().zip(commands).enumerate() {
                let kind = created(c).map_or(BindingKind(0), |s| BindingKind(s.id.namespace_tag()));
                published &= durable.stable.publish_scratch(at + k, e, kind);
            }
            at += m;
        }
    }
    if let Ok((_, durable)) = enabled_mut(world) {
        // Fresh entities and reservations made just before: every publication succeeds. Should
        // one not (a roster handing out other parts), the index still ends whole: what was
        // published stays, the rest is released.
        if published {
            durable.stable.finish_scratch(n);
        } else {
            durable.stable.abandon_scratch();
        }
    }
    Some(Ok(TxReport {
        created: n,
        ..TxReport::default()
    }))
}

/// Entities `transact_creates` creates at a time (a reused buffer of handles).
const CREATE_CHUNK: usize = 512;

/// Whether two component lists name the same components, in the same order, with values of
/// the same sizes, and `b`'s values reference no entity.
#[inline]
fn same_shape(a: &[ComponentValue], b: &[ComponentValue]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.bytes.len() == y.bytes.len()
                && y.refs.is_empty()
                && same_name(&x.component, &y.component)
        })
}

/// Whether two component names are equal: at once when both borrow the same roster name (values
/// built from typed values), else by their bytes.
#[inline(always)]
fn same_name(a: &str, b: &str) -> bool {
    core::ptr::eq(a, b) || a == b
}

/// The prepared spawn of a create.
#[inline(always)]
fn created(c: &TxCommand) -> Option<&PreparedSpawn> {
    match c {
        TxCommand::Create { spawn } => Some(spawn),
        _ => None,
    }
}

/// Inserts component `component` of every create into its entity (one roster type).
struct InsertColumn<'a, W> {
    world: &'a mut W,
    entities: &'a [EntityId],
    commands: &'a [TxCommand],
    component: usize,
    result: Result<(), WorldError>,
}

impl<W: DurableRoster> TypeVisitor for InsertColumn<'_, W> {
    fn visit<T: Component>(&mut self) {
        let (commands, component) = (self.commands, self.component);
        self.result = crate::world::command::structural::insert_column::<W, T>(
            self.world,
            self.entities,
            |k| {
                created(&commands[k])
                    .and_then(|s| s.components.get(component))
                    .map_or(&[][..], |c| &c.bytes[..])
            },
        );
    }
}

/// Creates an entity and binds `id` to it (restore's first pass).
pub(crate) fn create_bound<W: DurableRoster>(
    world: &mut W,
    id: &PersistentId,
) -> Result<EntityId, WorldError> {
    let e = world.create()?;
    bind_stable(world, e, id)?;
    Ok(e)
}

/// Binds `id` to the fresh entity `e` (its stable index entry).
pub(crate) fn bind_stable<W: DurableRoster>(
    world: &mut W,
    e: EntityId,
    id: &PersistentId,
) -> Result<(), WorldError> {
    let (key, kind) = stable_key(id);
    let (registry, durable) = enabled_mut(world).map_err(|_| WorldError::ForeignPool)?;
    durable
        .stable
        .try_activate(
            registry,
            &[Activation {
                entity: e,
                key,
                kind,
            }],
        )
        .map_err(|_| WorldError::ForeignPool)
}

/// Inserts component values whose roster types were resolved at validation (`types`, in
/// value order) into `e`, each reference resolved to its live entity (`scratch` holds a
/// value with references while it is resolved).
fn insert_resolved<'t, W: PersistentOps>(
    world: &mut W,
    types: &mut impl Iterator<Item = &'t TypeId>,
    e: EntityId,
    values: &[ComponentValue],
    scratch: &mut std::vec::Vec<u8>,
) -> Result<(), WorldError> {
    for v in values {
        let ty = *types.next().ok_or(WorldError::UnknownComponent)?;
        insert_value(world, e, ty, v, scratch)?;
    }
    Ok(())
}

/// Inserts value `v` of roster type `ty` into `e`: its bytes as they are, or with each
/// reference resolved (in `scratch`) when it has any.
fn insert_value<W: PersistentOps>(
    world: &mut W,
    e: EntityId,
    ty: TypeId,
    v: &ComponentValue,
    scratch: &mut std::vec::Vec<u8>,
) -> Result<(), WorldError> {
    if v.refs.is_empty() {
        insert_bytes(world, e, ty, &v.bytes)
    } else {
        resolved_into(world, ty, v, scratch);
        insert_bytes(world, e, ty, scratch)
    }
}

/// The roster type of component `name`.
fn type_named(schema: &[SchemaEntry], name: &str) -> Result<TypeId, WorldError> {
    schema
        .iter()
        .find(|(n, ..)| *n == name)
        .map(|(_, t, ..)| *t)
        .ok_or(WorldError::UnknownComponent)
}

/// Inserts named component values into `e` (a wrong size is refused by `insert_bytes`),
/// each reference resolved to its live entity (restore's second pass).
pub(crate) fn insert_values<W: PersistentOps>(
    world: &mut W,
    schema: &[SchemaEntry],
    e: EntityId,
    values: &[ComponentValue],
    scratch: &mut std::vec::Vec<u8>,
) -> Result<(), WorldError> {
    for v in values {
        insert_value(world, e, type_named(schema, &v.component)?, v, scratch)?;
    }
    Ok(())
}

/// Removes the named component of `e`.
fn remove_named<W: DurableRoster>(
    world: &mut W,
    schema: &[SchemaEntry],
    e: EntityId,
    component: &str,
) -> Result<(), WorldError> {
    remove_type(world, e, type_named(schema, component)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::durable::DurableConfig;
    use crate::identity::test_entropy::SeqEntropy;

    crate::world! {
        struct Ids { hp: u32 }
        durable
    }

    /// The whole-index consistency check is the only one that sees a count that drifted
    /// from the entries: the per-id walk reads entries only.
    #[test]
    fn the_invariant_check_sees_an_index_whose_count_drifted() {
        let mut w = Ids::try_new_durable(4, DurableConfig::default()).unwrap();
        w.begin_structural();
        let spawn = PreparedSpawn::prepare::<Ids, _, _>((7u32,), &mut SeqEntropy::new(1)).unwrap();
        let tx = Transaction {
            label: "one".into(),
            commands: vec![TxCommand::Create { spawn }],
        };
        w.transact(&tx).unwrap();
        assert_eq!(w.check_identity_invariant(), Ok(()));
        let (_, durable) = enabled_mut(&mut w).unwrap();
        durable.stable.plant_count_drift();
        assert_eq!(
            w.check_identity_invariant(),
            Err(InvariantViolation::Stale { slot: u32::MAX })
        );
    }
}
