//! Durable identity in the world: every resolve status of the binding table, activation
//! validated whole, destruction detaching a binding before its slot is reused, unload and
//! reload, names, parents and the outliner, orphan policies, protection, duplication
//! (references remapped, all or nothing), the name budget, counts, a crafted collision set
//! refused at the probe limit, no allocation after init, tickets, selections, `entity_refs`
//! checks and `respawn` detaching like a destroy.

use bytemuck::{Pod, Zeroable};
use ludus::durable::{
    ActivationError, BindingKind, CandidateRejection, CatalogEntry, HierarchyError,
    InvalidReference, OrphanPolicy,
};
use ludus::identity::test_entropy::{FailingEntropy, FixedEntropy, SeqEntropy};
use ludus::identity::{EntropyError, InstanceId, MintError, PersistentObjectKey, SourceObjectId};
use ludus::prelude::*;
use ludus::world::WorldDiagnostics;

use crate::support::{id, key, Follow, Pos};

ludus::world! {
    /// The test world.
    pub struct Level {
        /// Positions.
        pub pos: Pos,
        /// Follow links.
        pub follow: Follow,
    }
    durable { entity_refs { Follow } }
}

fn level(capacity: usize) -> Level {
    let config = DurableConfig {
        name_bytes: 4096,
        ..DurableConfig::default()
    };
    let mut w = Level::try_new_durable(capacity, config).unwrap();
    w.begin_structural();
    w
}

ludus::world! {
    /// `Level`'s components in a plain world: no durable tables, no durable operations (a
    /// compile-time property: see the `compile_fail` example of `ludus::durable`).
    pub struct PlainLevel {
        /// Positions.
        pub pos: Pos,
        /// Follow links.
        pub follow: Follow,
    }
}

/// A durable world of no capacity has empty tables: the operations that need them answer
/// `Disabled`. A plain world destroys without any durable bookkeeping.
#[test]
fn a_world_without_durable_tables() {
    let mut w = Level::try_new_durable(0, DurableConfig::default()).unwrap();
    w.begin_structural();
    let mut plain = PlainLevel::try_new(4).unwrap();
    let e = plain.spawn((Pos(1.0),)).unwrap();
    assert_eq!(
        w.activate(&[Activation::new(e, key(1, 1))]),
        Err(DurableError::Disabled)
    );
    assert_eq!(w.set_name(e, "x"), Err(DurableError::Disabled));
    assert_eq!(w.resolve(&key(1, 1)), Resolution::Missing);
    assert_eq!(w.durable().footprint_bytes(), 0);
    plain.destroy(e).unwrap();
    assert!(!plain.registry.is_alive(e));
}

#[test]
fn every_resolve_status() {
    let mut w = level(8);
    let (a, b) = (w.spawn((Pos(1.0),)).unwrap(), w.spawn((Pos(2.0),)).unwrap());
    let (ka, kb) = (key(1, 1), key(1, 2));
    w.activate(&[
        Activation::new(a, ka),
        Activation {
            entity: b,
            key: kb,
            kind: BindingKind(7),
        },
    ])
    .unwrap();
    assert_eq!(w.resolve(&ka), Resolution::Resolved(a));
    assert_eq!(w.key_of(a), Some(ka));
    // Kind required at resolve.
    let any = |_: &PersistentObjectKey| CatalogEntry::Unknown;
    assert_eq!(
        w.resolve_with(&kb, Some(BindingKind(7)), &any),
        Resolution::Resolved(b)
    );
    assert_eq!(
        w.resolve_with(&kb, Some(BindingKind(8)), &any),
        Resolution::TypeMismatch {
            entity: b,
            found: BindingKind(7)
        }
    );
    // The catalog decides what unbound keys are.
    let unloaded = key(2, 5);
    let dup = key(2, 6);
    let catalog = |k: &PersistentObjectKey| {
        if *k == unloaded {
            CatalogEntry::NotResident
        } else if *k == dup {
            CatalogEntry::Conflict
        } else if k.instance == id::<InstanceId>(9) {
            CatalogEntry::UnknownScope
        } else {
            CatalogEntry::Unknown
        }
    };
    assert_eq!(
        w.resolve_with(&unloaded, None, &catalog),
        Resolution::NotResident
    );
    assert_eq!(w.resolve_with(&dup, None, &catalog), Resolution::Conflict);
    assert_eq!(
        w.resolve_with(&key(9, 1), None, &catalog),
        Resolution::InvalidReference(InvalidReference::UnknownScope)
    );
    assert_eq!(
        w.resolve_with(&key(2, 7), None, &catalog),
        Resolution::Missing
    );
    // Malformed keys: nil, and a version-1 UUID.
    let nil: PersistentObjectKey = bytemuck::Zeroable::zeroed();
    assert!(matches!(
        w.resolve(&nil),
        Resolution::InvalidReference(InvalidReference::Key(_))
    ));
    let mut v1: [u8; 32] = bytemuck::cast(ka);
    v1[16 + 6] = (v1[16 + 6] & 0x0f) | 0x10;
    let v1: PersistentObjectKey = bytemuck::cast(v1);
    assert!(matches!(
        w.resolve(&v1),
        Resolution::InvalidReference(InvalidReference::Key(_))
    ));
    // Required references count their failures.
    assert_eq!(w.resolve_required(&ka, None, &any), Ok(a));
    assert_eq!(
        w.resolve_required(&key(3, 3), None, &any),
        Err(Resolution::Missing)
    );
    assert_eq!(w.counts().unresolved_references, 1);
}

