//! Kubernetes protobuf request bodies, as kubectl's typed clients send them (`kubectl create
//! deployment`, `create configmap`, `create priorityclass`, drain's evictions): the `k8s\0`
//! envelope, a `runtime.Unknown` naming the kind, and the object in protobuf wire format,
//! decoded into the same JSON a JSON client would have sent.
//!
//! Field numbers and JSON names are data (`schema.json`, made by `tools/gen-protobuf-schema.py`
//! from the k8s-pb and k8s-openapi crates); only the types with a JSON form of their own (time,
//! quantity, int-or-string, raw extension) are decoded by hand.

use std::collections::HashMap;
use std::sync::OnceLock;

use base64::Engine;
use serde::Deserialize;
use serde_json::{Map, Value};

/// Prefix of every Kubernetes protobuf body.
const MAGIC: &[u8] = b"k8s\x00";

/// One field of a message: number, JSON name, wire kind, message type, repeated.
#[derive(Debug, Deserialize)]
struct Field(u32, String, String, Option<String>, bool);

#[derive(Debug, Deserialize)]
struct Schema {
    kinds: HashMap<String, String>,
    messages: HashMap<String, Vec<Field>>,
}

fn schema() -> &'static Schema {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        serde_json::from_str(include_str!("schema.json")).unwrap_or(Schema {
            kinds: HashMap::new(),
            messages: HashMap::new(),
        })
    })
}

/// Fields that are pointers in upstream's Go types, where a zero value is meaningful and kept.
/// Every other scalar that is zero (`""`, `0`, `false`) is dropped: Go's protobuf marshaller
/// writes non-pointer fields even when zero, where its JSON encoder would have omitted them.
const MEANINGFUL_ZERO: &[&str] = &[
    "replicas",
    "gracePeriodSeconds",
    "terminationGracePeriodSeconds",
    "revisionHistoryLimit",
    "progressDeadlineSeconds",
    "activeDeadlineSeconds",
    "deletionGracePeriodSeconds",
    "priority",
    "value",
    "orphanDependents",
    "blockOwnerDeletion",
    "controller",
    "automountServiceAccountToken",
    "enableServiceLinks",
    "hostUsers",
    "allowPrivilegeEscalation",
    "privileged",
    "readOnlyRootFilesystem",
    "runAsNonRoot",
    "runAsUser",
    "runAsGroup",
    "fsGroup",
    "optional",
    "defaultMode",
    "mode",
    "expirationSeconds",
    "tolerationSeconds",
    "leaseDurationSeconds",
    "leaseTransitions",
    "holderIdentity",
];

fn is_zero(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Null => true,
        _ => false,
    }
}

/// Seconds of Go's zero time (0001-01-01T00:00:00Z), which JSON shows as absent.
const GO_ZERO_TIME: i64 = -62_135_596_800;

/// Why a protobuf body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ProtobufError {
    #[error("provided object is not a Kubernetes protobuf (no k8s\\x00 prefix)")]
    NoMagic,
    #[error("protobuf is truncated or malformed")]
    Malformed,
    #[error("no protobuf decoding is known for {0}")]
    UnknownKind(String),
}

/// A cursor over wire-format bytes.
struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64, ProtobufError> {
        let mut out = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = self.buf.split_first().ok_or(ProtobufError::Malformed)?;
            self.buf = rest;
            out |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(out);
            }
        }
        Err(ProtobufError::Malformed)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], ProtobufError> {
        if n > self.buf.len() {
            return Err(ProtobufError::Malformed);
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    fn bytes(&mut self) -> Result<&'a [u8], ProtobufError> {
        let n = usize::try_from(self.varint()?).map_err(|_| ProtobufError::Malformed)?;
        self.take(n)
    }

    /// Next `(field number, wire type)`, or `None` at the end.
    fn key(&mut self) -> Result<Option<(u32, u8)>, ProtobufError> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        let k = self.varint()?;
        Ok(Some(((k >> 3) as u32, (k & 7) as u8)))
    }

    fn skip(&mut self, wire: u8) -> Result<(), ProtobufError> {
        match wire {
            0 => self.varint().map(|_| ()),
            1 => self.take(8).map(|_| ()),
            2 => self.bytes().map(|_| ()),
            5 => self.take(4).map(|_| ()),
            _ => Err(ProtobufError::Malformed),
        }
    }
}

fn text(b: &[u8]) -> Result<String, ProtobufError> {
    String::from_utf8(b.to_vec()).map_err(|_| ProtobufError::Malformed)
}

/// Fields of a small message as (number → raw value) for the hand-decoded types.
fn small_fields(bytes: &[u8]) -> Result<HashMap<u32, Vec<u8>>, ProtobufError> {
    let mut r = Reader { buf: bytes };
    let mut out = HashMap::new();
    while let Some((no, wire)) = r.key()? {
        let v = match wire {
            0 => r.varint()?.to_le_bytes().to_vec(),
            2 => r.bytes()?.to_vec(),
            _ => {
                r.skip(wire)?;
                continue;
            }
        };
        out.insert(no, v);
    }
    Ok(out)
}

