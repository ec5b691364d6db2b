//! The API server's error type: every failure becomes a `Status` object with upstream's reason
//! and code, here and nowhere else (store conflicts → 409, compaction → 410, …).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};
use tinykube_proto::registry::ResourceInfo;

use crate::registry::field::{invalid_message, FieldError};

/// The resource an error is about, as upstream's `qualifiedResource` (`pods`, `deployments.apps`).
#[derive(Debug, Clone)]
pub struct Qualified {
    pub group: String,
    pub plural: String,
}

impl Qualified {
    pub fn of(info: &ResourceInfo) -> Self {
        Qualified {
            group: info.group.to_string(),
            plural: info.plural.to_string(),
        }
    }

    pub fn new(group: &str, plural: &str) -> Self {
        Qualified {
            group: group.to_string(),
            plural: plural.to_string(),
        }
    }

    pub(crate) fn display(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    fn details(&self, name: &str) -> Value {
        // Upstream's StatusDetails leaves out empty fields (a forbidden list names no object).
        let mut d = Map::new();
        if !name.is_empty() {
            d.insert("name".into(), name.into());
        }
        if !self.group.is_empty() {
            d.insert("group".into(), self.group.clone().into());
        }
        if !self.plural.is_empty() {
            d.insert("kind".into(), self.plural.clone().into());
        }
        Value::Object(d)
    }
}

/// A kind as upstream's GroupKind prints it: `Pod`, `Deployment.apps`, `PatchOptions.meta.k8s.io`.
fn qualified_kind(kind: &str, group: &str) -> String {
    if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    }
}

/// A failed request.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{} {name:?} not found", .resource.display())]
    NotFound { resource: Qualified, name: String },
    #[error("the server could not find the requested resource")]
    NoSuchResource,
    #[error("{} {name:?} already exists", .resource.display())]
    AlreadyExists { resource: Qualified, name: String },
    #[error("Operation cannot be fulfilled on {} {name:?}: {reason}", .resource.display())]
    Conflict {
        resource: Qualified,
        name: String,
        reason: String,
    },
    /// 422: `kind` and `group` name the kind as upstream's `Kind.group` (`Deployment.apps`).
    #[error("{}", invalid_message(&qualified_kind(.kind, .group), .name, .errors))]
    Invalid {
        kind: String,
        group: String,
        name: String,
        errors: Vec<FieldError>,
    },
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{message}")]
    ForbiddenNamed {
        resource: Qualified,
        name: String,
        message: String,
    },
    /// A ValidatingAdmissionPolicy's denial: upstream's admission Forbidden error with the
    /// validation's reason and that reason's code, and the message as its one cause.
    #[error("{} {name:?} is forbidden: {message}", .resource.display())]
    PolicyDenied {
        resource: Qualified,
        name: String,
        message: String,
        reason: String,
    },
    #[error("{0}")]
    Expired(String),
    #[error("{0}")]
    MethodNotAllowed(String),
    #[error(
        "the body of the request was in an unknown format - accepted media types include: {0}"
    )]
    UnsupportedMediaType(String),
    #[error("{0}")]
    NotAcceptable(String),
    #[error("Request entity too large: limit is {0}")]
    TooLarge(usize),
    /// 429; `retry_after` seconds (when not zero) go to `details.retryAfterSeconds` and the
    /// `Retry-After` header, which client-go obeys by retrying on its own.
    #[error("{message}")]
    TooManyRequests {
        message: String,
        causes: Vec<(String, String)>,
        retry_after: u32,
    },
    #[error("Unauthorized")]
    Unauthorized,
    #[error("{0}")]
    Internal(String),
    #[error("{0}")]
    Unavailable(String),
    /// A failure `Status` a REST handler returns as its result (upstream's eviction with more
    /// than one budget): only a code and a message, no reason.
    #[error("{message}")]
    Failure { code: StatusCode, message: String },
    /// 409 for a server-side apply that would change fields other managers own; each cause
    /// is a (message, field) pair with reason FieldManagerConflict.
    #[error("{message}")]
    ApplyConflict {
        message: String,
        causes: Vec<(String, String)>,
    },
}

impl ApiError {
    pub fn not_found(info: &ResourceInfo, name: &str) -> Self {
        ApiError::NotFound {
            resource: Qualified::of(info),
            name: name.to_string(),
        }
    }

    pub fn conflict(info: &ResourceInfo, name: &str) -> Self {
        ApiError::Conflict {
            resource: Qualified::of(info),
            name: name.to_string(),
            reason: "the object has been modified; please apply your changes to the latest version and try again"
                .to_string(),
        }
    }

    pub fn invalid(info: &ResourceInfo, name: &str, errors: Vec<FieldError>) -> Self {
        ApiError::Invalid {
            kind: info.kind.to_string(),
            group: info.group.to_string(),
            name: name.to_string(),
            errors,
        }
    }

