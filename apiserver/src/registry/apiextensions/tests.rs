//! The strategy's spec rules against the upstream docs' CronTab CRD and its variations, with
//! the errors rendered as the API server returns them.

use serde_json::{json, Value};

use super::CrdStrategy;
use crate::registry::Strategy;

/// The CronTab CRD of the upstream docs ("Extend the Kubernetes API with
/// CustomResourceDefinitions"), with printer columns and the status and scale subresources
/// of its later sections.
pub(super) fn crontab() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {
            "group": "stable.example.com",
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "properties": {
                            "cronSpec": {"type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$"},
                            "image": {"type": "string"},
                            "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1}
                        }},
                        "status": {"type": "object", "properties": {
                            "replicas": {"type": "integer"},
                            "labelSelector": {"type": "string"}
                        }}
                    }
                }},
                "subresources": {"status": {}, "scale": {
                    "specReplicasPath": ".spec.replicas",
                    "statusReplicasPath": ".status.replicas",
                    "labelSelectorPath": ".status.labelSelector"
                }},
                "additionalPrinterColumns": [
                    {"name": "Spec", "type": "string", "description": "The cron spec defining the interval a CronJob is run", "jsonPath": ".spec.cronSpec"},
                    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
                ]
            }],
            "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "shortNames": ["ct"]}
        }
    })
}

/// The object as the server stores it on create: defaulted and prepared.
pub(super) fn created(mut obj: Value) -> Value {
    CrdStrategy.default(&mut obj);
    CrdStrategy.prepare_for_create(&mut obj);
    obj
}

pub(super) fn create_errors(obj: Value) -> Vec<String> {
    let obj = created(obj);
    CrdStrategy
        .validate_create(&obj)
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// `crontab()` changed by `edit`.
pub(super) fn crontab_with(edit: impl FnOnce(&mut Value)) -> Value {
    let mut c = crontab();
    edit(&mut c);
    c
}

const DNS1035: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

#[test]
fn the_docs_crontab_is_valid_and_defaulted() {
    assert_eq!(create_errors(crontab()), Vec::<String>::new());
    // The minimal first example too (no subresources, no columns, singular defaulted).
    let minimal = crontab_with(|c| {
        let v = &mut c["spec"]["versions"][0];
        v.as_object_mut().unwrap().remove("subresources");
        v.as_object_mut()
            .unwrap()
            .remove("additionalPrinterColumns");
        c["spec"]["names"] = json!({"plural": "crontabs", "kind": "CronTab"});
    });
    let stored = created(minimal.clone());
    assert_eq!(
        stored["spec"]["names"],
        json!({"plural": "crontabs", "kind": "CronTab", "singular": "crontab", "listKind": "CronTabList"})
    );
    assert_eq!(stored["spec"]["conversion"], json!({"strategy": "None"}));
    assert_eq!(
        stored["status"],
        json!({"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v1"]})
    );
    assert_eq!(stored["metadata"]["generation"], 1);
    assert_eq!(create_errors(minimal), Vec::<String>::new());
}

