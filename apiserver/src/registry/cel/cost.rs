//! The cost bound of an evaluation, worked out before it runs: the `cel` crate has no cost
//! tracking, so the expression is walked with the sizes of the actual values bound to its
//! variables (a list's length, a string's length, the same for everything reachable from them),
//! and loops cost their range's size times their body. The figure is an upper bound of
//! upstream's actual cost, compared with the same limits (per call and per object).

use std::collections::HashMap;

use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};
use cel::Value as Cel;

/// Upstream's cost limit of one expression evaluation.
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// Upstream's cost budget of all the rules evaluated for one custom object.
pub const RUNTIME_BUDGET: u64 = 10_000_000;

/// The largest size a value can have, for what can't be bounded better.
const UNBOUNDED: u64 = u64::MAX / 4;

/// An upper bound of a value's size: its length (list items, map entries, string characters,
/// 1 for a scalar), and the same for what it contains.
#[derive(Clone, Debug, Default)]
pub struct Shape {
    len: u64,
    /// Elements of a list, values of a map.
    elem: Option<Box<Shape>>,
    /// Values of a map by key, where the keys are strings.
    fields: Option<HashMap<String, Shape>>,
    /// The longest key of a map.
    key_len: u64,
}

impl Shape {
    fn scalar(len: u64) -> Shape {
        Shape {
            len,
            ..Shape::default()
        }
    }

    fn list(len: u64, elem: Shape) -> Shape {
        Shape {
            len,
            elem: Some(Box::new(elem)),
            ..Shape::default()
        }
    }

    /// The shape of an actual value.
    pub fn of(v: &Cel) -> Shape {
        match v {
            Cel::String(s) => Shape::scalar(s.chars().count() as u64),
            Cel::Bytes(b) => Shape::scalar(b.len() as u64),
            Cel::List(items) => {
                let mut elem = Shape::default();
                for i in items.iter() {
                    elem = elem.merge(&Shape::of(i));
                }
                Shape::list(items.len() as u64, elem)
            }
            Cel::Map(m) => {
                let mut elem = Shape::default();
                let mut fields = HashMap::new();
                let mut key_len = 0;
                for (k, v) in m.map.iter() {
                    let s = Shape::of(v);
                    elem = elem.merge(&s);
                    if let cel::objects::Key::String(name) = k {
                        key_len = key_len.max(name.len() as u64);
                        fields.insert(name.to_string(), s);
                    } else {
                        key_len = key_len.max(20);
                    }
                }
                Shape {
                    len: m.map.len() as u64,
                    elem: Some(Box::new(elem)),
                    fields: Some(fields),
                    key_len,
                }
            }
            _ => Shape::scalar(1),
        }
    }

    /// The smallest shape bounding both.
    fn merge(&self, other: &Shape) -> Shape {
        let elem = match (&self.elem, &other.elem) {
            (Some(a), Some(b)) => Some(Box::new(a.merge(b))),
            (Some(a), None) | (None, Some(a)) => Some(a.clone()),
            (None, None) => None,
        };
        let fields = match (&self.fields, &other.fields) {
            (Some(a), Some(b)) => {
                let mut out = a.clone();
                for (k, v) in b {
                    let merged = match out.get(k) {
                        Some(existing) => existing.merge(v),
                        None => v.clone(),
                    };
                    out.insert(k.clone(), merged);
                }
                Some(out)
            }
            (Some(a), None) | (None, Some(a)) => Some(a.clone()),
            (None, None) => None,
        };
        Shape {
            len: self.len.max(other.len),
            elem,
            fields,
            key_len: self.key_len.max(other.key_len),
        }
    }

    fn elem(&self) -> Shape {
        self.elem
            .as_deref()
            .cloned()
            .unwrap_or_else(|| Shape::scalar(1))
    }

    fn field(&self, name: &str) -> Shape {
        match self.fields.as_ref().and_then(|f| f.get(name)) {
            Some(s) => s.clone(),
            None => self.elem(),
        }
    }

    /// The whole size: every element, nested, counted.
    fn weight(&self) -> u64 {
        let inner = self.elem.as_ref().map_or(0, |e| e.weight());
        self.len.saturating_add(self.len.saturating_mul(inner))
    }
}

/// The cost bound of `expr` with `vars` bound to the shapes of their values.
pub fn estimate(expr: &IdedExpr, vars: &[(&str, Shape)]) -> u64 {
    let mut scope: Vec<(String, Shape)> = vars
        .iter()
        .map(|(n, s)| (n.to_string(), s.clone()))
        .collect();
    let mut walker = Walker {
        accumulators: Vec::new(),
    };
    walker.walk(expr, &mut scope).0
}

struct Walker {
    /// The accumulators of the comprehensions being walked: appending to one costs the appended
    /// part only, as the crate builds `map`/`filter` results in place.
    accumulators: Vec<String>,
}

fn add(a: u64, b: u64) -> u64 {
    a.saturating_add(b)
}

