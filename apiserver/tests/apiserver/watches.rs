//! Watches: raw watch semantics and the kube-runtime watcher's recovery paths.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::watcher;
use serde_json::json;

use crate::common::{Tracker, client, config_map, namespace, server, within};

fn event_name(ev: &WatchEvent<ConfigMap>) -> String {
    match ev {
        WatchEvent::Added(o) => format!("ADDED {}", o.name_any()),
        WatchEvent::Modified(o) => format!("MODIFIED {}", o.name_any()),
        WatchEvent::Deleted(o) => format!("DELETED {}", o.name_any()),
        WatchEvent::Bookmark(b) => format!("BOOKMARK {}", b.metadata.resource_version),
        WatchEvent::Error(e) => format!("ERROR {} {}", e.code, e.reason),
    }
}

#[tokio::test]
async fn watch_from_a_version_replays_later_changes_in_order() {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&server));
    let pp = PostParams::default();
    let a = cms.create(&pp, &config_map("a", &[], "1")).await.unwrap();
    cms.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"value": "2"}})),
    )
    .await
    .unwrap();
    cms.create(&pp, &config_map("b", &[], "1")).await.unwrap();
    let deleted = cms
        .delete("a", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .unwrap();
    let rv = a.metadata.resource_version.unwrap();
    let wp = WatchParams::default().disable_bookmarks();
    let mut stream = cms.watch(&wp, &rv).await.unwrap().boxed();
    let mut got = Vec::new();
    while got.len() < 3 {
        let ev = within("replayed events", stream.try_next())
            .await
            .unwrap()
            .unwrap();
        if let WatchEvent::Deleted(o) = &ev {
            assert_eq!(
                o.metadata.resource_version,
                deleted.metadata.resource_version
            );
            assert_eq!(
                o.data.as_ref().unwrap()["value"],
                "2",
                "DELETED carries the last state"
            );
        }
        got.push(event_name(&ev));
    }
    assert_eq!(got, ["MODIFIED a", "ADDED b", "DELETED a"]);
    cms.create(&pp, &config_map("c", &[], "1")).await.unwrap();
    let live = within("a live event", stream.try_next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(event_name(&live), "ADDED c");
}

#[tokio::test]
async fn watch_without_a_version_starts_with_synthetic_added_events() {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&server));
    cms.create(&PostParams::default(), &config_map("a", &[], "1"))
        .await
        .unwrap();
    let mut stream = cms
        .watch(&WatchParams::default().disable_bookmarks(), "0")
        .await
        .unwrap()
        .boxed();
    let first = within("initial state", stream.try_next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(event_name(&first), "ADDED a");
}

#[tokio::test]
async fn watch_resumed_from_compacted_version_gets_410() {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&server));
    let a = cms
        .create(&PostParams::default(), &config_map("a", &[], "1"))
        .await
        .unwrap();
    cms.create(&PostParams::default(), &config_map("b", &[], "1"))
        .await
        .unwrap();
    server.faults().compact_history();
    let rv = a.metadata.resource_version.unwrap();
    let mut stream = cms
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    match within("the error event", stream.try_next())
        .await
        .unwrap()
        .unwrap()
    {
        WatchEvent::Error(status) => {
            assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
            assert!(
                status
                    .message
                    .starts_with(&format!("too old resource version: {rv} (")),
                "{}",
                status.message
            );
        }
        other => panic!("expected an ERROR event, got {}", event_name(&other)),
    }
    assert!(
        within("the stream to end", stream.try_next())
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn a_short_history_window_expires_old_versions() {
    let server = crate::common::server_with(|c| c.history_window = 3).await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&server));
    let first = cms
        .create(&PostParams::default(), &config_map("a", &[], "1"))
        .await
        .unwrap();
    for n in ["b", "c", "d", "e"] {
        cms.create(&PostParams::default(), &config_map(n, &[], "1"))
            .await
            .unwrap();
    }
    let rv = first.metadata.resource_version.unwrap();
    let mut stream = cms
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    let ev = within("the error event", stream.try_next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(event_name(&ev), "ERROR 410 Expired");
}

