//! The commands that change the shell itself and so cannot be applets: `cd`, `export`,
//! `set`, `trap`, `wait`, `read`, `exit`, `eval`, `.`, `kill` of jobs...

use super::interp::{Flow, Res, Shell};
use super::io::Io;
use super::parser;
use super::sys::Waited;
use crate::fs::absolute;

/// A signal's name as `trap` stores it (`SIGTERM`, `term`, `15` → `TERM`).
fn signal_name(s: &str) -> Option<String> {
    let up = s.to_ascii_uppercase();
    let up = up.strip_prefix("SIG").unwrap_or(&up).to_string();
    Some(match up.as_str() {
        "0" | "EXIT" => "EXIT".into(),
        "1" | "HUP" => "HUP".into(),
        "2" | "INT" => "INT".into(),
        "3" | "QUIT" => "QUIT".into(),
        "9" | "KILL" => "KILL".into(),
        "10" | "USR1" => "USR1".into(),
        "12" | "USR2" => "USR2".into(),
        "15" | "TERM" => "TERM".into(),
        "17" | "CHLD" => "CHLD".into(),
        _ => return None,
    })
}

fn quote(v: &str) -> String {
    format!("'{}'", v.replace('\'', "'\"'\"'"))
}

/// Names the shell handles itself (for `command -v`).
pub(super) const BUILTINS: [&str; 27] = [
    ":", "true", "false", "cd", "export", "readonly", "unset", "set", "shift", "exit", "return",
    "break", "continue", "trap", "wait", "read", "eval", ".", "source", "local", "exec", "kill",
    "jobs", "command", "type", "alias", "umask",
];

