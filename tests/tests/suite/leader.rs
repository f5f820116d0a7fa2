//! Leader election on a Lease, against the embedded API server (or the real
//! cluster `HERALD_TEST_KUBECONFIG` names): one leader at a time, failover
//! only after the lease expires, prompt hand-over on release, and losing a
//! round to a conflicting write.
//!
//! Every wait is on the elector's leadership channel, on the Lease object or
//! on the requests an elector sent (counted by [`Interceptor`]), under a
//! timeout; elapsed times are measured to prove "not before". Where a test
//! says an elector did not take the Lease, it first waits until the elector
//! read the Lease (had its chance) several times.

use crate::cluster::TestCluster;
use herald::leader::{Election, LeaderElector, LeaseSettings};
use herald_tests::{PATIENCE, eventually};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, PostParams};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::{Instant, timeout};

const LEASE: &str = "herald-leader";

fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

/// Settings for `identity` on this test's Lease.
fn settings(
    cluster: &TestCluster,
    identity: &str,
    lease: Duration,
    renew: Duration,
    retry: Duration,
) -> LeaseSettings {
    LeaseSettings {
        lease_duration: lease,
        renew_deadline: renew,
        retry_period: retry,
        ..LeaseSettings::new(&cluster.namespace, LEASE, identity)
    }
}

fn spawn(client: &kube::Client, settings: LeaseSettings) -> Election {
    LeaderElector::new(client.clone(), settings)
        .expect("valid settings")
        .spawn()
}

/// [`spawn`], on a client that counts the elector's requests to the Lease.
fn spawn_counted(
    cluster: &TestCluster,
    settings: LeaseSettings,
) -> (Election, watch::Receiver<Counts>) {
    let interceptor = Interceptor::new(cluster.client.clone(), lease_path(cluster), None);
    let counts = interceptor.counts();
    let client = kube::Client::new(interceptor, cluster.namespace.clone());
    (spawn(&client, settings), counts)
}

/// The Lease's path on the API server.
fn lease_path(cluster: &TestCluster) -> String {
    format!(
        "/apis/coordination.k8s.io/v1/namespaces/{}/leases/{LEASE}",
        cluster.namespace
    )
}

/// Waits until the elector counted by `counts` has read the Lease `reads`
/// more times than `since` shows: it had that many chances to act on it.
async fn wait_for_reads(counts: &watch::Receiver<Counts>, since: &Counts, reads: usize, who: &str) {
    let target = since.gets + reads;
    let mut watching = counts.clone();
    let reached = timeout(PATIENCE, watching.wait_for(|n| n.gets >= target))
        .await
        .is_ok_and(|changed| changed.is_ok());
    assert!(
        reached,
        "{who} read the Lease {} of the {reads} more times awaited (within {PATIENCE:?}, or before its client went away)",
        counts.borrow().gets - since.gets
    );
}

fn leases(cluster: &TestCluster) -> Api<Lease> {
    Api::namespaced(cluster.client.clone(), &cluster.namespace)
}

async fn lease_spec(cluster: &TestCluster) -> LeaseSpec {
    leases(cluster)
        .get(LEASE)
        .await
        .expect("reading the Lease")
        .spec
        .unwrap_or_default()
}

/// Waits for leadership to become `wanted`; `within` is only a safety net
/// (the tests assert the timing the protocol promises separately).
async fn wait_for(election: &Election, wanted: bool, within: Duration, what: &str) {
    let mut leadership = election.leadership();
    timeout(within, leadership.wait_for(|leading| *leading == wanted))
        .await
        .unwrap_or_else(|_| panic!("{what}: leadership did not become {wanted} within {within:?}"))
        .expect("the elector is running");
}

