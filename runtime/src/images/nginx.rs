//! The `nginx` image: `/docker-entrypoint.sh` with its configuration messages, and `nginx`
//! serving `/usr/share/nginx/html` on port 80 as the packaged `default.conf` says, logging each
//! request in the `main` (combined) format to stdout and its notices and errors to stderr, and
//! shutting down gracefully when stopped (the image's STOPSIGNAL is SIGQUIT).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use super::rootfs::{self, Base, Tree};
use super::util::{clf_time, content_type, log_time, split_query};
use super::{parse_reference, Reference};
use crate::fs::{Fs, FsError, Node};
use crate::net::{HttpRequest, HttpResponse, Server};
use crate::{shell, BoxFuture, Container, Host, LogSink, Signal, Stream};

pub const INDEX_HTML: &str = include_str!("assets/nginx/index.html");
const ERROR_HTML: &str = include_str!("assets/nginx/50x.html");
const NGINX_CONF: &str = include_str!("assets/nginx/nginx.conf");
const DEFAULT_CONF: &str = include_str!("assets/nginx/default.conf");
const DEFAULT_CONF_PATH: &str = "/etc/nginx/conf.d/default.conf";
const ENTRYPOINT_D: &str = "/docker-entrypoint.d";
/// The release `nginx:latest` (and a tag that names none) runs.
const LATEST: &str = "1.29.1";
/// The pid of the first worker under the entrypoint (the master is 1).
const FIRST_WORKER: u32 = 29;
const WORKERS: u32 = 2;

/// The nginx release an image reference runs (`nginx:1.14.2` → `1.14.2`).
fn version(r: &Reference) -> String {
    if r.repo != "nginx" {
        return LATEST.into();
    }
    let numeric = r.tag.split('-').next().unwrap_or("");
    let parts: Vec<&str> = numeric.split('.').collect();
    if parts.len() < 2 || parts.iter().any(|p| p.parse::<u32>().is_err()) {
        return LATEST.into();
    }
    if parts.len() == 2 {
        return format!("{numeric}.0");
    }
    numeric.to_string()
}

fn alpine(r: &Reference) -> bool {
    r.tag.contains("alpine")
}

/// The root tree: Debian (or Alpine for `*alpine*` tags) with nginx's files.
pub fn root(r: &Reference) -> Node {
    let base = if alpine(r) {
        Base::Alpine
    } else {
        Base::Debian
    };
    with_nginx(rootfs::base(base, ""))
        .file("/docker-entrypoint.sh", rootfs::BINARY)
        .file(
            &format!("{ENTRYPOINT_D}/10-listen-on-ipv6-by-default.sh"),
            rootfs::BINARY,
        )
        .file(
            &format!("{ENTRYPOINT_D}/15-local-resolvers.envsh"),
            rootfs::BINARY,
        )
        .file(
            &format!("{ENTRYPOINT_D}/20-envsubst-on-templates.sh"),
            rootfs::BINARY,
        )
        .file(
            &format!("{ENTRYPOINT_D}/30-tune-worker-processes.sh"),
            rootfs::BINARY,
        )
        .build()
}

/// `nginx-slim`: nginx on Debian, without the entrypoint.
pub fn slim_root(_r: &Reference) -> Node {
    with_nginx(rootfs::base(Base::Debian, "")).build()
}

fn with_nginx(t: Tree) -> Tree {
    t.file("/usr/sbin/nginx", rootfs::BINARY)
        .file("/etc/nginx/nginx.conf", NGINX_CONF)
        .file(DEFAULT_CONF_PATH, DEFAULT_CONF)
        .file("/usr/share/nginx/html/index.html", INDEX_HTML)
        .file("/usr/share/nginx/html/50x.html", ERROR_HTML)
        .dirs(&["/var/log/nginx", "/var/cache/nginx"])
}

/// `/docker-entrypoint.sh`: configure when the command is nginx, then exec the command.
pub fn entrypoint<'a>(
    argv: &'a [String],
    c: &'a Container,
    fs: Fs,
    host: &'a mut dyn Host,
) -> BoxFuture<'a, i32> {
    Box::pin(async move {
        let rest = &argv[1.min(argv.len())..];
        let Some(program) = rest.first() else {
            return 0;
        };
        if program == "nginx" || program == "nginx-debug" {
            let quiet = c
                .env
                .iter()
                .any(|(k, v)| k == "NGINX_ENTRYPOINT_QUIET_LOGS" && !v.is_empty());
            let lines = configure(argv[0].as_str(), c, &fs, host).await;
            if !quiet {
                for line in lines {
                    host.write(Stream::Stdout, &format!("{line}\n"));
                }
            }
        }
        match super::builtin(&c.image, program) {
            Some(b) => b(rest, c, fs, host).await,
            None => shell::exec_argv(rest, c, fs, host).await,
        }
    })
}

