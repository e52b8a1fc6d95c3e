//! Clustering: 2..=6 pools put in one shared order by membership, so that joins over them
//! zip slices the way an archetype ECS iterates its tables.
//!
//! An entity's *signature* is the set of the clustered pools that hold it. [`cluster`] sorts
//! every pool by signature, then slot, and records each pool's *runs*: the rows of one
//! signature, in ascending signature order.
//!
//! ```text
//!  position:  [ {p}: 3 8 | {p,v}: 1 2 5 | {p,v,d}: 4 9 ]
//!  velocity:             [ {p,v}: 1 2 5 | {p,v,d}: 4 9 ]
//!  data:                                [ {p,v,d}: 4 9 ]
//! ```
//!
//! A run holds the same entities in the same order in every pool of its signature. A join
//! whose columns all belong to one cluster (the *runs* plan, `docs/world.md`) visits the
//! runs whose signature holds every column and zips their slices: no probe, no bit scan, and
//! only the matching rows are read. The pools share a *cluster stamp*, unique in the process
//! (drawn from the owner-token source), that any change of a pool's keys (insert, remove,
//! destroy, spawn, sort) resets to 0 in that pool, so a join over a changed pool falls back
//! to the other plans until the next `cluster`. Values may change freely through
//! `values_mut`, `get_mut` and joins (an `insert`, even one that replaces a value, counts as
//! a key change). A commit's in-place `respawn` keeps the stamps of the pools whose rows it
//! hands over (the replacement takes the old entity's row in each); a pool it removes a row
//! from or appends one to resets its own, as any change does.
//!
//! So a run's signature is the one `cluster` recorded, and restricted to the pools still
//! holding the stamp it is every entity's membership among them: what the runs plan reads
//! (it visits the runs whose signature holds every column, all of them pools with the stamp).
//! A pool that left the cluster keeps its bit in the recorded signatures: an entity that lost
//! or gained a row there since stays in its run, so the runs plan yields ascending *recorded*
//! signature, then slot. [`WorldDiagnostics::check_clusters`](crate::world::world_ops::WorldDiagnostics::check_clusters) checks
//! the invariant.
//!
//! No join trusts the stamps for memory safety: it checks every column's runs (disjoint,
//! within the rows, one run of each signature, equal lengths across columns) when it is built.

use crate::world::store::component::Component;
use allocator_api2::alloc::Allocator;

use crate::world::store::pool::ComponentPool;
use crate::world::store::registry::process_owner_token;

/// Why [`cluster`] refused (nothing changed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ClusterError {
    /// The pools belong to different registries (or to none yet).
    #[error("the pools belong to different registries")]
    ForeignPool,
    /// A pool belongs to an owned group that packs entities: its order is the group's.
    #[error("a pool's order belongs to an owned group")]
    Grouped,
    /// A pool is not a world's: its entries may outlive their entities, so two pools holding a
    /// slot may hold different incarnations of it, which a signature by slot would pair.
    #[error("a pool is not a world's (standalone pools are not clustered)")]
    Standalone,
    /// The process-wide source of stamps (the owner-token source) is exhausted.
    #[error("no cluster stamp left")]
    StampsExhausted,
}

/// A tuple of 2..=6 exclusively borrowed pools that [`cluster`] can order (sealed).
pub trait IntoCluster: sealed::Sealed {
    /// Clusters the pools.
    ///
    /// # Errors
    /// As [`cluster`].
    fn cluster_pools(self) -> Result<(), ClusterError>;
}

pub(crate) mod sealed {
    pub trait Sealed {}
}