/// Overwrites the Lease as another replica would, holding it for `seconds`
/// (retrying if an elector wrote it in between).
async fn claim_as_intruder(leases: &Api<Lease>, seconds: i32) -> Lease {
    loop {
        let mut lease = leases.get(LEASE).await.expect("reading the Lease");
        let old = lease.spec.clone().unwrap_or_default();
        let now = MicroTime(Timestamp::now());
        lease.spec = Some(LeaseSpec {
            holder_identity: Some("intruder".into()),
            lease_duration_seconds: Some(seconds),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            lease_transitions: Some(old.lease_transitions.unwrap_or(0) + 1),
            ..old
        });
        match leases.replace(LEASE, &PostParams::default(), &lease).await {
            Ok(written) => return written,
            Err(kube::Error::Api(status)) if status.code == 409 => continue,
            Err(err) => panic!("the intruder's write failed: {err}"),
        }
    }
}

/// Records whether two electors were ever leading at the same moment.
fn watch_for_two_leaders(a: &Election, b: &Election) -> Arc<AtomicBool> {
    let both = Arc::new(AtomicBool::new(false));
    let (mut a, mut b) = (a.leadership(), b.leadership());
    let seen = both.clone();
    tokio::spawn(async move {
        loop {
            if *a.borrow_and_update() && *b.borrow_and_update() {
                seen.store(true, Ordering::SeqCst);
            }
            tokio::select! {
                changed = a.changed() => if changed.is_err() { break },
                changed = b.changed() => if changed.is_err() { break },
            }
        }
    });
    both
}

/// Polls the Lease until it has been renewed `renewals` more times by
/// `holder`, asserting on every read that `holder` still holds it.
async fn wait_for_renewals(cluster: &TestCluster, holder: &str, renewals: usize) {
    let mut last = lease_spec(cluster).await.renew_time;
    let mut seen = 0;
    eventually(
        &format!("{holder} to renew the Lease {renewals} times"),
        Duration::from_secs(10),
        async || {
            let spec = lease_spec(cluster).await;
            assert_eq!(spec.holder_identity.as_deref(), Some(holder));
            if spec.renew_time != last {
                seen += 1;
                last = spec.renew_time;
            }
            if seen >= renewals {
                Ok(())
            } else {
                Err(format!("{seen} renewals"))
            }
        },
    )
    .await;
}

#[tokio::test]
async fn exactly_one_of_two_electors_leads_and_the_lease_names_it() {
    let cluster = TestCluster::start().await;
    let (lease, renew, retry) = (Duration::from_secs(1), ms(500), ms(100));
    let (a, a_counts) = spawn_counted(&cluster, settings(&cluster, "a", lease, renew, retry));
    let (b, b_counts) = spawn_counted(&cluster, settings(&cluster, "b", lease, renew, retry));
    let both = watch_for_two_leaders(&a, &b);

    let (mut la, mut lb) = (a.leadership(), b.leadership());
    timeout(PATIENCE, async {
        tokio::select! {
            _ = la.wait_for(|l| *l) => {},
            _ = lb.wait_for(|l| *l) => {},
        }
    })
    .await
    .expect("one of the two electors leads");
    let (leader, follower) = if a.is_leader() { (&a, "b") } else { (&b, "a") };
    let leader_name = if a.is_leader() { "a" } else { "b" };
    let follower_counts = if a.is_leader() { b_counts } else { a_counts };
    let before = follower_counts.borrow().clone();

    // Several renewals, together longer than the lease would need to expire
    // if the leader stopped, while the follower tries: it must not take
    // over, nor even write the Lease.
    wait_for_renewals(&cluster, leader_name, 15).await;
    wait_for_reads(&follower_counts, &before, 5, follower).await;
    assert!(leader.is_leader(), "the leader kept leading while renewing");
    assert_eq!(
        follower_counts.borrow().put_statuses,
        before.put_statuses,
        "{follower} wrote a Lease that was being renewed"
    );
    let spec = lease_spec(&cluster).await;
    assert_eq!(spec.holder_identity.as_deref(), Some(leader_name));
    assert_eq!(spec.lease_transitions, Some(0), "nobody took over");
    assert_eq!(spec.lease_duration_seconds, Some(1));
    assert!(spec.acquire_time.is_some() && spec.renew_time.is_some());
    assert!(
        !both.load(Ordering::SeqCst),
        "{leader_name} and {follower} were leading at the same time"
    );
    a.abort();
    b.abort();
    cluster.cleanup().await;
}

