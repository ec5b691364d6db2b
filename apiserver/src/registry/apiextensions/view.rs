//! The CRD as upstream's validation sees it: the internal `apiextensions` type that v1 converts
//! to, where per-version schemas, subresources, printer columns and selectable fields that are
//! the same in every version move to the top of the spec (`spec.validation`,
//! `spec.subresources`, `spec.additionalPrinterColumns`, `spec.selectableFields`). Error paths
//! follow that shape, which is why a one-version CRD's schema errors read
//! `spec.validation.openAPIV3Schema…`. Plus the JSON accessors the other files share.

use serde_json::Value;

/// A field of an object, `null` read as absent.
pub(super) fn get<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

/// A string field, empty when absent.
pub(super) fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A boolean field, false when absent.
pub(super) fn flag(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// The items of an array field (none when absent or not an array).
pub(super) fn items<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// The strings of an array field.
pub(super) fn strings<'a>(v: &'a Value, key: &str) -> Vec<&'a str> {
    str_list(v.get(key))
}

/// The strings of an array value (none when absent or not an array).
pub(super) fn str_list(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// A per-version field as the conversion compares it: absent, `null` and an empty list are
/// the same (Go's semantic equality treats nil and empty slices alike).
fn per_version<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    get(v, key).filter(|x| x.as_array().is_none_or(|a| !a.is_empty()))
}

/// The per-version fields upstream hoists when they are identical in every version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Hoisted {
    Schema,
    Subresources,
    Columns,
    SelectableFields,
}

impl Hoisted {
    /// The field's name in a version.
    fn version_key(self) -> &'static str {
        match self {
            Hoisted::Schema => "schema",
            Hoisted::Subresources => "subresources",
            Hoisted::Columns => "additionalPrinterColumns",
            Hoisted::SelectableFields => "selectableFields",
        }
    }

    /// The field's path at the top of the internal spec.
    pub(super) fn top_path(self) -> &'static str {
        match self {
            Hoisted::Schema => "spec.validation",
            Hoisted::Subresources => "spec.subresources",
            Hoisted::Columns => "spec.additionalPrinterColumns",
            Hoisted::SelectableFields => "spec.selectableFields",
        }
    }
}

/// A CRD's spec in the internal shape.
pub(super) struct View<'a> {
    pub spec: &'a Value,
    pub versions: &'a [Value],
    /// Which fields moved to the top (identical in every version, or absent in all).
    hoisted: [bool; 4],
}

impl<'a> View<'a> {
    pub fn new(obj: &'a Value) -> Self {
        static NULL: Value = Value::Null;
        let spec = obj.get("spec").unwrap_or(&NULL);
        let versions = items(spec, "versions");
        let identical = |h: Hoisted| {
            let first = versions
                .first()
                .and_then(|v| per_version(v, h.version_key()));
            versions
                .iter()
                .all(|v| per_version(v, h.version_key()) == first)
        };
        View {
            spec,
            versions,
            hoisted: [
                identical(Hoisted::Schema),
                identical(Hoisted::Subresources),
                identical(Hoisted::Columns),
                identical(Hoisted::SelectableFields),
            ],
        }
    }

    fn is_hoisted(&self, h: Hoisted) -> bool {
        !self.versions.is_empty() && self.hoisted[h as usize]
    }

    /// The top-level value of `h` (the first version's, when hoisted).
    pub fn top(&self, h: Hoisted) -> Option<&'a Value> {
        if self.is_hoisted(h) {
            per_version(&self.versions[0], h.version_key())
        } else {
            None
        }
    }

    /// Version `i`'s own value of `h` (none when it moved to the top).
    pub fn own(&self, i: usize, h: Hoisted) -> Option<&'a Value> {
        if self.is_hoisted(h) {
            None
        } else {
            self.versions
                .get(i)
                .and_then(|v| per_version(v, h.version_key()))
        }
    }

    /// The value of `h` that applies to version `i`, wherever it lives.
    pub fn effective(&self, i: usize, h: Hoisted) -> Option<&'a Value> {
        self.top(h).or_else(|| self.own(i, h))
    }

    /// The `openAPIV3Schema` that applies to version `i`.
    pub fn schema_for(&self, i: usize) -> Option<&'a Value> {
        self.effective(i, Hoisted::Schema)
            .and_then(|s| get(s, "openAPIV3Schema"))
    }

    /// Every `openAPIV3Schema` of the spec (the top one or each version's).
    pub fn schemas(&self) -> Vec<&'a Value> {
        if let Some(top) = self.top(Hoisted::Schema) {
            return get(top, "openAPIV3Schema").into_iter().collect();
        }
        (0..self.versions.len())
            .filter_map(|i| self.own(i, Hoisted::Schema))
            .filter_map(|s| get(s, "openAPIV3Schema"))
            .collect()
    }

    /// Whether any version serves the `status` subresource.
    pub fn any_status(&self) -> bool {
        (0..self.versions.len()).any(|i| self.status_enabled(i))
    }

    /// Whether version `i` serves the `status` subresource.
    pub fn status_enabled(&self, i: usize) -> bool {
        self.effective(i, Hoisted::Subresources)
            .and_then(|s| get(s, "status"))
            .is_some()
    }

    /// The versions as the internal type has them: without the fields that moved to the top.
    /// Errors about the version list show this (upstream prints the internal Go structs).
    pub fn internal_versions(&self) -> Vec<Value> {
        self.versions
            .iter()
            .map(|v| {
                let mut v = v.clone();
                if let Some(m) = v.as_object_mut() {
                    for h in [
                        Hoisted::Schema,
                        Hoisted::Subresources,
                        Hoisted::Columns,
                        Hoisted::SelectableFields,
                    ] {
                        if self.is_hoisted(h) {
                            m.remove(h.version_key());
                        }
                    }
                }
                v
            })
            .collect()
    }

    /// `spec.preserveUnknownFields` (false when absent, as v1 converts it).
    pub fn preserve_unknown_fields(&self) -> bool {
        flag(self.spec, "preserveUnknownFields")
    }
}

/// Whether `pred` holds for `schema` or any schema nested in it (upstream's SchemaHas).
pub(super) fn schema_has(schema: &Value, pred: &dyn Fn(&Value) -> bool) -> bool {
    if !schema.is_object() {
        return false;
    }
    if pred(schema) {
        return true;
    }
    let one = |k: &str| get(schema, k).is_some_and(|s| schema_has(s, pred));
    let list = |k: &str| items(schema, k).iter().any(|s| schema_has(s, pred));
    let map = |k: &str| {
        get(schema, k)
            .and_then(Value::as_object)
            .is_some_and(|m| m.values().any(|s| schema_has(s, pred)))
    };
    one("items")
        || list("items")
        || list("allOf")
        || list("anyOf")
        || list("oneOf")
        || one("not")
        || map("properties")
        || one("additionalProperties")
        || map("patternProperties")
        || one("additionalItems")
        || map("definitions")
        || map("dependencies")
}
