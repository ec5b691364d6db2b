//! A pod's volumes, as upstream's ValidateVolumes: DNS-label names, unique, exactly one source,
//! and the sources' own rules (host paths without `..`, secret, ConfigMap and downward API
//! items with local paths and file modes, projected sources, claims, CSI drivers). Only volumes
//! without errors can be mounted.

use serde_json::Value;

use super::super::field::FieldError;
use super::super::names::{label_errors, subdomain_errors};
use super::super::rules::non_negative_quantity;
use super::container::{object_field_selector, resource_field_selector};
use super::{items, str_at};

/// Volume sources in the order upstream checks them, with the name its "more than 1" error
/// uses (upstream misspells one).
const SOURCES: &[(&str, &str)] = &[
    ("emptyDir", "emptyDir"),
    ("hostPath", "hostPath"),
    ("gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("secret", "secret"),
    ("nfs", "nfs"),
    ("iscsi", "iscsi"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("persistentVolumeClaim", "persistentVolumeClaim"),
    ("rbd", "rbd"),
    ("cinder", "cinder"),
    ("cephfs", "cephFS"),
    ("quobyte", "quobyte"),
    ("downwardAPI", "downwarAPI"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("configMap", "configMap"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("storageos", "storageos"),
    ("projected", "projected"),
    ("scaleIO", "scaleIO"),
    ("csi", "csi"),
    ("ephemeral", "ephemeral"),
    ("image", "image"),
];
const HOST_PATH_TYPES: &[&str] = &[
    "",
    "BlockDevice",
    "CharDevice",
    "Directory",
    "DirectoryOrCreate",
    "File",
    "FileOrCreate",
    "Socket",
];
const VOLUME_FIELD_PATHS: &[&str] = &[
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
];
const FILE_MODE_MSG: &str = "must be a number between 0 and 0777 (octal), both inclusive";

/// The valid volumes of a pod, by name, with their source.
#[derive(Default)]
pub struct Volumes(Vec<(String, &'static str)>);

impl Volumes {
    pub fn has(&self, name: &str) -> bool {
        self.0.iter().any(|(n, _)| n == name)
    }

    pub fn is_image(&self, name: &str) -> bool {
        self.0.iter().any(|(n, s)| n == name && *s == "image")
    }
}

/// No `..` element in `target` (upstream's validatePathNoBacksteps).
pub fn no_backsteps(target: &str, field: &str) -> Option<FieldError> {
    target
        .split('/')
        .any(|part| part == "..")
        .then(|| FieldError::invalid(field, target, "must not contain '..'"))
}

/// A relative path without `..` elements (sub paths, git directories, profiles).
pub fn local_descending_path(target: &str, field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if target.starts_with('/') {
        errs.push(FieldError::invalid(
            field,
            target,
            "must be a relative path",
        ));
    }
    errs.extend(no_backsteps(target, field));
    errs
}

/// A file a volume projects: relative, no `..` element, not starting with `..`.
fn local_non_reserved_path(target: &str, field: &str) -> Vec<FieldError> {
    let mut errs = local_descending_path(target, field);
    if target.starts_with("..") && !target.starts_with("../") {
        errs.push(FieldError::invalid(
            field,
            target,
            "must not start with '..'",
        ));
    }
    errs
}

fn file_mode(v: Option<&Value>, field: &str) -> Option<FieldError> {
    let m = v.and_then(Value::as_i64)?;
    (!(0..=0o777).contains(&m)).then(|| FieldError::invalid(field, m, FILE_MODE_MSG))
}

fn key_to_paths(list: Option<&Value>, path: &str, paths: &mut Vec<String>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, kp) in items(list) {
        let idx = format!("{path}[{i}]");
        if str_at(kp, "key").is_empty() {
            errs.push(FieldError::required(format!("{idx}.key"), ""));
        }
        let p = str_at(kp, "path");
        if p.is_empty() {
            errs.push(FieldError::required(format!("{idx}.path"), ""));
        }
        errs.extend(local_non_reserved_path(p, &format!("{idx}.path")));
        errs.extend(file_mode(kp.get("mode"), &format!("{idx}.mode")));
        paths.push(p.to_string());
    }
    errs
}

fn downward_files(list: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (_, f) in items(list) {
        let p = str_at(f, "path");
        if p.is_empty() {
            errs.push(FieldError::required(format!("{path}.path"), ""));
        }
        errs.extend(local_non_reserved_path(p, &format!("{path}.path")));
        let field_ref = f.get("fieldRef").filter(|v| !v.is_null());
        let resource_ref = f.get("resourceFieldRef").filter(|v| !v.is_null());
        match (field_ref, resource_ref) {
            (Some(r), other) => {
                errs.extend(object_field_selector(
                    r,
                    VOLUME_FIELD_PATHS,
                    &format!("{path}.fieldRef"),
                ));
                if other.is_some() {
                    errs.push(FieldError::invalid(
                        path,
                        "resource",
                        "fieldRef and resourceFieldRef can not be specified simultaneously",
                    ));
                }
            }
            (None, Some(r)) => errs.extend(resource_field_selector(
                r,
                &format!("{path}.resourceFieldRef"),
                true,
            )),
            (None, None) => errs.push(FieldError::required(
                path,
                "one of fieldRef and resourceFieldRef is required",
            )),
        }
        errs.extend(file_mode(f.get("mode"), &format!("{path}.mode")));
    }
    errs
}

fn projected(p: &Value, path: &str) -> Vec<FieldError> {
    let mut errs: Vec<FieldError> = file_mode(p.get("defaultMode"), &format!("{path}.defaultMode"))
        .into_iter()
        .collect();
    let mut all_paths: Vec<String> = Vec::new();
    for (i, source) in items(p.get("sources")) {
        let src = format!("{path}.sources[{i}]");
        let mut count = 0;
        for key in ["secret", "configMap"] {
            let Some(s) = source.get(key).filter(|v| !v.is_null()) else {
                continue;
            };
            count += 1;
            if str_at(s, "name").is_empty() {
                errs.push(FieldError::required(format!("{src}.{key}.name"), ""));
            }
            let mut paths = Vec::new();
            errs.extend(key_to_paths(
                s.get("items"),
                &format!("{src}.{key}.items"),
                &mut paths,
            ));
            for p in paths.into_iter().filter(|p| !p.is_empty()) {
                if all_paths.contains(&p) {
                    errs.push(FieldError::invalid(
                        path,
                        str_at(s, "name"),
                        "conflicting duplicate paths",
                    ));
                }
                all_paths.push(p);
            }
        }
        if let Some(d) = source.get("downwardAPI").filter(|v| !v.is_null()) {
            count += 1;
            errs.extend(downward_files(
                d.get("items"),
                &format!("{src}.downwardAPI"),
            ));
            for (_, f) in items(d.get("items")) {
                let p = str_at(f, "path").to_string();
                if p.is_empty() {
                    continue;
                }
                if all_paths.contains(&p) {
                    errs.push(FieldError::invalid(
                        path,
                        p.as_str(),
                        "conflicting duplicate paths",
                    ));
                }
                all_paths.push(p);
            }
        }
        if let Some(t) = source.get("serviceAccountToken").filter(|v| !v.is_null()) {
            count += 1;
            let at = format!("{src}.serviceAccountToken.expirationSeconds");
            let secs = t
                .get("expirationSeconds")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            if secs < 600 {
                errs.push(FieldError::invalid(
                    &at,
                    secs,
                    "may not specify a duration less than 10 minutes",
                ));
            }
            if secs > 1 << 32 {
                errs.push(FieldError::invalid(
                    &at,
                    secs,
                    "may not specify a duration larger than 2^32 seconds",
                ));
            }
            let p = str_at(t, "path");
            if p.is_empty() {
                errs.push(FieldError::required(format!("{path}.path"), ""));
            } else {
                errs.extend(local_non_reserved_path(p, &format!("{path}.path")));
            }
        }
        if source
            .get("clusterTrustBundle")
            .is_some_and(|v| !v.is_null())
        {
            count += 1;
        }
        if count > 1 {
            errs.push(FieldError::forbidden(
                src,
                "may not specify more than 1 volume type per source",
            ));
        }
    }
    errs
}

/// The rules of one source at `path` (`spec.volumes[0].<source>`).
/// The rules of one volume source `key` at `path` (also a PersistentVolume's source).
pub fn source_rules(key: &str, s: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let required = |field: &str, errs: &mut Vec<FieldError>| {
        if str_at(s, field).is_empty() {
            errs.push(FieldError::required(format!("{path}.{field}"), ""));
        }
    };
    match key {
        "emptyDir" => {
            if let Some(limit) = s.get("sizeLimit").filter(|v| !v.is_null()) {
                if non_negative_quantity("", limit).is_some() {
                    errs.push(FieldError::forbidden(
                        format!("{path}.sizeLimit"),
                        "SizeLimit field must be a valid resource quantity",
                    ));
                }
            }
        }
        "hostPath" => {
            let p = str_at(s, "path");
            if p.is_empty() {
                errs.push(FieldError::required(format!("{path}.path"), ""));
                return errs;
            }
            errs.extend(no_backsteps(p, &format!("{path}.path")));
            if let Some(t) = s.get("type").and_then(Value::as_str) {
                if !HOST_PATH_TYPES.contains(&t) {
                    errs.push(FieldError::not_supported(
                        format!("{path}.type"),
                        t,
                        HOST_PATH_TYPES,
                    ));
                }
            }
        }
        "gitRepo" => {
            required("repository", &mut errs);
            errs.extend(local_descending_path(
                str_at(s, "directory"),
                &format!("{path}.directory"),
            ));
        }
        "secret" | "configMap" => {
            required(
                if key == "secret" {
                    "secretName"
                } else {
                    "name"
                },
                &mut errs,
            );
            errs.extend(file_mode(
                s.get("defaultMode"),
                &format!("{path}.defaultMode"),
            ));
            errs.extend(key_to_paths(
                s.get("items"),
                &format!("{path}.items"),
                &mut Vec::new(),
            ));
        }
        "persistentVolumeClaim" => required("claimName", &mut errs),
        "nfs" => {
            required("server", &mut errs);
            required("path", &mut errs);
            let p = str_at(s, "path");
            if !p.starts_with('/') {
                errs.push(FieldError::invalid(
                    format!("{path}.path"),
                    p,
                    "must be an absolute path",
                ));
            }
        }
        "downwardAPI" => {
            errs.extend(file_mode(
                s.get("defaultMode"),
                &format!("{path}.defaultMode"),
            ));
            errs.extend(downward_files(s.get("items"), path));
        }
        "projected" => errs.extend(projected(s, path)),
        "csi" => {
            let driver = str_at(s, "driver");
            let field = format!("{path}.driver");
            if driver.is_empty() {
                errs.push(FieldError::required(&field, ""));
            }
            if driver.len() > 63 {
                errs.push(FieldError::too_long(&field, "", 63));
            }
            for m in subdomain_errors(&driver.to_lowercase()) {
                errs.push(FieldError::invalid(&field, driver, m));
            }
        }
        "ephemeral" if s.get("volumeClaimTemplate").is_none_or(Value::is_null) => {
            errs.push(FieldError::required(
                format!("{path}.volumeClaimTemplate"),
                "",
            ));
        }
        _ => {}
    }
    errs
}

fn source(v: &Value, idx: &str, is_pod: bool) -> (Option<&'static str>, Vec<FieldError>) {
    let mut errs = Vec::new();
    let mut found = None;
    for &(key, shown) in SOURCES {
        let Some(s) = v.get(key).filter(|s| !s.is_null()) else {
            continue;
        };
        if found.is_some() {
            errs.push(FieldError::forbidden(
                format!("{idx}.{shown}"),
                "may not specify more than 1 volume type",
            ));
            continue;
        }
        found = Some(key);
        errs.extend(source_rules(key, s, &format!("{idx}.{key}")));
        if key == "image" && is_pod && str_at(s, "reference").is_empty() {
            errs.push(FieldError::required(format!("{idx}.image.reference"), ""));
        }
    }
    if found.is_none() {
        errs.push(FieldError::required(idx, "must specify a volume type"));
    }
    (found, errs)
}

/// The volumes at `path` (`spec.volumes`): their errors and the ones containers may mount.
pub fn validate(list: Option<&Value>, path: &str, is_pod: bool) -> (Volumes, Vec<FieldError>) {
    let mut valid = Volumes::default();
    let mut seen: Vec<&str> = Vec::new();
    let mut errs = Vec::new();
    for (i, v) in items(list) {
        let idx = format!("{path}[{i}]");
        let name = str_at(v, "name");
        let (kind, mut el) = source(v, &idx, is_pod);
        if name.is_empty() {
            el.push(FieldError::required(format!("{idx}.name"), ""));
        } else {
            for m in label_errors(name) {
                el.push(FieldError::invalid(format!("{idx}.name"), name, m));
            }
        }
        if seen.contains(&name) {
            el.push(FieldError::duplicate(format!("{idx}.name"), name));
        }
        match (el.is_empty(), kind) {
            (true, Some(kind)) => {
                seen.push(name);
                valid.0.push((name.to_string(), kind));
            }
            _ => errs.extend(el),
        }
    }
    (valid, errs)
}
