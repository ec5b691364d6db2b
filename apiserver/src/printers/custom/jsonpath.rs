//! kubectl's JSONPath dialect (client-go `util/jsonpath`), as the custom resource Table printer
//! evaluates `additionalPrinterColumns`: a template of text and `{...}` actions with fields,
//! `['key']`, indexes and slices, `[*]`, unions `[a,b]`, recursive `..` and filters `[?(...)]`.
//! Missing keys give no result rather than an error, as the printer asks.

use std::borrow::Cow;

use serde_json::Value;

/// Why a template does not parse, or an action fails on an object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsonPathError {
    #[error("{0}")]
    Parse(String),
    #[error("{0}")]
    Eval(String),
}

fn parse_err<T>(msg: impl Into<String>) -> Result<T, JsonPathError> {
    Err(JsonPathError::Parse(msg.into()))
}

fn eval_err<T>(msg: impl Into<String>) -> Result<T, JsonPathError> {
    Err(JsonPathError::Eval(msg.into()))
}

/// One bound of a slice `[start:end:step]`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Bound {
    known: bool,
    value: i64,
    /// The end of a plain index `[i]`, which is `i + 1`.
    derived: bool,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Text(String),
    Field(String),
    Wildcard,
    Recursive,
    Slice([Bound; 3]),
    Union(Vec<Vec<Node>>),
    Filter {
        left: Vec<Node>,
        right: Vec<Node>,
        op: String,
    },
    Int(i64),
    Float(f64),
    Bool(bool),
    Identifier(String),
    /// One `{...}` action of a template.
    Action(Vec<Node>),
}

/// A parsed template: text and actions, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath {
    roots: Vec<Node>,
}

impl JsonPath {
    /// Parse a template such as `{.spec.replicas}`.
    pub fn parse(template: &str) -> Result<JsonPath, JsonPathError> {
        let mut roots = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                roots.push(Node::Text(rest[..open].to_string()));
            }
            let mut p = Parser {
                input: &rest[open + 1..],
                pos: 0,
            };
            let mut nodes = Vec::new();
            p.inside_action(&mut nodes, true)?;
            roots.push(Node::Action(nodes));
            rest = &p.input[p.pos..];
        }
        if !rest.is_empty() {
            roots.push(Node::Text(rest.to_string()));
        }
        Ok(JsonPath { roots })
    }

    /// The results of each text or action of the template, against `data`.
    pub fn find<'a>(&self, data: &'a Value) -> Result<Vec<Vec<Cow<'a, Value>>>, JsonPathError> {
        self.roots
            .iter()
            .map(|n| eval::walk(vec![Cow::Borrowed(data)], n))
            .collect()
    }
}

struct Parser<'s> {
    input: &'s str,
    pos: usize,
}

fn is_terminator(c: Option<char>) -> bool {
    matches!(
        c,
        None | Some(' ' | '\t' | '\r' | '\n' | '.' | ',' | '[' | ']' | '$' | '@' | '{' | '}')
    )
}

