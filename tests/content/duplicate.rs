//! Record duplication: fresh ids checked against the record and each other, internal
//! references remapped, external ones kept, the whole record re-emitted; placement duplication;
//! all or nothing on a malformed record, an unknown selection, failing entropy and an
//! unresolved conflict.

use crate::common::*;
use ludus::content::{
    duplicate_entities, duplicate_placements, restore_world, DuplicateError, Placement,
};
use ludus::identity::test_entropy::{FailingEntropy, FixedEntropy, SeqEntropy};
use ludus::identity::{mint_v4, MintError, SourceObjectId, MINT_ATTEMPTS};
use ludus::prelude::*;

/// Counts the draws of an entropy source.
struct Counting<S>(S, usize);

impl<S: ludus::identity::EntropySource> ludus::identity::EntropySource for Counting<S> {
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), ludus::identity::EntropyError> {
        self.1 += 1;
        self.0.fill(dest)
    }
}

#[test]
fn internal_references_are_remapped_and_external_ones_kept() {
    // 0 → 1 → 2 → 3 → 0; duplicate {1, 2}: copy of 1 targets copy of 2, copy of 2 targets 3.
    let record = ring(4);
    let selection = [object(1), object(2)];
    let dup = duplicate_entities(&record, &schema(), &selection, &mut SeqEntropy::new(9)).unwrap();
    assert_eq!(
        dup.record.entities[..4],
        record.entities[..],
        "originals untouched"
    );
    assert_eq!(dup.record.entities.len(), 6);
    let (c1, c2) = (&dup.record.entities[4], &dup.record.entities[5]);
    assert_eq!(dup.copies, vec![(object(1), c1.uuid), (object(2), c2.uuid)]);
    assert_eq!(c1.components["enemy"]["target"], c2.uuid.to_string());
    assert_eq!(c2.components["enemy"]["target"], uuid_text(3));
    assert_eq!(c1.name, record.entities[1].name);
    assert_eq!(c1.components["pos"], record.entities[1].components["pos"]);
    for c in [c1, c2] {
        assert_eq!(c.uuid.as_uuid().get_version_num(), 4);
        assert!(record.entities.iter().all(|e| e.uuid != c.uuid));
    }
    dup.record.check().unwrap();
    // The re-emitted record restores; the copies form their own graph.
    let mut w = level(16);
    let r = restore_world(&dup.record, instance(0), &mut w).unwrap();
    assert_eq!(w.get::<Enemy>(r.entities[4]).unwrap().target, r.entities[5]);
    assert_eq!(w.get::<Enemy>(r.entities[5]).unwrap().target, r.entities[3]);
}

#[test]
fn a_colliding_candidate_is_retried_at_most_four_times() {
    let pattern = [7u8; 16];
    let colliding = mint_v4(&mut FixedEntropy::new(pattern)).unwrap();
    let mut record = ring(3);
    record.entities[2].uuid = SourceObjectId::from_uuid(colliding).unwrap();
    record.entities[1] = entity(1, Some(&colliding.to_string()));
    let mut source = Counting(FixedEntropy::new(pattern), 0);
    let err = duplicate_entities(&record, &schema(), &[object(0)], &mut source).unwrap_err();
    assert!(
        matches!(err, DuplicateError::Mint(MintError::Conflict(_))),
        "{err}"
    );
    assert_eq!(source.1, MINT_ATTEMPTS);
    // The document's identity is taken too.
    let mut record = ring(2);
    record.document = colliding.to_string().parse().unwrap();
    let err = duplicate_entities(
        &record,
        &schema(),
        &[object(0)],
        &mut FixedEntropy::new(pattern),
    )
    .unwrap_err();
    assert!(matches!(err, DuplicateError::Mint(MintError::Conflict(_))));
    // ... and the ids minted so far: a constant source gives the first copy, not the second.
    let err = duplicate_entities(
        &ring(2),
        &schema(),
        &[object(0), object(1)],
        &mut FixedEntropy::new(pattern),
    )
    .unwrap_err();
    assert!(matches!(err, DuplicateError::Mint(MintError::Conflict(_))));
    assert!(duplicate_entities(
        &ring(2),
        &schema(),
        &[object(0)],
        &mut FixedEntropy::new(pattern)
    )
    .is_ok());
}

