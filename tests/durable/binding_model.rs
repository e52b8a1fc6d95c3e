//! A standalone `WorldBindingTable` against a model over random operation sequences: batches
//! of activations (valid, repeated, bound, over capacity), entities released without a detach
//! (their bindings go stale), recycled slots, detaches and prunes. After every step each key
//! resolves as the model says, one by one and in a batch, each entity's key is the model's,
//! the refusal of a failed batch names the model's candidate and reason, and the table checks
//! consistent.

use std::collections::HashMap;

use ludus::durable::WorldBindingTable;
use ludus::durable::{ActivationError, BindingKind, CandidateRejection, NoCatalog};
use ludus::identity::PersistentObjectKey;
use ludus::prelude::*;
use ludus::world::EntityRegistry;
use proptest::prelude::*;

use crate::support::key;

/// Registry slots (and table capacity) of a run.
const SLOTS: usize = 24;
/// Distinct keys a run draws from.
const KEYS: u128 = 40;

#[derive(Debug, Clone)]
enum Op {
    /// Candidates: entity pick, key pick, kind.
    Activate(Vec<(usize, u128, u8)>),
    /// Create an entity (a released slot is recycled with a new generation).
    Create,
    /// Release an entity without detaching its binding (the binding goes stale).
    Release(usize),
    Detach(usize),
    Prune(u128),
    ResolveMut(u128),
}

fn op() -> impl Strategy<Value = Op> {
    let candidate = (0usize..64, 0..KEYS, 0u8..3);
    prop_oneof![
        5 => proptest::collection::vec(candidate, 0..6).prop_map(Op::Activate),
        4 => Just(Op::Create),
        2 => (0usize..64).prop_map(Op::Release),
        2 => (0usize..64).prop_map(Op::Detach),
        1 => (0..KEYS).prop_map(Op::Prune),
        1 => (0..KEYS).prop_map(Op::ResolveMut),
    ]
}

/// A binding of the model: the entity it names (live or not) and its kind.
type Bindings = HashMap<PersistentObjectKey, (EntityId, BindingKind)>;

struct Run {
    reg: EntityRegistry,
    table: WorldBindingTable,
    /// Every entity ever created (the picks index it).
    made: Vec<EntityId>,
    model: Bindings,
}

impl Run {
    fn new() -> Self {
        let mut reg = EntityRegistry::try_with_capacity(SLOTS).unwrap();
        reg.set_structural_phase(true);
        let table = WorldBindingTable::try_new(&reg, SLOTS).unwrap();
        Run {
            reg,
            table,
            made: Vec::new(),
            model: HashMap::new(),
        }
    }

    fn pick(&self, i: usize) -> EntityId {
        if self.made.is_empty() {
            EntityId::NULL
        } else {
            self.made[i % self.made.len()]
        }
    }

    /// The model's bound key of the slot `e` lives in, with its entity (live or stale).
    fn bound_at_slot(&self, e: EntityId) -> Option<(PersistentObjectKey, EntityId)> {
        self.model
            .iter()
            .find(|(_, (b, _))| b.slot() == e.slot())
            .map(|(k, (b, _))| (*k, *b))
    }

    /// What `try_activate` does to the model: the bindings after it and its refusal. Stale
    /// bindings met on the way are dropped whatever the batch's fate.
    fn activate(&mut self, batch: &[Activation]) -> Result<(), ActivationError> {
        if batch.len() > SLOTS - self.model.len() {
            return Err(ActivationError::CapacityExhausted {
                requested: batch.len(),
                available: SLOTS - self.model.len(),
                capacity: SLOTS,
            });
        }
        let before = self.model.clone();
        let mut dropped = Vec::new();
        for (index, c) in batch.iter().enumerate() {
            let refuse = |reason| ActivationError::Candidate { index, reason };
            if !self.reg.is_active(c.entity) {
                let reason = self
                    .reg
                    .diagnose(c.entity)
                    .err()
                    .unwrap_or(Rejection::Stale);
                self.model = before;
                self.model.retain(|k, _| !dropped.contains(k));
                return Err(refuse(CandidateRejection::Entity(reason)));
            }
            if let Some((k, b)) = self.bound_at_slot(c.entity) {
                if b == c.entity {
                    let reason = match batch[..index].iter().position(|d| d.entity == c.entity) {
                        Some(first) => CandidateRejection::DuplicateEntity { first },
                        None => CandidateRejection::EntityBound { existing: k },
                    };
                    self.model = before;
                    self.model.retain(|k, _| !dropped.contains(k));
                    return Err(refuse(reason));
                }
                // The slot's former incarnation: stale.
                self.model.remove(&k);
                dropped.push(k);
            }
            if let Some(&(existing, _)) = self.model.get(&c.key) {
                if self.reg.is_alive(existing) {
                    let reason = match batch[..index].iter().position(|d| d.key == c.key) {
                        Some(first) => CandidateRejection::DuplicateKey { first },
                        None => CandidateRejection::KeyBound { existing },
                    };
                    self.model = before;
                    self.model.retain(|k, _| !dropped.contains(k));
                    return Err(refuse(reason));
                }
                self.model.remove(&c.key);
                dropped.push(c.key);
            }
            self.model.insert(c.key, (c.entity, c.kind));
        }
        Ok(())
    }

