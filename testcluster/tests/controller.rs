//! The test a controller author writes against envtest, here with a cluster whose garbage
//! collector and namespace controller run: a kube-rs `Controller` for a custom resource that
//! owns a ConfigMap, writes status and holds a finalizer. Deleting the resource runs the
//! finalizer and garbage-collects the ConfigMap; deleting the namespace finishes.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::eventually;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::finalizer::{finalizer, Event};
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::watcher;
use kube::{CustomResource, CustomResourceExt, Resource, ResourceExt};
use serde::{Deserialize, Serialize};
use tinykube_testcluster::TestCluster;

const FINALIZER: &str = "example.com/echo-cleanup";
const NS: &str = "team-a";

/// An Echo keeps a ConfigMap of the same name holding its message.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, schemars::JsonSchema)]
#[kube(
    group = "example.com",
    version = "v1",
    kind = "Echo",
    namespaced,
    status = "EchoStatus"
)]
pub struct EchoSpec {
    message: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, schemars::JsonSchema)]
pub struct EchoStatus {
    #[serde(rename = "configMap")]
    config_map: String,
    observed: String,
}

struct Ctx {
    echoes: Api<Echo>,
    maps: Api<ConfigMap>,
    cleanups: AtomicUsize,
}

#[derive(Debug, thiserror::Error)]
enum Error {
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error("finalizer: {0}")]
    Finalizer(String),
}

async fn reconcile(echo: Arc<Echo>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let api = ctx.echoes.clone();
    finalizer(&api, FINALIZER, echo, |event| async {
        match event {
            Event::Apply(echo) => {
                let name = echo.name_any();
                let map = ConfigMap {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        owner_references: Some(vec![echo.controller_owner_ref(&()).unwrap()]),
                        ..ObjectMeta::default()
                    },
                    data: Some(BTreeMap::from([(
                        "message".into(),
                        echo.spec.message.clone(),
                    )])),
                    ..ConfigMap::default()
                };
                ctx.maps
                    .patch(
                        &name,
                        &PatchParams::apply("echo-controller").force(),
                        &Patch::Apply(&map),
                    )
                    .await?;
                let status = serde_json::json!({
                    "status": {"configMap": name, "observed": echo.spec.message},
                });
                ctx.echoes
                    .patch_status(&name, &PatchParams::default(), &Patch::Merge(status))
                    .await?;
            }
            Event::Cleanup(_) => {
                ctx.cleanups.fetch_add(1, Ordering::SeqCst);
            }
        }
        Ok(Action::await_change())
    })
    .await
    .map_err(|e: kube::runtime::finalizer::Error<Error>| Error::Finalizer(e.to_string()))
}

#[tokio::test]
async fn a_kube_rs_controller_with_owned_objects_status_and_a_finalizer() {
    let cluster = TestCluster::start().await.unwrap();
    let client = cluster.client();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &Echo::crd())
        .await
        .unwrap();
    let established = await_condition(crds, Echo::crd_name(), conditions::is_crd_established());
    tokio::time::timeout(common::WAIT, established)
        .await
        .unwrap()
        .unwrap();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": NS}})).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();

    let echoes: Api<Echo> = Api::namespaced(client.clone(), NS);
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let ctx = Arc::new(Ctx {
        echoes: echoes.clone(),
        maps: maps.clone(),
        cleanups: AtomicUsize::new(0),
    });
    let controller = Controller::new(echoes.clone(), watcher::Config::default())
        .owns(maps.clone(), watcher::Config::default())
        .run(
            reconcile,
            |_, _: &Error, _| Action::requeue(Duration::from_millis(100)),
            ctx.clone(),
        )
        .for_each(|_| async {});
    let controller = tokio::spawn(controller);

    let echo = Echo::new(
        "hello",
        EchoSpec {
            message: "hi".into(),
        },
    );
    echoes.create(&PostParams::default(), &echo).await.unwrap();
    eventually("the ConfigMap and the status", || async {
        let map = maps.get_opt("hello").await.ok()??;
        let e = echoes.get("hello").await.ok()?;
        let status = e.status.as_ref()?;
        (map.data?.get("message")? == "hi"
            && status.observed == "hi"
            && e.finalizers().contains(&FINALIZER.to_string()))
        .then_some(())
    })
    .await;

    // The owned ConfigMap is put back when someone deletes it, and follows the spec.
    maps.delete("hello", &DeleteParams::default())
        .await
        .unwrap();
    let patch = serde_json::json!({"spec": {"message": "hey"}});
    echoes
        .patch("hello", &PatchParams::default(), &Patch::Merge(patch))
        .await
        .unwrap();
    eventually("the ConfigMap back with the new message", || async {
        let map = maps.get_opt("hello").await.ok()??;
        (map.data?.get("message")? == "hey").then_some(())
    })
    .await;

    // Deleting the Echo runs the finalizer; the garbage collector removes its ConfigMap.
    echoes
        .delete("hello", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the Echo gone after its cleanup", || async {
        echoes.get_opt("hello").await.ok()?.is_none().then_some(())
    })
    .await;
    assert_eq!(ctx.cleanups.load(Ordering::SeqCst), 1);
    eventually("the ConfigMap garbage-collected", || async {
        maps.get_opt("hello").await.ok()?.is_none().then_some(())
    })
    .await;

    // A namespace with objects in it is deleted for real, not left Terminating.
    echoes
        .create(
            &PostParams::default(),
            &Echo::new(
                "again",
                EchoSpec {
                    message: "x".into(),
                },
            ),
        )
        .await
        .unwrap();
    eventually("the second ConfigMap", || async {
        maps.get_opt("again").await.ok()?.map(|_| ())
    })
    .await;
    namespaces
        .delete(NS, &DeleteParams::default())
        .await
        .unwrap();
    eventually("the namespace gone", || async {
        namespaces.get_opt(NS).await.ok()?.is_none().then_some(())
    })
    .await;
    assert_eq!(
        ctx.cleanups.load(Ordering::SeqCst),
        2,
        "the namespace's Echo was finalized"
    );
    controller.abort();
}
