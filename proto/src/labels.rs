//! Label selectors: the string form (`a=b,c!=d,e in (f,g),!h`) and the `LabelSelector` struct form.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// Why a selector could not be parsed or built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    #[error("unable to parse requirement: {0}")]
    Parse(String),
    #[error("{0}")]
    Invalid(String),
}

/// A requirement's operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Operator {
    Equals,
    NotEquals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

/// One `key op values` requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub key: String,
    pub op: Operator,
    pub values: BTreeSet<String>,
}

impl Requirement {
    fn matches(&self, value: Option<&str>) -> bool {
        match (self.op, value) {
            (Operator::Equals | Operator::In, Some(v)) => self.values.contains(v),
            (Operator::Equals | Operator::In, None) => false,
            (Operator::NotEquals | Operator::NotIn, Some(v)) => !self.values.contains(v),
            (Operator::NotEquals | Operator::NotIn, None) => true,
            (Operator::Exists, v) => v.is_some(),
            (Operator::DoesNotExist, v) => v.is_none(),
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let first = self.values.iter().next().map(String::as_str).unwrap_or("");
        let list = self.values.iter().cloned().collect::<Vec<_>>().join(",");
        match self.op {
            Operator::Equals => write!(f, "{}={first}", self.key),
            Operator::NotEquals => write!(f, "{}!={first}", self.key),
            Operator::In => write!(f, "{} in ({list})", self.key),
            Operator::NotIn => write!(f, "{} notin ({list})", self.key),
            Operator::Exists => write!(f, "{}", self.key),
            Operator::DoesNotExist => write!(f, "!{}", self.key),
        }
    }
}

/// A label selector: all requirements must hold. `nothing` matches no object at all.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selector {
    requirements: Vec<Requirement>,
    nothing: bool,
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'
}

/// Validate a label key: `[prefix/]name`, name <= 63 chars, prefix a DNS subdomain.
pub fn validate_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name.chars().all(is_name_char)
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && name
            .chars()
            .last()
            .is_some_and(|c| c.is_ascii_alphanumeric());
    if !name_ok {
        return Err("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".to_string());
    }
    if let Some(p) = prefix {
        if !crate::names::is_subdomain(p) {
            return Err(format!("prefix part {}", crate::names::SUBDOMAIN_MSG));
        }
    }
    Ok(())
}

/// Validate a label value: empty, or <= 63 chars of `[A-Za-z0-9_.-]` starting and ending alphanumeric.
pub fn validate_value(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Ok(());
    }
    let ok = value.len() <= 63
        && value.chars().all(is_name_char)
        && value
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && value
            .chars()
            .last()
            .is_some_and(|c| c.is_ascii_alphanumeric());
    if ok {
        Ok(())
    } else {
        Err("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".into())
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    Comma,
    Eq,
    DoubleEq,
    NotEq,
    Not,
    Open,
    Close,
}

fn tokenize(s: &str) -> Result<Vec<Token>, SelectorError> {
    let mut out = Vec::new();
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' | '\n' => i += 1,
            ',' => {
                out.push(Token::Comma);
                i += 1
            }
            '(' => {
                out.push(Token::Open);
                i += 1
            }
            ')' => {
                out.push(Token::Close);
                i += 1
            }
            '=' if chars.get(i + 1) == Some(&'=') => {
                out.push(Token::DoubleEq);
                i += 2
            }
            '=' => {
                out.push(Token::Eq);
                i += 1
            }
            '!' if chars.get(i + 1) == Some(&'=') => {
                out.push(Token::NotEq);
                i += 2
            }
            '!' => {
                out.push(Token::Not);
                i += 1
            }
            _ => {
                let start = i;
                while i < chars.len() && !" \t\n,()=!".contains(chars[i]) {
                    i += 1;
                }
                out.push(Token::Ident(chars[start..i].iter().collect()));
            }
        }
    }
    Ok(out)
}

fn describe(t: Option<&Token>) -> String {
    match t {
        None => "EOS".into(),
        Some(Token::Ident(s)) => s.clone(),
        Some(Token::Comma) => ",".into(),
        Some(Token::Eq) => "=".into(),
        Some(Token::DoubleEq) => "==".into(),
        Some(Token::NotEq) => "!=".into(),
        Some(Token::Not) => "!".into(),
        Some(Token::Open) => "(".into(),
        Some(Token::Close) => ")".into(),
    }
}

