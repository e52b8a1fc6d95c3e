//! iai-callgrind instruction counts of content restore, save and `identity apply` on a
//! 2 000-entity record of the `content` bench's shape (three components each, 30% references,
//! half forward), beside the same baselines: typed `serde_json::from_slice` + `HashMap` fixup,
//! and `serde_json::to_writer` of the typed structs; `identity_apply` is `content::apply` of a
//! 2 000-entity version-1 document in memory (it clones the document, which `ludus-cook` moves
//! instead; no file is read or written). Instruction ratios are stable across noisy machines;
//! wall-clock ratios are `content.rs`'s.
//!
//! What is counted is the work alone: a setup value a contender does not use, and what a
//! contender produces for its caller to keep (the restored world, the parsed record), are
//! forgotten rather than dropped inside the measured function (a drop of the 2 000-entity typed
//! record is ~0.9M instructions, counted on both sides of a ratio it then pulls toward 1).
#![allow(missing_docs)] // iai-callgrind generates undocumented modules

use std::hint::black_box;
use std::path::Path;

use iai_callgrind::{library_benchmark, library_benchmark_group, main};
use ludus::content::{
    apply, generate_manifest, restore_world_from_slice, save_world_bytes, DocPath, Manifest,
    Schema, WorldV1,
};
use ludus::identity::test_entropy::SeqEntropy;

#[path = "common/content.rs"]
mod common;
use common::*;

const N: usize = 2_000;

fn bytes() -> Vec<u8> {
    record(N).to_bytes()
}

fn restored() -> (Level, RecordT) {
    let bytes = bytes();
    let mut w = fresh(N);
    restore_world_from_slice(Path::new("bench"), &bytes, instance(), &mut w).unwrap();
    (w, serde_json::from_slice(&bytes).unwrap())
}

fn for_restore() -> (Vec<u8>, Level) {
    (bytes(), fresh(N))
}

type Apply = (WorldV1, DocPath, Manifest, Schema);

fn for_apply() -> Apply {
    let world = world_v1(N);
    let path: DocPath = "levels/big.world.json".parse().unwrap();
    let manifest = generate_manifest(&[(path.clone(), &world)], &mut SeqEntropy::new(7)).unwrap();
    let schema = Schema::from_slice(Path::new("schema.json"), SCHEMA_JSON).unwrap();
    (world, path, manifest, schema)
}

#[library_benchmark]
#[bench::n2000(setup = for_restore)]
fn restore_world((bytes, mut w): (Vec<u8>, Level)) -> usize {
    restore_world_from_slice(Path::new("bench"), black_box(&bytes), instance(), &mut w).unwrap();
    let n = w.registry.len();
    core::mem::forget((bytes, w));
    n
}

#[library_benchmark]
#[bench::n2000(setup = bytes)]
fn typed_parse_fixup_baseline(bytes: Vec<u8>) -> usize {
    let parsed = typed_parse_fixup(black_box(&bytes));
    let n = parsed.1.len();
    core::mem::forget((bytes, parsed));
    n
}

#[library_benchmark]
#[bench::n2000(setup = restored)]
fn save_world((w, typed): (Level, RecordT)) -> usize {
    core::mem::forget(typed);
    let document = record(0).document;
    let n = save_world_bytes(black_box(&w), instance(), "ludus.bench.v1", document)
        .unwrap()
        .len();
    core::mem::forget(w);
    n
}

#[library_benchmark]
#[bench::n2000(setup = restored)]
fn typed_to_writer_baseline((w, typed): (Level, RecordT)) -> usize {
    core::mem::forget(w);
    let mut out = Vec::with_capacity(N * 192);
    serde_json::to_writer(&mut out, black_box(&typed)).unwrap();
    core::mem::forget(typed);
    out.len()
}

#[library_benchmark]
#[bench::n2000(setup = for_apply)]
fn identity_apply((world, path, manifest, schema): Apply) -> usize {
    apply(black_box(&world), &path, &manifest, &schema)
        .unwrap()
        .entities
        .len()
}

library_benchmark_group!(
    name = content;
    benchmarks = restore_world, typed_parse_fixup_baseline, save_world, typed_to_writer_baseline,
        identity_apply
);

main!(library_benchmark_groups = content);