/// Run the scripts of `/docker-entrypoint.d/`, returning what the entrypoint prints.
async fn configure(me: &str, c: &Container, fs: &Fs, host: &mut dyn Host) -> Vec<String> {
    let scripts = fs.list(ENTRYPOINT_D).unwrap_or_default();
    if scripts.is_empty() {
        return vec![format!(
            "{me}: No files found in {ENTRYPOINT_D}/, skipping configuration"
        )];
    }
    let mut out = vec![
        format!("{me}: {ENTRYPOINT_D}/ is not empty, will attempt to perform configuration"),
        format!("{me}: Looking for shell scripts in {ENTRYPOINT_D}/"),
    ];
    for s in scripts.iter().filter(|e| !e.is_dir) {
        let path = format!("{ENTRYPOINT_D}/{}", s.name);
        if s.name.ends_with(".envsh") {
            out.push(format!("{me}: Sourcing {path}"));
        } else if s.name.ends_with(".sh") {
            out.push(format!("{me}: Launching {path}"));
            if s.name == "10-listen-on-ipv6-by-default.sh" {
                out.extend(listen_on_ipv6(&s.name, fs));
            } else if fs.read(&path).is_ok_and(|d| d != rootfs::BINARY) {
                // A script of the user's (from a ConfigMap): the shell runs it.
                let argv = [path];
                shell::exec_argv(&argv, c, fs.clone(), host).await;
            }
        } else {
            out.push(format!("{me}: Ignoring {path}, not executable"));
        }
    }
    out.push(format!("{me}: Configuration complete; ready for start up"));
    out
}

/// `10-listen-on-ipv6-by-default.sh`: add `listen [::]:80;` to the packaged default.conf.
fn listen_on_ipv6(script: &str, fs: &Fs) -> Vec<String> {
    let info = |m: String| format!("{script}: info: {m}");
    let Ok(conf) = fs.read(DEFAULT_CONF_PATH) else {
        return vec![info(format!(
            "{DEFAULT_CONF_PATH} is not a file or does not exist"
        ))];
    };
    let mut out = vec![info(format!("Getting the checksum of {DEFAULT_CONF_PATH}"))];
    if conf != DEFAULT_CONF.as_bytes() {
        out.push(info(format!(
            "{DEFAULT_CONF_PATH} differs from the packaged version"
        )));
        return out;
    }
    let ipv6 = DEFAULT_CONF.replacen(
        "listen       80;",
        "listen       80;\n    listen  [::]:80;",
        1,
    );
    match fs.write(DEFAULT_CONF_PATH, ipv6.as_bytes(), false) {
        Ok(()) => out.push(info(format!(
            "Enabled listen on IPv6 in {DEFAULT_CONF_PATH}"
        ))),
        Err(_) => out.push(info(format!(
            "can not modify {DEFAULT_CONF_PATH} (read-only file system?)"
        ))),
    }
    out
}

/// What the server blocks of `/etc/nginx/conf.d/*.conf` say: the IPv4 ports and the root.
fn read_config(fs: &Fs) -> (Vec<u16>, String) {
    let mut ports = Vec::new();
    let mut root = None;
    let confs = fs.list("/etc/nginx/conf.d").unwrap_or_default();
    for e in confs.iter().filter(|e| e.name.ends_with(".conf")) {
        let text = fs
            .read(&format!("/etc/nginx/conf.d/{}", e.name))
            .unwrap_or_default();
        for line in String::from_utf8_lossy(&text).lines() {
            let line = line.trim();
            let mut words = line.trim_end_matches(';').split_whitespace();
            match (words.next(), words.next()) {
                (Some("listen"), Some(addr)) if !addr.starts_with('[') => {
                    let port = addr.rsplit(':').next().unwrap_or(addr);
                    if let Ok(p) = port.parse::<u16>() {
                        if !ports.contains(&p) {
                            ports.push(p);
                        }
                    }
                }
                (Some("root"), Some(dir)) if root.is_none() => root = Some(dir.to_string()),
                _ => {}
            }
        }
    }
    if ports.is_empty() {
        ports.push(80);
    }
    let root = root.unwrap_or_else(|| "/usr/share/nginx/html".into());
    (ports, root.trim_end_matches('/').to_string())
}

