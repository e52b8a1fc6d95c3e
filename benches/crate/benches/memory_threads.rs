//! Thread scaling and remote frees, criterion groups whose function ids are the
//! contenders of `common/alloc.rs`: `raw_system`, `ludus_system` and, with the `mimalloc`
//! feature, `raw_mimalloc`, `ludus_mimalloc`.
//!
//! Thread scaling, each thread running a retained window of 256 small blocks (16–256 B, fixed
//! seed per thread, every byte touched, shuffled replacement, checksum black-boxed):
//!
//! - `scale_same_warm_t{N}`: N persistent workers (started outside the measurement), all on one
//!   registered domain; timed from the release of the workers to the last one done;
//! - `scale_spread_warm_t{N}`: the same, each worker on its own registered domain (the raw
//!   contender is the same in both: it is the baseline);
//! - `scale_same_new_t{N}`: N threads spawned and joined inside every measured iteration.
//!
//! N is 1, 2 and 4, and 8 and 16 where `LUDUS_BENCH_MAX_THREADS` allows (default 4).
//!
//! Remote frees (blocks allocated on one thread and freed on another, in batches of 64 over
//! bounded channels; empty batch vectors travel back for reuse):
//!
//! - `remote_producer_consumer`: one producer, one consumer (persistent threads);
//! - `remote_one_to_many`: one producer, three consumers;
//! - `remote_many_to_one`: three producers, one consumer;
//! - `remote_origin_exits`: two threads spawn, allocate a batch each, hand it over and exit
//!   (joined) before the main thread frees every block.
//!
//! After every ludus contender's run (outside the timing) the domains' live bytes and blocks must
//! be back at their starting values: the counters reconcile at quiescence, or the bench panics.
//! Throughput is `Elements` = allocations per iteration.

#[path = "common/alloc.rs"]
mod common;

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::{assert_reconciled, live, Block, Contender, Heap, Plan, SMALL_SIZES};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

/// Allocations per thread per iteration of the scaling groups.
const OPS: usize = 2048;
/// Blocks each scaling thread retains.
const WINDOW: usize = 256;
/// Blocks per handoff batch.
const BATCH: usize = 64;
/// Batches per iteration of the remote groups (divisible by 3).
const BATCHES: usize = 48;
/// Capacity (batches) of each handoff channel.
const QUEUE: usize = 4;

