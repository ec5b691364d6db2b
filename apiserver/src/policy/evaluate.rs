//! One policy evaluated for one binding and one param, as upstream's validator: the match
//! conditions (any false skips the policy; errors follow the failure policy), the variables
//! (in order, each seeing the ones before), the validations with their messages and reasons,
//! and the audit annotations. Evaluation shares one cost budget per request, as upstream's
//! RuntimeCELCostBudget.

use std::collections::HashMap;

use cel::objects::{Key, Map};
use cel::Value as Cel;
use serde_json::Value;

use crate::registry::cel::engine::{engine, Compiled, EvalError};

/// Upstream's RuntimeCELCostBudget.
pub const COST_BUDGET: u64 = 10_000_000;
/// Upstream's MaxEvaluatedMessageExpressionSizeBytes.
const MAX_MESSAGE: usize = 5 * 1024;

/// What one validation (or a failure to evaluate) decides.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// The expression was false: deny with this message and reason.
    Deny { message: String, reason: String },
    /// The evaluation failed; the failure policy decides.
    Error(String),
}

/// The bound variables of one evaluation and what is left of the budget.
pub struct Activation {
    vars: Vec<(&'static str, Cel)>,
    variables: HashMap<String, Result<Cel, String>>,
    budget: u64,
}

impl Activation {
    pub fn new(vars: Vec<(&'static str, Cel)>) -> Activation {
        Activation {
            vars,
            variables: HashMap::new(),
            budget: COST_BUDGET,
        }
    }

    fn bound(&self) -> Vec<(&str, Cel)> {
        let ok: HashMap<Key, Cel> = self
            .variables
            .iter()
            .filter_map(|(k, v)| v.as_ref().ok().map(|v| (Key::from(k.as_str()), v.clone())))
            .collect();
        let mut out: Vec<(&str, Cel)> = self.vars.iter().map(|(k, v)| (*k, v.clone())).collect();
        out.push(("variables", Cel::Map(Map { map: ok.into() })));
        out
    }

    /// Evaluate `source`; errors in upstream's words (`expression '…' resulted in error: …`).
    pub fn eval(&mut self, source: &str) -> Result<Cel, String> {
        let compiled = engine()
            .compile(source)
            .map_err(|e| format!("compilation failed: {e}"))?;
        if let Some((name, err)) = self.failed_variable(&compiled) {
            return Err(format!(
                "expression '{source}' resulted in error: composited variable \"{name}\" fails to evaluate: {err}"
            ));
        }
        let (result, cost) = engine().evaluate(&compiled, &self.bound(), self.budget);
        match result {
            Ok(v) => {
                self.budget = self.budget.saturating_sub(cost);
                Ok(v)
            }
            Err(EvalError::CostLimit { .. }) => Err(
                "validation failed due to running out of cost budget, no further validation rules will be run"
                    .into(),
            ),
            Err(EvalError::Failed(e)) => Err(format!("expression '{source}' resulted in error: {e}")),
        }
    }

    /// The first variable `compiled` reads whose own evaluation failed.
    fn failed_variable(&self, compiled: &Compiled) -> Option<(String, String)> {
        if !compiled.uses("variables") {
            return None;
        }
        let mut names = Vec::new();
        selected_fields(compiled.expression(), &mut names);
        names
            .into_iter()
            .find_map(|n| match self.variables.get(&n) {
                Some(Err(e)) => Some((n, e.clone())),
                _ => None,
            })
    }

    /// Evaluate the policy's variables in order.
    pub fn bind_variables(&mut self, variables: &[Value]) {
        for v in variables {
            let name = str_at(v, "name").to_string();
            let result = self.eval(str_at(v, "expression")).map_err(|e| {
                // The variable's own error, without the expression wrapper.
                e.split_once(" resulted in error: ")
                    .map_or(e.clone(), |(_, inner)| inner.to_string())
            });
            self.variables.insert(name, result);
        }
    }
}

/// Fields selected from `variables` (`variables.foo`) anywhere in `e`.
fn selected_fields(e: &cel::common::ast::IdedExpr, out: &mut Vec<String>) {
    use cel::common::ast::Expr;
    match &e.expr {
        Expr::Select(s) => {
            if matches!(&s.operand.expr, Expr::Ident(n) if n == "variables") {
                out.push(s.field.clone());
            }
            selected_fields(&s.operand, out);
        }
        Expr::Call(c) => {
            c.target.iter().for_each(|t| selected_fields(t, out));
            c.args.iter().for_each(|a| selected_fields(a, out));
        }
        Expr::List(l) => l.elements.iter().for_each(|i| selected_fields(i, out)),
        Expr::Comprehension(c) => {
            for part in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ] {
                selected_fields(part, out);
            }
        }
        Expr::Map(m) => {
            for entry in &m.entries {
                if let cel::common::ast::EntryExpr::MapEntry(me) = &entry.expr {
                    selected_fields(&me.key, out);
                    selected_fields(&me.value, out);
                }
            }
        }
        _ => {}
    }
}

fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The match conditions: `Ok(false)` when one is false (errors elsewhere do not matter then),
/// `Err` when none is false but some failed.
pub fn match_conditions(act: &mut Activation, conditions: &[Value]) -> Result<bool, String> {
    let mut errors = Vec::new();
    for c in conditions {
        let expression = str_at(c, "expression");
        match act.eval(expression) {
            Ok(Cel::Bool(false)) => return Ok(false),
            Ok(Cel::Bool(true)) => {}
            Ok(_) => errors.push(format!(
                "expression '{expression}' resulted in error: no such overload"
            )),
            Err(e) => errors.push(e),
        }
    }
    match errors.len() {
        0 => Ok(true),
        1 => Err(errors.remove(0)),
        _ => Err(format!("[{}]", errors.join(", "))),
    }
}

/// The validations: one decision per failed or broken validation, in order.
pub fn validations(act: &mut Activation, validations: &[Value]) -> Vec<Decision> {
    let mut out = Vec::new();
    for v in validations {
        let expression = str_at(v, "expression");
        match act.eval(expression) {
            Ok(Cel::Bool(true)) => {}
            Ok(_) => {
                let reason = v
                    .get("reason")
                    .and_then(Value::as_str)
                    .unwrap_or("Invalid")
                    .to_string();
                out.push(Decision::Deny {
                    message: message(act, v),
                    reason,
                });
            }
            Err(e) => out.push(Decision::Error(e)),
        }
    }
    out
}

/// A denial's message: the messageExpression's string (single line, not too long), else the
/// message, else `failed expression: …`.
fn message(act: &mut Activation, v: &Value) -> String {
    let from_expression = match str_at(v, "messageExpression").trim() {
        "" => None,
        source => match act.eval(source) {
            Ok(Cel::String(s)) => {
                let s = s.trim();
                (!s.is_empty() && s.len() <= MAX_MESSAGE && !s.contains('\n'))
                    .then(|| s.to_string())
            }
            Ok(_) => None,
            Err(e) => {
                tracing::debug!(error = %e, "error while evaluating messageExpression");
                None
            }
        },
    };
    from_expression
        .or_else(|| Some(str_at(v, "message").trim().to_string()).filter(|m| !m.is_empty()))
        .unwrap_or_else(|| format!("failed expression: {}", str_at(v, "expression").trim()))
}

/// The audit annotations: `(key, value)` to publish, or the error that becomes a decision.
pub fn audit_annotations(
    act: &mut Activation,
    annotations: &[Value],
) -> (Vec<(String, String)>, Vec<Decision>) {
    let mut published = Vec::new();
    let mut errors = Vec::new();
    for a in annotations {
        let key = str_at(a, "key").to_string();
        let source = str_at(a, "valueExpression");
        match act.eval(source) {
            Ok(Cel::String(s)) if !s.trim().is_empty() => {
                published.push((key, s.trim().to_string()));
            }
            Ok(Cel::String(_)) | Ok(Cel::Null) => {}
            Ok(other) => errors.push(Decision::Error(format!(
                "valueExpression '{source}' resulted in unsupported return type: {}. Return type must be either string or null.",
                type_name(&other)
            ))),
            Err(e) => errors.push(Decision::Error(e)),
        }
    }
    (published, errors)
}

fn type_name(v: &Cel) -> &'static str {
    match v {
        Cel::Bool(_) => "bool",
        Cel::Int(_) => "int",
        Cel::UInt(_) => "uint",
        Cel::Float(_) => "double",
        Cel::List(_) => "list",
        Cel::Map(_) => "map",
        Cel::Bytes(_) => "bytes",
        _ => "dyn",
    }
}
