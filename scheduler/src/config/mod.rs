//! `--config`: a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1, YAML or JSON)
//! turned into profiles. Each profile serves one schedulerName with its own plugin list: the
//! default plugins, then `multiPoint` changes, then each extension point's `disabled` (`*` for
//! all) and `enabled` (with score weights), and `pluginConfig` arguments.

use std::collections::BTreeMap;
use std::path::Path;

use k8s_openapi::api::core::v1::TopologySpreadConstraint;
use serde::Deserialize;

use crate::plugins::node_resources_fit::{NodeResourcesFit, Strategy};
use crate::plugins::pod_topology_spread::{system_defaults, PodTopologySpread};
use crate::plugins::{self, Weighted};

pub const API_VERSION: &str = "kubescheduler.config.k8s.io/v1";
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("decoding {path}: {message}")]
    Decode { path: String, message: String },
    #[error("{0}")]
    Invalid(String),
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct File {
    pub api_version: Option<String>,
    pub kind: Option<String>,
    pub parallelism: Option<i32>,
    pub leader_election: Option<LeaderElection>,
    pub client_connection: Option<ClientConnection>,
    pub healthz_bind_address: Option<String>,
    pub metrics_bind_address: Option<String>,
    pub enable_profiling: Option<bool>,
    pub enable_contention_profiling: Option<bool>,
    pub percentage_of_nodes_to_score: Option<i32>,
    pub pod_initial_backoff_seconds: Option<i64>,
    pub pod_max_backoff_seconds: Option<i64>,
    pub delay_cache_until_active: Option<bool>,
    #[serde(default)]
    pub profiles: Vec<ProfileConfig>,
    #[serde(default)]
    pub extenders: Vec<serde_json::Value>,
}

#[derive(Debug, Deserialize, Default, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LeaderElection {
    pub leader_elect: Option<bool>,
    pub lease_duration: Option<String>,
    pub renew_deadline: Option<String>,
    pub retry_period: Option<String>,
    pub resource_lock: Option<String>,
    pub resource_name: Option<String>,
    pub resource_namespace: Option<String>,
}

#[derive(Debug, Deserialize, Default, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientConnection {
    pub kubeconfig: Option<String>,
    pub accept_content_types: Option<String>,
    pub content_type: Option<String>,
    pub qps: Option<f64>,
    pub burst: Option<i32>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProfileConfig {
    pub scheduler_name: Option<String>,
    pub percentage_of_nodes_to_score: Option<i32>,
    pub plugins: Option<PluginsConfig>,
    #[serde(default)]
    pub plugin_config: Vec<PluginConfig>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PluginsConfig {
    pub pre_enqueue: Option<PluginSet>,
    pub queue_sort: Option<PluginSet>,
    pub pre_filter: Option<PluginSet>,
    pub filter: Option<PluginSet>,
    pub post_filter: Option<PluginSet>,
    pub pre_score: Option<PluginSet>,
    pub score: Option<PluginSet>,
    pub reserve: Option<PluginSet>,
    pub permit: Option<PluginSet>,
    pub pre_bind: Option<PluginSet>,
    pub bind: Option<PluginSet>,
    pub post_bind: Option<PluginSet>,
    pub multi_point: Option<PluginSet>,
}

#[derive(Debug, Deserialize, Default, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PluginSet {
    #[serde(default)]
    pub enabled: Vec<PluginRef>,
    #[serde(default)]
    pub disabled: Vec<PluginRef>,
}

#[derive(Debug, Deserialize, Default, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PluginRef {
    pub name: String,
    pub weight: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PluginConfig {
    pub name: String,
    #[serde(default)]
    pub args: serde_json::Value,
}

/// One profile, ready to schedule with.
pub struct Profile {
    pub scheduler_name: String,
    /// Plugins in filter order; each filters, scores (weight > 0), or both.
    pub plugins: Vec<Weighted>,
    /// Whether DefaultPreemption runs as the PostFilter.
    pub preemption: bool,
}

impl Profile {
    /// The default profile (upstream's default plugins and weights) under `name`.
    pub fn default_named(name: &str) -> Profile {
        Profile {
            scheduler_name: name.to_string(),
            plugins: plugins::default_plugins(),
            preemption: true,
        }
    }
}