#[test]
fn metadata_group_scope_and_approval_as_upstream() {
    type Edit = fn(&mut Value);
    let cases: Vec<(Edit, Vec<&str>)> = vec![
        (
            |c| c["metadata"]["name"] = json!("crontab.stable.example.com"),
            vec!["metadata.name: Invalid value: \"crontab.stable.example.com\": must be spec.names.plural+\".\"+spec.group"],
        ),
        (
            |c| {
                c["metadata"]["name"] = json!("crontabs.example");
                c["spec"]["group"] = json!("example");
            },
            vec!["spec.group: Invalid value: \"example\": should be a domain with at least one dot"],
        ),
        (
            |c| {
                c["metadata"]["name"] = json!("crontabs.");
                c["spec"]["group"] = json!("");
            },
            vec![
                "metadata.name: Invalid value: \"crontabs.\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "spec.group: Required value",
            ],
        ),
        (|c| c["spec"]["scope"] = json!(""), vec!["spec.scope: Required value"]),
        (
            |c| c["spec"]["scope"] = json!("Global"),
            vec!["spec.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\""],
        ),
        (
            |c| {
                c["metadata"]["name"] = json!("crontabs.stable.k8s.io");
                c["spec"]["group"] = json!("stable.k8s.io");
            },
            vec!["metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111"],
        ),
        (
            |c| {
                c["metadata"]["name"] = json!("crontabs.kubernetes.io");
                c["spec"]["group"] = json!("kubernetes.io");
                c["metadata"]["annotations"] = json!({"api-approved.kubernetes.io": "soon"});
            },
            vec!["metadata.annotations[api-approved.kubernetes.io]: Invalid value: \"soon\": protected groups must have approval annotation \"api-approved.kubernetes.io\" with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"],
        ),
        (
            |c| {
                c["metadata"]["name"] = json!("crontabs.x.k8s.io");
                c["spec"]["group"] = json!("x.k8s.io");
                c["metadata"]["annotations"] = json!({"api-approved.kubernetes.io": "https://github.com/kubernetes/enhancements/pull/1111"});
            },
            vec![],
        ),
        (
            |c| {
                c["metadata"]["name"] = json!("crontabs.x.k8s.io");
                c["spec"]["group"] = json!("x.k8s.io");
                c["metadata"]["annotations"] = json!({"api-approved.kubernetes.io": "unapproved, experimental-only"});
            },
            vec![],
        ),
        (
            |c| c["spec"]["preserveUnknownFields"] = json!(true),
            vec![
                "spec.preserveUnknownFields: Invalid value: true: must be false in order to use defaults in the schema",
                "spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-preserve-unknown-fields to true in spec.versions[*].schema instead",
            ],
        ),
    ];
    for (i, (edit, want)) in cases.into_iter().enumerate() {
        assert_eq!(create_errors(crontab_with(edit)), want, "case {i}");
    }
}

#[test]
fn versions_and_names_as_upstream() {
    type Edit = fn(&mut Value);
    let cases: Vec<(Edit, Vec<String>)> = vec![
        (
            |c| c["spec"]["versions"][0]["storage"] = json!(false),
            vec![
                "spec.versions: Invalid value: [{\"name\":\"v1\",\"served\":true,\"storage\":false}]: must have exactly one version marked as storage version".into(),
                "status.storedVersions: Invalid value: []: must have at least one stored version".into(),
            ],
        ),
        (
            |c| {
                let mut v = c["spec"]["versions"][0].clone();
                v["storage"] = json!(false);
                c["spec"]["versions"].as_array_mut().unwrap().push(v);
            },
            vec!["spec.versions: Invalid value: [{\"name\":\"v1\",\"served\":true,\"storage\":true},{\"name\":\"v1\",\"served\":true,\"storage\":false}]: must contain unique version names".into()],
        ),
        (
            |c| c["spec"]["versions"][0]["name"] = json!("V1"),
            vec![
                format!("spec.versions[0].name: Invalid value: \"V1\": {DNS1035}"),
                format!("spec.version: Invalid value: \"V1\": {DNS1035}"),
            ],
        ),
        (
            |c| {
                c["spec"]["names"]["listKind"] = json!("CronTab");
                c["spec"]["names"]["shortNames"] = json!(["ct", "c_t"]);
                c["spec"]["names"]["categories"] = json!(["all", "Mine"]);
            },
            vec![
                format!("spec.names.shortNames[1]: Invalid value: \"c_t\": {DNS1035}"),
                "spec.names.listKind: Invalid value: \"CronTab\": kind and listKind may not be the same".into(),
                format!("spec.names.categories[1]: Invalid value: \"Mine\": {DNS1035}"),
            ],
        ),
        (
            |c| {
                c["metadata"]["name"] = json!(".stable.example.com");
                c["spec"]["names"] = json!({"plural": "", "kind": "Cron_Tab"});
            },
            vec![
                "spec.names.plural: Required value".into(),
                format!("spec.names.singular: Invalid value: \"cron_tab\": {DNS1035}"),
                format!("spec.names.kind: Invalid value: \"Cron_Tab\": may have mixed case, but should otherwise match: {DNS1035}"),
                format!("spec.names.listKind: Invalid value: \"Cron_TabList\": may have mixed case, but should otherwise match: {DNS1035}"),
            ],
        ),
        (
            |c| {
                c["spec"]["versions"][0]["deprecationWarning"] = json!("old");
            },
            vec!["spec.versions[0].deprecationWarning: Invalid value: \"old\": can only be set for deprecated versions".into()],
        ),
    ];
    for (i, (edit, want)) in cases.into_iter().enumerate() {
        let mut got = create_errors(crontab_with(edit));
        // The name rule of case 4 also flags the empty plural; keep the spec's errors.
        got.retain(|e| !e.starts_with("metadata.name"));
        assert_eq!(got, want, "case {i}");
    }
}

