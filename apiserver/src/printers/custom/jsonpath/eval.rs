//! Evaluation of parsed JSONPath nodes against a JSON value, as client-go's `jsonpath` walks
//! decoded objects: nulls are skipped, objects are iterated by sorted key, and an empty slice
//! ends its step.

use std::borrow::Cow;
use std::cmp::Ordering;

use serde_json::Value;

use super::{eval_err, Bound, JsonPathError, Node};

type Values<'a> = Vec<Cow<'a, Value>>;

pub(super) fn walk<'a>(input: Values<'a>, node: &Node) -> Result<Values<'a>, JsonPathError> {
    let each = |v: Value| input.iter().map(|_| Cow::Owned(v.clone())).collect();
    Ok(match node {
        Node::Action(nodes) => walk_list(input, nodes)?,
        Node::Text(t) => vec![Cow::Owned(Value::String(t.clone()))],
        Node::Int(i) => each(Value::from(*i)),
        Node::Float(f) => each(Value::from(*f)),
        Node::Bool(b) => each(Value::Bool(*b)),
        Node::Field(name) => input
            .into_iter()
            .filter_map(|v| child(v, |o| o.get(name)))
            .collect(),
        Node::Wildcard => input.into_iter().flat_map(children).collect(),
        Node::Recursive => {
            let mut out = Vec::new();
            descend(input, &mut out);
            out
        }
        Node::Slice(bounds) => {
            let mut out = Vec::new();
            for v in input {
                if v.is_null() {
                    continue;
                }
                if !v.is_array() {
                    return eval_err(format!("{} is not array or slice", type_name(&v)));
                }
                match slice(v, bounds)? {
                    Some(items) => out.extend(items),
                    None => return Ok(out),
                }
            }
            out
        }
        Node::Union(lists) => {
            let mut out = Vec::new();
            for list in lists {
                out.extend(walk_list(input.clone(), list)?);
            }
            out
        }
        Node::Filter { left, right, op } => filter(input, left, right, op)?,
        Node::Identifier(name) => return eval_err(format!("unrecognized identifier {name}")),
    })
}

fn walk_list<'a>(mut values: Values<'a>, nodes: &[Node]) -> Result<Values<'a>, JsonPathError> {
    for n in nodes {
        values = walk(values, n)?;
    }
    Ok(values)
}

fn child<'a>(
    v: Cow<'a, Value>,
    get: impl Fn(&serde_json::Map<String, Value>) -> Option<&Value>,
) -> Option<Cow<'a, Value>> {
    match v {
        Cow::Borrowed(Value::Object(o)) => get(o).map(Cow::Borrowed),
        Cow::Owned(Value::Object(o)) => get(&o).cloned().map(Cow::Owned),
        _ => None,
    }
}

/// Elements of an array in order, values of an object by sorted key, as Go iterates them.
fn children(v: Cow<'_, Value>) -> Values<'_> {
    fn sorted(o: &serde_json::Map<String, Value>) -> Vec<&Value> {
        let mut keys: Vec<&String> = o.keys().collect();
        keys.sort();
        keys.into_iter().filter_map(|k| o.get(k)).collect()
    }
    match v {
        Cow::Borrowed(Value::Array(a)) => a.iter().map(Cow::Borrowed).collect(),
        Cow::Borrowed(Value::Object(o)) => sorted(o).into_iter().map(Cow::Borrowed).collect(),
        Cow::Owned(Value::Array(a)) => a.into_iter().map(Cow::Owned).collect(),
        Cow::Owned(Value::Object(o)) => sorted(&o)
            .into_iter()
            .map(|v| Cow::Owned(v.clone()))
            .collect(),
        _ => Vec::new(),
    }
}

/// `..`: every container with children, then its descendants, depth first.
fn descend<'a>(input: Values<'a>, out: &mut Values<'a>) {
    for v in input {
        let kids = children(v.clone());
        if !kids.is_empty() {
            out.push(v);
            descend(kids, out);
        }
    }
}

