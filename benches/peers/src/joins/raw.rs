//! Hand-written archetype tables: one structure-of-arrays table per component set, in spawn
//! order; a join walks the tables whose set contains the joined types and zips their slices.

use super::*;
use crate::Digest;

/// One table: the entities holding exactly `mask`'s optional components.
#[derive(Default)]
struct Table {
    mask: u8,
    positions: Vec<Position>,
    velocities: Vec<Velocity>,
    data: Vec<Data>,
    rotations: Vec<Rotation>,
}

/// The archetype tables of one shape.
pub struct Tables(Vec<Table>);

impl Tables {
    fn build(shape: Shape) -> Self {
        let mut tables: Vec<Table> = (0..8u8)
            .map(|mask| Table {
                mask,
                ..Table::default()
            })
            .collect();
        for i in 0..JOIN_N {
            let (p, v, d, r) = components(shape, i);
            let t = &mut tables[usize::from(mask(shape, i))];
            t.positions.push(p);
            t.velocities.extend(v);
            t.data.extend(d);
            t.rotations.extend(r);
        }
        tables.retain(|t| !t.positions.is_empty());
        Self(tables)
    }
    fn run2(&mut self) {
        for t in self.0.iter_mut().filter(|t| t.mask & 1 != 0) {
            t.positions
                .iter_mut()
                .zip(&t.velocities)
                .for_each(|(p, v)| step2(p, v));
        }
    }
    fn run3(&mut self) {
        for t in self.0.iter_mut().filter(|t| t.mask & 3 == 3) {
            t.positions
                .iter_mut()
                .zip(&t.velocities)
                .zip(&t.data)
                .for_each(|((p, v), d)| step3(p, v, d));
        }
    }
    fn run4(&mut self) {
        for t in self.0.iter_mut().filter(|t| t.mask & 7 == 7) {
            t.positions
                .iter_mut()
                .zip(&t.velocities)
                .zip(&t.data)
                .zip(&t.rotations)
                .for_each(|(((p, v), d), r)| step4(p, v, d, r));
        }
    }
    fn digest(&self) -> u64 {
        let mut d = Digest::default();
        self.0
            .iter()
            .flat_map(|t| &t.positions)
            .for_each(|p| d.add_pod(p));
        d.0
    }
}

crate::join_workloads!(Tables);
