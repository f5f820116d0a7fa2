//! Makes the running plugins match the plugin directory, one pass at a time.
//!
//! A pass lists the directory and, for each plugin file that is new, changed
//! (by fingerprint, or named by a settled event) or due for a retry, reads it
//! and its sidecar and decides:
//!
//! - **disabled** (its sidecar, or `plugins.<name>.disabled` for the name
//!   its plugin gives itself): stop what runs from it;
//! - **same content** as what runs (a touch, a rewrite with equal bytes):
//!   nothing;
//! - otherwise **load** it off the async runtime (from the compiled-artifact
//!   cache when possible) and then **start** it, or **swap** it for the
//!   version running from the same file. A file that fails to read, parse,
//!   compile, validate or start is reported (log, status, metric) and the
//!   version running from it, if any, keeps running.
//!
//! Configuration and grants follow the plugin, not the file: a file is first
//! asked who its plugin is with no configuration at all, and only then given
//! the settings of `plugins.<name>` (if the file's digest is one the entry
//! pins, and its sidecar, if it names a plugin, names this one).
//!
//! A plugin name belongs to the first file that runs it. A file is checked
//! against the name's pin and trust rule ([`super::trust`]) before anything
//! else: one that fails is refused on its own and claims nothing, so it
//! never stops the plugin running under that name. A file passing them with
//! the **same build** (same sha256) as the running one is the same plugin:
//! it runs once, the copy is reported as a duplicate of the running file,
//! and if the running file goes the copy takes over without a stop. A file
//! passing them with **another build** is a rival: the name is refused to
//! every file claiming it (the running one stops) until all but one go, as
//! neither directory order nor arrival order may decide. Files that
//! vanished are unloaded first, so a rename within the directory hands the
//! name over. Passes run one after the other on one task: no two loads of
//! the same plugin race.

use super::ReloadSetup;
use super::scan::{self, Found, sidecar_of, signature_of};
use super::settings::IdentityError;
use super::status::{FileState, ReloadAction, ReloadRecord};
use super::trust::{Evidence, TrustError};
use crate::plugin::{CompileOutcome, LoadError, LoadOptions, LoadedPlugin, digest, revision};
use crate::reload::Sidecar;
use std::collections::{BTreeMap, HashSet};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

/// What loading a file gave.
enum Loaded {
    /// A plugin ready to start.
    Plugin(LoadedPlugin, CompileOutcome),
    /// A plugin the operator disabled by name.
    Disabled,
    /// A name other files claim too with other builds: refused before the
    /// plugin is given anything of that name's (its configuration above
    /// all).
    Contested(String, Vec<PathBuf>),
    /// The same build of a plugin that runs from another file (the name,
    /// the file): nothing to start.
    Duplicate(String, PathBuf),
}

/// The plugin running from a file.
#[derive(Debug, Clone)]
struct RunningFrom {
    name: String,
    digest: String,
}

/// What a file held when it was last evaluated: the plugin's digest, its
/// sidecar's text and its signature's (a change of any is a change of the
/// file).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Evaluated {
    digest: String,
    sidecar: Option<String>,
    signature: Option<String>,
}

/// What a pass remembers of one plugin file.
#[derive(Debug, Default)]
struct Known {
    /// Fingerprints when last evaluated; `None` forces a new evaluation.
    seen: Option<Found>,
    /// The content last evaluated.
    content: Option<Evaluated>,
    /// The plugin running from the file.
    running: Option<RunningFrom>,
    /// Refused because this plugin name runs from another file.
    blocked_by: Option<String>,
    /// The same build as the plugin (this name) running from that file:
    /// this file runs nothing, and takes over if that file goes.
    duplicate_of: Option<(String, PathBuf)>,
    /// The last attempt failed for a reason that may pass by itself (a kind
    /// not served yet): try again at the next rescan even if unchanged.
    retry: bool,
    /// The state the last evaluation left the file in.
    state: Option<FileState>,
}