impl Walker {
    fn walk(&mut self, e: &IdedExpr, scope: &mut Vec<(String, Shape)>) -> (u64, Shape) {
        match &e.expr {
            Expr::Literal(lit) => (0, literal(lit)),
            Expr::Ident(name) => {
                let shape = scope
                    .iter()
                    .rev()
                    .find(|(n, _)| n == name)
                    .map(|(_, s)| s.clone())
                    .unwrap_or_else(|| Shape::scalar(1));
                (1, shape)
            }
            Expr::Select(sel) => {
                let (cost, shape) = self.walk(&sel.operand, scope);
                let out = if sel.test {
                    Shape::scalar(1)
                } else {
                    shape.field(&sel.field)
                };
                (add(cost, 1), out)
            }
            Expr::List(list) => {
                let mut cost = 10;
                let mut elem = Shape::default();
                for item in &list.elements {
                    let (c, s) = self.walk(item, scope);
                    cost = add(cost, c);
                    elem = elem.merge(&s);
                }
                (cost, Shape::list(list.elements.len() as u64, elem))
            }
            Expr::Map(map) => self.entries(&map.entries, 30, scope),
            Expr::Struct(st) => self.entries(&st.entries, 40, scope),
            Expr::Call(call) => {
                let mut cost: u64 = 1;
                let mut shapes = Vec::new();
                let mut appends_to_accumulator = false;
                if let Some(target) = &call.target {
                    let (c, s) = self.walk(target, scope);
                    cost = add(cost, c);
                    shapes.push(s);
                }
                for (i, a) in call.args.iter().enumerate() {
                    if i == 0 && call.func_name == "_+_" {
                        if let Expr::Ident(name) = &a.expr {
                            appends_to_accumulator = self.accumulators.contains(name);
                        }
                    }
                    let (c, s) = self.walk(a, scope);
                    cost = add(cost, c);
                    shapes.push(s);
                }
                let (extra, shape) = call_shape(&call.func_name, &shapes, appends_to_accumulator);
                (add(cost, extra), shape)
            }
            Expr::Comprehension(c) => {
                let (range_cost, range) = self.walk(&c.iter_range, scope);
                let (init_cost, init) = self.walk(&c.accu_init, scope);
                let n = range.len;
                let is_map = range.fields.is_some();
                let (first, second) = if is_map {
                    (Shape::scalar(range.key_len.max(1)), range.elem())
                } else {
                    (Shape::scalar(1), range.elem())
                };
                let base = scope.len();
                match &c.iter_var2 {
                    Some(v2) => {
                        scope.push((c.iter_var.clone(), first));
                        scope.push((v2.clone(), second));
                    }
                    None if is_map => scope.push((c.iter_var.clone(), first)),
                    None => scope.push((c.iter_var.clone(), second)),
                }
                self.accumulators.push(c.accu_var.clone());
                // One step from the initial accumulator tells how much a step adds to it.
                scope.push((c.accu_var.clone(), init.clone()));
                let (_, stepped) = self.walk(&c.loop_step, scope);
                scope.pop();
                let growth = stepped.len.saturating_sub(init.len);
                let mut accu = init.merge(&stepped);
                accu.len = add(init.len, n.saturating_mul(growth));
                scope.push((c.accu_var.clone(), accu));
                let (cond_cost, _) = self.walk(&c.loop_cond, scope);
                let (step_cost, _) = self.walk(&c.loop_step, scope);
                // The result sees only the accumulator.
                let accu = scope.pop().expect("accumulator pushed");
                scope.truncate(base);
                scope.push(accu);
                let (result_cost, result) = self.walk(&c.result, scope);
                scope.truncate(base);
                self.accumulators.pop();
                let body = add(cond_cost, step_cost);
                let cost = add(
                    add(range_cost, init_cost),
                    add(n.saturating_mul(body), result_cost),
                );
                (cost, result)
            }
            Expr::Unspecified => (0, Shape::scalar(1)),
        }
    }

    fn entries(
        &mut self,
        entries: &[cel::common::ast::IdedEntryExpr],
        base: u64,
        scope: &mut Vec<(String, Shape)>,
    ) -> (u64, Shape) {
        let mut cost = base;
        let mut elem = Shape::default();
        let mut fields = HashMap::new();
        let mut key_len = 0;
        for entry in entries {
            match &entry.expr {
                EntryExpr::MapEntry(m) => {
                    let (kc, ks) = self.walk(&m.key, scope);
                    let (vc, vs) = self.walk(&m.value, scope);
                    cost = add(cost, add(kc, vc));
                    key_len = key_len.max(ks.len);
                    if let Expr::Literal(LiteralValue::String(k)) = &m.key.expr {
                        fields.insert(k.inner().to_string(), vs.clone());
                    }
                    elem = elem.merge(&vs);
                }
                EntryExpr::StructField(f) => {
                    let (vc, vs) = self.walk(&f.value, scope);
                    cost = add(cost, vc);
                    key_len = key_len.max(f.field.len() as u64);
                    fields.insert(f.field.clone(), vs.clone());
                    elem = elem.merge(&vs);
                }
            }
        }
        let shape = Shape {
            len: entries.len() as u64,
            elem: Some(Box::new(elem)),
            fields: Some(fields),
            key_len,
        };
        (cost, shape)
    }
}

