//! `registry.k8s.io/hpa-example`, the php-apache server of the "HorizontalPodAutoscaler
//! Walkthrough": `php:5-apache` with an `index.php` that spins a million `sqrt` and prints
//! `OK!`. `docker-php-entrypoint` runs `apache2-foreground`, which serves `/` (and
//! `/index.php`) on port 80, logs each request in the combined format to stdout and its
//! notices to stderr, and stops on SIGTERM. What a request costs in CPU is the image's
//! [`super::Footprint::request_cpu`], charged by [`super::listen`].

use std::sync::Arc;
use std::time::SystemTime;

use super::rootfs::{self, Base};
use super::util::{apache_time, clf_time, own_ip, split_query};
use super::Reference;
use crate::fs::{Fs, Node};
use crate::net::{HttpRequest, HttpResponse, Server};
use crate::{shell, BoxFuture, Container, Host, LogSink, Signal, Stream};

const APACHE: &str = "Apache/2.4.10 (Debian)";
const PHP: &str = "PHP/5.6.30";
const DOC_ROOT: &str = "/var/www/html";
/// The walkthrough's `index.php`.
const INDEX_PHP: &str = "<?php
  $x = 0.0001;
  for ($i = 0; $i <= 1000000; $i++) {
    $x += sqrt($x);
  }
  echo \"OK!\";
?>
";
/// What Apache adds to the body in `%O` (the bytes sent, headers included) for `OK!`.
const HEADER_BYTES: usize = 190;

/// Debian with Apache, PHP and the walkthrough's page.
pub fn root(_r: &Reference) -> Node {
    rootfs::base(Base::Debian, "")
        .file(&format!("{DOC_ROOT}/index.php"), INDEX_PHP)
        .programs(
            "/usr/local/bin",
            &["docker-php-entrypoint", "apache2-foreground", "php"],
        )
        .programs("/usr/sbin", &["apache2"])
        .dirs(&["/etc/apache2/conf-enabled", "/var/log/apache2"])
        .build()
}

/// `docker-php-entrypoint`: options alone go to `apache2-foreground`; anything else runs.
pub fn entrypoint<'a>(
    argv: &'a [String],
    c: &'a Container,
    fs: Fs,
    host: &'a mut dyn Host,
) -> BoxFuture<'a, i32> {
    Box::pin(async move {
        let rest = &argv[1.min(argv.len())..];
        let argv: Vec<String> = match rest.first() {
            None => return 0,
            Some(a) if a.starts_with('-') => std::iter::once("apache2-foreground".to_string())
                .chain(rest.iter().cloned())
                .collect(),
            Some(_) => rest.to_vec(),
        };
        match super::builtin(&c.image, &argv[0]) {
            Some(b) => b(&argv, c, fs, host).await,
            None => shell::exec_argv(&argv, c, fs, host).await,
        }
    })
}

/// `apache2-foreground`.
pub fn apache2<'a>(
    _argv: &'a [String],
    c: &'a Container,
    fs: Fs,
    host: &'a mut dyn Host,
) -> BoxFuture<'a, i32> {
    Box::pin(async move {
        let ip = own_ip(&fs, &c.hostname).unwrap_or_else(|| "127.0.0.1".into());
        let fqdn = format!(
            "AH00558: apache2: Could not reliably determine the server's fully qualified domain \
             name, using {ip}. Set the 'ServerName' directive globally to suppress this message\n"
        );
        host.write(Stream::Stderr, &fqdn);
        host.write(Stream::Stderr, &fqdn);
        let notice = |host: &mut dyn Host, module: &str, msg: &str| {
            let line = format!(
                "[{}] [{module}:notice] [pid 1] {msg}\n",
                apache_time(host.now())
            );
            host.write(Stream::Stderr, &line);
        };
        notice(
            host,
            "mpm_prefork",
            &format!("AH00163: {APACHE} {PHP} configured -- resuming normal operations"),
        );
        notice(
            host,
            "core",
            "AH00094: Command line: 'apache2 -D FOREGROUND'",
        );
        let server = Arc::new(PhpApache {
            fs,
            log: host.log_sink(),
        });
        super::listen(host, c, 80, server);
        while host.wait_signal(None).await != Some(Signal::Term) {}
        notice(
            host,
            "mpm_prefork",
            "AH00169: caught SIGTERM, shutting down",
        );
        0
    })
}

struct PhpApache {
    fs: Fs,
    log: LogSink,
}

