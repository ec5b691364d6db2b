//! Redirections: `<`, `>`, `>>`, `2>&1`, here-documents, and the special files `/dev/null`,
//! `/dev/stdout`, `/dev/stderr`, applied over a command's streams.

use super::ast::{Redir, RedirKind};
use super::interp::{Flow, Shell};
use super::io::{Input, Io, Sink};
use crate::fs::absolute;
use crate::FsError;

impl Shell {
    /// Apply redirections over `io`; `None` (after saying why) when one fails.
    pub async fn redirect(&mut self, redirs: &[Redir], io: &Io) -> Result<Option<Io>, Flow> {
        let mut new = io.clone();
        for r in redirs {
            let target = self.expand_string(&r.target, io).await?;
            let path = absolute(&self.cwd, &target);
            match r.kind {
                RedirKind::Heredoc => new.stdin = Input::data(target),
                RedirKind::In | RedirKind::ReadWrite => {
                    new.stdin = match target.as_str() {
                        "/dev/null" => Input::empty(),
                        "/dev/stdin" => new.stdin,
                        _ => match self.fs.read(&path) {
                            Ok(data) => Input::data(String::from_utf8_lossy(&data).into()),
                            Err(e) => {
                                self.err(io, &format!("sh: can't open '{target}': {e}\n"));
                                return Ok(None);
                            }
                        },
                    }
                }
                RedirKind::Out | RedirKind::Append => {
                    let sink = match target.as_str() {
                        "/dev/null" => Sink::Null,
                        "/dev/stdout" => new.stdout.clone(),
                        "/dev/stderr" => new.stderr.clone(),
                        _ => {
                            let append = r.kind == RedirKind::Append;
                            if let Err(e) = self.fs.write(&path, b"", append) {
                                let why = match e {
                                    FsError::NotFound => "nonexistent directory".to_string(),
                                    e => e.to_string(),
                                };
                                self.err(io, &format!("sh: can't create {target}: {why}\n"));
                                return Ok(None);
                            }
                            Sink::File(self.fs.clone(), path)
                        }
                    };
                    set_fd(&mut new, r.fd, sink);
                }
                RedirKind::DupOut => {
                    let sink = match target.as_str() {
                        "1" => new.stdout.clone(),
                        "2" => new.stderr.clone(),
                        "-" => Sink::Null,
                        _ => continue,
                    };
                    set_fd(&mut new, r.fd, sink);
                }
                RedirKind::DupIn => {}
            }
        }
        Ok(Some(new))
    }
}

fn set_fd(io: &mut Io, fd: u32, sink: Sink) {
    match fd {
        1 => io.stdout = sink,
        2 => io.stderr = sink,
        _ => {}
    }
}
