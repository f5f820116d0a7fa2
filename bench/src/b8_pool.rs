//! B8: the worker pool at scale. B2's fan-out ([`crate::b2_fanout`]) at 1,
//! 100 and 1,000 no-op plugins: notifications delivered per CPU-second at
//! 100 and at 1,000 plugins against one plugin, in the same repetition, and
//! the resident memory each of the thousand plugins adds once it has
//! handled events (its instance, store, touched linear memory and task; the
//! pool's threads are shared by all, and counted in the growth only as far
//! as they grow).

use crate::b2_fanout::fanout;
use crate::fixtures::Fixtures;
use crate::settings::Settings;
use crate::table::Row;

/// Runs B8.
pub fn run(settings: &Settings, fixtures: &Fixtures) -> Vec<Row> {
    fanout(
        settings,
        fixtures,
        "B8",
        &settings.b8_plugins,
        settings.b8_events,
    )
}
