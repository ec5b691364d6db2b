//! What a request asks for: the resource a path names, the query options, the representation the
//! client accepts and the decoded body.

use axum::http::{header, HeaderMap};
use serde::Deserialize;
use serde_json::Value;
use tinykube_proto::registry::ResourceInfo;

use crate::error::{ApiError, ApiResult};
use crate::kinds::Served;

/// The resource (and maybe object and subresource) a path names.
#[derive(Debug, Clone)]
pub struct Target {
    pub info: ResourceInfo,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

/// Parse the part of a path after `/api/v1/` or `/apis/G/V/`. `None`: no such resource.
pub fn parse_target(served: &Served, group: &str, version: &str, rest: &str) -> Option<Target> {
    let segs: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    let lookup = |plural: &str| served.lookup(group, version, plural);
    let cluster = |plural: &str| lookup(plural).map(|info| (info, None));
    let (info, namespace, tail): (&ResourceInfo, Option<String>, &[&str]) = match segs.as_slice() {
        ["namespaces", ns, plural, tail @ ..] if lookup(plural).is_some_and(|i| i.namespaced) => {
            (lookup(plural)?, Some((*ns).to_string()), tail)
        }
        [plural, tail @ ..] => {
            let (info, ns) = cluster(plural)?;
            (info, ns, tail)
        }
        [] => return None,
    };
    let (name, subresource) = match tail {
        [] => (None, None),
        [name] => (Some((*name).to_string()), None),
        [name, sub] => {
            info.subresource(sub)?;
            (Some((*name).to_string()), Some((*sub).to_string()))
        }
        _ => return None,
    };
    Some(Target {
        info: info.clone(),
        namespace,
        name,
        subresource,
    })
}

/// Query options of list, watch, get, create, update, patch and delete.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Query {
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    pub limit: Option<String>,
    #[serde(rename = "continue")]
    pub continue_: Option<String>,
    pub watch: Option<String>,
    pub resource_version: Option<String>,
    pub resource_version_match: Option<String>,
    pub timeout_seconds: Option<String>,
    pub allow_watch_bookmarks: Option<String>,
    pub send_initial_events: Option<String>,
    pub include_object: Option<String>,
    pub dry_run: Option<String>,
    pub field_validation: Option<String>,
    pub field_manager: Option<String>,
    pub force: Option<String>,
    pub grace_period_seconds: Option<String>,
    pub propagation_policy: Option<String>,
    pub orphan_dependents: Option<String>,
    pub pretty: Option<String>,
    pub timeout: Option<String>,
}

/// Go's strconv.ParseBool, as query booleans are read upstream.
pub fn truthy(v: &Option<String>) -> bool {
    matches!(
        v.as_deref(),
        Some("1" | "t" | "T" | "true" | "TRUE" | "True")
    )
}

impl Query {
    pub fn parse(raw: Option<&str>) -> ApiResult<Query> {
        decode_query(raw.unwrap_or(""))
    }

    pub fn is_watch(&self) -> bool {
        truthy(&self.watch)
    }

    pub fn is_dry_run(&self) -> ApiResult<bool> {
        match self.dry_run.as_deref() {
            None | Some("") => Ok(false),
            Some("All") => Ok(true),
            Some(other) => Err(ApiError::BadRequest(format!(
                "Invalid dryRun value: {other:?}; supported values: \"All\""
            ))),
        }
    }

    pub fn int(&self, name: &str, v: &Option<String>) -> ApiResult<Option<i64>> {
        match v.as_deref() {
            None | Some("") => Ok(None),
            Some(s) => s
                .parse::<i64>()
                .map(Some)
                .map_err(|_| ApiError::BadRequest(format!("invalid value for {name}: {s:?}"))),
        }
    }
}

/// Decode a query string with `form_urlencoded` (`+` and `%XX` escapes; bytes that are not
/// UTF-8 become U+FFFD) into the struct; repeated keys keep the first value. A `%` without two
/// hex digits after it is a 400, as Go's `url.ParseQuery` refuses it (`form_urlencoded` would
/// keep it as text).
fn decode_query(raw: &str) -> ApiResult<Query> {
    check_escapes(raw)?;
    let mut map = serde_json::Map::new();
    for (k, v) in form_urlencoded::parse(raw.as_bytes()) {
        map.entry(k).or_insert(Value::String(v.into_owned()));
    }
    serde_json::from_value(Value::Object(map))
        .map_err(|e| ApiError::BadRequest(format!("invalid query: {e}")))
}

