//! Job spec validation as upstream's pkg/apis/batch/validation: the generated selector and
//! its labels, counts and limits, completion modes, the pod failure and success policies, the
//! pod replacement policy, the pod template (restartPolicy OnFailure or Never), what an update
//! may not change, and the index sets (`"0-2,4"`) of successPolicy and status.

use serde_json::{json, Value};
use tinykube_proto::labels::Selector;

use super::super::apps::{pod_template, require_selected};
use super::super::field::FieldError;
use super::super::names::{immutable, label_errors, validate_object_meta, NameRule};
use super::super::rules::{label_selector, non_negative_int};
use super::super::semantic;
use super::policies;
use super::{
    at, CONTROLLER_UID_LABEL, JOB_NAME_LABEL, LEGACY_CONTROLLER_UID_LABEL, LEGACY_JOB_NAME_LABEL,
};

const MAX_PARALLELISM_INDEXED: i64 = 100_000;
const MAX_FAILED_INDEXES: i64 = 100_000;
const COMPLETIONS_SOFT_LIMIT: i64 = 100_000;
const PARALLELISM_LIMIT_HIGH: i64 = 10_000;
const MAX_FAILED_INDEXES_HIGH: i64 = 10_000;
const MAX_MANAGED_BY: usize = 63;

/// An Invalid error upstream reports without a value (`field.OmitValueType`).
pub(super) fn invalid_no_value(field: impl Into<String>, detail: impl Into<String>) -> FieldError {
    FieldError {
        kind: super::super::field::ErrorType::Invalid,
        field: field.into(),
        value: None,
        detail: detail.into(),
    }
}

fn int(v: Option<&Value>) -> Option<i64> {
    v.and_then(Value::as_i64)
}

/// Why an index set does not parse, in upstream's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    #[error("the fragment {0:?} violates the requirement that an index interval can have at most two parts separated by '-'")]
    TooManyParts(String),
    #[error("cannot convert string to integer for index: {0:?}")]
    NotInteger(String),
    #[error("too large index: {0:?}")]
    TooLarge(String),
    #[error("non-increasing order, previous: {0}, current: {1}")]
    NonIncreasing(i64, i64),
}

/// An index set as `status.completedIndexes` writes it (`"1,3-5,7"`), strictly: ordered,
/// every index below `completions`. The intervals, and how many indexes they hold.
pub fn parse_indexes(text: &str, completions: i64) -> Result<(Vec<(i64, i64)>, i64), IndexError> {
    let mut out: Vec<(i64, i64)> = Vec::new();
    let mut total = 0;
    if text.is_empty() {
        return Ok((out, 0));
    }
    for part in text.split(',') {
        let (x, y) = parse_interval(part, completions)?;
        if let Some(&(_, last)) = out.last() {
            if last >= x {
                return Err(IndexError::NonIncreasing(last, x));
            }
        }
        total += y - x + 1;
        out.push((x, y));
    }
    Ok((out, total))
}

fn parse_interval(part: &str, completions: i64) -> Result<(i64, i64), IndexError> {
    let limits: Vec<&str> = part.split('-').collect();
    if limits.len() > 2 {
        return Err(IndexError::TooManyParts(part.to_string()));
    }
    let number = |s: &str| -> Result<i64, IndexError> {
        let n: i64 = s
            .parse()
            .map_err(|_| IndexError::NotInteger(s.to_string()))?;
        if n >= completions {
            return Err(IndexError::TooLarge(s.to_string()));
        }
        Ok(n)
    };
    let x = number(limits[0])?;
    match limits.get(1) {
        None => Ok((x, x)),
        Some(s) => {
            let y = number(s)?;
            if x >= y {
                return Err(IndexError::NonIncreasing(x, y));
            }
            Ok((x, y))
        }
    }
}

