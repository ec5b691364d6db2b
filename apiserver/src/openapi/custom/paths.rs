//! The REST paths of one CRD version in its OpenAPI v3 document: list, create, deletecollection,
//! read, replace, patch and delete (and the status and scale subresources when declared), with
//! upstream's operation ids, descriptions, parameters and media types.

use serde_json::{json, Map, Value};

use super::{reference, Served};

const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
const SCALE: &str = "io.k8s.api.autoscaling.v1.Scale";

/// Query parameters by name: type and description, as the meta options types document them.
fn query(name: &str) -> Value {
    let (type_, description) = match name {
        "pretty" => ("string", "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget)."),
        "allowWatchBookmarks" => ("boolean", "allowWatchBookmarks requests watch events with type \"BOOKMARK\". Servers that do not implement bookmarks may ignore this flag and bookmarks are sent at the server's discretion. Clients should not assume bookmarks are returned at any specific interval, nor may they assume the server will send any BOOKMARK event during a session. If this is not a watch, this field is ignored."),
        "continue" => ("string", "The continue option should be set when retrieving more results from the server. Since this value is server defined, clients may only use the continue value from a previous query result with identical query parameters (except for the value of continue) and the server may reject a continue value it does not recognize."),
        "fieldSelector" => ("string", "A selector to restrict the list of returned objects by their fields. Defaults to everything."),
        "labelSelector" => ("string", "A selector to restrict the list of returned objects by their labels. Defaults to everything."),
        "limit" => ("integer", "limit is a maximum number of responses to return for a list call. If more items exist, the server will set the `continue` field on the list metadata to a value that can be used with the same initial query to retrieve the next set of results."),
        "resourceVersion" => ("string", "resourceVersion sets a constraint on what resource versions a request may be served from. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset"),
        "resourceVersionMatch" => ("string", "resourceVersionMatch determines how resourceVersion is applied to list calls. It is highly recommended that resourceVersionMatch be set for list calls where resourceVersion is set See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset"),
        "sendInitialEvents" => ("boolean", "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch stream will begin with synthetic events to produce the current state of objects in the collection. Once all such events have been sent, a synthetic \"Bookmark\" event  will be sent."),
        "timeoutSeconds" => ("integer", "Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or inactivity."),
        "watch" => ("boolean", "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion."),
        "dryRun" => ("string", "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed"),
        "fieldManager" => ("string", "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint."),
        "fieldValidation" => ("string", "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. This is the default behavior prior to v1.23. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. The request will still succeed if there are no other errors, and will only persist the last of any duplicate fields. This is the default in v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered."),
        "force" => ("boolean", "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests."),
        "gracePeriodSeconds" => ("integer", "The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the default grace period for the specified type will be used. Defaults to a per object value if not specified. zero means delete immediately."),
        "ignoreStoreReadErrorWithClusterBreakingPotential" => ("boolean", "if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow fails with a corrupt object error. A resource is considered corrupt if it can not be retrieved from the underlying storage successfully because of a) its data can not be transformed e.g. decryption failure, or b) it fails to decode into an object. NOTE: unsafe deletion ignores finalizer constraints, skips precondition checks, and removes the object from the storage. WARNING: This may potentially break the cluster if the workload associated with the resource being unsafe-deleted relies on normal deletion flow. Use only if you REALLY know what you are doing. The default value is false, and the user must opt in to enable it"),
        "orphanDependents" => ("boolean", "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the dependent objects be orphaned. If true/false, the \"orphan\" finalizer will be added to/removed from the object's finalizers list. Either this field or PropagationPolicy may be set, but not both."),
        "propagationPolicy" => ("string", "Whether and how garbage collection will be performed. Either this field or OrphanDependents may be set, but not both. The default policy is decided by the existing finalizer set in the metadata.finalizers and the resource-specific default policy. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to delete the dependents in the background; 'Foreground' - a cascading policy that deletes all dependents in the foreground."),
        _ => ("string", ""),
    };
    json!({"name": name, "in": "query", "description": description,
           "schema": {"type": type_, "uniqueItems": true}})
}

fn path_param(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "path", "description": description, "required": true,
           "schema": {"type": "string", "uniqueItems": true}})
}