/// Every `%` must start an escape of two hex digits; the error quotes the bad escape as Go's
/// `url.EscapeError` does.
fn check_escapes(raw: &str) -> ApiResult<()> {
    for (at, _) in raw.match_indices('%') {
        let hex = raw.as_bytes().get(at + 1..at + 3);
        if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
            let bad: String = raw[at..].chars().take(3).collect();
            return Err(ApiError::BadRequest(format!("invalid URL escape {bad:?}")));
        }
    }
    Ok(())
}

/// The representation a client asked for in `Accept`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Representation {
    /// Plain JSON of the object or list.
    Object,
    /// A meta.k8s.io Table of the given version (`v1` or `v1beta1`).
    Table(&'static str),
    /// meta.k8s.io PartialObjectMetadata(List).
    Metadata(&'static str),
}

/// One entry of an Accept header: type/subtype and its parameters.
#[derive(Debug, Clone)]
pub struct MediaRange {
    pub essence: String,
    pub params: Vec<(String, String)>,
}

impl MediaRange {
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn is_json(&self) -> bool {
        matches!(
            self.essence.as_str(),
            "application/json" | "application/*" | "*/*"
        )
    }
}

pub fn accept_ranges(headers: &HeaderMap) -> Vec<MediaRange> {
    let Some(raw) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()) else {
        return vec![MediaRange {
            essence: "*/*".into(),
            params: vec![],
        }];
    };
    raw.split(',')
        .filter_map(|part| {
            let mut pieces = part.split(';').map(str::trim);
            let essence = pieces.next()?.to_ascii_lowercase();
            if essence.is_empty() {
                return None;
            }
            let params = pieces
                .filter_map(|p| {
                    let (k, v) = p.split_once('=')?;
                    Some((k.trim().to_string(), v.trim().trim_matches('"').to_string()))
                })
                .collect();
            Some(MediaRange { essence, params })
        })
        .collect()
}

/// Pick the first representation of `Accept` this server can produce for a resource.
pub fn negotiate(headers: &HeaderMap) -> ApiResult<Representation> {
    let ranges = accept_ranges(headers);
    for r in &ranges {
        if !r.is_json() {
            continue;
        }
        match (r.param("as"), r.param("g"), r.param("v")) {
            (None, _, _) => return Ok(Representation::Object),
            (Some("Table"), Some("meta.k8s.io"), Some("v1")) => {
                return Ok(Representation::Table("v1"))
            }
            (Some("Table"), Some("meta.k8s.io"), Some("v1beta1")) => {
                return Ok(Representation::Table("v1beta1"))
            }
            (
                Some("PartialObjectMetadata" | "PartialObjectMetadataList"),
                Some("meta.k8s.io"),
                Some("v1"),
            ) => return Ok(Representation::Metadata("v1")),
            _ => continue,
        }
    }
    if ranges.iter().any(|r| {
        r.essence == "application/vnd.kubernetes.protobuf" || r.essence == "application/yaml"
    }) {
        // Protobuf and YAML are not produced; JSON is what every client also accepts.
        return Ok(Representation::Object);
    }
    Err(ApiError::NotAcceptable(
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
            .into(),
    ))
}

/// Kinds of request bodies by Content-Type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFormat {
    Json,
    Yaml,
    Protobuf,
    JsonPatch,
    MergePatch,
    StrategicMergePatch,
    ApplyPatch,
}

pub fn body_format(headers: &HeaderMap) -> ApiResult<BodyFormat> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    let essence = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    Ok(match essence.as_str() {
        "application/json" | "" | "*/*" => BodyFormat::Json,
        "application/yaml" => BodyFormat::Yaml,
        "application/vnd.kubernetes.protobuf" => BodyFormat::Protobuf,
        "application/json-patch+json" => BodyFormat::JsonPatch,
        "application/merge-patch+json" => BodyFormat::MergePatch,
        "application/strategic-merge-patch+json" => BodyFormat::StrategicMergePatch,
        "application/apply-patch+yaml" | "application/apply-patch+cbor" => BodyFormat::ApplyPatch,
        _ => {
            return Err(ApiError::UnsupportedMediaType(
                "application/json, application/yaml, application/vnd.kubernetes.protobuf".into(),
            ))
        }
    })
}