/// Upstream's validateGeneratedSelector: unless `manualSelector`, the template carries the
/// job-name and controller-uid labels and the selector picks them.
fn generated_selector(obj: &Value, prefixed: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if obj.pointer("/spec/manualSelector").and_then(Value::as_bool) == Some(true) {
        return errs;
    }
    let Some(selector) = at(obj, "/spec/selector") else {
        return errs;
    };
    let text = |p: &str| obj.pointer(p).and_then(Value::as_str).unwrap_or("");
    let (name, uid) = (text("/metadata/name"), text("/metadata/uid"));
    if uid.is_empty() {
        errs.push(FieldError::required("metadata.uid", ""));
    }
    let labels = at(obj, "/spec/template/metadata/labels");
    let mut expected = vec![
        (LEGACY_CONTROLLER_UID_LABEL, uid),
        (LEGACY_JOB_NAME_LABEL, name),
    ];
    if prefixed {
        expected.extend([(CONTROLLER_UID_LABEL, uid), (JOB_NAME_LABEL, name)]);
    }
    for (key, want) in &expected {
        let path = format!("spec.template.metadata.labels[{key}]");
        match labels.and_then(|l| l.get(*key)).and_then(Value::as_str) {
            None => errs.push(FieldError::required(path, format!("must be '{want}'"))),
            Some(v) if v != *want => errs.push(FieldError::invalid(
                path,
                labels.cloned().unwrap_or(json!({})),
                format!("must be '{want}'"),
            )),
            Some(_) => {}
        }
    }
    let set = expected
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    if let Some(s) = build_selector(selector) {
        if !s.matches(&set) {
            errs.push(FieldError::invalid(
                "spec.selector",
                selector.clone(),
                "`selector` not auto-generated",
            ));
        }
    }
    errs
}

fn build_selector(selector: &Value) -> Option<Selector> {
    serde_json::from_value(selector.clone())
        .ok()
        .and_then(|s| Selector::from_label_selector(&s).ok())
}

/// Upstream's ValidateJob (and, with `old`, the options of an update).
pub fn validate_job(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = validate_object_meta(obj, NameRule::Subdomain);
    // Updates do not require the prefixed labels of Jobs created before they existed.
    let prefixed = old.is_none_or(|o| {
        let labels = o.pointer("/spec/template/metadata/labels");
        [JOB_NAME_LABEL, CONTROLLER_UID_LABEL]
            .iter()
            .all(|k| labels.and_then(|l| l.get(*k)).is_some())
    });
    errs.extend(generated_selector(obj, prefixed));
    let spec = at(obj, "/spec").cloned().unwrap_or(json!({}));
    errs.extend(validate_job_spec(&spec, "spec"));
    match at(&spec, "/selector") {
        None => errs.push(FieldError::required("spec.selector", "")),
        Some(sel) => errs.extend(label_selector("spec.selector", Some(sel))),
    }
    if let Some(s) = at(&spec, "/selector").and_then(build_selector) {
        require_selected(&spec, &s, &mut errs);
    }
    let completions = int(at(&spec, "/completions"));
    let indexed = at(&spec, "/completionMode").and_then(Value::as_str) == Some("Indexed");
    if let (true, Some(c)) = (indexed, completions.filter(|&c| c > 0)) {
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let hostname = format!("{name}-{}", c - 1);
        if !label_errors(&hostname).is_empty() {
            errs.push(FieldError::invalid(
                "metadata.name",
                name,
                format!("will not able to create pod with invalid DNS label: {hostname}"),
            ));
        }
    }
    errs
}

