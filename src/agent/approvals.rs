//! "Allow for this session": what a person's approval covers. The `approve` stage of a live
//! run asks a person about a call; an answer of `s` lets the same call run again without asking.
//! "The same call" is not the same text: a call is judged on what it resolves to, so an approval
//! is bound to what was approved — the tool and its arguments, **and** every path as it resolved
//! (with each symlink passed on the way, its role and access), the call's effects, and the
//! reasons that raised the ask. A later call with the same text that resolves elsewhere (a
//! symlink re-pointed at `.git/hooks`), does more, or is asked about for another reason is asked
//! again (issue 26).

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::gate::Admission;

/// The approvals "for this session" of one session.
#[derive(Debug, Default)]
pub struct Approvals {
    keys: HashSet<String>,
}

impl Approvals {
    /// Whether a person approved this very call, as judged now, for the session.
    pub fn covers(&self, name: &str, arguments: &str, asked: &Admission) -> bool {
        self.keys.contains(&key(name, arguments, asked))
    }

    /// A person approved this call, as judged now, for the session.
    pub fn approve(&mut self, name: &str, arguments: &str, asked: &Admission) {
        self.keys.insert(key(name, arguments, asked));
    }
}

/// What an approval is bound to: the tool, its arguments (keys sorted), and what the gate
/// concluded the call would do and why it asked. A path's `exists` and `size` are left out: a
/// write approved for the session still covers the same write once the file exists.
pub fn key(name: &str, arguments: &str, asked: &Admission) -> String {
    let arguments = serde_json::from_str::<Value>(arguments)
        .map(|v| v.to_string())
        .unwrap_or_else(|_| arguments.to_owned());
    let paths: Vec<Value> = asked
        .paths
        .iter()
        .map(|p| {
            json!({
                "path": p.path,
                "written": p.written,
                "role": p.role,
                "access": p.access,
                "inside": p.inside_workspace,
                "symlinks": p.symlinks,
            })
        })
        .collect();
    let bound = json!({
        "tool": asked.tool,
        "effects": asked.effects,
        "paths": paths,
        "stage": asked.stage,
        "reasons": asked.reasons,
    });
    format!("{name}\u{0}{arguments}\u{0}{bound}")
}
