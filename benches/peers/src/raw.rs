//! The raw-`Vec` limit: what each workload costs with hand-written arrays and no ECS.
//!
//! Kept tight on purpose: dense structure-of-arrays for iteration, a generation check and an
//! index for handles, a generation array + free list for churn.

use rayon::prelude::*;

use crate::components::{CompA, CompB, Data, Position, Rotation, Transform, Velocity};
use crate::math::heavy_kernel;
use crate::*;

/// A raw handle: slot index + generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawHandle {
    slot: u32,
    generation: u32,
}

/// simple_insert: four structure-of-arrays columns plus a generation per entity.
#[derive(Debug, Default)]
pub struct SimpleInsert {
    world: Option<InsertWorld>,
}

#[derive(Debug)]
struct InsertWorld {
    generations: Vec<u32>,
    transforms: Vec<Transform>,
    positions: Vec<Position>,
    rotations: Vec<Rotation>,
    velocities: Vec<Velocity>,
}

impl Workload for SimpleInsert {
    fn setup() -> Self {
        Self::default()
    }
    fn run(&mut self) {
        let mut w = InsertWorld {
            generations: Vec::with_capacity(SIMPLE_N),
            transforms: Vec::with_capacity(SIMPLE_N),
            positions: Vec::with_capacity(SIMPLE_N),
            rotations: Vec::with_capacity(SIMPLE_N),
            velocities: Vec::with_capacity(SIMPLE_N),
        };
        for i in 0..SIMPLE_N {
            w.generations.push(1);
            w.transforms.push(transform(i));
            w.positions.push(position(i));
            w.rotations.push(rotation(i));
            w.velocities.push(velocity(i));
        }
        self.world = Some(w);
    }
    fn checksum(&self) -> u64 {
        let w = self.world.as_ref().expect("run before checksum");
        let mut d = Digest::default();
        w.transforms.iter().for_each(|x| d.add_pod(x));
        w.positions.iter().for_each(|x| d.add_pod(x));
        w.rotations.iter().for_each(|x| d.add_pod(x));
        w.velocities.iter().for_each(|x| d.add_pod(x));
        d.0
    }
}

/// simple_iter: `zip` over two dense columns.
#[derive(Debug)]
pub struct SimpleIter {
    positions: Vec<Position>,
    velocities: Vec<Velocity>,
}

impl Workload for SimpleIter {
    fn setup() -> Self {
        Self {
            positions: (0..SIMPLE_N).map(position).collect(),
            velocities: (0..SIMPLE_N).map(velocity).collect(),
        }
    }
    fn run(&mut self) {
        for (p, v) in self.positions.iter_mut().zip(&self.velocities) {
            integrate(p, v);
        }
    }
    fn checksum(&self) -> u64 {
        let mut d = Digest::default();
        self.positions.iter().for_each(|x| d.add_pod(x));
        d.0
    }
}

/// frag_iter: the `Data` column is one dense array (the fragment types are never read).
#[derive(Debug)]
pub struct FragIter {
    data: Vec<Data>,
}

impl Workload for FragIter {
    fn setup() -> Self {
        Self {
            data: (0..26 * FRAG_PER_TYPE).map(data).collect(),
        }
    }
    fn run(&mut self) {
        self.data.iter_mut().for_each(double);
    }
    fn checksum(&self) -> u64 {
        let mut d = Digest::default();
        self.data.iter().for_each(|x| d.add_pod(x));
        d.0
    }
}

/// heavy_compute state: dense columns (rotation and velocity present but unread, as in the suite).
#[derive(Debug)]
pub struct Heavy {
    transforms: Vec<Transform>,
    positions: Vec<Position>,
    _rotations: Vec<Rotation>,
    _velocities: Vec<Velocity>,
}

