//! The shell's own state: the options of `set`, `shopt` and a shell's command line, and the
//! builtins whose operands change how later words and commands are read. The walk models what
//! it can (`set -a`, the names a builtin fills); every other change of state it does not track
//! makes the script not understood, since a later word would then be read otherwise by bash
//! than by the analysis (`set -k` makes `X=1` after a command name its environment, `shopt -s
//! dotglob` lets `*` find `.env`, `set -H` rewrites `!` lines).
//!
//! The tables are data: each row says what turning the option on and off does to the analysis,
//! and the tests run every row.

/// What an option change does to the analysis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Changes nothing the analysis reads (tracing, exit on error, job control, prompts).
    Inert,
    /// Modelled by the walk (`set -a`: assignments are exported, see `scope`).
    Modelled,
    /// Changes how later words or commands are read, in a way the analysis does not follow.
    Untracked(&'static str),
}

use Effect::{Inert, Modelled, Untracked};

/// One option of `set` (and of a shell's command line): its letter, its `-o` name, and the
/// effect of turning it on (`-x`) and off (`+x`).
pub(crate) struct SetOption {
    pub letter: Option<char>,
    pub name: &'static str,
    pub on: Effect,
    pub off: Effect,
}

const fn set(letter: Option<char>, name: &'static str, on: Effect, off: Effect) -> SetOption {
    SetOption {
        letter,
        name,
        on,
        off,
    }
}

/// bash 5.2's `set` options. The defaults of a non-interactive bash are the ones whose `off`
/// (or `on`) is inert when already in force.
#[rustfmt::skip]
pub(crate) const SET_OPTIONS: &[SetOption] = &[
    set(Some('a'), "allexport", Modelled, Modelled),
    set(Some('b'), "notify", Inert, Inert),
    set(Some('e'), "errexit", Inert, Inert),
    set(Some('f'), "noglob", Untracked("globs are no longer expanded"), Inert),
    set(Some('h'), "hashall", Inert, Inert),
    set(Some('k'), "keyword", Untracked("assignment words after a command name become its environment"), Inert),
    set(Some('m'), "monitor", Inert, Inert),
    set(Some('n'), "noexec", Inert, Inert),
    set(Some('p'), "privileged", Inert, Inert),
    set(Some('t'), "onecmd", Inert, Inert),
    set(Some('u'), "nounset", Inert, Inert),
    set(Some('v'), "verbose", Inert, Inert),
    set(Some('x'), "xtrace", Inert, Inert),
    set(Some('B'), "braceexpand", Inert, Untracked("braces are no longer expanded")),
    set(Some('C'), "noclobber", Inert, Inert),
    set(Some('E'), "errtrace", Inert, Inert),
    set(Some('H'), "histexpand", Untracked("history expansion rewrites lines holding `!`"), Inert),
    set(Some('P'), "physical", Untracked("cd follows symbolic links physically"), Inert),
    set(Some('T'), "functrace", Inert, Inert),
    set(None, "emacs", Inert, Inert),
    set(None, "vi", Inert, Inert),
    set(None, "history", Inert, Inert),
    set(None, "ignoreeof", Inert, Inert),
    set(None, "interactive-comments", Inert, Untracked("`#` no longer starts a comment")),
    set(None, "nolog", Inert, Inert),
    set(None, "pipefail", Inert, Inert),
    set(None, "posix", Untracked("POSIX mode: assignments before special builtins persist, and more"), Inert),
];

/// One `shopt` option and the effect of setting (`-s`) and unsetting (`-u`) it.
pub(crate) struct ShoptOption {
    pub name: &'static str,
    pub on: Effect,
    pub off: Effect,
}

const fn shopt(name: &'static str, on: Effect, off: Effect) -> ShoptOption {
    ShoptOption { name, on, off }
}

const COMPAT: Effect = Untracked("a compatibility level changes how bash reads scripts");

