//! `registry.k8s.io/e2e-test-images/agnhost`, the e2e tests' Swiss army knife, and the old
//! `liveness` image: the subcommands the tutorials and e2e tests lean on, after upstream's
//! `test/images/agnhost` (liveness, netexec, serve-hostname, pause, grpc-health-checking,
//! test-webserver, porter; netexec is in [`super::netexec`]). Other known subcommands run as
//! servers of the declared ports; an unknown one fails as cobra does.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use super::generic::{self, EXIT_TERMINATED};
use super::rootfs::{self, Base};
use super::util::{
    bool_flag, flag, go_duration, int_flag, log_time, param, percent_decode, split_query,
};
use super::Reference;
use crate::fs::{Fs, FsError, Node};
use crate::net::{HttpRequest, HttpResponse, Server};
use crate::{BoxFuture, Container, Host, LogSink, Signal, Stream};

/// The version `agnhost --version` prints.
const VERSION: &str = "2.53";
pub(super) const TEXT: &str = "text/plain; charset=utf-8";

type Sub = super::Builtin;

/// Subcommands, and how each is simulated (`None`: it serves the declared ports until stopped).
const SUBCOMMANDS: &[(&str, Option<Sub>)] = &[
    ("audit-proxy", None),
    ("connect", None),
    ("crd-conversion-webhook", None),
    ("dns-server-list", None),
    ("dns-suffix", None),
    ("entrypoint-tester", None),
    ("etc-hosts", None),
    ("fake-gitserver", None),
    ("grpc-health-checking", Some(grpc_health_checking)),
    ("guestbook", None),
    ("inclusterclient", None),
    ("liveness", Some(liveness)),
    ("logs-generator", None),
    ("mounttest", None),
    ("net", None),
    ("netexec", Some(super::netexec::netexec)),
    ("nettest", None),
    ("no-snat-test", None),
    ("no-snat-test-proxy", None),
    ("pause", Some(pause)),
    ("port-forward-tester", None),
    ("porter", Some(porter)),
    ("resource-consumer-controller", None),
    ("serve-hostname", Some(serve_hostname)),
    ("test-service-account-issuer-discovery", None),
    ("test-webserver", Some(test_webserver)),
    ("webhook", None),
];

/// Alpine with `/agnhost` and what its Dockerfile adds.
pub fn root(_r: &Reference) -> Node {
    rootfs::base(Base::Alpine, "3.21")
        .file("/agnhost", rootfs::BINARY)
        .file("/agnhost-2", rootfs::BINARY)
        .file("/localhost.crt", "-----BEGIN CERTIFICATE-----\n")
        .file("/localhost.key", "-----BEGIN PRIVATE KEY-----\n")
        .programs("/usr/bin", &["curl", "dig", "iperf", "bash", "nc", "ss"])
        .dirs(&["/uploads"])
        .build()
}

/// The old `registry.k8s.io/liveness` image: `/server` only.
pub fn liveness_root(_r: &Reference) -> Node {
    generic::scratch_with("/server")
}

/// `/agnhost SUBCOMMAND [flags]`.
pub fn agnhost<'a>(
    argv: &'a [String],
    c: &'a Container,
    fs: Fs,
    host: &'a mut dyn Host,
) -> BoxFuture<'a, i32> {
    Box::pin(async move {
        let args = &argv[1.min(argv.len())..];
        let Some(sub) = args.first() else {
            host.write(Stream::Stdout, &help());
            return 0;
        };
        match sub.as_str() {
            "help" | "--help" | "-h" => {
                host.write(Stream::Stdout, &help());
                return 0;
            }
            "--version" | "-v" => {
                host.write(Stream::Stdout, &format!("app version {VERSION}\n"));
                return 0;
            }
            _ => {}
        }
        match SUBCOMMANDS.iter().find(|(name, _)| name == sub) {
            Some((_, Some(run))) => run(args, c, fs, host).await,
            Some((_, None)) => generic::serve_ports(c, host).await,
            None => {
                let msg = format!(
                    "Error: unknown command \"{sub}\" for \"app\"\nRun 'app --help' for usage.\n"
                );
                host.write(Stream::Stderr, &msg);
                1
            }
        }
    })
}

