//! `CommandBuffer`: bounded deferred structural changes, committed all-or-nothing at the
//! structural boundary.
//!
//! Systems record `create`, `destroy`, `insert` and `remove` against a read-only registry.
//! Recording a destroy marks the entity pending (it keeps its values; `is_active` turns false)
//! once the command is stored. Commands targeting an entity that is not active are refused at
//! recording time, so no command in a buffer follows that entity's own destroy.
//!
//! Commit preflights the whole batch (phase, a free slot for every create at its place in the
//! batch — slots freed by earlier destroys of the batch count —, sequence and revision budgets,
//! every target alive, every component type known) and then applies it in recorded order; a failed
//! preflight applies nothing and keeps the buffer for inspection or [`CommandBuffer::clear`].
//! A run of consecutive destroys is applied as one step (each pool removes the run in one
//! pass, the slots are released in recorded order); only the pools' dense order can differ
//! from destroying the entities one by one.

use core::any::TypeId;

use crate::world::store::component::Component;
use allocator_api2::alloc::{Allocator, Global};
use allocator_api2::vec::Vec;

use crate::identity::{IdentityExhausted, OwnerToken, TokenSource, TERMINAL_GENERATION};
use crate::world::command::spawn::first_duplicate;
use crate::world::command::structural::{
    self, insert_bytes, insert_fresh_bytes, remove_type, BundleLayout,
};
use crate::world::raw::keys::EntityId;
use crate::world::store::error::CommandError;
use crate::world::store::error::InitError;
use crate::world::store::error::WorldError;
use crate::world::store::hooks::EntityHooks;
use crate::world::store::registry::process_owner_token;
use crate::world::store::registry::EntityRegistry;
use crate::world::store::reserve;
use crate::world::store::roster::{ComponentList, Roster};

/// Most consecutive destroys a commit applies as one run: a stack array of handles, small
/// because it is filled afresh for every run (a lone destroy between spawns is a run of one).
const DESTROY_RUN: usize = 16;

/// An entity a [`CommandBuffer`] will create at commit. Resolve it with
/// [`CommandBuffer::resolve`] after the commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Provisional {
    buffer: OwnerToken,
    epoch: u64,
    index: u32,
}

/// The target of an insert or remove command: an existing entity or a provisional one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// An entity alive in the registry.
    Entity(EntityId),
    /// An entity created earlier in the same buffer.
    Provisional(Provisional),
}

impl From<EntityId> for Target {
    fn from(e: EntityId) -> Self {
        Target::Entity(e)
    }
}

impl From<Provisional> for Target {
    fn from(p: Provisional) -> Self {
        Target::Provisional(p)
    }
}

#[derive(Debug, Clone, Copy)]
enum Subject {
    Entity(EntityId),
    Created(u32),
}

#[derive(Debug, Clone, Copy)]
enum Command {
    /// `bundle`: the number of fresh inserts recorded right after it by
    /// [`CommandBuffer::spawn`] (0 for [`CommandBuffer::create`]).
    Create {
        bundle: u32,
    },
    Destroy(EntityId),
    /// A destroy recorded by [`CommandBuffer::respawn`]: a `Create` of the replacement's
    /// bundle follows it. Everywhere but `apply` it is a `Destroy`.
    Replace(EntityId),
    Insert {
        subject: Subject,
        component: TypeId,
        offset: u32,
        size: u32,
        /// One component of a [`CommandBuffer::spawn`] bundle: distinct types, recorded right
        /// after their create, so at commit the entity is fresh and holds no such component.
        fresh: bool,
    },
    Remove {
        subject: Subject,
        component: TypeId,
    },
}

impl Command {
    /// The target of a destroy.
    #[inline(always)]
    fn destroyed(&self) -> Option<EntityId> {
        match *self {
            Command::Destroy(e) => Some(e),
            _ => None,
        }
    }
}

/// Seals [`CommandBundle`] and [`BundleSink`]: implemented inside the crate only.
pub(crate) mod sealed {
    pub trait Sealed {}
}

/// A tuple of 1 to 8 distinct [`Component`](crate::world::Component) types recorded together by
/// [`CommandBuffer::spawn`] (sealed).
pub trait CommandBundle: sealed::Sealed {
    /// Number of components.
    const LEN: usize;
    /// Value bytes of all components.
    const BYTES: usize;
    /// The first type named twice.
    fn duplicate() -> Option<&'static str>;
    /// Hands each component to `sink`, in order, typed (so each copy has a constant size).
    fn record_into<S: BundleSink>(self, sink: &mut S);
}

