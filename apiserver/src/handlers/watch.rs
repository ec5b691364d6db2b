//! watch: a chunked stream of newline-delimited WatchEvents, resumable by resourceVersion, with
//! selector transitions (an object leaving the selector is DELETED for this watcher), bookmarks,
//! `timeoutSeconds`, initial events for `resourceVersion` unset/0 or `sendInitialEvents`, and
//! 410 as an ERROR event when the history is gone.

use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{json, Value};
use tinykube_proto::registry::ResourceInfo;
use tinykube_store::{Event, EventType, StoreError};
use tokio::sync::mpsc;

use super::Ctx;
use crate::convert;
use crate::error::{ApiError, ApiResult};
use crate::filter::Filter;
use crate::request::{negotiate, truthy, Representation};
use crate::storage::{self, decode};
use crate::table::{self, IncludeObject};

/// How each event's object is rendered.
struct Renderer {
    info: ResourceInfo,
    representation: Representation,
    include: IncludeObject,
    sent_columns: bool,
    /// The server's clock, for the AGE columns of Tables.
    clock: tinykube_clock::Clock,
}

impl Renderer {
    fn line(&mut self, kind: &str, obj: Value) -> Bytes {
        let object = match self.representation {
            Representation::Object => convert::outgoing(&self.info, obj),
            Representation::Metadata(v) => {
                table::partial_metadata(&convert::outgoing(&self.info, obj), v)
            }
            Representation::Table(v) => {
                let first = !self.sent_columns;
                self.sent_columns = true;
                table::watch_table(
                    &self.info,
                    &convert::outgoing(&self.info, obj),
                    self.include,
                    v,
                    first,
                    self.clock.utc(),
                )
            }
        };
        encode_event(kind, object)
    }

    fn bookmark(&self, revision: u64, initial_end: bool) -> Bytes {
        let mut meta = serde_json::Map::new();
        meta.insert("resourceVersion".into(), revision.to_string().into());
        if initial_end {
            meta.insert(
                "annotations".into(),
                json!({"k8s.io/initial-events-end": "true"}),
            );
        }
        encode_event(
            "BOOKMARK",
            json!({"kind": self.info.kind, "apiVersion": self.info.api_version(), "metadata": meta}),
        )
    }
}

fn encode_event(kind: &str, object: Value) -> Bytes {
    let mut line = serde_json::to_vec(&json!({"type": kind, "object": object})).unwrap_or_default();
    line.push(b'\n');
    Bytes::from(line)
}

fn expired_event(requested: u64, oldest: u64) -> Bytes {
    let err = ApiError::Expired(format!("too old resource version: {requested} ({oldest})"));
    encode_event("ERROR", err.status())
}

/// The watch event type this watcher sees for a store event, given its filter.
fn translate(filter: &Filter, ev: &Event) -> ApiResult<Option<(&'static str, Value)>> {
    let obj = decode(&ev.value, ev.revision)?;
    if filter.is_everything() {
        let kind = match ev.kind {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        };
        return Ok(Some((kind, obj)));
    }
    let old_matches = match &ev.prev_value {
        Some(prev) => filter.matches(&decode(prev, ev.revision)?),
        None => false,
    };
    let new_matches = filter.matches(&obj);
    Ok(match ev.kind {
        EventType::Added if new_matches => Some(("ADDED", obj)),
        EventType::Modified if old_matches && new_matches => Some(("MODIFIED", obj)),
        EventType::Modified if new_matches => Some(("ADDED", obj)),
        EventType::Modified if old_matches => Some(("DELETED", obj)),
        EventType::Deleted if new_matches || old_matches => Some(("DELETED", obj)),
        _ => None,
    })
}

