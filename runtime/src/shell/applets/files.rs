//! Applets over files: `cat`, `touch`, `rm`, `mkdir`, `rmdir`, `ls`, `cp`, `mv`, `ln`, `tee`,
//! `chmod`, `chown`, `stat`, and the line tools `wc`, `head`, `tail`, `grep`, `sort`, `uniq`.

use crate::fs::{split, Entry};
use crate::FsError;

use super::super::io::Proc;

pub(super) async fn run(p: &mut Proc, name: &str, args: &[String]) -> Option<i32> {
    Some(match name {
        "cat" => cat(p, args).await,
        "touch" => touch(p, args),
        "rm" => rm(p, args),
        "mkdir" => mkdir(p, args),
        "rmdir" => rmdir(p, args),
        "ls" => ls(p, args),
        "cp" | "mv" | "ln" => copy(p, name, args),
        "chmod" | "chown" => {
            let mut status = 0;
            for f in args.iter().skip_while(|a| a.starts_with('-')).skip(1) {
                if !p.fs.exists(&p.path(f)) {
                    p.err(&format!("{name}: {f}: No such file or directory\n"));
                    status = 1;
                }
            }
            status
        }
        "stat" => {
            let mut status = 0;
            for f in args.iter().filter(|a| !a.starts_with('-')) {
                match p.fs.stat(&p.path(f)) {
                    Ok(e) => p.out(&format!(
                        "  File: {f}\n  Size: {}\t{}\n",
                        e.size,
                        if e.is_dir {
                            "directory"
                        } else {
                            "regular file"
                        }
                    )),
                    Err(e) => {
                        p.err(&format!("stat: can't stat '{f}': {e}\n"));
                        status = 1;
                    }
                }
            }
            status
        }
        "tee" => {
            let append = args.iter().any(|a| a == "-a");
            let input = p.io.stdin.read_all(&p.sys).await;
            p.out(&input);
            let mut status = 0;
            for f in args.iter().filter(|a| !a.starts_with('-')) {
                if let Err(e) = p.fs.write(&p.path(f), input.as_bytes(), append) {
                    p.err(&format!("tee: {f}: {e}\n"));
                    status = 1;
                }
            }
            status
        }
        "wc" | "head" | "tail" | "grep" | "sort" | "uniq" => lines(p, name, args).await,
        _ => return None,
    })
}

/// Split `-abc` options from operands (`--` ends options).
fn options(args: &[String]) -> (String, Vec<String>) {
    let mut flags = String::new();
    let mut rest = Vec::new();
    let mut done = false;
    for a in args {
        if !done && a == "--" {
            done = true;
        } else if !done && a.len() > 1 && a.starts_with('-') {
            flags.push_str(&a[1..]);
        } else {
            rest.push(a.clone());
        }
    }
    (flags, rest)
}

/// The contents of each operand (`-` or none: stdin); errors said as `name` says them.
async fn inputs(p: &mut Proc, name: &str, files: &[String]) -> (Vec<(String, String)>, i32) {
    let mut out = Vec::new();
    let mut status = 0;
    if files.is_empty() {
        out.push(("-".to_string(), p.io.stdin.read_all(&p.sys).await));
        return (out, 0);
    }
    for f in files {
        if f == "-" {
            out.push((f.clone(), p.io.stdin.read_all(&p.sys).await));
            continue;
        }
        match p.fs.read(&p.path(f)) {
            Ok(data) => out.push((f.clone(), String::from_utf8_lossy(&data).into_owned())),
            Err(FsError::IsADirectory) if name == "cat" => {
                p.err("cat: read error: Is a directory\n");
                status = 1;
            }
            Err(e) if name == "cat" => {
                p.err(&format!("cat: can't open '{f}': {e}\n"));
                status = 1;
            }
            Err(e) => {
                p.err(&format!("{name}: {f}: {e}\n"));
                status = if name == "grep" { 2 } else { 1 };
            }
        }
    }
    (out, status)
}

async fn cat(p: &mut Proc, args: &[String]) -> i32 {
    let (_, files) = options(args);
    let files: Vec<String> = if args.iter().any(|a| a == "-") && files.is_empty() {
        vec!["-".into()]
    } else {
        files
    };
    let (contents, status) = inputs(p, "cat", &files).await;
    for (_, text) in contents {
        p.out(&text);
    }
    status
}

fn touch(p: &mut Proc, args: &[String]) -> i32 {
    let (_, files) = options(args);
    let mut status = 0;
    for f in files {
        let path = p.path(&f);
        if p.fs.exists(&path) {
            continue;
        }
        if let Err(e) = p.fs.write(&path, b"", true) {
            p.err(&format!("touch: {f}: {e}\n"));
            status = 1;
        }
    }
    status
}

