//! The `httpd` image (Apache): `httpd-foreground` serves `/usr/local/apache2/htdocs` on the
//! ports `httpd.conf` says `Listen` to (80), logs each request in the common log format to
//! stdout and its notices to stderr, and stops gracefully (the image's STOPSIGNAL is SIGWINCH).

use std::sync::Arc;
use std::time::SystemTime;

use super::rootfs::{self, Base};
use super::util::{apache_time, clf_time, content_type, own_ip, percent_decode, split_query};
use super::{parse_reference, Reference};
use crate::fs::{Fs, FsError, Node};
use crate::net::{HttpRequest, HttpResponse, Server};
use crate::{BoxFuture, Container, Host, LogSink, Signal, Stream};

const PREFIX: &str = "/usr/local/apache2";
pub const IT_WORKS: &str = "<html><body><h1>It works!</h1></body></html>\n";
const LATEST: &str = "2.4.65";
const HTTPD_CONF: &str = "# A short httpd.conf: what the simulated httpd reads of it.
ServerRoot \"/usr/local/apache2\"
Listen 80
ServerAdmin you@example.com
DocumentRoot \"/usr/local/apache2/htdocs\"
<Directory \"/usr/local/apache2/htdocs\">
    Options Indexes FollowSymLinks
    AllowOverride None
    Require all granted
</Directory>
DirectoryIndex index.html
ErrorLog /proc/self/fd/2
LogLevel warn
LogFormat \"%h %l %u %t \\\"%r\\\" %>s %b\" common
CustomLog /proc/self/fd/1 common
";

/// The root tree: Debian with Apache under `/usr/local/apache2`.
pub fn root(_r: &Reference) -> Node {
    rootfs::base(Base::Debian, "")
        .file(&format!("{PREFIX}/htdocs/index.html"), IT_WORKS)
        .file(&format!("{PREFIX}/conf/httpd.conf"), HTTPD_CONF)
        .programs(&format!("{PREFIX}/bin"), &["httpd", "apachectl"])
        .programs("/usr/local/bin", &["httpd-foreground"])
        .dirs(&[&format!("{PREFIX}/logs")])
        .build()
}

fn version(r: &Reference) -> String {
    let numeric = r.tag.split('-').next().unwrap_or("");
    let parts: Vec<&str> = numeric.split('.').collect();
    if parts.len() == 3 && parts.iter().all(|p| p.parse::<u32>().is_ok()) {
        numeric.to_string()
    } else {
        LATEST.into()
    }
}

/// `Listen` ports and the `DocumentRoot` of `httpd.conf`.
fn read_config(fs: &Fs) -> (Vec<u16>, String) {
    let text = fs
        .read(&format!("{PREFIX}/conf/httpd.conf"))
        .unwrap_or_default();
    let mut ports = Vec::new();
    let mut root = format!("{PREFIX}/htdocs");
    for line in String::from_utf8_lossy(&text).lines() {
        let mut words = line.split_whitespace();
        match (words.next(), words.next()) {
            (Some("Listen"), Some(addr)) => {
                let port = addr.rsplit(':').next().unwrap_or(addr);
                ports.extend(port.parse::<u16>().ok());
            }
            (Some("DocumentRoot"), Some(dir)) => root = dir.trim_matches('"').to_string(),
            _ => {}
        }
    }
    if ports.is_empty() {
        ports.push(80);
    }
    (ports, root.trim_end_matches('/').to_string())
}