/// bash 5.2's `shopt` options.
#[rustfmt::skip]
pub(crate) const SHOPT_OPTIONS: &[ShoptOption] = &[
    shopt("assoc_expand_once", Untracked("subscripts are expanded otherwise"), Inert),
    shopt("autocd", Inert, Inert),
    shopt("cdable_vars", Untracked("cd takes a variable's value for a folder"), Inert),
    shopt("cdspell", Inert, Inert),
    shopt("checkhash", Inert, Inert),
    shopt("checkjobs", Inert, Inert),
    shopt("checkwinsize", Inert, Inert),
    shopt("cmdhist", Inert, Inert),
    shopt("compat31", COMPAT, Inert),
    shopt("compat32", COMPAT, Inert),
    shopt("compat40", COMPAT, Inert),
    shopt("compat41", COMPAT, Inert),
    shopt("compat42", COMPAT, Inert),
    shopt("compat43", COMPAT, Inert),
    shopt("compat44", COMPAT, Inert),
    shopt("complete_fullquote", Inert, Inert),
    shopt("direxpand", Inert, Inert),
    shopt("dirspell", Inert, Inert),
    shopt("dotglob", Untracked("globs find dot files (`*` finds `.env`)"), Inert),
    shopt("execfail", Inert, Inert),
    shopt("expand_aliases", Untracked("aliases rewrite later commands"), Inert),
    shopt("extdebug", Untracked("the DEBUG trap may skip or change commands"), Inert),
    shopt("extglob", Inert, Inert),
    shopt("extquote", Inert, Untracked("`$'...'` inside `${...}` is read otherwise")),
    shopt("failglob", Inert, Inert),
    shopt("force_fignore", Inert, Inert),
    shopt("globasciiranges", Inert, Inert),
    shopt("globskipdots", Inert, Untracked("globs find `.` and `..`")),
    shopt("globstar", Untracked("`**` matches across folders"), Inert),
    shopt("gnu_errfmt", Inert, Inert),
    shopt("histappend", Inert, Inert),
    shopt("histreedit", Inert, Inert),
    shopt("histverify", Inert, Inert),
    shopt("hostcomplete", Inert, Inert),
    shopt("huponexit", Inert, Inert),
    shopt("inherit_errexit", Inert, Inert),
    shopt("interactive_comments", Inert, Untracked("`#` no longer starts a comment")),
    shopt("lastpipe", Inert, Inert),
    shopt("lithist", Inert, Inert),
    shopt("localvar_inherit", Untracked("local variables inherit values and attributes"), Inert),
    shopt("localvar_unset", Inert, Inert),
    shopt("login_shell", Inert, Inert),
    shopt("mailwarn", Inert, Inert),
    shopt("no_empty_cmd_completion", Inert, Inert),
    shopt("nocaseglob", Untracked("globs ignore case (`.EN[V]` finds `.env`)"), Inert),
    shopt("nocasematch", Inert, Inert),
    shopt("noexpand_translation", Inert, Inert),
    shopt("nullglob", Inert, Inert),
    shopt("patsub_replacement", Inert, Inert),
    shopt("progcomp", Inert, Inert),
    shopt("progcomp_alias", Inert, Inert),
    shopt("promptvars", Inert, Inert),
    shopt("restricted_shell", Inert, Inert),
    shopt("shift_verbose", Inert, Inert),
    shopt("sourcepath", Inert, Inert),
    shopt("varredir_close", Inert, Inert),
    shopt("xpg_echo", Inert, Inert),
];

fn set_effect(option: &SetOption, on: bool) -> Effect {
    if on { option.on } else { option.off }
}

/// Why a change of `set` options (or a shell's `-o`/`+o` and letters) is not followed, for each
/// option that is not: an unknown letter or name is not followed either.
fn set_letter(letter: char, on: bool, out: &mut Vec<String>) {
    match SET_OPTIONS.iter().find(|o| o.letter == Some(letter)) {
        Some(o) => {
            if let Untracked(why) = set_effect(o, on) {
                let sign = if on { '-' } else { '+' };
                out.push(format!("`set {sign}{letter}` ({}): {why}", o.name));
            }
        }
        None => out.push(format!(
            "`set -{letter}` is not an option the analysis knows"
        )),
    }
}

fn set_name(name: &str, on: bool, out: &mut Vec<String>) {
    match SET_OPTIONS.iter().find(|o| o.name == name) {
        Some(o) => {
            if let Untracked(why) = set_effect(o, on) {
                let sign = if on { '-' } else { '+' };
                out.push(format!("`set {sign}o {name}`: {why}"));
            }
        }
        None => out.push(format!(
            "`set -o {name}` is not an option the analysis knows"
        )),
    }
}

