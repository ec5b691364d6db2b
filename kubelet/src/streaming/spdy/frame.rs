//! SPDY/3.1 framing, as the Kubernetes streaming protocols use it (the draft's section 2): control
//! frames (`SYN_STREAM`, `SYN_REPLY`, `RST_STREAM`, `SETTINGS`, `PING`, `GOAWAY`, `HEADERS`,
//! `WINDOW_UPDATE`) and data frames, with name/value header blocks compressed by one zlib stream
//! per direction and connection, primed with the draft's dictionary. Pure: bytes in, frames out.

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

/// The protocol version in every control frame (SPDY/3; 3.1 changed flow control only).
pub const VERSION: u16 = 3;

pub const SYN_STREAM: u16 = 1;
pub const SYN_REPLY: u16 = 2;
pub const RST_STREAM: u16 = 3;
pub const SETTINGS: u16 = 4;
pub const PING: u16 = 6;
pub const GOAWAY: u16 = 7;
pub const HEADERS: u16 = 8;
pub const WINDOW_UPDATE: u16 = 9;

/// The flag ending a stream in one direction, on data frames and on `SYN_STREAM`/`SYN_REPLY`.
pub const FLAG_FIN: u8 = 0x01;

/// The largest frame accepted from a peer (the protocol allows 16 MiB; nothing here needs more
/// than a terminal's input).
pub const MAX_FRAME: usize = 1 << 20;

/// Header names of the draft's dictionary, each prefixed by its 32-bit length there.
#[rustfmt::skip]
const DICTIONARY_NAMES: &[&str] = &[
    "options", "head", "post", "put", "delete", "trace", "accept", "accept-charset",
    "accept-encoding", "accept-language", "accept-ranges", "age", "allow", "authorization",
    "cache-control", "connection", "content-base", "content-encoding", "content-language",
    "content-length", "content-location", "content-md5", "content-range", "content-type", "date",
    "etag", "expect", "expires", "from", "host", "if-match", "if-modified-since", "if-none-match",
    "if-range", "if-unmodified-since", "last-modified", "location", "max-forwards", "pragma",
    "proxy-authenticate", "proxy-authorization", "range", "referer", "retry-after", "server",
    "te", "trailer", "transfer-encoding", "upgrade", "user-agent", "vary", "via", "warning",
    "www-authenticate", "method", "get", "status", "200 OK", "version", "HTTP/1.1", "url",
    "public", "set-cookie", "keep-alive", "origin",
];

/// The dictionary's tail: status codes and lines, dates and common values, unprefixed.
const DICTIONARY_TAIL: &str = concat!(
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505",
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request",
    "401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented",
    "503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 ",
    "Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,",
    "application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age=",
    "gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.",
);

/// The zlib dictionary of SPDY/3 header blocks (1423 bytes).
pub fn dictionary() -> Vec<u8> {
    let mut d = Vec::with_capacity(1423);
    for name in DICTIONARY_NAMES {
        d.extend_from_slice(&(name.len() as u32).to_be_bytes());
        d.extend_from_slice(name.as_bytes());
    }
    d.extend_from_slice(DICTIONARY_TAIL.as_bytes());
    d
}

/// A frame read from or written to the peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    Data {
        stream: u32,
        fin: bool,
        data: Vec<u8>,
    },
    SynStream {
        stream: u32,
        fin: bool,
        headers: Vec<(String, String)>,
    },
    SynReply {
        stream: u32,
        fin: bool,
        headers: Vec<(String, String)>,
    },
    RstStream {
        stream: u32,
        status: u32,
    },
    Ping(u32),
    GoAway {
        last_stream: u32,
        status: u32,
    },
    /// `SETTINGS`, `HEADERS`, `WINDOW_UPDATE` and unknown control frames: read and let be (the
    /// Kubernetes peers use no flow control and send no further headers).
    Other(u16),
}

/// Why the peer's bytes are not SPDY.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FrameError {
    #[error("frame of {0} bytes is larger than {MAX_FRAME}")]
    TooLarge(usize),
    #[error("control frame of version {0}, not {VERSION}")]
    Version(u16),
    #[error("control frame {kind} of {len} bytes is too short")]
    Short { kind: u16, len: usize },
    #[error("header block does not decompress: {0}")]
    Inflate(String),
    #[error("header block is malformed")]
    HeaderBlock,
}

