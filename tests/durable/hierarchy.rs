//! The hierarchy and names of a durable world: targeted checks (cycles, name budgets, stale
//! names, no allocation after init, pending destroys and unloads, arena size limit, deep
//! subtrees) and a seeded random-walk differential against a `HashMap` model of parents,
//! ordered children, names and protection, checked after every step. `HIERARCHY_SEEDS` /
//! `HIERARCHY_STEPS` scale the walk (default 300 × 400; 2 × 60 under Miri).
//!
//! This module installs the binary's global allocator: it forwards to `System` and counts the
//! allocations of a thread only while that thread arms it, so other tests are unaffected.

use std::collections::HashMap;

use bytemuck::{Pod, Zeroable};
use ludus::durable::{HierarchyError, OrphanPolicy};
use ludus::identity::test_entropy::SeqEntropy;
use ludus::prelude::*;
use ludus::world::InitError;

use crate::support::{Pos, Rng};

/// A one-dimensional velocity.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Vel(pub f32);

ludus::world! {
    pub struct W {
        pub pos: Pos,
        pub vel: Vel,
    }
    durable
}

fn world(capacity: usize, name_bytes: usize, orphans: OrphanPolicy) -> W {
    let config = DurableConfig {
        name_bytes,
        orphans,
        ..DurableConfig::default()
    };
    let mut w = W::try_new_durable(capacity, config).unwrap();
    w.begin_structural();
    w
}

// ---------------------------------------------------------------------------------------------
// Targeted checks
// ---------------------------------------------------------------------------------------------

#[test]
fn cycles_self_and_descendant_refused() {
    let mut w = world(8, 256, OrphanPolicy::Detach);
    let a = w.spawn((Pos(0.0),)).unwrap();
    let b = w.spawn((Pos(0.0),)).unwrap();
    let c = w.spawn((Pos(0.0),)).unwrap();
    w.set_parent(b, Some(a)).unwrap();
    w.set_parent(c, Some(b)).unwrap();
    assert_eq!(
        w.set_parent(a, Some(a)),
        Err(DurableError::Hierarchy(HierarchyError::Cycle))
    );
    assert_eq!(
        w.set_parent(a, Some(c)),
        Err(DurableError::Hierarchy(HierarchyError::Cycle))
    );
    assert_eq!(w.parent(a).unwrap(), None);
    // Stale parent.
    let d = w.spawn((Pos(0.0),)).unwrap();
    w.destroy(d).unwrap();
    let d2 = w.spawn((Pos(0.0),)).unwrap();
    assert_eq!(d2.slot(), d.slot());
    assert!(w.set_parent(a, Some(d)).is_err());
    assert_eq!(w.children(d2).count(), 0);
    // Foreign parent (another world's entity with the same slot).
    let mut o = world(8, 256, OrphanPolicy::Detach);
    let f = o.spawn((Pos(0.0),)).unwrap();
    assert!(w.set_parent(a, Some(f)).is_err());
    assert!(o.set_parent(f, Some(a)).is_err());
    assert_eq!(w.parent(a).unwrap(), None);
}

#[test]
fn names_at_exact_capacity_and_beyond() {
    let mut w = world(4, 32, OrphanPolicy::Detach);
    let a = w.spawn((Pos(0.0),)).unwrap();
    let b = w.spawn((Pos(0.0),)).unwrap();
    let exact = "x".repeat(26);
    w.set_name(a, &exact).unwrap();
    assert_eq!(w.name(a).unwrap(), exact);
    assert!(w.set_name(b, "y").is_err());
    // Replacing the name with one of the same size in a full arena works (compaction).
    let other = "z".repeat(26);
    w.set_name(a, &other).unwrap();
    assert_eq!(w.name(a).unwrap(), other);
    // Too long: refused, old name kept.
    assert!(w.set_name(a, &"q".repeat(27)).is_err());
    assert_eq!(w.name(a).unwrap(), other);
    // Longer than a name may be, in an arena that would hold it: its own error.
    let mut w = world(2, 200_000, OrphanPolicy::Detach);
    let a = w.spawn((Pos(0.0),)).unwrap();
    w.set_name(a, "keep").unwrap();
    assert_eq!(
        w.set_name(a, &"n".repeat(65_536)),
        Err(DurableError::Hierarchy(HierarchyError::NameTooLong {
            len: 65_536
        }))
    );
    assert_eq!(ludus::durable::MAX_NAME_LEN, 65_535);
    assert_eq!(w.name(a).unwrap(), "keep");
    w.set_name(a, &"n".repeat(65_535)).unwrap();
    assert_eq!(w.name(a).unwrap().len(), 65_535);
}

