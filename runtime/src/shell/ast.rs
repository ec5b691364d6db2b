//! The syntax tree of a script, as [`super::parser`] builds it and [`super::interp`] runs it.

use std::sync::Arc;

/// A word: the pieces it was written with, expanded and split at run time.
pub type Word = Vec<Part>;

#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// Literal text; `quoted` when it came from quotes or a backslash (never split or globbed).
    Lit { text: String, quoted: bool },
    /// `$NAME`, `${NAME...}`.
    Param {
        name: String,
        op: ParamOp,
        quoted: bool,
    },
    /// `$(...)` or backquotes.
    Command { body: Arc<List>, quoted: bool },
    /// `$((...))`: the expression's text, itself expanded before it is evaluated.
    Arith { expr: Word, quoted: bool },
    /// A leading `~`.
    Tilde,
}

/// What `${NAME<op>WORD}` does.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamOp {
    Plain,
    /// `${#NAME}`.
    Length,
    /// `-` / `:-`.
    Default {
        colon: bool,
        word: Word,
    },
    /// `=` / `:=`.
    Assign {
        colon: bool,
        word: Word,
    },
    /// `+` / `:+`.
    Alternative {
        colon: bool,
        word: Word,
    },
    /// `?` / `:?`.
    Error {
        colon: bool,
        word: Word,
    },
    /// `#` / `##`.
    TrimPrefix {
        longest: bool,
        pattern: Word,
    },
    /// `%` / `%%`.
    TrimSuffix {
        longest: bool,
        pattern: Word,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirKind {
    /// `<`
    In,
    /// `>` (and `>|`)
    Out,
    /// `>>`
    Append,
    /// `>&`
    DupOut,
    /// `<&`
    DupIn,
    /// `<>`
    ReadWrite,
    /// `<<` / `<<-`: the target is the document's body.
    Heredoc,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Redir {
    pub fd: u32,
    pub kind: RedirKind,
    pub target: Word,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Simple {
    pub assigns: Vec<(String, Word)>,
    pub words: Vec<Word>,
    pub redirs: Vec<Redir>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Compound {
    /// `{ ...; }`
    Group(List),
    /// `( ... )`
    Subshell(List),
    If {
        branches: Vec<(List, List)>,
        otherwise: Option<List>,
    },
    /// `while` / `until`.
    Loop {
        until: bool,
        cond: List,
        body: List,
    },
    For {
        var: String,
        words: Option<Vec<Word>>,
        body: List,
    },
    Case {
        word: Word,
        arms: Vec<CaseArm>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct CaseArm {
    pub patterns: Vec<Word>,
    pub body: List,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Simple(Simple),
    Compound(Compound, Vec<Redir>),
    /// `name() body`.
    Function(String, Arc<Command>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Pipeline {
    pub bang: bool,
    pub cmds: Vec<Command>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AndOr {
    pub first: Pipeline,
    /// `true`: `&&`, `false`: `||`.
    pub rest: Vec<(bool, Pipeline)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub and_or: AndOr,
    pub background: bool,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct List(pub Vec<Item>);
