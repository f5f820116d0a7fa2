//! kubectl's generators (`create namespace|deployment|configmap|secret|job|role|…`, `run`,
//! `expose`), which send protobuf bodies, checked through kube-rs.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{
    ConfigMap, Namespace, Pod, ResourceQuota, Secret, Service, ServiceAccount,
};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::watcher;

use crate::common::{TempDir, Tracker, client, server};
use crate::kubectl::{Kubectl, kubectl_available};

#[tokio::test]
async fn kubectl_create_namespace_configmap_and_secret() {
    if !kubectl_available() {
        return;
    }
    let server = server().await;
    let c = client(&server);
    let dir = TempDir::new("kubectl-create");
    let k = Kubectl::new(&server, dir.path());

    let namespaces: Api<Namespace> = Api::all(c.clone());
    let mut watched = Tracker::new(namespaces.clone(), watcher::Config::default());
    watched
        .until("the initial namespaces", |t| t.inits > 0)
        .await;
    let out = k.run(&["create", "namespace", "team-a"]).await;
    assert_eq!(out.trim(), "namespace/team-a created");
    watched
        .until("the watch to see team-a", |t| {
            t.state.contains_key("/team-a")
        })
        .await;
    let ns = namespaces.get("team-a").await.unwrap();
    assert_eq!(ns.name_any(), "team-a");
    assert!(ns.metadata.uid.is_some() && ns.metadata.resource_version.is_some());

    let out = k
        .run(&[
            "create",
            "configmap",
            "cfg",
            "-n",
            "team-a",
            "--from-literal=a=b",
            "--from-literal=c=d",
        ])
        .await;
    assert_eq!(out.trim(), "configmap/cfg created");
    let cm = Api::<ConfigMap>::namespaced(c.clone(), "team-a")
        .get("cfg")
        .await
        .unwrap();
    assert_eq!(
        cm.data.unwrap(),
        BTreeMap::from([("a".into(), "b".into()), ("c".into(), "d".into())])
    );

    let out = k
        .run(&[
            "create",
            "secret",
            "generic",
            "s",
            "-n",
            "team-a",
            "--from-literal=k=v",
        ])
        .await;
    assert_eq!(out.trim(), "secret/s created");
    let secret = Api::<Secret>::namespaced(c.clone(), "team-a")
        .get("s")
        .await
        .unwrap();
    // kubectl leaves `type` to the server's defaulting, which this server does not do.
    assert_eq!(secret.type_, None);
    assert_eq!(
        secret.data.unwrap(),
        BTreeMap::from([("k".into(), ByteString(b"v".to_vec()))])
    );
}

#[tokio::test]
async fn kubectl_create_deployment_run_and_expose() {
    if !kubectl_available() {
        return;
    }
    let server = server().await;
    let c = client(&server);
    let dir = TempDir::new("kubectl-generators");
    let k = Kubectl::new(&server, dir.path());

    let out = k
        .run(&[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=2",
        ])
        .await;
    assert_eq!(out.trim(), "deployment.apps/web created");
    let d = Api::<Deployment>::default_namespaced(c.clone())
        .get("web")
        .await
        .unwrap();
    let spec = d.spec;
    assert_eq!(spec.replicas, Some(2));
    let app = BTreeMap::from([("app".to_string(), "web".to_string())]);
    assert_eq!(spec.selector.match_labels.as_ref(), Some(&app));
    assert_eq!(spec.template.metadata.unwrap().labels.as_ref(), Some(&app));
    let containers = spec.template.spec.unwrap().containers;
    assert_eq!(containers.len(), 1);
    assert_eq!(containers[0].name, "nginx");
    assert_eq!(containers[0].image.as_deref(), Some("nginx"));
    assert_eq!(d.metadata.generation, Some(1));

    let out = k
        .run(&[
            "run",
            "nginx",
            "--image=nginx",
            "--port=8080",
            "--labels=run=nginx,tier=web",
        ])
        .await;
    assert_eq!(out.trim(), "pod/nginx created");
    let pod = Api::<Pod>::default_namespaced(c.clone())
        .get("nginx")
        .await
        .unwrap();
    assert_eq!(pod.labels().get("tier").map(String::as_str), Some("web"));
    let container = &pod.spec.unwrap().containers[0];
    assert_eq!(container.image.as_deref(), Some("nginx"));
    assert_eq!(container.ports.as_ref().unwrap()[0].container_port, 8080);

    let out = k
        .run(&[
            "expose",
            "deployment",
            "web",
            "--port=80",
            "--target-port=8080",
        ])
        .await;
    assert_eq!(out.trim(), "service/web exposed");
    let svc = Api::<Service>::default_namespaced(c.clone())
        .get("web")
        .await
        .unwrap();
    let spec = svc.spec.unwrap();
    assert_eq!(spec.selector.as_ref(), Some(&app));
    let ports = spec.ports.unwrap();
    assert_eq!(ports.len(), 1);
    assert_eq!(ports[0].port, 80);
    assert_eq!(ports[0].target_port, Some(IntOrString::Int(8080)));
    assert_eq!(ports[0].protocol.as_deref(), Some("TCP"));
}