impl PhpApache {
    fn answer(&self, req: &HttpRequest) -> HttpResponse {
        let (path, _) = split_query(&req.path);
        let php =
            matches!(path, "/" | "/index.php") && self.fs.exists(&format!("{DOC_ROOT}/index.php"));
        if php {
            let mut r = HttpResponse::new(200, "text/html; charset=UTF-8", "OK!");
            r.headers.push(("X-Powered-By".into(), PHP.into()));
            return r;
        }
        let body = format!(
            "<!DOCTYPE HTML PUBLIC \"-//IETF//DTD HTML 2.0//EN\">\n<html><head>\n\
             <title>404 Not Found</title>\n</head><body>\n<h1>Not Found</h1>\n\
             <p>The requested URL {path} was not found on this server.</p>\n<hr>\n\
             <address>{APACHE} Server at {} Port 80</address>\n</body></html>\n",
            req.host
        );
        HttpResponse::new(404, "text/html; charset=iso-8859-1", body)
    }
}

impl Server for PhpApache {
    fn http(&self, req: &HttpRequest, now: SystemTime) -> HttpResponse {
        let mut resp = self.answer(req);
        resp.headers
            .insert(0, ("Server".into(), APACHE.to_string()));
        if req.method == "HEAD" {
            resp.body.clear();
        }
        let line = format!(
            "{} - - [{}] \"{} {} HTTP/1.1\" {} {} \"-\" \"{}\"\n",
            req.remote_ip,
            clf_time(now),
            req.method,
            req.path,
            resp.status,
            resp.body.len() + HEADER_BYTES,
            req.user_agent
        );
        (self.log)(Stream::Stdout, &line);
        resp
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::testing::{container, run, FakeHost};
    use super::super::{argv, footprint_of, DEFAULT_FOOTPRINT};
    use crate::Stream;

    #[test]
    fn php_apache_answers_ok_and_logs_as_apache() {
        let c = container("registry.k8s.io/hpa-example", &[], &[]);
        assert_eq!(
            argv(&c).unwrap(),
            ["docker-php-entrypoint", "apache2-foreground"]
        );
        let mut host = FakeHost::new().term_at(Duration::from_secs(60));
        assert_eq!(run(&c, None, &mut host), 0);
        let stderr = host.text(Stream::Stderr);
        assert!(stderr.contains("AH00163: Apache/2.4.10 (Debian) PHP/5.6.30 configured"));
        assert!(stderr.ends_with("AH00169: caught SIGTERM, shutting down\n"));
        let cases: &[(&str, u16, &str)] = &[
            ("/", 200, "OK!"),
            ("/index.php?x=1", 200, "OK!"),
            ("/missing", 404, "The requested URL /missing was not found"),
        ];
        for (path, status, body) in cases {
            let r = host.get(80, path, Duration::from_secs(1));
            let text = String::from_utf8(r.body).unwrap();
            assert_eq!(r.status, *status, "{path}");
            assert!(text.contains(body), "{path}: {text}");
        }
        let stdout = host.text(Stream::Stdout);
        assert!(
            stdout.starts_with(
                "10.244.0.1 - - [25/Nov/2026:00:36:23 +0000] \"GET / HTTP/1.1\" 200 193 \"-\" \"kube-probe/1.32\"\n"
            ),
            "{stdout}"
        );
    }

    /// Each answer charges the image's per-request CPU to the container.
    #[test]
    fn requests_are_charged_by_image() {
        let rows: &[(&str, &[&str], u16, Duration)] = &[
            ("hpa-example", &[], 80, Duration::from_millis(7)),
            ("nginx", &[], 80, Duration::from_micros(250)),
            ("httpd", &[], 80, Duration::from_micros(400)),
            (
                "registry.k8s.io/e2e-test-images/agnhost:2.40",
                &["netexec"],
                8080,
                Duration::from_micros(300),
            ),
        ];
        for (image, args, port, cost) in rows {
            let c = container(image, &[], args);
            let mut host = FakeHost::new().term_at(Duration::from_secs(60));
            run(&c, None, &mut host);
            for _ in 0..10 {
                host.get(*port, "/", Duration::from_secs(1));
            }
            assert_eq!(*host.charged.lock().unwrap(), *cost * 10, "{image}");
            assert_eq!(footprint_of(image).request_cpu, *cost, "{image}");
        }
        assert_eq!(footprint_of("myapp:v1"), DEFAULT_FOOTPRINT);
        assert_eq!(footprint_of("polinux/stress").idle_memory, 5_570_560);
    }
}
