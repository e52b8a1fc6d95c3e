//! The borrow checker enforces the arena's lifetime rules: allocations cannot outlive their
//! scope, arena or bytes; a parent scope cannot allocate while a child lives; `reset` and
//! `scope` cannot run while an allocation is alive.

#[test]
#[cfg_attr(miri, ignore = "trybuild runs rustc, which Miri cannot")]
fn arena_misuse_does_not_compile() {
    trybuild::TestCases::new().compile_fail("tests/ui/arena_*.rs");
}