/// The elements `[start:end:step]` of an array; `None` for an empty selection, which ends the
/// whole step as upstream does.
fn slice<'a>(v: Cow<'a, Value>, b: &[Bound; 3]) -> Result<Option<Values<'a>>, JsonPathError> {
    let len = v.as_array().map_or(0, Vec::len) as i64;
    let mut start = if b[0].known { b[0].value } else { 0 };
    if start < 0 {
        start += len;
    }
    let mut end = if b[1].known { b[1].value } else { len };
    if end < 0 || (end == 0 && b[1].derived) {
        end += len;
    }
    if start == end {
        return Ok(None);
    }
    if start >= len || start < 0 {
        return eval_err(format!(
            "array index out of bounds: index {start}, length {len}"
        ));
    }
    if end > len || end < 0 {
        return eval_err(format!(
            "array index out of bounds: index {}, length {len}",
            end - 1
        ));
    }
    if start > end {
        return eval_err(format!(
            "starting index {start} is greater than ending index {end}"
        ));
    }
    let step = if b[2].known { b[2].value } else { 1 };
    if step <= 0 {
        return eval_err("step must be > 0");
    }
    let (start, end, step) = (start as usize, end as usize, step as usize);
    let items = match v {
        Cow::Borrowed(Value::Array(a)) => a[start..end]
            .iter()
            .step_by(step)
            .map(Cow::Borrowed)
            .collect(),
        Cow::Owned(Value::Array(a)) => a[start..end]
            .iter()
            .step_by(step)
            .map(|x| Cow::Owned(x.clone()))
            .collect(),
        _ => Vec::new(),
    };
    Ok(Some(items))
}

fn filter<'a>(
    input: Values<'a>,
    left: &[Node],
    right: &[Node],
    op: &str,
) -> Result<Values<'a>, JsonPathError> {
    let mut out = Vec::new();
    for v in input {
        let items = if v.is_array() || v.is_object() {
            children(v)
        } else {
            vec![v]
        };
        for item in items {
            // Missing keys on the left are allowed: the element just does not match.
            let lefts = walk_list(vec![item.clone()], left).unwrap_or_default();
            let rights = walk_list(vec![item.clone()], right)?;
            if lefts.is_empty() {
                continue;
            }
            if lefts.len() > 1 {
                return eval_err("can only compare one element at a time");
            }
            if op == "exists" {
                out.push(item);
                continue;
            }
            if rights.is_empty() {
                continue;
            }
            if rights.len() > 1 {
                return eval_err("can only compare one element at a time");
            }
            if compare(&lefts[0], &rights[0], op)? {
                out.push(item);
            }
        }
    }
    Ok(out)
}

/// Go template's ordering of two scalars of the same kind; `None` when they do not compare.
fn order(l: &Value, r: &Value) -> Option<Ordering> {
    match (l, r) {
        (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
        (Value::Number(a), Value::Number(b)) => match (a.as_i64(), b.as_i64()) {
            (Some(x), Some(y)) => Some(x.cmp(&y)),
            _ => a.as_f64()?.partial_cmp(&b.as_f64()?),
        },
        _ => None,
    }
}

fn compare(l: &Value, r: &Value, op: &str) -> Result<bool, JsonPathError> {
    let equal = match (l, r) {
        (Value::Bool(a), Value::Bool(b)) => a == b,
        _ => order(l, r) == Some(Ordering::Equal),
    };
    let ord = order(l, r);
    Ok(match op {
        "==" => equal,
        "!=" => !equal,
        "<" => ord == Some(Ordering::Less),
        ">" => ord == Some(Ordering::Greater),
        "<=" => matches!(ord, Some(Ordering::Less | Ordering::Equal)),
        ">=" => matches!(ord, Some(Ordering::Greater | Ordering::Equal)),
        _ => return eval_err(format!("unrecognized filter operator {op}")),
    })
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "nil",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}
