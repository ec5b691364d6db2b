//! A small interpreter of the busybox (ash) shell: what a container's `command: ["sh", "-c",
//! ...]` and `kubectl exec -it POD -- sh` run.
//!
//! A script is parsed ([`lexer`], [`parser`]) into an [`ast`], and [`interp`] walks it with
//! the shell's state; words are expanded by [`expand`] (and [`arith`]); the commands that
//! change the shell are [`builtins`], the others busybox's [`applets`] (or a program of the
//! image, through [`crate::images::builtin`]). Processes (the shell, its `&` jobs) are futures
//! sharing the host through [`sys`]; their streams are [`io`]'s.

mod applets;
mod arith;
mod ast;
mod builtins;
mod expand;
mod interp;
mod io;
mod lexer;
mod parser;
mod redirect;
mod sys;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use crate::{BoxFuture, Container, Fs, Host};
use interp::{Flow, Shell};
use io::Io;
use sys::Sys;

/// Run `argv` in the container (see [`crate::run_exec`]): a shell (`sh -c SCRIPT`, a script
/// file, or commands read from stdin with a prompt), an applet, or a program of the image.
pub fn exec_argv<'a>(
    argv: &'a [String],
    c: &'a Container,
    fs: Fs,
    host: &'a mut dyn Host,
) -> BoxFuture<'a, i32> {
    let argv = argv.to_vec();
    let c = Arc::new(c.clone());
    Box::pin(async move {
        let sys = Sys::new(host.network(), host.log_sink(), host.cpu_sink(), host.now());
        let mut sh = Shell::new(c, fs, sys.clone());
        let main: BoxFuture<'static, i32> = Box::pin(async move {
            let io = Io::host();
            let Some(name) = argv.first() else {
                return 0;
            };
            let base = name.rsplit('/').next().unwrap_or(name);
            if matches!(base, "sh" | "ash" | "bash") {
                return run_shell(&mut sh, &argv, &io).await;
            }
            sh.run_program(&argv, &[], &io).await
        });
        sys::drive(host, &sys, main).await
    })
}

/// `sh [-ex] [-c SCRIPT [NAME ARGS...] | FILE ARGS... ]`, or interactive without either.
fn run_shell<'a>(sh: &'a mut Shell, argv: &'a [String], io: &'a Io) -> BoxFuture<'a, i32> {
    Box::pin(async move {
        let mut i = 1;
        let mut command = false;
        while let Some(a) = argv.get(i) {
            if a == "--" {
                i += 1;
                break;
            }
            if a.len() < 2 || !(a.starts_with('-') || a.starts_with('+')) {
                break;
            }
            for f in a[1..].chars() {
                match f {
                    'c' => command = true,
                    'e' => sh.errexit = a.starts_with('-'),
                    'x' => sh.xtrace = a.starts_with('-'),
                    _ => {}
                }
            }
            i += 1;
        }
        if command {
            let Some(script) = argv.get(i) else {
                sh.err(io, "sh: -c requires an argument\n");
                return 2;
            };
            if let Some(name) = argv.get(i + 1) {
                sh.arg0 = name.clone();
                sh.params = argv[i + 2..].to_vec();
            }
            return run_source(sh, script, io).await;
        }
        if let Some(file) = argv.get(i) {
            let path = crate::fs::absolute(&sh.cwd, file);
            let Ok(data) = sh.fs.read(&path) else {
                sh.err(
                    io,
                    &format!("sh: can't open '{file}': No such file or directory\n"),
                );
                return 2;
            };
            sh.arg0 = file.clone();
            sh.params = argv[i + 1..].to_vec();
            return run_source(sh, &String::from_utf8_lossy(&data), io).await;
        }
        interactive(sh, io).await
    })
}

async fn run_source(sh: &mut Shell, src: &str, io: &Io) -> i32 {
    let list = match parser::parse(src) {
        Ok(list) => list,
        Err(e) => {
            sh.err(io, &format!("sh: {e}\n"));
            return 2;
        }
    };
    let code = match sh.run_list(&list, io).await {
        Ok(s) | Err(Flow::Exit(s) | Flow::Return(s)) => s,
        Err(_) => sh.status,
    };
    sh.exit_trap(code, io).await
}

/// Commands read from stdin, each after a prompt, until `exit` or the end of the input.
async fn interactive(sh: &mut Shell, io: &Io) -> i32 {
    let mut pending = String::new();
    loop {
        let prompt = if pending.is_empty() {
            format!("{} # ", sh.cwd)
        } else {
            "> ".to_string()
        };
        io.stdout.write(&sh.sys, &prompt);
        let Some(line) = io.stdin.read_line(&sh.sys).await else {
            break;
        };
        pending.push_str(&line);
        if !pending.ends_with('\n') {
            pending.push('\n');
        }
        let list = match parser::parse(&pending) {
            Ok(list) => list,
            Err(e) if e.at_end() => continue,
            Err(e) => {
                sh.err(io, &format!("sh: {e}\n"));
                sh.status = 2;
                pending.clear();
                continue;
            }
        };
        pending.clear();
        match sh.run_list(&list, io).await {
            Ok(s) => sh.status = s,
            Err(Flow::Exit(s)) => return sh.exit_trap(s, io).await,
            Err(_) => {}
        }
    }
    let code = sh.status;
    sh.exit_trap(code, io).await
}
