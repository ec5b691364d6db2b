//! Request dispatch: one entry point that reads the path, authenticates, and hands the request
//! to the handler of its verb. Also the JSON response helpers every handler uses.

mod apply;
mod decode;
pub(crate) mod delete;
mod eviction;
mod forward;
pub(crate) use forward::forward;
mod node_proxy;
mod options;
mod persist;
mod proxy;
mod read;
mod review;
mod subresource;
mod token;
mod tokenreview;
mod watch;
mod write;

use axum::body::Body;
use axum::extract::{ConnectInfo, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use bytes::Bytes;
use serde_json::{json, Value};

use crate::error::{ApiError, ApiResult};
use crate::identity::x509::PeerIdentity;
use crate::policy::UserInfo;
use crate::request::{body_format, parse_target, BodyFormat, Query, Target};
use crate::state::AppState;
use crate::tls::Peer;
use crate::{discovery, openapi};

/// Largest request body accepted (upstream's 3 MiB).
pub const MAX_BODY: usize = 3 * 1024 * 1024;

/// What every handler gets.
pub struct Ctx {
    pub state: AppState,
    pub target: Target,
    pub query: Query,
    pub headers: HeaderMap,
    /// Who sent the request, as admission sees it.
    pub user: UserInfo,
    pub pretty: bool,
    /// The query as sent (options with repeated keys, such as exec's `command`).
    pub raw_query: Option<String>,
    /// The client's side of a connection upgrade (exec and attach).
    pub upgrade: Option<hyper::upgrade::OnUpgrade>,
}

/// A JSON response; pretty-printed for curl-like user agents and `?pretty=true`, as upstream.
pub fn json_response(code: StatusCode, value: &Value, pretty: bool) -> Response {
    let mut body = if pretty {
        serde_json::to_vec_pretty(value).unwrap_or_default()
    } else {
        serde_json::to_vec(value).unwrap_or_default()
    };
    body.push(b'\n');
    let mut resp = (code, body).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// A `Status` of success with `code`: the answer to a binding or an eviction.
fn success(code: StatusCode) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code.as_u16()})
}

/// Add `Warning: 299 - "…"` headers.
pub fn with_warnings(mut resp: Response, warnings: &[String]) -> Response {
    for w in warnings {
        let text = format!("299 - {}", serde_json::Value::String(w.clone()));
        if let Ok(v) = HeaderValue::from_str(&text) {
            resp.headers_mut().append(header::WARNING, v);
        }
    }
    resp
}

fn wants_pretty(headers: &HeaderMap, query: Option<&str>) -> bool {
    let ua = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let by_query = query.is_some_and(|q| {
        q.split('&')
            .any(|p| matches!(p, "pretty=true" | "pretty=1" | "pretty"))
    });
    by_query || ua.starts_with("curl") || ua.starts_with("Wget") || ua.starts_with("Mozilla/5.0")
}

/// The request's user, as upstream's union of authenticators: a client certificate the client
/// CA verified (CN, O), else a bearer token (`identity::bearer`: the token file's, a
/// ServiceAccount token's, a legacy token Secret's);
/// `system:anonymous` when no authenticator is configured; `None` (401) when one is and the
/// request brings no credentials that authenticate.
fn authenticated(
    state: &AppState,
    headers: &HeaderMap,
    peer: Option<&PeerIdentity>,
) -> Option<UserInfo> {
    if let Some(PeerIdentity::User(user)) = peer {
        return Some(user.clone());
    }
    if state.tokens.is_none() && !state.client_certs {
        return Some(UserInfo::anonymous());
    }
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .and_then(
            |t| match crate::identity::bearer::authenticate(state, t.trim(), &[]) {
                Ok(found) => Some(found.user),
                Err(reason) => {
                    tracing::debug!(%reason, "unable to authenticate the request");
                    None
                }
            },
        )
}

fn plain_not_found() -> Response {
    let mut resp = (StatusCode::NOT_FOUND, "404 page not found\n").into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}

