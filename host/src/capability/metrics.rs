//! PROVISIONAL until the metrics registry lands.

/// An update.
#[derive(Debug, Clone, Copy)]
pub enum Update {
    /// add
    Add,
    /// set
    Set,
    /// observe
    Observe,
}
