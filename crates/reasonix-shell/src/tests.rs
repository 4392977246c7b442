//! Unit tests of the analysis as a whole: its JSON shape and the paths it hands the gate.

use super::*;
use crate::vocab::Access;

#[test]
fn the_json_carries_argv_features_redirects_and_dynamic_words() {
    let a = Analysis::of("FOO=1 cat \"$F\" 2>/dev/null | grep x > out.txt");
    let v = serde_json::to_value(&a).unwrap();
    assert_eq!(v["analysed"], true);
    assert_eq!(v["commands"][0]["argv"], serde_json::json!(["cat", "$F"]));
    assert_eq!(v["commands"][0]["dynamic"][0]["word"], 1);
    assert_eq!(v["commands"][0]["dynamic"][0]["kinds"][0], "variable");
    assert_eq!(v["commands"][0]["assignments"][0]["name"], "FOO");
    assert_eq!(v["commands"][1]["context"][0], "pipeline");
    assert_eq!(v["redirects"][0]["kind"], "device");
    assert_eq!(v["redirects"][1]["kind"], "write");
    assert_eq!(v["redirects"][1]["target"], "out.txt");
    let features: Vec<&str> = v["features"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f.as_str())
        .collect();
    assert!(
        features.contains(&"pipe") && features.contains(&"redirect_write"),
        "{features:?}"
    );
}

#[test]
fn redirect_targets_are_confined_paths_and_words_are_arguments() {
    let a = Analysis::of("cat notes.md > out.txt < in.txt");
    let requests = a.path_requests();
    let find = |w: &str| requests.iter().find(|r| r.written == w).unwrap();
    assert_eq!(
        (find("out.txt").role, find("out.txt").access),
        (PathRole::Redirect, Access::Write)
    );
    assert_eq!(
        (find("in.txt").role, find("in.txt").access),
        (PathRole::Redirect, Access::Read)
    );
    assert_eq!(find("notes.md").role, PathRole::Argument);
    assert!(
        !requests.iter().any(|r| r.written == "cat"),
        "the command name is not a path"
    );
}

#[test]
fn options_are_not_paths_but_their_values_are() {
    let a = Analysis::of("grep -r --include=.env KEY .");
    let requests = a.path_requests();
    let written: Vec<&str> = requests.iter().map(|r| r.written.as_str()).collect();
    assert!(written.contains(&".env") && written.contains(&"KEY") && written.contains(&"."));
    assert!(!written.contains(&"-r"));
}

#[test]
fn a_script_too_large_is_not_understood() {
    let a = Analysis::of(&"x".repeat(MAX_SCRIPT + 1));
    assert!(!a.analysed);
}

/// A script nested `n` levels deep.
type Nest = fn(usize) -> String;

/// Scripts nested `n` levels deep, one per construct the walk recurses through.
const NESTED: &[(&str, Nest)] = &[
    ("command substitution", |n| {
        format!("echo {}x{}", "$(echo ".repeat(n), ")".repeat(n))
    }),
    ("subshell", |n| {
        format!("{}ls{}", "(".repeat(n), ")".repeat(n))
    }),
    ("group", |n| {
        format!("{}ls;{}", "{ ".repeat(n), " }".repeat(n))
    }),
    ("if", |n| {
        format!("{}ls{}", "if true; then ".repeat(n), "; fi".repeat(n))
    }),
    ("expansion", |n| {
        format!("echo {}x{}", "${a:-".repeat(n), "}".repeat(n))
    }),
    ("arithmetic", |n| {
        format!("echo $(( {}1{} ))", "(".repeat(n), ")".repeat(n))
    }),
    ("bash -c", |n| {
        format!("bash -c 'bash -c \"{}ls{}\"'", "(".repeat(n), ")".repeat(n))
    }),
    ("string", |n| {
        format!("echo {}x{}", "\"$(echo ".repeat(n), ")\"".repeat(n))
    }),
];

#[test]
fn deep_nesting_is_refused_and_the_deepest_analysed_fits_a_worker_stack() {
    let too_deep = |a: &Analysis| {
        a.problems
            .iter()
            .any(|p| p.contains("levels of syntax deep"))
    };
    // Walked in a thread with the stack of a tokio worker (2 MiB), as `mcp serve` judges: an
    // overflow would abort the whole test binary.
    let worker = std::thread::Builder::new().stack_size(2 << 20);
    let checked = worker
        .spawn(move || {
            let mut deepest = Vec::new();
            for (what, nested) in NESTED {
                // Far too deep: not analysed, and the process lives on.
                let a = Analysis::of(&nested(3000));
                assert!(!a.analysed, "{what}: {:?}", a.problems);
                // Every depth up to the bound: walked, or refused before the walk.
                let mut walked = 0;
                for n in (1..=MAX_NESTING).step_by(3) {
                    if !too_deep(&Analysis::of(&nested(n))) {
                        walked = n;
                    }
                }
                deepest.push((*what, walked));
            }
            deepest
        })
        .unwrap()
        .join()
        .unwrap();
    // As deep as anyone writes by hand, and deeper, is analysed.
    for (what, walked) in &checked {
        assert!(*walked >= 20, "{what}: {checked:?}");
    }
    // The bound is shared with the shells around a script.
    let (_, inner) = checked.iter().find(|(w, _)| *w == "bash -c").unwrap();
    let (_, outer) = checked.iter().find(|(w, _)| *w == "subshell").unwrap();
    assert!(inner < outer, "{checked:?}");
}

#[test]
fn nesting_is_bounded() {
    let mut script = "rm -rf x".to_owned();
    for _ in 0..(MAX_DEPTH + 2) {
        script = format!("bash -c {}", shell_quote(&script));
    }
    let a = Analysis::of(&script);
    assert!(!a.analysed, "{:?}", a.problems);
    assert!(
        a.problems.iter().any(|p| p.contains("nested deeper")),
        "{:?}",
        a.problems
    );
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}
