//! `test` (and `[`) and `expr`: the small expression languages of shell conditions and
//! arithmetic before `$((...))`.

use super::super::io::Proc;

pub(super) fn test(p: &mut Proc, args: &[String], bracket: bool) -> i32 {
    let mut args = args.to_vec();
    if bracket {
        if args.last().map(String::as_str) != Some("]") {
            p.err("[: missing ]\n");
            return 2;
        }
        args.pop();
    }
    let mut t = Test {
        p,
        args: &args,
        pos: 0,
    };
    if args.is_empty() {
        return 1;
    }
    match t.or() {
        Ok(v) if t.pos == args.len() => i32::from(!v),
        Ok(_) => {
            let a = args[t.pos].clone();
            p_err(t.p, &format!("test: {a}: unknown operand\n"));
            2
        }
        Err(msg) => {
            p_err(t.p, &format!("test: {msg}\n"));
            2
        }
    }
}

fn p_err(p: &Proc, msg: &str) {
    p.err(msg);
}

struct Test<'a> {
    p: &'a mut Proc,
    args: &'a [String],
    pos: usize,
}

impl Test<'_> {
    fn peek(&self) -> Option<&str> {
        self.args.get(self.pos).map(String::as_str)
    }

    fn or(&mut self) -> Result<bool, String> {
        let mut v = self.and()?;
        while self.peek() == Some("-o") {
            self.pos += 1;
            v = self.and()? || v;
        }
        Ok(v)
    }

    fn and(&mut self) -> Result<bool, String> {
        let mut v = self.not()?;
        while self.peek() == Some("-a") {
            self.pos += 1;
            v = self.not()? && v;
        }
        Ok(v)
    }

    fn not(&mut self) -> Result<bool, String> {
        if self.peek() == Some("!") && self.pos + 1 < self.args.len() {
            self.pos += 1;
            return Ok(!self.not()?);
        }
        self.primary()
    }

    fn int(s: &str) -> Result<i64, String> {
        s.trim()
            .parse()
            .map_err(|_| format!("invalid number '{s}'"))
    }

    fn primary(&mut self) -> Result<bool, String> {
        let Some(a) = self.peek().map(str::to_string) else {
            return Err("argument expected".into());
        };
        if a == "(" && self.args.len() - self.pos >= 3 {
            self.pos += 1;
            let v = self.or()?;
            if self.peek() != Some(")") {
                return Err("missing )".into());
            }
            self.pos += 1;
            return Ok(v);
        }
        if let Some(op) = self.args.get(self.pos + 1).map(String::as_str) {
            if let Some(b) = self.args.get(self.pos + 2) {
                let r = match op {
                    "=" | "==" => Some(a == *b),
                    "!=" => Some(a != *b),
                    "<" => Some(a < *b),
                    ">" => Some(a > *b),
                    "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge" => {
                        let (x, y) = (Self::int(&a)?, Self::int(b)?);
                        Some(match op {
                            "-eq" => x == y,
                            "-ne" => x != y,
                            "-lt" => x < y,
                            "-le" => x <= y,
                            "-gt" => x > y,
                            _ => x >= y,
                        })
                    }
                    _ => None,
                };
                if let Some(r) = r {
                    self.pos += 3;
                    return Ok(r);
                }
            }
        }
        if a.len() == 2 && a.starts_with('-') && self.pos + 1 < self.args.len() {
            let operand = self.args[self.pos + 1].clone();
            let path = self.p.path(&operand);
            let stat = self.p.fs.stat(&path).ok();
            let r = match &a[1..] {
                "n" => Some(!operand.is_empty()),
                "z" => Some(operand.is_empty()),
                "e" | "r" | "w" | "x" => Some(stat.is_some()),
                "f" => Some(stat.as_ref().is_some_and(|e| !e.is_dir)),
                "d" => Some(stat.as_ref().is_some_and(|e| e.is_dir)),
                "s" => Some(stat.as_ref().is_some_and(|e| e.is_dir || e.size > 0)),
                "L" | "h" | "p" | "S" | "b" | "c" | "t" => Some(false),
                _ => None,
            };
            if let Some(r) = r {
                self.pos += 2;
                return Ok(r);
            }
        }
        self.pos += 1;
        Ok(!a.is_empty())
    }
}

