//! `$(( ... ))`: integer arithmetic as C (and ash) does it, with variables read and assigned
//! by name (`i+1`, `$i+1`, `i += 2`, `i++`).

use super::interp::Shell;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArithError {
    #[error("arithmetic syntax error")]
    Syntax,
    #[error("divide by zero")]
    DivideByZero,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(i64),
    Name(String),
    Op(&'static str),
}

const OPS: [&str; 34] = [
    "<<=", ">>=", "**", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+=", "-=", "*=", "/=",
    "%=", "++", "--", "+", "-", "*", "/", "%", "<", ">", "=", "!", "~", "&", "|", "^", "?", ":",
    "(",
];

fn tokenize(s: &str) -> Result<Vec<Tok>, ArithError> {
    let cs: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    'outer: while i < cs.len() {
        let c = cs[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_digit() {
            let start = i;
            while i < cs.len() && cs[i].is_ascii_alphanumeric() {
                i += 1;
            }
            let t: String = cs[start..i].iter().collect();
            out.push(Tok::Num(parse_num(&t)?));
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' || c == '$' {
            let start = if c == '$' { i + 1 } else { i };
            i = start;
            while i < cs.len() && (cs[i].is_ascii_alphanumeric() || cs[i] == '_') {
                i += 1;
            }
            if i == start {
                return Err(ArithError::Syntax);
            }
            out.push(Tok::Name(cs[start..i].iter().collect()));
            continue;
        }
        if c == ')' {
            out.push(Tok::Op(")"));
            i += 1;
            continue;
        }
        for op in OPS {
            if op
                .chars()
                .enumerate()
                .all(|(k, oc)| cs.get(i + k) == Some(&oc))
            {
                out.push(Tok::Op(op));
                i += op.len();
                continue 'outer;
            }
        }
        return Err(ArithError::Syntax);
    }
    Ok(out)
}

fn parse_num(t: &str) -> Result<i64, ArithError> {
    let r = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        i64::from_str_radix(h, 16)
    } else if t.len() > 1 && t.starts_with('0') {
        i64::from_str_radix(&t[1..], 8)
    } else {
        t.parse()
    };
    r.map_err(|_| ArithError::Syntax)
}

/// Evaluate `expr` with `sh`'s variables.
pub fn eval(expr: &str, sh: &mut Shell) -> Result<i64, ArithError> {
    let toks = tokenize(expr)?;
    if toks.is_empty() {
        return Ok(0);
    }
    let mut p = Eval { toks, pos: 0, sh };
    let v = p.assign()?;
    if p.pos != p.toks.len() {
        return Err(ArithError::Syntax);
    }
    Ok(v)
}

struct Eval<'a> {
    toks: Vec<Tok>,
    pos: usize,
    sh: &'a mut Shell,
}

/// Binary operators by precedence level, loosest first.
const LEVELS: [&[&str]; 10] = [
    &["||"],
    &["&&"],
    &["|"],
    &["^"],
    &["&"],
    &["==", "!="],
    &["<", "<=", ">", ">="],
    &["<<", ">>"],
    &["+", "-"],
    &["*", "/", "%"],
];