fn small_int(f: &HashMap<u32, Vec<u8>>, no: u32) -> i64 {
    f.get(&no)
        .and_then(|b| b.as_slice().try_into().ok())
        .map(|b: [u8; 8]| u64::from_le_bytes(b) as i64)
        .unwrap_or(0)
}

/// Messages whose JSON form is not an object of their fields.
fn special(name: &str, bytes: &[u8]) -> Result<Option<Value>, ProtobufError> {
    let short = name.rsplit('/').next().unwrap_or(name);
    let f = || small_fields(bytes);
    Ok(Some(match short {
        "Time" | "MicroTime" => {
            let f = f()?;
            if small_int(&f, 1) == GO_ZERO_TIME || !f.contains_key(&1) && !f.contains_key(&2) {
                return Ok(Some(Value::Null));
            }
            let t = chrono::DateTime::from_timestamp(small_int(&f, 1), small_int(&f, 2) as u32)
                .ok_or(ProtobufError::Malformed)?;
            let format = if short == "Time" {
                chrono::SecondsFormat::Secs
            } else {
                chrono::SecondsFormat::Micros
            };
            Value::String(t.to_rfc3339_opts(format, true))
        }
        "Quantity" => Value::String(text(f()?.get(&1).map(Vec::as_slice).unwrap_or(b""))?),
        "IntOrString" => {
            let f = f()?;
            if small_int(&f, 1) == 1 {
                Value::String(text(f.get(&3).map(Vec::as_slice).unwrap_or(b""))?)
            } else {
                Value::from(small_int(&f, 2) as i32)
            }
        }
        "RawExtension" | "FieldsV1" => {
            let raw = f()?.remove(&1).unwrap_or_default();
            serde_json::from_slice(&raw).map_err(|_| ProtobufError::Malformed)?
        }
        "Duration" => {
            let nanos = small_int(&f()?, 1);
            Value::String(go_duration(nanos))
        }
        _ => return Ok(None),
    }))
}

/// Go's time.Duration.String() for whole-second and sub-second values.
fn go_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let secs = nanos as f64 / 1e9;
    let (h, rem) = ((secs / 3600.0).floor(), secs % 3600.0);
    let (m, s) = ((rem / 60.0).floor(), rem % 60.0);
    match (h as i64, m as i64) {
        (0, 0) => format!("{s}s"),
        (0, m) => format!("{m}m{s}s"),
        (h, m) => format!("{h}h{m}m{s}s"),
    }
}

fn scalar(kind: &str, wire: u8, r: &mut Reader) -> Result<Value, ProtobufError> {
    Ok(match (kind, wire) {
        ("string", 2) => Value::String(text(r.bytes()?)?),
        ("bytes", 2) => Value::String(base64::engine::general_purpose::STANDARD.encode(r.bytes()?)),
        ("int32", 0) => Value::from(r.varint()? as i64 as i32),
        ("int64", 0) => Value::from(r.varint()? as i64),
        ("bool", 0) => Value::Bool(r.varint()? != 0),
        ("double", 1) => {
            let b: [u8; 8] = r
                .take(8)?
                .try_into()
                .map_err(|_| ProtobufError::Malformed)?;
            serde_json::Number::from_f64(f64::from_le_bytes(b))
                .map(Value::Number)
                .unwrap_or(Value::Null)
        }
        _ => return Err(ProtobufError::Malformed),
    })
}

fn message(name: &str, bytes: &[u8]) -> Result<Value, ProtobufError> {
    if let Some(v) = special(name, bytes)? {
        return Ok(v);
    }
    let fields = schema()
        .messages
        .get(name)
        .ok_or_else(|| ProtobufError::UnknownKind(name.to_string()))?;
    let mut out = Map::new();
    let mut r = Reader { buf: bytes };
    while let Some((no, wire)) = r.key()? {
        let Some(Field(_, json, kind, reference, repeated)) = fields.iter().find(|f| f.0 == no)
        else {
            r.skip(wire)?;
            continue;
        };
        if let Some(value_kind) = kind.strip_prefix("map:") {
            let mut entry = Reader { buf: r.bytes()? };
            let (mut key, mut value) = (String::new(), Value::Null);
            while let Some((eno, ewire)) = entry.key()? {
                match (eno, value_kind) {
                    (1, _) => key = text(entry.bytes()?)?,
                    (2, "message") => {
                        value = message(reference.as_deref().unwrap_or(""), entry.bytes()?)?
                    }
                    (2, k) => value = scalar(k, ewire, &mut entry)?,
                    _ => entry.skip(ewire)?,
                }
            }
            let map = out
                .entry(json.clone())
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(m) = map {
                m.insert(key, value);
            }
            continue;
        }
        if json.is_empty() && kind == "message" {
            // An embedded Go struct (`json:",inline"`): its fields are this message's.
            if let Value::Object(inner) = message(reference.as_deref().unwrap_or(""), r.bytes()?)? {
                out.extend(inner);
            }
            continue;
        }
        let mut values = Vec::new();
        match (kind.as_str(), wire) {
            ("message", 2) => values.push(message(reference.as_deref().unwrap_or(""), r.bytes()?)?),
            ("int32" | "int64" | "bool", 2) => {
                // A packed repeated field.
                let mut packed = Reader { buf: r.bytes()? };
                while !packed.buf.is_empty() {
                    values.push(scalar(kind, 0, &mut packed)?);
                }
            }
            _ => values.push(scalar(kind, wire, &mut r)?),
        }
        if *repeated {
            let list = out
                .entry(json.clone())
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(a) = list {
                a.extend(values);
            }
        } else if let Some(v) = values.pop() {
            // A present message is meaningful even when it reads 0 (an IntOrString of 0, as
            // `kubectl create pdb --min-available=0` sends); only scalars are zero-as-absent.
            let absent = if kind == "message" {
                v.is_null()
            } else {
                is_zero(&v) && !MEANINGFUL_ZERO.contains(&json.as_str())
            };
            if absent {
                out.remove(json);
            } else {
                out.insert(json.clone(), v);
            }
        }
    }
    Ok(Value::Object(out))
}

