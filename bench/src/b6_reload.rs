//! B6: reload latency, from a changed file in place to the new version
//! handling events; baseline: that plugin's cold compile time. Goals:
//! ≤ 100 ms with a cached artifact, ≤ compile time + 100 ms cold.
//!
//! Pending: hot reload (the `reload` module) is being built on `main`; this
//! benchmark is written against it once it lands. Until then the suite
//! reports a marked, empty row.

use crate::settings::Settings;
use crate::table::{Goal, Row, Unit};

/// Why B6 has no figures yet.
pub const PENDING: &str = "needs the hot-reload module (in progress on main)";

/// The pending rows of B6.
pub fn run(_settings: &Settings) -> Vec<Row> {
    crate::progress(format!("B6 pending: {PENDING}"));
    ["cached artifact", "cold compile"]
        .into_iter()
        .enumerate()
        .map(|(i, case)| Row {
            id: format!("B6.{}", ["cached", "cold"][i]),
            what: format!("reload, file in place → new version handling events ({case})"),
            unit: Unit::Millis,
            baseline: Default::default(),
            measured: Default::default(),
            ratio: Default::default(),
            goal: Goal::Pending(PENDING),
            details: String::new(),
        })
        .collect()
}
