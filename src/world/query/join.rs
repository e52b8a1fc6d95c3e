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

use crate::identity::OwnerToken;
use crate::world::query::column::sealed::Sealed;
use crate::world::query::column::{IntoColumn, Role};
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

/// Most columns in one join.
const MAX_COLUMNS: usize = 6;

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

macro_rules! tuple_join {
    ($($c:ident $i:tt $r:ident),+) => {
        impl<$($c: IntoColumn),+> IntoJoin for ($($c,)+) {
            type Columns = ($($c::Column,)+);
            fn into_join(self) -> Join<Self::Columns> {
                Join::<Self::Columns>::build(($(self.$i.into_column(),)+))
            }
        }

        impl<$($c: Sealed),+> Join<($($c,)+)> {
            /// Chooses the plan (module docs) after checking the owners.
            fn build(mut columns: ($($c,)+)) -> Self {
                const {
                    assert!(
                        false $(|| matches!($c::ROLE, Role::Required))+,
                        "a join needs at least one required column (`&pool` or `&mut pool`)"
                    )
                };
                let mut owner = None;
                $( if matches!($c::ROLE, Role::Required) && owner.is_none() {
                    owner = Some(columns.$i.index().owner);
                } )+
                let owner = owner.unwrap_or(0);
                let (mut foreign, mut aligned, mut layout, mut live) = (false, true, None, true);
                let (mut ranked, mut sorted) = (true, false);
                let (mut bound, mut driver, mut words, mut required) = (usize::MAX, 0, usize::MAX, 0);
                let (mut clustered, mut cluster, mut need) = (true, None, 0u32);
                $(
                    let ix = columns.$i.index();
                    // World pools only (`live`): a standalone pool's entry may be another
                    // incarnation of a slot, which a run would pair by position.
                    clustered &= matches!($c::ROLE, Role::Required)
                        && ix.live
                        && ix.owner == owner
                        && ix.cluster != 0
                        && *cluster.get_or_insert(ix.cluster) == ix.cluster;
                    need |= ix.cluster_bit;
                )+
                $(
                    let ix = columns.$i.index();
                    live &= ix.live;
                    ranked &= matches!($c::ROLE, Role::Required) && ix.order.sorted;
                    sorted |= ix.order.sorted && !ix.keys.is_empty();
                    if ix.owner != owner {
                        // Another registry's pool holds none of the join's entities.
                        foreign |= matches!($c::ROLE, Role::Required);
                        aligned = false;
                        columns.$i.neutralize();
                    } else if matches!($c::ROLE, Role::Required) {
                        required += 1;
                        if ix.len() < bound {
                            bound = ix.len();
                            driver = $i;
                        }
                        words = words.min(bits_words(&ix));
                        aligned &= ix.layout != 0 && *layout.get_or_insert(ix.layout) == ix.layout;
                    } else {
                        aligned = false;
                    }
                )+
                if foreign {
                    bound = 0;
                }
                let (plan, end) = if bound == 0 {
                    (Plan::Driver(driver), 0)
                } else if aligned {
                    (Plan::Aligned, bound)
                } else if clustered && Self::runs_valid(&columns, need) {
                    (Plan::Runs, 0)
                } else if words.saturating_mul(required + 1) <= bound.saturating_mul(4 * required)
                    && (sorted || Self::matches(&columns, words) * 2 < bound)
                {
                    // A word costs about a load and an AND per column; a probed row several
                    // dependent loads and often a mispredicted branch. Without a sorted pool
                    // (every match is looked up anyway) the smallest pool drives instead when
                    // most of its rows match: it is then read in order, for free.
                    (Plan::Bits, words)
                } else {
                    (Plan::Driver(driver), bound)
                };
                // Driver: each other column's probe order, from a sample of the driver's keys;
                // a shared column of a world pool trusts its exact sparse map where the
                // sample finds its entries neither at the driver's rows nor on their diagonal
                // (`Probe::Exact`: the driver, a world pool of the join's owner, holds live
                // entities only).
                let mut probes = [Probe::Near; MAX_COLUMNS];
                if let (Plan::Driver(driver), true) = (plan, end > 0) {
                    let (keys, live_keys) = match driver {
                        $( $i => {
                            let ix = columns.$i.index();
                            (ix.keys, ix.live && ix.owner == owner)
                        } )+
                        _ => (&[][..], false),
                    };
                    $(
                        if $i != driver {
                            let ix = columns.$i.index();
                            probes[$i] = match ix.probe_for(keys) {
                                Probe::Sparse
                                    if $c::SHARED && live_keys && ix.live && ix.owner == owner =>
                                {
                                    Probe::Exact
                                }
                                p => p,
                            };
                        }
                    )+
                }
                Join {
                    columns,
                    plan,
                    owner,
                    live,
                    ranked: ranked && live,
                    sorted,
                    need,
                    next: 0,
                    end,
                    bound,
                    matches: 0,
                    word: 0,
                    words: [0; MAX_COLUMNS],
                    ranks: [0; MAX_COLUMNS],
                    probes,
                }
            }

            /// Whether the clustered columns' runs can be zipped: each column's runs are
            /// disjoint and within its rows, and every run of column 0 whose signature holds
            /// `need` has a run of that signature and length in every column. Checked in every
            /// build (a few compares per run): the walk's memory safety rests on it, not on
            /// the stamps.
            fn runs_valid(columns: &($($c,)+), need: u32) -> bool {
                $( if !runs_disjoint(&columns.$i.index()) {
                    return false;
                } )+
                let first = columns.0.index();
                for run in first.runs.iter().filter(|r| r.sig & need == need) {
                    $( if run_of(&columns.$i.index(), run.sig).map(|r| r.len) != Some(run.len) {
                        return false;
                    } )+
                }
                true
            }

            /// Moves to column 0's next run from `self.word` whose signature holds `need`:
            /// each column's start in `ranks`, rows `0..end`. False when none is left.
            fn next_run(&mut self) -> bool {
                let first = self.columns.0.index();
                while let Some(&run) = first.runs.get(self.word) {
                    self.word += 1;
                    if run.sig & self.need != self.need {
                        continue;
                    }
                    // Every column has a run of this signature and length (`runs_valid`);
                    // checked again here, a compare per run, so the walk never rests on a
                    // default start.
                    let mut starts = [0usize; MAX_COLUMNS];
                    let mut found = true;
                    $( match run_of(&self.columns.$i.index(), run.sig) {
                        Some(r) if r.len == run.len => starts[$i] = r.start as usize,
                        _ => found = false,
                    } )+
                    if !found {
                        continue;
                    }
                    self.ranks = starts;
                    self.next = 0;
                    self.end = run.len as usize;
                    return true;
                }
                false
            }

            /// The slots held by every required column in words `..words` (counted when
            /// choosing a plan: about a load, an AND and a count per column and word).
            fn matches(columns: &($($c,)+), words: usize) -> usize {
                (0..words)
                    .map(|w| {
                        let mut m = !0u64;
                        $( if matches!($c::ROLE, Role::Required) {
                            m &= word_of(&columns.$i.index(), w);
                        } )+
                        m.count_ones() as usize
                    })
                    .sum()
            }

            /// The item of the entity at row `i` of every column (aligned plan).
            ///
            /// # Safety
            /// `i < end`, the shortest column's length, and each `i` at most once.
            #[inline(always)]
            unsafe fn aligned_item(
                columns: &mut ($($c,)+),
                owner: OwnerToken,
                i: usize,
            ) -> (EntityId, ($(<$c as Sealed>::Item,)+)) {
                // SAFETY: `i < end`, the shortest column's length (aligned plans have only
                // required columns); each `i` once (caller).
                let key = unsafe { *columns.0.index().keys.get_unchecked(i) };
                // SAFETY: as above.
                let items = unsafe { ($(columns.$i.fetch(i),)+) };
                (key.entity(owner), items)
            }

            /// The aligned plan's walk over `keys.len()` rows, `keys` being the first column's
            /// keys there. Each column's rows are an argument of their own, so the compiler
            /// knows they do not overlap and compiles the walk like a zip of slices; not
            /// inlined, or that knowledge is lost (one call per join).
            ///
            /// # Safety
            /// Each column's rows hold at least `keys.len()` values.
            #[inline(never)]
            #[allow(clippy::too_many_arguments)] // one per column: that is the point
            unsafe fn aligned_walk<Acc, F>(
                keys: &[EntityKey],
                owner: OwnerToken,
                mut acc: Acc,
                f: &mut F,
                $(mut $r: <$c as Sealed>::Rows,)+
            ) -> Acc
            where
                F: FnMut(Acc, (EntityId, ($(<$c as Sealed>::Item,)+))) -> Acc,
            {
                let base = ($(<$c as Sealed>::base(&mut $r),)+);
                for (i, key) in keys.iter().enumerate() {
                    // SAFETY: `i < keys.len()`, within every column's rows (caller); each `i`
                    // once.
                    let items = unsafe { ($(<$c as Sealed>::at(base.$i, i),)+) };
                    acc = f(acc, (key.entity(owner), items));
                }
                acc
            }

            /// The item of the entity at row `i` of column `driver`, if every other column
            /// agrees (driver plan).
            ///
            /// # Safety
            /// `i < end`, the driver's length, and each `i` at most once.
            #[inline(always)]
            unsafe fn driver_item(
                columns: &mut ($($c,)+),
                owner: OwnerToken,
                probes: &[Probe; MAX_COLUMNS],
                driver: usize,
                i: usize,
            ) -> Option<(EntityId, ($(<$c as Sealed>::Item,)+))> {
                let key: EntityKey = match driver {
                    $( $i => *columns.$i.index().keys.get(i)?, )+
                    _ => return None,
                };
                let d = ($(
                    {
                        let ix = columns.$i.index();
                        match $c::ROLE {
                            Role::Required if driver == $i => i,
                            Role::Required => ix.dense_of_key_by(key, i, probes[$i])?,
                            Role::Optional => {
                                ix.dense_of_key_by(key, i, probes[$i]).unwrap_or(usize::MAX)
                            }
                            Role::Excluded => match ix.dense_of_key_by(key, i, probes[$i]) {
                                Some(_) => return None,
                                None => 0,
                            },
                        }
                    },
                )+);
                // SAFETY: each required or present optional index is below its column's
                // length (the driver's `i < end`; a lookup's index comes from a bounds-checked
                // `get`). Every `&mut` column's index holds `key` (its probe compares keys:
                // `Probe::Exact` is only chosen for shared columns): an entity's entry is at
                // one dense index per pool, and driver rows are distinct entities visited once
                // each (caller), so no `&mut` index is fetched twice. Shared items may alias.
                Some((key.entity(owner), unsafe { ($(columns.$i.fetch(d.$i),)+) }))
            }

            /// The driver plan's fold with the driver column `D` known at compile time and its
            /// keys read as one slice. It repeats [`driver_item`](Self::driver_item)'s lookups
            /// instead of calling it: through the call (even with the key passed in) the
            /// `world_iai` `join_driver` row counts 10–13% more instructions.
            #[inline(always)]
            fn fold_driver<const D: usize, Acc, F>(&mut self, mut acc: Acc, f: &mut F) -> Acc
            where
                F: FnMut(Acc, (EntityId, ($(<$c as Sealed>::Item,)+))) -> Acc,
            {
                let (owner, start, end, probes) = (self.owner, self.next, self.end, self.probes);
                let keys = match D {
                    $( $i => self.columns.$i.index().keys, )+
                    _ => &[],
                };
                let Some(keys) = keys.get(start..end) else {
                    return acc;
                };
                let (ptr, n) = (keys.as_ptr(), keys.len());
                self.next = end;
                // SAFETY: `ptr` points to `n` keys of column `D`'s pool, which the column
                // borrows for its lifetime; fetching values does not touch keys.
                let keys = unsafe { core::slice::from_raw_parts(ptr, n) };
                for (j, &key) in keys.iter().enumerate() {
                    let i = start + j;
                    let d = ($(
                        {
                            let ix = self.columns.$i.index();
                            match $c::ROLE {
                                Role::Required if D == $i => i,
                                Role::Required => match ix.dense_of_key_by(key, i, probes[$i]) {
                                    Some(d) => d,
                                    None => continue,
                                },
                                Role::Optional => {
                                    ix.dense_of_key_by(key, i, probes[$i]).unwrap_or(usize::MAX)
                                }
                                Role::Excluded => match ix.dense_of_key_by(key, i, probes[$i]) {
                                    Some(_) => continue,
                                    None => 0,
                                },
                            }
                        },
                    )+);
                    // SAFETY: `i < end`, the driver's length; every other required or present
                    // optional index is below its column's length (bounds-checked lookups),
                    // and every `&mut` column's holds `key` (compared: `Probe::Exact` serves
                    // shared columns only); driver rows are distinct entities, each visited
                    // once (`next` moved past them), so no `&mut` index is fetched twice.
                    let items = unsafe { ($(self.columns.$i.fetch(d.$i),)+) };
                    acc = f(acc, (key.entity(owner), items));
                }
                acc
            }

            /// The item of slot `w * 64 + b`, set in every required column's word (bits plan).
            /// With `live` (world pools: one live generation per slot) only the slot of an
            /// index is confirmed, and none is for an index found by rank (`RANK`, sorted
            /// pool): ranks of distinct bits differ, so a bounds check keeps them distinct.
            ///
            /// # Safety
            /// Each slot at most once.
            #[inline(always)]
            #[allow(clippy::too_many_arguments)]
            unsafe fn bit_item<const RANK: bool, const LIVE: bool>(
                columns: &mut ($($c,)+),
                owner: OwnerToken,
                words: &[u64; MAX_COLUMNS],
                ranks: &[usize; MAX_COLUMNS],
                w: usize,
                b: u32,
            ) -> Option<(EntityId, ($(<$c as Sealed>::Item,)+))> {
                let live = LIVE;
                let slot = w * WORD_BITS + b as usize;
                let low = (1u64 << b) - 1;
                let mut lead: Option<EntityKey> = None;
                let mut d = [usize::MAX; MAX_COLUMNS];
                $(
                    if matches!($c::ROLE, Role::Required) {
                        let ix = columns.$i.index();
                        let at = dense_at::<RANK>(&ix, slot, words[$i], ranks[$i], low);
                        if live && RANK && ix.order.sorted {
                            if at >= ix.keys.len() {
                                return None;
                            }
                        } else {
                            let key = *ix.keys.get(at)?;
                            if key.slot() as usize != slot {
                                return None;
                            }
                            if !live && lead.is_some_and(|l| l != key) {
                                return None;
                            }
                            lead = Some(key);
                        }
                        d[$i] = at;
                    }
                )+
                let mut key = lead;
                $(
                    if key.is_none() && matches!($c::ROLE, Role::Required) {
                        // SAFETY: `d[$i] < len` (bounds checked above).
                        key = Some(unsafe { *columns.$i.index().keys.get_unchecked(d[$i]) });
                    }
                )+
                let key = key?;
                $(
                    if !matches!($c::ROLE, Role::Required) && (words[$i] >> b) & 1 != 0 {
                        let ix = columns.$i.index();
                        let at = dense_at::<RANK>(&ix, slot, words[$i], ranks[$i], low);
                        let holds = if live && RANK && ix.order.sorted {
                            at < ix.keys.len()
                        } else if live {
                            ix.keys.get(at).is_some_and(|k| k.slot() as usize == slot)
                        } else {
                            ix.keys.get(at) == Some(&key)
                        };
                        if holds {
                            if matches!($c::ROLE, Role::Excluded) {
                                return None;
                            }
                            d[$i] = at;
                        }
                    }
                )+
                // SAFETY: every index but the absent marker is below its column's length
                // and belongs to this slot: confirmed by the key stored there, or computed as
                // a rank, which differs for each bit of a column. Slots are visited once each
                // (caller) and a pool holds a slot at one index, so no index is fetched twice.
                Some((key.entity(owner), unsafe { ($(columns.$i.fetch(d[$i]),)+) }))
            }

            /// Moves to membership word `w` (bits plan): with `COUNT`, the previous word's
            /// members join the ranks (a path that never ranks skips it). Returns the word's matches (required columns' words ANDed).
            #[inline(always)]
            fn load_word<const COUNT: bool>(
                columns: &($($c,)+),
                words: &mut [u64; MAX_COLUMNS],
                ranks: &mut [usize; MAX_COLUMNS],
                w: usize,
            ) -> u64 {
                let mut m = !0u64;
                $(
                    if COUNT {
                        ranks[$i] += words[$i].count_ones() as usize;
                    }
                    words[$i] = word_of(&columns.$i.index(), w);
                    if matches!($c::ROLE, Role::Required) {
                        m &= words[$i];
                    }
                )+
                m
            }
        }

        impl<$($c: Sealed),+> Join<($($c,)+)> {
            /// The rest of a bits plan, internally iterated.
            #[inline(always)]
            fn fold_bits<const RANK: bool, const LIVE: bool, Acc, F>(
                mut self,
                mut acc: Acc,
                mut f: F,
            ) -> Acc
            where
                F: FnMut(Acc, <Self as Iterator>::Item) -> Acc,
            {
                if RANK && LIVE && self.ranked {
                    return self.fold_ranked(acc, f);
                }
                let (owner, end) = (self.owner, self.end);
                let (mut words, mut ranks) = (self.words, self.ranks);
                let (mut w, mut m, mut next) = (self.word, self.matches, self.next);
                loop {
                    while m != 0 {
                        let b = m.trailing_zeros();
                        m &= m - 1;
                        // SAFETY: each word is loaded once and each bit popped once.
                        if let Some(item) = unsafe {
                            Self::bit_item::<RANK, LIVE>(&mut self.columns, owner, &words, &ranks, w, b)
                        } {
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
            /// world's (`ranked`): each match's index in each pool is its rank, and a word whose
            /// matches are all of every pool's members there is a run of consecutive rows in
            /// each, zipped like slices.
            #[inline(always)]
            fn fold_ranked<Acc, F>(mut self, mut acc: Acc, mut f: F) -> Acc
            where
                F: FnMut(Acc, <Self as Iterator>::Item) -> Acc,
            {
                let (owner, end) = (self.owner, self.end);
                let (mut words, mut ranks) = (self.words, self.ranks);
                let (w, mut m, mut next) = (self.word, self.matches, self.next);
                // The rest of a word `next` started.
                while m != 0 {
                    let b = m.trailing_zeros();
                    m &= m - 1;
                    // SAFETY: each word is loaded once and each bit popped once.
                    if let Some(item) = unsafe {
                        Self::bit_item::<true, true>(&mut self.columns, owner, &words, &ranks, w, b)
                    } {
                        acc = f(acc, item);
                    }
                }
                let lens = [$(self.columns.$i.index().len(),)+];
                // Members of each column in the word whose ranks `ranks` do not count yet
                // (the word `next` started, if any).
                let mut counts = [$(words[$i].count_ones() as usize,)+];
                while next < end {
                    let w = next;
                    next += 1;
                    let mut m = !0u64;
                    $(
                        ranks[$i] += counts[$i];
                        words[$i] = word_of(&self.columns.$i.index(), w);
                        counts[$i] = words[$i].count_ones() as usize;
                        m &= words[$i];
                    )+
                    if m == 0 {
                        continue;
                    }
                    // Checked once per word: every column's members here have rows. Then
                    // the rank of any of them is below its column's length.
                    if false $(|| ranks[$i] + counts[$i] > lens[$i])+ {
                        // Bitsets and lengths disagree (no world pool does): nothing of this
                        // word can be fetched safely, so none of it is.
                        continue;
                    }
                    if true $(&& words[$i] == m)+ {
                        for j in 0..counts[0] {
                            // SAFETY: `ranks[c] + j < ranks[c] + counts[c] <= len` of every
                            // column (every column's word is `m`, so its count is `counts[0]`;
                            // checked above); ranks only grow from word to word by the members
                            // of the word left, so no row is fetched twice.
                            let key = unsafe {
                                *self.columns.0.index().keys.get_unchecked(ranks[0] + j)
                            };
                            // SAFETY: as above.
                            let items = unsafe { ($(self.columns.$i.fetch(ranks[$i] + j),)+) };
                            acc = f(acc, (key.entity(owner), items));
                        }
                        continue;
                    }
                    while m != 0 {
                        let b = m.trailing_zeros();
                        m &= m - 1;
                        let low = (1u64 << b) - 1;
                        let d = [$(ranks[$i] + (words[$i] & low).count_ones() as usize,)+];
                        // SAFETY: bit `b` is set in every column's word, so `d[c]` is that
                        // bit's rank among the column's members: below `ranks[c] + counts[c]
                        // <= len` (checked for the word above); distinct bits get distinct
                        // ranks, and ranks of later words are larger. No row is fetched twice.
                        let key = unsafe { *self.columns.0.index().keys.get_unchecked(d[0]) };
                        // SAFETY: as above.
                        let items = unsafe { ($(self.columns.$i.fetch(d[$i]),)+) };
                        acc = f(acc, (key.entity(owner), items));
                    }
                }
                acc
            }

            /// [`fold_bits`](Self::fold_bits) by rank, built with the population-count
            /// instruction.
            ///
            /// # Safety
            /// The CPU has it.
            #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
            #[target_feature(enable = "popcnt")]
            unsafe fn fold_bits_popcnt<Acc, F>(self, acc: Acc, f: F) -> Acc
            where
                F: FnMut(Acc, <Self as Iterator>::Item) -> Acc,
            {
                if self.live {
                    self.fold_bits::<true, true, Acc, F>(acc, f)
                } else {
                    self.fold_bits::<true, false, Acc, F>(acc, f)
                }
            }

            /// Never called: every other target ranks natively.
            ///
            /// # Safety
            /// None beyond the x86 variant's (kept `unsafe` for one call site).
            #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
            unsafe fn fold_bits_popcnt<Acc, F>(self, acc: Acc, f: F) -> Acc
            where
                F: FnMut(Acc, <Self as Iterator>::Item) -> Acc,
            {
                if self.live {
                    self.fold_bits::<true, true, Acc, F>(acc, f)
                } else {
                    self.fold_bits::<true, false, Acc, F>(acc, f)
                }
            }
        }

        impl<$($c: Sealed),+> Join<($($c,)+)> {
            /// The plan this join chose.
            pub fn plan(&self) -> JoinPlan {
                match self.plan {
                    Plan::Aligned => JoinPlan::Aligned,
                    Plan::Bits => JoinPlan::Bits,
                    Plan::Driver(_) => JoinPlan::Driver,
                    Plan::Runs => JoinPlan::Runs,
                }
            }
        }

        impl<$($c: Sealed),+> Iterator for Join<($($c,)+)> {
            type Item = (EntityId, ($(<$c as Sealed>::Item,)+));

            #[inline]
            fn next(&mut self) -> Option<Self::Item> {
                match self.plan {
                    Plan::Aligned => {
                        if self.next >= self.end {
                            return None;
                        }
                        let i = self.next;
                        self.next += 1;
                        // SAFETY: `i < end`, each row once (`next` only grows).
                        Some(unsafe { Self::aligned_item(&mut self.columns, self.owner, i) })
                    }
                    Plan::Driver(driver) => {
                        while self.next < self.end {
                            let i = self.next;
                            self.next += 1;
                            // SAFETY: `i < end`, each row once.
                            let item = unsafe {
                                Self::driver_item(&mut self.columns, self.owner, &self.probes, driver, i)
                            };
                            if item.is_some() {
                                return item;
                            }
                        }
                        None
                    }
                    Plan::Runs => loop {
                        if self.next < self.end {
                            let i = self.next;
                            self.next += 1;
                            let key = *self.columns.0.index().keys.get(self.ranks[0] + i)?;
                            // SAFETY: row `ranks[c] + i` lies in the current run of column `c`
                            // (`i < end`, its length), within the column's rows (`runs_valid`);
                            // runs of distinct signatures are disjoint (`runs_valid`), each is
                            // visited once (`word` only grows) and `i` only grows within it:
                            // no row is fetched twice.
                            let items = unsafe { ($(self.columns.$i.fetch(self.ranks[$i] + i),)+) };
                            return Some((key.entity(self.owner), items));
                        }
                        if !self.next_run() {
                            return None;
                        }
                    },
                    Plan::Bits => loop {
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
                        // SAFETY: each word is loaded once and each of its bits popped once.
                        let item = unsafe {
                            if self.live {
                                Self::bit_item::<NATIVE_RANK, true>(
                                    &mut self.columns,
                                    self.owner,
                                    &self.words,
                                    &self.ranks,
                                    self.word,
                                    b,
                                )
                            } else {
                                Self::bit_item::<NATIVE_RANK, false>(
                                    &mut self.columns,
                                    self.owner,
                                    &self.words,
                                    &self.ranks,
                                    self.word,
                                    b,
                                )
                            }
                        };
                        if item.is_some() {
                            return item;
                        }
                    },
                }
            }

            fn size_hint(&self) -> (usize, Option<usize>) {
                match self.plan {
                    Plan::Bits => (0, Some(self.bound)),
                    Plan::Aligned => (self.end - self.next, Some(self.end - self.next)),
                    Plan::Driver(_) => (0, Some(self.end - self.next)),
                    Plan::Runs => (0, Some(self.columns.0.index().len())),
                }
            }

            #[inline]
            fn fold<Acc, F>(mut self, init: Acc, mut f: F) -> Acc
            where
                F: FnMut(Acc, Self::Item) -> Acc,
            {
                let mut acc = init;
                let (owner, end) = (self.owner, self.end);
                match self.plan {
                    Plan::Aligned => {
                        let start = self.next.min(end);
                        let n = end - start;
                        let keys = self.columns.0.index().keys;
                        // A stamp names equal keys, so every column is at least `end` long
                        // (`end` is the shortest's length); checked all the same.
                        if keys.len() < end {
                            return acc;
                        }
                        let keys: *const EntityKey = keys[start..end].as_ptr();
                        // SAFETY: `start + n = end`, the shortest column's length (aligned plans
                        // have only required columns); the join fetches nothing after this.
                        let rows = unsafe { ($(self.columns.$i.rows(start, n),)+) };
                        // SAFETY: `keys` points to `n` keys of the first column's pool, which
                        // the column borrows for its lifetime (taken above; `rows` does not
                        // touch keys).
                        let keys = unsafe { core::slice::from_raw_parts(keys, n) };
                        // SAFETY: every column's rows hold `n` values (above).
                        acc = unsafe { Self::aligned_walk(keys, owner, acc, &mut f, $(rows.$i,)+) };
                    }
                    Plan::Runs => loop {
                        let (start, n) = (self.next, self.end - self.next.min(self.end));
                        if n > 0 {
                            self.next = self.end;
                            let keys = self.columns.0.index().keys;
                            let Some(keys) = keys.get(self.ranks[0] + start..self.ranks[0] + start + n) else {
                                return acc;
                            };
                            let keys: *const EntityKey = keys.as_ptr();
                            // SAFETY: rows `ranks[c] + start..` of length `n` lie in the current
                            // run of column `c`, within its rows (`runs_valid`); runs of distinct
                            // signatures are disjoint and each is visited once, and `next` moved
                            // past these rows: none of them is fetched otherwise.
                            let rows = unsafe { ($(self.columns.$i.rows(self.ranks[$i] + start, n),)+) };
                            // SAFETY: `keys` points to `n` keys of column 0's pool, which the
                            // column borrows for its lifetime (`rows` does not touch keys).
                            let keys = unsafe { core::slice::from_raw_parts(keys, n) };
                            // SAFETY: every column's rows hold `n` values (above).
                            acc = unsafe { Self::aligned_walk(keys, owner, acc, &mut f, $(rows.$i,)+) };
                        }
                        if !self.next_run() {
                            break;
                        }
                    },
                    Plan::Driver(driver) => {
                        acc = match driver {
                            $( $i => self.fold_driver::<$i, _, _>(acc, &mut f), )+
                            _ => acc,
                        };
                    }
                    Plan::Bits => {
                        // One way to find indices per join: a join `next` already advanced
                        // keeps `next`'s (rank only where it is native), so the indices of the
                        // two parts cannot meet.
                        let fresh = self.next == 0 && self.matches == 0;
                        let rank = self.sorted && (NATIVE_RANK || (fresh && has_popcnt()));
                        acc = match (rank, self.live) {
                            // SAFETY: the CPU has the instruction (`has_popcnt`).
                            (true, _) if !NATIVE_RANK => unsafe { self.fold_bits_popcnt(acc, f) },
                            (true, true) => self.fold_bits::<true, true, _, _>(acc, f),
                            (true, false) => self.fold_bits::<true, false, _, _>(acc, f),
                            (false, true) => self.fold_bits::<false, true, _, _>(acc, f),
                            (false, false) => self.fold_bits::<false, false, _, _>(acc, f),
                        };
                    }
                }
                acc
            }
        }
    };
}

tuple_join!(C0 0 r0, C1 1 r1);
tuple_join!(C0 0 r0, C1 1 r1, C2 2 r2);
tuple_join!(C0 0 r0, C1 1 r1, C2 2 r2, C3 3 r3);
tuple_join!(C0 0 r0, C1 1 r1, C2 2 r2, C3 3 r3, C4 4 r4);
tuple_join!(C0 0 r0, C1 1 r1, C2 2 r2, C3 3 r3, C4 4 r4, C5 5 r5);