impl Eval<'_> {
    fn peek_op(&self) -> Option<&'static str> {
        match self.toks.get(self.pos) {
            Some(Tok::Op(o)) => Some(o),
            _ => None,
        }
    }

    fn var(&mut self, name: &str) -> Result<i64, ArithError> {
        let v = self.sh.param(name).unwrap_or_default();
        let v = v.trim();
        if v.is_empty() {
            return Ok(0);
        }
        parse_num(v).or_else(|_| {
            let mut sub = Eval {
                toks: tokenize(v)?,
                pos: 0,
                sh: self.sh,
            };
            sub.assign()
        })
    }

    fn assign(&mut self) -> Result<i64, ArithError> {
        if let (Some(Tok::Name(n)), Some(Tok::Op(op))) = (
            self.toks.get(self.pos).cloned(),
            self.toks.get(self.pos + 1),
        ) {
            let op = *op;
            if matches!(op, "=" | "+=" | "-=" | "*=" | "/=" | "%=" | "<<=" | ">>=") {
                self.pos += 2;
                let rhs = self.assign()?;
                let v = if op == "=" {
                    rhs
                } else {
                    let cur = self.var(&n)?;
                    binary(&op[..op.len() - 1], cur, rhs)?
                };
                self.sh.set_var(&n, &v.to_string());
                return Ok(v);
            }
        }
        self.ternary()
    }

    fn ternary(&mut self) -> Result<i64, ArithError> {
        let c = self.binary(0)?;
        if self.peek_op() == Some("?") {
            self.pos += 1;
            let a = self.assign()?;
            if self.peek_op() != Some(":") {
                return Err(ArithError::Syntax);
            }
            self.pos += 1;
            let b = self.assign()?;
            return Ok(if c != 0 { a } else { b });
        }
        Ok(c)
    }

    fn binary(&mut self, level: usize) -> Result<i64, ArithError> {
        if level == LEVELS.len() {
            return self.power();
        }
        let mut v = self.binary(level + 1)?;
        while let Some(op) = self.peek_op().filter(|o| LEVELS[level].contains(o)) {
            self.pos += 1;
            let r = self.binary(level + 1)?;
            v = binary(op, v, r)?;
        }
        Ok(v)
    }

    fn power(&mut self) -> Result<i64, ArithError> {
        let b = self.unary()?;
        if self.peek_op() == Some("**") {
            self.pos += 1;
            let e = self.power()?;
            return Ok(b.wrapping_pow(e.clamp(0, u32::MAX as i64) as u32));
        }
        Ok(b)
    }

    fn unary(&mut self) -> Result<i64, ArithError> {
        match self.peek_op() {
            Some(op @ ("-" | "+" | "!" | "~")) => {
                self.pos += 1;
                let v = self.unary()?;
                Ok(match op {
                    "-" => v.wrapping_neg(),
                    "+" => v,
                    "!" => i64::from(v == 0),
                    _ => !v,
                })
            }
            Some(op @ ("++" | "--")) => {
                self.pos += 1;
                let Some(Tok::Name(n)) = self.toks.get(self.pos).cloned() else {
                    return Err(ArithError::Syntax);
                };
                self.pos += 1;
                let v = self.var(&n)? + if op == "++" { 1 } else { -1 };
                self.sh.set_var(&n, &v.to_string());
                Ok(v)
            }
            _ => self.primary(),
        }
    }

    fn primary(&mut self) -> Result<i64, ArithError> {
        match self.toks.get(self.pos).cloned() {
            Some(Tok::Num(n)) => {
                self.pos += 1;
                Ok(n)
            }
            Some(Tok::Name(n)) => {
                self.pos += 1;
                let v = self.var(&n)?;
                if let Some(op @ ("++" | "--")) = self.peek_op() {
                    self.pos += 1;
                    let nv = v + if op == "++" { 1 } else { -1 };
                    self.sh.set_var(&n, &nv.to_string());
                }
                Ok(v)
            }
            Some(Tok::Op("(")) => {
                self.pos += 1;
                let v = self.assign()?;
                if self.peek_op() != Some(")") {
                    return Err(ArithError::Syntax);
                }
                self.pos += 1;
                Ok(v)
            }
            _ => Err(ArithError::Syntax),
        }
    }
}

fn binary(op: &str, a: i64, b: i64) -> Result<i64, ArithError> {
    Ok(match op {
        "||" => i64::from(a != 0 || b != 0),
        "&&" => i64::from(a != 0 && b != 0),
        "|" => a | b,
        "^" => a ^ b,
        "&" => a & b,
        "==" => i64::from(a == b),
        "!=" => i64::from(a != b),
        "<" => i64::from(a < b),
        "<=" => i64::from(a <= b),
        ">" => i64::from(a > b),
        ">=" => i64::from(a >= b),
        "<<" => a.wrapping_shl(b as u32),
        ">>" => a.wrapping_shr(b as u32),
        "+" => a.wrapping_add(b),
        "-" => a.wrapping_sub(b),
        "*" => a.wrapping_mul(b),
        "/" | "%" if b == 0 => return Err(ArithError::DivideByZero),
        "/" => a.wrapping_div(b),
        "%" => a.wrapping_rem(b),
        _ => return Err(ArithError::Syntax),
    })
}
