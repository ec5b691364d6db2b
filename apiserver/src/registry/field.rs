//! Field errors as upstream's apimachinery reports them (`metadata.name: Invalid value: "x": …`),
//! the building blocks of a 422 Invalid Status.

use serde_json::Value;

/// The kind of a field error; each maps to a `FieldValue…` cause reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorType {
    Required,
    Invalid,
    /// A value of the wrong type: printed as `Invalid value`, reported as its own reason.
    TypeInvalid,
    NotSupported,
    Duplicate,
    Forbidden,
    TooLong,
    TooMany,
    NotFound,
}

impl ErrorType {
    /// The `reason` of a Status cause.
    pub fn reason(self) -> &'static str {
        match self {
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Invalid => "FieldValueInvalid",
            ErrorType::TypeInvalid => "FieldValueTypeInvalid",
            ErrorType::NotSupported => "FieldValueNotSupported",
            ErrorType::Duplicate => "FieldValueDuplicate",
            ErrorType::Forbidden => "FieldValueForbidden",
            ErrorType::TooLong => "FieldValueTooLong",
            ErrorType::TooMany => "FieldValueTooMany",
            ErrorType::NotFound => "FieldValueNotFound",
        }
    }
}

/// The offending value of a field error, as upstream's `field.Error.ErrorBody` prints its
/// `BadValue`.
#[derive(Debug, Clone, PartialEq)]
pub enum BadValue {
    /// A value from the object: strings quoted, numbers and bools bare, a missing one (a nil
    /// pointer upstream) as `"null"`.
    Json(Value),
    /// Text printed as it is: a Go value whose `String()` upstream calls (an `IntOrString`
    /// prints `200%` or `5`), or Go syntax upstream prints with `%#v`.
    Go(String),
}

/// One invalid field.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    pub kind: ErrorType,
    /// Path as upstream prints it: `spec.containers[0].name`, `metadata.labels`.
    pub field: String,
    /// The offending value, when upstream prints one.
    pub value: Option<BadValue>,
    pub detail: String,
}

impl FieldError {
    fn new(
        kind: ErrorType,
        field: impl Into<String>,
        value: Option<Value>,
        detail: impl Into<String>,
    ) -> Self {
        FieldError {
            kind,
            field: field.into(),
            value: value.map(BadValue::Json),
            detail: detail.into(),
        }
    }

    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Required, field, None, detail)
    }

    pub fn invalid(
        field: impl Into<String>,
        value: impl Into<Value>,
        detail: impl Into<String>,
    ) -> Self {
        Self::new(ErrorType::Invalid, field, Some(value.into()), detail)
    }

    /// An Invalid error whose value upstream prints as Go does (`String()` or `%#v`), given
    /// already rendered.
    pub fn invalid_go(
        field: impl Into<String>,
        rendered: impl Into<String>,
        detail: impl Into<String>,
    ) -> Self {
        FieldError {
            kind: ErrorType::Invalid,
            field: field.into(),
            value: Some(BadValue::Go(rendered.into())),
            detail: detail.into(),
        }
    }

    /// `supported` lists the accepted values, quoted in the message as upstream does.
    pub fn not_supported(
        field: impl Into<String>,
        value: impl Into<Value>,
        supported: &[&str],
    ) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(ErrorType::NotSupported, field, Some(value.into()), detail)
    }

    pub fn duplicate(field: impl Into<String>, value: impl Into<Value>) -> Self {
        Self::new(ErrorType::Duplicate, field, Some(value.into()), "")
    }

    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Forbidden, field, None, detail)
    }

    pub fn too_long(field: impl Into<String>, value: impl Into<Value>, max: usize) -> Self {
        Self::new(
            ErrorType::TooLong,
            field,
            Some(value.into()),
            format!("may not be more than {max} bytes"),
        )
    }

    /// `Too many: 4: must have at most 3 items`: `actual` is printed as the value.
    pub fn too_many(field: impl Into<String>, actual: usize, max: usize) -> Self {
        let unit = if max == 1 { "item" } else { "items" };
        Self::new(
            ErrorType::TooMany,
            field,
            Some(actual.into()),
            format!("must have at most {max} {unit}"),
        )
    }

    pub fn not_found(field: impl Into<String>, value: impl Into<Value>) -> Self {
        Self::new(ErrorType::NotFound, field, Some(value.into()), "")
    }

    /// The same error with `detail` (upstream sets a detail on some Duplicate and NotFound
    /// errors: "taints must be unique by key and effect pair").
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = detail.into();
        self
    }

    /// The message without the field: `Invalid value: "x": detail`.
    pub fn message(&self) -> String {
        let head = match self.kind {
            ErrorType::Required => "Required value",
            ErrorType::Invalid | ErrorType::TypeInvalid => "Invalid value",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::Duplicate => "Duplicate value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::TooLong => "Too long",
            ErrorType::TooMany => "Too many",
            ErrorType::NotFound => "Not found",
        };
        let mut out = head.to_string();
        let shows_value = !matches!(
            self.kind,
            ErrorType::Required | ErrorType::Forbidden | ErrorType::TooLong
        );
        if shows_value {
            match &self.value {
                Some(BadValue::Json(v)) => {
                    out.push_str(": ");
                    out.push_str(&render_value(v));
                }
                Some(BadValue::Go(text)) => {
                    out.push_str(": ");
                    out.push_str(text);
                }
                None => {}
            }
        }
        if !self.detail.is_empty() {
            out.push_str(": ");
            out.push_str(&self.detail);
        }
        out
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message())
    }
}

