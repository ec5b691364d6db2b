//! What an object charges to a quota, as upstream's evaluators (`pkg/quota/v1/evaluator/core`):
//! pods (`pods`, `count/pods`, compute requests and limits, huge pages, extended resources),
//! services (`services`, node ports, load balancers), persistent volume claims (count and
//! storage, also per storage class) and the object count of every other resource
//! (`configmaps`, `count/deployments.apps`, …); and which quota scopes a pod falls in
//! (Terminating, NotTerminating, BestEffort, NotBestEffort, PriorityClass,
//! CrossNamespacePodAffinity).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::lists::{add, parse_list, ResourceList};
use crate::quantity::{Format, Quantity};

const COMPUTE: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "count/pods",
];
/// What a quota on these makes every container state (upstream's validationSet).
const MUST_SPECIFY: &[&str] = &[
    "cpu",
    "memory",
    "requests.cpu",
    "requests.memory",
    "limits.cpu",
    "limits.memory",
];
const STORAGE_CLASS_SUFFIX: &str = ".storageclass.storage.k8s.io/";

/// One scope a quota is restricted to: `spec.scopes` (operator `Exists`) or an expression of
/// `spec.scopeSelector`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeRequirement {
    pub scope: String,
    pub operator: String,
    pub values: Vec<String>,
}

/// The scopes of a quota.
pub fn quota_scopes(quota: &Value) -> Vec<ScopeRequirement> {
    let mut out: Vec<ScopeRequirement> = quota
        .pointer("/spec/scopes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|s| ScopeRequirement {
            scope: s.to_string(),
            operator: "Exists".into(),
            values: Vec::new(),
        })
        .collect();
    for e in quota
        .pointer("/spec/scopeSelector/matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let text = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or_default();
        out.push(ScopeRequirement {
            scope: text("scopeName").to_string(),
            operator: text("operator").to_string(),
            values: e
                .get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
        });
    }
    out
}

/// How objects of one resource are charged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Evaluator {
    Pods,
    Services,
    PersistentVolumeClaims,
    /// The object count of any other resource: `count/<plural>[.<group>]`, and for the kinds
    /// quota counted before `count/` existed, the bare plural (`configmaps`, `secrets`, …).
    Objects {
        count: String,
        legacy: Option<String>,
    },
}

impl Evaluator {
    /// The evaluator of a resource (`group` empty for core).
    pub fn of(group: &str, plural: &str) -> Evaluator {
        match (group, plural) {
            ("", "pods") => Evaluator::Pods,
            ("", "services") => Evaluator::Services,
            ("", "persistentvolumeclaims") => Evaluator::PersistentVolumeClaims,
            _ => {
                let legacy = matches!(
                    plural,
                    "configmaps" | "secrets" | "replicationcontrollers" | "resourcequotas"
                ) && group.is_empty();
                Evaluator::Objects {
                    count: count_name(group, plural),
                    legacy: legacy.then(|| plural.to_string()),
                }
            }
        }
    }

    /// Whether quota admission evaluates an update of this resource's `subresource` (`""`: the
    /// object itself), as upstream's evaluators' `Handles`: a Service's type and ports and a
    /// claim's storage request may grow, a pod's resources only through `resize`; other
    /// objects are counted once, at creation.
    pub fn evaluates_update(&self, subresource: &str) -> bool {
        match self {
            Evaluator::Pods => subresource == "resize",
            Evaluator::Services | Evaluator::PersistentVolumeClaims => subresource.is_empty(),
            Evaluator::Objects { .. } => false,
        }
    }

