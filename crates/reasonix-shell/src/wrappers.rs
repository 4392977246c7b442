//! Wrappers: commands that run another command. Their inner command is a simple command that
//! rules must cover, exactly like one written at the top level.
//!
//! The table is data: each row names the wrappers (and, for a runner, the subcommand that runs:
//! `uv run`, `pnpm dlx`), how to find the inner command (how many plain words come first), and
//! an example with the inner argv it must yield (the test
//! `every_wrapper_row_finds_its_example_inner_command` runs every row). Which options take a
//! value, which hold a script, which start the command and which make the wrapper run nothing
//! is in each program's option spec ([`programs`]), read by the one matcher: a
//! wrapper's options are found in every spelling it accepts (`timeout --sig KILL 5 cmd`).
//!
//! **Runners** (`npx`, `uvx`, `uv run`, `pipx run`, `poetry run`, `nix develop -c`, `mise
//! exec`, `direnv exec`, `dotenv`, …) are wrappers that are never transparent: an allow rule
//! must cover the runner and, separately, what it runs, because the runner itself does
//! something (fetches a package, loads an environment, evaluates a flake or an `.envrc`).
//!
//! [`unwrap`] only reads: it takes one command (and what it reads on stdin) and returns what it
//! unwrapped ([`Unwrapped`]): whether it is transparent, the inner argv or script it runs, and
//! the hazards and features it shows. The walk records all of it, reading each inner command's
//! own wrappers in turn and analysing each script one level deeper; this module knows nothing
//! of the walk.
//!
//! A *transparent* wrapper only changes how its inner command runs (time limit, priority,
//! environment); an allow rule need not cover it, only what it runs. `sudo` and `doas` are not
//! transparent, and the hazard table flags them besides.

use super::hazards;
use super::programs::{
    self,
    spec::{self, Parsed, Role, Takes},
};
use super::word::{Dynamic, Word};
use super::{Assignment, Command, Feature, Hazard};
use std::collections::HashMap;
use std::sync::OnceLock;

/// What a wrapper unwrapped, for the walk to record. The default is "not a wrapper": nothing
/// runs inside it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Unwrapped {
    /// Whether allow rules need not cover the wrapper itself (its [`Command::wrapper`]).
    pub transparent: bool,
    /// What it runs, in order.
    pub inner: Vec<Inner>,
    /// Hazards of the wrapper command itself, with no command set: the walk attaches them to
    /// the wrapper's index.
    pub hazards: Vec<Hazard>,
    /// Features it shows besides [`Feature::Wrapper`] and [`Feature::NestedShell`], which the
    /// walk adds for each inner command and script.
    pub features: Vec<Feature>,
}

/// One thing a wrapper runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Inner {
    /// An argv run as a simple command (`timeout 5 make`: `make`), with the assignments it
    /// runs with (`env A=1 make`).
    Command {
        /// Its words.
        words: Vec<Word>,
        /// `NAME=value` given to it by the wrapper.
        assignments: Vec<Assignment>,
        /// The context it runs in (`timeout`, `xargs`, `find -exec`…).
        how: String,
    },
    /// A script analysed as bash (`bash -c`, `env -S`, `watch`, a heredoc on a shell's stdin).
    Script {
        /// The script.
        text: String,
        /// The context it runs in (`bash -c`, `sh <<stdin`…).
        how: String,
    },
}

impl Unwrapped {
    /// Records an inner argv.
    fn command(&mut self, words: Vec<Word>, assignments: Vec<Assignment>, how: &str) {
        self.inner.push(Inner::Command {
            words,
            assignments,
            how: how.to_owned(),
        });
    }

    /// Records a script to analyse.
    fn script(&mut self, text: String, how: &str) {
        self.inner.push(Inner::Script {
            text,
            how: how.to_owned(),
        });
    }

    /// Records a hazard of the wrapper itself.
    fn hazard(&mut self, id: &'static str, detail: String) {
        self.hazards.push(Hazard {
            id,
            command: None,
            detail,
        });
    }
}

