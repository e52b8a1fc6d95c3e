//! The restore engine shared by World records and level files: a [`Plan`] stages every
//! entity and component value of a document, resolves its links, checks the world, and only
//! then applies it in two passes.
//!
//! ```text
//! decode   each component's properties → its roster type (serde), entity-typed fields
//!          holding the target's UUID bits                                 (nothing touched)
//! resolve  every link against the document's own UUIDs, forward ones included:
//!          UUID bits → plan index                                         (nothing touched)
//! check    phase, capacity, sequence and revision budgets, name budget, binding capacity,
//!          every key unbound                                              (nothing touched)
//! pass 1   create one entity per plan entity (SourceObjectId → EntityId)
//! pass 2   plan index → EntityId in every link; insert values; names; parents
//! publish  one atomic binding activation
//! ```
//!
//! Everything that can be refused is refused before pass 1 (a pool swapped in from another
//! world included), so a refused document leaves the world exactly as it was — counters and
//! generations included. Should pass 1, pass 2 or the activation still fail (nothing the
//! checks know of can: a crafted binding-probe collision through the test-only secret, a
//! hand-written roster that hands out other parts than it was checked with), every entity of
//! pass 1 is destroyed again before the error is returned: no binding is published, and the
//! live state is as before (the registry's monotone counters and the released slots'
//! generations have advanced).

use core::mem::size_of;

use crate::world::store::component::{self, Component};

use serde::de::value::MapDeserializer;
use serde::de::{self, Deserializer, Visitor};
use uuid::Uuid;

use super::error::Text;
use super::mapping::{bits_uuid, rewrite_refs, RecordComponent, RecordList, RecordVisitor};
use super::restore_error::RestoreErrorKind;
use crate::buckets::{bucket_sort, top16, Starts};
use crate::durable::tables::enabled_mut;
use crate::durable::{
    first_cycle, Activation, BindingKind, DurableError, DurableOps, DurableRoster, HierarchyError,
    MAX_LABEL_LEN, MAX_NAME_LEN,
};
use crate::identity::{
    format_uuid, InstanceId, PersistentObjectKey, SourceObjectId, UUID_TEXT_LEN,
};
use crate::world::roster::Roster;
use crate::world::{insert_value, roster_intact, EntityId, WorldError};
use serde_json::Value;

/// One entity of a plan.
#[derive(Debug)]
pub(crate) struct PlanEntity {
    pub(crate) uuid: Uuid,
    /// Its name: `names[name.0 .. name.0 + name.1]` of the plan, then its label's `label`
    /// bytes.
    name: (usize, usize),
    label: u8,
    pub(crate) parent: Option<u32>,
}

/// The staged values of one roster component: `size_of::<T>()` bytes per value, and the plan
/// index of the entity each belongs to.
#[derive(Debug, Default)]
struct Column {
    bytes: Vec<u8>,
    owners: Vec<u32>,
}

/// A document staged for restore (module docs).
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) entities: Vec<PlanEntity>,
    /// Every entity's name, one after the other.
    names: String,
    /// `(UUID, plan index)`, bucket-sorted by UUID once [`seal`](Self::seal)ed: about two
    /// passes, then a link looks in one bucket (`buckets.rs`).
    index: Vec<(u128, u32)>,
    starts: Starts,
    sealed: bool,
    columns: Vec<Column>,
    /// Entities expected (sizes a column on its first value).
    expected: usize,
}

/// Where a link failed to resolve: the entity, the roster component, the UUID.
pub(crate) struct Unresolved {
    pub(crate) entity: usize,
    pub(crate) component: usize,
    pub(crate) uuid: Uuid,
}

/// Test seam: make the apply fail after a given step, to exercise the rollback.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailPoint {
    /// After pass 1 created the entities.
    AfterCreate,
    /// After pass 2 inserted the values, named and parented the entities.
    BeforeActivate,
}

/// A placeholder for "the entity at plan index `i`" between resolve and pass 2 (owner 0: never
/// a live handle).
#[inline]
fn placeholder(i: u32) -> EntityId {
    EntityId::from_raw_parts(0, i, 1)
}