/// The first bytes of a body, for error messages, as upstream's summarizeData: a JSON object as
/// text (`{"apiVersion":"v1","kind":"Pod ...`), anything else in hex, `<empty>` for nothing.
fn excerpt(body: &[u8]) -> String {
    const MAX: usize = 30;
    let cut = &body[..body.len().min(MAX)];
    let more = if body.len() > MAX { " ..." } else { "" };
    match body.first() {
        None => "<empty>".to_string(),
        Some(b'{') => format!("{}{more}", String::from_utf8_lossy(cut)),
        Some(_) => {
            let hex: String = cut.iter().map(|b| format!("{b:02x}")).collect();
            format!("{hex}{more}")
        }
    }
}

/// Decode a JSON or YAML object body; `expected` names the kind for the error message.
pub fn decode_body(body: &[u8], format: BodyFormat, expected: &str) -> ApiResult<Value> {
    let parsed: Result<Value, String> = match format {
        BodyFormat::Yaml => serde_yaml_ng::from_slice::<Value>(body).map_err(|e| e.to_string()),
        BodyFormat::Protobuf => crate::protobuf::decode(body).map_err(|e| e.to_string()),
        _ => serde_json::from_slice::<Value>(body).map_err(|e| json_error(&e)),
    };
    match parsed {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(ApiError::BadRequest(format!(
            "the object provided is unrecognized (must be of type {expected}): couldn't get version/kind; json parse error: json: cannot unmarshal non-object into Go value of type struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }} ({})",
            excerpt(body)
        ))),
        Err(e) => Err(ApiError::BadRequest(format!(
            "the object provided is unrecognized (must be of type {expected}): couldn't get version/kind; json parse error: {e} ({})",
            excerpt(body)
        ))),
    }
}

/// How Go's encoding/json names a JSON value that does not fit the Go type it is decoded into.
pub fn go_json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// An object body whose `apiVersion` and `kind` are strings (or absent), as upstream reads them
/// first into a struct of two strings: `"kind": 5` is a 400 naming the first field of the wrong
/// type in the document, in Go's words (`json: cannot unmarshal number into Go struct field
/// .kind of type string`).
pub fn decode_object_body(body: &[u8], format: BodyFormat, expected: &str) -> ApiResult<Value> {
    let obj = decode_body(body, format, expected)?;
    let wrong = obj.as_object().and_then(|m| {
        m.iter().find(|(k, v)| {
            matches!(k.as_str(), "apiVersion" | "kind")
                && !matches!(v, Value::String(_) | Value::Null)
        })
    });
    if let Some((field, v)) = wrong {
        return Err(ApiError::BadRequest(format!(
            "the object provided is unrecognized (must be of type {expected}): couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go struct field .{field} of type string ({})",
            go_json_kind(v),
            excerpt(body)
        )));
    }
    Ok(obj)
}