/// One direction's header compression, and the other's decompression.
pub struct Codec {
    deflate: Compress,
    inflate: Decompress,
    dictionary: Vec<u8>,
}

impl Default for Codec {
    fn default() -> Self {
        Codec::new()
    }
}

impl Codec {
    pub fn new() -> Codec {
        let dictionary = dictionary();
        let mut deflate = Compress::new(Compression::default(), true);
        // A fresh zlib stream accepts a dictionary before its first byte; the peer's inflater
        // is primed with the same one.
        deflate
            .set_dictionary(&dictionary)
            .expect("a dictionary before the first byte");
        Codec {
            deflate,
            inflate: Decompress::new(true),
            dictionary,
        }
    }

    /// Split the front of `buf` into one frame, if it holds a whole one: `Ok(None)` wants more
    /// bytes. Returns the frame and how many bytes it took.
    pub fn parse(&mut self, buf: &[u8]) -> Result<Option<(Frame, usize)>, FrameError> {
        if buf.len() < 8 {
            return Ok(None);
        }
        let word = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
        let flags = buf[4];
        let len = u32::from_be_bytes([0, buf[5], buf[6], buf[7]]) as usize;
        if len > MAX_FRAME {
            return Err(FrameError::TooLarge(len));
        }
        if buf.len() < 8 + len {
            return Ok(None);
        }
        let body = &buf[8..8 + len];
        let fin = flags & FLAG_FIN != 0;
        let frame = if word & 0x8000_0000 == 0 {
            Frame::Data {
                stream: word & 0x7fff_ffff,
                fin,
                data: body.to_vec(),
            }
        } else {
            let version = ((word >> 16) & 0x7fff) as u16;
            let kind = (word & 0xffff) as u16;
            if version != VERSION {
                return Err(FrameError::Version(version));
            }
            let need = match kind {
                SYN_STREAM => 10,
                SYN_REPLY | PING => 4,
                RST_STREAM | GOAWAY => 8,
                _ => 0,
            };
            if len < need {
                return Err(FrameError::Short { kind, len });
            }
            let be = |at: usize| {
                u32::from_be_bytes([body[at], body[at + 1], body[at + 2], body[at + 3]])
            };
            match kind {
                SYN_STREAM => Frame::SynStream {
                    stream: be(0) & 0x7fff_ffff,
                    fin,
                    headers: self.inflate_block(&body[10..])?,
                },
                SYN_REPLY => Frame::SynReply {
                    stream: be(0) & 0x7fff_ffff,
                    fin,
                    headers: self.inflate_block(&body[4..])?,
                },
                HEADERS => {
                    // Kept only so the shared decompressor stays in step with the peer.
                    if len >= 4 {
                        self.inflate_block(&body[4..])?;
                    }
                    Frame::Other(kind)
                }
                RST_STREAM => Frame::RstStream {
                    stream: be(0) & 0x7fff_ffff,
                    status: be(4),
                },
                PING => Frame::Ping(be(0)),
                GOAWAY => Frame::GoAway {
                    last_stream: be(0) & 0x7fff_ffff,
                    status: be(4),
                },
                other => Frame::Other(other),
            }
        };
        Ok(Some((frame, 8 + len)))
    }

    /// The bytes of `frame` on the wire.
    pub fn encode(&mut self, frame: &Frame) -> Vec<u8> {
        match frame {
            Frame::Data { stream, fin, data } => self::data(*stream, *fin, data),
            Frame::SynStream {
                stream,
                fin,
                headers,
            } => {
                let mut body = (stream & 0x7fff_ffff).to_be_bytes().to_vec();
                body.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
                body.extend(self.deflate_block(headers));
                control(SYN_STREAM, flag(*fin), &body)
            }
            Frame::SynReply {
                stream,
                fin,
                headers,
            } => {
                let mut body = (stream & 0x7fff_ffff).to_be_bytes().to_vec();
                body.extend(self.deflate_block(headers));
                control(SYN_REPLY, flag(*fin), &body)
            }
            Frame::RstStream { stream, status } => {
                let mut body = stream.to_be_bytes().to_vec();
                body.extend_from_slice(&status.to_be_bytes());
                control(RST_STREAM, 0, &body)
            }
            Frame::Ping(id) => control(PING, 0, &id.to_be_bytes()),
            Frame::GoAway {
                last_stream,
                status,
            } => {
                let mut body = last_stream.to_be_bytes().to_vec();
                body.extend_from_slice(&status.to_be_bytes());
                control(GOAWAY, 0, &body)
            }
            Frame::Other(kind) => control(*kind, 0, &[]),
        }
    }

