//! The string `format`s a CRD schema's values are checked against: the set upstream's
//! apiextensions validator keeps (`supportedVersionedFormats`; any other format, `int32` and
//! `int64` included, is stripped and so ignored), each checked as kube-openapi's `strfmt`
//! registry does. Names compare with `-` removed (`date-time` is `datetime`).

use std::net::IpAddr;
use std::sync::OnceLock;

use regex::Regex;

/// Whether `format` is one upstream validates (names normalised as upstream: without `-`).
pub(super) fn is_supported(format: &str) -> bool {
    const SUPPORTED: &[&str] = &[
        "bsonobjectid",
        "uri",
        "email",
        "hostname",
        "ipv4",
        "ipv6",
        "cidr",
        "mac",
        "uuid",
        "uuid3",
        "uuid4",
        "uuid5",
        "isbn",
        "isbn10",
        "isbn13",
        "creditcard",
        "ssn",
        "hexcolor",
        "rgbcolor",
        "byte",
        "password",
        "date",
        "duration",
        "datetime",
        // Since Kubernetes 1.34.
        "k8sshortname",
        "k8slongname",
    ];
    SUPPORTED.contains(&normalize(format).as_str())
}

fn normalize(format: &str) -> String {
    format.replace('-', "")
}

/// Whether `s` is valid for the (supported) `format`.
pub(super) fn is_valid(format: &str, s: &str) -> bool {
    match normalize(format).as_str() {
        "bsonobjectid" => s.len() == 24 && s.bytes().all(|b| b.is_ascii_hexdigit()),
        "uri" => is_request_uri(s),
        "email" => is_email(s),
        "hostname" => is_hostname(s),
        "ipv4" => s.parse::<IpAddr>().is_ok() && s.contains('.'),
        "ipv6" => s.parse::<IpAddr>().is_ok() && s.contains(':'),
        "cidr" => is_cidr(s),
        "mac" => is_mac(s),
        "uuid" => rx(&UUID, UUID_RX).is_match(s),
        "uuid3" => rx(&UUID3, UUID3_RX).is_match(s),
        "uuid4" => rx(&UUID4, UUID4_RX).is_match(s),
        "uuid5" => rx(&UUID5, UUID5_RX).is_match(s),
        "isbn" => is_isbn10(s) || is_isbn13(s),
        "isbn10" => is_isbn10(s),
        "isbn13" => is_isbn13(s),
        "creditcard" => is_credit_card(s),
        "ssn" => s.len() == 11 && rx(&SSN, SSN_RX).is_match(s),
        "hexcolor" => rx(&HEXCOLOR, HEXCOLOR_RX).is_match(s),
        "rgbcolor" => rx(&RGBCOLOR, RGBCOLOR_RX).is_match(s),
        "byte" => rx(&BASE64, BASE64_RX).is_match(s),
        "date" => is_date(s),
        "duration" => is_duration(s),
        "datetime" => is_date_time(s),
        "k8sshortname" => tinykube_proto::names::label_errors(s).is_empty(),
        "k8slongname" => tinykube_proto::names::subdomain_errors(s).is_empty(),
        _ => true,
    }
}

fn rx(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).expect("format pattern compiles"))
}

static UUID: OnceLock<Regex> = OnceLock::new();
static UUID3: OnceLock<Regex> = OnceLock::new();
static UUID4: OnceLock<Regex> = OnceLock::new();
static UUID5: OnceLock<Regex> = OnceLock::new();
static SSN: OnceLock<Regex> = OnceLock::new();
static HEXCOLOR: OnceLock<Regex> = OnceLock::new();
static RGBCOLOR: OnceLock<Regex> = OnceLock::new();
static BASE64: OnceLock<Regex> = OnceLock::new();
static HOSTNAME: OnceLock<Regex> = OnceLock::new();
static EMAIL: OnceLock<Regex> = OnceLock::new();
static TIME: OnceLock<Regex> = OnceLock::new();
static DURATION: OnceLock<Regex> = OnceLock::new();

const UUID_RX: &str = r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$";
const UUID3_RX: &str = r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$";
const UUID4_RX: &str =
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$";
const UUID5_RX: &str =
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$";
const SSN_RX: &str = r"^\d{3}[- ]?\d{2}[- ]?\d{4}$";
const HEXCOLOR_RX: &str = r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$";
const RGBCOLOR_RX: &str = r"^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$";
const BASE64_RX: &str =
    r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$";
const HOSTNAME_RX: &str = r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9\-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z0-9\p{S}\p{L}])(-?[a-zA-Z0-9\p{S}\p{L}]){1,62})$";
/// An address `local@domain` as Go's `net/mail` takes it (dot-atom local part or a quoted one).
const EMAIL_RX: &str = r#"^(?:[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*|"[^"\\]*")@[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$"#;
/// The time part of a date-time, after strfmt lowercases it and splits at `t`.
const TIME_RX: &str = r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$";
/// Go's `time.ParseDuration`, or strfmt's `<n> <unit>` form.
const DURATION_RX: &str = r"^(?:[-+]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|µs|μs|ms|s|m|h))+|0|[0-9]+\s*(?:ns|us|µs|ms|s|m|h|d|w|nanoseconds?|microseconds?|milliseconds?|seconds?|sec|minutes?|min|hours?|hr|days?|weeks?|wk))$";

