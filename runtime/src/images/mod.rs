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
//! | anything else | unknown | without a command: answers HTTP 200 on each declared port until SIGTERM, exits 0 |
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
mod rootfs;
mod stress;
mod util;

#[cfg(test)]
mod testing;
#[cfg(test)]
mod tests;

use crate::fs::Node;
use crate::{shell, BoxFuture, Container, Fs, Host};
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
}

/// The table. Repositories are matched exactly, after [`parse_reference`].
pub static IMAGES: &[Image] = &[
    Image {
        repos: &["busybox"],
        entrypoint: &[],
        cmd: &["sh"],
        programs: &[],
        root: |r| rootfs::base(Base::Busybox, r.tag).build(),
    },
    Image {
        repos: &["alpine"],
        entrypoint: &[],
        cmd: &["/bin/sh"],
        programs: &[],
        root: |r| rootfs::base(Base::Alpine, r.tag).build(),
    },
    Image {
        repos: &["ubuntu"],
        entrypoint: &[],
        cmd: &["/bin/bash"],
        programs: &[],
        root: |r| rootfs::base(Base::Ubuntu, r.tag).build(),
    },
    Image {
        repos: &["debian"],
        entrypoint: &[],
        cmd: &["bash"],
        programs: &[],
        root: |r| rootfs::base(Base::Debian, r.tag).build(),
    },
    Image {
        repos: &["centos", "centos/centos"],
        entrypoint: &[],
        cmd: &["/bin/bash"],
        programs: &[],
        root: |r| rootfs::base(Base::Centos, r.tag).build(),
    },
    Image {
        repos: &["fedora"],
        entrypoint: &[],
        cmd: &["/bin/bash"],
        programs: &[],
        root: |r| rootfs::base(Base::Fedora, r.tag).build(),
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
    },
    Image {
        repos: &["nginx-slim", "google_containers/nginx-slim"],
        entrypoint: &[],
        cmd: &["nginx", "-g", "daemon off;"],
        programs: &[("nginx", nginx::nginx)],
        root: nginx::slim_root,
    },
    Image {
        repos: &["httpd"],
        entrypoint: &[],
        cmd: &["httpd-foreground"],
        programs: &[("httpd-foreground", httpd::httpd), ("httpd", httpd::httpd)],
        root: httpd::root,
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
    },
    Image {
        repos: &["liveness", "google_containers/liveness"],
        entrypoint: &["/server"],
        cmd: &[],
        programs: &[("server", agnhost::liveness)],
        root: agnhost::liveness_root,
    },
    Image {
        repos: &["goproxy", "google_containers/goproxy"],
        entrypoint: &["/goproxy"],
        cmd: &[],
        programs: &[("goproxy", generic::goproxy)],
        root: generic::goproxy_root,
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
    },
    Image {
        repos: &["perl"],
        entrypoint: &[],
        cmd: &["perl", "-de0"],
        programs: &[("perl", perl::perl)],
        root: perl::root,
    },
    Image {
        repos: &["polinux/stress"],
        entrypoint: &[],
        cmd: &["stress"],
        programs: &[("stress", stress::stress)],
        root: stress::polinux_root,
    },
    Image {
        repos: &["vish/stress"],
        entrypoint: &["/stress", "-logtostderr"],
        cmd: &[],
        programs: &[("stress", stress::vish)],
        root: stress::vish_root,
    },
];

/// The table's row for `image`.
pub fn lookup(image: &str) -> Option<&'static Image> {
    let r = parse_reference(image);
    IMAGES.iter().find(|i| i.repos.contains(&r.repo))
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