#[test]
fn resolve_batch_refuses_a_short_output_and_writes_nothing() {
    let mut w = level(4);
    let e = w.spawn((Pos(0.0),)).unwrap();
    w.activate(&[Activation::new(e, key(1, 1))]).unwrap();
    let keys = [key(1, 1), key(1, 2)];
    let mut out = [Some(EntityId::NULL)];
    assert_eq!(
        w.resolve_batch(&keys, &mut out),
        Err(DurableError::LengthMismatch {
            selection: 2,
            out: 1
        })
    );
    assert_eq!(out, [Some(EntityId::NULL)]);
    let mut out = [Some(EntityId::NULL); 3];
    assert_eq!(w.resolve_batch(&keys, &mut out), Ok(1));
    assert_eq!(out, [Some(e), None, Some(EntityId::NULL)]);
}

#[test]
fn a_cached_negative_goes_stale_after_publication() {
    let mut w = level(4);
    let k = key(1, 1);
    let cached = (w.resolve(&k), w.binding_revision());
    assert_eq!(cached.0, Resolution::Missing);
    let e = w.spawn((Pos(0.0),)).unwrap();
    w.activate(&[Activation::new(e, k)]).unwrap();
    assert_ne!(
        w.binding_revision(),
        cached.1,
        "the cached negative must be invalidated"
    );
    assert_eq!(w.resolve(&k), Resolution::Resolved(e));
}

#[test]
fn activation_validates_every_candidate_and_publishes_nothing_on_failure() {
    let mut w = level(8);
    let es: Vec<EntityId> = (0..5).map(|i| w.spawn((Pos(i as f32),)).unwrap()).collect();
    w.activate(&[Activation::new(es[0], key(1, 0))]).unwrap();
    let rev = w.binding_revision();
    let nil: PersistentObjectKey = bytemuck::Zeroable::zeroed();
    let dead = {
        let d = w.create().unwrap();
        w.destroy(d).unwrap();
        d
    };
    let cases: Vec<(Vec<Activation>, CandidateRejection)> = vec![
        (
            vec![
                Activation::new(es[1], key(1, 1)),
                Activation::new(es[2], nil),
            ],
            CandidateRejection::InvalidKey(ludus::identity::UuidError::Nil),
        ),
        (
            vec![Activation::new(es[1], key(1, 0))],
            CandidateRejection::KeyBound { existing: es[0] },
        ),
        (
            vec![Activation::new(es[0], key(1, 9))],
            CandidateRejection::EntityBound {
                existing: key(1, 0),
            },
        ),
        (
            vec![
                Activation::new(es[1], key(1, 1)),
                Activation::new(es[2], key(1, 1)),
            ],
            CandidateRejection::DuplicateKey { first: 0 },
        ),
        (
            vec![
                Activation::new(es[1], key(1, 1)),
                Activation::new(es[1], key(1, 2)),
            ],
            CandidateRejection::DuplicateEntity { first: 0 },
        ),
        (
            vec![Activation::new(dead, key(1, 3))],
            CandidateRejection::Entity(ludus::world::Rejection::Free),
        ),
    ];
    for (batch, reason) in cases {
        let index = batch.len() - 1;
        assert_eq!(
            w.activate(&batch),
            Err(DurableError::Activation(ActivationError::Candidate {
                index,
                reason
            }))
        );
        assert_eq!(w.binding_revision(), rev);
        assert_eq!(w.durable().bindings().len(), 1);
        assert!(w.durable().bindings().check_consistent());
        for c in &batch {
            if c.entity != es[0] {
                assert_eq!(w.key_of(c.entity), None);
            }
        }
    }
    // Pending entities are not active: refused.
    let mut cmd = CommandBuffer::try_with_capacity(4, 64).unwrap();
    cmd.destroy(&w.registry, es[4]).unwrap();
    assert!(matches!(
        w.activate(&[Activation::new(es[4], key(1, 4))]),
        Err(DurableError::Activation(ActivationError::Candidate {
            reason: CandidateRejection::Entity(_),
            ..
        }))
    ));
    w.commit(&mut cmd).unwrap();
    assert!(w.counts().binding_conflicts >= 4);
}

#[test]
fn destroy_detaches_the_binding_before_the_slot_is_reused() {
    let mut w = level(2);
    let e = w.spawn((Pos(1.0),)).unwrap();
    let k = key(1, 1);
    w.activate(&[Activation::new(e, k)]).unwrap();
    let rev = w.binding_revision();
    // Through a commit.
    let mut cmd = CommandBuffer::try_with_capacity(4, 64).unwrap();
    cmd.destroy(&w.registry, e).unwrap();
    w.commit(&mut cmd).unwrap();
    assert_eq!(w.resolve(&k), Resolution::Missing);
    assert!(w.binding_revision() > rev);
    let again = w.spawn((Pos(2.0),)).unwrap();
    assert_eq!(again.slot(), e.slot());
    assert_eq!(
        w.key_of(again),
        None,
        "a recycled slot never inherits a key"
    );
    // The key binds again, to the fresh handle.
    w.activate(&[Activation::new(again, k)]).unwrap();
    assert_eq!(w.resolve(&k), Resolution::Resolved(again));
    assert!(w.durable().bindings().check_consistent());
}

