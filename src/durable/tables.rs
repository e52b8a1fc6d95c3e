//! [`Durable`]: the durable-identity tables of a world — its [`WorldBindingTable`] and its
//! [`Hierarchy`] (names, parents, ordered children, protection) — the [`DurableRoster`] that a
//! world declared `durable` implements, and the world's entity-typed component fields
//! ([`EntityRefs`]).
//!
//! A durable world's `try_new_durable` sizes every table once from its capacity. The tables are
//! the world's [`EntityHooks`]: every destroy of the world
//! (direct, by a commit, by an unload) detaches the entity here before its slot is released:
//! its binding is removed (so the key resolves `Missing`, and a recycled slot never inherits
//! it), its children are reparented by the world's [`OrphanPolicy`], its name is dropped.

use core::any::TypeId;

use crate::world::store::component::{self, Component};
use allocator_api2::alloc::{Allocator, Global};
use allocator_api2::vec::Vec;

use crate::durable::binding::WorldBindingTable;
use crate::durable::error::DurableError;
use crate::durable::hierarchy::{Hierarchy, OrphanPolicy, MAX_NAME_BYTES};
use crate::durable::ticket::TicketState;
use crate::identity::OwnerToken;
use crate::world::raw::keys::EntityId;
use crate::world::store::error::{InitError, WorldError};
use crate::world::store::hooks::EntityHooks;
use crate::world::store::read_only::ReadOnly;
use crate::world::store::registry::EntityRegistry;
use crate::world::store::reserve::filled;
use crate::world::store::roster::{sealed, ComponentList, HookedParts, Roster};
use crate::world::world_ops::WorldOps;

/// The default name arena's bytes per slot: a name and label of 26 bytes together (a record's
/// `"guard-a"` / `"Guard A"` pair) with their header for every entity the world can hold (see
/// [`DurableConfig::name_bytes`]).
pub const NAME_BYTES_PER_SLOT: usize = 32;

/// How a durable world sizes its identity tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DurableConfig {
    /// Bytes of the name arena (names are stored with a 6-byte header each); at most
    /// [`MAX_NAME_BYTES`](crate::durable::hierarchy::MAX_NAME_BYTES), else init fails with
    /// [`InitError::CapacityTooLarge`]. `usize::MAX` (the default): [`NAME_BYTES_PER_SLOT`]
    /// per slot of the world's capacity, at least 64 KiB (and at most `MAX_NAME_BYTES`).
    pub name_bytes: usize,
    /// Most bindings at once (at most the world's capacity; `usize::MAX`: the capacity).
    pub bindings: usize,
    /// What a destroy does with the entity's children.
    pub orphans: OrphanPolicy,
    /// Whether entities can carry stable ids (persistent spawn, transactions, checkpoints;
    /// `PersistentOps`): a second index of the binding table's shape.
    pub stable_ids: bool,
}

impl Default for DurableConfig {
    fn default() -> Self {
        Self {
            name_bytes: usize::MAX,
            bindings: usize::MAX,
            orphans: OrphanPolicy::Detach,
            stable_ids: true,
        }
    }
}

