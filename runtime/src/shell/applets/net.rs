//! Network applets through the [`crate::Network`] the kubelet hands in: `wget`, `curl`,
//! `nc -z`, `nslookup`, with busybox's (and curl's) words for each failure.

use std::net::IpAddr;

use super::super::io::Proc;
use crate::{HttpRequest, HttpResponse, NetError};

pub(super) async fn run(p: &mut Proc, name: &str, args: &[String]) -> Option<i32> {
    Some(match name {
        "wget" => wget(p, args),
        "curl" => curl(p, args),
        "nc" => nc(p, args),
        "nslookup" => super::nslookup::run(p, args),
        _ => return None,
    })
}

struct Url {
    host: String,
    port: u16,
    path: String,
    /// `host` or `host:port` as the Host header says it.
    authority: String,
}

fn parse_url(url: &str) -> Url {
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (s.to_ascii_lowercase(), r),
        None => ("http".to_string(), url),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].to_string()),
        None => (rest, "/".to_string()),
    };
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let default = if scheme == "https" { 443 } else { 80 };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() && p.parse::<u16>().is_ok() => {
            (h.to_string(), p.parse().unwrap_or(default))
        }
        _ => (authority.to_string(), default),
    };
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    Url {
        host,
        port,
        path,
        authority: authority.to_string(),
    }
}

/// The IP `host` names: itself when it is one, else what the cluster DNS says.
fn resolve(p: &Proc, host: &str) -> Option<String> {
    if host.parse::<IpAddr>().is_ok() {
        return Some(host.to_string());
    }
    if host == "localhost" {
        return Some("127.0.0.1".into());
    }
    p.sys.network().resolve(host)?.ips.first().cloned()
}

fn get(p: &Proc, url: &Url, ip: &str, method: &str, agent: &str) -> Result<HttpResponse, NetError> {
    let req = HttpRequest {
        method: method.into(),
        path: url.path.clone(),
        host: url.authority.clone(),
        headers: Vec::new(),
        remote_ip: String::new(),
        user_agent: agent.into(),
    };
    p.sys.network().http(ip, url.port, &req)
}

/// Write a download to `target` (`-`: stdout); `false` (said) when it cannot be created.
fn save(p: &mut Proc, name: &str, target: &str, body: &[u8]) -> bool {
    match target {
        "-" | "/dev/stdout" => p.out(&String::from_utf8_lossy(body)),
        "/dev/null" => {}
        "/dev/stderr" => p.err(&String::from_utf8_lossy(body)),
        f => {
            if let Err(e) = p.fs.write(&p.path(f), body, false) {
                p.err(&format!("{name}: can't open '{f}': {e}\n"));
                return false;
            }
        }
    }
    true
}

fn wget(p: &mut Proc, args: &[String]) -> i32 {
    let mut quiet = false;
    let mut spider = false;
    let mut output: Option<String> = None;
    let mut agent = "Wget".to_string();
    // `-T SEC` given: its alarm ends a silent connection before the kernel gives up.
    let mut timeout = false;
    let mut url = None;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        match a.as_str() {
            "--spider" => spider = true,
            "-q" | "--quiet" => quiet = true,
            "-O" | "-T" | "-t" | "-U" | "--header" | "-P" | "-Y" => {
                let v = args.get(i + 1).cloned().unwrap_or_default();
                match a.as_str() {
                    "-O" => output = Some(v),
                    "-U" => agent = v,
                    "-T" => timeout = true,
                    _ => {}
                }
                i += 1;
            }
            s if s.starts_with("--timeout=") => timeout = true,
            s if s.starts_with("--tries=") => {}
            s if s.starts_with("--output-document=") => {
                output = Some(s["--output-document=".len()..].to_string());
            }
            s if s.starts_with('-') && s.len() > 1 && !s.starts_with("--") => {
                let flags = &s[1..];
                for (k, c) in flags.char_indices() {
                    match c {
                        'q' => quiet = true,
                        'O' | 'T' => {
                            let v = if k + 1 < flags.len() {
                                flags[k + 1..].to_string()
                            } else {
                                i += 1;
                                args.get(i).cloned().unwrap_or_default()
                            };
                            if c == 'O' {
                                output = Some(v);
                            } else {
                                timeout = true;
                            }
                            break;
                        }
                        _ => {}
                    }
                }
            }
            s if s.starts_with("--") => {}
            _ => url = Some(a.clone()),
        }
        i += 1;
    }
    let Some(raw) = url else {
        p.err("BusyBox v1.37.0 multi-call binary.\n\nUsage: wget [-cqS] [--spider] [-O FILE] [-o LOGFILE] [--header STR]\n\t[--post-data STR | --post-file FILE] [-Y on/off]\n\t[-P DIR] [-U AGENT] [-T SEC] URL...\n");
        return 1;
    };
    let url = parse_url(&raw);
    let Some(ip) = resolve(p, &url.host) else {
        p.err(&format!("wget: bad address '{}'\n", url.host));
        return 1;
    };
    if !quiet {
        p.err(&format!(
            "Connecting to {} ({ip}:{})\n",
            url.authority, url.port
        ));
    }
    let resp = match get(p, &url, &ip, "GET", &agent) {
        Ok(r) => r,
        Err(NetError::Refused) => {
            p.err(&format!(
                "wget: can't connect to remote host ({ip}): Connection refused\n"
            ));
            return 1;
        }
        Err(NetError::TimedOut) if timeout => {
            p.err("wget: download timed out\n");
            return 1;
        }
        Err(NetError::TimedOut) => {
            p.err(&format!(
                "wget: can't connect to remote host ({ip}): Connection timed out\n"
            ));
            return 1;
        }
        Err(NetError::BadAddress(h)) => {
            p.err(&format!("wget: bad address '{h}'\n"));
            return 1;
        }
    };
    if resp.status >= 400 {
        p.err(&format!(
            "wget: server returned error: HTTP/1.1 {} {}\n",
            resp.status,
            resp.reason()
        ));
        return 1;
    }
    if spider {
        if !quiet {
            p.err("remote file exists\n");
        }
        return 0;
    }
    let target = output.unwrap_or_else(|| {
        let name = url
            .path
            .split('?')
            .next()
            .unwrap_or("")
            .rsplit('/')
            .next()
            .unwrap_or("");
        if name.is_empty() {
            "index.html".into()
        } else {
            name.to_string()
        }
    });
    if !quiet {
        if target == "-" {
            p.err("writing to stdout\n");
        } else {
            p.err(&format!("saving to '{target}'\n"));
        }
    }
    if !save(p, "wget", &target, &resp.body) {
        return 1;
    }
    if !quiet {
        let shown = if target == "-" {
            "-".to_string()
        } else {
            target.clone()
        };
        p.err(&format!(
            "{shown:<20} 100% |********************************| {:>5}  0:00:00 ETA\n",
            resp.body.len()
        ));
        if target != "-" {
            p.err(&format!("'{target}' saved\n"));
        }
    }
    0
}