/// Receives a [`CommandBundle`]'s components one typed value at a time (sealed: the crate's
/// command recorders).
pub trait BundleSink: sealed::Sealed {
    /// Takes one component value.
    fn push<C: Component>(&mut self, value: &C);
}

macro_rules! tuple_command_bundle {
    ($len:literal; $($t:ident $i:tt),+) => {
        impl<$($t: Component),+> sealed::Sealed for ($($t,)+) {}
        impl<$($t: Component),+> CommandBundle for ($($t,)+) {
            const LEN: usize = $len;
            const BYTES: usize = 0 $(+ core::mem::size_of::<$t>())+;
            fn duplicate() -> Option<&'static str> {
                first_duplicate(&[$(TypeId::of::<$t>()),+], &[$(core::any::type_name::<$t>()),+])
            }
            #[inline(always)]
            fn record_into<S: BundleSink>(self, sink: &mut S) {
                $( sink.push(&self.$i); )+
            }
        }
    };
}

tuple_command_bundle!(1; T0 0);
tuple_command_bundle!(2; T0 0, T1 1);
tuple_command_bundle!(3; T0 0, T1 1, T2 2);
tuple_command_bundle!(4; T0 0, T1 1, T2 2, T3 3);
tuple_command_bundle!(5; T0 0, T1 1, T2 2, T3 3, T4 4);
tuple_command_bundle!(6; T0 0, T1 1, T2 2, T3 3, T4 4, T5 5);
tuple_command_bundle!(7; T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6);
tuple_command_bundle!(8; T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6, T7 7);

/// Appends `bytes` to `store` within its reserved capacity (the callers checked the room; a
/// short one panics, writing nothing). One copy: `allocator_api2`'s `extend_from_slice` clones
/// byte by byte.
#[inline(always)]
fn push_bytes<A: Allocator>(store: &mut Vec<u8, A>, bytes: &[u8]) {
    let len = store.len();
    assert!(
        store.capacity() - len >= bytes.len(),
        "command byte store overflow"
    );
    // SAFETY: `len + bytes.len() <= capacity` (checked above), so the destination is within the
    // allocation and past the initialized prefix (no overlap with `bytes`, a distinct borrow);
    // the new length covers exactly the bytes written.
    unsafe {
        core::ptr::copy_nonoverlapping(bytes.as_ptr(), store.as_mut_ptr().add(len), bytes.len());
        store.set_len(len + bytes.len());
    }
}

/// Records a spawned bundle's components as fresh inserts on `subject` (room for the whole
/// bundle was checked before).
struct FreshInserts<'b, A: Allocator> {
    commands: &'b mut Vec<Command, A>,
    bytes: &'b mut Vec<u8, A>,
    subject: Subject,
}

impl<A: Allocator> sealed::Sealed for FreshInserts<'_, A> {}

impl<A: Allocator> BundleSink for FreshInserts<'_, A> {
    #[inline(always)]
    fn push<C: Component>(&mut self, value: &C) {
        let offset = self.bytes.len() as u32;
        push_bytes(self.bytes, bytemuck::bytes_of(value));
        self.commands.push(Command::Insert {
            subject: self.subject,
            component: TypeId::of::<C>(),
            offset,
            size: core::mem::size_of::<C>() as u32,
            fresh: true,
        });
    }
}

/// A bounded list of structural commands with a bounded byte store for inserted values.
/// All memory is allocated at init.
///
/// # Examples
/// ```
/// use ludus::world::{CommandBuffer, WorldOps};
/// ludus::world! {
///     pub struct Game { pub hp: u32 }
/// }
/// let mut game = Game::try_new(8)?;
/// let mut cmd = CommandBuffer::try_with_capacity(16, 256)?;
/// game.end_structural(); // systems phase
/// let p = cmd.create()?;
/// cmd.insert(&game.registry, p, 100u32)?;
/// assert_eq!(game.commit(&mut cmd), Err(ludus::world::WorldError::InvalidPhase));
/// game.begin_structural();
/// game.commit(&mut cmd)?;
/// let e = cmd.resolve(p).unwrap();
/// assert_eq!(game.hp.get(e), Some(&100));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct CommandBuffer<A: Allocator + Clone = Global> {
    token: OwnerToken,
    /// Owner of the registry the current commands were recorded against (0: none yet).
    registry: OwnerToken,
    /// The registry's mark epoch when the first recorded destroy marked its target (`None`:
    /// no destroy recorded). A later `clear_pending` advances the registry's epoch and clears
    /// the marks: then this buffer refuses to commit and `clear` leaves marks alone.
    marks: Option<u64>,
    /// Advances on every commit and clear; provisionals of older epochs are refused.
    epoch: u64,
    commands: Vec<Command, A>,
    bytes: Vec<u8, A>,
    /// Creates recorded in the current epoch.
    creates: u32,
    /// Handles created by the last commit, by provisional index.
    created: Vec<EntityId, A>,
}

