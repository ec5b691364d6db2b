//! Root trees of the base images: the top-level directories `ls /` shows, the programs in
//! `/bin` that the shell's applets stand for, `/etc/passwd`, `/etc/group` and
//! `/etc/os-release` with the release the image's tag names. `/etc/hosts`,
//! `/etc/resolv.conf` and `/etc/hostname` are not here: the kubelet and the runtime write them.

use crate::fs::Node;

/// What an executable file holds (enough for `cat` to show garbage and `test -x` to pass).
pub const BINARY: &[u8] = b"\x7fELF\x02\x01\x01\0";

/// A tree under construction; parents are created as paths are added.
pub struct Tree(Node);

impl Tree {
    pub fn new() -> Tree {
        Tree(Node::dir())
    }

    fn at(&mut self, path: &str) -> Option<&mut Node> {
        let mut node = &mut self.0;
        for part in crate::fs::split(path) {
            let Node::Dir(entries) = node else {
                return None;
            };
            node = entries.entry(part).or_insert_with(Node::dir);
        }
        Some(node)
    }

    /// Add directories.
    pub fn dirs(mut self, paths: &[&str]) -> Tree {
        for p in paths {
            self.at(p);
        }
        self
    }

    /// Add (or replace) a file.
    pub fn file(mut self, path: &str, data: impl Into<Vec<u8>>) -> Tree {
        if let Some(node) = self.at(path) {
            *node = Node::File(data.into());
        }
        self
    }

    /// Add executables named `names` in directory `dir`.
    pub fn programs(mut self, dir: &str, names: &[&str]) -> Tree {
        for n in names {
            self = self.file(&format!("{dir}/{n}"), BINARY);
        }
        self
    }

    pub fn build(self) -> Node {
        self.0
    }
}

/// The base a root tree starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    /// `FROM scratch`: a static binary and the directories the runtime mounts.
    Scratch,
    Busybox,
    Alpine,
    Debian,
    Ubuntu,
    Centos,
    Fedora,
}

/// The applets busybox links into `/bin` (those a tutorial reaches for).
const BUSYBOX_APPLETS: &[&str] = &[
    "ash", "awk", "basename", "busybox", "cat", "chmod", "chown", "cp", "cut", "date", "df",
    "dirname", "du", "echo", "env", "expr", "false", "find", "free", "grep", "head", "hostname",
    "id", "kill", "ln", "ls", "mkdir", "mount", "mv", "nc", "nslookup", "ping", "printf", "ps",
    "pwd", "rm", "sed", "seq", "sh", "sleep", "sort", "tail", "tee", "test", "top", "touch", "tr",
    "true", "uname", "uniq", "vi", "watch", "wc", "wget", "whoami", "xargs", "yes",
];

/// The coreutils-and-friends a Debian-family image has in `/usr/bin` (no ps, ping, wget or nc).
const GNU_PROGRAMS: &[&str] = &[
    "awk", "basename", "bash", "cat", "chmod", "chown", "cp", "cut", "dash", "date", "df",
    "dirname", "du", "echo", "env", "expr", "false", "find", "grep", "head", "hostname", "id",
    "kill", "ln", "ls", "mkdir", "mount", "mv", "printf", "pwd", "rm", "sed", "seq", "sh", "sleep",
    "sort", "tail", "tee", "test", "touch", "tr", "true", "uname", "uniq", "wc", "whoami", "xargs",
    "yes",
];

const BUSYBOX_PASSWD: &str = "root:x:0:0:root:/root:/bin/sh
daemon:x:1:1:daemon:/usr/sbin:/bin/false
bin:x:2:2:bin:/bin:/bin/false
sys:x:3:3:sys:/dev:/bin/false
sync:x:4:100:sync:/bin:/bin/sync
mail:x:8:8:mail:/var/spool/mail:/bin/false
www-data:x:33:33:www-data:/var/www:/bin/false
operator:x:37:37:Operator:/var:/bin/false
nobody:x:65534:65534:nobody:/home:/bin/false
";