fn shopt_name(name: &str, on: bool, out: &mut Vec<String>) {
    match SHOPT_OPTIONS.iter().find(|o| o.name == name) {
        Some(o) => {
            let effect = if on { o.on } else { o.off };
            if let Untracked(why) = effect {
                let flag = if on { 's' } else { 'u' };
                out.push(format!("`shopt -{flag} {name}`: {why}"));
            }
        }
        None => out.push(format!(
            "`shopt {name}` is not an option the analysis knows"
        )),
    }
}

/// What `set ARGS` changes that the analysis does not follow. Operands after the options are
/// the positional parameters, which the analysis never binds.
pub(crate) fn set_changes(args: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let w = args[i];
        i += 1;
        if w == "--" || w == "-" || !(w.starts_with('-') || w.starts_with('+')) || w.len() < 2 {
            break;
        }
        let on = w.starts_with('-');
        for letter in w[1..].chars() {
            if letter == 'o' {
                // `-o NAME` (or `-o` alone, which lists the options).
                if let Some(name) = args.get(i) {
                    i += 1;
                    set_name(name, on, &mut out);
                }
            } else {
                set_letter(letter, on, &mut out);
            }
        }
    }
    out
}

/// What `shopt ARGS` changes that the analysis does not follow. Without `-s` or `-u` it only
/// prints or tests options.
pub(crate) fn shopt_changes(args: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let (mut set, mut unset, mut posix) = (false, false, false);
    let mut names = Vec::new();
    let mut options = true;
    for w in args {
        if options && *w == "--" {
            options = false;
        } else if options && w.starts_with('-') && w.len() > 1 {
            for letter in w[1..].chars() {
                match letter {
                    's' => set = true,
                    'u' => unset = true,
                    'o' => posix = true,
                    'p' | 'q' => {}
                    _ => out.push(format!(
                        "`shopt -{letter}` is not an option the analysis knows"
                    )),
                }
            }
        } else {
            options = false;
            names.push(*w);
        }
    }
    if !(set || unset) {
        return out;
    }
    if names.is_empty() {
        // `shopt -s` alone lists the options set.
        return out;
    }
    for name in names {
        if posix {
            set_name(name, set, &mut out);
        } else {
            shopt_name(name, set, &mut out);
        }
    }
    out
}

/// What a shell's own command line (`bash -k -O dotglob -c …`, its words before the script)
/// changes that the analysis of its script does not follow: the letters of `set`, `-o`/`+o`,
/// `-O`/`+O`, `--posix`.
pub(crate) fn shell_changes(args: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let w = args[i];
        i += 1;
        if w == "--" || w == "-" || !(w.starts_with('-') || w.starts_with('+')) || w.len() < 2 {
            break;
        }
        if w == "--posix" {
            out.push(
                "`--posix`: POSIX mode: assignments before special builtins persist, and more"
                    .into(),
            );
            continue;
        }
        if w.starts_with("--") {
            continue;
        }
        let on = w.starts_with('-');
        for letter in w[1..].chars() {
            match letter {
                // Read by the wrapper table: the script, stdin, login, interactive, restricted.
                'c' | 's' | 'l' | 'i' | 'r' | 'D' => {}
                'o' => {
                    if let Some(name) = args.get(i) {
                        i += 1;
                        set_name(name, on, &mut out);
                    }
                }
                'O' => {
                    if let Some(name) = args.get(i) {
                        i += 1;
                        shopt_name(name, on, &mut out);
                    }
                }
                letter => set_letter(letter, on, &mut out),
            }
        }
    }
    out
}

/// The shells whose command line [`shell_changes`] reads.
const SHELLS: &[&str] = &[
    "bash", "sh", "dash", "ash", "posh", "zsh", "ksh", "mksh", "yash",
];

/// Variables that put a shell in another mode when it starts, or when a script sets them.
const MODE_VARIABLES: &[&str] = &["POSIXLY_CORRECT", "SHELLOPTS", "BASHOPTS"];