#[tokio::test]
async fn a_follower_takes_over_only_after_the_lease_expires_when_the_leader_stops_renewing() {
    let cluster = TestCluster::start().await;
    let (lease, renew, retry) = (Duration::from_secs(1), ms(500), ms(100));
    let a = spawn(
        &cluster.client,
        settings(&cluster, "a", lease, renew, retry),
    );
    wait_for(&a, true, PATIENCE, "a alone").await;
    let (b, b_counts) = spawn_counted(&cluster, settings(&cluster, "b", lease, renew, retry));

    // A renews for well over a lease duration while B follows, trying.
    wait_for_renewals(&cluster, "a", 15).await;
    wait_for_reads(&b_counts, &Counts::default(), 5, "b").await;
    assert!(!b.is_leader(), "b took a Lease that was being renewed");
    assert!(
        b_counts.borrow().put_statuses.is_empty(),
        "b wrote a Lease that was being renewed"
    );
    let before = lease_spec(&cluster).await;
    assert_eq!(before.lease_transitions, Some(0));

    // A crashes: no release, the Lease still names it.
    a.abort();
    let last_renewal = lease_spec(&cluster).await;
    assert_eq!(last_renewal.holder_identity.as_deref(), Some("a"));

    wait_for(&b, true, PATIENCE, "b after a crashed").await;
    let after = lease_spec(&cluster).await;
    // B may only take over a full lease duration after it saw A's last
    // renewal, which it cannot have seen before A wrote it. Both times are
    // this machine's clock, written into the Lease by the electors.
    let waited = after
        .acquire_time
        .as_ref()
        .expect("b's acquireTime")
        .0
        .duration_since(last_renewal.renew_time.as_ref().expect("a's renewTime").0);
    assert!(
        // (less 1ms: the Lease stores microseconds)
        waited >= SignedDuration::try_from(lease - ms(1)).unwrap(),
        "b took over {waited:?} after a's last renewal, before the {lease:?} lease expired"
    );
    assert_eq!(after.holder_identity.as_deref(), Some("b"));
    assert_eq!(
        after.lease_transitions,
        Some(1),
        "a takeover counts one transition"
    );
    assert_ne!(
        after.acquire_time, before.acquire_time,
        "b set a new acquireTime"
    );
    b.abort();
    cluster.cleanup().await;
}

#[tokio::test]
async fn a_graceful_release_hands_the_lease_over_without_waiting_for_expiry() {
    let cluster = TestCluster::start().await;
    // A long lease: without the release, B would wait 30 seconds.
    let (lease, renew, retry) = (Duration::from_secs(30), Duration::from_secs(10), ms(100));
    let a = spawn(
        &cluster.client,
        settings(&cluster, "a", lease, renew, retry),
    );
    wait_for(&a, true, PATIENCE, "a alone").await;
    let b = spawn(
        &cluster.client,
        settings(&cluster, "b", lease, renew, retry),
    );
    wait_for_renewals(&cluster, "a", 3).await;
    assert!(!b.is_leader());

    let mut a_leadership = a.leadership();
    let released = Instant::now();
    a.release().await.expect("releasing the Lease");
    assert!(
        !*a_leadership.borrow_and_update(),
        "a published false on release"
    );
    let holder = lease_spec(&cluster).await.holder_identity;
    assert!(
        holder.is_none() || holder.as_deref() == Some("b"),
        "after the release the Lease is free or already b's, not {holder:?}"
    );

    wait_for(&b, true, PATIENCE, "b after a released").await;
    assert!(
        released.elapsed() < lease / 2,
        "b took {:?}, as if the Lease had not been released",
        released.elapsed()
    );
    let spec = lease_spec(&cluster).await;
    assert_eq!(spec.holder_identity.as_deref(), Some("b"));
    assert_eq!(spec.lease_transitions, Some(1));
    b.abort();
    cluster.cleanup().await;
}