/// How a wrapper's inner command is found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Options, then `leading` plain words, then the inner argv; an option whose role is
    /// [`Role::Script`] runs its value as a script, one whose role is [`Role::Command`] starts
    /// the inner argv.
    Exec,
    /// Like [`Kind::Exec`], but operands are not a command (`nix-shell FILE`, `nix develop
    /// FLAKE`): only a script or command option runs something.
    Options,
    /// The inner argv follows a `--` among the operands (`mise exec node@20 -- node -v`).
    AfterDashes,
    /// `env`: options, `NAME=value` words (assignments of the inner command), then the inner
    /// argv; `-S STRING` is a script.
    Env,
    /// `xargs`: options, then the inner argv, which gets words from stdin.
    Xargs,
    /// `find`: each `-exec`/`-execdir`/`-ok`/`-okdir` clause up to `;` or `+` is an inner
    /// command; `{}` stands for a found path.
    Find,
    /// `bash -c SCRIPT` and friends: the script is analysed; without `-c` and without a script
    /// file, a heredoc or herestring on stdin is.
    Shell,
    /// `watch`: the words are joined into a script, unless `-x` runs them as argv.
    Watch,
    /// `flock`: options, a lock file, then the inner argv, or `-c SCRIPT`.
    Flock,
    /// Options, `leading` plain words, then one word that is a shell script (`sops exec-env
    /// FILE 'npm test'`).
    ScriptOperand,
}

/// One row of the wrapper table.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    /// Command names (basenames).
    pub names: &'static [&'static str],
    /// The subcommands that make it a wrapper (`["run"]` for `uv run`), by canonical name.
    pub sub: &'static [&'static str],
    /// How to find the inner command.
    pub kind: Kind,
    /// Plain words before the inner command (`timeout DURATION`).
    pub leading: usize,
    /// Whether allow rules need not cover the wrapper itself.
    pub transparent: bool,
    /// An example and the inner argv it must yield.
    pub example: &'static str,
    /// The inner argv of the example, words joined by spaces.
    pub inner: &'static str,
}

/// A transparent wrapper: options, `leading` words, then the command.
const fn wrap(
    names: &'static [&'static str],
    leading: usize,
    example: &'static str,
    inner: &'static str,
) -> Row {
    Row {
        names,
        sub: &[],
        kind: Kind::Exec,
        leading,
        transparent: true,
        example,
        inner,
    }
}

/// A runner: never transparent.
const fn runner(
    names: &'static [&'static str],
    sub: &'static [&'static str],
    kind: Kind,
    leading: usize,
    example: &'static str,
    inner: &'static str,
) -> Row {
    Row {
        names,
        sub,
        kind,
        leading,
        transparent: false,
        example,
        inner,
    }
}