fn curl(p: &mut Proc, args: &[String]) -> i32 {
    let mut silent = false;
    let mut show_error = false;
    let mut fail = false;
    let mut head = false;
    let mut include = false;
    let mut method = "GET".to_string();
    let mut output: Option<String> = None;
    let mut url = None;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        match a {
            "-o" | "--output" | "-X" | "--request" | "-H" | "--header" | "-m" | "--max-time"
            | "--connect-timeout" | "-d" | "--data" | "-A" | "--user-agent" | "-w" | "-u" => {
                let v = args.get(i + 1).cloned().unwrap_or_default();
                match a {
                    "-o" | "--output" => output = Some(v),
                    "-X" | "--request" => method = v,
                    _ => {}
                }
                i += 1;
            }
            "--silent" => silent = true,
            "--fail" => fail = true,
            "--head" => head = true,
            "--include" => include = true,
            "--show-error" => show_error = true,
            s if s.starts_with("--") => {}
            s if s.starts_with('-') && s.len() > 1 => {
                for c in s[1..].chars() {
                    match c {
                        's' => silent = true,
                        'S' => show_error = true,
                        'f' => fail = true,
                        'I' => head = true,
                        'i' => include = true,
                        _ => {}
                    }
                }
            }
            _ => url = Some(a.to_string()),
        }
        i += 1;
    }
    let say = !silent || show_error;
    let Some(raw) = url else {
        p.err("curl: no URL specified!\ncurl: try 'curl --help' or 'curl --manual' for more information\n");
        return 2;
    };
    let url = parse_url(&raw);
    let Some(ip) = resolve(p, &url.host) else {
        if say {
            p.err(&format!("curl: (6) Could not resolve host: {}\n", url.host));
        }
        return 6;
    };
    let method = if head { "HEAD".to_string() } else { method };
    let resp = match get(p, &url, &ip, &method, "curl/8.11.1") {
        Ok(r) => r,
        Err(NetError::TimedOut) => {
            if say {
                p.err(&format!(
                    "curl: (28) Failed to connect to {} port {} after 0 ms: Timeout was reached\n",
                    url.host, url.port
                ));
            }
            return 28;
        }
        Err(_) => {
            if say {
                p.err(&format!(
                    "curl: (7) Failed to connect to {} port {} after 0 ms: Couldn't connect to server\n",
                    url.host, url.port
                ));
            }
            return 7;
        }
    };
    if fail && resp.status >= 400 {
        if say {
            p.err(&format!(
                "curl: (22) The requested URL returned error: {}\n",
                resp.status
            ));
        }
        return 22;
    }
    let mut out = Vec::new();
    if head || include {
        let mut h = format!("HTTP/1.1 {} {}\r\n", resp.status, resp.reason());
        for (k, v) in &resp.headers {
            h.push_str(&format!("{k}: {v}\r\n"));
        }
        h.push_str(&format!("Content-Length: {}\r\n\r\n", resp.body.len()));
        out.extend_from_slice(h.as_bytes());
    }
    if !head {
        out.extend_from_slice(&resp.body);
    }
    let target = output.unwrap_or_else(|| "-".into());
    if save(p, "curl", &target, &out) {
        0
    } else {
        23
    }
}

fn nc(p: &mut Proc, args: &[String]) -> i32 {
    let mut verbose = false;
    let mut ops = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "-w" || a == "-i" {
            i += 2;
            continue;
        }
        if a.starts_with('-') {
            verbose |= a.contains('v');
        } else {
            ops.push(a.clone());
        }
        i += 1;
    }
    let (Some(host), Some(port)) = (ops.first(), ops.get(1)) else {
        p.err("BusyBox v1.37.0 multi-call binary.\n\nUsage: nc [OPTIONS] HOST PORT  - connect\n");
        return 1;
    };
    let Some(ip) = resolve(p, host) else {
        p.err(&format!("nc: bad address '{host}'\n"));
        return 1;
    };
    let Ok(port_n) = port.parse::<u16>() else {
        p.err(&format!("nc: bad port '{port}'\n"));
        return 1;
    };
    match p.sys.network().connect(&ip, port_n) {
        Ok(()) => {
            if verbose {
                p.err(&format!("{host} ({ip}:{port}) open\n"));
            }
            0
        }
        Err(e) => {
            if verbose {
                p.err(&format!("nc: {host} ({ip}:{port}): {e}\n"));
            }
            1
        }
    }
}
