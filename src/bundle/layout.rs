//! A bundle's files → its manifest, Rego modules, data and YAML rules, checked against OPA's
//! layout rules (`v1/bundle/bundle.go`, `validateAndInjectDefaults`):
//!
//! 1. `.manifest` is optional; without one the revision is `""` and the roots are `[""]`
//!    (everything), as in OPA. With one, `roots` absent means `[""]`; `roots: []` permits nothing.
//! 2. Roots are trimmed of `/`; two roots that overlap by whole path segments (`a` and `a/b`,
//!    not `a` and `another`) are refused.
//! 3. Every Rego module's package path (`package a.b` → `a/b`) must lie under a root.
//! 4. A data file (`data.json`, `data.yaml`, `data.yml`) is mounted at its folder's path
//!    (`a/b/data.json` → `data.a.b`); every leaf of the data must lie under a root, walked as
//!    OPA walks it (a key above a root is descended into; a key beside every root is refused).
//! 5. Reasonix's own YAML rules are the `*.yaml`/`*.yml` files under [`RULES_DIR`]; that folder
//!    must lie under a root too (a bundle that owns `reasonix` owns its rules).
//! 6. Other files are ignored, as OPA ignores them (they still count for a signature).
//!
//! Test modules (`*_test.rego`) are checked like any module and left out of the policy, as
//! `--policy` leaves them out.

use std::collections::BTreeMap;

use serde_json::{Map, Value as Json};

/// Where a bundle keeps Reasonix's YAML rules.
pub const RULES_DIR: &str = "reasonix/rules";

/// A bundle's files by path (`/`-separated, no leading `/`), as read from a folder or a tarball.
pub type Files = BTreeMap<String, Vec<u8>>;

/// The `.manifest`, as far as Reasonix reads it.
#[derive(Clone, Debug, Default, serde::Deserialize)]
struct Manifest {
    #[serde(default)]
    revision: Option<Json>,
    #[serde(default)]
    roots: Option<Vec<String>>,
}

/// What a bundle's files hold, checked.
#[derive(Debug, Default)]
pub struct Layout {
    /// The manifest's revision (`""` without one).
    pub revision: String,
    /// The roots, trimmed.
    pub roots: Vec<String>,
    /// Rego modules that vote or help: `(path, text)`.
    pub rego: Vec<(String, String)>,
    /// YAML rule files: `(path, text)`.
    pub yaml: Vec<(String, String)>,
    /// All data, merged into one document (`None` when the bundle has none).
    pub data: Option<Json>,
}

/// Reads and checks the layout; the first problem is the error, in words a bundle author can act on.
pub fn layout(files: &Files) -> Result<Layout, String> {
    let manifest = match files.get(".manifest") {
        Some(bytes) => serde_json::from_slice::<Manifest>(bytes)
            .map_err(|e| format!(".manifest is not a valid manifest: {e}"))?,
        None => Manifest::default(),
    };
    let revision = match manifest.revision {
        None => String::new(),
        Some(Json::String(s)) => s,
        Some(other) => {
            return Err(format!(".manifest: revision must be a string, not {other}"));
        }
    };
    let roots: Vec<String> = manifest
        .roots
        .unwrap_or_else(|| vec![String::new()])
        .into_iter()
        .map(|r| r.trim_matches('/').to_owned())
        .collect();
    for (i, a) in roots.iter().enumerate() {
        for b in &roots[i + 1..] {
            if overlap(a, b) {
                return Err(format!("manifest has overlapped roots: '{a}' and '{b}'"));
            }
        }
    }
    let mut out = Layout {
        revision,
        roots,
        ..Layout::default()
    };
    let mut data = Json::Object(Map::new());
    let mut any_data = false;
    for (path, bytes) in files {
        let base = path.rsplit('/').next().unwrap_or(path);
        let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
        if base.ends_with(".rego") {
            let text = utf8(path, bytes)?;
            let package = package_path(path, &text)?;
            if !contains(&out.roots, &package) {
                return Err(format!(
                    "manifest roots {} do not permit 'package {}' in module '/{path}'",
                    show(&out.roots),
                    package.replace('/', ".")
                ));
            }
            if !base.ends_with("_test.rego") {
                out.rego.push((path.clone(), text));
            }
        } else if matches!(base, "data.json" | "data.yaml" | "data.yml") {
            let text = utf8(path, bytes)?;
            let value: Json = if base == "data.json" {
                serde_json::from_str(&text).map_err(|e| format!("/{path}: {e}"))?
            } else {
                yaml_serde::from_str(&text).map_err(|e| format!("/{path}: {e}"))?
            };
            permitted(&out.roots, dir, &value)?;
            mount(&mut data, dir, value).map_err(|at| {
                format!("/{path}: data at '/{at}' is already given by another data file")
            })?;
            any_data = true;
        } else if (base.ends_with(".yaml") || base.ends_with(".yml"))
            && (dir == RULES_DIR || dir.starts_with(&format!("{RULES_DIR}/")))
        {
            if !contains(&out.roots, RULES_DIR) {
                return Err(format!(
                    "manifest roots {} do not permit Reasonix rules at '/{path}' (they live under /{RULES_DIR}/)",
                    show(&out.roots)
                ));
            }
            out.yaml.push((path.clone(), utf8(path, bytes)?));
        }
    }
    out.data = any_data.then_some(data);
    Ok(out)
}

