//! The CEL engine shared by CRD validation rules and ValidatingAdmissionPolicy: one environment
//! (the standard library, the strings extension and Kubernetes' libraries), compiled programs
//! cached by their text, and evaluation bounded by a cost limit checked before it runs.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cel::common::ast::{Expr, IdedExpr};
use cel::{Context, Env, ExecutionError, ParseErrors, Program, Value as Cel};

use super::cost::{self, Shape};
use super::library;

/// How many compiled programs the cache keeps before it starts over.
const CACHE_CAPACITY: usize = 4096;

/// A compiled expression.
#[derive(Debug)]
pub struct Compiled {
    program: Program,
    /// The identifiers the expression reads outside of its own loops (`self`, `oldSelf`,
    /// `object`, …).
    variables: Vec<String>,
}

impl Compiled {
    /// Whether the expression reads the variable `name`, e.g. `oldSelf` for a transition rule.
    pub fn uses(&self, name: &str) -> bool {
        self.variables.iter().any(|v| v == name)
    }

    /// The parsed expression, macros expanded.
    pub fn expression(&self) -> &IdedExpr {
        self.program.expression()
    }
}

/// Why an evaluation gave no value, in upstream's (cel-go's) words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvalError {
    /// The expression would cost more than the limit it was given; `cost` is the bound.
    CostLimit { cost: u64 },
    /// The evaluation failed: `no such key: foo`, `division by zero`, `no such overload`, ….
    Failed(String),
}

/// The CEL environment and the cache of compiled programs.
pub struct Engine {
    env: Arc<Env>,
    cache: Mutex<HashMap<String, Arc<Compiled>>>,
}

/// The process-wide engine.
pub fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(Engine::new)
}