impl Heavy {
    fn new() -> Self {
        Self {
            transforms: (0..HEAVY_N).map(transform).collect(),
            positions: (0..HEAVY_N).map(position).collect(),
            _rotations: (0..HEAVY_N).map(rotation).collect(),
            _velocities: (0..HEAVY_N).map(velocity).collect(),
        }
    }
    fn checksum(&self) -> u64 {
        let mut d = Digest::default();
        self.transforms.iter().for_each(|x| d.add_pod(x));
        self.positions.iter().for_each(|x| d.add_pod(x));
        d.0
    }
}

/// heavy_compute, single-threaded.
#[derive(Debug)]
pub struct HeavyCompute(Heavy);

impl Workload for HeavyCompute {
    fn setup() -> Self {
        Self(Heavy::new())
    }
    fn run(&mut self) {
        for (t, p) in self.0.transforms.iter_mut().zip(&mut self.0.positions) {
            heavy_kernel(&mut t.0, &mut p.0);
        }
    }
    fn checksum(&self) -> u64 {
        self.0.checksum()
    }
}

/// heavy_compute, rayon over the zipped columns.
#[derive(Debug)]
pub struct HeavyComputeParallel(Heavy);

impl Workload for HeavyComputeParallel {
    fn setup() -> Self {
        Self(Heavy::new())
    }
    fn run(&mut self) {
        self.0
            .transforms
            .par_iter_mut()
            .zip(&mut self.0.positions)
            .for_each(|(t, p)| heavy_kernel(&mut t.0, &mut p.0));
    }
    fn checksum(&self) -> u64 {
        self.0.checksum()
    }
}

/// add_remove: `B` is an optional slot-indexed column; add/remove go through a handle check.
#[derive(Debug)]
pub struct AddRemove {
    generations: Vec<u32>,
    a: Vec<CompA>,
    b: Vec<Option<CompB>>,
    handles: Vec<RawHandle>,
    removed: usize,
}

impl Workload for AddRemove {
    fn setup() -> Self {
        Self {
            generations: vec![1; ADD_REMOVE_N],
            a: (0..ADD_REMOVE_N).map(comp_a).collect(),
            b: vec![None; ADD_REMOVE_N],
            handles: (0..ADD_REMOVE_N as u32)
                .map(|slot| RawHandle {
                    slot,
                    generation: 1,
                })
                .collect(),
            removed: 0,
        }
    }
    fn run(&mut self) {
        for h in &self.handles {
            if self.generations[h.slot as usize] == h.generation {
                self.b[h.slot as usize] = Some(CompB(0.0));
            }
        }
        let mut removed = 0;
        for h in &self.handles {
            if self.generations[h.slot as usize] == h.generation {
                removed += usize::from(self.b[h.slot as usize].take().is_some());
            }
        }
        self.removed = removed;
    }
    fn checksum(&self) -> u64 {
        let mut d = Digest::default();
        self.a.iter().for_each(|x| d.add_pod(x));
        self.b.iter().flatten().for_each(|x| d.add_pod(x));
        add_remove_checksum(self.removed, d)
    }
}

/// handle_get: generation check + index into a dense column.
#[derive(Debug)]
pub struct HandleGet {
    generations: Vec<u32>,
    positions: Vec<Position>,
    _velocities: Vec<Velocity>,
    lookups: Vec<RawHandle>,
    sum: u64,
}

impl Workload for HandleGet {
    fn setup() -> Self {
        Self {
            generations: vec![1; HANDLE_N],
            positions: (0..HANDLE_N).map(position).collect(),
            _velocities: (0..HANDLE_N).map(velocity).collect(),
            lookups: lookup_indices()
                .into_iter()
                .map(|i| RawHandle {
                    slot: i as u32,
                    generation: 1,
                })
                .collect(),
            sum: 0,
        }
    }
    fn run(&mut self) {
        let mut sum = 0u64;
        for h in &self.lookups {
            if self.generations.get(h.slot as usize) == Some(&h.generation) {
                sum = sum.wrapping_add(handle_get_term(&self.positions[h.slot as usize]));
            }
        }
        self.sum = sum;
    }
    fn checksum(&self) -> u64 {
        self.sum
    }
}

