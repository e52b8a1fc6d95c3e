//! The `ludus-cook identity` commands over files: read, check, mint or replay, publish.
//!
//! The binary (the `ludus-cook` package, `cook/src/main.rs`) is a thin shell over these
//! functions: it parses the command line, picks the entropy source and the progress display,
//! prints a [`CookError`] as one line and exits with [`CookError::exit_code`]. Everything else — and every refusal — is
//! here, where tests reach it with injected entropy and publication hooks.
//!
//! Path conventions: `ROOT`, `MANIFEST`, `SCHEMA` and `OUTPUT` are ordinary file-system paths;
//! each `WORLD` is a [`DocPath`], relative to `ROOT`, the way the manifest records it.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::identity::{EntropyError, EntropySource};

use super::apply::{apply_owned as apply_record, ApplyClass, ApplyErrorKind, Origin};
use super::error::{Line, Located};
use super::manifest::{Manifest, ManifestError};
use super::migrate::{extend_manifest, MigrateError};
use super::path::DocPath;
use super::publish::{self, PublishError};
use super::record::{RecordError, WorldV1};
use super::schema::{Schema, SchemaError};

/// The exit statuses of `ludus-cook` (also in `--help` and `docs/content.md`).
pub mod exit {
    /// Success.
    pub const OK: u8 = 0;
    /// An I/O error: a file could not be read or written.
    pub const IO: u8 = 1;
    /// Bad command line (clap's own status for usage errors, kept for ours: an invalid or
    /// repeated WORLD path).
    pub const USAGE: u8 = 2;
    /// Entropy unavailable: nothing was minted or written.
    pub const ENTROPY: u8 = 3;
    /// An input file is malformed (manifest, World record or schema), or the record and the
    /// schema disagree.
    pub const INVALID_INPUT: u8 = 4;
    /// The file to create exists (the manifest for `migrate`, OUTPUT for `apply`); it was
    /// not replaced.
    pub const EXISTS: u8 = 5;
    /// `identity-conflict`: every candidate for one identity collided.
    pub const IDENTITY_CONFLICT: u8 = 6;
    /// `stale-manifest`: the manifest and the document disagree on the set of entities.
    pub const STALE_MANIFEST: u8 = 7;
    /// `unresolved-reference`: a reference names an id that is not in the document.
    pub const UNRESOLVED_REFERENCE: u8 = 8;
    /// `unsupported`: the document uses the scene extension (parent links).
    pub const UNSUPPORTED: u8 = 9;
    /// `extend` only: the manifest changed while the command ran; it was not replaced.
    pub const MANIFEST_CHANGED: u8 = 10;
}

/// Why a `ludus-cook identity` command did nothing. Displays as one line.
#[derive(Debug, thiserror::Error)]
pub enum CookError {
    /// A bad WORLD argument.
    #[error("usage: {}", Line(.0))]
    Usage(String),
    /// A file could not be read.
    #[error("{}: cannot read: {}", Line(path.display()), Line(source))]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// The manifest is malformed.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// A World record is malformed (or has the wrong version).
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The schema file is malformed.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// Entropy unavailable.
    #[error("entropy unavailable; nothing was minted or written: {0}")]
    Entropy(EntropyError),
    /// `identity-conflict`.
    #[error("identity-conflict: every candidate for {what} collided with an existing identity; nothing was written")]
    Conflict {
        /// Which identity.
        what: String,
    },
    /// A refusal of the manifest/document/schema relation, located in the input that holds it.
    #[error(transparent)]
    Refused(Located<ApplyErrorKind>),
    /// Publication failed (exists, changed, or I/O).
    #[error(transparent)]
    Publish(#[from] PublishError),
}

impl CookError {
    /// The process exit status for this error ([`exit`]).
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Usage(_) => exit::USAGE,
            Self::Read { .. } => exit::IO,
            Self::Manifest(_) | Self::Record(_) | Self::Schema(_) => exit::INVALID_INPUT,
            Self::Entropy(_) => exit::ENTROPY,
            Self::Conflict { .. } => exit::IDENTITY_CONFLICT,
            Self::Refused(e) => match e.kind.class() {
                ApplyClass::InvalidInput => exit::INVALID_INPUT,
                ApplyClass::StaleManifest => exit::STALE_MANIFEST,
                ApplyClass::UnresolvedReference => exit::UNRESOLVED_REFERENCE,
                ApplyClass::Unsupported => exit::UNSUPPORTED,
            },
            Self::Publish(PublishError::Exists { .. }) => exit::EXISTS,
            Self::Publish(PublishError::Changed { .. }) => exit::MANIFEST_CHANGED,
            Self::Publish(PublishError::Io { .. }) => exit::IO,
        }
    }
}

