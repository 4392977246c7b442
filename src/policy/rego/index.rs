//! The tool index: which voting packages a call's tool lets the evaluation skip.
//!
//! A package whose every `deny`, `ask` and `allow` rule starts each body with
//! `input.tool == "T"` (the same `T`; see `analysis::tool_guard`) votes nothing, and fails
//! nothing, on a call of another tool: each body stops at that first comparison. Such a
//! package is *guarded* by `T`. The generated module then holds one rule per guarding tool,
//! gathering the unguarded packages and the ones guarded by that tool, and one rule for every
//! other tool, gathering the unguarded packages only; a call evaluates the rule of its tool.
//!
//! Decided from the syntax trees when the policies load, conservatively: any rule that defines
//! a package's set, or a document above it (`git := {...}` in package `reasonix`, `deny[x]`), and
//! is not a guarded set rule leaves the package unguarded. Guarding is exact by construction —
//! the skipped sets would have been empty — and `a_guarded_package_is_skipped_only_where_it_votes_nothing`
//! holds the indexed votes to the full evaluation's, errors included.

use std::collections::BTreeSet;

use super::analysis::ModuleFacts;
use super::{AGGREGATE, Package};
use crate::policy::Decision;

/// One generated rule: its name, its path, and the packages (indexes into the voting packages)
/// it gathers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Selection {
    pub rule: String,
    /// `data.<AGGREGATE>.<rule>`, what an evaluation asks for (made once, not per call).
    pub path: String,
    pub packages: Vec<usize>,
}

/// The rules a call may evaluate, chosen by its tool.
#[derive(Clone, Debug)]
pub(super) struct Index {
    /// `(tool, selection)` for each tool that guards a package, sorted by tool.
    by_tool: Vec<(String, Selection)>,
    /// Every other tool, and a call whose input has no string `tool`: the unguarded packages
    /// (every package when no tool is known).
    other: Selection,
    /// Every package: the rule evaluated at load, and for an input without a string `tool`.
    pub all: Selection,
}

impl Index {
    /// The index of these voting packages, from the modules' facts.
    pub(super) fn of(packages: &[Package], facts: &[ModuleFacts]) -> Index {
        let guards: Vec<Option<String>> = packages.iter().map(|p| guard(p, facts)).collect();
        let tools: BTreeSet<&String> = guards.iter().flatten().collect();
        let pick = |rule: String, keep: &dyn Fn(&Option<String>) -> bool| Selection {
            path: format!("data.{AGGREGATE}.{rule}"),
            rule,
            packages: (0..packages.len()).filter(|&i| keep(&guards[i])).collect(),
        };
        Index {
            by_tool: tools
                .iter()
                .enumerate()
                .map(|(n, tool)| {
                    let selection = pick(format!("votes_{n}"), &|g| {
                        g.as_ref().is_none_or(|g| g == *tool)
                    });
                    ((*tool).clone(), selection)
                })
                .collect(),
            other: pick("votes_other".into(), &|g| g.is_none()),
            all: pick("votes".into(), &|_| true),
        }
    }

    /// The selection for a call of this tool (`None`: the input has no string `tool`).
    pub(super) fn select(&self, tool: Option<&str>) -> &Selection {
        let Some(tool) = tool else {
            return &self.all;
        };
        match self.by_tool.binary_search_by(|(t, _)| t.as_str().cmp(tool)) {
            Ok(i) => &self.by_tool[i].1,
            Err(_) => &self.other,
        }
    }

    /// Every selection: all packages, other tools, then each guarding tool's.
    pub(super) fn selections(&self) -> impl Iterator<Item = &Selection> {
        std::iter::once(&self.all)
            .chain(std::iter::once(&self.other))
            .chain(self.by_tool.iter().map(|(_, s)| s))
    }

    /// The generated module: one rule per selection, each an object
    /// `{package: {set: data.<package>.<set>}}` of the packages it gathers.
    pub(super) fn module(&self, packages: &[Package]) -> String {
        let mut out = format!("package {AGGREGATE}\n\nimport rego.v1\n");
        for selection in self.selections() {
            out.push_str(&format!("\n{} := {{\n", selection.rule));
            for &i in &selection.packages {
                let p = &packages[i];
                out.push_str(&format!("\t\"{}\": {{\n", p.name));
                for d in &p.sets {
                    out.push_str(&format!("\t\t\"{0}\": data.{1}.{0},\n", d.as_str(), p.name));
                }
                out.push_str("\t},\n");
            }
            out.push_str("}\n");
        }
        out
    }
}

