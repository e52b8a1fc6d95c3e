//! Deep hierarchies, timed whole: a level whose entities form one parent chain, restored with
//! `restore_level` when the file lists it parent first, child first and shuffled, and the same
//! chain built top-down with `set_parent` (each new entity under the last). Linear work reads
//! as a flat time per entity from 10 000 to 1 000 000 entities.
//!
//! Not a criterion bench: one restore of a million entities takes about a second, so each
//! size is timed `rounds` times (the first argument, default 3) and the median printed.
//!
//! `cargo bench -p ludus-benches --bench level_chain -- 3 [max entities]`

use std::hint::black_box;
use std::time::Instant;

use ludus::content::{restore_level, Components, LevelEntity, LevelFile};
use ludus::durable::{DurableConfig, DurableOps};
use ludus::prelude::*;
use uuid::Uuid;

#[derive(
    Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable, serde::Serialize, serde::Deserialize,
)]
#[repr(C)]
struct Pos {
    x: f32,
}

ludus::world! {
    struct Chain { pos: Pos }
    durable
}

fn world(n: usize) -> Chain {
    let config = DurableConfig {
        name_bytes: 64,
        ..DurableConfig::default()
    };
    let mut w = Chain::try_new_durable(n, config).unwrap();
    w.begin_structural();
    w
}

/// A version-4 UUID made from `k`.
fn uuid(k: usize) -> Uuid {
    Uuid::from_u128(0x0000_0000_0000_4000_8000_0000_0000_0000 | (k as u128 + 1))
}

/// The chain of `n` entities (entity `k` under entity `k - 1`) listed in `order`.
fn chain(order: &[usize]) -> LevelFile {
    LevelFile {
        entities: order
            .iter()
            .map(|&k| LevelEntity {
                uuid: uuid(k),
                label: String::new(),
                name: String::new(),
                parent: (k > 0).then(|| uuid(k - 1)),
                components: Components::new(),
            })
            .collect(),
    }
}

/// The median of `rounds` timings of `run` on a fresh world of `n` (seconds).
fn median(rounds: usize, n: usize, mut run: impl FnMut(&mut Chain)) -> f64 {
    let mut times: Vec<f64> = (0..rounds)
        .map(|_| {
            let mut w = world(n);
            let t = Instant::now();
            run(&mut w);
            let s = t.elapsed().as_secs_f64();
            black_box(&w);
            s
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn main() {
    // `cargo bench` passes `--bench`: the other arguments are the rounds and the largest size.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let rounds: usize = args.first().map_or(3, |a| a.parse().expect("rounds"));
    let max: usize = args
        .get(1)
        .map_or(1_000_000, |a| a.parse().expect("entities"));
    println!("entities  case              median ms   ns/entity");
    for n in [10_000usize, 40_000, 100_000, 1_000_000] {
        if n > max {
            continue;
        }
        let parent_first: Vec<usize> = (0..n).collect();
        let child_first: Vec<usize> = (0..n).rev().collect();
        let mut shuffled = parent_first.clone();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for i in (1..n).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            shuffled.swap(i, (x % (i as u64 + 1)) as usize);
        }
        for (case, order) in [
            ("parent_first", &parent_first),
            ("child_first", &child_first),
            ("shuffled", &shuffled),
        ] {
            let file = chain(order);
            let s = median(rounds, n, |w| {
                restore_level(&file, None, w).unwrap();
            });
            println!(
                "{n:>8}  {case:<16}  {:>9.1}  {:>10.0}",
                s * 1e3,
                s * 1e9 / n as f64
            );
        }
        let s = median(rounds, n, |w| {
            let mut last: Option<EntityId> = None;
            for _ in 0..n {
                let e = w.spawn((Pos { x: 0.0 },)).unwrap();
                w.set_parent(e, last).unwrap();
                last = Some(e);
            }
        });
        println!(
            "{n:>8}  {:<16}  {:>9.1}  {:>10.0}",
            "set_parent_down",
            s * 1e3,
            s * 1e9 / n as f64
        );
    }
}
