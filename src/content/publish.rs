//! Atomic publication of a whole file: readers see no file or the complete one, never a part.
//!
//! Both operations write a temporary file in the destination's directory, `fsync` it, and
//! only then publish it under its final name, so a crash leaves either nothing or the whole
//! file (and at worst a stray `.NAME.ludus-tmp.*` file, never a torn destination).
//!
//! * [`create_new`] never replaces anything. It publishes with `hard_link(tmp, dest)`, which
//!   the kernel refuses with `AlreadyExists` when `dest` exists at that instant — including a
//!   file that appeared after the command started — then removes the temporary name and
//!   `fsync`s the directory. A file system without hard links makes it fail (an I/O error
//!   naming `link`) rather than fall back to a check-then-rename that could replace.
//! * [`replace_if_unchanged`] is the one intended replacement (`identity extend` publishing a
//!   grown manifest): it re-reads the destination just before renaming over it and refuses
//!   when the bytes differ from the ones the caller read. The check and the rename are two
//!   system calls, so a writer that replaces the file between them is lost; `docs/content.md`
//!   spells out that residual race.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use super::error::Line;

/// Why a file was not published. The destination is untouched in every case.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The destination exists (it may have appeared during the command); it was not replaced.
    #[error("{}: already exists; refusing to replace it", Line(path.display()))]
    Exists {
        /// The destination.
        path: PathBuf,
    },
    /// The destination no longer holds the bytes the caller read (or is gone).
    #[error("{}: changed since it was read; refusing to replace it", Line(path.display()))]
    Changed {
        /// The destination.
        path: PathBuf,
    },
    /// An I/O step failed.
    #[error("{}: {op} failed: {}", Line(path.display()), Line(source))]
    Io {
        /// The file the step acted on.
        path: PathBuf,
        /// The step (`create temporary file`, `write`, `fsync`, `link`, ...).
        op: &'static str,
        /// The OS error.
        source: io::Error,
    },
}

fn io_err<'p>(path: &'p Path, op: &'static str) -> impl FnOnce(io::Error) -> PublishError + 'p {
    move |source| PublishError::Io {
        path: path.to_path_buf(),
        op,
        source,
    }
}

/// Creates `dest` holding exactly `bytes`, atomically; never replaces an existing file.
///
/// # Errors
/// [`PublishError::Exists`] when `dest` exists (before or during the call); `Io` when a step
/// fails. Either way `dest` is untouched and the temporary file is removed.
///
/// # Examples
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use ludus::content::{publish, PublishError};
/// let dir = std::env::temp_dir().join(format!("ludus-doc-publish-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let dest = dir.join("out.json");
/// # let _ = std::fs::remove_file(&dest);
/// publish::create_new(&dest, b"{}\n")?;
/// assert!(matches!(publish::create_new(&dest, b"[]\n"), Err(PublishError::Exists { .. })));
/// assert_eq!(std::fs::read(&dest)?, b"{}\n");
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok(())
/// # }
/// ```
pub fn create_new(dest: &Path, bytes: &[u8]) -> Result<(), PublishError> {
    create_new_with_hook(dest, bytes, &mut || {})
}

/// [`create_new`], calling `before_publish` after the temporary file is durable and just
/// before the link: tests use it to create `dest` at the worst moment.
///
/// # Errors
/// As [`create_new`].
pub fn create_new_with_hook(
    dest: &Path,
    bytes: &[u8],
    before_publish: &mut dyn FnMut(),
) -> Result<(), PublishError> {
    if dest.exists() {
        return Err(PublishError::Exists {
            path: dest.to_path_buf(),
        });
    }
    let tmp = TempFile::write(dest, bytes)?;
    before_publish();
    match fs::hard_link(&tmp.path, dest) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            return Err(PublishError::Exists {
                path: dest.to_path_buf(),
            })
        }
        Err(e) => return Err(io_err(dest, "link")(e)),
    }
    tmp.remove()?;
    sync_dir(dest)
}

/// Replaces `dest` with `bytes` atomically, only if it still holds exactly `expected`.
///
/// `before_publish` runs after the temporary file is durable and before the re-read.
///
/// # Errors
/// [`PublishError::Changed`] when `dest` differs from `expected` or is gone; `Io` when a step
/// fails. Either way `dest` is untouched and the temporary file is removed.
pub fn replace_if_unchanged(
    dest: &Path,
    expected: &[u8],
    bytes: &[u8],
    before_publish: &mut dyn FnMut(),
) -> Result<(), PublishError> {
    // A symbolic link is followed: the file it names is replaced, through a temporary file in
    // that file's own directory (so the rename stays atomic), and the link keeps naming it.
    // Renaming over the link itself would turn it into a copy and leave its target stale.
    let real = match fs::canonicalize(dest) {
        Ok(real) => real,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(PublishError::Changed {
                path: dest.to_path_buf(),
            })
        }
        Err(e) => return Err(io_err(dest, "resolve")(e)),
    };
    let tmp = TempFile::write(&real, bytes)?;
    before_publish();
    match fs::read(&real) {
        Ok(now) if now == expected => {}
        Ok(_) => {
            return Err(PublishError::Changed {
                path: dest.to_path_buf(),
            })
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(PublishError::Changed {
                path: dest.to_path_buf(),
            })
        }
        Err(e) => return Err(io_err(dest, "re-read")(e)),
    }
    fs::rename(&tmp.path, &real).map_err(io_err(dest, "rename"))?;
    tmp.disarm();
    sync_dir(&real)
}

/// A temporary file next to its destination, removed on drop unless published.
struct TempFile {
    path: PathBuf,
    armed: bool,
}