impl super::Walker<'_> {
    /// What the command at `index` changes of the shell's state: options (`set`, `shopt`, a
    /// shell's own command line), attributes the pre-pass did not see (`command declare -n`),
    /// and builtins that run code they are given as an option (`mapfile -C`, `compgen -C`).
    pub(super) fn shell_state(&mut self, index: usize) {
        const READ: &[&str] = &[
            "set",
            "shopt",
            "declare",
            "typeset",
            "local",
            "mapfile",
            "readarray",
            "compgen",
            "history",
            "fc",
        ];
        let command = &self.out.commands[index];
        let Some(name) = command
            .trusted_name()
            .filter(|n| READ.contains(n) || SHELLS.contains(n))
            .map(str::to_owned)
        else {
            return;
        };
        let words = &command.words[1..];
        let args: Vec<&str> = command.argv[1..].iter().map(String::as_str).collect();
        // Options decided at run time (`set -$x`, `shopt -s $o`) cannot be read.
        let dynamic = words.iter().any(|w| !w.is_static());
        let mut found = Vec::new();
        match name.as_str() {
            "set" | "shopt" if dynamic => {
                found.push(format!("`{name}` with words decided at run time"));
            }
            "set" => found = set_changes(&args),
            "shopt" => found = shopt_changes(&args),
            n if SHELLS.contains(&n) => {
                found = shell_changes(&args);
                for a in &command.assignments {
                    if MODE_VARIABLES.contains(&a.name.as_str()) {
                        found.push(format!(
                            "`{}=` puts the shell `{n}` in another mode",
                            a.name
                        ));
                    }
                }
            }
            "declare" | "typeset" | "local" => {
                found = self.attributes(index);
            }
            "mapfile" | "readarray" | "compgen" => {
                let runs = args.iter().take_while(|a| **a != "--").any(|a| {
                    a.starts_with('-') && a[1..].contains(['C', 'F']) && !a.starts_with("--")
                });
                if runs {
                    self.code(
                        &command.argv.join(" "),
                        "its -C or -F option names code the shell runs",
                        Some(index),
                    );
                }
            }
            "history" | "fc" if !args.is_empty() || name == "fc" => {
                found.push(format!(
                    "`{name}` reads, writes or runs the shell's history"
                ));
            }
            _ => {}
        }
        for f in found {
            self.problem(f);
        }
    }

    /// The attributes `declare`, `typeset` or `local` at `index` give that the pre-pass must
    /// have seen (name references, case conversion), and compound values bash parses again.
    fn attributes(&self, index: usize) -> Vec<String> {
        let command = &self.out.commands[index];
        let words = &command.words[1..];
        let flags: String = words
            .iter()
            .filter(|w| w.text.starts_with(['-', '+']) && w.text != "--")
            .map(|w| &w.text[1..])
            .collect();
        let mut out = Vec::new();
        let operands = words.iter().filter(|w| !w.text.starts_with(['-', '+']));
        for w in operands {
            let (name, value) = match w.text.split_once('=') {
                Some((n, v)) => (n.trim_end_matches('+'), Some(v)),
                None => (w.text.as_str(), None),
            };
            let base = super::builtins::base(name);
            if flags.contains('n') && !self.scope.references.contains(base) {
                out.push(format!(
                    "`{}`: a name reference the analysis did not follow",
                    command.argv.join(" ")
                ));
            }
            if flags.contains(['l', 'u', 'c']) && !self.scope.transformed.contains(base) {
                out.push(format!(
                    "`{}`: a case conversion the analysis did not follow",
                    command.argv.join(" ")
                ));
            }
            if flags.contains('I') {
                out.push(format!(
                    "`{}`: the local variable inherits attributes the analysis does not follow",
                    command.argv.join(" ")
                ));
            }
            if let Some(value) = value
                && reparsed(
                    w,
                    value,
                    flags.contains(['a', 'A']) || self.scope.arrays.contains(base),
                )
            {
                out.push(format!(
                    "`{}`: bash parses the value {value:?} again as a compound assignment",
                    command.argv.join(" ")
                ));
            }
        }
        out
    }
}

