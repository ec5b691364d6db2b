//! Small helpers the image programs share: command-line flags in Go's and cobra's spellings,
//! the clock formats their logs use, query strings, and what a static file server needs
//! (content types, the pod IP from `/etc/hosts`).

use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};

use crate::Fs;

/// The value of flag `name` in `args`, spelled as Go's `flag` and cobra's `pflag` accept it:
/// `--name value`, `--name=value`, `-name value`, `-name=value`.
pub fn flag(args: &[String], name: &str) -> Option<String> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let Some(body) = a.strip_prefix("--").or_else(|| a.strip_prefix('-')) else {
            continue;
        };
        if body == name {
            return it.next().cloned();
        }
        if let Some(v) = body.strip_prefix(name).and_then(|r| r.strip_prefix('=')) {
            return Some(v.to_string());
        }
    }
    None
}

/// Whether boolean flag `name` is set (`--name`, `--name=true`).
pub fn bool_flag(args: &[String], name: &str) -> bool {
    args.iter().any(|a| {
        let body = a.trim_start_matches('-');
        a.starts_with('-') && (body == name || body == format!("{name}=true"))
    })
}

/// An integer flag with its default; `None` when given and not a number.
pub fn int_flag(args: &[String], name: &str, default: i64) -> Option<i64> {
    match flag(args, name) {
        None => Some(default),
        Some(v) => v.parse().ok(),
    }
}

/// A Go duration (`1s`, `500ms`, `1m30s`, `1.5h`).
pub fn parse_go_duration(s: &str) -> Option<Duration> {
    if s == "0" {
        return Some(Duration::ZERO);
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let n = rest
            .find(|ch: char| !(ch.is_ascii_digit() || ch == '.'))
            .unwrap_or(rest.len());
        let value: f64 = rest[..n].parse().ok()?;
        rest = &rest[n..];
        let u = rest
            .find(|ch: char| ch.is_ascii_digit() || ch == '.')
            .unwrap_or(rest.len());
        let unit = match &rest[..u] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += value * unit;
        rest = &rest[u..];
    }
    Some(Duration::from_secs_f64(total))
}

/// A duration as Go's `Duration.String()` prints it (`10.5s`, `1m5s`, `250ms`).
pub fn go_duration(d: Duration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0s".into();
    }
    if nanos < 1_000_000_000 {
        let (unit, div) = if nanos < 1_000 {
            ("ns", 1u128)
        } else if nanos < 1_000_000 {
            ("µs", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        return format!("{}{unit}", decimal(nanos, div));
    }
    let secs = nanos / 1_000_000_000;
    let (h, m) = (secs / 3600, (secs / 60) % 60);
    let s = decimal(nanos % 60_000_000_000, 1_000_000_000);
    match (h, m) {
        (0, 0) => format!("{s}s"),
        (0, m) => format!("{m}m{s}s"),
        (h, m) => format!("{h}h{m}m{s}s"),
    }
}

/// `n / div` with its fraction, trailing zeros dropped.
fn decimal(n: u128, div: u128) -> String {
    let (int, frac) = (n / div, n % div);
    if frac == 0 {
        return int.to_string();
    }
    let width = div.to_string().len() - 1;
    let f = format!("{frac:0width$}");
    format!("{int}.{}", f.trim_end_matches('0'))
}

fn utc(t: SystemTime) -> DateTime<Utc> {
    DateTime::<Utc>::from(t)
}

/// `25/Nov/2026:00:36:22 +0000`: the time of nginx's and Apache's access logs.
pub fn clf_time(t: SystemTime) -> String {
    utc(t).format("%d/%b/%Y:%H:%M:%S +0000").to_string()
}

/// `2026/11/25 00:36:22`: nginx's error log and Go's `log` package.
pub fn log_time(t: SystemTime) -> String {
    utc(t).format("%Y/%m/%d %H:%M:%S").to_string()
}

/// `Wed Nov 25 00:36:22.000000 2026`: Apache's error log.
pub fn apache_time(t: SystemTime) -> String {
    utc(t).format("%a %b %d %H:%M:%S%.6f %Y").to_string()
}

/// `I1125 00:36:22.000000`: the head of a glog line (the pid and file follow).
pub fn glog_time(t: SystemTime) -> String {
    utc(t).format("I%m%d %H:%M:%S%.6f").to_string()
}

/// `2026-11-25 00:36:22.123456789 +0000 UTC`: Go's `time.Time.String()`.
pub fn go_time(t: SystemTime) -> String {
    let s = utc(t).format("%Y-%m-%d %H:%M:%S%.9f").to_string();
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s} +0000 UTC")
}

