//! The runnable tour of ludus (the README's main job).
//!
//! Walks through durable ids, runtime handles, allocation domains, the scratch arena, a small
//! world with systems, a command-buffer commit and clustered joins, durable identity in a level (bind,
//! resolve, unload, reload, duplicate), persistent spawn, and content (save a level as a
//! version-2 World record, restore it into a fresh world), printing what happens and how long
//! it took.
//! The timings are illustrations; the measured claims live in `perf-results/`.

use std::time::Instant;

use bytemuck::{Pod, Zeroable};
use ludus::identity::{
    format_uuid, AssetId, BatchedMinter, InstanceId, OsEntropy, PersistentObjectKey,
    SourceObjectId, UuidPolicy, UUID_TEXT_LEN,
};
use ludus::memory::{AllocationDomain, DomainAllocator, LinearArena};
use ludus::prelude::*;
use ludus::world::{cluster, opt, without};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable, Serialize, Deserialize)]
#[repr(C)]
struct Position {
    x: f32,
    y: f32,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
#[repr(C)]
struct Velocity {
    x: f32,
    y: f32,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
#[repr(C)]
struct Health(i32);

/// A component that names another entity: duplication rewrites it inside the selection; in a
/// record it holds the target's UUID.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable, Serialize, Deserialize)]
#[repr(C)]
struct Follow {
    #[serde(with = "ludus::content::entity_ref")]
    target: EntityId,
}

impl EntityRefs for Follow {
    fn visit_entities(&mut self, visit: &mut dyn FnMut(&mut EntityId)) {
        visit(&mut self.target);
    }
}

ludus::world! {
    /// A level with durable identity: positions and follow links.
    struct Level {
        /// Where each object is.
        pub position: Position,
        /// Which entity it follows.
        pub follow: Follow,
    }
    durable { entity_refs { Follow } }
}

/// Section 6: mint, bind, resolve, unload, reload, duplicate.
fn durable_identity() -> Result<(), Box<dyn std::error::Error>> {
    let mut level = Level::try_new_durable(1024, DurableConfig::default())?;
    level.begin_structural();
    let scope = InstanceId::mint(&mut OsEntropy)?; // this placement of the level
    let keys: Vec<PersistentObjectKey> = (0..3)
        .map(|_| SourceObjectId::mint(&mut OsEntropy).map(|o| PersistentObjectKey::new(scope, o)))
        .collect::<Result<_, _>>()?;
    let spawn = |level: &mut Level| -> Result<Vec<EntityId>, WorldError> {
        let leader = level.spawn((Position { x: 0.0, y: 0.0 },))?;
        let scout = level.spawn((Position { x: 1.0, y: 0.0 }, Follow { target: leader }))?;
        let camp = level.spawn((Position { x: 5.0, y: 5.0 },))?;
        Ok(vec![leader, scout, camp])
    };
    let es = spawn(&mut level)?;
    let batch: Vec<Activation> = es
        .iter()
        .zip(&keys)
        .map(|(e, k)| Activation::new(*e, *k))
        .collect();
    level.activate(&batch)?;
    level.set_name(es[0], "leader")?;
    level.set_name(es[1], "scout")?;
    level.set_parent(es[1], Some(es[0]))?;
    println!(
        "  bound 3 keys in scope {scope}; revision {}",
        level.binding_revision()
    );
    for row in level.outliner() {
        let key = row.key.map(|k| k.object.to_string()).unwrap_or_default();
        println!(
            "    {:indent$}{:<8} {:?} {key}",
            "",
            if row.name.is_empty() { "-" } else { row.name },
            row.entity,
            indent = 2 * row.depth as usize
        );
    }
    println!("  resolve(scout key) = {:?}", level.resolve(&keys[1]));
    let (before, seen) = (level.resolve(&keys[1]), level.binding_revision());
    level.unload(scope)?;
    println!(
        "  after unload: {:?} (revision {} -> {})",
        level.resolve(&keys[1]),
        seen,
        level.binding_revision()
    );
    let fresh = spawn(&mut level)?;
    let batch: Vec<Activation> = fresh
        .iter()
        .zip(&keys)
        .map(|(e, k)| Activation::new(*e, *k))
        .collect();
    level.activate(&batch)?;
    println!(
        "  reloaded: {:?} (a fresh handle; before the unload {:?}); the old handle is {:?}",
        level.resolve(&keys[1]),
        before,
        level.registry.diagnose(es[1])
    );
    let mut copies = [EntityId::NULL; 2];
    level.duplicate(&fresh[..2], &mut OsEntropy, &mut copies)?;
    println!(
        "  duplicated leader+scout: the copy follows {:?} (the copied leader {:?}), new key {}",
        level.get::<Follow>(copies[1]).map(|f| f.target),
        copies[0],
        level
            .key_of(copies[0])
            .map(|k| k.object.to_string())
            .unwrap_or_default()
    );
    println!("  counts: {}", level.counts().to_json());
    Ok(())
}

/// Section 7: persistent spawn, an atomic transaction, a checkpoint digest and a restore; a
/// follow link kept by a checkpoint restore and by a replay onto a fresh world.
fn persistent_spawn() -> Result<(), Box<dyn std::error::Error>> {
    use ludus::durable::{PreparedSpawn, ReplayEntry, ReplayLog, Transaction, TxCommand};
    let mut level = Level::try_new_durable(64, DurableConfig::default())?;
    level.begin_structural();
    // Minted once at ingress; the JSON is what a server records and replays.
    let spawn =
        PreparedSpawn::prepare::<Level, _, _>((Position { x: 3.0, y: 4.0 },), &mut OsEntropy)?;
    println!(
        "  prepared {} ({} bytes of JSON)",
        spawn.id,
        serde_json::to_string(&spawn)?.len()
    );
    let tx = Transaction {
        label: "spawn-pickup".into(),
        commands: vec![TxCommand::Create {
            spawn: spawn.clone(),
        }],
    };
    level.transact(&tx)?;
    let refused = level.transact(&tx).unwrap_err();
    println!("  replaying the same create is refused whole: {refused}");
    // A second entity follows the first: the prepared command names it by its stable id.
    let pickup = level.entity_of(&spawn.id).ok_or("not live")?;
    let follower = PreparedSpawn::prepare_in(
        &level,
        (Position { x: 0.0, y: 0.0 }, Follow { target: pickup }),
        &mut OsEntropy,
    )?;
    let link = follower.components.iter().find(|c| c.component == "follow");
    println!(
        "  the follower's link travels as {}",
        serde_json::to_string(&link.ok_or("no follow")?.refs)?
    );
    let follow = Transaction {
        label: "spawn-follower".into(),
        commands: vec![TxCommand::Create {
            spawn: follower.clone(),
        }],
    };
    level.transact(&follow)?;
    let before = level.checkpoint()?;
    level.position.get_mut(pickup).ok_or("no position")?.x = 100.0;
    level.restore(&before)?;
    let again = level.entity_of(&spawn.id).ok_or("not restored")?;
    let followed = |w: &Level| -> Option<EntityId> {
        let e = w.entity_of(&follower.id)?;
        w.get::<Follow>(e).map(|f| f.target)
    };
    println!(
        "  restored digest {} (x = {}); the old handle is {:?}; the follower follows {:?}, the \
         restored pickup: {}",
        &ludus::durable::digest_hex(&level.checkpoint_digest()?)[..16],
        level.get::<Position>(again).map_or(f32::NAN, |p| p.x),
        level.registry.diagnose(pickup),
        followed(&level),
        followed(&level) == Some(again)
    );
    // The log of both transactions, replayed onto a fresh world: the link lands on that
    // world's pickup, and both worlds have one digest.
    let log = ReplayLog {
        format: ludus::durable::REPLAY_FORMAT.into(),
        version: 1,
        entries: vec![
            ReplayEntry {
                tick: 1,
                transaction: tx,
            },
            ReplayEntry {
                tick: 2,
                transaction: follow,
            },
        ],
    };
    let mut fresh = Level::try_new_durable(64, DurableConfig::default())?;
    fresh.begin_structural();
    fresh.spawn((Position { x: 9.0, y: 9.0 },))?; // other slots than the first world's
    fresh.replay(&log)?;
    let target = fresh.entity_of(&spawn.id).ok_or("not replayed")?;
    let mut first = Level::try_new_durable(64, DurableConfig::default())?;
    first.begin_structural();
    first.replay(&log)?;
    println!(
        "  replayed onto a fresh world: the follower follows its pickup {} ({:?}); digests equal: {}",
        followed(&fresh) == Some(target),
        target,
        fresh.checkpoint_digest()? == first.checkpoint_digest()?
    );
    Ok(())
}

/// Section 8: save a level as a version-2 World record, restore it into a fresh world,
/// resolve a reference across the round trip.
fn content() -> Result<(), Box<dyn std::error::Error>> {
    use ludus::content::{restore_world_from_slice, save_world_bytes};
    let mut level = Level::try_new_durable(64, DurableConfig::default())?;
    level.begin_structural();
    let scope = InstanceId::mint(&mut OsEntropy)?;
    let document = AssetId::mint(&mut OsEntropy)?;
    let leader = level.spawn((Position { x: 0.0, y: 0.0 },))?;
    let scout = level.spawn((Position { x: 1.5, y: 0.0 }, Follow { target: leader }))?;
    level.set_name(leader, "leader")?;
    level.set_name(scout, "scout")?;
    let keys = [leader, scout]
        .iter()
        .map(|&e| {
            Ok(Activation::new(
                e,
                PersistentObjectKey::new(scope, SourceObjectId::mint(&mut OsEntropy)?),
            ))
        })
        .collect::<Result<Vec<_>, ludus::identity::EntropyError>>()?;
    level.activate(&keys)?;
    let bytes = timed("save_world_bytes: handles become uuids", || {
        save_world_bytes(&level, scope, "ludus.tour.v1", document)
    })?;
    let text = String::from_utf8_lossy(&bytes);
    // The line layout: one entity per line, so one entity's edit is one line of a diff.
    let target_line = text
        .lines()
        .find(|l| l.contains("\"target\""))
        .unwrap_or("")
        .trim()
        .trim_end_matches(',');
    println!(
        "  saved {} bytes, one entity per line; the scout's: {target_line}",
        bytes.len()
    );
    let mut fresh = Level::try_new_durable(64, DurableConfig::default())?;
    fresh.begin_structural();
    let restored = timed(
        "restore_world_from_slice into a fresh world: two passes, one activation",
        || {
            restore_world_from_slice(
                std::path::Path::new("tour.world.json"),
                &bytes,
                scope,
                &mut fresh,
            )
        },
    )?;
    let scout_key = keys[1].key;
    let scout_again = fresh
        .resolve(&scout_key)
        .entity()
        .ok_or("scout not bound")?;
    let target = fresh
        .get::<Follow>(scout_again)
        .map(|f| f.target)
        .ok_or("no follow")?;
    println!(
        "  restored {} entities; the scout {:?} follows {:?} = {:?} (bound to the leader's key: {})",
        restored.entities.len(),
        scout_again,
        target,
        fresh.name(target)?,
        fresh.key_of(target) == Some(keys[0].key)
    );
    let again = save_world_bytes(&fresh, scope, "ludus.tour.v1", document)?;
    println!("  saved again: byte-identical: {}", again == bytes);
    // One identity: a restored entity's stable id is its binding key, so a transaction
    // addresses it and the checkpoint digest covers it.
    let scout_id = fresh.stable_id(scout_again).ok_or("no identity")?;
    let digest = fresh.checkpoint_digest()?;
    let moved = ludus::durable::ComponentValue::of(&fresh, &Position { x: 7.0, y: 0.0 })?;
    fresh.transact(&ludus::durable::Transaction {
        label: "move-scout".into(),
        commands: vec![ludus::durable::TxCommand::Update {
            id: scout_id,
            components: vec![moved],
        }],
    })?;
    println!(
        "  the scout's identity is its key ({}…); moved by a transaction to x = {}; the digest \
         saw it: {}",
        &scout_id.to_string()[..20],
        fresh.get::<Position>(scout_again).map_or(f32::NAN, |p| p.x),
        fresh.checkpoint_digest()? != digest
    );
    let before = fresh.counts().to_json();
    let refused = restore_world_from_slice(
        std::path::Path::new("tour.world.json"),
        &bytes,
        scope,
        &mut fresh,
    )
    .unwrap_err();
    println!(
        "  restoring it twice into one world is refused whole: {refused}; unchanged: {}",
        fresh.counts().to_json() == before
    );
    Ok(())
}

ludus::world! {
    /// The tour's world: three pools and one owned group.
    struct Game {
        /// Where each entity is.
        pub position: Position,
        /// How it moves per tick.
        pub velocity: Velocity,
        /// Hit points; below zero the damage system destroys the entity.
        pub health: Health,
    }
    groups { moving(position: Position, velocity: Velocity) }
}

/// Section 4, last part: two ungrouped pools put in one shared order by `cluster`, so a join
/// over them zips runs of equal entities (an archetype table's walk) instead of probing; a key
/// change of either pool sends its joins back to probing until the next `cluster`.
fn clustered_join() -> Result<(), Box<dyn std::error::Error>> {
    const N: usize = 50_000;
    let mut level = Level::try_new_durable(N, DurableConfig::default())?;
    let mut all = Vec::with_capacity(N);
    for i in 0..N {
        all.push(level.spawn((Position {
            x: i as f32,
            y: 0.0,
        },))?);
    }
    // A third of them follow another entity, inserted in an order unrelated to the slots.
    for i in (0..N).filter(|i| i % 3 == 0).rev() {
        level.insert(all[i], Follow { target: all[i / 2] })?;
    }
    level.end_structural();
    let checksum = |l: &Level| {
        join((&l.position, &l.follow))
            .map(|(e, (p, f))| u64::from(e.slot() ^ f.target.slot()) + p.x as u64)
            .sum::<u64>()
    };
    let before = join((&level.position, &level.follow)).plan();
    let probed = timed("join position × follow, pools in their own orders", || {
        checksum(&level)
    });
    timed(
        "cluster((position, follow)): one shared order, by membership",
        || cluster((&mut level.position, &mut level.follow)),
    )?;
    let after = join((&level.position, &level.follow)).plan();
    let zipped = timed("the same join over the clustered pools", || {
        checksum(&level)
    });
    println!(
        "  clustered join: {before:?} plan → {after:?} plan, same result: {}",
        probed == zipped
    );
    level.begin_structural();
    level.remove::<Follow>(all[0])?;
    level.end_structural();
    println!(
        "  after a removal from follow: {:?} plan until the next cluster",
        join((&level.position, &level.follow)).plan()
    );
    Ok(())
}

/// A system generic over any world that stores positions and velocities: several pools at once,
/// by type (compiles to field accesses).
fn drift<W: WorldOps + Stores<Position> + Stores<Velocity>>(world: &mut W) -> usize {
    let (pos, vel) = world.pools_mut::<(&mut Position, &Velocity)>();
    let mut moved = 0;
    for (_, (p, v)) in join((pos, vel)) {
        p.x += 0.5 * v.x;
        moved += 1;
    }
    moved
}

fn timed<R>(label: &str, f: impl FnOnce() -> R) -> R {
    let t = Instant::now();
    let r = f();
    println!("    [{label}: {:.1?}]", t.elapsed());
    r
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("== 1. durable ids: UUIDv4 from OS entropy, canonical text, explicit policy");
    let asset = AssetId::mint(&mut OsEntropy)?;
    let mut buf = [0u8; UUID_TEXT_LEN];
    println!("  minted AssetId         {asset}");
    println!(
        "  formatted into a stack buffer, no allocation: {}",
        format_uuid(&asset.as_uuid(), &mut buf)
    );
    let mut minter = BatchedMinter::new();
    let ids: Vec<SourceObjectId> = timed("4096 ids, batched: one getrandom call per 256", || {
        (0..4096)
            .map(|_| SourceObjectId::mint(&mut minter))
            .collect::<Result<_, _>>()
    })?;
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    sorted.dedup();
    println!(
        "  {} ids, {} distinct, all v4: {}",
        ids.len(),
        sorted.len(),
        ids.iter().all(|id| id.as_uuid().get_version_num() == 4)
    );
    for text in [
        "5D1F0E7A-93C2-4B8E-A4F6-1E2D3C4B5A69", // upper case: accepted
        "{5d1f0e7a-93c2-4b8e-a4f6-1e2d3c4b5a69}", // braces
        "5d1f0e7a93c24b8ea4f61e2d3c4b5a69",     // simple form
        "00000000-0000-0000-0000-000000000000", // nil
        "5d1f0e7a-93c2-1b8e-a4f6-1e2d3c4b5a69", // version 1: a level file may hold it
    ] {
        let durable = UuidPolicy::DurableV4.parse(text).map(|u| u.to_string());
        let level = UuidPolicy::LevelFile.parse(text).map(|_| "ok");
        println!("  parse {text:<40} durable: {durable:?}, level file: {level:?}");
    }

    println!("\n== 2. allocation domains: every registry and pool array is accounted");
    let domain = AllocationDomain::register("tour/world")?;
    let alloc: DomainAllocator = domain.allocator();
    let mut game = timed("Game::try_new_in(1024) through the domain", || {
        Game::try_new_in(1024, alloc)
    })?;
    let after_init = domain.usage();
    println!(
        "  after init: {} live bytes in {} blocks (valid: {})",
        after_init.live_bytes, after_init.live_blocks, after_init.valid
    );

    println!("\n== 3. handles: owner + slot + generation; stale and foreign handles are rejected");
    let a = game.spawn((
        Position { x: 0.0, y: 0.0 },
        Velocity { x: 1.0, y: 0.5 },
        Health(3),
    ))?;
    println!("  spawned {a:?}");
    game.destroy(a)?;
    let b = game.spawn((Position::default(), Velocity::default(), Health(1)))?;
    println!("  destroyed it and spawned {b:?} (same slot, next generation)");
    println!(
        "  old handle alive? {}  why not: {:?}",
        game.registry.is_alive(a),
        game.registry.diagnose(a)
    );
    println!("  old handle reads a Position? {:?}", game.position.get(a));
    let twice = game.spawn((Health(1), Health(2)));
    println!("  a bundle naming Health twice: {twice:?} (nothing changed)");
    let other = Game::try_new(16)?;
    let forged = EntityId::from_raw_parts(other.registry.owner(), b.slot(), b.generation());
    println!(
        "  same slot+generation, other world: alive? {}  why not: {:?}",
        game.registry.is_alive(forged),
        game.registry.diagnose(forged)
    );

    println!("\n== 4. a world with systems, a command buffer and a commit");
    timed("spawn_batch 1000 movers: one budget check", || {
        game.spawn_batch((0..1000).map(|i| {
            (
                Position {
                    x: i as f32,
                    y: 0.0,
                },
                Velocity { x: 1.0, y: 0.25 },
                Health(i % 7),
            )
        }))
    })?;
    game.end_structural();
    let mut cmd = CommandBuffer::try_with_capacity(2048, 64 * 1024)?;
    timed("movement system: owned-group zip, 60 ticks", || {
        for _ in 0..60 {
            let (_ids, pos, vel) = game.moving();
            for (p, v) in pos.iter_mut().zip(vel.iter()) {
                p.x += v.x;
                p.y += v.y;
            }
        }
    });
    let moved = timed("generic drift system: pools_mut + join", || {
        drift(&mut game)
    });
    println!("  drift moved {moved} entities");
    let still = join((&game.position, without(&game.health)));
    let plan = still.plan();
    println!(
        "  join with an exclusion: {} positioned entities have no health ({plan:?} plan)",
        still.count()
    );
    let weak = join((&game.position, opt(&game.health)))
        .filter(|(_, (_, h))| h.is_some_and(|h| h.0 < 3))
        .count();
    println!("  join with an optional column: {weak} positioned entities have under 3 health");
    timed(
        "damage system: record destroys of the dead",
        || -> Result<(), Box<dyn std::error::Error>> {
            let (reg, health) = (&game.registry, &mut game.health);
            let (owners, values) = health.split_mut();
            for (id, h) in owners.iter().zip(values.iter_mut()) {
                h.0 -= 1;
                if h.0 < 0 {
                    cmd.destroy(reg, id)?;
                }
            }
            Ok(())
        },
    )?;
    let doomed = game
        .health
        .owners()
        .iter()
        .find(|e| !game.registry.is_active(*e));
    println!(
        "  {} destroys recorded; doomed entities are pending (not active) until commit",
        cmd.len()
    );
    let refused = game.destroy(b);
    println!("  a direct destroy outside the structural phase: {refused:?}");
    game.begin_structural();
    timed("commit: preflight, then apply all or nothing", || {
        game.commit(&mut cmd)
    })?;
    if let Some(d) = doomed {
        println!(
            "  after commit {d:?}: alive? {} ({:?})",
            game.registry.is_alive(d),
            game.registry.diagnose(d)
        );
    }
    println!("  live entities with Position: {}", game.position.len());
    let far: Vec<EntityId> = game
        .position
        .iter()
        .filter(|(_, p)| p.x > 900.0)
        .map(|(e, _)| e)
        .collect();
    let stopped = timed("remove_batch: stop the far movers, all or nothing", || {
        game.remove_batch::<Velocity>(&far)
    })?;
    println!(
        "  stopped {stopped} movers; the moving group now holds {}",
        game.moving().0.len()
    );
    clustered_join()?;

    println!("\n== 5. scratch memory: a fixed arena over caller bytes, scopes rewind on exit");
    let mut bytes = vec![0u8; 64 * 1024];
    let mut arena = LinearArena::new(&mut bytes);
    let sum = arena.scope(|frame| -> Result<f32, ludus::memory::ArenaError> {
        let xs = frame.try_alloc_slice_copy(game.position.values())?;
        Ok(xs.iter().map(|p| p.x).sum())
    })?;
    println!(
        "  summed {} positions in scratch: {sum}; used after the scope: {} of {} (high water {})",
        game.position.len(),
        arena.used(),
        arena.capacity(),
        arena.high_water()
    );

    println!("\n== 6. durable identity: mint, bind, resolve, unload, reload, duplicate");
    durable_identity()?;

    println!(
        "\n== 7. persistent spawn: prepare once, transact all or nothing, checkpoint, restore, replay"
    );
    persistent_spawn()?;

    println!("\n== 8. content: save a level as a World record, restore it into a fresh world");
    content()?;

    drop(game);
    let end = domain.usage();
    println!(
        "\n== 9. dropping the world returns every byte: live {} bytes / {} blocks, high water {}",
        end.live_bytes, end.live_blocks, end.high_water_bytes
    );
    Ok(())
}