impl Engine {
    fn new() -> Engine {
        let mut env = Env::stdlib();
        env.add_extension(cel::extensions::strings)
            .expect("the strings extension declares new overloads");
        library::register(&mut env).expect("Kubernetes' functions are declared once");
        Engine {
            env: Arc::new(env),
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// Compiles `source`, or gives back the program compiled from the same text before. The
    /// error is cel-go's issue text (`ERROR: <input>:1:6: Syntax error: …`).
    pub fn compile(&self, source: &str) -> Result<Arc<Compiled>, String> {
        if let Some(hit) = self.lock().get(source) {
            return Ok(hit.clone());
        }
        let program = self.env.compile(source).map_err(|e| issues(source, &e))?;
        let mut variables = Vec::new();
        free_variables(program.expression(), &mut Vec::new(), &mut variables);
        let compiled = Arc::new(Compiled { program, variables });
        let mut cache = self.lock();
        if cache.len() >= CACHE_CAPACITY {
            cache.clear();
        }
        cache.insert(source.to_string(), compiled.clone());
        Ok(compiled)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Compiled>>> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cost bound of evaluating `compiled` with `vars`.
    pub fn cost(&self, compiled: &Compiled, vars: &[(&str, Cel)]) -> u64 {
        let shapes: Vec<(&str, Shape)> = vars
            .iter()
            .filter(|(name, _)| compiled.uses(name))
            .map(|(name, v)| (*name, Shape::of(v)))
            .collect();
        cost::estimate(compiled.expression(), &shapes)
    }

    /// Evaluates `compiled` with `vars` bound, unless its cost bound exceeds `limit`. Returns the
    /// value and the cost charged.
    pub fn evaluate(
        &self,
        compiled: &Compiled,
        vars: &[(&str, Cel)],
        limit: u64,
    ) -> (Result<Cel, EvalError>, u64) {
        let cost = self.cost(compiled, vars);
        if cost > limit {
            return (Err(EvalError::CostLimit { cost }), cost);
        }
        let mut ctx = Context::with_env(self.env.clone());
        for (name, value) in vars {
            if compiled.uses(name) {
                ctx.add_variable_from_value(*name, value.clone());
            }
        }
        let result = compiled
            .program
            .execute(&ctx)
            .map_err(|e| EvalError::Failed(error_text(&e)));
        (result, cost)
    }
}

/// The identifiers `e` reads that no enclosing loop of its own binds.
fn free_variables(e: &IdedExpr, bound: &mut Vec<String>, out: &mut Vec<String>) {
    match &e.expr {
        Expr::Ident(name) => {
            if !bound.contains(name) && !out.contains(name) {
                out.push(name.clone());
            }
        }
        Expr::Select(s) => free_variables(&s.operand, bound, out),
        Expr::Call(c) => {
            if let Some(t) = &c.target {
                free_variables(t, bound, out);
            }
            for a in &c.args {
                free_variables(a, bound, out);
            }
        }
        Expr::List(l) => {
            for i in &l.elements {
                free_variables(i, bound, out);
            }
        }
        Expr::Map(m) => entries(&m.entries, bound, out),
        Expr::Struct(s) => entries(&s.entries, bound, out),
        Expr::Comprehension(c) => {
            free_variables(&c.iter_range, bound, out);
            free_variables(&c.accu_init, bound, out);
            let depth = bound.len();
            bound.push(c.iter_var.clone());
            if let Some(v2) = &c.iter_var2 {
                bound.push(v2.clone());
            }
            bound.push(c.accu_var.clone());
            free_variables(&c.loop_cond, bound, out);
            free_variables(&c.loop_step, bound, out);
            free_variables(&c.result, bound, out);
            bound.truncate(depth);
        }
        Expr::Literal(_) | Expr::Unspecified => {}
    }
}

fn entries(
    entries: &[cel::common::ast::IdedEntryExpr],
    bound: &mut Vec<String>,
    out: &mut Vec<String>,
) {
    for entry in entries {
        match &entry.expr {
            cel::common::ast::EntryExpr::MapEntry(m) => {
                free_variables(&m.key, bound, out);
                free_variables(&m.value, bound, out);
            }
            cel::common::ast::EntryExpr::StructField(f) => free_variables(&f.value, bound, out),
        }
    }
}

/// Parse errors as cel-go prints its issues: `ERROR: <input>:LINE:COL: Syntax error: MSG`, the
/// line, and a caret under the column.
fn issues(source: &str, errors: &ParseErrors) -> String {
    let mut out = Vec::new();
    for e in &errors.errors {
        let line = e.pos.0.max(1) as usize;
        // The crate counts columns from 1, as cel-go prints them.
        let col = e.pos.1.max(1) as usize;
        let text = source.lines().nth(line - 1).unwrap_or("");
        let dots: String = ".".repeat(text.chars().take(col - 1).count());
        let msg = if e.msg.starts_with("Syntax error") || e.msg.starts_with("expression") {
            e.msg.clone()
        } else {
            format!("Syntax error: {}", e.msg)
        };
        out.push(format!(
            "ERROR: <input>:{line}:{col}: {msg}\n | {text}\n | {dots}^"
        ));
    }
    out.join("\n")
}

/// An evaluation error in cel-go's words, as upstream's messages quote them.
fn error_text(e: &ExecutionError) -> String {
    match e {
        ExecutionError::NoSuchKey(key) => format!("no such key: {key}"),
        ExecutionError::NoSuchOverload(_)
        | ExecutionError::UnsupportedBinaryOperator(..)
        | ExecutionError::ValuesNotComparable(..)
        | ExecutionError::UnexpectedType { .. } => "no such overload".to_string(),
        ExecutionError::DivisionByZero(_) => "division by zero".to_string(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".to_string(),
        ExecutionError::Overflow(..) => "integer overflow".to_string(),
        ExecutionError::IndexOutOfBounds(i) => match i {
            Cel::Int(i) => format!("index out of bounds: {i}"),
            Cel::UInt(i) => format!("index out of bounds: {i}"),
            other => format!("index out of bounds: {other:?}"),
        },
        ExecutionError::FunctionError { message, .. } => message.clone(),
        ExecutionError::UndeclaredReference(name) => {
            format!("undeclared reference to '{name}' (in container '')")
        }
        other => other.to_string(),
    }
}
