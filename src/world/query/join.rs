//! Joins over 2..=6 [columns](crate::world::query::column): required pools, optional ones and exclusions.
//!
//! A join picks one of three plans when it is built (costs in `docs/world.md`):
//!
//! - **Aligned**: every column is required and all pools share a layout stamp (equal keys:
//!   after spawning them together, see `ComponentPool`). The join zips the dense slices: row
//!   `i` of every pool is the same entity, nothing is probed.
//! - **Bits**: the membership bitsets of the required pools are ANDed a word (64 slots) at a
//!   time, so entities missing from any of them cost nothing. Each match finds its dense index
//!   in a slot-sorted pool by counting bits (no memory access beyond the word), in another pool
//!   through its diagonal or sparse entry; either way the key stored there is compared.
//! - **Driver**: the smallest required pool is walked in dense order and every other pool is
//!   probed by key. Chosen when that pool is small beside the slot range the bits would scan.
//! - **Runs**: every column is required and all pools were clustered together and unchanged
//!   since ([`cluster`](fn@crate::world::cluster)): each pool holds its entities in runs of one
//!   signature, and the join zips the runs whose signature holds every column (an archetype
//!   table's walk). Checked when built: each column's runs disjoint and within its rows, and
//!   every visited run present with the same length in every column.
//!
//! Order: slot order under the bits plan, the dense order of the first pool under the aligned
//! plan, the smallest pool's dense order under the driver plan, ascending signature (as the
//! last `cluster` recorded it) then slot under the runs plan; deterministic for a given
//! sequence of operations either way. No plan trusts the bitsets or the order facts for memory
//! safety: every yielded index is confirmed against the key stored at it (the whole key, or
//! for a world's pools, whose entries are all live, its slot) or is a rank (distinct bits of a
//! word give distinct ranks), and a join never mixes the two ways (a join partly consumed with
//! `next` keeps its way in `fold`).
//!
//! The plans are written once, generic over `Columns`: a tuple of columns seen by
//! position, with the unsafe fetches of one entity's items (`column.rs`, where a small macro
//! implements it for each tuple). Their per-column steps run through `each`, unrolled in
//! the source.

use core::marker::PhantomData;

use crate::identity::OwnerToken;
use crate::world::query::column::sealed::Columns;
use crate::world::query::column::{any_required, first_required, IntoColumn, Role, MAX_COLUMNS};
use crate::world::raw::dense::{Index, Probe, Run, WORD_BITS};
use crate::world::raw::keys::EntityId;
use crate::world::raw::keys::EntityKey;

/// Whether `count_ones` is one instruction in code built for the target as configured (then
/// slot-sorted pools are always probed by rank; on x86 without it, only inside
/// [`fold`](Iterator::fold), which checks for the instruction at run time).
const NATIVE_RANK: bool =
    !cfg!(any(target_arch = "x86", target_arch = "x86_64")) || cfg!(target_feature = "popcnt");

/// Whether this CPU has a population-count instruction (x86: checked once, cached by std).
#[inline]
fn has_popcnt() -> bool {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        std::is_x86_feature_detected!("popcnt")
    }
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
    {
        true
    }
}

/// The plan a join chose (module docs of `join` and `docs/world.md`), for profiling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinPlan {
    /// Every pool shares a layout stamp: a zip of the dense slices.
    Aligned,
    /// Membership bitsets ANDed a word at a time.
    Bits,
    /// The smallest required pool walked in dense order, the others probed.
    Driver,
    /// Pools clustered together ([`cluster`](fn@crate::world::cluster)): the runs of the signatures
    /// holding every column, each a zip of slices.
    Runs,
}

/// How a join walks its pools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    /// Zip of dense rows `next..end`.
    Aligned,
    /// Membership words `next..end`.
    Bits,
    /// Dense rows `next..end` of the given (required) column.
    Driver(usize),
    /// Runs of clustered pools: rows `next..end` of the current run, which starts at
    /// `ranks[c]` in column `c`; `word` is the next run of column 0 to look at.
    Runs,
}

/// A join iterator over a tuple of columns, yielding `(entity, (items...))` for every entity
/// held by all required columns and by no excluded one (see the module docs for the order).
#[derive(Debug)]
pub struct Join<C> {
    columns: C,
    plan: Plan,
    owner: OwnerToken,
    /// Every pool is a world's (see `bit_item`).
    live: bool,
    /// Every column is required, its pool a world's and slot-sorted (see `fold_ranked`).
    ranked: bool,
    /// Some pool is slot-sorted (ranks can help).
    sorted: bool,
    /// Runs: the cluster bits of the columns (a run is visited when its signature holds
    /// them all).
    need: u32,
    /// Aligned, driver, runs: the next row. Bits: the next word.
    next: usize,
    /// Aligned, driver: rows. Bits: words.
    end: usize,
    /// An upper bound of the items left (the smallest required pool).
    bound: usize,
    /// Bits: the unvisited matches of the current word, its index, each column's membership
    /// word there, and each column's members in the words before it.
    matches: u64,
    word: usize,
    words: [u64; MAX_COLUMNS],
    ranks: [usize; MAX_COLUMNS],
    /// Driver: each column's probe order, chosen from a sample of the driver's keys.
    probes: [Probe; MAX_COLUMNS],
}

/// Joins a tuple of 2..=6 columns: `&pool`, `&mut pool`, [`opt`](crate::world::query::column::opt)`(&pool)`,
/// `opt(&mut pool)`, [`without`](crate::world::query::column::without)`(&pool)`; at least one must be required.
///
/// # Examples
/// ```
/// use ludus::world::{join, ComponentPool, EntityRegistry};
/// let mut reg = EntityRegistry::try_with_capacity(4)?;
/// let mut pos = ComponentPool::<f32>::try_new(&mut reg)?;
/// let mut vel = ComponentPool::<f32>::try_new(&mut reg)?;
/// for i in 0..3 {
///     let e = reg.try_create()?;
///     pos.insert(&mut reg, e, 0.0)?;
///     if i != 1 { vel.insert(&mut reg, e, 1.5)?; }
/// }
/// for (_e, (p, v)) in join((&mut pos, &vel)) {
///     *p += *v;
/// }
/// assert_eq!(pos.values(), &[1.5, 0.0, 1.5]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn join<Q: IntoJoin>(query: Q) -> Join<Q::Columns> {
    query.into_join()
}

/// A tuple of columns that can be joined.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be joined",
    note = "`join` takes a tuple of 2 to 6 columns — `&pool`, `&mut pool`, `opt(&pool)`, `opt(&mut pool)`, `without(&pool)` — e.g. `join((&mut w.position, &w.velocity))`; for one pool iterate it directly"
)]
pub trait IntoJoin {
    /// The tuple of columns.
    type Columns;
    /// Builds the join.
    fn into_join(self) -> Join<Self::Columns>;
}

