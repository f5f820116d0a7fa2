//! Debouncing of filesystem events: decides when a changed path has settled
//! and may be read.
//!
//! A path is *settled* a short quiet period after its last event when the
//! event says the change is complete: the writer closed the file
//! (`close-write`), or the file was renamed into place or removed. A path
//! that was created or written to but not yet closed is *being written*: it
//! waits for its close, or for a much longer quiet period if none comes (a
//! writer that died, a platform without close events). Every further event
//! restarts the path's wait, so a burst of writes settles once, after the
//! last. Reading our own files produces open/close-read events, which are
//! ignored. Events on other names (a Kubernetes ConfigMap volume swapping its
//! `..data` link, an overflowed event queue) ask for a rescan of the whole
//! directory.
//!
//! The state machine is pure: callers pass the current time, so tests need
//! no clock.

use notify::event::{AccessKind, AccessMode, EventKind, ModifyKind};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long paths must stay quiet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SettleTiming {
    /// Quiet period after a complete change (closed, renamed, removed).
    pub quiet: Duration,
    /// Quiet period of a file written to but never closed.
    pub open_writer_quiet: Duration,
}

impl Default for SettleTiming {
    fn default() -> Self {
        SettleTiming {
            quiet: Duration::from_millis(50),
            open_writer_quiet: Duration::from_secs(5),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Pending {
    due: Instant,
    writing: bool,
}

/// What became due: paths to re-read, and whether to rescan everything.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Due {
    /// Paths whose change has settled.
    pub paths: Vec<PathBuf>,
    /// Re-read every file, not just `paths`.
    pub rescan: bool,
}

impl Due {
    /// True when nothing is due.
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty() && !self.rescan
    }
}

/// Pending changes of one directory.
#[derive(Debug, Default)]
pub struct Settle {
    timing: SettleTiming,
    pending: HashMap<PathBuf, Pending>,
    rescan_due: Option<Instant>,
}

/// How an event bears on the path it names.
enum Effect {
    /// Our own reads and the like: no change.
    Ignore,
    /// Written to, not closed yet.
    Writing,
    /// The change is complete.
    Complete,
    /// Some change; the writer's state is unknown.
    Touched,
}

fn effect(kind: &EventKind) -> Effect {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => Effect::Complete,
        EventKind::Access(_) => Effect::Ignore,
        EventKind::Create(_) | EventKind::Modify(ModifyKind::Data(_)) => Effect::Writing,
        EventKind::Modify(ModifyKind::Name(_)) | EventKind::Remove(_) => Effect::Complete,
        _ => Effect::Touched,
    }
}

impl Settle {
    /// No pending changes.
    pub fn new(timing: SettleTiming) -> Self {
        Settle {
            timing,
            ..Settle::default()
        }
    }

    /// Takes one event into account. `relevant` says whether a path is one
    /// the caller tracks (a plugin file or a sidecar); events on any other
    /// path of the directory ask for a rescan.
    pub fn observe(
        &mut self,
        event: &notify::Event,
        now: Instant,
        relevant: impl Fn(&Path) -> bool,
    ) {
        if event.need_rescan() {
            self.rescan(now);
        }
        let effect = effect(&event.kind);
        if matches!(effect, Effect::Ignore) {
            return;
        }
        for path in &event.paths {
            if !relevant(path) {
                self.rescan(now);
                continue;
            }
            let was_writing = self.pending.get(path).is_some_and(|p| p.writing);
            let writing = match effect {
                Effect::Writing => true,
                Effect::Complete => false,
                Effect::Touched | Effect::Ignore => was_writing,
            };
            let wait = if writing {
                self.timing.open_writer_quiet
            } else {
                self.timing.quiet
            };
            self.pending.insert(
                path.clone(),
                Pending {
                    due: now + wait,
                    writing,
                },
            );
        }
    }

    /// Asks for a rescan of the whole directory after the quiet period
    /// (events were lost, or something else changed). A rescan already asked
    /// for keeps its time: a stream of unrelated events cannot put it off.
    pub fn rescan(&mut self, now: Instant) {
        self.rescan_due.get_or_insert(now + self.timing.quiet);
    }

    /// When the next path settles, if any is pending.
    pub fn next_due(&self) -> Option<Instant> {
        self.pending
            .values()
            .map(|p| p.due)
            .chain(self.rescan_due)
            .min()
    }

    /// Takes what has settled by `now`.
    pub fn take_due(&mut self, now: Instant) -> Due {
        let mut paths: Vec<PathBuf> = self
            .pending
            .iter()
            .filter(|(_, p)| p.due <= now)
            .map(|(path, _)| path.clone())
            .collect();
        for path in &paths {
            self.pending.remove(path);
        }
        paths.sort();
        let rescan = self.rescan_due.is_some_and(|due| due <= now);
        if rescan {
            self.rescan_due = None;
        }
        Due { paths, rescan }
    }

    /// True while `path` has a change that has not settled: it must not be
    /// read yet.
    pub fn is_unsettled(&self, path: &Path) -> bool {
        self.pending.contains_key(path)
    }

