//! The demo's churn generator: realistic changes made through the real
//! client, so every example plugin has something to report. Pods are created
//! and go Pending → Running → Succeeded or Failed, containers restart,
//! Deployments are scaled and rolled to new images with their ReplicaSets,
//! ConfigMaps get a new revision of their data, and finished Pods are
//! deleted. The cluster stays bounded however long it
//! runs: at most [`MAX_CHURN_PODS`] churn Pods at a time, and each
//! Deployment keeps [`REVISION_HISTORY`] old ReplicaSets, as a Deployment's
//! `revisionHistoryLimit` does (so a soak measures Herald, not a growing
//! cluster).

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use std::time::Duration;

/// Images the generator picks from: tagged, untagged, `:latest`, and from
/// registries an image policy may not allow.
const IMAGES: &[&str] = &[
    "docker.io/library/nginx:1.27",
    "ghcr.io/acme/cart:2.3.1",
    "redis",
    "busybox:latest",
    "quay.io/prometheus/node-exporter:v1.8.2",
    "registry.example.com/team/tool:0.4",
    "nginx:1.27-alpine",
];

/// Most churn Pods alive at once; past it, finished ones are deleted instead.
pub const MAX_CHURN_PODS: usize = 24;

/// Old ReplicaSets each Deployment keeps after a rollout.
pub const REVISION_HISTORY: usize = 2;

/// A small deterministic random source (xorshift64*), seeded per run.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// Seeds the generator (0 is replaced by a fixed constant).
    pub fn new(seed: u64) -> Self {
        Rng(if seed == 0 {
            0x9E37_79B9_7F4A_7C15
        } else {
            seed
        })
    }

    /// A number in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) as usize % n.max(1)
    }

    /// One element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Makes one change at a time against the cluster behind `client`.
pub struct Churn {
    client: kube::Client,
    namespaces: Vec<String>,
    rng: Rng,
    created: u64,
    revisions: u64,
}

impl std::fmt::Debug for Churn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Churn")
            .field("namespaces", &self.namespaces)
            .field("created", &self.created)
            .finish()
    }
}

impl Churn {
    /// A generator working in `namespaces` (which must exist).
    pub fn new(client: kube::Client, namespaces: Vec<String>, seed: u64) -> Self {
        Churn {
            client,
            namespaces,
            rng: Rng::new(seed),
            created: 0,
            revisions: 0,
        }
    }

    /// Spawns a generator working in the namespaces of `examples/cluster`
    /// (`shop` and `payments`), one change every `interval`, until the task
    /// is aborted.
    pub fn spawn_on_example_cluster(
        client: kube::Client,
        interval: Duration,
    ) -> tokio::task::JoinHandle<()> {
        let namespaces = vec!["shop".to_owned(), "payments".to_owned()];
        let generator = Churn::new(client, namespaces, u64::from(std::process::id()));
        tokio::spawn(generator.run(interval))
    }

    /// Runs until the task is dropped, one change every `interval`.
    pub async fn run(mut self, interval: Duration) {
        loop {
            tokio::time::sleep(interval).await;
            if let Err(err) = self.step().await {
                tracing::debug!("churn step failed (the demo goes on): {err}");
            }
        }
    }

    /// Makes one random change.
    pub async fn step(&mut self) -> Result<(), kube::Error> {
        match self.rng.below(11) {
            0..=2 if self.churn_pods().await? < MAX_CHURN_PODS => self.create_pod().await,
            0..=2 => self.delete_finished_pod().await,
            3..=5 => self.advance_pod().await,
            6 => self.restart_container().await,
            7 => self.scale_deployment().await,
            8 => self.roll_deployment().await,
            9 => self.revise_config_map().await,
            _ => self.delete_finished_pod().await,
        }
    }

    /// Sets `data.revision` of one of a namespace's own ConfigMaps (not the
    /// API server's `kube-root-ca.crt`, nor config-mirror's copies, which it
    /// would overwrite): a data change for the demo's controllers.
    async fn revise_config_map(&mut self) -> Result<(), kube::Error> {
        let namespace = self.rng.pick(&self.namespaces).clone();
        let api = Api::<ConfigMap>::namespaced(self.client.clone(), &namespace);
        let own = ListParams::default().labels("!herald.example.com/mirror-of");
        let names: Vec<String> = api
            .list(&own)
            .await?
            .items
            .into_iter()
            .filter_map(|cm| cm.metadata.name)
            .filter(|name| name != "kube-root-ca.crt")
            .collect();
        if names.is_empty() {
            return Ok(());
        }
        let name = self.rng.pick(&names).clone();
        self.revisions += 1;
        let patch = json!({"data": {"revision": self.revisions.to_string()}});
        api.patch(&name, &PatchParams::default(), &Patch::Merge(patch))
            .await?;
        Ok(())
    }