impl CommandBuffer<Global> {
    /// A buffer for `commands` commands and `bytes` bytes of inserted values.
    ///
    /// # Errors
    /// [`InitError`] on a capacity over `u32::MAX`, allocation failure or token exhaustion.
    pub fn try_with_capacity(commands: usize, bytes: usize) -> Result<Self, InitError> {
        Self::try_with_capacity_in(commands, bytes, Global)
    }
}

impl<A: Allocator + Clone> CommandBuffer<A> {
    /// As [`CommandBuffer::try_with_capacity`], allocating from `alloc`.
    ///
    /// # Errors
    /// As [`CommandBuffer::try_with_capacity`].
    pub fn try_with_capacity_in(
        commands: usize,
        bytes: usize,
        alloc: A,
    ) -> Result<Self, InitError> {
        Self::init(commands, bytes, alloc, process_owner_token)
    }

    /// As [`CommandBuffer::try_with_capacity_in`], taking the buffer's token from `tokens`
    /// (for token-exhaustion tests and loom models). The token is issued after every array.
    ///
    /// # Errors
    /// As [`CommandBuffer::try_with_capacity`].
    ///
    /// # Safety
    /// No other buffer alive at the same time holds a token `tokens` issues: the token is
    /// what keeps one buffer from accepting another's [`Provisional`] (see
    /// [`EntityRegistry::try_with_capacity_and_tokens`]).
    pub unsafe fn try_with_capacity_and_tokens(
        commands: usize,
        bytes: usize,
        alloc: A,
        tokens: &TokenSource,
    ) -> Result<Self, InitError> {
        Self::init(commands, bytes, alloc, || tokens.issue())
    }

    fn init(
        commands: usize,
        bytes: usize,
        alloc: A,
        issue: impl FnOnce() -> Result<OwnerToken, IdentityExhausted>,
    ) -> Result<Self, InitError> {
        let max = u32::MAX as usize;
        if commands > max || bytes > max {
            return Err(InitError::CapacityTooLarge {
                requested: commands.max(bytes),
                max,
            });
        }
        // Written once here, so recording into a fresh buffer never faults a page in.
        let commands_v = reserve::resident(commands, Command::Create { bundle: 0 }, alloc.clone())?;
        let bytes_v = reserve::resident(bytes, 0u8, alloc.clone())?;
        let created = reserve::resident(commands, EntityId::NULL, alloc)?;
        let token = issue().map_err(|_| InitError::IdentityExhausted)?;
        Ok(Self {
            token,
            registry: 0,
            marks: None,
            epoch: 0,
            commands: commands_v,
            bytes: bytes_v,
            creates: 0,
            created,
        })
    }

    /// Number of recorded commands.
    pub fn len(&self) -> usize {
        self.commands.len()
    }

    /// True when nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }

    fn room(&self, bytes: usize) -> Result<(), CommandError> {
        let bytes_free = self.bytes.capacity() - self.bytes.len();
        let full = self.commands.len() >= self.commands.capacity()
            || bytes_free < bytes
            || self.creates == u32::MAX;
        if full {
            Err(CommandError::BufferFull {
                commands: self.commands.len(),
                command_capacity: self.commands.capacity(),
                bytes_requested: bytes,
                bytes_free,
            })
        } else {
            Ok(())
        }
    }

    /// `Ok` when the commands so far were recorded against `registry` (or there are none).
    fn same_registry<B: Allocator + Clone>(
        &self,
        registry: &EntityRegistry<B>,
    ) -> Result<(), CommandError> {
        if self.registry == 0 || self.registry == registry.owner() {
            Ok(())
        } else {
            Err(CommandError::ForeignRegistry)
        }
    }

