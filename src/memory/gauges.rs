//! Gauges export: every process domain's figures and validity as one JSON document.
//!
//! Off the hot path: it allocates a `String` and reads counters with relaxed loads, so the
//! figures are concurrent samples unless the process is quiescent.

use core::fmt::Write;

use super::domain::AllocationDomain;
use super::usage::CounterMode;

/// Appends one domain's JSON object to `out`. Names are `[A-Za-z0-9_.:/-]`, so no escaping.
pub fn write_domain_json(out: &mut String, d: &AllocationDomain) {
    let u = d.usage();
    // Writing to a `String` cannot fail.
    let _ = write!(
        out,
        "{{\"name\":\"{}\",\"tag\":{},\"backend\":\"{}\",\"live_bytes\":{},\"live_blocks\":{},\
         \"high_water_bytes\":{},\"allocations\":{},\"frees\":{},\"allocated_bytes\":{},\
         \"freed_bytes\":{},\"reallocations\":{},\"failures\":{},\"valid\":{},\
         \"counter_mode\":\"{}\"}}",
        d.name(),
        d.tag(),
        d.backend().name(),
        u.live_bytes,
        u.live_blocks,
        u.high_water_bytes,
        u.allocations,
        u.frees,
        u.allocated_bytes,
        u.freed_bytes,
        u.reallocations,
        u.failures,
        u.valid,
        match u.mode {
            CounterMode::Sharded => "sharded",
            CounterMode::Exact => "exact",
        }
    );
}

/// JSON for a list of domains: `{"domains":[{...},...]}`.
pub fn domains_json<'a>(domains: impl IntoIterator<Item = &'a AllocationDomain>) -> String {
    let mut out = String::from("{\"domains\":[");
    for (i, d) in domains.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_domain_json(&mut out, d);
    }
    out.push_str("]}");
    out
}

/// A snapshot of every process domain (core first) as JSON, for profilers.
///
/// # Examples
/// ```
/// let json = ludus::memory::gauges_json();
/// assert!(json.starts_with("{\"domains\":[{\"name\":\"core\""));
/// ```
#[cfg(not(loom))]
pub fn gauges_json() -> String {
    domains_json(AllocationDomain::all())
}