/// `errs` without later repeats of an error already listed (kinds and the shared metadata rules
/// may both report one).
pub fn dedup(errs: Vec<FieldError>) -> Vec<FieldError> {
    let mut out: Vec<FieldError> = Vec::with_capacity(errs.len());
    for e in errs {
        if !out.contains(&e) {
            out.push(e);
        }
    }
    out
}

/// Values as upstream's ErrorBody prints them: strings quoted, numbers and bools bare, and a
/// nil (a missing optional field) as the quoted string `"null"`.
fn render_value(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Null => "\"null\"".to_string(),
        other => other.to_string(),
    }
}

/// The Status message for a 422: `Pod "x" is invalid: <one>` or `... is invalid: [<a>, <b>]`.
/// Errors that read the same are listed once, as upstream's aggregate does.
pub fn invalid_message(kind: &str, name: &str, errs: &[FieldError]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for e in errs {
        let text = e.to_string();
        if !parts.contains(&text) {
            parts.push(text);
        }
    }
    let joined = if parts.len() == 1 {
        parts[0].clone()
    } else {
        format!("[{}]", parts.join(", "))
    };
    format!("{kind} {name:?} is invalid: {joined}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_read_as_upstream() {
        let e = FieldError::invalid("metadata.name", "Bad_Name", "bad");
        assert_eq!(
            e.to_string(),
            "metadata.name: Invalid value: \"Bad_Name\": bad"
        );
        let r = FieldError::required("spec.containers", "");
        assert_eq!(r.to_string(), "spec.containers: Required value");
        let n = FieldError::not_supported("spec.restartPolicy", "Sometimes", &["Always", "Never"]);
        assert_eq!(
            n.message(),
            "Unsupported value: \"Sometimes\": supported values: \"Always\", \"Never\""
        );
        assert_eq!(
            invalid_message("Pod", "p", &[r.clone(), e.clone(), r.clone()]),
            "Pod \"p\" is invalid: [spec.containers: Required value, metadata.name: Invalid value: \"Bad_Name\": bad]"
        );
        assert_eq!(dedup(vec![r.clone(), e, r]).len(), 2);
        assert_eq!(
            FieldError::too_long("metadata.annotations", "", 262144).to_string(),
            "metadata.annotations: Too long: may not be more than 262144 bytes"
        );
    }
}