impl TempFile {
    fn write(dest: &Path, bytes: &[u8]) -> Result<Self, PublishError> {
        let name = dest.file_name().ok_or_else(|| PublishError::Io {
            path: dest.to_path_buf(),
            op: "name the destination",
            source: io::Error::new(io::ErrorKind::InvalidInput, "no file name"),
        })?;
        let stamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let mut attempt = 0u32;
        let (path, mut file) = loop {
            let mut tmp_name = std::ffi::OsString::from(".");
            tmp_name.push(name);
            tmp_name.push(format!(
                ".ludus-tmp.{}.{stamp:08x}.{attempt}",
                std::process::id()
            ));
            let path = dest.with_file_name(tmp_name);
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(file) => break (path, file),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 64 => {
                    attempt += 1;
                }
                Err(e) => return Err(io_err(&path, "create temporary file")(e)),
            }
        };
        let tmp = Self { path, armed: true };
        file.write_all(bytes).map_err(io_err(&tmp.path, "write"))?;
        file.sync_all().map_err(io_err(&tmp.path, "fsync"))?;
        Ok(tmp)
    }

    fn remove(mut self) -> Result<(), PublishError> {
        self.armed = false;
        fs::remove_file(&self.path).map_err(io_err(&self.path, "remove temporary file"))
    }

    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if self.armed {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Makes the directory entry durable (POSIX needs an `fsync` of the directory itself).
fn sync_dir(dest: &Path) -> Result<(), PublishError> {
    #[cfg(unix)]
    {
        let dir = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io_err(dir, "fsync directory"))?;
    }
    #[cfg(not(unix))]
    let _ = (dest, File::open);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_escape_the_path() {
        let path = PathBuf::from("out\nput.json");
        let e = PublishError::Exists { path: path.clone() };
        assert_eq!(
            e.to_string(),
            r"out\nput.json: already exists; refusing to replace it"
        );
        let e = PublishError::Changed { path: path.clone() };
        assert_eq!(
            e.to_string(),
            r"out\nput.json: changed since it was read; refusing to replace it"
        );
        let e = PublishError::Io {
            path,
            op: "write",
            source: io::Error::other("disk\nfull"),
        };
        assert_eq!(e.to_string(), r"out\nput.json: write failed: disk\nfull");
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ludus-publish-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri isolates the file system")]
    fn create_new_publishes_and_refuses_existing() {
        let dir = scratch("create");
        let dest = dir.join("m.json");
        create_new(&dest, b"one").unwrap();
        assert_eq!(fs::read(&dest).unwrap(), b"one");
        assert!(matches!(
            create_new(&dest, b"two"),
            Err(PublishError::Exists { .. })
        ));
        assert_eq!(fs::read(&dest).unwrap(), b"one");
        assert_eq!(leftovers(&dir), ["m.json"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri isolates the file system")]
    fn a_file_that_appears_during_the_call_survives() {
        let dir = scratch("race");
        let dest = dir.join("m.json");
        let r = create_new_with_hook(&dest, b"ours", &mut || {
            fs::write(&dest, b"theirs").unwrap();
        });
        assert!(matches!(r, Err(PublishError::Exists { .. })), "{r:?}");
        assert_eq!(fs::read(&dest).unwrap(), b"theirs");
        assert_eq!(leftovers(&dir), ["m.json"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri isolates the file system")]
    fn replace_checks_the_old_bytes() {
        let dir = scratch("replace");
        let dest = dir.join("m.json");
        fs::write(&dest, b"v1").unwrap();
        replace_if_unchanged(&dest, b"v1", b"v2", &mut || {}).unwrap();
        assert_eq!(fs::read(&dest).unwrap(), b"v2");
        let r = replace_if_unchanged(&dest, b"v2", b"v3", &mut || {
            fs::write(&dest, b"edited").unwrap();
        });
        assert!(matches!(r, Err(PublishError::Changed { .. })), "{r:?}");
        assert_eq!(fs::read(&dest).unwrap(), b"edited");
        let r = replace_if_unchanged(&dest, b"edited", b"v4", &mut || {
            fs::remove_file(&dest).unwrap();
        });
        assert!(matches!(r, Err(PublishError::Changed { .. })), "{r:?}");
        assert!(!dest.exists());
        assert!(leftovers(&dir).is_empty());
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A replaced symbolic link still names its file, which holds the new bytes (renaming over
    /// the link would turn it into a copy and leave the file it named stale).
    #[test]
    #[cfg(unix)]
    #[cfg_attr(miri, ignore = "Miri isolates the file system")]
    fn replace_through_a_symbolic_link_updates_the_file_it_names() {
        let dir = scratch("link");
        fs::create_dir_all(dir.join("shared")).unwrap();
        let real = dir.join("shared").join("real.json");
        let link = dir.join("link.json");
        fs::write(&real, b"v1").unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        replace_if_unchanged(&link, b"v1", b"v2", &mut || {}).unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(&real).unwrap(), b"v2");
        assert_eq!(leftovers(&dir.join("shared")), ["real.json"]);
        let r = replace_if_unchanged(&link, b"v1", b"v3", &mut || {});
        assert!(matches!(r, Err(PublishError::Changed { .. })), "{r:?}");
        assert_eq!(fs::read(&real).unwrap(), b"v2");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri isolates the file system")]
    fn missing_directory_is_an_io_error_and_leaves_nothing() {
        let dir = scratch("nodir");
        let dest = dir.join("absent").join("m.json");
        assert!(matches!(
            create_new(&dest, b"x"),
            Err(PublishError::Io { .. })
        ));
        assert!(leftovers(&dir).is_empty());
        fs::remove_dir_all(&dir).unwrap();
    }
}
