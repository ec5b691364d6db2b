//! Tokens and words: quotes, backslashes, `$...` expansions and here-documents, read as ash
//! reads them. The grammar on top is [`super::parser`].

use std::sync::Arc;

use super::ast::{ParamOp, Part, Word};

/// A script being parsed: its characters, where the reader is, one token of look-ahead.
pub struct Parser {
    pub(super) src: Vec<char>,
    pub(super) pos: usize,
    pub(super) peeked: Option<Tok>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// A word, with the text it was written as (reserved words are recognised by it).
    Word {
        word: Word,
        raw: String,
    },
    /// The digits before a redirection (`2>`).
    IoNum(u32),
    Op(&'static str),
    Newline,
    Eof,
}

impl Tok {
    /// How ash names a token in `unexpected ...`.
    pub fn describe(&self) -> String {
        match self {
            Tok::Word { raw, .. } => format!("\"{raw}\""),
            Tok::IoNum(n) => format!("\"{n}\""),
            Tok::Op(op) => format!("\"{op}\""),
            Tok::Newline => "newline".into(),
            Tok::Eof => "end of file".into(),
        }
    }
}

/// A script that does not parse, worded as busybox's ash says it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("syntax error: unterminated quoted string")]
    Unterminated,
    #[error("syntax error: unexpected {0}")]
    Unexpected(String),
    #[error("syntax error: unexpected end of file (expecting \"{0}\")")]
    Expecting(String),
    #[error("syntax error: missing '}}'")]
    MissingBrace,
    #[error("syntax error: bad substitution")]
    BadSubstitution,
}

impl ParseError {
    /// Whether more input could complete the script (an interactive shell reads on).
    pub fn at_end(&self) -> bool {
        match self {
            ParseError::Unterminated | ParseError::MissingBrace | ParseError::Expecting(_) => true,
            ParseError::Unexpected(t) => t == "end of file",
            ParseError::BadSubstitution => false,
        }
    }
}

const OPS: [&str; 17] = [
    "&&", "||", ";;", "<<-", "<<", ">>", "<&", ">&", "<>", ">|", "&", "|", ";", "<", ">", "(", ")",
];

fn is_meta(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')'
    )
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Where a run of word characters ends.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// At a blank or an operator.
    Word,
    /// At the `}` closing `${...}`.
    Brace,
}

fn push_lit(parts: &mut Word, c: char, quoted: bool) {
    if let Some(Part::Lit { text, quoted: q }) = parts.last_mut() {
        if *q == quoted {
            text.push(c);
            return;
        }
    }
    parts.push(Part::Lit {
        text: c.to_string(),
        quoted,
    });
}

impl Parser {
    pub fn new(src: &str) -> Parser {
        Parser {
            src: src.chars().collect(),
            pos: 0,
            peeked: None,
        }
    }

    fn at(&self, i: usize) -> Option<char> {
        self.src.get(i).copied()
    }

    fn cur(&self) -> Option<char> {
        self.at(self.pos)
    }

    fn text(&self, from: usize, to: usize) -> String {
        self.src[from..to].iter().collect()
    }

    /// The next token (blanks, line continuations and comments skipped).
    pub(super) fn next_tok(&mut self) -> Result<Tok, ParseError> {
        loop {
            match self.cur() {
                Some(' ' | '\t' | '\r') => self.pos += 1,
                Some('\\') if self.at(self.pos + 1) == Some('\n') => self.pos += 2,
                Some('#') => {
                    while self.cur().is_some_and(|c| c != '\n') {
                        self.pos += 1;
                    }
                }
                _ => break,
            }
        }
        let Some(c) = self.cur() else {
            return Ok(Tok::Eof);
        };
        if c == '\n' {
            self.pos += 1;
            return Ok(Tok::Newline);
        }
        for op in OPS {
            if op
                .chars()
                .enumerate()
                .all(|(i, oc)| self.at(self.pos + i) == Some(oc))
            {
                self.pos += op.chars().count();
                return Ok(Tok::Op(op));
            }
        }
        let start = self.pos;
        let word = self.lex_parts(Stop::Word, false)?;
        let raw = self.text(start, self.pos);
        if raw.chars().all(|c| c.is_ascii_digit()) && matches!(self.cur(), Some('<' | '>')) {
            if let Ok(n) = raw.parse() {
                return Ok(Tok::IoNum(n));
            }
        }
        Ok(Tok::Word { word, raw })
    }

