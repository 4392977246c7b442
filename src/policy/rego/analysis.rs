//! What the Rego modules say, read from their syntax trees once when they load: the package, the
//! imports, the functions and whom they call, every `data.` and `input.` reference, and the
//! tool names compared with `input.tool`.
//!
//! Three uses:
//!
//! - **Recursion is refused at load.** regorus evaluates a recursive function by recursing
//!   itself, until the process's stack overflows and it aborts (exit 134) — in `check`,
//!   `policy check` and `policy test` alike, before any verdict; a rule that reaches itself
//!   through other rules it reports only when an evaluation gets there. OPA rejects recursion
//!   at compile time; so does this: a cycle in the dependency graph of the modules' rules and
//!   functions is a load error naming the rule, its file and line, and the cycle. A name a rule
//!   binds itself (`some x`, `x :=`, a function's arguments, `every k, v`) is a local, not a
//!   reference to a rule of that name, as in OPA.
//! - **Warnings** for `reasonix policy check` ([`Rego::warnings`]): a package outside `reasonix`
//!   that nothing imports or references (its rules never vote), a `data.` reference no mounted
//!   document or package provides, and a tool name compared with `input.tool` that no tool has.
//! - **What of the input document is read** (`reads.rs`): every reference to `input`, in rule
//!   bodies, heads (`a[input.x] := …`), values, `with` modifiers and imports, as the plain path
//!   it starts with (`input.bash.commands` of `input.bash.commands[i].argv`; `input` of
//!   `input[k]`). Locals are not told apart here: a name bound to `input` counts as a read.
//!   Every kind of expression is matched by name, so a construct a later regorus adds does not
//!   compile until it is walked.
//!
//! The syntax tree is regorus' own (`regorus::unstable`); this module is the one place that
//! reads it, so a change there is a change here only.

use std::collections::{BTreeMap, BTreeSet};

use regorus::unstable::{Expr, Literal, Module, Query, Ref, Rule, RuleHead};

use super::ROOT_PACKAGE;
use crate::policy::PolicyProblem;

/// A place in a module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct At {
    pub file: String,
    pub line: usize,
    pub column: usize,
}

/// One rule or function (all definitions of one name count as one).
#[derive(Clone, Debug)]
struct Node {
    at: At,
    /// Whether it is a function.
    function: bool,
    /// The ref paths it reads or calls, as written, without the names it binds itself.
    refs: Vec<Vec<String>>,
}

/// What one module says.
#[derive(Clone, Debug)]
pub(super) struct ModuleFacts {
    pub file: String,
    /// The package's components (`["reasonix", "git"]`).
    pub package: Vec<String>,
    /// `import data.a.b as c`: alias → path after `data`.
    imports: BTreeMap<String, Vec<String>>,
    /// Rules and functions by their head path (`deny`, `a.b`, `f`).
    nodes: BTreeMap<String, Node>,
    /// Every reference into `data`, as a path after `data` (imports resolved), with its place.
    data_refs: Vec<(Vec<String>, At)>,
    /// Every string compared with `input.tool`, with its place.
    tool_names: Vec<(String, At)>,
    /// The test rules (`test_*`, not functions), in order, each once.
    pub tests: Vec<String>,
    /// Every rule's head, for the tool index (`index.rs`).
    pub heads: Vec<Head>,
    /// Every path read below `input` (`["bash", "commands"]`; empty: the whole document).
    pub input_reads: Vec<Vec<String>>,
}

/// A rule's head, as the tool index reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Head {
    /// The path it defines below `data`: the package, then the head's plain start
    /// (`["reasonix", "git", "deny"]`).
    pub path: Vec<String>,
    /// Whether `path` is the whole head (`deny`), not only its plain start (`deny[x]`).
    pub whole: bool,
    /// For a set rule `S contains k if { input.tool == "T"; ... }` whose every body starts with
    /// that comparison (no `with`), `T`: the rule can add nothing for another tool, and its
    /// bodies stop at their first statement.
    pub tool: Option<String>,
}

