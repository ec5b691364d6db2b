//! The image table: what a container's image gives it, which is its root tree, its
//! ENTRYPOINT and CMD, and the programs of its own that do what the real ones do.
//!
//! An image reference matches a row by its repository alone: the registry
//! (`docker.io/library/`, `registry.k8s.io/`, `k8s.gcr.io/`…), the tag and the digest are
//! dropped, so `nginx`, `nginx:1.14.2` and `docker.io/library/nginx@sha256:…` are one row (the
//! tag may still choose a release, as nginx's version or ubuntu's `os-release`).
//!
//! The main process's argv follows Docker's rule: `command` if given, else the image's
//! ENTRYPOINT; then `args` if given, else (only when `command` is empty) the image's CMD. When
//! argv\[0\]'s basename is a program of the image ([`builtin`]) it runs; anything else goes to
//! the shell ([`crate::shell::exec_argv`]: scripts, applets, `not found` with 127).
//!
//! | Image (repository) | ENTRYPOINT / CMD | Its own programs |
//! |---|---|---|
//! | `busybox`, `alpine` | – / `sh` | – (the shell exits 0 at once without stdin; a busybox tagged before 1.29 has the old `nslookup`, `shell::applets::nslookup`) |
//! | `ubuntu`, `debian`, `centos`, `fedora` | – / `bash` | – |
//! | `nginx` | `/docker-entrypoint.sh` / `nginx -g 'daemon off;'` | the entrypoint's messages; nginx on 80 serving `/usr/share/nginx/html`, access log on stdout (`nginx.rs`) |
//! | `nginx-slim` (StatefulSet tutorial) | – / `nginx -g 'daemon off;'` | nginx |
//! | `httpd` | – / `httpd-foreground` | Apache on 80 serving `/usr/local/apache2/htdocs` (`httpd.rs`) |
//! | `e2e-test-images/agnhost` | `/agnhost` / `pause` | `liveness`, `netexec`, `serve-hostname`, `pause`, `grpc-health-checking`, `test-webserver`, `porter` (`agnhost.rs`, `netexec.rs`) |
//! | `liveness` (old image) | `/server` / – | agnhost's `liveness`: `/healthz` 200 for 10 s, then 500 |
//! | `goproxy` | `/goproxy` / – | a proxy on 8080 (tcpSocket probes) |
//! | `pause` | `/pause` / – | waits for SIGTERM, exits 0 |
//! | `perl` | – / `perl -de0` | `perl -Mbignum=bpi -wle 'print bpi(N)'` prints π to N digits (the docs' pi Job); other programs exit 2 (`perl.rs`) |
//! | `polinux/stress` | – / `stress` | `stress --vm/--vm-bytes/--cpu/--timeout` sets memory and CPU (`stress.rs`) |
//! | `vish/stress` | `/stress -logtostderr` / – | `-cpus`, `-mem-total`, `-mem-alloc-size`, `-mem-alloc-sleep` |
//! | `hpa-example` (HPA walkthrough) | `docker-php-entrypoint` / `apache2-foreground` | php-apache on 80: `GET /` answers `OK!` for ~7 ms of CPU (`php_apache.rs`) |
//! | anything else | unknown | without a command: answers HTTP 200 on each declared port until SIGTERM, exits 0 |
//!
//! Each row also says what a container of the image uses ([`Footprint`]): its idle CPU and
//! memory (the kubelet adds a small deterministic jitter per container and what the process
//! asks for with `set_cpu`/`set_memory`), and the CPU time one HTTP request costs its
//! servers (charged through [`crate::Host::cpu_sink`] by [`listen`]):
//!
//! | Image | Idle CPU | Idle memory | CPU per request |
//! |---|---|---|---|
//! | `busybox`, `alpine` | 0.1 m | 380 / 420 KiB | – |
//! | `ubuntu`, `debian`, `centos`, `fedora` | 0.1 m | 1.1 MiB | – |
//! | `nginx`, `nginx-slim` | 0.2 m | 3.4 / 2.1 MiB | 0.25 ms |
//! | `httpd` | 1 m | 6.8 MiB | 0.4 ms |
//! | `agnhost` | 0.5 m | 7.5 MiB | 0.3 ms |
//! | `liveness`, `goproxy` | 0.3 m | 3.2 / 4.1 MiB | 0.2 ms |
//! | `pause` | 0 m | 240 KiB | – |
//! | `perl` | 0.1 m | 2.6 MiB | – |
//! | `polinux/stress` | 0 m | 5.3 MiB (the docs' 150M run shows 162856960 bytes) | – |
//! | `vish/stress` | 0 m | 1.9 MiB | – |
//! | `hpa-example` | 0.4 m (an idle pod shows `cpu: 0%/50%`, as the walkthrough) | 10 MiB | 7 ms |
//! | anything else | 0.5 m | 2 MiB | 0.3 ms |
//!
//! A program ended by SIGTERM exits as the real one does: 0 for those that handle it (nginx,
//! httpd, pause), 143 for those that do not (Go servers, stress); agnhost's `pause` exits 2
//! and its `serve-hostname` sleeps 60 s first, as upstream's do. agnhost subcommands not
//! simulated (`dns-suffix`, `webhook`…) serve the declared ports. SIGKILL is the kubelet
//! dropping the future. The runtime's part of the container's files is here too: `run` writes
//! `/etc/hostname` before the process starts.
//!
//! To add an image: a row in [`IMAGES`], its programs and root tree in a file per family.

