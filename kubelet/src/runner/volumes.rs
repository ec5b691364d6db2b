//! A pod's volumes and its containers' filesystems, as the kubelet mounts them: `emptyDir`
//! (one tree shared by the pod's containers), `configMap`, `secret`, `downwardAPI` and
//! `projected` (their keys as read-only files with their real content; the ServiceAccount
//! token from the TokenRequest API), `hostPath` (one tree per node and path) and
//! `persistentVolumeClaim` (the bound volume's tree: its hostPath or local path on this node,
//! else one tree per volume name, so its files outlive the pods that use it). A missing
//! ConfigMap or Secret, or a claim that is missing, being deleted or not Bound, holds the pod
//! in `ContainerCreating` with upstream's FailedMount message until it is there. Each container also gets `/etc/hosts`, `/etc/hostname` and
//! `/etc/resolv.conf` as the kubelet writes them.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    ConfigMap, Container, DownwardAPIVolumeFile, KeyToPath, PersistentVolume,
    PersistentVolumeClaim, Pod, Secret, Volume as PodVolume,
};
use serde_json::json;
use tinykube_client::{Api, Client};
use tinykube_runtime::{Fs, Volume};

/// The volumes of one pod, by name, each with whether it is always read-only (ConfigMap,
/// Secret, downward-API and projected volumes are, whatever the mount says).
pub(crate) type PodVolumes = BTreeMap<String, (Volume, bool)>;

/// Make every volume of the pod; `Err` is the FailedMount event's message.
pub(crate) async fn mount_all(
    client: &Client,
    pod: &Pod,
    host_paths: &(dyn Fn(&str) -> Volume + Send + Sync),
) -> Result<PodVolumes, String> {
    let mut out = PodVolumes::new();
    let ns = pod.metadata.namespace.clone().unwrap_or_default();
    let volumes: Vec<&PodVolume> = pod
        .spec
        .iter()
        .flat_map(|s| s.volumes.iter().flatten())
        .collect();
    // Claims first, as the volume manager's populator processes them before mounting.
    let (mut failed, mut reason) = (Vec::new(), None);
    for v in &volumes {
        let Some(c) = &v.persistent_volume_claim else {
            continue;
        };
        match claim_path(client, &ns, &c.claim_name).await {
            Ok(path) => {
                let read_only = c.read_only == Some(true);
                out.insert(v.name.clone(), (host_paths(&path), read_only));
            }
            Err(e) => {
                failed.push(v.name.clone());
                reason.get_or_insert(format!("error processing PVC {ns}/{}: {e}", c.claim_name));
            }
        }
    }
    if let Some(reason) = reason {
        let names = failed.join(" ");
        return Err(format!(
            "Unable to attach or mount volumes: unmounted volumes=[{names}], unattached volumes=[], failed to process volumes=[{names}]: {reason}"
        ));
    }
    for v in volumes {
        if v.persistent_volume_claim.is_some() {
            continue;
        }
        let vol = make(client, &ns, pod, v, host_paths)
            .await
            .map_err(|e| format!("MountVolume.SetUp failed for volume \"{}\" : {e}", v.name))?;
        let read_only = v.config_map.is_some()
            || v.secret.is_some()
            || v.downward_api.is_some()
            || v.projected.is_some();
        out.insert(v.name.clone(), (vol, read_only));
    }
    Ok(out)
}

async fn make(
    client: &Client,
    ns: &str,
    pod: &Pod,
    v: &PodVolume,
    host_paths: &(dyn Fn(&str) -> Volume + Send + Sync),
) -> Result<Volume, String> {
    if let Some(cm) = &v.config_map {
        let files = keyed_volume_files(
            client,
            ns,
            &cm.name,
            cm.items.as_deref(),
            cm.optional,
            Keyed::ConfigMap,
        )
        .await?;
        return Ok(Volume::from_files(files));
    }
    if let Some(s) = &v.secret {
        let name = s.secret_name.clone().unwrap_or_default();
        let files = keyed_volume_files(
            client,
            ns,
            &name,
            s.items.as_deref(),
            s.optional,
            Keyed::Secret,
        )
        .await?;
        return Ok(Volume::from_files(files));
    }
    if let Some(d) = &v.downward_api {
        return Ok(Volume::from_files(downward_files(
            pod,
            d.items.iter().flatten(),
        )));
    }
    if let Some(p) = &v.projected {
        // The ServiceAccount admission's own volume: the API server admits pods whose
        // `default` account does not exist yet (see README), so its parts are best effort.
        let lenient = v.name.starts_with("kube-api-access-");
        let mut files = Vec::new();
        for src in p.sources.iter().flatten() {
            let part = projected_part(client, ns, pod, src).await;
            match part {
                Ok(f) => files.extend(f),
                Err(e) if lenient => {
                    tracing::debug!(volume = %v.name, error = %e, "part of the token volume left out")
                }
                Err(e) => return Err(e),
            }
        }
        return Ok(Volume::from_files(files));
    }
    if let Some(h) = &v.host_path {
        return Ok(host_paths(&h.path));
    }
    // emptyDir, and kinds not simulated (their data is empty).
    Ok(Volume::empty())
}