#[test]
fn unload_then_reload_gives_a_fresh_handle() {
    let mut w = level(8);
    let (scope, other) = (id::<InstanceId>(1), id::<InstanceId>(2));
    let es: Vec<EntityId> = (0..3).map(|i| w.spawn((Pos(i as f32),)).unwrap()).collect();
    let keep = w.spawn((Pos(9.0),)).unwrap();
    let keys: Vec<PersistentObjectKey> = (0..3).map(|i| key(1, i)).collect();
    let batch: Vec<Activation> = es
        .iter()
        .zip(&keys)
        .map(|(e, k)| Activation::new(*e, *k))
        .collect();
    w.activate(&batch).unwrap();
    w.activate(&[Activation::new(
        keep,
        PersistentObjectKey::new(other, id(50)),
    )])
    .unwrap();
    assert_eq!(keys[0].instance, scope);
    assert_eq!(w.unload(scope), Ok(3));
    assert_eq!(w.registry.len(), 1);
    for k in &keys {
        assert_eq!(w.resolve(k), Resolution::Missing);
    }
    // Reload: fresh handles, the same keys resolve again.
    let fresh: Vec<EntityId> = (0..3).map(|i| w.spawn((Pos(i as f32),)).unwrap()).collect();
    let batch: Vec<Activation> = fresh
        .iter()
        .zip(&keys)
        .map(|(e, k)| Activation::new(*e, *k))
        .collect();
    w.activate(&batch).unwrap();
    for (k, (old, new)) in keys.iter().zip(es.iter().zip(&fresh)) {
        assert_eq!(w.resolve(k), Resolution::Resolved(*new));
        assert_ne!(old, new);
        assert!(!w.registry.is_alive(*old));
    }
}

#[test]
fn names_parents_and_outliner() {
    let mut w = level(8);
    let root = w.spawn((Pos(0.0),)).unwrap();
    let a = w.spawn((Pos(1.0),)).unwrap();
    let b = w.spawn((Pos(2.0),)).unwrap();
    let c = w.spawn((Pos(3.0),)).unwrap();
    w.set_name(root, "root").unwrap();
    w.set_name(a, "a").unwrap();
    w.set_parent(a, Some(root)).unwrap();
    w.set_parent(b, Some(root)).unwrap();
    w.set_parent(c, Some(a)).unwrap();
    assert_eq!(w.parent(c), Ok(Some(a)));
    assert_eq!(w.parent(root), Ok(None));
    assert_eq!(w.children(root).collect::<Vec<_>>(), [a, b]);
    w.move_child(b, 0).unwrap();
    assert_eq!(w.children(root).collect::<Vec<_>>(), [b, a]);
    // Cycles are refused.
    assert_eq!(
        w.set_parent(root, Some(c)),
        Err(DurableError::Hierarchy(HierarchyError::Cycle))
    );
    assert_eq!(
        w.set_parent(a, Some(a)),
        Err(DurableError::Hierarchy(HierarchyError::Cycle))
    );
    let rows: Vec<(EntityId, u32, &str)> =
        w.outliner().map(|r| (r.entity, r.depth, r.name)).collect();
    assert_eq!(
        rows,
        [(root, 0, "root"), (b, 1, ""), (a, 1, "a"), (c, 2, "")]
    );
    assert_eq!(w.name(a), Ok("a"));
}

#[test]
fn deleting_a_parent_reparents_by_policy() {
    for policy in [OrphanPolicy::Detach, OrphanPolicy::ToGrandparent] {
        let mut w = level(8);
        w.set_orphan_policy(policy);
        let g = w.spawn((Pos(0.0),)).unwrap();
        let p = w.spawn((Pos(1.0),)).unwrap();
        let s = w.spawn((Pos(1.5),)).unwrap();
        let (c1, c2) = (w.spawn((Pos(2.0),)).unwrap(), w.spawn((Pos(3.0),)).unwrap());
        w.set_parent(p, Some(g)).unwrap();
        w.set_parent(s, Some(g)).unwrap();
        w.set_parent(c1, Some(p)).unwrap();
        w.set_parent(c2, Some(p)).unwrap();
        w.destroy(p).unwrap();
        match policy {
            OrphanPolicy::Detach => {
                assert_eq!((w.parent(c1), w.parent(c2)), (Ok(None), Ok(None)));
                assert_eq!(w.children(g).collect::<Vec<_>>(), [s]);
            }
            OrphanPolicy::ToGrandparent => {
                assert_eq!((w.parent(c1), w.parent(c2)), (Ok(Some(g)), Ok(Some(g))));
                assert_eq!(w.children(g).collect::<Vec<_>>(), [c1, c2, s]);
            }
        }
        // The slot is reused: no child names the new occupant.
        let n = w.spawn((Pos(4.0),)).unwrap();
        assert_eq!(n.slot(), p.slot());
        assert_eq!(w.children(n).count(), 0);
    }
    // Subtree policy: explicit, all or nothing.
    let mut w = level(8);
    let p = w.spawn((Pos(1.0),)).unwrap();
    let c = w.spawn((Pos(2.0),)).unwrap();
    let gc = w.spawn((Pos(3.0),)).unwrap();
    let other = w.spawn((Pos(4.0),)).unwrap();
    w.set_parent(c, Some(p)).unwrap();
    w.set_parent(gc, Some(c)).unwrap();
    w.activate(&[Activation::new(gc, key(1, 1))]).unwrap();
    assert_eq!(w.destroy_subtree(p), Ok(3));
    assert_eq!(w.registry.len(), 1);
    assert!(w.registry.is_alive(other));
    assert_eq!(w.resolve(&key(1, 1)), Resolution::Missing);
}

#[test]
fn protected_entities_refuse_destroy_duplicate_and_reparent() {
    let mut w = level(8);
    let settings = w.spawn((Pos(0.0),)).unwrap();
    let p = w.spawn((Pos(1.0),)).unwrap();
    w.set_protected(settings, true).unwrap();
    assert_eq!(w.destroy(settings), Err(WorldError::Protected));
    assert_eq!(
        w.set_parent(settings, Some(p)),
        Err(DurableError::Hierarchy(HierarchyError::Protected))
    );
    let mut out = [EntityId::NULL];
    assert_eq!(
        w.duplicate(&[settings], &mut SeqEntropy::new(1), &mut out),
        Err(DurableError::World(WorldError::Protected))
    );
    assert_eq!(
        w.destroy_subtree(settings),
        Err(DurableError::World(WorldError::Protected))
    );
    // A commit holding its destroy is refused before anything applies.
    let mut cmd = CommandBuffer::try_with_capacity(4, 64).unwrap();
    cmd.destroy(&w.registry, p).unwrap();
    cmd.destroy(&w.registry, settings).unwrap();
    assert_eq!(w.commit(&mut cmd), Err(WorldError::Protected));
    assert!(w.registry.is_alive(p));
    cmd.clear(&w.registry).unwrap();
    // Only roots can be protected; lifting protection allows the destroy.
    w.set_parent(p, Some(settings)).unwrap();
    assert_eq!(
        w.set_protected(p, true),
        Err(DurableError::Hierarchy(HierarchyError::NotRoot))
    );
    w.set_protected(settings, false).unwrap();
    w.destroy(settings).unwrap();
    assert_eq!(w.parent(p), Ok(None));
}

