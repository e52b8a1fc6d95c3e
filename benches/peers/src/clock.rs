//! A criterion [`Measurement`] of the calling thread's CPU time, for single-threaded workloads on
//! a shared, oversubscribed machine: time the thread spends descheduled is not counted, so
//! contenders measured minutes apart under different load stay comparable.
//!
//! Opt in with `PEERS_CLOCK=thread-cpu` (see `benches/peers.rs`); the default stays wall time.
//! Caches and memory bandwidth are still shared, so it removes the largest noise source, not all.

use std::time::Duration;

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::Throughput;

/// CPU time consumed by the calling thread (`CLOCK_THREAD_CPUTIME_ID`).
#[derive(Clone, Copy, Debug, Default)]
pub struct ThreadCpuTime;

/// The calling thread's CPU time so far.
///
/// # Panics
/// If the OS refuses `CLOCK_THREAD_CPUTIME_ID` (not on Linux, where the bench runs).
pub fn thread_cpu_now() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable `timespec` for the duration of the call, and
    // `CLOCK_THREAD_CPUTIME_ID` is a clock id that `clock_gettime` accepts.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

impl Measurement for ThreadCpuTime {
    type Intermediate = Duration;
    type Value = Duration;

    fn start(&self) -> Duration {
        thread_cpu_now()
    }
    fn end(&self, start: Duration) -> Duration {
        thread_cpu_now().saturating_sub(start)
    }
    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }
    fn zero(&self) -> Duration {
        Duration::ZERO
    }
    fn to_f64(&self, value: &Duration) -> f64 {
        value.as_nanos() as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &Nanos
    }
}

/// Formats nanosecond values like criterion's wall-time formatter.
struct Nanos;

impl ValueFormatter for Nanos {
    fn scale_values(&self, typical_ns: f64, values: &mut [f64]) -> &'static str {
        let (factor, unit) = match typical_ns {
            t if t < 1e3 => (1.0, "ns"),
            t if t < 1e6 => (1e-3, "µs"),
            t if t < 1e9 => (1e-6, "ms"),
            _ => (1e-9, "s"),
        };
        values.iter_mut().for_each(|v| *v *= factor);
        unit
    }

    fn scale_throughputs(
        &self,
        _typical: f64,
        throughput: &Throughput,
        values: &mut [f64],
    ) -> &'static str {
        let per_iteration = match *throughput {
            Throughput::Bits(n) | Throughput::Bytes(n) | Throughput::BytesDecimal(n) => n,
            Throughput::Elements(n) | Throughput::ElementsAndBytes { elements: n, .. } => n,
        } as f64;
        values
            .iter_mut()
            .for_each(|v| *v = per_iteration * 1e9 / *v);
        "units/s"
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_cpu_time_advances_with_work_and_not_with_sleep() {
        let t0 = thread_cpu_now();
        std::thread::sleep(Duration::from_millis(30));
        let slept = thread_cpu_now() - t0;
        assert!(
            slept < Duration::from_millis(15),
            "sleep counted as CPU: {slept:?}"
        );
        let t1 = thread_cpu_now();
        let mut x = 0u64;
        while thread_cpu_now() - t1 < Duration::from_millis(5) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        assert!(x > 0);
    }
}