/// A component type with entity-typed fields: duplication, save, restore, prepared commands
/// and checkpoints rewrite them through this visitor instead of guessing (in the spirit of
/// bevy's `MapEntities`). Declare such types in the world's `entity_refs { … }` clause; a
/// durable world refuses at init a component type that implements `EntityRefs` without being
/// declared there ([`InitError::UndeclaredEntityRefs`]).
///
/// Derive it: `#[derive(EntityRefs)]` visits every field through [`EntityFields`] — an
/// `EntityId` field is visited, numbers and arrays of them are not, and a field of any other
/// type must declare its own (by deriving `EntityRefs` too) or the component does not compile.
/// So no entity field can be left out, however deeply nested:
///
/// ```
/// use ludus::prelude::*;
/// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable, EntityRefs)]
/// #[repr(C)]
/// pub struct Link { pub to: EntityId, pub weight: f32, pub _pad: u32 }
/// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable, EntityRefs)]
/// #[repr(C)]
/// pub struct Follow { pub target: EntityId, pub links: [Link; 2] }
/// let mut f = Follow { target: EntityId::NULL, links: [Link { to: EntityId::NULL, weight: 1.0, _pad: 0 }; 2] };
/// let mut n = 0;
/// f.visit_entities(&mut |_| n += 1);
/// assert_eq!(n, 3);
/// ```
///
/// A field of a foreign type that holds no entity is skipped by saying so:
///
/// ```
/// use ludus::prelude::*;
/// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
/// #[repr(C)]
/// pub struct Vec2 { pub x: f32, pub y: f32 } // think of a math crate's type
/// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable, EntityRefs)]
/// #[repr(C)]
/// pub struct Seek { pub target: EntityId, #[entity_refs(skip)] pub offset: Vec2 }
/// ```
///
/// A field of a type that declares nothing does not compile:
///
/// ```compile_fail,E0277
/// use ludus::prelude::*;
/// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
/// #[repr(C)]
/// pub struct Hidden { pub to: EntityId }
/// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable, EntityRefs)]
/// #[repr(C)]
/// pub struct Follow { pub inner: Hidden } // error: `Hidden: EntityFields` is not satisfied
/// ```
///
/// A hand-written impl is the writer's own promise to visit every entity field:
///
/// ```
/// use ludus::durable::EntityRefs;
/// use ludus::world::EntityId;
/// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
/// #[repr(C)]
/// pub struct Follow { pub target: EntityId, pub distance: f32, pub _pad: u32 }
/// impl EntityRefs for Follow {
///     fn visit_entities(&mut self, visit: &mut dyn FnMut(&mut EntityId)) {
///         visit(&mut self.target);
///     }
/// }
/// ```
///
/// The all-zero value is a component's value with every entity field null: `Zeroable` is
/// required (a checkpoint's schema finds the fields' offsets from it).
pub trait EntityRefs: Component + bytemuck::Zeroable {
    /// Calls `visit` once with every entity-typed field (null fields included).
    fn visit_entities(&mut self, visit: &mut dyn FnMut(&mut EntityId));
}

/// The entity fields of a field's type, for `#[derive(EntityRefs)]`: an [`EntityId`] is one,
/// a number none, an array each of its elements', and a type deriving `EntityRefs` those it
/// visits. A type with neither impl cannot be a field of a derived component (module docs of
/// [`EntityRefs`]).
pub trait EntityFields {
    /// Calls `visit` with every entity field of the value.
    fn visit_fields(&mut self, visit: &mut dyn FnMut(&mut EntityId));
}

impl EntityFields for EntityId {
    #[inline(always)]
    fn visit_fields(&mut self, visit: &mut dyn FnMut(&mut EntityId)) {
        visit(self);
    }
}

impl<T: EntityFields, const N: usize> EntityFields for crate::world::PlainArray<T, N> {
    #[inline]
    fn visit_fields(&mut self, visit: &mut dyn FnMut(&mut EntityId)) {
        self.0.visit_fields(visit);
    }
}

impl<T: EntityFields, const N: usize> EntityFields for [T; N] {
    #[inline]
    fn visit_fields(&mut self, visit: &mut dyn FnMut(&mut EntityId)) {
        self.iter_mut().for_each(|x| x.visit_fields(visit));
    }
}

macro_rules! no_entity_fields {
    ($($t:ty),*) => {$(
        impl EntityFields for $t {
            #[inline(always)]
            fn visit_fields(&mut self, _: &mut dyn FnMut(&mut EntityId)) {}
        }
    )*};
}
no_entity_fields!(
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
    i8,
    i16,
    i32,
    i64,
    i128,
    isize,
    f32,
    f64,
    ()
);

impl<T: ?Sized> EntityFields for core::marker::PhantomData<T> {
    #[inline(always)]
    fn visit_fields(&mut self, _: &mut dyn FnMut(&mut EntityId)) {}
}

/// Counters of the durable part (observability).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DurableCounters {
    /// Required references that did not resolve (duplication, restore, `resolve_required`).
    pub unresolved_references: u64,
    /// Completions refused by ticket validation.
    pub stale_completions: u64,
}

/// The durable-identity part of a world (module docs). Read it through
/// [`DurableRoster::durable`] (`w.durable()`); it changes only through the world's
/// [`DurableOps`](crate::durable::durable_ops::DurableOps).
pub struct Durable<A: Allocator + Clone = Global> {
    owner: OwnerToken,
    pub(crate) bindings: WorldBindingTable<A>,
    /// Stable ids (`PersistentId` as a 32-byte key, its namespace as the kind).
    pub(crate) stable: WorldBindingTable<A>,
    pub(crate) hierarchy: Hierarchy<A>,
    pub(crate) policy: OrphanPolicy,
    /// Duplication scratch, per slot: `epoch << 32 | (index + 1)` of a selected entity.
    pub(crate) remap: Vec<u64, A>,
    pub(crate) epoch: u32,
    pub(crate) counters: DurableCounters,
    /// Per slot: ticket request sequence and content revision (monotone across incarnations).
    pub(crate) tickets: Vec<TicketState, A>,
}