#[test]
fn duplication_remaps_references_inside_the_selection() {
    let mut w = level(16);
    let outside = w.spawn((Pos(9.0),)).unwrap();
    let a = w.spawn((Pos(1.0),)).unwrap();
    let b = w.spawn((Pos(2.0), Follow { target: a })).unwrap();
    let c = w.spawn((Follow { target: outside },)).unwrap();
    w.set_parent(b, Some(a)).unwrap();
    w.set_parent(a, Some(outside)).unwrap();
    w.set_name(a, "a").unwrap();
    w.activate(&[
        Activation::new(a, key(1, 1)),
        Activation {
            entity: b,
            key: key(1, 2),
            kind: BindingKind(3),
        },
    ])
    .unwrap();
    let rev = w.binding_revision();
    let mut out = [EntityId::NULL; 3];
    w.duplicate(&[a, b, c], &mut SeqEntropy::new(5), &mut out)
        .unwrap();
    let [a2, b2, c2] = out;
    assert_eq!(w.get::<Pos>(a2), Some(&Pos(1.0)));
    assert_eq!(
        w.get::<Follow>(b2),
        Some(&Follow { target: a2 }),
        "inside: rewritten"
    );
    assert_eq!(
        w.get::<Follow>(c2),
        Some(&Follow { target: outside }),
        "outside: kept"
    );
    assert_eq!(
        w.get::<Follow>(b),
        Some(&Follow { target: a }),
        "the original is untouched"
    );
    assert_eq!(w.parent(b2), Ok(Some(a2)));
    assert_eq!(w.parent(a2), Ok(Some(outside)));
    assert_eq!(w.children(outside).collect::<Vec<_>>(), [a, a2]);
    assert_eq!(w.name(a2), Ok("a"));
    // New identities in the same scope, same kinds, published once.
    let (ka2, kb2) = (w.key_of(a2).unwrap(), w.key_of(b2).unwrap());
    assert_eq!(ka2.instance, key(1, 1).instance);
    assert_ne!(ka2, key(1, 1));
    assert_eq!(w.key_of(c2), None);
    assert_eq!(
        w.resolve_with(&kb2, Some(BindingKind(3)), &ludus::durable::NoCatalog),
        Resolution::Resolved(b2)
    );
    assert_eq!(w.binding_revision(), rev + 1);
    assert!(w.durable().bindings().check_consistent());
    assert!(w.check_groups());
}

/// Everything observable about a world, for "unchanged" checks.
fn snapshot(w: &Level) -> String {
    let rows: Vec<String> = w.outliner().map(|r| format!("{:?}", r)).collect();
    format!(
        "{} {} {} {:?} {:?} {} {}",
        w.registry.len(),
        w.registry.structural_revision(),
        w.binding_revision(),
        w.pos.values(),
        w.follow.values(),
        rows.join(";"),
        w.counts().to_json()
    )
}

#[test]
fn a_failed_duplication_leaves_the_world_unchanged() {
    let mut w = level(6);
    let a = w.spawn((Pos(1.0),)).unwrap();
    let b = w.spawn((Pos(2.0), Follow { target: a })).unwrap();
    w.set_parent(b, Some(a)).unwrap();
    w.activate(&[Activation::new(a, key(1, 1)), Activation::new(b, key(1, 2))])
        .unwrap();
    let before = snapshot(&w);
    let mut out = [EntityId::NULL; 2];
    // Entropy fails on the second mint.
    let mut failing = FailingEntropy::new(SeqEntropy::new(1), 2);
    assert!(matches!(
        w.duplicate(&[a, b], &mut failing, &mut out),
        Err(DurableError::Mint(MintError::Entropy(
            EntropyError::Source { .. }
        )))
    ));
    assert_eq!(snapshot(&w), before);
    // Every candidate collides: the fixed source mints the same id again and again.
    let mut fixed = FixedEntropy::new([7; 16]);
    let first = SourceObjectId::mint(&mut FixedEntropy::new([7; 16])).unwrap();
    let c = w.spawn((Pos(3.0),)).unwrap();
    w.activate(&[Activation::new(
        c,
        PersistentObjectKey::new(key(1, 1).instance, first),
    )])
    .unwrap();
    let before = snapshot(&w);
    assert!(matches!(
        w.duplicate(&[a], &mut fixed, &mut out[..1]),
        Err(DurableError::Mint(MintError::Conflict(_)))
    ));
    assert_eq!(snapshot(&w), before);
    // Two bound sources, one fixed id: the second candidate collides with the first minted.
    w.destroy(c).unwrap();
    let before = snapshot(&w);
    assert!(matches!(
        w.duplicate(&[a, b], &mut FixedEntropy::new([9; 16]), &mut out),
        Err(DurableError::Mint(MintError::Conflict(_)))
    ));
    assert_eq!(snapshot(&w), before);
    // Capacity: 2 free slots, 3 asked.
    let d = w.spawn((Pos(4.0),)).unwrap();
    w.spawn((Pos(5.0),)).unwrap();
    let before = snapshot(&w);
    let mut four = [EntityId::NULL; 3];
    let cap = w.duplicate(&[a, b, d], &mut SeqEntropy::new(3), &mut four);
    assert!(
        matches!(
            cap,
            Err(DurableError::World(WorldError::CapacityExhausted { .. }))
        ),
        "{cap:?}"
    );
    assert_eq!(snapshot(&w), before);
    // Repeated selection, dead entity.
    assert_eq!(
        w.duplicate(&[a, a], &mut SeqEntropy::new(3), &mut out),
        Err(DurableError::DuplicateSelection { index: 1 })
    );
    assert_eq!(snapshot(&w), before);
    assert!(w.durable().bindings().check_consistent());
}