/// `IntoJoin` for a tuple of 2 to 6 things that make columns.
macro_rules! tuple_into_join {
    ($($c:ident $i:tt),+) => {
        impl<$($c: IntoColumn),+> IntoJoin for ($($c,)+) {
            type Columns = ($($c::Column,)+);
            #[inline]
            fn into_join(self) -> Join<Self::Columns> {
                Join::build(($(self.$i.into_column(),)+))
            }
        }
    };
}

tuple_into_join!(C0 0, C1 1);
tuple_into_join!(C0 0, C1 1, C2 2);
tuple_into_join!(C0 0, C1 1, C2 2, C3 3);
tuple_into_join!(C0 0, C1 1, C2 2, C3 3, C4 4);
tuple_into_join!(C0 0, C1 1, C2 2, C3 3, C4 4, C5 5);

/// Dense index of `slot`'s entry in a column: by rank when the pool is slot-sorted (`word`
/// is its membership word, `rank` its members before it, `low` the bits below the slot's),
/// else through the diagonal or sparse entry. Any index or none when it holds no entry.
#[inline(always)]
fn dense_at<const RANK: bool>(
    ix: &Index<'_>,
    slot: usize,
    word: u64,
    rank: usize,
    low: u64,
) -> usize {
    if RANK && ix.order.sorted {
        rank + (word & low).count_ones() as usize
    } else {
        ix.slot_hint(slot)
    }
}

/// The run of signature `sig` in a clustered column.
#[inline]
fn run_of(ix: &Index<'_>, sig: u32) -> Option<Run> {
    ix.runs.iter().find(|r| r.sig == sig).copied()
}

/// Whether a column's runs are disjoint, ascending and within its rows, with distinct
/// signatures (a clustered pool's are, by construction).
fn runs_disjoint(ix: &Index<'_>) -> bool {
    let (mut end, mut seen) = (0usize, 0u64);
    for r in ix.runs {
        let bit = 1u64.checked_shl(r.sig).unwrap_or(0);
        if (r.start as usize) < end || bit == 0 || seen & bit != 0 {
            return false;
        }
        seen |= bit;
        end = r.start as usize + r.len as usize;
    }
    end <= ix.keys.len()
}

/// The membership word `w` of a column (0 past its bitset).
#[inline(always)]
fn word_of(ix: &Index<'_>, w: usize) -> u64 {
    ix.bits.get(w).copied().unwrap_or(0)
}

/// The membership words a bits plan scans (the pool's whole slot range).
#[inline(always)]
fn bits_words(ix: &Index<'_>) -> usize {
    ix.bits.len()
}

// `each` has a call, `next` and `fold` a driver arm, per column.
const _: () = assert!(MAX_COLUMNS == 6);

/// A plan's work for one column, which [`each`] applies to every column.
trait Step {
    /// The work for column `k`; false stops the walk.
    fn column(&mut self, k: usize) -> bool;
}

/// Applies `step` to the columns `0..C::LEN` in order until it returns false; whether it
/// never did. Unrolled in the source: one call per column, with `k` a constant, so that a
/// hot per-column step reaches the optimizer as the straight-line code a macro would write
/// (`Step::column` is `#[inline(always)]`, which a closure cannot be: LLVM declined to
/// inline the driver's lookups as a closure). A loop over `0..C::LEN` is unrolled too, but
/// late, after the passes that arrange such code: a bits-plan join over `(&mut a, opt(&b),
/// without(&c))` counted 15% more instructions with these steps as loops.
#[inline(always)]
fn each<C: Columns, S: Step>(step: &mut S) -> bool {
    (C::LEN < 1 || step.column(0))
        && (C::LEN < 2 || step.column(1))
        && (C::LEN < 3 || step.column(2))
        && (C::LEN < 4 || step.column(3))
        && (C::LEN < 5 || step.column(4))
        && (C::LEN < 6 || step.column(5))
}

/// The driver plan's lookups of `key`, the driver's row `i`, in every column: `d[k]` is `i`
/// in the driver, a probe's find in the others (`usize::MAX` for an optional column without
/// `key`, 0 for an excluded one). Stops where a required column lacks `key` or an excluded
/// one holds it. `PASS` 0 looks up every column, 1 all but the optional ones, 2 those only:
/// by passes 1 then 2, a row that a required or excluded column rejects costs no optional
/// lookup.
struct DriverRows<'a, C, I, const PASS: u8> {
    /// `index(k)`: column `k`'s lookup structures.
    index: I,
    probes: &'a [Probe; MAX_COLUMNS],
    driver: usize,
    key: EntityKey,
    i: usize,
    d: [usize; MAX_COLUMNS],
    columns: PhantomData<fn() -> C>,
}

impl<'p, C: Columns, I: Fn(usize) -> Index<'p>, const PASS: u8> Step
    for DriverRows<'_, C, I, PASS>
{
    #[inline(always)]
    fn column(&mut self, k: usize) -> bool {
        if PASS != 0 && matches!(C::ROLES[k], Role::Optional) != (PASS == 2) {
            return true;
        }
        let (ix, key, i, probe) = ((self.index)(k), self.key, self.i, self.probes[k]);
        self.d[k] = match C::ROLES[k] {
            Role::Required if k == self.driver => i,
            Role::Required => match ix.dense_of_key_by(key, i, probe) {
                Some(at) => at,
                None => return false,
            },
            Role::Optional => ix.dense_of_key_by(key, i, probe).unwrap_or(usize::MAX),
            Role::Excluded => match ix.dense_of_key_by(key, i, probe) {
                Some(_) => return false,
                None => 0,
            },
        };
        true
    }
}

/// The bits plan's index of `slot` in every required column (`d[k]`): by rank in a
/// slot-sorted pool (`RANK`), else through the diagonal or sparse entry and confirmed by the
/// slot of the key there (with `LIVE`, world pools, a rank is not confirmed at all) and,
/// without `LIVE`, by the whole key: `lead` is the first key read. Stops at a column whose
/// index does not hold the slot.
struct RequiredAt<'a, C, const RANK: bool, const LIVE: bool> {
    columns: &'a C,
    words: &'a [u64; MAX_COLUMNS],
    ranks: &'a [usize; MAX_COLUMNS],
    slot: usize,
    /// The bits of the slot's word below its own.
    low: u64,
    lead: Option<EntityKey>,
    d: [usize; MAX_COLUMNS],
}