fn utf8(path: &str, bytes: &[u8]) -> Result<String, String> {
    String::from_utf8(bytes.to_vec()).map_err(|_| format!("/{path} is not UTF-8"))
}

/// `package a.b` of a module, as the path `a/b`, read by the Rego parser itself.
fn package_path(path: &str, text: &str) -> Result<String, String> {
    let mut engine = regorus::Engine::new();
    let package = engine
        .add_policy(format!("/{path}"), text.to_owned())
        .map_err(|e| format!("/{path}: {e}"))?;
    let package = package.strip_prefix("data.").unwrap_or(&package);
    Ok(package.replace('.', "/"))
}

/// Whether two roots overlap by whole segments (`a` and `a/b`; `""` overlaps everything).
fn overlap(a: &str, b: &str) -> bool {
    under(a, b) || under(b, a)
}

/// Whether `path` is `root` or below it, by whole segments.
fn under(path: &str, root: &str) -> bool {
    root.is_empty()
        || path == root
        || path
            .strip_prefix(root)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Whether some root holds `path`.
fn contains(roots: &[String], path: &str) -> bool {
    roots.iter().any(|r| under(path, r))
}

fn show(roots: &[String]) -> String {
    format!("[{}]", roots.join(" "))
}

/// OPA's walk over data: a path under a root is permitted; a path above a root is descended
/// into; anything else is refused.
fn permitted(roots: &[String], at: &str, value: &Json) -> Result<(), String> {
    if contains(roots, at) {
        return Ok(());
    }
    let above = roots.iter().any(|r| at.is_empty() || under(r, at));
    match value {
        Json::Object(map) if above => {
            for (key, v) in map {
                let next = if at.is_empty() {
                    key.clone()
                } else {
                    format!("{at}/{key}")
                };
                permitted(roots, &next, v)?;
            }
            Ok(())
        }
        _ => Err(format!(
            "manifest roots {} do not permit data at path '/{at}' (hint: check bundle directory structure)",
            show(roots)
        )),
    }
}

/// Puts `value` at `dir` in `data`, merging objects; a leaf given twice is a conflict (its path).
fn mount(data: &mut Json, dir: &str, value: Json) -> Result<(), String> {
    let mut node = data;
    let mut walked = String::new();
    for key in dir.split('/').filter(|k| !k.is_empty()) {
        if !walked.is_empty() {
            walked.push('/');
        }
        walked.push_str(key);
        let Json::Object(map) = node else {
            return Err(walked);
        };
        node = map
            .entry(key.to_owned())
            .or_insert_with(|| Json::Object(Map::new()));
    }
    merge(node, value, &walked)
}

fn merge(into: &mut Json, value: Json, at: &str) -> Result<(), String> {
    match (into, value) {
        (Json::Object(a), Json::Object(b)) => {
            for (k, v) in b {
                let path = if at.is_empty() {
                    k.clone()
                } else {
                    format!("{at}/{k}")
                };
                match a.get_mut(&k) {
                    Some(existing) => merge(existing, v, &path)?,
                    None => {
                        a.insert(k, v);
                    }
                }
            }
            Ok(())
        }
        (slot @ Json::Object(_), v) if slot.as_object().is_some_and(Map::is_empty) => {
            *slot = v;
            Ok(())
        }
        _ => Err(at.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(list: &[(&str, &str)]) -> Files {
        list.iter()
            .map(|(p, t)| ((*p).to_owned(), t.as_bytes().to_vec()))
            .collect()
    }

    /// One row per layout rule of OPA's own tests (`TestManifestValidate` in
    /// `v1/bundle/bundle_test.go`), with what OPA answers: `Ok` or the start of its error.
    #[test]
    fn layouts_are_accepted_or_refused_as_opa_does() {
        /// What the row is, the bundle's files, and OPA's error (or `None`: accepted).
        type Row<'a> = (&'a str, &'a [(&'a str, &'a str)], Option<&'a str>);
        let rows: &[Row<'_>] = &[
            (
                "a missing manifest: every root, revision empty",
                &[
                    ("x.rego", "package foo.bar\n"),
                    ("data.json", r#"{"a": 1}"#),
                ],
                None,
            ),
            (
                "roots absent: every root",
                &[
                    (".manifest", r#"{"revision": "r"}"#),
                    ("x.rego", "package foo\n"),
                ],
                None,
            ),
            (
                "prefixed roots",
                &[
                    (
                        ".manifest",
                        r#"{"revision": "abcd", "roots": ["a/b", "foo"]}"#,
                    ),
                    ("data.json", r#"{"a": {"b": 1}}"#),
                    ("x.rego", "package foo.bar\n"),
                ],
                None,
            ),
            (
                "empty roots permit nothing",
                &[
                    (".manifest", r#"{"revision": "abcd", "roots": []}"#),
                    ("x.rego", "package foo\n"),
                ],
                Some("manifest roots [] do not permit 'package foo' in module '/x.rego'"),
            ),
            (
                "overlapped roots",
                &[(
                    ".manifest",
                    r#"{"revision": "abcd", "roots": ["a/b", "a"]}"#,
                )],
                Some("manifest has overlapped roots: 'a/b' and 'a'"),
            ),
            (
                "a partial segment does not overlap",
                &[(
                    ".manifest",
                    r#"{"revision": "abcd", "roots": ["a", "another_root"]}"#,
                )],
                None,
            ),
            (
                "a package outside the roots",
                &[
                    (
                        ".manifest",
                        r#"{"revision": "abcd", "roots": ["a", "b", "c/d"]}"#,
                    ),
                    ("a.rego", "package b.c\n"),
                    ("x.rego", "package c.e\n"),
                ],
                Some("manifest roots [a b c/d] do not permit 'package c.e' in module '/x.rego'"),
            ),
            (
                "data outside the roots",
                &[
                    (
                        ".manifest",
                        r#"{"revision": "abcd", "roots": ["a", "b", "c/d"]}"#,
                    ),
                    ("data.json", r#"{"a": 1}"#),
                    ("c/e/data.json", r#""bad bad bad""#),
                ],
                Some("manifest roots [a b c/d] do not permit data at path '/c/e'"),
            ),
            (
                "data at a folder's path, under a root",
                &[
                    (".manifest", r#"{"roots": ["c/d"]}"#),
                    ("c/d/data.yaml", "x: 1\n"),
                ],
                None,
            ),
            (
                "data in a root file, beside every root",
                &[
                    (".manifest", r#"{"roots": ["a"]}"#),
                    ("data.json", r#"{"b": 1}"#),
                ],
                Some("manifest roots [a] do not permit data at path '/b'"),
            ),
            (
                "Reasonix rules outside the roots",
                &[
                    (".manifest", r#"{"roots": ["hosts"]}"#),
                    ("reasonix/rules/team.yaml", "version: 1\n"),
                ],
                Some("manifest roots [hosts] do not permit Reasonix rules"),
            ),
            (
                "a revision that is not a string",
                &[(".manifest", r#"{"revision": 7}"#)],
                Some(".manifest: revision must be a string"),
            ),
            (
                "the same data from two files",
                &[
                    ("a/data.json", r#"{"x": 1}"#),
                    ("data.json", r#"{"a": {"x": 2}}"#),
                ],
                Some("is already given by another data file"),
            ),
        ];
        for (what, list, expected) in rows {
            let got = layout(&files(list));
            match (expected, &got) {
                (None, Ok(_)) => {}
                (Some(start), Err(e)) if e.starts_with(start) || e.contains(start) => {}
                _ => panic!("{what}: expected {expected:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn data_files_mount_at_their_folder_and_test_modules_stay_out() {
        let l = layout(&files(&[
            ("hosts/data.json", r#"{"allowed": ["a"]}"#),
            ("hosts/extra/data.yaml", "enabled: true\n"),
            ("reasonix/policy.rego", "package reasonix\n"),
            (
                "reasonix/policy_test.rego",
                "package reasonix\ntest_x if true\n",
            ),
            ("reasonix/rules/team.yaml", "version: 1\n"),
            ("README.md", "ignored"),
        ]))
        .unwrap();
        assert_eq!(
            l.data,
            Some(serde_json::json!({"hosts": {"allowed": ["a"], "extra": {"enabled": true}}}))
        );
        assert_eq!(l.rego.len(), 1);
        assert_eq!(l.yaml.len(), 1);
        assert_eq!(l.revision, "");
        assert_eq!(l.roots, vec![String::new()]);
    }
}
