//! The terminal line discipline of an exec session with a TTY (`kubectl exec -it`): kubectl
//! puts the user's terminal in raw mode, so the remote side echoes what is typed, edits the
//! line (backspace, Ctrl-U), hands complete lines to the process on Enter, and turns Ctrl-D on
//! an empty line into the end of input and Ctrl-C into a fresh line, as a pty in cooked mode.

/// What a chunk of typed input does.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Cooked {
    /// Sent back to the terminal.
    pub echo: String,
    /// Complete lines for the process's stdin, each with its newline.
    pub lines: Vec<String>,
    /// Ctrl-D on an empty line: stdin ends.
    pub eof: bool,
}

/// The line being typed.
#[derive(Debug, Default)]
pub(crate) struct LineDiscipline {
    line: String,
    /// Inside an escape sequence (arrow keys and the like, which are not edited here).
    escape: Option<usize>,
}

impl LineDiscipline {
    pub fn feed(&mut self, input: &str) -> Cooked {
        let mut out = Cooked::default();
        for ch in input.chars() {
            if let Some(n) = self.escape {
                // ESC [ params final: skip to the final byte.
                let done = n > 0 && ch.is_ascii_alphabetic() || ch == '~' || n > 8;
                self.escape = if done { None } else { Some(n + 1) };
                continue;
            }
            match ch {
                '\x1b' => self.escape = Some(0),
                '\r' | '\n' => {
                    out.echo.push_str("\r\n");
                    let mut line = std::mem::take(&mut self.line);
                    line.push('\n');
                    out.lines.push(line);
                }
                '\x7f' | '\x08' => {
                    if self.line.pop().is_some() {
                        out.echo.push_str("\x08 \x08");
                    }
                }
                '\x15' => {
                    for _ in 0..self.line.chars().count() {
                        out.echo.push_str("\x08 \x08");
                    }
                    self.line.clear();
                }
                '\x03' => {
                    out.echo.push_str("^C\r\n");
                    self.line.clear();
                    // A fresh prompt, as the shell gives after SIGINT.
                    out.lines.push("\n".into());
                }
                '\x04' => {
                    if self.line.is_empty() {
                        out.eof = true;
                        break;
                    }
                }
                c if c.is_control() && c != '\t' => {}
                c => {
                    self.line.push(c);
                    out.echo.push(c);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typing_editing_and_control_keys() {
        let cases: Vec<(&[&str], &str, Vec<&str>, bool)> = vec![
            (&["ls /\r"], "ls /\r\n", vec!["ls /\n"], false),
            (&["l", "s", "\r"], "ls\r\n", vec!["ls\n"], false),
            (&["lx\x7fs\r"], "lx\x08 \x08s\r\n", vec!["ls\n"], false),
            (
                &["abc\x15ls\r"],
                "abc\x08 \x08\x08 \x08\x08 \x08ls\r\n",
                vec!["ls\n"],
                false,
            ),
            (&["\x1b[Als\r"], "ls\r\n", vec!["ls\n"], false),
            (&["sleep 9\x03"], "sleep 9^C\r\n", vec!["\n"], false),
            (&["\x04"], "", vec![], true),
            (&["ab\x04"], "ab", vec![], false),
        ];
        for (chunks, echo, lines, eof) in cases {
            let mut ld = LineDiscipline::default();
            let mut all = Cooked::default();
            for c in chunks {
                let got = ld.feed(c);
                all.echo.push_str(&got.echo);
                all.lines.extend(got.lines);
                all.eof |= got.eof;
            }
            assert_eq!(all.echo, echo, "{chunks:?}");
            assert_eq!(all.lines, lines, "{chunks:?}");
            assert_eq!(all.eof, eof, "{chunks:?}");
        }
    }
}