impl<C: Columns, const RANK: bool, const LIVE: bool> Step for RequiredAt<'_, C, RANK, LIVE> {
    #[inline(always)]
    fn column(&mut self, k: usize) -> bool {
        if !C::required(k) {
            return true;
        }
        let ix = self.columns.index(k);
        let at = dense_at::<RANK>(&ix, self.slot, self.words[k], self.ranks[k], self.low);
        if LIVE && RANK && ix.order.sorted {
            if at >= ix.keys.len() {
                return false;
            }
        } else {
            let Some(&key) = ix.keys.get(at) else {
                return false;
            };
            if key.slot() as usize != self.slot || (!LIVE && self.lead.is_some_and(|l| l != key)) {
                return false;
            }
            self.lead = Some(key);
        }
        self.d[k] = at;
        true
    }
}

/// The bits plan's index of `key` (slot `slot`) in every optional or excluded column whose
/// membership word holds the slot (`d[k]`, left as is where it does not), found as in
/// [`RequiredAt`] and confirmed by the key there (with `LIVE` its slot, not at all for a
/// rank). Stops at an excluded column that holds it.
struct OthersAt<'a, C, const RANK: bool, const LIVE: bool> {
    columns: &'a C,
    words: &'a [u64; MAX_COLUMNS],
    ranks: &'a [usize; MAX_COLUMNS],
    slot: usize,
    /// The slot's bit in its word.
    b: u32,
    low: u64,
    key: EntityKey,
    d: [usize; MAX_COLUMNS],
}

impl<C: Columns, const RANK: bool, const LIVE: bool> Step for OthersAt<'_, C, RANK, LIVE> {
    #[inline(always)]
    fn column(&mut self, k: usize) -> bool {
        if C::required(k) || (self.words[k] >> self.b) & 1 == 0 {
            return true;
        }
        let ix = self.columns.index(k);
        let at = dense_at::<RANK>(&ix, self.slot, self.words[k], self.ranks[k], self.low);
        let holds = if LIVE && RANK && ix.order.sorted {
            at < ix.keys.len()
        } else if LIVE {
            ix.keys
                .get(at)
                .is_some_and(|k| k.slot() as usize == self.slot)
        } else {
            ix.keys.get(at) == Some(&self.key)
        };
        if holds {
            if matches!(C::ROLES[k], Role::Excluded) {
                return false;
            }
            self.d[k] = at;
        }
        true
    }
}

/// The ranked plan's move to membership word `w`: each column's ranks gain the members of
/// the word left (`counts`), its word and count are loaded, and `m` ANDs the words.
struct RankWord<'a, C> {
    columns: &'a C,
    w: usize,
    words: &'a mut [u64; MAX_COLUMNS],
    ranks: &'a mut [usize; MAX_COLUMNS],
    counts: &'a mut [usize; MAX_COLUMNS],
    m: u64,
}

impl<C: Columns> Step for RankWord<'_, C> {
    #[inline(always)]
    fn column(&mut self, k: usize) -> bool {
        self.ranks[k] += self.counts[k];
        self.words[k] = word_of(&self.columns.index(k), self.w);
        self.counts[k] = self.words[k].count_ones() as usize;
        self.m &= self.words[k];
        true
    }
}

/// Whether every column's members up to the end of the current word have rows
/// (`ranks + counts <= lens`).
struct RanksFit<'a> {
    ranks: &'a [usize; MAX_COLUMNS],
    counts: &'a [usize; MAX_COLUMNS],
    lens: &'a [usize; MAX_COLUMNS],
}

impl Step for RanksFit<'_> {
    #[inline(always)]
    fn column(&mut self, k: usize) -> bool {
        self.ranks[k] + self.counts[k] <= self.lens[k]
    }
}

/// The ranked plan's rows of one match: `d[k]` is `ranks[k]` plus the members of column `k`'s
/// word under `low` (`RUN`: `low` is the match's offset in a word that is one run in every
/// column).
struct RankAt<'a, const RUN: bool> {
    words: &'a [u64; MAX_COLUMNS],
    ranks: &'a [usize; MAX_COLUMNS],
    low: u64,
    d: [usize; MAX_COLUMNS],
}

impl<const RUN: bool> Step for RankAt<'_, RUN> {
    #[inline(always)]
    fn column(&mut self, k: usize) -> bool {
        self.d[k] = if RUN {
            self.ranks[k] + self.low as usize
        } else {
            self.ranks[k] + (self.words[k] & self.low).count_ones() as usize
        };
        true
    }
}

/// Whether every column's word is `m`.
struct AllWords<'a> {
    words: &'a [u64; MAX_COLUMNS],
    m: u64,
}

impl Step for AllWords<'_> {
    #[inline(always)]
    fn column(&mut self, k: usize) -> bool {
        self.words[k] == self.m
    }
}

/// What a join's build learns of its columns (after neutralizing those of another owner).
struct Facts {
    /// The owner of the first required column.
    owner: OwnerToken,
    /// A required column is another owner's (the join is empty).
    foreign: bool,
    /// Every column is required and shares one nonzero layout stamp.
    aligned: bool,
    /// Every pool is a world's.
    live: bool,
    /// Every column is required and slot-sorted.
    ranked: bool,
    /// Some non-empty pool is slot-sorted.
    sorted: bool,
    /// The length of the smallest required column (`usize::MAX` for none)...
    bound: usize,
    /// ...and its position.
    driver: usize,
    /// The fewest membership words of a required column.
    words: usize,
    /// The required columns of the join's owner.
    required: usize,
    /// Every column is a required world pool of the join's owner, clustered with the others.
    clustered: bool,
    /// The columns' cluster bits.
    need: u32,
}

impl Facts {
    /// The facts of `columns`, neutralizing the columns of another owner than the first
    /// required column's.
    fn of<C: Columns>(columns: &mut C) -> Facts {
        const {
            assert!(
                any_required(&C::ROLES),
                "a join needs at least one required column (`&pool` or `&mut pool`)"
            )
        };
        // There is a required column (checked above).
        let first = (0..C::LEN).find(|&k| C::required(k)).unwrap_or(0);
        let owner = columns.index(first).owner;
        let (clustered, need) = Self::cluster(columns, owner);
        let mut f = Facts {
            owner,
            foreign: false,
            aligned: true,
            live: true,
            ranked: true,
            sorted: false,
            bound: usize::MAX,
            driver: 0,
            words: usize::MAX,
            required: 0,
            clustered,
            need,
        };
        let mut layout = None;
        for k in 0..C::LEN {
            let ix = columns.index(k);
            f.live &= ix.live;
            f.ranked &= C::required(k) && ix.order.sorted;
            f.sorted |= ix.order.sorted && !ix.keys.is_empty();
            if ix.owner != owner {
                // Another registry's pool holds none of the join's entities.
                f.foreign |= C::required(k);
                f.aligned = false;
                columns.neutralize(k);
            } else if C::required(k) {
                f.required += 1;
                if ix.len() < f.bound {
                    f.bound = ix.len();
                    f.driver = k;
                }
                f.words = f.words.min(bits_words(&ix));
                f.aligned &= ix.layout != 0 && *layout.get_or_insert(ix.layout) == ix.layout;
            } else {
                f.aligned = false;
            }
        }
        if f.foreign {
            f.bound = 0;
        }
        f
    }