    fn subject<B: Allocator + Clone>(
        &self,
        registry: &EntityRegistry<B>,
        target: Target,
    ) -> Result<Subject, CommandError> {
        self.same_registry(registry)?;
        match target {
            Target::Entity(e) => match registry.diagnose(e) {
                Ok(()) => Ok(Subject::Entity(e)),
                Err(r) => Err(CommandError::Rejected(r)),
            },
            Target::Provisional(p) => {
                if p.buffer == self.token && p.epoch == self.epoch && p.index < self.creates {
                    Ok(Subject::Created(p.index))
                } else {
                    Err(CommandError::ForeignProvisional)
                }
            }
        }
    }

    /// Records the creation of an entity.
    ///
    /// # Errors
    /// [`CommandError::BufferFull`].
    pub fn create(&mut self) -> Result<Provisional, CommandError> {
        self.create_bundle(0)
    }

    /// Records a create followed by `bundle` fresh inserts (the caller records them).
    fn create_bundle(&mut self, bundle: u32) -> Result<Provisional, CommandError> {
        self.room(0)?;
        Ok(self.push_create(bundle))
    }

    /// Records a create followed by `bundle` fresh inserts (room checked by the caller).
    fn push_create(&mut self, bundle: u32) -> Provisional {
        let index = self.creates;
        self.commands.push(Command::Create { bundle });
        self.creates += 1;
        Provisional {
            buffer: self.token,
            epoch: self.epoch,
            index,
        }
    }

    /// Records the creation of an entity holding every component of `bundle` (a tuple of 1 to 8
    /// distinct component types): one create and one insert per component, recorded all or nothing.
    /// The provisional resolves to the handle after the commit, as [`create`](Self::create)'s.
    ///
    /// # Errors
    /// [`CommandError::DuplicateComponent`] (a type named twice), [`CommandError::BufferFull`]
    /// (room for every command and value byte is checked first) or
    /// [`CommandError::ForeignRegistry`]; nothing is recorded.
    pub fn spawn<T: CommandBundle, B: Allocator + Clone>(
        &mut self,
        registry: &EntityRegistry<B>,
        bundle: T,
    ) -> Result<Provisional, CommandError> {
        if let Some(component) = T::duplicate() {
            return Err(CommandError::DuplicateComponent { component });
        }
        self.same_registry(registry)?;
        self.bundle_room::<T>(0)?;
        Ok(self.push_bundle(registry, bundle))
    }

    /// Records the destruction of an active entity and marks it pending in `registry`.
    ///
    /// # Errors
    /// [`CommandError::BufferFull`] or [`CommandError::Rejected`] (e.g. already pending);
    /// nothing is recorded or marked.
    pub fn destroy<B: Allocator + Clone>(
        &mut self,
        registry: &EntityRegistry<B>,
        entity: EntityId,
    ) -> Result<(), CommandError> {
        self.room(0)?;
        self.same_registry(registry)?;
        self.mark(registry, entity)?;
        self.commands.push(Command::Destroy(entity));
        self.registry = registry.owner();
        Ok(())
    }

    /// Records the destruction of the active entity `old` and the creation of its replacement
    /// holding every component of `bundle`, as [`destroy`](Self::destroy) then
    /// [`spawn`](Self::spawn) would, in one step. The commit applies them as those two would
    /// (`old` is stale after it; the provisional resolves to the new handle, in the slot a
    /// create right after that destroy takes: `old`'s own, one generation on, unless the
    /// release retires it at the terminal generation), and *in place* when `old` and the
    /// bundle share a component type: the replacement takes `old`'s row in every pool of a
    /// shared type (value overwritten, the row left where it is); `old`'s other rows are
    /// removed and the bundle's other components appended, as a remove and a spawn would
    /// (a group holding a shared type and one of those unpacks or packs, which moves the
    /// shared rows it holds). What a particle system's expiry and respawn needs.
    ///
    /// # Errors
    /// As `destroy` and `spawn`; nothing is recorded or marked.
    pub fn respawn<T: CommandBundle, B: Allocator + Clone>(
        &mut self,
        registry: &EntityRegistry<B>,
        old: EntityId,
        bundle: T,
    ) -> Result<Provisional, CommandError> {
        if let Some(component) = T::duplicate() {
            return Err(CommandError::DuplicateComponent { component });
        }
        self.same_registry(registry)?;
        self.bundle_room::<T>(1)?;
        self.mark(registry, old)?;
        self.commands.push(Command::Replace(old));
        Ok(self.push_bundle(registry, bundle))
    }