    async fn create_pod(&mut self) -> Result<(), kube::Error> {
        self.created += 1;
        let namespace = self.rng.pick(&self.namespaces).clone();
        let image = *self.rng.pick(IMAGES);
        let pod: Pod = serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": format!("task-{}", self.created), "namespace": namespace, "labels": {"app": "task", "demo": "churn"}},
            "spec": {"containers": [{"name": "main", "image": image}], "restartPolicy": "OnFailure"},
            "status": {"phase": "Pending"}
        }))
        .expect("a valid Pod");
        match Api::<Pod>::namespaced(self.client.clone(), &namespace)
            .create(&PostParams::default(), &pod)
            .await
        {
            // A policy at the door (image-policy's webhook) refused it:
            // worth seeing beside the plugins' output.
            Err(kube::Error::Api(status)) if status.code == 403 => {
                super::say(&format!(
                    "{:>20} │ Pod {namespace}/task-{} ({image}) refused: {}",
                    "kubectl create", self.created, status.message
                ));
                Ok(())
            }
            result => result.map(drop),
        }
    }

    /// How many Pods the generator created are alive.
    async fn churn_pods(&self) -> Result<usize, kube::Error> {
        let pods = Api::<Pod>::all(self.client.clone())
            .list(&ListParams::default().labels("demo=churn"))
            .await?;
        Ok(pods.items.len())
    }

    async fn pods_in_phase(&mut self, phases: &[&str]) -> Result<Option<Pod>, kube::Error> {
        let pods = Api::<Pod>::all(self.client.clone())
            .list(&ListParams::default())
            .await?
            .items;
        let matching: Vec<Pod> = pods
            .into_iter()
            .filter(|p| phases.contains(&phase(p)))
            .collect();
        Ok((!matching.is_empty()).then(|| matching[self.rng.below(matching.len())].clone()))
    }

    async fn advance_pod(&mut self) -> Result<(), kube::Error> {
        let Some(pod) = self.pods_in_phase(&["Pending", "Running"]).await? else {
            return Ok(());
        };
        let next = match phase(&pod) {
            "Pending" => "Running",
            // Only pods the generator made finish; seeded ones keep serving.
            _ if !is_churn(&pod) => return Ok(()),
            _ if self.rng.below(4) == 0 => "Failed",
            _ => "Succeeded",
        };
        let statuses = container_statuses(&pod, next == "Running", 0);
        self.patch_pod_status(
            &pod,
            json!({"status": {"phase": next, "containerStatuses": statuses}}),
        )
        .await
    }

    async fn restart_container(&mut self) -> Result<(), kube::Error> {
        let Some(pod) = self.pods_in_phase(&["Running"]).await? else {
            return Ok(());
        };
        let restarts = pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|s| s.first())
            .map_or(0, |s| s.restart_count);
        let statuses = container_statuses(&pod, true, restarts + 1);
        self.patch_pod_status(&pod, json!({"status": {"containerStatuses": statuses}}))
            .await
    }

    async fn delete_finished_pod(&mut self) -> Result<(), kube::Error> {
        let Some(pod) = self.pods_in_phase(&["Succeeded", "Failed"]).await? else {
            return Ok(());
        };
        let (namespace, name) = (
            pod.metadata.namespace.clone().unwrap_or_default(),
            pod.metadata.name.clone().unwrap_or_default(),
        );
        Api::<Pod>::namespaced(self.client.clone(), &namespace)
            .delete(&name, &DeleteParams::default())
            .await?;
        Ok(())
    }

    async fn patch_pod_status(&self, pod: &Pod, patch: Value) -> Result<(), kube::Error> {
        let (namespace, name) = (
            pod.metadata.namespace.clone().unwrap_or_default(),
            pod.metadata.name.clone().unwrap_or_default(),
        );
        Api::<Pod>::namespaced(self.client.clone(), &namespace)
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(patch))
            .await?;
        Ok(())
    }

    async fn some_deployment(&mut self) -> Result<Option<Deployment>, kube::Error> {
        let deployments = Api::<Deployment>::all(self.client.clone())
            .list(&ListParams::default())
            .await?
            .items;
        Ok((!deployments.is_empty())
            .then(|| deployments[self.rng.below(deployments.len())].clone()))
    }

    /// Scales a Deployment by one (up or down, between 1 and 5) and reflects
    /// it in its current ReplicaSet and status, with a replica briefly unavailable.
    async fn scale_deployment(&mut self) -> Result<(), kube::Error> {
        let Some(deployment) = self.some_deployment().await? else {
            return Ok(());
        };
        let current = deployment.spec.replicas.unwrap_or(1);
        let desired = if current >= 5 || (current > 1 && self.rng.below(2) == 0) {
            current - 1
        } else {
            current + 1
        };
        let (namespace, name) = names(&deployment.metadata);
        let api = Api::<Deployment>::namespaced(self.client.clone(), &namespace);
        let updated = api
            .patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"replicas": desired}})),
            )
            .await?;
        let generation = updated.metadata.generation.unwrap_or(1);
        let unavailable = (desired - current).max(0);
        let status = json!({"status": {
            "observedGeneration": generation, "replicas": desired, "updatedReplicas": desired,
            "readyReplicas": desired - unavailable, "availableReplicas": desired - unavailable, "unavailableReplicas": unavailable
        }});
        api.patch_status(&name, &PatchParams::default(), &Patch::Merge(status))
            .await?;
        for rs in self.replica_sets_of(&updated).await? {
            if rs_replicas(&rs) > 0 {
                self.set_rs_replicas(&rs, desired, desired - unavailable)
                    .await?;
            }
        }
        if unavailable > 0 {
            let complete = json!({"status": {"readyReplicas": desired, "availableReplicas": desired, "unavailableReplicas": 0}});
            api.patch_status(&name, &PatchParams::default(), &Patch::Merge(complete))
                .await?;
        }
        Ok(())
    }

    /// Rolls a Deployment to a new image: a new ReplicaSet comes up replica by
    /// replica while the old one goes down, reported in the status as it goes.
    async fn roll_deployment(&mut self) -> Result<(), kube::Error> {
        let Some(deployment) = self.some_deployment().await? else {
            return Ok(());
        };
        let (namespace, name) = names(&deployment.metadata);
        let image = *self.rng.pick(IMAGES);
        let api = Api::<Deployment>::namespaced(self.client.clone(), &namespace);
        let container = deployment
            .spec
            .template
            .spec
            .as_ref()
            .and_then(|s| s.containers.first())
            .map_or_else(|| "app".to_owned(), |c| c.name.clone());
        let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": container, "image": image}]}}}});
        let rolled = api
            .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
            .await?;
        let replicas = rolled.spec.replicas.unwrap_or(1);
        let generation = rolled.metadata.generation.unwrap_or(1);
        let old_sets = self.replica_sets_of(&rolled).await?;
        self.created += 1;
        let hash = format!(
            "{:x}",
            0x5a5a_0000u64 + self.created * 7919 + self.rng.below(9973) as u64
        );
        let revision = old_sets.iter().map(revision).max().unwrap_or(0) + 1;
        let annotate = json!({"metadata": {"annotations": {REVISION: revision.to_string()}}});
        api.patch(&name, &PatchParams::default(), &Patch::Merge(annotate))
            .await?;
        let new_rs = self
            .create_replica_set(&rolled, &hash, image, revision)
            .await?;
        for step in 0..=replicas {
            let status = json!({"status": {
                "observedGeneration": generation, "replicas": replicas, "updatedReplicas": step,
                "readyReplicas": replicas - 1 + i32::from(step == replicas), "availableReplicas": replicas - 1 + i32::from(step == replicas),
                "unavailableReplicas": i32::from(step != replicas)
            }});
            api.patch_status(&name, &PatchParams::default(), &Patch::Merge(status))
                .await?;
            self.set_rs_replicas(&new_rs, step, step).await?;
            for old in &old_sets {
                let remaining = (replicas - step).max(0);
                self.set_rs_replicas(old, remaining, remaining).await?;
            }
        }
        self.prune_history(old_sets).await
    }

    /// Deletes all but the [`REVISION_HISTORY`] newest of a Deployment's
    /// old, scaled-down ReplicaSets.
    async fn prune_history(&self, mut old_sets: Vec<ReplicaSet>) -> Result<(), kube::Error> {
        old_sets.sort_by_key(revision);
        let excess = old_sets.len().saturating_sub(REVISION_HISTORY);
        for rs in &old_sets[..excess] {
            let (namespace, name) = names(&rs.metadata);
            Api::<ReplicaSet>::namespaced(self.client.clone(), &namespace)
                .delete(&name, &DeleteParams::default())
                .await?;
        }
        Ok(())
    }

    async fn replica_sets_of(
        &self,
        deployment: &Deployment,
    ) -> Result<Vec<ReplicaSet>, kube::Error> {
        let (namespace, _) = names(&deployment.metadata);
        let uid = deployment.metadata.uid.clone().unwrap_or_default();
        let sets = Api::<ReplicaSet>::namespaced(self.client.clone(), &namespace)
            .list(&ListParams::default())
            .await?
            .items;
        Ok(sets
            .into_iter()
            .filter(|rs| {
                rs.metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|o| o.uid == uid)
            })
            .collect())
    }

    async fn create_replica_set(
        &self,
        deployment: &Deployment,
        hash: &str,
        image: &str,
        revision: u64,
    ) -> Result<ReplicaSet, kube::Error> {
        let (namespace, name) = names(&deployment.metadata);
        let spec = deployment.spec.clone();
        let mut labels = spec.selector.match_labels.clone().unwrap_or_default();
        labels.insert("pod-template-hash".into(), hash.into());
        let container = spec
            .template
            .spec
            .as_ref()
            .and_then(|s| s.containers.first())
            .map_or_else(|| "app".to_owned(), |c| c.name.clone());
        let rs: ReplicaSet = serde_json::from_value(json!({
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": format!("{name}-{hash}"), "namespace": namespace, "labels": labels,
                "annotations": {REVISION: revision.to_string()},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name,
                    "uid": deployment.metadata.uid.clone().unwrap_or_default(), "controller": true}]
            },
            "spec": {"replicas": 0, "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": container, "image": image}]}}}
        }))
        .expect("a valid ReplicaSet");
        Api::<ReplicaSet>::namespaced(self.client.clone(), &namespace)
            .create(&PostParams::default(), &rs)
            .await
    }

    async fn set_rs_replicas(
        &self,
        rs: &ReplicaSet,
        replicas: i32,
        ready: i32,
    ) -> Result<(), kube::Error> {
        let (namespace, name) = names(&rs.metadata);
        let api = Api::<ReplicaSet>::namespaced(self.client.clone(), &namespace);
        api.patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": replicas}})),
        )
        .await?;
        let status = json!({"status": {"replicas": replicas, "readyReplicas": ready, "availableReplicas": ready}});
        api.patch_status(&name, &PatchParams::default(), &Patch::Merge(status))
            .await?;
        Ok(())
    }
}

