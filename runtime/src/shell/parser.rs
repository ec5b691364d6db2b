//! The grammar of ash scripts over [`super::lexer`]'s tokens: lists, and-or chains, pipelines,
//! simple commands with assignments and redirections, the compound commands and functions.

use std::sync::Arc;

use super::ast::{
    AndOr, CaseArm, Command, Compound, Item, List, Part, Pipeline, Redir, RedirKind, Simple, Word,
};
use super::lexer::{ParseError, Parser, Tok};

/// Words that end a list where they stand.
const LIST_END: [&str; 8] = ["then", "else", "elif", "fi", "do", "done", "esac", "}"];

/// Parse a whole script.
pub fn parse(src: &str) -> Result<List, ParseError> {
    Parser::new(src).parse_program()
}

fn redir_kind(op: &str) -> Option<RedirKind> {
    Some(match op {
        "<" => RedirKind::In,
        ">" | ">|" => RedirKind::Out,
        ">>" => RedirKind::Append,
        ">&" => RedirKind::DupOut,
        "<&" => RedirKind::DupIn,
        "<>" => RedirKind::ReadWrite,
        "<<" | "<<-" => RedirKind::Heredoc,
        _ => return None,
    })
}

fn is_name(s: &str) -> bool {
    let mut cs = s.chars();
    cs.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `NAME=value` as an assignment: the name and the value's word.
fn assignment(word: &Word) -> Option<(String, Word)> {
    let Some(Part::Lit {
        text,
        quoted: false,
    }) = word.first()
    else {
        return None;
    };
    let eq = text.find('=')?;
    if !is_name(&text[..eq]) {
        return None;
    }
    let mut value = Word::new();
    if eq + 1 < text.len() {
        value.push(Part::Lit {
            text: text[eq + 1..].to_string(),
            quoted: false,
        });
    }
    value.extend(word[1..].iter().cloned());
    Some((text[..eq].to_string(), value))
}

impl Parser {
    pub fn parse_program(&mut self) -> Result<List, ParseError> {
        let list = self.parse_list()?;
        match self.peek()? {
            Tok::Eof => Ok(list),
            t => Err(ParseError::Unexpected(t.describe())),
        }
    }

    fn peek(&mut self) -> Result<&Tok, ParseError> {
        if self.peeked.is_none() {
            self.peeked = Some(self.next_tok()?);
        }
        Ok(self.peeked.as_ref().expect("peeked"))
    }

    fn next(&mut self) -> Result<Tok, ParseError> {
        self.peek()?;
        Ok(self.peeked.take().expect("peeked"))
    }

    fn unexpected(&mut self) -> ParseError {
        match self.peek() {
            Ok(t) => ParseError::Unexpected(t.describe()),
            Err(e) => e,
        }
    }

    /// Whether the next token is the reserved word `w`.
    fn is_word(&mut self, w: &str) -> Result<bool, ParseError> {
        Ok(matches!(self.peek()?, Tok::Word { raw, .. } if raw == w))
    }

    fn expect_word(&mut self, w: &str) -> Result<(), ParseError> {
        if self.is_word(w)? {
            self.next()?;
            return Ok(());
        }
        Err(self.expecting(w))
    }

    fn expect_op(&mut self, op: &str) -> Result<(), ParseError> {
        if matches!(self.peek()?, Tok::Op(o) if *o == op) {
            self.next()?;
            return Ok(());
        }
        Err(self.expecting(op))
    }

    fn expecting(&mut self, what: &str) -> ParseError {
        match self.peek() {
            Ok(Tok::Eof) => ParseError::Expecting(what.into()),
            Ok(t) => ParseError::Unexpected(t.describe()),
            Err(e) => e,
        }
    }

    fn skip_newlines(&mut self) -> Result<(), ParseError> {
        while matches!(self.peek()?, Tok::Newline) {
            self.next()?;
        }
        Ok(())
    }

    fn at_list_end(&mut self) -> Result<bool, ParseError> {
        Ok(match self.peek()? {
            Tok::Eof | Tok::Op(")" | ";;") => true,
            Tok::Word { raw, .. } => LIST_END.contains(&raw.as_str()),
            _ => false,
        })
    }

    pub(super) fn parse_list(&mut self) -> Result<List, ParseError> {
        let mut items = Vec::new();
        loop {
            self.skip_newlines()?;
            if self.at_list_end()? {
                break;
            }
            let and_or = self.parse_and_or()?;
            let background = match self.peek()? {
                Tok::Op(";") | Tok::Newline => false,
                Tok::Op("&") => true,
                _ => {
                    items.push(Item {
                        and_or,
                        background: false,
                    });
                    break;
                }
            };
            self.next()?;
            items.push(Item { and_or, background });
        }
        Ok(List(items))
    }

    /// A list that must hold a command (after `if`, `then`, `do`...).
    fn parse_body(&mut self) -> Result<List, ParseError> {
        let list = self.parse_list()?;
        if list.0.is_empty() {
            return Err(self.unexpected());
        }
        Ok(list)
    }

    fn parse_and_or(&mut self) -> Result<AndOr, ParseError> {
        let first = self.parse_pipeline()?;
        let mut rest = Vec::new();
        loop {
            let and = match self.peek()? {
                Tok::Op("&&") => true,
                Tok::Op("||") => false,
                _ => break,
            };
            self.next()?;
            self.skip_newlines()?;
            rest.push((and, self.parse_pipeline()?));
        }
        Ok(AndOr { first, rest })
    }

    fn parse_pipeline(&mut self) -> Result<Pipeline, ParseError> {
        let bang = self.is_word("!")?;
        if bang {
            self.next()?;
        }
        let mut cmds = vec![self.parse_command()?];
        while matches!(self.peek()?, Tok::Op("|")) {
            self.next()?;
            self.skip_newlines()?;
            cmds.push(self.parse_command()?);
        }
        Ok(Pipeline { bang, cmds })
    }

    fn parse_command(&mut self) -> Result<Command, ParseError> {
        let compound = match self.peek()? {
            Tok::Op("(") => {
                self.next()?;
                let body = self.parse_body()?;
                self.expect_op(")")?;
                Compound::Subshell(body)
            }
            Tok::Word { raw, .. } => match raw.as_str() {
                "if" => self.parse_if()?,
                "while" | "until" => {
                    let until = raw == "until";
                    self.next()?;
                    let cond = self.parse_body()?;
                    self.expect_word("do")?;
                    let body = self.parse_body()?;
                    self.expect_word("done")?;
                    Compound::Loop { until, cond, body }
                }
                "for" => self.parse_for()?,
                "case" => self.parse_case()?,
                "{" => {
                    self.next()?;
                    let body = self.parse_body()?;
                    self.expect_word("}")?;
                    Compound::Group(body)
                }
                r if LIST_END.contains(&r) => return Err(self.unexpected()),
                _ => return self.parse_simple(),
            },
            Tok::IoNum(_)
            | Tok::Op("<" | ">" | ">>" | ">&" | "<&" | "<>" | ">|" | "<<" | "<<-") => {
                return self.parse_simple()
            }
            _ => return Err(self.unexpected()),
        };
        let mut redirs = Vec::new();
        while let Some(r) = self.parse_redir()? {
            redirs.push(r);
        }
        Ok(Command::Compound(compound, redirs))
    }

    fn parse_if(&mut self) -> Result<Compound, ParseError> {
        self.next()?;
        let mut branches = Vec::new();
        let mut otherwise = None;
        loop {
            let cond = self.parse_body()?;
            self.expect_word("then")?;
            let body = self.parse_body()?;
            branches.push((cond, body));
            if self.is_word("elif")? {
                self.next()?;
                continue;
            }
            if self.is_word("else")? {
                self.next()?;
                otherwise = Some(self.parse_body()?);
            }
            self.expect_word("fi")?;
            return Ok(Compound::If {
                branches,
                otherwise,
            });
        }
    }

    fn parse_for(&mut self) -> Result<Compound, ParseError> {
        self.next()?;
        let var = match self.next()? {
            Tok::Word { raw, .. } if is_name(&raw) => raw,
            Tok::Eof => return Err(ParseError::Unexpected("end of file".into())),
            t => return Err(ParseError::Unexpected(t.describe())),
        };
        self.skip_newlines()?;
        let mut words = None;
        if self.is_word("in")? {
            self.next()?;
            let mut list = Vec::new();
            while let Tok::Word { .. } = self.peek()? {
                if let Tok::Word { word, .. } = self.next()? {
                    list.push(word);
                }
            }
            match self.peek()? {
                Tok::Op(";") | Tok::Newline => {
                    self.next()?;
                }
                _ => return Err(self.expecting("do")),
            }
            words = Some(list);
        } else if matches!(self.peek()?, Tok::Op(";")) {
            self.next()?;
        }
        self.skip_newlines()?;
        self.expect_word("do")?;
        let body = self.parse_body()?;
        self.expect_word("done")?;
        Ok(Compound::For { var, words, body })
    }

    fn parse_case(&mut self) -> Result<Compound, ParseError> {
        self.next()?;
        let word = match self.next()? {
            Tok::Word { word, .. } => word,
            Tok::Eof => return Err(ParseError::Unexpected("end of file".into())),
            t => return Err(ParseError::Unexpected(t.describe())),
        };
        self.skip_newlines()?;
        self.expect_word("in")?;
        let mut arms = Vec::new();
        loop {
            self.skip_newlines()?;
            if self.is_word("esac")? {
                self.next()?;
                return Ok(Compound::Case { word, arms });
            }
            if matches!(self.peek()?, Tok::Op("(")) {
                self.next()?;
            }
            let mut patterns = Vec::new();
            loop {
                match self.next()? {
                    Tok::Word { word, .. } => patterns.push(word),
                    Tok::Eof => return Err(ParseError::Expecting("esac".into())),
                    t => return Err(ParseError::Unexpected(t.describe())),
                }
                if matches!(self.peek()?, Tok::Op("|")) {
                    self.next()?;
                    continue;
                }
                break;
            }
            self.expect_op(")")?;
            let body = self.parse_list()?;
            arms.push(CaseArm { patterns, body });
            if matches!(self.peek()?, Tok::Op(";;")) {
                self.next()?;
            } else if !self.is_word("esac")? {
                return Err(self.expecting("esac"));
            }
        }
    }

    /// A redirection, if one comes next.
    fn parse_redir(&mut self) -> Result<Option<Redir>, ParseError> {
        let (fd, op) = match self.peek()? {
            Tok::IoNum(n) => {
                let n = *n;
                self.next()?;
                match self.next()? {
                    Tok::Op(op) if redir_kind(op).is_some() => (Some(n), op),
                    t => return Err(ParseError::Unexpected(t.describe())),
                }
            }
            Tok::Op(op) if redir_kind(op).is_some() => {
                let op = *op;
                self.next()?;
                (None, op)
            }
            _ => return Ok(None),
        };
        let kind = redir_kind(op).expect("redirection");
        let fd = fd.unwrap_or(match kind {
            RedirKind::In | RedirKind::DupIn | RedirKind::ReadWrite | RedirKind::Heredoc => 0,
            _ => 1,
        });
        let (word, raw) = match self.next()? {
            Tok::Word { word, raw } => (word, raw),
            t => return Err(ParseError::Unexpected(t.describe())),
        };
        let target = if kind == RedirKind::Heredoc {
            let quoted = raw.contains(['\'', '"', '\\']);
            let delim: String = raw.chars().filter(|c| !"'\"\\".contains(*c)).collect();
            let body = self.heredoc_body(&delim, op == "<<-");
            if quoted {
                vec![Part::Lit {
                    text: body,
                    quoted: true,
                }]
            } else {
                Parser::new(&body).lex_dq(None, true)?
            }
        } else {
            word
        };
        Ok(Some(Redir { fd, kind, target }))
    }

    fn parse_simple(&mut self) -> Result<Command, ParseError> {
        let mut s = Simple::default();
        loop {
            if let Some(r) = self.parse_redir()? {
                s.redirs.push(r);
                continue;
            }
            let Tok::Word { .. } = self.peek()? else {
                break;
            };
            let Some(Tok::Word { word, raw }) = self.peeked.take() else {
                unreachable!("peeked a word")
            };
            if s.words.is_empty() {
                if let Some(a) = assignment(&word) {
                    s.assigns.push(a);
                    continue;
                }
            }
            if s.words.is_empty()
                && s.assigns.is_empty()
                && s.redirs.is_empty()
                && matches!(self.peek()?, Tok::Op("("))
            {
                self.next()?;
                self.expect_op(")")?;
                self.skip_newlines()?;
                let body = self.parse_command()?;
                if !matches!(body, Command::Compound(..)) {
                    return Err(ParseError::Unexpected(format!("\"{raw}\"")));
                }
                return Ok(Command::Function(raw, Arc::new(body)));
            }
            s.words.push(word);
        }
        if s.words.is_empty() && s.assigns.is_empty() && s.redirs.is_empty() {
            return Err(self.unexpected());
        }
        Ok(Command::Simple(s))
    }
}