/// Whether bash parses the value of a declaration's `NAME=VALUE` operand again as a compound
/// assignment running what it holds: a quoted `(...)` holding anything but plain words, or a
/// value made at run time for an array (`declare -a x=$v` with `v='($(id))'`).
fn reparsed(word: &super::Word, value: &str, array: bool) -> bool {
    use crate::word::Piece;
    let plain = |s: &str| {
        s.chars()
            .all(|c| c.is_ascii_alphanumeric() || " \t\n_-./,:=+@%()".contains(c))
    };
    if word.is_static() {
        // An unquoted `x=(a b)` reaches here as its words joined, never starting with `(`.
        return value.starts_with('(') && !plain(value);
    }
    // The value's first piece after `=` is made at run time.
    let mut seen = String::new();
    for piece in &word.pieces {
        match piece {
            Piece::Unquoted(t) | Piece::Quoted(t) => {
                seen.push_str(t);
                if let Some((_, after)) = seen.split_once('=')
                    && !after.is_empty()
                {
                    return after.starts_with('(') && (array || !plain(after));
                }
            }
            Piece::Expansion(_) => {
                if seen.contains('=') {
                    return array
                        || seen
                            .split_once('=')
                            .is_some_and(|(_, a)| a.starts_with('('));
                }
                return true;
            }
        }
    }
    array
}

impl super::Walker<'_> {
    /// What the pre-pass found of the shell's state for the whole script: the variables name
    /// references may set (each as a variable set at run time), and POSIX mode.
    pub(super) fn initial_state(&mut self) {
        let mut found = Vec::new();
        for target in &self.scope.reference_targets {
            found.extend(self.shell_variable(target, None));
        }
        self.out.hazards.extend(found);
        if self.scope.posix {
            self.problem(
                "the script sets POSIXLY_CORRECT: bash enters POSIX mode, which the analysis does not follow"
                    .into(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_set_row_is_read_by_letter_and_by_name() {
        for o in SET_OPTIONS {
            for on in [true, false] {
                let untracked = matches!(set_effect(o, on), Untracked(_));
                let sign = if on { "-" } else { "+" };
                if let Some(letter) = o.letter {
                    let word = format!("{sign}{letter}");
                    assert_eq!(!set_changes(&[&word]).is_empty(), untracked, "set {word}");
                    assert_eq!(
                        !shell_changes(&[&word]).is_empty(),
                        untracked,
                        "bash {word}"
                    );
                }
                let flag = format!("{sign}o");
                assert_eq!(
                    !set_changes(&[&flag, o.name]).is_empty(),
                    untracked,
                    "set {flag} {}",
                    o.name
                );
                assert_eq!(
                    !shopt_changes(&[if on { "-so" } else { "-uo" }, o.name]).is_empty(),
                    untracked,
                    "shopt -o {}",
                    o.name
                );
            }
        }
    }

    #[test]
    fn every_shopt_row_is_read_by_shopt_and_by_a_shell_line() {
        for o in SHOPT_OPTIONS {
            for (flag, big, effect) in [("-s", "-O", o.on), ("-u", "+O", o.off)] {
                let untracked = matches!(effect, Untracked(_));
                assert_eq!(
                    !shopt_changes(&[flag, o.name]).is_empty(),
                    untracked,
                    "shopt {flag} {}",
                    o.name
                );
                assert_eq!(
                    !shell_changes(&[big, o.name, "-c", "ls"]).is_empty(),
                    untracked,
                    "bash {big} {}",
                    o.name
                );
            }
        }
    }

    #[test]
    fn unknown_options_are_not_followed_and_queries_change_nothing() {
        assert!(!set_changes(&["-Z"]).is_empty());
        assert!(!set_changes(&["-o", "nosuch"]).is_empty());
        assert!(!shopt_changes(&["-s", "nosuch"]).is_empty());
        assert!(shopt_changes(&["nosuch"]).is_empty());
        assert!(shopt_changes(&["-p", "dotglob"]).is_empty());
        assert!(shopt_changes(&["-q", "dotglob"]).is_empty());
        assert!(set_changes(&["-euo", "pipefail"]).is_empty());
        assert!(set_changes(&["--", "-k"]).is_empty());
        assert!(set_changes(&["a", "-k"]).is_empty());
        assert!(!set_changes(&["-eku"]).is_empty());
        assert!(shell_changes(&["-e", "-c", "ls", "-k"]).is_empty());
        assert!(!shell_changes(&["--posix", "-c", "ls"]).is_empty());
    }
}