fn literal(lit: &LiteralValue) -> Shape {
    match lit {
        LiteralValue::String(s) => Shape::scalar(s.inner().chars().count() as u64),
        LiteralValue::Bytes(b) => Shape::scalar(b.inner().len() as u64),
        _ => Shape::scalar(1),
    }
}

/// The cost a call adds beyond evaluating its arguments, and the shape of its result.
/// `shapes` holds the target first (for a member call), then the arguments.
fn call_shape(name: &str, shapes: &[Shape], appends: bool) -> (u64, Shape) {
    let get = |i: usize| shapes.get(i).cloned().unwrap_or_else(|| Shape::scalar(1));
    let len = |i: usize| shapes.get(i).map_or(1, |s| s.len);
    let scan = |n: u64| n / 10;
    match name {
        "_+_" => {
            let (a, b) = (get(0), get(1));
            let mut out = a.merge(&b);
            out.len = add(a.len, b.len);
            let copied = if appends { b.weight() } else { out.weight() };
            (scan(copied).max(1), out)
        }
        "_==_" | "_!=_" => {
            let w = get(0).weight().min(get(1).weight());
            (scan(w), Shape::scalar(1))
        }
        "@in" => (get(1).weight(), Shape::scalar(1)),
        "_<_" | "_<=_" | "_>_" | "_>=_" => (scan(len(0).min(len(1))), Shape::scalar(1)),
        "_[_]" | "_[?_]" => {
            let container = get(0);
            let out = match &container.fields {
                Some(_) => container.elem(),
                None => container.elem(),
            };
            (1, out)
        }
        "_?_:_" => (0, get(1).merge(&get(2))),
        "contains" | "startsWith" | "endsWith" | "indexOf" | "lastIndexOf" => {
            (scan(add(len(0), len(1))), Shape::scalar(1))
        }
        "matches" | "find" => {
            let cost = scan(len(0).saturating_mul(len(1).max(1)));
            let out = if name == "find" {
                get(0)
            } else {
                Shape::scalar(1)
            };
            (cost, out)
        }
        "findAll" => {
            let cost = scan(len(0).saturating_mul(len(1).max(1)));
            (cost, Shape::list(add(len(0), 1), get(0)))
        }
        "size" | "isSorted" | "int" | "uint" | "double" | "bool" | "timestamp" | "duration"
        | "type" | "hasValue" | "isURL" | "charAt" => {
            let cost = if name == "isSorted" { len(0) } else { 1 };
            (cost, Shape::scalar(1))
        }
        "string" => {
            let s = get(0);
            (scan(s.len), Shape::scalar(s.len.max(32)))
        }
        "lowerAscii"
        | "upperAscii"
        | "trim"
        | "reverse"
        | "substring"
        | "dyn"
        | "optional.of"
        | "optional.ofNonZeroValue"
        | "value" => (scan(len(0)), get(0)),
        "orValue" | "or" => (1, get(0).merge(&get(1))),
        "replace" => {
            let grown = add(len(0).saturating_mul(len(2).max(1)), len(2));
            (scan(grown), Shape::scalar(grown))
        }
        "split" => {
            let s = len(0);
            (scan(s), Shape::list(add(s, 1), Shape::scalar(s)))
        }
        "join" => {
            let list = get(0);
            let out = list.len.saturating_mul(add(list.elem().len, len(1)));
            (scan(out), Shape::scalar(out))
        }
        "format" => {
            let out = add(len(0), get(1).weight().saturating_mul(32));
            (scan(out), Shape::scalar(out))
        }
        "strings.quote" => (
            scan(len(0)),
            Shape::scalar(add(len(0).saturating_mul(2), 2)),
        ),
        "sum" | "min" | "max" => (len(0), get(0).elem()),
        "sort" | "distinct" | "@sortByAssociatedKeys" => {
            let n = len(0);
            let log = 64 - n.leading_zeros() as u64;
            (n.saturating_mul(log.max(1)), get(0))
        }
        "slice" => (len(0), get(0)),
        "flatten" => {
            let l = get(0);
            let inner = l.elem();
            let out = Shape::list(l.len.saturating_mul(inner.len.max(1)), inner.elem());
            (out.len, out)
        }
        "lists.range" => (UNBOUNDED, Shape::list(UNBOUNDED, Shape::scalar(1))),
        _ => {
            // Anything else returns a value no bigger than its operands (a conversion, a
            // getter, a comparison, a boolean operator).
            let out = shapes.iter().fold(Shape::scalar(1), |acc, s| acc.merge(s));
            (1, out)
        }
    }
}
