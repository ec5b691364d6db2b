//! A rule's `fieldPath` (`.spec.replicas`, `.metadata['app.kubernetes.io/name']`): checked
//! against the schema and turned into the field path its errors are reported at.

use super::values::Node;

/// The field path `json_path` names below `schema` (`spec.replicas`; a map key as `[key]`), or
/// why it names nothing, in upstream's words.
pub fn resolve(json_path: &str, schema: &Node) -> Result<String, String> {
    let tokens = tokenize(json_path);
    let mut out = String::new();
    let mut node = Node(schema.0);
    let mut i = 0;
    while i < tokens.len() {
        let name = match tokens[i].as_str() {
            "[" => {
                let Some(quoted) = tokens.get(i + 1) else {
                    return Err("unexpected end of JSON path".into());
                };
                if quoted.len() < 2 || !quoted.starts_with('\'') || !quoted.ends_with('\'') {
                    return Err(format!("expected single quoted string but got {quoted}"));
                }
                let name = unescape(&quoted[1..quoted.len() - 1])
                    .map_err(|e| format!("invalid string literal: {e}"))?;
                match tokens.get(i + 2).map(String::as_str) {
                    Some("]") => {}
                    Some(other) => return Err(format!("expected ] but got {other}")),
                    None => return Err("unexpected end of JSON path".into()),
                }
                i += 3;
                name
            }
            "." => {
                let Some(name) = tokens.get(i + 1) else {
                    return Err("unexpected end of JSON path".into());
                };
                i += 2;
                name.clone()
            }
            other => return Err(format!("expected [ or . but got: {other}")),
        };
        if node.properties().is_some() {
            let prop = node.property(&name);
            if prop.0.is_none() {
                return Err("does not refer to a valid field".into());
            }
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&name);
            node = prop;
        } else if let Some(extra) = node.additional() {
            out.push_str(&format!("[{name}]"));
            node = extra;
        } else {
            return Err("does not refer to a valid field".into());
        }
    }
    Ok(out)
}

/// The path a failing rule's error is reported at, relative to the rule's value; `None` when
/// the rule names no valid path (such a CRD is refused, so this is only a safeguard).
pub fn normalize(json_path: &str, schema: &Node) -> Option<String> {
    if json_path.is_empty() {
        return None;
    }
    resolve(json_path, schema).ok()
}

/// `.`, `[` and `]` as tokens of their own, single-quoted strings kept whole.
fn tokenize(path: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let chars: Vec<char> = path.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' {
            let mut j = i + 1;
            while j < chars.len() && !(chars[j] == '\'' && chars[j - 1] != '\\') {
                j += 1;
            }
            let end = (j + 1).min(chars.len());
            tokens.push(chars[i..end].iter().collect());
            i = end;
        } else if ".[]".contains(c) {
            tokens.push(c.to_string());
            i += 1;
        } else {
            let mut j = i;
            while j < chars.len() && !".[]".contains(chars[j]) {
                j += 1;
            }
            tokens.push(chars[i..j].iter().collect());
            i = j;
        }
    }
    tokens
}

fn unescape(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('a') => out.push('\u{7}'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some('v') => out.push('\u{b}'),
            Some('\'') => out.push('\''),
            Some('\\') => out.push('\\'),
            Some(other) => return Err(format!("invalid escape char \\{other}")),
            None => return Err("invalid escape char \\".into()),
        }
    }
    Ok(out)
}