/// Orders `pools` (a tuple of 2 to 6 `&mut` pools of one world) by signature, then slot, so
/// that joins over any of them take the runs plan until one of them changes its keys (module
/// docs). `O(len)` swaps per pool plus one pass over its bitset per signature; no allocation.
/// Pools already clustered together in this order and unchanged since are left as they are
/// (a few compares), so calling it every frame costs nothing while nothing changed.
/// Not a membership change: allowed in every phase, handles stay valid.
///
/// # Examples
/// ```
/// use ludus::world::{cluster, join, JoinPlan, WorldOps};
/// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
/// #[repr(C)]
/// struct Pos(f32);
/// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
/// #[repr(C)]
/// struct Vel(f32);
/// ludus::world! { struct Level { pos: Pos, vel: Vel } }
///
/// let mut w = Level::try_new(8)?;
/// for i in 0..6 {
///     let e = w.spawn((Pos(0.0),))?;
///     if i % 2 == 0 { w.insert(e, Vel(1.0))?; }
/// }
/// cluster((&mut w.pos, &mut w.vel))?;
/// let j = join((&mut w.pos, &w.vel));
/// assert_eq!(j.plan(), JoinPlan::Runs);
/// j.for_each(|(_, (p, v))| p.0 += v.0);
/// assert_eq!(w.pos.values().iter().map(|p| p.0).sum::<f32>(), 3.0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`ClusterError`]; nothing changes.
pub fn cluster<Q: IntoCluster>(pools: Q) -> Result<(), ClusterError> {
    pools.cluster_pools()
}

/// A pool as `cluster` sees it.
trait Clusterable {
    fn owner(&self) -> u64;
    fn packs_a_group(&self) -> bool;
    fn is_world_pool(&self) -> bool;
    fn cluster_id(&self) -> (u64, u32, u32);
    fn member_bits(&self) -> &[u64];
    fn sort_by_signature(&mut self, own: u32, others: &[(u32, &[u64])], stamp: u64);
}

impl<T: Component, A: Allocator + Clone> Clusterable for ComponentPool<T, A> {
    fn owner(&self) -> u64 {
        ComponentPool::owner(self)
    }
    fn packs_a_group(&self) -> bool {
        ComponentPool::packs_a_group(self)
    }
    fn is_world_pool(&self) -> bool {
        ComponentPool::is_world_pool(self)
    }
    fn cluster_id(&self) -> (u64, u32, u32) {
        ComponentPool::cluster_id(self)
    }
    fn member_bits(&self) -> &[u64] {
        ComponentPool::member_bits(self)
    }
    fn sort_by_signature(&mut self, own: u32, others: &[(u32, &[u64])], stamp: u64) {
        ComponentPool::sort_by_signature(self, own, others, stamp);
    }
}

/// Checks the pools, then sorts each by signature (pool `i`'s bit is `1 << i`) under one
/// fresh stamp.
fn cluster_dyn(pools: &mut [&mut dyn Clusterable]) -> Result<(), ClusterError> {
    let owner = pools.first().map_or(0, |p| p.owner());
    if owner == 0 || pools.iter().any(|p| p.owner() != owner) {
        return Err(ClusterError::ForeignPool);
    }
    if pools.iter().any(|p| !p.is_world_pool()) {
        return Err(ClusterError::Standalone);
    }
    if pools.iter().any(|p| p.packs_a_group()) {
        return Err(ClusterError::Grouped);
    }
    // Already clustered, in this order, and unchanged since: nothing to do.
    let all = (1u32 << pools.len()) - 1;
    let stamp = pools.first().map_or(0, |p| p.cluster_id().0);
    if stamp != 0
        && pools
            .iter()
            .enumerate()
            .all(|(i, p)| p.cluster_id() == (stamp, 1 << i, all))
    {
        return Ok(());
    }
    // Unique in the process, so no two clusterings share a stamp (a join trusts a shared
    // stamp to mean one clustering of its pools).
    let stamp = process_owner_token().map_err(|_| ClusterError::StampsExhausted)?;
    for i in 0..pools.len() {
        let (before, rest) = pools.split_at_mut(i);
        let Some((me, after)) = rest.split_first_mut() else {
            break;
        };
        let mut others: [(u32, &[u64]); crate::world::raw::dense::MAX_CLUSTER - 1] =
            [(0, &[]); crate::world::raw::dense::MAX_CLUSTER - 1];
        let mut n = 0;
        for (j, p) in before.iter().enumerate() {
            others[n] = (1 << j, p.member_bits());
            n += 1;
        }
        for (j, p) in after.iter().enumerate() {
            others[n] = (1 << (i + 1 + j), p.member_bits());
            n += 1;
        }
        me.sort_by_signature(1 << i, &others[..n], stamp);
    }
    Ok(())
}