/// The wrappers Reasonix sees through.
#[rustfmt::skip]
pub const TABLE: &[Row] = &[
    wrap(&["timeout"], 1, "timeout -s KILL 60 npm test", "npm test"),
    wrap(&["nice"], 0, "nice -n 10 make", "make"),
    wrap(&["nohup"], 0, "nohup ./serve.sh", "./serve.sh"),
    wrap(&["stdbuf"], 0, "stdbuf -o L grep x f", "grep x f"),
    Row { names: &["env"], sub: &[], kind: Kind::Env, leading: 0, transparent: true, example: "env -i FOO=1 rm -rf x", inner: "rm -rf x" },
    wrap(&["command"], 0, "command rm x", "rm x"),
    wrap(&["builtin"], 0, "builtin echo hi", "echo hi"),
    wrap(&["exec"], 0, "exec -a name rm x", "rm x"),
    wrap(&["time"], 0, "time -p cargo build", "cargo build"),
    Row { names: &["xargs"], sub: &[], kind: Kind::Xargs, leading: 0, transparent: true, example: "xargs -n 1 rm -f", inner: "rm -f {input}" },
    wrap(&["setsid"], 0, "setsid -f ./daemon", "./daemon"),
    Row { names: &["watch"], sub: &[], kind: Kind::Watch, leading: 0, transparent: true, example: "watch -n 5 'ls | wc -l'", inner: "ls" },
    Row { names: &["sudo"], sub: &[], kind: Kind::Exec, leading: 0, transparent: false, example: "sudo -u root rm -rf /var/x", inner: "rm -rf /var/x" },
    Row { names: &["doas"], sub: &[], kind: Kind::Exec, leading: 0, transparent: false, example: "doas -u root reboot", inner: "reboot" },
    wrap(&["ionice"], 0, "ionice -c 3 tar czf a.tgz src", "tar czf a.tgz src"),
    Row { names: &["flock"], sub: &[], kind: Kind::Flock, leading: 1, transparent: false, example: "flock /tmp/lock -c 'rm -rf build'", inner: "rm -rf build" },
    wrap(&["chrt"], 1, "chrt -f 10 ./rt", "./rt"),
    wrap(&["taskset"], 1, "taskset -c 0 make", "make"),
    wrap(&["busybox", "toybox"], 0, "busybox rm -rf x", "rm -rf x"),
    Row { names: &["find"], sub: &[], kind: Kind::Find, leading: 0, transparent: false, example: "find . -name '*.o' -exec rm {} +", inner: "rm {}" },
    Row { names: &["bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh"], sub: &[], kind: Kind::Shell, leading: 0, transparent: true, example: "bash -lc 'rm -rf x'", inner: "rm -rf x" },
    // Runners: what they run is judged as its own simple command, and the runner is never
    // transparent.
    runner(&["npx", "pnpx"], &[], Kind::Exec, 0, "npx --yes -p cowsay cowsay hi", "cowsay hi"),
    runner(&["npm"], &["exec"], Kind::Exec, 0, "npm exec --yes -- eslint .", "eslint ."),
    runner(&["npm"], &["explore"], Kind::AfterDashes, 0, "npm explore lodash -- rm -rf x", "rm -rf x"),
    runner(&["pnpm"], &["exec"], Kind::Exec, 0, "pnpm --filter web exec vitest run", "vitest run"),
    runner(&["pnpm"], &["dlx"], Kind::Exec, 0, "pnpm dlx create-vite app", "create-vite app"),
    runner(&["yarn"], &["dlx"], Kind::Exec, 0, "yarn dlx cowsay hi", "cowsay hi"),
    runner(&["yarn"], &["exec"], Kind::Exec, 0, "yarn exec tsc --noEmit", "tsc --noEmit"),
    runner(&["bunx"], &[], Kind::Exec, 0, "bunx --bun vite build", "vite build"),
    runner(&["bun"], &["x"], Kind::Exec, 0, "bun x cowsay hi", "cowsay hi"),
    runner(&["uvx"], &[], Kind::Exec, 0, "uvx --from ruff==0.5 ruff check .", "ruff check ."),
    runner(&["uv"], &["run"], Kind::Exec, 0, "uv run --with pytest pytest -x", "pytest -x"),
    runner(&["uv"], &["tool", "run"], Kind::Exec, 0, "uv tool run black .", "black ."),
    runner(&["pipx"], &["run"], Kind::Exec, 0, "pipx run --spec httpie http example.com", "http example.com"),
    runner(&["poetry"], &["run"], Kind::Exec, 0, "poetry -C app run pytest", "pytest"),
    runner(&["pdm"], &["run"], Kind::Exec, 0, "pdm run python manage.py test", "python manage.py test"),
    runner(&["hatch"], &["run"], Kind::Exec, 0, "hatch -e test run pytest", "pytest"),
    runner(&["conda", "mamba", "micromamba"], &["run"], Kind::Exec, 0, "conda run -n ml python train.py", "python train.py"),
    runner(&["nix-shell"], &[], Kind::Options, 0, "nix-shell -p hello --run 'hello; rm -rf x'", "rm -rf x"),
    runner(&["nix"], &["develop"], Kind::Options, 0, "nix develop .#ci -c cargo test", "cargo test"),
    runner(&["nix"], &["shell"], Kind::Options, 0, "nix shell nixpkgs#jq -c jq . x.json", "jq . x.json"),
    runner(&["nix"], &["run"], Kind::Exec, 0, "nix run nixpkgs#hello", "nixpkgs#hello"),
    runner(&["mise", "rtx"], &["exec"], Kind::AfterDashes, 0, "mise exec node@20 -- node -v", "node -v"),
    runner(&["mise", "rtx"], &["run"], Kind::Exec, 0, "mise run build", "build"),
    runner(&["asdf"], &["exec"], Kind::Exec, 0, "asdf exec python -V", "python -V"),
    runner(&["asdf"], &["env"], Kind::Exec, 0, "asdf env node npm test", "node npm test"),
    runner(&["direnv"], &["exec"], Kind::Exec, 1, "direnv exec . make test", "make test"),
    runner(&["dotenv"], &[], Kind::Exec, 0, "dotenv -e .env.test -- jest", "jest"),
    runner(&["dotenvx"], &["run"], Kind::Exec, 0, "dotenvx run -f .env -- node app.js", "node app.js"),
    runner(&["env-cmd"], &[], Kind::Exec, 0, "env-cmd -f .env.ci npm test", "npm test"),
    runner(&["devbox"], &["run"], Kind::Exec, 0, "devbox run -- make test", "make test"),
    runner(&["op"], &["run"], Kind::Exec, 0, "op run --env-file .env -- ./deploy.sh", "./deploy.sh"),
    runner(&["doppler"], &["run"], Kind::Exec, 0, "doppler run -- npm start", "npm start"),
    runner(&["aws-vault"], &["exec"], Kind::Exec, 1, "aws-vault exec prod -- aws s3 ls", "aws s3 ls"),
    runner(&["pixi"], &["run"], Kind::Exec, 0, "pixi run -e test pytest", "pytest"),
    runner(&["pixi"], &["exec"], Kind::Exec, 0, "pixi exec -s ruff ruff check", "ruff check"),
    runner(&["rye"], &["run"], Kind::Exec, 0, "rye run pytest", "pytest"),
    runner(&["pkgx"], &[], Kind::Exec, 0, "pkgx +node npx cowsay", "npx cowsay"),
    runner(&["corepack"], &[], Kind::Exec, 0, "corepack pnpm install", "pnpm install"),
    runner(&["go"], &["run"], Kind::Exec, 0, "go run -tags dev ./cmd/tool -v", "./cmd/tool -v"),
    runner(&["deno"], &["run"], Kind::Exec, 0, "deno run -A https://example.com/x.ts", "https://example.com/x.ts"),
    runner(&["npm"], &["init"], Kind::Exec, 0, "npm init vite@latest app", "vite@latest app"),
    runner(&["pnpm"], &["create"], Kind::Exec, 0, "pnpm create vite app", "vite app"),
    runner(&["yarn"], &["create"], Kind::Exec, 0, "yarn create vite app", "vite app"),
    Row { names: &["cross-env", "cross-env-shell"], sub: &[], kind: Kind::Env, leading: 0, transparent: false, example: "cross-env NODE_ENV=test jest", inner: "jest" },
    runner(&["sops"], &["exec-env"], Kind::ScriptOperand, 1, "sops exec-env secrets.json 'npm test'", "npm test"),
    runner(&["sops"], &["exec-file"], Kind::ScriptOperand, 1, "sops exec-file secrets.json 'cat {}'", "cat {}"),
    runner(&["chamber"], &["exec"], Kind::Exec, 1, "chamber exec app -- npm start", "npm start"),
    runner(&["envchain"], &[], Kind::Exec, 1, "envchain aws aws s3 ls", "aws s3 ls"),
    // More wrappers: they only change how the command runs.
    Row { names: &["script"], sub: &[], kind: Kind::Options, leading: 0, transparent: true, example: "script -q -c 'make test' /dev/null", inner: "make test" },
    wrap(&["unbuffer", "chronic", "fakeroot", "catchsegv"], 0, "unbuffer npm test", "npm test"),
    wrap(&["tsocks", "proxychains", "proxychains4", "torsocks"], 0, "proxychains4 -q curl example.com", "curl example.com"),
    wrap(&["strace", "ltrace"], 0, "strace -f -e trace=execve -o trace.txt make", "make"),
    wrap(&["valgrind"], 0, "valgrind --leak-check=full ./a.out", "./a.out"),
    wrap(&["firejail"], 0, "firejail --net=none --private make", "make"),
    Row { names: &["chroot"], sub: &[], kind: Kind::Exec, leading: 1, transparent: false, example: "chroot /srv/root /bin/sh -c id", inner: "/bin/sh -c id" },
    Row { names: &["systemd-run"], sub: &[], kind: Kind::Exec, leading: 0, transparent: false, example: "systemd-run --user -p MemoryMax=1G make", inner: "make" },
];