    fn deflate_block(&mut self, headers: &[(String, String)]) -> Vec<u8> {
        let mut plain = (headers.len() as u32).to_be_bytes().to_vec();
        for (name, value) in headers {
            for s in [name.to_ascii_lowercase().as_str(), value.as_str()] {
                plain.extend_from_slice(&(s.len() as u32).to_be_bytes());
                plain.extend_from_slice(s.as_bytes());
            }
        }
        let mut out = Vec::with_capacity(plain.len() + 64);
        let mut input = plain.as_slice();
        loop {
            out.reserve(256);
            let before = self.deflate.total_in();
            // Sync flush: the block ends on a byte boundary, whole, within this frame.
            let _ = self
                .deflate
                .compress_vec(input, &mut out, FlushCompress::Sync);
            let took = (self.deflate.total_in() - before) as usize;
            input = &input[took..];
            if input.is_empty() && out.len() < out.capacity() {
                return out;
            }
        }
    }

    fn inflate_block(&mut self, mut input: &[u8]) -> Result<Vec<(String, String)>, FrameError> {
        let mut plain = Vec::with_capacity(input.len() * 4 + 64);
        loop {
            plain.reserve(1024);
            let before = self.inflate.total_in();
            match self
                .inflate
                .decompress_vec(input, &mut plain, FlushDecompress::Sync)
            {
                Ok(Status::Ok | Status::BufError | Status::StreamEnd) => {}
                Err(e) if e.needs_dictionary().is_some() => {
                    self.inflate
                        .set_dictionary(&self.dictionary)
                        .map_err(|e| FrameError::Inflate(e.to_string()))?;
                }
                Err(e) => return Err(FrameError::Inflate(e.to_string())),
            }
            let took = (self.inflate.total_in() - before) as usize;
            input = &input[took..];
            let room = plain.len() < plain.capacity();
            if input.is_empty() && room {
                break;
            }
            if took == 0 && room {
                // No progress with room to spare: the block is cut short.
                return Err(FrameError::Inflate("truncated header block".into()));
            }
        }
        header_pairs(&plain).ok_or(FrameError::HeaderBlock)
    }
}

/// A data frame's bytes (data frames never touch the header compressor).
pub fn data(stream: u32, fin: bool, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + data.len());
    out.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
    push_flags_len(&mut out, flag(fin), data.len());
    out.extend_from_slice(data);
    out
}

fn flag(fin: bool) -> u8 {
    if fin {
        FLAG_FIN
    } else {
        0
    }
}

fn push_flags_len(out: &mut Vec<u8>, flags: u8, len: usize) {
    let len = len as u32;
    out.push(flags);
    out.extend_from_slice(&len.to_be_bytes()[1..]);
}

fn control(kind: u16, flags: u8, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + body.len());
    out.extend_from_slice(&(0x8000u16 | VERSION).to_be_bytes());
    out.extend_from_slice(&kind.to_be_bytes());
    push_flags_len(&mut out, flags, body.len());
    out.extend_from_slice(body);
    out
}

