//! The name syntaxes of apimachinery's validation, with its wording: DNS-1123 labels and
//! subdomains. The API server, the kubelet's static pod manifests and label keys all check names
//! here.

/// Upstream's message for a string that is not a DNS-1123 subdomain.
pub const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
/// Upstream's message for a string that is not a DNS-1123 label.
pub const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, whatever its length.
fn label_syntax(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// Whether `s` is a DNS-1123 subdomain (at most 253 characters of dot-separated labels).
pub fn is_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(label_syntax)
}

/// Problems with a DNS-1123 subdomain, as upstream words them (empty when valid).
pub fn subdomain_errors(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    if s.len() > 253 {
        out.push("must be no more than 253 characters".to_string());
    }
    if !s.split('.').all(label_syntax) {
        out.push(SUBDOMAIN_MSG.to_string());
    }
    out
}

/// Problems with a DNS-1123 label, as upstream words them (empty when valid).
pub fn label_errors(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    if s.len() > 63 {
        out.push("must be no more than 63 characters".to_string());
    }
    if !label_syntax(s) {
        out.push(LABEL_MSG.to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_subdomains_as_upstream() {
        let long_label = "a".repeat(64);
        let long_name = vec!["a".repeat(63); 5].join(".");
        let cases: [(&str, bool, usize); 9] = [
            ("nginx", true, 0),
            ("192.168.122.20", true, 1),
            ("kube-system", true, 0),
            ("a.b", true, 1),
            ("-x", false, 1),
            ("Bad_Name", false, 1),
            ("", false, 1),
            (&long_label, true, 1),
            (&long_name, false, 2),
        ];
        for (s, subdomain, label_problems) in cases {
            assert_eq!(is_subdomain(s), subdomain, "{s}");
            assert_eq!(subdomain_errors(s).is_empty(), subdomain, "{s}");
            assert_eq!(label_errors(s).len(), label_problems, "{s}");
        }
    }
}
