//! Identity micro-benchmarks: UUID parse/format, v4 minting (single and batched), owner tokens.
//!
//! Each group is one workload; `ludus*` contenders are ours, `uuid` is the uuid crate, `raw` is
//! the floor (a bare relaxed `fetch_add`).

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

use criterion::{criterion_group, criterion_main, Criterion};
use ludus::identity::{
    format_uuid, mint_v4, parse_uuid, BatchedMinter, OsEntropy, TokenSource, UuidPolicy,
};
use uuid::Uuid;

/// Distinct valid v4 texts, mixed case, cycled so the branch predictor cannot learn one string.
fn inputs() -> Vec<String> {
    let mut minter = BatchedMinter::new();
    (0..64)
        .map(|i| {
            let s = minter.mint().unwrap().hyphenated().to_string();
            if i % 3 == 0 {
                s.to_ascii_uppercase()
            } else {
                s
            }
        })
        .collect()
}

fn parse(c: &mut Criterion) {
    let texts = inputs();
    let mut g = c.benchmark_group("parse");
    g.bench_function("ludus", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) & 63;
            parse_uuid(black_box(texts[i].as_bytes()), UuidPolicy::DurableV4)
        })
    });
    g.bench_function("uuid", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) & 63;
            Uuid::parse_str(black_box(texts[i].as_str()))
        })
    });
    g.finish();
}

fn format(c: &mut Criterion) {
    let ids: Vec<Uuid> = inputs()
        .iter()
        .map(|t| Uuid::parse_str(t).unwrap())
        .collect();
    let mut g = c.benchmark_group("format");
    g.bench_function("ludus", |b| {
        let (mut i, mut buf) = (0, [0u8; 36]);
        b.iter(|| {
            i = (i + 1) & 63;
            black_box(format_uuid(black_box(&ids[i]), &mut buf));
        })
    });
    g.bench_function("uuid", |b| {
        let (mut i, mut buf) = (0, [0u8; 36]);
        b.iter(|| {
            i = (i + 1) & 63;
            black_box(black_box(&ids[i]).hyphenated().encode_lower(&mut buf));
        })
    });
    g.finish();
}

fn mint_single(c: &mut Criterion) {
    let mut g = c.benchmark_group("mint_single");
    g.bench_function("ludus", |b| b.iter(|| mint_v4(black_box(&mut OsEntropy))));
    g.bench_function("uuid", |b| b.iter(Uuid::new_v4));
    g.finish();
}

fn mint_batched(c: &mut Criterion) {
    let mut g = c.benchmark_group("mint_batched");
    g.bench_function("ludus_batched", |b| {
        let mut minter = Box::new(BatchedMinter::new());
        b.iter(|| black_box(&mut *minter).mint())
    });
    g.bench_function("uuid", |b| b.iter(Uuid::new_v4));
    g.finish();
}

fn token_issue(c: &mut Criterion) {
    let mut g = c.benchmark_group("token_issue");
    g.bench_function("ludus", |b| {
        let tokens = TokenSource::new();
        b.iter(|| black_box(&tokens).issue())
    });
    g.bench_function("raw", |b| {
        let counter = AtomicU64::new(0);
        b.iter(|| black_box(&counter).fetch_add(1, Ordering::Relaxed))
    });
    g.finish();
}

criterion_group!(
    benches,
    parse,
    format,
    mint_single,
    mint_batched,
    token_issue
);
criterion_main!(benches);
