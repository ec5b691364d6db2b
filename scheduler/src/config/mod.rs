//! `--config`: a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1, YAML or JSON)
//! turned into profiles. Each profile serves one schedulerName with its own plugin list: the
//! default plugins, then `multiPoint` changes, then each extension point's `disabled` (`*` for
//! all) and `enabled` (with score weights), and `pluginConfig` arguments.

use std::collections::BTreeMap;
use std::path::Path;

mod args;
mod plan;

use serde::Deserialize;

pub use plan::Plan;

use crate::framework::{Framework, Handle};
use crate::plugins;

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

/// One profile: the plugins to run at each point and their arguments ([`Profile::framework`]
/// builds them once the scheduler has a cluster to hand them).
#[derive(Clone)]
pub struct Profile {
    pub scheduler_name: String,
    pub plan: Plan,
    pub args: plugins::Args,
    /// The profile's percentageOfNodesToScore, else the file's (None: the adaptive default).
    pub percentage_of_nodes_to_score: Option<i32>,
}

impl Profile {
    /// The default profile (upstream's default plugins and weights) under `name`.
    pub fn default_named(name: &str) -> Profile {
        Profile {
            scheduler_name: name.to_string(),
            plan: Plan::defaults(),
            args: plugins::Args::default(),
            percentage_of_nodes_to_score: None,
        }
    }

    /// The profile's framework: its plan's plugins, built by the in-tree registry with the
    /// profile's arguments.
    pub fn framework(&self, handle: &Handle) -> Framework {
        let registry = |name: &str, handle: &Handle| plugins::new(name, &self.args, handle);
        let mut fw = Framework::new(
            &self.scheduler_name,
            |point| self.plan.at(point),
            &registry,
            handle,
        );
        fw.percentage_of_nodes_to_score = self.percentage_of_nodes_to_score.unwrap_or(0);
        fw
    }
}

/// What a configuration file yields.
pub struct Loaded {
    pub profiles: Vec<Profile>,
    pub leader_election: Option<LeaderElection>,
    pub kubeconfig: Option<String>,
}