    /// `Ok` when `extra` commands besides a `T` bundle's create and inserts, and its value
    /// bytes, fit ([`CommandError::BufferFull`] otherwise).
    fn bundle_room<T: CommandBundle>(&self, extra: usize) -> Result<(), CommandError> {
        let commands_free = self.commands.capacity() - self.commands.len();
        if commands_free < extra + 1 + T::LEN {
            let bytes_free = self.bytes.capacity() - self.bytes.len();
            return Err(CommandError::BufferFull {
                commands: self.commands.len(),
                command_capacity: self.commands.capacity(),
                bytes_requested: T::BYTES,
                bytes_free,
            });
        }
        self.room(T::BYTES)
    }

    /// Records `bundle`'s create and its fresh inserts (room checked by
    /// [`bundle_room`](Self::bundle_room)).
    fn push_bundle<T: CommandBundle, B: Allocator + Clone>(
        &mut self,
        registry: &EntityRegistry<B>,
        bundle: T,
    ) -> Provisional {
        let p = self.push_create(T::LEN as u32);
        bundle.record_into(&mut FreshInserts {
            commands: &mut self.commands,
            bytes: &mut self.bytes,
            subject: Subject::Created(p.index),
        });
        self.registry = registry.owner();
        p
    }

    /// Marks `entity` pending in `registry` for a destroy this buffer records.
    ///
    /// # Errors
    /// [`CommandError::MarksCleared`] or [`CommandError::Rejected`]; nothing is marked.
    fn mark<B: Allocator + Clone>(
        &mut self,
        registry: &EntityRegistry<B>,
        entity: EntityId,
    ) -> Result<(), CommandError> {
        if self
            .marks
            .is_some_and(|epoch| epoch != registry.mark_epoch())
        {
            return Err(CommandError::MarksCleared);
        }
        registry
            .try_mark_pending(entity)
            .map_err(CommandError::Rejected)?;
        self.marks = Some(registry.mark_epoch());
        Ok(())
    }

    /// Records giving `value` to `target` (an active entity or a provisional of this buffer).
    ///
    /// # Errors
    /// [`CommandError::BufferFull`], [`CommandError::Rejected`] or
    /// [`CommandError::ForeignProvisional`]; nothing is recorded.
    pub fn insert<T: Component, B: Allocator + Clone>(
        &mut self,
        registry: &EntityRegistry<B>,
        target: impl Into<Target>,
        value: T,
    ) -> Result<(), CommandError> {
        let subject = self.subject(registry, target.into())?;
        let bytes = bytemuck::bytes_of(&value);
        self.room(bytes.len())?;
        let offset = self.bytes.len() as u32;
        push_bytes(&mut self.bytes, bytes);
        self.commands.push(Command::Insert {
            subject,
            component: TypeId::of::<T>(),
            offset,
            size: bytes.len() as u32,
            fresh: false,
        });
        self.registry = registry.owner();
        Ok(())
    }

    /// Records removing `T` from `target`.
    ///
    /// # Errors
    /// As [`insert`](Self::insert).
    pub fn remove<T: Component, B: Allocator + Clone>(
        &mut self,
        registry: &EntityRegistry<B>,
        target: impl Into<Target>,
    ) -> Result<(), CommandError> {
        let subject = self.subject(registry, target.into())?;
        self.room(0)?;
        self.commands.push(Command::Remove {
            subject,
            component: TypeId::of::<T>(),
        });
        self.registry = registry.owner();
        Ok(())
    }

    /// The handle created for `p` by the last commit of this buffer.
    pub fn resolve(&self, p: Provisional) -> Option<EntityId> {
        if p.buffer != self.token || p.epoch.checked_add(1) != Some(self.epoch) {
            return None;
        }
        self.created.get(p.index as usize).copied()
    }

