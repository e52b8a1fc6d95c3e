//! Per-system breakdown of the frame (`src/frame`) on ludus, on hecs and on the hand-written
//! tables (`raw`, the limit): each system timed alone with the thread-CPU clock, the
//! contenders interleaved round by round (the order rotating) after a warm-up of 400 frames
//! (the churn has scrambled the pools' dense order by then). Prints a markdown table of
//! medians per frame.
//!
//! `cargo run --release -p ludus-peers --example frame_breakdown [rounds]`

use std::time::Duration;

use ludus_peers::clock::thread_cpu_now;
use ludus_peers::frame::{hecs, ludus, raw};
use ludus_peers::Workload;

const SYSTEMS: [&str; 4] = ["movement", "spin", "decay", "structural step"];
const FRAMES_PER_SAMPLE: usize = 20;

macro_rules! sample {
    ($t:expr, $times:expr) => {{
        let mut spent = [Duration::ZERO; 4];
        for _ in 0..FRAMES_PER_SAMPLE {
            let s = thread_cpu_now();
            $t.movement();
            let a = thread_cpu_now();
            $t.spin();
            let b = thread_cpu_now();
            $t.decay();
            let c = thread_cpu_now();
            $t.structural();
            let d = thread_cpu_now();
            spent[0] += a - s;
            spent[1] += b - a;
            spent[2] += c - b;
            spent[3] += d - c;
        }
        for k in 0..4 {
            $times[k].push(spent[k].as_secs_f64() * 1e6 / FRAMES_PER_SAMPLE as f64);
        }
    }};
}

/// Per system, the µs per frame of each sample.
type Samples = Vec<Vec<f64>>;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .map_or(31, |s| s.parse().expect("rounds"));
    let mut l = ludus::Frame::setup();
    let mut h = hecs::Frame::setup();
    let mut r = raw::Frame::setup();
    for _ in 0..std::env::var("WARM").map_or(400, |v| v.parse().unwrap()) {
        l.run();
        h.run();
        r.run();
    }
    let (mut lt, mut ht, mut rt): (Samples, Samples, Samples) =
        (vec![vec![]; 4], vec![vec![]; 4], vec![vec![]; 4]);
    for round in 0..rounds {
        match round % 3 {
            0 => {
                sample!(l, lt);
                sample!(h, ht);
                sample!(r, rt);
            }
            1 => {
                sample!(h, ht);
                sample!(r, rt);
                sample!(l, lt);
            }
            _ => {
                sample!(r, rt);
                sample!(l, lt);
                sample!(h, ht);
            }
        }
    }
    println!(
        "| system | ludus µs/frame | hecs µs/frame | raw µs/frame | ludus ÷ hecs | ludus ÷ raw |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    let (mut lsum, mut hsum, mut rsum) = (0.0, 0.0, 0.0);
    for k in 0..4 {
        let (a, b, c) = (
            median(lt[k].clone()),
            median(ht[k].clone()),
            median(rt[k].clone()),
        );
        lsum += a;
        hsum += b;
        rsum += c;
        println!(
            "| {} | {a:.1} | {b:.1} | {c:.1} | {:.2}× | {:.2}× |",
            SYSTEMS[k],
            a / b,
            a / c
        );
    }
    println!(
        "| sum of medians | {lsum:.1} | {hsum:.1} | {rsum:.1} | {:.2}× | {:.2}× |",
        lsum / hsum,
        lsum / rsum
    );
}
