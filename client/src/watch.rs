//! Watch streams: newline-delimited WatchEvents decoded into typed events.

use bytes::Bytes;
use futures::{Stream, StreamExt};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{ClientError, Status};

/// One event of a watch.
#[derive(Debug, Clone)]
pub enum WatchEvent<K> {
    Added(K),
    Modified(K),
    Deleted(K),
    /// Progress: the stream has seen everything up to this resourceVersion.
    Bookmark(String),
    /// The server ended the watch with a Status (410 Gone when history is compacted).
    Error(Status),
}

fn decode_line<K: DeserializeOwned>(line: &[u8]) -> Result<WatchEvent<K>, ClientError> {
    let v: Value = serde_json::from_slice(line)?;
    let object = v.get("object").cloned().unwrap_or(Value::Null);
    Ok(match v.get("type").and_then(Value::as_str).unwrap_or("") {
        "ADDED" => WatchEvent::Added(serde_json::from_value(object)?),
        "MODIFIED" => WatchEvent::Modified(serde_json::from_value(object)?),
        "DELETED" => WatchEvent::Deleted(serde_json::from_value(object)?),
        "BOOKMARK" => WatchEvent::Bookmark(
            object
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        ),
        _ => WatchEvent::Error(serde_json::from_value(object).unwrap_or_default()),
    })
}

/// Split a byte stream into lines and decode each as a WatchEvent.
pub(crate) fn decode_stream<K: DeserializeOwned + Send + 'static>(
    body: impl Stream<Item = Result<Bytes, reqwest::Error>> + Send + 'static,
) -> impl Stream<Item = Result<WatchEvent<K>, ClientError>> + Send {
    let state = (Box::pin(body), Vec::<u8>::new(), false);
    futures::stream::unfold(state, |(mut body, mut buf, mut done)| async move {
        loop {
            if let Some(pos) = buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buf.drain(..=pos).collect();
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return Some((decode_line(&line), (body, buf, done)));
            }
            if done {
                return None;
            }
            match body.next().await {
                Some(Ok(chunk)) => buf.extend_from_slice(&chunk),
                Some(Err(e)) => {
                    done = true;
                    buf.clear();
                    return Some((Err(ClientError::Http(e)), (body, buf, done)));
                }
                None => {
                    done = true;
                    if !buf.is_empty() {
                        buf.push(b'\n');
                    }
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;

    #[tokio::test]
    async fn lines_split_across_chunks_decode() {
        let chunks: Vec<Result<Bytes, reqwest::Error>> = vec![
            Ok(Bytes::from_static(b"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n{\"type\":\"BOOK")),
            Ok(Bytes::from_static(b"MARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"7\"}}}\n")),
            Ok(Bytes::from_static(b"{\"type\":\"ERROR\",\"object\":{\"reason\":\"Expired\",\"code\":410,\"message\":\"too old\"}}")),
        ];
        let events: Vec<_> = decode_stream::<Pod>(futures::stream::iter(chunks))
            .collect()
            .await;
        assert!(
            matches!(&events[0], Ok(WatchEvent::Added(p)) if p.metadata.name.as_deref() == Some("a"))
        );
        assert!(matches!(&events[1], Ok(WatchEvent::Bookmark(rv)) if rv == "7"));
        assert!(matches!(&events[2], Ok(WatchEvent::Error(s)) if s.code == 410));
        assert_eq!(events.len(), 3);
    }
}
