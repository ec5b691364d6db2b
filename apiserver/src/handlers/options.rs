//! The write options of a request, checked before its body as upstream's handlers do
//! (apimachinery's ValidateCreateOptions, ValidateUpdateOptions, ValidatePatchOptions): the
//! field manager (at most 128 bytes, printable), `fieldValidation`, and `force` only with apply.
//! A failure is a 422 about `CreateOptions.meta.k8s.io ""` (or Update/Patch).

use super::Ctx;
use crate::error::{ApiError, ApiResult};
use crate::registry::field::FieldError;

/// Upstream's FieldManagerMaxLength.
const MAX_MANAGER_BYTES: usize = 128;

/// Which write the options are of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verb {
    Create,
    Update,
    /// A PATCH; `apply` for server-side apply.
    Patch {
        apply: bool,
    },
}

impl Verb {
    fn options_kind(self) -> &'static str {
        match self {
            Verb::Create => "CreateOptions",
            Verb::Update => "UpdateOptions",
            Verb::Patch { .. } => "PatchOptions",
        }
    }
}

/// Go's unicode.IsPrint, closely enough for a manager's name: letters, marks, numbers,
/// punctuation, symbols and the ASCII space; not controls, other spaces, format characters,
/// private use or unassigned code points.
fn is_print(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    let format = matches!(c,
        '\u{ad}' | '\u{600}'..='\u{605}' | '\u{61c}' | '\u{6dd}' | '\u{70f}' | '\u{180e}'
        | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{206f}'
        | '\u{feff}' | '\u{fff9}'..='\u{fffb}');
    let private = matches!(c, '\u{e000}'..='\u{f8ff}' | '\u{f0000}'..='\u{10ffff}');
    !(c.is_control() || c.is_whitespace() || format || private)
}

/// Upstream's ValidateFieldManager.
pub(super) fn field_manager_errors(manager: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if manager.len() > MAX_MANAGER_BYTES {
        errs.push(FieldError::too_long(
            "fieldManager",
            manager,
            MAX_MANAGER_BYTES,
        ));
    }
    for (at, c) in manager.char_indices().filter(|(_, c)| !is_print(*c)) {
        errs.push(FieldError::invalid(
            "fieldManager",
            manager,
            format!("invalid character U+{:04X} (at position {at})", c as u32),
        ));
    }
    errs
}

/// The option errors of a request's query for `verb`.
pub(super) fn option_errors(query: &crate::request::Query, verb: Verb) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let manager = query.field_manager.as_deref().unwrap_or("");
    match verb {
        Verb::Patch { apply: false } if query.force.is_some() => errs.push(FieldError::forbidden(
            "force",
            "may not be specified for non-apply patch",
        )),
        Verb::Patch { apply: true } if manager.is_empty() => errs.push(FieldError::required(
            "fieldManager",
            "is required for apply patch",
        )),
        _ => {}
    }
    errs.extend(field_manager_errors(manager));
    let validation = query.field_validation.as_deref().unwrap_or("");
    if !["", "Ignore", "Strict", "Warn"].contains(&validation) {
        errs.push(FieldError::not_supported(
            "fieldValidation",
            validation,
            &["", "Ignore", "Strict", "Warn"],
        ));
    }
    errs
}

/// Refuse the request when its options are invalid.
pub(super) fn check(ctx: &Ctx, verb: Verb) -> ApiResult<()> {
    let errors = option_errors(&ctx.query, verb);
    if errors.is_empty() {
        return Ok(());
    }
    Err(ApiError::Invalid {
        kind: verb.options_kind().into(),
        group: "meta.k8s.io".into(),
        name: String::new(),
        errors,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Query;

    fn messages(raw: &str, verb: Verb) -> Vec<String> {
        option_errors(&Query::parse(Some(raw)).unwrap(), verb)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn options_are_checked_as_upstream() {
        let long = "m".repeat(129);
        let cases: Vec<(String, Verb, Vec<String>)> = vec![
            ("fieldManager=kubectl".into(), Verb::Create, vec![]),
            (format!("fieldManager={}", "m".repeat(128)), Verb::Update, vec![]),
            ("fieldManager=k%C3%BCbectl".into(), Verb::Create, vec![]),
            (
                format!("fieldManager={long}"),
                Verb::Create,
                vec!["fieldManager: Too long: may not be more than 128 bytes".into()],
            ),
            (
                "fieldManager=a%09b".into(),
                Verb::Update,
                vec![
                    "fieldManager: Invalid value: \"a\\tb\": invalid character U+0009 (at position 1)"
                        .into(),
                ],
            ),
            (
                "".into(),
                Verb::Patch { apply: true },
                vec!["fieldManager: Required value: is required for apply patch".into()],
            ),
            ("".into(), Verb::Patch { apply: false }, vec![]),
            (
                "force=true".into(),
                Verb::Patch { apply: false },
                vec!["force: Forbidden: may not be specified for non-apply patch".into()],
            ),
            (
                "fieldManager=x&force=true".into(),
                Verb::Patch { apply: true },
                vec![],
            ),
            (
                "fieldValidation=Loose".into(),
                Verb::Create,
                vec![
                    "fieldValidation: Unsupported value: \"Loose\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
                        .into(),
                ],
            ),
        ];
        for (raw, verb, want) in cases {
            assert_eq!(messages(&raw, verb), want, "{raw}");
        }
    }

    #[test]
    fn printable_is_gos() {
        for c in ['a', 'ü', ' ', '-', '/', '😀', '\u{fffd}'] {
            assert!(is_print(c), "{c:?}");
        }
        for c in [
            '\t', '\n', '\u{7f}', '\u{a0}', '\u{200b}', '\u{feff}', '\u{e000}',
        ] {
            assert!(!is_print(c), "{c:?}");
        }
    }
}
