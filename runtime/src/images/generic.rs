//! Small programs: the `pause` image, `goproxy` (the tcpSocket-probe example), and what a
//! container of an image the table does not know runs: it answers on its declared ports until
//! it is stopped.

use std::sync::Arc;
use std::time::SystemTime;

use super::rootfs::{self, Base};
use super::Reference;
use crate::fs::{Fs, Node};
use crate::net::{HttpRequest, HttpResponse, Server};
use crate::{BoxFuture, Container, Host, Signal, Stream};

/// Exit code of a process that SIGTERM ends without a handler (128 + 15), as most Go
/// programs do.
pub const EXIT_TERMINATED: i32 = 143;

/// Wait until the container is stopped.
pub async fn until_term(host: &mut dyn Host) {
    while host.wait_signal(None).await != Some(Signal::Term) {}
}

/// A static binary in an otherwise empty image.
pub fn scratch_with(binary: &str) -> Node {
    rootfs::base(Base::Scratch, "")
        .file(binary, rootfs::BINARY)
        .build()
}

pub fn pause_root(_r: &Reference) -> Node {
    scratch_with("/pause")
}

pub fn goproxy_root(_r: &Reference) -> Node {
    scratch_with("/goproxy")
}

/// `/pause`: sleeps until a signal, then says so and exits 0.
pub fn pause<'a>(
    argv: &'a [String],
    _c: &'a Container,
    _fs: Fs,
    host: &'a mut dyn Host,
) -> BoxFuture<'a, i32> {
    Box::pin(async move {
        if argv.iter().skip(1).any(|a| a == "-v") {
            host.write(Stream::Stdout, "pause.c v3.10\n");
            return 0;
        }
        until_term(host).await;
        host.write(Stream::Stderr, "Shutting down, got signal: Terminated\n");
        0
    })
}

/// `/goproxy`: an HTTP proxy on 8080.
pub fn goproxy<'a>(
    _argv: &'a [String],
    c: &'a Container,
    _fs: Fs,
    host: &'a mut dyn Host,
) -> BoxFuture<'a, i32> {
    Box::pin(async move {
        super::listen(host, c, 8080, Arc::new(GoProxy));
        until_term(host).await;
        EXIT_TERMINATED
    })
}

struct GoProxy;

impl Server for GoProxy {
    fn http(&self, req: &HttpRequest, _now: SystemTime) -> HttpResponse {
        if req.path.starts_with("http://") {
            // A proxy request: the simulated network has no outside to forward to.
            return HttpResponse::new(502, "text/plain; charset=utf-8", "Bad Gateway\n");
        }
        HttpResponse::new(
            500,
            "text/plain; charset=utf-8",
            "This is a proxy server. Does not respond to non-proxy requests.\n",
        )
    }
}

/// An image the table does not know, started without a command: its own entrypoint would
/// serve, so it answers any HTTP request on each declared port, and exits 0 when stopped.
pub async fn serve_ports(c: &Container, host: &mut dyn Host) -> i32 {
    let server = Arc::new(AnyRequest);
    for &p in &c.ports {
        super::listen(host, c, p, server.clone());
    }
    until_term(host).await;
    0
}

struct AnyRequest;

impl Server for AnyRequest {
    fn http(&self, _req: &HttpRequest, _now: SystemTime) -> HttpResponse {
        HttpResponse::new(200, "text/plain; charset=utf-8", "OK\n")
    }
}
