//! The Kubernetes channel protocols of exec and attach over WebSocket: each message is one
//! stream's bytes, prefixed by the stream's number (0 stdin, 1 stdout, 2 stderr, 3 error, 4
//! resize); the `base64.` variants send text messages whose prefix is the ASCII digit and whose
//! payload is base64. Versions differ in what channel 3 carries (text before v4, a `Status`
//! from v4) and in v5's close signal (`[255, stream]`). Pure: framing and parsing only.

use base64::Engine;

/// The subprotocols served, most preferred first (the server's order decides).
pub const PROTOCOLS: &[&str] = &[
    "v5.channel.k8s.io",
    "v4.channel.k8s.io",
    "v4.base64.channel.k8s.io",
    "v3.channel.k8s.io",
    "v2.channel.k8s.io",
    "channel.k8s.io",
    "base64.channel.k8s.io",
];

pub const STDIN: u8 = 0;
pub const STDOUT: u8 = 1;
pub const STDERR: u8 = 2;
pub const ERROR: u8 = 3;
pub const RESIZE: u8 = 4;
/// v5: `[CLOSE, stream]` says the peer will send no more on `stream`.
pub const CLOSE: u8 = 255;

/// A negotiated channel protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Protocol {
    /// 1 for `channel.k8s.io`, else the `vN.` prefix.
    pub version: u8,
    pub base64: bool,
}

impl Protocol {
    /// The protocol a subprotocol names; a client that names none gets `channel.k8s.io`, as
    /// upstream's kubelet.
    pub fn parse(name: Option<&str>) -> Option<Protocol> {
        let name = name.map(str::trim).unwrap_or("");
        if name.is_empty() {
            return Some(Protocol {
                version: 1,
                base64: false,
            });
        }
        let (version, rest) = match name.strip_prefix('v') {
            Some(r) => {
                let (v, rest) = r.split_once('.')?;
                (v.parse::<u8>().ok().filter(|v| (2..=5).contains(v))?, rest)
            }
            None => (1, name),
        };
        let base64 = match rest {
            "channel.k8s.io" => false,
            "base64.channel.k8s.io" if version != 5 => true,
            _ => return None,
        };
        Some(Protocol { version, base64 })
    }
}

/// One frame to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    Binary(Vec<u8>),
    Text(String),
}

/// Frame `data` on `channel`.
pub fn encode(p: Protocol, channel: u8, data: &[u8]) -> Frame {
    if p.base64 {
        let mut s = String::with_capacity(1 + data.len() * 4 / 3 + 4);
        s.push(char::from(b'0' + channel));
        s.push_str(&base64::engine::general_purpose::STANDARD.encode(data));
        Frame::Text(s)
    } else {
        let mut v = Vec::with_capacity(data.len() + 1);
        v.push(channel);
        v.extend_from_slice(data);
        Frame::Binary(v)
    }
}

/// What a client's message means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incoming {
    Stdin(Vec<u8>),
    /// A terminal size (accepted and ignored: nothing here draws on a terminal).
    Resize {
        width: u16,
        height: u16,
    },
    /// v5: the client closed one of its streams (`0`: stdin reached its end).
    Close(u8),
    /// Empty, unknown or undecodable; ignored as upstream does.
    Ignored,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Size {
    width: u16,
    height: u16,
}

/// Read a binary message (`text == false`) or a text one.
pub fn decode(p: Protocol, text: bool, data: &[u8]) -> Incoming {
    let (channel, payload): (u8, Vec<u8>) = match (p.base64, text) {
        (false, false) => match data.split_first() {
            Some((&c, rest)) => (c, rest.to_vec()),
            None => return Incoming::Ignored,
        },
        (true, true) => match data.split_first() {
            Some((&c, rest)) if c.is_ascii_digit() => {
                match base64::engine::general_purpose::STANDARD.decode(rest) {
                    Ok(bytes) => (c - b'0', bytes),
                    Err(_) => return Incoming::Ignored,
                }
            }
            _ => return Incoming::Ignored,
        },
        _ => return Incoming::Ignored,
    };
    match channel {
        STDIN => Incoming::Stdin(payload),
        RESIZE if p.version >= 3 => match serde_json::from_slice::<Size>(&payload) {
            Ok(s) => Incoming::Resize {
                width: s.width,
                height: s.height,
            },
            Err(_) => Incoming::Ignored,
        },
        CLOSE if p.version >= 5 => payload
            .first()
            .map_or(Incoming::Ignored, |&c| Incoming::Close(c)),
        _ => Incoming::Ignored,
    }
}

/// How a command ended, as channel 3 says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Exited(i32),
    /// It could not run, or the attach failed (upstream's InternalError).
    Failed(String),
}