pub async fn watch(ctx: Ctx) -> ApiResult<Response> {
    let info = &ctx.target.info;
    let mut field_selector = ctx.query.field_selector.clone().unwrap_or_default();
    if let Some(name) = &ctx.target.name {
        if !field_selector.is_empty() {
            field_selector.push(',');
        }
        field_selector.push_str(&format!("metadata.name={name}"));
    }
    let filter = Filter::parse(
        info,
        ctx.query.label_selector.as_deref(),
        Some(&field_selector),
    )?;
    let representation = negotiate(&ctx.headers)?;
    let include = IncludeObject::parse(ctx.query.include_object.as_deref())?;
    let bookmarks = truthy(&ctx.query.allow_watch_bookmarks);
    let send_initial = truthy(&ctx.query.send_initial_events);
    let timeout = match ctx
        .query
        .int("timeoutSeconds", &ctx.query.timeout_seconds)?
    {
        Some(s) if s > 0 => Duration::from_secs(s as u64),
        _ => {
            use rand::Rng;
            Duration::from_secs(rand::rng().random_range(1800..3600))
        }
    };
    let rv = ctx.query.resource_version.clone().unwrap_or_default();
    let requested: Option<u64> = match rv.as_str() {
        "" | "0" => None,
        s => Some(
            s.parse()
                .map_err(|_| ApiError::BadRequest(format!("invalid resource version: {s}")))?,
        ),
    };
    let ns = ctx.target.namespace.clone();
    let store = ctx.state.objects.store().clone();
    let prefix = storage::prefix(info, ns.as_deref());

    let mut renderer = Renderer {
        info: info.clone(),
        representation,
        include,
        sent_columns: false,
        clock: ctx.state.clock.clone(),
    };
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    let shutdown = ctx.state.shutdown.clone();
    let bookmark_interval = ctx.state.bookmark_interval;

    // Initial state: for resourceVersion unset/0, or when asked with sendInitialEvents.
    let mut initial = Vec::new();
    let start = match requested {
        Some(n) if !send_initial => n,
        _ => {
            let page = ctx.state.objects.list(info, ns.as_deref(), None, None)?;
            for obj in page.items.into_iter().filter(|o| filter.matches(o)) {
                initial.push(renderer.line("ADDED", obj));
            }
            if send_initial {
                initial.push(renderer.bookmark(page.revision, true));
            }
            page.revision
        }
    };
    let store_watch = match store.watch(&prefix, start) {
        Ok(w) => Some(w),
        Err(StoreError::Expired { requested, oldest }) => {
            let _ = tx.try_send(expired_event(requested, oldest));
            None
        }
        Err(e) => return Err(e.into()),
    };

    tokio::spawn(async move {
        for line in initial {
            if tx.send(line).await.is_err() {
                return;
            }
        }
        let Some(mut store_watch) = store_watch else {
            return;
        };
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut ticker = tokio::time::interval(bookmark_interval);
        ticker.tick().await;
        let mut last = start;
        loop {
            tokio::select! {
                _ = &mut deadline => return,
                _ = shutdown.cancelled() => return,
                _ = tx.closed() => return,
                _ = ticker.tick(), if bookmarks => {
                    // Changes of other objects move the bookmark too, as upstream's cache
                    // revision does.
                    last = last.max(store_watch.progress());
                    if tx.send(renderer.bookmark(last, false)).await.is_err() {
                        return;
                    }
                }
                next = store_watch.next() => {
                    let line = match next {
                        None => return,
                        Some(Err(StoreError::Expired { requested, oldest })) => expired_event(requested, oldest),
                        Some(Err(e)) => {
                            tracing::warn!(error = %e, "watch ended");
                            return;
                        }
                        Some(Ok(ev)) => {
                            last = ev.revision;
                            match translate(&filter, &ev) {
                                Ok(Some((kind, obj))) => renderer.line(kind, obj),
                                Ok(None) => continue,
                                Err(e) => {
                                    tracing::warn!(error = %e, "undecodable watch event");
                                    continue;
                                }
                            }
                        }
                    };
                    if tx.send(line).await.is_err() {
                        return;
                    }
                }
            }
        }
    });

    let stream = tokio_stream::wrappers::ReceiverStream::new(rx);
    let body = Body::from_stream(futures::StreamExt::map(
        stream,
        Ok::<Bytes, std::convert::Infallible>,
    ));
    let mut resp = (StatusCode::OK, body).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Ok(resp)
}
