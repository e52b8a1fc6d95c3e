//! `ludus-cook identity` end to end, in temporary directories: migrate → apply → a
//! byte-identical second apply, refusal to overwrite, a manifest that appears during
//! `migrate`, entropy failure (exit 3, nothing written), every refusal's exit code, extend.
//!
//! The entropy and publication seams (`LUDUS_COOK_TEST_*`) exist only in debug builds, so the
//! tests that use them are `#[cfg(debug_assertions)]`; the rest also run in release. Miri
//! cannot spawn processes, so the file is empty under Miri.
#![cfg(not(miri))]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ludus::content::cook::exit;
use ludus::content::{Manifest, WorldV2};

const FIRST: &str = "levels/first-room.world.json";
const SECOND: &str = "levels/second-room.world.json";

fn golden(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/content/golden")
        .join(rel)
}

/// A temporary content root holding the two golden rooms, and the schema beside it.
struct Site {
    dir: tempfile::TempDir,
}

impl Site {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("root/levels")).unwrap();
        for room in [FIRST, SECOND] {
            fs::copy(
                golden(&format!("root/{room}")),
                dir.path().join("root").join(room),
            )
            .unwrap();
        }
        fs::copy(golden("schema.json"), dir.path().join("schema.json")).unwrap();
        Self { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn cook(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ludus-cook"));
        cmd.current_dir(self.dir.path()).args(args);
        cmd.env_remove("LUDUS_COOK_TEST_ENTROPY")
            .env_remove("LUDUS_COOK_TEST_BEFORE_PUBLISH");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    }

    fn migrate(&self, env: &[(&str, &str)]) -> Output {
        self.cook(
            &["identity", "migrate", "root", "m.json", SECOND, FIRST],
            env,
        )
    }

    fn apply(&self, world: &str, output: &str) -> Output {
        self.cook(
            &[
                "identity",
                "apply",
                "root",
                "m.json",
                "schema.json",
                world,
                output,
            ],
            &[],
        )
    }

    /// Every file under the site, with its bytes.
    fn snapshot(&self) -> Vec<(PathBuf, Vec<u8>)> {
        fn walk(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
            for e in fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    walk(&p, out);
                } else {
                    let bytes = fs::read(&p).unwrap();
                    out.push((p, bytes));
                }
            }
        }
        let mut out = Vec::new();
        walk(self.dir.path(), &mut out);
        out.sort();
        out
    }
}