macro_rules! tuple_cluster {
    ($n:literal; $($t:ident $a:ident $i:tt),+) => {
        impl<$($t: Component, $a: Allocator + Clone),+> sealed::Sealed
            for ($(&mut ComponentPool<$t, $a>,)+) {}

        impl<$($t: Component, $a: Allocator + Clone),+> IntoCluster
            for ($(&mut ComponentPool<$t, $a>,)+)
        {
            fn cluster_pools(self) -> Result<(), ClusterError> {
                let mut pools: [&mut dyn Clusterable; $n] = [$(self.$i),+];
                cluster_dyn(&mut pools)
            }
        }
    };
}

tuple_cluster!(2; T0 A0 0, T1 A1 1);
tuple_cluster!(3; T0 A0 0, T1 A1 1, T2 A2 2);
tuple_cluster!(4; T0 A0 0, T1 A1 1, T2 A2 2, T3 A3 3);
tuple_cluster!(5; T0 A0 0, T1 A1 1, T2 A2 2, T3 A3 3, T4 A4 4);
tuple_cluster!(6; T0 A0 0, T1 A1 1, T2 A2 2, T3 A3 3, T4 A4 4, T5 A5 5);

/// Collects the index of every pool with a cluster stamp.
struct Clustered<'a, P, A> {
    pools: P,
    views: Vec<crate::world::raw::dense::Index<'a>>,
    _alloc: core::marker::PhantomData<A>,
}

impl<'a, A: Allocator + Clone + 'static, P: crate::world::store::roster::PoolsRefList<'a, A>>
    crate::world::store::roster::TypeVisitor for Clustered<'a, P, A>
{
    fn visit<T: Component>(&mut self) {
        if let Some(pool) = self.pools.get::<T>() {
            let ix = pool.index();
            if ix.cluster != 0 {
                self.views.push(ix);
            }
        }
    }
}

/// Whether every cluster of a world's pools is exact (for tests and debugging; allocates): in
/// each set of pools sharing a cluster stamp, the runs of each pool partition its entries in
/// ascending signature order, and every entry sits in a run whose signature, restricted to
/// the set, is its entity's membership in the set (the pools that left the cluster since do
/// not count: no join of the runs plan reads them).
pub(crate) fn clusters_exact<'a, C, A, P>(pools: P) -> bool
where
    C: crate::world::store::roster::ComponentList,
    A: Allocator + Clone + 'static,
    P: crate::world::store::roster::PoolsRefList<'a, A>,
{
    let mut seen = Clustered {
        pools,
        views: Vec::new(),
        _alloc: core::marker::PhantomData,
    };
    C::each(&mut seen);
    let views = &seen.views;
    views.iter().all(|v| {
        let set = || views.iter().filter(|w| w.cluster == v.cluster);
        let mask = set().fold(0u32, |m, w| m | w.cluster_bit);
        let mut next = 0usize;
        let mut last: Option<u32> = None;
        let runs_ok = v.runs.iter().all(|r| {
            let (start, len) = (r.start as usize, r.len as usize);
            let ordered = start == next && last.is_none_or(|l| l < r.sig);
            next = start + len;
            last = Some(r.sig);
            ordered
                && r.sig & v.cluster_bit != 0
                && v.keys.get(start..start + len).is_some_and(|keys| {
                    keys.iter().all(|k| {
                        let held = set()
                            .filter(|w| crate::world::raw::dense::member(w.bits, k.slot()))
                            .fold(0u32, |m, w| m | w.cluster_bit);
                        held == r.sig & mask
                    })
                })
        });
        runs_ok && next == v.keys.len()
    })
}