fn help() -> String {
    let mut s = String::from("Usage:\n  app [command]\n\nAvailable Commands:\n");
    for (name, _) in SUBCOMMANDS {
        s.push_str(&format!("  {name}\n"));
    }
    s.push_str("\nUse \"app [command] --help\" for more information about a command.\n");
    s
}

/// A line of Go's `log` package (stderr, local time).
pub(super) fn go_log(host: &mut dyn Host, msg: &str) {
    let line = format!("{} {msg}\n", log_time(host.now()));
    host.write(Stream::Stderr, &line);
}

pub(super) fn go_log_sink(log: &LogSink, now: SystemTime, msg: &str) {
    log(Stream::Stderr, &format!("{} {msg}\n", log_time(now)));
}

/// Go's `DefaultServeMux` answer to a path no handler has.
pub(super) fn not_found() -> HttpResponse {
    HttpResponse::new(404, TEXT, "404 page not found\n")
}

pub(super) fn since(now: SystemTime, started: SystemTime) -> Duration {
    now.duration_since(started).unwrap_or_default()
}

/// `liveness` (and the old liveness image's `/server`): `/healthz` is 200 for 10 s after
/// start, then 500.
pub fn liveness<'a>(
    _argv: &'a [String],
    c: &'a Container,
    _fs: Fs,
    host: &'a mut dyn Host,
) -> BoxFuture<'a, i32> {
    Box::pin(async move {
        let started = host.now();
        super::listen(host, c, 8080, Arc::new(Liveness { started }));
        generic::until_term(host).await;
        EXIT_TERMINATED
    })
}

struct Liveness {
    started: SystemTime,
}

impl Server for Liveness {
    fn http(&self, req: &HttpRequest, now: SystemTime) -> HttpResponse {
        let (path, params) = split_query(&req.path);
        let up = since(now, self.started);
        match path {
            "/started" => HttpResponse::new(200, TEXT, go_duration(up)),
            "/healthz" if up.as_secs_f64() > 10.0 => {
                HttpResponse::new(500, TEXT, format!("error: {}", up.as_secs_f64()))
            }
            "/healthz" => HttpResponse::new(200, TEXT, "ok"),
            "/redirect" => redirect(param(&params, "loc").unwrap_or(""), 302),
            _ => not_found(),
        }
    }
}

pub(super) fn redirect(location: &str, code: u16) -> HttpResponse {
    let body = format!(
        "<a href=\"{location}\">{}</a>.\n\n",
        super::util::reason(code)
    );
    let mut r = HttpResponse::new(code, "text/html; charset=utf-8", body);
    r.headers.push(("Location".into(), location.to_string()));
    r
}

pub(super) fn bad_flag(host: &mut dyn Host, name: &str) -> i32 {
    host.write(
        Stream::Stderr,
        &format!("Error: invalid argument for \"--{name}\" flag: parse error\n"),
    );
    1
}

/// `serve-hostname`: the hostname over HTTP on `--port` (9376).
pub fn serve_hostname<'a>(
    argv: &'a [String],
    c: &'a Container,
    _fs: Fs,
    host: &'a mut dyn Host,
) -> BoxFuture<'a, i32> {
    Box::pin(async move {
        let Some(port) = int_flag(argv, "port", 9376) else {
            return bad_flag(host, "port");
        };
        let http = flag(argv, "http").is_none_or(|v| v == "true");
        if http && (bool_flag(argv, "tcp") || bool_flag(argv, "udp")) {
            go_log(
                host,
                "Can't server TCP/UDP mode and HTTP mode at the same time",
            );
            return 1;
        }
        let server = Arc::new(Hostname {
            hostname: c.hostname.clone(),
            log: host.log_sink(),
            http,
        });
        super::listen(host, c, port as u16, server);
        go_log(host, &format!("Serving on port {port}."));
        generic::until_term(host).await;
        go_log(host, "Shutting down after receiving signal: terminated.");
        go_log(host, "Awaiting pod deletion.");
        host.sleep(Duration::from_secs(60)).await;
        0
    })
}

