//! get and list, in the representation the client asked for (object, Table, metadata).

use axum::http::StatusCode;
use axum::response::Response;
use base64::Engine;
use serde_json::{json, Map, Value};

use super::{json_response, Ctx};
use crate::convert;
use crate::error::{ApiError, ApiResult};
use crate::filter::Filter;
use crate::request::{negotiate, Representation};
use crate::table::{self, IncludeObject};

pub fn get(ctx: Ctx) -> ApiResult<Response> {
    let info = &ctx.target.info;
    let name = ctx.target.name.as_deref().unwrap_or_default();
    let stored = ctx
        .state
        .objects
        .get(info, ctx.target.namespace.as_deref(), name)?;
    let obj = convert::outgoing(info, stored);
    let body = match negotiate(&ctx.headers)? {
        Representation::Object => obj,
        Representation::Metadata(v) => table::partial_metadata(&obj, v),
        Representation::Table(v) => {
            let include = IncludeObject::parse(ctx.query.include_object.as_deref())?;
            let mut meta = Map::new();
            if let Some(rv) = obj.pointer("/metadata/resourceVersion") {
                meta.insert("resourceVersion".into(), rv.clone());
            }
            let now = ctx.state.clock.utc();
            table::table(info, std::slice::from_ref(&obj), meta, include, v, now)
        }
    };
    Ok(json_response(StatusCode::OK, &body, ctx.pretty))
}

/// The continue token, as upstream encodes it: base64url of `{"v","rv","start"}`.
fn encode_continue(rv: u64, last_name: &str) -> String {
    let token = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": format!("{last_name}\u{0}")});
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token.to_string())
}

fn decode_continue(token: &str) -> ApiResult<String> {
    let bad = || {
        ApiError::BadRequest("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)".into())
    };
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .map_err(|_| bad())?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| bad())?;
    let start = v.get("start").and_then(Value::as_str).ok_or_else(bad)?;
    Ok(start.trim_end_matches('\u{0}').to_string())
}

/// Items of one list request, after selectors and paging.
pub struct Listed {
    pub items: Vec<Value>,
    pub revision: u64,
    pub continue_token: Option<String>,
    pub remaining: Option<usize>,
}

/// List with selectors, `limit` and `continue`; keys are paged in store order.
pub fn list_objects(ctx: &Ctx, filter: &Filter) -> ApiResult<Listed> {
    let info = &ctx.target.info;
    let ns = ctx.target.namespace.as_deref();
    let limit = ctx
        .query
        .int("limit", &ctx.query.limit)?
        .filter(|l| *l > 0)
        .map(|l| l as usize);
    let prefix = crate::storage::prefix(info, ns);
    let mut start_after = match ctx.query.continue_.as_deref().filter(|c| !c.is_empty()) {
        Some(c) => Some(format!("{prefix}{}", decode_continue(c)?)),
        None => None,
    };
    check_resource_version(ctx)?;
    let mut items = Vec::new();
    let mut revision = None;
    loop {
        let want = limit.map(|l| l - items.len());
        let page = ctx
            .state
            .objects
            .list(info, ns, start_after.as_deref(), want)?;
        revision.get_or_insert(page.revision);
        let more = page.last_key.clone();
        let remaining = page.remaining;
        items.extend(page.items.into_iter().filter(|o| filter.matches(o)));
        match (limit, more) {
            (Some(l), Some(last)) if items.len() < l => start_after = Some(last),
            (Some(_), Some(last)) => {
                let rel = last.strip_prefix(&prefix).unwrap_or(&last).to_string();
                let revision = revision.unwrap_or(0);
                return Ok(Listed {
                    items,
                    revision,
                    continue_token: Some(encode_continue(revision, &rel)),
                    remaining: filter.is_everything().then_some(remaining),
                });
            }
            _ => {
                return Ok(Listed {
                    items,
                    revision: revision.unwrap_or(0),
                    continue_token: None,
                    remaining: None,
                })
            }
        }
    }
}

fn check_resource_version(ctx: &Ctx) -> ApiResult<()> {
    let rv = ctx.query.resource_version.as_deref().unwrap_or("");
    if rv.is_empty() || rv == "0" {
        return Ok(());
    }
    let n: u64 = rv
        .parse()
        .map_err(|_| ApiError::BadRequest(format!("invalid resource version: {rv}")))?;
    if ctx.query.resource_version_match.as_deref() == Some("Exact") {
        let store = ctx.state.objects.store();
        if n < store.oldest_revision() || n < store.revision() {
            return Err(ApiError::Expired(
                "The resourceVersion for the provided list is too old.".into(),
            ));
        }
    }
    Ok(())
}

pub fn list(ctx: Ctx) -> ApiResult<Response> {
    let info = &ctx.target.info;
    let filter = Filter::parse(
        info,
        ctx.query.label_selector.as_deref(),
        ctx.query.field_selector.as_deref(),
    )?;
    let representation = negotiate(&ctx.headers)?;
    let listed = list_objects(&ctx, &filter)?;
    let mut meta = Map::new();
    meta.insert("resourceVersion".into(), listed.revision.to_string().into());
    if let Some(c) = listed.continue_token {
        meta.insert("continue".into(), c.into());
    }
    if let Some(r) = listed.remaining {
        meta.insert("remainingItemCount".into(), r.into());
    }
    let items: Vec<Value> = listed
        .items
        .into_iter()
        .map(|o| convert::outgoing(info, o))
        .collect();
    let body = match representation {
        Representation::Object => {
            let items: Vec<Value> = items.into_iter().map(strip_type_meta).collect();
            json!({
                "kind": info.list_kind,
                "apiVersion": info.api_version(),
                "metadata": meta,
                "items": items,
            })
        }
        Representation::Metadata(v) => {
            let items: Vec<Value> = items
                .iter()
                .map(|o| table::partial_metadata(o, v))
                .collect();
            json!({
                "kind": "PartialObjectMetadataList",
                "apiVersion": format!("meta.k8s.io/{v}"),
                "metadata": meta,
                "items": items,
            })
        }
        Representation::Table(v) => {
            let include = IncludeObject::parse(ctx.query.include_object.as_deref())?;
            table::table(info, &items, meta, include, v, ctx.state.clock.utc())
        }
    };
    Ok(json_response(StatusCode::OK, &body, ctx.pretty))
}

/// Upstream's list items carry no `kind`/`apiVersion`.
fn strip_type_meta(mut obj: Value) -> Value {
    if let Some(m) = obj.as_object_mut() {
        m.remove("kind");
        m.remove("apiVersion");
    }
    obj
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip() {
        let t = encode_continue(805, "default");
        assert_eq!(
            t,
            "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6ODA1LCJzdGFydCI6ImRlZmF1bHRcdTAwMDAifQ"
        );
        assert_eq!(decode_continue(&t).unwrap(), "default");
        assert!(decode_continue("!!").is_err());
    }
}
