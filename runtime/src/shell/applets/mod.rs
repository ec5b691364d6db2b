//! busybox's applets: the programs every image with a shell has, run as processes of their
//! own ([`Proc`]) with busybox's output and messages. Files, text and network tools live in
//! their own files; the small ones are here.

mod files;
mod net;
mod nslookup;
mod test;
mod text;

use std::time::Duration;

use super::io::Proc;
use crate::BoxFuture;

/// The applets, by name.
pub(super) const NAMES: [&str; 56] = [
    "sleep", "echo", "printf", "cat", "touch", "rm", "mkdir", "rmdir", "ls", "pwd", "date",
    "hostname", "env", "printenv", "true", "false", "test", "[", "wc", "head", "tail", "grep",
    "seq", "expr", "basename", "dirname", "id", "whoami", "uname", "tee", "cp", "mv", "ln",
    "chmod", "chown", "chgrp", "nc", "wget", "curl", "nslookup", "busybox", "yes", "sync",
    "usleep", "stat", "which", "sort", "uniq", "tr", "cut", "nproc", "free", "ps", "df", "xargs",
    "timeout",
];

/// Run the applet `name` with `argv` (`argv[0]` as typed); `None` when there is none.
pub(super) fn run<'a>(
    p: &'a mut Proc,
    name: &'a str,
    argv: &'a [String],
) -> BoxFuture<'a, Option<i32>> {
    Box::pin(async move {
        let args = &argv[1..];
        Some(match name {
            "true" | "sync" | "chgrp" => 0,
            "false" => 1,
            "sleep" => sleep(p, args).await,
            "usleep" => {
                let us: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(0);
                p.sys.sleep(Duration::from_micros(us)).await;
                0
            }
            "echo" => echo(p, args),
            "pwd" => {
                p.out(&format!("{}\n", p.cwd));
                0
            }
            "hostname" => {
                p.out(&format!("{}\n", p.c.hostname));
                0
            }
            "whoami" => {
                p.out("root\n");
                0
            }
            "id" => id(p, args),
            "uname" => uname(p, args),
            "nproc" => {
                p.out("2\n");
                0
            }
            "env" => return env(p, args).await,
            "printenv" => {
                if args.is_empty() {
                    return env(p, args).await;
                }
                let mut status = 0;
                for a in args {
                    match p.getenv(a).map(str::to_string) {
                        Some(v) => p.out(&format!("{v}\n")),
                        None => status = 1,
                    }
                }
                status
            }
            "busybox" => {
                if args.is_empty() || args[0] == "--help" {
                    p.out("BusyBox v1.37.0 (2024-09-26 21:31:42 UTC) multi-call binary.\n");
                    return Some(0);
                }
                if args[0] == "--list" {
                    p.out(&NAMES.iter().map(|n| format!("{n}\n")).collect::<String>());
                    return Some(0);
                }
                let a = args[0].clone();
                match run(p, &a, args).await {
                    Some(code) => code,
                    None => {
                        p.err(&format!("{a}: applet not found\n"));
                        127
                    }
                }
            }
            "yes" => {
                // Endless output is not simulated: a screenful, as a pipe's reader would take.
                let line = if args.is_empty() {
                    "y".to_string()
                } else {
                    args.join(" ")
                };
                p.out(&format!("{line}\n").repeat(1000));
                0
            }
            "timeout" => {
                let rest: Vec<String> = args
                    .iter()
                    .skip_while(|a| a.starts_with('-'))
                    .skip(1)
                    .cloned()
                    .collect();
                if rest.is_empty() {
                    return Some(1);
                }
                let n = rest[0].clone();
                return run(p, &n, &rest).await;
            }
            "which" => {
                let mut status = 0;
                for a in args {
                    if NAMES.contains(&a.as_str()) || matches!(a.as_str(), "sh" | "ash") {
                        p.out(&format!("/bin/{a}\n"));
                    } else {
                        status = 1;
                    }
                }
                status
            }
            "ps" => {
                p.out("PID   USER     TIME  COMMAND\n    1 root      0:00 sh\n");
                0
            }
            "free" => {
                p.out("              total        used        free      shared  buff/cache   available\nMem:        8039408      512000     7000000           0      527408     7300000\nSwap:             0           0           0\n");
                0
            }
            _ => {
                if let Some(code) = files::run(p, name, args).await {
                    return Some(code);
                }
                if let Some(code) = text::run(p, name, args).await {
                    return Some(code);
                }
                return net::run(p, name, args).await;
            }
        })
    })
}

/// Seconds of a `sleep` argument (`1`, `0.5`, `2m`, `1h`, `inf`).
fn duration(arg: &str) -> Option<f64> {
    if arg.starts_with("inf") {
        return Some(f64::INFINITY);
    }
    let (num, mult) = match arg.chars().last()? {
        's' => (&arg[..arg.len() - 1], 1.0),
        'm' => (&arg[..arg.len() - 1], 60.0),
        'h' => (&arg[..arg.len() - 1], 3600.0),
        'd' => (&arg[..arg.len() - 1], 86400.0),
        _ => (arg, 1.0),
    };
    let n: f64 = num.parse().ok()?;
    (n >= 0.0 && n.is_finite()).then_some(n * mult)
}