/// The node path of the volume a claim is bound to: its hostPath or local path, else a
/// directory of its own under the kubelet's.
async fn claim_path(client: &Client, ns: &str, claim: &str) -> Result<String, String> {
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), ns);
    let pvc = match claims.get_opt(claim).await {
        Ok(Some(c)) => c,
        Ok(None) => {
            return Err(format!(
                "failed to fetch PVC from API server: persistentvolumeclaims {claim:?} not found"
            ))
        }
        Err(e) => return Err(format!("failed to fetch PVC from API server: {e}")),
    };
    if pvc.metadata.deletion_timestamp.is_some() {
        return Err(format!(
            "can't start pod because PVC {ns}/{claim} is being deleted"
        ));
    }
    if !tinykube_proto::storage::is_bound(&pvc) {
        return Err("PVC is not bound".into());
    }
    let name = pvc.spec.and_then(|s| s.volume_name).unwrap_or_default();
    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    let pv = match volumes.get_opt(&name).await {
        Ok(Some(v)) => v,
        Ok(None) => {
            return Err(format!(
                "failed to fetch PV {name:?} from API server: persistentvolumes {name:?} not found"
            ))
        }
        Err(e) => return Err(format!("failed to fetch PV {name:?} from API server: {e}")),
    };
    let spec = pv.spec.unwrap_or_default();
    Ok(match (spec.host_path, spec.local) {
        (Some(h), _) => h.path,
        (None, Some(l)) => l.path,
        _ => format!("/var/lib/kubelet/pods/volumes/kubernetes.io~pv/{name}"),
    })
}

/// The files of one source of a projected volume.
async fn projected_part(
    client: &Client,
    ns: &str,
    pod: &Pod,
    src: &k8s_openapi::api::core::v1::VolumeProjection,
) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut files = Vec::new();
    {
        {
            if let Some(cm) = &src.config_map {
                files.extend(
                    keyed_volume_files(
                        client,
                        ns,
                        &cm.name,
                        cm.items.as_deref(),
                        cm.optional,
                        Keyed::ConfigMap,
                    )
                    .await?,
                );
            }
            if let Some(s) = &src.secret {
                files.extend(
                    keyed_volume_files(
                        client,
                        ns,
                        &s.name,
                        s.items.as_deref(),
                        s.optional,
                        Keyed::Secret,
                    )
                    .await?,
                );
            }
            if let Some(d) = &src.downward_api {
                files.extend(downward_files(pod, d.items.iter().flatten()));
            }
            if let Some(t) = &src.service_account_token {
                let token = service_account_token(
                    client,
                    ns,
                    pod,
                    t.audience.as_deref(),
                    t.expiration_seconds,
                )
                .await?;
                files.push((t.path.clone(), token.into_bytes()));
            }
        }
    }
    Ok(files)
}

fn not_found(kind: &str, name: &str) -> String {
    format!("{kind} \"{name}\" not found")
}

/// Files of the keys of `data`, narrowed and renamed by `items`.
fn keyed_files(
    data: BTreeMap<String, Vec<u8>>,
    items: Option<&[KeyToPath]>,
) -> Vec<(String, Vec<u8>)> {
    match items {
        Some(items) if !items.is_empty() => items
            .iter()
            .filter_map(|i| data.get(&i.key).map(|d| (i.path.clone(), d.clone())))
            .collect(),
        _ => data.into_iter().collect(),
    }
}