/// What to look at in a pass.
#[derive(Debug, Default)]
pub(crate) struct PassScope<'a> {
    /// Re-read these files even if their fingerprints are unchanged.
    pub forced: &'a [PathBuf],
    /// Re-read every file and retry every transient failure.
    pub rescan: bool,
}

/// The reconciler of one plugin directory.
pub(crate) struct Reconciler {
    setup: ReloadSetup,
    known: BTreeMap<PathBuf, Known>,
    /// Files left for later because they were modified a moment ago: read
    /// at the next pass whatever their fingerprint says.
    deferred: HashSet<PathBuf>,
}

impl Reconciler {
    pub(crate) fn new(setup: ReloadSetup) -> Self {
        Reconciler {
            setup,
            known: BTreeMap::new(),
            deferred: HashSet::new(),
        }
    }

    pub(crate) fn setup(&self) -> &ReloadSetup {
        &self.setup
    }

    /// One pass over the directory. `unsettled` names files still being
    /// changed: they are left for a later pass. So are files modified less
    /// than the quiet period ago, whose writer's events may not have arrived
    /// yet: returns true when some were, and a rescan is due shortly.
    pub(crate) async fn pass(
        &mut self,
        scope: PassScope<'_>,
        unsettled: impl Fn(&Path) -> bool,
    ) -> bool {
        let mut on_disk = BTreeMap::new();
        for dir in self.setup.dirs() {
            match scan::scan(dir) {
                Ok(found) => on_disk.extend(found),
                Err(err) => {
                    let key = if dir == self.setup.dir {
                        "pluginDir"
                    } else {
                        "pluginSourceCache"
                    };
                    tracing::error!(dir = %dir.display(), "cannot read the plugin directory ({key}): {err}");
                    return false;
                }
            }
        }
        let gone: Vec<PathBuf> = self
            .known
            .keys()
            .filter(|path| !on_disk.contains_key(*path))
            .cloned()
            .collect();
        for path in gone {
            self.remove(&path).await;
        }
        let mut forced: HashSet<PathBuf> = scope
            .forced
            .iter()
            .map(|path| match path.extension() {
                Some(ext) if ext == "yaml" => path.with_extension("wasm"),
                // `hello.wasm.sig` is `hello.wasm`'s signature.
                Some(ext) if ext == "sig" => path.with_extension(""),
                _ => path.clone(),
            })
            .collect();
        forced.extend(self.deferred.drain());
        let (quiet, now) = (self.setup.timing.quiet, std::time::SystemTime::now());
        for (path, found) in on_disk {
            if unsettled(&path) || unsettled(&sidecar_of(&path)) {
                continue;
            }
            let known = self.known.entry(path.clone()).or_default();
            let unchanged = known.seen == Some(found) && !forced.contains(&path);
            if unchanged && !(scope.rescan && known.retry) {
                continue;
            }
            let recent = found.plugin.modified_within(quiet, now)
                || found.sidecar.is_some_and(|s| s.modified_within(quiet, now))
                || found
                    .signature
                    .is_some_and(|s| s.modified_within(quiet, now));
            if recent {
                self.deferred.insert(path);
                continue;
            }
            self.evaluate(&path, found).await;
        }
        !self.deferred.is_empty()
    }