impl Plan {
    /// An empty plan for `W`, expecting `entities` entities.
    pub(crate) fn new<W: Roster>(entities: usize) -> Self {
        Self {
            entities: Vec::with_capacity(entities),
            names: String::with_capacity(entities * 8),
            index: Vec::with_capacity(entities),
            starts: Starts::default(),
            sealed: false,
            columns: (0..W::NAMES.len()).map(|_| Column::default()).collect(),
            expected: entities,
        }
    }

    /// Adds an entity with its name and label (a legacy id of at most
    /// [`MAX_LABEL_LEN`] bytes, or `""`: checked by the readers). A repeated UUID is found by
    /// [`seal`](Self::seal).
    pub(crate) fn push_entity(&mut self, uuid: Uuid, name: &str, label: &str) {
        let i = self.entities.len() as u32;
        self.index.push((uuid.as_u128(), i));
        self.sealed = false;
        let start = self.names.len();
        self.names.push_str(name);
        let label = label.get(..label.len().min(MAX_LABEL_LEN)).unwrap_or("");
        // A label that is the entity's own UUID text is what a save derives for an entity
        // without one: not held (it would cost the arena 36 bytes per entity for nothing).
        let mut text = [0u8; UUID_TEXT_LEN];
        let own = label.len() == UUID_TEXT_LEN && format_uuid(&uuid, &mut text) == label;
        let label = if own { "" } else { label };
        self.names.push_str(label);
        self.entities.push(PlanEntity {
            uuid,
            name: (start, name.len()),
            label: label.len() as u8,
            parent: None,
        });
    }

    /// Sorts the index once every entity is in; false when two entities share a UUID.
    pub(crate) fn seal(&mut self) -> bool {
        self.starts = bucket_sort(&mut self.index, |e| top16(e.0), |a, b| a.0.cmp(&b.0));
        self.sealed = true;
        !self.index.windows(2).any(|w| w[0].0 == w[1].0)
    }

    /// The plan index of the entity with `uuid` (after [`seal`](Self::seal)).
    pub(crate) fn lookup(&self, uuid: Uuid) -> Option<u32> {
        debug_assert!(self.sealed, "lookup before seal");
        find(&self.index, &self.starts, uuid)
    }

    /// The name of plan entity `i`.
    pub(crate) fn name(&self, i: usize) -> &str {
        let (start, len) = self.entities[i].name;
        &self.names[start..start + len]
    }

    /// The label of plan entity `i` (`""`: none).
    pub(crate) fn label(&self, i: usize) -> &str {
        let (start, len) = self.entities[i].name;
        let at = start + len;
        self.names
            .get(at..at + usize::from(self.entities[i].label))
            .unwrap_or("")
    }

    /// The plan index the next [`push_entity`](Self::push_entity) gets.
    pub(crate) fn next_index(&self) -> usize {
        self.entities.len()
    }

    /// Decodes `form` (a component's serde form: an object of properties, or any other form
    /// a newtype, tuple or unit struct has) as the value of roster component `component` of
    /// plan entity `entity`.
    ///
    /// # Errors
    /// serde's message: a property the type does not have, a missing or mistyped one, an
    /// invalid entity reference.
    pub(crate) fn decode<W: Roster>(
        &mut self,
        entity: usize,
        component: usize,
        form: &Value,
    ) -> Result<(), String>
    where
        W::Components: RecordList,
    {
        struct Decode<'c, 'v> {
            form: Option<&'v Value>,
            column: &'c mut Column,
            result: Result<(), String>,
        }
        impl RecordVisitor for Decode<'_, '_> {
            fn visit<T: RecordComponent>(&mut self, _: usize) {
                let Some(form) = self.form.take() else {
                    return;
                };
                // An object is read through `Props` (a struct refuses undeclared properties
                // whatever its own serde attributes say); any other form as it is.
                let value = match form {
                    Value::Object(props) => {
                        T::deserialize(Props(props.iter().map(|(k, v)| (k.as_str(), v))))
                    }
                    other => T::deserialize(other),
                };
                self.result = match value {
                    Ok(v) => {
                        self.column.bytes.extend_from_slice(bytemuck::bytes_of(&v));
                        Ok(())
                    }
                    Err(e) => Err(e.to_string()),
                };
            }
        }
        let column = &mut self.columns[component];
        let before = column.bytes.len();
        let mut d = Decode {
            form: Some(form),
            column,
            result: Ok(()),
        };
        let result = if W::Components::visit_at(0, component, &mut d) {
            d.result
        } else {
            Err("unknown component".into())
        };
        if result.is_ok() {
            column.owners.push(entity as u32);
        } else {
            column.bytes.truncate(before);
        }
        result
    }

