//! Discovery: `/api`, `/apis`, `/apis/G`, `/api/v1`, `/apis/G/V` in the legacy format and the
//! aggregated (apidiscovery.k8s.io/v2) format kubectl asks for first, plus `/version`. The
//! groups of aggregated APIServices come from `aggregator::discovery`.

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use serde_json::{json, Map, Value};
use tinykube_proto::registry::{ResourceInfo, Subresource};

use crate::aggregator::discovery as aggregated;
use crate::aggregator::Remote;
use crate::error::{ApiError, ApiResult};
use crate::handlers::json_response;
use crate::kinds::Served;
use crate::request::accept_ranges;
use tinykube_proto::hash::{fnv1a_64, OFFSET_BASIS_64};

/// The Kubernetes version tinykube speaks.
pub const KUBE_VERSION: (&str, &str) = ("1", "36");
pub const GIT_VERSION: &str = "v1.36.2";

pub fn version() -> Value {
    json!({
        "major": KUBE_VERSION.0,
        "minor": KUBE_VERSION.1,
        "emulationMajor": KUBE_VERSION.0,
        "emulationMinor": KUBE_VERSION.1,
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": "35",
        "gitVersion": GIT_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-11-22T00:00:00Z",
        "goVersion": format!("tinykube {}", env!("CARGO_PKG_VERSION")),
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, go_arch()),
    })
}

/// GOARCH-style name of this machine's architecture.
pub fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

/// Whether the client prefers aggregated discovery; `Err` for an Accept we cannot serve.
fn wants_aggregated(headers: &HeaderMap) -> ApiResult<bool> {
    let ranges = accept_ranges(headers);
    for r in &ranges {
        let json = matches!(
            r.essence.as_str(),
            "application/json" | "*/*" | "application/*"
        );
        if !json {
            continue;
        }
        match (r.param("as"), r.param("g"), r.param("v")) {
            (Some("APIGroupDiscoveryList"), Some("apidiscovery.k8s.io"), Some("v2")) => {
                return Ok(true)
            }
            (Some(_), _, _) => continue,
            (None, _, _) => return Ok(false),
        }
    }
    Err(ApiError::NotAcceptable(
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
            .into(),
    ))
}

fn aggregated_response(body: &Value, pretty: bool) -> Response {
    let mut resp = json_response(StatusCode::OK, body, pretty);
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        ),
    );
    h.insert(header::VARY, HeaderValue::from_static("Accept"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("public"));
    let etag = format!(
        "\"{:016X}\"",
        fnv1a_64(OFFSET_BASIS_64, body.to_string().as_bytes())
    );
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    resp
}

fn response_kind(group: Option<&str>, version: Option<&str>, kind: &str) -> Value {
    json!({"group": group.unwrap_or(""), "version": version.unwrap_or(""), "kind": kind})
}

fn aggregated_subresource(s: &Subresource, parent: &ResourceInfo) -> Value {
    let kind = if s.kind.is_empty() {
        parent.kind
    } else {
        s.kind
    };
    json!({
        "subresource": s.name,
        "responseKind": response_kind(s.group, s.version, kind),
        "verbs": s.verbs,
    })
}

fn aggregated_resource(r: &ResourceInfo) -> Value {
    let mut m = Map::new();
    m.insert("resource".into(), r.plural.into());
    m.insert("responseKind".into(), response_kind(None, None, r.kind));
    m.insert(
        "scope".into(),
        (if r.namespaced {
            "Namespaced"
        } else {
            "Cluster"
        })
        .into(),
    );
    m.insert("singularResource".into(), r.singular.into());
    m.insert("verbs".into(), r.verbs.into());
    if !r.short_names.is_empty() {
        m.insert("shortNames".into(), r.short_names.into());
    }
    if !r.categories.is_empty() {
        m.insert("categories".into(), r.categories.into());
    }
    if !r.subresources.is_empty() {
        let subs: Vec<Value> = r
            .subresources
            .iter()
            .map(|s| aggregated_subresource(s, r))
            .collect();
        m.insert("subresources".into(), subs.into());
    }
    Value::Object(m)
}

fn aggregated_group(served: &Served, group: &str) -> Value {
    let versions: Vec<Value> = served
        .versions(group)
        .into_iter()
        .map(|v| {
            let resources: Vec<Value> = served
                .group_version(group, v)
                .map(aggregated_resource)
                .collect();
            json!({"version": v, "resources": resources, "freshness": "Current"})
        })
        .collect();
    let metadata = if group.is_empty() {
        json!({})
    } else {
        json!({"name": group})
    };
    json!({"metadata": metadata, "versions": versions})
}