    /// Drops every recorded command and clears the pending marks its destroys set in
    /// `registry`, the one they were recorded against.
    ///
    /// # Errors
    /// [`CommandError::ForeignRegistry`] when the commands were recorded against another
    /// registry; nothing changes.
    pub fn clear<B: Allocator + Clone>(
        &mut self,
        registry: &EntityRegistry<B>,
    ) -> Result<(), CommandError> {
        self.same_registry(registry)?;
        // Marks cleared by `clear_pending` may since belong to another buffer: leave them.
        if self.marks == Some(registry.mark_epoch()) {
            for c in &self.commands {
                if let Command::Destroy(e) | Command::Replace(e) = c {
                    registry.unmark_pending(*e);
                }
            }
        }
        self.reset();
        self.created.clear();
        Ok(())
    }

    fn reset(&mut self) {
        self.commands.clear();
        self.bytes.clear();
        self.creates = 0;
        self.registry = 0;
        self.marks = None;
        self.epoch = self.epoch.saturating_add(1);
    }

    fn preflight<W: Roster>(&self, world: &W) -> Result<(), WorldError> {
        let registry = world.parts_ref().0;
        let pools = W::Components::LEN as u64;
        let mut revisions: u64 = 0;
        // Commands apply in order, so a create can take a slot an earlier destroy of the same
        // batch frees (LIFO): the free slots are counted along the way.
        let mut free = if registry.owner() == 0 {
            0
        } else {
            registry.available()
        };
        let mut short = false;
        for c in &self.commands {
            match *c {
                Command::Create { .. } => {
                    revisions += 1;
                    short |= free == 0;
                    free = free.saturating_sub(1);
                }
                Command::Destroy(e) | Command::Replace(e) => {
                    registry.check_alive(e)?;
                    if world.hooks().protects(e) {
                        return Err(WorldError::Protected);
                    }
                    revisions += 1 + pools;
                    // A release at the terminal generation retires the slot instead.
                    free += usize::from(e.generation() != TERMINAL_GENERATION);
                }
                Command::Insert {
                    subject, component, ..
                }
                | Command::Remove { subject, component } => {
                    if let Subject::Entity(e) = subject {
                        registry.check_alive(e)?;
                    }
                    if !W::Components::contains(component) {
                        return Err(WorldError::UnknownComponent);
                    }
                    revisions += 1;
                }
            }
        }
        if short {
            return Err(registry.capacity_error(self.creates as usize));
        }
        if u64::MAX - registry.last_sequence() < u64::from(self.creates) {
            return Err(WorldError::SequenceExhausted);
        }
        registry.check_revisions(revisions)
    }

    /// Applies every command to `world`, all or nothing. Prefer the world's `commit` method.
    ///
    /// # Errors
    /// [`WorldError::InvalidPhase`], [`WorldError::ForeignCommands`] (recorded against another
    /// world's registry), [`WorldError::MarksCleared`] (the world cleared every
    /// pending mark since this buffer recorded a destroy: clear the buffer),
    /// [`WorldError::ForeignPool`] (a pool of the world belongs to another registry), a short
    /// budget, a target no longer alive or an unknown component type; then nothing is applied
    /// and the buffer is kept.
    pub fn commit<W: Roster>(&mut self, world: &mut W) -> Result<(), WorldError> {
        world.parts_ref().0.check_phase()?;
        // Recorded against another world's registry (inserts on provisionals would cross).
        if self.registry != 0 && self.registry != world.parts_ref().0.owner() {
            return Err(WorldError::ForeignCommands);
        }
        // Its destroys' marks were cleared: the entities may have been targeted since by
        // commands this buffer would apply after their destroy.
        if self
            .marks
            .is_some_and(|epoch| epoch != world.parts_ref().0.mark_epoch())
        {
            return Err(WorldError::MarksCleared);
        }
        // A pool swapped in from another world would refuse its commands half way.
        if !structural::roster_intact(world) || !world.hooks().serves(world.parts_ref().0.owner()) {
            return Err(WorldError::ForeignPool);
        }
        self.preflight(world)?;
        self.apply(world)?;
        self.reset();
        Ok(())
    }

