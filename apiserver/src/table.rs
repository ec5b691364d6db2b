//! The meta.k8s.io Table envelope around the printers' columns and cells, and the metadata-only
//! (PartialObjectMetadata) views.

use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};
use tinykube_proto::registry::ResourceInfo;

use crate::error::{ApiError, ApiResult};
use crate::printers;

/// What each row carries besides its cells (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncludeObject {
    None,
    Metadata,
    Object,
}

impl IncludeObject {
    pub fn parse(v: Option<&str>) -> ApiResult<Self> {
        match v {
            None | Some("") | Some("Metadata") => Ok(IncludeObject::Metadata),
            Some("None") => Ok(IncludeObject::None),
            Some("Object") => Ok(IncludeObject::Object),
            Some(other) => Err(ApiError::BadRequest(format!(
                "includeObject must be one of None, Metadata, Object; got {other:?}"
            ))),
        }
    }
}

/// The PartialObjectMetadata of an object.
pub fn partial_metadata(obj: &Value, meta_version: &str) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": format!("meta.k8s.io/{meta_version}"),
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// The column definitions of a resource's Tables: a built-in kind's printer, or a custom
/// resource version's `additionalPrinterColumns`.
fn column_definitions(info: &ResourceInfo) -> Vec<Value> {
    match &info.custom {
        Some(custom) => printers::custom::columns(&custom.version)
            .iter()
            .map(|c| c.to_json())
            .collect(),
        None => printers::columns(info.group, info.kind)
            .iter()
            .map(|c| c.to_json())
            .collect(),
    }
}

/// One row for an object; ages (AGE columns, `date` columns) count up to `now`.
pub fn row(
    info: &ResourceInfo,
    obj: &Value,
    include: IncludeObject,
    meta_version: &str,
    now: DateTime<Utc>,
) -> Value {
    let cells = match &info.custom {
        Some(custom) => printers::custom::cells_at(&custom.version, obj, now),
        None => printers::cells(info.group, info.kind, obj, now),
    };
    let object = match include {
        IncludeObject::None => Value::Null,
        IncludeObject::Metadata => partial_metadata(obj, meta_version),
        IncludeObject::Object => obj.clone(),
    };
    json!({ "cells": cells, "object": object })
}

/// A Table of objects; `list_meta` is the list's metadata (resourceVersion, continue, …).
pub fn table(
    info: &ResourceInfo,
    objs: &[Value],
    list_meta: Map<String, Value>,
    include: IncludeObject,
    meta_version: &str,
    now: DateTime<Utc>,
) -> Value {
    let columns = column_definitions(info);
    let rows: Vec<Value> = objs
        .iter()
        .map(|o| row(info, o, include, meta_version, now))
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": format!("meta.k8s.io/{meta_version}"),
        "metadata": Value::Object(list_meta),
        "columnDefinitions": columns,
        "rows": rows,
    })
}

/// A Table for a single watch event's object: upstream sends the column definitions only with
/// the first event of a stream.
pub fn watch_table(
    info: &ResourceInfo,
    obj: &Value,
    include: IncludeObject,
    meta_version: &str,
    with_columns: bool,
    now: DateTime<Utc>,
) -> Value {
    let columns = if with_columns {
        Value::Array(column_definitions(info))
    } else {
        Value::Null
    };
    let rv = obj
        .pointer("/metadata/resourceVersion")
        .cloned()
        .unwrap_or(Value::Null);
    json!({
        "kind": "Table",
        "apiVersion": format!("meta.k8s.io/{meta_version}"),
        "metadata": {"resourceVersion": rv},
        "columnDefinitions": columns,
        "rows": [row(info, obj, include, meta_version, now)],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};
    use tinykube_clock::Clock;

    #[test]
    fn ages_count_up_to_the_servers_clock() {
        let clock = Clock::manual(UNIX_EPOCH + Duration::from_secs(1_900_000_000));
        let created = crate::object::timestamp(clock.utc());
        let info = tinykube_proto::registry::builtin("", "v1", "configmaps").expect("served");
        let map = json!({"metadata": {"name": "c", "creationTimestamp": created}, "data": {}});
        let age = |clock: &Clock| {
            let row = row(info, &map, IncludeObject::None, "v1", clock.utc());
            row["cells"].as_array().and_then(|c| c.last()).cloned()
        };
        for (advance, want) in [(0, "0s"), (300, "5m"), (3 * 3600, "3h5m")] {
            clock.advance(Duration::from_secs(advance));
            assert_eq!(age(&clock), Some(json!(want)), "after {advance}s more");
        }
    }
}