impl ModuleFacts {
    /// Reads one module's syntax tree.
    pub(super) fn of(module: &Module) -> ModuleFacts {
        let file = module.package.span.source.file().clone();
        let package = ref_path(&module.package.refr).unwrap_or_default();
        let package = match package.split_first() {
            Some((head, rest)) if head == "data" => rest.to_vec(),
            _ => package,
        };
        let mut imports = BTreeMap::new();
        for import in &module.imports {
            let Some(path) = ref_path(&import.refr) else {
                continue;
            };
            let Some(("data", rest)) = path.split_first().map(|(h, r)| (h.as_str(), r)) else {
                continue;
            };
            let alias = match &import.r#as {
                Some(span) => span.text().to_owned(),
                None => match rest.last() {
                    Some(last) => last.clone(),
                    None => continue,
                },
            };
            imports.insert(alias, rest.to_vec());
        }
        let mut facts = ModuleFacts {
            file,
            package,
            imports,
            nodes: BTreeMap::new(),
            data_refs: Vec::new(),
            tool_names: Vec::new(),
            tests: Vec::new(),
            heads: Vec::new(),
            input_reads: Vec::new(),
        };
        for import in &module.imports {
            if let Some(path) = ref_path(&import.refr)
                && path.first().is_some_and(|h| h == "data")
            {
                let at = at(import.span.source.file(), import.span.line, import.span.col);
                facts.data_refs.push((path[1..].to_vec(), at));
            }
            // `import input.bash` (as b): everything below it may be read through the alias.
            if let Some((path, _)) = head_path(&import.refr) {
                facts.input_read(&path);
            }
        }
        for rule in &module.policy {
            let mut walk = Walk::default();
            let (head, function) = match rule.as_ref() {
                Rule::Spec { head, bodies, .. } => {
                    let head = match head {
                        RuleHead::Compr { assign, refr, .. } => {
                            if let Some(a) = assign {
                                walk.expr(&a.value);
                            }
                            facts.test(refr);
                            (refr, false)
                        }
                        RuleHead::Set { key, refr, .. } => {
                            if let Some(k) = key {
                                walk.expr(k);
                            }
                            facts.test(refr);
                            (refr, false)
                        }
                        RuleHead::Func {
                            refr, args, assign, ..
                        } => {
                            for a in args {
                                walk.bind(a);
                                walk.expr(a);
                            }
                            if let Some(a) = assign {
                                walk.expr(&a.value);
                            }
                            (refr, true)
                        }
                    };
                    for body in bodies {
                        if let Some(a) = &body.assign {
                            walk.expr(&a.value);
                        }
                        walk.query(&body.query);
                    }
                    head
                }
                Rule::Default {
                    refr, args, value, ..
                } => {
                    for a in args {
                        walk.bind(a);
                    }
                    walk.expr(value);
                    (refr, !args.is_empty())
                }
            };
            // What the head reads itself (`a[input.x] := …`): input only, so that the rule
            // graph of the recursion check stays as it was.
            let mut in_head = Walk::default();
            in_head.inside(head);
            for (path, _) in walk.refs.iter().chain(&in_head.refs) {
                facts.input_read(path);
            }
            let mut own = Vec::new();
            for (path, span) in walk.refs {
                if path.first().is_some_and(|h| walk.bound.contains(h)) {
                    continue;
                }
                let resolved = facts.resolve(&path);
                if let Some(rest) = resolved.strip_prefix(&["data".to_owned()][..]) {
                    let at = at(span.source.file(), span.line, span.col);
                    facts.data_refs.push((rest.to_vec(), at));
                }
                own.push(resolved);
            }
            for (name, span) in walk.tool_names {
                let at = at(span.source.file(), span.line, span.col);
                facts.tool_names.push((name, at));
            }
            // A head that does not start with a name defines nothing the index can place: an
            // empty path, which every package's sets start with, so none is skipped.
            let (path, whole) = head_path(head).unwrap_or_default();
            facts.heads.push(Head {
                path: facts.package.iter().chain(&path).cloned().collect(),
                whole: whole && !path.is_empty(),
                tool: tool_guard(rule),
            });
            // A head with a non-literal part (`a[x] := …`) is named by its plain start.
            if let Some((path, _)) = head_path(head) {
                let span = head.span();
                let node = facts.nodes.entry(path.join(".")).or_insert_with(|| Node {
                    at: at(span.source.file(), span.line, span.col),
                    function,
                    refs: Vec::new(),
                });
                node.refs.extend(own);
            }
        }
        facts
    }

    /// Notes a reference as a read of `input` when it starts there.
    fn input_read(&mut self, path: &[String]) {
        if let Some(("input", rest)) = path.split_first().map(|(h, r)| (h.as_str(), r)) {
            self.input_reads.push(rest.to_vec());
        }
    }

    /// Notes a rule head named `test_*` as a test.
    fn test(&mut self, refr: &Expr) {
        if let Some(path) = ref_path(refr)
            && let [name] = path.as_slice()
            && name.starts_with("test_")
            && !self.tests.contains(name)
        {
            self.tests.push(name.clone());
        }
    }

    /// A ref path with an import alias at its head replaced by `data.<path>`.
    fn resolve(&self, path: &[String]) -> Vec<String> {
        match path.split_first() {
            Some((head, rest)) if self.imports.contains_key(head) => {
                let mut out = vec!["data".to_owned()];
                out.extend(self.imports[head].iter().cloned());
                out.extend(rest.iter().cloned());
                out
            }
            _ => path.to_vec(),
        }
    }
}