const ALPINE_PASSWD: &str = "root:x:0:0:root:/root:/bin/sh
bin:x:1:1:bin:/bin:/sbin/nologin
daemon:x:2:2:daemon:/sbin:/sbin/nologin
lp:x:4:7:lp:/var/spool/lpd:/sbin/nologin
sync:x:5:0:sync:/sbin:/bin/sync
shutdown:x:6:0:shutdown:/sbin:/sbin/shutdown
halt:x:7:0:halt:/sbin:/sbin/halt
mail:x:8:12:mail:/var/mail:/sbin/nologin
news:x:9:13:news:/usr/lib/news:/sbin/nologin
uucp:x:10:14:uucp:/var/spool/uucppublic:/sbin/nologin
cron:x:16:16:cron:/var/spool/cron:/sbin/nologin
ftp:x:21:21::/var/lib/ftp:/sbin/nologin
sshd:x:22:22:sshd:/dev/null:/sbin/nologin
games:x:35:35:games:/usr/games:/sbin/nologin
ntp:x:123:123:NTP:/var/empty:/sbin/nologin
guest:x:405:100:guest:/dev/null:/sbin/nologin
nobody:x:65534:65534:nobody:/:/sbin/nologin
";

const DEBIAN_PASSWD: &str = "root:x:0:0:root:/root:/bin/bash
daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin
bin:x:2:2:bin:/bin:/usr/sbin/nologin
sys:x:3:3:sys:/dev:/usr/sbin/nologin
sync:x:4:65534:sync:/bin:/bin/sync
games:x:5:60:games:/usr/games:/usr/sbin/nologin
man:x:6:12:man:/var/cache/man:/usr/sbin/nologin
lp:x:7:7:lp:/var/spool/lpd:/usr/sbin/nologin
mail:x:8:8:mail:/var/mail:/usr/sbin/nologin
news:x:9:9:news:/var/spool/news:/usr/sbin/nologin
uucp:x:10:10:uucp:/var/spool/uucp:/usr/sbin/nologin
proxy:x:13:13:proxy:/bin:/usr/sbin/nologin
www-data:x:33:33:www-data:/var/www:/usr/sbin/nologin
backup:x:34:34:backup:/var/backups:/usr/sbin/nologin
list:x:38:38:Mailing List Manager:/var/list:/usr/sbin/nologin
irc:x:39:39:ircd:/run/ircd:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
";

const RHEL_PASSWD: &str = "root:x:0:0:root:/root:/bin/bash
bin:x:1:1:bin:/bin:/sbin/nologin
daemon:x:2:2:daemon:/sbin:/sbin/nologin
adm:x:3:4:adm:/var/adm:/sbin/nologin
lp:x:4:7:lp:/var/spool/lpd:/sbin/nologin
sync:x:5:0:sync:/sbin:/bin/sync
shutdown:x:6:0:shutdown:/sbin:/sbin/shutdown
halt:x:7:0:halt:/sbin:/sbin/halt
mail:x:8:12:mail:/var/spool/mail:/sbin/nologin
operator:x:11:0:operator:/root:/sbin/nologin
games:x:12:100:games:/usr/games:/sbin/nologin
ftp:x:14:50:FTP User:/var/ftp:/sbin/nologin
nobody:x:65534:65534:Kernel Overflow User:/:/sbin/nologin
";

const GROUP: &str = "root:x:0:
daemon:x:1:
bin:x:2:
sys:x:3:
adm:x:4:
tty:x:5:
disk:x:6:
mail:x:8:
www-data:x:33:
users:x:100:
nogroup:x:65534:
";