    /// Whether every column of `columns` is a required world pool of `owner`, clustered
    /// with the others, and their cluster bits.
    fn cluster<C: Columns>(columns: &C, owner: OwnerToken) -> (bool, u32) {
        let (mut clustered, mut cluster, mut need) = (true, None, 0);
        for k in 0..C::LEN {
            let ix = columns.index(k);
            // World pools only (`live`): a standalone pool's entry may be another
            // incarnation of a slot, which a run would pair by position.
            clustered &= C::required(k)
                && ix.live
                && ix.owner == owner
                && ix.cluster != 0
                && *cluster.get_or_insert(ix.cluster) == ix.cluster;
            need |= ix.cluster_bit;
        }
        (clustered, need)
    }

    /// The plan for these facts of `columns`, and its `end`.
    fn plan<C: Columns>(&self, columns: &C) -> (Plan, usize) {
        let (bound, words, required) = (self.bound, self.words, self.required);
        if bound == 0 {
            (Plan::Driver(self.driver), 0)
        } else if self.aligned {
            (Plan::Aligned, bound)
        } else if self.clustered && Join::runs_valid(columns, self.need) {
            (Plan::Runs, 0)
        } else if words.saturating_mul(required + 1) <= bound.saturating_mul(4 * required)
            && (self.sorted || Join::matches(columns, words) * 2 < bound)
        {
            // A word costs about a load and an AND per column; a probed row several
            // dependent loads and often a mispredicted branch. Without a sorted pool
            // (every match is looked up anyway) the smallest pool drives instead when
            // most of its rows match: it is then read in order, for free.
            (Plan::Bits, words)
        } else {
            (Plan::Driver(self.driver), bound)
        }
    }

    /// The driver plan's probe order for each other column, from a sample of the driver's
    /// keys; a shared column of a world pool trusts its exact sparse map where the sample
    /// finds its entries neither at the driver's rows nor on their diagonal (`Probe::Exact`:
    /// the driver, a world pool of the join's owner, holds live entities only).
    fn probes<C: Columns>(&self, columns: &C, driver: usize) -> [Probe; MAX_COLUMNS] {
        let mut probes = [Probe::Near; MAX_COLUMNS];
        let ix = columns.index(driver);
        let (keys, live_keys) = (ix.keys, ix.live && ix.owner == self.owner);
        for (k, probe) in probes.iter_mut().enumerate().take(C::LEN) {
            if k != driver {
                let ix = columns.index(k);
                *probe = match ix.probe_for(keys) {
                    Probe::Sparse
                        if C::SHARED[k] && live_keys && ix.live && ix.owner == self.owner =>
                    {
                        Probe::Exact
                    }
                    p => p,
                };
            }
        }
        probes
    }
}

impl<C: Columns> Join<C> {
    /// Chooses the plan (module docs) after checking the owners.
    pub(super) fn build(mut columns: C) -> Self {
        let facts = Facts::of(&mut columns);
        let (plan, end) = facts.plan(&columns);
        let probes = match plan {
            Plan::Driver(driver) if end > 0 => facts.probes(&columns, driver),
            _ => [Probe::Near; MAX_COLUMNS],
        };
        Join {
            columns,
            plan,
            owner: facts.owner,
            live: facts.live,
            ranked: facts.ranked && facts.live,
            sorted: facts.sorted,
            need: facts.need,
            next: 0,
            end,
            bound: facts.bound,
            matches: 0,
            word: 0,
            words: [0; MAX_COLUMNS],
            ranks: [0; MAX_COLUMNS],
            probes,
        }
    }

    /// The plan this join chose.
    pub fn plan(&self) -> JoinPlan {
        match self.plan {
            Plan::Aligned => JoinPlan::Aligned,
            Plan::Bits => JoinPlan::Bits,
            Plan::Driver(_) => JoinPlan::Driver,
            Plan::Runs => JoinPlan::Runs,
        }
    }

    /// Whether the clustered columns' runs can be zipped: each column's runs are
    /// disjoint and within its rows, and every run of column 0 whose signature holds
    /// `need` has a run of that signature and length in every column. Checked in every
    /// build (a few compares per run): the walk's memory safety rests on it, not on
    /// the stamps.
    fn runs_valid(columns: &C, need: u32) -> bool {
        if !(0..C::LEN).all(|k| runs_disjoint(&columns.index(k))) {
            return false;
        }
        let first = columns.index(0);
        first
            .runs
            .iter()
            .filter(|r| r.sig & need == need)
            .all(|run| {
                (0..C::LEN)
                    .all(|k| run_of(&columns.index(k), run.sig).map(|r| r.len) == Some(run.len))
            })
    }

    /// The slots held by every required column in words `..words` (counted when
    /// choosing a plan: about a load, an AND and a count per column and word).
    fn matches(columns: &C, words: usize) -> usize {
        (0..words)
            .map(|w| {
                let mut m = !0u64;
                for k in (0..C::LEN).filter(|&k| C::required(k)) {
                    m &= word_of(&columns.index(k), w);
                }
                m.count_ones() as usize
            })
            .sum()
    }

    // The aligned plan.

    /// The item of the entity at row `i` of every column.
    ///
    /// # Safety
    /// - The plan is aligned and `i < end`, the shortest column's length.
    /// - No `i` is passed twice.
    #[inline(always)]
    unsafe fn aligned_item(columns: &C, owner: OwnerToken, i: usize) -> (EntityId, C::Items) {
        // SAFETY: `i < end`, the shortest column's length (caller), so within the keys.
        let key = unsafe { *columns.index(0).keys.get_unchecked(i) };
        // SAFETY: 1. `i < end`, the shortest column's length (caller), and an aligned plan
        //    has required columns only;
        // 2. each `i` once (caller), and a row is one index of every column.
        let items = unsafe { columns.fetch(&[i; MAX_COLUMNS]) };
        (key.entity(owner), items)
    }