    /// Applies every command in order, filling `created` (the preflight passed).
    fn apply<W: Roster>(&mut self, world: &mut W) -> Result<(), WorldError> {
        self.created.clear();
        let mut layout = BundleLayout {
            stamp: 0,
            owner: 0,
            first: None,
        };
        let mut i = 0;
        while i < self.commands.len() {
            let applied = match self.commands[i] {
                Command::Create { bundle } => {
                    // A bundle's pools that were equal before its inserts share a fresh stamp
                    // after them, as with `spawn` (the layout invariant of `ComponentPool`).
                    layout = {
                        let registry = &mut world.parts().0 .0;
                        BundleLayout {
                            stamp: if bundle > 1 {
                                registry.fresh_layout()
                            } else {
                                0
                            },
                            owner: registry.owner(),
                            first: None,
                        }
                    };
                    world
                        .parts()
                        .0
                         .0
                        .try_create()
                        .map(|e| self.created.push(e))
                }
                Command::Replace(old) => match self.replace_at(world, i, old) {
                    Ok(Some(skip)) => {
                        i += skip;
                        Ok(())
                    }
                    Ok(None) => structural::destroy_run(world, core::iter::once(old)),
                    Err(e) => Err(e),
                },
                Command::Destroy(_) => {
                    // A run of consecutive destroys is applied together (up to `DESTROY_RUN`
                    // at a time): one pass per pool instead of one visit of every pool each.
                    let mut run = [EntityId::from_raw_parts(0, 0, 0); DESTROY_RUN];
                    let targets = self.commands[i..].iter().map_while(Command::destroyed);
                    let n = run.iter_mut().zip(targets).map(|(r, e)| *r = e).count();
                    i += n - 1;
                    structural::destroy_run(world, run[..n].iter().copied())
                }
                Command::Insert {
                    subject,
                    component,
                    offset,
                    size,
                    fresh,
                } => match self.entity(subject) {
                    Err(e) => Err(e),
                    Ok(entity) => {
                        let bytes = &self.bytes[offset as usize..(offset + size) as usize];
                        if fresh {
                            insert_fresh_bytes(world, entity, component, bytes, &mut layout)
                        } else {
                            insert_bytes(world, entity, component, bytes)
                        }
                    }
                },
                Command::Remove { subject, component } => self
                    .entity(subject)
                    .and_then(|entity| remove_type(world, entity, component)),
            };
            if let Err(e) = applied {
                // Unreachable through `world!` (the preflight checked everything the
                // commands check): only a hand-written roster that hands out other parts
                // than it was checked with stops a commit half way. The handles created so
                // far are not the last commit's: no provisional may resolve to them.
                self.created.clear();
                return Err(e);
            }
            i += 1;
        }
        Ok(())
    }

    /// Applies the `Replace(old)` at command `i` with the spawn recorded after it, in place
    /// when [`structural::replace_in_place`] applies: returns how many commands after `i` it took (the
    /// create and its inserts), or `None` (nothing changed) for the usual destroy and spawn.
    fn replace_at<W: Roster>(
        &mut self,
        world: &mut W,
        i: usize,
        old: EntityId,
    ) -> Result<Option<usize>, WorldError> {
        let Some(&Command::Create { bundle }) = self.commands.get(i + 1) else {
            return Ok(None);
        };
        let n = bundle as usize;
        if n == 0 || n > structural::MAX_REPLACEMENT {
            return Ok(None);
        }
        let created = self.created.len() as u32;
        let mut parts = [(TypeId::of::<()>(), &[][..]); structural::MAX_REPLACEMENT];
        for (k, part) in parts[..n].iter_mut().enumerate() {
            match self.commands.get(i + 2 + k) {
                Some(&Command::Insert {
                    subject: Subject::Created(c),
                    component,
                    offset,
                    size,
                    fresh: true,
                }) if c == created => {
                    let Some(bytes) = self.bytes.get(offset as usize..(offset + size) as usize)
                    else {
                        return Ok(None);
                    };
                    *part = (component, bytes);
                }
                _ => return Ok(None),
            }
        }
        Ok(
            structural::replace_in_place(world, old, &parts[..n])?.map(|new| {
                self.created.push(new);
                1 + n
            }),
        )
    }

    fn entity(&self, s: Subject) -> Result<EntityId, WorldError> {
        match s {
            Subject::Entity(e) => Ok(e),
            Subject::Created(i) => self
                .created
                .get(i as usize)
                .copied()
                .ok_or(WorldError::UnknownProvisional),
        }
    }
}

impl<A: Allocator + Clone> core::fmt::Debug for CommandBuffer<A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CommandBuffer")
            .field("commands", &self.commands.len())
            .field("capacity", &self.commands.capacity())
            .field("bytes", &self.bytes.len())
            .field("creates", &self.creates)
            .field("epoch", &self.epoch)
            .finish()
    }
}
