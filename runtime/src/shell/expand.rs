//! Word expansion: parameters (`$X`, `${X:-y}`, `${#X}`, `$@`...), command substitution,
//! arithmetic, field splitting of unquoted results, and pathname globbing; plus the glob
//! matcher `case` and `${X#pattern}` use.

use super::arith;
use super::ast::{ParamOp, Part, Word};
use super::interp::{Flow, Shell};
use super::io::{take, Io, Sink};
use crate::fs::absolute;

/// Fields being built from one word.
#[derive(Default)]
struct Fields {
    done: Vec<Field>,
    cur: Field,
    started: bool,
    /// Whether unquoted expansions are split (not in assignments, `case` words...).
    split: bool,
}

#[derive(Default)]
struct Field {
    text: String,
    /// The text as a glob pattern, quoted characters escaped.
    pattern: String,
    glob: bool,
}

fn escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if "*?[]\\".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl Fields {
    fn quoted(&mut self, s: &str) {
        self.cur.text.push_str(s);
        self.cur.pattern.push_str(&escape(s));
        self.started = true;
    }

    fn unquoted(&mut self, s: &str) {
        self.cur.text.push_str(s);
        self.cur.pattern.push_str(s);
        self.cur.glob |= s.contains(['*', '?', '[']);
        self.started = true;
    }

    /// An unquoted expansion's result: split at blanks.
    fn expanded(&mut self, s: &str) {
        if !self.split {
            return self.unquoted(s);
        }
        for c in s.chars() {
            if matches!(c, ' ' | '\t' | '\n') {
                self.finish();
            } else {
                self.unquoted(c.encode_utf8(&mut [0; 4]));
            }
        }
    }

    fn finish(&mut self) {
        if self.started {
            self.done.push(std::mem::take(&mut self.cur));
            self.started = false;
        }
    }
}

impl Shell {
    /// `$name`.
    pub fn param(&self, name: &str) -> Option<String> {
        match name {
            "?" => Some(self.status.to_string()),
            "$" => Some(self.pid.to_string()),
            "#" => Some(self.params.len().to_string()),
            "@" | "*" => Some(self.params.join(" ")),
            "!" => self.last_bg.map(|p| p.to_string()),
            "-" => Some(format!(
                "{}{}",
                if self.errexit { "e" } else { "" },
                if self.xtrace { "x" } else { "" }
            )),
            "0" => Some(self.arg0.clone()),
            n if n.chars().all(|c| c.is_ascii_digit()) => {
                let i: usize = n.parse().ok()?;
                match i {
                    0 => Some(self.arg0.clone()),
                    i => self.params.get(i - 1).cloned(),
                }
            }
            n => self.get_var(n).map(str::to_string),
        }
    }

    /// Expand words into fields (split and globbed): a command's argv, `for`'s list.
    pub async fn expand_words(&mut self, words: &[Word], io: &Io) -> Result<Vec<String>, Flow> {
        let mut out = Vec::new();
        for w in words {
            let mut f = Fields {
                split: true,
                ..Fields::default()
            };
            self.expand_into(w, &mut f, io).await?;
            f.finish();
            for field in f.done {
                if field.glob {
                    let matches = self.glob(&field.pattern);
                    if !matches.is_empty() {
                        out.extend(matches);
                        continue;
                    }
                }
                out.push(field.text);
            }
        }
        Ok(out)
    }

    /// Expand a word into one string (assignments, redirection targets, `case` words).
    pub async fn expand_string(&mut self, word: &Word, io: &Io) -> Result<String, Flow> {
        let mut f = Fields::default();
        self.expand_into(word, &mut f, io).await?;
        Ok(f.cur.text)
    }

    /// Expand a word into a glob pattern (`case` patterns, `${X#pattern}`).
    pub async fn expand_pattern(&mut self, word: &Word, io: &Io) -> Result<String, Flow> {
        let mut f = Fields::default();
        self.expand_into(word, &mut f, io).await?;
        Ok(f.cur.pattern)
    }

