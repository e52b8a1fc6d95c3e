//! Owner-token sources: exhaustion under contention issues each token exactly once (strictly
//! increasing per thread, exhausted for good), and the sources' edges (empty, clamped).

use ludus::identity::{IdentityExhausted, TokenSource};

#[test]
fn token_exhaustion_under_contention_issues_each_token_once() {
    let (threads, per, left) = if cfg!(miri) {
        (3, 4, 5u64)
    } else {
        (8, 200, 1000u64)
    };
    let s = TokenSource::starting_after(u64::MAX - left, u64::MAX);
    let results: Vec<Vec<Result<u64, IdentityExhausted>>> = std::thread::scope(|scope| {
        let hs: Vec<_> = (0..threads)
            .map(|_| scope.spawn(|| (0..per).map(|_| s.issue()).collect::<Vec<_>>()))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut ok = Vec::new();
    for r in &results {
        // Per-thread: strictly increasing tokens, and once exhausted, exhausted for good.
        let mut seen_err = false;
        let mut last = 0;
        for x in r {
            match x {
                Ok(t) => {
                    assert!(!seen_err, "token after exhaustion");
                    assert!(*t > last);
                    last = *t;
                    ok.push(*t);
                }
                Err(IdentityExhausted) => seen_err = true,
            }
        }
    }
    ok.sort_unstable();
    let want: Vec<u64> = (u64::MAX - left + 1..=u64::MAX).collect();
    assert_eq!(ok, want);
    assert_eq!(s.issue(), Err(IdentityExhausted));
    assert_eq!(s.last_issued(), u64::MAX);
}

#[test]
#[cfg_attr(
    miri,
    ignore = "safe code only (Miri runs the formatting, handle and token tests)"
)]
fn token_source_edges() {
    assert_eq!(
        TokenSource::starting_after(0, 0).issue(),
        Err(IdentityExhausted)
    );
    let s = TokenSource::starting_after(u64::MAX, u64::MAX);
    assert_eq!(s.issue(), Err(IdentityExhausted));
    let s = TokenSource::starting_after(5, 6);
    assert_eq!(s.issue(), Ok(6));
    assert_eq!(s.issue(), Err(IdentityExhausted));
    assert_eq!(s.last_issued(), 6);
    // last > limit clamps: never issues anything, never reports a value above the limit.
    let s = TokenSource::starting_after(100, 3);
    assert_eq!(s.issue(), Err(IdentityExhausted));
    assert_eq!(s.last_issued(), 3);
}
