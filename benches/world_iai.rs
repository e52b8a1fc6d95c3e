//! iai-callgrind instruction counts of the world's hot operations.
#![allow(missing_docs)] // iai-callgrind generates undocumented modules

use std::hint::black_box;

use iai_callgrind::{library_benchmark, library_benchmark_group, main};
use ludus::world::{ComponentPool, EntityRegistry};
use ludus::EntityId;

const N: usize = 1_000;

type Setup = (EntityRegistry, ComponentPool<[f32; 3]>, Vec<EntityId>);

fn empty() -> Setup {
    let reg = EntityRegistry::try_with_capacity(N).unwrap();
    let pool = ComponentPool::try_new(&reg).unwrap();
    (reg, pool, Vec::with_capacity(N))
}

fn created() -> Setup {
    let (mut reg, pool, mut ids) = empty();
    for _ in 0..N {
        ids.push(reg.try_create().unwrap());
    }
    (reg, pool, ids)
}

fn filled() -> Setup {
    let (mut reg, mut pool, ids) = created();
    for (i, &e) in ids.iter().enumerate() {
        pool.insert(&mut reg, e, [i as f32; 3]).unwrap();
    }
    (reg, pool, ids)
}

#[library_benchmark]
#[bench::n1000(setup = empty)]
fn create((mut reg, _pool, _ids): Setup) -> usize {
    for _ in 0..N {
        black_box(reg.try_create().unwrap());
    }
    reg.len()
}

#[library_benchmark]
#[bench::n1000(setup = created)]
fn release((mut reg, _pool, ids): Setup) -> usize {
    for &e in &ids {
        reg.try_release(black_box(e)).unwrap();
    }
    reg.len()
}

#[library_benchmark]
#[bench::n1000(setup = created)]
fn is_alive((reg, _pool, ids): Setup) -> usize {
    ids.iter().filter(|e| reg.is_alive(black_box(**e))).count()
}

#[library_benchmark]
#[bench::n1000(setup = created)]
fn insert((mut reg, mut pool, ids): Setup) -> usize {
    for &e in &ids {
        pool.insert(&mut reg, black_box(e), [1.0; 3]).unwrap();
    }
    pool.len()
}

#[library_benchmark]
#[bench::n1000(setup = filled)]
fn remove((mut reg, mut pool, ids): Setup) -> usize {
    for &e in &ids {
        black_box(pool.remove(&mut reg, black_box(e)).unwrap());
    }
    pool.len()
}

#[library_benchmark]
#[bench::n1000(setup = filled)]
fn get((_reg, pool, ids): Setup) -> f32 {
    ids.iter()
        .map(|e| pool.get(black_box(*e)).map_or(0.0, |v| v[0]))
        .sum()
}

#[library_benchmark]
#[bench::n1000(setup = filled)]
fn iterate((_reg, mut pool, _ids): Setup) -> f32 {
    for v in pool.values_mut() {
        v[0] += 1.0;
    }
    black_box(pool.values()[0][0])
}

library_benchmark_group!(
    name = world;
    benchmarks = create, release, is_alive, insert, remove, get, iterate
);

main!(library_benchmark_groups = world);
