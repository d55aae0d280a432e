use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A git object id: 40 (SHA-1) or 64 (SHA-256) lowercase hexadecimal characters.
///
/// Serialized as its hexadecimal string, so it can be journaled as is.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Oid(String);

impl Oid {
    /// Parse a full object id; `None` unless `text` is 40 or 64 hexadecimal characters.
    /// Uppercase hexadecimal is accepted and stored lowercase.
    pub fn parse(text: &str) -> Option<Oid> {
        let valid_length = text.len() == 40 || text.len() == 64;
        if valid_length && text.bytes().all(|b| b.is_ascii_hexdigit()) {
            Some(Oid(text.to_ascii_lowercase()))
        } else {
            None
        }
    }

    /// The full hexadecimal id.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The first 12 characters, for messages.
    pub fn short(&self) -> &str {
        &self.0[..12]
    }
}

impl fmt::Display for Oid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Oid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Oid({})", self.0)
    }
}

impl AsRef<str> for Oid {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// The text is not a full object id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a git object id (40 or 64 hexadecimal characters)")]
pub struct InvalidOid(pub String);

impl FromStr for Oid {
    type Err = InvalidOid;

    fn from_str(text: &str) -> Result<Oid, InvalidOid> {
        Oid::parse(text).ok_or_else(|| InvalidOid(text.to_owned()))
    }
}

impl TryFrom<String> for Oid {
    type Error = InvalidOid;

    fn try_from(text: String) -> Result<Oid, InvalidOid> {
        text.parse()
    }
}

impl From<Oid> for String {
    fn from(oid: Oid) -> String {
        oid.0
    }
}