/// The row for a command basename and its parsed subcommands.
fn row_for(name: &str, parsed: &Parsed) -> Option<&'static Row> {
    TABLE.iter().find(|r| {
        r.names.contains(&name)
            && r.sub.len() < parsed.specs.len()
            && r.sub
                .iter()
                .enumerate()
                .all(|(i, s)| parsed.subcommand(i) == Some(*s))
            && (r.sub.len() == parsed.specs.len() - 1 || r.sub.is_empty())
    })
}

/// The row for a command basename, whatever its subcommand.
pub fn row(name: &str) -> Option<&'static Row> {
    static INDEX: OnceLock<HashMap<&'static str, &'static Row>> = OnceLock::new();
    let index = INDEX.get_or_init(|| {
        let mut index = HashMap::new();
        for r in TABLE {
            for name in r.names {
                index.entry(*name).or_insert(r);
            }
        }
        index
    });
    index.get(name).copied()
}

/// Whether an option says the wrapper runs nothing (`command -v`, `sudo -l`; `sudo -h` only
/// without a value).
fn quiet(parsed: &Parsed) -> bool {
    parsed.options.iter().any(|f| {
        f.role() == Role::Quiet
            && !(f.opt.is_some_and(|o| o.takes == Takes::Optional) && f.value.is_some())
    })
}