/// What a configuration file yields.
pub struct Loaded {
    pub profiles: Vec<Profile>,
    pub leader_election: Option<LeaderElection>,
    pub kubeconfig: Option<String>,
}

/// Plugins upstream registers that have nothing to do in tinykube (no volumes, images, ports
/// or claims): accepted in a configuration, so that upstream's examples load, and ignored.
const INERT: &[&str] = &[
    "PrioritySort",
    "DefaultBinder",
    "SchedulingGates",
    "ImageLocality",
    "NodePorts",
    "VolumeBinding",
    "VolumeRestrictions",
    "VolumeZone",
    "NodeVolumeLimits",
    "EBSLimits",
    "GCEPDLimits",
    "AzureDiskLimits",
    "DynamicResources",
    "NodeDeclaredFeatures",
];

/// Extension points each working plugin implements: (filters, default score weight or 0).
fn roles(name: &str) -> Option<(bool, i64)> {
    Some(match name {
        "NodeUnschedulable" | "NodeName" => (true, 0),
        "TaintToleration" => (true, 3),
        "NodeAffinity" | "PodTopologySpread" | "InterPodAffinity" => (true, 2),
        "NodeResourcesFit" => (true, 1),
        "NodeResourcesBalancedAllocation" => (false, 1),
        _ => return None,
    })
}

/// Upstream's default order of the working plugins (filter order).
const ORDER: &[&str] = &[
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodeResourcesFit",
    "NodeResourcesBalancedAllocation",
    "PodTopologySpread",
    "InterPodAffinity",
];

/// A profile's plugin choices while they are being worked out.
#[derive(Debug, Clone, PartialEq)]
struct Choices {
    /// Plugins that filter, in order.
    filter: Vec<String>,
    /// Plugins that score, with weights, in order.
    score: Vec<(String, i64)>,
    preemption: bool,
}

impl Choices {
    fn defaults() -> Choices {
        Choices {
            filter: ORDER
                .iter()
                .filter(|n| roles(n).is_some_and(|r| r.0))
                .map(|n| n.to_string())
                .collect(),
            score: ORDER
                .iter()
                .filter_map(|n| roles(n).filter(|r| r.1 > 0).map(|r| (n.to_string(), r.1)))
                .collect(),
            preemption: true,
        }
    }
}

fn check_name(name: &str, at: &str) -> Result<(), ConfigError> {
    if name == "*" || roles(name).is_some() || name == "DefaultPreemption" || INERT.contains(&name)
    {
        return Ok(());
    }
    Err(ConfigError::Invalid(format!(
        "{at}: plugin {name:?} does not exist"
    )))
}

fn weight_of(r: &PluginRef, at: &str) -> Result<Option<i64>, ConfigError> {
    match r.weight {
        Some(w) if w < 0 => Err(ConfigError::Invalid(format!(
            "{at}.weight: Invalid value: {w}: must be non-negative"
        ))),
        Some(0) | None => Ok(None),
        Some(w) => Ok(Some(w)),
    }
}

/// Apply one extension point's set to the filter list (`filter`), the score list (`score`),
/// preemption (`postFilter`) or all of them (`multiPoint`).
fn apply(choices: &mut Choices, point: &str, set: &PluginSet, at: &str) -> Result<(), ConfigError> {
    let (filter, score, post) = match point {
        "multiPoint" => (true, true, true),
        "preFilter" | "filter" => (true, false, false),
        "preScore" | "score" => (false, true, false),
        "postFilter" => (false, false, true),
        _ => (false, false, false),
    };
    for (i, d) in set.disabled.iter().enumerate() {
        check_name(&d.name, &format!("{at}.disabled[{i}]"))?;
        let all = d.name == "*";
        if filter {
            choices.filter.retain(|n| !all && *n != d.name);
        }
        if score {
            choices.score.retain(|(n, _)| !all && *n != d.name);
        }
        if post && (all || d.name == "DefaultPreemption") {
            choices.preemption = false;
        }
    }
    for (i, e) in set.enabled.iter().enumerate() {
        let here = format!("{at}.enabled[{i}]");
        if e.name == "*" {
            return Err(ConfigError::Invalid(format!(
                "{here}: plugin \"*\" may only be disabled"
            )));
        }
        check_name(&e.name, &here)?;
        let weight = weight_of(e, &here)?;
        if post && e.name == "DefaultPreemption" {
            choices.preemption = true;
        }
        let Some((filters, default_weight)) = roles(&e.name) else {
            continue;
        };
        if filter && filters && !choices.filter.contains(&e.name) {
            choices.filter.push(e.name.clone());
        }
        let scores = default_weight > 0;
        if score && scores {
            let w = weight.unwrap_or(default_weight);
            match choices.score.iter_mut().find(|(n, _)| *n == e.name) {
                Some(entry) => entry.1 = w,
                None => choices.score.push((e.name.clone(), w)),
            }
        }
        if point == "score" && !scores {
            return Err(ConfigError::Invalid(format!(
                "{here}: plugin {:?} does not extend score",
                e.name
            )));
        }
    }
    Ok(())
}