impl<A: Allocator + Clone> core::fmt::Debug for Durable<A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Durable")
            .field("enabled", &self.is_enabled())
            .field("bindings", &self.bindings)
            .field("hierarchy", &self.hierarchy)
            .field("policy", &self.policy)
            .field("counters", &self.counters)
            .finish()
    }
}

impl<A: Allocator + Clone> Durable<A> {
    fn try_new_in(capacity: usize, c: DurableConfig, alloc: A) -> Result<Self, InitError> {
        let slots = capacity;
        let bindings = if slots == 0 { 0 } else { c.bindings.min(slots) };
        Ok(Self {
            owner: 0,
            bindings: WorldBindingTable::try_new_in(0, slots, bindings, alloc.clone())?,
            stable: WorldBindingTable::try_new_raw_in(
                0,
                slots,
                if c.stable_ids { slots } else { 0 },
                alloc.clone(),
            )?,
            hierarchy: Hierarchy::try_new_in(
                slots,
                match (slots, c.name_bytes) {
                    (0, _) => 0,
                    (_, usize::MAX) => slots
                        .saturating_mul(NAME_BYTES_PER_SLOT)
                        .clamp(64 * 1024, MAX_NAME_BYTES),
                    (_, bytes) => bytes,
                },
                alloc.clone(),
            )?,
            policy: c.orphans,
            remap: filled(slots, 0, alloc.clone())?,
            epoch: 0,
            counters: DurableCounters::default(),
            tickets: filled(slots, TicketState::default(), alloc)?,
        })
    }

    /// Owner token of the world's registry (0 before init completes).
    #[inline]
    pub fn owner(&self) -> OwnerToken {
        self.owner
    }

    /// Whether the tables have room for any entity (false only for a world of no capacity).
    #[inline(always)]
    pub fn is_enabled(&self) -> bool {
        self.hierarchy.slots() != 0
    }

    /// The binding table.
    #[inline]
    pub fn bindings(&self) -> &WorldBindingTable<A> {
        &self.bindings
    }

    /// Names and links.
    #[inline]
    pub fn hierarchy(&self) -> &Hierarchy<A> {
        &self.hierarchy
    }

    /// What a destroy does with children.
    #[inline]
    pub fn orphan_policy(&self) -> OrphanPolicy {
        self.policy
    }

    /// Observability counters.
    #[inline]
    pub fn counters(&self) -> DurableCounters {
        self.counters
    }

    /// Bytes of fixed storage.
    pub fn footprint_bytes(&self) -> usize {
        self.bindings.footprint_bytes()
            + self.stable.footprint_bytes()
            + self.hierarchy.footprint_bytes()
            + self.remap.len() * core::mem::size_of::<u64>()
            + self.tickets.len() * core::mem::size_of::<TicketState>()
    }

    /// The live parent handle of `slot`'s node, if any (never a stale handle).
    pub(crate) fn parent_handle<B: Allocator + Clone>(
        &self,
        registry: &EntityRegistry<B>,
        slot: u32,
    ) -> Option<EntityId> {
        let (s, g) = self.hierarchy.parent(slot)?;
        let p = EntityId::from_raw_parts(registry.owner(), s, g);
        registry.is_alive(p).then_some(p)
    }

    /// Whether `entity`'s slot is protected (a destroy must be refused).
    #[inline(always)]
    pub(crate) fn is_protected(&self, entity: EntityId) -> bool {
        self.is_enabled() && self.hierarchy.is_protected(entity.slot())
    }

    /// The destroy hook: detaches `entity` (alive, checked by the caller) before its slot is
    /// released — binding removed, children reparented by policy, name dropped, tickets
    /// superseded.
    #[inline(always)]
    pub(crate) fn detach(&mut self, owner: OwnerToken, entity: EntityId) {
        if !self.is_enabled() {
            return;
        }
        let slot = entity.slot();
        // Every ticket of the slot is superseded (even one re-pointed at a later incarnation).
        self.tickets[slot as usize].request += 1;
        if self.bindings.may_bind(slot) {
            self.bindings.detach(entity);
        }
        if self.stable.may_bind(slot) {
            self.stable.detach(entity);
        }
        if self.hierarchy.has_links(slot) {
            let grandparent = self
                .hierarchy
                .parent(slot)
                .map(|(s, g)| EntityId::from_raw_parts(owner, s, g));
            self.hierarchy.detach(slot, self.policy, grandparent);
        }
    }
}