#[test]
fn schemas_are_required_in_every_version() {
    let errs = create_errors(crontab_with(|c| {
        let mut v2 = c["spec"]["versions"][0].clone();
        v2["name"] = json!("v2");
        v2["storage"] = json!(false);
        v2.as_object_mut().unwrap().remove("schema");
        c["spec"]["versions"].as_array_mut().unwrap().push(v2);
    }));
    assert_eq!(
        errs,
        ["spec.versions[1].schema.openAPIV3Schema: Required value: schemas are required"]
    );
}

#[test]
fn subresources_columns_and_selectable_fields_as_upstream() {
    type Edit = fn(&mut Value);
    let cases: Vec<(Edit, Vec<&str>)> = vec![
        (
            |c| {
                c["spec"]["versions"][0]["subresources"]["scale"] = json!({
                    "specReplicasPath": "spec.replicas", "statusReplicasPath": ".spec.replicas", "labelSelectorPath": ".selector"});
            },
            vec![
                "spec.subresources.scale.specReplicasPath: Invalid value: \"spec.replicas\": must be a simple json path starting with .",
                "spec.subresources.scale.statusReplicasPath: Invalid value: \".spec.replicas\": should be a json path under .status",
                "spec.subresources.scale.labelSelectorPath: Invalid value: \".selector\": should be a json path under either .spec or .status",
            ],
        ),
        (
            |c| c["spec"]["versions"][0]["subresources"]["scale"] = json!({}),
            vec![
                "spec.subresources.scale.specReplicasPath: Required value",
                "spec.subresources.scale.statusReplicasPath: Required value",
            ],
        ),
        (
            |c| {
                c["spec"]["versions"][0]["additionalPrinterColumns"] = json!([
                    {"name": "", "type": "text", "format": "ip", "jsonPath": "spec.x"},
                    {"name": "Age", "type": "", "jsonPath": ""}
                ]);
            },
            vec![
                "spec.additionalPrinterColumns[0].name: Required value",
                "spec.additionalPrinterColumns[0].type: Invalid value: \"text\": must be one of boolean,date,integer,number,string",
                "spec.additionalPrinterColumns[0].format: Invalid value: \"ip\": must be one of byte,date,date-time,double,float,int32,int64,password",
                "spec.additionalPrinterColumns[0].JSONPath: Invalid value: \"spec.x\": must be a simple json path starting with .",
                "spec.additionalPrinterColumns[1].type: Required value: must be one of boolean,date,integer,number,string",
                "spec.additionalPrinterColumns[1].JSONPath: Required value",
            ],
        ),
        (
            |c| {
                c["spec"]["versions"][0]["selectableFields"] = json!([
                    {"jsonPath": ".spec.image"}, {"jsonPath": ".spec.replicas"},
                    {"jsonPath": ".spec"}, {"jsonPath": ".spec.nope"}, {"jsonPath": ".spec['image']"}, {"jsonPath": ""}
                ]);
            },
            vec![
                "spec.selectableFields[2].jsonPath: Invalid value: \".spec\": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed",
                "spec.selectableFields[3].jsonPath: Invalid value: \".spec.nope\": is an invalid path: does not refer to a valid field",
                "spec.selectableFields[4].jsonPath: Duplicate value: \".spec['image']\"",
                "spec.selectableFields[5].jsonPath: Required value",
            ],
        ),
        (
            |c| {
                let many: Vec<Value> = (0..9).map(|_| json!({"jsonPath": ".spec.image"})).collect();
                c["spec"]["versions"][0]["selectableFields"] = json!(many);
            },
            vec!["spec.selectableFields: Too many: 9: must have at most 8 items"],
        ),
    ];
    for (i, (edit, want)) in cases.into_iter().enumerate() {
        let mut got = create_errors(crontab_with(edit));
        if i == 4 {
            got.truncate(1);
        }
        assert_eq!(got, want, "case {i}");
    }
}