/// A request path split into its path and its decoded query parameters.
pub fn split_query(path: &str) -> (&str, Vec<(String, String)>) {
    let Some((p, q)) = path.split_once('?') else {
        return (path, Vec::new());
    };
    let params = q
        .split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect();
    (p, params)
}

/// The first value of query parameter `name`.
pub fn param<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// `%41` → `A`, `+` → space (query strings).
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h * 16 + l);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// A JSON string.
pub fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

pub fn json_list(items: &[String]) -> String {
    let items: Vec<String> = items.iter().map(|s| json_str(s)).collect();
    format!("[{}]", items.join(","))
}

/// The MIME type a static server sends for a file name (nginx's `mime.types`, in short).
pub fn content_type(name: &str) -> &'static str {
    let ext = name.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    match ext.to_ascii_lowercase().as_str() {
        "html" | "htm" | "shtml" => "text/html",
        "css" => "text/css",
        "xml" => "text/xml",
        "txt" => "text/plain",
        "js" => "application/javascript",
        "json" => "application/json",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" | "svgz" => "image/svg+xml",
        "ico" => "image/x-icon",
        _ => "application/octet-stream",
    }
}

/// The IP `/etc/hosts` gives `hostname` (the kubelet writes the pod's IP there).
pub fn own_ip(fs: &Fs, hostname: &str) -> Option<String> {
    let hosts = fs.read("/etc/hosts").ok()?;
    String::from_utf8_lossy(&hosts).lines().find_map(|line| {
        let mut words = line.split_whitespace();
        let ip = words.next()?;
        (!ip.starts_with('#') && words.any(|w| w == hostname)).then(|| ip.to_string())
    })
}

/// The standard reason phrase of an HTTP status.
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        301 => "Moved Permanently",
        302 => "Found",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        412 => "Precondition Failed",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_in_go_and_cobra_spellings() {
        let cases: &[(&[&str], &str, Option<&str>)] = &[
            (&["--http-port", "8081"], "http-port", Some("8081")),
            (&["--http-port=8082"], "http-port", Some("8082")),
            (&["-mem-total", "150Mi"], "mem-total", Some("150Mi")),
            (&["-cpus=2"], "cpus", Some("2")),
            (&["--port"], "port", None),
            (&["--portx=1"], "port", None),
            (&["netexec"], "port", None),
        ];
        for (args, name, want) in cases {
            assert_eq!(flag(&strings(args), name).as_deref(), *want, "{args:?}");
        }
        assert!(bool_flag(&strings(&["--tcp"]), "tcp"));
        assert!(!bool_flag(&strings(&["tcp"]), "tcp"));
        assert_eq!(int_flag(&strings(&[]), "port", 9376), Some(9376));
        assert_eq!(int_flag(&strings(&["--port", "x"]), "port", 1), None);
    }

    #[test]
    fn go_durations_both_ways() {
        let cases = [
            ("1s", Duration::from_secs(1), "1s"),
            ("500ms", Duration::from_millis(500), "500ms"),
            ("1m30s", Duration::from_secs(90), "1m30s"),
            ("10.5s", Duration::from_millis(10_500), "10.5s"),
            ("2h", Duration::from_secs(7200), "2h0m0s"),
            ("0", Duration::ZERO, "0s"),
        ];
        for (text, d, printed) in cases {
            assert_eq!(parse_go_duration(text), Some(d), "{text}");
            assert_eq!(go_duration(d), printed, "{text}");
        }
        assert_eq!(parse_go_duration("5x"), None);
        assert_eq!(go_duration(Duration::from_nanos(1_500)), "1.5µs");
    }

    #[test]
    fn clocks_and_queries() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_567_382);
        assert_eq!(clf_time(t), "25/Nov/2026:00:43:02 +0000");
        assert_eq!(log_time(t), "2026/11/25 00:43:02");
        assert_eq!(apache_time(t), "Wed Nov 25 00:43:02.000000 2026");
        assert_eq!(glog_time(t), "I1125 00:43:02.000000");
        assert_eq!(go_time(t), "2026-11-25 00:43:02 +0000 UTC");
        let (p, q) = split_query("/echo?msg=hello%20world&code=+1");
        assert_eq!(p, "/echo");
        assert_eq!(param(&q, "msg"), Some("hello world"));
        assert_eq!(param(&q, "code"), Some(" 1"));
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(content_type("/x/index.HTML"), "text/html");
    }
}