    fn lex_parts(&mut self, stop: Stop, in_dq: bool) -> Result<Word, ParseError> {
        let mut parts = Word::new();
        let word_start = self.pos;
        loop {
            let Some(c) = self.cur() else {
                if stop == Stop::Brace {
                    return Err(ParseError::MissingBrace);
                }
                break;
            };
            match stop {
                Stop::Word if is_meta(c) => break,
                Stop::Brace if c == '}' => break,
                _ => {}
            }
            match c {
                '\\' => {
                    self.pos += 1;
                    match self.cur() {
                        None => push_lit(&mut parts, '\\', true),
                        Some('\n') => self.pos += 1,
                        Some(x) => {
                            self.pos += 1;
                            push_lit(&mut parts, x, true);
                        }
                    }
                }
                '\'' if !in_dq => {
                    self.pos += 1;
                    let mut text = String::new();
                    loop {
                        match self.cur() {
                            None => return Err(ParseError::Unterminated),
                            Some('\'') => break,
                            Some(x) => text.push(x),
                        }
                        self.pos += 1;
                    }
                    self.pos += 1;
                    parts.push(Part::Lit { text, quoted: true });
                }
                '"' => {
                    self.pos += 1;
                    let inner = self.lex_dq(Some('"'), false)?;
                    self.pos += 1;
                    if inner.is_empty() {
                        parts.push(Part::Lit {
                            text: String::new(),
                            quoted: true,
                        });
                    }
                    parts.extend(inner);
                }
                '$' => self.lex_dollar(&mut parts, in_dq)?,
                '`' => self.lex_backquote(&mut parts, in_dq)?,
                '~' if stop == Stop::Word && self.pos == word_start => {
                    self.pos += 1;
                    if self.cur().is_none_or(|n| n == '/' || is_meta(n)) {
                        parts.push(Part::Tilde);
                    } else {
                        push_lit(&mut parts, '~', false);
                    }
                }
                _ => {
                    self.pos += 1;
                    push_lit(&mut parts, c, in_dq);
                }
            }
        }
        Ok(parts)
    }

    /// The inside of double quotes up to `end` (not consumed; `None`: the end of input), or
    /// a here-document's body (`heredoc`: a `"` is plain text).
    pub(super) fn lex_dq(&mut self, end: Option<char>, heredoc: bool) -> Result<Word, ParseError> {
        let mut parts = Word::new();
        loop {
            let c = self.cur();
            if c == end {
                return Ok(parts);
            }
            let Some(c) = c else {
                return Err(ParseError::Unterminated);
            };
            match c {
                '\\' => {
                    self.pos += 1;
                    match self.cur() {
                        Some('\n') => self.pos += 1,
                        Some(x @ ('$' | '`' | '\\')) => {
                            self.pos += 1;
                            push_lit(&mut parts, x, true);
                        }
                        Some('"') if !heredoc => {
                            self.pos += 1;
                            push_lit(&mut parts, '"', true);
                        }
                        _ => push_lit(&mut parts, '\\', true),
                    }
                }
                '$' => self.lex_dollar(&mut parts, true)?,
                '`' => self.lex_backquote(&mut parts, true)?,
                _ => {
                    self.pos += 1;
                    push_lit(&mut parts, c, true);
                }
            }
        }
    }

    fn lex_dollar(&mut self, parts: &mut Word, quoted: bool) -> Result<(), ParseError> {
        self.pos += 1;
        match self.cur() {
            Some('{') => {
                self.pos += 1;
                let part = self.lex_brace(quoted)?;
                parts.push(part);
            }
            Some('(') if self.at(self.pos + 1) == Some('(') => {
                if let Some(end) = self.arith_end(self.pos + 2) {
                    let text = self.text(self.pos + 2, end);
                    self.pos = end + 2;
                    let expr = Parser::new(&text).lex_dq(None, true)?;
                    parts.push(Part::Arith { expr, quoted });
                } else {
                    self.pos += 1;
                    let body = self.sub_command()?;
                    parts.push(Part::Command { body, quoted });
                }
            }
            Some('(') => {
                self.pos += 1;
                let body = self.sub_command()?;
                parts.push(Part::Command { body, quoted });
            }
            Some(c) if is_name_start(c) => {
                let start = self.pos;
                while self.cur().is_some_and(is_name_char) {
                    self.pos += 1;
                }
                parts.push(Part::Param {
                    name: self.text(start, self.pos),
                    op: ParamOp::Plain,
                    quoted,
                });
            }
            Some(c) if c.is_ascii_digit() || "?$#@*!-".contains(c) => {
                self.pos += 1;
                parts.push(Part::Param {
                    name: c.to_string(),
                    op: ParamOp::Plain,
                    quoted,
                });
            }
            _ => push_lit(parts, '$', quoted),
        }
        Ok(())
    }

    /// Where the `))` closing an arithmetic expansion starting at `from` is, if it is one.
    fn arith_end(&self, from: usize) -> Option<usize> {
        let mut depth = 0usize;
        let mut i = from;
        while let Some(c) = self.at(i) {
            match c {
                '(' => depth += 1,
                ')' if depth == 0 => return (self.at(i + 1) == Some(')')).then_some(i),
                ')' => depth -= 1,
                _ => {}
            }
            i += 1;
        }
        None
    }