mod agnhost;
mod generic;
mod httpd;
mod netexec;
mod nginx;
mod perl;
mod php_apache;
mod rootfs;
mod stress;
mod util;

#[cfg(test)]
mod testing;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::fs::Node;
use crate::net::{HttpRequest, HttpResponse, Server};
use crate::{shell, BoxFuture, Container, CpuSink, Fs, Host};
use rootfs::Base;

/// A program of an image: runs `argv` (argv\[0\] the program) in the container.
pub type Builtin =
    for<'a> fn(&'a [String], &'a Container, Fs, &'a mut dyn Host) -> BoxFuture<'a, i32>;

/// An image reference as the table matches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reference<'a> {
    /// The repository without registry or `library/` (`nginx`, `e2e-test-images/agnhost`).
    pub repo: &'a str,
    /// The tag (empty when none was given).
    pub tag: &'a str,
}

/// Split `image` into its repository and tag, dropping registry and digest.
pub fn parse_reference(image: &str) -> Reference<'_> {
    let name = image.split('@').next().unwrap_or("");
    let last_slash = name.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match name[last_slash..].find(':') {
        Some(i) => (&name[..last_slash + i], &name[last_slash + i + 1..]),
        None => (name, ""),
    };
    let name = match name.split_once('/') {
        Some((first, rest)) if first.contains(['.', ':']) || first == "localhost" => rest,
        _ => name,
    };
    let repo = name.strip_prefix("library/").unwrap_or(name);
    Reference { repo, tag }
}

/// What a container of an image uses by itself: the figures the kubelet's usage model starts
/// from (see the table above).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Footprint {
    /// CPU the process burns with nothing to do, in millicores.
    pub idle_millicores: f64,
    /// Memory it holds with nothing to do (binary, libraries, heap), in bytes.
    pub idle_memory: u64,
    /// CPU time one HTTP request costs a server of the image.
    pub request_cpu: Duration,
}

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

const fn footprint(idle_millicores: f64, idle_memory: u64, request_micros: u64) -> Footprint {
    Footprint {
        idle_millicores,
        idle_memory,
        request_cpu: Duration::from_micros(request_micros),
    }
}

/// The footprint of an image the table does not know (a small server).
pub const DEFAULT_FOOTPRINT: Footprint = footprint(0.5, 2 * MIB, 300);

/// One row of the table.
pub struct Image {
    /// Repositories that are this image.
    pub repos: &'static [&'static str],
    pub entrypoint: &'static [&'static str],
    pub cmd: &'static [&'static str],
    /// Its own programs, by basename.
    pub programs: &'static [(&'static str, Builtin)],
    /// Its root tree, for a reference (whose tag may pick a release).
    pub root: fn(&Reference) -> Node,
    /// What its containers use by themselves.
    pub footprint: Footprint,
}