    /// Reads one file and acts on what it holds.
    async fn evaluate(&mut self, path: &Path, found: Found) {
        let (bytes, sidecar_text) = match read(path, found) {
            Ok(Some(content)) => content,
            // Changed or removed while being read: a later event says when
            // it is done.
            Ok(None) => return,
            Err(error) => return self.refuse(path, found, None, error.to_string(), false),
        };
        let sidecar = match &sidecar_text {
            None => None,
            Some(text) => {
                let name = sidecar_of(path).display().to_string();
                match self.setup.settings.parse_sidecar(text, &name) {
                    Ok(sidecar) => Some(sidecar),
                    Err(error) => {
                        let content = Some(Evaluated {
                            digest: digest(&bytes),
                            sidecar: sidecar_text.clone(),
                            signature: std::fs::read_to_string(signature_of(path)).ok(),
                        });
                        return self.refuse(path, found, content, error.to_string(), false);
                    }
                }
            }
        };
        let signature = std::fs::read_to_string(signature_of(path)).ok();
        let content = Evaluated {
            digest: digest(&bytes),
            sidecar: sidecar_text,
            signature: signature.clone(),
        };
        if sidecar.as_ref().is_some_and(|s| s.disabled) {
            return self.disable(path, found, content).await;
        }
        let known = self.known.entry(path.to_owned()).or_default();
        if known.content.as_ref() == Some(&content) && known.blocked_by.is_none() && !known.retry {
            known.seen = Some(found);
            if let Some(state) = known.state {
                self.restore_state(path, state);
            }
            return;
        }
        self.setup.files.loading(path);
        match self.load(path, sidecar, signature, bytes).await {
            Ok(Loaded::Plugin(plugin, outcome)) => {
                self.run(path, found, content, plugin, outcome).await
            }
            Ok(Loaded::Disabled) => self.disable(path, found, content).await,
            Ok(Loaded::Contested(name, rivals)) => {
                self.contest(path, found, content, &name, &rivals).await
            }
            Ok(Loaded::Duplicate(name, original)) => {
                self.duplicate(path, found, content, &name, &original).await
            }
            Err(error) => self.refuse(path, found, Some(content), error.to_string(), false),
        }
    }

    /// Compiles (or takes from the cache), identifies and validates, off the
    /// async runtime: the plugin is asked its name with no configuration;
    /// a name another file claims too is refused there; only then is the
    /// plugin loaded with the settings of that name.
    async fn load(
        &self,
        path: &Path,
        sidecar: Option<Sidecar>,
        signature: Option<String>,
        bytes: Vec<u8>,
    ) -> Result<Loaded, LoadFailure> {
        let setup = &self.setup;
        let (config, sink) = (setup.settings.clone(), setup.sink.clone());
        let (engine, cache) = (setup.engine.clone(), setup.cache.clone());
        let access = setup.access.clone();
        let metrics = setup.daemon.plugin_metrics().clone();
        let pulled = setup
            .pulled_dir
            .as_deref()
            .is_some_and(|dir| path.parent() == Some(dir));
        let file = path.to_owned();
        let settings = config.clone();
        let identified = tokio::task::spawn_blocking(move || {
            let anonymous = config.anonymous_load_options(sink);
            let (identified, outcome) =
                LoadedPlugin::identify(&engine, cache.as_ref(), &bytes, &anonymous)?;
            let name = identified.name().to_owned();
            if config.is_disabled(&name) {
                return Ok(None);
            }
            config.check_identity(&name, identified.digest(), sidecar.as_ref())?;
            let evidence = Evidence {
                pinned_by_source: pulled
                    && super::sources::pinned_by_source(&file, identified.digest()),
                signature,
            };
            config.check_trust(
                &name,
                identified.digest(),
                &bytes,
                sidecar.as_ref(),
                &evidence,
            )?;
            Ok::<_, LoadFailure>(Some((identified, outcome, sidecar)))
        })
        .await;
        let (identified, outcome, sidecar) = match identified? {
            Ok(Some(identified)) => identified,
            Ok(None) => return Ok(Loaded::Disabled),
            Err(error) => return Err(error),
        };
        let stats = &setup.stats;
        match &outcome {
            CompileOutcome::CacheHit => {
                stats.cache_hits.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(file = %path.display(), "compiled artifact found in the cache: compilation skipped");
            }
            compiled => {
                stats.compiles.fetch_add(1, Ordering::Relaxed);
                stats.compile_micros.fetch_add(
                    compiled.compile_time().as_micros() as u64,
                    Ordering::Relaxed,
                );
            }
        }
        // Only files that passed the name's pin and trust checks above get
        // here: a file failing them was refused on its own, claims nothing
        // and stops nothing.
        let name = identified.name().to_owned();
        let rivals = self.rivals(&name, identified.digest(), path);
        if !rivals.is_empty() {
            return Ok(Loaded::Contested(name, rivals));
        }
        if let Some(original) = self.running_same_build(&name, identified.digest(), path) {
            return Ok(Loaded::Duplicate(name, original));
        }
        let sink = setup.sink.clone();
        let configured = tokio::task::spawn_blocking(move || {
            let options = LoadOptions {
                access,
                metrics: Some(metrics),
                ..settings.load_options(&name, sidecar.as_ref(), sink)
            };
            identified.configure(options)
        })
        .await;
        let plugin = configured??;
        Ok(Loaded::Plugin(plugin, outcome))
    }