struct Hostname {
    hostname: String,
    log: LogSink,
    http: bool,
}

impl Server for Hostname {
    fn http(&self, req: &HttpRequest, now: SystemTime) -> HttpResponse {
        let kind = if self.http { "HTTP" } else { "TCP" };
        let msg = format!("{kind} request from {}", req.remote_ip);
        go_log_sink(&self.log, now, &msg);
        HttpResponse::new(200, TEXT, self.hostname.clone())
    }
}

/// `pause`: prints `Paused` and waits; SIGTERM ends it with exit code 2, as upstream's does.
pub fn pause<'a>(
    _argv: &'a [String],
    _c: &'a Container,
    _fs: Fs,
    host: &'a mut dyn Host,
) -> BoxFuture<'a, i32> {
    Box::pin(async move {
        host.write(Stream::Stdout, "Paused\n");
        generic::until_term(host).await;
        2
    })
}

/// `grpc-health-checking`: the gRPC health service on `--port` (5000) for `--service`,
/// SERVING until `--delay-unhealthy-sec` (never by default) or `/make-not-serving` on the
/// HTTP `--http-port` (8080).
pub fn grpc_health_checking<'a>(
    argv: &'a [String],
    c: &'a Container,
    _fs: Fs,
    host: &'a mut dyn Host,
) -> BoxFuture<'a, i32> {
    Box::pin(async move {
        let (Some(port), Some(http_port), Some(delay)) = (
            int_flag(argv, "port", 5000),
            int_flag(argv, "http-port", 8080),
            int_flag(argv, "delay-unhealthy-sec", -1),
        ) else {
            return bad_flag(host, "port");
        };
        let health = Arc::new(Health {
            service: flag(argv, "service").unwrap_or_default(),
            forced: Mutex::new(None),
            expired: AtomicBool::new(false),
            started: host.now(),
        });
        go_log(
            host,
            &format!("Http server starting to listen on :{http_port}"),
        );
        super::listen(
            host,
            c,
            http_port as u16,
            Arc::new(HealthHttp(health.clone())),
        );
        go_log(host, &format!("gRPC server starting to listen on :{port}"));
        super::listen(host, c, port as u16, health.clone());
        if delay >= 0 {
            let d = Duration::from_secs(delay as u64);
            if host.wait_signal(Some(d)).await == Some(Signal::Term) {
                return EXIT_TERMINATED;
            }
            health.expired.store(true, Ordering::Relaxed);
        }
        generic::until_term(host).await;
        EXIT_TERMINATED
    })
}

struct Health {
    service: String,
    /// Set by `/make-serving` (false) and `/make-not-serving` (true).
    forced: Mutex<Option<bool>>,
    /// `--delay-unhealthy-sec` has passed.
    expired: AtomicBool,
    started: SystemTime,
}

impl Server for Health {
    fn http(&self, _req: &HttpRequest, _now: SystemTime) -> HttpResponse {
        // HTTP/1.1 to a gRPC server.
        HttpResponse::new(505, TEXT, "")
    }

    fn grpc_health(&self, service: &str) -> Option<bool> {
        if service != self.service {
            // NOT_FOUND: the probe fails.
            return Some(false);
        }
        let forced = *self.forced.lock().unwrap_or_else(|e| e.into_inner());
        Some(!(forced == Some(true) || self.expired.load(Ordering::Relaxed)))
    }
}

struct HealthHttp(Arc<Health>);