/// The table. Repositories are matched exactly, after [`parse_reference`].
pub static IMAGES: &[Image] = &[
    Image {
        repos: &["busybox"],
        entrypoint: &[],
        cmd: &["sh"],
        programs: &[],
        root: |r| rootfs::base(Base::Busybox, r.tag).build(),
        footprint: footprint(0.1, 380 * KIB, 100),
    },
    Image {
        repos: &["alpine"],
        entrypoint: &[],
        cmd: &["/bin/sh"],
        programs: &[],
        root: |r| rootfs::base(Base::Alpine, r.tag).build(),
        footprint: footprint(0.1, 420 * KIB, 100),
    },
    Image {
        repos: &["ubuntu"],
        entrypoint: &[],
        cmd: &["/bin/bash"],
        programs: &[],
        root: |r| rootfs::base(Base::Ubuntu, r.tag).build(),
        footprint: footprint(0.1, 1126 * KIB, 100),
    },
    Image {
        repos: &["debian"],
        entrypoint: &[],
        cmd: &["bash"],
        programs: &[],
        root: |r| rootfs::base(Base::Debian, r.tag).build(),
        footprint: footprint(0.1, 1126 * KIB, 100),
    },
    Image {
        repos: &["centos", "centos/centos"],
        entrypoint: &[],
        cmd: &["/bin/bash"],
        programs: &[],
        root: |r| rootfs::base(Base::Centos, r.tag).build(),
        footprint: footprint(0.1, 1126 * KIB, 100),
    },
    Image {
        repos: &["fedora"],
        entrypoint: &[],
        cmd: &["/bin/bash"],
        programs: &[],
        root: |r| rootfs::base(Base::Fedora, r.tag).build(),
        footprint: footprint(0.1, 1126 * KIB, 100),
    },
    Image {
        repos: &["nginx"],
        entrypoint: &["/docker-entrypoint.sh"],
        cmd: &["nginx", "-g", "daemon off;"],
        programs: &[
            ("docker-entrypoint.sh", nginx::entrypoint),
            ("nginx", nginx::nginx),
        ],
        root: nginx::root,
        footprint: footprint(0.2, 3482 * KIB, 250),
    },
    Image {
        repos: &["nginx-slim", "google_containers/nginx-slim"],
        entrypoint: &[],
        cmd: &["nginx", "-g", "daemon off;"],
        programs: &[("nginx", nginx::nginx)],
        root: nginx::slim_root,
        footprint: footprint(0.2, 2150 * KIB, 250),
    },
    Image {
        repos: &["httpd"],
        entrypoint: &[],
        cmd: &["httpd-foreground"],
        programs: &[("httpd-foreground", httpd::httpd), ("httpd", httpd::httpd)],
        root: httpd::root,
        footprint: footprint(1.0, 6963 * KIB, 400),
    },
    Image {
        repos: &[
            "e2e-test-images/agnhost",
            "kubernetes-e2e-test-images/agnhost",
            "agnhost",
        ],
        entrypoint: &["/agnhost"],
        cmd: &["pause"],
        programs: &[
            ("agnhost", agnhost::agnhost),
            ("agnhost-2", agnhost::agnhost),
        ],
        root: agnhost::root,
        footprint: footprint(0.5, 7680 * KIB, 300),
    },
    Image {
        repos: &["liveness", "google_containers/liveness"],
        entrypoint: &["/server"],
        cmd: &[],
        programs: &[("server", agnhost::liveness)],
        root: agnhost::liveness_root,
        footprint: footprint(0.3, 3277 * KIB, 200),
    },
    Image {
        repos: &["goproxy", "google_containers/goproxy"],
        entrypoint: &["/goproxy"],
        cmd: &[],
        programs: &[("goproxy", generic::goproxy)],
        root: generic::goproxy_root,
        footprint: footprint(0.3, 4198 * KIB, 200),
    },
    Image {
        repos: &[
            "pause",
            "pause-amd64",
            "google_containers/pause",
            "google_containers/pause-amd64",
        ],
        entrypoint: &["/pause"],
        cmd: &[],
        programs: &[("pause", generic::pause)],
        root: generic::pause_root,
        footprint: footprint(0.0, 240 * KIB, 100),
    },
    Image {
        repos: &["perl"],
        entrypoint: &[],
        cmd: &["perl", "-de0"],
        programs: &[("perl", perl::perl)],
        root: perl::root,
        footprint: footprint(0.1, 2662 * KIB, 100),
    },
    Image {
        repos: &["polinux/stress"],
        entrypoint: &[],
        cmd: &["stress"],
        programs: &[("stress", stress::stress)],
        root: stress::polinux_root,
        footprint: footprint(0.0, STRESS_IDLE_MEMORY, 100),
    },
    Image {
        repos: &["vish/stress"],
        entrypoint: &["/stress", "-logtostderr"],
        cmd: &[],
        programs: &[("stress", stress::vish)],
        root: stress::vish_root,
        footprint: footprint(0.0, 1946 * KIB, 100),
    },
    Image {
        repos: &["hpa-example", "google_containers/hpa-example"],
        entrypoint: &["docker-php-entrypoint"],
        cmd: &["apache2-foreground"],
        programs: &[
            ("docker-php-entrypoint", php_apache::entrypoint),
            ("apache2-foreground", php_apache::apache2),
        ],
        root: php_apache::root,
        footprint: footprint(0.4, 10 * MIB, PHP_REQUEST_MICROS),
    },
];