fn at(file: &str, line: u32, col: u32) -> At {
    At {
        file: file.to_owned(),
        line: line as usize,
        column: col as usize,
    }
}

/// `T` when the rule is a set rule (`S contains k if …`) with at least one body, and every body
/// starts with `input.tool == "T"` (either way round, no `with`), the same `T` throughout.
/// regorus evaluates a body's statements in order when nothing binds a variable between them
/// (its scheduler places statements that need no variable first, in their written order), so
/// for another tool each body stops at that comparison, before anything that could fail.
fn tool_guard(rule: &Rule) -> Option<String> {
    let Rule::Spec {
        head: RuleHead::Set { .. },
        bodies,
        ..
    } = rule
    else {
        return None;
    };
    let mut tool = None;
    for body in bodies {
        let first = body.query.stmts.first()?;
        let Literal::Expr { expr, .. } = &first.literal else {
            return None;
        };
        if !first.with_mods.is_empty() || body.assign.is_some() {
            return None;
        }
        let Expr::BoolExpr {
            op: regorus::unstable::BoolOp::Eq,
            lhs,
            rhs,
            ..
        } = expr.as_ref()
        else {
            return None;
        };
        let name = [(lhs, rhs), (rhs, lhs)].into_iter().find_map(|(a, b)| {
            (ref_path(a)? == ["input", "tool"]).then_some(())?;
            literal(b)
        })?;
        if tool.as_ref().is_some_and(|t| *t != name) {
            return None;
        }
        tool = Some(name);
    }
    tool
}

/// The plain reference a chain starts with (`data.a.b` of `data.a.b[x].c`), and whether it is
/// the whole chain. `None` when the chain does not start with a name (`f(x).y`).
fn head_path(e: &Expr) -> Option<(Vec<String>, bool)> {
    match e {
        Expr::Var { value, .. } => Some((vec![value.as_string().ok()?.to_string()], true)),
        Expr::RefDot { refr, field, .. } => {
            let (mut path, whole) = head_path(refr)?;
            if whole {
                path.push(field.1.as_string().ok()?.to_string());
            }
            Some((path, whole))
        }
        Expr::RefBrack { refr, index, .. } => {
            let (mut path, whole) = head_path(refr)?;
            match (whole, literal(index)) {
                (true, Some(key)) => {
                    path.push(key);
                    Some((path, true))
                }
                _ => Some((path, false)),
            }
        }
        _ => None,
    }
}