/// The root tree of `base`, its release picked from the image `tag` when it names one.
pub fn base(base: Base, tag: &str) -> Tree {
    let tag = tag.trim();
    match base {
        Base::Scratch => Tree::new().dirs(&["/dev", "/etc", "/proc", "/sys"]),
        Base::Busybox => Tree::new()
            .dirs(&[
                "/dev",
                "/home",
                "/lib",
                "/lib64",
                "/proc",
                "/root",
                "/sys",
                "/tmp",
                "/usr/sbin",
                "/var/spool/mail",
                "/var/www",
            ])
            .programs("/bin", BUSYBOX_APPLETS)
            .file("/etc/passwd", BUSYBOX_PASSWD)
            .file("/etc/group", GROUP),
        Base::Alpine => {
            let version = alpine_version(tag);
            let branch: Vec<&str> = version.split('.').take(2).collect();
            Tree::new()
                .dirs(&[
                    "/dev", "/home", "/lib", "/media", "/mnt", "/opt", "/proc", "/root", "/run",
                    "/sbin", "/srv", "/sys", "/tmp", "/usr/bin", "/usr/local/bin", "/var",
                ])
                .programs("/bin", BUSYBOX_APPLETS)
                .file("/etc/passwd", ALPINE_PASSWD)
                .file("/etc/group", GROUP)
                .file("/etc/alpine-release", format!("{version}\n"))
                .file(
                    "/etc/os-release",
                    format!(
                        "NAME=\"Alpine Linux\"\nID=alpine\nVERSION_ID={version}\n\
                         PRETTY_NAME=\"Alpine Linux v{}\"\n\
                         HOME_URL=\"https://alpinelinux.org/\"\n\
                         BUG_REPORT_URL=\"https://gitlab.alpinelinux.org/alpine/aports/-/issues\"\n",
                        branch.join(".")
                    ),
                )
        }
        Base::Debian | Base::Ubuntu => {
            let os_release = if base == Base::Debian {
                debian_release(tag)
            } else {
                ubuntu_release(tag)
            };
            gnu_dirs()
                .file("/etc/passwd", DEBIAN_PASSWD)
                .file("/etc/group", GROUP)
                .file("/etc/os-release", os_release)
        }
        Base::Centos | Base::Fedora => {
            let os_release = if base == Base::Centos {
                let v = leading_number(tag).unwrap_or(8);
                let pretty = if v == 7 {
                    "CentOS Linux 7 (Core)".to_string()
                } else {
                    format!("CentOS Linux {v}")
                };
                format!(
                    "NAME=\"CentOS Linux\"\nVERSION=\"{v}\"\nID=\"centos\"\nID_LIKE=\"rhel fedora\"\n\
                     VERSION_ID=\"{v}\"\nPRETTY_NAME=\"{pretty}\"\nHOME_URL=\"https://centos.org/\"\n"
                )
            } else {
                let v = leading_number(tag).unwrap_or(42);
                format!(
                    "NAME=\"Fedora Linux\"\nVERSION=\"{v} (Container Image)\"\nID=fedora\n\
                     VERSION_ID={v}\nPRETTY_NAME=\"Fedora Linux {v} (Container Image)\"\n\
                     HOME_URL=\"https://fedoraproject.org/\"\n"
                )
            };
            gnu_dirs()
                .file("/etc/passwd", RHEL_PASSWD)
                .file("/etc/group", GROUP)
                .file("/etc/os-release", os_release)
        }
    }
}

/// A Debian-family tree (`/bin` merged into `/usr/bin`, shown in both here).
fn gnu_dirs() -> Tree {
    Tree::new()
        .dirs(&[
            "/boot",
            "/dev",
            "/home",
            "/lib",
            "/lib64",
            "/media",
            "/mnt",
            "/opt",
            "/proc",
            "/root",
            "/run",
            "/sbin",
            "/srv",
            "/sys",
            "/tmp",
            "/usr/local/bin",
            "/usr/sbin",
            "/var",
        ])
        .programs("/bin", GNU_PROGRAMS)
        .programs("/usr/bin", GNU_PROGRAMS)
}

fn leading_number(tag: &str) -> Option<u32> {
    let n = tag.find(|c: char| !c.is_ascii_digit()).unwrap_or(tag.len());
    tag[..n].parse().ok()
}

/// `3.20.3` for tag `3.20.3`, `3.20.0` for `3.20`, the latest release otherwise.
fn alpine_version(tag: &str) -> String {
    let parts: Vec<&str> = tag.split('.').collect();
    let numeric = parts
        .iter()
        .all(|p| !p.is_empty() && p.parse::<u32>().is_ok());
    match (numeric, parts.len()) {
        (true, 3) => tag.to_string(),
        (true, 2) => format!("{tag}.0"),
        _ => "3.22.2".into(),
    }
}

