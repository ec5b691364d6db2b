//! kube-rs, unmodified, against tinykube: the shapes of its own examples (`secret_syncer`'s
//! finalizer-guarded controller, `configmap_watcher`, `configmap_reflector`), with ConfigMaps as
//! both the watched and the written kind. A controller author's first test looks like this.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::finalizer::{finalizer, Event};
use kube::runtime::{reflector, watcher, WatchStreamExt};
use kube::{Resource, ResourceExt};
use tinykube_tests::ApiServer;

const FINALIZER: &str = "mirror.tinykube.test/cleanup";
const WAIT: Duration = Duration::from_secs(20);

async fn client(server: &ApiServer) -> kube::Client {
    let kubeconfig = Kubeconfig::read_from(server.kubeconfig()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

fn config_map(name: &str, labels: &[(&str, &str)], data: &[(&str, &str)]) -> ConfigMap {
    let map = |kv: &[(&str, &str)]| {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>()
    };
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(map(labels)),
            ..ObjectMeta::default()
        },
        data: Some(map(data)),
        ..ConfigMap::default()
    }
}

/// Poll `f` until it is true or `WAIT` passes.
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

/// Mirror a labelled ConfigMap into `mirror-NAME` (server-side apply, owned by the source), and
/// delete the mirror before the source may go (the finalizer).
async fn reconcile(cm: Arc<ConfigMap>, api: Arc<Api<ConfigMap>>) -> Result<Action, Error> {
    finalizer(&api, FINALIZER, cm, |event| async {
        match event {
            Event::Apply(cm) => {
                let name = format!("mirror-{}", cm.name_any());
                let mut mirror = config_map(&name, &[], &[]);
                mirror.data = cm.data.clone();
                mirror.metadata.owner_references = cm.controller_owner_ref(&()).map(|o| vec![o]);
                api.patch(
                    &name,
                    &PatchParams::apply("mirror-controller"),
                    &Patch::Apply(&mirror),
                )
                .await?;
            }
            Event::Cleanup(cm) => {
                let name = format!("mirror-{}", cm.name_any());
                match api.delete(&name, &DeleteParams::default()).await {
                    Err(kube::Error::Api(s)) if s.code == 404 => {}
                    other => {
                        other?;
                    }
                }
            }
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
fn finalizer_controller_watcher_and_reflector() {
    // The harness is blocking: start the API server before the runtime.
    let server = ApiServer::start().unwrap();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(mirror_controller(&server));
}

async fn mirror_controller(server: &ApiServer) {
    let client = client(server).await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");

    // A reflector over every ConfigMap of the namespace, as configmap_reflector.
    let (reader, writer) = reflector::store::<ConfigMap>();
    let reflected = reflector(writer, watcher(api.clone(), watcher::Config::default()));
    tokio::spawn(reflected.applied_objects().for_each(|_| async {}));

    // A watcher of applied objects, as configmap_watcher, keeping the names it saw.
    let seen = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let names = seen.clone();
    let watched = watcher(api.clone(), watcher::Config::default()).applied_objects();
    tokio::spawn(watched.for_each(move |cm| {
        if let Ok(cm) = cm {
            names.lock().unwrap().push(cm.name_any());
        }
        async {}
    }));

    // The controller: labelled sources, owned mirrors.
    let failures = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let errors = failures.clone();
    let controller = Controller::new(
        api.clone(),
        watcher::Config::default().labels("mirror=true"),
    )
    .owns(api.clone(), watcher::Config::default())
    .run(
        reconcile,
        move |_, err: &Error, _| {
            errors.lock().unwrap().push(err.to_string());
            Action::requeue(Duration::from_millis(200))
        },
        Arc::new(api.clone()),
    )
    .for_each(|_| async {});
    tokio::spawn(controller);

    api.create(
        &PostParams::default(),
        &config_map("app", &[("mirror", "true")], &[("greeting", "hello")]),
    )
    .await
    .unwrap();

    // The finalizer is added (JSON patch: test /metadata/finalizers against null, then add)
    // and the mirror written, owned by the source.
    assert!(
        eventually(|| async {
            let Ok(Some(m)) = api.get_opt("mirror-app").await else {
                return false;
            };
            m.data
                .as_ref()
                .and_then(|d| d.get("greeting"))
                .map(String::as_str)
                == Some("hello")
        })
        .await,
        "no mirror; controller errors: {:?}",
        failures.lock().unwrap().first()
    );
    let source = api.get("app").await.unwrap();
    assert_eq!(source.finalizers(), [FINALIZER.to_string()]);
    let mirror = api.get("mirror-app").await.unwrap();
    assert_eq!(mirror.owner_references()[0].uid, source.uid().unwrap());

    // A change of the source reaches the mirror.
    api.patch(
        "app",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"data": {"greeting": "bonjour"}})),
    )
    .await
    .unwrap();
    assert!(
        eventually(|| async {
            api.get("mirror-app")
                .await
                .ok()
                .and_then(|m| m.data)
                .and_then(|d| d.get("greeting").cloned())
                == Some("bonjour".into())
        })
        .await
    );

    // The reflector's cache and the watcher saw both objects.
    reader.wait_until_ready().await.unwrap();
    assert!(
        eventually(|| async {
            let mut cached: Vec<String> = reader.state().iter().map(|c| c.name_any()).collect();
            cached.sort();
            cached == ["app", "mirror-app"]
        })
        .await,
        "reflector: {:?}",
        reader
            .state()
            .iter()
            .map(|c| c.name_any())
            .collect::<Vec<_>>()
    );
    {
        let seen = seen.lock().unwrap();
        assert!(seen.contains(&"app".to_string()) && seen.contains(&"mirror-app".to_string()));
    }

    // Deleting the source runs the cleanup (the mirror goes), then the finalizer is removed
    // (JSON patch: test /metadata/finalizers/0, then remove) and the source goes too.
    api.delete("app", &DeleteParams::default()).await.unwrap();
    assert!(
        eventually(|| async {
            api.get_opt("app").await.unwrap().is_none()
                && api.get_opt("mirror-app").await.unwrap().is_none()
        })
        .await,
        "source or mirror left; controller errors: {:?}",
        failures.lock().unwrap().first()
    );
    assert!(
        eventually(|| async { reader.state().is_empty() }).await,
        "the reflector saw both deletions"
    );
}