fn code(out: &Output) -> u8 {
    out.status.code().expect("exited normally") as u8
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Asserts the exit status and that the error is one line naming `file` and a position.
fn refused(out: &Output, status: u8, file: &str, word: &str) {
    let text = stderr(out);
    assert_eq!(code(out), status, "{text}");
    assert_eq!(text.lines().count(), 1, "one line: {text}");
    let after = text
        .split_once(file)
        .unwrap_or_else(|| panic!("names {file}: {text}"))
        .1;
    let mut parts = after.trim_start_matches(':').splitn(3, ':');
    let line: usize = parts.next().unwrap().parse().expect(&text);
    let column: usize = parts.next().unwrap().parse().expect(&text);
    assert!(line >= 1 && column <= 200, "{text}");
    assert!(text.contains(word), "{word}: {text}");
}

/// Asserts a refusal to replace `file`: exit 5 and one line naming it.
fn exists(out: &Output, file: &str) {
    let text = stderr(out);
    assert_eq!(code(out), exit::EXISTS, "{text}");
    assert_eq!(text.lines().count(), 1, "one line: {text}");
    assert!(
        text.contains(file) && text.contains("already exists"),
        "{text}"
    );
}

#[test]
fn migrate_then_apply_twice_gives_identical_bytes() {
    let site = Site::new();
    let out = site.migrate(&[]);
    assert_eq!(code(&out), exit::OK, "{}", stderr(&out));
    let bytes = fs::read(site.path("m.json")).unwrap();
    let m = Manifest::from_slice(Path::new("m.json"), &bytes).unwrap();
    assert_eq!(m.documents.len(), 2);
    assert_eq!(m.to_bytes(), bytes, "the manifest is canonical");
    assert_eq!(
        m.documents[0].objects.len() + m.documents[1].objects.len(),
        7
    );

    assert_eq!(code(&site.apply(FIRST, "one.json")), exit::OK);
    assert_eq!(code(&site.apply(FIRST, "two.json")), exit::OK);
    let one = fs::read(site.path("one.json")).unwrap();
    assert_eq!(one, fs::read(site.path("two.json")).unwrap());
    let v2 = WorldV2::from_slice(Path::new("one.json"), &one).unwrap();
    assert_eq!(v2.document, m.documents[0].document);

    // Never replaces: not an earlier output, not the version-1 source.
    exists(&site.apply(FIRST, "one.json"), "one.json");
    let source = fs::read(site.path(&format!("root/{FIRST}"))).unwrap();
    let out = site.apply(FIRST, &format!("root/{FIRST}"));
    assert_eq!(code(&out), exit::EXISTS, "{}", stderr(&out));
    assert_eq!(
        fs::read(site.path(&format!("root/{FIRST}"))).unwrap(),
        source
    );
    assert_eq!(fs::read(site.path("one.json")).unwrap(), one);
}

#[test]
fn apply_of_the_committed_manifest_reproduces_the_golden_record() {
    let site = Site::new();
    fs::copy(golden("identity-migration.json"), site.path("m.json")).unwrap();
    for (room, expected) in [
        (FIRST, "first-room.world.v2.json"),
        (SECOND, "second-room.world.v2.json"),
    ] {
        let out = site.apply(room, expected);
        assert_eq!(code(&out), exit::OK, "{}", stderr(&out));
        assert_eq!(
            fs::read(site.path(expected)).unwrap(),
            fs::read(golden(expected)).unwrap(),
            "{room}"
        );
    }
}

#[test]
fn migrate_refuses_an_existing_manifest() {
    let site = Site::new();
    fs::write(site.path("m.json"), b"precious").unwrap();
    let before = site.snapshot();
    exists(&site.migrate(&[]), "m.json");
    assert_eq!(site.snapshot(), before);
}

#[cfg(debug_assertions)]
#[test]
fn a_manifest_that_appears_during_migrate_survives_untouched() {
    let site = Site::new();
    let target = site.path("m.json");
    let out = site.migrate(&[("LUDUS_COOK_TEST_BEFORE_PUBLISH", target.to_str().unwrap())]);
    assert_eq!(code(&out), exit::EXISTS, "{}", stderr(&out));
    assert_eq!(fs::read(&target).unwrap(), b"intruder\n");
    let names: Vec<_> = fs::read_dir(site.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| !n.contains("ludus-tmp")),
        "no temporary file left: {names:?}"
    );
}

#[cfg(debug_assertions)]
#[test]
fn unavailable_entropy_exits_3_and_writes_nothing() {
    for mode in ["fail", "fail-after:1", "fail-after:5"] {
        let site = Site::new();
        let before = site.snapshot();
        let out = site.migrate(&[("LUDUS_COOK_TEST_ENTROPY", mode)]);
        assert_eq!(code(&out), exit::ENTROPY, "{mode}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("entropy unavailable"),
            "{}",
            stderr(&out)
        );
        assert_eq!(site.snapshot(), before, "{mode}: nothing written");
    }
}

#[cfg(debug_assertions)]
#[test]
fn colliding_entropy_is_an_identity_conflict_and_writes_nothing() {
    let site = Site::new();
    let before = site.snapshot();
    let out = site.migrate(&[("LUDUS_COOK_TEST_ENTROPY", "fixed")]);
    assert_eq!(code(&out), exit::IDENTITY_CONFLICT, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("identity-conflict"),
        "{}",
        stderr(&out)
    );
    assert_eq!(site.snapshot(), before);
}