/// serde_json's message, worded as Go's encoding/json where the meaning is the same.
pub fn json_error(e: &serde_json::Error) -> String {
    if e.is_eof() {
        "unexpected end of JSON input".to_string()
    } else {
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_resources() {
        let kinds = crate::kinds::Kinds::default();
        let served = kinds.snapshot();
        let t = parse_target(&served, "", "v1", "namespaces/default/pods/nginx/status").unwrap();
        assert_eq!(t.info.plural, "pods");
        assert_eq!(t.namespace.as_deref(), Some("default"));
        assert_eq!(t.name.as_deref(), Some("nginx"));
        assert_eq!(t.subresource.as_deref(), Some("status"));
        let ns = parse_target(&served, "", "v1", "namespaces/default").unwrap();
        assert_eq!(ns.info.plural, "namespaces");
        assert_eq!(ns.name.as_deref(), Some("default"));
        let fin = parse_target(&served, "", "v1", "namespaces/default/finalize").unwrap();
        assert_eq!(fin.subresource.as_deref(), Some("finalize"));
        let all = parse_target(&served, "", "v1", "pods").unwrap();
        assert!(all.namespace.is_none() && all.name.is_none());
        let node = parse_target(&served, "", "v1", "nodes/worker0").unwrap();
        assert_eq!(node.name.as_deref(), Some("worker0"));
        assert!(parse_target(&served, "", "v1", "foos").is_none());
        assert!(parse_target(&served, "", "v1", "namespaces/default/foos").is_none());
        assert!(parse_target(&served, "", "v1", "pods/x/nope").is_none());
        let d = parse_target(
            &served,
            "apps",
            "v1",
            "namespaces/ns1/deployments/web/scale",
        )
        .unwrap();
        assert_eq!(d.info.kind, "Deployment");
    }

    #[test]
    fn accept_picks_tables() {
        let mut h = HeaderMap::new();
        h.insert(
            header::ACCEPT,
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
                .parse()
                .unwrap(),
        );
        assert_eq!(negotiate(&h).unwrap(), Representation::Table("v1"));
        h.insert(header::ACCEPT, "application/json".parse().unwrap());
        assert_eq!(negotiate(&h).unwrap(), Representation::Object);
    }

    #[test]
    fn query_decodes_escapes() {
        let q = Query::parse(Some("labelSelector=app%3Dweb%2Ctier+in+(a)&watch=true")).unwrap();
        assert_eq!(q.label_selector.as_deref(), Some("app=web,tier in (a)"));
        assert!(q.is_watch());
        assert!(Query::parse(Some("limit=%zz")).is_err());
    }

    #[test]
    fn excerpts_are_upstreams_summaries() {
        assert_eq!(excerpt(b""), "<empty>");
        assert_eq!(excerpt(b"{\"kind\":5}"), "{\"kind\":5}");
        assert_eq!(
            excerpt(br#"{"apiVersion":"apps/v1","kind":"Deployment"}"#),
            r#"{"apiVersion":"apps/v1","kind" ..."#
        );
        assert_eq!(excerpt(b"kind: 5"), "6b696e643a2035");
    }

    #[test]
    fn type_meta_must_be_strings() {
        let cases = [
            (r#"{"apiVersion":"apps/v1","kind":"Deployment"}"#, None),
            (r#"{"kind":null}"#, None),
            (
                r#"{"apiVersion":"apps/v1","kind":5}"#,
                Some("json: cannot unmarshal number into Go struct field .kind of type string ({\"apiVersion\":\"apps/v1\",\"kind\" ...)"),
            ),
            (
                r#"{"kind":true,"apiVersion":["v1"]}"#,
                Some("json: cannot unmarshal bool into Go struct field .kind of type string"),
            ),
            (
                r#"{"apiVersion":{"g":"apps"},"kind":5}"#,
                Some("json: cannot unmarshal object into Go struct field .apiVersion of type string"),
            ),
        ];
        for (body, want) in cases {
            match (
                decode_object_body(body.as_bytes(), BodyFormat::Json, "Deployment"),
                want,
            ) {
                (Ok(_), None) => {}
                (Err(ApiError::BadRequest(m)), Some(w)) => {
                    assert!(m.starts_with("the object provided is unrecognized (must be of type Deployment): couldn't get version/kind; json parse error: "), "{m}");
                    assert!(m.contains(w), "{m}");
                }
                (other, _) => panic!("{body}: {other:?}"),
            }
        }
    }

    #[test]
    fn query_refuses_malformed_escapes_as_go() {
        let cases = [
            ("limit=%zz", Some("%zz")),
            ("limit=5%", Some("%")),
            ("limit=%4", Some("%4")),
            ("limit=%+1", Some("%+1")),
            ("lim%zzit=5", Some("%zz")),
            ("labelSelector=a%3Db", None),
            ("fieldManager=k%C3%BCbectl&limit=5", None),
        ];
        for (raw, bad) in cases {
            match (Query::parse(Some(raw)), bad) {
                (Ok(_), None) => {}
                (Err(ApiError::BadRequest(m)), Some(b)) => {
                    assert_eq!(m, format!("invalid URL escape {b:?}"), "{raw}")
                }
                (other, _) => panic!("{raw}: {other:?}"),
            }
        }
        let q = Query::parse(Some("limit=5&limit=6&fieldManager=k%C3%BCbectl")).unwrap();
        assert_eq!(q.limit.as_deref(), Some("5"));
        assert_eq!(q.field_manager.as_deref(), Some("kübectl"));
    }
}
