//! Slot generations: start at 1, advance on release, retire at the terminal value. Never wrap.

/// The first generation of every slot. Generation 0 is reserved for "invalid".
pub const FIRST_GENERATION: u32 = 1;

/// The last usable generation. A slot released while at this generation is retired for good
/// (it still counts against its registry's capacity).
pub const TERMINAL_GENERATION: u32 = u32::MAX;

/// What releasing a slot at `generation` leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GenerationStep {
    /// The slot may be reused with this (strictly larger) generation.
    Reuse(u32),
    /// The slot reached [`TERMINAL_GENERATION`] and is retired permanently.
    Retire,
}

/// The step after releasing a slot whose current generation is `generation`.
///
/// # Examples
/// ```
/// use ludus::identity::{next_generation, GenerationStep, TERMINAL_GENERATION};
/// assert_eq!(next_generation(1), GenerationStep::Reuse(2));
/// assert_eq!(next_generation(TERMINAL_GENERATION), GenerationStep::Retire);
/// ```
#[inline(always)]
pub const fn next_generation(generation: u32) -> GenerationStep {
    debug_assert!(generation >= FIRST_GENERATION);
    if generation == TERMINAL_GENERATION {
        GenerationStep::Retire
    } else {
        GenerationStep::Reuse(generation + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advances_then_retires_without_wrapping() {
        assert_eq!(next_generation(FIRST_GENERATION), GenerationStep::Reuse(2));
        assert_eq!(
            next_generation(TERMINAL_GENERATION - 1),
            GenerationStep::Reuse(u32::MAX)
        );
        assert_eq!(next_generation(TERMINAL_GENERATION), GenerationStep::Retire);
    }
}
