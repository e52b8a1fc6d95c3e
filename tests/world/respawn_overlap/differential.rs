// Included by `respawn_overlap.rs` (once per world type) with `Wd` and `GROUPED` in scope: the
// differential of a partial respawn against destroy + spawn.
        /// Everything observable but dense order; panics on a broken invariant or a join
        /// that disagrees with the per-entity rows.
        pub fn observe(w: &mut Wd, ctx: &str) -> BTreeMap<(u32, u32), Row> {
            if GROUPED && !super::SKIP_GROUPS.with(|c| c.get()) {
                assert!(w.check_groups(), "{ctx}: groups");
            }
            assert!(w.check_clusters(), "{ctx}: clusters");
            assert!(w.check_pools(), "{ctx}: pool indexes");
            assert!(keys_unique(&w.a) && keys_unique(&w.b) && keys_unique(&w.c), "{ctx}");
            assert!(keys_unique(&w.d) && keys_unique(&w.e) && keys_unique(&w.f), "{ctx}");
            let mut all: Vec<EntityId> = Vec::new();
            all.extend(w.a.owners().iter());
            all.extend(w.b.owners().iter());
            all.extend(w.c.owners().iter());
            all.extend(w.d.owners().iter());
            all.extend(w.e.owners().iter());
            all.extend(w.f.owners().iter());
            assert!(all.iter().all(|&e| w.registry.is_alive(e)), "{ctx}: row of a dead entity");
            all.sort();
            all.dedup();
            let mut rows = BTreeMap::new();
            for &e in &all {
                let r: Row = [
                    w.get::<A>(e).map(|x| x.0),
                    w.get::<B>(e).map(|x| x.0),
                    w.get::<C>(e).map(|x| x.0),
                    w.get::<D>(e).map(|x| x.0),
                    w.get::<E>(e).map(|x| x.0),
                    w.get::<F>(e).map(|x| x.0),
                ];
                rows.insert(sg(e), r);
            }
            // Aligned pairs hold equal keys.
            macro_rules! aligned {
                ($p:expr, $q:expr) => {
                    if join((&$p, &$q)).plan() == JoinPlan::Aligned {
                        let x: Vec<_> = $p.owners().iter().collect();
                        let y: Vec<_> = $q.owners().iter().collect();
                        assert_eq!(x, y, "{ctx}: aligned pools with different keys");
                    }
                };
            }
            aligned!(w.c, w.d);
            aligned!(w.c, w.e);
            aligned!(w.c, w.f);
            aligned!(w.d, w.e);
            aligned!(w.d, w.f);
            aligned!(w.e, w.f);
            aligned!(w.a, w.d);
            // Joins against the rows: `$sel` picks the expected tuple from a row.
            macro_rules! check {
                ($j:expr, |$e:ident, $t:pat_param| $out:expr, |$r:ident| $sel:expr) => {{
                    let j = $j;
                    let plan = j.plan();
                    STATS.with(|s| { let mut s = s.borrow_mut(); match plan { JoinPlan::Runs => s.1 += 1, JoinPlan::Aligned => s.2 += 1, _ => s.3 += 1 } });
                    let mut got: Vec<_> = j.map(|($e, $t)| (sg($e), $out)).collect();
                    let n = got.len();
                    got.sort();
                    got.dedup();
                    assert_eq!(n, got.len(), "{ctx}: duplicate rows ({plan:?})");
                    let expect: Vec<_> = rows
                        .iter()
                        .filter_map(|(k, $r)| Some((*k, $sel)))
                        .collect();
                    assert_eq!(got, expect, "{ctx}: {} ({plan:?})", stringify!($j));
                }};
            }
            check!(join((&w.d, &w.e, &w.f)), |e, (d, x, f)| (d.0, x.0, f.0),
                |r| (r[3]?, r[4]?, r[5]?));
            check!(join((&w.d, &w.e)), |e, (d, x)| (d.0, x.0), |r| (r[3]?, r[4]?));
            check!(join((&w.e, &w.f)), |e, (x, f)| (x.0, f.0), |r| (r[4]?, r[5]?));
            check!(join((&w.f, &w.d)), |e, (f, d)| (f.0, d.0), |r| (r[5]?, r[3]?));
            check!(join((&w.d, opt(&w.e))), |e, (d, x)| (d.0, x.map(|x| x.0)),
                |r| (r[3]?, r[4]));
            check!(join((&w.d, without(&w.e))), |e, (d, ())| d.0,
                |r| if r[4].is_none() { r[3]? } else { None? });
            check!(join((&w.e, without(&w.d), opt(&w.f))), |e, (x, (), f)| (x.0, f.map(|f| f.0)),
                |r| if r[3].is_none() { (r[4]?, r[5]) } else { None? });
            check!(join((&w.f, without(&w.d))), |e, (f, ())| f.0,
                |r| if r[3].is_none() { r[5]? } else { None? });
            check!(join((&w.a, &w.d)), |e, (a, d)| (a.0, d.0), |r| (r[0]?, r[3]?));
            check!(join((&w.c, &w.d)), |e, (c, d)| (c.0, d.0), |r| (r[2]?, r[3]?));
            check!(join((&w.c, &w.e, &w.f)), |e, (c, x, f)| (c.0, x.0, f.0),
                |r| (r[2]?, r[4]?, r[5]?));
            check!(join((&w.a, &w.b, &w.c)), |e, (a, b, c)| (a.0, b.0, c.0),
                |r| (r[0]?, r[1]?, r[2]?));
            check!(join((&w.b, opt(&w.d), without(&w.a))), |e, (b, d, ())| (b.0, d.map(|d| d.0)),
                |r| if r[0].is_none() { (r[1]?, r[3]) } else { None? });
            rows
        }
    
        pub fn differential(seed: u64, rounds: usize, capacity: usize) {
            let mut rng = Rng(seed | 1);
            let mut x = Wd::try_new(capacity).unwrap(); // respawn
            let mut y = Wd::try_new(capacity).unwrap(); // destroy + spawn
            let mut hx: Vec<EntityId> = Vec::new();
            let mut hy: Vec<EntityId> = Vec::new();
            let mut cx = CommandBuffer::try_with_capacity(128, 4096).unwrap();
            let mut cy = CommandBuffer::try_with_capacity(128, 4096).unwrap();
            let mut in_place = 0usize;
            for round in 0..rounds {
                let ctx = format!("seed {seed:#x} round {round}");
                for _ in 0..rng.below(4) {
                    match rng.below(8) {
                        0 | 1 if hx.len() + 2 < capacity => {
                            let m = SHAPES[rng.below(SHAPES.len())];
                            let v = rng.next() as u32 & 0xffff;
                            let ex = with_mask!(m, v, |b| x.spawn(b)).unwrap();
                            let ey = with_mask!(m, v, |b| y.spawn(b)).unwrap();
                            assert_eq!(sg(ex), sg(ey));
                            hx.push(ex);
                            hy.push(ey);
                        }
                        2 if !hx.is_empty() => {
                            let i = rng.below(hx.len());
                            x.destroy(hx.swap_remove(i)).unwrap();
                            y.destroy(hy.swap_remove(i)).unwrap();
                        }
                        3 if !hx.is_empty() => {
                            let i = rng.below(hx.len());
                            let v = rng.next() as u32 & 0xffff;
                            macro_rules! both {
                                ($f:ident, $($t:tt)*) => {{
                                    x.$f(hx[i], $($t)*).unwrap();
                                    y.$f(hy[i], $($t)*).unwrap();
                                }};
                            }
                            match rng.below(8) {
                                0 => both!(insert, D(v)),
                                1 => both!(insert, E(v)),
                                2 => both!(insert, F(v)),
                                3 => both!(insert, A(v)),
                                4 => { x.remove::<D>(hx[i]).unwrap(); y.remove::<D>(hy[i]).unwrap(); }
                                5 => { x.remove::<E>(hx[i]).unwrap(); y.remove::<E>(hy[i]).unwrap(); }
                                6 => { x.remove::<B>(hx[i]).unwrap(); y.remove::<B>(hy[i]).unwrap(); }
                                _ => { x.remove::<F>(hx[i]).unwrap(); y.remove::<F>(hy[i]).unwrap(); }
                            }
                        }
                        4 | 5 => {
                            let k = rng.below(6);
                            for w in [&mut x, &mut y] {
                                let _ = match k {
                                    0 => cluster((&mut w.d, &mut w.e, &mut w.f)),
                                    1 => cluster((&mut w.d, &mut w.e)),
                                    2 => cluster((&mut w.f, &mut w.e, &mut w.d)),
                                    3 => cluster((&mut w.a, &mut w.d, &mut w.e)),
                                    4 => cluster((&mut w.c, &mut w.d, &mut w.e, &mut w.f)),
                                    _ => cluster((&mut w.b, &mut w.f)),
                                };
                            }
                        }
                        6 if hx.len() + 8 < capacity => {
                            let n = rng.below(5);
                            let v = rng.next() as u32 & 0xffff;
                            let mut ox = vec![EntityId::NULL; n];
                            let mut oy = vec![EntityId::NULL; n];
                            if rng.below(2) == 0 {
                                x.spawn_batch_into((0..n as u32).map(|i| (D(v ^ i), E(i), F(v))), &mut ox).unwrap();
                                y.spawn_batch_into((0..n as u32).map(|i| (D(v ^ i), E(i), F(v))), &mut oy).unwrap();
                            } else {
                                x.spawn_batch_into((0..n as u32).map(|i| (C(v ^ i), D(i), E(v))), &mut ox).unwrap();
                                y.spawn_batch_into((0..n as u32).map(|i| (C(v ^ i), D(i), E(v))), &mut oy).unwrap();
                            }
                            hx.extend(ox);
                            hy.extend(oy);
                        }
                        7 => {
                            x.sort_pools();
                            y.sort_pools();
                        }
                        _ => {}
                    }
                }
                let mut picked = HashSet::new();
                let mut replaced = Vec::new();
                let mut spawned = Vec::new();
                let mut destroyed = Vec::new();
                let mut budget = capacity - hx.len();
                for _ in 0..rng.below(10) {
                    if hx.is_empty() {
                        break;
                    }
                    let i = rng.below(hx.len());
                    let v = rng.next() as u32 & 0xffff;
                    match rng.below(8) {
                        0..=4 if !picked.contains(&i) => {
                            picked.insert(i);
                            let m = SHAPES[rng.below(SHAPES.len())];
                            let px = with_mask!(m, v, |b| cx.respawn(&x.registry, hx[i], b)).unwrap();
                            cy.destroy(&y.registry, hy[i]).unwrap();
                            let py = with_mask!(m, v, |b| cy.spawn(&y.registry, b)).unwrap();
                            if rng.below(4) == 0 {
                                cx.insert(&x.registry, px, E(v ^ 9)).unwrap();
                                cy.insert(&y.registry, py, E(v ^ 9)).unwrap();
                            }
                            if rng.below(5) == 0 {
                                cx.remove::<D, _>(&x.registry, px).unwrap();
                                cy.remove::<D, _>(&y.registry, py).unwrap();
                            }
                            replaced.push((i, px, py));
                        }
                        5 if !picked.contains(&i) => {
                            picked.insert(i);
                            cx.destroy(&x.registry, hx[i]).unwrap();
                            cy.destroy(&y.registry, hy[i]).unwrap();
                            destroyed.push(i);
                            budget += 1;
                        }
                        6 if budget > 0 => {
                            budget -= 1;
                            let m = SHAPES[rng.below(SHAPES.len())];
                            let px = with_mask!(m, v, |b| cx.spawn(&x.registry, b)).unwrap();
                            let py = with_mask!(m, v, |b| cy.spawn(&y.registry, b)).unwrap();
                            spawned.push((px, py));
                        }
                        _ if !picked.contains(&i) => {
                            cx.insert(&x.registry, hx[i], F(v)).unwrap();
                            cy.insert(&y.registry, hy[i], F(v)).unwrap();
                        }
                        _ => {}
                    }
                }
                if rng.below(2) == 0 {
                    let k = rng.below(3);
                    for w in [&mut x, &mut y] {
                        let _ = match k {
                            0 => cluster((&mut w.d, &mut w.e, &mut w.f)),
                            1 => cluster((&mut w.e, &mut w.f)),
                            _ => cluster((&mut w.a, &mut w.e, &mut w.d)),
                        };
                    }
                }
                let (rx, ry) = (x.commit(&mut cx), y.commit(&mut cy));
                assert_eq!(rx, ry, "{ctx}");
                if rx.is_err() {
                    cx.clear(&x.registry).unwrap();
                    cy.clear(&y.registry).unwrap();
                    continue;
                }
                for &(i, px, py) in &replaced {
                    let (nx, ny) = (cx.resolve(px).unwrap(), cy.resolve(py).unwrap());
                    assert_eq!(sg(nx), sg(ny), "{ctx}: replacement handles");
                    if nx.slot() == hx[i].slot() {
                        in_place += 1;
                    }
                    hx[i] = nx;
                    hy[i] = ny;
                }
                for &(px, py) in &spawned {
                    let (nx, ny) = (cx.resolve(px).unwrap(), cy.resolve(py).unwrap());
                    assert_eq!(sg(nx), sg(ny));
                    hx.push(nx);
                    hy.push(ny);
                }
                destroyed.sort_unstable();
                for &i in destroyed.iter().rev() {
                    hx.swap_remove(i);
                    hy.swap_remove(i);
                }
                assert_eq!(
                    x.registry.structural_revision(),
                    y.registry.structural_revision(),
                    "{ctx}: revisions"
                );
                assert_eq!(x.registry.last_sequence(), y.registry.last_sequence());
                assert_eq!(x.registry.available(), y.registry.available());
                let (ox, oy) = (observe(&mut x, &ctx), observe(&mut y, &ctx));
                assert_eq!(ox, oy, "{ctx}");
            }
            STATS.with(|s| { let mut s = s.borrow_mut(); s.0 += in_place; });
            let _ = GROUPED;
        }
    
