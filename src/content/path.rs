//! Document paths: portable, relative paths under a content root.

use core::fmt;
use std::path::{Path, PathBuf};

/// The longest document path, in bytes.
pub const DOC_PATH_MAX: usize = 1024;

/// A document's path relative to the content root, in the portable form manifests store.
///
/// The rule (`docs/content.md`): 1–[`DOC_PATH_MAX`] bytes of printable ASCII (`0x20..=0x7e`)
/// except `\ : * ? " < > |`; components separated by `/`; no leading or trailing `/`, no
/// empty component (`//`), no `.` or `..` component. So a path is never absolute, never
/// escapes the root through `..`, and has exactly one spelling. Two paths are the same
/// document when they are equal; manifests also refuse two paths equal ignoring ASCII case,
/// which would name one file on a case-insensitive file system.
///
/// # Examples
///
/// ```
/// use ludus::content::DocPath;
/// let p: DocPath = "levels/first-room.world.json".parse()?;
/// assert_eq!(p.as_str(), "levels/first-room.world.json");
/// assert!("../x.json".parse::<DocPath>().is_err());
/// assert!("/abs.json".parse::<DocPath>().is_err());
/// # Ok::<(), ludus::content::PathError>(())
/// ```
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DocPath(String);

/// Why a text is not a [`DocPath`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// Empty, or longer than [`DOC_PATH_MAX`] bytes.
    #[error("path length must be 1..={DOC_PATH_MAX} bytes, found {found}")]
    Length {
        /// The length found.
        found: usize,
    },
    /// Starts with `/`: an absolute path.
    #[error("path is absolute (starts with `/`)")]
    Absolute,
    /// An empty component: `//` inside, or `/` at the end.
    #[error("path has an empty component (`//` or a trailing `/`)")]
    EmptyComponent,
    /// A `.` or `..` component.
    #[error("path has a `.` or `..` component")]
    DotComponent,
    /// A byte outside the allowed set (control, non-ASCII, `\ : * ? " < > |`).
    #[error("path byte {found:#04x} at {index} is not allowed (printable ASCII except \\ : * ? \" < > |)")]
    Byte {
        /// Byte offset.
        index: usize,
        /// The byte.
        found: u8,
    },
}

impl DocPath {
    /// Checks `text` against the rule.
    ///
    /// # Errors
    /// [`PathError`] names the first broken rule.
    pub fn new(text: &str) -> Result<Self, PathError> {
        check(text)?;
        Ok(Self(text.to_owned()))
    }

    /// The path text, `/`-separated.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The file this path names under `root`.
    pub fn under(&self, root: &Path) -> PathBuf {
        let mut p = root.to_path_buf();
        p.extend(self.0.split('/'));
        p
    }

    /// The path with ASCII letters folded to lowercase: equal for two paths that a
    /// case-insensitive file system would take for one.
    pub fn folded(&self) -> String {
        self.0.to_ascii_lowercase()
    }
}

fn check(text: &str) -> Result<(), PathError> {
    let bytes = text.as_bytes();
    if bytes.is_empty() || bytes.len() > DOC_PATH_MAX {
        return Err(PathError::Length { found: bytes.len() });
    }
    if let Some((index, &found)) = bytes.iter().enumerate().find(|&(_, &b)| {
        !(0x20..=0x7e).contains(&b)
            || matches!(b, b'\\' | b':' | b'*' | b'?' | b'"' | b'<' | b'>' | b'|')
    }) {
        return Err(PathError::Byte { index, found });
    }
    if bytes[0] == b'/' {
        return Err(PathError::Absolute);
    }
    for component in text.split('/') {
        match component {
            "" => return Err(PathError::EmptyComponent),
            "." | ".." => return Err(PathError::DotComponent),
            _ => {}
        }
    }
    Ok(())
}

impl core::str::FromStr for DocPath {
    type Err = PathError;

    fn from_str(text: &str) -> Result<Self, PathError> {
        Self::new(text)
    }
}

impl fmt::Display for DocPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.0)
    }
}

impl fmt::Debug for DocPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DocPath({:?})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule() {
        for ok in [
            "a",
            "a/b.json",
            "levels/first room.world.json",
            "x/.hidden/y",
            "a..b",
        ] {
            assert!(DocPath::new(ok).is_ok(), "{ok}");
        }
        let long = "a".repeat(DOC_PATH_MAX + 1);
        for (bad, e) in [
            ("", PathError::Length { found: 0 }),
            (
                long.as_str(),
                PathError::Length {
                    found: DOC_PATH_MAX + 1,
                },
            ),
            ("/a", PathError::Absolute),
            ("a//b", PathError::EmptyComponent),
            ("a/", PathError::EmptyComponent),
            ("./a", PathError::DotComponent),
            ("a/../b", PathError::DotComponent),
            ("..", PathError::DotComponent),
            (
                "a\\b",
                PathError::Byte {
                    index: 1,
                    found: b'\\',
                },
            ),
            (
                "c:/a",
                PathError::Byte {
                    index: 1,
                    found: b':',
                },
            ),
            (
                "a\nb",
                PathError::Byte {
                    index: 1,
                    found: b'\n',
                },
            ),
            (
                "é",
                PathError::Byte {
                    index: 0,
                    found: 0xc3,
                },
            ),
        ] {
            assert_eq!(DocPath::new(bad), Err(e), "{bad:?}");
        }
    }

    #[test]
    fn under_joins_components() {
        let p = DocPath::new("a/b/c.json").unwrap();
        assert_eq!(p.under(Path::new("/root")), Path::new("/root/a/b/c.json"));
    }
}
