//! A randomized test of the informer's guarantees: random creates, updates
//! and deletes across namespaces, interleaved with dropped watches and forced
//! 410s, observed by several listeners (some joining late, some coalesced).
//!
//! Invariants checked for every listener: per object, never an update or a
//! delete before its add, nothing after a delete until a new add, and (for
//! every-event listeners) each update's old state is the state the listener
//! last saw; every-event
//! listeners see the same sequence after their snapshot; at quiet time each
//! listener's view equals the server's state; every delete missed during an
//! outage arrives as a tombstone.
//!
//! `HERALD_RANDOM_SEEDS=N` runs N seeds (default 8); `HERALD_RANDOM_SEED=S`
//! replays one.

use super::cluster::TestCluster;
use super::recording::{PATIENCE, Recording, Seen, View, config_maps, informer, informers};
use herald::plugin::Delivery;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn seeds() -> Vec<u64> {
    if let Some(seed) = std::env::var("HERALD_RANDOM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        return vec![seed];
    }
    let count: u64 = std::env::var("HERALD_RANDOM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    (1..=count).map(|i| i * 7_919 + 17).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_churn_with_dropped_watches_and_410s_keeps_every_guarantee() {
    for seed in seeds() {
        eprintln!("randomized informer test: seed {seed} (rerun with HERALD_RANDOM_SEED={seed})");
        run_seed(seed).await;
    }
}

async fn run_seed(seed: u64) {
    let cluster = TestCluster::start().await;
    let faults = cluster.faults();
    let mut rng = Rng(seed);
    let informers = informers(cluster.client.clone());
    let subscription = config_maps(&cluster.namespace);
    let (_key, informer) = informer(&informers, &subscription).await;
    let mut coalesced = subscription.clone();
    coalesced.delivery = Delivery::Coalesced;

    let mut listeners: Vec<(&str, Recording)> = vec![
        ("every-event", Recording::new(subscription.clone())),
        ("coalesced", Recording::new(coalesced.clone())),
    ];
    for (_, recording) in &listeners {
        informer.add_listener(recording.listener.clone());
    }
    let names: Vec<String> = (0..12).map(|i| format!("obj-{i}")).collect();
    let mut server: BTreeMap<String, String> = BTreeMap::new();
    // An outage: the names cached when it began, and those deleted during it.
    let mut outage: Option<(BTreeSet<String>, BTreeSet<String>)> = None;
    // Deletes the informer missed, with the step their outage began.
    let mut missed: Vec<(usize, String)> = Vec::new();
    let mut joined: Vec<usize> = vec![0, 0];
    let steps = 160;
    for step in 0..steps {
        if step == steps / 3 {
            for (name, subscription) in [
                ("late-every-event", subscription.clone()),
                ("late-coalesced", coalesced.clone()),
            ] {
                let recording = Recording::new(subscription);
                informer.add_listener(recording.listener.clone());
                listeners.push((name, recording));
                joined.push(step);
            }
        }
        if let Some(faults) = &faults {
            match (rng.below(100), outage.is_some()) {
                (0..=3, false) => {
                    faults.drop_watches();
                }
                (4..=7, false) => {
                    let cached = caught_up(&informer, &cluster.namespace, &server).await;
                    super::recording::begin_watch_outage(faults).await;
                    outage = Some((cached, BTreeSet::new()));
                }
                (0..=19, true) => {
                    let (cached, deleted) = outage.take().unwrap();
                    faults.compact_history();
                    faults.fail_watches(false);
                    missed.extend(
                        deleted
                            .into_iter()
                            .filter(|n| cached.contains(n) && !server.contains_key(n))
                            .map(|n| (step, n)),
                    );
                    // Let the relist happen before anything else changes, so
                    // each missed delete is one the informer must infer.
                    caught_up(&informer, &cluster.namespace, &server).await;
                }
                _ => {}
            }
        }
        let name = &names[rng.below(names.len() as u64) as usize];
        let value = format!("{seed}-{step}");
        match (server.contains_key(name), rng.below(3)) {
            (false, _) => {
                let created = cluster.create_config_map(name, "random", &value).await;
                server.insert(name.clone(), created.metadata.resource_version.unwrap());
            }
            (true, 0) => {
                cluster.delete_config_map(name).await;
                server.remove(name);
                if let Some((_, deleted)) = &mut outage {
                    deleted.insert(name.clone());
                }
            }
            (true, _) => {
                let rv = cluster.update_config_map(name, &value).await;
                server.insert(name.clone(), rv);
            }
        }
    }
    if let (Some(faults), Some((cached, deleted))) = (&faults, outage.take()) {
        faults.compact_history();
        faults.fail_watches(false);
        missed.extend(
            deleted
                .into_iter()
                .filter(|n| cached.contains(n) && !server.contains_key(n))
                .map(|n| (steps, n)),
        );
    }

    // Quiet time: every view converges to the server's state.
    let mut views: Vec<View> = listeners.iter().map(|_| View::default()).collect();
    let deadline = Instant::now() + PATIENCE;
    loop {
        for ((who, recording), view) in listeners.iter().zip(&mut views) {
            for seen in recording.drain() {
                view.apply(who, seen);
            }
        }
        if views.iter().all(|v| v.synced && v.objects == server) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "seed {seed}: views did not converge to the server's state {server:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }

    let (every, late) = (&views[0], &views[2]);
    assert!(
        every.live.ends_with(&late.live),
        "seed {seed}: the late listener's live events are the tail of the early one's"
    );
    for (ended, name) in &missed {
        for (((who, _), view), joined) in listeners.iter().zip(&views).zip(&joined) {
            if !who.contains("coalesced") && joined <= ended {
                let history: Vec<&Seen> = view.live.iter().filter(|s| s.name() == name).collect();
                assert!(
                    view.tombstones.contains(name),
                    "seed {seed}: {who} got no tombstone for {name}, deleted during an outage ending at step {ended}: {history:?}"
                );
            }
        }
    }
    eprintln!(
        "seed {seed}: {} objects at the end, {} deletes missed during outages, {} relists after 410",
        server.len(),
        missed.len(),
        informer
            .stats()
            .expired
            .load(std::sync::atomic::Ordering::Relaxed)
    );
    cluster.cleanup().await;
}

/// Waits until the informer's cache equals the server's state; returns its keys' names.
async fn caught_up(
    informer: &herald::informer::SharedInformer,
    namespace: &str,
    server: &BTreeMap<String, String>,
) -> BTreeSet<String> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let cached: BTreeMap<String, String> = informer
            .store()
            .snapshot()
            .iter()
            .filter(|o| o.namespace() == Some(namespace))
            .map(|o| (o.name().to_owned(), o.resource_version().to_owned()))
            .collect();
        if &cached == server {
            return cached.into_keys().collect();
        }
        assert!(
            Instant::now() < deadline,
            "the informer did not catch up with the server"
        );
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
}
