//! `managedFields` bookkeeping: the entries upstream's field manager keeps for Update-type writes
//! and for server-side apply, with its conflicts.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value};

use super::ops::{compare, compare_sets, field_set, fields_of, merge, remove, same_in_scope};
use super::ops::{Nodes, Scope};
use super::set::{quote, FieldSet, ManagedError};
use super::types::TypeInfo;

/// Who writes: the manager, the request's apiVersion, the subresource and the time (RFC 3339).
#[derive(Clone, Copy, Debug)]
pub struct Writer<'a> {
    /// The field manager (`kubectl`, `kube-controller-manager`, …).
    pub manager: &'a str,
    /// The apiVersion of the request (`v1`, `apps/v1`).
    pub api_version: &'a str,
    /// `None` for the main resource, `Some("status")` for the status subresource.
    pub subresource: Option<&'a str>,
    /// When the write happens, RFC 3339.
    pub time: &'a str,
}

const APPLY: &str = "Apply";
const UPDATE: &str = "Update";

/// One `managedFields` entry: its JSON (kept as read) and its parsed field set.
struct Entry {
    raw: Map<String, Value>,
    fields: FieldSet,
    /// Whether `fields` or the stamp changed since it was read (else `raw` is written back).
    dirty: bool,
}

impl Entry {
    fn parse(v: &Value) -> Result<Entry, ManagedError> {
        let Value::Object(raw) = v else {
            return Err(ManagedError::Entry(v.to_string()));
        };
        match raw.get("fieldsType") {
            None | Some(Value::Null) => {}
            Some(t) if t == "FieldsV1" => {}
            Some(other) => {
                return Err(ManagedError::Entry(format!("unknown fieldsType {other}")));
            }
        }
        let fields = match raw.get("fieldsV1") {
            None | Some(Value::Null) => FieldSet::default(),
            Some(v) => FieldSet::from_fields_v1(v)?,
        };
        Ok(Entry {
            raw: raw.clone(),
            fields,
            dirty: false,
        })
    }

    fn new(writer: &Writer, operation: &str, fields: FieldSet) -> Entry {
        let mut raw = Map::new();
        raw.insert("manager".into(), writer.manager.into());
        raw.insert("operation".into(), operation.into());
        if let Some(sub) = writer.subresource {
            raw.insert("subresource".into(), sub.into());
        }
        let mut entry = Entry {
            raw,
            fields,
            dirty: true,
        };
        entry.stamp(writer);
        entry
    }

    fn text(&self, key: &str) -> &str {
        self.raw.get(key).and_then(Value::as_str).unwrap_or("")
    }

    fn subresource(&self) -> Option<&str> {
        Some(self.text("subresource")).filter(|s| !s.is_empty())
    }

    fn scope(&self) -> Scope {
        Scope::of(self.subresource())
    }

    fn is(&self, writer: &Writer, operation: &str) -> bool {
        self.text("manager") == writer.manager
            && self.text("operation") == operation
            && self.subresource() == writer.subresource.filter(|s| !s.is_empty())
    }

    /// Record a write by `writer` now.
    fn stamp(&mut self, writer: &Writer) {
        self.raw
            .insert("apiVersion".into(), writer.api_version.into());
        self.raw.insert("time".into(), writer.time.into());
        self.dirty = true;
    }

    /// Replace the field set (the entry is rewritten only if it changed).
    fn set_fields(&mut self, fields: FieldSet) {
        if fields != self.fields {
            self.fields = fields;
            self.dirty = true;
        }
    }

    fn to_value(&self) -> Value {
        if !self.dirty {
            return Value::Object(self.raw.clone());
        }
        let mut raw = self.raw.clone();
        raw.insert("fieldsType".into(), "FieldsV1".into());
        raw.insert("fieldsV1".into(), self.fields.to_fields_v1());
        Value::Object(raw)
    }
}

/// The entries of a `managedFields` list; an unreadable list counts as empty, as upstream
/// resets it.
fn parse_entries(managed: &[Value]) -> Vec<Entry> {
    managed
        .iter()
        .map(Entry::parse)
        .collect::<Result<_, _>>()
        .unwrap_or_default()
}