#[tokio::test]
async fn kubectl_creates_jobs_cronjobs_rbac_quotas_and_service_accounts() {
    if !kubectl_available() {
        return;
    }
    let server = server().await;
    let c = client(&server);
    let dir = TempDir::new("kubectl-generators-more");
    let k = Kubectl::new(&server, dir.path());
    for args in [
        &["create", "job", "j", "--image=busybox"][..],
        &[
            "create",
            "cronjob",
            "cj",
            "--image=busybox",
            "--schedule=*/5 * * * *",
        ],
        &["create", "serviceaccount", "sa"],
        &["create", "role", "r", "--verb=get,list", "--resource=pods"],
        &[
            "create",
            "rolebinding",
            "rb",
            "--role=r",
            "--serviceaccount=default:sa",
        ],
        &[
            "create",
            "clusterrole",
            "cr",
            "--verb=get",
            "--resource=nodes",
        ],
        &[
            "create",
            "clusterrolebinding",
            "crb",
            "--clusterrole=cr",
            "--user=bob",
        ],
        &["create", "quota", "q", "--hard=pods=10,cpu=500m"],
        &["create", "service", "clusterip", "cip", "--tcp=5678:8080"],
    ] {
        k.run(args).await;
    }
    let job = Api::<Job>::default_namespaced(c.clone())
        .get("j")
        .await
        .unwrap();
    let pod_spec = job.spec.unwrap().template.spec.unwrap();
    assert_eq!(pod_spec.containers[0].image.as_deref(), Some("busybox"));
    assert_eq!(pod_spec.restart_policy.as_deref(), Some("Never"));
    let cj = Api::<CronJob>::default_namespaced(c.clone())
        .get("cj")
        .await
        .unwrap();
    assert_eq!(cj.spec.schedule, "*/5 * * * *");
    Api::<ServiceAccount>::default_namespaced(c.clone())
        .get("sa")
        .await
        .unwrap();
    let role = Api::<Role>::default_namespaced(c.clone())
        .get("r")
        .await
        .unwrap();
    let rule = &role.rules.unwrap()[0];
    assert_eq!(rule.verbs, ["get", "list"]);
    assert_eq!(rule.resources.as_deref(), Some(&["pods".to_string()][..]));
    let rb = Api::<RoleBinding>::default_namespaced(c.clone())
        .get("rb")
        .await
        .unwrap();
    assert_eq!(rb.role_ref.name, "r");
    let subject = &rb.subjects.unwrap()[0];
    assert_eq!(
        (subject.kind.as_str(), subject.name.as_str()),
        ("ServiceAccount", "sa")
    );
    let cr = Api::<ClusterRole>::all(c.clone()).get("cr").await.unwrap();
    assert_eq!(cr.rules.unwrap()[0].verbs, ["get"]);
    let crb = Api::<ClusterRoleBinding>::all(c.clone())
        .get("crb")
        .await
        .unwrap();
    assert_eq!(crb.subjects.unwrap()[0].name, "bob");
    let quota = Api::<ResourceQuota>::default_namespaced(c.clone())
        .get("q")
        .await
        .unwrap();
    let hard = quota.spec.unwrap().hard.unwrap();
    assert_eq!(hard["cpu"], Quantity("500m".into()));
    assert_eq!(hard["pods"], Quantity("10".into()));
    let svc = Api::<Service>::default_namespaced(c)
        .get("cip")
        .await
        .unwrap();
    let spec = svc.spec.unwrap();
    assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
    let port = &spec.ports.unwrap()[0];
    assert_eq!(
        (port.port, port.target_port.clone()),
        (5678, Some(IntOrString::Int(8080)))
    );
}