/// The `nginx` program.
pub fn nginx<'a>(
    argv: &'a [String],
    c: &'a Container,
    fs: Fs,
    host: &'a mut dyn Host,
) -> BoxFuture<'a, i32> {
    Box::pin(async move {
        let r = parse_reference(&c.image);
        let v = version(&r);
        let args = &argv[1.min(argv.len())..];
        let has = |flag: &str| args.iter().any(|a| a == flag);
        if has("-v") || has("-V") {
            host.write(Stream::Stderr, &format!("nginx version: nginx/{v}\n"));
            return 0;
        }
        if has("-t") || has("-T") {
            host.write(
                Stream::Stderr,
                "nginx: the configuration file /etc/nginx/nginx.conf syntax is ok\n\
                 nginx: configuration file /etc/nginx/nginx.conf test is successful\n",
            );
            return 0;
        }
        if has("-s") {
            // `nginx -s reload` from `kubectl exec`: the master takes the signal.
            return 0;
        }
        let daemon_off = args
            .windows(2)
            .any(|w| w[0] == "-g" && w[1].replace(' ', "").contains("daemonoff;"));
        if !daemon_off {
            // nginx forks into the background and the container's process is done.
            return 0;
        }
        let under_entrypoint = fs.exists("/docker-entrypoint.sh");
        let first = if under_entrypoint { FIRST_WORKER } else { 7 };
        let gcc = if alpine(&r) {
            "gcc 14.2.0 (Alpine 14.2.0) "
        } else {
            "gcc 12.2.0 (Debian 12.2.0-14+deb12u1) "
        };
        let notice = |host: &mut dyn Host, pid: u32, msg: &str| {
            let line = format!("{} [notice] {pid}#{pid}: {msg}\n", log_time(host.now()));
            host.write(Stream::Stderr, &line);
        };
        notice(host, 1, "using the \"epoll\" event method");
        notice(host, 1, &format!("nginx/{v}"));
        notice(host, 1, &format!("built by {gcc}"));
        notice(host, 1, "OS: Linux 6.8.0-1019-gcp");
        notice(host, 1, "getrlimit(RLIMIT_NOFILE): 1048576:1048576");
        notice(host, 1, "start worker processes");
        for w in first..first + WORKERS {
            notice(host, 1, &format!("start worker process {w}"));
        }
        let (ports, root) = read_config(&fs);
        let server = Arc::new(Nginx {
            fs,
            root,
            version: v,
            log: host.log_sink(),
            worker: first,
            connections: AtomicU64::new(0),
        });
        for p in ports {
            super::listen(host, c, p, server.clone());
        }
        while host.wait_signal(None).await != Some(Signal::Term) {}
        notice(host, 1, "signal 3 (SIGQUIT) received, shutting down");
        for w in first..first + WORKERS {
            notice(host, w, "gracefully shutting down");
            notice(host, w, "exiting");
            notice(host, w, "exit");
        }
        for w in first..first + WORKERS {
            notice(host, 1, &format!("signal 17 (SIGCHLD) received from {w}"));
            notice(host, 1, &format!("worker process {w} exited with code 0"));
        }
        notice(host, 1, "exit");
        0
    })
}

/// nginx answering from the container's files.
struct Nginx {
    fs: Fs,
    root: String,
    version: String,
    log: LogSink,
    worker: u32,
    connections: AtomicU64,
}

impl Nginx {
    /// nginx's own page for an error status.
    fn error_page(&self, status: u16, reason: &str) -> HttpResponse {
        let body = format!(
            "<html>\r\n<head><title>{status} {reason}</title></head>\r\n<body>\r\n\
             <center><h1>{status} {reason}</h1></center>\r\n\
             <hr><center>nginx/{}</center>\r\n</body>\r\n</html>\r\n",
            self.version
        );
        HttpResponse::new(status, "text/html", body)
    }