fn debian_release(tag: &str) -> String {
    const RELEASES: &[(u32, &str)] = &[
        (10, "buster"),
        (11, "bullseye"),
        (12, "bookworm"),
        (13, "trixie"),
    ];
    let (v, name) = RELEASES
        .iter()
        .find(|(v, name)| leading_number(tag) == Some(*v) || tag.starts_with(name))
        .copied()
        .unwrap_or((13, "trixie"));
    format!(
        "PRETTY_NAME=\"Debian GNU/Linux {v} ({name})\"\nNAME=\"Debian GNU/Linux\"\n\
         VERSION_ID=\"{v}\"\nVERSION=\"{v} ({name})\"\nVERSION_CODENAME={name}\nID=debian\n\
         HOME_URL=\"https://www.debian.org/\"\nSUPPORT_URL=\"https://www.debian.org/support\"\n\
         BUG_REPORT_URL=\"https://bugs.debian.org/\"\n"
    )
}

fn ubuntu_release(tag: &str) -> String {
    const RELEASES: &[(&str, &str, &str, &str)] = &[
        ("20.04", "20.04.6", "focal", "Focal Fossa"),
        ("22.04", "22.04.5", "jammy", "Jammy Jellyfish"),
        ("24.04", "24.04.3", "noble", "Noble Numbat"),
    ];
    let (id, point, code, name) = RELEASES
        .iter()
        .find(|(id, _, code, _)| tag.starts_with(id) || tag.starts_with(code))
        .copied()
        .unwrap_or(RELEASES[2]);
    format!(
        "PRETTY_NAME=\"Ubuntu {point} LTS\"\nNAME=\"Ubuntu\"\nVERSION_ID=\"{id}\"\n\
         VERSION=\"{point} LTS ({name})\"\nVERSION_CODENAME={code}\nID=ubuntu\nID_LIKE=debian\n\
         HOME_URL=\"https://www.ubuntu.com/\"\nSUPPORT_URL=\"https://help.ubuntu.com/\"\n\
         BUG_REPORT_URL=\"https://bugs.launchpad.net/ubuntu/\"\nUBUNTU_CODENAME={code}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Fs;

    fn pretty_name(fs: &Fs) -> String {
        let text = String::from_utf8(fs.read("/etc/os-release").unwrap()).unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix("PRETTY_NAME="))
            .unwrap()
            .trim_matches('"')
            .to_string()
    }

    #[test]
    fn os_release_follows_the_tag() {
        let cases = [
            (Base::Alpine, "3.20", "Alpine Linux v3.20"),
            (Base::Alpine, "latest", "Alpine Linux v3.22"),
            (
                Base::Debian,
                "bookworm-slim",
                "Debian GNU/Linux 12 (bookworm)",
            ),
            (Base::Debian, "11", "Debian GNU/Linux 11 (bullseye)"),
            (Base::Debian, "", "Debian GNU/Linux 13 (trixie)"),
            (Base::Ubuntu, "22.04", "Ubuntu 22.04.5 LTS"),
            (Base::Ubuntu, "latest", "Ubuntu 24.04.3 LTS"),
            (Base::Centos, "7", "CentOS Linux 7 (Core)"),
            (Base::Fedora, "40", "Fedora Linux 40 (Container Image)"),
        ];
        for (b, tag, want) in cases {
            let fs = Fs::new(base(b, tag).build());
            assert_eq!(pretty_name(&fs), want, "{b:?}:{tag}");
        }
    }

    #[test]
    fn busybox_has_what_ls_shows() {
        let fs = Fs::new(base(Base::Busybox, "").build());
        let names: Vec<String> = fs.list("/").unwrap().into_iter().map(|e| e.name).collect();
        let want = "bin dev etc home lib lib64 proc root sys tmp usr var";
        assert_eq!(names.join(" "), want);
        assert!(fs.exists("/bin/sh"));
        assert!(!fs.exists("/etc/os-release"));
        assert!(!fs.exists("/etc/hosts"));
    }
}