/// `polinux/stress` besides what its `--vm` workers hold: the docs' "Assign Memory Resources"
/// shows 162856960 bytes for `--vm 1 --vm-bytes 150M`, that is 150 MiB and 5570560 bytes.
const STRESS_IDLE_MEMORY: u64 = 162_856_960 - 150 * MIB;

/// What one `GET /` of php-apache costs (its million `sqrt`), calibrated on the HPA
/// walkthrough: its load generator (`while sleep 0.01; do wget -q -O- http://php-apache;
/// done`) sends about 100 requests a second, that is 0.7 core of demand; one pod (requests
/// 200m, limits 500m) is throttled at its limit, ~250 % of its request; the HPA at 50 % then
/// goes to 5 pods (140m each, 70 %), then 7 (100m each, 50 %), where the docs' run settles.
const PHP_REQUEST_MICROS: u64 = 7_000;

/// The table's row for `image`.
pub fn lookup(image: &str) -> Option<&'static Image> {
    let r = parse_reference(image);
    IMAGES.iter().find(|i| i.repos.contains(&r.repo))
}

/// What a container of `image` uses by itself.
pub fn footprint_of(image: &str) -> Footprint {
    lookup(image).map_or(DEFAULT_FOOTPRINT, |row| row.footprint)
}

/// Start `server` on `port` for a container of `c`'s image, charging each request it answers
/// its image's [`Footprint::request_cpu`] through the host's CPU sink.
pub(crate) fn listen(host: &mut dyn Host, c: &Container, port: u16, server: Arc<dyn Server>) {
    let metered = Metered {
        inner: server,
        cost: footprint_of(&c.image).request_cpu,
        cpu: host.cpu_sink(),
    };
    host.listen(port, Arc::new(metered));
}

/// A server whose answers cost CPU.
struct Metered {
    inner: Arc<dyn Server>,
    cost: Duration,
    cpu: CpuSink,
}

impl Server for Metered {
    fn http(&self, req: &HttpRequest, now: SystemTime) -> HttpResponse {
        (self.cpu)(self.cost);
        self.inner.http(req, now)
    }

    fn grpc_health(&self, service: &str) -> Option<bool> {
        (self.cpu)(self.cost);
        self.inner.grpc_health(service)
    }
}

/// The program `program` (a path's basename, or a full path) of `image`, if the image has one
/// of its own (nginx, agnhost, stress…).
pub fn builtin(image: &str, program: &str) -> Option<Builtin> {
    let name = program.rsplit('/').next().unwrap_or(program);
    let row = lookup(image)?;
    row.programs
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, b)| *b)
}

/// The main process's argv by Docker's ENTRYPOINT/CMD rule; `None` when the command is the
/// entrypoint of an image the table does not know.
pub fn argv(c: &Container) -> Option<Vec<String>> {
    if !c.command.is_empty() {
        return Some(c.command.iter().chain(&c.args).cloned().collect());
    }
    let row = lookup(&c.image)?;
    let entrypoint = row.entrypoint.iter().map(|s| s.to_string());
    if c.args.is_empty() {
        Some(
            entrypoint
                .chain(row.cmd.iter().map(|s| s.to_string()))
                .collect(),
        )
    } else {
        Some(entrypoint.chain(c.args.iter().cloned()).collect())
    }
}

/// Run a container's main process (see [`crate::run_main`]).
pub fn run<'a>(c: &'a Container, fs: Fs, host: &'a mut dyn Host) -> BoxFuture<'a, i32> {
    Box::pin(async move {
        if fs.is_dir("/etc") && !c.hostname.is_empty() {
            let _ = fs.write(
                "/etc/hostname",
                format!("{}\n", c.hostname).as_bytes(),
                false,
            );
        }
        let Some(argv) = argv(c) else {
            return generic::serve_ports(c, host).await;
        };
        let Some(program) = argv.first() else {
            return 0;
        };
        match builtin(&c.image, program) {
            Some(run) => run(&argv, c, fs, host).await,
            None => shell::exec_argv(&argv, c, fs, host).await,
        }
    })
}

/// The root tree of a fresh container of `image`: the table's, or a Debian tree for an image
/// it does not know (most application images are built on one).
pub fn root_tree(image: &str) -> Node {
    let r = parse_reference(image);
    match lookup(image) {
        Some(row) => (row.root)(&r),
        None => rootfs::base(Base::Debian, "").build(),
    }
}
