//! Evaluating a custom object against the `x-kubernetes-validations` rules of its schema, as
//! upstream's apiextensions-apiserver does: rules run on every present, non-null value (per item
//! of a list, per value of a map), transition rules only where an old value correlates, within
//! one cost budget per object.

use std::sync::Arc;

use cel::objects::OptionalValue;
use cel::Value as Cel;
use serde_json::Value;

use super::cost::{PER_CALL_LIMIT, RUNTIME_BUDGET};
use super::engine::{engine, EvalError};
use super::fieldpath;
use super::values::{to_cel, Node};
use crate::registry::field::FieldError;

/// Upstream's limit on an evaluated `messageExpression`.
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

/// The state of one object's validation.
struct Walk {
    errors: Vec<FieldError>,
    /// What is left of the cost budget; `None` once it ran out (nothing more is evaluated).
    budget: Option<u64>,
}

/// One rule of `x-kubernetes-validations`, as read from the schema.
pub struct Rule<'a> {
    pub rule: &'a str,
    pub message: &'a str,
    pub message_expression: &'a str,
    pub reason: &'a str,
    pub field_path: &'a str,
    pub optional_old_self: Option<bool>,
}

impl<'a> Rule<'a> {
    pub fn read(v: &'a Value) -> Rule<'a> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("");
        Rule {
            rule: s("rule"),
            message: s("message"),
            message_expression: s("messageExpression"),
            reason: s("reason"),
            field_path: s("fieldPath"),
            optional_old_self: v.get("optionalOldSelf").and_then(Value::as_bool),
        }
    }

    /// The rule as its errors name it: its message if it has one, else its text.
    fn display(&self) -> &'a str {
        if self.message.trim().is_empty() {
            self.rule.trim()
        } else {
            self.message.trim()
        }
    }

    fn default_message(&self) -> String {
        if self.message.is_empty() {
            format!("failed rule: {}", self.display())
        } else {
            self.message.trim().to_string()
        }
    }
}

/// See [`super::validate`].
pub fn validate(schema: &Value, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut walk = Walk {
        errors: Vec::new(),
        budget: Some(RUNTIME_BUDGET),
    };
    walk.node(&Node(Some(schema)), obj, old, "", true, false);
    walk.errors
}

/// `parent.child` as upstream's field paths print it.
fn child(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}.{name}")
    }
}

impl Walk {
    /// Validates `value` (at `path`, `""` for the root) and what it contains. `ratchet` tells
    /// that the nearest correlatable value equals its old value, so that errors of rules that
    /// don't read `oldSelf` are dropped (upstream's CRD validation ratcheting).
    fn node(
        &mut self,
        schema: &Node,
        value: &Value,
        old: Option<&Value>,
        path: &str,
        root: bool,
        ratchet: bool,
    ) {
        if value.is_null() || self.budget.is_none() {
            return;
        }
        let old = old.filter(|o| !o.is_null());
        let ratchet = match old {
            Some(o) => o == value,
            None => ratchet,
        };
        self.rules(schema, value, old, path, root, ratchet);
        match value {
            Value::Array(items) => {
                let item_schema = schema.items();
                if item_schema.0.is_none() {
                    return;
                }
                let keys = if schema.list_type() == "map" {
                    schema.list_map_keys()
                } else {
                    Vec::new()
                };
                let olds = old.and_then(Value::as_array);
                for (i, item) in items.iter().enumerate() {
                    let old_item = if keys.is_empty() {
                        None
                    } else {
                        olds.and_then(|o| o.iter().find(|c| same_keys(c, item, &keys)))
                    };
                    let p = format!("{path}[{i}]");
                    let embedded = item_schema.embedded();
                    self.node(&item_schema, item, old_item, &p, embedded, ratchet);
                }
            }
            Value::Object(fields) => {
                let correlatable = schema.map_correlatable();
                let old_fields = old.and_then(Value::as_object).filter(|_| correlatable);
                if let Some(extra) = schema.additional() {
                    for (k, v) in fields {
                        let o = old_fields.and_then(|f| f.get(k));
                        let p = format!("{path}[{k}]");
                        self.node(&extra, v, o, &p, extra.embedded(), ratchet);
                    }
                }
                if schema.properties().is_some() {
                    for (k, v) in fields {
                        let prop = schema.property(k);
                        if prop.0.is_none() {
                            continue;
                        }
                        let o = old_fields.and_then(|f| f.get(k));
                        let p = child(path, k);
                        self.node(&prop, v, o, &p, prop.embedded(), ratchet);
                    }
                }
            }
            _ => {}
        }
    }

    fn out_of_budget(&mut self, path: &str, ty: &str, detail: &str) {
        self.errors
            .push(FieldError::invalid(shown(path), ty, detail));
        self.budget = None;
    }