#[test]
fn every_refusal_produces_nothing() {
    let schema = schema();
    let record = ring(3);
    for fail_on in 1..=2 {
        let mut source = FailingEntropy::new(SeqEntropy::new(1), fail_on);
        let err =
            duplicate_entities(&record, &schema, &[object(0), object(1)], &mut source).unwrap_err();
        assert!(
            matches!(err, DuplicateError::Mint(MintError::Entropy(_))),
            "{err}"
        );
    }
    let err = duplicate_entities(
        &record,
        &schema,
        &[object(0), object(9)],
        &mut SeqEntropy::new(1),
    )
    .unwrap_err();
    assert!(matches!(err, DuplicateError::UnknownSelection { .. }));
    let err = duplicate_entities(
        &record,
        &schema,
        &[object(1), object(1)],
        &mut SeqEntropy::new(1),
    )
    .unwrap_err();
    assert!(matches!(err, DuplicateError::RepeatedSelection { .. }));
    let mut bad = record.clone();
    bad.entities[1].uuid = bad.entities[0].uuid;
    let err = duplicate_entities(&bad, &schema, &[object(0)], &mut SeqEntropy::new(1)).unwrap_err();
    assert!(matches!(err, DuplicateError::Record(_)));
    let mut other = schema.clone();
    other.name = "other".into();
    let err =
        duplicate_entities(&record, &other, &[object(0)], &mut SeqEntropy::new(1)).unwrap_err();
    assert!(matches!(err, DuplicateError::SchemaMismatch { .. }));
    let mut partial = schema.clone();
    partial.components.remove("enemy");
    let err =
        duplicate_entities(&record, &partial, &[object(0)], &mut SeqEntropy::new(1)).unwrap_err();
    assert!(matches!(err, DuplicateError::UnknownComponent { .. }));
    let mut number = record.clone();
    number.entities[0].components.get_mut("enemy").unwrap()["target"] = serde_json::json!(3);
    let err =
        duplicate_entities(&number, &schema, &[object(0)], &mut SeqEntropy::new(1)).unwrap_err();
    assert!(matches!(err, DuplicateError::NotAReference { .. }));
}

#[test]
fn labels_of_copies_stay_unique() {
    let record = ring(2);
    let once =
        duplicate_entities(&record, &schema(), &[object(0)], &mut SeqEntropy::new(1)).unwrap();
    assert_eq!(once.record.entities[2].label, "e0.copy");
    let copy = once.copies[0].1;
    let twice = duplicate_entities(
        &once.record,
        &schema(),
        &[object(0), copy],
        &mut SeqEntropy::new(2),
    )
    .unwrap();
    let labels: Vec<_> = twice
        .record
        .entities
        .iter()
        .map(|e| e.label.as_str())
        .collect();
    assert_eq!(labels, ["e0", "e1", "e0.copy", "e0.copy2", "e0.copy.copy"]);
    twice.record.check().unwrap();
}

#[test]
fn placement_duplication_remaps_instances_and_keeps_source_ids() {
    let placements = [
        Placement {
            instance: instance(0),
            document: document(),
        },
        Placement {
            instance: instance(1),
            document: document(),
        },
    ];
    let out = duplicate_placements(&placements, &[instance(1)], &mut SeqEntropy::new(3)).unwrap();
    assert_eq!(out[..2], placements[..]);
    assert_eq!(out.len(), 3);
    assert_eq!(out[2].document, document());
    assert!(placements.iter().all(|p| p.instance != out[2].instance));
    // The same record under both scopes: two graphs, same source ids.
    let mut w = level(16);
    let a = restore_world(&ring(3), out[1].instance, &mut w).unwrap();
    let b = restore_world(&ring(3), out[2].instance, &mut w).unwrap();
    assert_eq!(
        w.key_of(a.entities[0]).unwrap().object,
        w.key_of(b.entities[0]).unwrap().object
    );
    assert_eq!(w.get::<Enemy>(b.entities[0]).unwrap().target, b.entities[1]);
    let colliding = mint_v4(&mut FixedEntropy::new([5; 16])).unwrap();
    let taken = [Placement {
        instance: colliding.to_string().parse().unwrap(),
        document: document(),
    }];
    let err = duplicate_placements(
        &taken,
        &[taken[0].instance],
        &mut FixedEntropy::new([5; 16]),
    )
    .unwrap_err();
    assert!(matches!(err, DuplicateError::Mint(MintError::Conflict(_))));
    let err =
        duplicate_placements(&placements, &[instance(5)], &mut SeqEntropy::new(3)).unwrap_err();
    assert!(matches!(err, DuplicateError::UnknownSelection { .. }));
    let err = duplicate_placements(
        &placements,
        &[instance(0)],
        &mut FailingEntropy::new(SeqEntropy::new(1), 1),
    )
    .unwrap_err();
    assert!(matches!(err, DuplicateError::Mint(MintError::Entropy(_))));
}