    /// Stages `value` as roster component `component` of plan entity `entity` (the caller
    /// decoded it as that component's type).
    pub(crate) fn push_value<T: Component>(&mut self, entity: usize, component: usize, value: &T) {
        let column = &mut self.columns[component];
        if column.owners.capacity() == 0 {
            column.owners.reserve(self.expected);
            column.bytes.reserve(self.expected * size_of::<T>());
        }
        column.bytes.extend_from_slice(bytemuck::bytes_of(value));
        column.owners.push(entity as u32);
    }

    /// Number of staged values.
    pub(crate) fn values(&self) -> usize {
        self.columns.iter().map(|c| c.owners.len()).sum()
    }

    /// Resolves every link against the plan's UUIDs (UUID bits → plan index).
    ///
    /// # Errors
    /// The first link, in roster then document order, whose UUID is not in the plan.
    pub(crate) fn resolve<W: DurableRoster>(&mut self) -> Result<(), Unresolved>
    where
        W::Components: RecordList,
    {
        for k in 0..self.columns.len() {
            let mut failed = None;
            debug_assert!(self.sealed, "resolve before seal");
            let (index, starts) = (&self.index[..], &self.starts);
            let column = &mut self.columns[k];
            let owners = &column.owners;
            for_column::<W>(k, &mut column.bytes, &mut |i, e| {
                if e.is_null() || failed.is_some() {
                    return;
                }
                let uuid = bits_uuid(*e);
                match find(index, starts, uuid) {
                    Some(t) => *e = placeholder(t),
                    None => {
                        failed = Some(Unresolved {
                            entity: owners[i] as usize,
                            component: k,
                            uuid,
                        })
                    }
                }
            });
            if let Some(u) = failed {
                return Err(u);
            }
        }
        Ok(())
    }