#[tokio::test]
async fn bookmarks_arrive_periodically_when_allowed() {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&server));
    cms.create(&PostParams::default(), &config_map("a", &[], "1"))
        .await
        .unwrap();
    let rv = server.current_resource_version().to_string();
    let mut stream = cms
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    let ev = within("a bookmark", stream.try_next())
        .await
        .unwrap()
        .unwrap();
    match ev {
        WatchEvent::Bookmark(b) => {
            assert_eq!(b.metadata.resource_version, rv);
            assert_eq!(b.types.kind, "ConfigMap");
        }
        other => panic!("expected a bookmark, got {}", event_name(&other)),
    }
    // Without allowWatchBookmarks there are none: the next event is the change we make.
    let mut quiet = cms
        .watch(&WatchParams::default().disable_bookmarks().timeout(1), &rv)
        .await
        .unwrap()
        .boxed();
    let mut seen = Vec::new();
    while let Some(ev) = within("a quiet watch", quiet.try_next()).await.unwrap() {
        seen.push(event_name(&ev));
    }
    assert!(seen.is_empty(), "{seen:?}");
}

#[tokio::test]
async fn timeout_seconds_ends_the_stream_cleanly() {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&server));
    let started = std::time::Instant::now();
    let wp = WatchParams::default().timeout(1).disable_bookmarks();
    let mut stream = cms.watch(&wp, "0").await.unwrap().boxed();
    let end = within("the stream to end", stream.try_next()).await;
    assert!(matches!(end, Ok(None)), "clean end expected, got {end:?}");
    assert!(started.elapsed() >= Duration::from_millis(900));
}

#[tokio::test]
async fn streaming_list_sends_initial_events_then_the_end_bookmark() {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&server));
    for n in ["a", "b"] {
        cms.create(&PostParams::default(), &config_map(n, &[], "1"))
            .await
            .unwrap();
    }
    let rv = server.current_resource_version().to_string();
    let mut stream = cms
        .watch(&WatchParams::default().initial_events(), "0")
        .await
        .unwrap()
        .boxed();
    let mut got = Vec::new();
    loop {
        let ev = within("initial events", stream.try_next())
            .await
            .unwrap()
            .unwrap();
        if let WatchEvent::Bookmark(b) = &ev {
            assert_eq!(
                b.metadata
                    .annotations
                    .get("k8s.io/initial-events-end")
                    .map(String::as_str),
                Some("true")
            );
            assert_eq!(b.metadata.resource_version, rv);
            break;
        }
        got.push(event_name(&ev));
    }
    assert_eq!(got, ["ADDED a", "ADDED b"]);
}

#[tokio::test]
async fn selector_watches_see_objects_enter_and_leave_as_added_and_deleted() {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&server));
    cms.create(&PostParams::default(), &config_map("a", &[], "1"))
        .await
        .unwrap();
    let rv = server.current_resource_version().to_string();
    let wp = WatchParams::default().labels("app=web").disable_bookmarks();
    let mut stream = cms.watch(&wp, &rv).await.unwrap().boxed();
    let pp = PatchParams::default();
    cms.patch(
        "a",
        &pp,
        &Patch::Merge(json!({"metadata": {"labels": {"app": "web"}}})),
    )
    .await
    .unwrap();
    cms.patch("a", &pp, &Patch::Merge(json!({"data": {"value": "2"}})))
        .await
        .unwrap();
    cms.patch(
        "a",
        &pp,
        &Patch::Merge(json!({"metadata": {"labels": {"app": null}}})),
    )
    .await
    .unwrap();
    let mut got = Vec::new();
    while got.len() < 3 {
        got.push(event_name(
            &within("selector events", stream.try_next())
                .await
                .unwrap()
                .unwrap(),
        ));
    }
    assert_eq!(got, ["ADDED a", "MODIFIED a", "DELETED a"]);
}