/// Arguments of the plugins that take any, from `pluginConfig`.
#[derive(Default)]
struct Args {
    fit: NodeResourcesFit,
    spread_defaults: Vec<TopologySpreadConstraint>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct FitArgs {
    scoring_strategy: Option<ScoringStrategy>,
    #[serde(default)]
    ignored_resources: Vec<String>,
    #[serde(default)]
    ignored_resource_groups: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ScoringStrategy {
    #[serde(rename = "type")]
    type_: Option<String>,
    resources: Option<Vec<ResourceWeight>>,
    requested_to_capacity_ratio: Option<Ratio>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResourceWeight {
    name: String,
    weight: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Ratio {
    shape: Vec<ShapePoint>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ShapePoint {
    utilization: i64,
    score: i64,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SpreadArgs {
    defaulting_type: Option<String>,
    #[serde(default)]
    default_constraints: Vec<TopologySpreadConstraint>,
}

fn invalid(at: &str, what: String) -> ConfigError {
    ConfigError::Invalid(format!("{at}: {what}"))
}

fn parse_args(configs: &[PluginConfig], at: &str) -> Result<Args, ConfigError> {
    let mut args = Args::default();
    for (i, pc) in configs.iter().enumerate() {
        let here = format!("{at}.pluginConfig[{i}]");
        let value = if pc.args.is_null() {
            serde_json::json!({})
        } else {
            pc.args.clone()
        };
        // Upstream's args carry their own apiVersion/kind; they say nothing more.
        let mut value = value;
        if let Some(m) = value.as_object_mut() {
            m.remove("apiVersion");
            m.remove("kind");
        }
        match pc.name.as_str() {
            "NodeResourcesFit" => {
                let a: FitArgs = serde_json::from_value(value)
                    .map_err(|e| invalid(&format!("{here}.args"), e.to_string()))?;
                let _ = (&a.ignored_resources, &a.ignored_resource_groups);
                let Some(s) = a.scoring_strategy else {
                    continue;
                };
                if let Some(resources) = s.resources {
                    args.fit.resources = resources
                        .into_iter()
                        .map(|r| (r.name, r.weight.unwrap_or(1).max(1)))
                        .collect();
                }
                args.fit.strategy = match s.type_.as_deref().unwrap_or("LeastAllocated") {
                    "LeastAllocated" => Strategy::LeastAllocated,
                    "MostAllocated" => Strategy::MostAllocated,
                    "RequestedToCapacityRatio" => {
                        let shape: Vec<(i64, i64)> = s
                            .requested_to_capacity_ratio
                            .map(|r| r.shape.iter().map(|p| (p.utilization, p.score)).collect())
                            .unwrap_or_default();
                        let at = format!("{here}.args.scoringStrategy.requestedToCapacityRatio.shape");
                        if shape.is_empty() {
                            return Err(invalid(&at, "Required value: at least one point must be specified".into()));
                        }
                        for (j, w) in shape.windows(2).enumerate() {
                            if w[1].0 <= w[0].0 {
                                return Err(invalid(&format!("{at}[{}].utilization", j + 1), format!("Invalid value: {}: utilization values must be sorted in increasing order", w[1].0)));
                            }
                        }
                        for (j, (u, sc)) in shape.iter().enumerate() {
                            if !(0..=100).contains(u) {
                                return Err(invalid(&format!("{at}[{j}].utilization"), format!("Invalid value: {u}: not in valid range [0-100]")));
                            }
                            if !(0..=10).contains(sc) {
                                return Err(invalid(&format!("{at}[{j}].score"), format!("Invalid value: {sc}: not in valid range [0-10]")));
                            }
                        }
                        Strategy::RequestedToCapacityRatio(shape)
                    }
                    other => {
                        return Err(invalid(
                            &format!("{here}.args.scoringStrategy.type"),
                            format!("Unsupported value: {other:?}: supported values: \"LeastAllocated\", \"MostAllocated\", \"RequestedToCapacityRatio\""),
                        ))
                    }
                };
            }
            "PodTopologySpread" => {
                let a: SpreadArgs = serde_json::from_value(value)
                    .map_err(|e| invalid(&format!("{here}.args"), e.to_string()))?;
                args.spread_defaults = match a.defaulting_type.as_deref().unwrap_or("System") {
                    "System" if !a.default_constraints.is_empty() => {
                        return Err(invalid(
                            &format!("{here}.args.defaultConstraints"),
                            "Invalid value: when .defaultingType is \"System\", .defaultConstraints must be empty".into(),
                        ))
                    }
                    "System" => system_defaults(),
                    "List" => a.default_constraints,
                    other => {
                        return Err(invalid(
                            &format!("{here}.args.defaultingType"),
                            format!("Unsupported value: {other:?}: supported values: \"List\", \"System\""),
                        ))
                    }
                };
            }
            other => check_name(other, &format!("{here}.name"))?,
        }
    }
    Ok(args)
}

fn build(name: &str, choices: &Choices, args: Args) -> Profile {
    let mut plugins = Vec::new();
    for n in ORDER {
        let filters = choices.filter.iter().any(|f| f == n);
        let weight = choices
            .score
            .iter()
            .find(|(s, _)| s == n)
            .map(|(_, w)| *w)
            .unwrap_or(0);
        if !filters && weight == 0 {
            continue;
        }
        let plugin: Box<dyn crate::framework::Plugin> = match *n {
            "NodeResourcesFit" => Box::new(args.fit.clone()),
            "PodTopologySpread" => Box::new(PodTopologySpread {
                defaults: args.spread_defaults.clone(),
            }),
            other => match plugins::by_name(other) {
                Some(p) => p,
                None => continue,
            },
        };
        plugins.push(Weighted {
            plugin,
            weight,
            filters,
        });
    }
    Profile {
        scheduler_name: name.to_string(),
        plugins,
        preemption: choices.preemption,
    }
}

/// Turn a configuration's text into profiles.
pub fn parse(text: &str, path: &str) -> Result<Loaded, ConfigError> {
    let file: File = serde_yaml_ng::from_str(text).map_err(|e| ConfigError::Decode {
        path: path.to_string(),
        message: e.to_string(),
    })?;
    match file.api_version.as_deref() {
        Some(API_VERSION) => {}
        Some(other) => {
            return Err(ConfigError::Invalid(format!(
                "{path}: no kind \"KubeSchedulerConfiguration\" is registered for version {other:?}"
            )))
        }
        None => {
            return Err(ConfigError::Invalid(format!(
                "{path}: apiVersion is required (want {API_VERSION:?})"
            )))
        }
    }
    if file.kind.as_deref() != Some("KubeSchedulerConfiguration") {
        return Err(ConfigError::Invalid(format!(
            "{path}: kind must be \"KubeSchedulerConfiguration\""
        )));
    }
    let mut profiles = Vec::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let configs = if file.profiles.is_empty() {
        vec![ProfileConfig::default()]
    } else {
        file.profiles
    };
    for (i, pc) in configs.iter().enumerate() {
        let at = format!("profiles[{i}]");
        let name = pc
            .scheduler_name
            .clone()
            .unwrap_or_else(|| DEFAULT_SCHEDULER_NAME.to_string());
        if name.is_empty() {
            return Err(invalid(
                &format!("{at}.schedulerName"),
                "Required value".into(),
            ));
        }
        if seen.insert(name.clone(), i).is_some() {
            return Err(invalid(
                &format!("{at}.schedulerName"),
                format!("Duplicate value: {name:?}"),
            ));
        }
        let mut choices = Choices::defaults();
        if let Some(p) = &pc.plugins {
            let points = [
                ("multiPoint", &p.multi_point),
                ("preEnqueue", &p.pre_enqueue),
                ("queueSort", &p.queue_sort),
                ("preFilter", &p.pre_filter),
                ("filter", &p.filter),
                ("postFilter", &p.post_filter),
                ("preScore", &p.pre_score),
                ("score", &p.score),
                ("reserve", &p.reserve),
                ("permit", &p.permit),
                ("preBind", &p.pre_bind),
                ("bind", &p.bind),
                ("postBind", &p.post_bind),
            ];
            for (point, set) in points {
                if let Some(set) = set {
                    apply(&mut choices, point, set, &format!("{at}.plugins.{point}"))?;
                }
            }
        }
        let args = parse_args(&pc.plugin_config, &at)?;
        profiles.push(build(&name, &choices, args));
    }
    Ok(Loaded {
        profiles,
        kubeconfig: file.client_connection.and_then(|c| c.kubeconfig),
        leader_election: file.leader_election,
    })
}

/// Read and parse a configuration file.
pub fn load(path: &Path) -> Result<Loaded, ConfigError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: shown.clone(),
        source,
    })?;
    parse(&text, &shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(p: &Profile) -> Vec<(&'static str, bool, i64)> {
        p.plugins
            .iter()
            .map(|w| (w.plugin.name(), w.filters, w.weight))
            .collect()
    }

    const HEAD: &str =
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";

    #[test]
    fn no_profiles_means_the_default_one() {
        let loaded = parse(HEAD, "c.yaml").unwrap();
        assert_eq!(loaded.profiles.len(), 1);
        let p = &loaded.profiles[0];
        assert_eq!(p.scheduler_name, "default-scheduler");
        assert_eq!(
            names(p),
            names(&Profile::default_named("default-scheduler"))
        );
        assert!(p.preemption);
    }

    #[test]
    fn extension_points_enable_disable_and_weigh() {
        let text = format!(
            "{HEAD}profiles:
- schedulerName: default-scheduler
- schedulerName: no-scoring
  plugins:
    score:
      disabled:
      - name: '*'
    postFilter:
      disabled:
      - name: DefaultPreemption
- schedulerName: packer
  plugins:
    multiPoint:
      disabled:
      - name: PodTopologySpread
    score:
      enabled:
      - name: NodeResourcesFit
        weight: 5
      disabled:
      - name: NodeResourcesBalancedAllocation
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
"
        );
        let loaded = parse(&text, "c.yaml").unwrap();
        let [default, no_scoring, packer] = &loaded.profiles[..] else {
            panic!("three profiles");
        };
        assert_eq!(default.plugins.len(), 8);
        assert!(no_scoring
            .plugins
            .iter()
            .all(|w| w.weight == 0 && w.filters));
        assert!(!no_scoring.preemption);
        assert_eq!(
            names(packer),
            [
                ("NodeUnschedulable", true, 0),
                ("NodeName", true, 0),
                ("TaintToleration", true, 3),
                ("NodeAffinity", true, 2),
                ("NodeResourcesFit", true, 5),
                ("InterPodAffinity", true, 2),
            ]
        );
    }

    #[test]
    fn mistakes_are_named() {
        let cases = [
            ("apiVersion: v1\nkind: KubeSchedulerConfiguration\n", "no kind"),
            (
                &format!("{HEAD}profiles:\n- schedulerName: a\n- schedulerName: a\n")[..],
                "profiles[1].schedulerName: Duplicate value: \"a\"",
            ),
            (
                &format!("{HEAD}profiles:\n- plugins:\n    filter:\n      enabled:\n      - name: Nope\n")[..],
                "profiles[0].plugins.filter.enabled[0]: plugin \"Nope\" does not exist",
            ),
            (&format!("{HEAD}bogus: 1\n")[..], "unknown field `bogus`"),
            (
                &format!("{HEAD}profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: Random\n")[..],
                "Unsupported value: \"Random\"",
            ),
        ];
        for (text, want) in cases {
            let err = parse(text, "c.yaml").err().expect(want).to_string();
            assert!(err.contains(want), "{err} lacks {want}");
        }
    }
}