/// The word holding an option's value: its own word, or the option's word when the value is
/// attached (static only if that whole word is).
fn value_word(words: &[Word], f: &spec::Found) -> Option<Word> {
    match (f.value_at, f.value) {
        (Some(at), _) => words.get(at + 1).cloned(),
        (None, Some(v)) => {
            let mut w = words.get(f.at + 1)?.clone();
            w.text = v.to_owned();
            Some(w)
        }
        _ => None,
    }
}

/// Reads `command` as a wrapper, if it is one: what it runs, given what it reads on `stdin`
/// (from a heredoc or herestring).
pub fn unwrap(command: &Command, stdin: Option<&Word>) -> Unwrapped {
    let mut out = Unwrapped::default();
    let name = command.basename();
    if row(name).is_none() || !command.words.first().is_some_and(Word::is_static) {
        return out;
    }
    let words = command.words.as_slice();
    let spec = programs::spec_for(name).unwrap_or(&spec::GENERIC);
    let parsed = spec::parse(spec, &words[1..]);
    let Some(row) = row_for(name, &parsed) else {
        return out;
    };
    // A wrapper reached by a path of its own (`./timeout`) may be anything: its inner command is
    // still found (deny rules see it), but the wrapper itself is not transparent.
    let row = &Row {
        transparent: row.transparent && command.trusted_name().is_some(),
        ..*row
    };
    let how = if row.sub.is_empty() {
        name.to_owned()
    } else {
        format!("{name} {}", row.sub.join(" "))
    };
    match row.kind {
        Kind::Exec | Kind::Options | Kind::AfterDashes => exec(&mut out, words, row, &parsed, &how),
        Kind::Env => env(&mut out, words, row, &parsed),
        Kind::Xargs => {
            if quiet(&parsed) {
                return out;
            }
            let start = parsed.operands.first().map_or(words.len(), |&i| i + 1);
            let replace = parsed
                .get("-I")
                .and_then(|f| f.value)
                .or_else(|| parsed.get("-i").map(|f| f.value.unwrap_or("{}")))
                .map(str::to_owned);
            let mut inner: Vec<Word> = if start < words.len() {
                words[start..].to_vec()
            } else {
                vec![Word::fixed("echo")]
            };
            match replace {
                Some(token) => {
                    for w in inner.iter_mut().skip(1) {
                        if w.text.contains(&token) {
                            w.dynamic.insert(Dynamic::Input);
                        }
                    }
                }
                None => inner.push(Word::with("{input}", Dynamic::Input)),
            }
            out.transparent = row.transparent;
            out.command(inner, Vec::new(), "xargs");
        }
        Kind::Find => {
            let mut i = 1;
            while i < words.len() {
                let w = words[i].text.as_str();
                if matches!(w, "-exec" | "-execdir" | "-ok" | "-okdir") {
                    let clause = w;
                    let start = i + 1;
                    let mut end = start;
                    while end < words.len() && !matches!(words[end].text.as_str(), ";" | "+") {
                        end += 1;
                    }
                    let inner: Vec<Word> = words[start..end]
                        .iter()
                        .map(|w| {
                            let mut w = w.clone();
                            if w.text.contains("{}") {
                                w.dynamic.insert(Dynamic::Found);
                            }
                            w
                        })
                        .collect();
                    if !inner.is_empty() {
                        out.command(inner, Vec::new(), &format!("find {clause}"));
                    }
                    i = end + 1;
                } else {
                    i += 1;
                }
            }
        }
        Kind::Shell => shell(&mut out, words, row, &parsed, name, stdin),
        Kind::ScriptOperand => {
            if let Some(&first) = parsed.operands.first() {
                let at = first + 1 + row.leading;
                if at < words.len() {
                    out.transparent = row.transparent;
                    script(&mut out, &words[at..at + 1], &how);
                }
            }
        }
        Kind::Watch => {
            let Some(&first) = parsed.operands.first() else {
                return out;
            };
            let start = first + 1;
            out.transparent = row.transparent;
            if parsed.with_role(Role::Exec).next().is_some() {
                out.command(words[start..].to_vec(), Vec::new(), "watch -x");
            } else {
                script(&mut out, &words[start..], "watch");
            }
        }
        Kind::Flock => {
            if let Some(at) = words
                .iter()
                .position(|w| w.text == "-c" || w.text == "--command")
            {
                out.transparent = row.transparent;
                script(
                    &mut out,
                    words.get(at + 1..at + 2).unwrap_or(&[]),
                    "flock -c",
                );
                return out;
            }
            let Some(&first) = parsed.operands.first() else {
                return out;
            };
            let start = first + 1 + row.leading;
            if start < words.len() {
                out.transparent = row.transparent;
                out.command(words[start..].to_vec(), Vec::new(), "flock");
            }
        }
    }
    out
}