#[test]
fn stale_name_never_shows_on_reused_slot() {
    let mut w = world(4, 64, OrphanPolicy::Detach);
    let a = w.spawn((Pos(0.0),)).unwrap();
    w.set_name(a, "ghost").unwrap();
    w.destroy(a).unwrap();
    let b = w.spawn((Pos(0.0),)).unwrap();
    assert_eq!(b.slot(), a.slot());
    assert_eq!(w.name(b).unwrap(), "");
    // Fill and compact: the dead record of slot a must not be revived for b.
    let c = w.spawn((Pos(0.0),)).unwrap();
    w.set_name(c, &"c".repeat(40)).unwrap();
    w.set_name(b, "bbbbb").unwrap();
    assert_eq!(w.name(b).unwrap(), "bbbbb");
    assert_eq!(w.name(c).unwrap(), "c".repeat(40));
}

// ---------------------------------------------------------------------------------------------
// Differential random walk
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Default, Debug)]
struct Node {
    parent: Option<EntityId>,
    children: Vec<EntityId>,
    name: String,
    label: String,
    protected: bool,
}

struct Model {
    nodes: HashMap<EntityId, Node>,
    dead: Vec<EntityId>,
    policy: OrphanPolicy,
    budget: usize,
}

fn cost(len: usize) -> usize {
    if len == 0 {
        0
    } else {
        6 + len
    }
}

impl Model {
    fn live_bytes(&self) -> usize {
        self.nodes
            .values()
            .map(|n| cost(n.name.len() + n.label.len()))
            .sum()
    }
    fn is_desc_or_self(&self, anc: EntityId, mut e: EntityId) -> bool {
        loop {
            if e == anc {
                return true;
            }
            match self.nodes[&e].parent {
                Some(p) => e = p,
                None => return false,
            }
        }
    }
    fn cut(&mut self, e: EntityId) {
        if let Some(p) = self.nodes.get_mut(&e).unwrap().parent.take() {
            let ch = &mut self.nodes.get_mut(&p).unwrap().children;
            let i = ch.iter().position(|&x| x == e).unwrap();
            ch.remove(i);
        }
    }
    fn destroy(&mut self, e: EntityId) {
        let node = self.nodes[&e].clone();
        let pos = node.parent.map(|p| {
            self.nodes[&p]
                .children
                .iter()
                .position(|&x| x == e)
                .unwrap()
        });
        self.cut(e);
        for (k, &c) in node.children.iter().enumerate() {
            self.nodes.get_mut(&c).unwrap().parent = None;
            if let (OrphanPolicy::ToGrandparent, Some(g), Some(pos)) =
                (self.policy, node.parent, pos)
            {
                self.nodes.get_mut(&c).unwrap().parent = Some(g);
                self.nodes.get_mut(&g).unwrap().children.insert(pos + k, c);
            }
        }
        self.nodes.remove(&e);
        self.dead.push(e);
    }
    fn subtree(&self, e: EntityId, out: &mut Vec<EntityId>) {
        out.push(e);
        for &c in &self.nodes[&e].children {
            self.subtree(c, out);
        }
    }
}

fn pick_live(rng: &mut Rng, m: &Model) -> Option<EntityId> {
    let mut v: Vec<EntityId> = m.nodes.keys().copied().collect();
    v.sort_by_key(|e| (e.slot(), e.generation()));
    if v.is_empty() {
        None
    } else {
        Some(v[rng.below(v.len())])
    }
}

/// A handle that may be live, stale or foreign.
fn pick_any(rng: &mut Rng, m: &Model, foreign: EntityId) -> EntityId {
    match rng.below(10) {
        0 if !m.dead.is_empty() => m.dead[rng.below(m.dead.len())],
        1 => foreign,
        _ => pick_live(rng, m).unwrap_or(foreign),
    }
}

