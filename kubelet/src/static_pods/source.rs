//! Where static pods come from: manifest files (one pod per file, YAML or JSON, dot-files
//! ignored) and a manifest URL, and how a manifest becomes a static pod: the name
//! `NAME-NODENAME`, a UID and `kubernetes.io/config.hash` derived from the content and its
//! origin, `kubernetes.io/config.source`, the node name, and (for files) a toleration of every
//! NoExecute taint — as upstream's `config/common.go` defaults them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use k8s_openapi::api::core::v1::{Pod, Toleration};
use serde_json::Value;

pub const HASH_ANNOTATION: &str = "kubernetes.io/config.hash";
pub const SOURCE_ANNOTATION: &str = "kubernetes.io/config.source";
pub const SEEN_ANNOTATION: &str = "kubernetes.io/config.seen";

#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("reading it: {0}")]
    Read(#[source] std::io::Error),
    #[error("decoding it: {0}")]
    Decode(String),
    #[error("it is a {0}, not a Pod or PodList")]
    Kind(String),
    #[error("invalid pod: {0}")]
    Invalid(String),
    #[error("fetching it: {0}")]
    Fetch(#[source] reqwest::Error),
    #[error("fetching it: the server answered {0}")]
    Status(u16),
}

/// Where a manifest came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin<'a> {
    File(&'a Path),
    Url(&'a str),
}

/// A static pod ready to run on one node.
#[derive(Debug, Clone, PartialEq)]
pub struct StaticPod {
    pub pod: Pod,
    /// `kubernetes.io/config.hash` (also the pod's UID).
    pub hash: String,
}

/// Decode a manifest: one Pod, or a PodList (YAML or JSON).
pub fn decode(text: &str) -> Result<Vec<(Value, Pod)>, ManifestError> {
    let value: Value =
        serde_yaml_ng::from_str(text).map_err(|e| ManifestError::Decode(e.to_string()))?;
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
    let items: Vec<Value> = match kind {
        "Pod" => vec![value],
        "PodList" => value
            .get("items")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        "" => return Err(ManifestError::Kind("document without a kind".into())),
        other => return Err(ManifestError::Kind(other.to_string())),
    };
    items
        .into_iter()
        .map(|v| {
            let pod: Pod = serde_json::from_value(v.clone())
                .map_err(|e| ManifestError::Decode(e.to_string()))?;
            Ok((v, pod))
        })
        .collect()
}

fn validate(pod: &Pod) -> Result<(), ManifestError> {
    let invalid = |m: String| Err(ManifestError::Invalid(m));
    let name = pod.metadata.name.as_deref().unwrap_or("");
    if name.is_empty() {
        return invalid("metadata.name: Required value: name or generateName is required".into());
    }
    if let Some(problem) = tinykube_proto::names::subdomain_errors(name).first() {
        return invalid(format!("metadata.name: Invalid value: {name:?}: {problem}"));
    }
    let Some(spec) = pod.spec.as_ref() else {
        return invalid("spec.containers: Required value".into());
    };
    if spec.containers.is_empty() {
        return invalid("spec.containers: Required value".into());
    }
    for (i, c) in spec.containers.iter().enumerate() {
        if c.name.is_empty() {
            return invalid(format!("spec.containers[{i}].name: Required value"));
        }
        if c.image.as_deref().unwrap_or("").is_empty() {
            return invalid(format!("spec.containers[{i}].image: Required value"));
        }
    }
    Ok(())
}

/// Default a decoded pod for `node` as upstream does for static pods.
pub fn prepare(
    raw: &Value,
    mut pod: Pod,
    node: &str,
    origin: Origin,
) -> Result<StaticPod, ManifestError> {
    validate(&pod)?;
    let canonical = serde_json::to_string(raw).unwrap_or_default();
    let (host, from, source) = match origin {
        Origin::File(p) => (
            format!("host:{node}"),
            format!("file:{}", p.display()),
            "file",
        ),
        Origin::Url(u) => (String::new(), format!("url:{u}"), "http"),
    };
    let hash = crate::hash::hex(&[host.as_bytes(), from.as_bytes(), canonical.as_bytes()], 2);
    let meta = &mut pod.metadata;
    if meta.uid.as_deref().unwrap_or("").is_empty() {
        meta.uid = Some(hash.clone());
    }
    let hash = meta.uid.clone().unwrap_or(hash);
    meta.name = Some(format!(
        "{}-{}",
        meta.name.as_deref().unwrap_or(""),
        node.to_lowercase()
    ));
    if meta.namespace.as_deref().unwrap_or("").is_empty() {
        meta.namespace = Some("default".into());
    }
    let annotations = meta.annotations.get_or_insert_with(BTreeMap::new);
    annotations.insert(HASH_ANNOTATION.into(), hash.clone());
    annotations.insert(SOURCE_ANNOTATION.into(), source.into());
    let spec = pod.spec.get_or_insert_with(Default::default);
    spec.node_name = Some(node.to_string());
    if matches!(origin, Origin::File(_)) {
        let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
        let all = Toleration {
            operator: Some("Exists".into()),
            effect: Some("NoExecute".into()),
            ..Default::default()
        };
        if !tolerations.contains(&all) {
            tolerations.push(all);
        }
    }
    pod.status = None;
    Ok(StaticPod { pod, hash })
}

/// What a directory scan saw: regular, non-hidden files with their mtime and size.
pub type Snapshot = BTreeMap<PathBuf, (SystemTime, u64)>;

/// Stat the manifest files of `path` (a directory, or a single file); cheap enough to run
/// every second.
pub fn scan(path: &Path) -> std::io::Result<Snapshot> {
    let meta = std::fs::metadata(path)?;
    let mut out = Snapshot::new();
    let mut add = |p: PathBuf, m: &std::fs::Metadata| {
        out.insert(p, (m.modified().unwrap_or(SystemTime::UNIX_EPOCH), m.len()));
    };
    if meta.is_file() {
        add(path.to_path_buf(), &meta);
        return Ok(out);
    }
    for entry in std::fs::read_dir(path)? {
        let Ok(entry) = entry else { continue };
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        // Follows symlinks, as the kubelet reads what a link points to.
        let Ok(m) = std::fs::metadata(entry.path()) else {
            continue;
        };
        if m.is_file() {
            add(entry.path(), &m);
        }
    }
    Ok(out)
}

/// Read one manifest file into static pods for `node`.
pub fn read_file(path: &Path, node: &str) -> Result<Vec<StaticPod>, ManifestError> {
    let text = std::fs::read_to_string(path).map_err(ManifestError::Read)?;
    decode(&text)?
        .into_iter()
        .map(|(raw, pod)| prepare(&raw, pod, node, Origin::File(path)))
        .collect()
}

/// Fetch the manifest URL (a Pod or a PodList); the body, not yet defaulted.
pub async fn fetch(http: &reqwest::Client, url: &str) -> Result<Vec<(Value, Pod)>, ManifestError> {
    let resp = http.get(url).send().await.map_err(ManifestError::Fetch)?;
    if !resp.status().is_success() {
        return Err(ManifestError::Status(resp.status().as_u16()));
    }
    let text = resp.text().await.map_err(ManifestError::Fetch)?;
    decode(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const WEB: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: static-web\n  labels:\n    role: myrole\nspec:\n  containers:\n  - name: web\n    image: nginx\n";

    #[test]
    fn defaults_as_upstream() {
        let path = Path::new("/etc/kubernetes/manifests/web.yaml");
        let (raw, pod) = decode(WEB).unwrap().remove(0);
        let s = prepare(&raw, pod, "Worker0", Origin::File(path)).unwrap();
        let m = &s.pod.metadata;
        assert_eq!(m.name.as_deref(), Some("static-web-worker0"));
        assert_eq!(m.namespace.as_deref(), Some("default"));
        assert_eq!(m.uid.as_deref(), Some(s.hash.as_str()));
        let a = m.annotations.as_ref().unwrap();
        assert_eq!(a[HASH_ANNOTATION], s.hash);
        assert_eq!(a[SOURCE_ANNOTATION], "file");
        let spec = s.pod.spec.as_ref().unwrap();
        assert_eq!(spec.node_name.as_deref(), Some("Worker0"));
        assert_eq!(
            spec.tolerations.as_ref().unwrap()[0].effect.as_deref(),
            Some("NoExecute")
        );
        // The hash follows the content, the node and the file.
        let again = |text: &str, node: &str, p: &str| {
            let (raw, pod) = decode(text).unwrap().remove(0);
            prepare(&raw, pod, node, Origin::File(Path::new(p)))
                .unwrap()
                .hash
        };
        let base = again(WEB, "Worker0", "/etc/kubernetes/manifests/web.yaml");
        assert_eq!(base, s.hash);
        assert_ne!(
            base,
            again(
                &WEB.replace("nginx", "nginx:1.25"),
                "Worker0",
                "/etc/kubernetes/manifests/web.yaml"
            )
        );
        assert_ne!(
            base,
            again(WEB, "worker1", "/etc/kubernetes/manifests/web.yaml")
        );
        assert_ne!(
            base,
            again(WEB, "Worker0", "/etc/kubernetes/manifests/other.yaml")
        );
        let (raw, pod) = decode(WEB).unwrap().remove(0);
        let http = prepare(&raw, pod, "w", Origin::Url("http://x/pods")).unwrap();
        let a = http.pod.metadata.annotations.unwrap();
        assert_eq!(a[SOURCE_ANNOTATION], "http");
        assert!(http.pod.spec.unwrap().tolerations.is_none());
    }

    #[test]
    fn broken_manifests_are_errors_not_panics() {
        let cases = [
            ("", "not a Pod or PodList"),
            ("kind: Pod\nmetadata: [1, 2\n", "decoding"),
            ("apiVersion: v1\nkind: Service\nmetadata: {name: s}\n", "is a Service"),
            ("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: []}\n", "spec.containers: Required value"),
            ("apiVersion: v1\nkind: Pod\nmetadata: {name: Bad_Name}\nspec: {containers: [{name: a, image: b}]}\n", "metadata.name: Invalid value"),
            ("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: a}]}\n", "image: Required value"),
            ("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: 7}\n", "decoding"),
        ];
        for (text, want) in cases {
            let err = decode(text)
                .and_then(|mut v| match v.pop() {
                    Some((raw, pod)) => prepare(&raw, pod, "n", Origin::Url("u")).map(|_| ()),
                    None => Err(ManifestError::Invalid("empty".into())),
                })
                .unwrap_err()
                .to_string();
            assert!(err.contains(want), "{text:?}: {err}");
        }
        let json = r#"{"apiVersion":"v1","kind":"PodList","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"i"}]}}]}"#;
        assert_eq!(decode(json).unwrap().len(), 1);
    }

    #[test]
    fn scan_skips_dot_files_and_directories() {
        let dir = std::env::temp_dir().join(format!("tk-scan-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("web.yaml"), WEB).unwrap();
        std::fs::write(dir.join(".web.yaml.swp"), "junk").unwrap();
        let snap = scan(&dir).unwrap();
        let names: Vec<String> = snap
            .keys()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["web.yaml"]);
        assert_eq!(scan(&dir.join("web.yaml")).unwrap().len(), 1);
        assert!(scan(&dir.join("missing")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
