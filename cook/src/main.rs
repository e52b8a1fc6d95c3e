//! `ludus-cook`: the content tool. A thin shell over [`ludus::content::cook`].

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use ludus::content::cook::{self, exit, CookError, Hooks, Progress};
use ludus::content::DocPath;
use ludus::identity::{EntropySource, OsEntropy};

const EXIT_CODES: &str = "\
Exit status:
  0   success
  1   I/O error (a file could not be read or written)
  2   usage error (bad arguments; an invalid or repeated WORLD path)
  3   entropy unavailable: nothing was minted or written
  4   invalid input: a malformed manifest, World record or schema file; a document of the
      wrong version; a record that disagrees with the schema (schema name, unknown
      component, a non-string entity property)
  5   the file to create exists (MANIFEST for migrate, OUTPUT for apply); it was not replaced
  6   identity-conflict: every candidate for one identity collided
  7   stale-manifest: an entity without a committed uuid, a manifest object without an entity,
      or a document the manifest does not list
  8   unresolved-reference: a reference names an id that is not in the document
  9   unsupported: the document uses the scene extension (`parent` links)
  10  manifest changed while extend ran; it was not replaced

Errors are one line: FILE:LINE:COLUMN: what is wrong. Formats and rules: docs/content.md.";

/// The ludus content tool.
#[derive(Debug, Parser)]
#[command(name = "ludus-cook", version, about, after_help = EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Durable identity for World documents: migrate legacy ids to UUIDs, replay, extend.
    #[command(subcommand, after_help = EXIT_CODES)]
    Identity(Identity),
}

#[derive(Debug, Subcommand)]
enum Identity {
    /// Mint the migration manifest of version-1 documents, once.
    ///
    /// Refuses to run when MANIFEST exists. Reads every WORLD, mints one document UUID and one
    /// object UUID per entity from OS entropy (path order, then legacy-id order), and creates
    /// MANIFEST atomically; never replaces a file, even one that appears meanwhile. Commit
    /// the result.
    #[command(after_help = EXIT_CODES)]
    Migrate {
        /// Content root; WORLD paths are relative to it.
        root: PathBuf,
        /// The manifest to create (ludus.identity-migration version 1).
        manifest: PathBuf,
        /// Version-1 World documents, relative to ROOT, `/`-separated.
        #[arg(required = true)]
        worlds: Vec<String>,
    },
    /// Create the version-2 record of a version-1 document from the committed manifest.
    ///
    /// Pure replay: mints nothing, byte-identical output on every run, never replaces an
    /// existing file. Refuses stale-manifest, unresolved-reference and unsupported inputs.
    #[command(after_help = EXIT_CODES)]
    Apply {
        /// Content root; WORLD is relative to it.
        root: PathBuf,
        /// The committed manifest.
        manifest: PathBuf,
        /// The World schema file (ludus.world-schema version 1).
        schema: PathBuf,
        /// The version-1 document, relative to ROOT, as the manifest names it.
        world: String,
        /// The version-2 record to create.
        output: PathBuf,
    },
    /// Mint only the identities grown documents lack; replace MANIFEST if unchanged meanwhile.
    ///
    /// Keeps every committed identity, mints for new entities and new documents, refuses a
    /// document that lost an entity (stale-manifest), and writes nothing when nothing is new.
    #[command(after_help = EXIT_CODES)]
    Extend {
        /// Content root; WORLD paths are relative to it.
        root: PathBuf,
        /// The committed manifest to grow.
        manifest: PathBuf,
        /// Version-1 World documents, relative to ROOT.
        #[arg(required = true)]
        worlds: Vec<String>,
    },
}

/// A progress bar over documents, drawn only when stderr is a terminal.
struct Bar(ProgressBar);

impl Progress for Bar {
    fn begin(&mut self, total: u64) {
        self.0.set_length(total);
    }

    fn step(&mut self, document: &DocPath) {
        self.0.set_message(document.to_string());
        self.0.inc(1);
    }

    fn end(&mut self) {
        self.0.finish_and_clear();
    }
}

fn bar() -> Bar {
    if !std::io::stderr().is_terminal() {
        return Bar(ProgressBar::hidden());
    }
    let bar = ProgressBar::new(0);
    if let Ok(style) = ProgressStyle::with_template("{bar:30} {pos}/{len} {wide_msg}") {
        bar.set_style(style);
    }
    Bar(bar)
}

/// The minting source: the OS CSPRNG. Debug builds alone honour `LUDUS_COOK_TEST_ENTROPY`
/// (`fail`: every fill fails; `fail-after:N`: fills after the N-th fail; `fixed`: one constant
/// pattern, so every candidate after the first collides), so tests can drive entropy failure
/// and identity conflicts end to end. A release build cannot select anything but `OsEntropy`.
fn entropy() -> Box<dyn EntropySource> {
    #[cfg(debug_assertions)]
    {
        use ludus::identity::test_entropy::{FailingEntropy, FixedEntropy};
        if let Ok(mode) = std::env::var("LUDUS_COOK_TEST_ENTROPY") {
            if mode == "fail" {
                return Box::new(FailingEntropy::new(OsEntropy, 1));
            }
            if mode == "fixed" {
                return Box::new(FixedEntropy::new([0x5a; 16]));
            }
            if let Some(n) = mode
                .strip_prefix("fail-after:")
                .and_then(|n| n.parse::<u64>().ok())
            {
                return Box::new(FailingEntropy::new(OsEntropy, n + 1));
            }
        }
    }
    Box::new(OsEntropy)
}

/// Runs just before publication. Debug builds alone honour `LUDUS_COOK_TEST_BEFORE_PUBLISH`:
/// it names a file the hook writes (`intruder`), so tests make the destination appear, or the
/// manifest change, at the worst moment.
fn before_publish() {
    #[cfg(debug_assertions)]
    if let Some(path) = std::env::var_os("LUDUS_COOK_TEST_BEFORE_PUBLISH") {
        let _ = std::fs::write(path, b"intruder\n");
    }
}

fn run(cli: Cli) -> Result<String, CookError> {
    let mut progress = bar();
    let mut hook = before_publish;
    let hooks = Hooks {
        before_publish: &mut hook,
        progress: &mut progress,
    };
    let Command::Identity(command) = cli.command;
    match command {
        Identity::Migrate {
            root,
            manifest,
            worlds,
        } => {
            let r = cook::migrate(&root, &manifest, &worlds, &mut *entropy(), hooks)?;
            Ok(format!(
                "{}: created with {} documents, {} identities minted",
                manifest.display(),
                r.documents,
                r.minted
            ))
        }
        Identity::Apply {
            root,
            manifest,
            schema,
            world,
            output,
        } => {
            cook::apply(&root, &manifest, &schema, &world, &output, hooks)?;
            Ok(format!(
                "{}: created (version 2 of {world})",
                output.display()
            ))
        }
        Identity::Extend {
            root,
            manifest,
            worlds,
        } => {
            let r = cook::extend(&root, &manifest, &worlds, &mut *entropy(), hooks)?;
            Ok(if r.minted == 0 {
                format!("{}: already complete; not rewritten", manifest.display())
            } else {
                format!(
                    "{}: replaced with {} documents, {} identities minted",
                    manifest.display(),
                    r.documents,
                    r.minted
                )
            })
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(message) => {
            eprintln!("ludus-cook: {message}");
            ExitCode::from(exit::OK)
        }
        Err(e) => {
            eprintln!("ludus-cook: error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