/// Which object's keys a volume shows.
#[derive(Clone, Copy)]
enum Keyed {
    ConfigMap,
    Secret,
}

/// The keys of a ConfigMap (`data` and `binaryData`) or Secret (`data`, `stringData`) as bytes;
/// `None` when it does not exist.
async fn keys_of(
    client: &Client,
    ns: &str,
    name: &str,
    kind: Keyed,
) -> Result<Option<BTreeMap<String, Vec<u8>>>, String> {
    let text = |m: Option<BTreeMap<String, String>>| {
        m.unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.into_bytes()))
    };
    let bytes = |m: Option<BTreeMap<String, k8s_openapi::ByteString>>| {
        m.unwrap_or_default().into_iter().map(|(k, v)| (k, v.0))
    };
    Ok(match kind {
        Keyed::ConfigMap => Api::<ConfigMap>::namespaced(client.clone(), ns)
            .get_opt(name)
            .await
            .map_err(|e| e.to_string())?
            .map(|cm| text(cm.data).chain(bytes(cm.binary_data)).collect()),
        Keyed::Secret => Api::<Secret>::namespaced(client.clone(), ns)
            .get_opt(name)
            .await
            .map_err(|e| e.to_string())?
            .map(|s| bytes(s.data).chain(text(s.string_data)).collect()),
    })
}

/// The files of a ConfigMap or Secret volume (or projection).
async fn keyed_volume_files(
    client: &Client,
    ns: &str,
    name: &str,
    items: Option<&[KeyToPath]>,
    optional: Option<bool>,
    kind: Keyed,
) -> Result<Vec<(String, Vec<u8>)>, String> {
    match keys_of(client, ns, name, kind).await? {
        Some(data) => Ok(keyed_files(data, items)),
        None if optional == Some(true) => Ok(Vec::new()),
        None => Err(not_found(
            match kind {
                Keyed::ConfigMap => "configmap",
                Keyed::Secret => "secret",
            },
            name,
        )),
    }
}

/// A token of the pod's ServiceAccount bound to the pod, from the TokenRequest API.
async fn service_account_token(
    client: &Client,
    ns: &str,
    pod: &Pod,
    audience: Option<&str>,
    expiration: Option<i64>,
) -> Result<String, String> {
    let sa = pod
        .spec
        .as_ref()
        .and_then(|s| s.service_account_name.clone())
        .unwrap_or_else(|| "default".into());
    let api: Api<k8s_openapi::api::core::v1::ServiceAccount> = Api::namespaced(client.clone(), ns);
    let body = json!({
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {
            "audiences": audience.map(|a| vec![a.to_string()]),
            "expirationSeconds": expiration.unwrap_or(3607),
            "boundObjectRef": {"apiVersion": "v1", "kind": "Pod",
                               "name": pod.metadata.name, "uid": pod.metadata.uid}
        }
    });
    let answer = api
        .create_subresource(&sa, "token", &body)
        .await
        .map_err(|e| e.to_string())?;
    Ok(answer["status"]["token"].as_str().unwrap_or("").to_string())
}

/// The downward API's files: metadata fields and labels/annotations as `key="value"` lines.
fn downward_files<'a>(
    pod: &Pod,
    items: impl Iterator<Item = &'a DownwardAPIVolumeFile>,
) -> Vec<(String, Vec<u8>)> {
    items
        .filter_map(|i| {
            let path = i.field_ref.as_ref()?.field_path.as_str();
            Some((i.path.clone(), field_value(pod, path)?.into_bytes()))
        })
        .collect()
}