/// Upstream's validateJobSpec at `path` (`spec`, or a CronJob's `spec.jobTemplate.spec`).
pub fn validate_job_spec(spec: &Value, path: &str) -> Vec<FieldError> {
    let p = |k: &str| format!("{path}.{k}");
    let field = |k: &str| at(spec, &format!("/{k}"));
    let mut errs = Vec::new();
    for key in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
    ] {
        errs.extend(non_negative_int(&p(key), field(key)));
    }
    let max_failed = int(field("maxFailedIndexes"));
    let per_index = int(field("backoffLimitPerIndex"));
    if field("maxFailedIndexes").is_some() {
        errs.extend(non_negative_int(
            &p("maxFailedIndexes"),
            field("maxFailedIndexes"),
        ));
        if field("backoffLimitPerIndex").is_none() {
            errs.push(FieldError::required(
                p("backoffLimitPerIndex"),
                "when maxFailedIndexes is specified",
            ));
        }
    }
    if let Some(by) = field("managedBy").and_then(Value::as_str) {
        errs.extend(managed_by(&p("managedBy"), by));
    }
    let completions = int(field("completions"));
    let parallelism = int(field("parallelism"));
    let mode = field("completionMode").and_then(Value::as_str);
    match mode {
        None | Some("NonIndexed") => {
            for (key, v) in [
                ("backoffLimitPerIndex", per_index),
                ("maxFailedIndexes", max_failed),
            ] {
                if let Some(v) = v {
                    errs.push(FieldError::invalid(
                        p(key),
                        v,
                        "requires indexed completion mode",
                    ));
                }
            }
        }
        Some("Indexed") => {
            if completions.is_none() {
                errs.push(FieldError::required(
                    p("completions"),
                    "when completion mode is Indexed",
                ));
            }
            if let Some(n) = parallelism.filter(|&n| n > MAX_PARALLELISM_INDEXED) {
                errs.push(FieldError::invalid(
                    p("parallelism"),
                    n,
                    format!("must be less than or equal to {MAX_PARALLELISM_INDEXED} when completion mode is Indexed"),
                ));
            }
            if let (Some(c), Some(m)) = (completions, max_failed) {
                if m > c {
                    errs.push(FieldError::invalid(
                        p("maxFailedIndexes"),
                        m,
                        "must be less than or equal to completions",
                    ));
                }
            }
            if let Some(m) = max_failed.filter(|&m| m > MAX_FAILED_INDEXES) {
                errs.push(FieldError::invalid(
                    p("maxFailedIndexes"),
                    m,
                    format!("must be less than or equal to {MAX_FAILED_INDEXES}"),
                ));
            }
            let high = completions.is_some_and(|c| c > COMPLETIONS_SOFT_LIMIT);
            if high && per_index.is_some() {
                const TAIL: &str =
                    "when completions are above 100000 and used with backoff limit per index";
                if max_failed.is_none() {
                    errs.push(FieldError::required(
                        p("maxFailedIndexes"),
                        format!(
                            "must be specified when completions is above {COMPLETIONS_SOFT_LIMIT}"
                        ),
                    ));
                }
                if let Some(n) = parallelism.filter(|&n| n > PARALLELISM_LIMIT_HIGH) {
                    errs.push(FieldError::invalid(
                        p("parallelism"),
                        n,
                        format!("must be less than or equal to {PARALLELISM_LIMIT_HIGH} {TAIL}"),
                    ));
                }
                if let Some(m) = max_failed.filter(|&m| m > MAX_FAILED_INDEXES_HIGH) {
                    errs.push(FieldError::invalid(
                        p("maxFailedIndexes"),
                        m,
                        format!("must be less than or equal to {MAX_FAILED_INDEXES_HIGH} {TAIL}"),
                    ));
                }
            }
        }
        Some(other) => errs.push(FieldError::not_supported(
            p("completionMode"),
            other,
            &["NonIndexed", "Indexed"],
        )),
    }
    if let Some(policy) = field("podFailurePolicy") {
        errs.extend(policies::pod_failure_policy(
            spec,
            policy,
            &p("podFailurePolicy"),
        ));
    }
    if let Some(policy) = field("successPolicy") {
        if mode != Some("Indexed") {
            errs.push(FieldError::invalid(
                p("successPolicy"),
                policy.clone(),
                "requires indexed completion mode",
            ));
        } else {
            errs.extend(policies::success_policy(
                policy,
                completions.unwrap_or(0),
                &p("successPolicy"),
            ));
        }
    }
    if let Some(r) = field("podReplacementPolicy").and_then(Value::as_str) {
        if field("podFailurePolicy").is_some() {
            if r != "Failed" {
                errs.push(FieldError::not_supported(
                    p("podReplacementPolicy"),
                    r,
                    &["Failed"],
                ));
            }
        } else if !["Failed", "TerminatingOrFailed"].contains(&r) {
            errs.push(FieldError::not_supported(
                p("podReplacementPolicy"),
                r,
                &["Failed", "TerminatingOrFailed"],
            ));
        }
    }
    errs.extend(pod_template(field("template"), &p("template")));
    let restart_path = p("template.spec.restartPolicy");
    match at(spec, "/template/spec/restartPolicy").and_then(Value::as_str) {
        None | Some("") | Some("Always") => errs.push(FieldError::required(
            restart_path,
            "valid values: \"OnFailure\", \"Never\"",
        )),
        Some("OnFailure") if field("podFailurePolicy").is_some() => errs.push(FieldError::invalid(
            restart_path,
            "OnFailure",
            "only \"Never\" is supported when podFailurePolicy is specified",
        )),
        Some("OnFailure") | Some("Never") => {}
        Some(other) => errs.push(FieldError::not_supported(
            restart_path,
            other,
            &["OnFailure", "Never"],
        )),
    }
    errs
}

/// Upstream's IsDomainPrefixedPath and the length of `managedBy`.
fn managed_by(path: &str, by: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match by.split_once('/') {
        Some((host, rest)) if !host.is_empty() && !rest.is_empty() => {
            for m in tinykube_proto::names::subdomain_errors(host) {
                errs.push(FieldError::invalid(path, host, m));
            }
        }
        _ => errs.push(FieldError::invalid(
            path,
            by,
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        )),
    }
    if by.len() > MAX_MANAGED_BY {
        errs.push(FieldError::too_long(path, by, MAX_MANAGED_BY));
    }
    errs
}

