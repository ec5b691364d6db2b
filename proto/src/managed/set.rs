//! Field sets: path elements, upstream's `fieldpath.Set` and its `FieldsV1` encoding.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value};

/// One step of a field path (upstream's `PathElement`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PathElement {
    /// A field of an object: `f:NAME`, displayed `.NAME`.
    Field(String),
    /// An associative-list element by its key fields (sorted by name, each value as canonical
    /// JSON): `k:{"name":"nginx"}`, displayed `[name="nginx"]`.
    Key(Vec<(String, String)>),
    /// A set-list element as canonical JSON: `v:"x"`, displayed `[="x"]`.
    Value(String),
    /// A list element by position: `i:N`, displayed `[N]` (parsed, never produced).
    Index(usize),
}

impl PathElement {
    fn parse(key: &str) -> Result<Self, ManagedError> {
        let bad = || ManagedError::PathElement(key.to_string());
        let (kind, rest) = key.split_once(':').ok_or_else(bad)?;
        match kind {
            "f" => Ok(Self::Field(rest.to_string())),
            "k" => match serde_json::from_str::<Value>(rest) {
                Ok(Value::Object(fields)) if !fields.is_empty() => {
                    let mut pairs: Vec<(String, String)> = fields
                        .iter()
                        .map(|(k, v)| (k.clone(), canonical(v)))
                        .collect();
                    pairs.sort();
                    Ok(Self::Key(pairs))
                }
                _ => Err(bad()),
            },
            "v" => serde_json::from_str::<Value>(rest)
                .map(|v| Self::Value(canonical(&v)))
                .map_err(|_| bad()),
            "i" => rest.parse().map(Self::Index).map_err(|_| bad()),
            _ => Err(bad()),
        }
    }

    /// The `FieldsV1` key of this element.
    fn encode(&self) -> String {
        match self {
            Self::Field(name) => format!("f:{name}"),
            Self::Key(pairs) => {
                let body: Vec<String> = pairs
                    .iter()
                    .map(|(k, v)| format!("{}:{v}", quote(k)))
                    .collect();
                format!("k:{{{}}}", body.join(","))
            }
            Self::Value(json) => format!("v:{json}"),
            Self::Index(i) => format!("i:{i}"),
        }
    }
}

impl fmt::Display for PathElement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Field(name) => write!(f, ".{name}"),
            Self::Key(pairs) => {
                let body: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
                write!(f, "[{}]", body.join(","))
            }
            Self::Value(json) => write!(f, "[={json}]"),
            Self::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// Why managed fields could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManagedError {
    #[error("invalid FieldsV1: expected an object, got {0}")]
    NotAnObject(String),
    #[error("invalid FieldsV1: bad path element {0:?}")]
    PathElement(String),
    #[error("invalid managedFields entry: {0}")]
    Entry(String),
}

/// A set of field paths (upstream's `fieldpath.Set`), as stored in `FieldsV1`.
///
/// `members` are the paths ending at this node; `children` the non-empty sets below it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSet {
    pub(super) members: BTreeSet<PathElement>,
    pub(super) children: BTreeMap<PathElement, FieldSet>,
}

impl FieldSet {
    /// Parse upstream's `FieldsV1` JSON.
    pub fn from_fields_v1(v: &Value) -> Result<FieldSet, ManagedError> {
        let Value::Object(map) = v else {
            return Err(ManagedError::NotAnObject(v.to_string()));
        };
        let mut set = FieldSet::default();
        for (key, child) in map.iter().filter(|(k, _)| k.as_str() != ".") {
            let pe = PathElement::parse(key)?;
            let Value::Object(inner) = child else {
                return Err(ManagedError::NotAnObject(child.to_string()));
            };
            let member = inner.is_empty() || inner.contains_key(".");
            set.insert(pe, member, FieldSet::from_fields_v1(child)?);
        }
        Ok(set)
    }

    /// Encode as `FieldsV1` JSON.
    pub fn to_fields_v1(&self) -> Value {
        let mut out = Map::new();
        for pe in self.elements() {
            let mut node = Map::new();
            if let Some(child) = self.children.get(pe) {
                if self.members.contains(pe) {
                    node.insert(".".to_string(), Value::Object(Map::new()));
                }
                if let Value::Object(fields) = child.to_fields_v1() {
                    node.extend(fields);
                }
            }
            out.insert(pe.encode(), Value::Object(node));
        }
        Value::Object(out)
    }

