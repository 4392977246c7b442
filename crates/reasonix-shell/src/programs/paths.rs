//! Paths hidden inside other syntax that programs read, found from the matcher's output so that
//! a deny rule on a path sees each of them:
//!
//! - an option's value attached to its letter (`grep -f.env`, `sed -fscript.sed`) or after the
//!   `=` of a one-dash option (`go test -exec=./x`); `--name=VALUE` words are read as paths
//!   already;
//! - curl's `@FILE` (`curl -d @.env`, `-F f=@.env`, `--data-urlencode k@.env`, `-H @.env`);
//! - git's `REV:PATH` and `:STAGE:PATH` (`git show HEAD~1:config/.env`, `git cat-file -p
//!   :0:.env`, `git archive HEAD config/.env`);
//! - relative paths moved by an option that changes the folder (`git -C config show HEAD:.env`
//!   reads `config/.env`; `tar -C secrets -cf /tmp/x.tar key` reads `secrets/key`), the
//!   command's own or a wrapper's around it (`env -C secrets cat key`).
//!
//! [`hidden`] returns, for each word that hides paths, every path it may stand for; the hazard
//! scan records them as the word's values, which is what the path requests read.

use super::spec::{Parsed, Role};
use crate::Command;

/// Git subcommands whose operands are URLs or remote names, not `REV:PATH`.
const GIT_REMOTE: &[&str] = &[
    "clone",
    "fetch",
    "pull",
    "push",
    "ls-remote",
    "remote",
    "submodule",
    "request-pull",
    "send-email",
];

/// The path in `REV:PATH`, `:PATH` or `:N:PATH`, if the word is one.
fn rev_path(word: &str) -> Option<&str> {
    if word.starts_with('-') || word.contains("://") {
        return None;
    }
    let path = match word.strip_prefix(':') {
        Some(rest) => match rest.split_once(':') {
            Some((stage, path)) if stage.len() == 1 && stage.as_bytes()[0].is_ascii_digit() => path,
            _ => rest,
        },
        None => word.split_once(':')?.1,
    };
    (!path.is_empty()).then_some(path)
}

/// A folder joined with a relative path; `None` for a path that does not move.
fn join(folder: &str, path: &str) -> Option<String> {
    if path.starts_with(['/', '~', '-']) || path.is_empty() || folder.is_empty() {
        return None;
    }
    Some(format!("{}/{path}", folder.trim_end_matches('/')))
}

/// The folders an option of this command moves it to (static values only).
fn folders<'a>(command: &'a Command, parsed: &Parsed<'a>) -> Vec<&'a str> {
    let words = &command.words[1..];
    parsed
        .options
        .iter()
        .filter(|f| f.role() == Role::Folder)
        .filter(|f| f.value_at.is_none_or(|at| words[at].is_static()))
        .filter_map(|f| f.value)
        .collect()
}

/// For each word of `command` (by index in its words) that hides paths, the paths it may stand
/// for; `outer` holds the folders the wrappers around it move to.
pub fn hidden(command: &Command, parsed: &Parsed, outer: &[String]) -> Vec<(usize, Vec<String>)> {
    let mut out: Vec<(usize, Vec<String>)> = Vec::new();
    let mut add = |word: usize, path: String| match out.iter_mut().find(|(w, _)| *w == word) {
        Some((_, paths)) => {
            if !paths.contains(&path) {
                paths.push(path);
            }
        }
        None => out.push((word, vec![path])),
    };
    // Values attached to a short option, or after `=` of a one-dash one.
    for f in &parsed.options {
        let Some(value) = f.value else { continue };
        let word = &command.argv[f.at + 1];
        if f.value_at.is_some() || word.starts_with("--") || value.is_empty() {
            continue;
        }
        if value.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        add(f.at + 1, value.to_owned());
    }
    // `git log -L START,END:PATH` and `-L :FUNC:PATH`: the path after the last `:`.
    if command.basename() == "git" {
        for f in parsed.options.iter().filter(|f| f.name == "-L") {
            if let Some((_, path)) = f.value.and_then(|v| v.rsplit_once(':'))
                && !path.is_empty()
            {
                add(f.value_at.map_or(f.at + 1, |at| at + 1), path.to_owned());
            }
        }
    }
    // curl's @FILE in the options that read one.
    if command.basename() == "curl" {
        for f in &parsed.options {
            let Some(value) = f.value else { continue };
            let path = match f.name.as_ref() {
                "-d" | "--data-binary" | "--data-ascii" | "--json" | "-H" | "--variable" => value
                    .strip_prefix('@')
                    .or_else(|| value.split_once("@").map(|(_, p)| p)),
                "--data-urlencode" => value.split_once('@').map(|(_, p)| p),
                "-F" => value
                    .split_once("=@")
                    .or_else(|| value.split_once("=<"))
                    .map(|(_, p)| p.split(';').next().unwrap_or(p)),
                _ => None,
            };
            if let Some(path) = path.filter(|p| !p.is_empty() && *p != "-") {
                add(f.value_at.map_or(f.at + 1, |at| at + 1), path.to_owned());
            }
        }
    }
    // git's REV:PATH.
    let git = command.basename() == "git"
        && !parsed
            .subcommand(0)
            .is_some_and(|s| GIT_REMOTE.contains(&s));
    let own = folders(command, parsed);
    let moved = !own.is_empty() || !outer.is_empty();
    let mut relative: Vec<(usize, &str)> = Vec::new();
    for &i in &parsed.operands {
        let word = command.argv[i + 1].as_str();
        if git && let Some(path) = rev_path(word) {
            add(i + 1, path.to_owned());
            relative.push((i + 1, path));
        }
        if moved {
            relative.push((i + 1, word));
        }
    }
    // Folder moves: the command's own options, then the wrappers' around it.
    if moved {
        for folder in own.into_iter().chain(outer.iter().map(String::as_str)) {
            for (word, path) in &relative {
                if let Some(moved) = join(folder, path) {
                    add(*word, moved);
                }
            }
        }
    }
    out
}

/// The folders a wrapper moves its inner commands to: its folder options (`env -C D`, `sudo
/// -D D`), and `direnv exec DIR`.
pub fn moves(command: &Command, parsed: &Parsed) -> Vec<String> {
    let mut out: Vec<String> = folders(command, parsed)
        .into_iter()
        .map(str::to_owned)
        .collect();
    if command.basename() == "direnv"
        && parsed.subcommand(0) == Some("exec")
        && let Some(&at) = parsed.operands.first()
        && command.words[at + 1].is_static()
    {
        out.push(command.argv[at + 1].clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rev_paths_are_read_from_every_form() {
        assert_eq!(rev_path("HEAD~1:config/.env"), Some("config/.env"));
        assert_eq!(rev_path("HEAD:.env"), Some(".env"));
        assert_eq!(rev_path(":0:.env"), Some(".env"));
        assert_eq!(rev_path(":.env"), Some(".env"));
        assert_eq!(rev_path("stash@{0}:x"), Some("x"));
        assert_eq!(rev_path("HEAD"), None);
        assert_eq!(rev_path("HEAD:"), None);
        assert_eq!(rev_path("https://x/y"), None);
    }
}