/// The default name arena grows with the capacity: every entity of a full world can carry an
/// 18-byte name.
#[test]
#[cfg_attr(
    miri,
    ignore = "safe code only (the name arena's default size); thousands of spawns under Miri"
)]
fn the_default_name_arena_names_every_entity() {
    let small = Level::try_new_durable(100, DurableConfig::default()).unwrap();
    assert_eq!(small.durable().hierarchy().name_budget(), 64 * 1024);
    let n = 10_000;
    let mut w = Level::try_new_durable(n, DurableConfig::default()).unwrap();
    assert_eq!(
        w.durable().hierarchy().name_budget(),
        n * ludus::durable::NAME_BYTES_PER_SLOT
    );
    w.begin_structural();
    for i in 0..n {
        let e = w.spawn((Pos(0.0),)).unwrap();
        w.set_name(e, &format!("enemy_grunt_{i:06}")).unwrap();
    }
    assert_eq!(w.registry.len(), n);
}

#[test]
fn names_respect_the_budget_without_allocating_per_entity() {
    let mut w = Level::try_new_durable(
        4,
        DurableConfig {
            name_bytes: 32,
            ..DurableConfig::default()
        },
    )
    .unwrap();
    w.begin_structural();
    let a = w.spawn((Pos(0.0),)).unwrap();
    let b = w.spawn((Pos(0.0),)).unwrap();
    w.set_name(a, "0123456789").unwrap();
    w.set_name(b, "0123456789").unwrap();
    assert!(matches!(
        w.set_name(b, "0123456789x"),
        Err(DurableError::Hierarchy(HierarchyError::NameBudget { .. }))
    ));
    assert_eq!(
        w.name(b),
        Ok("0123456789"),
        "a refused rename keeps the old name"
    );
    w.destroy(a).unwrap();
    w.set_name(b, "0123456789abcdefghijklmn").unwrap();
    assert_eq!(w.name(b), Ok("0123456789abcdefghijklmn"));
}

#[test]
fn counts_export_json() {
    let mut w = level(4);
    let e = w.spawn((Pos(0.0),)).unwrap();
    w.activate(&[Activation::new(e, key(1, 1))]).unwrap();
    let counts = w.counts();
    assert_eq!(
        (
            counts.capacity,
            counts.live,
            counts.bindings,
            counts.peak_generation
        ),
        (4, 1, 1, 1)
    );
    let json: serde_json::Value = serde_json::from_str(&counts.to_json()).unwrap();
    assert_eq!(json["bindings"], 1);
    assert_eq!(json["capacity"], 4);
}

/// Keys whose object's first 8 bytes are equal: under a secret whose third word equals them
/// (a leaked secret), every key hashes to the same bucket.
fn crafted(n: usize) -> (Vec<PersistentObjectKey>, u64) {
    let instance = id::<InstanceId>(1);
    let keys: Vec<PersistentObjectKey> = (0..n as u64)
        .map(|i| {
            let mut b = [0u8; 16];
            b[..8].copy_from_slice(&0x1234_5678_9abc_4def_u64.to_le_bytes());
            b[8..].copy_from_slice(&(i.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1).to_le_bytes());
            let u = uuid::Builder::from_random_bytes(b).into_uuid();
            PersistentObjectKey::new(instance, SourceObjectId::from_uuid(u).unwrap())
        })
        .collect();
    let object: [u8; 16] = *keys[0].object.as_bytes();
    let w2 = u64::from_ne_bytes(object[..8].try_into().unwrap());
    assert!(keys.iter().all(|k| k.object.as_bytes()[..8] == object[..8]));
    (keys, w2)
}

#[test]
#[cfg_attr(
    miri,
    ignore = "safe code only (the binding table's probes); brute-forces colliding keys: minutes under Miri"
)]
fn a_crafted_collision_set_is_refused_at_the_probe_limit_not_quadratic() {
    let n = 300;
    let (keys, w2) = crafted(n);
    let mut w = level(n);
    let mut es = vec![EntityId::NULL; n];
    w.spawn_batch_into((0..n).map(|i| (Pos(i as f32),)), &mut es)
        .unwrap();
    let batch: Vec<Activation> = es
        .iter()
        .zip(&keys)
        .map(|(e, k)| Activation::new(*e, *k))
        .collect();
    // The secret leaked: every key has the same home bucket. The probe limit refuses the key
    // that would walk past it, and each key cost at most MAX_PROBE compares.
    w.test_hook_set_binding_secret([w2, 0, 0, 0]);
    assert_eq!(
        w.activate(&batch),
        Err(DurableError::Activation(ActivationError::Candidate {
            index: ludus::durable::MAX_PROBE,
            reason: CandidateRejection::ProbeLimit
        }))
    );
    assert_eq!(w.durable().bindings().len(), 0, "nothing published");
    assert_eq!(
        w.durable().bindings().stats().longest_probe as usize,
        ludus::durable::MAX_PROBE
    );
    assert_eq!(w.counts().probe_limit_hits, 1);
    // Resolving a crafted key that is not bound also stops at the limit.
    assert_eq!(w.resolve(&keys[n - 1]), Resolution::Missing);
    // A batch under the limit activates; resolves walk at most MAX_PROBE buckets.
    w.activate(&batch[..100]).unwrap();
    assert_eq!(w.resolve(&keys[99]), Resolution::Resolved(es[99]));
    assert!(w.durable().bindings().check_consistent());
    // With a secret the attacker does not know, the same set spreads out.
    let mut fresh = level(n);
    let mut es = vec![EntityId::NULL; n];
    fresh
        .spawn_batch_into((0..n).map(|i| (Pos(i as f32),)), &mut es)
        .unwrap();
    let batch: Vec<Activation> = es
        .iter()
        .zip(&keys)
        .map(|(e, k)| Activation::new(*e, *k))
        .collect();
    fresh.activate(&batch).unwrap();
    let longest = fresh.durable().bindings().stats().longest_probe;
    assert!(longest < 32, "longest probe {longest}");
    for (k, e) in keys.iter().zip(&es) {
        assert_eq!(fresh.resolve(k), Resolution::Resolved(*e));
    }
}

