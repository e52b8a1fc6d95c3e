//! Located errors: every rejection of a content file names the file and a JSON position.

use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};

use super::json_path::{self, JsonPath, Step};

/// Untrusted text (a member name, a property name) quoted in a message: as written, except
/// that a backslash and every character that would break or hide in a line (a newline, a tab,
/// other control and non-printable characters) are escaped as in a Rust string literal (`\\`,
/// `\n`, `\u{7f}`). Quotes are left alone. A message stays one line whatever the input holds.
pub(crate) struct Text<'a>(pub(crate) &'a str);

impl fmt::Display for Text<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Escape { f, all: true }.write_str(self.0)
    }
}

/// A message or a path that embeds text the pipeline does not control (serde's description
/// of a component's properties, a file name): as written, except that control characters and
/// the Unicode line and paragraph separators are escaped (`\n`, `\u{1b}`). Backslashes are
/// left alone: they may already be escapes, or a path's separators.
pub(crate) struct Line<T>(pub(crate) T);

impl<T: fmt::Display> fmt::Display for Line<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(Escape { f, all: false }, "{}", self.0)
    }
}

/// Writes through to `f`, escaping what `Text` (`all`) or `Line` escape.
struct Escape<'a, 'b> {
    f: &'a mut fmt::Formatter<'b>,
    all: bool,
}

impl fmt::Write for Escape<'_, '_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for c in s.chars() {
            let breaks = c.is_control() || matches!(c, '\u{2028}' | '\u{2029}');
            if breaks || (self.all && !matches!(c, '"' | '\'')) {
                write!(self.f, "{}", c.escape_debug())?;
            } else {
                self.f.write_char(c)?;
            }
        }
        Ok(())
    }
}

/// The structural rejections every content reader shares (syntax and object shape).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Shape {
    /// The bytes are not one JSON value: a syntax error, invalid UTF-8, an unterminated value,
    /// trailing characters, a number out of range, or nesting deeper than 128 levels.
    #[error("invalid JSON: {}", Line(message))]
    Syntax {
        /// serde_json's description, without its position.
        message: String,
    },
    /// An object names the same member twice (JSON parsers disagree on which one wins).
    #[error("duplicate member `{}`", Text(name))]
    DuplicateMember {
        /// The repeated name (unescaped).
        name: String,
    },
    /// An object has a member its format does not define.
    #[error("unknown member `{}`", Text(name))]
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
/// Displays as one line, `FILE:LINE:COLUMN: MESSAGE` (control characters in the file name and
/// in any input text the message quotes are escaped). The position is serde_json's: for a
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
            Line(self.file.display()),
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
        let (line, column) = json_path::locate(bytes, &self.path);
        Located {
            file: file.to_path_buf(),
            line,
            column,
            kind: self.kind,
        }
    }
}

impl<K: fmt::Display> fmt::Display for Fault<K> {
    /// `at $.entities[3].components.enemy: MESSAGE` (`at $: MESSAGE` for the root); member
    /// names are escaped as `Text`, so the line stays one line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("at $")?;
        for step in &self.path {
            match step {
                Step::Key(k) => write!(f, ".{}", Text(k))?,
                Step::Index(i) => write!(f, "[{i}]")?,
            }
        }
        write!(f, ": {}", self.kind)
    }
}

impl<K: fmt::Debug + fmt::Display> std::error::Error for Fault<K> {}

#[cfg(test)]
mod tests {
    use super::*;

    /// A name holding every kind of line break and a backslash.
    const NASTY: &str = "a\nb\r\tc\u{1b}\u{85}\u{2028}\u{2029}\\d\"'e";

    fn one_line(text: &str) {
        assert!(
            !text.contains(|c: char| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}')),
            "not one line: {text:?}"
        );
    }

    #[test]
    fn text_escapes_control_characters_and_backslashes() {
        let shown = Text(NASTY).to_string();
        one_line(&shown);
        assert_eq!(shown, r#"a\nb\r\tc\u{1b}\u{85}\u{2028}\u{2029}\\d"'e"#);
        assert_eq!(Text("plain-name_1.x:y").to_string(), "plain-name_1.x:y");
        assert_eq!(Text("école").to_string(), "école");
    }

    #[test]
    fn line_escapes_control_characters_only() {
        let shown = Line(NASTY).to_string();
        one_line(&shown);
        assert_eq!(shown, r#"a\nb\r\tc\u{1b}\u{85}\u{2028}\u{2029}\d"'e"#);
        assert_eq!(Line(r"C:\levels\a.json").to_string(), r"C:\levels\a.json");
    }

    #[test]
    fn shape_messages_are_one_line() {
        let syntax = Shape::Syntax {
            message: "control character\nfound".into(),
        };
        assert_eq!(
            syntax.to_string(),
            r"invalid JSON: control character\nfound"
        );
        let duplicate = Shape::DuplicateMember {
            name: "\name".into(),
        };
        assert_eq!(duplicate.to_string(), r"duplicate member `\name`");
        let unknown = Shape::UnknownMember { name: NASTY.into() };
        one_line(&unknown.to_string());
        assert_eq!(
            Shape::UnknownMember {
                name: "extra".into()
            }
            .to_string(),
            "unknown member `extra`"
        );
    }

    #[test]
    fn located_escapes_the_file_name() {
        let e = Located {
            file: PathBuf::from("levels/a\nb.json"),
            line: 3,
            column: 7,
            kind: Shape::UnknownMember {
                name: "x\ny".into(),
            },
        };
        assert_eq!(
            e.to_string(),
            r"levels/a\nb.json:3:7: unknown member `x\ny`"
        );
    }

    #[test]
    fn fault_escapes_member_names_in_the_path() {
        let f: Fault<Shape> = Fault::new(
            Shape::WrongType {
                expected: "an object",
            },
            &[
                Step::Key("entities".into()),
                Step::Index(2),
                Step::Key("comp\nonents".into()),
            ],
        );
        assert_eq!(
            f.to_string(),
            r"at $.entities[2].comp\nonents: expected an object"
        );
    }
}