#[test]
fn each_refusal_has_its_exit_code_and_a_one_line_located_error() {
    let site = Site::new();
    assert_eq!(code(&site.migrate(&[])), exit::OK);
    let world = site.path(&format!("root/{FIRST}"));
    let original = fs::read_to_string(&world).unwrap();
    let edit = |from: &str, to: &str| {
        assert!(original.contains(from));
        fs::write(&world, original.replacen(from, to, 1)).unwrap();
    };

    edit("\"id\": \"door:1\"", "\"id\": \"door:2\"");
    refused(
        &site.apply(FIRST, "o.json"),
        exit::STALE_MANIFEST,
        FIRST,
        "stale-manifest",
    );

    edit("\"target\": \"player\"", "\"target\": \"ghost\"");
    let out = site.apply(FIRST, "o.json");
    refused(
        &out,
        exit::UNRESOLVED_REFERENCE,
        FIRST,
        "unresolved-reference",
    );
    assert!(
        stderr(&out).contains(&format!("{FIRST}:18:")),
        "{}",
        stderr(&out)
    );

    edit(
        "\"name\": \"Door\",",
        "\"name\": \"Door\", \"parent\": \"\",",
    );
    refused(
        &site.apply(FIRST, "o.json"),
        exit::UNSUPPORTED,
        FIRST,
        "unsupported",
    );

    edit("\"health\":", "\"mana\":");
    refused(
        &site.apply(FIRST, "o.json"),
        exit::INVALID_INPUT,
        FIRST,
        "not in the schema",
    );

    edit("\"version\": 1,", "\"version\": 1, \"version\": 1,");
    refused(
        &site.apply(FIRST, "o.json"),
        exit::INVALID_INPUT,
        FIRST,
        "duplicate member",
    );

    fs::write(&world, &original).unwrap();
    let manifest = fs::read_to_string(site.path("m.json")).unwrap();
    fs::write(
        site.path("m.json"),
        manifest.replace("\"version\": 1", "\"version\": 7"),
    )
    .unwrap();
    refused(
        &site.apply(FIRST, "o.json"),
        exit::INVALID_INPUT,
        "m.json",
        "version 7",
    );
    fs::write(site.path("m.json"), &manifest).unwrap();

    let out = site.apply("../escape.json", "o.json");
    assert_eq!(code(&out), exit::USAGE, "{}", stderr(&out));
    let out = site.cook(
        &["identity", "migrate", "root", "n.json", FIRST, FIRST],
        &[],
    );
    assert_eq!(code(&out), exit::USAGE, "{}", stderr(&out));
    let out = site.apply("levels/absent.world.json", "o.json");
    assert_eq!(code(&out), exit::IO, "{}", stderr(&out));
    let out = site.cook(&["identity", "apply", "root"], &[]);
    assert_eq!(code(&out), exit::USAGE, "clap's usage error");

    assert!(!site.path("o.json").exists());
    assert!(!site.path("n.json").exists());
    assert_eq!(code(&site.apply(FIRST, "o.json")), exit::OK);
}