/// A checkpoint restore empties the binding table and refills it: a crafted key set that
/// would overflow a probe is found before anything changes, at the key that would.
#[test]
#[cfg_attr(
    miri,
    ignore = "safe code only (the binding table's probes); brute-forces colliding keys: minutes under Miri"
)]
fn a_checkpoint_restore_refuses_a_crafted_collision_set_before_it_changes_anything() {
    use ludus::durable::{Checkpoint, CheckpointError, CheckpointOps, CHECKPOINT_FORMAT};
    let n = ludus::durable::MAX_PROBE + 8;
    let (mut keys, w2) = crafted(n);
    keys.sort_by_key(|k| bytemuck::cast::<_, [u8; 32]>(*k));
    let cp = Checkpoint {
        format: CHECKPOINT_FORMAT.into(),
        version: ludus::durable::CHECKPOINT_VERSION,
        schema: ludus::durable::ComponentShape::roster::<Level>(),
        entities: keys
            .iter()
            .map(|k| crate::sim::authored_entity(*k, vec![]))
            .collect(),
    };
    let mut w = level(n + 4);
    // (Setting the secret drops every binding: set it first.)
    w.test_hook_set_binding_secret([w2, 0, 0, 0]);
    let own = w.spawn((Pos(1.0),)).unwrap();
    w.activate(&[Activation::new(own, key(1, 1))]).unwrap();
    let before = w.checkpoint_digest().unwrap();
    assert_eq!(
        w.restore(&cp),
        Err(CheckpointError::World(DurableError::Activation(
            ActivationError::Candidate {
                index: ludus::durable::MAX_PROBE,
                reason: CandidateRejection::ProbeLimit
            }
        )))
    );
    assert_eq!(w.checkpoint_digest().unwrap(), before);
    assert_eq!(w.resolve(&key(1, 1)), Resolution::Resolved(own));
    // Under the limit, the same keys restore.
    let mut under = cp.clone();
    under.entities.truncate(ludus::durable::MAX_PROBE);
    w.restore(&under).unwrap();
    assert_eq!(w.durable().bindings().len(), ludus::durable::MAX_PROBE);
    assert!(w.durable().bindings().check_consistent());
}

#[test]
fn nothing_allocates_after_init() {
    use ludus::memory::AllocationDomain;
    let domain = AllocationDomain::register("world/durable-zero-alloc-test").unwrap();
    let mut w = Level::try_new_durable_in(
        64,
        DurableConfig {
            name_bytes: 512,
            ..DurableConfig::default()
        },
        domain.allocator(),
    )
    .unwrap();
    let after_init = domain.usage();
    assert!(after_init.valid && after_init.live_blocks > 0);
    w.begin_structural();
    let mut es = vec![EntityId::NULL; 16];
    w.spawn_batch_into((0..16).map(|i| (Pos(i as f32),)), &mut es)
        .unwrap();
    let batch: Vec<Activation> = es
        .iter()
        .enumerate()
        .map(|(i, e)| Activation::new(*e, key(1, i as u128)))
        .collect();
    w.activate(&batch).unwrap();
    for (i, e) in es.iter().enumerate().skip(1) {
        w.set_name(*e, "entity").unwrap();
        w.set_parent(*e, Some(es[i / 2])).unwrap();
    }
    w.insert(es[3], Follow { target: es[2] }).unwrap();
    let mut out = vec![EntityId::NULL; 8];
    w.duplicate(&es[..8], &mut SeqEntropy::new(3), &mut out)
        .unwrap();
    for k in &batch {
        assert!(w.resolve(&k.key).entity().is_some());
    }
    w.destroy_subtree(es[1]).unwrap();
    w.unload(key(1, 0).instance).unwrap();
    let _ = w.outliner().count();
    let _ = w.counts();
    let now = domain.usage();
    assert_eq!(
        (now.allocations, now.reallocations, now.live_bytes),
        (
            after_init.allocations,
            after_init.reallocations,
            after_init.live_bytes
        ),
        "no allocation after init"
    );
}

