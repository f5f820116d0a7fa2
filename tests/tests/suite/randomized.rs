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
//! outage arrives as a tombstone carrying the last state the informer had.
//! A delete counts as missed only once the server no longer has the object
//! and the informer, at the end of the outage, still caches it; the seeds
//! together must have missed some, or the tombstone checks checked nothing.
//! Outages need the embedded API server's fault injection: on a real cluster
//! the test fails unless skipping is allowed ([`herald_tests::skip`]).
//!
//! `HERALD_RANDOM_SEEDS=N` runs N seeds (default 8); `HERALD_RANDOM_SEED=S`
//! replays one.

use super::cluster::TestCluster;
use super::recording::{Recording, Seen, View, config_maps, informer, informers};
use herald::plugin::Delivery;
use herald_tests::{PATIENCE, eventually};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;

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
    let seeds = seeds();
    let mut missed = Some(0);
    for &seed in &seeds {
        eprintln!("randomized informer test: seed {seed} (rerun with HERALD_RANDOM_SEED={seed})");
        let seed_missed = run_seed(seed).await;
        missed = missed.zip(seed_missed).map(|(all, this)| all + this);
    }
    if let Some(missed) = missed {
        assert!(
            missed > 0,
            "no delete was missed during an outage with seeds {seeds:?}: the tombstone checks checked nothing"
        );
    }
}

/// Runs one seed; returns how many missed deletes it checked tombstones
/// for, or `None` where there were no outages (a real cluster, skipping).
async fn run_seed(seed: u64) -> Option<usize> {
    let cluster = TestCluster::start().await;
    let faults = cluster.faults();
    if faults.is_none() {
        herald_tests::skip(
            "the outages of the randomized informer test",
            "they need the embedded API server's fault injection",
        );
    }
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
    // An outage: what the informer cached when it began (name → version),
    // and the names deleted during it.
    let mut outage: Option<(BTreeMap<String, String>, BTreeSet<String>)> = None;
    // Deletes the informer missed: the step their outage ended, the name,
    // and the version the informer last had.
    let mut missed: Vec<Missed> = Vec::new();
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
                    let outage = outage.take().unwrap();
                    let ended = end_outage(seed, step, &informer, &cluster, &server, outage).await;
                    missed.extend(ended);
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
    if let Some(outage) = outage.take() {
        let ended = end_outage(seed, steps, &informer, &cluster, &server, outage).await;
        missed.extend(ended);
    }

    // Quiet time: every view converges to the server's state.
    let mut views: Vec<View> = listeners.iter().map(|_| View::default()).collect();
    eventually(
        &format!("seed {seed}: every view converges to the server's state {server:?}"),
        PATIENCE,
        async || {
            for ((who, recording), view) in listeners.iter().zip(&mut views) {
                for seen in recording.drain() {
                    view.apply(who, seen);
                }
            }
            let apart: Vec<String> = listeners
                .iter()
                .zip(&views)
                .filter(|(_, v)| !(v.synced && v.objects == server))
                .map(|((who, _), v)| format!("{who} (synced: {}) {:?}", v.synced, v.objects))
                .collect();
            if apart.is_empty() {
                Ok(())
            } else {
                Err(apart.join("; "))
            }
        },
    )
    .await;

    let (every, late) = (&views[0], &views[2]);
    assert!(
        every.live.ends_with(&late.live),
        "seed {seed}: the late listener's live events are the tail of the early one's"
    );
    for Missed { ended, name, rv } in &missed {
        for (((who, _), view), joined) in listeners.iter().zip(&views).zip(&joined) {
            if !who.contains("coalesced") && joined <= ended {
                // Versions are unique, so each missed delete has a tombstone
                // of its own, not one of an earlier outage.
                let tombstone = Seen::Delete {
                    name: name.clone(),
                    rv: rv.clone(),
                    unknown: true,
                };
                let history: Vec<&Seen> = view.live.iter().filter(|s| s.name() == name).collect();
                assert!(
                    view.live.contains(&tombstone),
                    "seed {seed}: {who} got no tombstone for {name} at version {rv}, deleted during an outage ending at step {ended}: {history:?}"
                );
            }
        }
    }
    let tombstones = &informer.processor().stats.tombstones;
    let tombstones = tombstones.load(Ordering::Relaxed);
    let expired = informer.stats().expired.load(Ordering::Relaxed);
    assert_eq!(
        tombstones,
        missed.len() as u64,
        "seed {seed}: the informer inferred a tombstone for each missed delete, and only for those"
    );
    assert!(
        missed.is_empty() || expired > 0,
        "seed {seed}: deletes were missed, yet no relist followed a 410"
    );
    eprintln!(
        "seed {seed}: {} objects at the end, {} deletes missed during outages, {tombstones} tombstones, {expired} relists after 410",
        server.len(),
        missed.len(),
    );
    cluster.cleanup().await;
    faults.map(|_| missed.len())
}

/// A delete the informer missed during an outage.
struct Missed {
    /// The step at which the outage ended.
    ended: usize,
    /// The object's name.
    name: String,
    /// Its version the informer had when the outage began.
    rv: String,
}

/// Ends an `outage` (what the informer cached when it began, the names
/// deleted during it) at `step`: checks that each object deleted during it,
/// and cached when it began, is gone from the server yet still in the
/// informer's cache (the delete really happened, and really was missed);
/// then lets watches through again with the history compacted, so the
/// informer must relist. Returns those deletes.
async fn end_outage(
    seed: u64,
    step: usize,
    informer: &herald::informer::SharedInformer,
    cluster: &TestCluster,
    server: &BTreeMap<String, String>,
    (cached, deleted): (BTreeMap<String, String>, BTreeSet<String>),
) -> Vec<Missed> {
    let faults = cluster.faults().expect("outages need fault injection");
    let mut missed = Vec::new();
    for name in deleted {
        let Some(rv) = cached.get(&name) else {
            continue; // created and deleted within the outage
        };
        if server.contains_key(&name) {
            continue; // deleted, then created again
        }
        assert!(
            cluster
                .config_maps()
                .get_opt(&name)
                .await
                .expect("reading a ConfigMap")
                .is_none(),
            "seed {seed}: {name} was deleted during the outage, yet the server has it"
        );
        let key = format!("{}/{name}", cluster.namespace);
        assert_eq!(
            informer
                .store()
                .get_by_key(&key)
                .map(|o| o.resource_version().to_owned())
                .as_ref(),
            Some(rv),
            "seed {seed}: the informer did not miss the delete of {name} during the outage ending at step {step}"
        );
        missed.push(Missed {
            ended: step,
            name,
            rv: rv.clone(),
        });
    }
    faults.compact_history();
    faults.fail_watches(false);
    missed
}

/// Waits until the informer's cache equals the server's state; returns it
/// (name → resourceVersion).
async fn caught_up(
    informer: &herald::informer::SharedInformer,
    namespace: &str,
    server: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    eventually(
        &format!("the informer catches up with the server's {server:?}"),
        PATIENCE,
        async || {
            let cached: BTreeMap<String, String> = informer
                .store()
                .snapshot()
                .iter()
                .filter(|o| o.namespace() == Some(namespace))
                .map(|o| (o.name().to_owned(), o.resource_version().to_owned()))
                .collect();
            if &cached == server {
                Ok(cached)
            } else {
                Err(format!("cached {cached:?}"))
            }
        },
    )
    .await
}