impl<A: Allocator + Clone> ReadOnly<Durable<A>> {
    /// The durable tables of a new world of `capacity` entities, sized by `config`. The
    /// `world!` constructors of a durable world call it.
    ///
    /// # Errors
    /// [`InitError::Allocation`], [`InitError::CapacityTooLarge`].
    pub fn try_new_durable(
        capacity: usize,
        config: DurableConfig,
        alloc: A,
    ) -> Result<Self, InitError> {
        Durable::try_new_in(capacity, config, alloc).map(Self::wrap)
    }
}

/// The durable tables are a durable world's destroy hooks: a protected entity is not
/// destroyed, and a destroyed one is detached first (binding removed, so its key resolves
/// `Missing` and a recycled slot never inherits it; children reparented by the world's
/// [`OrphanPolicy`]; name dropped).
impl<A: Allocator + Clone> EntityHooks for Durable<A> {
    #[inline(always)]
    fn serves(&self, owner: OwnerToken) -> bool {
        self.owner == owner
    }

    fn fits(&self, capacity: usize) -> bool {
        self.owner == 0 && (self.hierarchy.slots() == 0 || self.hierarchy.slots() == capacity)
    }

    fn attach(&mut self, owner: OwnerToken) {
        if self.owner == 0 {
            self.owner = owner;
            self.bindings.attach(owner);
            self.stable.attach(owner);
        }
    }

    #[inline(always)]
    fn protects(&self, entity: EntityId) -> bool {
        self.is_protected(entity)
    }

    #[inline(always)]
    fn on_destroy(&mut self, owner: OwnerToken, entity: EntityId) {
        self.detach(owner, entity);
    }
}

/// A world with durable identity: declared by [`world!`](crate::world!) with a `durable`
/// clause, its destroy hooks are its [`Durable`] tables. The durable operations
/// ([`DurableOps`](crate::durable::DurableOps), [`PersistentOps`](crate::durable::PersistentOps),
/// [`CheckpointOps`](crate::durable::CheckpointOps)) exist only on such worlds.
pub trait DurableRoster: Roster<Hooks = Durable<<Self as Roster>::Alloc>> {
    /// The components with entity-typed fields ([`EntityRefs`]), a sub-list of
    /// `Components`: duplication and restore remap their references.
    type Refs: RefList;

    /// The first component (by roster name) whose type implements [`EntityRefs`] without
    /// being one of `Refs`; `world!` computes it, and a durable world refuses to bind while
    /// there is one ([`InitError::UndeclaredEntityRefs`]).
    fn undeclared_entity_refs() -> Option<&'static str> {
        None
    }

    /// The registry, the durable tables and every pool, mutably.
    #[inline(always)]
    fn durable_parts(&mut self) -> HookedParts<'_, Self> {
        self.hooked_parts()
    }

    /// The durable tables, shared.
    #[inline(always)]
    fn durable(&self) -> &Durable<Self::Alloc> {
        self.hooks()
    }
}

/// Rewrites every entity-typed field of the values of type `ty` held as bytes in `values`
/// (`size_of` of it each) with `f(value index, field)`, when `ty` is one of `W`'s
/// [`EntityRefs`] types; false, doing nothing, otherwise.
pub(crate) fn rewrite_refs_of<W: DurableRoster>(
    ty: TypeId,
    values: &mut [u8],
    f: &mut dyn FnMut(usize, &mut EntityId),
) -> bool {
    struct Rewrite<'a> {
        want: TypeId,
        values: &'a mut [u8],
        f: &'a mut dyn FnMut(usize, &mut EntityId),
        found: bool,
    }
    impl RefVisitor for Rewrite<'_> {
        fn visit<R: EntityRefs>(&mut self) {
            if TypeId::of::<R>() != self.want || self.found {
                return;
            }
            self.found = true;
            let size = core::mem::size_of::<R>();
            if size == 0 {
                return;
            }
            for (i, chunk) in self.values.chunks_exact_mut(size).enumerate() {
                // A chunk that holds no `R` is left as it is: values read from outside are
                // checked before anything changes, and refused.
                let Some(mut v) = component::read::<R>(chunk) else {
                    continue;
                };
                v.visit_entities(&mut |e: &mut EntityId| (self.f)(i, e));
                chunk.copy_from_slice(bytemuck::bytes_of(&v));
            }
        }
    }
    let mut rewrite = Rewrite {
        want: ty,
        values,
        f,
        found: false,
    };
    W::Refs::each(&mut rewrite);
    rewrite.found
}

/// Whether type `ty` is one of `W`'s [`EntityRefs`] types.
pub(crate) fn has_refs_of<W: DurableRoster>(ty: TypeId) -> bool {
    struct Find(TypeId, bool);
    impl RefVisitor for Find {
        #[inline(always)]
        fn visit<R: EntityRefs>(&mut self) {
            self.1 |= TypeId::of::<R>() == self.0;
        }
    }
    let mut f = Find(ty, false);
    W::Refs::each(&mut f);
    f.1
}