fn rm(p: &mut Proc, args: &[String]) -> i32 {
    let (flags, files) = options(args);
    let force = flags.contains('f');
    let recursive = flags.contains('r') || flags.contains('R');
    let mut status = 0;
    for f in files {
        let path = p.path(&f);
        let r = match p.fs.stat(&path) {
            Ok(e) if e.is_dir && !recursive => Err(FsError::IsADirectory),
            Ok(_) => p.fs.remove(&path, recursive),
            Err(e) => Err(e),
        };
        match r {
            Ok(()) => {}
            Err(FsError::NotFound) if force => {}
            Err(e) => {
                p.err(&format!("rm: can't remove '{f}': {e}\n"));
                status = 1;
            }
        }
    }
    status
}

fn mkdir(p: &mut Proc, args: &[String]) -> i32 {
    let (flags, dirs) = options(args);
    let parents = flags.contains('p');
    let mut status = 0;
    for d in dirs {
        if let Err(e) = p.fs.mkdir(&p.path(&d), parents) {
            p.err(&format!("mkdir: can't create directory '{d}': {e}\n"));
            status = 1;
        }
    }
    status
}

fn rmdir(p: &mut Proc, args: &[String]) -> i32 {
    let (_, dirs) = options(args);
    let mut status = 0;
    for d in dirs {
        let path = p.path(&d);
        let r = match p.fs.stat(&path) {
            Ok(e) if !e.is_dir => Err(FsError::NotADirectory),
            Ok(_) => p.fs.remove(&path, false).map_err(|e| match e {
                FsError::IsADirectory => FsError::NotEmpty,
                e => e,
            }),
            Err(e) => Err(e),
        };
        if let Err(e) = r {
            p.err(&format!("rmdir: '{d}': {e}\n"));
            status = 1;
        }
    }
    status
}

fn long_line(p: &Proc, e: &Entry) -> String {
    let when: chrono::DateTime<chrono::Utc> = p.sys.now().into();
    let (mode, links, size) = if e.is_dir {
        ("drwxr-xr-x", 2, 4096)
    } else {
        ("-rw-r--r--", 1, e.size)
    };
    format!(
        "{mode} {links:>4} root     root     {size:>9} {} {}\n",
        when.format("%b %e %H:%M"),
        e.name
    )
}

fn ls(p: &mut Proc, args: &[String]) -> i32 {
    let (flags, mut paths) = options(args);
    let long = flags.contains('l');
    let all = flags.contains('a');
    let almost_all = flags.contains('A');
    let dir_itself = flags.contains('d');
    if paths.is_empty() {
        paths.push(".".into());
    }
    let mut status = 0;
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    for a in &paths {
        match p.fs.stat(&p.path(a)) {
            Ok(e) if e.is_dir && !dir_itself => dirs.push(a.clone()),
            Ok(e) => files.push(Entry {
                name: a.clone(),
                ..e
            }),
            Err(e) => {
                p.err(&format!("ls: {a}: {e}\n"));
                status = 1;
            }
        }
    }
    let show = |p: &Proc, e: &Entry| {
        if long {
            long_line(p, e)
        } else {
            format!("{}\n", e.name)
        }
    };
    let mut out = String::new();
    for e in &files {
        out.push_str(&show(p, e));
    }
    let headers = paths.len() > 1;
    for (i, d) in dirs.iter().enumerate() {
        if headers {
            if i > 0 || !files.is_empty() {
                out.push('\n');
            }
            out.push_str(&format!("{d}:\n"));
        }
        let mut entries = p.fs.list(&p.path(d)).unwrap_or_default();
        if all {
            for n in ["..", "."] {
                entries.insert(
                    0,
                    Entry {
                        name: n.into(),
                        is_dir: true,
                        size: 0,
                    },
                );
            }
        }
        if long {
            out.push_str(&format!("total {}\n", entries.len() * 4));
        }
        for e in entries {
            if e.name.starts_with('.') && !all && !almost_all {
                continue;
            }
            out.push_str(&show(p, &e));
        }
    }
    p.out(&out);
    status
}

fn copy_tree(p: &Proc, from: &str, to: &str) -> Result<(), FsError> {
    if p.fs.is_dir(from) {
        p.fs.mkdir(to, true)?;
        for e in p.fs.list(from)? {
            copy_tree(
                p,
                &format!("{from}/{}", e.name),
                &format!("{to}/{}", e.name),
            )?;
        }
        return Ok(());
    }
    let data = p.fs.read(from)?;
    p.fs.write(to, &data, false)
}