#[test]
fn extend_mints_only_what_a_grown_document_lacks() {
    let site = Site::new();
    let out = site.cook(&["identity", "migrate", "root", "m.json", FIRST], &[]);
    assert_eq!(code(&out), exit::OK, "{}", stderr(&out));
    let old_bytes = fs::read(site.path("m.json")).unwrap();
    let old = Manifest::from_slice(Path::new("m"), &old_bytes).unwrap();

    // Nothing new: nothing written.
    let out = site.cook(&["identity", "extend", "root", "m.json", FIRST], &[]);
    assert_eq!(code(&out), exit::OK, "{}", stderr(&out));
    assert!(stderr(&out).contains("already complete"));
    assert_eq!(fs::read(site.path("m.json")).unwrap(), old_bytes);

    // Grow the first room by one entity and add the second room.
    let world = site.path(&format!("root/{FIRST}"));
    let text = fs::read_to_string(&world).unwrap();
    let grown = text.replacen(
        "  \"entities\": [\n",
        "  \"entities\": [\n    { \"id\": \"lamp\", \"name\": \"Lamp\", \"components\": {} },\n",
        1,
    );
    fs::write(&world, &grown).unwrap();
    refused(
        &site.apply(FIRST, "o.json"),
        exit::STALE_MANIFEST,
        FIRST,
        "lamp",
    );
    let out = site.cook(
        &["identity", "extend", "root", "m.json", FIRST, SECOND],
        &[],
    );
    assert_eq!(code(&out), exit::OK, "{}", stderr(&out));
    let new =
        Manifest::from_slice(Path::new("m"), &fs::read(site.path("m.json")).unwrap()).unwrap();
    assert_eq!(new.documents.len(), 2);
    let (first_old, first_new) = (&old.documents[0], &new.documents[0]);
    assert_eq!(first_new.document, first_old.document);
    for o in &first_old.objects {
        assert_eq!(
            first_new.object(&o.legacy_id),
            Some(o.object),
            "kept {}",
            o.legacy_id
        );
    }
    assert!(first_new.object("lamp").is_some());
    assert_eq!(code(&site.apply(FIRST, "o.json")), exit::OK);
    assert_eq!(code(&site.apply(SECOND, "p.json")), exit::OK);

    // A document that lost an entity is refused, the manifest untouched.
    let before = fs::read(site.path("m.json")).unwrap();
    fs::write(
        &world,
        text.replacen("\"id\": \"door:1\"", "\"id\": \"door:9\"", 1),
    )
    .unwrap();
    refused(
        &site.cook(&["identity", "extend", "root", "m.json", FIRST], &[]),
        exit::STALE_MANIFEST,
        "m.json",
        "door:1",
    );
    assert_eq!(fs::read(site.path("m.json")).unwrap(), before);
}

#[cfg(debug_assertions)]
#[test]
fn extend_refuses_a_manifest_that_changed_underneath() {
    let site = Site::new();
    assert_eq!(
        code(&site.cook(&["identity", "migrate", "root", "m.json", FIRST], &[])),
        exit::OK
    );
    let target = site.path("m.json");
    let out = site.cook(
        &["identity", "extend", "root", "m.json", FIRST, SECOND],
        &[("LUDUS_COOK_TEST_BEFORE_PUBLISH", target.to_str().unwrap())],
    );
    assert_eq!(code(&out), exit::MANIFEST_CHANGED, "{}", stderr(&out));
    assert_eq!(fs::read(&target).unwrap(), b"intruder\n");

    let site = Site::new();
    assert_eq!(
        code(&site.cook(&["identity", "migrate", "root", "m.json", FIRST], &[])),
        exit::OK
    );
    let before = site.snapshot();
    let out = site.cook(
        &["identity", "extend", "root", "m.json", FIRST, SECOND],
        &[("LUDUS_COOK_TEST_ENTROPY", "fail")],
    );
    assert_eq!(code(&out), exit::ENTROPY, "{}", stderr(&out));
    assert_eq!(site.snapshot(), before);
}

#[test]
fn help_lists_the_commands_and_exit_codes() {
    let site = Site::new();
    let out = site.cook(&["identity", "--help"], &[]);
    assert_eq!(code(&out), 0);
    let text = String::from_utf8(out.stdout).unwrap();
    for word in [
        "migrate",
        "apply",
        "extend",
        "stale-manifest",
        "unresolved-reference",
        "unsupported",
        "identity-conflict",
    ] {
        assert!(text.contains(word), "{word}: {text}");
    }
    let out = site.cook(&["identity", "apply", "--help"], &[]);
    assert_eq!(code(&out), 0);
    assert!(String::from_utf8(out.stdout)
        .unwrap()
        .contains("  8   unresolved-reference"));
}
