//! Domain names and their stable tags.
//!
//! A name is 1..=[`MAX_NAME_LEN`] bytes of `[A-Za-z0-9_.:/-]`, stored inline so the registry
//! never allocates. Its tag is the 32-bit FNV-1a hash of those bytes: stable across builds and
//! processes, and always validated against the full name (two names may share a tag).

use super::usage::CounterMode;

/// Longest accepted domain name, in bytes.
pub const MAX_NAME_LEN: usize = 40;

/// Why a domain name or registration was refused. Nothing was registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RegisterError {
    /// The name is empty.
    #[error("domain name is empty")]
    EmptyName,
    /// The name is longer than [`MAX_NAME_LEN`] bytes.
    #[error("domain name is {len} bytes, more than the limit of {max}")]
    NameTooLong {
        /// Length of the rejected name.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The name holds a byte outside `[A-Za-z0-9_.:/-]`.
    #[error("domain name has a forbidden character at byte {index}")]
    BadCharacter {
        /// Byte offset of the first forbidden character.
        index: usize,
    },
    /// Another, different name already holds this tag.
    #[error("domain tag {tag:#010x} is already held by a different name")]
    TagCollision {
        /// The contested tag.
        tag: u32,
    },
    /// The name is registered with the other counter mode.
    #[error("domain is registered with {registered:?} counters")]
    ModeMismatch {
        /// The mode it holds.
        registered: CounterMode,
    },
    /// Every registry slot is taken.
    #[error("domain registry is full ({capacity} named domains)")]
    RegistryFull {
        /// Number of registrable slots.
        capacity: usize,
    },
}

/// The stable 32-bit FNV-1a tag of `name`'s bytes.
///
/// # Examples
/// ```
/// assert_eq!(ludus::memory::domain_tag("core"), ludus::memory::domain_tag("core"));
/// assert_ne!(ludus::memory::domain_tag("core"), ludus::memory::domain_tag("render"));
/// ```
pub const fn domain_tag(name: &str) -> u32 {
    let b = name.as_bytes();
    let mut h: u32 = 0x811c_9dc5;
    let mut i = 0;
    while i < b.len() {
        h ^= b[i] as u32;
        h = h.wrapping_mul(0x0100_0193);
        i += 1;
    }
    h
}

/// A validated name held inline. Invariant: `bytes[..len]` is a valid name (ASCII, so UTF-8).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct DomainName {
    bytes: [u8; MAX_NAME_LEN],
    len: u8,
}

impl DomainName {
    /// Validates and copies `name`.
    pub(crate) const fn new(name: &str) -> Result<Self, RegisterError> {
        let b = name.as_bytes();
        if b.is_empty() {
            return Err(RegisterError::EmptyName);
        }
        if b.len() > MAX_NAME_LEN {
            return Err(RegisterError::NameTooLong {
                len: b.len(),
                max: MAX_NAME_LEN,
            });
        }
        let mut bytes = [0u8; MAX_NAME_LEN];
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if !(c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b':' | b'/' | b'-')) {
                return Err(RegisterError::BadCharacter { index: i });
            }
            bytes[i] = c;
            i += 1;
        }
        Ok(Self {
            bytes,
            len: b.len() as u8,
        })
    }

    /// The name, in a `const` context.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) const fn as_str_const(&self) -> &str {
        let (head, _) = self.bytes.split_at(self.len as usize);
        match core::str::from_utf8(head) {
            Ok(s) => s,
            Err(_) => "",
        }
    }

    /// The name.
    pub(crate) fn as_str(&self) -> &str {
        // Invariant: the stored bytes are ASCII; fall back to "" rather than panic.
        core::str::from_utf8(&self.bytes[..self.len as usize]).unwrap_or("")
    }
}

impl core::fmt::Debug for DomainName {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Debug::fmt(self.as_str(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_reference_values() {
        assert_eq!(domain_tag(""), 0x811c_9dc5);
        assert_eq!(domain_tag("a"), 0xe40c_292c);
        assert_eq!(domain_tag("foobar"), 0xbf9c_f968);
    }

    #[test]
    fn names_are_validated() {
        assert_eq!(DomainName::new(""), Err(RegisterError::EmptyName));
        assert_eq!(
            DomainName::new("a b"),
            Err(RegisterError::BadCharacter { index: 1 })
        );
        assert_eq!(
            DomainName::new("\"x"),
            Err(RegisterError::BadCharacter { index: 0 })
        );
        let long = "x".repeat(MAX_NAME_LEN + 1);
        assert!(matches!(
            DomainName::new(&long),
            Err(RegisterError::NameTooLong { .. })
        ));
        let max = "y".repeat(MAX_NAME_LEN);
        assert_eq!(DomainName::new(&max).unwrap().as_str(), max);
        assert_eq!(
            DomainName::new("render/gpu-upload_2.x:y").unwrap().as_str(),
            "render/gpu-upload_2.x:y"
        );
    }
}