    /// Whether this evaluator accounts for the quota resource `name`.
    pub fn tracks(&self, name: &str) -> bool {
        match self {
            Evaluator::Pods => {
                COMPUTE.contains(&name)
                    || name.starts_with("hugepages-")
                    || name.starts_with("requests.hugepages-")
                    || name
                        .strip_prefix("requests.")
                        .is_some_and(|r| is_extended(r) && !r.starts_with("hugepages-"))
            }
            Evaluator::Services => matches!(
                name,
                "services" | "count/services" | "services.nodeports" | "services.loadbalancers"
            ),
            Evaluator::PersistentVolumeClaims => {
                matches!(
                    name,
                    "persistentvolumeclaims" | "count/persistentvolumeclaims" | "requests.storage"
                ) || name
                    .split_once(STORAGE_CLASS_SUFFIX)
                    .is_some_and(|(_, r)| r == "requests.storage" || r == "persistentvolumeclaims")
            }
            Evaluator::Objects { count, legacy } => {
                name == count || legacy.as_deref() == Some(name)
            }
        }
    }

    /// The names among `names` this evaluator accounts for.
    pub fn matching<'a>(&self, names: impl Iterator<Item = &'a str>) -> Vec<String> {
        names
            .filter(|n| self.tracks(n))
            .map(str::to_string)
            .collect()
    }

    /// Whether `obj` falls in every scope (only pods have scopes: a scoped quota never matches
    /// other objects, as upstream).
    pub fn matches_scopes(&self, scopes: &[ScopeRequirement], obj: &Value, now_unix: i64) -> bool {
        let _ = now_unix;
        scopes.iter().all(|s| match self {
            Evaluator::Pods => pod_in_scope(s, obj),
            _ => false,
        })
    }

    /// Upstream's pod constraint: a quota on cpu or memory makes every container state it.
    pub fn constraints(&self, tracked: &[String], obj: &Value) -> Result<(), String> {
        if *self != Evaluator::Pods {
            return Ok(());
        }
        let required: BTreeSet<&str> = tracked
            .iter()
            .map(String::as_str)
            .filter(|r| MUST_SPECIFY.contains(r))
            .collect();
        let mut missing: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
        for c in containers(obj, "containers").chain(containers(obj, "initContainers")) {
            let usage = compute_usage(
                &parse_list(c.pointer("/resources/requests")),
                &parse_list(c.pointer("/resources/limits")),
            );
            let name = c.get("name").and_then(Value::as_str).unwrap_or_default();
            for r in &required {
                if !usage.contains_key(*r) {
                    missing.entry(r).or_default().insert(name.to_string());
                }
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        let parts: Vec<String> = missing
            .iter()
            .map(|(r, names)| {
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                format!("{r} for: {}", names.join(","))
            })
            .collect();
        Err(format!("must specify {}", parts.join("; ")))
    }

    /// What `obj` charges, every resource this evaluator knows.
    pub fn usage(&self, obj: &Value, now_unix: i64) -> ResourceList {
        let one = || Quantity::from_value(1, Format::DecimalSI);
        let zero = || Quantity::from_value(0, Format::DecimalSI);
        let mut out = ResourceList::new();
        match self {
            Evaluator::Pods => {
                out.insert("count/pods".into(), one());
                if pod_counts(obj, now_unix) {
                    let usage = compute_usage(&pod_requests(obj, true), &pod_limits(obj, true));
                    out = add(&out, &usage);
                }
            }
            Evaluator::Services => {
                out.insert("count/services".into(), one());
                out.insert("services".into(), one());
                out.insert("services.loadbalancers".into(), zero());
                out.insert("services.nodeports".into(), zero());
                let ports = obj
                    .pointer("/spec/ports")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                let all = || Quantity::from_value(ports.len() as i64, Format::DecimalSI);
                match obj.pointer("/spec/type").and_then(Value::as_str) {
                    Some("NodePort") => {
                        out.insert("services.nodeports".into(), all());
                    }
                    Some("LoadBalancer") => {
                        let allocate = obj
                            .pointer("/spec/allocateLoadBalancerNodePorts")
                            .and_then(Value::as_bool)
                            .unwrap_or(true);
                        let explicit = ports.iter().filter(|p| p.get("nodePort").is_some());
                        let n = if allocate {
                            all()
                        } else {
                            Quantity::from_value(explicit.count() as i64, Format::DecimalSI)
                        };
                        out.insert("services.nodeports".into(), n);
                        out.insert("services.loadbalancers".into(), one());
                    }
                    _ => {}
                }
            }
            Evaluator::PersistentVolumeClaims => {
                out.insert("count/persistentvolumeclaims".into(), one());
                out.insert("persistentvolumeclaims".into(), one());
                let class = obj
                    .pointer("/spec/storageClassName")
                    .and_then(Value::as_str)
                    .filter(|c| !c.is_empty());
                if let Some(c) = class {
                    out.insert(
                        format!("{c}{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"),
                        one(),
                    );
                }
                let requested = parse_list(obj.pointer("/spec/resources/requests"));
                if let Some(storage) = requested.get("storage") {
                    out.insert("requests.storage".into(), *storage);
                    if let Some(c) = class {
                        out.insert(
                            format!("{c}{STORAGE_CLASS_SUFFIX}requests.storage"),
                            *storage,
                        );
                    }
                }
            }
            Evaluator::Objects { count, legacy } => {
                out.insert(count.clone(), one());
                if let Some(l) = legacy {
                    out.insert(l.clone(), one());
                }
            }
        }
        out
    }
}

/// `count/pods`, `count/deployments.apps`.
fn count_name(group: &str, plural: &str) -> String {
    if group.is_empty() {
        format!("count/{plural}")
    } else {
        format!("count/{plural}.{group}")
    }
}

/// A resource named with a domain outside `kubernetes.io` (`example.com/gpu`).
fn is_extended(name: &str) -> bool {
    name.contains('/') && !name.contains("kubernetes.io/")
}

fn containers<'a>(pod: &'a Value, field: &str) -> impl Iterator<Item = &'a Value> {
    pod.pointer(&format!("/spec/{field}"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// Upstream's podComputeUsageHelper: what requests and limits charge (`requests.cpu` and
/// `cpu` for a cpu request, `limits.cpu` for a limit, huge pages, extended requests).
fn compute_usage(requests: &ResourceList, limits: &ResourceList) -> ResourceList {
    let mut out = ResourceList::new();
    out.insert("pods".into(), Quantity::from_value(1, Format::DecimalSI));
    for r in ["cpu", "memory", "ephemeral-storage"] {
        if let Some(q) = requests.get(r) {
            out.insert(r.into(), *q);
            out.insert(format!("requests.{r}"), *q);
        }
        if let Some(q) = limits.get(r) {
            out.insert(format!("limits.{r}"), *q);
        }
    }
    for (r, q) in requests {
        if r.starts_with("hugepages-") {
            out.insert(r.clone(), *q);
            out.insert(format!("requests.{r}"), *q);
        } else if is_extended(r) {
            out.insert(format!("requests.{r}"), *q);
        }
    }
    out
}

/// Sum of `a` and `b` into `a`.
fn add_into(a: &mut ResourceList, b: &ResourceList) {
    *a = add(a, b);
}

/// The larger of each resource into `a`.
fn max_into(a: &mut ResourceList, b: &ResourceList) {
    for (k, q) in b {
        match a.get(k) {
            Some(have) if have >= q => {}
            _ => {
                a.insert(k.clone(), *q);
            }
        }
    }
}

/// A pod's effective requests or limits, as upstream's resource helpers: the containers'
/// sum, at least what any init container needs beside the sidecars started before it, plus the
/// overhead (limits: only on resources that have a limit) when `overhead` is set.
fn pod_resources(pod: &Value, which: &str, overhead: bool) -> ResourceList {
    let of = |c: &Value| parse_list(c.pointer(&format!("/resources/{which}")));
    let mut sum = ResourceList::new();
    for c in containers(pod, "containers") {
        add_into(&mut sum, &of(c));
    }
    let (mut sidecars, mut init_max) = (ResourceList::new(), ResourceList::new());
    for c in containers(pod, "initContainers") {
        let r = of(c);
        if c.get("restartPolicy").and_then(Value::as_str) == Some("Always") {
            add_into(&mut sum, &r);
            add_into(&mut sidecars, &r);
        } else {
            max_into(&mut init_max, &add(&r, &sidecars));
        }
    }
    max_into(&mut sum, &init_max);
    if overhead {
        let extra = parse_list(pod.pointer("/spec/overhead"));
        for (k, q) in extra {
            if which == "requests" || sum.contains_key(&k) {
                add_into(&mut sum, &ResourceList::from([(k, q)]));
            }
        }
    }
    sum
}

/// A pod's requests (with its overhead when `overhead`).
pub fn pod_requests(pod: &Value, overhead: bool) -> ResourceList {
    pod_resources(pod, "requests", overhead)
}

/// A pod's limits (the overhead added to the limits it has when `overhead`).
pub fn pod_limits(pod: &Value, overhead: bool) -> ResourceList {
    pod_resources(pod, "limits", overhead)
}

/// Whether a pod's compute resources count: not finished, and not stuck terminating past its
/// grace period.
fn pod_counts(pod: &Value, now_unix: i64) -> bool {
    if matches!(
        pod.pointer("/status/phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    ) {
        return false;
    }
    let deleted = pod
        .pointer("/metadata/deletionTimestamp")
        .and_then(Value::as_str)
        .and_then(unix_seconds);
    let grace = pod
        .pointer("/metadata/deletionGracePeriodSeconds")
        .and_then(Value::as_i64);
    match (deleted, grace) {
        (Some(at), Some(grace)) => now_unix <= at + grace,
        _ => true,
    }
}

fn pod_in_scope(s: &ScopeRequirement, pod: &Value) -> bool {
    let terminating = pod
        .pointer("/spec/activeDeadlineSeconds")
        .and_then(Value::as_i64)
        .is_some_and(|d| d >= 0);
    match s.scope.as_str() {
        "Terminating" => terminating,
        "NotTerminating" => !terminating,
        "BestEffort" => best_effort(pod),
        "NotBestEffort" => !best_effort(pod),
        "PriorityClass" => {
            let class = pod
                .pointer("/spec/priorityClassName")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match s.operator.as_str() {
                "Exists" => !class.is_empty(),
                "In" => s.values.iter().any(|v| v == class),
                // As a label selector over {PriorityClass: name}, a label absent when unnamed.
                "NotIn" => class.is_empty() || !s.values.iter().any(|v| v == class),
                "DoesNotExist" => class.is_empty(),
                _ => false,
            }
        }
        "CrossNamespacePodAffinity" => cross_namespace_affinity(pod),
        _ => false,
    }
}

/// No container (init containers included) requests or limits cpu or memory.
fn best_effort(pod: &Value) -> bool {
    containers(pod, "containers")
        .chain(containers(pod, "initContainers"))
        .all(|c| {
            ["requests", "limits"].iter().all(|w| {
                let l = parse_list(c.pointer(&format!("/resources/{w}")));
                !l.contains_key("cpu") && !l.contains_key("memory")
            })
        })
}

/// A pod (anti-)affinity term names other namespaces or a namespace selector.
fn cross_namespace_affinity(pod: &Value) -> bool {
    let mut terms = Vec::new();
    for kind in ["podAffinity", "podAntiAffinity"] {
        let a = pod.pointer(&format!("/spec/affinity/{kind}"));
        let required = a.and_then(|a| a.get("requiredDuringSchedulingIgnoredDuringExecution"));
        terms.extend(required.and_then(Value::as_array).into_iter().flatten());
        let preferred = a.and_then(|a| a.get("preferredDuringSchedulingIgnoredDuringExecution"));
        for p in preferred.and_then(Value::as_array).into_iter().flatten() {
            terms.extend(p.get("podAffinityTerm"));
        }
    }
    terms.iter().any(|t| {
        t.get("namespaceSelector").is_some_and(|s| !s.is_null())
            || t.get("namespaces")
                .and_then(Value::as_array)
                .is_some_and(|n| !n.is_empty())
    })
}

/// Seconds since the epoch of an RFC 3339 UTC timestamp (`2026-11-24T22:44:09Z`, fractions
/// ignored), as the API writes them.
pub fn unix_seconds(ts: &str) -> Option<i64> {
    let b = ts.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| ts.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hh * 3600 + mm * 60 + ss)
}