/// churn: generations + alive flags + free list, `CompA` in a slot-indexed column.
#[derive(Debug)]
pub struct Churn {
    generations: Vec<u32>,
    alive: Vec<bool>,
    free: Vec<u32>,
    a: Vec<CompA>,
    old: Vec<RawHandle>,
    alive_old: usize,
}

impl Churn {
    fn destroy(&mut self, h: RawHandle) -> bool {
        let s = h.slot as usize;
        if self.generations.get(s) != Some(&h.generation) || !self.alive[s] {
            return false;
        }
        self.generations[s] += 1;
        self.alive[s] = false;
        self.free.push(h.slot);
        true
    }
    fn create(&mut self, value: CompA) -> RawHandle {
        match self.free.pop() {
            Some(slot) => {
                let s = slot as usize;
                self.alive[s] = true;
                self.a[s] = value;
                RawHandle {
                    slot,
                    generation: self.generations[s],
                }
            }
            None => {
                let slot = self.generations.len() as u32;
                self.generations.push(1);
                self.alive.push(true);
                self.a.push(value);
                RawHandle {
                    slot,
                    generation: 1,
                }
            }
        }
    }
}

impl Workload for Churn {
    const FRESH_STATE: bool = true;
    fn setup() -> Self {
        let mut c = Self {
            generations: Vec::new(),
            alive: Vec::new(),
            free: Vec::new(),
            a: Vec::new(),
            old: Vec::with_capacity(CHURN_N),
            alive_old: 0,
        };
        for i in 0..CHURN_N {
            let h = c.create(comp_a(i));
            c.old.push(h);
        }
        c
    }
    fn run(&mut self) {
        let old = std::mem::take(&mut self.old);
        for h in old.iter().step_by(2) {
            self.destroy(*h);
        }
        for j in 0..CHURN_N / 2 {
            self.create(comp_a(CHURN_N + j));
        }
        self.alive_old = old
            .iter()
            .filter(|h| self.generations[h.slot as usize] == h.generation)
            .count();
        self.old = old;
    }
    fn checksum(&self) -> u64 {
        let mut d = Digest::default();
        self.a
            .iter()
            .zip(&self.alive)
            .filter(|(_, &l)| l)
            .for_each(|(x, _)| d.add_pod(x));
        churn_checksum(self.alive_old, d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn churn_keeps_exactly_the_odd_old_handles_alive() {
        let mut c = Churn::setup();
        c.run();
        assert_eq!(c.alive_old, CHURN_N / 2);
        assert_eq!(c.alive.iter().filter(|&&l| l).count(), CHURN_N);
        assert!(c
            .old
            .iter()
            .skip(1)
            .step_by(2)
            .all(|h| c.generations[h.slot as usize] == h.generation));
    }

    #[test]
    fn add_remove_adds_then_removes_every_b() {
        let mut w = AddRemove::setup();
        w.run();
        assert_eq!(w.removed, ADD_REMOVE_N);
        assert!(w.b.iter().all(Option::is_none));
    }

    #[test]
    fn handle_get_finds_every_lookup() {
        let mut w = HandleGet::setup();
        w.run();
        let want = lookup_indices()
            .into_iter()
            .fold(0u64, |s, i| s.wrapping_add(handle_get_term(&position(i))));
        assert_eq!(w.sum, want);
    }

    /// A checksum that did not change when `run` did its work would let a contender skip it.
    #[test]
    fn checksums_reflect_the_run() {
        fn changed<W: Workload>() -> bool {
            W::setup().checksum() != checksum_of::<W>()
        }
        assert!(changed::<SimpleIter>());
        assert!(changed::<FragIter>());
        assert!(changed::<HeavyCompute>());
        assert!(changed::<HeavyComputeParallel>());
        assert!(changed::<AddRemove>());
        assert!(changed::<HandleGet>());
        assert!(changed::<Churn>());
    }
}