/// The pairs of an uncompressed name/value block; a value holding NULs is several values of one
/// name, kept as one pair per value.
fn header_pairs(mut b: &[u8]) -> Option<Vec<(String, String)>> {
    fn take<'a>(b: &mut &'a [u8]) -> Option<&'a [u8]> {
        let (len, rest) = b.split_first_chunk::<4>()?;
        let len = u32::from_be_bytes(*len) as usize;
        let (s, rest) = (rest.get(..len)?, rest.get(len..)?);
        *b = rest;
        Some(s)
    }
    let (count, rest) = b.split_first_chunk::<4>()?;
    b = rest;
    let mut pairs = Vec::new();
    for _ in 0..u32::from_be_bytes(*count) {
        let name = String::from_utf8_lossy(take(&mut b)?).to_ascii_lowercase();
        let value = String::from_utf8_lossy(take(&mut b)?).into_owned();
        for v in value.split('\0') {
            pairs.push((name.clone(), v.to_string()));
        }
    }
    Some(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_dictionary_is_the_drafts() {
        let d = dictionary();
        assert_eq!(d.len(), 1423);
        assert_eq!(&d[..11], b"\0\0\0\x07options");
        assert!(d.ends_with(b",*,enq=0."));
    }

    /// What one side compresses, the other reads, frame after frame on one zlib stream each
    /// way (the peer's header blocks are primed with the dictionary, so a mismatch fails here).
    #[test]
    fn header_blocks_round_trip_on_a_shared_stream() {
        let mut client = Codec::new();
        let mut server = Codec::new();
        let frames = [
            Frame::SynStream {
                stream: 1,
                fin: false,
                headers: pairs(&[("streamtype", "error")]),
            },
            Frame::SynStream {
                stream: 3,
                fin: false,
                headers: pairs(&[("streamtype", "stdout"), ("requestid", "0")]),
            },
            Frame::SynReply {
                stream: 5,
                fin: true,
                headers: vec![],
            },
        ];
        let mut wire = Vec::new();
        for f in &frames {
            wire.extend(client.encode(f));
        }
        let mut at = 0;
        for want in &frames {
            let (got, used) = server.parse(&wire[at..]).unwrap().unwrap();
            assert_eq!(&got, want);
            at += used;
        }
        assert_eq!(at, wire.len());
    }

    #[test]
    fn frames_on_the_wire() {
        let mut c = Codec::new();
        let data = Frame::Data {
            stream: 3,
            fin: true,
            data: b"hi".to_vec(),
        };
        assert_eq!(c.encode(&data), [0, 0, 0, 3, 1, 0, 0, 2, b'h', b'i']);
        assert_eq!(
            c.encode(&Frame::Ping(7)),
            [0x80, 3, 0, 6, 0, 0, 0, 4, 0, 0, 0, 7]
        );
        type Parsed = Result<Option<Frame>, FrameError>;
        let cases: &[(&[u8], Parsed)] = &[
            (&[0, 0, 0, 3, 1, 0, 0], Ok(None)),
            (&[0, 0, 0, 3, 0, 0, 0, 2, b'h'], Ok(None)),
            (
                &[0x80, 3, 0, 6, 0, 0, 0, 4, 0, 0, 0, 9],
                Ok(Some(Frame::Ping(9))),
            ),
            (
                &[0x80, 3, 0, 9, 0, 0, 0, 8, 0, 0, 0, 1, 0, 1, 0, 0],
                Ok(Some(Frame::Other(WINDOW_UPDATE))),
            ),
            (
                &[0x80, 3, 0, 3, 0, 0, 0, 8, 0, 0, 0, 5, 0, 0, 0, 5],
                Ok(Some(Frame::RstStream {
                    stream: 5,
                    status: 5,
                })),
            ),
            (
                &[0x80, 2, 0, 6, 0, 0, 0, 4, 0, 0, 0, 9],
                Err(FrameError::Version(2)),
            ),
            (
                &[0x80, 3, 0, 6, 0, 0, 0, 2, 0, 0],
                Err(FrameError::Short { kind: PING, len: 2 }),
            ),
            (
                &[0, 0, 0, 1, 0, 0x7f, 0, 0],
                Err(FrameError::TooLarge(0x7f0000)),
            ),
        ];
        for (bytes, want) in cases {
            let got = Codec::new().parse(bytes).map(|o| o.map(|(f, _)| f));
            assert_eq!(&got, want, "{bytes:?}");
        }
    }

    #[test]
    fn a_garbled_header_block_is_an_error_not_a_panic() {
        let mut c = Codec::new();
        let mut bad = vec![0x80, 3, 0, 1, 0, 0, 0, 14, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        bad.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
        assert!(matches!(c.parse(&bad), Err(FrameError::Inflate(_))));
    }
}
