//! `GET /containerLogs/{namespace}/{pod}/{container}`: a container's log as text, as upstream's
//! kubelet answers it. The query is a PodLogOptions (`follow`, `previous`, `tailLines`,
//! `sinceSeconds`, `sinceTime`, `timestamps`, `limitBytes`, `stream`); `follow` streams the lines
//! written after the answer started until the run ends.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::body::{Body, Bytes};
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use k8s_openapi::jiff::Timestamp;
use tinykube_runtime::Stream;
use tokio::sync::broadcast;

use crate::logs::LogLine;
use crate::Kubelet;

/// The options of one log request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogQuery {
    pub follow: bool,
    pub previous: bool,
    pub timestamps: bool,
    pub tail_lines: Option<i64>,
    pub since_seconds: Option<i64>,
    pub since_time: Option<SystemTime>,
    pub limit_bytes: Option<i64>,
    /// `None`: both streams (`All`).
    pub stream: Option<Stream>,
}

/// A boolean query value as apimachinery converts it: absent is false, `0` and `false` (any
/// case) are false, anything else (even empty) is true.
fn flag(v: &str) -> bool {
    !(v == "0" || v.eq_ignore_ascii_case("false"))
}

fn int(name: &str, v: &str) -> Result<i64, String> {
    v.parse()
        .map_err(|_| format!("invalid value {v:?} for {name}: not an integer"))
}

/// An RFC 3339 time (`sinceTime`).
pub fn parse_time(v: &str) -> Result<SystemTime, String> {
    let t: Timestamp = v
        .parse()
        .map_err(|_| format!("invalid value {v:?} for sinceTime: not an RFC 3339 time"))?;
    let nanos = t.as_nanosecond();
    let at = match u64::try_from(nanos) {
        Ok(n) => SystemTime::UNIX_EPOCH + Duration::from_nanos(n),
        Err(_) => SystemTime::UNIX_EPOCH,
    };
    Ok(at)
}

impl LogQuery {
    /// Parse a raw query; unknown parameters are ignored.
    pub fn parse(raw: Option<&str>) -> Result<LogQuery, String> {
        let mut q = LogQuery::default();
        for (k, v) in form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
            match k.as_ref() {
                "follow" => q.follow = flag(&v),
                "previous" => q.previous = flag(&v),
                "timestamps" => q.timestamps = flag(&v),
                "tailLines" => q.tail_lines = Some(int("tailLines", &v)?),
                "sinceSeconds" => q.since_seconds = Some(int("sinceSeconds", &v)?),
                "limitBytes" => q.limit_bytes = Some(int("limitBytes", &v)?),
                "sinceTime" => q.since_time = Some(parse_time(&v)?),
                "stream" => {
                    q.stream = match v.as_ref() {
                        "All" | "" => None,
                        "Stdout" => Some(Stream::Stdout),
                        "Stderr" => Some(Stream::Stderr),
                        other => return Err(format!("invalid value {other:?} for stream")),
                    }
                }
                _ => {}
            }
        }
        Ok(q)
    }

    /// The oldest time a line may have.
    fn since(&self, now: SystemTime) -> Option<SystemTime> {
        match (self.since_time, self.since_seconds) {
            (Some(t), _) => Some(t),
            (None, Some(s)) => now.checked_sub(Duration::from_secs(s.max(0) as u64)),
            (None, None) => None,
        }
    }

    fn wants(&self, line: &LogLine, since: Option<SystemTime>) -> bool {
        self.stream.is_none_or(|s| s == line.stream) && since.is_none_or(|t| line.at >= t)
    }

    /// The kept lines this request shows: from `since`, of the stream asked, the last
    /// `tailLines` of them.
    pub fn select<'a>(
        &self,
        lines: impl Iterator<Item = &'a LogLine>,
        now: SystemTime,
    ) -> Vec<LogLine> {
        let since = self.since(now);
        let mut out: Vec<LogLine> = lines.filter(|l| self.wants(l, since)).cloned().collect();
        if let Some(n) = self.tail_lines {
            let n = usize::try_from(n.max(0)).unwrap_or(usize::MAX);
            if out.len() > n {
                out.drain(..out.len() - n);
            }
        }
        out
    }

    /// One line as written to the client.
    pub fn render(&self, line: &LogLine) -> Vec<u8> {
        let mut s = String::with_capacity(line.text.len() + 32);
        if self.timestamps {
            s.push_str(&rfc3339_nano(line.at));
            s.push(' ');
        }
        s.push_str(&line.text);
        s.push('\n');
        s.into_bytes()
    }
}

/// Upstream's log time format: RFC 3339 in UTC with nine fractional digits.
pub fn rfc3339_nano(at: SystemTime) -> String {
    let since = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = Timestamp::from_second(since.as_secs() as i64).unwrap_or(Timestamp::UNIX_EPOCH);
    format!(
        "{}.{:09}Z",
        secs.strftime("%Y-%m-%dT%H:%M:%S"),
        since.subsec_nanos()
    )
}

/// Cut a stream of chunks after `limit` bytes.
fn limited(chunk: Vec<u8>, left: &mut Option<u64>) -> Option<Vec<u8>> {
    match left {
        None => Some(chunk),
        Some(0) => None,
        Some(n) => {
            let take = chunk.len().min(*n as usize);
            *n -= take as u64;
            Some(chunk[..take].to_vec())
        }
    }
}