#[test]
fn per_version_parts_keep_their_version_paths() {
    let errs = create_errors(crontab_with(|c| {
        let mut v2 = c["spec"]["versions"][0].clone();
        v2["name"] = json!("v2");
        v2["storage"] = json!(false);
        v2["additionalPrinterColumns"] = json!([{"name": "X", "type": "string", "jsonPath": "x"}]);
        v2["subresources"] = json!({"status": {}});
        c["spec"]["versions"].as_array_mut().unwrap().push(v2);
    }));
    assert_eq!(
        errs,
        ["spec.versions[1].additionalPrinterColumns[0].JSONPath: Invalid value: \"x\": must be a simple json path starting with ."]
    );
}

#[test]
fn conversion_as_upstream() {
    type Edit = fn(&mut Value);
    let cases: Vec<(Edit, Vec<&str>)> = vec![
        (|c| c["spec"]["conversion"] = json!({"strategy": "None"}), vec![]),
        (
            |c| c["spec"]["conversion"] = json!({"strategy": "Magic"}),
            vec!["spec.conversion.strategy: Unsupported value: \"Magic\": supported values: \"None\", \"Webhook\""],
        ),
        (
            |c| c["spec"]["conversion"] = json!({"strategy": "Webhook"}),
            vec![
                "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
                "spec.conversion.conversionReviewVersions: Required value",
            ],
        ),
        (
            |c| {
                c["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
                    "clientConfig": {"url": "http://u:p@example.com/convert?x=1#top"},
                    "conversionReviewVersions": ["v2", "v2"]}});
            },
            vec![
                "spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
                "spec.conversion.webhookClientConfig.url: Invalid value: \"u:p\": user information is not permitted in the URL",
                "spec.conversion.webhookClientConfig.url: Invalid value: \"top\": fragments are not permitted in the URL",
                "spec.conversion.webhookClientConfig.url: Invalid value: \"x=1\": query parameters are not permitted in the URL",
                "spec.conversion.conversionReviewVersions[1]: Invalid value: \"v2\": duplicate version",
                "spec.conversion.conversionReviewVersions: Invalid value: [\"v2\",\"v2\"]: must include at least one of v1, v1beta1",
            ],
        ),
        (
            |c| {
                c["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
                    "clientConfig": {"service": {"name": "conv", "path": "/Convert"}},
                    "conversionReviewVersions": ["v1"]}});
            },
            vec![
                "spec.conversion.webhookClientConfig.service.name: Required value",
                "spec.conversion.webhookClientConfig.service.path: Invalid value: \"/Convert\": segment[0]: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            ],
        ),
        (
            |c| {
                c["spec"]["conversion"] = json!({"strategy": "None", "webhook": {
                    "clientConfig": {"url": "https://example.com"}, "conversionReviewVersions": ["v1"]}});
            },
            vec![
                "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook",
                "spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook",
            ],
        ),
    ];
    for (i, (edit, want)) in cases.into_iter().enumerate() {
        assert_eq!(create_errors(crontab_with(edit)), want, "case {i}");
    }
    let defaulted = created(crontab_with(|c| {
        c["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"service": {"name": "conv", "namespace": "ns"}}, "conversionReviewVersions": ["v1"]}});
    }));
    assert_eq!(
        defaulted.pointer("/spec/conversion/webhook/clientConfig/service/port"),
        Some(&json!(443))
    );
}

/// The stored CronTab, established, as an update's old object.
fn stored_established() -> Value {
    let mut old = created(crontab());
    old["metadata"]["resourceVersion"] = json!("5");
    old["status"]["conditions"] = json!([{"type": "Established", "status": "True"}]);
    old
}

fn update_errors(new: &Value, old: &Value) -> Vec<String> {
    let mut new = new.clone();
    super::super::keep_status(&mut new, old);
    CrdStrategy.default(&mut new);
    CrdStrategy.prepare_for_update(&mut new, old);
    crate::registry::strategy(info())
        .validate_update(&new, old)
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// The served resource, as the registry lists it.
pub(super) fn info() -> &'static tinykube_proto::registry::ResourceInfo {
    tinykube_proto::registry::by_kind("apiextensions.k8s.io", "CustomResourceDefinition")
        .expect("the CRD resource is served")
}