#[tokio::test]
async fn a_leader_that_reads_another_holder_steps_down_at_once() {
    let cluster = TestCluster::start().await;
    // A renew deadline far longer than the wait below: stepping down must
    // come from seeing the other holder, not from failing to renew.
    let (lease, renew, retry) = (Duration::from_secs(30), Duration::from_secs(20), ms(100));
    let (a, a_counts) = spawn_counted(&cluster, settings(&cluster, "a", lease, renew, retry));
    wait_for(&a, true, PATIENCE, "a alone").await;

    claim_as_intruder(&leases(&cluster), 60).await;
    let intruded = Instant::now();
    wait_for(&a, false, PATIENCE, "a after the intruder's write").await;
    assert!(intruded.elapsed() < renew / 4);
    // A does not take back a claim that has not expired: five reads of the
    // Lease later, it has not written it.
    let stepped_down = a_counts.borrow().clone();
    wait_for_reads(&a_counts, &stepped_down, 5, "a").await;
    assert_eq!(
        a_counts.borrow().put_statuses,
        stepped_down.put_statuses,
        "a wrote the Lease while the intruder's claim was valid"
    );
    assert!(!a.is_leader());
    assert_eq!(
        lease_spec(&cluster).await.holder_identity.as_deref(),
        Some("intruder")
    );
    a.abort();
    cluster.cleanup().await;
}

#[tokio::test]
async fn a_leader_that_cannot_renew_steps_down_before_the_lease_can_expire() {
    let cluster = TestCluster::start().await;
    let Some(faults) = cluster.faults() else {
        herald_tests::skip(
            "a leader that cannot renew",
            "it needs the embedded API server's fault injection",
        );
        return cluster.cleanup().await;
    };
    let (lease, renew, retry) = (Duration::from_secs(2), Duration::from_secs(1), ms(100));
    let a = spawn(
        &cluster.client,
        settings(&cluster, "a", lease, renew, retry),
    );
    wait_for(&a, true, PATIENCE, "a alone").await;

    let renewed = lease_spec(&cluster)
        .await
        .renew_time
        .expect("a's renewTime")
        .0;
    faults.fail_next_requests(usize::MAX);
    let unreachable = Instant::now();
    wait_for(&a, false, PATIENCE, "a with the API failing").await;
    let stepped_down = Timestamp::now();
    let waited = unreachable.elapsed();
    faults.fail_next_requests(0);
    // A keeps trying until renewDeadline after its last renewal (the one read
    // above, or a later one), less the time its last read took.
    let since_renewal = stepped_down.duration_since(renewed);
    assert!(
        since_renewal >= SignedDuration::try_from(renew - ms(200)).unwrap(),
        "a stepped down {since_renewal:?} after its last renewal, before its {renew:?} renew deadline"
    );
    assert!(
        waited < lease,
        "a stepped down after {waited:?}: a follower could have taken over at {lease:?}"
    );

    // Once the API answers, the Lease (still naming it) is renewed again.
    wait_for(&a, true, PATIENCE, "a with the API back").await;
    let spec = lease_spec(&cluster).await;
    assert_eq!(spec.holder_identity.as_deref(), Some("a"));
    assert_eq!(
        spec.lease_transitions,
        Some(0),
        "renewing its own Lease is no transition"
    );
    a.abort();
    cluster.cleanup().await;
}