/// The annotation a Deployment and its ReplicaSets carry their revision in.
const REVISION: &str = "deployment.kubernetes.io/revision";

/// A ReplicaSet's revision (0 when it has none).
fn revision(rs: &ReplicaSet) -> u64 {
    rs.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(REVISION))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Pending")
}

fn is_churn(pod: &Pod) -> bool {
    pod.metadata
        .labels
        .as_ref()
        .is_some_and(|l| l.get("demo").is_some_and(|v| v == "churn"))
}

fn names(
    metadata: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> (String, String) {
    (
        metadata.namespace.clone().unwrap_or_default(),
        metadata.name.clone().unwrap_or_default(),
    )
}

/// Spawns a Pod `namespace/name` whose container crashes and is restarted
/// by the kubelet every `interval` (as its status says: the restart count
/// goes up, the last state is a terminated exit code 1, the container waits
/// in `CrashLoopBackOff`), until the task is aborted: what `crashloop-alert`
/// watches for.
pub fn spawn_crash_loop(
    client: kube::Client,
    namespace: &str,
    name: &str,
    interval: Duration,
) -> tokio::task::JoinHandle<()> {
    let pods = Api::<Pod>::namespaced(client, namespace);
    let name = name.to_owned();
    tokio::spawn(async move {
        let pod: Pod = serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "worker", "demo": "crash-loop"}},
            "spec": {"containers": [{"name": "worker", "image": "ghcr.io/example/worker:1.4"}]},
        }))
        .expect("a Pod");
        if let Err(err) = pods.create(&PostParams::default(), &pod).await {
            tracing::debug!("the crash-looping Pod was not created (the demo goes on): {err}");
            return;
        }
        // The kubelet reports when the Pod started, which lets a watcher
        // count every restart since then even from merged changes.
        let started = crate::units::time::format(std::time::SystemTime::now());
        for restarts in 1.. {
            tokio::time::sleep(interval).await;
            let finished = crate::units::time::format(std::time::SystemTime::now());
            let status = json!({"status": {"phase": "Running", "startTime": started, "containerStatuses": [{
                "name": "worker", "image": "ghcr.io/example/worker:1.4", "imageID": "",
                "ready": false, "started": false, "restartCount": restarts,
                "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": finished}},
            }]}});
            if let Err(err) = pods
                .patch_status(&name, &PatchParams::default(), &Patch::Merge(status))
                .await
            {
                tracing::debug!("crash-loop step failed (the demo goes on): {err}");
            }
        }
    })
}

fn rs_replicas(rs: &ReplicaSet) -> i32 {
    rs.spec.replicas.unwrap_or(0)
}

fn container_statuses(pod: &Pod, ready: bool, restarts: i32) -> Value {
    let containers = pod
        .spec
        .as_ref()
        .map(|s| s.containers.clone())
        .unwrap_or_default();
    Value::Array(
        containers
            .iter()
            .map(|c| json!({"name": c.name, "image": c.image.clone().unwrap_or_default(), "imageID": "", "ready": ready, "restartCount": restarts, "started": ready}))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn the_rng_is_deterministic_and_in_range() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..1000 {
            let x = a.below(10);
            assert_eq!(x, b.below(10));
            assert!(x < 10);
        }
    }
}
