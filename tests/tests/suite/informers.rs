//! Shared informer semantics (client-go's SharedInformer), each against the
//! embedded API server through the real kube-rs client. The one that needs
//! the server's fault injection fails on a real cluster unless skipping is
//! allowed ([`herald_tests::skip`]).

use super::cluster::TestCluster;
use super::recording::{Recording, Seen, config_maps, informer, informers};
use std::time::Duration;

fn add(name: &str, rv: &str, initial: bool) -> Seen {
    Seen::Add {
        name: name.into(),
        rv: rv.into(),
        initial,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adds_updates_and_deletes_carry_old_and_new_state() {
    let cluster = TestCluster::start().await;
    let informers = informers(cluster.client.clone());
    let subscription = config_maps(&cluster.namespace);
    let (_key, informer) = informer(&informers, &subscription).await;
    let recording = Recording::new(subscription);
    informer.add_listener(recording.listener.clone());
    assert_eq!(
        recording.next(),
        Seen::Synced,
        "an empty namespace lists nothing, then syncs"
    );

    let created = cluster.create_config_map("a", "web", "1").await;
    let v1 = created.metadata.resource_version.unwrap();
    let v2 = cluster.update_config_map("a", "2").await;
    cluster.delete_config_map("a").await;
    let seen = recording.take(3);
    assert_eq!(seen[0], add("a", &v1, false));
    assert_eq!(
        seen[1],
        Seen::Update {
            name: "a".into(),
            old_rv: v1,
            rv: v2.clone(),
            resync: false
        }
    );
    let Seen::Delete { name, unknown, .. } = &seen[2] else {
        panic!("expected a delete, got {:?}", seen[2])
    };
    assert_eq!((name.as_str(), *unknown), ("a", false));
    cluster.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cache_holds_each_state_before_it_is_notified() {
    let cluster = TestCluster::start().await;
    let informers = informers(cluster.client.clone());
    let subscription = config_maps(&cluster.namespace);
    let (_key, informer) = informer(&informers, &subscription).await;
    let recording = Recording::new(subscription);
    informer.add_listener(recording.listener.clone());
    assert_eq!(recording.next(), Seen::Synced);
    for i in 0..30 {
        cluster
            .create_config_map(&format!("cm-{i}"), "web", "x")
            .await;
    }
    for _ in 0..30 {
        let Seen::Add { name, rv, .. } = recording.next() else {
            panic!("expected adds")
        };
        let cached = informer
            .store()
            .get_by_key(&format!("{}/{name}", cluster.namespace))
            .expect("cached before notified");
        assert!(cached.resource_version().parse::<u64>().unwrap() >= rv.parse::<u64>().unwrap());
    }
    cluster.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_that_never_drains_delays_no_one() {
    let cluster = TestCluster::start().await;
    let informers = informers(cluster.client.clone());
    let subscription = config_maps(&cluster.namespace);
    let (_key, informer) = informer(&informers, &subscription).await;
    let stuck = Recording::new(subscription.clone());
    let flowing = Recording::new(subscription);
    informer.add_listener(stuck.listener.clone());
    informer.add_listener(flowing.listener.clone());
    assert_eq!(flowing.next(), Seen::Synced);
    for i in 0..200 {
        cluster
            .create_config_map(&format!("cm-{i}"), "web", "x")
            .await;
    }
    let seen = flowing.take(200);
    assert!(seen.iter().all(|s| matches!(s, Seen::Add { .. })));
    assert_eq!(informer.store().len(), 200);
    assert_eq!(
        stuck.listener.depth(),
        200,
        "the stuck listener buffered everything (plus its synced marker)"
    );
    cluster.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_listener_gets_a_snapshot_then_live_events_exactly_once() {
    let cluster = TestCluster::start().await;
    let informers = informers(cluster.client.clone());
    let subscription = config_maps(&cluster.namespace);
    let (_key, informer) = informer(&informers, &subscription).await;
    let early = Recording::new(subscription.clone());
    informer.add_listener(early.listener.clone());
    assert_eq!(early.next(), Seen::Synced);
    for i in 0..10 {
        cluster
            .create_config_map(&format!("cm-{i}"), "web", "x")
            .await;
    }
    early.take(10);
    let late = Recording::new(subscription);
    informer.add_listener(late.listener.clone());
    cluster.create_config_map("after-join", "web", "x").await;
    let seen = late.until(|s| s.name() == "after-join");
    let initial: Vec<&Seen> = seen
        .iter()
        .filter(|s| matches!(s, Seen::Add { initial: true, .. }))
        .collect();
    assert_eq!(initial.len(), 10, "the snapshot: {seen:?}");
    assert_eq!(seen[10], Seen::Synced, "then the synced marker: {seen:?}");
    assert!(
        matches!(&seen[11], Seen::Add { name, initial: false, .. } if name == "after-join"),
        "{seen:?}"
    );
    assert_eq!(seen.len(), 12, "nothing twice: {seen:?}");
    cluster.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn informer_and_listener_report_synced() {
    let cluster = TestCluster::start().await;
    for i in 0..5 {
        cluster
            .create_config_map(&format!("cm-{i}"), "web", "x")
            .await;
    }
    let informers = informers(cluster.client.clone());
    let subscription = config_maps(&cluster.namespace);
    let (_key, informer) = informer(&informers, &subscription).await;
    let recording = Recording::new(subscription);
    informer.add_listener(recording.listener.clone());
    let seen = recording.until(|s| *s == Seen::Synced);
    assert_eq!(seen.len(), 6, "five initial adds, then synced: {seen:?}");
    assert!(
        seen[..5]
            .iter()
            .all(|s| matches!(s, Seen::Add { initial: true, .. }))
    );
    assert!(informer.has_synced());
    assert!(informers.all_synced());
    cluster.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resync_reaches_only_the_listener_that_asked_for_it() {
    let cluster = TestCluster::start().await;
    cluster.create_config_map("a", "web", "x").await;
    let informers = informers(cluster.client.clone());
    let mut subscription = config_maps(&cluster.namespace);
    let (_key, informer) = informer(&informers, &subscription).await;
    let plain = Recording::new(subscription.clone());
    subscription.resync_period = Some(Duration::from_secs(1));
    let resyncing = Recording::new(subscription);
    informer.add_listener(plain.listener.clone());
    informer.add_listener(resyncing.listener.clone());
    resyncing.until(|s| *s == Seen::Synced);
    let Seen::Update {
        name,
        old_rv,
        rv,
        resync,
    } = resyncing.next()
    else {
        panic!("expected a resync update")
    };
    assert!(resync);
    assert_eq!((name.as_str(), old_rv.as_str()), ("a", rv.as_str()));
    cluster.create_config_map("b", "web", "x").await;
    let seen = plain.until(|s| s.name() == "b");
    assert!(
        seen.iter().all(|s| !matches!(s, Seen::Update { .. })),
        "no resync for the plain listener: {seen:?}"
    );
    cluster.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletes_missed_while_disconnected_arrive_as_tombstones_after_a_relist() {
    let cluster = TestCluster::start().await;
    let Some(faults) = cluster.faults() else {
        herald_tests::skip(
            "deletes missed while disconnected",
            "it needs the embedded API server's fault injection",
        );
        return cluster.cleanup().await;
    };
    let informers = informers(cluster.client.clone());
    let mut subscription = config_maps(&cluster.namespace);
    subscription.resync_period = Some(Duration::from_secs(3600));
    let (_key, informer) = informer(&informers, &subscription).await;
    let recording = Recording::new(subscription);
    informer.add_listener(recording.listener.clone());
    recording.until(|s| *s == Seen::Synced);
    let kept = cluster
        .create_config_map("kept", "web", "1")
        .await
        .metadata
        .resource_version
        .unwrap();
    let changed = cluster
        .create_config_map("changed", "web", "1")
        .await
        .metadata
        .resource_version
        .unwrap();
    cluster.create_config_map("doomed", "web", "1").await;
    recording.take(3);

    // Hold watches off, cut the open one, change things, forget history.
    super::recording::begin_watch_outage(&faults).await;
    cluster.delete_config_map("doomed").await;
    let changed_now = cluster.update_config_map("changed", "2").await;
    faults.compact_history();
    faults.fail_watches(false);

    let mut seen = recording.take(3);
    seen.sort_by(|a, b| a.name().cmp(b.name()));
    assert_eq!(
        seen[0],
        Seen::Update {
            name: "changed".into(),
            old_rv: changed,
            rv: changed_now,
            resync: false
        }
    );
    assert!(
        matches!(&seen[1], Seen::Delete { name, unknown: true, .. } if name == "doomed"),
        "a tombstone: {seen:?}"
    );
    assert_eq!(
        seen[2],
        Seen::Update {
            name: "kept".into(),
            old_rv: kept.clone(),
            rv: kept,
            resync: true
        }
    );
    assert!(
        informer
            .stats()
            .expired
            .load(std::sync::atomic::Ordering::Relaxed)
            >= 1,
        "the relist followed a 410"
    );
    cluster.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coalesced_listener_buffers_at_most_one_notification_per_object() {
    let cluster = TestCluster::start().await;
    let informers = informers(cluster.client.clone());
    let mut subscription = config_maps(&cluster.namespace);
    let (_key, informer) = informer(&informers, &subscription).await;
    let every = Recording::new(subscription.clone());
    subscription.delivery = herald::plugin::Delivery::Coalesced;
    let coalesced = Recording::new(subscription);
    informer.add_listener(every.listener.clone());
    informer.add_listener(coalesced.listener.clone());
    every.until(|s| *s == Seen::Synced);
    for name in ["a", "b", "c"] {
        cluster.create_config_map(name, "web", "0").await;
    }
    let mut last = String::new();
    for round in 1..=40 {
        for name in ["a", "b", "c"] {
            last = cluster.update_config_map(name, &round.to_string()).await;
        }
    }
    every.until(|s| matches!(s, Seen::Update { rv, .. } if *rv == last));
    assert!(
        coalesced.listener.depth() <= 3,
        "depth {} for 3 objects and 123 events",
        coalesced.listener.depth()
    );
    let seen = coalesced.drain();
    assert_eq!(seen[0], Seen::Synced);
    let adds: Vec<&Seen> = seen[1..].iter().collect();
    assert_eq!(adds.len(), 3, "one merged add per object: {seen:?}");
    assert!(
        adds.iter()
            .all(|s| matches!(s, Seen::Add { initial: false, .. })),
        "add+updates merge into an add of the newest: {seen:?}"
    );
    cluster.cleanup().await;
}

/// Starts an informer on ConfigMaps of a namespace holding `count` of them,
/// against a server that serves streaming lists or not; returns what the
/// informer's listener saw of the initial list and the reflector's counts
/// (lists, streamed lists).
async fn initial_list_with(watch_list: bool, count: usize) -> (Vec<Seen>, u64, u64) {
    use herald::informer::Informers;
    use std::sync::atomic::Ordering;
    let server = herald_apiserver::start(herald_apiserver::ApiServerConfig {
        watch_list,
        ..Default::default()
    })
    .await
    .expect("embedded API server");
    let client = kube::Client::try_from(kube::Config::new(server.url().parse().unwrap())).unwrap();
    let configs: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(client.clone(), "default");
    for i in 0..count {
        let cm = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("cm-{i}"), "labels": {"app": "web"}}, "data": {"i": i.to_string()}
        }))
        .unwrap();
        configs.create(&Default::default(), &cm).await.unwrap();
    }
    let informers: Informers = informers(client);
    let subscription = config_maps("default");
    let (_key, informer) = informer(&informers, &subscription).await;
    let recording = Recording::new(subscription);
    informer.add_listener(recording.listener.clone());
    let seen = recording.until(|seen| *seen == Seen::Synced);
    let stats = informer.stats();
    (
        seen,
        stats.lists.load(Ordering::Relaxed),
        stats.streamed_lists.load(Ordering::Relaxed),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_initial_list_is_streamed_where_the_server_serves_watch_lists() {
    let (seen, lists, streamed) = initial_list_with(true, 30).await;
    assert_eq!(seen.len(), 31, "30 initial adds, then synced: {seen:?}");
    assert!(seen[..30].iter().all(|s| matches!(s, Seen::Add { .. })));
    assert_eq!((lists, streamed), (1, 1), "one list, streamed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_refusing_watch_lists_is_listed_in_pages_instead() {
    let (seen, lists, streamed) = initial_list_with(false, 30).await;
    assert_eq!(
        seen.len(),
        31,
        "the same 30 initial adds, then synced: {seen:?}"
    );
    assert!(seen[..30].iter().all(|s| matches!(s, Seen::Add { .. })));
    assert_eq!(
        (lists, streamed),
        (1, 0),
        "one paginated list, none streamed"
    );
}