/// `managedFields` after an Update-type write (create, PUT, any PATCH) turned `old` (`None` for a
/// create) into `new`.
///
/// The writer's Update entry gains the added and modified fields, every other entry of the same
/// scope loses the modified and removed ones; entries are pruned to the fields `new` still has and
/// dropped when empty. The writer's entry gets `time` when its set changes; a new entry is
/// appended.
pub fn update(
    managed: &[Value],
    old: Option<&Value>,
    new: &Value,
    writer: &Writer,
    info: TypeInfo,
) -> Vec<Value> {
    let scope = Scope::of(writer.subresource);
    if old.is_none() && managed.is_empty() {
        // A plain create: the writer owns everything it wrote.
        let fields = field_set(new, scope, info, Nodes::All);
        if fields.is_empty() {
            return Vec::new();
        }
        return vec![Entry::new(writer, UPDATE, fields).to_value()];
    }
    if old.is_some_and(|old| same_in_scope(old, new, scope, info)) {
        // Nothing this write could own changed: the entries stay as they are.
        return parse_entries(managed).iter().map(Entry::to_value).collect();
    }
    let nothing = Value::Object(Map::new());
    let (diff, present) = compare_sets(old.unwrap_or(&nothing), new, scope, info);
    let gained = diff.added.union(&diff.modified);
    let lost = diff.modified.union(&diff.removed);

    let mut entries = parse_entries(managed);
    let mut own = None;
    for (i, entry) in entries.iter_mut().enumerate() {
        if entry.scope() != scope {
            continue;
        }
        if entry.is(writer, UPDATE) {
            own = Some(i);
        } else {
            let fields = entry.fields.difference(&lost).intersection(&present);
            entry.set_fields(fields);
        }
    }
    match own.and_then(|i| entries.get_mut(i)) {
        Some(entry) => {
            let fields = entry.fields.union(&gained).intersection(&present);
            if fields != entry.fields {
                entry.set_fields(fields);
                entry.stamp(writer);
            }
        }
        None => entries.push(Entry::new(writer, UPDATE, gained.intersection(&present))),
    }
    entries.retain(|e| !e.fields.is_empty());
    entries.iter().map(Entry::to_value).collect()
}

/// One conflict of an apply: another manager owns a field the apply would change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The other manager's name.
    pub manager: String,
    /// The other entry's apiVersion; empty when it is an Apply entry (upstream names appliers
    /// without a version).
    pub api_version: String,
    /// The field path as displayed, e.g. `.spec.replicas`.
    pub path: String,
    /// The other entry's subresource, if any.
    pub subresource: Option<String>,
}

impl Conflict {
    /// The other manager as upstream names it: `"kubectl" using apps/v1`.
    pub fn describe_manager(&self) -> String {
        describe(
            &self.manager,
            &self.api_version,
            self.subresource.as_deref(),
        )
    }
}

/// Upstream's `printManager`.
fn describe(manager: &str, api_version: &str, subresource: Option<&str>) -> String {
    let mut out = quote(manager);
    if let Some(sub) = subresource {
        out.push_str(&format!(" with subresource {}", quote(sub)));
    }
    if !api_version.is_empty() {
        out.push_str(&format!(" using {api_version}"));
    }
    out
}

impl fmt::Display for Conflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "conflict with {}: {}",
            self.describe_manager(),
            self.path
        )
    }
}

