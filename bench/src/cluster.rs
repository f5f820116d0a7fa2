//! The embedded API server as the benchmarks use it: started on loopback,
//! filled with Pod variations over HTTP, written to at a steady rate with
//! write-time stamps. Every request goes through the real kube-rs client.

use crate::data::{NAMESPACES, PodTemplate, STAMP_ANNOTATION};
use futures::StreamExt;
use herald_apiserver::{ApiServer, ApiServerConfig};
use kube::api::{Patch, PatchParams, PostParams};
use kube::core::Request;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::Semaphore;

/// The name of the Pod whose update makes every latency probe report.
pub const FLUSH_POD: &str = "latency-flush";

/// Requests in flight while filling the server.
const FILL_CONCURRENCY: usize = 16;

/// Most stamped writes in flight at once.
pub const WRITES_IN_FLIGHT: usize = 64;

/// A running embedded API server.
pub struct Cluster {
    server: ApiServer,
}

impl Cluster {
    /// Starts a server with the benchmark namespaces. History is sized so
    /// that no watch in a benchmark falls out of it.
    pub async fn start() -> Cluster {
        let server = herald_apiserver::start(ApiServerConfig {
            history_window: 200_000,
            ..ApiServerConfig::default()
        })
        .await
        .expect("starting the embedded API server");
        let cluster = Cluster { server };
        let client = cluster.client();
        for i in 0..NAMESPACES {
            let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": format!("bench-{i}")}});
            let request = Request::new("/api/v1/namespaces")
                .create(&PostParams::default(), body.to_string().into_bytes())
                .expect("namespace request");
            client
                .request_text(request)
                .await
                .expect("creating a namespace");
        }
        cluster
    }

    /// The server's URL.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// A new client (its own connections) for the server.
    pub fn client(&self) -> kube::Client {
        let config = kube::Config::new(self.server.url().parse().expect("server URL"));
        kube::Client::try_from(config).expect("kube client")
    }

    /// Load options granting a plugin the write `rule` (a write rule as
    /// configured), unthrottled, acting on this server through a client
    /// built as the host builds its writer (made on `runtime`, where its
    /// connection tasks run).
    pub fn granted_writes(
        &self,
        runtime: &tokio::runtime::Runtime,
        rule: serde_json::Value,
    ) -> herald::plugin::LoadOptions {
        use herald::capability::kube::{ClusterApi, WriteRule, writer_config};
        use herald::capability::rate::RateLimit;
        use herald::capability::{ClusterAccess, Grants};
        let writer = {
            let _entered = runtime.enter();
            kube::Client::try_from(writer_config(kube::Config::new(
                self.url().parse().expect("server URL"),
            )))
            .expect("writer client")
        };
        herald::plugin::LoadOptions {
            grants: Grants {
                writes: vec![serde_json::from_value::<WriteRule>(rule).expect("a write rule")],
                rate_limit: RateLimit {
                    qps: 1e9,
                    burst: u32::MAX,
                },
                ..Grants::default()
            },
            access: Some(ClusterAccess::new(Arc::new(ClusterApi::new(writer)))),
            ..herald::plugin::LoadOptions::default()
        }
    }

    /// Creates variations `0..count` of `template` (stamped 0), plus the
    /// flush Pod.
    pub async fn fill(&self, template: &PodTemplate, count: usize) {
        let client = self.client();
        futures::stream::iter(0..count)
            .map(|i| {
                let client = client.clone();
                let body = template.render(i, 0, 0);
                let namespace = PodTemplate::namespace(i);
                async move {
                    let request = Request::new(format!("/api/v1/namespaces/{namespace}/pods"))
                        .create(&PostParams::default(), body.into_bytes())
                        .expect("create request");
                    client.request_text(request).await.expect("creating a Pod");
                }
            })
            .buffer_unordered(FILL_CONCURRENCY)
            .collect::<Vec<()>>()
            .await;
        let flush = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": FLUSH_POD, "namespace": "bench-0"},
            "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]}
        });
        let request = Request::new("/api/v1/namespaces/bench-0/pods")
            .create(&PostParams::default(), flush.to_string().into_bytes())
            .expect("create request");
        client
            .request_text(request)
            .await
            .expect("creating the flush Pod");
    }

    /// Writes `rate` stamped updates per second for `seconds` to Pods
    /// `0..pool` of `template` in turn (a merge patch of the stamp
    /// annotation, stamped just before it is sent), with at most
    /// [`WRITES_IN_FLIGHT`] requests in flight: when the server falls behind,
    /// writes wait (unstamped) rather than open ever more connections.
    /// Returns the writes done and the rate achieved.
    pub async fn write_stamps(
        &self,
        template: &PodTemplate,
        pool: usize,
        rate: u32,
        seconds: f64,
    ) -> (usize, f64) {
        let client = self.client();
        let total = (f64::from(rate) * seconds).round() as usize;
        let in_flight = Arc::new(Semaphore::new(WRITES_IN_FLIGHT));
        let started = tokio::time::Instant::now();
        let mut writes = Vec::with_capacity(total);
        for i in 0..total {
            let due = started + Duration::from_secs_f64(i as f64 / f64::from(rate));
            tokio::time::sleep_until(due).await;
            let permit = in_flight
                .clone()
                .acquire_owned()
                .await
                .expect("the semaphore stays open");
            let client = client.clone();
            let index = i % pool;
            let name = template.name(index);
            let namespace = PodTemplate::namespace(index);
            writes.push(tokio::spawn(async move {
                stamp(&client, &namespace, &name, now_ns()).await;
                drop(permit);
            }));
        }
        for write in writes {
            write.await.expect("a write task");
        }
        let elapsed = started.elapsed().as_secs_f64();
        (total, total as f64 / elapsed)
    }

    /// Updates the flush Pod, asking every probe to report. Each flush
    /// writes a new value (an unchanged object would make no event).
    pub async fn flush(&self) {
        let patch = Patch::Merge(
            json!({"metadata": {"annotations": {"herald.bench/flush": now_ns().to_string()}}}),
        );
        let request = Request::new("/api/v1/namespaces/bench-0/pods")
            .patch(FLUSH_POD, &PatchParams::default(), &patch)
            .expect("patch request");
        self.client().request_text(request).await.expect("flushing");
    }

    /// Stops the server.
    pub async fn shutdown(self) {
        self.server.shutdown().await;
    }
}

/// Sets the stamp annotation of one Pod.
async fn stamp(client: &kube::Client, namespace: &str, name: &str, ns: u64) {
    let patch =
        Patch::Merge(json!({"metadata": {"annotations": {STAMP_ANNOTATION: ns.to_string()}}}));
    let request = Request::new(format!("/api/v1/namespaces/{namespace}/pods"))
        .patch(name, &PatchParams::default(), &patch)
        .expect("patch request");
    client.request_text(request).await.expect("stamping a Pod");
}

/// Nanoseconds since the Unix epoch (the clock the probes read too).
pub fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}