    fn rules(
        &mut self,
        schema: &Node,
        value: &Value,
        old: Option<&Value>,
        path: &str,
        root: bool,
        ratchet: bool,
    ) {
        let rules = schema.validations();
        if rules.is_empty() {
            return;
        }
        let ty = schema.type_name();
        if self.budget == Some(0) {
            self.out_of_budget(
                path,
                ty,
                "validation failed due to running out of cost budget, no further validation rules will be run",
            );
            return;
        }
        let this = to_cel(value, schema, root);
        let old_cel = old.map(|o| to_cel(o, schema, root));
        for raw in rules {
            let Some(budget) = self.budget else { return };
            let rule = Rule::read(raw);
            if rule.rule.trim().is_empty() {
                continue;
            }
            let compiled = match engine().compile(rule.rule) {
                Ok(c) => c,
                Err(e) => {
                    let detail = format!("rule compile error: compilation failed: {e}");
                    self.errors
                        .push(FieldError::invalid(shown(path), ty, detail));
                    continue;
                }
            };
            let optional = rule.optional_old_self == Some(true);
            let uses_old = compiled.uses("oldSelf");
            if uses_old && old_cel.is_none() && !optional {
                continue;
            }
            let vars = bindings(&this, old_cel.as_ref(), optional);
            let limit = budget.min(PER_CALL_LIMIT);
            let (result, cost) = engine().evaluate(&compiled, &vars, limit);
            match result {
                Err(EvalError::CostLimit { .. }) if cost > PER_CALL_LIMIT => {
                    let detail = format!(
                        "'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {}",
                        rule.display()
                    );
                    self.out_of_budget(path, ty, &detail);
                    return;
                }
                Err(EvalError::CostLimit { .. }) => {
                    self.out_of_budget(
                        path,
                        ty,
                        "validation failed due to running out of cost budget, no further validation rules will be run",
                    );
                    return;
                }
                Err(EvalError::Failed(e)) => {
                    self.budget = Some(budget.saturating_sub(cost));
                    let detail = if e.starts_with("no such overload") {
                        format!(
                            "'{e}': call arguments did not match a supported operator, function or macro signature for rule: {}",
                            rule.display()
                        )
                    } else {
                        format!("{e} evaluating rule: {}", rule.display())
                    };
                    self.errors
                        .push(FieldError::invalid(shown(path), ty, detail));
                    continue;
                }
                Ok(Cel::Bool(true)) => {
                    self.budget = Some(budget.saturating_sub(cost));
                    continue;
                }
                Ok(_) => self.budget = Some(budget.saturating_sub(cost)),
            }
            let at = match fieldpath::normalize(rule.field_path, schema) {
                Some(rel) if !rel.is_empty() => child(path, &rel),
                _ => path.to_string(),
            };
            let detail = match self.message_expression(&rule, &vars, &at, ty) {
                Ok(Some(m)) => m,
                Ok(None) => rule.default_message(),
                Err(()) => return,
            };
            if ratchet && !uses_old {
                continue;
            }
            let err = match rule.reason {
                "FieldValueForbidden" => FieldError::forbidden(shown(&at), detail),
                "FieldValueRequired" => FieldError::required(shown(&at), detail),
                "FieldValueDuplicate" => FieldError::duplicate(shown(&at), ty),
                _ => FieldError::invalid(shown(&at), ty, detail),
            };
            self.errors.push(err);
        }
    }

    /// The evaluated `messageExpression`, `None` when there is none or it failed (the rule's
    /// message is used then), `Err` when it ran out of budget (reported, nothing more runs).
    fn message_expression(
        &mut self,
        rule: &Rule,
        vars: &[(&str, Cel)],
        at: &str,
        ty: &str,
    ) -> Result<Option<String>, ()> {
        if rule.message_expression.trim().is_empty() {
            return Ok(None);
        }
        let Ok(compiled) = engine().compile(rule.message_expression) else {
            return Ok(None);
        };
        let budget = self.budget.unwrap_or(0);
        let (result, cost) = engine().evaluate(&compiled, vars, budget.min(PER_CALL_LIMIT));
        match result {
            Err(EvalError::CostLimit { .. }) => {
                let detail = if cost > PER_CALL_LIMIT {
                    format!(
                        "no further validation rules will be run due to call cost exceeds limit for messageExpression: {:?}",
                        rule.message_expression
                    )
                } else {
                    "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run".to_string()
                };
                self.out_of_budget(at, ty, &detail);
                Err(())
            }
            Err(EvalError::Failed(_)) => {
                self.budget = Some(budget.saturating_sub(cost));
                Ok(None)
            }
            Ok(v) => {
                self.budget = Some(budget.saturating_sub(cost));
                let Cel::String(s) = v else { return Ok(None) };
                let trimmed = s.trim();
                if trimmed.is_empty() || trimmed.len() > MAX_MESSAGE_BYTES || trimmed.contains('\n')
                {
                    return Ok(None);
                }
                Ok(Some(trimmed.to_string()))
            }
        }
    }
}

/// A path as upstream prints it: the root, a nil path there, is `<nil>`.
fn shown(path: &str) -> String {
    if path.is_empty() {
        "<nil>".to_string()
    } else {
        path.to_string()
    }
}

/// `self` and `oldSelf` for a rule; with `optionalOldSelf`, `oldSelf` is an optional.
fn bindings<'a>(this: &Cel, old: Option<&Cel>, optional: bool) -> Vec<(&'a str, Cel)> {
    let mut vars = vec![("self", this.clone())];
    if optional {
        let opt = match old {
            Some(o) => OptionalValue::of(o.clone()),
            None => OptionalValue::none(),
        };
        vars.push(("oldSelf", Cel::Opaque(Arc::new(opt))));
    } else if let Some(o) = old {
        vars.push(("oldSelf", o.clone()));
    }
    vars
}

/// Whether two items of a map list have the same values for the list's keys.
fn same_keys(a: &Value, b: &Value, keys: &[&str]) -> bool {
    keys.iter().all(|k| a.get(k) == b.get(k))
}