#[tokio::test]
async fn namespaced_watches_only_see_their_namespace() {
    let server = server().await;
    let c = client(&server);
    namespace(&c, "other").await;
    let rv = server.current_resource_version().to_string();
    let here: Api<ConfigMap> = Api::default_namespaced(c.clone());
    let there: Api<ConfigMap> = Api::namespaced(c, "other");
    let mut stream = here
        .watch(&WatchParams::default().disable_bookmarks(), &rv)
        .await
        .unwrap()
        .boxed();
    there
        .create(&PostParams::default(), &config_map("x", &[], "1"))
        .await
        .unwrap();
    here.create(&PostParams::default(), &config_map("y", &[], "1"))
        .await
        .unwrap();
    let ev = within("the namespace's event", stream.try_next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(event_name(&ev), "ADDED y");
}

async fn watcher_survives_dropped_watches(config: watcher::Config) {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&server));
    let pp = PostParams::default();
    for n in ["a", "b", "c"] {
        cms.create(&pp, &config_map(n, &[], "1")).await.unwrap();
    }
    let mut tracker = Tracker::new(cms.clone(), config);
    tracker
        .until("the initial list", |t| t.names().len() == 3)
        .await;
    assert_eq!(tracker.inits, 1);

    // Drop the watch; change things while the watcher isn't looking; it resumes from its
    // last version out of the server's history, without relisting.
    server.faults().drop_watches();
    cms.delete("a", &DeleteParams::default()).await.unwrap();
    cms.create(&pp, &config_map("d", &[], "1")).await.unwrap();
    tracker
        .until("the resumed watch", |t| {
            t.names() == ["default/b", "default/c", "default/d"]
        })
        .await;
    assert_eq!(tracker.inits, 1, "resuming within history needs no relist");

    // Now let it fall behind, then compact: the resume gets 410 Gone, and it relists.
    server.faults().drop_watches();
    cms.delete("b", &DeleteParams::default()).await.unwrap();
    cms.patch(
        "c",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"value": "2"}})),
    )
    .await
    .unwrap();
    cms.create(&pp, &config_map("e", &[], "1")).await.unwrap();
    server.faults().compact_history();
    tracker
        .until("the relist", |t| {
            t.inits == 2 && t.names() == ["default/c", "default/d", "default/e"]
        })
        .await;
    assert_eq!(
        tracker.state["default/c"].data.as_ref().unwrap()["value"],
        "2"
    );
    assert!(
        tracker
            .errors
            .iter()
            .any(|e| e.contains("410") || e.to_lowercase().contains("expired")),
        "{:?}",
        tracker.errors
    );

    // And it keeps watching live afterwards.
    cms.create(&pp, &config_map("f", &[], "1")).await.unwrap();
    tracker
        .until("a live event after the relist", |t| {
            t.state.contains_key("default/f")
        })
        .await;
}

#[tokio::test]
async fn list_watch_watcher_recovers_from_dropped_watches_and_410() {
    watcher_survives_dropped_watches(watcher::Config::default()).await;
}

#[tokio::test]
async fn streaming_list_watcher_recovers_from_dropped_watches_and_410() {
    watcher_survives_dropped_watches(watcher::Config::default().streaming_lists()).await;
}

#[tokio::test]
async fn paginated_watcher_lists_every_object() {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&server));
    for i in 0..7 {
        cms.create(
            &PostParams::default(),
            &config_map(&format!("c{i}"), &[], "1"),
        )
        .await
        .unwrap();
    }
    let mut tracker = Tracker::new(cms, watcher::Config::default().page_size(2));
    tracker.until("all pages", |t| t.names().len() == 7).await;
}

#[tokio::test]
async fn many_watchers_each_receive_every_event() {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&server));
    let rv = server.current_resource_version().to_string();
    let mut streams = Vec::new();
    for _ in 0..10 {
        streams.push(
            cms.watch(&WatchParams::default().disable_bookmarks(), &rv)
                .await
                .unwrap()
                .boxed(),
        );
    }
    let writer = {
        let cms = cms.clone();
        tokio::spawn(async move {
            for i in 0..200 {
                cms.create(
                    &PostParams::default(),
                    &config_map(&format!("c{i:03}"), &[], "1"),
                )
                .await
                .unwrap();
            }
        })
    };
    for stream in &mut streams {
        let mut count = 0;
        while count < 200 {
            let ev = within("200 events", stream.try_next())
                .await
                .unwrap()
                .unwrap();
            assert_eq!(event_name(&ev), format!("ADDED c{count:03}"));
            count += 1;
        }
    }
    writer.await.unwrap();
}