    fn step(&mut self, op: &Op) {
        match op {
            Op::Activate(picks) => {
                let batch: Vec<Activation> = picks
                    .iter()
                    .map(|&(e, k, kind)| Activation {
                        entity: self.pick(e),
                        key: key(1, k),
                        kind: BindingKind(u32::from(kind)),
                    })
                    .collect();
                let got = self.table.try_activate(&self.reg, &batch);
                let want = self.activate(&batch);
                assert_eq!(got, want, "activation of {batch:?}");
            }
            Op::Create => {
                if let Ok(e) = self.reg.try_create() {
                    self.made.push(e);
                }
            }
            Op::Release(i) => {
                let e = self.pick(*i);
                let _ = self.reg.try_release(e);
            }
            Op::Detach(i) => {
                let e = self.pick(*i);
                let want = self
                    .model
                    .iter()
                    .find(|(_, (b, _))| *b == e)
                    .map(|(k, _)| *k);
                assert_eq!(self.table.detach(e), want);
                if let Some(k) = want {
                    self.model.remove(&k);
                }
            }
            Op::Prune(k) => {
                let k = key(1, *k);
                let stale = self
                    .model
                    .get(&k)
                    .is_some_and(|(b, _)| !self.reg.is_alive(*b));
                assert_eq!(self.table.prune(&self.reg, &k), stale);
                if stale {
                    self.model.remove(&k);
                }
            }
            Op::ResolveMut(k) => {
                let k = key(1, *k);
                let want = match self.model.get(&k) {
                    Some(&(b, _)) if self.reg.is_alive(b) => Resolution::Resolved(b),
                    Some(_) => {
                        self.model.remove(&k);
                        Resolution::Missing
                    }
                    None => Resolution::Missing,
                };
                let got = self.table.try_resolve_mut(&self.reg, &k, None, &NoCatalog);
                assert_eq!(got, want);
            }
        }
        self.check();
    }

    fn check(&self) {
        assert!(self.table.check_consistent());
        assert_eq!(self.table.len(), self.model.len());
        let keys: Vec<PersistentObjectKey> = (0..KEYS).map(|o| key(1, o)).collect();
        let want: Vec<Option<EntityId>> = keys
            .iter()
            .map(|k| {
                self.model
                    .get(k)
                    .map(|&(b, _)| b)
                    .filter(|&b| self.reg.is_alive(b))
            })
            .collect();
        for (k, w) in keys.iter().zip(&want) {
            let got = self.table.lookup(&self.reg, k);
            assert_eq!(got.map(|(e, _)| e), *w, "lookup of {k:?}");
            if let Some((_, kind)) = got {
                assert_eq!(Some(kind), self.model.get(k).map(|&(_, kind)| kind));
            }
            assert_eq!(self.table.contains_key(k), self.model.contains_key(k));
        }
        let mut out = vec![None; keys.len()];
        let found = self.table.lookup_batch(&self.reg, &keys, &mut out);
        assert_eq!(out, want);
        assert_eq!(found, want.iter().flatten().count());
        for &e in &self.made {
            let bound = self
                .model
                .iter()
                .find(|(_, (b, _))| *b == e)
                .map(|(k, _)| *k);
            assert_eq!(self.table.key_of(e), bound, "key of {e:?}");
        }
    }
}

proptest! {
    #![proptest_config(crate::support::proptest_config(512, 4))]

    #[test]
    fn standalone_table_matches_model(
        ops in proptest::collection::vec(op(), 1..if cfg!(miri) { 24 } else { 80 })
    ) {
        let mut run = Run::new();
        for op in &ops {
            run.step(op);
        }
    }
}
