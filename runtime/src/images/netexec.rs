//! agnhost's `netexec`: HTTP on `--http-port` (8080) with the endpoints e2e tests and the
//! networking tutorials call (`/hostname`, `/echo`, `/clientip`, `/healthz`, `/dial` through the
//! pod's network, `/` with the time). `/shell`, `/exit`, `/shutdown` and `/upload` answer 501;
//! the UDP and SCTP servers are not simulated.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use super::agnhost::{bad_flag, go_log, go_log_sink, redirect, since, TEXT};
use super::generic::{self, EXIT_TERMINATED};
use super::util::{go_time, int_flag, json_list, param, split_query};
use crate::fs::Fs;
use crate::net::{HttpRequest, HttpResponse, NetError, Network, Server};
use crate::{BoxFuture, Container, Host, LogSink};

/// `netexec`: HTTP on `--http-port` (8080) with the endpoints e2e tests call.
pub fn netexec<'a>(
    argv: &'a [String],
    c: &'a Container,
    _fs: Fs,
    host: &'a mut dyn Host,
) -> BoxFuture<'a, i32> {
    Box::pin(async move {
        let Some(port) = int_flag(argv, "http-port", 8080) else {
            return bad_flag(host, "http-port");
        };
        let server = Netexec {
            started: host.now(),
            hostname: c.hostname.clone(),
            log: host.log_sink(),
            network: host.network(),
            client_port: AtomicU32::new(40000),
        };
        super::listen(host, c, port as u16, Arc::new(server));
        go_log(host, &format!("Started HTTP server on port {port}"));
        generic::until_term(host).await;
        EXIT_TERMINATED
    })
}

struct Netexec {
    started: SystemTime,
    hostname: String,
    log: LogSink,
    network: Arc<dyn Network>,
    /// The client's source port the next request shows (`/clientip` prints ip:port).
    client_port: AtomicU32,
}

impl Netexec {
    fn dial(&self, params: &[(String, String)]) -> HttpResponse {
        let get = |k: &str| param(params, k).unwrap_or("");
        let request = get("request");
        if request.is_empty() {
            return HttpResponse::new(400, TEXT, "request parameter not specified. <nil>\n");
        }
        let tries: u32 = match get("tries") {
            "" => 1,
            t => match t.parse() {
                Ok(n) => n,
                Err(_) => return HttpResponse::new(400, TEXT, "tries parameter is invalid.\n"),
            },
        };
        let Ok(port) = get("port").parse::<u16>() else {
            return HttpResponse::new(400, TEXT, "host and/or port param are invalid.\n");
        };
        if !matches!(get("protocol"), "" | "http") {
            let msg = format!("unsupported protocol. {}\n", get("protocol"));
            return HttpResponse::new(400, TEXT, msg);
        }
        let (mut responses, mut errors) = (Vec::new(), Vec::new());
        for _ in 0..tries {
            let req = HttpRequest {
                method: "GET".into(),
                path: format!("/{}", request.trim_start_matches('/')),
                host: format!("{}:{port}", get("host")),
                user_agent: "Go-http-client/1.1".into(),
                ..HttpRequest::default()
            };
            match self.network.http(get("host"), port, &req) {
                Ok(r) => responses.push(String::from_utf8_lossy(&r.body).into_owned()),
                Err(e) => {
                    let (h, path) = (get("host"), &req.path);
                    let cause = match e {
                        NetError::Refused => {
                            format!("dial tcp {h}:{port}: connect: connection refused")
                        }
                        NetError::TimedOut => format!("dial tcp {h}:{port}: i/o timeout"),
                        NetError::BadAddress(name) => {
                            format!("dial tcp: lookup {name}: no such host")
                        }
                    };
                    errors.push(format!("Get \"http://{h}:{port}{path}\": {cause}"));
                }
            }
        }
        let mut fields = Vec::new();
        if !errors.is_empty() {
            fields.push(format!("\"errors\":{}", json_list(&errors)));
        }
        if !responses.is_empty() {
            fields.push(format!("\"responses\":{}", json_list(&responses)));
        }
        HttpResponse::new(200, TEXT, format!("{{{}}}", fields.join(",")))
    }
}

impl Server for Netexec {
    fn http(&self, req: &HttpRequest, now: SystemTime) -> HttpResponse {
        let (path, params) = split_query(&req.path);
        let get = |k: &str| param(&params, k).unwrap_or("").to_string();
        let log = |msg: &str| go_log_sink(&self.log, now, msg);
        match path {
            "/clientip" => {
                log("GET /clientip");
                let port = self.client_port.fetch_add(1, Ordering::Relaxed);
                HttpResponse::new(200, TEXT, format!("{}:{port}", req.remote_ip))
            }
            "/echo" => {
                let (msg, code) = (get("msg"), get("code"));
                log(&format!("GET /echo?msg={msg}&code={code}"));
                match code.as_str() {
                    "" => HttpResponse::new(200, TEXT, msg),
                    c => match c.parse::<u16>() {
                        Ok(status) => HttpResponse::new(status, TEXT, msg),
                        Err(_) => HttpResponse::new(
                            200,
                            TEXT,
                            format!("argument 'code' must be an integer or empty, got {c:?}\n"),
                        ),
                    },
                }
            }
            "/healthz" => {
                log("GET /healthz");
                HttpResponse::new(200, TEXT, "")
            }
            "/hostname" | "/hostName" => {
                log(&format!("GET {path}"));
                HttpResponse::new(200, TEXT, self.hostname.clone())
            }
            "/redirect" => {
                let code = get("code").parse().unwrap_or(302);
                redirect(&get("location"), code)
            }
            "/dial" => {
                log(&format!(
                    "GET /dial?host={}&protocol={}&port={}&request={}&tries={}",
                    get("host"),
                    get("protocol"),
                    get("port"),
                    get("request"),
                    get("tries")
                ));
                self.dial(&params)
            }
            "/shell" | "/exit" | "/shutdown" | "/upload" => {
                HttpResponse::new(501, TEXT, format!("{path} is not simulated by tinykube\n"))
            }
            _ => {
                log("GET /");
                let up = since(now, self.started).as_secs_f64();
                HttpResponse::new(200, TEXT, format!("NOW: {} m=+{up:.9}", go_time(now)))
            }
        }
    }
}
