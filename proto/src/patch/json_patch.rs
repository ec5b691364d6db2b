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
            Value::Array(a) => index(&t, a.len()).and_then(move |i| a.get_mut(i)),
            _ => None,
        }
        .ok_or_else(|| PatchError::MissingPath(path.to_string()))?;
    }
    Ok((cur, last))
}

/// An array index token, as upstream's JSON patch library reads it: a decimal, or a negative
/// one counting from the end (`-1` is the last element).
fn signed_index(token: &str, len: usize) -> Option<usize> {
    let i: i64 = token.parse().ok()?;
    let len = i64::try_from(len).ok()?;
    let i = if i < 0 { i + len } else { i };
    usize::try_from(i).ok()
}

/// An index that must address an existing element.
fn index(token: &str, len: usize) -> Option<usize> {
    signed_index(token, len).filter(|i| *i < len)
}

fn get<'a>(doc: &'a Value, path: &str) -> Result<&'a Value, PatchError> {
    let mut cur = doc;
    for t in tokens(path)? {
        cur = match cur {
            Value::Object(m) => m.get(&t),
            Value::Array(a) => index(&t, a.len()).and_then(|i| a.get(i)),
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
            // One past the end appends; negative indices count from the new end.
            let idx = if last == "-" {
                Some(a.len())
            } else {
                signed_index(&last, a.len() + 1).filter(|i| *i <= a.len())
            }
            .ok_or_else(|| {
                PatchError::Invalid(format!(
                    "add operation does not apply: index {last:?} is out of bounds for {path:?}"
                ))
            })?;
            a.insert(idx, value);
            Ok(())
        }
        _ => Err(PatchError::MissingPath(path.to_string())),
    }
}

fn remove(doc: &mut Value, path: &str) -> Result<Value, PatchError> {
    let (parent, last) = parent_mut(doc, path)?;
    let missing = || PatchError::MissingPath(path.to_string());
    match parent {
        Value::Object(m) => m.remove(&last).ok_or_else(missing),
        Value::Array(a) => {
            let idx = index(&last, a.len()).ok_or_else(missing)?;
            Ok(a.remove(idx))
        }
        _ => Err(missing()),
    }
}

/// RFC 6902 `test`, with upstream's reading of `null`: the member's parent must exist, and an
/// absent member equals `null` (kube-rs' finalizer helper tests `/metadata/finalizers` against
/// `null` before adding the list).
fn test(doc: &Value, path: &str, expected: &Value) -> Result<(), PatchError> {
    let actual = if path.is_empty() {
        Some(doc)
    } else {
        let mut toks = tokens(path)?;
        let last = toks.pop().unwrap_or_default();
        let parent_path: String = toks.iter().map(|t| format!("/{}", escape(t))).collect();
        match get(doc, &parent_path)? {
            Value::Object(m) => m.get(&last),
            Value::Array(a) => Some(
                index(&last, a.len())
                    .and_then(|i| a.get(i))
                    .ok_or_else(|| PatchError::MissingPath(path.to_string()))?,
            ),
            _ => return Err(PatchError::MissingPath(path.to_string())),
        }
    };
    if actual.unwrap_or(&Value::Null) == expected {
        Ok(())
    } else {
        Err(PatchError::TestFailed {
            path: path.to_string(),
        })
    }
}

fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
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
                    let (parent, last) = parent_mut(&mut out, path)?;
                    match parent {
                        Value::Object(m) => {
                            m.insert(last, value()?);
                        }
                        Value::Array(a) => {
                            if let Some(i) = index(&last, a.len()) {
                                a[i] = value()?;
                            }
                        }
                        _ => {}
                    }
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
            // An absent "value" is null, as upstream reads it.
            "test" => test(&out, path, op.get("value").unwrap_or(&Value::Null))?,
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

    /// The edge cases upstream's JSON patch library (evanphx/json-patch v4, what the API server
    /// applies) decides differently from a literal reading of RFC 6902.
    #[test]
    fn edge_cases_as_upstream() {
        let doc = json!({"metadata": {"name": "a", "gone": null}, "l": [1, 2, 3]});
        let cases = [
            // kube-rs' finalizer helper: test an absent list against null, then add it.
            (
                json!([
                    {"op": "test", "path": "/metadata/finalizers", "value": null},
                    {"op": "add", "path": "/metadata/finalizers", "value": ["x"]},
                ]),
                json!({"metadata": {"name": "a", "gone": null, "finalizers": ["x"]}, "l": [1, 2, 3]}),
            ),
            // An explicit null and an absent "value" test alike.
            (
                json!([{"op": "test", "path": "/metadata/gone", "value": null}, {"op": "test", "path": "/metadata/nothing"}]),
                doc.clone(),
            ),
            // Negative indices count from the end (for add, from the end of the grown list).
            (
                json!([{"op": "remove", "path": "/l/-1"}, {"op": "add", "path": "/l/-2", "value": 9}]),
                json!({"metadata": {"name": "a", "gone": null}, "l": [1, 9, 2]}),
            ),
            (
                json!([{"op": "replace", "path": "/l/-3", "value": 0}, {"op": "test", "path": "/l/0", "value": 0}]),
                json!({"metadata": {"name": "a", "gone": null}, "l": [0, 2, 3]}),
            ),
            // Appending at the length is an add at "-".
            (
                json!([{"op": "add", "path": "/l/3", "value": 4}]),
                json!({"metadata": {"name": "a", "gone": null}, "l": [1, 2, 3, 4]}),
            ),
            // The whole document.
            (
                json!([{"op": "test", "path": "", "value": doc.clone()}]),
                doc.clone(),
            ),
        ];
        for (patch, want) in cases {
            assert_eq!(json_patch(&doc, &patch).unwrap(), want, "{patch}");
        }
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
        // A test below a missing parent fails, null or not.
        assert!(matches!(
            json_patch(
                &doc,
                &json!([{"op": "test", "path": "/b/c", "value": null}])
            ),
            Err(PatchError::MissingPath(_))
        ));
        assert!(matches!(
            json_patch(&doc, &json!([{"op": "test", "path": "/b", "value": 1}])),
            Err(PatchError::TestFailed { .. })
        ));
        assert!(json_patch(
            &json!({"l": [1]}),
            &json!([{"op": "add", "path": "/l/3", "value": 1}])
        )
        .is_err());
        assert!(json_patch(
            &json!({"l": [1]}),
            &json!([{"op": "remove", "path": "/l/-2"}])
        )
        .is_err());
        assert!(json_patch(&doc, &json!([{"op": "jump", "path": "/a"}])).is_err());
    }
}