/// The bytes channel 3 carries for an outcome: a `Status` from v4 on (kubectl prints
/// `command terminated with exit code N` from its NonZeroExitCode cause); before v4 the
/// message of a failure alone, and nothing on success.
pub fn status(p: Protocol, argv: &[String], outcome: &Outcome) -> Option<Vec<u8>> {
    let (message, status) = match outcome {
        Outcome::Exited(0) => (
            None,
            serde_json::json!({"metadata": {}, "status": "Success"}),
        ),
        Outcome::Exited(code) => {
            let message = format!(
                "command terminated with non-zero exit code: error executing command [{}], exit code {code}",
                argv.join(" ")
            );
            let status = serde_json::json!({
                "metadata": {},
                "status": "Failure",
                "message": message,
                "reason": "NonZeroExitCode",
                "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]},
            });
            (Some(message), status)
        }
        Outcome::Failed(why) => {
            let message = format!("Internal error occurred: {why}");
            let status = serde_json::json!({
                "metadata": {},
                "status": "Failure",
                "message": message,
                "reason": "InternalError",
                "details": {"causes": [{"message": why}]},
                "code": 500,
            });
            (Some(message), status)
        }
    };
    if p.version >= 4 {
        Some(serde_json::to_vec(&status).unwrap_or_default())
    } else {
        message.map(String::into_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V1: Protocol = Protocol {
        version: 1,
        base64: false,
    };
    const V4: Protocol = Protocol {
        version: 4,
        base64: false,
    };
    const V4B64: Protocol = Protocol {
        version: 4,
        base64: true,
    };
    const V5: Protocol = Protocol {
        version: 5,
        base64: false,
    };

    #[test]
    fn protocol_names() {
        let cases: &[(Option<&str>, Option<Protocol>)] = &[
            (None, Some(V1)),
            (Some(""), Some(V1)),
            (Some("channel.k8s.io"), Some(V1)),
            (Some("v4.channel.k8s.io"), Some(V4)),
            (Some("v4.base64.channel.k8s.io"), Some(V4B64)),
            (Some("v5.channel.k8s.io"), Some(V5)),
            (
                Some("base64.channel.k8s.io"),
                Some(Protocol {
                    version: 1,
                    base64: true,
                }),
            ),
            (Some("v5.base64.channel.k8s.io"), None),
            (Some("v6.channel.k8s.io"), None),
            (Some("v1.channel.k8s.io"), None),
            (Some("SPDY/3.1"), None),
        ];
        for (name, want) in cases {
            assert_eq!(Protocol::parse(*name), *want, "{name:?}");
        }
        for name in PROTOCOLS {
            assert!(Protocol::parse(Some(name)).is_some(), "{name}");
        }
    }

    #[test]
    fn framing() {
        assert_eq!(
            encode(V4, STDOUT, b"hi\n"),
            Frame::Binary(vec![1, b'h', b'i', b'\n'])
        );
        assert_eq!(encode(V4B64, STDERR, b"hi"), Frame::Text("2aGk=".into()));
        assert_eq!(encode(V5, ERROR, b""), Frame::Binary(vec![3]));
    }

    #[test]
    fn incoming() {
        let cases: &[(Protocol, bool, &[u8], Incoming)] = &[
            (V4, false, b"\x00ls\n", Incoming::Stdin(b"ls\n".to_vec())),
            (V4, false, b"", Incoming::Ignored),
            (V4, true, b"0bHM=", Incoming::Ignored),
            (V4B64, true, b"0bHM=", Incoming::Stdin(b"ls".to_vec())),
            (V4B64, true, b"0!!", Incoming::Ignored),
            (V4B64, false, b"\x00ls", Incoming::Ignored),
            (
                V4,
                false,
                b"\x04{\"Width\":80,\"Height\":24}",
                Incoming::Resize {
                    width: 80,
                    height: 24,
                },
            ),
            (
                V1,
                false,
                b"\x04{\"Width\":80,\"Height\":24}",
                Incoming::Ignored,
            ),
            (V4, false, b"\x04not json", Incoming::Ignored),
            (V5, false, &[255, 0], Incoming::Close(0)),
            (V4, false, &[255, 0], Incoming::Ignored),
            (V5, false, &[255], Incoming::Ignored),
            (V5, false, &[1, b'x'], Incoming::Ignored),
        ];
        for (p, text, data, want) in cases {
            assert_eq!(&decode(*p, *text, data), want, "{p:?} {data:?}");
        }
    }

    #[test]
    fn exit_statuses() {
        let argv: Vec<String> = ["sh", "-c", "exit 3"].map(String::from).to_vec();
        let ok = status(V5, &argv, &Outcome::Exited(0)).unwrap();
        assert_eq!(
            String::from_utf8(ok).unwrap(),
            r#"{"metadata":{},"status":"Success"}"#
        );
        let three = status(V4, &argv, &Outcome::Exited(3)).unwrap();
        assert_eq!(
            String::from_utf8(three).unwrap(),
            r#"{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: error executing command [sh -c exit 3], exit code 3","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}"#
        );
        assert_eq!(status(V1, &argv, &Outcome::Exited(0)), None);
        assert_eq!(
            status(V1, &argv, &Outcome::Exited(3)).unwrap(),
            b"command terminated with non-zero exit code: error executing command [sh -c exit 3], exit code 3"
        );
        let failed = status(V4, &argv, &Outcome::Failed("boom".into())).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&failed).unwrap();
        assert_eq!(v["reason"], "InternalError");
        assert_eq!(v["message"], "Internal error occurred: boom");
    }
}