    /// The aligned plan's `next`.
    #[inline(always)]
    fn next_aligned(&mut self) -> Option<(EntityId, C::Items)> {
        if self.next >= self.end {
            return None;
        }
        let i = self.next;
        self.next += 1;
        // SAFETY: 1. `i < end` in an aligned plan; 2. each row once (`next` only grows).
        Some(unsafe { Self::aligned_item(&self.columns, self.owner, i) })
    }

    /// The rest of an aligned plan, as one walk of slices.
    #[inline(always)]
    fn fold_aligned<Acc, F>(self, acc: Acc, f: &mut F) -> Acc
    where
        F: FnMut(Acc, (EntityId, C::Items)) -> Acc,
    {
        let end = self.end;
        let start = self.next.min(end);
        let keys = self.columns.index(0).keys;
        // A stamp names equal keys, so every column is at least `end` long (`end` is the
        // shortest's length); checked all the same.
        let Some(keys) = keys.get(start..end) else {
            return acc;
        };
        // SAFETY: 1. `start + keys.len() = end`, the shortest column's length (aligned
        //    plans have required columns only);
        // 2. `next` yielded rows `..start` only, and the join fetches nothing after this
        //    (`fold` consumes it).
        let rows = unsafe { self.columns.rows(&[start; MAX_COLUMNS], keys.len()) };
        C::walk(keys, self.owner, acc, f, rows)
    }

    // The runs plan.