    /// Starts `plugin`, or swaps it for the version running from `path`.
    async fn run(
        &mut self,
        path: &Path,
        found: Found,
        content: Evaluated,
        plugin: LoadedPlugin,
        outcome: CompileOutcome,
    ) {
        let name = plugin.name().to_owned();
        let previous = self.known.get(path).and_then(|known| known.running.clone());
        let daemon = self.setup.daemon.clone();
        let started = match &previous {
            Some(running) if running.name == name => daemon.swap(plugin.clone()).await,
            Some(running) => {
                self.stop_running(path, running).await;
                daemon.start(plugin.clone()).await
            }
            None => daemon.start(plugin.clone()).await,
        };
        if let Err(error) = started {
            return self.refuse(path, found, Some(content), error.to_string(), true);
        }
        let how = match &outcome {
            CompileOutcome::CacheHit => "compilation skipped (cached artifact)".to_owned(),
            CompileOutcome::Compiled(took) => format!("compiled in {} ms", took.as_millis()),
            CompileOutcome::Recompiled { took, discarded } => format!(
                "compiled in {} ms (a corrupt cached artifact was discarded: {discarded})",
                took.as_millis()
            ),
        };
        // Recorded before it is logged: whoever reads the log line finds it
        // in the history.
        let swapped_from = previous
            .as_ref()
            .filter(|running| running.name == name)
            .map(|running| revision(&running.digest).to_owned());
        self.setup.files.record(ReloadRecord {
            plugin: Some(name.clone()),
            revision: Some(plugin.revision().to_owned()),
            action: match swapped_from {
                Some(_) => ReloadAction::Swapped,
                None => ReloadAction::Loaded,
            },
            from: swapped_from.clone(),
            detail: Some(how.clone()),
            ..ReloadRecord::new(ReloadAction::Loaded, path)
        });
        match swapped_from {
            Some(from) => tracing::info!(
                plugin = %name, file = %path.display(), from, to = plugin.revision(),
                "plugin swapped to a new version; {how}"
            ),
            None => tracing::info!(
                plugin = %name, file = %path.display(), revision = plugin.revision(),
                version = %plugin.manifest().version, "plugin loaded; {how}"
            ),
        }
        self.setup.stats.reloads.fetch_add(1, Ordering::Relaxed);
        self.setup
            .files
            .loaded(path, &name, plugin.digest(), &outcome);
        let known = self.known.entry(path.to_owned()).or_default();
        *known = Known {
            seen: Some(found),
            content: Some(content),
            running: Some(RunningFrom {
                name,
                digest: plugin.digest().to_owned(),
            }),
            blocked_by: None,
            duplicate_of: None,
            retry: false,
            state: Some(FileState::Loaded),
        };
    }

    /// Records a refused file: the version running from it, if any, stays.
    fn refuse(
        &mut self,
        path: &Path,
        found: Found,
        content: Option<Evaluated>,
        error: String,
        retry: bool,
    ) {
        let known = self.known.entry(path.to_owned()).or_default();
        self.setup.files.record(ReloadRecord {
            plugin: known.running.as_ref().map(|r| r.name.clone()),
            revision: known
                .running
                .as_ref()
                .map(|r| revision(&r.digest).to_owned()),
            detail: Some(error.clone()),
            ..ReloadRecord::new(ReloadAction::Refused, path)
        });
        match &known.running {
            Some(running) => tracing::error!(
                file = %path.display(), plugin = %running.name, revision = revision(&running.digest),
                "plugin file not loaded, the running version stays: {error}"
            ),
            None => tracing::error!(file = %path.display(), "plugin file not loaded: {error}"),
        }
        known.seen = Some(found);
        known.content = content;
        known.blocked_by = None;
        known.duplicate_of = None;
        known.retry = retry;
        known.state = Some(FileState::Failed);
        self.setup.stats.load_errors.fetch_add(1, Ordering::Relaxed);
        self.setup.files.failed(path, error);
    }