/// The single entry point for every request.
pub async fn dispatch(
    State(state): State<AppState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    peer: Option<Extension<ConnectInfo<Peer>>>,
    request: axum::extract::Request,
) -> Response {
    let (mut parts, body) = request.into_parts();
    let upgrade = parts.extensions.remove::<hyper::upgrade::OnUpgrade>();
    let path = uri.path().to_string();
    if matches!(path.as_str(), "/healthz" | "/livez" | "/readyz") {
        return (StatusCode::OK, "ok").into_response();
    }
    let peer = peer.as_ref().map(|Extension(ConnectInfo(p))| &p.identity);
    let Some(requester) = authenticated(&state, &headers, peer) else {
        return ApiError::Unauthorized.into_response();
    };
    let mut headers = headers;
    let user = match crate::authz::impersonation::apply(&state, &mut headers, requester) {
        Ok(user) => user,
        Err(e) => return e.into_response(),
    };
    if let Err(e) = crate::authz::check(&state, method.as_str(), &path, uri.query(), &user) {
        return e.into_response();
    }
    let pretty = wants_pretty(&headers, uri.query());
    let request = Request {
        method,
        path: &path,
        raw_query: uri.query(),
        headers,
        user,
        pretty,
        upgrade,
    };
    match route(state, request, body).await {
        Ok(resp) => resp,
        Err(e) => e.into_response(),
    }
}

/// How much of an oversized body is read and discarded before answering 413, so the client
/// sees the answer on a connection still in step; past this the connection is dropped.
const DRAIN_LIMIT: usize = 64 * 1024 * 1024;

async fn read_body(body: Body) -> ApiResult<Bytes> {
    use futures::StreamExt;
    let mut stream = body.into_data_stream();
    let mut buf = Vec::new();
    let mut seen = 0usize;
    while let Some(chunk) = stream.next().await {
        let chunk =
            chunk.map_err(|e| ApiError::BadRequest(format!("reading the request body: {e}")))?;
        seen += chunk.len();
        if seen <= MAX_BODY {
            buf.extend_from_slice(&chunk);
        } else if seen > DRAIN_LIMIT {
            break;
        }
    }
    if seen > MAX_BODY {
        return Err(ApiError::TooLarge(MAX_BODY));
    }
    Ok(Bytes::from(buf))
}

/// What `route` needs of a request besides its body.
struct Request<'a> {
    method: Method,
    path: &'a str,
    raw_query: Option<&'a str>,
    headers: HeaderMap,
    user: UserInfo,
    pretty: bool,
    upgrade: Option<hyper::upgrade::OnUpgrade>,
}

async fn route(state: AppState, request: Request<'_>, body: Body) -> ApiResult<Response> {
    let Request {
        method,
        path,
        raw_query,
        headers,
        user,
        pretty,
        upgrade,
    } = request;
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    if let ["api", "v1", "nodes", node, "proxy", ..] = segs.as_slice() {
        let marker = format!("/nodes/{node}/proxy");
        let rest = path
            .find(&marker)
            .and_then(|at| path.get(at + marker.len()..))
            .unwrap_or("");
        return node_proxy::proxy(&state, method, node, rest, raw_query, &headers, body).await;
    }
    if let ["apis", group, version, ..] = segs.as_slice() {
        if let Some(remote) = state.aggregator.find(group, version) {
            let target = match raw_query.filter(|q| !q.is_empty()) {
                Some(q) => format!("{path}?{q}"),
                None => path.to_string(),
            };
            let (state, headers) = (&state, &headers);
            return Ok(crate::aggregator::proxy(
                state, &remote, method, &target, headers, &user, body,
            )
            .await);
        }
    }
    let served = state.kinds.snapshot();
    let remotes = state.aggregator.snapshot();
    let (group, version, rest) = match segs.as_slice() {
        ["version"] => return Ok(json_response(StatusCode::OK, &discovery::version(), pretty)),
        ["api"] => return discovery::api(&served, &headers, pretty),
        ["apis"] => return discovery::apis(&served, &remotes, &headers, pretty),
        ["openapi", "v3", rest @ ..] => {
            return openapi::serve(rest, raw_query, &headers, served.crds())
        }
        ["openapi", "v2"] => return Ok(openapi::v2(&headers)),
        ["api", "v1"] => return discovery::resource_list(&served, "", "v1", pretty),
        ["apis", group] => {
            return discovery::group(&served, &remotes, group, pretty)
                .map_or_else(|| Ok(plain_not_found()), Ok)
        }
        ["apis", group, version] => {
            return discovery::resource_list(&served, group, version, pretty)
                .or_else(|_| Ok(plain_not_found()))
        }
        ["api", "v1", rest @ ..] => ("", "v1", rest.join("/")),
        ["apis", group, version, rest @ ..] if served.versions(group).contains(version) => {
            (*group, *version, rest.join("/"))
        }
        _ => return Ok(plain_not_found()),
    };
    let target = parse_target(&served, group, version, &rest).ok_or(ApiError::NoSuchResource)?;
    let query = Query::parse(raw_query)?;
    let ctx = Ctx {
        state,
        target,
        query,
        headers,
        user,
        pretty,
        raw_query: raw_query.map(str::to_string),
        upgrade,
    };
    let deprecation: Vec<String> = ctx
        .target
        .info
        .custom
        .as_ref()
        .and_then(|c| c.deprecation_warning(group, ctx.target.info.kind))
        .or_else(|| crate::registry::builtin_deprecation(&ctx.target.info))
        .into_iter()
        .collect();
    let resp = serve_target(ctx, method, body).await?;
    Ok(with_warnings(resp, &deprecation))
}