impl Shell {
    /// Run `argv` if it names a builtin.
    pub(super) async fn builtin(&mut self, argv: &[String], io: &Io) -> Option<Res> {
        let args = &argv[1..];
        let num = |i: usize, default: i32| -> i32 {
            args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default)
        };
        Some(Ok(match argv[0].as_str() {
            ":" | "true" | "alias" | "umask" | "ulimit" | "hash" => 0,
            "false" => 1,
            "cd" => self.cd(args, io),
            "export" | "readonly" | "local" => {
                if args.is_empty() || args[0] == "-p" {
                    let mut out = String::new();
                    for v in self.vars.iter().filter(|v| v.exported) {
                        out.push_str(&format!("export {}={}\n", v.name, quote(&v.value)));
                    }
                    io.stdout.write(&self.sys, &out);
                    return Some(Ok(0));
                }
                for a in args.iter().filter(|a| !a.starts_with('-')) {
                    let (name, value) = match a.split_once('=') {
                        Some((n, v)) => (n.to_string(), Some(v.to_string())),
                        None => (a.clone(), None),
                    };
                    let value = value
                        .or_else(|| self.get_var(&name).map(str::to_string))
                        .unwrap_or_default();
                    if argv[0] == "export" {
                        self.export(&name, &value);
                    } else {
                        self.set_var(&name, &value);
                    }
                }
                0
            }
            "unset" => {
                for a in args.iter().filter(|a| !a.starts_with('-')) {
                    if args.first().is_some_and(|f| f == "-f") {
                        self.funcs.remove(a);
                    } else {
                        self.unset_var(a);
                    }
                }
                0
            }
            "set" => self.set(args, io),
            "shift" => {
                let n = num(0, 1).max(0) as usize;
                if n > self.params.len() {
                    self.err(io, "sh: shift: can't shift that many\n");
                    return Some(Ok(2));
                }
                self.params.drain(..n);
                0
            }
            "exit" => return Some(Err(Flow::Exit(num(0, self.status) & 0xff))),
            "return" => return Some(Err(Flow::Return(num(0, self.status)))),
            "break" | "continue" => {
                if self.loop_depth == 0 {
                    return Some(Ok(0));
                }
                let n = (num(0, 1).max(1) as u32).min(self.loop_depth);
                return Some(Err(if argv[0] == "break" {
                    Flow::Break(n)
                } else {
                    Flow::Continue(n)
                }));
            }
            "trap" => self.trap(args, io),
            "wait" => self.wait(args).await,
            "read" => self.read(args, io).await,
            "eval" => return Some(self.eval(&args.join(" "), io).await),
            "." | "source" => {
                let Some(file) = args.first() else {
                    return Some(Ok(0));
                };
                let path = absolute(&self.cwd, file);
                let Ok(data) = self.fs.read(&path) else {
                    self.err(
                        io,
                        &format!("sh: .: can't open '{file}': No such file or directory\n"),
                    );
                    return Some(Err(Flow::Exit(2)));
                };
                let src = String::from_utf8_lossy(&data).into_owned();
                return Some(match parser::parse(&src) {
                    Ok(list) => match self.run_list(&list, io).await {
                        Err(Flow::Return(s)) => Ok(s),
                        r => r,
                    },
                    Err(e) => {
                        self.err(io, &format!("sh: {file}: {e}\n"));
                        Ok(2)
                    }
                });
            }
            "exec" => {
                if args.is_empty() {
                    return Some(Ok(0));
                }
                let args = args.to_vec();
                let r = self.run_argv(&args, &[], io).await;
                return Some(match r {
                    Ok(s) => Err(Flow::Exit(s)),
                    r => r,
                });
            }
            "kill" => self.kill(args, io),
            "jobs" => {
                let mut out = String::new();
                for (i, pid) in self.jobs.iter().enumerate() {
                    if let Some(None) = self.sys.job_status(*pid) {
                        out.push_str(&format!("[{}]   Running\n", i + 1));
                    }
                }
                io.stdout.write(&self.sys, &out);
                0
            }
            "command" | "type" => {
                let verbose = argv[0] == "type" || args.first().is_some_and(|a| a == "-V");
                let names: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
                if argv[0] == "command"
                    && !args
                        .first()
                        .is_some_and(|a| a.starts_with("-v") || a == "-V")
                {
                    if names.is_empty() {
                        return Some(Ok(0));
                    }
                    let rest: Vec<String> = args.to_vec();
                    return Some(Ok(self.run_program(&rest, &[], io).await));
                }
                let mut status = 0;
                for n in names {
                    let kind = if BUILTINS.contains(&n.as_str()) {
                        Some(format!("{n} is a shell builtin"))
                    } else if self.funcs.contains_key(n) {
                        Some(format!("{n} is a function"))
                    } else if super::applets::NAMES.contains(&n.as_str()) {
                        Some(format!("{n} is /bin/{n}"))
                    } else {
                        None
                    };
                    match kind {
                        Some(k) if verbose => io.stdout.write(&self.sys, &format!("{k}\n")),
                        Some(_) => {
                            let shown = if super::applets::NAMES.contains(&n.as_str()) {
                                format!("/bin/{n}")
                            } else {
                                n.clone()
                            };
                            io.stdout.write(&self.sys, &format!("{shown}\n"))
                        }
                        None => {
                            if verbose {
                                self.err(io, &format!("{n}: not found\n"));
                            }
                            status = 127;
                        }
                    }
                }
                if argv[0] == "command" && status != 0 {
                    1
                } else {
                    status
                }
            }
            _ => return None,
        }))
    }

    fn cd(&mut self, args: &[String], io: &Io) -> i32 {
        let target = match args.first().map(String::as_str) {
            None => self.get_var("HOME").unwrap_or("/").to_string(),
            Some("-") => self.get_var("OLDPWD").unwrap_or("/").to_string(),
            Some(d) => d.to_string(),
        };
        let path = absolute(&self.cwd, &target);
        match self.fs.stat(&path) {
            Ok(e) if e.is_dir => {
                let old = std::mem::replace(&mut self.cwd, path.clone());
                self.export("OLDPWD", &old);
                self.export("PWD", &path);
                0
            }
            Ok(_) => {
                self.err(
                    io,
                    &format!("sh: cd: can't cd to {target}: Not a directory\n"),
                );
                2
            }
            Err(e) => {
                self.err(io, &format!("sh: cd: can't cd to {target}: {e}\n"));
                2
            }
        }
    }

    fn set(&mut self, args: &[String], io: &Io) -> i32 {
        if args.is_empty() {
            let mut vars: Vec<_> = self.vars.iter().collect();
            vars.sort_by(|a, b| a.name.cmp(&b.name));
            let out: String = vars
                .iter()
                .map(|v| format!("{}={}\n", v.name, quote(&v.value)))
                .collect();
            io.stdout.write(&self.sys, &out);
            return 0;
        }
        let mut i = 0;
        while i < args.len() {
            let a = &args[i];
            if a == "--" {
                self.params = args[i + 1..].to_vec();
                return 0;
            }
            let on = a.starts_with('-');
            if !(on || a.starts_with('+')) || a.len() < 2 {
                self.params = args[i..].to_vec();
                return 0;
            }
            for flag in a[1..].chars() {
                match flag {
                    'e' => self.errexit = on,
                    'x' => self.xtrace = on,
                    'o' => {
                        i += 1;
                        match args.get(i).map(String::as_str) {
                            Some("errexit") => self.errexit = on,
                            Some("xtrace") => self.xtrace = on,
                            _ => {}
                        }
                    }
                    _ => {}
                }
            }
            i += 1;
        }
        0
    }

    fn trap(&mut self, args: &[String], io: &Io) -> i32 {
        if args.is_empty() || args[0] == "-p" {
            let out: String = self
                .traps
                .iter()
                .map(|(sig, action)| format!("trap -- {} {sig}\n", quote(action)))
                .collect();
            io.stdout.write(&self.sys, &out);
            return 0;
        }
        let (action, sigs) =
            if signal_name(&args[0]).is_some() && args[0].chars().all(|c| c.is_ascii_digit()) {
                (None, args)
            } else {
                (Some(args[0].as_str()), &args[1..])
            };
        let mut status = 0;
        for s in sigs {
            let Some(name) = signal_name(s) else {
                self.err(
                    io,
                    &format!("sh: trap: {s}: invalid signal specification\n"),
                );
                status = 1;
                continue;
            };
            match action {
                None | Some("-") => {
                    self.traps.remove(&name);
                }
                Some(a) => {
                    self.traps.insert(name, a.to_string());
                }
            }
        }
        status
    }

    async fn wait(&mut self, args: &[String]) -> i32 {
        let all = args.is_empty();
        let pids: Vec<u32> = if all {
            self.jobs.clone()
        } else {
            args.iter()
                .filter_map(|a| match a.strip_prefix('%') {
                    Some(n) => n
                        .parse::<usize>()
                        .ok()
                        .and_then(|n| self.jobs.get(n.wrapping_sub(1)).copied()),
                    None => a.parse().ok(),
                })
                .collect()
        };
        let running: Vec<u32> = pids
            .iter()
            .copied()
            .filter(|p| matches!(self.sys.job_status(*p), Some(None)))
            .collect();
        let trapped = self
            .sig_owner
            .then(|| self.traps.get("TERM"))
            .flatten()
            .is_some_and(|a| !a.is_empty());
        if !running.is_empty() {
            let waited = self.sys.wait(running, trapped, None).await;
            if waited == Waited::Signal {
                return 128 + 15;
            }
        }
        if all {
            self.jobs.clear();
            return 0;
        }
        match pids.last().and_then(|p| self.sys.job_status(*p)) {
            Some(Some(code)) => code,
            _ => 127,
        }
    }

    async fn read(&mut self, args: &[String], io: &Io) -> i32 {
        let mut raw = false;
        let mut names = Vec::new();
        let mut i = 0;
        while i < args.len() {
            match args[i].as_str() {
                "-r" => raw = true,
                "-p" | "-t" | "-n" | "-u" | "-d" => {
                    if args[i] == "-p" {
                        if let Some(p) = args.get(i + 1) {
                            io.stderr.write(&self.sys, p);
                        }
                    }
                    i += 1;
                }
                a => names.push(a.to_string()),
            }
            i += 1;
        }
        if names.is_empty() {
            names.push("REPLY".into());
        }
        let line = io.stdin.read_line(&self.sys).await;
        let status = i32::from(line.is_none());
        let line = line.unwrap_or_default();
        let line = line.strip_suffix('\n').unwrap_or(&line);
        let line = if raw {
            line.to_string()
        } else {
            let mut out = String::new();
            let mut cs = line.chars();
            while let Some(c) = cs.next() {
                if c == '\\' {
                    if let Some(n) = cs.next() {
                        out.push(n);
                    }
                } else {
                    out.push(c);
                }
            }
            out
        };
        let mut rest = line.trim_start_matches([' ', '\t']);
        for (k, name) in names.iter().enumerate() {
            let value = if k + 1 == names.len() {
                rest.trim_end_matches([' ', '\t']).to_string()
            } else {
                let end = rest.find([' ', '\t']).unwrap_or(rest.len());
                let v = rest[..end].to_string();
                rest = rest[end..].trim_start_matches([' ', '\t']);
                v
            };
            self.set_var(name, &value);
        }
        status
    }

    fn kill(&mut self, args: &[String], io: &Io) -> i32 {
        if args.first().is_some_and(|a| a == "-l") {
            io.stdout
                .write(&self.sys, "HUP INT QUIT KILL USR1 USR2 TERM CHLD\n");
            return 0;
        }
        let mut status = 0;
        let mut skip = false;
        for a in args {
            if skip {
                skip = false;
                continue;
            }
            if a == "-s" || a == "-n" {
                skip = true;
                continue;
            }
            if a.starts_with('-') {
                continue;
            }
            let pid = match a.strip_prefix('%') {
                Some(n) => n
                    .parse::<usize>()
                    .ok()
                    .and_then(|n| self.jobs.get(n.wrapping_sub(1)).copied()),
                None => a.parse().ok(),
            };
            match pid {
                Some(p) if self.sys.kill(p) => {}
                Some(p) if p == self.pid => {}
                _ => {
                    self.err(
                        io,
                        &format!("sh: kill: can't kill pid {a}: No such process\n"),
                    );
                    status = 1;
                }
            }
        }
        status
    }
}