/// A `fieldRef`'s value (env and downward-API files).
pub(crate) fn field_value(pod: &Pod, path: &str) -> Option<String> {
    let m = &pod.metadata;
    let map_lines = |map: &Option<BTreeMap<String, String>>| {
        map.iter()
            .flatten()
            .map(|(k, v)| format!("{k}=\"{v}\""))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let status = pod.status.clone().unwrap_or_default();
    let spec = pod.spec.clone().unwrap_or_default();
    let v = match path {
        "metadata.name" => m.name.clone()?,
        "metadata.namespace" => m.namespace.clone()?,
        "metadata.uid" => m.uid.clone()?,
        "metadata.labels" => map_lines(&m.labels),
        "metadata.annotations" => map_lines(&m.annotations),
        "spec.nodeName" => spec.node_name?,
        "spec.serviceAccountName" => spec.service_account_name?,
        "status.hostIP" => status.host_ip?,
        "status.podIP" => status.pod_ip?,
        "status.hostIPs" => status
            .host_ips?
            .into_iter()
            .map(|i| i.ip)
            .collect::<Vec<_>>()
            .join(","),
        "status.podIPs" => status
            .pod_ips?
            .into_iter()
            .map(|i| i.ip)
            .collect::<Vec<_>>()
            .join(","),
        p => {
            let key = |prefix: &str| {
                p.strip_prefix(prefix)?
                    .strip_suffix("']")
                    .map(str::to_string)
            };
            if let Some(k) = key("metadata.labels['") {
                m.labels.as_ref()?.get(&k)?.clone()
            } else if let Some(k) = key("metadata.annotations['") {
                m.annotations.as_ref()?.get(&k)?.clone()
            } else {
                return None;
            }
        }
    };
    Some(v)
}

/// The filesystem of one container: its image's root, the kubelet's `/etc` files, and its
/// volume mounts.
pub(crate) fn container_fs(c: &Container, volumes: &PodVolumes, etc: &[(String, String)]) -> Fs {
    let mut fs = tinykube_runtime::root_fs(c.image.as_deref().unwrap_or(""));
    let _ = fs.mkdir("/etc", true);
    for (path, content) in etc {
        let _ = fs.write(path, content.as_bytes(), false);
    }
    for m in c.volume_mounts.iter().flatten() {
        let Some((vol, always_ro)) = volumes.get(&m.name) else {
            continue;
        };
        let read_only = *always_ro || m.read_only.unwrap_or(false);
        match m.sub_path.as_deref().filter(|s| !s.is_empty()) {
            None => fs.mount(&m.mount_path, vol.clone(), read_only),
            Some(sub) => {
                // A key mounted as one file (the common use): its content is copied in.
                let view = {
                    let mut f = Fs::new(tinykube_runtime::fs::Node::dir());
                    f.mount("/v", vol.clone(), true);
                    f
                };
                let src = format!("/v/{sub}");
                if let Ok(data) = view.read(&src) {
                    let parent = tinykube_runtime::fs::absolute(&m.mount_path, "..");
                    let _ = fs.mkdir(&parent, true);
                    let _ = fs.write(&m.mount_path, &data, false);
                } else {
                    fs.mount(&m.mount_path, vol.clone(), read_only);
                }
            }
        }
    }
    fs
}

/// `/etc/hosts`, `/etc/hostname` and `/etc/resolv.conf` of a pod, as the kubelet writes them.
pub(crate) fn etc_files(
    pod: &Pod,
    pod_ip: &str,
    search: &[String],
    dns_ip: &str,
) -> Vec<(String, String)> {
    let spec = pod.spec.clone().unwrap_or_default();
    let hostname = spec
        .hostname
        .clone()
        .or_else(|| pod.metadata.name.clone())
        .unwrap_or_default();
    let fqdn = match (&spec.subdomain, &pod.metadata.namespace) {
        (Some(sub), Some(ns)) => {
            format!(
                "{hostname}.{sub}.{ns}.svc.{}",
                search.last().map(String::as_str).unwrap_or("cluster.local")
            )
        }
        _ => String::new(),
    };
    let mut hosts = String::from(
        "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n",
    );
    if fqdn.is_empty() {
        hosts.push_str(&format!("{pod_ip}\t{hostname}\n"));
    } else {
        hosts.push_str(&format!("{pod_ip}\t{fqdn}\t{hostname}\n"));
    }
    for alias in spec.host_aliases.iter().flatten() {
        hosts.push_str(&format!(
            "\n# Entries added by HostAliases.\n{}\t{}\n",
            alias.ip,
            alias.hostnames.clone().unwrap_or_default().join("\t")
        ));
    }
    let resolv = format!(
        "search {}\nnameserver {dns_ip}\noptions ndots:5\n",
        search.join(" ")
    );
    vec![
        ("/etc/hosts".into(), hosts),
        ("/etc/hostname".into(), format!("{hostname}\n")),
        ("/etc/resolv.conf".into(), resolv),
    ]
}