/// Decode a Kubernetes protobuf body into the JSON object it stands for.
pub fn decode(body: &[u8]) -> Result<Value, ProtobufError> {
    let rest = body.strip_prefix(MAGIC).ok_or(ProtobufError::NoMagic)?;
    let unknown = small_fields(rest)?;
    let type_meta = small_fields(unknown.get(&1).map(Vec::as_slice).unwrap_or(b""))?;
    let api_version = text(type_meta.get(&1).map(Vec::as_slice).unwrap_or(b""))?;
    let kind = text(type_meta.get(&2).map(Vec::as_slice).unwrap_or(b""))?;
    let key = format!("{api_version}/{kind}");
    let name = schema()
        .kinds
        .get(&key)
        .ok_or_else(|| ProtobufError::UnknownKind(key.clone()))?;
    let raw = unknown.get(&2).map(Vec::as_slice).unwrap_or(b"");
    let mut obj = message(name, raw)?;
    if let Value::Object(m) = &mut obj {
        let mut out = Map::new();
        out.insert("apiVersion".into(), api_version.into());
        out.insert("kind".into(), kind.into());
        out.extend(std::mem::take(m));
        *m = out;
    }
    Ok(obj)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Minimal encoder for tests: (field, wire type, payload).
    fn field(no: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = varint(u64::from(no) << 3 | 2);
        out.extend(varint(payload.len() as u64));
        out.extend_from_slice(payload);
        out
    }

    fn int_field(no: u32, v: u64) -> Vec<u8> {
        let mut out = varint(u64::from(no) << 3);
        out.extend(varint(v));
        out
    }

    fn varint(mut v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return out;
            }
            out.push(b | 0x80);
        }
    }

    fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
        let mut tm = field(1, api_version.as_bytes());
        tm.extend(field(2, kind.as_bytes()));
        let mut unknown = field(1, &tm);
        unknown.extend(field(2, raw));
        let mut out = MAGIC.to_vec();
        out.extend(unknown);
        out
    }

    #[test]
    fn decodes_an_eviction_as_drain_sends_it() {
        let mut meta = field(1, b"web-1");
        meta.extend(field(3, b"default"));
        let mut delete = int_field(1, 30);
        delete.extend(field(4, b"Background"));
        let mut eviction = field(1, &meta);
        eviction.extend(field(2, &delete));
        let obj = decode(&envelope("policy/v1", "Eviction", &eviction)).unwrap();
        assert_eq!(
            obj,
            json!({"apiVersion": "policy/v1", "kind": "Eviction",
                   "metadata": {"name": "web-1", "namespace": "default"},
                   "deleteOptions": {"gracePeriodSeconds": 30, "propagationPolicy": "Background"}})
        );
    }

    #[test]
    fn decodes_maps_quantities_and_int_or_string() {
        // ConfigMap with data {a: b} and a creationTimestamp.
        let mut entry = field(1, b"a");
        entry.extend(field(2, b"b"));
        let mut ts = int_field(1, 1_767_225_600);
        ts.extend(int_field(2, 0));
        let mut meta = field(1, b"c1");
        meta.extend(field(8, &ts));
        let mut cm = field(1, &meta);
        cm.extend(field(2, &entry));
        let obj = decode(&envelope("v1", "ConfigMap", &cm)).unwrap();
        assert_eq!(obj["data"], json!({"a": "b"}));
        assert_eq!(obj["metadata"]["creationTimestamp"], "2026-01-01T00:00:00Z");
        assert!(matches!(decode(b"{}"), Err(ProtobufError::NoMagic)));
        assert!(matches!(
            decode(&envelope("v1", "Widget", b"")),
            Err(ProtobufError::UnknownKind(_))
        ));
        assert!(decode(&envelope("v1", "ConfigMap", &[0x0a, 0xff])).is_err());
        assert_eq!(go_duration(90_000_000_000), "1m30s");
    }
}