    /// Refuses `name` to `path` and to every other file claiming it
    /// (`rivals`), stopping what runs from them: which one would win must not
    /// depend on the order files are listed or arrive in.
    async fn contest(
        &mut self,
        path: &Path,
        found: Found,
        content: Evaluated,
        name: &str,
        rivals: &[PathBuf],
    ) {
        let error = format!(
            "plugin name {name:?} is claimed by more than one file ({} and {}): none of them \
             runs until the others are renamed or removed",
            rivals
                .iter()
                .map(|rival| rival.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            path.display()
        );
        for rival in rivals {
            if let Some(running) = self.known.get(rival).and_then(|k| k.running.clone()) {
                self.stop_running(rival, &running).await;
                tracing::warn!(plugin = %name, file = %rival.display(), "plugin stopped: {error}");
            }
            self.setup.files.failed(rival, error.clone());
            let known = self.known.entry(rival.clone()).or_default();
            known.blocked_by = Some(name.to_owned());
            known.duplicate_of = None;
            known.state = Some(FileState::Failed);
        }
        self.refuse(path, found, Some(content), error, false);
        self.known.entry(path.to_owned()).or_default().blocked_by = Some(name.to_owned());
    }

    /// Records `path` as a copy of the build of `name` running from
    /// `original`: it runs nothing and stops nothing (what ran from it
    /// before, under another name, stops), and takes over if `original`
    /// goes.
    async fn duplicate(
        &mut self,
        path: &Path,
        found: Found,
        content: Evaluated,
        name: &str,
        original: &Path,
    ) {
        if let Some(running) = self.known.get(path).and_then(|k| k.running.clone()) {
            self.stop_running(path, &running).await;
        }
        let detail = format!(
            "the same build (sha256 {}) of plugin {name:?} already runs from {}: the plugin \
             runs once, from that file; this copy takes over if that file goes",
            content.digest,
            original.display()
        );
        self.setup.files.record(ReloadRecord {
            plugin: Some(name.to_owned()),
            revision: Some(revision(&content.digest).to_owned()),
            detail: Some(detail.clone()),
            ..ReloadRecord::new(ReloadAction::Duplicate, path)
        });
        tracing::info!(
            plugin = %name, file = %path.display(), running_from = %original.display(),
            "plugin file is a duplicate of the running one: {detail}"
        );
        self.setup
            .files
            .duplicate(path, name, &content.digest, original);
        self.known.insert(
            path.to_owned(),
            Known {
                seen: Some(found),
                content: Some(content),
                duplicate_of: Some((name.to_owned(), original.to_owned())),
                state: Some(FileState::Duplicate),
                ..Known::default()
            },
        );
    }

    /// Stops what runs from a file its configuration or sidecar disables.
    async fn disable(&mut self, path: &Path, found: Found, content: Evaluated) {
        let previous = self.known.get(path).and_then(|k| k.running.clone());
        if let Some(running) = &previous {
            self.stop_running(path, running).await;
        }
        if self.known.get(path).and_then(|k| k.state) != Some(FileState::Disabled) {
            self.setup.files.record(ReloadRecord {
                plugin: previous.as_ref().map(|r| r.name.clone()),
                revision: previous.as_ref().map(|r| revision(&r.digest).to_owned()),
                ..ReloadRecord::new(ReloadAction::Disabled, path)
            });
            tracing::info!(file = %path.display(), "plugin disabled by configuration (plugins.<name>.disabled or its sidecar)");
        }
        self.known.insert(
            path.to_owned(),
            Known {
                seen: Some(found),
                content: Some(content),
                state: Some(FileState::Disabled),
                ..Known::default()
            },
        );
        self.setup.files.disabled(path);
    }

    /// Unloads what ran from a file that is gone; files refused for
    /// claiming the same name try again.
    async fn remove(&mut self, path: &Path) {
        let Some(known) = self.known.remove(path) else {
            return;
        };
        if let Some(name) = &known.blocked_by {
            for other in self.known.values_mut() {
                if other.blocked_by.as_ref() == Some(name) {
                    other.seen = None;
                }
            }
        }
        if let Some(running) = &known.running
            && let Some(heir) = self.duplicate_of(path, running)
        {
            return self.take_over(path, &known, running, &heir);
        }
        if let Some(running) = &known.running {
            self.stop_running(path, running).await;
            self.setup.files.record(ReloadRecord {
                plugin: Some(running.name.clone()),
                revision: Some(revision(&running.digest).to_owned()),
                ..ReloadRecord::new(ReloadAction::Unloaded, path)
            });
            tracing::info!(plugin = %running.name, file = %path.display(), "plugin unloaded: its file was removed");
            self.setup.stats.unloads.fetch_add(1, Ordering::Relaxed);
        }
        self.setup.files.removed(path);
    }

    /// The first file holding a copy of the build `running` from `path`.
    fn duplicate_of(&self, path: &Path, running: &RunningFrom) -> Option<PathBuf> {
        self.known
            .iter()
            .find(|(_, known)| {
                known
                    .duplicate_of
                    .as_ref()
                    .is_some_and(|(name, original)| name == &running.name && original == path)
                    && known
                        .content
                        .as_ref()
                        .is_some_and(|c| c.digest == running.digest)
            })
            .map(|(heir, _)| heir.clone())
    }

    /// `path`, from which `running` ran, is gone; `heir` holds the same
    /// build, so the plugin now runs from it without stopping. Other copies
    /// become copies of `heir`. If `heir`'s sidecar or signature differs
    /// from what `path` had, it is evaluated again at once (a swap, which
    /// does not stop deliveries, if its settings differ; the running
    /// version stays if it is refused).
    fn take_over(&mut self, path: &Path, gone: &Known, running: &RunningFrom, heir: &Path) {
        for known in self.known.values_mut() {
            if let Some((_, original)) = &mut known.duplicate_of
                && original == path
            {
                *original = heir.to_owned();
            }
        }
        let same = {
            let Some(known) = self.known.get_mut(heir) else {
                return;
            };
            known.duplicate_of = None;
            known.running = Some(running.clone());
            known.state = Some(FileState::Loaded);
            let same = known.content == gone.content;
            if !same {
                // Read again in this pass, its content unchanged.
                known.seen = None;
                known.retry = true;
            }
            same
        };
        self.setup.files.took_over(heir, path);
        for (file, status) in self.setup.files.snapshot() {
            if status.duplicate_of.as_deref() == Some(path) {
                self.setup
                    .files
                    .duplicate(&file, &running.name, &running.digest, heir);
            }
        }
        let detail = format!(
            "{} was removed; {} holds the same build, so the plugin keeps running, from it{}",
            path.display(),
            heir.display(),
            if same {
                ""
            } else {
                " (its sidecar or signature differs: it is read again)"
            }
        );
        self.setup.files.record(ReloadRecord {
            plugin: Some(running.name.clone()),
            revision: Some(revision(&running.digest).to_owned()),
            detail: Some(detail.clone()),
            ..ReloadRecord::new(ReloadAction::TookOver, heir)
        });
        tracing::info!(
            plugin = %running.name, file = %heir.display(), removed = %path.display(),
            "plugin not stopped: {detail}"
        );
    }

    /// Stops the plugin running from `path` (its metrics' series go with
    /// it: see [`Daemon::stop`](crate::daemon::Daemon::stop)) and lets files
    /// refused for duplicating its name try again.
    async fn stop_running(&mut self, path: &Path, running: &RunningFrom) {
        self.setup.daemon.stop(&running.name).await;
        if let Some(known) = self.known.get_mut(path) {
            known.running = None;
        }
        for known in self.known.values_mut() {
            let copy = known
                .duplicate_of
                .as_ref()
                .is_some_and(|(name, original)| name == &running.name && original == path);
            if known.blocked_by.as_deref() == Some(running.name.as_str()) || copy {
                known.seen = None;
                if copy {
                    // Evaluated again although its content is unchanged.
                    known.duplicate_of = None;
                    known.retry = true;
                }
            }
        }
    }

    /// The files other than `path` that claim plugin `name` with a build
    /// other than `digest`: running it, refused for claiming it too, or
    /// holding a copy of the running build. A file holding the same build
    /// is the same plugin, not a rival.
    fn rivals(&self, name: &str, digest: &str, path: &Path) -> Vec<PathBuf> {
        self.known
            .iter()
            .filter(|(other, known)| {
                let claims = known.running.as_ref().is_some_and(|r| r.name == name)
                    || known.blocked_by.as_deref() == Some(name)
                    || known.duplicate_of.as_ref().is_some_and(|(n, _)| n == name);
                let build = known
                    .running
                    .as_ref()
                    .filter(|r| r.name == name)
                    .map(|r| r.digest.as_str())
                    .or(known.content.as_ref().map(|c| c.digest.as_str()));
                other.as_path() != path && claims && build != Some(digest)
            })
            .map(|(other, _)| other.clone())
            .collect()
    }

    /// The file other than `path` that runs plugin `name` at `digest`.
    fn running_same_build(&self, name: &str, digest: &str, path: &Path) -> Option<PathBuf> {
        self.known
            .iter()
            .find(|(other, known)| {
                other.as_path() != path
                    && known
                        .running
                        .as_ref()
                        .is_some_and(|r| r.name == name && r.digest == digest)
            })
            .map(|(other, _)| other.clone())
    }

    /// Puts back the status of a file whose content turned out unchanged.
    fn restore_state(&self, path: &Path, state: FileState) {
        let files = &self.setup.files;
        if files
            .get(path)
            .is_some_and(|s| s.state == FileState::Writing)
        {
            match state {
                FileState::Disabled => files.disabled(path),
                _ => files.settled(path, state),
            }
        }
    }
}

/// Why a plugin file was refused before it could run.
#[derive(Debug, thiserror::Error)]
enum LoadFailure {
    /// It could not be compiled, identified or configured.
    #[error(transparent)]
    Plugin(#[from] LoadError),
    /// It may not run under the name it gives.
    #[error(transparent)]
    Identity(#[from] IdentityError),
    /// It is granted powers and brings no evidence.
    #[error(transparent)]
    Trust(#[from] TrustError),
    /// The blocking task loading it panicked.
    #[error("loading panicked: {0}")]
    Panicked(#[from] tokio::task::JoinError),
}

/// Why a plugin file or its sidecar could not be read.
#[derive(Debug, thiserror::Error)]
enum ReadFailure {
    /// The plugin file.
    #[error("cannot read the file: {0}")]
    File(#[source] std::io::Error),
    /// Its sidecar (the path held here).
    #[error("cannot read {}: {reason}", path.display())]
    Sidecar {
        /// The sidecar's path.
        path: PathBuf,
        /// Why.
        #[source]
        reason: std::io::Error,
    },
}

/// A plugin file's bytes and its sidecar's text.
type Content = (Vec<u8>, Option<String>);

/// Reads a plugin file and its sidecar. `Ok(None)` when the file changed or
/// vanished while being read.
fn read(path: &Path, found: Found) -> Result<Option<Content>, ReadFailure> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(ReadFailure::File(err)),
    };
    let sidecar_path = sidecar_of(path);
    let sidecar = match std::fs::read_to_string(&sidecar_path) {
        Ok(text) => Some(text),
        Err(err) if err.kind() == ErrorKind::NotFound => None,
        Err(reason) => {
            return Err(ReadFailure::Sidecar {
                path: sidecar_path,
                reason,
            });
        }
    };
    match scan::Fingerprint::of(path) {
        Ok(Some(after)) if after == found.plugin && bytes.len() as u64 == after.size() => {
            Ok(Some((bytes, sidecar)))
        }
        _ => Ok(None),
    }
}