#[test]
fn updates_keep_what_upstream_keeps() {
    let old = stored_established();
    assert_eq!(update_errors(&old, &old), Vec::<String>::new());
    let mut new = old.clone();
    new["spec"]["scope"] = json!("Cluster");
    new["spec"]["names"]["kind"] = json!("CronJob");
    new["spec"]["names"]["plural"] = json!("crontabz");
    new["spec"]["group"] = json!("stable.example.org");
    assert_eq!(
        update_errors(&new, &old),
        [
            "spec.scope: Invalid value: \"Cluster\": field is immutable",
            "spec.names.kind: Invalid value: \"CronJob\": field is immutable",
            "spec.group: Invalid value: \"stable.example.org\": field is immutable",
            "spec.names.plural: Invalid value: \"crontabz\": field is immutable",
        ]
    );
    // Before it is established, scope and kind may still change.
    let mut fresh = old.clone();
    fresh["status"]["conditions"] = json!([]);
    let mut rescoped = fresh.clone();
    rescoped["spec"]["scope"] = json!("Cluster");
    assert_eq!(update_errors(&rescoped, &fresh), Vec::<String>::new());

    // A new storage version is recorded; a stored version may not leave the spec.
    let mut moved = old.clone();
    moved["spec"]["versions"][0]["name"] = json!("v2");
    let mut prepared = moved.clone();
    CrdStrategy.prepare_for_update(&mut prepared, &old);
    assert_eq!(prepared["status"]["storedVersions"], json!(["v1", "v2"]));
    assert_eq!(
        update_errors(&moved, &old),
        ["status.storedVersions[0]: Invalid value: \"v1\": must appear in spec.versions"]
    );
}

#[test]
fn status_updates_check_the_accepted_names() {
    let old = stored_established();
    let mut new = old.clone();
    new["status"]["acceptedNames"] =
        json!({"plural": "Crontabs", "kind": "CronTab", "listKind": "CronTab"});
    let got: Vec<String> = crate::registry::strategy(info())
        .validate_status_update(&new, &old)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        got,
        [
            format!("status.acceptedNames.plural: Invalid value: \"Crontabs\": {DNS1035}"),
            "status.acceptedNames.listKind: Invalid value: \"CronTab\": kind and listKind may not be the same".to_string(),
        ]
    );
}

#[test]
fn updates_ratchet_rules_the_stored_crd_already_breaks() {
    // A CRD stored before a rule existed: an unknown type and a non-atomic set.
    let mut old = stored_established();
    let spec_schema = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties";
    let props = old.pointer_mut(spec_schema).unwrap();
    props["any"] = json!({"type": "any"});
    props["set"] =
        json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object"}});
    let mut new = old.clone();
    new["spec"]["names"]["shortNames"] = json!(["ct", "cron"]);
    assert_eq!(update_errors(&new, &old), Vec::<String>::new());
    // A create of the same spec is refused.
    let mut fresh = new.clone();
    fresh.as_object_mut().unwrap().remove("status");
    assert_eq!(
        create_errors(fresh),
        [
            "spec.validation.openAPIV3Schema.properties[spec].properties[any].type: Unsupported value: \"any\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\"",
            "spec.validation.openAPIV3Schema.properties[spec].properties[set].items.x-kubernetes-map-type: Invalid value: \"null\": must be atomic as item of a list with x-kubernetes-list-type=set",
        ]
    );
    // Without a schema the update still needs one for served versions, or fields get pruned.
    let mut bare = stored_established();
    bare["spec"]["versions"][0]
        .as_object_mut()
        .unwrap()
        .remove("schema");
    assert_eq!(
        update_errors(&bare, &bare),
        ["spec.versions[0].schema.openAPIV3Schema: Required value: because otherwise all fields are pruned"]
    );
}

#[test]
fn a_crd_without_versions() {
    let errs = create_errors(crontab_with(|c| c["spec"]["versions"] = json!([])));
    assert_eq!(
        errs,
        [
            "spec.versions: Invalid value: []: must have exactly one version marked as storage version",
            "status.storedVersions: Invalid value: []: must have at least one stored version",
        ]
    );
}
