//! A profile's `plugins`: which plugins run at each extension point, in order, with score
//! weights. The defaults (every registered plugin at every point it implements), then
//! `multiPoint`, then each extension point's `disabled` (`*` for all) and `enabled`.

use std::collections::BTreeMap;

use super::{ConfigError, PluginRef, PluginSet};
use crate::framework::Point;
use crate::plugins::{self, registered, REGISTRY};

/// The plugins at each extension point, by name, with weights (0 except at Score).
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    lists: BTreeMap<Point, Vec<(String, i64)>>,
}

/// The points a key of `plugins` sets. PreFilter is Filter's pre-pass and PreScore Score's,
/// so `preFilter` and `filter` set the same list, as do `preScore` and `score`; `preEnqueue`
/// and `queueSort` only name inert plugins.
fn points_of(key: &str) -> &'static [Point] {
    match key {
        "multiPoint" => &Point::ALL,
        "preFilter" | "filter" => &[Point::Filter],
        "postFilter" => &[Point::PostFilter],
        "preScore" | "score" => &[Point::Score],
        "reserve" => &[Point::Reserve],
        "permit" => &[Point::Permit],
        "preBind" => &[Point::PreBind],
        "bind" => &[Point::Bind],
        "postBind" => &[Point::PostBind],
        _ => &[],
    }
}

pub(super) fn check_name(name: &str, at: &str) -> Result<(), ConfigError> {
    if name == "*" || registered(name).is_some() || plugins::INERT.contains(&name) {
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

impl Plan {
    /// Upstream's default profile: every registered plugin at each point it implements, in
    /// registry order.
    pub fn defaults() -> Plan {
        let mut lists: BTreeMap<Point, Vec<(String, i64)>> = BTreeMap::new();
        for r in REGISTRY {
            for point in r.points {
                let weight = if *point == Point::Score { r.weight } else { 0 };
                lists
                    .entry(*point)
                    .or_default()
                    .push((r.name.to_string(), weight));
            }
        }
        Plan { lists }
    }

    /// The plugins at `point`, in order, with their weights.
    pub fn at(&self, point: Point) -> &[(String, i64)] {
        self.lists.get(&point).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Apply one key's set (`multiPoint`, `filter`, `bind`, …) found at `at`.
    pub(super) fn apply(
        &mut self,
        key: &str,
        set: &PluginSet,
        at: &str,
    ) -> Result<(), ConfigError> {
        let points = points_of(key);
        for (i, d) in set.disabled.iter().enumerate() {
            check_name(&d.name, &format!("{at}.disabled[{i}]"))?;
            for point in points {
                let list = self.lists.entry(*point).or_default();
                list.retain(|(n, _)| d.name != "*" && *n != d.name);
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
            let Some(r) = registered(&e.name) else {
                continue; // inert
            };
            for point in points {
                if !r.points.contains(point) {
                    if key == "multiPoint" {
                        continue;
                    }
                    return Err(ConfigError::Invalid(format!(
                        "{here}: plugin {:?} does not extend {key}",
                        e.name
                    )));
                }
                let w = if *point == Point::Score {
                    weight.unwrap_or(r.weight)
                } else {
                    0
                };
                let list = self.lists.entry(*point).or_default();
                match list.iter_mut().find(|(n, _)| *n == e.name) {
                    Some(entry) => entry.1 = w,
                    None => list.push((e.name.clone(), w)),
                }
            }
        }
        Ok(())
    }

    /// What upstream refuses to build a framework from.
    pub(super) fn check(&self, at: &str, scheduler_name: &str) -> Result<(), ConfigError> {
        if self.at(Point::Bind).is_empty() {
            return Err(ConfigError::Invalid(format!(
                "{at}.plugins.bind: at least one bind plugin is needed for profile with scheduler name {scheduler_name:?}"
            )));
        }
        Ok(())
    }
}