/// Progress of a long command (documents read); the binary shows a bar on a terminal.
pub trait Progress {
    /// The command will handle `total` documents.
    fn begin(&mut self, total: u64);
    /// One document is being handled.
    fn step(&mut self, document: &DocPath);
    /// The command is done with its documents (successfully or not).
    fn end(&mut self);
}

/// Progress that shows nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn begin(&mut self, _: u64) {}
    fn step(&mut self, _: &DocPath) {}
    fn end(&mut self) {}
}

/// What a command's caller injects: the hook run just before publication and the progress
/// display.
pub struct Hooks<'a> {
    /// Runs after the new file's bytes are durable in a temporary file, just before they are
    /// published (tests create or edit the destination here).
    pub before_publish: &'a mut dyn FnMut(),
    /// Progress display.
    pub progress: &'a mut dyn Progress,
}

impl core::fmt::Debug for Hooks<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Hooks").finish_non_exhaustive()
    }
}

impl Default for Hooks<'static> {
    /// No hook, no progress display.
    fn default() -> Self {
        Self {
            before_publish: Box::leak(Box::new(|| {})),
            progress: Box::leak(Box::new(NoProgress)),
        }
    }
}

/// What `migrate` or `extend` published.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MintReport {
    /// Documents in the published manifest.
    pub documents: usize,
    /// Identities minted (0 for an `extend` that found nothing to add and wrote nothing).
    pub minted: usize,
}

fn read(path: &Path) -> Result<Vec<u8>, CookError> {
    fs::read(path).map_err(|source| CookError::Read {
        path: path.to_path_buf(),
        source,
    })
}

fn doc_paths(worlds: &[String]) -> Result<Vec<DocPath>, CookError> {
    let mut paths = Vec::with_capacity(worlds.len());
    for w in worlds {
        let p = DocPath::new(w)
            .map_err(|e| CookError::Usage(format!("WORLD {w:?} is not a document path: {e}")))?;
        if paths.iter().any(|q: &DocPath| q.folded() == p.folded()) {
            return Err(CookError::Usage(format!(
                "WORLD {w:?} is listed twice (paths are compared ignoring ASCII case)"
            )));
        }
        paths.push(p);
    }
    paths.sort();
    Ok(paths)
}

fn read_documents(
    root: &Path,
    paths: &[DocPath],
    progress: &mut dyn Progress,
) -> Result<Vec<(DocPath, WorldV1)>, CookError> {
    progress.begin(paths.len() as u64);
    let docs = paths
        .iter()
        .map(|path| {
            progress.step(path);
            let file = path.under(root);
            let bytes = read(&file)?;
            let world = WorldV1::from_slice(&file, &bytes)?;
            Ok((path.clone(), world))
        })
        .collect();
    progress.end();
    docs
}

fn migrate_error(e: MigrateError, manifest: &Path, manifest_bytes: &[u8]) -> CookError {
    match e {
        e @ MigrateError::RepeatedDocument { .. } => CookError::Usage(e.to_string()),
        MigrateError::Entropy(e) => CookError::Entropy(e),
        MigrateError::Conflict { what } => CookError::Conflict { what },
        MigrateError::Stale { legacy_id, at, .. } => {
            let (line, column) = super::json_path::locate(manifest_bytes, &at);
            CookError::Refused(Located {
                file: manifest.to_path_buf(),
                line,
                column,
                kind: ApplyErrorKind::ObjectWithoutEntity { legacy_id },
            })
        }
    }
}

/// `identity migrate ROOT MANIFEST WORLD...`: mints the manifest of the listed version-1
/// documents and creates it atomically, never replacing a file.
///
/// Refuses to start when `manifest` exists; reads every document before minting; mints
/// everything before writing anything.
///
/// # Errors
/// [`CookError`]; nothing is written on any error.
pub fn migrate(
    root: &Path,
    manifest: &Path,
    worlds: &[String],
    entropy: &mut dyn EntropySource,
    hooks: Hooks<'_>,
) -> Result<MintReport, CookError> {
    let paths = doc_paths(worlds)?;
    if manifest.exists() {
        return Err(PublishError::Exists {
            path: manifest.to_path_buf(),
        }
        .into());
    }
    let docs = read_documents(root, &paths, hooks.progress)?;
    let listed: Vec<(DocPath, &WorldV1)> = docs.iter().map(|(p, w)| (p.clone(), w)).collect();
    let new = extend_manifest(&Manifest::default(), &listed, entropy)
        .map_err(|e| migrate_error(e, manifest, &[]))?;
    publish::create_new_with_hook(manifest, &new.manifest.to_bytes(), hooks.before_publish)?;
    Ok(MintReport {
        documents: new.manifest.documents.len(),
        minted: new.minted,
    })
}