fn aggregated_list(items: Vec<Value>) -> Value {
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    })
}

pub fn api(served: &Served, headers: &HeaderMap, pretty: bool) -> ApiResult<Response> {
    if wants_aggregated(headers)? {
        return Ok(aggregated_response(
            &aggregated_list(vec![aggregated_group(served, "")]),
            pretty,
        ));
    }
    let body = json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}],
    });
    Ok(json_response(StatusCode::OK, &body, pretty))
}

fn group_entry(served: &Served, group: &str) -> Value {
    let versions: Vec<Value> = served
        .versions(group)
        .into_iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    let preferred = versions.first().cloned().unwrap_or(Value::Null);
    json!({"name": group, "versions": versions, "preferredVersion": preferred})
}

/// `/apis`: the served groups, then the aggregated ones (`remotes`) in their priority order.
pub fn apis(
    served: &Served,
    remotes: &[Remote],
    headers: &HeaderMap,
    pretty: bool,
) -> ApiResult<Response> {
    let own = served.groups();
    let (builtin, custom): (Vec<&str>, Vec<&str>) = own
        .iter()
        .partition(|g| tinykube_proto::registry::GROUPS.contains(g));
    let groups = aggregated::group_order(&builtin, &custom, remotes);
    let is_own = |g: &str| own.contains(&g);
    if wants_aggregated(headers)? {
        let items = groups
            .iter()
            .filter_map(|g| match is_own(g) {
                true => Some(aggregated_group(served, g)),
                false => aggregated::group_v2(remotes, g),
            })
            .collect();
        return Ok(aggregated_response(&aggregated_list(items), pretty));
    }
    let groups: Vec<Value> = groups
        .iter()
        .filter_map(|g| match is_own(g) {
            true => Some(group_entry(served, g)),
            false => aggregated::group_entry(remotes, g),
        })
        .collect();
    let body = json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups});
    Ok(json_response(StatusCode::OK, &body, pretty))
}

/// `/apis/GROUP`: the APIGroup of a served or aggregated group.
pub fn group(served: &Served, remotes: &[Remote], group: &str, pretty: bool) -> Option<Response> {
    let mut body = if served.groups().contains(&group) {
        group_entry(served, group)
    } else {
        aggregated::group_entry(remotes, group)?
    };
    if let Some(m) = body.as_object_mut() {
        let mut out = Map::new();
        out.insert("kind".into(), "APIGroup".into());
        out.insert("apiVersion".into(), "v1".into());
        out.extend(std::mem::take(m));
        *m = out;
    }
    Some(json_response(StatusCode::OK, &body, pretty))
}

fn legacy_resource(r: &ResourceInfo) -> Vec<Value> {
    let mut out = Vec::new();
    let mut m = Map::new();
    m.insert("name".into(), r.plural.into());
    m.insert("singularName".into(), r.singular.into());
    m.insert("namespaced".into(), r.namespaced.into());
    m.insert("kind".into(), r.kind.into());
    m.insert("verbs".into(), r.verbs.into());
    if !r.short_names.is_empty() {
        m.insert("shortNames".into(), r.short_names.into());
    }
    if !r.categories.is_empty() {
        m.insert("categories".into(), r.categories.into());
    }
    out.push(Value::Object(m));
    for s in r.subresources {
        let mut m = Map::new();
        m.insert("name".into(), format!("{}/{}", r.plural, s.name).into());
        m.insert("singularName".into(), "".into());
        m.insert("namespaced".into(), r.namespaced.into());
        if let Some(g) = s.group {
            m.insert("group".into(), g.into());
        }
        if let Some(v) = s.version {
            m.insert("version".into(), v.into());
        }
        m.insert(
            "kind".into(),
            (if s.kind.is_empty() { r.kind } else { s.kind }).into(),
        );
        m.insert("verbs".into(), s.verbs.into());
        out.push(Value::Object(m));
    }
    out
}

/// `/api/v1` or `/apis/G/V`: the APIResourceList.
pub fn resource_list(
    served: &Served,
    group: &str,
    version: &str,
    pretty: bool,
) -> ApiResult<Response> {
    let resources: Vec<Value> = served
        .group_version(group, version)
        .flat_map(legacy_resource)
        .collect();
    if resources.is_empty() {
        return Err(ApiError::NoSuchResource);
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    let body = json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources});
    Ok(json_response(StatusCode::OK, &body, pretty))
}
