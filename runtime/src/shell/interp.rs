//! Running a parsed script: the shell's state (variables, functions, positional parameters,
//! traps, options), lists, and-or chains, pipelines, compound commands, redirections, and
//! simple commands dispatched to functions, builtins, applets or the image's programs.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::ast::{AndOr, Command, Compound, Item, List, Pipeline, Simple};
use super::io::{take, Input, Io, Proc, Sink};
use super::sys::Sys;
use super::{applets, expand::glob_match, parser};
use crate::fs::absolute;
use crate::{BoxFuture, Container, Fs, FsError, EXIT_NOT_FOUND};

/// How control leaves a command other than by finishing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flow {
    Break(u32),
    Continue(u32),
    Return(i32),
    Exit(i32),
}

pub(super) type Res = Result<i32, Flow>;

/// A shell variable.
#[derive(Debug, Clone)]
pub(super) struct Var {
    pub name: String,
    pub value: String,
    pub exported: bool,
}

/// One shell process's state; a subshell or a background job is a clone.
#[derive(Clone)]
pub(super) struct Shell {
    pub vars: Vec<Var>,
    pub funcs: HashMap<String, Arc<Command>>,
    pub arg0: String,
    pub params: Vec<String>,
    /// `$?`.
    pub status: i32,
    /// The status of the last command substitution of the command being expanded.
    pub subst_status: i32,
    pub cwd: String,
    /// Actions by signal name (`TERM`, `EXIT`); an empty action ignores the signal.
    pub traps: BTreeMap<String, String>,
    pub errexit: bool,
    pub xtrace: bool,
    /// Depth of conditions, where `set -e` does not apply.
    pub no_errexit: u32,
    pub loop_depth: u32,
    pub sys: Sys,
    pub fs: Fs,
    pub c: Arc<Container>,
    pub pid: u32,
    pub last_bg: Option<u32>,
    /// Background jobs started by this shell, by job number - 1.
    pub jobs: Vec<u32>,
    /// Whether signals to the container are this shell's to handle (PID 1, not a subshell).
    pub sig_owner: bool,
    steps: u64,
}

/// Directories whose programs are the shell's applets (`/bin/sleep` is `sleep`).
const BIN_DIRS: [&str; 6] = [
    "/bin",
    "/sbin",
    "/usr/bin",
    "/usr/sbin",
    "/usr/local/bin",
    "/usr/local/sbin",
];

pub(super) const PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

impl Shell {
    pub fn new(c: Arc<Container>, fs: Fs, sys: Sys) -> Shell {
        let cwd = c
            .working_dir
            .clone()
            .filter(|d| !d.is_empty())
            .map(|d| absolute("/", &d))
            .unwrap_or_else(|| "/".into());
        let mut sh = Shell {
            vars: Vec::new(),
            funcs: HashMap::new(),
            arg0: "sh".into(),
            params: Vec::new(),
            status: 0,
            subst_status: 0,
            cwd: cwd.clone(),
            traps: BTreeMap::new(),
            errexit: false,
            xtrace: false,
            no_errexit: 0,
            loop_depth: 0,
            sys,
            fs,
            c: c.clone(),
            pid: 1,
            last_bg: None,
            jobs: Vec::new(),
            sig_owner: true,
            steps: 0,
        };
        let has = |n: &str| c.env.iter().any(|(k, _)| k == n);
        if !has("PATH") {
            sh.export("PATH", PATH);
        }
        if !has("HOSTNAME") {
            sh.export("HOSTNAME", &c.hostname);
        }
        for (k, v) in &c.env {
            sh.export(k, v);
        }
        if !has("HOME") {
            sh.export("HOME", "/root");
        }
        sh.export("PWD", &cwd);
        sh
    }

    pub fn get_var(&self, name: &str) -> Option<&str> {
        self.vars
            .iter()
            .find(|v| v.name == name)
            .map(|v| v.value.as_str())
    }

    pub fn set_var(&mut self, name: &str, value: &str) {
        match self.vars.iter_mut().find(|v| v.name == name) {
            Some(v) => v.value = value.to_string(),
            None => self.vars.push(Var {
                name: name.to_string(),
                value: value.to_string(),
                exported: false,
            }),
        }
    }

    pub fn export(&mut self, name: &str, value: &str) {
        self.set_var(name, value);
        if let Some(v) = self.vars.iter_mut().find(|v| v.name == name) {
            v.exported = true;
        }
    }