    /// Checks the world, then creates, fills, names, parents and binds every plan entity (module
    /// docs). Returns the handles in plan order.
    ///
    /// # Errors
    /// `World` (phase, capacity, budgets, names, a disabled world), `DuplicateIdentity` (plan
    /// entity index, key); nothing changes. After pass 1, any failure destroys what pass 1
    /// created and publishes nothing.
    pub(crate) fn apply<W: DurableOps>(
        &self,
        world: &mut W,
        instance: Option<InstanceId>,
        fail: Option<FailPoint>,
    ) -> Result<Vec<EntityId>, (Option<usize>, RestoreErrorKind)>
    where
        W::Components: RecordList,
    {
        let world_err = |e: DurableError| (None, RestoreErrorKind::World(e));
        let n = self.entities.len();
        // A pool swapped in from another world would refuse pass 2's inserts, and the
        // rollback's destroys with them, leaving the pass-1 entities alive: refused first.
        if !roster_intact(world) {
            return Err(world_err(WorldError::ForeignPool.into()));
        }
        let (registry, durable) = (world.registry(), world.durable());
        if !durable.is_enabled() {
            return Err(world_err(DurableError::Disabled));
        }
        if durable.owner() != registry.owner() {
            return Err(world_err(WorldError::ForeignPool.into()));
        }
        registry
            .check_create_budget(n)
            .and_then(|()| registry.check_revisions((n + self.values()) as u64))
            .map_err(|e| world_err(e.into()))?;
        // Names: the first entity whose name is too long, or at which the names so far
        // outgrow the arena, is the one reported.
        let h = durable.hierarchy();
        let mut names = 0usize;
        for (i, e) in self.entities.iter().enumerate() {
            let refuse = |err: HierarchyError| (Some(i), RestoreErrorKind::World(err.into()));
            let record = e.name.1 + usize::from(e.label);
            if record > MAX_NAME_LEN {
                return Err(refuse(HierarchyError::NameTooLong { len: e.name.1 }));
            }
            names += crate::durable::Hierarchy::<W::Alloc>::name_cost(record);
            if names > h.name_free() {
                return Err(refuse(HierarchyError::NameBudget {
                    requested: names,
                    free: h.name_free(),
                    budget: h.name_budget(),
                }));
            }
        }
        // One cycle check over the whole plan (linear however the document orders its
        // entities) stands for `set_parent`'s walk per entity in pass 2.
        if let Some(i) = first_cycle(n, |i| self.entities[i].parent.map(|p| p as usize)) {
            return Err((
                Some(i),
                RestoreErrorKind::World(HierarchyError::Cycle.into()),
            ));
        }
        if let Some(instance) = instance {
            let b = durable.bindings();
            if n > b.capacity() - b.len() {
                return Err(world_err(DurableError::Activation(
                    crate::durable::ActivationError::CapacityExhausted {
                        requested: n,
                        available: b.capacity() - b.len(),
                        capacity: b.capacity(),
                    },
                )));
            }
            // An empty table binds no key: nothing to look up.
            let probe = !b.is_empty();
            for (i, e) in self.entities.iter().enumerate() {
                let key = self.key(instance, i);
                match key {
                    Some(key) if !probe || !b.contains_key(&key) => {}
                    Some(key) => {
                        return Err((Some(i), RestoreErrorKind::DuplicateIdentity { key }))
                    }
                    None => {
                        return Err((
                            Some(i),
                            RestoreErrorKind::Unbindable {
                                uuid: e.uuid.to_string(),
                            },
                        ))
                    }
                }
            }
        }
        // Pass 1.
        let mut created = vec![EntityId::NULL; n];
        world
            .create_batch(&mut created)
            .map_err(|e| world_err(e.into()))?;
        let result = self.fill(world, &created, instance, fail);
        if let Err(e) = result {
            for &c in &created {
                let _ = world.destroy(c);
            }
            return Err(e);
        }
        Ok(created)
    }

    /// The binding key of plan entity `i` under `instance` (`None`: its UUID is no version-4
    /// source-object id, so it cannot be bound).
    fn key(&self, instance: InstanceId, i: usize) -> Option<PersistentObjectKey> {
        SourceObjectId::from_uuid(self.entities[i].uuid)
            .ok()
            .map(|object| PersistentObjectKey::new(instance, object))
    }