/// Upstream's ValidateJobSpecUpdate beyond the spec rules: completions (which an Indexed Job
/// may change together with parallelism), selector, template (whose scheduling directives a
/// suspended Job that never started may change), completion mode and the policies.
pub fn validate_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let (n, o) = (at(new, "/spec").cloned(), at(old, "/spec").cloned());
    let (n, o) = (n.unwrap_or(json!({})), o.unwrap_or(json!({})));
    let get = |v: &Value, k: &str| at(v, &format!("/{k}")).cloned();
    let changed = |k: &str| !semantic::equal(get(&n, k).as_ref(), get(&o, k).as_ref());
    let same = |k: &str| -> Option<FieldError> {
        if !changed(k) {
            return None;
        }
        immutable(
            &format!("spec.{k}"),
            Some(&get(&n, k).unwrap_or(Value::Null)),
            Some(&get(&o, k).unwrap_or(Value::Null)),
        )
    };
    let indexed = get(&n, "completionMode").as_ref().and_then(Value::as_str) == Some("Indexed");
    if changed("completions") {
        match (indexed, int(get(&n, "completions").as_ref())) {
            (false, _) => errs.extend(same("completions")),
            (true, None) => {}
            (true, Some(c)) => {
                if Some(c) != int(get(&n, "parallelism").as_ref()) {
                    errs.push(FieldError::invalid(
                        "spec.completions",
                        c,
                        "can only be modified in tandem with spec.parallelism",
                    ));
                }
            }
        }
    }
    errs.extend(same("selector"));
    let mut old_template = get(&o, "template").unwrap_or(json!({}));
    let new_template = get(&n, "template").unwrap_or(json!({}));
    let suspended = at(old, "/spec/suspend").and_then(Value::as_bool) == Some(true);
    if suspended && at(old, "/status/startTime").is_none() {
        allow_scheduling_changes(&mut old_template, &new_template);
    }
    if !semantic::equal(Some(&new_template), Some(&old_template)) {
        errs.push(FieldError::invalid(
            "spec.template",
            new_template,
            "field is immutable",
        ));
    }
    for k in [
        "completionMode",
        "podFailurePolicy",
        "backoffLimitPerIndex",
        "managedBy",
        "successPolicy",
    ] {
        errs.extend(same(k));
    }
    errs
}

/// Upstream's AllowMutableSchedulingDirectives: the old template takes the new one's node
/// affinity, node selector, tolerations, labels, annotations and scheduling gates.
fn allow_scheduling_changes(old: &mut Value, new: &Value) {
    let take = |old: &mut Value, pointer: &str, key: &str| {
        let value = new.pointer(&format!("{pointer}/{key}")).cloned();
        let Some(target) = old.pointer_mut(pointer).and_then(Value::as_object_mut) else {
            return;
        };
        match value {
            Some(v) => target.insert(key.into(), v),
            None => target.remove(key),
        };
    };
    if let Some(m) = old.as_object_mut() {
        m.entry("metadata").or_insert_with(|| json!({}));
        m.entry("spec").or_insert_with(|| json!({}));
    }
    for key in ["labels", "annotations"] {
        take(old, "/metadata", key);
    }
    for key in ["nodeSelector", "tolerations", "schedulingGates"] {
        take(old, "/spec", key);
    }
    let new_affinity = new.pointer("/spec/affinity").filter(|v| !v.is_null());
    let spec = old.pointer_mut("/spec").and_then(Value::as_object_mut);
    let Some(spec) = spec else { return };
    match (
        new_affinity,
        spec.get_mut("affinity").filter(|v| !v.is_null()),
    ) {
        (None, Some(a)) => {
            if let Some(m) = a.as_object_mut() {
                m.remove("nodeAffinity");
                if m.is_empty() {
                    spec.remove("affinity");
                }
            }
        }
        (Some(na), None) => {
            let node = na.get("nodeAffinity").cloned();
            let mut a = json!({});
            if let Some(n) = node {
                a["nodeAffinity"] = n;
            }
            spec.insert("affinity".into(), a);
        }
        (Some(na), Some(a)) => {
            if let Some(m) = a.as_object_mut() {
                match na.get("nodeAffinity") {
                    Some(n) => m.insert("nodeAffinity".into(), n.clone()),
                    None => m.remove("nodeAffinity"),
                };
            }
        }
        (None, None) => {}
    }
}
