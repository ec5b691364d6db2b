//! kube-rs, unmodified, with a custom resource of its own: a `#[derive(CustomResource)]` type
//! with a CEL rule (`#[x_kube(validation)]`) and a status subresource, its CRD created from
//! `CustomResourceExt::crd()` and awaited as kube-rs does, a `Controller` that owns ConfigMaps
//! and writes status, a finalizer, a watcher and a reflector; deleting the custom object
//! garbage-collects its ConfigMaps. A controller author's integration test looks like this.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::finalizer::{finalizer, Event};
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::{reflector, watcher, WatchStreamExt};
use kube::{CustomResource, CustomResourceExt, KubeSchema, Resource, ResourceExt};
use serde::{Deserialize, Serialize};
use tinykube_tests::{ApiServer, ControllerManager};

const FINALIZER: &str = "greetings.tinykube.test/cleanup";
const WAIT: Duration = Duration::from_secs(30);

/// What a Greeting asks for: a message copied into `replicas` ConfigMaps.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug)]
#[kube(
    group = "tinykube.test",
    version = "v1",
    kind = "Greeting",
    namespaced,
    status = "GreetingStatus",
    shortname = "gr"
)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("self.replicas <= 3").message("at most three copies"))]
pub struct GreetingSpec {
    message: String,
    replicas: i32,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, schemars::JsonSchema)]
pub struct GreetingStatus {
    copies: i32,
}

async fn client(server: &ApiServer) -> kube::Client {
    let kubeconfig = Kubeconfig::read_from(server.kubeconfig()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

async fn eventually<F: std::future::Future<Output = bool>>(mut f: impl FnMut() -> F) -> bool {
    let deadline = tokio::time::Instant::now() + WAIT;
    while tokio::time::Instant::now() < deadline {
        if f().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[derive(Debug, thiserror::Error)]
#[error("kube: {0}")]
struct Error(#[from] kube::Error);

struct Ctx {
    greetings: Api<Greeting>,
    maps: Api<ConfigMap>,
}

/// One ConfigMap per copy, owned by the Greeting; the status counts them.
async fn reconcile(g: Arc<Greeting>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    finalizer(&ctx.greetings, FINALIZER, g, |event| async {
        match event {
            Event::Apply(g) => {
                let owner = g.controller_owner_ref(&()).expect("a stored object");
                for i in 0..g.spec.replicas {
                    let cm = ConfigMap {
                        metadata: ObjectMeta {
                            name: Some(format!("{}-{i}", g.name_any())),
                            owner_references: Some(vec![owner.clone()]),
                            ..ObjectMeta::default()
                        },
                        data: Some(BTreeMap::from([("message".into(), g.spec.message.clone())])),
                        ..ConfigMap::default()
                    };
                    ctx.maps
                        .patch(
                            cm.metadata.name.as_deref().unwrap(),
                            &PatchParams::apply("greeter"),
                            &Patch::Apply(&cm),
                        )
                        .await?;
                }
                let status = serde_json::json!({"status": {"copies": g.spec.replicas}});
                ctx.greetings
                    .patch_status(
                        &g.name_any(),
                        &PatchParams::default(),
                        &Patch::Merge(status),
                    )
                    .await?;
            }
            Event::Cleanup(_) => {}
        }
        Ok(Action::await_change())
    })
    .await
    .map_err(|e| match e {
        kube::runtime::finalizer::Error::ApplyFailed(e)
        | kube::runtime::finalizer::Error::CleanupFailed(e) => e,
        kube::runtime::finalizer::Error::AddFinalizer(e)
        | kube::runtime::finalizer::Error::RemoveFinalizer(e) => Error(e),
        other => panic!("finalizer: {other}"),
    })
}

#[test]
fn a_derived_custom_resource_with_its_controller() {
    let server = ApiServer::start().unwrap();
    let _gc = ControllerManager::start(&server, &[]).unwrap();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(greeter(&server));
}

async fn greeter(server: &ApiServer) {
    let client = client(server).await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &Greeting::crd())
        .await
        .unwrap();
    let established = await_condition(
        crds.clone(),
        "greetings.tinykube.test",
        conditions::is_crd_established(),
    );
    tokio::time::timeout(WAIT, established)
        .await
        .expect("the CRD is established")
        .unwrap();

    let greetings: Api<Greeting> = Api::namespaced(client.clone(), "default");
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");

    // The CEL rule kube-rs put in the schema is enforced by the server.
    let too_many = Greeting::new(
        "loud",
        GreetingSpec {
            message: "hi".into(),
            replicas: 5,
        },
    );
    match greetings.create(&PostParams::default(), &too_many).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 422);
            assert!(
                s.message
                    .contains("spec: Invalid value: \"object\": at most three copies"),
                "{}",
                s.message
            );
        }
        other => panic!("a greeting of 5 copies was not refused: {other:?}"),
    }

    // A reflector and a watcher of Greetings.
    let (reader, writer) = reflector::store::<Greeting>();
    let reflected = reflector(
        writer,
        watcher(greetings.clone(), watcher::Config::default()),
    );
    tokio::spawn(reflected.applied_objects().for_each(|_| async {}));

    let ctx = Arc::new(Ctx {
        greetings: greetings.clone(),
        maps: maps.clone(),
    });
    let failures = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let errors = failures.clone();
    let controller = Controller::new(greetings.clone(), watcher::Config::default())
        .owns(maps.clone(), watcher::Config::default())
        .run(
            reconcile,
            move |_, err: &Error, _| {
                errors.lock().unwrap().push(err.to_string());
                Action::requeue(Duration::from_millis(200))
            },
            ctx,
        )
        .for_each(|_| async {});
    tokio::spawn(controller);

    let hello = Greeting::new(
        "hello",
        GreetingSpec {
            message: "bonjour".into(),
            replicas: 2,
        },
    );
    greetings
        .create(&PostParams::default(), &hello)
        .await
        .unwrap();
    assert!(
        eventually(|| async {
            greetings
                .get_status("hello")
                .await
                .ok()
                .and_then(|g| g.status)
                .is_some_and(|s| s.copies == 2)
        })
        .await,
        "no status; controller errors: {:?}",
        failures.lock().unwrap().first()
    );
    let stored = greetings.get("hello").await.unwrap();
    assert_eq!(stored.finalizers(), [FINALIZER.to_string()]);
    for i in 0..2 {
        let cm = maps.get(&format!("hello-{i}")).await.unwrap();
        assert_eq!(cm.owner_references()[0].uid, stored.uid().unwrap());
    }
    assert!(
        eventually(|| async {
            reader
                .get(&kube::runtime::reflector::ObjectRef::new("hello").within("default"))
                .is_some()
        })
        .await
    );

    // Deleting the Greeting runs the finalizer, then the garbage collector takes its maps.
    greetings
        .delete("hello", &DeleteParams::default())
        .await
        .unwrap();
    assert!(
        eventually(|| async {
            matches!(greetings.get_opt("hello").await, Ok(None))
                && matches!(maps.get_opt("hello-0").await, Ok(None))
                && matches!(maps.get_opt("hello-1").await, Ok(None))
        })
        .await,
        "the greeting or its ConfigMaps remain"
    );
}