fn is_alphanumeric(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

impl Parser<'_> {
    fn rest(&self) -> &str {
        &self.input[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    /// Parse until the closing `}` (when `braced`) or the end of the input.
    fn inside_action(&mut self, cur: &mut Vec<Node>, braced: bool) -> Result<(), JsonPathError> {
        loop {
            let rest = self.rest();
            if rest.starts_with('}') && braced {
                self.pos += 1;
                return Ok(());
            }
            if rest.starts_with("[?(") {
                self.filter(cur)?;
                continue;
            }
            if rest.starts_with("..") {
                if matches!(cur.last(), Some(Node::Recursive)) {
                    return parse_err("invalid multiple recursive descent");
                }
                self.pos += 2;
                cur.push(Node::Recursive);
                if self.peek().is_some_and(is_alphanumeric) {
                    self.field(cur);
                }
                continue;
            }
            match self.bump() {
                None if !braced => return Ok(()),
                None | Some('\r' | '\n') => return parse_err("unclosed action"),
                Some(' ' | '@' | '$') => {}
                Some('[') => self.array(cur)?,
                Some(q @ ('"' | '\'')) => self.quote(cur, q)?,
                Some('.') => self.field(cur),
                Some(c) if c == '+' || c == '-' || c.is_ascii_digit() => {
                    self.pos -= 1;
                    self.number(cur)?;
                }
                Some(c) if is_alphanumeric(c) => {
                    self.pos -= c.len_utf8();
                    self.identifier(cur);
                }
                Some(c) => {
                    return parse_err(format!(
                        "unrecognized character in action: U+{:04X} '{c}'",
                        c as u32
                    ))
                }
            }
        }
    }

    /// A field name after `.`, up to the next unescaped terminator; `\` escapes are dropped.
    fn field(&mut self, cur: &mut Vec<Node>) {
        let start = self.pos;
        loop {
            match self.peek() {
                Some('\\') => {
                    self.bump();
                    self.bump();
                }
                c if is_terminator(c) => break,
                _ => {
                    self.bump();
                }
            }
        }
        let raw = &self.input[start..self.pos];
        cur.push(if raw == "*" {
            Node::Wildcard
        } else {
            Node::Field(raw.replace('\\', ""))
        });
    }

    fn identifier(&mut self, cur: &mut Vec<Node>) {
        let start = self.pos;
        while !is_terminator(self.peek()) {
            self.bump();
        }
        let word = &self.input[start..self.pos];
        cur.push(match word {
            "true" => Node::Bool(true),
            "false" => Node::Bool(false),
            _ => Node::Identifier(word.to_string()),
        });
    }

    fn number(&mut self, cur: &mut Vec<Node>) -> Result<(), JsonPathError> {
        let start = self.pos;
        if matches!(self.peek(), Some('+' | '-')) {
            self.bump();
        }
        while matches!(self.peek(), Some(c) if c == '.' || c.is_ascii_digit()) {
            self.bump();
        }
        let text = &self.input[start..self.pos];
        if let Ok(i) = text.parse::<i64>() {
            cur.push(Node::Int(i));
        } else if let Ok(f) = text.parse::<f64>() {
            cur.push(Node::Float(f));
        } else {
            return parse_err(format!("cannot parse number {text}"));
        }
        Ok(())
    }

    fn quote(&mut self, cur: &mut Vec<Node>, q: char) -> Result<(), JsonPathError> {
        let start = self.pos - 1;
        let mut prev = q;
        loop {
            match self.bump() {
                None | Some('\n') => return parse_err("unterminated quoted string"),
                Some(c) if c == q && prev != '\\' => break,
                Some(c) => prev = c,
            }
        }
        cur.push(Node::Text(unquote(&self.input[start..self.pos])?));
        Ok(())
    }

    /// `[...]` after its `[`: an index or slice, `*`, a union `a,b`, or a dict key `'k'`.
    fn array(&mut self, cur: &mut Vec<Node>) -> Result<(), JsonPathError> {
        let start = self.pos;
        loop {
            match self.bump() {
                None | Some('\n') => return parse_err("unterminated array"),
                Some(']') => break,
                _ => {}
            }
        }
        let mut text = &self.input[start..self.pos - 1];
        if text == "*" {
            text = ":";
        }
        if text.contains(',') {
            let parts = text
                .split(',')
                .map(|part| sub_action(&format!("[{}]", part.trim_matches(' '))))
                .collect::<Result<Vec<_>, _>>()?;
            cur.push(Node::Union(parts));
            return Ok(());
        }
        if let Some(key) = text
            .strip_prefix('\'')
            .and_then(|t| t.strip_suffix('\''))
            .filter(|k| !k.contains('\''))
        {
            cur.extend(sub_action(&format!(".{key}"))?);
            return Ok(());
        }
        cur.push(Node::Slice(slice_bounds(text)?));
        Ok(())
    }

    /// `[?(left op right)]` or `[?(path)]` after its `[`.
    fn filter(&mut self, cur: &mut Vec<Node>) -> Result<(), JsonPathError> {
        self.pos += 3;
        let start = self.pos;
        let (mut open, mut closed, mut pair, mut prev) = (false, false, '"', '(');
        loop {
            let Some(c) = self.bump() else {
                return parse_err("unterminated filter");
            };
            match c {
                '\n' => return parse_err("unterminated filter"),
                '"' | '\'' if !open => {
                    open = true;
                    pair = c;
                }
                '"' | '\'' if prev != '\\' && c == pair => closed = true,
                ')' if open == closed => break,
                _ => {}
            }
            prev = c;
        }
        let text = &self.input[start..self.pos - 1];
        if self.bump() != Some(']') {
            return parse_err("unclosed array expect ]");
        }
        let is_op = |c: char| matches!(c, '!' | '<' | '>' | '=');
        let split = text.find(is_op).filter(|&i| i > 0).and_then(|i| {
            let op_len = text[i..].find(|c| !is_op(c))?;
            Some((i, i + op_len))
        });
        let node = match split {
            Some((i, j)) if j < text.len() => Node::Filter {
                left: sub_action(&text[..i])?,
                right: sub_action(&text[j..])?,
                op: text[i..j].to_string(),
            },
            _ => Node::Filter {
                left: sub_action(text)?,
                right: Vec::new(),
                op: "exists".into(),
            },
        };
        cur.push(node);
        Ok(())
    }
}

/// The nodes of one action's text, as `{text}`.
fn sub_action(text: &str) -> Result<Vec<Node>, JsonPathError> {
    let mut p = Parser {
        input: text,
        pos: 0,
    };
    let mut nodes = Vec::new();
    p.inside_action(&mut nodes, false)?;
    Ok(nodes)
}

/// `start:end:step` with each part optional; `[i]` is `[i:i+1]`.
fn slice_bounds(text: &str) -> Result<[Bound; 3], JsonPathError> {
    let parts: Vec<&str> = text.split(':').collect();
    let number_like = |s: &str| {
        let digits = s.strip_prefix('-').unwrap_or(s);
        digits.chars().all(|c| c.is_ascii_digit())
    };
    if parts.len() > 3 || !parts.iter().all(|p| number_like(p)) {
        return parse_err(format!("invalid array index {text}"));
    }
    let mut bounds = [Bound::default(); 3];
    for (i, b) in bounds.iter_mut().enumerate() {
        match parts.get(i) {
            Some(s) if !s.is_empty() => {
                let value = s
                    .parse::<i64>()
                    .or_else(|_| parse_err(format!("array index {s} is not a number")))?;
                *b = Bound {
                    known: true,
                    value,
                    derived: false,
                };
            }
            None if i == 1 => {
                *b = Bound {
                    known: true,
                    value: parts[0].parse::<i64>().unwrap_or(0) + 1,
                    derived: true,
                }
            }
            _ => {}
        }
    }
    Ok(bounds)
}

/// A quoted string with Go's escapes, in single or double quotes.
fn unquote(quoted: &str) -> Result<String, JsonPathError> {
    let inner = &quoted[1..quoted.len() - 1];
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next() {
            Some('n') => '\n',
            Some('t') => '\t',
            Some('r') => '\r',
            Some(c @ ('\\' | '\'' | '"')) => c,
            _ => return parse_err(format!("unquote string {quoted} error invalid syntax")),
        });
    }
    Ok(out)
}

mod eval;

#[cfg(test)]
mod tests;