fn random_name(rng: &mut Rng, budget: usize) -> String {
    match rng.below(8) {
        0 => String::new(),
        1 => "é".repeat(rng.below(budget / 2 + 2)),
        2 => "n".repeat(budget.saturating_sub(6)),
        3 => "n".repeat(budget.saturating_sub(5)),
        _ => {
            let len = rng.below(budget / 3 + 1);
            (0..len)
                .map(|i| (b'a' + ((i + rng.below(26)) % 26) as u8) as char)
                .collect()
        }
    }
}

fn check(w: &W, m: &Model, step: usize, what: &str) {
    let ctx = || format!("step {step} after {what}");
    for (&e, n) in &m.nodes {
        assert!(w.registry.is_alive(e), "{}: {e:?} should be alive", ctx());
        assert_eq!(w.parent(e).unwrap(), n.parent, "{}: parent of {e:?}", ctx());
        let kids: Vec<EntityId> = w.children(e).collect();
        assert_eq!(kids, n.children, "{}: children of {e:?}", ctx());
        assert_eq!(w.name(e).unwrap(), n.name, "{}: name of {e:?}", ctx());
        assert_eq!(w.label(e).unwrap(), n.label, "{}: label of {e:?}", ctx());
        assert_eq!(
            w.is_protected(e),
            n.protected,
            "{}: protection {e:?}",
            ctx()
        );
    }
    for &d in &m.dead {
        assert!(!w.registry.is_alive(d), "{}", ctx());
        assert!(w.name(d).is_err());
        assert!(w.parent(d).is_err());
        assert_eq!(w.children(d).count(), 0);
    }
    assert_eq!(w.registry.len(), m.nodes.len(), "{}", ctx());
    let counts = w.counts();
    let linked = m.nodes.values().filter(|n| n.parent.is_some()).count();
    assert_eq!(counts.linked, linked, "{}: linked", ctx());
    assert_eq!(counts.name_bytes, m.live_bytes(), "{}: name bytes", ctx());
    // Outliner: roots (with links) by slot, depth first.
    let mut roots: Vec<EntityId> = m
        .nodes
        .iter()
        .filter(|(_, n)| {
            n.parent.is_none()
                && (!n.children.is_empty()
                    || !n.name.is_empty()
                    || !n.label.is_empty()
                    || n.protected)
        })
        .map(|(&e, _)| e)
        .collect();
    roots.sort_by_key(|e| e.slot());
    let mut want = Vec::new();
    fn dfs(m: &Model, e: EntityId, d: u32, out: &mut Vec<(EntityId, u32, String)>) {
        out.push((e, d, m.nodes[&e].name.clone()));
        for &c in &m.nodes[&e].children {
            dfs(m, c, d + 1, out);
        }
    }
    for r in roots {
        dfs(m, r, 0, &mut want);
    }
    let got: Vec<(EntityId, u32, String)> = w
        .outliner()
        .map(|r| (r.entity, r.depth, r.name.to_string()))
        .collect();
    assert_eq!(got, want, "{}: outliner", ctx());
}