async fn sleep(p: &mut Proc, args: &[String]) -> i32 {
    if args.is_empty() {
        p.err("BusyBox v1.37.0 multi-call binary.\n\nUsage: sleep [N]...\n");
        return 1;
    }
    let mut total = 0.0;
    for a in args {
        match duration(a) {
            Some(s) => total += s,
            None => {
                p.err(&format!("sleep: invalid number '{a}'\n"));
                return 1;
            }
        }
    }
    if total > 1e10 {
        // Forever: nothing to wake up for.
        p.sys.wait(Vec::new(), false, None).await;
        return 0;
    }
    p.sys.sleep(Duration::from_secs_f64(total)).await;
    0
}

/// `echo`'s and `printf`'s backslash escapes; `false` when `\c` ended the output.
pub(super) fn unescape(s: &str, out: &mut String) -> bool {
    let cs: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        i += 1;
        if c != '\\' || i >= cs.len() {
            out.push(c);
            continue;
        }
        let e = cs[i];
        i += 1;
        match e {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'f' => out.push('\x0c'),
            'v' => out.push('\x0b'),
            'e' => out.push('\x1b'),
            '\\' => out.push('\\'),
            'c' => return false,
            '0'..='7' => {
                let mut v = e.to_digit(8).unwrap_or(0);
                let mut n = 0;
                while n < 3 && i < cs.len() && cs[i].is_digit(8) {
                    v = v * 8 + cs[i].to_digit(8).unwrap_or(0);
                    i += 1;
                    n += 1;
                }
                out.push(char::from_u32(v).unwrap_or('?'));
            }
            x => {
                out.push('\\');
                out.push(x);
            }
        }
    }
    true
}

fn echo(p: &mut Proc, args: &[String]) -> i32 {
    let mut newline = true;
    let mut escapes = false;
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a.len() < 2 || !a.starts_with('-') || !a[1..].chars().all(|c| "neE".contains(c)) {
            break;
        }
        for c in a[1..].chars() {
            match c {
                'n' => newline = false,
                'e' => escapes = true,
                _ => escapes = false,
            }
        }
        i += 1;
    }
    let text = args[i..].join(" ");
    let mut out = String::new();
    if escapes {
        if !unescape(&text, &mut out) {
            p.out(&out);
            return 0;
        }
    } else {
        out = text;
    }
    if newline {
        out.push('\n');
    }
    p.out(&out);
    0
}

fn id(p: &mut Proc, args: &[String]) -> i32 {
    let name = args.iter().any(|a| a.contains('n'));
    let out = if args.iter().any(|a| a.contains('u') || a.contains('g')) {
        if name { "root" } else { "0" }.to_string()
    } else {
        "uid=0(root) gid=0(root) groups=0(root),10(wheel)".to_string()
    };
    p.out(&format!("{out}\n"));
    0
}

fn uname(p: &mut Proc, args: &[String]) -> i32 {
    let host = p.c.hostname.clone();
    let all = [
        ('s', "Linux".to_string()),
        ('n', host),
        ('r', "6.8.0-tinykube".to_string()),
        ('v', "#1 SMP PREEMPT_DYNAMIC".to_string()),
        ('m', "x86_64".to_string()),
        ('o', "GNU/Linux".to_string()),
    ];
    let flags: String = args.iter().filter_map(|a| a.strip_prefix('-')).collect();
    let picked: Vec<&str> = all
        .iter()
        .filter(|(f, _)| flags.contains('a') || flags.contains(*f))
        .map(|(_, v)| v.as_str())
        .collect();
    let line = if picked.is_empty() {
        "Linux".to_string()
    } else {
        picked.join(" ")
    };
    p.out(&format!("{line}\n"));
    0
}

async fn env(p: &mut Proc, args: &[String]) -> Option<i32> {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a == "-i" || a == "-" {
            p.env.clear();
        } else if a == "-u" {
            i += 1;
            if let Some(n) = args.get(i) {
                p.env.retain(|(k, _)| k != n);
            }
        } else if let Some((k, v)) = a.split_once('=') {
            p.env.retain(|(n, _)| n != k);
            p.env.push((k.to_string(), v.to_string()));
        } else {
            break;
        }
        i += 1;
    }
    if i < args.len() {
        let rest = args[i..].to_vec();
        let name = rest[0].clone();
        return match run(p, &name, &rest).await {
            Some(code) => Some(code),
            None => {
                p.err(&format!(
                    "env: can't execute '{name}': No such file or directory\n"
                ));
                Some(127)
            }
        };
    }
    let out: String = p.env.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    p.out(&out);
    Some(0)
}