/// The thread counts to run: 1, 2, 4, then 8 and 16 up to `LUDUS_BENCH_MAX_THREADS`.
fn thread_counts() -> Vec<usize> {
    let max = std::env::var("LUDUS_BENCH_MAX_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(4);
    [1, 2, 4, 8, 16]
        .into_iter()
        .filter(|&n| n <= max.max(1))
        .collect()
}

/// A job a persistent worker runs once per round; returns a checksum.
type Job = Box<dyn FnMut() -> u64 + Send>;

/// Persistent worker threads, each running its own job `rounds` times per release.
struct Pool {
    start: Arc<Barrier>,
    done: Arc<Barrier>,
    /// Rounds of the next release; 0 tells the workers to exit.
    rounds: Arc<AtomicU64>,
    sum: Arc<AtomicU64>,
    handles: Vec<JoinHandle<()>>,
}

impl Pool {
    /// Starts one worker per job; they wait for [`Pool::run`].
    fn new(jobs: Vec<Job>) -> Pool {
        let n = jobs.len();
        let start = Arc::new(Barrier::new(n + 1));
        let done = Arc::new(Barrier::new(n + 1));
        let rounds = Arc::new(AtomicU64::new(0));
        let sum = Arc::new(AtomicU64::new(0));
        let handles = jobs
            .into_iter()
            .map(|mut job| {
                let (start, done, rounds, sum) =
                    (start.clone(), done.clone(), rounds.clone(), sum.clone());
                std::thread::spawn(move || loop {
                    start.wait();
                    let r = rounds.load(Ordering::Acquire);
                    if r == 0 {
                        break;
                    }
                    let mut s = 0u64;
                    for _ in 0..r {
                        s = s.wrapping_add(job());
                    }
                    sum.fetch_add(black_box(s), Ordering::Relaxed);
                    done.wait();
                })
            })
            .collect();
        Pool {
            start,
            done,
            rounds,
            sum,
            handles,
        }
    }

    /// Releases every worker for `rounds` rounds and returns the time from the release until
    /// the last worker is done.
    fn run(&self, rounds: u64) -> Duration {
        self.rounds.store(rounds.max(1), Ordering::Release);
        let t = Instant::now();
        self.start.wait();
        self.done.wait();
        t.elapsed()
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.rounds.store(0, Ordering::Release);
        self.start.wait();
        for h in self.handles.drain(..) {
            if h.join().is_err() {
                eprintln!("memory_threads: a pool worker panicked");
            }
        }
        black_box(self.sum.load(Ordering::Relaxed));
    }
}

/// The plan of scaling thread `i` (the same for every contender).
fn plan(i: usize) -> Plan {
    Plan::new(OPS, WINDOW, 0x5CA1_E000 + i as u64)
}

/// Runs `bench` for `contender` and, for a ludus one, checks its domains reconcile afterwards.
fn checked(what: &str, heaps: &[Heap], bench: impl FnOnce()) {
    let before = live(heaps);
    bench();
    assert_reconciled(what, &before, heaps);
}

fn bench_scale_warm(c: &mut Criterion) {
    for spread in [false, true] {
        for &n in &thread_counts() {
            let group = format!("scale_{}_warm_t{n}", if spread { "spread" } else { "same" });
            let mut g = c.benchmark_group(&group);
            g.throughput(Throughput::Elements((OPS * n) as u64));
            for contender in Contender::all() {
                let heaps: Vec<Heap> = (0..n)
                    .map(|i| {
                        if spread {
                            contender.heap(&format!("bench.thr.spread{i}"))
                        } else {
                            contender.heap("bench.thr.same")
                        }
                    })
                    .collect();
                let jobs: Vec<Job> = heaps
                    .iter()
                    .enumerate()
                    .map(|(i, &h)| {
                        let plan = plan(i);
                        let mut window = vec![Block::EMPTY; WINDOW];
                        Box::new(move || plan.run(h, &mut window)) as Job
                    })
                    .collect();
                let pool = Pool::new(jobs);
                checked(&group, &heaps, || {
                    g.bench_function(contender.name(), |b| b.iter_custom(|iters| pool.run(iters)));
                });
                drop(pool);
            }
            g.finish();
        }
    }
}

fn bench_scale_new(c: &mut Criterion) {
    for &n in &thread_counts() {
        let group = format!("scale_same_new_t{n}");
        let mut g = c.benchmark_group(&group);
        g.throughput(Throughput::Elements((OPS * n) as u64));
        let plans: Vec<Plan> = (0..n).map(plan).collect();
        for contender in Contender::all() {
            let h = contender.heap("bench.thr.same");
            let mut windows: Vec<Vec<Block>> = vec![vec![Block::EMPTY; WINDOW]; n];
            checked(&group, &[h], || {
                g.bench_function(contender.name(), |b| {
                    b.iter(|| {
                        std::thread::scope(|s| {
                            let hs: Vec<_> = plans
                                .iter()
                                .zip(windows.iter_mut())
                                .map(|(p, w)| s.spawn(move || p.run(h, w)))
                                .collect();
                            hs.into_iter()
                                .map(|t| t.join().expect("scaling thread panicked"))
                                .fold(0u64, u64::wrapping_add)
                        })
                    })
                });
            });
        }
        g.finish();
    }
}

/// A batch of blocks in flight, tagged with the producer it returns to.
struct Batch {
    from: usize,
    blocks: Vec<Block>,
}

/// A producer's job: `batches` batches per round, batch `k` sent to `outs[k % outs.len()]`;
/// empty vectors come back on `back`.
fn producer(
    h: Heap,
    id: usize,
    batches: usize,
    outs: Vec<SyncSender<Batch>>,
    back: Receiver<Vec<Block>>,
) -> Job {
    let mut sizes = common::Rng(0xFEED_0000 + id as u64);
    let sizes: Vec<usize> = (0..batches * BATCH)
        .map(|_| SMALL_SIZES[sizes.below(SMALL_SIZES.len())])
        .collect();
    Box::new(move || {
        let mut sum = 0u64;
        for k in 0..batches {
            let mut v = back
                .try_recv()
                .unwrap_or_else(|_| Vec::with_capacity(BATCH));
            for &size in &sizes[k * BATCH..(k + 1) * BATCH] {
                let (b, s) = Block::new_touched(h, size);
                sum = sum.wrapping_add(s);
                v.push(b);
            }
            outs[k % outs.len()]
                .send(Batch {
                    from: id,
                    blocks: v,
                })
                .expect("consumer gone");
        }
        sum
    })
}

/// A consumer's job: receives `batches` batches per round, frees every block, sends the empty
/// vector back to its producer.
fn consumer(h: Heap, batches: usize, rx: Receiver<Batch>, backs: Vec<Sender<Vec<Block>>>) -> Job {
    Box::new(move || {
        let mut sum = 0u64;
        for _ in 0..batches {
            let mut batch = rx.recv().expect("producer gone");
            for b in batch.blocks.drain(..) {
                // SAFETY: the producer allocated `b` from `h` and handed it over; freed once.
                sum = sum.wrapping_add(unsafe { b.read_and_free(h) });
            }
            // The producer may have finished its round already; the vector is then dropped.
            let _ = backs[batch.from].send(batch.blocks);
        }
        sum
    })
}

/// Producers `0..p` and consumers `0..c` wired all-to-all: producer `i` sends its batch `k` to
/// consumer `k % c`. Every consumer gets `BATCHES / c` batches per round in total.
fn remote_jobs(h: Heap, p: usize, c: usize) -> Vec<Job> {
    assert!(BATCHES % p == 0 && BATCHES % c == 0);
    let (to_consumer, from_producers): (Vec<_>, Vec<_>) =
        (0..c).map(|_| mpsc::sync_channel::<Batch>(QUEUE)).unzip();
    let (backs, back_rx): (Vec<_>, Vec<_>) = (0..p).map(|_| mpsc::channel()).unzip();
    let per_producer = BATCHES / p;
    let mut jobs: Vec<Job> = back_rx
        .into_iter()
        .enumerate()
        .map(|(i, back)| producer(h, i, per_producer, to_consumer.clone(), back))
        .collect();
    // Producer `i`'s batch `k` goes to consumer `k % c`: with p producers of BATCHES / p batches
    // each, consumer j receives p * |{k < BATCHES / p : k % c == j}| batches.
    for (j, rx) in from_producers.into_iter().enumerate() {
        let per_consumer = p * (0..per_producer).filter(|k| k % c == j).count();
        jobs.push(consumer(h, per_consumer, rx, backs.clone()));
    }
    jobs
}

fn bench_remote(c: &mut Criterion) {
    for (group, p, cons) in [
        ("remote_producer_consumer", 1, 1),
        ("remote_one_to_many", 1, 3),
        ("remote_many_to_one", 3, 1),
    ] {
        let mut g = c.benchmark_group(group);
        g.throughput(Throughput::Elements((BATCHES * BATCH) as u64));
        for contender in Contender::all() {
            let h = contender.heap("bench.remote");
            let pool = Pool::new(remote_jobs(h, p, cons));
            checked(group, &[h], || {
                g.bench_function(contender.name(), |b| b.iter_custom(|iters| pool.run(iters)));
            });
            drop(pool);
        }
        g.finish();
    }
}

fn bench_origin_exits(c: &mut Criterion) {
    const THREADS: usize = 2;
    let group = "remote_origin_exits";
    let per_thread = BATCHES * BATCH / THREADS;
    let sizes: Vec<Vec<usize>> = (0..THREADS)
        .map(|i| {
            let mut rng = common::Rng(0x0E1 + i as u64);
            (0..per_thread)
                .map(|_| SMALL_SIZES[rng.below(SMALL_SIZES.len())])
                .collect()
        })
        .collect();
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements((BATCHES * BATCH) as u64));
    for contender in Contender::all() {
        let h = contender.heap("bench.remote");
        let mut handed: Vec<Vec<Block>> = (0..THREADS)
            .map(|_| Vec::with_capacity(per_thread))
            .collect();
        checked(group, &[h], || {
            g.bench_function(contender.name(), |b| {
                b.iter(|| {
                    let mut sum = std::thread::scope(|s| {
                        let ts: Vec<_> = handed
                            .iter_mut()
                            .zip(&sizes)
                            .map(|(out, sizes)| {
                                s.spawn(move || {
                                    let mut sum = 0u64;
                                    for &size in sizes {
                                        let (b, s) = Block::new_touched(h, size);
                                        sum = sum.wrapping_add(s);
                                        out.push(b);
                                    }
                                    sum
                                })
                            })
                            .collect();
                        // Every origin thread has exited once joined.
                        ts.into_iter()
                            .map(|t| t.join().expect("origin thread panicked"))
                            .fold(0u64, u64::wrapping_add)
                    });
                    for out in handed.iter_mut() {
                        for b in out.drain(..) {
                            // SAFETY: allocated from `h` by an origin thread that has exited;
                            // each block is freed once.
                            sum = sum.wrapping_add(unsafe { b.read_and_free(h) });
                        }
                    }
                    sum
                })
            });
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    bench_scale_warm,
    bench_scale_new,
    bench_remote,
    bench_origin_exits
);
criterion_main!(benches);