/// A wrapper or runner that runs a command: the scripts its options hold, then the command an
/// option starts, or the one after its options (and `leading` words, and a `--`), or after a
/// `--` among its operands. It is transparent only when something runs.
fn exec(out: &mut Unwrapped, words: &[Word], row: &Row, parsed: &Parsed, how: &str) {
    if quiet(parsed) {
        return;
    }
    let mut ran = false;
    let mut operands_are_script = false;
    for f in parsed.with_role(Role::Script) {
        ran = true;
        let script_words: Vec<Word> = if f.opt.is_some_and(|o| o.takes == Takes::Nothing) {
            // A flag that makes the operands a script (`pnpm -c exec 'a && b'`).
            operands_are_script = true;
            parsed
                .operands
                .iter()
                .map(|&i| words[i + 1].clone())
                .collect()
        } else {
            value_word(words, f).into_iter().collect()
        };
        script(out, &script_words, &format!("{how} {}", f.name));
    }
    let start = if operands_are_script {
        None
    } else if let Some(f) = parsed.with_role(Role::Command).next() {
        Some(f.at + 2)
    } else {
        match row.kind {
            Kind::Options => None,
            Kind::AfterDashes => (parsed.after_subcommands() + 1..words.len())
                .find(|&i| words[i].text == "--" && words[i].is_static())
                .map(|i| i + 1),
            _ => parsed.operands.first().map(|&i| i + 1 + row.leading),
        }
    };
    if let Some(mut start) = start {
        if row.leading > 0 && words.get(start).is_some_and(|w| w.text == "--") {
            start += 1;
        }
        if start < words.len() {
            out.command(words[start..].to_vec(), Vec::new(), how);
            ran = true;
        }
    }
    if ran {
        out.transparent = row.transparent;
    }
}

/// Words run as a script: static ones joined by spaces; a dynamic one is a hazard.
fn script(out: &mut Unwrapped, words: &[Word], how: &str) {
    if words.is_empty() {
        return;
    }
    if let Some(w) = words.iter().find(|w| !w.is_static()) {
        let detail = format!("`{how}` runs a script that is not static: {:?}", w.text);
        out.hazard("dynamic_script", detail);
        out.features.push(Feature::InlineCode);
        return;
    }
    let text: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
    out.script(text.join(" "), how);
}

/// `env [OPTIONS] [NAME=VALUE]... [COMMAND [ARG]...]`.
fn env(out: &mut Unwrapped, words: &[Word], row: &Row, parsed: &Parsed) {
    if let Some(f) = parsed.with_role(Role::Script).next() {
        out.transparent = row.transparent;
        let text: Vec<Word> = value_word(words, f).into_iter().collect();
        script(out, &text, "env -S");
        return;
    }
    let Some(&first) = parsed.operands.first() else {
        return;
    };
    let mut i = first + 1;
    let mut assignments = Vec::new();
    while i < words.len() {
        let w = &words[i];
        match w.text.split_once('=') {
            Some((name, value))
                if !name.is_empty() && !name.contains('/') && !name.starts_with('-') =>
            {
                assignments.push(Assignment {
                    name: name.to_owned(),
                    value: value.to_owned(),
                    is_static: w.is_static(),
                });
                i += 1;
            }
            _ => break,
        }
    }
    for a in &assignments {
        out.hazards.extend(hazards::env(&a.name, None));
    }
    if i < words.len() {
        out.transparent = row.transparent;
        out.command(words[i..].to_vec(), assignments, "env");
    }
}

