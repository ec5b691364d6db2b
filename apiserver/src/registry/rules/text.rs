//! String syntaxes with upstream's wording (apimachinery's `IsQualifiedName`, `IsConfigMapKey`,
//! `IsValidPortName`, the relaxed `IsEnvVarName` of v1.34+, `IsHTTPHeaderName`): each returns
//! the problems upstream lists, empty when the value is valid.

use tinykube_proto::names::subdomain_errors;

/// Upstream's `RegexError`: the message, its examples and the regular expression.
pub fn regex_error(msg: &str, regex: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{regex}')");
    }
    let quoted: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{msg} (e.g. {}regex used for validation is '{regex}')",
        quoted.join(" or ")
    )
}

/// `must be no more than N characters`.
pub fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

const KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const KEY_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

fn key_name_syntax(s: &str) -> bool {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
    !s.is_empty()
        && s.chars().all(ok_char)
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.ends_with(|c: char| c.is_ascii_alphanumeric())
}

/// A qualified name (a label key, a finalizer, an annotation key in lower case): an optional
/// DNS subdomain prefix and `/`, then at most 63 of `[-A-Za-z0-9_.]`, alphanumeric at both ends.
pub fn qualified_name_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    subdomain_errors(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            return vec![format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(KEY_MSG, KEY_FMT, &["MyName", "my.name", "123-abc"])
            )]
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_len_error(63)));
    }
    if !key_name_syntax(name) {
        errs.push(format!(
            "name part {}",
            regex_error(KEY_MSG, KEY_FMT, &["MyName", "my.name", "123-abc"])
        ));
    }
    errs
}

/// A label value: empty, or at most 63 of `[-A-Za-z0-9_.]`, alphanumeric at both ends.
pub fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !value.is_empty() && !key_name_syntax(value) {
        errs.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?",
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// `.`, `..` and a leading `..` name the directory or its parent; upstream refuses them as keys
/// and file names.
fn chdir_prefix_errors(value: &str) -> Vec<String> {
    match value {
        "." => vec!["must not be '.'".to_string()],
        ".." => vec!["must not be '..'".to_string()],
        v if v.starts_with("..") => vec!["must not start with '..'".to_string()],
        _ => Vec::new(),
    }
}

/// A ConfigMap or Secret key (and a key a pod refers to): at most 253 of `[-._a-zA-Z0-9]`, and
/// not `.`, `..` or `..`-prefixed.
pub fn config_key_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push(max_len_error(253));
    }
    let ok = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._".contains(c));
    if !ok {
        errs.push(regex_error(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
            "[-._a-zA-Z0-9]+",
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    errs.extend(chdir_prefix_errors(value));
    errs
}

/// An environment variable name (and an `envFrom` prefix), as upstream validates them since
/// RelaxedEnvironmentVariableValidation went GA: printable ASCII but `=`.
pub fn env_var_name_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.is_empty() {
        errs.push("environment variable name must be non-empty".to_string());
    }
    if value.chars().any(|c| !(' '..='~').contains(&c) || c == '=') {
        errs.push(
            "a valid environment variable name must consist only of printable ASCII characters other than '='"
                .to_string(),
        );
    }
    errs
}

/// An IANA service name (a named container port): at most 15 of `[-a-z0-9]`, at least one
/// letter, no `--`, no hyphen at either end.
pub fn port_name_errors(port: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if port.len() > 15 {
        errs.push(max_len_error(15));
    }
    if port.is_empty()
        || !port
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    }
    if !port.chars().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".into());
    }
    if port.contains("--") {
        errs.push("must not contain consecutive hyphens".into());
    }
    if port.starts_with('-') || port.ends_with('-') {
        errs.push("must not begin or end with a hyphen".into());
    }
    errs
}

/// An HTTP header name: `[-A-Za-z0-9]+`.
pub fn http_header_name_errors(value: &str) -> Vec<String> {
    let ok = !value.is_empty() && value.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    if ok {
        Vec::new()
    } else {
        vec![regex_error(
            "a valid HTTP header must consist of alphanumeric characters or '-'",
            "[-A-Za-z0-9]+",
            &["X-Header-Name"],
        )]
    }
}

/// A DNS-1123 subdomain that may end in `-` because a random suffix follows (`generateName`,
/// name prefixes): upstream masks a trailing dash before checking.
pub fn subdomain_prefix_errors(prefix: &str) -> Vec<String> {
    match prefix.strip_suffix('-') {
        Some(head) => subdomain_errors(&format!("{head}a")),
        None => subdomain_errors(prefix),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names_as_upstream() {
        for ok in ["kubernetes", "example.com/hold", "a", "A.b_c-9", "x/y"] {
            assert!(qualified_name_errors(ok).is_empty(), "{ok}");
        }
        let cases = [
            ("", vec!["name part must be non-empty", "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"]),
            ("/x", vec!["prefix part must be non-empty"]),
            ("Example.com/x", vec!["prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]),
            ("a/b/c", vec!["a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]),
        ];
        for (value, want) in cases {
            assert_eq!(qualified_name_errors(value), want, "{value:?}");
        }
        assert_eq!(
            qualified_name_errors(&"a".repeat(64)),
            ["name part must be no more than 63 characters"]
        );
    }

    #[test]
    fn config_keys_as_upstream() {
        for ok in ["key.name", "KEY_NAME", "key-name", ".dotfile", "a..b"] {
            assert!(config_key_errors(ok).is_empty(), "{ok}");
        }
        assert_eq!(config_key_errors("."), ["must not be '.'"]);
        assert_eq!(config_key_errors(".."), ["must not be '..'"]);
        assert_eq!(config_key_errors("..data"), ["must not start with '..'"]);
        assert_eq!(
            config_key_errors(&"k".repeat(254)),
            ["must be no more than 253 characters"]
        );
        assert_eq!(
            config_key_errors("a/b"),
            ["a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"]
        );
    }

    #[test]
    fn env_names_ports_and_headers() {
        assert!(env_var_name_errors("MY_VAR").is_empty());
        assert!(env_var_name_errors("1st var").is_empty());
        assert_eq!(
            env_var_name_errors("A=B"),
            ["a valid environment variable name must consist only of printable ASCII characters other than '='"]
        );
        assert_eq!(env_var_name_errors("é").len(), 1);
        assert!(port_name_errors("http").is_empty());
        assert!(port_name_errors("h2c-8080").is_empty());
        assert_eq!(
            port_name_errors("1234"),
            ["must contain at least one letter (a-z)"]
        );
        assert_eq!(
            port_name_errors("-a--b-"),
            [
                "must not contain consecutive hyphens",
                "must not begin or end with a hyphen"
            ]
        );
        assert_eq!(
            port_name_errors("a-very-long-port-name"),
            ["must be no more than 15 characters"]
        );
        assert_eq!(port_name_errors("HTTP").len(), 2);
        assert!(http_header_name_errors("X-Custom").is_empty());
        assert_eq!(http_header_name_errors("X Custom").len(), 1);
        assert!(subdomain_prefix_errors("web-").is_empty());
        assert_eq!(subdomain_prefix_errors("Web-").len(), 1);
        assert!(label_value_errors("").is_empty());
        assert_eq!(
            label_value_errors(&"v".repeat(64)),
            ["must be no more than 63 characters"]
        );
    }
}
