//! Compiling every rule of a CRD's schema for the CRD's own validation, with upstream's paths
//! and messages: rules and message expressions that don't compile, `oldSelf` where no old value
//! can correlate, `optionalOldSelf` without `oldSelf`, a `fieldPath` that names no field.

use serde_json::Value;

use super::engine::engine;
use super::fieldpath;
use super::validation::Rule;
use super::values::Node;
use crate::registry::field::FieldError;

/// See [`super::compile_errors`].
pub fn compile_errors(schema: &Value, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    walk(&Node(Some(schema)), path, None, &mut errors);
    errors
}

/// `uncorrelatable` is the path of the nearest list above whose items can't be matched with
/// their old values (a list that is not `x-kubernetes-list-type: map`).
fn walk(node: &Node, path: &str, uncorrelatable: Option<&str>, errors: &mut Vec<FieldError>) {
    for (i, raw) in node.validations().iter().enumerate() {
        rule_errors(
            node,
            raw,
            &format!("{path}.x-kubernetes-validations[{i}]"),
            uncorrelatable,
            errors,
        );
    }
    if let Some(props) = node.properties() {
        for name in props.keys() {
            let p = format!("{path}.properties[{name}]");
            walk(&node.property(name), &p, uncorrelatable, errors);
        }
    }
    let items = node.items();
    if items.0.is_some() {
        let p = format!("{path}.items");
        let below = if node.list_type() == "map" {
            uncorrelatable
        } else {
            Some(path)
        };
        walk(&items, &p, below, errors);
    }
    if let Some(extra) = node.additional() {
        let below = if node.map_correlatable() {
            uncorrelatable
        } else {
            Some(path)
        };
        walk(
            &extra,
            &format!("{path}.additionalProperties"),
            below,
            errors,
        );
    }
}

fn rule_errors(
    node: &Node,
    raw: &Value,
    at: &str,
    uncorrelatable: Option<&str>,
    errors: &mut Vec<FieldError>,
) {
    let rule = Rule::read(raw);
    if rule.rule.trim().is_empty() {
        errors.push(FieldError::required(
            format!("{at}.rule"),
            "rule is not specified",
        ));
        return;
    }
    match engine().compile(rule.rule) {
        Err(e) => errors.push(FieldError::invalid_go(
            format!("{at}.rule"),
            go_repr(raw),
            format!("compilation failed: {e}"),
        )),
        Ok(compiled) => {
            let uses_old = compiled.uses("oldSelf");
            if uses_old {
                if let Some(list) = uncorrelatable {
                    errors.push(FieldError::invalid(
                        format!("{at}.rule"),
                        rule.rule,
                        format!("oldSelf cannot be used on the uncorrelatable portion of the schema within {list}"),
                    ));
                }
            } else if let Some(flag) = rule.optional_old_self {
                errors.push(FieldError::invalid(
                    format!("{at}.optionalOldSelf"),
                    flag,
                    "may not be set if oldSelf is not used in rule",
                ));
            }
        }
    }
    if !rule.message_expression.trim().is_empty() {
        if let Err(e) = engine().compile(rule.message_expression) {
            errors.push(FieldError::invalid_go(
                format!("{at}.messageExpression"),
                go_repr(raw),
                format!("messageExpression compilation failed: {e}"),
            ));
        }
    }
    if !rule.field_path.is_empty() && fieldpath::resolve(rule.field_path, node).is_err() {
        errors.push(FieldError::invalid(
            format!("{at}.fieldPath"),
            rule.field_path,
            "fieldPath must be a valid path",
        ));
    }
}

/// The rule as Go's `%#v` prints upstream's internal `apiextensions.ValidationRule` (a set
/// pointer prints as an address, which differs on every run upstream).
fn go_repr(raw: &Value) -> String {
    let s = |k: &str| format!("{:?}", raw.get(k).and_then(Value::as_str).unwrap_or(""));
    let ptr = |k: &str, ty: &str| match raw.get(k) {
        Some(v) if !v.is_null() => format!("({ty})(0xc000a2c0f0)"),
        _ => format!("({ty})(nil)"),
    };
    format!(
        "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{}, FieldPath:{}, OptionalOldSelf:{}}}",
        s("rule"),
        s("message"),
        s("messageExpression"),
        ptr("reason", "*apiextensions.FieldValueErrorReason"),
        s("fieldPath"),
        ptr("optionalOldSelf", "*bool"),
    )
}
