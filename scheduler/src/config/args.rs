//! A profile's `pluginConfig`: the arguments of NodeResourcesFit (scoring strategy and
//! resource weights) and PodTopologySpread (default constraints), checked as upstream's
//! validation words its errors. Other plugins' arguments are accepted and ignored.

use k8s_openapi::api::core::v1::TopologySpreadConstraint;
use serde::Deserialize;

use super::plan::check_name;
use super::{invalid, ConfigError, PluginConfig};
use crate::plugins::node_resources_fit::Strategy;
use crate::plugins::pod_topology_spread::Defaults;
use crate::plugins::Args;

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

/// The arguments a profile's `pluginConfig` gives, over the plugins' defaults.
pub fn parse_args(configs: &[PluginConfig], at: &str) -> Result<Args, ConfigError> {
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
                args.spread = match a.defaulting_type.as_deref().unwrap_or("System") {
                    "System" if !a.default_constraints.is_empty() => {
                        return Err(invalid(
                            &format!("{here}.args.defaultConstraints"),
                            "Invalid value: when .defaultingType is \"System\", .defaultConstraints must be empty".into(),
                        ))
                    }
                    "System" => Defaults::default(),
                    "List" => {
                        for (j, c) in a.default_constraints.iter().enumerate() {
                            let at = format!("{here}.args.defaultConstraints[{j}]");
                            if c.label_selector.is_some() {
                                return Err(invalid(&format!("{at}.labelSelector"), "Forbidden: constraint must not define a selector, as they deduced for each pod".into()));
                            }
                            if c.max_skew <= 0 {
                                return Err(invalid(&format!("{at}.maxSkew"), format!("Invalid value: {}: not in valid range [1, 2147483647]", c.max_skew)));
                            }
                        }
                        Defaults {
                            constraints: a.default_constraints,
                            system: false,
                        }
                    }
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