    fn error_log(&self, now: SystemTime, conn: u64, req: &HttpRequest, msg: &str) {
        let w = self.worker;
        let line = format!(
            "{} [error] {w}#{w}: *{conn} {msg}, client: {}, server: localhost, \
             request: \"{} {} HTTP/1.1\", host: \"{}\"\n",
            log_time(now),
            req.remote_ip,
            req.method,
            req.path,
            req.host
        );
        (self.log)(Stream::Stderr, &line);
    }

    fn answer(&self, req: &HttpRequest, now: SystemTime, conn: u64) -> HttpResponse {
        if req.method != "GET" && req.method != "HEAD" {
            return self.error_page(405, "Not Allowed");
        }
        let (path, _) = split_query(&req.path);
        let path = super::util::percent_decode(path);
        if !path.starts_with('/') {
            return self.error_page(400, "Bad Request");
        }
        let norm = crate::fs::absolute("/", &path);
        let file = format!("{}{}", self.root, if norm == "/" { "" } else { &norm });
        if path.ends_with('/') {
            let dir = file;
            let index = format!("{dir}/index.html");
            return match self.fs.read(&index) {
                Ok(body) => self.file(&index, body),
                Err(_) if self.fs.is_dir(&dir) => {
                    let msg = format!("directory index of \"{dir}/\" is forbidden");
                    self.error_log(now, conn, req, &msg);
                    self.error_page(403, "Forbidden")
                }
                Err(e) => {
                    let msg = format!("\"{index}\" is not found ({})", errno(e));
                    self.error_log(now, conn, req, &msg);
                    self.error_page(404, "Not Found")
                }
            };
        }
        match self.fs.read(&file) {
            Ok(body) => self.file(&file, body),
            Err(FsError::IsADirectory) => {
                let mut r = self.error_page(301, "Moved Permanently");
                let location = format!("http://{}{path}/", req.host);
                r.headers.push(("Location".into(), location));
                r
            }
            Err(e) => {
                let msg = format!("open() \"{file}\" failed ({})", errno(e));
                self.error_log(now, conn, req, &msg);
                self.error_page(404, "Not Found")
            }
        }
    }

    fn file(&self, path: &str, body: Vec<u8>) -> HttpResponse {
        HttpResponse::new(200, content_type(path), body)
    }
}

/// `2: No such file or directory`, as nginx quotes errno.
fn errno(e: FsError) -> String {
    let n = match e {
        FsError::NotFound => 2,
        FsError::NotADirectory => 20,
        FsError::IsADirectory => 21,
        _ => 13,
    };
    format!("{n}: {e}")
}

impl Server for Nginx {
    fn http(&self, req: &HttpRequest, now: SystemTime) -> HttpResponse {
        let conn = self.connections.fetch_add(1, Ordering::Relaxed) + 1;
        let mut resp = self.answer(req, now, conn);
        resp.headers
            .insert(0, ("Server".into(), format!("nginx/{}", self.version)));
        if req.method == "HEAD" {
            resp.body.clear();
        }
        let line = format!(
            "{} - - [{}] \"{} {} HTTP/1.1\" {} {} \"-\" \"{}\" \"-\"\n",
            req.remote_ip,
            clf_time(now),
            req.method,
            req.path,
            resp.status,
            resp.body.len(),
            req.user_agent
        );
        (self.log)(Stream::Stdout, &line);
        resp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_from_the_tag() {
        let cases = [
            ("nginx:1.14.2", "1.14.2"),
            ("nginx:1.25-alpine", "1.25.0"),
            ("nginx:1.27.3-alpine-slim", "1.27.3"),
            ("nginx", LATEST),
            ("nginx:stable", LATEST),
            ("registry.k8s.io/nginx-slim:0.21", LATEST),
        ];
        for (image, want) in cases {
            assert_eq!(version(&parse_reference(image)), want, "{image}");
        }
    }

    #[test]
    fn config_ports_and_root() {
        let fs = Fs::new(root(&parse_reference("nginx")));
        assert_eq!(read_config(&fs), (vec![80], "/usr/share/nginx/html".into()));
        let conf =
            "server {\n  listen 8080 default_server;\n  listen [::]:8080;\n  root /data/www/;\n}\n";
        fs.write(DEFAULT_CONF_PATH, conf.as_bytes(), false).unwrap();
        assert_eq!(read_config(&fs), (vec![8080], "/data/www".into()));
    }
}