pub(super) fn expr(p: &mut Proc, args: &[String]) -> i32 {
    let mut e = Expr { args, pos: 0 };
    let v = match e.or() {
        Ok(v) if e.pos == args.len() => v,
        Ok(_) | Err(ExprError::Syntax) => {
            p.err("expr: syntax error\n");
            return 2;
        }
        Err(ExprError::DivZero) => {
            p.err("expr: division by zero\n");
            return 2;
        }
        Err(ExprError::NonNumeric) => {
            p.err("expr: non-numeric argument\n");
            return 2;
        }
    };
    p.out(&format!("{v}\n"));
    i32::from(v.is_empty() || v == "0")
}

enum ExprError {
    Syntax,
    DivZero,
    NonNumeric,
}

struct Expr<'a> {
    args: &'a [String],
    pos: usize,
}

impl Expr<'_> {
    fn op(&mut self, ops: &[&str]) -> Option<String> {
        let a = self.args.get(self.pos)?;
        if ops.contains(&a.as_str()) {
            self.pos += 1;
            return Some(a.clone());
        }
        None
    }

    fn num(s: &str) -> Result<i64, ExprError> {
        s.parse().map_err(|_| ExprError::NonNumeric)
    }

    fn or(&mut self) -> Result<String, ExprError> {
        let mut v = self.and()?;
        while self.op(&["|"]).is_some() {
            let r = self.and()?;
            if v.is_empty() || v == "0" {
                v = r;
            }
        }
        Ok(v)
    }

    fn and(&mut self) -> Result<String, ExprError> {
        let mut v = self.cmp()?;
        while self.op(&["&"]).is_some() {
            let r = self.cmp()?;
            if v.is_empty() || v == "0" || r.is_empty() || r == "0" {
                v = "0".into();
            }
        }
        Ok(v)
    }

    fn cmp(&mut self) -> Result<String, ExprError> {
        let mut v = self.add()?;
        while let Some(op) = self.op(&["=", "==", "!=", "<", "<=", ">", ">="]) {
            let r = self.add()?;
            let ord = match (v.parse::<i64>(), r.parse::<i64>()) {
                (Ok(a), Ok(b)) => a.cmp(&b),
                _ => v.cmp(&r),
            };
            let t = match op.as_str() {
                "=" | "==" => ord.is_eq(),
                "!=" => ord.is_ne(),
                "<" => ord.is_lt(),
                "<=" => ord.is_le(),
                ">" => ord.is_gt(),
                _ => ord.is_ge(),
            };
            v = i32::from(t).to_string();
        }
        Ok(v)
    }

    fn add(&mut self) -> Result<String, ExprError> {
        let mut v = self.mul()?;
        while let Some(op) = self.op(&["+", "-"]) {
            let r = self.mul()?;
            let (a, b) = (Self::num(&v)?, Self::num(&r)?);
            v = if op == "+" {
                a.wrapping_add(b)
            } else {
                a.wrapping_sub(b)
            }
            .to_string();
        }
        Ok(v)
    }

    fn mul(&mut self) -> Result<String, ExprError> {
        let mut v = self.atom()?;
        while let Some(op) = self.op(&["*", "/", "%"]) {
            let r = self.atom()?;
            let (a, b) = (Self::num(&v)?, Self::num(&r)?);
            if op != "*" && b == 0 {
                return Err(ExprError::DivZero);
            }
            v = match op.as_str() {
                "*" => a.wrapping_mul(b),
                "/" => a.wrapping_div(b),
                _ => a.wrapping_rem(b),
            }
            .to_string();
        }
        Ok(v)
    }

    fn atom(&mut self) -> Result<String, ExprError> {
        let a = self.args.get(self.pos).ok_or(ExprError::Syntax)?.clone();
        self.pos += 1;
        match a.as_str() {
            "(" => {
                let v = self.or()?;
                self.op(&[")"]).ok_or(ExprError::Syntax)?;
                Ok(v)
            }
            "length" => Ok(self.atom()?.chars().count().to_string()),
            _ => Ok(a),
        }
    }
}