const LIST_PARAMS: &[&str] = &[
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
];
const READ_PARAMS: &[&str] = &["resourceVersion"];
const WRITE_PARAMS: &[&str] = &["dryRun", "fieldManager", "fieldValidation"];
const PATCH_PARAMS: &[&str] = &["dryRun", "fieldManager", "fieldValidation", "force"];
const DELETE_PARAMS: &[&str] = &[
    "dryRun",
    "gracePeriodSeconds",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "orphanDependents",
    "propagationPolicy",
];

/// Go's `strings.Title` of an identifier-like word, and upstream's operation id casing: letters
/// kept, anything else dropped and the next letter capitalised.
fn operation_word(s: &str, capitalize_first: bool) -> String {
    let mut out = String::new();
    let mut capitalize = capitalize_first;
    for (i, c) in s.chars().enumerate() {
        if c.is_alphabetic() || c == '_' || (i != 0 && c.is_ascii_digit()) {
            if capitalize {
                out.extend(c.to_uppercase());
                capitalize = false;
            } else {
                out.push(c);
            }
        } else {
            capitalize = true;
        }
    }
    out
}

/// "a" or "an" before a kind, none before a plural-looking one, as upstream's descriptions.
fn article(kind: &str) -> &'static str {
    if kind.ends_with('s') && !kind.ends_with("ss") {
        " "
    } else if kind
        .chars()
        .next()
        .is_some_and(|c| "aeiou".contains(c.to_ascii_lowercase()))
    {
        " an "
    } else {
        " a "
    }
}

/// One operation. `verb` is the operation verb (list, create, read, replace, patch, delete,
/// deletecollection), `action` the `x-kubernetes-action`.
struct Op<'a> {
    verb: &'a str,
    action: &'a str,
    sub: &'a str,
    params: &'a [&'a str],
    response: String,
    body: Option<String>,
}

fn operation(sv: &Served, op: Op, all_namespaces: bool) -> Value {
    let kind = sv.kind;
    let sub_words = if op.sub.is_empty() {
        String::new()
    } else {
        format!(" {} of", op.sub)
    };
    let description = match op.verb {
        "list" => format!("list{sub_words} objects of kind {kind}"),
        "read" | "replace" => format!("{}{sub_words} the specified {kind}", op.verb),
        "patch" => format!("partially update{sub_words} the specified {kind}"),
        "create" | "delete" => format!("{}{sub_words}{}{kind}", op.verb, article(kind)),
        _ => format!("delete collection of{sub_words} {kind}"),
    };
    let scope = match (sv.namespaced, all_namespaces) {
        (true, false) => "Namespaced",
        _ => "",
    };
    let suffix = if all_namespaces {
        "ForAllNamespaces".to_string()
    } else {
        operation_word(op.sub, true)
    };
    let group = sv.group.strip_suffix(".k8s.io").unwrap_or(sv.group);
    let operation_id = format!(
        "{}{}{}{scope}{kind}{suffix}",
        op.verb,
        operation_word(group, true),
        operation_word(sv.version, true)
    );
    let tag = format!(
        "{}_{}",
        operation_word(group, false),
        operation_word(sv.version, false)
    );
    let content = |schema: &str| {
        json!({"application/json": {"schema": reference(schema)},
               "application/yaml": {"schema": reference(schema)}})
    };
    let mut responses = Map::new();
    responses.insert(
        "200".into(),
        json!({"description": "OK", "content": content(&op.response)}),
    );
    if matches!(op.action, "post" | "put") {
        responses.insert(
            "201".into(),
            json!({"description": "Created", "content": content(&op.response)}),
        );
    }
    if matches!(op.action, "post" | "delete") {
        responses.insert(
            "202".into(),
            json!({"description": "Accepted", "content": content(&op.response)}),
        );
    }
    responses.insert("401".into(), json!({"description": "Unauthorized"}));
    let mut out = json!({
        "tags": [tag],
        "description": description,
        "operationId": operation_id,
        "parameters": op.params.iter().map(|p| query(p)).collect::<Vec<_>>(),
        "responses": responses,
        "x-kubernetes-action": op.action,
        "x-kubernetes-group-version-kind": {"group": sv.group, "version": sv.version, "kind": kind},
    });
    if let Some(body) = op.body {
        out["requestBody"] = match op.action {
            "patch" => json!({"content": {
                "application/json-patch+json": {"schema": reference(PATCH)},
                "application/merge-patch+json": {"schema": reference(PATCH)},
                "application/apply-patch+yaml": {"schema": reference(PATCH)},
            }, "required": true}),
            "delete" => json!({"content": content(&body)}),
            _ => json!({"content": content(&body), "required": true}),
        };
    }
    out
}

