//! The borrow-checker rules of [`LinearArena`] and [`ScratchScope`], each proven by a
//! `compile_fail` doctest. Doc-only: this module exists under `cfg(doctest)` alone.
//!
//! Allocations made through `&arena` borrow the arena, and the arena borrows its bytes; `reset`
//! and `scope` take `&mut self`; a scope exists only inside its closure, under a higher-ranked,
//! invariant brand lifetime; a nested scope borrows its parent mutably. Hence the rules below.
//! Each `compile_fail` snippet is followed by its legal counterpart: the same program without
//! the line marked `// error` (for rule 4, with `*` added on that line), which must compile, so
//! the failure cannot come from anything else (a typo, a renamed method).
//!
//! [`LinearArena`]: super::LinearArena
//! [`ScratchScope`]: super::ScratchScope
//!
//! # 1. Neither the arena nor its allocations outlive the borrowed bytes
//!
//! ```compile_fail,E0597
//! // Must not compile: `x` borrows `arena`, which borrows `bytes`, and both die with the block.
//! use ludus::memory::LinearArena;
//! let x;
//! {
//!     let mut bytes = [0u8; 64];
//!     let arena = LinearArena::new(&mut bytes);
//!     x = arena.try_alloc_pod(1u64).unwrap();
//!     *x += 1;
//! }
//! *x += 1; // error[E0597]: `bytes` (and `arena`) does not live long enough
//! ```
//! ```
//! use ludus::memory::LinearArena;
//! let x;
//! {
//!     let mut bytes = [0u8; 64];
//!     let arena = LinearArena::new(&mut bytes);
//!     x = arena.try_alloc_pod(1u64).unwrap();
//!     *x += 1;
//! }
//! ```
//!
//! # 2. `reset` cannot run while an allocation is alive
//!
//! ```compile_fail,E0502
//! // Must not compile: `reset` takes `&mut arena` while `x` still borrows it (`x` would dangle).
//! use ludus::memory::LinearArena;
//! let mut bytes = [0u8; 64];
//! let mut arena = LinearArena::new(&mut bytes);
//! let x = arena.try_alloc_pod(1u64).unwrap();
//! *x += 1;
//! arena.reset();
//! *x += 1; // error[E0502]: cannot borrow `arena` as mutable because it is also borrowed
//! ```
//! ```
//! use ludus::memory::LinearArena;
//! let mut bytes = [0u8; 64];
//! let mut arena = LinearArena::new(&mut bytes);
//! let x = arena.try_alloc_pod(1u64).unwrap();
//! *x += 1;
//! arena.reset();
//! ```
//!
//! # 3. A scope cannot open while an arena-level allocation is alive
//!
//! `scope` borrows the arena mutably, so the arena itself cannot allocate into the region the
//! scope will rewind; the price is that no arena-level allocation may be alive across it.
//!
//! ```compile_fail,E0502
//! // Must not compile: `scope` takes `&mut arena` while `x` still borrows it.
//! use ludus::memory::LinearArena;
//! let mut bytes = [0u8; 64];
//! let mut arena = LinearArena::new(&mut bytes);
//! let x = arena.try_alloc_pod(1u64).unwrap();
//! *x += 1;
//! arena.scope(|s| {
//!     s.try_alloc_pod(2u64).unwrap();
//! });
//! *x += 1; // error[E0502]: cannot borrow `arena` as mutable because it is also borrowed
//! ```
//! ```
//! use ludus::memory::LinearArena;
//! let mut bytes = [0u8; 64];
//! let mut arena = LinearArena::new(&mut bytes);
//! let x = arena.try_alloc_pod(1u64).unwrap();
//! *x += 1;
//! arena.scope(|s| {
//!     s.try_alloc_pod(2u64).unwrap();
//! });
//! ```
//!
//! # 4. An allocation cannot be returned out of its scope's closure
//!
//! rustc gives this error no code, so the snippet is a plain `compile_fail`; the counterpart
//! (returning a copy, `*`) shows that nothing else in it fails.
//!
//! ```compile_fail
//! // Must not compile: the closure returns `&'s mut u32`, but the brand `'s` ends with it.
//! use ludus::memory::LinearArena;
//! let mut bytes = [0u8; 64];
//! let mut arena = LinearArena::new(&mut bytes);
//! let leaked = arena.scope(|s| s.try_alloc_pod(1u32).unwrap()); // error: may not live long enough
//! *leaked += 1;
//! ```
//! ```
//! use ludus::memory::LinearArena;
//! let mut bytes = [0u8; 64];
//! let mut arena = LinearArena::new(&mut bytes);
//! let mut leaked = arena.scope(|s| *s.try_alloc_pod(1u32).unwrap());
//! leaked += 1;
//! ```
//!
//! # 5. An inner scope's allocation cannot be stored in a variable that outlives the scope
//!
//! ```compile_fail,E0521
//! // Must not compile: `keep` outlives the inner closure, and `tmp` carries its brand.
//! use ludus::memory::LinearArena;
//! let mut bytes = [0u8; 64];
//! let mut arena = LinearArena::new(&mut bytes);
//! arena.scope(|outer| {
//!     let mut keep: Option<&mut u32> = None;
//!     outer.scope(|inner| {
//!         let tmp = inner.try_alloc_pod(1u32).unwrap();
//!         *tmp += 1;
//!         keep = Some(tmp); // error[E0521]: borrowed data escapes outside of closure
//!     });
//!     if let Some(k) = keep {
//!         *k += 1;
//!     }
//! });
//! ```
//! ```
//! use ludus::memory::LinearArena;
//! let mut bytes = [0u8; 64];
//! let mut arena = LinearArena::new(&mut bytes);
//! arena.scope(|outer| {
//!     let mut keep: Option<&mut u32> = None;
//!     outer.scope(|inner| {
//!         let tmp = inner.try_alloc_pod(1u32).unwrap();
//!         *tmp += 1;
//!     });
//!     if let Some(k) = keep {
//!         *k += 1;
//!     }
//! });
//! ```
//!
//! # 6. While a nested scope lives, its parent cannot allocate
//!
//! Only the innermost live scope allocates; the parent's earlier allocations stay usable.
//!
//! ```compile_fail,E0502
//! // Must not compile: `outer` is mutably borrowed by `outer.scope` while the closure uses it.
//! use ludus::memory::LinearArena;
//! let mut bytes = [0u8; 64];
//! let mut arena = LinearArena::new(&mut bytes);
//! arena.scope(|outer| {
//!     let a = outer.try_alloc_pod(1u32).unwrap();
//!     outer.scope(|inner| {
//!         let b = inner.try_alloc_pod(2u32).unwrap();
//!         *a += *b;
//!         *outer.try_alloc_pod(3u32).unwrap() += *b; // error[E0502]: `*outer` borrowed mutably
//!     });
//! });
//! ```
//! ```
//! use ludus::memory::LinearArena;
//! let mut bytes = [0u8; 64];
//! let mut arena = LinearArena::new(&mut bytes);
//! arena.scope(|outer| {
//!     let a = outer.try_alloc_pod(1u32).unwrap();
//!     outer.scope(|inner| {
//!         let b = inner.try_alloc_pod(2u32).unwrap();
//!         *a += *b;
//!     });
//! });
//! ```
//!
//! # 7. Two scopes cannot be swapped
//!
//! ```compile_fail,E0521
//! // Must not compile: brands are invariant, so `s1` and `s2` have unrelated types; a swap would
//! // make each arena's rewind run against the other's cursor while its allocations are in use.
//! use ludus::memory::LinearArena;
//! let (mut b1, mut b2) = ([0u8; 64], [0u8; 64]);
//! let (mut a1, mut a2) = (LinearArena::new(&mut b1), LinearArena::new(&mut b2));
//! a1.scope(|s1| {
//!     let x = s1.try_alloc_pod(1u32).unwrap();
//!     a2.scope(|s2| {
//!         let y = s2.try_alloc_pod(2u32).unwrap();
//!         *x += *y;
//!         std::mem::swap(s1, s2); // error[E0521]: borrowed data escapes outside of closure
//!     });
//! });
//! ```
//! ```
//! use ludus::memory::LinearArena;
//! let (mut b1, mut b2) = ([0u8; 64], [0u8; 64]);
//! let (mut a1, mut a2) = (LinearArena::new(&mut b1), LinearArena::new(&mut b2));
//! a1.scope(|s1| {
//!     let x = s1.try_alloc_pod(1u32).unwrap();
//!     a2.scope(|s2| {
//!         let y = s2.try_alloc_pod(2u32).unwrap();
//!         *x += *y;
//!     });
//! });
//! ```