    /// Moves to column 0's next run from `self.word` whose signature holds `need`:
    /// each column's start in `ranks`, rows `0..end`. False when none is left.
    fn next_run(&mut self) -> bool {
        let first = self.columns.index(0);
        'runs: while let Some(&run) = first.runs.get(self.word) {
            self.word += 1;
            if run.sig & self.need != self.need {
                continue;
            }
            // Every column has a run of this signature and length (`runs_valid`);
            // checked again here, a compare per run, so the walk never rests on a
            // default start.
            let mut starts = [0usize; MAX_COLUMNS];
            for (k, start) in starts.iter_mut().enumerate().take(C::LEN) {
                match run_of(&self.columns.index(k), run.sig) {
                    Some(r) if r.len == run.len => *start = r.start as usize,
                    _ => continue 'runs,
                }
            }
            self.ranks = starts;
            self.next = 0;
            self.end = run.len as usize;
            return true;
        }
        false
    }

    /// The runs plan's `next`.
    #[inline(always)]
    fn next_runs(&mut self) -> Option<(EntityId, C::Items)> {
        loop {
            if self.next < self.end {
                let i = self.next;
                self.next += 1;
                let key = *self.columns.index(0).keys.get(self.ranks[0] + i)?;
                let d = core::array::from_fn(|k| self.ranks[k] + i);
                // SAFETY: 1. row `ranks[k] + i` lies in the current run of column `k`
                //    (`i < end`, its length), within the column's rows (`runs_valid`);
                // 2. runs of distinct signatures are disjoint (`runs_valid`), each is visited
                //    once (`word` only grows) and `i` only grows within it: no row is fetched
                //    twice.
                let items = unsafe { self.columns.fetch(&d) };
                return Some((key.entity(self.owner), items));
            }
            if !self.next_run() {
                return None;
            }
        }
    }

    /// The rest of a runs plan: each run a walk of slices.
    #[inline(always)]
    fn fold_runs<Acc, F>(mut self, mut acc: Acc, f: &mut F) -> Acc
    where
        F: FnMut(Acc, (EntityId, C::Items)) -> Acc,
    {
        loop {
            let (start, n) = (self.next, self.end - self.next.min(self.end));
            if n > 0 {
                self.next = self.end;
                let keys = self.columns.index(0).keys;
                let Some(keys) = keys.get(self.ranks[0] + start..self.ranks[0] + start + n) else {
                    return acc;
                };
                let starts = core::array::from_fn(|k| self.ranks[k] + start);
                // SAFETY: 1. rows `ranks[k] + start..` of length `n` lie in the current run
                //    of column `k`, within its rows (`runs_valid`);
                // 2. runs of distinct signatures are disjoint and each is visited once, and
                //    `next` moved past these rows: none of them is fetched otherwise.
                let rows = unsafe { self.columns.rows(&starts, n) };
                acc = C::walk(keys, self.owner, acc, f, rows);
            }
            if !self.next_run() {
                return acc;
            }
        }
    }

    // The driver plan.

    /// [`DriverRows`]: the dense index of `key`, the driver's row `i`, in every column, or
    /// `None`; `index(k)` is column `k`'s lookup structures.
    #[inline(always)]
    fn driver_rows<'p>(
        index: impl Fn(usize) -> Index<'p>,
        probes: &[Probe; MAX_COLUMNS],
        driver: usize,
        key: EntityKey,
        i: usize,
    ) -> Option<[usize; MAX_COLUMNS]> {
        let mut rows = DriverRows::<C, _, 0> {
            index,
            probes,
            driver,
            key,
            i,
            d: [0; MAX_COLUMNS],
            columns: PhantomData,
        };
        each::<C, _>(&mut rows).then_some(rows.d)
    }

    /// [`driver_rows`](Self::driver_rows) in two passes, the optional columns last: a row
    /// that a required or excluded column rejects costs no optional lookup (for `fold`: in
    /// `next`, where the plans share one function, the longer code cost the bits and
    /// aligned plans 3% more instructions).
    #[inline(always)]
    fn driver_rows_split<'p>(
        index: impl Fn(usize) -> Index<'p>,
        probes: &[Probe; MAX_COLUMNS],
        driver: usize,
        key: EntityKey,
        i: usize,
    ) -> Option<[usize; MAX_COLUMNS]> {
        let mut rows = DriverRows::<C, _, 1> {
            index: &index,
            probes,
            driver,
            key,
            i,
            d: [0; MAX_COLUMNS],
            columns: PhantomData,
        };
        if !each::<C, _>(&mut rows) {
            return None;
        }
        let mut optional = DriverRows::<C, _, 2> {
            index: &index,
            probes,
            driver,
            key,
            i,
            d: rows.d,
            columns: PhantomData,
        };
        each::<C, _>(&mut optional);
        Some(optional.d)
    }

    /// The driver plan's `next`, driven by column `driver`: one arm per column, so that
    /// [`next_driver`](Self::next_driver) knows it at compile time.
    #[inline(always)]
    fn next_driven(&mut self, driver: usize) -> Option<(EntityId, C::Items)> {
        match driver {
            0 => self.next_driver::<0>(),
            1 => self.next_driver::<1>(),
            2 => self.next_driver::<2>(),
            3 => self.next_driver::<3>(),
            4 => self.next_driver::<4>(),
            5 => self.next_driver::<5>(),
            _ => None,
        }
    }

    /// The driver plan's `next` with the driver column `D`.
    #[inline(always)]
    fn next_driver<const D: usize>(&mut self) -> Option<(EntityId, C::Items)> {
        if D >= C::LEN {
            return None;
        }
        let (owner, end, probes, columns) = (self.owner, self.end, &self.probes, &self.columns);
        let keys = columns.index(D).keys;
        let mut next = self.next;
        while next < end {
            let i = next;
            next += 1;
            let Some(&key) = keys.get(i) else {
                continue;
            };
            let Some(d) = Self::driver_rows(|k| columns.index(k), probes, D, key, i) else {
                continue;
            };
            self.next = next;
            // SAFETY: 1. the driver's `i` is below its length (its key was read with a
            //    bounds-checked `get`), and every other required or present optional index
            //    too (lookups check their bounds);
            // 2. every `&mut` column's index holds `key` (its probe compares keys:
            //    `Probe::Exact` serves shared columns only), and the driver's rows are
            //    distinct entities, each visited once (`next` only grows): no `&mut` index
            //    is fetched twice.
            let items = unsafe { columns.fetch(&d) };
            return Some((key.entity(owner), items));
        }
        self.next = next;
        None
    }

    /// The rest of a driver plan, driven by column `driver` (one arm per column, as in
    /// [`next_driven`](Self::next_driven)).
    #[inline(always)]
    fn fold_driven<Acc, F>(self, driver: usize, acc: Acc, f: &mut F) -> Acc
    where
        F: FnMut(Acc, (EntityId, C::Items)) -> Acc,
    {
        match driver {
            0 => self.fold_driver::<0, _, _>(acc, f),
            1 => self.fold_driver::<1, _, _>(acc, f),
            2 => self.fold_driver::<2, _, _>(acc, f),
            3 => self.fold_driver::<3, _, _>(acc, f),
            4 => self.fold_driver::<4, _, _>(acc, f),
            5 => self.fold_driver::<5, _, _>(acc, f),
            _ => acc,
        }
    }

    /// The rest of a driver plan with the driver column `D`, its keys read as one slice
    /// and every column's lookup structures taken once, before the loop (read for every
    /// row instead, as `next_driver` does, `world_iai`'s `join_driver` counted 22% more
    /// instructions).
    #[inline(always)]
    fn fold_driver<const D: usize, Acc, F>(self, mut acc: Acc, f: &mut F) -> Acc
    where
        F: FnMut(Acc, (EntityId, C::Items)) -> Acc,
    {
        if D >= C::LEN {
            return acc;
        }
        let (owner, start, end, probes) = (self.owner, self.next, self.end, self.probes);
        let Some(keys) = self.columns.index(D).keys.get(start..end) else {
            return acc;
        };
        let mut ixs = [self.columns.index(0); MAX_COLUMNS];
        for (k, ix) in ixs.iter_mut().enumerate().take(C::LEN) {
            *ix = self.columns.index(k);
        }
        for (j, &key) in keys.iter().enumerate() {
            let i = start + j;
            let Some(d) = Self::driver_rows_split(|k| ixs[k], &probes, D, key, i) else {
                continue;
            };
            // SAFETY: 1. `i < end`, the driver's length; every other required or present
            //    optional index is below its column's length (lookups check their bounds);
            // 2. every `&mut` column's index holds `key` (compared: `Probe::Exact` serves
            //    shared columns only), and the driver's rows are distinct entities, each
            //    visited once (rows from `next` on; the join is consumed): no `&mut` index is
            //    fetched twice.
            let items = unsafe { self.columns.fetch(&d) };
            acc = f(acc, (key.entity(owner), items));
        }
        acc
    }

    // The bits plan.

    /// The item of slot `w * 64 + b`, set in every required column's word. With `LIVE`
    /// (world pools: one live generation per slot) only the slot of an index is confirmed,
    /// and none is for an index found by rank (`RANK`, sorted pool): ranks of distinct bits
    /// differ, so a bounds check keeps them distinct.
    ///
    /// # Safety
    /// - No slot is passed twice during the join.
    /// - Every call during the join passes the same `LIVE`, and the same `RANK` unless no
    ///   column is both slot-sorted and non-empty (then `RANK` changes nothing): each column
    ///   finds its indices one way.
    /// - With `RANK`, `words[k]` is column `k`'s membership word `w` and `ranks[k]` its
    ///   members in the words before `w`, as [`load_word`](Self::load_word) keeps them.
    #[inline(always)]
    unsafe fn bit_item<const RANK: bool, const LIVE: bool>(
        columns: &C,
        owner: OwnerToken,
        words: &[u64; MAX_COLUMNS],
        ranks: &[usize; MAX_COLUMNS],
        w: usize,
        b: u32,
    ) -> Option<(EntityId, C::Items)> {
        let slot = w * WORD_BITS + b as usize;
        let low = (1u64 << b) - 1;
        let mut required = RequiredAt::<C, RANK, LIVE> {
            columns,
            words,
            ranks,
            slot,
            low,
            lead: None,
            d: [usize::MAX; MAX_COLUMNS],
        };
        if !each::<C, _>(&mut required) {
            return None;
        }
        let d = required.d;
        let key = match required.lead {
            Some(key) => key,
            // Every required column's index is a rank: the key of the first.
            None => {
                let k = const { first_required(&C::ROLES) };
                // SAFETY: `d[k] < len` of column `k`'s keys (compared in `RequiredAt`).
                unsafe { *columns.index(k).keys.get_unchecked(d[k]) }
            }
        };
        let mut others = OthersAt::<C, RANK, LIVE> {
            columns,
            words,
            ranks,
            slot,
            b,
            low,
            key,
            d,
        };
        if !each::<C, _>(&mut others) {
            return None;
        }
        // SAFETY: 1. every index but the absent marker is below its column's length
        //    (compared in `RequiredAt` and `OthersAt`);
        // 2. each belongs to this slot: confirmed by the key stored there, or a rank,
        //    distinct for each bit of a column's word and larger for later words (`words`,
        //    `ranks`: caller); each column finds its indices one way (caller), slots are
        //    passed once each (caller) and a pool holds a slot at one index, so no index is
        //    fetched twice.
        Some((key.entity(owner), unsafe { columns.fetch(&others.d) }))
    }

    /// Moves to membership word `w`: with `COUNT`, the previous word's members join the
    /// ranks (a path that never ranks skips it). Returns the word's matches (required
    /// columns' words ANDed).
    #[inline(always)]
    fn load_word<const COUNT: bool>(
        columns: &C,
        words: &mut [u64; MAX_COLUMNS],
        ranks: &mut [usize; MAX_COLUMNS],
        w: usize,
    ) -> u64 {
        let mut m = !0u64;
        for k in 0..C::LEN {
            if COUNT {
                ranks[k] += words[k].count_ones() as usize;
            }
            words[k] = word_of(&columns.index(k), w);
            if C::required(k) {
                m &= words[k];
            }
        }
        m
    }

    /// The bits plan's `next`: a slot-sorted pool finds its items by rank only where that
    /// is native (`NATIVE_RANK`), so that a `fold` after it keeps its way. Inlined into a
    /// caller's loop at the compiler's choice (it is the largest of the plans' `next`s).
    #[inline]
    fn next_bits(&mut self) -> Option<(EntityId, C::Items)> {
        loop {
            while self.matches == 0 {
                if self.next >= self.end {
                    return None;
                }
                self.word = self.next;
                self.next += 1;
                self.matches = Self::load_word::<true>(
                    &self.columns,
                    &mut self.words,
                    &mut self.ranks,
                    self.word,
                );
            }
            let b = self.matches.trailing_zeros();
            self.matches &= self.matches - 1;
            let (columns, owner, words, ranks, w) = (
                &self.columns,
                self.owner,
                &self.words,
                &self.ranks,
                self.word,
            );
            // SAFETY: 1. each word is loaded once and each of its bits popped once;
            // 2. every call of this join passes the join's own `live` and `NATIVE_RANK` (a
            //    `fold` after it too, where a column is sorted);
            // 3. `words` and `ranks` are word `w`'s (`load_word::<true>` counts every word).
            let item = unsafe {
                if self.live {
                    Self::bit_item::<NATIVE_RANK, true>(columns, owner, words, ranks, w, b)
                } else {
                    Self::bit_item::<NATIVE_RANK, false>(columns, owner, words, ranks, w, b)
                }
            };
            if item.is_some() {
                return item;
            }
        }
    }

    /// The rest of a bits plan.
    #[inline(always)]
    fn fold_bits_any<Acc, F>(self, acc: Acc, f: F) -> Acc
    where
        F: FnMut(Acc, (EntityId, C::Items)) -> Acc,
    {
        // One way to find indices per join: a join `next` already advanced keeps `next`'s
        // (rank only where it is native), so the indices of the two parts cannot meet.
        let fresh = self.next == 0 && self.matches == 0;
        let rank = self.sorted && (NATIVE_RANK || (fresh && has_popcnt()));
        // SAFETY: 1. the CPU has the instruction where it is not native (`has_popcnt`);
        // 2. `LIVE` is the join's own `live`, as in `next`;
        // 3. `RANK` is `NATIVE_RANK`, as in `next`, unless no column is sorted and
        //    non-empty (`sorted`) or `next` yielded nothing (`fresh`).
        unsafe {
            match (rank, self.live) {
                (true, _) if !NATIVE_RANK => self.fold_bits_popcnt(acc, f),
                (true, true) => self.fold_bits::<true, true, _, _>(acc, f),
                (true, false) => self.fold_bits::<true, false, _, _>(acc, f),
                (false, true) => self.fold_bits::<false, true, _, _>(acc, f),
                (false, false) => self.fold_bits::<false, false, _, _>(acc, f),
            }
        }
    }

    /// The rest of a bits plan, internally iterated.
    ///
    /// # Safety
    /// - `LIVE` is the join's `live`.
    /// - `RANK` is `NATIVE_RANK` (what `next` passes), unless no column is slot-sorted and
    ///   non-empty, or no item of this join was yielded yet.
    #[inline(always)]
    unsafe fn fold_bits<const RANK: bool, const LIVE: bool, Acc, F>(
        self,
        mut acc: Acc,
        mut f: F,
    ) -> Acc
    where
        F: FnMut(Acc, (EntityId, C::Items)) -> Acc,
    {
        if RANK && LIVE && self.ranked {
            // SAFETY: 1. `ranked` (checked); 2. every item before was found by rank too
            // (`RANK`, for a sorted column: caller).
            return unsafe { self.fold_ranked(acc, f) };
        }
        let (owner, end) = (self.owner, self.end);
        let (mut words, mut ranks) = (self.words, self.ranks);
        let (mut w, mut m, mut next) = (self.word, self.matches, self.next);
        loop {
            while m != 0 {
                let b = m.trailing_zeros();
                m &= m - 1;
                // SAFETY: 1. each word is loaded once and each of its bits popped once, here
                //    or by `next`;
                // 2. `LIVE` and `RANK` are those of the items `next` yielded, if any (caller);
                // 3. `words` and `ranks` are word `w`'s, counted from word 0 on by `next` and
                //    here (`load_word::<RANK>`; without `RANK` they are not read).
                let item = unsafe {
                    Self::bit_item::<RANK, LIVE>(&self.columns, owner, &words, &ranks, w, b)
                };
                if let Some(item) = item {
                    acc = f(acc, item);
                }
            }
            if next >= end {
                return acc;
            }
            w = next;
            next += 1;
            m = Self::load_word::<RANK>(&self.columns, &mut words, &mut ranks, w);
        }
    }

    /// [`fold_bits`](Self::fold_bits) when every column is required, slot-sorted and a
    /// world's (`ranked`): each match's index in each pool is its rank.
    ///
    /// # Safety
    /// - `self.ranked`.
    /// - Every item this join yielded before was found by rank (`NATIVE_RANK`), or none
    ///   was.
    #[inline(always)]
    unsafe fn fold_ranked<Acc, F>(self, mut acc: Acc, mut f: F) -> Acc
    where
        F: FnMut(Acc, (EntityId, C::Items)) -> Acc,
    {
        let (owner, end) = (self.owner, self.end);
        let (mut words, mut ranks) = (self.words, self.ranks);
        let (w, mut m, mut next) = (self.word, self.matches, self.next);
        // The rest of a word `next` started.
        while m != 0 {
            let b = m.trailing_zeros();
            m &= m - 1;
            // SAFETY: 1. each of the word's bits is popped once, by `next` or here;
            // 2. `LIVE` (world pools: `ranked`) and `RANK`, as for `next`'s items (caller);
            // 3. `words` and `ranks` are word `w`'s, as `next` loaded and counted them.
            let item =
                unsafe { Self::bit_item::<true, true>(&self.columns, owner, &words, &ranks, w, b) };
            if let Some(item) = item {
                acc = f(acc, item);
            }
        }
        let mut lens = [0usize; MAX_COLUMNS];
        // Members of each column in the word whose ranks `ranks` do not count yet
        // (the word `next` started, if any).
        let mut counts = [0usize; MAX_COLUMNS];
        for k in 0..C::LEN {
            lens[k] = self.columns.index(k).len();
            counts[k] = words[k].count_ones() as usize;
        }
        while next < end {
            let mut word = RankWord {
                columns: &self.columns,
                w: next,
                words: &mut words,
                ranks: &mut ranks,
                counts: &mut counts,
                m: !0u64,
            };
            next += 1;
            each::<C, _>(&mut word);
            let m = word.m;
            // Checked once per word: every column's members here have rows. Where bitsets
            // and lengths disagree (no world pool's do), nothing of the word can be fetched
            // safely, so none of it is.
            let mut fit = RanksFit {
                ranks: &ranks,
                counts: &counts,
                lens: &lens,
            };
            if m != 0 && each::<C, _>(&mut fit) {
                // SAFETY: 1. checked above; 2. ranks only grow, from word to word, by the
                // members of the word left, and no row was fetched by rank beyond them.
                acc = unsafe { self.ranked_word(m, &words, &ranks, acc, &mut f) };
            }
        }
        acc
    }

    /// The items of matches `m` of a word of a ranked join: a run of consecutive rows in
    /// each column where the matches are all of every column's members there, zipped like
    /// slices; else each match's rank in each column.
    ///
    /// # Safety
    /// - Every column's members in `words` have rows: `ranks[k] + count <= len` of each
    ///   column `k`, with `count` its word's members.
    /// - No row `ranks[k]..` of the column is fetched otherwise during the join.
    #[inline(always)]
    unsafe fn ranked_word<Acc, F>(
        &self,
        mut m: u64,
        words: &[u64; MAX_COLUMNS],
        ranks: &[usize; MAX_COLUMNS],
        mut acc: Acc,
        f: &mut F,
    ) -> Acc
    where
        F: FnMut(Acc, (EntityId, C::Items)) -> Acc,
    {
        let (owner, keys) = (self.owner, self.columns.index(0).keys);
        if each::<C, _>(&mut AllWords { words, m }) {
            for j in 0..m.count_ones() as u64 {
                let mut at = RankAt::<true> {
                    words,
                    ranks,
                    low: j,
                    d: [0; MAX_COLUMNS],
                };
                each::<C, _>(&mut at);
                let d = at.d;
                // SAFETY: `d[0] < ranks[0] + count <= len` of column 0 (caller; every
                // column's word is `m`), the length of its keys.
                let key = unsafe { *keys.get_unchecked(d[0]) };
                // SAFETY: 1. `d[k] < ranks[k] + count <= len` of every column `k` (caller;
                //    every column's word is `m`);
                // 2. each `j` once, within rows no other word fetches (caller).
                let items = unsafe { self.columns.fetch(&d) };
                acc = f(acc, (key.entity(owner), items));
            }
            return acc;
        }
        while m != 0 {
            let b = m.trailing_zeros();
            m &= m - 1;
            let mut at = RankAt::<false> {
                words,
                ranks,
                low: (1u64 << b) - 1,
                d: [0; MAX_COLUMNS],
            };
            each::<C, _>(&mut at);
            let d = at.d;
            // SAFETY: bit `b` is set in column 0's word, so `d[0]` is its rank among the
            // word's members: below `ranks[0] + count <= len` (caller), the keys' length.
            let key = unsafe { *keys.get_unchecked(d[0]) };
            // SAFETY: 1. bit `b` is set in every column's word, so `d[k]` is that bit's rank
            //    among column `k`'s members: below `ranks[k] + count <= len` (caller);
            // 2. distinct bits get distinct ranks, within rows no other word fetches
            //    (caller): no row is fetched twice.
            let items = unsafe { self.columns.fetch(&d) };
            acc = f(acc, (key.entity(owner), items));
        }
        acc
    }

    /// [`fold_bits`](Self::fold_bits) by rank, built with the population-count
    /// instruction.
    ///
    /// # Safety
    /// - The CPU has it.
    /// - No item of this join was yielded before (it ranks; `next` may not have).
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    #[target_feature(enable = "popcnt")]
    unsafe fn fold_bits_popcnt<Acc, F>(self, acc: Acc, f: F) -> Acc
    where
        F: FnMut(Acc, (EntityId, C::Items)) -> Acc,
    {
        // SAFETY: 1. `LIVE` is the join's own `live`; 2. no item was yielded before
        // (caller), so any `RANK` is.
        unsafe {
            if self.live {
                self.fold_bits::<true, true, Acc, F>(acc, f)
            } else {
                self.fold_bits::<true, false, Acc, F>(acc, f)
            }
        }
    }

    /// Never called: every other target ranks natively.
    ///
    /// # Safety
    /// - No item of this join was yielded before (it ranks).
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
    unsafe fn fold_bits_popcnt<Acc, F>(self, acc: Acc, f: F) -> Acc
    where
        F: FnMut(Acc, (EntityId, C::Items)) -> Acc,
    {
        // SAFETY: 1. `LIVE` is the join's own `live`; 2. no item was yielded before
        // (caller), so any `RANK` is.
        unsafe {
            if self.live {
                self.fold_bits::<true, true, Acc, F>(acc, f)
            } else {
                self.fold_bits::<true, false, Acc, F>(acc, f)
            }
        }
    }
}