/// Where a reference chain starts: its first name.
fn start(e: &Expr) -> &regorus::unstable::Span {
    match e {
        Expr::RefDot { refr, .. } | Expr::RefBrack { refr, .. } => start(refr),
        other => other.span(),
    }
}

/// The dotted path of a plain reference (`data.a.b`, `x["k"]`), or `None` when it is not one.
fn ref_path(e: &Expr) -> Option<Vec<String>> {
    head_path(e).filter(|(_, whole)| *whole).map(|(p, _)| p)
}

/// The text of a string literal.
fn literal(e: &Expr) -> Option<String> {
    match e {
        Expr::String { value, .. } | Expr::RawString { value, .. } => {
            Some(value.as_string().ok()?.to_string())
        }
        _ => None,
    }
}

/// A walk over a rule's expressions, gathering references, calls and `input.tool` comparisons.
#[derive(Default)]
struct Walk {
    refs: Vec<(Vec<String>, regorus::unstable::Span)>,
    tool_names: Vec<(String, regorus::unstable::Span)>,
    /// Names the rule binds itself: locals, not references to rules.
    bound: BTreeSet<String>,
}

impl Walk {
    fn query(&mut self, q: &Ref<Query>) {
        for stmt in &q.stmts {
            match &stmt.literal {
                Literal::SomeVars { vars, .. } => {
                    self.bound.extend(vars.iter().map(|v| v.text().to_owned()));
                }
                Literal::SomeIn {
                    key,
                    value,
                    collection,
                    ..
                } => {
                    if let Some(k) = key {
                        self.bind(k);
                        self.expr(k);
                    }
                    self.bind(value);
                    self.expr(value);
                    self.expr(collection);
                }
                Literal::Expr { expr, .. } | Literal::NotExpr { expr, .. } => self.expr(expr),
                Literal::Every {
                    key,
                    value,
                    domain,
                    query,
                    ..
                } => {
                    self.bound.extend(key.iter().map(|k| k.text().to_owned()));
                    self.bound.insert(value.text().to_owned());
                    self.expr(domain);
                    self.query(query);
                }
            }
            for w in &stmt.with_mods {
                self.expr(&w.refr);
                self.expr(&w.r#as);
            }
        }
    }

    fn expr(&mut self, e: &Ref<Expr>) {
        match e.as_ref() {
            Expr::Var { .. } | Expr::RefDot { .. } | Expr::RefBrack { .. } => {
                if let Some((path, _)) = head_path(e) {
                    self.refs.push((path, start(e).clone()));
                }
                self.inside(e);
            }
            Expr::Call { fcn, params, .. } => {
                if let Some(path) = ref_path(fcn) {
                    self.refs.push((path, fcn.span().clone()));
                } else {
                    self.expr(fcn);
                }
                for p in params {
                    self.expr(p);
                }
            }
            Expr::Array { items, .. } | Expr::Set { items, .. } => {
                for i in items {
                    self.expr(i);
                }
            }
            Expr::Object { fields, .. } => {
                for (_, k, v) in fields {
                    self.expr(k);
                    self.expr(v);
                }
            }
            Expr::ArrayCompr { term, query, .. } | Expr::SetCompr { term, query, .. } => {
                self.expr(term);
                self.query(query);
            }
            Expr::ObjectCompr {
                key, value, query, ..
            } => {
                self.expr(key);
                self.expr(value);
                self.query(query);
            }
            Expr::UnaryExpr { expr, .. } => self.expr(expr),
            Expr::BoolExpr { lhs, rhs, op, .. } => {
                if *op == regorus::unstable::BoolOp::Eq {
                    self.compared(lhs, rhs);
                }
                self.expr(lhs);
                self.expr(rhs);
            }
            Expr::AssignExpr { lhs, rhs, op, .. } => {
                if *op == regorus::unstable::AssignOp::ColEq {
                    self.bind(lhs);
                }
                self.compared(lhs, rhs);
                self.expr(lhs);
                self.expr(rhs);
            }
            Expr::BinExpr { lhs, rhs, .. } | Expr::ArithExpr { lhs, rhs, .. } => {
                self.expr(lhs);
                self.expr(rhs);
            }
            Expr::Membership {
                key,
                value,
                collection,
                ..
            } => {
                if let Some(k) = key {
                    self.expr(k);
                }
                self.expr(value);
                self.expr(collection);
            }
            // Literals: nothing that calls or refers. Every other kind is named above, so
            // that one a later regorus adds is walked before it can hide a reference.
            Expr::String { .. }
            | Expr::RawString { .. }
            | Expr::Number { .. }
            | Expr::Bool { .. }
            | Expr::Null { .. } => {}
        }
    }

    /// Notes the variables a pattern binds (`x`, `[a, b]`, `{"k": v}`) as locals.
    fn bind(&mut self, e: &Ref<Expr>) {
        match e.as_ref() {
            Expr::Var { value, .. } => {
                if let Ok(name) = value.as_string() {
                    self.bound.insert(name.to_string());
                }
            }
            Expr::Array { items, .. } => {
                for i in items {
                    self.bind(i);
                }
            }
            Expr::Object { fields, .. } => {
                for (_, _, v) in fields {
                    self.bind(v);
                }
            }
            _ => {}
        }
    }

    /// What a reference chain holds besides names: index expressions that are not string
    /// literals, and whatever it starts from when that is not a name (`f(x).y`).
    fn inside(&mut self, e: &Ref<Expr>) {
        match e.as_ref() {
            Expr::Var { .. } => {}
            Expr::RefDot { refr, .. } => self.inside(refr),
            Expr::RefBrack { refr, index, .. } => {
                self.inside(refr);
                if literal(index).is_none() {
                    self.expr(index);
                }
            }
            _ => self.expr(e),
        }
    }

    /// `input.tool == "name"` (either way round).
    fn compared(&mut self, lhs: &Ref<Expr>, rhs: &Ref<Expr>) {
        for (a, b) in [(lhs, rhs), (rhs, lhs)] {
            let is_tool = ref_path(a)
                .is_some_and(|p| p == ["input", "tool"] || p == ["input", "target", "tool"]);
            if let (true, Expr::String { value, span, .. }) = (is_tool, b.as_ref())
                && let Ok(name) = value.as_string()
            {
                self.tool_names.push((name.to_string(), span.clone()));
            }
        }
    }
}

/// The rules a reference reaches, in a package with these rule paths: the rule whose path
/// starts the reference (`a.b` for `a.b.c`), or every rule below it (`a` reaches `a.b`, `a.c`).
fn reached<'a>(rules: &'a BTreeMap<String, Node>, path: &[String]) -> Vec<&'a String> {
    for n in (1..=path.len()).rev() {
        let name = path[..n].join(".");
        if let Some((key, _)) = rules.get_key_value(&name) {
            return vec![key];
        }
    }
    let prefix = format!("{}.", path.join("."));
    rules.keys().filter(|k| k.starts_with(&prefix)).collect()
}

