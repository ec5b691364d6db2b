//! RFC 6902 JSON patch: add, remove, replace, move, copy, test.

use serde_json::Value;

use super::PatchError;

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

fn tokens(path: &str) -> Result<Vec<String>, PatchError> {
    if path.is_empty() {
        return Ok(Vec::new());
    }
    if !path.starts_with('/') {
        return Err(PatchError::Invalid(format!(
            "path {path:?} must start with '/'"
        )));
    }
    Ok(path[1..].split('/').map(unescape).collect())
}

fn parent_mut<'a>(doc: &'a mut Value, path: &str) -> Result<(&'a mut Value, String), PatchError> {
    let mut toks = tokens(path)?;
    let last = toks
        .pop()
        .ok_or_else(|| PatchError::Invalid("cannot address the document root".into()))?;
    let mut cur = doc;
    for t in toks {
        cur = match cur {
            Value::Object(m) => m.get_mut(&t),
            Value::Array(a) => t.parse::<usize>().ok().and_then(move |i| a.get_mut(i)),
            _ => None,
        }
        .ok_or_else(|| PatchError::MissingPath(path.to_string()))?;
    }
    Ok((cur, last))
}

fn get<'a>(doc: &'a Value, path: &str) -> Result<&'a Value, PatchError> {
    let mut cur = doc;
    for t in tokens(path)? {
        cur = match cur {
            Value::Object(m) => m.get(&t),
            Value::Array(a) => t.parse::<usize>().ok().and_then(|i| a.get(i)),
            _ => None,
        }
        .ok_or_else(|| PatchError::MissingPath(path.to_string()))?;
    }
    Ok(cur)
}

fn add(doc: &mut Value, path: &str, value: Value) -> Result<(), PatchError> {
    if path.is_empty() {
        *doc = value;
        return Ok(());
    }
    let (parent, last) = parent_mut(doc, path)?;
    match parent {
        Value::Object(m) => {
            m.insert(last, value);
            Ok(())
        }
        Value::Array(a) => {
            let idx = if last == "-" {
                a.len()
            } else {
                last.parse::<usize>()
                    .map_err(|_| PatchError::Invalid(format!("invalid array index {last:?}")))?
            };
            if idx > a.len() {
                return Err(PatchError::Invalid(format!(
                    "add operation does not apply: index {idx} out of bounds"
                )));
            }
            a.insert(idx, value);
            Ok(())
        }
        _ => Err(PatchError::MissingPath(path.to_string())),
    }
}

fn remove(doc: &mut Value, path: &str) -> Result<Value, PatchError> {
    let (parent, last) = parent_mut(doc, path)?;
    match parent {
        Value::Object(m) => m
            .remove(&last)
            .ok_or_else(|| PatchError::MissingPath(path.to_string())),
        Value::Array(a) => {
            let idx = last
                .parse::<usize>()
                .map_err(|_| PatchError::MissingPath(path.to_string()))?;
            if idx >= a.len() {
                return Err(PatchError::MissingPath(path.to_string()));
            }
            Ok(a.remove(idx))
        }
        _ => Err(PatchError::MissingPath(path.to_string())),
    }
}

/// Apply an RFC 6902 patch document (an array of operations).
pub fn json_patch(doc: &Value, patch: &Value) -> Result<Value, PatchError> {
    let ops = patch
        .as_array()
        .ok_or_else(|| PatchError::Invalid("a JSON patch must be an array of operations".into()))?;
    let mut out = doc.clone();
    for op in ops {
        let kind = op
            .get("op")
            .and_then(Value::as_str)
            .ok_or_else(|| PatchError::Invalid("operation has no \"op\"".into()))?;
        let path = op
            .get("path")
            .and_then(Value::as_str)
            .ok_or_else(|| PatchError::Invalid(format!("{kind} operation has no \"path\"")))?;
        let value = || {
            op.get("value")
                .cloned()
                .ok_or_else(|| PatchError::Invalid(format!("{kind} operation has no \"value\"")))
        };
        let from = || {
            op.get("from")
                .and_then(Value::as_str)
                .ok_or_else(|| PatchError::Invalid(format!("{kind} operation has no \"from\"")))
        };
        match kind {
            "add" => add(&mut out, path, value()?)?,
            "remove" => {
                remove(&mut out, path)?;
            }
            "replace" => {
                get(&out, path)?;
                if path.is_empty() {
                    out = value()?;
                } else {
                    remove(&mut out, path)?;
                    add(&mut out, path, value()?)?;
                }
            }
            "move" => {
                let v = remove(&mut out, from()?)?;
                add(&mut out, path, v)?;
            }
            "copy" => {
                let v = get(&out, from()?)?.clone();
                add(&mut out, path, v)?;
            }
            "test" => {
                if *get(&out, path)? != value()? {
                    return Err(PatchError::TestFailed {
                        path: path.to_string(),
                    });
                }
            }
            other => {
                return Err(PatchError::Invalid(format!(
                    "unexpected operation {other:?}"
                )))
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn operations_apply_in_order() {
        let doc = json!({"metadata": {"labels": {"a": "1"}, "finalizers": ["x"]}, "spec": {"list": [1, 2]}});
        let patch = json!([
            {"op": "add", "path": "/metadata/labels/b~1c", "value": "2"},
            {"op": "remove", "path": "/metadata/finalizers"},
            {"op": "replace", "path": "/spec/list/0", "value": 9},
            {"op": "add", "path": "/spec/list/-", "value": 3},
            {"op": "copy", "from": "/spec/list", "path": "/spec/copy"},
            {"op": "move", "from": "/metadata/labels/a", "path": "/metadata/labels/z"},
            {"op": "test", "path": "/spec/list/1", "value": 2},
        ]);
        let out = json_patch(&doc, &patch).unwrap();
        assert_eq!(
            out,
            json!({"metadata": {"labels": {"b/c": "2", "z": "1"}}, "spec": {"list": [9, 2, 3], "copy": [9, 2, 3]}})
        );
    }

    #[test]
    fn failures_are_reported() {
        let doc = json!({"a": 1});
        assert!(matches!(
            json_patch(&doc, &json!([{"op": "remove", "path": "/b"}])),
            Err(PatchError::MissingPath(_))
        ));
        assert!(matches!(
            json_patch(&doc, &json!([{"op": "test", "path": "/a", "value": 2}])),
            Err(PatchError::TestFailed { .. })
        ));
        assert!(json_patch(&doc, &json!({"op": "add"})).is_err());
        assert!(json_patch(&doc, &json!([{"op": "jump", "path": "/a"}])).is_err());
    }
}