#[test]
fn tickets_refuse_stale_completions() {
    use ludus::durable::StaleCompletion;
    let mut w = level(4);
    let e = w.spawn((Pos(1.0),)).unwrap();
    // A valid completion.
    let t = w.issue_ticket(e).unwrap();
    assert_eq!(w.complete(&t), Ok(()));
    // Stale while alive: a newer request for the same entity.
    let old = w.issue_ticket(e).unwrap();
    let new = w.issue_ticket(e).unwrap();
    assert_eq!(
        w.complete(&old),
        Err(StaleCompletion::Superseded {
            latest: new.request
        })
    );
    assert_eq!(w.complete(&new), Ok(()));
    // Stale while alive: the content changed.
    let t = w.issue_ticket(e).unwrap();
    let rev = w.touch_content(e).unwrap();
    assert_eq!(
        w.complete(&t),
        Err(StaleCompletion::ContentChanged {
            expected: rev - 1,
            current: rev
        })
    );
    // Cancelled.
    let t = w.issue_ticket(e).unwrap();
    w.cancel_tickets(e).unwrap();
    assert!(matches!(
        w.complete(&t),
        Err(StaleCompletion::Superseded { .. })
    ));
    // Destroyed and recreated in the same slot, with the same durable key: refused.
    w.activate(&[Activation::new(e, key(1, 1))]).unwrap();
    let t = w.issue_ticket(e).unwrap();
    w.destroy(e).unwrap();
    let again = w.spawn((Pos(2.0),)).unwrap();
    assert_eq!(again.slot(), e.slot());
    w.activate(&[Activation::new(again, key(1, 1))]).unwrap();
    assert_eq!(w.complete(&t), Err(StaleCompletion::Destroyed));
    let forged = ludus::durable::OperationTicket { entity: again, ..t };
    assert!(
        w.complete(&forged).is_err(),
        "a recreated entity's sequence moved on"
    );
    assert_eq!(w.counts().stale_completions, 5);
}

#[test]
fn a_selection_keeps_keys_and_re_resolves_after_reload() {
    use ludus::durable::{Selection, SelectionError};
    let mut w = level(8);
    let a = w.spawn((Pos(1.0),)).unwrap();
    let b = w.spawn((Pos(2.0),)).unwrap();
    let transient = w.spawn((Pos(3.0),)).unwrap();
    w.activate(&[Activation::new(a, key(1, 1)), Activation::new(b, key(1, 2))])
        .unwrap();
    let mut sel = Selection::capture(&w, &[a, b, transient], 7);
    assert_eq!(
        sel.entries().len(),
        2,
        "a transient entity has no durable name"
    );
    assert_eq!(
        sel.revalidate(&w, 8),
        Err(SelectionError::DocumentChanged {
            expected: 7,
            current: 8
        })
    );
    // Unload the scope: the cached handles go stale, the keys do not resolve.
    w.unload(key(1, 1).instance).unwrap();
    let cached: Vec<_> = sel
        .revalidate(&w, 7)
        .unwrap()
        .iter()
        .map(|e| e.cached)
        .collect();
    assert_eq!(cached, [None, None]);
    // Reload (slots reused in another order): the selection follows the keys.
    let b2 = w.spawn((Pos(2.0),)).unwrap();
    let a2 = w.spawn((Pos(1.0),)).unwrap();
    w.activate(&[
        Activation::new(a2, key(1, 1)),
        Activation::new(b2, key(1, 2)),
    ])
    .unwrap();
    let cached: Vec<_> = sel
        .revalidate(&w, 7)
        .unwrap()
        .iter()
        .map(|e| e.cached)
        .collect();
    assert_eq!(cached, [Some(a2), Some(b2)]);
}

/// Not a component of [`Stray`].
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Elsewhere {
    /// A link.
    pub to: EntityId,
}

impl EntityRefs for Elsewhere {
    fn visit_entities(&mut self, visit: &mut dyn FnMut(&mut EntityId)) {
        visit(&mut self.to);
    }
}

ludus::world! {
    /// A world whose entity_refs clause names a type it does not store.
    pub struct Stray {
        /// Positions.
        pub pos: Pos,
    }
    durable { entity_refs { Elsewhere } }
}

#[test]
fn entity_refs_must_be_components_of_the_world() {
    assert_eq!(
        Stray::try_new_durable(4, DurableConfig::default()).map(|_| ()),
        Err(ludus::world::InitError::UnknownRefComponent)
    );
}

/// `respawn` in place (the replacement holds exactly the old entity's types) detaches the old
/// entity as a destroy does: its binding, its name, its place in the hierarchy, its children.
#[test]
fn respawn_in_place_detaches_like_a_destroy() {
    let mut w = level(4);
    let parent = w.spawn((Pos(0.0),)).unwrap();
    let e = w.spawn((Pos(1.0),)).unwrap();
    let child = w.spawn((Pos(2.0),)).unwrap();
    let k = key(1, 1);
    w.activate(&[Activation::new(e, k)]).unwrap();
    w.set_name(e, "old").unwrap();
    w.set_parent(e, Some(parent)).unwrap();
    w.set_parent(child, Some(e)).unwrap();
    let row = w.pos.owners().iter().position(|x| x == e).unwrap();
    let mut cmd = CommandBuffer::try_with_capacity(8, 64).unwrap();
    let p = cmd.respawn(&w.registry, e, (Pos(5.0),)).unwrap();
    w.commit(&mut cmd).unwrap();
    let new = cmd.resolve(p).unwrap();
    assert_eq!(new.slot(), e.slot());
    assert_eq!(new.generation(), e.generation() + 1);
    assert!(!w.registry.is_alive(e));
    assert_eq!(w.pos.get(new), Some(&Pos(5.0)));
    assert_eq!(w.pos.get(e), None);
    // In place: the same row.
    assert_eq!(w.pos.owners().iter().position(|x| x == new), Some(row));
    assert_eq!(w.resolve(&k), Resolution::Missing);
    assert_eq!(w.key_of(new), None, "a recycled slot never inherits a key");
    assert_eq!(w.name(new).unwrap(), "");
    assert_eq!(w.parent(new).unwrap(), None);
    assert_eq!(w.children(parent).count(), 0);
    assert!(w.registry.is_alive(child));
    assert_ne!(
        w.parent(child).unwrap(),
        Some(new),
        "children never pass to the replacement"
    );
    assert!(w.durable().bindings().check_consistent());
}