    fn expand_into<'s>(
        &'s mut self,
        word: &'s Word,
        f: &'s mut Fields,
        io: &'s Io,
    ) -> crate::BoxFuture<'s, Result<(), Flow>> {
        Box::pin(async move {
            for part in word {
                match part {
                    Part::Lit { text, quoted } => {
                        if *quoted {
                            f.quoted(text)
                        } else {
                            f.unquoted(text)
                        }
                    }
                    Part::Tilde => {
                        let home = self.get_var("HOME").unwrap_or("/root").to_string();
                        f.quoted(&home);
                    }
                    Part::Param { name, op, quoted } => {
                        if name == "@" && *quoted && *op == ParamOp::Plain {
                            for (i, p) in self.params.clone().iter().enumerate() {
                                if i > 0 {
                                    f.finish();
                                }
                                f.quoted(p);
                            }
                            continue;
                        }
                        let value = self.param_op(name, op, io).await?;
                        if *quoted {
                            f.quoted(&value)
                        } else {
                            f.expanded(&value)
                        }
                    }
                    Part::Command { body, quoted } => {
                        let (sink, buf) = Sink::buffer();
                        let sub = Io {
                            stdout: sink,
                            ..io.clone()
                        };
                        let mut child = self.subshell();
                        let status = match child.run_list(body, &sub).await {
                            Ok(s) | Err(Flow::Exit(s) | Flow::Return(s)) => s,
                            Err(_) => 0,
                        };
                        self.subst_status = status;
                        self.status = status;
                        let out = take(&buf);
                        let out = out.trim_end_matches('\n');
                        if *quoted {
                            f.quoted(out)
                        } else {
                            f.expanded(out)
                        }
                    }
                    Part::Arith { expr, quoted } => {
                        let text = self.expand_string(expr, io).await?;
                        match arith::eval(&text, self) {
                            Ok(n) => {
                                let s = n.to_string();
                                if *quoted {
                                    f.quoted(&s)
                                } else {
                                    f.expanded(&s)
                                }
                            }
                            Err(e) => {
                                self.err(io, &format!("sh: {e}\n"));
                                return Err(Flow::Exit(2));
                            }
                        }
                    }
                }
            }
            Ok(())
        })
    }

    async fn param_op(&mut self, name: &str, op: &ParamOp, io: &Io) -> Result<String, Flow> {
        let value = self.param(name);
        let unset = |colon: bool| value.as_deref().is_none_or(|v| colon && v.is_empty());
        Ok(match op {
            ParamOp::Plain => value.unwrap_or_default(),
            ParamOp::Length => value.unwrap_or_default().chars().count().to_string(),
            ParamOp::Default { colon, word } => {
                if unset(*colon) {
                    self.expand_string(word, io).await?
                } else {
                    value.unwrap_or_default()
                }
            }
            ParamOp::Assign { colon, word } => {
                if unset(*colon) {
                    let v = self.expand_string(word, io).await?;
                    self.set_var(name, &v);
                    v
                } else {
                    value.unwrap_or_default()
                }
            }
            ParamOp::Alternative { colon, word } => {
                if unset(*colon) {
                    String::new()
                } else {
                    self.expand_string(word, io).await?
                }
            }
            ParamOp::Error { colon, word } => {
                if unset(*colon) {
                    let msg = self.expand_string(word, io).await?;
                    let msg = if msg.is_empty() {
                        "parameter not set".to_string()
                    } else {
                        msg
                    };
                    self.err(io, &format!("sh: {name}: {msg}\n"));
                    return Err(Flow::Exit(1));
                }
                value.unwrap_or_default()
            }
            ParamOp::TrimPrefix { longest, pattern } => {
                let v = value.unwrap_or_default();
                let p = self.expand_pattern(pattern, io).await?;
                let cuts: Vec<usize> = v.char_indices().map(|(i, _)| i).chain([v.len()]).collect();
                let mut found = None;
                for &i in &cuts {
                    if glob_match(&p, &v[..i]) {
                        found = Some(i);
                        if !longest {
                            break;
                        }
                    }
                }
                found.map_or(v.clone(), |i| v[i..].to_string())
            }
            ParamOp::TrimSuffix { longest, pattern } => {
                let v = value.unwrap_or_default();
                let p = self.expand_pattern(pattern, io).await?;
                let cuts: Vec<usize> = v.char_indices().map(|(i, _)| i).chain([v.len()]).collect();
                let mut found = None;
                for &i in cuts.iter().rev() {
                    if glob_match(&p, &v[i..]) {
                        found = Some(i);
                        if !longest {
                            break;
                        }
                    }
                }
                found.map_or(v.clone(), |i| v[..i].to_string())
            }
        })
    }

    /// The paths matching `pattern`, sorted; empty when none does.
    fn glob(&self, pattern: &str) -> Vec<String> {
        let absolute_pat = pattern.starts_with('/');
        let parts: Vec<&str> = pattern.split('/').filter(|p| !p.is_empty()).collect();
        let mut found: Vec<String> = vec![if absolute_pat {
            "/".into()
        } else {
            String::new()
        }];
        for part in parts {
            let mut next = Vec::new();
            let magic = part.contains(['*', '?', '[']);
            for base in &found {
                let dir = absolute(&self.cwd, if base.is_empty() { "." } else { base });
                let join = |name: &str| {
                    if base.is_empty() {
                        name.to_string()
                    } else if base.ends_with('/') {
                        format!("{base}{name}")
                    } else {
                        format!("{base}/{name}")
                    }
                };
                if !magic {
                    let name = unescape(part);
                    let p = join(&name);
                    if self.fs.exists(&absolute(&self.cwd, &p)) {
                        next.push(p);
                    }
                    continue;
                }
                let Ok(entries) = self.fs.list(&dir) else {
                    continue;
                };
                if !self.fs.is_dir(&dir) {
                    continue;
                }
                for e in entries {
                    if e.name.starts_with('.') && !part.starts_with('.') {
                        continue;
                    }
                    if glob_match(part, &e.name) {
                        next.push(join(&e.name));
                    }
                }
            }
            found = next;
        }
        found.sort();
        found
    }
}

