//! Located errors: every rejection of a content file names the file and a JSON position.

use std::fmt;
use std::path::{Path, PathBuf};

/// One step of a path into a JSON document: a member name or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// The member of an object with this name.
    Key(String),
    /// The element of an array at this index (0-based).
    Index(usize),
}

/// A path from the root of a JSON document to one value (empty: the root itself).
pub type JsonPath = Vec<Step>;

/// The structural rejections every content reader shares (syntax and object shape).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Shape {
    /// The bytes are not one JSON value: a syntax error, invalid UTF-8, an unterminated value,
    /// trailing characters, a number out of range, or nesting deeper than 128 levels.
    #[error("invalid JSON: {message}")]
    Syntax {
        /// serde_json's description, without its position.
        message: String,
    },
    /// An object names the same member twice (JSON parsers disagree on which one wins).
    #[error("duplicate member `{name}`")]
    DuplicateMember {
        /// The repeated name (unescaped).
        name: String,
    },
    /// An object has a member its format does not define.
    #[error("unknown member `{name}`")]
    UnknownMember {
        /// The unknown name.
        name: String,
    },
    /// An object lacks a member its format requires.
    #[error("missing member `{name}`")]
    MissingMember {
        /// The missing name.
        name: &'static str,
    },
    /// A value has the wrong JSON type.
    #[error("expected {expected}")]
    WrongType {
        /// What the format wants there ("an object", "a string", ...).
        expected: &'static str,
    },
}

/// A rejection of a content file: the file, the position (1-based line and column, as
/// serde_json counts them) and what is wrong.
///
/// Displays as one line, `FILE:LINE:COLUMN: MESSAGE`. The position is serde_json's: for a
/// syntax error where it stopped reading; for a rule that a value breaks, just past that value
/// (for an object or array, just past its opening bracket).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located<K> {
    /// The file the bytes came from, as the caller named it.
    pub file: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// 1-based column (0 when the position is just after a newline at the end of the input).
    pub column: usize,
    /// What is wrong.
    pub kind: K,
}

impl<K: fmt::Display> fmt::Display for Located<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file.display(),
            self.line,
            self.column,
            self.kind
        )
    }
}

impl<K: fmt::Debug + fmt::Display> std::error::Error for Located<K> {}

/// A rule broken at a path, before its position in the bytes is looked up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault<K> {
    /// What is wrong.
    pub kind: K,
    /// Where, as a path into the document.
    pub path: JsonPath,
}

impl<K> Fault<K> {
    pub(crate) fn new(kind: impl Into<K>, path: &[Step]) -> Self {
        Self {
            kind: kind.into(),
            path: path.to_vec(),
        }
    }

    pub(crate) fn convert<L: From<K>>(self) -> Fault<L> {
        Fault {
            kind: self.kind.into(),
            path: self.path,
        }
    }

    /// Looks the path up in `bytes` (the document the fault was found in) and names `file`.
    pub fn locate(self, file: &Path, bytes: &[u8]) -> Located<K> {
        let (line, column) = super::json::locate(bytes, &self.path);
        Located {
            file: file.to_path_buf(),
            line,
            column,
            kind: self.kind,
        }
    }
}

impl<K: fmt::Display> fmt::Display for Fault<K> {
    /// `at $.entities[3].components.enemy: MESSAGE` (`at $: MESSAGE` for the root).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("at $")?;
        for step in &self.path {
            match step {
                Step::Key(k) => write!(f, ".{k}")?,
                Step::Index(i) => write!(f, "[{i}]")?,
            }
        }
        write!(f, ": {}", self.kind)
    }
}

impl<K: fmt::Debug + fmt::Display> std::error::Error for Fault<K> {}

/// Extends a path by one step without touching the original.
pub(crate) fn at(path: &[Step], step: Step) -> JsonPath {
    let mut p = Vec::with_capacity(path.len() + 1);
    p.extend_from_slice(path);
    p.push(step);
    p
}

pub(crate) fn key(path: &[Step], name: &str) -> JsonPath {
    at(path, Step::Key(name.to_owned()))
}

pub(crate) fn index(path: &[Step], i: usize) -> JsonPath {
    at(path, Step::Index(i))
}