impl Selector {
    /// Matches every object.
    pub fn everything() -> Self {
        Selector::default()
    }

    /// Matches no object.
    pub fn nothing() -> Self {
        Selector {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    pub fn is_everything(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Parse the string form.
    pub fn parse(s: &str) -> Result<Selector, SelectorError> {
        let tokens = tokenize(s)?;
        let mut reqs = Vec::new();
        let mut i = 0;
        let err = |msg: String| SelectorError::Parse(msg);
        while i < tokens.len() {
            let negated = tokens[i] == Token::Not;
            if negated {
                i += 1;
            }
            let key = match tokens.get(i) {
                Some(Token::Ident(k)) => k.clone(),
                other => {
                    return Err(err(format!(
                        "found '{}', expected: identifier",
                        describe(other)
                    )))
                }
            };
            validate_key(&key).map_err(|e| err(format!("invalid label key \"{key}\": {e}")))?;
            i += 1;
            if negated {
                reqs.push(Requirement {
                    key,
                    op: Operator::DoesNotExist,
                    values: BTreeSet::new(),
                });
            } else {
                match tokens.get(i) {
                    None | Some(Token::Comma) => {
                        reqs.push(Requirement {
                            key,
                            op: Operator::Exists,
                            values: BTreeSet::new(),
                        });
                    }
                    Some(Token::Eq | Token::DoubleEq | Token::NotEq) => {
                        let op = if tokens[i] == Token::NotEq {
                            Operator::NotEquals
                        } else {
                            Operator::Equals
                        };
                        i += 1;
                        let value = match tokens.get(i) {
                            Some(Token::Ident(v)) => {
                                i += 1;
                                v.clone()
                            }
                            None | Some(Token::Comma) => String::new(),
                            other => {
                                return Err(err(format!(
                                    "found '{}', expected: identifier",
                                    describe(other)
                                )))
                            }
                        };
                        validate_value(&value)
                            .map_err(|e| err(format!("invalid label value: \"{value}\": {e}")))?;
                        reqs.push(Requirement {
                            key,
                            op,
                            values: BTreeSet::from([value]),
                        });
                    }
                    Some(Token::Ident(word)) if word == "in" || word == "notin" => {
                        let op = if word == "in" {
                            Operator::In
                        } else {
                            Operator::NotIn
                        };
                        i += 1;
                        if tokens.get(i) != Some(&Token::Open) {
                            return Err(err(format!(
                                "found '{}', expected: '('",
                                describe(tokens.get(i))
                            )));
                        }
                        i += 1;
                        let mut values = BTreeSet::new();
                        loop {
                            match tokens.get(i) {
                                Some(Token::Ident(v)) => {
                                    validate_value(v).map_err(|e| {
                                        err(format!("invalid label value: \"{v}\": {e}"))
                                    })?;
                                    values.insert(v.clone());
                                    i += 1;
                                }
                                Some(Token::Close) if values.is_empty() => {
                                    values.insert(String::new());
                                }
                                other => {
                                    return Err(err(format!(
                                        "found '{}', expected: identifier",
                                        describe(other)
                                    )))
                                }
                            }
                            match tokens.get(i) {
                                Some(Token::Comma) => i += 1,
                                Some(Token::Close) => {
                                    i += 1;
                                    break;
                                }
                                other => {
                                    return Err(err(format!(
                                        "found '{}', expected: ',' or ')'",
                                        describe(other)
                                    )))
                                }
                            }
                        }
                        reqs.push(Requirement { key, op, values });
                    }
                    other => {
                        return Err(err(format!(
                            "found '{}', expected: in, notin, =, ==, !=, gt, lt",
                            describe(other)
                        )))
                    }
                }
            }
            match tokens.get(i) {
                None => break,
                Some(Token::Comma) => {
                    i += 1;
                    if i == tokens.len() {
                        return Err(err("found '', expected: identifier after ','".into()));
                    }
                }
                other => {
                    return Err(err(format!(
                        "found '{}', expected: ',' or 'end of string'",
                        describe(other)
                    )))
                }
            }
        }
        reqs.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Selector {
            requirements: reqs,
            nothing: false,
        })
    }

    /// Build from the struct form; `matchLabels` and `matchExpressions` are ANDed.
    pub fn from_label_selector(sel: &LabelSelector) -> Result<Selector, SelectorError> {
        let mut reqs = Vec::new();
        for (k, v) in sel.match_labels.iter().flatten() {
            validate_key(k).map_err(SelectorError::Invalid)?;
            validate_value(v).map_err(SelectorError::Invalid)?;
            reqs.push(Requirement {
                key: k.clone(),
                op: Operator::Equals,
                values: BTreeSet::from([v.clone()]),
            });
        }
        for e in sel.match_expressions.iter().flatten() {
            validate_key(&e.key).map_err(SelectorError::Invalid)?;
            let values: BTreeSet<String> = e.values.iter().flatten().cloned().collect();
            let op = match e.operator.as_str() {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => {
                    return Err(SelectorError::Invalid(format!(
                        "{other:?} is not a valid label selector operator"
                    )))
                }
            };
            match op {
                Operator::In | Operator::NotIn if values.is_empty() => {
                    return Err(SelectorError::Invalid(
                        "for 'in', 'notin' operators, values set can't be empty".into(),
                    ))
                }
                Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                    return Err(SelectorError::Invalid(
                        "values set must be empty for exists and does not exist".into(),
                    ))
                }
                _ => {}
            }
            reqs.push(Requirement {
                key: e.key.clone(),
                op,
                values,
            });
        }
        reqs.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Selector {
            requirements: reqs,
            nothing: false,
        })
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_with(|k| labels.get(k).map(String::as_str))
    }