/// `httpd-foreground` and `httpd -DFOREGROUND`.
pub fn httpd<'a>(
    argv: &'a [String],
    c: &'a Container,
    fs: Fs,
    host: &'a mut dyn Host,
) -> BoxFuture<'a, i32> {
    Box::pin(async move {
        let v = version(&parse_reference(&c.image));
        let args = &argv[1.min(argv.len())..];
        if args.iter().any(|a| a == "-v") {
            host.write(
                Stream::Stdout,
                &format!(
                    "Server version: Apache/{v} (Unix)\nServer built:   Jul 23 2025 00:00:00\n"
                ),
            );
            return 0;
        }
        let foreground = argv[0].ends_with("httpd-foreground")
            || args
                .iter()
                .any(|a| a == "-DFOREGROUND" || a == "FOREGROUND");
        if !foreground {
            // httpd detaches and the container's process is done.
            return 0;
        }
        let ip = own_ip(&fs, &c.hostname).unwrap_or_else(|| "127.0.0.1".into());
        let fqdn = format!(
            "AH00558: httpd: Could not reliably determine the server's fully qualified domain \
             name, using {ip}. Set the 'ServerName' directive globally to suppress this message\n"
        );
        host.write(Stream::Stderr, &fqdn);
        host.write(Stream::Stderr, &fqdn);
        let notice = |host: &mut dyn Host, module: &str, msg: &str| {
            let t = apache_time(host.now());
            let line = format!("[{t}] [{module}:notice] [pid 1:tid 1] {msg}\n");
            host.write(Stream::Stderr, &line);
        };
        notice(
            host,
            "mpm_event",
            &format!("AH00489: Apache/{v} (Unix) configured -- resuming normal operations"),
        );
        notice(host, "core", "AH00094: Command line: 'httpd -D FOREGROUND'");
        let (ports, root) = read_config(&fs);
        let server = Arc::new(Httpd {
            fs,
            root,
            log: host.log_sink(),
        });
        for p in ports {
            super::listen(host, c, p, server.clone());
        }
        while host.wait_signal(None).await != Some(Signal::Term) {}
        notice(
            host,
            "mpm_event",
            "AH00492: caught SIGWINCH, shutting down gracefully",
        );
        0
    })
}

struct Httpd {
    fs: Fs,
    root: String,
    log: LogSink,
}

fn page(status: u16, title: &str, text: &str) -> HttpResponse {
    let body = format!(
        "<!DOCTYPE HTML PUBLIC \"-//IETF//DTD HTML 2.0//EN\">\n<html><head>\n\
         <title>{status} {title}</title>\n</head><body>\n<h1>{title}</h1>\n<p>{text}</p>\n</body></html>\n"
    );
    HttpResponse::new(status, "text/html; charset=iso-8859-1", body)
}

impl Httpd {
    fn answer(&self, req: &HttpRequest) -> HttpResponse {
        let (path, _) = split_query(&req.path);
        let path = percent_decode(path);
        let norm = crate::fs::absolute("/", &path);
        let file = format!("{}{}", self.root, if norm == "/" { "" } else { &norm });
        match self.fs.read(&file) {
            Ok(body) => HttpResponse::new(200, content_type(&file), body),
            Err(FsError::IsADirectory) if !path.ends_with('/') => {
                let to = format!("http://{}{path}/", req.host);
                let mut r = page(
                    301,
                    "Moved Permanently",
                    &format!("The document has moved <a href=\"{to}\">here</a>."),
                );
                r.headers.push(("Location".into(), to));
                r
            }
            Err(FsError::IsADirectory) => match self.fs.read(&format!("{file}/index.html")) {
                Ok(body) => HttpResponse::new(200, "text/html", body),
                Err(_) => self.listing(&norm, &file),
            },
            Err(_) => page(
                404,
                "Not Found",
                "The requested URL was not found on this server.",
            ),
        }
    }

    /// `Options Indexes`: the directory's listing.
    fn listing(&self, url: &str, dir: &str) -> HttpResponse {
        let mut body = format!(
            "<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 3.2 Final//EN\">\n<html>\n <head>\n  \
             <title>Index of {url}</title>\n </head>\n <body>\n<h1>Index of {url}</h1>\n<ul>"
        );
        if url != "/" {
            body.push_str("<li><a href=\"/\"> Parent Directory</a></li>\n");
        }
        for e in self.fs.list(dir).unwrap_or_default() {
            let name = if e.is_dir {
                format!("{}/", e.name)
            } else {
                e.name
            };
            body.push_str(&format!("<li><a href=\"{name}\"> {name}</a></li>\n"));
        }
        body.push_str("</ul>\n</body></html>\n");
        HttpResponse::new(200, "text/html;charset=ISO-8859-1", body)
    }
}

impl Server for Httpd {
    fn http(&self, req: &HttpRequest, now: SystemTime) -> HttpResponse {
        let mut resp = self.answer(req);
        if req.method == "HEAD" {
            resp.body.clear();
        }
        let size = match resp.body.len() {
            0 => "-".to_string(),
            n => n.to_string(),
        };
        let line = format!(
            "{} - - [{}] \"{} {} HTTP/1.1\" {} {size}\n",
            req.remote_ip,
            clf_time(now),
            req.method,
            req.path,
            resp.status
        );
        (self.log)(Stream::Stdout, &line);
        resp
    }
}