/// The first cycle in the dependency graph of the modules' rules and functions, as a load
/// problem naming the rule where it closes.
pub(super) fn recursion(modules: &[ModuleFacts]) -> Option<PolicyProblem> {
    // Every package's rules, by package.
    let mut packages: BTreeMap<&[String], BTreeMap<String, Node>> = BTreeMap::new();
    for m in modules {
        let rules = packages.entry(&m.package).or_default();
        for (name, node) in &m.nodes {
            let entry = rules.entry(name.clone()).or_insert_with(|| Node {
                at: node.at.clone(),
                function: node.function,
                refs: Vec::new(),
            });
            entry.refs.extend(node.refs.iter().cloned());
        }
    }
    type Key = (Vec<String>, String);
    let mut edges: BTreeMap<Key, (At, bool, Vec<Key>)> = BTreeMap::new();
    for (package, rules) in &packages {
        for (name, node) in rules {
            let mut to = Vec::new();
            for path in &node.refs {
                match path.split_first() {
                    Some((head, rest)) if head == "data" => {
                        // The longest package the path starts with, then its rule.
                        for n in (1..rest.len()).rev() {
                            if let Some(theirs) = packages.get(&rest[..n]) {
                                to.extend(
                                    reached(theirs, &rest[n..])
                                        .into_iter()
                                        .map(|r| (rest[..n].to_vec(), r.clone())),
                                );
                                break;
                            }
                        }
                    }
                    Some(_) => to.extend(
                        reached(rules, path)
                            .into_iter()
                            .map(|r| (package.to_vec(), r.clone())),
                    ),
                    None => {}
                }
            }
            edges.insert(
                (package.to_vec(), name.clone()),
                (node.at.clone(), node.function, to),
            );
        }
    }
    let name = |k: &Key| format!("data.{}.{}", k.0.join("."), k.1);
    // Depth-first, with an explicit stack: a policy's chain of rules is not bounded.
    let mut state: BTreeMap<&Key, bool> = BTreeMap::new(); // false: open, true: done
    for start in edges.keys() {
        if state.contains_key(start) {
            continue;
        }
        let mut path: Vec<(&Key, usize)> = vec![(start, 0)];
        state.insert(start, false);
        while let Some(&(node, next)) = path.last() {
            let targets = &edges[node].2;
            let Some(target) = targets.get(next) else {
                state.insert(node, true);
                path.pop();
                continue;
            };
            if let Some(top) = path.last_mut() {
                top.1 += 1;
            }
            let Some((key, (at, function, _))) = edges.get_key_value(target) else {
                continue;
            };
            match state.get(key) {
                Some(false) => {
                    let from = path.iter().position(|(n, _)| *n == key).unwrap_or(0);
                    let mut cycle: Vec<String> =
                        path[from..].iter().map(|(n, _)| name(n)).collect();
                    cycle.push(name(key));
                    let what = if *function { "function" } else { "rule" };
                    return Some(PolicyProblem {
                        file: at.file.clone(),
                        line: Some(at.line),
                        column: Some(at.column),
                        message: format!(
                            "{what} {} is recursive ({}); Rego does not allow recursion (OPA refuses it when compiling), and evaluating it would never end",
                            name(key),
                            cycle.join(" → ")
                        ),
                    });
                }
                Some(true) => {}
                None => {
                    state.insert(key, false);
                    path.push((key, 0));
                }
            }
        }
    }
    None
}