impl Server for HealthHttp {
    fn http(&self, req: &HttpRequest, now: SystemTime) -> HttpResponse {
        let (path, _) = split_query(&req.path);
        let unhealthy = match path {
            "/make-not-serving" => true,
            "/make-serving" => false,
            _ => return not_found(),
        };
        *self.0.forced.lock().unwrap_or_else(|e| e.into_inner()) = Some(unhealthy);
        HttpResponse::new(200, TEXT, go_duration(since(now, self.0.started)))
    }
}

/// `test-webserver`: the container's files over HTTP on `--port` (80).
pub fn test_webserver<'a>(
    argv: &'a [String],
    c: &'a Container,
    fs: Fs,
    host: &'a mut dyn Host,
) -> BoxFuture<'a, i32> {
    Box::pin(async move {
        let Some(port) = int_flag(argv, "port", 80) else {
            return bad_flag(host, "port");
        };
        super::listen(host, c, port as u16, Arc::new(FileServer(fs)));
        generic::until_term(host).await;
        EXIT_TERMINATED
    })
}

/// Go's `http.FileServer` over the container's root.
struct FileServer(Fs);

impl Server for FileServer {
    fn http(&self, req: &HttpRequest, _now: SystemTime) -> HttpResponse {
        let (path, _) = split_query(&req.path);
        let path = percent_decode(path);
        let file = crate::fs::absolute("/", &path);
        let mut resp = match self.0.read(&file) {
            Ok(body) => HttpResponse::new(200, super::util::content_type(&file), body),
            Err(FsError::IsADirectory) if !path.ends_with('/') => {
                let name = file.rsplit('/').next().unwrap_or("");
                redirect(&format!("{name}/"), 301)
            }
            Err(FsError::IsADirectory) => {
                let mut body = String::from(
                    "<!doctype html>\n<meta name=\"viewport\" content=\"width=device-width\">\n<pre>\n",
                );
                for e in self.0.list(&file).unwrap_or_default() {
                    let name = if e.is_dir {
                        format!("{}/", e.name)
                    } else {
                        e.name
                    };
                    body.push_str(&format!("<a href=\"{name}\">{name}</a>\n"));
                }
                body.push_str("</pre>\n");
                HttpResponse::new(200, "text/html; charset=utf-8", body)
            }
            Err(_) => not_found(),
        };
        resp.headers
            .push(("Cache-Control".into(), "private".into()));
        resp.headers
            .push(("Access-Control-Allow-Origin".into(), "*".into()));
        resp
    }
}

/// `porter`: for each `SERVE_PORT_N` (or `SERVE_TCP_PORT_N`, `SERVE_TLS_PORT_N`) variable, the
/// variable's value on port N.
pub fn porter<'a>(
    argv: &'a [String],
    c: &'a Container,
    _fs: Fs,
    host: &'a mut dyn Host,
) -> BoxFuture<'a, i32> {
    Box::pin(async move {
        let json = bool_flag(argv, "json-response");
        for (k, v) in &c.env {
            let port = ["SERVE_PORT_", "SERVE_TCP_PORT_", "SERVE_TLS_PORT_"]
                .iter()
                .find_map(|p| k.strip_prefix(p))
                .and_then(|p| p.parse::<u16>().ok());
            if let Some(port) = port {
                let server = Porter {
                    value: v.clone(),
                    json,
                };
                super::listen(host, c, port, Arc::new(server));
            }
        }
        generic::until_term(host).await;
        EXIT_TERMINATED
    })
}

struct Porter {
    value: String,
    json: bool,
}

impl Server for Porter {
    fn http(&self, req: &HttpRequest, _now: SystemTime) -> HttpResponse {
        if self.json {
            let body = format!(
                "{{\"Method\":{},\"Body\":{}}}",
                super::util::json_str(&req.method),
                super::util::json_str(&self.value)
            );
            return HttpResponse::new(200, "application/json", body);
        }
        HttpResponse::new(200, TEXT, self.value.clone())
    }
}