    /// Pass 2 and the publication.
    fn fill<W: DurableOps>(
        &self,
        world: &mut W,
        created: &[EntityId],
        instance: Option<InstanceId>,
        fail: Option<FailPoint>,
    ) -> Result<(), (Option<usize>, RestoreErrorKind)>
    where
        W::Components: RecordList,
    {
        let world_err = |e: DurableError| (None, RestoreErrorKind::World(e));
        if fail == Some(FailPoint::AfterCreate) {
            return Err(world_err(DurableError::Disabled));
        }
        for (k, column) in self.columns.iter().enumerate() {
            if column.owners.is_empty() {
                continue;
            }
            let mut bytes = column.bytes.clone();
            for_column::<W>(k, &mut bytes, &mut |_, e| {
                if !e.is_null() {
                    *e = created[e.slot() as usize];
                }
            });
            struct Insert<'a, W> {
                world: &'a mut W,
                bytes: &'a [u8],
                owners: &'a [u32],
                created: &'a [EntityId],
                result: Result<(), WorldError>,
            }
            impl<W: Roster> RecordVisitor for Insert<'_, W> {
                fn visit<T: RecordComponent>(&mut self, _: usize) {
                    let size = size_of::<T>();
                    for (i, &o) in self.owners.iter().enumerate() {
                        let v = component::try_read::<T>(&self.bytes[i * size..(i + 1) * size]);
                        if let Err(e) = v.and_then(|v| {
                            insert_value::<W, T>(self.world, self.created[o as usize], v)
                        }) {
                            self.result = Err(e);
                            return;
                        }
                    }
                }
            }
            let mut ins = Insert {
                world: &mut *world,
                bytes: &bytes,
                owners: &column.owners,
                created,
                result: Ok(()),
            };
            W::Components::visit_at(0, k, &mut ins);
            ins.result.map_err(|e| world_err(e.into()))?;
        }
        // Names and labels (one record each), then parents: linked without `set_parent`'s
        // ancestor walk per entity (checked before pass 1: the plan's links are acyclic, and
        // its entities fresh and unprotected).
        let (_, durable) = enabled_mut(world).map_err(world_err)?;
        for (i, &entity) in created.iter().enumerate() {
            let (name, label) = (self.name(i), self.label(i));
            if !name.is_empty() || !label.is_empty() {
                durable
                    .hierarchy
                    .set_name_and_label(entity.slot(), name, label)
                    .map_err(|err| (Some(i), RestoreErrorKind::World(err.into())))?;
            }
        }
        for (i, e) in self.entities.iter().enumerate() {
            if let Some(&p) = e.parent.and_then(|p| created.get(p as usize)) {
                durable.hierarchy.set_parent(created[i].slot(), Some(p));
            }
        }
        if fail == Some(FailPoint::BeforeActivate) {
            return Err(world_err(DurableError::Disabled));
        }
        if let Some(instance) = instance {
            let mut batch = Vec::with_capacity(created.len());
            for (i, &entity) in created.iter().enumerate() {
                let key = self
                    .key(instance, i)
                    .ok_or((Some(i), RestoreErrorKind::World(DurableError::Disabled)))?;
                batch.push(Activation {
                    entity,
                    key,
                    kind: BindingKind::ANY,
                });
            }
            world.activate(&batch).map_err(world_err)?;
        }
        Ok(())
    }
}

/// The plan index of `uuid` in a sealed index.
fn find(index: &[(u128, u32)], starts: &Starts, uuid: Uuid) -> Option<u32> {
    let key = uuid.as_u128();
    let bucket = &index[starts.range(top16(key), index.len())];
    bucket
        .binary_search_by_key(&key, |e| e.0)
        .ok()
        .map(|at| bucket[at].1)
}

/// Rewrites the entity-typed fields of roster component `k`'s staged values.
fn for_column<W: DurableRoster>(k: usize, bytes: &mut [u8], f: &mut dyn FnMut(usize, &mut EntityId))
where
    W::Components: RecordList,
{
    struct Each<'a, W> {
        bytes: &'a mut [u8],
        f: &'a mut dyn FnMut(usize, &mut EntityId),
        _w: core::marker::PhantomData<W>,
    }
    impl<W: DurableRoster> RecordVisitor for Each<'_, W> {
        fn visit<T: RecordComponent>(&mut self, _: usize) {
            rewrite_refs::<W, T>(self.bytes, self.f);
        }
    }
    W::Components::visit_at(
        0,
        k,
        &mut Each::<W> {
            bytes,
            f,
            _w: core::marker::PhantomData,
        },
    );
}

/// A component's properties as a serde deserializer: a map, whose struct form refuses any
/// property the type does not declare (whatever the type's own serde attributes say).
struct Props<I>(I);

impl<'de, I: Iterator<Item = (&'de str, &'de Value)> + Clone> Deserializer<'de> for Props<I> {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        let mut map = MapDeserializer::new(self.0);
        let value = visitor.visit_map(&mut map)?;
        map.end()?;
        Ok(value)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        if let Some((k, _)) = self.0.clone().find(|(k, _)| !fields.contains(k)) {
            return Err(de::Error::custom(format_args!(
                "unknown property `{}`",
                Text(k)
            )));
        }
        self.deserialize_any(visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Speed {
        speed: f32,
    }

    #[test]
    fn unknown_property_message_is_one_line() {
        let v = Value::from(1.0);
        let props = [("speed", &v), ("sp\need", &v)];
        let e = <Speed as serde::Deserialize>::deserialize(Props(props.into_iter())).unwrap_err();
        assert_eq!(e.to_string(), r"unknown property `sp\need`");
    }
}