/// Go's `url.ParseRequestURI`: an absolute URI (`scheme:…`) or an absolute path.
fn is_request_uri(s: &str) -> bool {
    if s.is_empty() || s.chars().any(|c| c.is_control() || c == ' ') {
        return false;
    }
    if s.starts_with('/') {
        return true;
    }
    let Some((scheme, _)) = s.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// Go's `net/mail.ParseAddress`: `addr` or `Name <addr>`.
fn is_email(s: &str) -> bool {
    let addr = match (s.rfind('<'), s.ends_with('>')) {
        (Some(i), true) => &s[i + 1..s.len() - 1],
        _ => s.trim(),
    };
    rx(&EMAIL, EMAIL_RX).is_match(addr)
}

fn is_hostname(s: &str) -> bool {
    rx(&HOSTNAME, HOSTNAME_RX).is_match(s) && s.len() <= 255 && s.split('.').all(|p| p.len() <= 63)
}

/// Go's `net.ParseCIDR`.
fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let Ok(ip) = ip.parse::<IpAddr>() else {
        return false;
    };
    let max = if ip.is_ipv4() { 32 } else { 128 };
    !bits.is_empty()
        && bits.len() <= 3
        && bits.bytes().all(|b| b.is_ascii_digit())
        && bits.parse::<u32>().is_ok_and(|n| n <= max)
}

/// Go's `net.ParseMAC`: 6, 8 or 20 octets as `aa:bb:…`, `aa-bb-…` or `aabb.ccdd.…`.
fn is_mac(s: &str) -> bool {
    let hex = |p: &str, n: usize| p.len() == n && p.bytes().all(|b| b.is_ascii_hexdigit());
    let octets_ok = |n: usize| matches!(n, 6 | 8 | 20);
    for sep in [':', '-'] {
        if s.contains(sep) {
            let parts: Vec<&str> = s.split(sep).collect();
            return octets_ok(parts.len()) && parts.iter().all(|p| hex(p, 2));
        }
    }
    let parts: Vec<&str> = s.split('.').collect();
    parts.len() > 1 && octets_ok(parts.len() * 2) && parts.iter().all(|p| hex(p, 4))
}

/// Digits of `s` once spaces and hyphens are gone, as govalidator's ISBN checks sanitise.
fn isbn_digits(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .collect()
}

fn is_isbn10(s: &str) -> bool {
    let d = isbn_digits(s);
    let b = d.as_bytes();
    if b.len() != 10 || !b[..9].iter().all(u8::is_ascii_digit) {
        return false;
    }
    let last = match b[9] {
        b'X' => 10,
        c if c.is_ascii_digit() => u32::from(c - b'0'),
        _ => return false,
    };
    let sum: u32 = b[..9]
        .iter()
        .enumerate()
        .map(|(i, c)| (i as u32 + 1) * u32::from(c - b'0'))
        .sum::<u32>()
        + 10 * last;
    sum.is_multiple_of(11)
}

fn is_isbn13(s: &str) -> bool {
    let d = isbn_digits(s);
    let b = d.as_bytes();
    if b.len() != 13 || !b.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let sum: u32 = b[..12]
        .iter()
        .enumerate()
        .map(|(i, c)| u32::from(c - b'0') * if i % 2 == 0 { 1 } else { 3 })
        .sum();
    (10 - sum % 10) % 10 == u32::from(b[12] - b'0')
}

/// govalidator's `IsCreditCard`: the digits (anything else dropped) of a known card number
/// pattern, passing the Luhn check.
fn is_credit_card(s: &str) -> bool {
    static CARD: OnceLock<Regex> = OnceLock::new();
    let digits: String = s.chars().filter(char::is_ascii_digit).collect();
    let pattern = r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|(222[1-9]|22[3-9][0-9]|2[3-6][0-9]{2}|27[01][0-9]|2720)[0-9]{12}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11}|6[27][0-9]{14})$";
    if !rx(&CARD, pattern).is_match(&digits) {
        return false;
    }
    let mut sum = 0;
    for (i, c) in digits.bytes().rev().enumerate() {
        let mut d = u32::from(c - b'0');
        if i % 2 == 1 {
            d *= 2;
            if d > 9 {
                d -= 9;
            }
        }
        sum += d;
    }
    sum % 10 == 0
}

/// `2006-01-02` as Go's `time.Parse` takes it (two-digit month and day, a real date).
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && [0, 1, 2, 3, 5, 6, 8, 9]
            .iter()
            .all(|&i| b[i].is_ascii_digit())
        && chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok()
}

/// strfmt's `IsDateTime`: lowercased and split at `t`, a date then a time with a zone.
fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if parts.len() < 2 || !is_date(parts[0]) {
        return false;
    }
    let Some(c) = rx(&TIME, TIME_RX).captures(parts[1]) else {
        return false;
    };
    &c[1] <= "23" && &c[2] <= "59" && &c[3] <= "59"
}

fn is_duration(s: &str) -> bool {
    rx(&DURATION, DURATION_RX).is_match(s)
}