    pub fn unset_var(&mut self, name: &str) {
        self.vars.retain(|v| v.name != name);
    }

    /// The exported environment, with `extra` assignments over it.
    pub fn environ(&self, extra: &[(String, String)]) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = self
            .vars
            .iter()
            .filter(|v| v.exported)
            .map(|v| (v.name.clone(), v.value.clone()))
            .collect();
        for (k, v) in extra {
            match env.iter_mut().find(|(n, _)| n == k) {
                Some(e) => e.1 = v.clone(),
                None => env.push((k.clone(), v.clone())),
            }
        }
        env
    }

    /// A copy to run a subshell, a pipeline's part or a job in.
    pub fn subshell(&self) -> Shell {
        let mut sh = self.clone();
        sh.sig_owner = false;
        sh.jobs.clear();
        sh.traps.retain(|_, action| action.is_empty());
        sh.loop_depth = 0;
        sh
    }

    pub fn err(&self, io: &Io, text: &str) {
        io.stderr.write(&self.sys, text);
    }

    /// Run the trap of every signal received, if this shell owns them; a signal without a
    /// trap is ignored (PID 1 has no default action for SIGTERM).
    pub async fn check_traps(&mut self, io: &Io) -> Result<(), Flow> {
        if !self.sig_owner {
            return Ok(());
        }
        while let Some(_sig) = self.sys.take_signal() {
            let Some(action) = self.traps.get("TERM").cloned() else {
                continue;
            };
            if action.is_empty() {
                continue;
            }
            let saved = self.status;
            self.eval(&action, io).await?;
            self.status = saved;
        }
        Ok(())
    }

    /// Run `src` as commands of this shell (`eval`, traps).
    pub async fn eval(&mut self, src: &str, io: &Io) -> Res {
        match parser::parse(src) {
            Ok(list) => self.run_list(&list, io).await,
            Err(e) => {
                self.err(io, &format!("sh: {e}\n"));
                Ok(2)
            }
        }
    }

    /// Run the EXIT trap (once) as the shell ends with `code`; the code it ends with.
    pub async fn exit_trap(&mut self, code: i32, io: &Io) -> i32 {
        let Some(action) = self.traps.remove("EXIT") else {
            return code;
        };
        self.status = code;
        match self.eval(&action, io).await {
            Err(Flow::Exit(c)) => c,
            _ => code,
        }
    }

    pub fn run_list<'s>(&'s mut self, list: &'s List, io: &'s Io) -> BoxFuture<'s, Res> {
        Box::pin(async move {
            let mut status = 0;
            for item in &list.0 {
                if item.background {
                    self.spawn(item, io);
                    status = 0;
                } else {
                    status = self.run_and_or(&item.and_or, io).await?;
                }
                self.status = status;
                self.check_traps(io).await?;
                self.steps += 1;
                if self.steps.is_multiple_of(64) {
                    self.sys.yield_now().await;
                }
            }
            Ok(status)
        })
    }

    fn spawn(&mut self, item: &Item, io: &Io) {
        let mut child = self.subshell();
        let and_or = item.and_or.clone();
        let io = Io {
            stdin: Input::empty(),
            ..io.clone()
        };
        let pid = self.sys.spawn(Box::pin(async move {
            match child.run_and_or(&and_or, &io).await {
                Ok(s) | Err(Flow::Exit(s) | Flow::Return(s)) => s,
                Err(_) => 0,
            }
        }));
        self.last_bg = Some(pid);
        self.jobs.push(pid);
    }

    pub fn run_and_or<'s>(&'s mut self, ao: &'s AndOr, io: &'s Io) -> BoxFuture<'s, Res> {
        Box::pin(async move {
            let mut status = self.run_pipeline(&ao.first, io, ao.rest.is_empty()).await?;
            for (i, (and, p)) in ao.rest.iter().enumerate() {
                if *and == (status == 0) {
                    self.status = status;
                    status = self.run_pipeline(p, io, i + 1 == ao.rest.len()).await?;
                }
            }
            Ok(status)
        })
    }

    async fn run_pipeline(&mut self, p: &Pipeline, io: &Io, check_e: bool) -> Res {
        let status = if p.cmds.len() == 1 {
            if p.bang {
                self.no_errexit += 1;
            }
            let r = self.run_command(&p.cmds[0], io).await;
            if p.bang {
                self.no_errexit -= 1;
            }
            r?
        } else {
            let mut input = io.stdin.clone();
            let mut status = 0;
            for (i, cmd) in p.cmds.iter().enumerate() {
                let (sink, buf) = Sink::buffer();
                let stdout = if i + 1 == p.cmds.len() {
                    io.stdout.clone()
                } else {
                    sink
                };
                let sub = Io {
                    stdin: input,
                    stdout,
                    stderr: io.stderr.clone(),
                };
                let mut child = self.subshell();
                status = match child.run_command(cmd, &sub).await {
                    Ok(s) | Err(Flow::Exit(s) | Flow::Return(s)) => s,
                    Err(_) => 0,
                };
                input = Input::data(take(&buf));
            }
            status
        };
        let status = if p.bang {
            i32::from(status == 0)
        } else {
            status
        };
        if check_e && !p.bang && status != 0 && self.errexit && self.no_errexit == 0 {
            return Err(Flow::Exit(status));
        }
        Ok(status)
    }

    pub fn run_command<'s>(&'s mut self, cmd: &'s Command, io: &'s Io) -> BoxFuture<'s, Res> {
        Box::pin(async move {
            match cmd {
                Command::Simple(s) => self.run_simple(s, io).await,
                Command::Compound(c, redirs) => {
                    let Some(io) = self.redirect(redirs, io).await? else {
                        return Ok(1);
                    };
                    self.run_compound(c, &io).await
                }
                Command::Function(name, body) => {
                    self.funcs.insert(name.clone(), body.clone());
                    Ok(0)
                }
            }
        })
    }

    async fn cond(&mut self, list: &List, io: &Io) -> Res {
        self.no_errexit += 1;
        let r = self.run_list(list, io).await;
        self.no_errexit -= 1;
        r
    }

    async fn run_compound(&mut self, c: &Compound, io: &Io) -> Res {
        match c {
            Compound::Group(l) => self.run_list(l, io).await,
            Compound::Subshell(l) => {
                let mut child = self.subshell();
                match child.run_list(l, io).await {
                    Ok(s) | Err(Flow::Exit(s) | Flow::Return(s)) => Ok(s),
                    Err(_) => Ok(0),
                }
            }
            Compound::If {
                branches,
                otherwise,
            } => {
                for (cond, body) in branches {
                    if self.cond(cond, io).await? == 0 {
                        return self.run_list(body, io).await;
                    }
                }
                match otherwise {
                    Some(body) => self.run_list(body, io).await,
                    None => Ok(0),
                }
            }
            Compound::Loop { until, cond, body } => {
                self.loop_depth += 1;
                let r = self.run_loop(*until, cond, body, io).await;
                self.loop_depth -= 1;
                r
            }
            Compound::For { var, words, body } => {
                let words = match words {
                    Some(ws) => self.expand_words(ws, io).await?,
                    None => self.params.clone(),
                };
                self.loop_depth += 1;
                let mut status = 0;
                let mut result = Ok(());
                for w in words {
                    self.set_var(var, &w);
                    match self.run_list(body, io).await {
                        Ok(s) => status = s,
                        Err(Flow::Break(n)) => {
                            if n > 1 {
                                result = Err(Flow::Break(n - 1));
                            }
                            break;
                        }
                        Err(Flow::Continue(n)) => {
                            if n > 1 {
                                result = Err(Flow::Continue(n - 1));
                                break;
                            }
                        }
                        Err(f) => {
                            result = Err(f);
                            break;
                        }
                    }
                }
                self.loop_depth -= 1;
                result.map(|()| status)
            }
            Compound::Case { word, arms } => {
                let w = self.expand_string(word, io).await?;
                for arm in arms {
                    for pat in &arm.patterns {
                        let p = self.expand_pattern(pat, io).await?;
                        if glob_match(&p, &w) {
                            return self.run_list(&arm.body, io).await;
                        }
                    }
                }
                Ok(0)
            }
        }
    }

    async fn run_loop(&mut self, until: bool, cond: &List, body: &List, io: &Io) -> Res {
        let mut status = 0;
        loop {
            let c = match self.cond(cond, io).await {
                Ok(c) => c,
                Err(Flow::Break(n)) if n <= 1 => break,
                Err(f) => return Err(f),
            };
            if (c == 0) == until {
                break;
            }
            match self.run_list(body, io).await {
                Ok(s) => status = s,
                Err(Flow::Break(n)) => {
                    if n > 1 {
                        return Err(Flow::Break(n - 1));
                    }
                    break;
                }
                Err(Flow::Continue(n)) => {
                    if n > 1 {
                        return Err(Flow::Continue(n - 1));
                    }
                }
                Err(f) => return Err(f),
            }
        }
        Ok(status)
    }

    async fn run_simple(&mut self, s: &Simple, io: &Io) -> Res {
        self.subst_status = 0;
        let argv = self.expand_words(&s.words, io).await?;
        let mut assigns = Vec::new();
        for (name, w) in &s.assigns {
            assigns.push((name.clone(), self.expand_string(w, io).await?));
        }
        if self.xtrace {
            let mut line: Vec<String> = assigns.iter().map(|(k, v)| format!("{k}={v}")).collect();
            line.extend(argv.iter().cloned());
            self.err(io, &format!("+ {}\n", line.join(" ")));
        }
        let Some(io) = self.redirect(&s.redirs, io).await? else {
            return Ok(1);
        };
        if argv.is_empty() {
            for (k, v) in &assigns {
                self.set_var(k, v);
            }
            return Ok(self.subst_status);
        }
        self.run_argv(&argv, &assigns, &io).await
    }

    /// Run a command by name: a function, a builtin, an applet, the image's program, a script.
    pub fn run_argv<'s>(
        &'s mut self,
        argv: &'s [String],
        assigns: &'s [(String, String)],
        io: &'s Io,
    ) -> BoxFuture<'s, Res> {
        Box::pin(async move {
            let name = argv[0].as_str();
            if let Some(body) = self.funcs.get(name).cloned() {
                let saved = std::mem::replace(&mut self.params, argv[1..].to_vec());
                let r = self.run_command(&body, io).await;
                self.params = saved;
                return match r {
                    Err(Flow::Return(s)) => Ok(s),
                    r => r,
                };
            }
            if let Some(r) = self.builtin(argv, io).await {
                return r;
            }
            Ok(self.run_program(argv, assigns, io).await)
        })
    }

    /// Run an applet, a program of the image or a script file, as a process of its own.
    pub async fn run_program(
        &mut self,
        argv: &[String],
        assigns: &[(String, String)],
        io: &Io,
    ) -> i32 {
        let name = argv[0].as_str();
        let mut base = name;
        if let Some((dir, b)) = name.rsplit_once('/') {
            let dir = if dir.is_empty() { "/" } else { dir };
            let path = absolute(&self.cwd, name);
            if BIN_DIRS.contains(&dir) && !self.fs.is_dir(&path) {
                base = b;
            } else if let Ok(data) = self.fs.read(&path) {
                return self
                    .run_script(&String::from_utf8_lossy(&data), argv, io)
                    .await;
            } else {
                let e = self.fs.stat(&path).err().unwrap_or(FsError::IsADirectory);
                let why = match e {
                    FsError::IsADirectory => "Permission denied".to_string(),
                    e => e.to_string(),
                };
                self.err(io, &format!("sh: {name}: {why}\n"));
                return if matches!(e, FsError::NotFound) {
                    EXIT_NOT_FOUND
                } else {
                    126
                };
            }
        }
        let mut p = Proc {
            sys: self.sys.clone(),
            io: io.clone(),
            fs: self.fs.clone(),
            cwd: self.cwd.clone(),
            env: self.environ(assigns),
            sig_owner: self.sig_owner,
            c: self.c.clone(),
        };
        if let Some(code) = applets::run(&mut p, base, argv).await {
            return code;
        }
        let image = self.c.image.clone();
        let program =
            crate::images::builtin(&image, name).or_else(|| crate::images::builtin(&image, base));
        if let Some(program) = program {
            let c = self.c.clone();
            return program(argv, &c, self.fs.clone(), &mut p).await;
        }
        if matches!(base, "sh" | "ash" | "bash") {
            let mut child = self.subshell();
            return super::run_shell(&mut child, argv, io).await;
        }
        self.err(io, &format!("sh: {name}: not found\n"));
        EXIT_NOT_FOUND
    }

    async fn run_script(&mut self, src: &str, argv: &[String], io: &Io) -> i32 {
        let mut child = self.subshell();
        child.arg0 = argv[0].clone();
        child.params = argv[1..].to_vec();
        match parser::parse(src) {
            Ok(list) => match child.run_list(&list, io).await {
                Ok(s) | Err(Flow::Exit(s) | Flow::Return(s)) => s,
                Err(_) => 0,
            },
            Err(e) => {
                self.err(io, &format!("{}: line 1: {e}\n", argv[0]));
                2
            }
        }
    }
}