    /// Whether the set has no paths (children are never empty: [`FieldSet::insert`] keeps
    /// them out).
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    /// The paths in either set.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.absorb(other);
        out
    }

    /// Add `other`'s paths to these.
    fn absorb(&mut self, other: &FieldSet) {
        self.members.extend(other.members.iter().cloned());
        for (pe, theirs) in &other.children {
            match self.children.get_mut(pe) {
                Some(mine) => mine.absorb(theirs),
                None => {
                    self.children.insert(pe.clone(), theirs.clone());
                }
            }
        }
    }

    /// The paths of `self` that are not in `other`.
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet {
            members: self.members.difference(&other.members).cloned().collect(),
            children: BTreeMap::new(),
        };
        for (pe, child) in &self.children {
            let rest = match other.children.get(pe) {
                Some(theirs) => child.difference(theirs),
                None => child.clone(),
            };
            out.insert(pe.clone(), false, rest);
        }
        out
    }

    /// The paths in both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet {
            members: self.members.intersection(&other.members).cloned().collect(),
            children: BTreeMap::new(),
        };
        for (pe, child) in &self.children {
            if let Some(theirs) = other.children.get(pe) {
                out.insert(pe.clone(), false, child.intersection(theirs));
            }
        }
        out
    }

    /// Every member path, displayed as upstream does
    /// (`.spec.template.spec.containers[name="nginx"].image`),
    /// in path order (a parent before its children).
    pub fn paths(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.collect_paths("", &mut out);
        out
    }

    fn collect_paths(&self, prefix: &str, out: &mut Vec<String>) {
        for pe in self.elements() {
            let path = format!("{prefix}{pe}");
            if self.members.contains(pe) {
                out.push(path.clone());
            }
            if let Some(child) = self.children.get(pe) {
                child.collect_paths(&path, out);
            }
        }
    }

    /// The path elements at this node, members or parents, in order (both are sorted: a merge).
    fn elements(&self) -> Vec<&PathElement> {
        let mut out = Vec::with_capacity(self.members.len() + self.children.len());
        let mut members = self.members.iter().peekable();
        let mut parents = self.children.keys().peekable();
        loop {
            let next = match (members.peek(), parents.peek()) {
                (Some(m), Some(p)) if m < p => members.next(),
                (Some(m), Some(p)) if m > p => parents.next(),
                (Some(_), Some(_)) => {
                    parents.next();
                    members.next()
                }
                (Some(_), None) => members.next(),
                (None, Some(_)) => parents.next(),
                (None, None) => break,
            };
            out.extend(next);
        }
        out
    }

    /// Add `pe` (as a member if `member`) with the paths `below` it.
    pub(super) fn insert(&mut self, pe: PathElement, member: bool, below: FieldSet) {
        if member {
            self.members.insert(pe.clone());
        }
        if below.is_empty() {
            return;
        }
        match self.children.get_mut(&pe) {
            Some(existing) => existing.absorb(&below),
            None => {
                self.children.insert(pe, below);
            }
        }
    }

    /// `self` without the members that have paths of `keep` below them: removing such a node
    /// would take `keep`'s fields with it.
    pub(super) fn sparing(&self, keep: &FieldSet) -> FieldSet {
        let mut out = FieldSet {
            members: self
                .members
                .iter()
                .filter(|pe| !keep.children.contains_key(*pe))
                .cloned()
                .collect(),
            children: BTreeMap::new(),
        };
        for (pe, child) in &self.children {
            let spared = match keep.children.get(pe) {
                Some(kept) => child.sparing(kept),
                None => child.clone(),
            };
            out.insert(pe.clone(), false, spared);
        }
        out
    }
}

/// JSON with object keys sorted: the canonical text of key and set values.
pub(super) fn canonical(v: &Value) -> String {
    sorted(v).to_string()
}

fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut fields: Vec<(&String, &Value)> = map.iter().collect();
            fields.sort_by(|a, b| a.0.cmp(b.0));
            Value::Object(
                fields
                    .into_iter()
                    .map(|(k, v)| (k.clone(), sorted(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        _ => v.clone(),
    }
}

/// A string as a JSON (and, for plain names, Go `%q`) literal.
pub(super) fn quote(s: &str) -> String {
    Value::from(s).to_string()
}