/// A commit holding the respawn of a protected entity is refused before anything applies.
#[test]
fn respawn_of_a_protected_entity_is_refused() {
    let mut w = level(4);
    let settings = w.spawn((Pos(0.0),)).unwrap();
    w.set_protected(settings, true).unwrap();
    let mut cmd = CommandBuffer::try_with_capacity(8, 64).unwrap();
    cmd.respawn(&w.registry, settings, (Pos(1.0),)).unwrap();
    assert_eq!(w.commit(&mut cmd), Err(WorldError::Protected));
    assert!(w.registry.is_alive(settings));
    assert_eq!(w.pos.get(settings), Some(&Pos(0.0)));
    cmd.clear(&w.registry).unwrap();
    // The mark is gone with the clear: it can be destroyed once unprotected.
    w.set_protected(settings, false).unwrap();
    assert_eq!(w.destroy(settings), Ok(()));
}

/// An aim with a list of waypoints, declared by the derive.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable, ludus::durable::EntityRefs)]
#[repr(C)]
pub struct Route {
    /// The target.
    pub target: EntityId,
    /// Waypoints.
    pub via: [EntityId; 2],
    /// Speed.
    pub speed: f32,
    /// Padding.
    pub _pad: u32,
}

ludus::world! {
    /// Routes, not declared.
    pub struct Forgot { pub pos: Pos, pub route: Route }
    durable
}

ludus::world! {
    /// Routes, declared.
    pub struct Declared { pub pos: Pos, pub route: Route }
    durable { entity_refs { Route } }
}

#[test]
fn a_component_with_entity_fields_left_out_of_entity_refs_is_refused_at_init() {
    assert_eq!(
        Forgot::try_new_durable(4, DurableConfig::default()).unwrap_err(),
        ludus::world::InitError::UndeclaredEntityRefs { component: "route" }
    );
    // Declared, the derive's fields are all rewritten: a duplicate's route names the copies.
    let mut w = Declared::try_new_durable(8, DurableConfig::default()).unwrap();
    w.begin_structural();
    let a = w.spawn((Pos(1.0),)).unwrap();
    let b = w.spawn((Pos(2.0),)).unwrap();
    w.insert(
        a,
        Route {
            target: b,
            via: [a, b],
            speed: 1.0,
            _pad: 0,
        },
    )
    .unwrap();
    let mut out = [EntityId::NULL; 2];
    w.duplicate(&[a, b], &mut SeqEntropy::new(4), &mut out)
        .unwrap();
    let copy = *w.route.get(out[0]).unwrap();
    assert_eq!((copy.target, copy.via), (out[1], [out[0], out[1]]));
}

/// A foreign-looking field skipped by the derive, and a marker field.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable, ludus::durable::EntityRefs)]
#[repr(C)]
pub struct Seek {
    /// The target.
    pub target: EntityId,
    /// An offset (a math type in a real game): skipped.
    #[entity_refs(skip)]
    pub offset: Pos,
    /// Padding.
    pub _pad: u32,
    /// A marker.
    pub _marker: core::marker::PhantomData<u8>,
}

#[test]
fn the_derive_skips_a_field_marked_skip_and_visits_the_rest() {
    use ludus::durable::EntityRefs;
    let e = EntityId::from_raw_parts(1, 2, 3);
    let mut s = Seek {
        target: e,
        offset: Pos(4.0),
        _pad: 0,
        _marker: core::marker::PhantomData,
    };
    let mut seen = Vec::new();
    s.visit_entities(&mut |x| seen.push(*x));
    assert_eq!(seen, [e]);
}

/// A packed component: its fields cannot be borrowed, so the derive visits copies.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable, ludus::durable::EntityRefs)]
#[repr(C, packed)]
pub struct Tether {
    /// A tag byte first: `target` is unaligned.
    pub tag: u8,
    /// The target.
    pub target: EntityId,
    /// Another.
    pub spare: [EntityId; 1],
}

/// A generic component: the derive bounds each field type.
#[derive(Clone, Copy, Debug, PartialEq, ludus::durable::EntityRefs)]
#[repr(C)]
pub struct Pair<T> {
    /// First.
    pub a: T,
    /// Second.
    pub b: T,
}

// SAFETY: two fields of one `Zeroable` type, `repr(C)`: all zeros is a `Pair` of zeros.
unsafe impl<T: Zeroable> Zeroable for Pair<T> {}
// SAFETY: `repr(C)` of two fields of one `Pod` type has no padding (the second starts at the
// first's size, a multiple of its alignment), no pointer and no interior mutability.
unsafe impl<T: Pod> Pod for Pair<T> {}

#[test]
fn the_derive_handles_packed_and_generic_structs() {
    use ludus::durable::EntityRefs;
    let (e, f) = (
        EntityId::from_raw_parts(1, 2, 3),
        EntityId::from_raw_parts(1, 4, 5),
    );
    let mut t = Tether {
        tag: 7,
        target: e,
        spare: [f],
    };
    let mut seen = Vec::new();
    t.visit_entities(&mut |x| {
        seen.push(*x);
        *x = EntityId::NULL;
    });
    assert_eq!(seen, [e, f]);
    let (tag, target, spare) = (t.tag, t.target, t.spare);
    assert_eq!((tag, target, spare), (7, EntityId::NULL, [EntityId::NULL]));
    let mut p = Pair { a: e, b: f };
    let mut seen = Vec::new();
    p.visit_entities(&mut |x| seen.push(*x));
    assert_eq!(seen, [e, f]);
    let mut numbers = Pair { a: 1u32, b: 2 };
    numbers.visit_entities(&mut |_| panic!("no entity field"));
    let mut nested = Pair {
        a: Pair { a: e, b: e },
        b: Pair { a: f, b: f },
    };
    let mut count = 0;
    nested.visit_entities(&mut |_| count += 1);
    assert_eq!(count, 4);
}