/// The tool guarding a package, if every rule that defines one of its sets (or a document
/// above them) is a set rule guarded by that one tool.
fn guard(package: &Package, facts: &[ModuleFacts]) -> Option<String> {
    let base: Vec<&str> = package.name.split('.').collect();
    let mut tool: Option<&String> = None;
    let mut any = false;
    for set in [Decision::Deny, Decision::Ask, Decision::Allow] {
        let mut path = base.clone();
        path.push(set.as_str());
        for head in facts.iter().flat_map(|m| &m.heads) {
            let n = head.path.len().min(path.len());
            if head.path[..n] != path[..n] {
                continue;
            }
            // It defines this set (or, below it, part of it; or, above it, a document holding it).
            let exact = head.whole && head.path.len() == path.len();
            let this = head.tool.as_ref().filter(|_| exact)?;
            if tool.is_some_and(|t| t != this) {
                return None;
            }
            tool = Some(this);
            any = true;
        }
    }
    any.then(|| tool.cloned()).flatten()
}

#[cfg(test)]
mod tests {
    use super::super::load_texts as load;
    use super::super::{Rego, RegoSource};
    use std::path::Path;

    /// The guard of each voting package, by name.
    fn guards(rego: &Rego) -> Vec<(String, Option<String>)> {
        let index = &rego.index;
        rego.packages
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let guarded = index.by_tool.iter().find(|(_, s)| s.packages.contains(&i));
                let tool = guarded
                    .filter(|_| !index.other.packages.contains(&i))
                    .map(|(t, _)| t.clone());
                (p.name.clone(), tool)
            })
            .collect()
    }

    /// The same votes (or the same error) from the indexed evaluation and from every package.
    fn same_as_full(rego: &Rego, input: &str) -> Result<usize, String> {
        let input = super::super::RegoInput::from_json(input).unwrap();
        let indexed = rego.votes_on(&input);
        let full = rego.votes_of(&input, &rego.index.all);
        assert_eq!(indexed, full, "{input:?}");
        indexed.map(|v| v.len())
    }

    #[test]
    fn the_example_policies_are_indexed_by_the_tool_they_require() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/examples");
        let mut sources = Vec::new();
        for example in [
            "claude-code-bash",
            "git-push-origin",
            "network-allowlist",
            "read-size-limit",
            "workflows-ask",
        ] {
            for entry in std::fs::read_dir(root.join(example)).unwrap() {
                let path = entry.unwrap().path();
                let name = path.to_string_lossy().into_owned();
                if name.ends_with(".rego") && !name.ends_with("_test.rego") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    sources.push(RegoSource { name, text });
                }
            }
        }
        let rego = Rego::load(&sources, &[]).unwrap().unwrap();
        let mut got = guards(&rego);
        got.sort();
        let want = [
            ("reasonix.claude", Some("bash")),
            ("reasonix.git", None),
            ("reasonix.network", None),
            ("reasonix.size", Some("read_file")),
            ("reasonix.workflows", None),
        ];
        let want: Vec<(String, Option<String>)> = want
            .iter()
            .map(|(p, t)| ((*p).to_owned(), t.map(str::to_owned)))
            .collect();
        assert_eq!(got, want);
        // Each selection gathers what it should.
        assert_eq!(rego.index.select(Some("bash")).packages.len(), 4);
        assert_eq!(rego.index.select(Some("read_file")).packages.len(), 4);
        assert_eq!(rego.index.select(Some("write_file")).packages.len(), 3);
        assert_eq!(rego.index.select(None).packages.len(), 5);
    }

    /// The refused attack: a guarded package whose body would fail after its guard must still
    /// fail the call of its tool (fail closed), and a package that is not provably guarded is
    /// never skipped. The legitimate use: the other tool's call is judged as the full evaluation
    /// judges it, without the package.
    #[test]
    fn a_guarded_package_is_skipped_only_where_it_votes_nothing() {
        let rego = load(&[
            (
                "g.rego",
                "package reasonix.g\nimport rego.v1\ndeny contains \"big\" if {\n  input.tool == \"read_file\"\n  to_number(input.n) > 1\n}\nask contains \"r\" if { \"read_file\" == input.tool; input.ask }\n",
            ),
            (
                "b.rego",
                "package reasonix.b\nimport rego.v1\nallow contains \"ok\" if { input.tool == \"bash\"; input.ok }\n",
            ),
            (
                "u.rego",
                "package reasonix.u\nimport rego.v1\ndeny contains \"u\" if { input.tool == \"bash\"; input.u }\ndeny contains \"v\" if { input.v }\n",
            ),
        ])
        .unwrap()
        .unwrap();
        let got = guards(&rego);
        assert_eq!(
            got,
            [
                ("reasonix.b".to_owned(), Some("bash".to_owned())),
                ("reasonix.g".to_owned(), Some("read_file".to_owned())),
                ("reasonix.u".to_owned(), None),
            ]
        );
        // The guarded tool still fails closed on the error after the guard.
        assert!(same_as_full(&rego, r#"{"tool": "read_file", "n": "abc"}"#).is_err());
        assert_eq!(
            same_as_full(&rego, r#"{"tool": "read_file", "n": "5"}"#),
            Ok(1)
        );
        // Another tool: the full evaluation stops at the guard too — no error, no vote.
        assert_eq!(
            same_as_full(&rego, r#"{"tool": "bash", "n": "abc", "ok": true}"#),
            Ok(1)
        );
        assert_eq!(
            same_as_full(&rego, r#"{"tool": "grep", "n": "abc", "v": true}"#),
            Ok(1)
        );
        assert_eq!(
            same_as_full(&rego, r#"{"tool": "bash", "u": true, "ask": true}"#),
            Ok(1)
        );
        // No string tool: every package.
        assert!(same_as_full(&rego, r#"{"n": "abc"}"#).is_ok());
        assert!(same_as_full(&rego, r#"{"tool": 5, "n": "abc"}"#).is_ok());
        assert!(same_as_full(&rego, "[]").is_ok());
    }

    #[test]
    fn only_provable_guards_count() {
        for (why, modules) in [
            (
                "a body without the guard",
                vec![
                    "package reasonix.p\nimport rego.v1\ndeny contains \"a\" if input.tool == \"x\"\ndeny contains \"b\" if true\n",
                ],
            ),
            (
                "two tools",
                vec![
                    "package reasonix.p\nimport rego.v1\ndeny contains \"a\" if input.tool == \"x\"\nask contains \"b\" if input.tool == \"y\"\n",
                ],
            ),
            (
                "the guard not first",
                vec![
                    "package reasonix.p\nimport rego.v1\ndeny contains \"a\" if { input.n; input.tool == \"x\" }\n",
                ],
            ),
            (
                "a guard under with",
                vec![
                    "package reasonix.p\nimport rego.v1\ndeny contains \"a\" if { input.tool == \"x\" with input.tool as \"x\" }\n",
                ],
            ),
            (
                "a negated guard",
                vec![
                    "package reasonix.p\nimport rego.v1\ndeny contains \"a\" if { not input.tool == \"x\" }\n",
                ],
            ),
            (
                "a set without a body",
                vec![
                    "package reasonix.p\nimport rego.v1\ndeny contains \"a\"\nask contains \"b\" if input.tool == \"x\"\n",
                ],
            ),
            (
                "a complete rule",
                vec![
                    "package reasonix.p\nimport rego.v1\ndeny := {\"a\"} if input.tool == \"x\"\n",
                ],
            ),
            (
                "a unification, not a comparison",
                vec![
                    "package reasonix.p\nimport rego.v1\ndeny contains \"a\" if input.tool = \"x\"\n",
                ],
            ),
            (
                "the set defined from the package above",
                vec![
                    "package reasonix.p\nimport rego.v1\ndeny contains \"a\" if input.tool == \"x\"\n",
                    "package reasonix\nimport rego.v1\np.deny contains \"b\" if true\n",
                ],
            ),
        ] {
            let named: Vec<(String, &str)> = modules
                .iter()
                .enumerate()
                .map(|(i, m)| (format!("m{i}.rego"), *m))
                .collect();
            let texts: Vec<(&str, &str)> = named.iter().map(|(n, t)| (n.as_str(), *t)).collect();
            let rego = load(&texts).unwrap().unwrap();
            assert!(
                guards(&rego).iter().all(|(_, tool)| tool.is_none()),
                "{why}: {:?}",
                guards(&rego)
            );
            for input in [r#"{"tool": "y", "n": true}"#, r#"{"tool": "x"}"#] {
                let _ = same_as_full(&rego, input);
            }
        }
    }
}