impl<C: Columns> Iterator for Join<C> {
    type Item = (EntityId, C::Items);

    // A dispatch to the plan's own `next`: always inlined, with the aligned, runs and driver
    // steps, into the caller's loop; the bits step is a function of its own, inlined at the
    // compiler's choice. Without `always`, `next` (with every step inlined into it, as the
    // steps' only caller) was inlined only into a join's sole loop in a codegen unit: with
    // two, a three-column aligned loop counted twice the instructions per item.
    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        match self.plan {
            Plan::Aligned => self.next_aligned(),
            Plan::Runs => self.next_runs(),
            Plan::Driver(driver) => self.next_driven(driver),
            Plan::Bits => self.next_bits(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self.plan {
            Plan::Bits => (0, Some(self.bound)),
            Plan::Aligned => (self.end - self.next, Some(self.end - self.next)),
            Plan::Driver(_) => (0, Some(self.end - self.next)),
            Plan::Runs => (0, Some(self.columns.index(0).len())),
        }
    }

    #[inline]
    fn fold<Acc, F>(self, acc: Acc, mut f: F) -> Acc
    where
        F: FnMut(Acc, Self::Item) -> Acc,
    {
        match self.plan {
            Plan::Aligned => self.fold_aligned(acc, &mut f),
            Plan::Runs => self.fold_runs(acc, &mut f),
            Plan::Driver(driver) => self.fold_driven(driver, acc, &mut f),
            Plan::Bits => self.fold_bits_any(acc, f),
        }
    }
}