#[tokio::test]
async fn a_conflicting_write_between_read_and_write_loses_the_elector_the_round() {
    let cluster = TestCluster::start().await;
    // A free Lease, so that the elector reads it and then writes (PUT).
    let free: Lease = serde_json::from_value(serde_json::json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": LEASE},
        "spec": {"leaseTransitions": 4},
    }))
    .unwrap();
    leases(&cluster)
        .create(&PostParams::default(), &free)
        .await
        .expect("creating a free Lease");

    // Just before the elector's first PUT reaches the server, another
    // replica claims the Lease: the PUT carries a stale resourceVersion.
    let intruder = leases(&cluster);
    let interceptor = Interceptor::new(
        cluster.client.clone(),
        lease_path(&cluster),
        Some(Box::pin(async move {
            claim_as_intruder(&intruder, 60).await;
        })),
    );
    let counts = interceptor.counts();
    let client = kube::Client::new(interceptor, cluster.namespace.clone());
    let (lease, renew, retry) = (Duration::from_secs(1), ms(500), ms(100));
    let c = spawn(&client, settings(&cluster, "c", lease, renew, retry));
    let leadership = c.leadership();

    // Wait for the conflicting PUT and two reads after it.
    let mut seen = counts.clone();
    timeout(
        PATIENCE,
        seen.wait_for(|n| n.put_statuses.first() == Some(&409) && n.gets_after_put >= 2),
    )
    .await
    .expect("the elector wrote, conflicted, and read the Lease again")
    .unwrap();
    assert!(
        !leadership.has_changed().unwrap(),
        "the elector published leadership although its write was refused"
    );
    assert!(!c.is_leader());
    assert_eq!(
        counts.borrow().put_statuses,
        [409],
        "the elector must not write over the intruder's valid claim"
    );
    let spec = lease_spec(&cluster).await;
    assert_eq!(spec.holder_identity.as_deref(), Some("intruder"));
    assert_eq!(spec.lease_transitions, Some(5));
    c.abort();
    cluster.cleanup().await;
}

/// What the elector sent to its Lease, as seen by [`Interceptor`].
#[derive(Debug, Clone, Default)]
struct Counts {
    /// Status of every PUT, in order.
    put_statuses: Vec<u16>,
    /// GETs answered.
    gets: usize,
    /// GETs since the first PUT.
    gets_after_put: usize,
}

type Hook = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A kube-rs service that forwards to a real client, runs a hook (if any)
/// once just before the first PUT of one path, and counts that path's
/// requests.
#[derive(Clone)]
struct Interceptor {
    client: kube::Client,
    path: String,
    hook: Arc<Mutex<Option<Hook>>>,
    counts: Arc<watch::Sender<Counts>>,
}

impl Interceptor {
    fn new(client: kube::Client, path: String, hook: Option<Hook>) -> Self {
        Interceptor {
            client,
            path,
            hook: Arc::new(Mutex::new(hook)),
            counts: Arc::new(watch::Sender::new(Counts::default())),
        }
    }

    fn counts(&self) -> watch::Receiver<Counts> {
        self.counts.subscribe()
    }
}

impl tower::Service<http::Request<kube::client::Body>> for Interceptor {
    type Response = http::Response<kube::client::Body>;
    type Error = kube::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<kube::client::Body>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            let ours = request.uri().path() == this.path;
            let method = request.method().clone();
            if ours && method == http::Method::PUT {
                let hook = this.hook.lock().unwrap().take();
                if let Some(hook) = hook {
                    hook.await;
                }
            }
            let response = this.client.send(request).await?;
            if ours {
                let status = response.status().as_u16();
                this.counts.send_modify(|counts| {
                    if method == http::Method::PUT {
                        counts.put_statuses.push(status);
                    } else if method == http::Method::GET {
                        counts.gets += 1;
                        if !counts.put_statuses.is_empty() {
                            counts.gets_after_put += 1;
                        }
                    }
                });
            }
            Ok(response)
        })
    }
}