    /// True while `path` is being written (created or modified, not closed).
    pub fn is_being_written(&self, path: &Path) -> bool {
        self.pending.get(path).is_some_and(|p| p.writing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{CreateKind, DataChange, RemoveKind, RenameMode};

    const MS: Duration = Duration::from_millis(1);

    fn timing() -> SettleTiming {
        SettleTiming {
            quiet: 50 * MS,
            open_writer_quiet: 5000 * MS,
        }
    }

    fn event(kind: EventKind, path: &str) -> notify::Event {
        notify::Event::new(kind).add_path(PathBuf::from(path))
    }

    fn plugins_only(path: &Path) -> bool {
        path.extension().is_some_and(|e| e == "wasm")
    }

    const CREATE: EventKind = EventKind::Create(CreateKind::File);
    const WRITE: EventKind = EventKind::Modify(ModifyKind::Data(DataChange::Any));
    const CLOSE_WRITE: EventKind = EventKind::Access(AccessKind::Close(AccessMode::Write));

    #[test]
    fn a_closed_write_settles_after_the_quiet_period() {
        let (t0, mut settle) = (Instant::now(), Settle::new(timing()));
        settle.observe(&event(CREATE, "/d/p.wasm"), t0, plugins_only);
        settle.observe(&event(WRITE, "/d/p.wasm"), t0 + MS, plugins_only);
        assert!(settle.is_being_written(Path::new("/d/p.wasm")));
        settle.observe(&event(CLOSE_WRITE, "/d/p.wasm"), t0 + 2 * MS, plugins_only);
        assert!(!settle.is_being_written(Path::new("/d/p.wasm")));
        assert!(settle.is_unsettled(Path::new("/d/p.wasm")));
        assert_eq!(settle.next_due(), Some(t0 + 52 * MS));
        assert!(settle.take_due(t0 + 51 * MS).is_empty());
        let due = settle.take_due(t0 + 52 * MS);
        assert_eq!(due.paths, [PathBuf::from("/d/p.wasm")]);
        assert!(!due.rescan);
        assert_eq!(settle.next_due(), None);
    }

    #[test]
    fn a_file_still_open_for_writing_waits_for_its_close() {
        let (t0, mut settle) = (Instant::now(), Settle::new(timing()));
        settle.observe(&event(CREATE, "/d/p.wasm"), t0, plugins_only);
        settle.observe(&event(WRITE, "/d/p.wasm"), t0 + 10 * MS, plugins_only);
        assert!(settle.take_due(t0 + 1000 * MS).is_empty(), "no close yet");
        settle.observe(&event(WRITE, "/d/p.wasm"), t0 + 3000 * MS, plugins_only);
        assert!(
            settle.take_due(t0 + 7000 * MS).is_empty(),
            "writes restart the wait"
        );
        assert_eq!(
            settle.take_due(t0 + 8000 * MS).paths,
            [PathBuf::from("/d/p.wasm")],
            "a writer that never closes is given up on"
        );
    }

    #[test]
    fn a_burst_of_writes_settles_once_after_the_last() {
        let (t0, mut settle) = (Instant::now(), Settle::new(timing()));
        for i in 0..10u32 {
            let at = t0 + i * 20 * MS;
            settle.observe(&event(CREATE, "/d/p.wasm"), at, plugins_only);
            settle.observe(&event(WRITE, "/d/p.wasm"), at + MS, plugins_only);
            settle.observe(&event(CLOSE_WRITE, "/d/p.wasm"), at + 2 * MS, plugins_only);
            assert!(settle.take_due(at + 19 * MS).is_empty(), "write {i}");
        }
        assert_eq!(settle.next_due(), Some(t0 + (180 + 52) * MS));
        assert_eq!(settle.take_due(t0 + 232 * MS).paths.len(), 1);
    }

    #[test]
    fn renames_and_removals_are_complete_changes() {
        let (t0, mut settle) = (Instant::now(), Settle::new(timing()));
        let rename = notify::Event::new(EventKind::Modify(ModifyKind::Name(RenameMode::Both)))
            .add_path(PathBuf::from("/d/.p.wasm.tmp"))
            .add_path(PathBuf::from("/d/p.wasm"));
        settle.observe(&rename, t0, plugins_only);
        settle.observe(
            &event(EventKind::Remove(RemoveKind::File), "/d/q.wasm"),
            t0,
            plugins_only,
        );
        let due = settle.take_due(t0 + 50 * MS);
        assert_eq!(
            due.paths,
            [PathBuf::from("/d/p.wasm"), PathBuf::from("/d/q.wasm")]
        );
        assert!(due.rescan, "the temporary name is not a plugin file");
    }

    #[test]
    fn our_own_reads_are_ignored() {
        let (t0, mut settle) = (Instant::now(), Settle::new(timing()));
        for kind in [
            EventKind::Access(AccessKind::Open(AccessMode::Any)),
            EventKind::Access(AccessKind::Close(AccessMode::Read)),
            EventKind::Access(AccessKind::Read),
        ] {
            settle.observe(&event(kind, "/d/p.wasm"), t0, plugins_only);
        }
        assert_eq!(settle.next_due(), None);
    }

    #[test]
    fn other_names_and_lost_events_ask_for_a_rescan() {
        let (t0, mut settle) = (Instant::now(), Settle::new(timing()));
        settle.observe(&event(CREATE, "/d/..data_tmp"), t0, plugins_only);
        assert!(!settle.is_unsettled(Path::new("/d/..data_tmp")));
        let due = settle.take_due(t0 + 50 * MS);
        assert!(due.rescan && due.paths.is_empty());
        let overflow = notify::Event::new(EventKind::Other).set_flag(notify::event::Flag::Rescan);
        settle.observe(&overflow, t0 + 60 * MS, plugins_only);
        assert!(settle.take_due(t0 + 110 * MS).rescan);
    }

    #[test]
    fn a_stream_of_unrelated_events_cannot_put_a_rescan_off() {
        let (t0, mut settle) = (Instant::now(), Settle::new(timing()));
        for i in 0..100u32 {
            settle.observe(&event(WRITE, "/d/app.log"), t0 + i * 10 * MS, plugins_only);
        }
        assert_eq!(settle.next_due(), Some(t0 + 50 * MS));
    }
}