    /// `$( ... )` after its `(`: the commands, and the `)` consumed.
    fn sub_command(&mut self) -> Result<Arc<super::ast::List>, ParseError> {
        let saved = self.peeked.take();
        let list = self.parse_list()?;
        match self.peeked.take() {
            Some(Tok::Op(")")) => {}
            Some(Tok::Eof) | None => return Err(ParseError::Expecting(")".into())),
            Some(t) => return Err(ParseError::Unexpected(t.describe())),
        }
        self.peeked = saved;
        Ok(Arc::new(list))
    }

    fn lex_backquote(&mut self, parts: &mut Word, quoted: bool) -> Result<(), ParseError> {
        self.pos += 1;
        let mut inner = String::new();
        loop {
            match self.cur() {
                None => return Err(ParseError::Unterminated),
                Some('`') => break,
                Some('\\') if matches!(self.at(self.pos + 1), Some('`' | '\\' | '$')) => {
                    inner.push(self.src[self.pos + 1]);
                    self.pos += 2;
                    continue;
                }
                Some(c) => inner.push(c),
            }
            self.pos += 1;
        }
        self.pos += 1;
        let body = Arc::new(Parser::new(&inner).parse_program()?);
        parts.push(Part::Command { body, quoted });
        Ok(())
    }

    /// `${...}` after its `{`.
    fn lex_brace(&mut self, quoted: bool) -> Result<Part, ParseError> {
        let length = self.cur() == Some('#') && self.at(self.pos + 1).is_some_and(|c| c != '}');
        if length {
            self.pos += 1;
        }
        let start = self.pos;
        match self.cur() {
            Some(c) if is_name_start(c) => {
                while self.cur().is_some_and(is_name_char) {
                    self.pos += 1;
                }
            }
            Some(c) if c.is_ascii_digit() => {
                while self.cur().is_some_and(|c| c.is_ascii_digit()) {
                    self.pos += 1;
                }
            }
            Some(c) if "?$#@*!-".contains(c) => self.pos += 1,
            None => return Err(ParseError::MissingBrace),
            _ => return Err(ParseError::BadSubstitution),
        }
        let name = self.text(start, self.pos);
        if length {
            return match self.cur() {
                Some('}') => {
                    self.pos += 1;
                    Ok(Part::Param {
                        name,
                        op: ParamOp::Length,
                        quoted,
                    })
                }
                None => Err(ParseError::MissingBrace),
                _ => Err(ParseError::BadSubstitution),
            };
        }
        let colon = self.cur() == Some(':');
        if colon {
            self.pos += 1;
        }
        let Some(c) = self.cur() else {
            return Err(ParseError::MissingBrace);
        };
        let mut op_char = c;
        let mut doubled = false;
        match c {
            '}' if !colon => {
                self.pos += 1;
                return Ok(Part::Param {
                    name,
                    op: ParamOp::Plain,
                    quoted,
                });
            }
            '-' | '=' | '+' | '?' => self.pos += 1,
            '#' | '%' if !colon => {
                self.pos += 1;
                if self.cur() == Some(c) {
                    self.pos += 1;
                    doubled = true;
                }
            }
            _ => {
                op_char = '!';
            }
        }
        if op_char == '!' {
            return Err(ParseError::BadSubstitution);
        }
        let word = self.lex_parts(Stop::Brace, quoted)?;
        self.pos += 1;
        let op = match op_char {
            '-' => ParamOp::Default { colon, word },
            '=' => ParamOp::Assign { colon, word },
            '+' => ParamOp::Alternative { colon, word },
            '?' => ParamOp::Error { colon, word },
            '#' => ParamOp::TrimPrefix {
                longest: doubled,
                pattern: word,
            },
            _ => ParamOp::TrimSuffix {
                longest: doubled,
                pattern: word,
            },
        };
        Ok(Part::Param { name, op, quoted })
    }

    /// A here-document's body for the delimiter just read: the lines after the current one up
    /// to the delimiter, cut out of the source.
    pub(super) fn heredoc_body(&mut self, delim: &str, strip_tabs: bool) -> String {
        let mut eol = self.pos;
        while self.at(eol).is_some_and(|c| c != '\n') {
            eol += 1;
        }
        if eol >= self.src.len() {
            return String::new();
        }
        let start = eol + 1;
        let mut body = String::new();
        let mut i = start;
        let mut end = self.src.len();
        while i < self.src.len() {
            let mut j = i;
            while self.at(j).is_some_and(|c| c != '\n') {
                j += 1;
            }
            let line = self.text(i, j);
            let line = if strip_tabs {
                line.trim_start_matches('\t').to_string()
            } else {
                line
            };
            let next = (j + 1).min(self.src.len());
            if line == delim {
                end = next;
                break;
            }
            body.push_str(&line);
            body.push('\n');
            i = next;
        }
        self.src.drain(start..end.max(start));
        body
    }
}
