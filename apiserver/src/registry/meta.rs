//! ObjectMeta as upstream validates it for every kind: apimachinery's ValidateObjectMeta and
//! ValidateObjectMetaUpdate (names and `generateName`, labels, annotation keys and their 256 KiB,
//! owner references, finalizers) with core's rule for finalizer names, and on update the fields
//! clients may not change. `validate` runs inside each kind's strategy; `validate_update` runs
//! for every kind's updates (main resource and status) from `registry::strategy`.

use serde_json::Value;

use super::field::FieldError;
use super::names::{immutable, name_errors, validate_labels, NameRule};
use super::rules::{non_negative_int, qualified_name_errors};

const ANNOTATIONS_MAX: usize = 256 * 1024;
/// Finalizers upstream knows without a domain.
const STANDARD_FINALIZERS: &[&str] = &["kubernetes", "orphan", "foregroundDeletion"];

fn meta_str<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj.get("metadata")
        .and_then(|m| m.get(key))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The strings of a JSON array (others skipped); none when absent.
pub(super) fn strings(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// Annotation keys (qualified names in lower case) and their total size at `field`.
pub fn validate_annotations(field: &str, annotations: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(Value::Object(ann)) = annotations else {
        return errs;
    };
    let mut size = 0;
    for (k, v) in ann {
        for m in qualified_name_errors(&k.to_lowercase()) {
            errs.push(FieldError::invalid(field, k.as_str(), m));
        }
        size += k.len() + v.as_str().map_or(0, str::len);
    }
    if size > ANNOTATIONS_MAX {
        errs.push(FieldError::too_long(field, "", ANNOTATIONS_MAX));
    }
    errs
}

/// Owner references at `metadata.ownerReferences`: apiVersion (with a version), kind, name
/// and uid set, no Event as owner, at most one controller.
fn validate_owner_references(refs: Option<&Value>) -> Vec<FieldError> {
    const PATH: &str = "metadata.ownerReferences";
    let mut errs = Vec::new();
    let list = refs.and_then(Value::as_array);
    let mut controller: Option<String> = None;
    for r in list.into_iter().flatten() {
        let text = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
        let (api_version, kind) = (text("apiVersion"), text("kind"));
        let (group, version) = match api_version.split('/').collect::<Vec<_>>().as_slice() {
            [""] => ("", ""),
            [v] => ("", *v),
            [g, v] => (*g, *v),
            _ => ("", ""),
        };
        if version.is_empty() {
            errs.push(FieldError::invalid(
                format!("{PATH}.apiVersion"),
                api_version,
                "version must not be empty",
            ));
        }
        for (k, v) in [("kind", kind), ("name", text("name")), ("uid", text("uid"))] {
            if v.is_empty() {
                errs.push(FieldError::invalid(
                    format!("{PATH}.{k}"),
                    v,
                    "must not be empty",
                ));
            }
        }
        if group.is_empty() && version == "v1" && kind == "Event" {
            errs.push(FieldError::invalid(
                PATH,
                r.clone(),
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if r.get("controller").and_then(Value::as_bool) == Some(true) {
            let this = format!("{kind}/{}", text("name"));
            match &controller {
                Some(first) => errs.push(FieldError::invalid(
                    PATH,
                    refs.cloned().unwrap_or(Value::Null),
                    format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {this}"
                    ),
                )),
                None => controller = Some(this),
            }
        }
    }
    errs
}

/// Core's rule for finalizer names without a domain, at `metadata.finalizers[i]`.
fn kube_finalizer_names(finalizers: &[&str]) -> Vec<FieldError> {
    finalizers
        .iter()
        .enumerate()
        .filter(|(_, f)| !f.contains('/') && !STANDARD_FINALIZERS.contains(f))
        .map(|(i, f)| {
            FieldError::invalid(
                format!("metadata.finalizers[{i}]"),
                *f,
                "name is neither a standard finalizer name nor is it fully qualified",
            )
        })
        .collect()
}

/// Finalizers: qualified names, not both `orphan` and `foregroundDeletion`, and core's names.
fn validate_finalizers(finalizers: &[&str], list: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for f in finalizers {
        for m in qualified_name_errors(f) {
            errs.push(FieldError::invalid("metadata.finalizers", *f, m));
        }
    }
    if finalizers.contains(&"orphan") && finalizers.contains(&"foregroundDeletion") {
        errs.push(FieldError::invalid(
            "metadata.finalizers",
            list.cloned().unwrap_or(Value::Null),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
    errs.extend(kube_finalizer_names(finalizers));
    errs
}

/// ObjectMeta of an object about to be stored (a create, or the new object of an update):
/// `generateName` and `name` by the kind's `rule`, generation, labels, annotations, owner
/// references and finalizers.
pub fn validate(obj: &Value, rule: NameRule) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let generate = meta_str(obj, "generateName");
    if !generate.is_empty() {
        for m in name_errors(generate, rule, true) {
            errs.push(FieldError::invalid("metadata.generateName", generate, m));
        }
    }
    let name = meta_str(obj, "name");
    if name.is_empty() {
        errs.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        for m in name_errors(name, rule, false) {
            errs.push(FieldError::invalid("metadata.name", name, m));
        }
    }
    errs.extend(non_negative_int(
        "metadata.generation",
        obj.pointer("/metadata/generation"),
    ));
    errs.extend(validate_labels(
        "metadata.labels",
        obj.pointer("/metadata/labels"),
    ));
    errs.extend(validate_annotations(
        "metadata.annotations",
        obj.pointer("/metadata/annotations"),
    ));
    errs.extend(validate_owner_references(
        obj.pointer("/metadata/ownerReferences"),
    ));
    let list = obj.pointer("/metadata/finalizers");
    errs.extend(validate_finalizers(&strings(list), list));
    errs
}

/// The metadata rules of every update (upstream's ValidateObjectMetaUpdate): no finalizer added
/// once deletion started, a resourceVersion, no generation going back, name, namespace, uid,
/// creation and deletion stamps unchanged; labels, annotations, owner references and
/// finalizer names of the new object.
pub fn validate_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let (nm, om) = (
        new.get("metadata").unwrap_or(&Value::Null),
        old.get("metadata").unwrap_or(&Value::Null),
    );
    let (new_f, old_f) = (strings(nm.get("finalizers")), strings(om.get("finalizers")));
    if om.get("deletionTimestamp").is_some_and(|t| !t.is_null()) {
        let mut added: Vec<&str> = new_f
            .iter()
            .filter(|f| !old_f.contains(f))
            .copied()
            .collect();
        added.sort_unstable();
        added.dedup();
        if !added.is_empty() {
            let quoted: Vec<String> = added.iter().map(|f| format!("{f:?}")).collect();
            errs.push(FieldError::forbidden(
                "metadata.finalizers",
                format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                    quoted.join(", ")
                ),
            ));
        }
    }
    if meta_str(new, "resourceVersion").is_empty() {
        errs.push(FieldError::invalid(
            "metadata.resourceVersion",
            "",
            "must be specified for an update",
        ));
    }
    let generation = |m: &Value| m.get("generation").and_then(Value::as_i64).unwrap_or(0);
    if generation(nm) < generation(om) {
        errs.push(FieldError::invalid(
            "metadata.generation",
            generation(nm),
            "must not be decremented",
        ));
    }
    for k in [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        let present = |m: &Value| m.get(k).filter(|v| !v.is_null() && *v != "").cloned();
        let (n, o) = (present(nm), present(om));
        errs.extend(immutable(&format!("metadata.{k}"), n.as_ref(), o.as_ref()));
    }
    errs.extend(validate_labels("metadata.labels", nm.get("labels")));
    errs.extend(validate_annotations(
        "metadata.annotations",
        nm.get("annotations"),
    ));
    errs.extend(validate_owner_references(nm.get("ownerReferences")));
    errs.extend(kube_finalizer_names(&new_f));
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shown(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn new_objects_as_upstream() {
        let ok = json!({"metadata": {"name": "x", "generateName": "x-",
            "labels": {"app": "web"}, "annotations": {"Example.com/Note": "hi"},
            "finalizers": ["kubernetes", "example.com/hold"],
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u", "controller": true}]}});
        assert!(validate(&ok, NameRule::Subdomain).is_empty());
        let cases = [
            (json!({"name": "x", "generateName": "Bad_"}), vec!["metadata.generateName: Invalid value: \"Bad_\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]),
            (json!({}), vec!["metadata.name: Required value: name or generateName is required"]),
            (json!({"name": "x", "finalizers": ["hold"]}), vec!["metadata.finalizers[0]: Invalid value: \"hold\": name is neither a standard finalizer name nor is it fully qualified"]),
            (json!({"name": "x", "finalizers": ["orphan", "foregroundDeletion"]}), vec!["metadata.finalizers: Invalid value: [\"orphan\",\"foregroundDeletion\"]: finalizer orphan and foregroundDeletion cannot be both set"]),
            (json!({"name": "x", "ownerReferences": [{"apiVersion": "", "kind": "", "name": "", "uid": ""}]}), vec![
                "metadata.ownerReferences.apiVersion: Invalid value: \"\": version must not be empty",
                "metadata.ownerReferences.kind: Invalid value: \"\": must not be empty",
                "metadata.ownerReferences.name: Invalid value: \"\": must not be empty",
                "metadata.ownerReferences.uid: Invalid value: \"\": must not be empty",
            ]),
            (json!({"name": "x", "annotations": {"a b": "c"}}), vec!["metadata.annotations: Invalid value: \"a b\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"]),
            (json!({"name": "x", "annotations": {"k": "v".repeat(ANNOTATIONS_MAX)}}), vec!["metadata.annotations: Too long: may not be more than 262144 bytes"]),
        ];
        for (meta, want) in cases {
            assert_eq!(
                shown(&validate(&json!({"metadata": meta}), NameRule::Subdomain)),
                want,
                "{meta}"
            );
        }
        let two = json!({"metadata": {"name": "x", "ownerReferences": [
            {"apiVersion": "v1", "kind": "Event", "name": "a", "uid": "1", "controller": true},
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "b", "uid": "2", "controller": true}]}});
        let errs = shown(&validate(&two, NameRule::Subdomain));
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(errs[0].ends_with("/v1, Kind=Event is disallowed from being an owner"));
        assert!(errs[1].ends_with("Only one reference can have Controller set to true. Found \"true\" in references for Event/a and ReplicaSet/b"));
    }

    #[test]
    fn updates_keep_what_clients_may_not_change() {
        let old = json!({"metadata": {"name": "x", "namespace": "default", "uid": "u1", "resourceVersion": "5",
            "creationTimestamp": "2024-01-01T00:00:00Z", "generation": 2}});
        let mut same = old.clone();
        same["metadata"]["labels"] = json!({"a": "b"});
        assert!(validate_update(&same, &old).is_empty());
        let mut changed = old.clone();
        changed["metadata"]["uid"] = "u2".into();
        changed["metadata"]["generation"] = 1.into();
        changed["metadata"]["deletionTimestamp"] = "2024-01-02T00:00:00Z".into();
        changed["metadata"]["resourceVersion"] = "".into();
        assert_eq!(
            shown(&validate_update(&changed, &old)),
            [
                "metadata.resourceVersion: Invalid value: \"\": must be specified for an update",
                "metadata.generation: Invalid value: 1: must not be decremented",
                "metadata.uid: Invalid value: \"u2\": field is immutable",
                "metadata.deletionTimestamp: Invalid value: \"2024-01-02T00:00:00Z\": field is immutable",
            ]
        );
        let mut deleting = old.clone();
        deleting["metadata"]["deletionTimestamp"] = "2024-01-02T00:00:00Z".into();
        deleting["metadata"]["finalizers"] = json!(["example.com/a"]);
        let mut more = deleting.clone();
        more["metadata"]["finalizers"] = json!(["example.com/a", "example.com/c", "example.com/b"]);
        assert_eq!(
            shown(&validate_update(&more, &deleting)),
            ["metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"example.com/b\", \"example.com/c\"}"]
        );
        let mut fewer = deleting.clone();
        fewer["metadata"]["finalizers"] = json!([]);
        assert!(validate_update(&fewer, &deleting).is_empty());
    }
}