fn unescape(p: &str) -> String {
    let mut out = String::new();
    let mut cs = p.chars();
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
}

/// Whether `s` matches the glob `pattern` (`*`, `?`, `[a-z]`, `[!x]`, `\` escapes).
pub fn glob_match(pattern: &str, s: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let s: Vec<char> = s.chars().collect();
    match_at(&p, &s)
}

fn match_at(p: &[char], s: &[char]) -> bool {
    let Some(&c) = p.first() else {
        return s.is_empty();
    };
    match c {
        '*' => (0..=s.len()).any(|i| match_at(&p[1..], &s[i..])),
        '?' => !s.is_empty() && match_at(&p[1..], &s[1..]),
        '[' => {
            let Some(&ch) = s.first() else {
                return false;
            };
            match class(&p[1..], ch) {
                Some((ok, used)) => ok && match_at(&p[1 + used..], &s[1..]),
                None => ch == '[' && match_at(&p[1..], &s[1..]),
            }
        }
        '\\' if p.len() > 1 => s.first() == Some(&p[1]) && match_at(&p[2..], &s[1..]),
        _ => s.first() == Some(&c) && match_at(&p[1..], &s[1..]),
    }
}

/// A bracket expression after its `[`: whether `ch` is in it, and the characters it took.
fn class(p: &[char], ch: char) -> Option<(bool, usize)> {
    let mut i = 0;
    let negate = matches!(p.first(), Some('!' | '^'));
    if negate {
        i += 1;
    }
    let mut hit = false;
    let mut first = true;
    while i < p.len() {
        let c = p[i];
        if c == ']' && !first {
            return Some((hit != negate, i + 1));
        }
        first = false;
        if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
            hit |= (c..=p[i + 2]).contains(&ch);
            i += 3;
        } else {
            hit |= c == ch;
            i += 1;
        }
    }
    None
}