/// A read that must see every write committed before it: no resourceVersion given (`0` reads
/// whatever the cache has; an exact one is checked by the handler), not a continued list.
fn consistent_read(ctx: &Ctx) -> bool {
    ctx.query
        .resource_version
        .as_deref()
        .unwrap_or("")
        .is_empty()
        && ctx.query.continue_.as_deref().unwrap_or("").is_empty()
}

/// Hand a request for a served resource to its verb's handler.
async fn serve_target(ctx: Ctx, method: Method, body: Body) -> ApiResult<Response> {
    let verb_allowed = |verb: &str| ctx.target.info.verbs.contains(&verb);
    let sub = ctx.target.subresource.clone();
    let has_name = ctx.target.name.is_some();
    // Server-side apply is a PATCH told apart by its Content-Type.
    let is_apply = matches!(body_format(&ctx.headers), Ok(BodyFormat::ApplyPatch));
    if method == Method::GET && consistent_read(&ctx) {
        // As upstream's consistent reads from its watch cache: what any API server on the same
        // etcd committed before this request is seen (immediate on sled).
        ctx.state.objects.store().sync().await?;
    }
    match (method, has_name, sub.as_deref()) {
        (Method::GET, false, None) if ctx.query.is_watch() => watch::watch(ctx).await,
        (Method::GET, false, None) if verb_allowed("list") => read::list(ctx),
        (Method::GET, true, None) if ctx.query.is_watch() => watch::watch(ctx).await,
        (Method::GET, true, None) if verb_allowed("get") => read::get(ctx),
        (Method::GET, true, Some("status")) => read::get(ctx),
        (Method::GET, true, Some("scale")) => subresource::get_scale(ctx),
        (Method::GET, true, Some("log")) => proxy::log(ctx).await,
        (
            method @ (Method::GET | Method::POST),
            true,
            Some(sub @ ("exec" | "attach" | "portforward")),
        ) => {
            let kind = match sub {
                "exec" => proxy::Connect::Exec,
                "attach" => proxy::Connect::Attach,
                _ => proxy::Connect::PortForward,
            };
            proxy::connect(ctx, method, kind).await
        }
        (Method::POST, false, None) if ctx.target.info.plural == "bindings" => {
            subresource::binding(ctx, &read_body(body).await?).await
        }
        (Method::POST, false, None) if review::is_review(&ctx.target.info) => {
            review::create(ctx, &read_body(body).await?)
        }
        (Method::POST, false, None) if verb_allowed("create") => {
            write::create(ctx, &read_body(body).await?).await
        }
        (Method::POST, true, Some("binding")) => {
            subresource::binding(ctx, &read_body(body).await?).await
        }
        (Method::POST, true, Some("token")) => {
            token::create_token(ctx, &read_body(body).await?).await
        }
        (Method::POST, true, Some("eviction")) => {
            eviction::eviction(ctx, &read_body(body).await?).await
        }
        (Method::PUT, true, Some("scale")) => {
            subresource::update_scale(ctx, &read_body(body).await?, false).await
        }
        (Method::PATCH, true, Some("scale")) => {
            subresource::update_scale(ctx, &read_body(body).await?, true).await
        }
        (Method::PUT, true, None | Some("status") | Some("finalize"))
            if verb_allowed("update") || sub.is_some() =>
        {
            write::update(ctx, &read_body(body).await?).await
        }
        (Method::PATCH, true, None | Some("status"))
            if (verb_allowed("patch") || sub.is_some()) && is_apply =>
        {
            apply::apply(ctx, &read_body(body).await?).await
        }
        (Method::PATCH, true, None | Some("status")) if verb_allowed("patch") || sub.is_some() => {
            write::patch(ctx, &read_body(body).await?).await
        }
        (Method::DELETE, true, None) if verb_allowed("delete") => {
            delete::delete(ctx, &read_body(body).await?).await
        }
        (Method::DELETE, false, None) if verb_allowed("deletecollection") => {
            delete::delete_collection(ctx, &read_body(body).await?).await
        }
        (method, _, _) => Err(ApiError::MethodNotAllowed(format!(
            "the server does not allow this method on the requested resource ({method})"
        ))),
    }
}