/// Keep `config`'s part of the object that `scope` writes; `managedFields` is never applied.
fn scoped(config: &Value, scope: Scope, has_status: bool) -> Value {
    let Value::Object(fields) = config else {
        return config.clone();
    };
    let mut out: Map<String, Value> = fields
        .iter()
        .filter(|(k, _)| {
            scope.covers(k, has_status) || k.as_str() == "apiVersion" || k.as_str() == "kind"
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Some(Value::Object(meta)) = out.get_mut("metadata") {
        meta.shift_remove("managedFields");
    }
    Value::Object(out)
}

/// A server-side apply of `config` by `writer` onto `live` (`None`: the object does not exist).
///
/// Fails with the conflicts, sorted by manager then path, when the apply would change fields
/// other managers own and `force` is off; with `force` the writer takes them over. Fields the
/// writer applied before and no longer applies are removed unless another manager owns them.
/// Returns the new object with `metadata.managedFields` set.
pub fn apply(
    live: Option<&Value>,
    config: &Value,
    managed: &[Value],
    writer: &Writer,
    force: bool,
    info: TypeInfo,
) -> Result<Value, Vec<Conflict>> {
    let scope = Scope::of(writer.subresource);
    let nothing = Value::Object(Map::new());
    let live = live.unwrap_or(&nothing);
    let config = scoped(config, scope, info.has_status);
    let applied = fields_of(&merge(&nothing, &config, info), scope, info);
    let mut merged = merge(live, &config, info);
    let changed = compare(live, &merged, scope, info).changed();

    let mut entries = parse_entries(managed);
    let own = entries.iter().position(|e| e.is(writer, APPLY));
    let others = |i: usize, e: &Entry| Some(i) != own && e.scope() == scope;

    let mut conflicts = Vec::new();
    for (_, entry) in entries.iter().enumerate().filter(|(i, e)| others(*i, e)) {
        let operation = entry.text("operation");
        for path in entry.fields.intersection(&changed).paths() {
            conflicts.push(Conflict {
                manager: entry.text("manager").to_string(),
                api_version: match operation {
                    APPLY => String::new(),
                    _ => entry.text("apiVersion").to_string(),
                },
                path,
                subresource: entry.subresource().map(str::to_string),
            });
        }
    }
    if !conflicts.is_empty() {
        if !force {
            conflicts.sort_by(|a, b| a.manager.cmp(&b.manager));
            return Err(conflicts);
        }
        for (i, entry) in entries.iter_mut().enumerate() {
            if others(i, entry) {
                let fields = entry.fields.difference(&changed);
                entry.set_fields(fields);
            }
        }
    }

    // Fields the writer stopped applying go, unless someone else (or this apply) still owns them.
    let owned_by_others = entries
        .iter()
        .enumerate()
        .filter(|(i, e)| others(*i, e))
        .fold(FieldSet::default(), |acc, (_, e)| acc.union(&e.fields));
    if let Some(previous) = own.and_then(|i| entries.get(i)) {
        let keep = owned_by_others.union(&applied);
        let dropped = previous.fields.difference(&keep).sparing(&keep);
        merged = remove(&merged, &dropped, info);
    }

    let present = field_set(&merged, scope, info, Nodes::All);
    for (i, entry) in entries.iter_mut().enumerate() {
        if others(i, entry) {
            let fields = entry.fields.intersection(&present);
            entry.set_fields(fields);
        }
    }
    let object_changed = merged != *live;
    match own.and_then(|i| entries.get_mut(i)) {
        Some(entry) => {
            if entry.fields != applied || object_changed {
                entry.stamp(writer);
            }
            entry.set_fields(applied);
        }
        None => entries.push(Entry::new(writer, APPLY, applied)),
    }
    entries.retain(|e| !e.fields.is_empty());
    set_managed_fields(&mut merged, entries.iter().map(Entry::to_value).collect());
    Ok(merged)
}

/// Set `obj`'s `metadata.managedFields` to `list`, or remove it when `list` is empty.
pub fn set_managed_fields(obj: &mut Value, list: Vec<Value>) {
    let Value::Object(fields) = obj else {
        return;
    };
    let meta = fields
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        if list.is_empty() {
            meta.shift_remove("managedFields");
        } else {
            meta.insert("managedFields".into(), Value::Array(list));
        }
    }
}

/// Upstream's message for an apply's conflicts (`k8s.io/apimachinery`'s `NewConflictError`):
/// one conflict on one line, several grouped by manager.
pub fn conflict_message(conflicts: &[Conflict]) -> String {
    if let [only] = conflicts {
        return format!("Apply failed with 1 conflict: {only}");
    }
    let mut by_manager: BTreeMap<(&str, &str, Option<&str>), Vec<&str>> = BTreeMap::new();
    for c in conflicts {
        let who = (
            c.manager.as_str(),
            c.api_version.as_str(),
            c.subresource.as_deref(),
        );
        by_manager.entry(who).or_default().push(&c.path);
    }
    let mut lines = Vec::new();
    for ((manager, api_version, subresource), paths) in by_manager {
        lines.push(format!(
            "conflicts with {}:",
            describe(manager, api_version, subresource)
        ));
        lines.extend(paths.iter().map(|p| format!("- {p}")));
    }
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}