/// `cp`, `mv` and `ln` (a link is a copy here).
fn copy(p: &mut Proc, name: &str, args: &[String]) -> i32 {
    let (flags, ops) = options(args);
    let recursive =
        name != "cp" || flags.contains('r') || flags.contains('R') || flags.contains('a');
    if ops.len() < 2 {
        p.err(&format!(
            "BusyBox v1.37.0 multi-call binary.\n\nUsage: {name} [OPTIONS] SOURCE... DEST\n"
        ));
        return 1;
    }
    let (dest, sources) = ops.split_last().expect("two operands");
    let dest_path = p.path(dest);
    let into_dir = p.fs.is_dir(&dest_path);
    if sources.len() > 1 && !into_dir {
        p.err(&format!("{name}: '{dest}' is not a directory\n"));
        return 1;
    }
    let mut status = 0;
    for s in sources {
        let from = p.path(s);
        let base = split(&from).pop().unwrap_or_default();
        let to = if into_dir {
            format!("{dest_path}/{base}")
        } else {
            dest_path.clone()
        };
        let r = match p.fs.stat(&from) {
            Err(e) => {
                let verb = if name == "mv" { "rename" } else { "stat" };
                p.err(&format!("{name}: can't {verb} '{s}': {e}\n"));
                status = 1;
                continue;
            }
            Ok(e) if e.is_dir && !recursive => {
                p.err(&format!("{name}: omitting directory '{s}'\n"));
                status = 1;
                continue;
            }
            Ok(_) => copy_tree(p, &from, &to),
        };
        let r = r.and_then(|()| {
            if name == "mv" {
                p.fs.remove(&from, true)
            } else {
                Ok(())
            }
        });
        if let Err(e) = r {
            p.err(&format!(
                "{name}: can't create '{}': {e}\n",
                if into_dir { &to } else { dest }
            ));
            status = 1;
        }
    }
    status
}

/// A number option's value: `-n 5`, `-n5`, `-5`, `-n +5`.
fn count(args: &[String]) -> (Option<String>, Vec<String>, String) {
    let mut n = None;
    let mut rest = Vec::new();
    let mut flags = String::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "-n" || a == "-c" || a == "-m" || a == "-e" {
            n = args.get(i + 1).cloned();
            flags.push_str(&a[1..]);
            i += 2;
            continue;
        }
        if let Some(v) = a.strip_prefix("-n") {
            if !v.is_empty() {
                n = Some(v.to_string());
                i += 1;
                continue;
            }
        }
        if a.len() > 1 && a.starts_with('-') && a[1..].chars().all(|c| c.is_ascii_digit()) {
            n = Some(a[1..].to_string());
        } else if a.len() > 1 && a.starts_with('-') {
            flags.push_str(&a[1..]);
        } else {
            rest.push(a.clone());
        }
        i += 1;
    }
    (n, rest, flags)
}

async fn lines(p: &mut Proc, name: &str, args: &[String]) -> i32 {
    if name == "grep" {
        return grep(p, args).await;
    }
    let (n, files, flags) = count(args);
    let (contents, mut status) = inputs(p, name, &files).await;
    let many = contents.len() > 1;
    let mut out = String::new();
    let mut totals = [0usize; 3];
    for (i, (file, text)) in contents.iter().enumerate() {
        let ls: Vec<&str> = text.split_inclusive('\n').collect();
        match name {
            "wc" => {
                let counts = [
                    ls.len() - usize::from(!text.is_empty() && !text.ends_with('\n')),
                    text.split_whitespace().count(),
                    text.len(),
                ];
                let picked: Vec<usize> = [('l', 0), ('w', 1), ('c', 2)]
                    .iter()
                    .filter(|(f, _)| {
                        flags.contains(*f) || !flags.chars().any(|c| "lwc".contains(c))
                    })
                    .map(|(_, k)| *k)
                    .collect();
                for k in 0..3 {
                    totals[k] += counts[k];
                }
                let cols: Vec<String> = if picked.len() == 1 && files.len() <= 1 {
                    vec![counts[picked[0]].to_string()]
                } else {
                    picked
                        .iter()
                        .map(|k| format!("{:>9}", counts[*k]))
                        .collect()
                };
                let mut line = cols.join(" ");
                if file != "-" {
                    line.push_str(&format!(" {file}"));
                }
                out.push_str(&format!("{line}\n"));
                if many && i + 1 == contents.len() {
                    let cols: Vec<String> = picked
                        .iter()
                        .map(|k| format!("{:>9}", totals[*k]))
                        .collect();
                    out.push_str(&format!("{} total\n", cols.join(" ")));
                }
            }
            "head" | "tail" => {
                if many {
                    if i > 0 {
                        out.push('\n');
                    }
                    out.push_str(&format!("==> {file} <==\n"));
                }
                let spec = n.clone().unwrap_or_else(|| "10".into());
                let Ok(k) = spec.trim_start_matches('+').parse::<usize>() else {
                    p.err(&format!("{name}: invalid number '{spec}'\n"));
                    return 1;
                };
                let picked: Vec<&str> = if name == "head" {
                    ls.iter().take(k).copied().collect()
                } else if spec.starts_with('+') {
                    ls.iter().skip(k.saturating_sub(1)).copied().collect()
                } else {
                    ls[ls.len().saturating_sub(k)..].to_vec()
                };
                out.push_str(&picked.concat());
            }
            "sort" => {
                let mut v: Vec<String> = ls
                    .iter()
                    .map(|l| l.trim_end_matches('\n').to_string())
                    .collect();
                if flags.contains('n') {
                    v.sort_by_key(|l| l.trim().parse::<i64>().unwrap_or(0));
                } else {
                    v.sort();
                }
                if flags.contains('r') {
                    v.reverse();
                }
                if flags.contains('u') {
                    v.dedup();
                }
                out.push_str(&v.iter().map(|l| format!("{l}\n")).collect::<String>());
            }
            _ => {
                let mut last: Option<&str> = None;
                for l in ls {
                    let l = l.trim_end_matches('\n');
                    if last != Some(l) {
                        out.push_str(&format!("{l}\n"));
                    }
                    last = Some(l);
                }
            }
        }
    }
    p.out(&out);
    if status == 0 && contents.is_empty() {
        status = 1;
    }
    status
}