/// The path items of one CRD version, keyed by path.
pub(super) fn paths(sv: &Served) -> Vec<(String, Value)> {
    let kind_ref = sv.schema_name(sv.kind);
    let list_ref = sv.schema_name(&sv.list_kind);
    let cluster_root = format!("/apis/{}/{}/{}", sv.group, sv.version, sv.plural);
    let root = if sv.namespaced {
        format!(
            "/apis/{}/{}/namespaces/{{namespace}}/{}",
            sv.group, sv.version, sv.plural
        )
    } else {
        cluster_root.clone()
    };
    let namespace = path_param(
        "namespace",
        "object name and auth scope, such as for teams and projects",
    );
    let name = path_param("name", &format!("name of the {}", sv.kind));
    let item = |ops: Vec<(&str, Value)>, with_name: bool| {
        let mut item = Map::new();
        for (method, op) in ops {
            item.insert(method.into(), op);
        }
        let mut common = Vec::new();
        if with_name {
            common.push(name.clone());
        }
        if sv.namespaced {
            common.push(namespace.clone());
        }
        common.push(query("pretty"));
        item.insert("parameters".into(), Value::Array(common));
        Value::Object(item)
    };
    let op = |verb, action, sub, params, response: &str, body: Option<&str>| Op {
        verb,
        action,
        sub,
        params,
        response: response.to_string(),
        body: body.map(str::to_string),
    };
    let mut out = Vec::new();
    if sv.namespaced {
        let list = op("list", "list", "", LIST_PARAMS, &list_ref, None);
        let mut all = Map::new();
        all.insert("get".into(), operation(sv, list, true));
        all.insert("parameters".into(), json!([query("pretty")]));
        out.push((cluster_root, Value::Object(all)));
    }
    let collection = vec![
        (
            "get",
            operation(
                sv,
                op("list", "list", "", LIST_PARAMS, &list_ref, None),
                false,
            ),
        ),
        (
            "post",
            operation(
                sv,
                op(
                    "create",
                    "post",
                    "",
                    WRITE_PARAMS,
                    &kind_ref,
                    Some(&kind_ref),
                ),
                false,
            ),
        ),
        (
            "delete",
            operation(
                sv,
                op(
                    "deletecollection",
                    "deletecollection",
                    "",
                    LIST_PARAMS,
                    STATUS,
                    None,
                ),
                false,
            ),
        ),
    ];
    out.push((root.clone(), item(collection, false)));
    let object_ops = |sub: &'static str, schema: &str| {
        let mut ops = vec![
            (
                "get",
                operation(sv, op("read", "get", sub, READ_PARAMS, schema, None), false),
            ),
            (
                "put",
                operation(
                    sv,
                    op("replace", "put", sub, WRITE_PARAMS, schema, Some(schema)),
                    false,
                ),
            ),
        ];
        if sub.is_empty() {
            ops.push((
                "delete",
                operation(
                    sv,
                    op(
                        "delete",
                        "delete",
                        sub,
                        DELETE_PARAMS,
                        STATUS,
                        Some(DELETE_OPTIONS),
                    ),
                    false,
                ),
            ));
        }
        ops.push((
            "patch",
            operation(
                sv,
                op("patch", "patch", sub, PATCH_PARAMS, schema, Some(PATCH)),
                false,
            ),
        ));
        item(ops, true)
    };
    out.push((format!("{root}/{{name}}"), object_ops("", &kind_ref)));
    if sv.subresource("status") {
        out.push((
            format!("{root}/{{name}}/status"),
            object_ops("status", &kind_ref),
        ));
    }
    if sv.subresource("scale") {
        out.push((format!("{root}/{{name}}/scale"), object_ops("scale", SCALE)));
    }
    out
}