fn text(code: StatusCode, message: String) -> Response {
    let mut r = (code, message).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// The handler.
pub(crate) async fn container_logs(
    State(k): State<Arc<Kubelet>>,
    Path((namespace, pod, container)): Path<(String, String, String)>,
    RawQuery(raw): RawQuery,
) -> Response {
    let q = match LogQuery::parse(raw.as_deref()) {
        Ok(q) => q,
        Err(e) => return text(StatusCode::BAD_REQUEST, e),
    };
    let handle = match k.container_logs(&namespace, &pod, &container) {
        Ok(h) => h,
        Err(e) => return text(super::status_of(&e), e.to_string()),
    };
    let now = k.clock.now();
    let (lines, follower) = {
        let mut logs = handle.lock();
        let logs = &mut *logs;
        let run = if q.previous {
            match &mut logs.previous {
                Some(r) => r,
                None => {
                    return text(
                        StatusCode::BAD_REQUEST,
                        format!(
                            "previous terminated container {container:?} in pod {pod:?} not found"
                        ),
                    )
                }
            }
        } else {
            &mut logs.current
        };
        // Taken under one lock: no line is both in the snapshot and followed, none is missed.
        let follower = if q.follow { run.subscribe() } else { None };
        (q.select(run.lines(), now), follower)
    };
    let live = futures::stream::unfold(follower, |rx| async move {
        let mut rx: broadcast::Receiver<LogLine> = rx?;
        loop {
            match rx.recv().await {
                Ok(line) => return Some((line, Some(rx))),
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    let stream_filter = q.stream;
    let render = q.clone();
    let mut left = q.limit_bytes.map(|n| n.max(0) as u64);
    let body =
        futures::stream::iter(lines)
            .chain(live.filter(move |l| {
                futures::future::ready(stream_filter.is_none_or(|s| s == l.stream))
            }))
            .map(move |l| render.render(&l))
            .map(move |chunk| limited(chunk, &mut left))
            .take_while(|c| futures::future::ready(c.is_some()))
            .filter_map(|c| futures::future::ready(c.map(|c| Ok::<_, Infallible>(Bytes::from(c)))));
    let mut resp = Response::new(Body::from_stream(body));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain"),
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(secs: u64, stream: Stream, text: &str) -> LogLine {
        LogLine {
            at: SystemTime::UNIX_EPOCH + Duration::from_secs(secs),
            stream,
            text: text.into(),
        }
    }

    #[test]
    fn parses_queries() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let cases: &[(&str, Result<LogQuery, &str>)] = &[
            ("", Ok(LogQuery::default())),
            (
                "follow=true&previous=1&timestamps=&tailLines=10&limitBytes=5",
                Ok(LogQuery {
                    follow: true,
                    previous: true,
                    timestamps: true,
                    tail_lines: Some(10),
                    limit_bytes: Some(5),
                    ..Default::default()
                }),
            ),
            ("follow=false&previous=0", Ok(LogQuery::default())),
            (
                "sinceSeconds=5&stream=Stderr",
                Ok(LogQuery {
                    since_seconds: Some(5),
                    stream: Some(Stream::Stderr),
                    ..Default::default()
                }),
            ),
            (
                "sinceTime=2023-11-14T22:13:20Z",
                Ok(LogQuery {
                    since_time: Some(t),
                    ..Default::default()
                }),
            ),
            (
                "tailLines=x",
                Err("invalid value \"x\" for tailLines: not an integer"),
            ),
            (
                "sinceTime=yesterday",
                Err("invalid value \"yesterday\" for sinceTime: not an RFC 3339 time"),
            ),
            ("stream=Both", Err("invalid value \"Both\" for stream")),
        ];
        for (raw, want) in cases {
            assert_eq!(
                LogQuery::parse(Some(raw)),
                want.clone().map_err(String::from),
                "{raw}"
            );
        }
    }

    #[test]
    fn selects_lines() {
        let lines = [
            line(10, Stream::Stdout, "a"),
            line(20, Stream::Stderr, "b"),
            line(30, Stream::Stdout, "c"),
            line(40, Stream::Stdout, "d"),
        ];
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(45);
        let cases: &[(&str, &[&str])] = &[
            ("", &["a", "b", "c", "d"]),
            ("tailLines=2", &["c", "d"]),
            ("tailLines=0", &[]),
            ("tailLines=100", &["a", "b", "c", "d"]),
            ("sinceSeconds=20", &["c", "d"]),
            ("sinceTime=1970-01-01T00:00:20Z", &["b", "c", "d"]),
            ("stream=Stdout&tailLines=3", &["a", "c", "d"]),
            ("stream=Stderr", &["b"]),
        ];
        for (raw, want) in cases {
            let q = LogQuery::parse(Some(raw)).unwrap();
            let got: Vec<String> = q
                .select(lines.iter(), now)
                .into_iter()
                .map(|l| l.text)
                .collect();
            assert_eq!(got, *want, "{raw}");
        }
    }

    #[test]
    fn renders_and_limits() {
        let at = SystemTime::UNIX_EPOCH + Duration::new(1_795_000_000, 123_456_789);
        assert_eq!(rfc3339_nano(at), "2026-11-18T11:06:40.123456789Z");
        assert_eq!(
            rfc3339_nano(SystemTime::UNIX_EPOCH),
            "1970-01-01T00:00:00.000000000Z"
        );
        let q = LogQuery {
            timestamps: true,
            ..Default::default()
        };
        assert_eq!(
            q.render(&line(0, Stream::Stdout, "hi")),
            b"1970-01-01T00:00:00.000000000Z hi\n"
        );
        let mut left = Some(5);
        assert_eq!(
            limited(b"abc\n".to_vec(), &mut left),
            Some(b"abc\n".to_vec())
        );
        assert_eq!(limited(b"def\n".to_vec(), &mut left), Some(b"d".to_vec()));
        assert_eq!(limited(b"g\n".to_vec(), &mut left), None);
        let mut none = None;
        assert_eq!(limited(b"x".to_vec(), &mut none), Some(b"x".to_vec()));
    }
}