fn run_seed(seed: u64, steps: usize, deep: bool) {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let cap = 4 + rng.below(if deep { 28 } else { 12 });
    let budget = [0usize, 7, 16, 40, 64, 128][rng.below(6)];
    let policy = if rng.chance(50) {
        OrphanPolicy::Detach
    } else {
        OrphanPolicy::ToGrandparent
    };
    let mut w = world(cap, budget, policy);
    let mut other = world(cap, budget, policy);
    let foreign = other.spawn((Pos(0.0),)).unwrap();
    let mut m = Model {
        nodes: HashMap::new(),
        dead: Vec::new(),
        policy,
        budget,
    };
    let mut cmd = CommandBuffer::try_with_capacity(64, 1024).unwrap();
    for step in 0..steps {
        let op = if deep {
            // Deep-tree mode: mostly spawns and reparenting, rare subtree destroys.
            match rng.below(40) {
                0..=7 => 0,
                8..=21 => 3,
                22..=24 => 2,
                25..=27 => 5,
                28..=30 => 6,
                31 => 8,
                32 => 9,
                33..=35 => 10,
                36 => 11,
                _ => 12,
            }
        } else {
            rng.below(13)
        };
        let what;
        match op {
            0 | 1 => {
                what = "spawn";
                let r = if rng.chance(50) {
                    w.spawn((Pos(0.0),))
                } else {
                    w.spawn((Pos(0.0), Vel(0.0)))
                };
                match r {
                    Ok(e) => {
                        assert!(!m.nodes.contains_key(&e));
                        m.nodes.insert(e, Node::default());
                    }
                    Err(_) => assert_eq!(m.nodes.len(), cap, "spawn failed below capacity"),
                }
            }
            2 => {
                what = "destroy";
                let e = pick_any(&mut rng, &m, foreign);
                let r = w.destroy(e);
                match m.nodes.get(&e) {
                    None => assert!(r.is_err()),
                    Some(n) if n.protected => assert_eq!(r, Err(WorldError::Protected)),
                    Some(_) => {
                        r.unwrap();
                        m.destroy(e);
                    }
                }
            }
            3 | 4 => {
                what = "set_parent";
                let c = pick_any(&mut rng, &m, foreign);
                let p = match rng.below(6) {
                    0 => None,
                    1 => Some(c),
                    _ => Some(pick_any(&mut rng, &m, foreign)),
                };
                let r = w.set_parent(c, p);
                let expect: Result<(), &str> = if !m.nodes.contains_key(&c) {
                    Err("dead child")
                } else if m.nodes[&c].protected {
                    Err("protected")
                } else if p.is_some_and(|p| !m.nodes.contains_key(&p)) {
                    Err("dead parent")
                } else if p.is_some_and(|p| m.is_desc_or_self(c, p)) {
                    Err("cycle")
                } else {
                    Ok(())
                };
                match expect {
                    Ok(()) => {
                        r.unwrap_or_else(|e| panic!("step {step}: set_parent refused: {e:?}"));
                        m.cut(c);
                        if let Some(p) = p {
                            m.nodes.get_mut(&c).unwrap().parent = Some(p);
                            m.nodes.get_mut(&p).unwrap().children.push(c);
                        }
                    }
                    Err(why) => {
                        assert!(r.is_err(), "step {step}: set_parent accepted ({why})");
                        match why {
                            "protected" => assert_eq!(
                                r,
                                Err(DurableError::Hierarchy(HierarchyError::Protected))
                            ),
                            "cycle" => {
                                assert_eq!(r, Err(DurableError::Hierarchy(HierarchyError::Cycle)))
                            }
                            _ => {}
                        }
                    }
                }
            }
            5 => {
                what = "move_child";
                let c = pick_any(&mut rng, &m, foreign);
                let idx = rng.below(5);
                let r = w.move_child(c, idx);
                match m.nodes.get(&c).map(|n| n.parent) {
                    None => assert!(r.is_err()),
                    Some(None) => {
                        assert_eq!(r, Err(DurableError::Hierarchy(HierarchyError::NotAChild)))
                    }
                    Some(Some(p)) => {
                        let len = m.nodes[&p].children.len();
                        if idx >= len {
                            assert_eq!(
                                r,
                                Err(DurableError::Hierarchy(HierarchyError::ChildIndex {
                                    index: idx,
                                    len
                                }))
                            );
                        } else {
                            r.unwrap();
                            let ch = &mut m.nodes.get_mut(&p).unwrap().children;
                            let i = ch.iter().position(|&x| x == c).unwrap();
                            ch.remove(i);
                            ch.insert(idx, c);
                        }
                    }
                }
            }
            6 => {
                what = "set_name";
                let e = pick_any(&mut rng, &m, foreign);
                let name = random_name(&mut rng, budget);
                let r = w.set_name(e, &name);
                match m.nodes.get(&e) {
                    None => assert!(r.is_err()),
                    Some(n) => {
                        let held = n.name.len() + n.label.len();
                        let free = m.budget - (m.live_bytes() - cost(held));
                        if cost(name.len() + n.label.len()) > free {
                            assert!(
                                matches!(
                                    r,
                                    Err(DurableError::Hierarchy(HierarchyError::NameBudget { .. }))
                                ),
                                "step {step}: {r:?}"
                            );
                        } else {
                            r.unwrap();
                            m.nodes.get_mut(&e).unwrap().name = name;
                        }
                    }
                }
            }
            7 => {
                what = "set_label";
                let e = pick_any(&mut rng, &m, foreign);
                let label = match rng.below(6) {
                    0 => String::new(),
                    1 => "bad label".to_owned(),
                    2 => "l".repeat(65),
                    3 => "l".repeat(64),
                    _ => format!("guard-{}", rng.below(1000)),
                };
                let r = w.set_label(e, &label);
                match m.nodes.get(&e) {
                    None => assert!(r.is_err()),
                    Some(_) if label.contains(' ') || label.len() > 64 => assert!(
                        matches!(
                            r,
                            Err(DurableError::Hierarchy(HierarchyError::InvalidLabel))
                        ),
                        "step {step}: {r:?}"
                    ),
                    Some(n) => {
                        let held = n.name.len() + n.label.len();
                        let free = m.budget - (m.live_bytes() - cost(held));
                        if cost(n.name.len() + label.len()) > free {
                            assert!(
                                matches!(
                                    r,
                                    Err(DurableError::Hierarchy(HierarchyError::NameBudget { .. }))
                                ),
                                "step {step}: {r:?}"
                            );
                        } else {
                            r.unwrap();
                            m.nodes.get_mut(&e).unwrap().label = label;
                        }
                    }
                }
            }
            8 => {
                what = "set_protected";
                let e = pick_any(&mut rng, &m, foreign);
                let on = rng.chance(40);
                let r = w.set_protected(e, on);
                match m.nodes.get(&e) {
                    None => assert!(r.is_err()),
                    Some(n) if on && n.parent.is_some() => {
                        assert_eq!(r, Err(DurableError::Hierarchy(HierarchyError::NotRoot)))
                    }
                    Some(_) => {
                        r.unwrap();
                        m.nodes.get_mut(&e).unwrap().protected = on;
                    }
                }
            }
            9 => {
                what = "policy";
                let p = if rng.chance(50) {
                    OrphanPolicy::Detach
                } else {
                    OrphanPolicy::ToGrandparent
                };
                w.set_orphan_policy(p);
                m.policy = p;
            }
            10 => {
                what = "commit";
                // Distinct live targets, destroys and respawns mixed, plus a create.
                let mut targets: Vec<EntityId> = Vec::new();
                let k = rng.below(4) + 1;
                for _ in 0..k {
                    if let Some(e) = pick_live(&mut rng, &m) {
                        if !targets.contains(&e) {
                            targets.push(e);
                        }
                    }
                }
                let mut plan = Vec::new();
                for &e in &targets {
                    if rng.chance(50) {
                        cmd.destroy(&w.registry, e).unwrap();
                        plan.push((e, None));
                    } else {
                        let p = cmd.respawn(&w.registry, e, (Pos(1.0),)).unwrap();
                        plan.push((e, Some(p)));
                    }
                }
                let create = if rng.chance(30) {
                    Some(cmd.create().unwrap())
                } else {
                    None
                };
                let any_protected = targets.iter().any(|e| m.nodes[e].protected);
                let r = w.commit(&mut cmd);
                if any_protected {
                    assert_eq!(r, Err(WorldError::Protected));
                    cmd.clear(&w.registry).unwrap();
                } else if r.is_err() {
                    // Only capacity can refuse (a create with no free slot).
                    assert!(create.is_some(), "step {step}: commit refused: {r:?}");
                    cmd.clear(&w.registry).unwrap();
                } else {
                    for (e, p) in plan {
                        m.destroy(e);
                        if let Some(p) = p {
                            let n = cmd.resolve(p).unwrap();
                            m.nodes.insert(n, Node::default());
                        }
                    }
                    if let Some(p) = create {
                        m.nodes.insert(cmd.resolve(p).unwrap(), Node::default());
                    }
                    cmd.clear(&w.registry).unwrap();
                }
            }
            11 => {
                what = "destroy_subtree";
                let e = pick_any(&mut rng, &m, foreign);
                let r = w.destroy_subtree(e);
                match m.nodes.get(&e) {
                    None => assert!(r.is_err()),
                    Some(n) if n.protected => assert!(r.is_err()),
                    Some(_) => {
                        let mut sub = Vec::new();
                        m.subtree(e, &mut sub);
                        assert_eq!(r.unwrap(), sub.len(), "step {step}");
                        // Leaves first: no policy applies; only the root leaves its parent.
                        m.cut(e);
                        for s in sub {
                            m.nodes.remove(&s);
                            m.dead.push(s);
                        }
                    }
                }
            }
            _ => {
                what = "duplicate";
                let mut sel: Vec<EntityId> = Vec::new();
                for _ in 0..rng.below(3) + 1 {
                    if let Some(e) = pick_live(&mut rng, &m) {
                        if !sel.contains(&e) {
                            sel.push(e);
                        }
                    }
                }
                let mut out = vec![EntityId::NULL; sel.len()];
                let r = w.duplicate(&sel, &mut SeqEntropy::new(step as u64), &mut out);
                let names: usize = sel.iter().map(|e| cost(m.nodes[e].name.len())).sum();
                if sel.iter().any(|e| m.nodes[e].protected) {
                    assert!(r.is_err());
                } else if names > m.budget - m.live_bytes() {
                    assert!(
                        matches!(
                            r,
                            Err(DurableError::Hierarchy(HierarchyError::NameBudget { .. }))
                        ),
                        "step {step}: {r:?}"
                    );
                } else if m.nodes.len() + sel.len() > cap {
                    assert!(r.is_err());
                } else {
                    r.unwrap_or_else(|e| panic!("step {step}: duplicate refused: {e:?}"));
                    for &c in &out {
                        m.nodes.insert(c, Node::default());
                    }
                    for (i, &src) in sel.iter().enumerate() {
                        let parent = m.nodes[&src]
                            .parent
                            .map(|p| sel.iter().position(|&x| x == p).map_or(p, |j| out[j]));
                        let dst = out[i];
                        let name = m.nodes[&src].name.clone();
                        let n = m.nodes.get_mut(&dst).unwrap();
                        n.parent = parent;
                        n.name = name;
                        if let Some(p) = parent {
                            m.nodes.get_mut(&p).unwrap().children.push(dst);
                        }
                    }
                }
            }
        }
        check(&w, &m, step, what);
    }
}

