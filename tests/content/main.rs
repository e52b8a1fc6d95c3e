//! Content files and their world round trips: the migration manifest, world records (version 1
//! and 2) and schemas, level files, restore, save and duplication of records, each reader and
//! restore fuzzed for robustness. Fixtures live in `tests/fixtures/content/`. No unsafe code
//! runs here that the world suites do not cover, so Miri skips this binary.

#[path = "../support/mod.rs"]
mod support;

mod common;
mod duplicate;
mod forms;
mod fuzz;
mod hierarchy;
mod identity;
mod level;
mod manifest;
mod plain_state;
mod records;
mod restore;
mod save;
mod shapes;
