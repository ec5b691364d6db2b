//! `pattern` regular expressions with Go's RE2 meaning: the `regex` crate reads the same
//! syntax, but its Perl classes (`\d`, `\w`, `\s`) and word boundaries are Unicode-aware where
//! Go's are ASCII-only, so those are rewritten to their ASCII forms before compiling.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use regex::Regex;

/// `pattern` compiled as Go would read it; compiled patterns are kept for the next object.
pub(super) fn compiled(pattern: &str) -> Result<Regex, String> {
    static CACHE: OnceLock<Mutex<HashMap<String, Result<Regex, String>>>> = OnceLock::new();
    let mut cache = CACHE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if cache.len() > 4096 {
        cache.clear();
    }
    cache
        .entry(pattern.to_string())
        .or_insert_with(|| Regex::new(&ascii_classes(pattern)).map_err(|e| e.to_string()))
        .clone()
}

/// Go's ASCII Perl classes, outside and inside bracket expressions.
fn class(c: char, in_brackets: bool) -> Option<&'static str> {
    Some(match (c, in_brackets) {
        ('d', false) => "[0-9]",
        ('D', false) => "[^0-9]",
        ('w', false) => "[0-9A-Za-z_]",
        ('W', false) => "[^0-9A-Za-z_]",
        ('s', false) => r"[\t\n\f\r ]",
        ('S', false) => r"[^\t\n\f\r ]",
        ('b', false) => r"(?-u:\b)",
        ('B', false) => r"(?-u:\B)",
        ('d', true) => "0-9",
        ('w', true) => "0-9A-Za-z_",
        ('s', true) => r"\t\n\f\r ",
        _ => return None,
    })
}

/// Rewrite `\d \D \w \W \s \S \b \B` (and `\d \w \s` inside brackets) to ASCII forms; every
/// other escape, and everything else, is left as written.
fn ascii_classes(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars().peekable();
    let mut in_brackets = false;
    // Just after `[` or `[^`, where a `]` is a literal.
    let mut bracket_start = false;
    while let Some(c) = chars.next() {
        let at_start = std::mem::take(&mut bracket_start);
        match c {
            '\\' => match chars.next() {
                Some(e) => match class(e, in_brackets) {
                    Some(ascii) => out.push_str(ascii),
                    None => {
                        out.push('\\');
                        out.push(e);
                    }
                },
                None => out.push('\\'),
            },
            '[' if !in_brackets => {
                in_brackets = true;
                bracket_start = true;
                out.push('[');
                if chars.peek() == Some(&'^') {
                    chars.next();
                    out.push('^');
                }
            }
            '[' if chars.peek() == Some(&':') => {
                // A POSIX class such as [:alpha:], copied through to its `:]`.
                out.push('[');
                while let Some(p) = chars.next() {
                    out.push(p);
                    if p == ':' && chars.peek() == Some(&']') {
                        out.push(']');
                        chars.next();
                        break;
                    }
                }
            }
            ']' if in_brackets && !at_start => {
                in_brackets = false;
                out.push(']');
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perl_classes_become_ascii() {
        let cases = [
            (r"^\d+$", r"^[0-9]+$"),
            (
                r"\w\W\s\S\D",
                r"[0-9A-Za-z_][^0-9A-Za-z_][\t\n\f\r ][^\t\n\f\r ][^0-9]",
            ),
            (r"[\d.]", r"[0-9.]"),
            (r"[]\d]", r"[]0-9]"),
            (r"[^]\w]\d", r"[^]0-9A-Za-z_][0-9]"),
            (r"[[:alpha:]\d]\d", r"[[:alpha:]0-9][0-9]"),
            (r"\\d\.", r"\\d\."),
            (r"\bword\b", r"(?-u:\b)word(?-u:\b)"),
        ];
        for (go, rust) in cases {
            assert_eq!(ascii_classes(go), rust, "{go}");
        }
    }

    #[test]
    fn matching_follows_go() {
        let digits = compiled(r"^\d+$").unwrap();
        assert!(digits.is_match("123"));
        // Arabic-Indic digits are no \d in Go.
        assert!(!digits.is_match("١٢٣"));
        assert!(compiled(r"^\w+$").unwrap().is_match("a_1"));
        assert!(!compiled(r"^\w+$").unwrap().is_match("é"));
        assert!(compiled(r"^\D$").unwrap().is_match("é"));
        assert!(compiled("^(a").is_err());
    }
}