/// What `world!` asks of each component type: whether it implements [`EntityRefs`], through
/// `(&&RefsProbe::<T>::NEW).declares_refs()` with [`DeclaresRefs`] and [`NoRefs`] in scope (the
/// first applies when `T: EntityRefs`, the second otherwise).
#[doc(hidden)]
#[derive(Debug)]
pub struct RefsProbe<T>(core::marker::PhantomData<T>);

impl<T> RefsProbe<T> {
    /// The probe.
    pub const NEW: Self = Self(core::marker::PhantomData);
}

/// See [`RefsProbe`].
#[doc(hidden)]
pub trait DeclaresRefs {
    /// True.
    fn declares_refs(&self) -> bool;
}

impl<T: EntityRefs> DeclaresRefs for &RefsProbe<T> {
    fn declares_refs(&self) -> bool {
        true
    }
}

/// See [`RefsProbe`].
#[doc(hidden)]
pub trait NoRefs {
    /// False.
    fn declares_refs(&self) -> bool;
}

impl<T> NoRefs for RefsProbe<T> {
    fn declares_refs(&self) -> bool {
        false
    }
}

/// Calls back with each entity-referencing component type.
pub trait RefVisitor {
    /// Called with one type.
    fn visit<T: EntityRefs>(&mut self);
}

/// A type list of [`EntityRefs`] component types: `()` or `(Head, Tail)`; sealed.
pub trait RefList: sealed::List + 'static {
    /// Number of types.
    const LEN: usize;
    /// Calls `v` with every type, in order.
    fn each<V: RefVisitor>(v: &mut V);
    /// Whether every type is one of `C`.
    fn all_in<C: ComponentList>() -> bool;
}

impl RefList for () {
    const LEN: usize = 0;
    #[inline(always)]
    fn each<V: RefVisitor>(_: &mut V) {}
    fn all_in<C: ComponentList>() -> bool {
        true
    }
}

impl<H: EntityRefs, T: RefList> RefList for (H, T) {
    const LEN: usize = 1 + T::LEN;
    #[inline(always)]
    fn each<V: RefVisitor>(v: &mut V) {
        v.visit::<H>();
        T::each(v);
    }
    fn all_in<C: ComponentList>() -> bool {
        C::contains(TypeId::of::<H>()) && T::all_in::<C>()
    }
}

/// Binds a new durable world (what `world!`'s durable constructors call): checks that its
/// `entity_refs` are components of the world, then [`WorldOps::try_bind`].
///
/// # Errors
/// [`InitError::UnknownRefComponent`], and as [`WorldOps::try_bind`]; no owner token is
/// consumed on any of them.
pub fn try_bind_durable<W: DurableRoster>(world: &mut W) -> Result<(), InitError> {
    if !W::Refs::all_in::<W::Components>() {
        return Err(InitError::UnknownRefComponent);
    }
    if let Some(component) = W::undeclared_entity_refs() {
        return Err(InitError::UndeclaredEntityRefs { component });
    }
    world.try_bind()
}

/// A world's registry and durable part, shared.
type Halves<'w, W> = (
    &'w EntityRegistry<<W as Roster>::Alloc>,
    &'w Durable<<W as Roster>::Alloc>,
);

/// The registry and durable part of an enabled world whose part belongs to its registry.
pub(crate) fn enabled<W: DurableRoster>(world: &W) -> Result<Halves<'_, W>, DurableError> {
    let (registry, durable) = (world.registry(), world.durable());
    if !durable.is_enabled() {
        return Err(DurableError::Disabled);
    }
    if durable.owner() != registry.owner() {
        return Err(WorldError::ForeignPool.into());
    }
    Ok((registry, durable))
}

/// Mutable parts of an enabled world, checked as [`enabled`].
#[allow(clippy::type_complexity)]
pub(crate) fn enabled_mut<W: DurableRoster>(
    world: &mut W,
) -> Result<(&mut EntityRegistry<W::Alloc>, &mut Durable<W::Alloc>), DurableError> {
    // The pair handed out is the pair checked (a hand-written roster may hand out other
    // parts than `registry()` and `durable()` do).
    let (registry, durable, _) = world.durable_parts();
    if !durable.is_enabled() {
        return Err(DurableError::Disabled);
    }
    if durable.owner() != registry.owner() {
        return Err(WorldError::ForeignPool.into());
    }
    Ok((&mut registry.0, &mut durable.0))
}