#[test]
fn differential_random_walk() {
    let seeds: u64 = std::env::var("HIERARCHY_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if cfg!(miri) { 2 } else { 300 });
    let steps: usize = std::env::var("HIERARCHY_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if cfg!(miri) { 60 } else { 400 });
    for seed in 0..seeds {
        let r = std::panic::catch_unwind(|| run_seed(seed, steps, seed % 2 == 1));
        if r.is_err() {
            panic!("seed {seed} failed");
        }
    }
}

/// A name arena past what a node's 32-bit name offset addresses is refused at init (names
/// stored past 4 GiB would get a truncated offset and read another record's bytes).
#[cfg(target_pointer_width = "64")]
#[test]
fn name_arena_past_the_offset_range_is_refused() {
    use ludus::durable::MAX_NAME_BYTES;
    let config = |name_bytes| DurableConfig {
        name_bytes,
        ..DurableConfig::default()
    };
    let too_large = W::try_new_durable(4, config(MAX_NAME_BYTES + 1));
    assert!(matches!(
        too_large,
        Err(InitError::CapacityTooLarge { requested, max })
            if requested == MAX_NAME_BYTES + 1 && max == MAX_NAME_BYTES
    ));
    assert!(W::try_new_durable(4, config(1 << 10)).is_ok());
}

// ---------------------------------------------------------------------------------------------
// No allocation after init (global allocator, counted on this thread only while armed)
// ---------------------------------------------------------------------------------------------

struct Counting;
std::thread_local! {
    static ARMED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    static ALLOCS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}
// SAFETY: forwards to `System`.
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        if ARMED.with(|a| a.get()) {
            ALLOCS.with(|c| c.set(c.get() + 1));
        }
        // SAFETY: the caller's contract for `alloc`, passed on unchanged.
        unsafe { std::alloc::System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
        // SAFETY: `p` came from `System` (every allocation here does) with layout `l`.
        unsafe { std::alloc::System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: std::alloc::Layout, n: usize) -> *mut u8 {
        if ARMED.with(|a| a.get()) {
            ALLOCS.with(|c| c.set(c.get() + 1));
        }
        // SAFETY: `p` came from `System` with layout `l`; the caller's contract for `realloc`.
        unsafe { std::alloc::System.realloc(p, l, n) }
    }
}
#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `f` and returns what it returned with the allocations it made on this thread.
pub fn allocations<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = ALLOCS.with(|c| c.get());
    ARMED.with(|a| a.set(true));
    let out = f();
    ARMED.with(|a| a.set(false));
    (out, ALLOCS.with(|c| c.get()) - before)
}

#[test]
fn hierarchy_operations_do_not_allocate() {
    let mut w = world(16, 48, OrphanPolicy::ToGrandparent);
    let mut cmd = CommandBuffer::try_with_capacity(32, 512).unwrap();
    let es: Vec<EntityId> = (0..8).map(|_| w.spawn((Pos(0.0),)).unwrap()).collect();
    let mut out = [EntityId::NULL; 2];
    let mut entropy = SeqEntropy::new(1);
    ARMED.with(|a| a.set(true));
    {
        let round = 0;
        w.set_parent(es[1], Some(es[0])).unwrap();
        w.set_parent(es[2], Some(es[1])).unwrap();
        w.set_parent(es[3], Some(es[1])).unwrap();
        w.move_child(es[3], 0).unwrap();
        // Fill and compact the arena.
        for (i, &e) in es.iter().enumerate().take(4) {
            let _ = w.set_name(e, ["abcdefgh", "ij", "", "klmnopqrstu"][(i + round) % 4]);
        }
        let _ = w.set_name(es[5], "0123456789abcdefghij");
        let _ = w.outliner().count();
        let _ = w.counts();
        let _ = w.children(es[0]).count();
        let _ = w.parent(es[2]);
        let _ = w.name(es[0]);
        let _ = w.set_parent(es[0], Some(es[2]));
        let _ = w.set_name(es[5], "");
        w.duplicate(&[es[1], es[2]], &mut entropy, &mut out)
            .unwrap();
        w.destroy_subtree(out[0]).unwrap();
        w.destroy(es[1]).unwrap(); // 2 and 3 go to 0
        cmd.destroy(&w.registry, es[2]).unwrap();
        let p = cmd.respawn(&w.registry, es[3], (Pos(1.0),)).unwrap();
        w.commit(&mut cmd).unwrap();
        let n3 = cmd.resolve(p).unwrap();
        cmd.clear(&w.registry).unwrap();
        let n1 = w.spawn((Pos(0.0),)).unwrap();
        let n2 = w.spawn((Pos(0.0),)).unwrap();
        assert!([n1, n2, n3].iter().all(|&e| w.registry.is_alive(e)));
    }
    ARMED.with(|a| a.set(false));
    assert_eq!(ALLOCS.with(|c| c.get()), 0, "allocations after init");
}

/// `destroy_subtree` over a deep chain with side branches destroys exactly the subtree and
/// leaves the rest linked as it was (the walk resumes at each leaf's parent: one step per
/// link, where restarting at the root made a chain of n cost n²/2).
#[test]
fn destroy_subtree_of_a_deep_branching_chain() {
    let n = if cfg!(miri) { 40 } else { 3_000 };
    let mut w = world(2 * n + 4, 64, OrphanPolicy::ToGrandparent);
    let keep = w.spawn((Pos(0.0),)).unwrap();
    let root = w.spawn((Pos(0.0),)).unwrap();
    w.set_parent(root, Some(keep)).unwrap();
    let sibling = w.spawn((Pos(0.0),)).unwrap();
    w.set_parent(sibling, Some(keep)).unwrap();
    let mut prev = root;
    let mut subtree = vec![root];
    for i in 1..n {
        let e = w.spawn((Pos(0.0),)).unwrap();
        w.set_parent(e, Some(prev)).unwrap();
        subtree.push(e);
        if i % 3 == 0 {
            // A side leaf, and every third of them a side chain of two.
            let side = w.spawn((Pos(0.0),)).unwrap();
            w.set_parent(side, Some(prev)).unwrap();
            subtree.push(side);
        }
        prev = e;
    }
    w.set_name(sibling, "kept").unwrap();
    let live = w.registry.len();
    assert_eq!(w.destroy_subtree(root).unwrap(), subtree.len());
    assert_eq!(w.registry.len(), live - subtree.len());
    assert!(subtree.iter().all(|&e| !w.registry.is_alive(e)));
    assert_eq!(w.children(keep).collect::<Vec<_>>(), [sibling]);
    assert_eq!(w.parent(sibling).unwrap(), Some(keep));
    assert_eq!(w.name(sibling).unwrap(), "kept");
    assert_eq!(w.counts().linked, 1);
}

#[test]
fn the_allocation_counter_counts() {
    ARMED.with(|a| a.set(true));
    let v: Vec<u8> = Vec::with_capacity(10);
    ARMED.with(|a| a.set(false));
    drop(v);
    assert_eq!(ALLOCS.with(|c| c.get()), 1);
}

#[test]
fn pending_unload_and_phase_interplay() {
    use ludus::identity::{InstanceId, PersistentObjectKey, SourceObjectId};
    let mut w = world(8, 64, OrphanPolicy::ToGrandparent);
    let g = w.spawn((Pos(0.0),)).unwrap();
    let p = w.spawn((Pos(0.0),)).unwrap();
    let c1 = w.spawn((Pos(0.0),)).unwrap();
    let c2 = w.spawn((Pos(0.0),)).unwrap();
    let s = w.spawn((Pos(0.0),)).unwrap();
    w.set_parent(p, Some(g)).unwrap();
    w.set_parent(s, Some(g)).unwrap();
    // Pending parent: children still attach to it; the commit reparents them.
    let mut cmd = CommandBuffer::try_with_capacity(8, 64).unwrap();
    cmd.destroy(&w.registry, p).unwrap();
    w.set_parent(c1, Some(p)).unwrap();
    w.set_parent(c2, Some(p)).unwrap();
    // A pending entity cannot be duplicated.
    let mut out = [EntityId::NULL];
    assert!(w
        .duplicate(&[p], &mut SeqEntropy::new(3), &mut out)
        .is_err());
    w.commit(&mut cmd).unwrap();
    cmd.clear(&w.registry).unwrap();
    assert_eq!(w.children(g).collect::<Vec<_>>(), [c1, c2, s]);
    // destroy_subtree outside the structural phase changes nothing.
    w.end_structural();
    assert_eq!(
        w.destroy_subtree(g),
        Err(DurableError::World(WorldError::InvalidPhase))
    );
    w.begin_structural();
    assert_eq!(w.children(g).collect::<Vec<_>>(), [c1, c2, s]);
    // Unload a bound middle entity: its unbound children go to the grandparent.
    let inst: InstanceId = "0190a5c2-7b1e-4c3d-9e4f-5a6b7c8d9e0f".parse().unwrap();
    let obj: SourceObjectId = "0190a5c2-7b1e-4c3d-9e4f-5a6b7c8d9e10".parse().unwrap();
    let k = PersistentObjectKey::new(inst, obj);
    let mid = w.spawn((Pos(0.0),)).unwrap();
    w.set_parent(mid, Some(c1)).unwrap();
    let leaf = w.spawn((Pos(0.0),)).unwrap();
    w.set_parent(leaf, Some(mid)).unwrap();
    w.set_name(leaf, "leaf").unwrap();
    w.activate(&[Activation::new(mid, k)]).unwrap();
    assert_eq!(w.unload(inst).unwrap(), 1);
    assert_eq!(w.parent(leaf).unwrap(), Some(c1));
    assert_eq!(w.name(leaf).unwrap(), "leaf");
    // A pending descendant destroyed by destroy_subtree: the buffer's commit is refused.
    cmd.destroy(&w.registry, c2).unwrap();
    w.destroy_subtree(g).unwrap();
    assert!(w.commit(&mut cmd).is_err());
    cmd.clear(&w.registry).unwrap();
    assert_eq!(w.registry.len(), 0);
    assert_eq!(w.counts().linked, 0);
    assert_eq!(w.counts().name_bytes, 0);
}