    pub fn matches_with<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches(get(&r.key)))
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.requirements.iter().map(|r| r.to_string()).collect();
        write!(f, "{}", parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn string_selectors_parse_and_match() {
        type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], bool);
        let cases: &[Case] = &[
            ("a=b", &[("a", "b")], true),
            ("a==b", &[("a", "c")], false),
            ("a!=b", &[], true),
            ("a in (x, y)", &[("a", "y")], true),
            ("a notin (x)", &[("a", "x")], false),
            ("a", &[("a", "")], true),
            ("!a", &[("a", "1")], false),
            ("a=b,c", &[("a", "b")], false),
            (
                "env in (prod),tier!=db",
                &[("env", "prod"), ("tier", "web")],
                true,
            ),
            ("", &[], true),
        ];
        for (text, l, want) in cases {
            let sel = Selector::parse(text).unwrap();
            assert_eq!(sel.matches(&labels(l)), *want, "{text}");
        }
    }

    #[test]
    fn bad_selectors_say_why() {
        for (text, needle) in [
            ("a in (", "expected: identifier"),
            ("a b", "expected: in, notin"),
            ("=b", "expected: identifier"),
            ("a=b,", "identifier after ','"),
            ("Bad Key=1", "expected"),
            ("a=-x", "invalid label value"),
        ] {
            let err = Selector::parse(text).unwrap_err().to_string();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn canonical_form_is_sorted() {
        let sel = Selector::parse("z=1, a in (c,b)").unwrap();
        assert_eq!(sel.to_string(), "a in (b,c),z=1");
    }

    #[test]
    fn struct_form_builds_selectors() {
        let ls: LabelSelector = serde_json::from_value(serde_json::json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]
        }))
        .unwrap();
        let sel = Selector::from_label_selector(&ls).unwrap();
        assert!(sel.matches(&labels(&[("app", "web"), ("tier", "front")])));
        assert!(!sel.matches(&labels(&[("app", "web"), ("tier", "db")])));
        assert!(Selector::from_label_selector(&LabelSelector::default())
            .unwrap()
            .is_everything());
        assert!(!Selector::nothing().matches(&labels(&[])));
        let bad: LabelSelector = serde_json::from_value(serde_json::json!({
            "matchExpressions": [{"key": "a", "operator": "In", "values": []}]
        }))
        .unwrap();
        assert!(Selector::from_label_selector(&bad).is_err());
    }
}