/// `identity extend ROOT MANIFEST WORLD...`: mints only what the listed documents lack and
/// replaces the manifest atomically, only if it is unchanged since it was read.
///
/// Writes nothing when there is nothing to mint (`minted == 0`).
///
/// # Errors
/// [`CookError`]; the manifest is untouched on any error.
pub fn extend(
    root: &Path,
    manifest: &Path,
    worlds: &[String],
    entropy: &mut dyn EntropySource,
    hooks: Hooks<'_>,
) -> Result<MintReport, CookError> {
    let paths = doc_paths(worlds)?;
    let old_bytes = read(manifest)?;
    let old = Manifest::from_slice(manifest, &old_bytes)?;
    let docs = read_documents(root, &paths, hooks.progress)?;
    let listed: Vec<(DocPath, &WorldV1)> = docs.iter().map(|(p, w)| (p.clone(), w)).collect();
    let new = extend_manifest(&old, &listed, entropy)
        .map_err(|e| migrate_error(e, manifest, &old_bytes))?;
    if new.minted > 0 {
        publish::replace_if_unchanged(
            manifest,
            &old_bytes,
            &new.manifest.to_bytes(),
            hooks.before_publish,
        )?;
    }
    Ok(MintReport {
        documents: new.manifest.documents.len(),
        minted: new.minted,
    })
}

/// `identity apply ROOT MANIFEST SCHEMA WORLD OUTPUT`: replays the manifest onto the
/// version-1 document `ROOT/WORLD` and creates the version-2 record at `output`.
///
/// Pure apart from the reads and the one create-new publication: mints nothing; the same
/// inputs give byte-identical output.
///
/// # Errors
/// [`CookError`]; nothing is written on any error, and an existing `output` is never replaced.
pub fn apply(
    root: &Path,
    manifest: &Path,
    schema: &Path,
    world: &str,
    output: &Path,
    hooks: Hooks<'_>,
) -> Result<(), CookError> {
    let path = doc_paths(core::slice::from_ref(&world.to_owned()))?
        .pop()
        .ok_or_else(|| CookError::Usage("WORLD is required".into()))?;
    if output.exists() {
        return Err(PublishError::Exists {
            path: output.to_path_buf(),
        }
        .into());
    }
    let manifest_bytes = read(manifest)?;
    let world_file = path.under(root);
    // The manifest and schema parse on a second thread while the document is read and parsed
    // here; the first error in the command's order (manifest, schema, document) is reported.
    let (side, world) = std::thread::scope(|scope| {
        let side = scope.spawn(|| {
            let m = Manifest::from_slice(manifest, &manifest_bytes)?;
            let schema_bytes = read(schema)?;
            let s = Schema::from_slice(schema, &schema_bytes)?;
            Ok::<_, CookError>((m, s))
        });
        hooks.progress.begin(1);
        hooks.progress.step(&path);
        let world_bytes = read(&world_file);
        hooks.progress.end();
        let w = world_bytes.map(|bytes| {
            let w = WorldV1::from_slice(&world_file, &bytes);
            (bytes, w)
        });
        let side = side.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        (side, w)
    });
    let (m, s) = side?;
    let (world_bytes, w) = world?;
    let w = w?;
    let v2 = apply_record(w, &path, &m, &s).map_err(|f| {
        let (file, bytes) = match f.origin {
            Origin::World => (world_file.as_path(), world_bytes.as_slice()),
            Origin::Manifest => (manifest, manifest_bytes.as_slice()),
        };
        let (line, column) = super::json_path::locate(bytes, &f.path);
        CookError::Refused(Located {
            file: file.to_path_buf(),
            line,
            column,
            kind: f.kind,
        })
    })?;
    let bytes = v2.to_bytes();
    // Freeing the record's tree overlaps the publication's writes and fsyncs.
    std::thread::scope(|scope| {
        scope.spawn(move || drop(v2));
        publish::create_new_with_hook(output, &bytes, hooks.before_publish)
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_one_line() {
        let e = CookError::Usage("WORLD \"a\nb\" is not a document path".into());
        assert_eq!(
            e.to_string(),
            r#"usage: WORLD "a\nb" is not a document path"#
        );
        let e = CookError::Read {
            path: PathBuf::from("ro\not/m.json"),
            source: io::Error::other("gone\naway"),
        };
        assert_eq!(e.to_string(), r"ro\not/m.json: cannot read: gone\naway");
    }
}