/// `bash [OPTIONS] -c SCRIPT [NAME [ARG]...]`, `bash FILE`, or `bash` reading `stdin`.
fn shell(
    out: &mut Unwrapped,
    words: &[Word],
    row: &Row,
    parsed: &Parsed,
    name: &str,
    stdin: Option<&Word>,
) {
    let first = parsed.operands.first().map(|&i| i + 1);
    if parsed.has("-c") {
        out.transparent = row.transparent;
        out.features.push(Feature::InlineCode);
        let script_words = first.map_or(&[][..], |i| &words[i..i + 1]);
        script(out, script_words, &format!("{name} -c"));
        return;
    }
    let from_stdin = parsed.has("-s") || first.is_some_and(|i| words[i].text == "-");
    if first.is_some() && !from_stdin {
        // `bash script.sh`: a script file, run like any program.
        return;
    }
    match stdin {
        Some(body) if body.is_static() => {
            out.transparent = row.transparent;
            out.script(body.text.clone(), &format!("{name} <<stdin"));
        }
        _ => {
            let detail = format!("`{name}` runs whatever script arrives on its stdin");
            out.hazard("stdin_script", detail);
            out.features.push(Feature::InlineCode);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Analysis;

    #[test]
    fn every_wrapper_row_finds_its_example_inner_command() {
        for row in TABLE {
            let a = Analysis::of(row.example);
            let found: Vec<String> = a
                .commands
                .iter()
                .filter(|c| c.parent == Some(0))
                .map(|c| c.argv.join(" "))
                .collect();
            assert!(
                found.iter().any(|f| f == row.inner),
                "{}: want inner {:?}, got {found:?} ({:?})",
                row.example,
                row.inner,
                a.problems
            );
            assert_eq!(a.commands[0].wrapper, row.transparent, "{}", row.example);
            assert!(
                row.names.contains(&a.commands[0].basename()),
                "{}",
                row.example
            );
        }
    }

    #[test]
    fn a_shell_runs_the_script_on_its_stdin_only_when_that_script_is_static() {
        let a = Analysis::of("bash");
        let shell = &a.commands[0];
        let unwrapped = unwrap(shell, Some(&Word::fixed("rm -rf x")));
        assert!(unwrapped.transparent);
        assert_eq!(
            unwrapped.inner,
            [Inner::Script {
                text: "rm -rf x".into(),
                how: "bash <<stdin".into()
            }]
        );
        let unwrapped = unwrap(shell, Some(&Word::with("$X", Dynamic::Variable)));
        assert!(!unwrapped.transparent && unwrapped.inner.is_empty());
        let ids: Vec<&str> = unwrapped.hazards.iter().map(|h| h.id).collect();
        assert_eq!(ids, ["stdin_script"]);
        assert_eq!(unwrapped.features, [Feature::InlineCode]);
    }

    #[test]
    fn a_command_that_is_not_a_wrapper_unwraps_to_nothing() {
        let a = Analysis::of("ls -la");
        assert_eq!(unwrap(&a.commands[0], None), Unwrapped::default());
    }

    #[test]
    fn non_ascii_options_do_not_break_the_option_reader() {
        // Found by tests/it/fuzz_bash.rs: a byte slice inside a multi-byte character.
        for script in ["timeout -¥p x", "nice -é", "env -ü rm x", "bash -ç 'x'"] {
            let _ = Analysis::of(script);
        }
    }

    #[test]
    fn options_that_run_nothing_leave_no_inner_command() {
        for script in ["command -v rm", "sudo -l", "ionice -p 42"] {
            let a = Analysis::of(script);
            assert_eq!(a.commands.len(), 1, "{script}: {:?}", a.commands);
            assert!(!a.commands[0].wrapper);
        }
    }
}
