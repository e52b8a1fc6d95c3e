//! Instruction counts (iai-callgrind) for the identity operations, each beside its uuid-crate
//! or raw-atomic equivalent. Run with `cargo bench --bench identity_iai` (needs
//! `iai-callgrind-runner` 0.16.1 and valgrind).

// `library_benchmark` generates undocumented modules.
#![allow(missing_docs)]

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

use iai_callgrind::{library_benchmark, library_benchmark_group, main};
use ludus::identity::{
    format_uuid, mint_v4, parse_uuid, BatchedMinter, OsEntropy, TokenSource, UuidError, UuidPolicy,
};
use uuid::Uuid;

const TEXT: &str = "67E55044-10b1-426f-9247-bb680e5fe0c8";

#[library_benchmark]
fn parse_ludus() -> Result<Uuid, UuidError> {
    parse_uuid(black_box(TEXT.as_bytes()), UuidPolicy::DurableV4)
}

#[library_benchmark]
fn parse_uuid_crate() -> Result<Uuid, uuid::Error> {
    Uuid::parse_str(black_box(TEXT))
}

#[library_benchmark]
fn format_ludus() -> [u8; 36] {
    let mut buf = [0u8; 36];
    format_uuid(
        black_box(&Uuid::from_u128(0x67e55044_10b1_426f_9247_bb680e5fe0c8)),
        &mut buf,
    );
    buf
}

#[library_benchmark]
fn format_uuid_crate() -> [u8; 36] {
    let mut buf = [0u8; 36];
    black_box(Uuid::from_u128(0x67e55044_10b1_426f_9247_bb680e5fe0c8))
        .hyphenated()
        .encode_lower(&mut buf);
    buf
}

#[library_benchmark]
fn mint_single_ludus() -> Uuid {
    mint_v4(black_box(&mut OsEntropy)).unwrap()
}

#[library_benchmark]
fn mint_single_uuid_crate() -> Uuid {
    Uuid::new_v4()
}

/// A warm minter (one id already taken, so the buffer is full) measured for the next id.
fn warm_minter() -> Box<BatchedMinter> {
    let mut m = Box::new(BatchedMinter::new());
    m.mint().unwrap();
    m
}

#[library_benchmark]
#[bench::warm(warm_minter())]
fn mint_batched_ludus(mut minter: Box<BatchedMinter>) -> (Uuid, Box<BatchedMinter>) {
    // The minter is returned so that its drop (a 4 KiB wipe) happens outside the measurement.
    (minter.mint().unwrap(), minter)
}

// The amortised cost: a full batch of 256 ids from a cold minter, one refill included.
#[library_benchmark]
#[bench::cold(Box::new(BatchedMinter::new()))]
fn mint_batched_256_ludus(mut minter: Box<BatchedMinter>) -> (Uuid, Box<BatchedMinter>) {
    let mut last = Uuid::nil();
    for _ in 0..256 {
        last = black_box(minter.mint().unwrap());
    }
    (last, minter)
}

#[library_benchmark]
fn mint_batched_256_uuid_crate() -> Uuid {
    let mut last = Uuid::nil();
    for _ in 0..256 {
        last = black_box(Uuid::new_v4());
    }
    last
}

#[library_benchmark]
#[bench::fresh(TokenSource::new())]
fn token_issue_ludus(tokens: TokenSource) -> u64 {
    tokens.issue().unwrap()
}

#[library_benchmark]
#[bench::fresh(AtomicU64::new(0))]
fn token_issue_raw(counter: AtomicU64) -> u64 {
    counter.fetch_add(1, Ordering::Relaxed)
}

library_benchmark_group!(name = parse; benchmarks = parse_ludus, parse_uuid_crate);
library_benchmark_group!(name = format; benchmarks = format_ludus, format_uuid_crate);
library_benchmark_group!(name = mint_single; benchmarks = mint_single_ludus, mint_single_uuid_crate);
library_benchmark_group!(
    name = mint_batched;
    benchmarks = mint_batched_ludus, mint_batched_256_ludus, mint_batched_256_uuid_crate
);
library_benchmark_group!(name = token_issue; benchmarks = token_issue_ludus, token_issue_raw);

main!(
    library_benchmark_groups = parse,
    format,
    mint_single,
    mint_batched,
    token_issue
);
