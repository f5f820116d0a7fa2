//! The cache indexes a plugin declares in its manifest, checked.

use crate::gvk::Gvk;
use crate::store::{IndexKey, IndexKeyError};
use crate::wit::abi;
use serde::Serialize;

/// Why a declared cache index cannot be kept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    /// Its name is empty or longer than 63 characters.
    #[error("its name must be 1 to 63 characters")]
    NameLength,
    /// It indexes a kind (held here) the plugin does not subscribe to.
    #[error(
        "it indexes {}, which the plugin does not subscribe to",
        crate::text::escape_controls(&.0.to_string())
    )]
    NotSubscribed(Gvk),
    /// What it files objects under is not a label key or a field path.
    #[error(transparent)]
    Key(#[from] IndexKeyError),
}

/// A cache index a plugin declared: looked up by `name`, kept by the
/// informer of `kind` (see [`crate::store::index`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IndexDefinition {
    /// The name the plugin looks it up by.
    pub name: String,
    /// The kind whose cache it indexes; one the plugin subscribes to.
    pub kind: Gvk,
    /// What it files objects under.
    pub by: IndexKey,
}

impl IndexDefinition {
    /// Checks a declared index against the kinds the plugin subscribes to;
    /// the error says why it cannot be kept.
    pub fn from_guest(raw: abi::IndexDefinition, subscribed: &[&Gvk]) -> Result<Self, IndexError> {
        if raw.name.is_empty() || raw.name.len() > 63 {
            return Err(IndexError::NameLength);
        }
        let kind = Gvk::new(raw.kind.group, raw.kind.version, raw.kind.kind);
        if !subscribed.contains(&&kind) {
            return Err(IndexError::NotSubscribed(kind));
        }
        let by = match &raw.by {
            abi::IndexBy::Label(key) => IndexKey::label(key),
            abi::IndexBy::Field(path) => IndexKey::field(path),
            abi::IndexBy::Owner => Ok(IndexKey::Owner),
        }?;
        Ok(IndexDefinition {
            name: raw.name,
            kind,
            by,
        })
    }
}