/// Warnings on modules that load: see the module doc. `tools` are the names calls can have;
/// `data_keys` the top-level keys of the mounted data documents.
pub(super) fn warnings(
    modules: &[ModuleFacts],
    tools: &[&str],
    data_keys: &[String],
) -> Vec<PolicyProblem> {
    let mut out = Vec::new();
    let packages: Vec<&Vec<String>> = modules.iter().map(|m| &m.package).collect();
    let roots: BTreeSet<&str> = packages
        .iter()
        .filter_map(|p| p.first().map(String::as_str))
        .collect();

    // Packages outside `reasonix` that nothing refers to.
    let mut reported = BTreeSet::new();
    for m in modules {
        if m.package.first().is_some_and(|h| h == ROOT_PACKAGE) || !reported.insert(&m.package) {
            continue;
        }
        let referenced = modules.iter().filter(|o| o.package != m.package).any(|o| {
            o.data_refs.iter().any(|(path, _)| {
                let n = path.len().min(m.package.len());
                !path.is_empty() && path[..n] == m.package[..n]
            })
        });
        if !referenced {
            out.push(PolicyProblem {
                file: m.file.clone(),
                line: Some(1),
                column: None,
                message: format!(
                    "package {} is outside `{ROOT_PACKAGE}` and nothing imports it, so none of its rules can ever vote; name it `package {ROOT_PACKAGE}.…` to vote, or import it from a module that does",
                    m.package.join(".")
                ),
            });
        }
    }

    // `data.` references that nothing provides.
    for m in modules {
        let mut said = BTreeSet::new();
        for (path, at) in &m.data_refs {
            let Some(first) = path.first() else {
                continue;
            };
            if roots.contains(first.as_str())
                || data_keys.iter().any(|k| k == first)
                || !said.insert(first.clone())
            {
                continue;
            }
            let mounted = if data_keys.is_empty() {
                "no data is mounted".to_owned()
            } else {
                format!("the data mounted has only {}", data_keys.join(", "))
            };
            out.push(PolicyProblem {
                file: at.file.clone(),
                line: Some(at.line),
                column: Some(at.column),
                message: format!(
                    "data.{} is read, but {mounted} and no package is named {first}: it is always undefined; mount a document with a top-level key `{first}` (--data FILE)",
                    path.join(".")
                ),
            });
        }
    }

    // Tool names no tool has.
    for m in modules {
        for (name, at) in &m.tool_names {
            if !tools.contains(&name.as_str()) {
                out.push(PolicyProblem {
                    file: at.file.clone(),
                    line: Some(at.line),
                    column: Some(at.column),
                    message: format!(
                        "input.tool is compared with {name:?}, which no tool is called (the tools are: {}), so this never holds",
                        tools.join(", ")
                    ),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::load_texts as load;

    fn refused(modules: &[(&str, &str)]) -> String {
        match load(modules) {
            Err(p) => p[0].to_string(),
            Ok(_) => panic!("loaded: {modules:?}"),
        }
    }

    #[test]
    fn a_function_that_calls_itself_is_refused_with_its_place() {
        let e = refused(&[(
            "f.rego",
            "package reasonix\nimport rego.v1\n\nf(x) := f(x - 1) if x > 0\n",
        )]);
        assert!(
            e.starts_with("f.rego:4:1: function data.reasonix.f is recursive"),
            "{e}"
        );
    }

    #[test]
    fn recursion_through_another_package_and_an_import_is_refused() {
        let e = refused(&[
            (
                "a.rego",
                "package reasonix.a\nimport rego.v1\nimport data.lib as l\nping(n) := l.pong(n)\n",
            ),
            (
                "b.rego",
                "package lib\nimport rego.v1\npong(n) := data.reasonix.a.ping(n)\n",
            ),
        ]);
        assert!(
            e.contains("data.reasonix.a.ping") && e.contains("data.lib.pong"),
            "{e}"
        );
    }

    #[test]
    fn a_rule_that_reads_itself_behind_a_condition_is_refused() {
        let e = refused(&[(
            "r.rego",
            "package reasonix\nimport rego.v1\ndeny contains \"many\" if {\n  input.tool == \"bash\"\n  count(deny) > 2\n}\n",
        )]);
        assert!(e.contains("rule data.reasonix.deny is recursive"), "{e}");
    }

    #[test]
    fn locals_shared_prefixes_and_builtins_are_not_recursion() {
        for text in [
            // A function's argument named like a rule is a local.
            "package reasonix\nimport rego.v1\nf(deny) := deny + 1\ndeny contains \"n\" if f(1) == 3\n",
            // Rules with a shared prefix read each other, not themselves.
            "package reasonix\nimport rego.v1\nlimits.low := 1\nlimits.high := limits.low + 1\ndeny contains \"x\" if limits.high > 5\n",
            // A rule using `count` of another set.
            "package reasonix\nimport rego.v1\nask contains \"a\" if input.x\ndeny contains \"d\" if count(ask) > 3\n",
            // Helpers in another package, called, not recursive.
            "package reasonix\nimport rego.v1\nimport data.lib\ndeny contains \"d\" if lib.big(input.size)\n",
        ] {
            let lib = "package lib\nimport rego.v1\nbig(n) if n > limit\nlimit := 10\n";
            assert!(
                load(&[("p.rego", text), ("lib.rego", lib)]).is_ok(),
                "{text}: {:?}",
                load(&[("p.rego", text), ("lib.rego", lib)]).err()
            );
        }
    }
}