    pub fn code(&self) -> StatusCode {
        match self {
            ApiError::NotFound { .. } | ApiError::NoSuchResource => StatusCode::NOT_FOUND,
            ApiError::AlreadyExists { .. }
            | ApiError::Conflict { .. }
            | ApiError::ApplyConflict { .. } => StatusCode::CONFLICT,
            ApiError::Invalid { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::PolicyDenied { reason, .. } => match reason.as_str() {
                "Forbidden" => StatusCode::FORBIDDEN,
                "Unauthorized" => StatusCode::UNAUTHORIZED,
                "RequestEntityTooLarge" => StatusCode::PAYLOAD_TOO_LARGE,
                _ => StatusCode::UNPROCESSABLE_ENTITY,
            },
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Forbidden(_) | ApiError::ForbiddenNamed { .. } => StatusCode::FORBIDDEN,
            ApiError::Expired(_) => StatusCode::GONE,
            ApiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::NotAcceptable(_) => StatusCode::NOT_ACCEPTABLE,
            ApiError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Failure { code, .. } => *code,
        }
    }

    fn reason(&self) -> &'static str {
        match self {
            ApiError::NotFound { .. } | ApiError::NoSuchResource => "NotFound",
            ApiError::AlreadyExists { .. } => "AlreadyExists",
            ApiError::Conflict { .. } | ApiError::ApplyConflict { .. } => "Conflict",
            ApiError::Invalid { .. } => "Invalid",
            ApiError::PolicyDenied { reason, .. } => match reason.as_str() {
                "Forbidden" => "Forbidden",
                "Unauthorized" => "Unauthorized",
                "RequestEntityTooLarge" => "RequestEntityTooLarge",
                _ => "Invalid",
            },
            ApiError::BadRequest(_) => "BadRequest",
            ApiError::Forbidden(_) | ApiError::ForbiddenNamed { .. } => "Forbidden",
            ApiError::Expired(_) => "Expired",
            ApiError::MethodNotAllowed(_) => "MethodNotAllowed",
            ApiError::UnsupportedMediaType(_) => "UnsupportedMediaType",
            ApiError::NotAcceptable(_) => "NotAcceptable",
            ApiError::TooLarge(_) => "RequestEntityTooLarge",
            ApiError::TooManyRequests { .. } => "TooManyRequests",
            ApiError::Unauthorized => "Unauthorized",
            ApiError::Internal(_) => "InternalError",
            ApiError::Unavailable(_) => "ServiceUnavailable",
            ApiError::Failure { .. } => "",
        }
    }

    fn details(&self) -> Option<Value> {
        match self {
            ApiError::NotFound { resource, name }
            | ApiError::AlreadyExists { resource, name }
            | ApiError::Conflict { resource, name, .. }
            | ApiError::ForbiddenNamed { resource, name, .. } => Some(resource.details(name)),
            ApiError::NoSuchResource => Some(json!({})),
            ApiError::PolicyDenied {
                resource,
                name,
                message,
                ..
            } => {
                let mut d = resource.details(name);
                d["causes"] = json!([{ "message": message }]);
                Some(d)
            }
            ApiError::Invalid {
                kind,
                group,
                name,
                errors,
            } => {
                let causes: Vec<Value> = errors
                    .iter()
                    .map(|e| json!({"reason": e.kind.reason(), "message": e.message(), "field": e.field}))
                    .collect();
                let mut d = Map::new();
                if !name.is_empty() {
                    d.insert("name".into(), name.clone().into());
                }
                if !group.is_empty() {
                    d.insert("group".into(), group.clone().into());
                }
                d.insert("kind".into(), kind.clone().into());
                d.insert("causes".into(), causes.into());
                Some(Value::Object(d))
            }
            ApiError::TooManyRequests {
                causes,
                retry_after,
                ..
            } => {
                let mut d = Map::new();
                if !causes.is_empty() {
                    let causes: Vec<Value> = causes
                        .iter()
                        .map(|(reason, message)| json!({"reason": reason, "message": message}))
                        .collect();
                    d.insert("causes".into(), causes.into());
                }
                if *retry_after > 0 {
                    d.insert("retryAfterSeconds".into(), (*retry_after).into());
                }
                Some(Value::Object(d))
            }
            ApiError::ApplyConflict { causes, .. } => {
                let causes: Vec<Value> = causes
                    .iter()
                    .map(|(message, field)| {
                        json!({"reason": "FieldManagerConflict", "message": message, "field": field})
                    })
                    .collect();
                Some(json!({ "causes": causes }))
            }
            _ => None,
        }
    }

    /// The `Status` object upstream would send.
    pub fn status(&self) -> Value {
        let mut s = Map::new();
        s.insert("kind".into(), "Status".into());
        s.insert("apiVersion".into(), "v1".into());
        s.insert("metadata".into(), json!({}));
        s.insert("status".into(), "Failure".into());
        s.insert("message".into(), self.to_string().into());
        if !self.reason().is_empty() {
            s.insert("reason".into(), self.reason().into());
        }
        if let Some(d) = self.details() {
            s.insert("details".into(), d);
        }
        s.insert("code".into(), self.code().as_u16().into());
        Value::Object(s)
    }
}

impl From<tinykube_store::StoreError> for ApiError {
    fn from(e: tinykube_store::StoreError) -> Self {
        // Callers map NotFound/AlreadyExists/Conflict with the resource in hand; what reaches here
        // unmapped is a server-side failure.
        ApiError::Internal(format!("storage error: {e}"))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if matches!(self, ApiError::Internal(_)) {
            tracing::error!(error = %self, "request failed");
        }
        let mut body = serde_json::to_vec(&self.status()).unwrap_or_default();
        body.push(b'\n');
        let mut resp = (self.code(), body).into_response();
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let ApiError::TooManyRequests { retry_after, .. } = &self {
            if *retry_after > 0 {
                resp.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(*retry_after));
            }
        }
        resp
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