async fn grep(p: &mut Proc, args: &[String]) -> i32 {
    let (pat, files, flags) = count(args);
    let (pattern, files) = match pat {
        Some(pat) => (pat, files),
        None => match files.split_first() {
            Some((pat, rest)) => (pat.clone(), rest.to_vec()),
            None => {
                p.err("BusyBox v1.37.0 multi-call binary.\n\nUsage: grep [-HhnlLoqvsrRiwFE] PATTERN [FILE]...\n");
                return 2;
            }
        },
    };
    let icase = flags.contains('i');
    let (contents, err) = inputs(p, "grep", &files).await;
    let many = files.len() > 1;
    let mut out = String::new();
    let mut any = false;
    for (file, text) in &contents {
        let mut n = 0;
        for (i, line) in text.lines().enumerate() {
            if matches(&pattern, line, icase, flags.contains('w')) == flags.contains('v') {
                continue;
            }
            any = true;
            n += 1;
            if flags.contains('c') || flags.contains('q') || flags.contains('l') {
                continue;
            }
            if many && !flags.contains('h') {
                out.push_str(&format!("{file}:"));
            }
            if flags.contains('n') {
                out.push_str(&format!("{}:", i + 1));
            }
            out.push_str(&format!("{line}\n"));
        }
        if flags.contains('c') {
            if many {
                out.push_str(&format!("{file}:"));
            }
            out.push_str(&format!("{n}\n"));
        } else if flags.contains('l') && n > 0 {
            out.push_str(&format!(
                "{}\n",
                if file == "-" {
                    "(standard input)"
                } else {
                    file
                }
            ));
        }
    }
    if flags.contains('q') {
        return if any {
            0
        } else if err != 0 {
            2
        } else {
            1
        };
    }
    p.out(&out);
    if err != 0 && !flags.contains('s') {
        return 2;
    }
    i32::from(!any)
}

/// A literal pattern, with `^` and `$` anchors and `.` as any character.
fn matches(pattern: &str, line: &str, icase: bool, word: bool) -> bool {
    let (pattern, line) = if icase {
        (pattern.to_lowercase(), line.to_lowercase())
    } else {
        (pattern.to_string(), line.to_string())
    };
    let start = pattern.starts_with('^');
    let end = pattern.ends_with('$') && !pattern.ends_with("\\$");
    let core = &pattern[usize::from(start)..pattern.len() - usize::from(end)];
    let core: Vec<char> = core.chars().collect();
    let line: Vec<char> = line.chars().collect();
    let at = |i: usize| -> bool {
        if i + core.len() > line.len() {
            return false;
        }
        let ok = core
            .iter()
            .zip(&line[i..])
            .all(|(p, c)| *p == '.' || p == c);
        let boundary = |k: Option<&char>| k.is_none_or(|c| !(c.is_alphanumeric() || *c == '_'));
        ok && (!word
            || (boundary(i.checked_sub(1).and_then(|k| line.get(k)))
                && boundary(line.get(i + core.len()))))
    };
    if start {
        return at(0) && (!end || core.len() == line.len());
    }
    if end {
        return line.len() >= core.len() && at(line.len() - core.len());
    }
    (0..=line.len().saturating_sub(core.len())).any(at) && core.len() <= line.len()
}
