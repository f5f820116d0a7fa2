//! Persistence: a JSON snapshot of every object and the resource version counter, written
//! (debounced) after changes and loaded on start.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::error::Error;
use crate::registry::ResourceId;
use crate::storage::Store;

/// The snapshot's file name inside the persistence directory.
pub const SNAPSHOT_FILE: &str = "herald-apiserver-state.json";

/// How long to wait after a change before writing, so bursts coalesce.
const DEBOUNCE: Duration = Duration::from_millis(100);

#[derive(Serialize)]
struct SnapshotOut<'a> {
    #[serde(rename = "resourceVersion")]
    resource_version: String,
    objects: Vec<EntryOut<'a>>,
}

#[derive(Serialize)]
struct EntryOut<'a> {
    group: &'a str,
    resource: &'a str,
    object: &'a Value,
}

#[derive(Deserialize)]
struct SnapshotIn {
    #[serde(rename = "resourceVersion")]
    resource_version: String,
    objects: Vec<EntryIn>,
}

#[derive(Deserialize)]
struct EntryIn {
    group: String,
    resource: String,
    object: Value,
}

fn snapshot_path(dir: &Path) -> PathBuf {
    dir.join(SNAPSHOT_FILE)
}

/// Write the store's snapshot to `dir` atomically (temporary file, then rename).
pub(crate) fn write(dir: &Path, store: &Store) -> Result<(), Error> {
    let (rv, objects) = store.export();
    let snapshot = SnapshotOut {
        resource_version: rv.to_string(),
        objects: objects
            .iter()
            .map(|(id, obj)| EntryOut {
                group: &id.group,
                resource: &id.plural,
                object: obj,
            })
            .collect(),
    };
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let bytes = serde_json::to_vec(&snapshot).expect("snapshots serialize");
    let path = snapshot_path(dir);
    let tmp = dir.join(format!("{SNAPSHOT_FILE}.tmp"));
    std::fs::write(&tmp, bytes).map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
    Ok(())
}

/// Load a snapshot from `dir` into `store`; `Ok(false)` if there is none.
pub(crate) fn load(dir: &Path, store: &Store) -> Result<bool, Error> {
    let path = snapshot_path(dir);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(Error::io(&path, e)),
    };
    let bad = |message: String| Error::Persist {
        path: path.clone(),
        message,
    };
    let snapshot: SnapshotIn = serde_json::from_slice(&bytes).map_err(|e| bad(e.to_string()))?;
    let rv: u64 = snapshot.resource_version.parse().map_err(|_| {
        bad(format!(
            "bad resourceVersion {:?}",
            snapshot.resource_version
        ))
    })?;
    let objects = snapshot
        .objects
        .into_iter()
        .map(|e| {
            (
                ResourceId {
                    group: e.group,
                    plural: e.resource,
                },
                e.object,
            )
        })
        .collect();
    store.import(rv, objects).map_err(bad)?;
    Ok(true)
}

/// Write snapshots after changes until `stop` turns true, then write a final one.
pub(crate) fn spawn(
    dir: PathBuf,
    store: Arc<Store>,
    mut stop: watch::Receiver<bool>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = store.changed.notified() => {
                    tokio::select! {
                        _ = tokio::time::sleep(DEBOUNCE) => {}
                        _ = crate::server::stopped(&mut stop) => {}
                    }
                }
                _ = crate::server::stopped(&mut stop) => break,
            }
            if *stop.borrow() {
                break;
            }
            write_logged(&dir, &store).await;
        }
        write_logged(&dir, &store).await;
    })
}

async fn write_logged(dir: &Path, store: &Arc<Store>) {
    let dir = dir.to_path_buf();
    let store = store.clone();
    let result = tokio::task::spawn_blocking(move || write(&dir, &store)).await;
    match result {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(error = %e, "cannot persist API server state"),
        Err(e) => tracing::warn!(error = %e, "persisting API server state panicked"),
    }
}