fn invalid(at: &str, what: String) -> ConfigError {
    ConfigError::Invalid(format!("{at}: {what}"))
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
    let percentage = |p: Option<i32>, at: &str| match p {
        Some(v) if !(0..=100).contains(&v) => Err(invalid(
            at,
            format!("Invalid value: {v}: not in valid range [0-100]"),
        )),
        _ => Ok(p),
    };
    let file_percentage = percentage(
        file.percentage_of_nodes_to_score,
        "percentageOfNodesToScore",
    )?;
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
        let mut plan = Plan::defaults();
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
                    plan.apply(point, set, &format!("{at}.plugins.{point}"))?;
                }
            }
        }
        plan.check(&at, &name)?;
        let args = args::parse_args(&pc.plugin_config, &at)?;
        let own = percentage(
            pc.percentage_of_nodes_to_score,
            &format!("{at}.percentageOfNodesToScore"),
        )?;
        profiles.push(Profile {
            scheduler_name: name,
            plan,
            args,
            // As upstream: the profile's value when set (0 included), else the file's.
            percentage_of_nodes_to_score: own.or(file_percentage),
        });
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
    use crate::framework::Point;

    fn names(p: &Profile, point: Point) -> Vec<(&str, i64)> {
        p.plan
            .at(point)
            .iter()
            .map(|(n, w)| (n.as_str(), *w))
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
        assert_eq!(p.plan, Plan::defaults());
        assert_eq!(names(p, Point::PostFilter), [("DefaultPreemption", 0)]);
        assert_eq!(names(p, Point::Bind), [("DefaultBinder", 0)]);
        assert!(p.args.spread.system, "PodTopologySpread defaults to System");
        assert_eq!(p.args.spread.constraints.len(), 2);
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
- schedulerName: binders
  plugins:
    multiPoint:
      disabled:
      - name: '*'
      enabled:
      - name: NodeName
      - name: DefaultBinder
      - name: TaintToleration
        weight: 7
"
        );
        let loaded = parse(&text, "c.yaml").unwrap();
        let [default, no_scoring, packer, binders] = &loaded.profiles[..] else {
            panic!("four profiles");
        };
        assert_eq!(default.plan, Plan::defaults());
        assert!(names(no_scoring, Point::Score).is_empty());
        assert!(names(no_scoring, Point::PostFilter).is_empty());
        assert_eq!(
            names(no_scoring, Point::Filter),
            names(default, Point::Filter)
        );
        assert_eq!(
            names(packer, Point::Score),
            [
                ("TaintToleration", 3),
                ("NodeAffinity", 2),
                ("NodeResourcesFit", 5),
                ("InterPodAffinity", 2),
            ]
        );
        assert!(!names(packer, Point::Filter).contains(&("PodTopologySpread", 0)));
        assert_eq!(
            names(binders, Point::Filter),
            [("NodeName", 0), ("TaintToleration", 0)]
        );
        assert_eq!(names(binders, Point::Score), [("TaintToleration", 7)]);
        assert_eq!(names(binders, Point::Bind), [("DefaultBinder", 0)]);
        assert!(names(binders, Point::PostFilter).is_empty());
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
            (
                &format!("{HEAD}profiles:\n- plugins:\n    bind:\n      disabled:\n      - name: DefaultBinder\n")[..],
                "profiles[0].plugins.bind: at least one bind plugin is needed for profile with scheduler name \"default-scheduler\"",
            ),
            (
                &format!("{HEAD}profiles:\n- plugins:\n    permit:\n      enabled:\n      - name: NodeName\n")[..],
                "profiles[0].plugins.permit.enabled[0]: plugin \"NodeName\" does not extend permit",
            ),
            (
                &format!("{HEAD}profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args:\n      defaultingType: List\n      defaultConstraints:\n      - {{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway, labelSelector: {{}}}}\n")[..],
                "profiles[0].pluginConfig[0].args.defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector, as they deduced for each pod",
            ),
        ];
        for (text, want) in cases {
            let err = parse(text, "c.yaml").err().expect(want).to_string();
            assert!(err.contains(want), "{err} lacks {want}");
        }
    }

    #[test]
    fn percentage_of_nodes_to_score_is_per_profile_over_the_files() {
        let text = format!(
            "{HEAD}percentageOfNodesToScore: 30
profiles:
- schedulerName: inherits
- schedulerName: own
  percentageOfNodesToScore: 70
- schedulerName: adaptive
  percentageOfNodesToScore: 0
"
        );
        let loaded = parse(&text, "c.yaml").unwrap();
        let got: Vec<Option<i32>> = loaded
            .profiles
            .iter()
            .map(|p| p.percentage_of_nodes_to_score)
            .collect();
        assert_eq!(got, [Some(30), Some(70), Some(0)]);
        let none = parse(HEAD, "c.yaml").unwrap();
        assert_eq!(none.profiles[0].percentage_of_nodes_to_score, None);
        for (text, want) in [
            (
                format!("{HEAD}percentageOfNodesToScore: 101\n"),
                "percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]",
            ),
            (
                format!("{HEAD}profiles:\n- percentageOfNodesToScore: -1\n"),
                "profiles[0].percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]",
            ),
        ] {
            let err = parse(&text, "c.yaml").err().expect(want).to_string();
            assert!(err.contains(want), "{err} lacks {want}");
        }
    }

    #[test]
    fn the_binding_points_are_configurable() {
        // VolumeBinding extends reserve and preBind; DefaultBinder only bind.
        let text = format!(
            "{HEAD}profiles:
- plugins:
    reserve:
      enabled:
      - name: VolumeBinding
    preBind:
      enabled:
      - name: VolumeBinding
    bind:
      disabled:
      - name: '*'
      enabled:
      - name: DefaultBinder
    postBind:
      disabled:
      - name: '*'
"
        );
        let loaded = parse(&text, "c.yaml").unwrap();
        let p = &loaded.profiles[0];
        assert_eq!(names(p, Point::Bind), [("DefaultBinder", 0)]);
        assert_eq!(names(p, Point::Reserve), [("VolumeBinding", 0)]);
        assert_eq!(names(p, Point::PreBind), [("VolumeBinding", 0)]);
        for point in [Point::Permit, Point::PostBind] {
            assert!(names(p, point).is_empty(), "{point:?}");
        }
    }
}
