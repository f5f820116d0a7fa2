//! Following files: a task that reads them again after every change in the
//! directories they are in (settled for a moment, so a burst of events is
//! one read) and every rescan interval (a watch can miss what a mounted
//! volume's symlink swap does), until stopped.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// How long changes settle before the files are read again.
const SETTLE: Duration = Duration::from_millis(100);

/// What a follower does each time: read its files again and act on them.
pub(super) trait Pass: Send + 'static {
    /// One read of everything followed.
    fn pass(&mut self) -> impl Future<Output = ()> + Send;
}

/// A task that runs until stopped: asked to, it ends after the step under
/// way; dropped (a shutdown past its grace period drops a stop still
/// waiting), it is aborted.
#[derive(Debug)]
pub(super) struct StoppableTask {
    stop: watch::Sender<bool>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl StoppableTask {
    /// `task`, which ends once `stop` says true.
    pub(super) fn new(stop: watch::Sender<bool>, task: tokio::task::JoinHandle<()>) -> Self {
        StoppableTask {
            stop,
            task: Some(task),
        }
    }

    /// Stops the task, waiting for the step under way to end.
    pub(super) async fn stop(mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for StoppableTask {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// A follower's task and its watch.
#[derive(Debug)]
pub(super) struct Following {
    task: StoppableTask,
    _watcher: notify::RecommendedWatcher,
}

impl Following {
    /// Runs `pass` on a task of its own after every change in `dirs` and
    /// every `rescan`. The first directory that cannot be watched is the
    /// error, with its path.
    pub(super) fn start<'a>(
        dirs: impl IntoIterator<Item = &'a Path>,
        rescan: Duration,
        mut pass: impl Pass,
    ) -> Result<Self, (PathBuf, notify::Error)> {
        use notify::Watcher as _;
        let (changed, mut changes) = mpsc::unbounded_channel();
        let mut watcher = notify::recommended_watcher(move |_| {
            let _ = changed.send(());
        })
        .map_err(|error| (PathBuf::new(), error))?;
        for dir in dirs {
            watcher
                .watch(dir, notify::RecursiveMode::NonRecursive)
                .map_err(|error| (dir.to_owned(), error))?;
        }
        let (stop, mut stopped) = watch::channel(false);
        let task = tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = stopped.changed() => return,
                    change = changes.recv() => {
                        if change.is_none() {
                            return;
                        }
                        tokio::time::sleep(SETTLE).await;
                        while changes.try_recv().is_ok() {}
                    }
                    () = tokio::time::sleep(rescan) => {}
                }
                pass.pass().await;
            }
        });
        Ok(Following {
            task: StoppableTask::new(stop, task),
            _watcher: watcher,
        })
    }

    /// Stops the task, waiting for a pass under way to end.
    pub(super) async fn stop(self) {
        self.task.stop().await;
    }
}