mod model {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(crate::support::proptest_config_unpersisted(128, 1))]

        /// Duplication against a plain model: every selected entity gets a fresh v4 id, the
        /// originals are untouched, a clone's link points at the clone of its target when the
        /// target is selected and at the original target otherwise; a bad selection or a
        /// failing source gives an error and no record.
        #[test]
        fn duplication_matches_the_model(
            n in 1u64..8,
            links in prop::collection::vec(prop::option::of(any::<prop::sample::Index>()), 8),
            picks in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
            stranger in any::<bool>(),
            fail_on in prop::option::of(1u64..6),
            seed in any::<u64>(),
        ) {
            let mut record = ring(n);
            for (i, link) in links.iter().take(n as usize).enumerate() {
                let target = link.map(|t| uuid_text(t.index(n as usize) as u64));
                record.entities[i] = entity(i as u64, target.as_deref().or(Some("")));
            }
            let mut selection: Vec<SourceObjectId> =
                picks.iter().map(|p| object(p.index(n as usize) as u64)).collect();
            if stranger {
                selection.push(object(1000));
            }
            let repeated = (1..selection.len()).any(|i| selection[..i].contains(&selection[i]));
            let mut source = FailingEntropy::new(SeqEntropy::new(seed), fail_on.unwrap_or(u64::MAX));
            let result = duplicate_entities(&record, &schema(), &selection, &mut source);
            let draws_needed = selection.len() as u64;
            match result {
                Ok(dup) => {
                    prop_assert!(!stranger && !repeated);
                    prop_assert!(fail_on.is_none_or(|f| f > draws_needed));
                    dup.record.check().unwrap();
                    prop_assert_eq!(&dup.record.entities[..n as usize], &record.entities[..]);
                    prop_assert_eq!(dup.copies.len(), selection.len());
                    let new_of = |old: &str| {
                        dup.copies
                            .iter()
                            .find(|(o, _)| o.to_string() == old)
                            .map(|(_, c)| c.to_string())
                    };
                    for (k, (old, copy)) in dup.copies.iter().enumerate() {
                        prop_assert_eq!(*old, selection[k]);
                        prop_assert_eq!(copy.as_uuid().get_version_num(), 4);
                        prop_assert!(record.entities.iter().all(|e| e.uuid != *copy));
                        let original = record.entities.iter().find(|e| e.uuid == *old).unwrap();
                        let clone = &dup.record.entities[n as usize + k];
                        prop_assert_eq!(clone.uuid, *copy);
                        let before = original.components["enemy"]["target"].as_str().unwrap();
                        let after = clone.components["enemy"]["target"].as_str().unwrap();
                        let expected = new_of(before).unwrap_or_else(|| before.to_owned());
                        prop_assert_eq!(after, expected.as_str());
                        prop_assert_eq!(&clone.components["pos"], &original.components["pos"]);
                    }
                }
                Err(DuplicateError::UnknownSelection { .. }) => prop_assert!(stranger),
                Err(DuplicateError::RepeatedSelection { .. }) => prop_assert!(repeated),
                Err(DuplicateError::Mint(MintError::Entropy(_))) => {
                    prop_assert!(fail_on.is_some_and(|f| f <= draws_needed));
                }
                Err(e) => prop_assert!(false, "{e}"),
            }
        }
    }
}
