//! The option matcher against the real programs: every row is a spelling that was run on this
//! machine (GNU coreutils 9.1 `sort`, GNU sed 4.9, GNU tar 1.34, git 2.47.3, GNU make 4.3,
//! GNU grep, mawk 1.3.4, Python 3.11, node 20, perl 5.36, util-linux and coreutils wrappers,
//! npm 11, man-db, less, curl) and did what the row says. `ACCEPTED` rows are spellings the
//! program took as the option named (the matcher must read them so); `REFUSED` rows are
//! spellings the program rejected (the matcher must not read them as that option: a hazard
//! there would be harmless, but an operand misread as an option is a missed operand);
//! `AMBIGUOUS` rows are abbreviations the program refused as ambiguous, where the matcher
//! reports every candidate so that a hazard among them is never missed.

use reasonix::shell::programs::{self, spec};

/// Reads `line` with its program's spec.
fn parsed(line: &str) -> (Vec<String>, Vec<(String, Option<String>)>) {
    let argv: Vec<String> = shell_words(line);
    let spec = programs::spec_for(&argv[0]).unwrap_or(&spec::GENERIC);
    let p = spec::parse(spec, &argv[1..]);
    let subs = p.specs[1..].iter().map(|s| s.names[0].to_owned()).collect();
    let options = p
        .options
        .iter()
        .filter(|f| !f.negated)
        .map(|f| (f.name.to_string(), f.value.map(str::to_owned)))
        .collect();
    (subs, options)
}

/// Splits a line on spaces, keeping single-quoted words whole (enough for these rows).
fn shell_words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '\'' => quoted = !quoted,
            ' ' if !quoted => {
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// `(command line, canonical option, its value)`: the program took the spelling as that option.
#[rustfmt::skip]
const ACCEPTED: &[(&str, &str, Option<&str>)] = &[
    // sort: `--outp`, `--out`, even `--o` are `--output` (sort has no other --o… option).
    ("sort --outp=/tmp/x in.txt", "-o", Some("/tmp/x")),
    ("sort --out=o2 in.txt", "-o", Some("o2")),
    ("sort --o=o3 in.txt", "-o", Some("o3")),
    ("sort -oo4 in.txt", "-o", Some("o4")),
    ("sort --compress-p=gzip in.txt", "--compress-program", Some("gzip")),
    ("sort --comp=gzip in.txt", "--compress-program", Some("gzip")),
    // sed: `--in`, `--i`, `--in-pl` are `--in-place`; its suffix only after `=` or attached.
    ("sed --in-pl=.bak s/a/b/ f", "-i", Some(".bak")),
    ("sed --in s/b/c/ f", "-i", None),
    ("sed --i s/c/d/ f", "-i", None),
    ("sed -i.b2 s/d/z/ f", "-i", Some(".b2")),
    ("sed -ni p f", "-i", None),
    ("sed -fx.sed f", "-f", Some("x.sed")),
    ("sed --fi=x.sed f", "-f", Some("x.sed")),
    ("sed --expr=s/d/q/ f", "-e", Some("s/d/q/")),
    ("sed -es/d/q/ f", "-e", Some("s/d/q/")),
    // tar: old-style letters take their values from the next words, in order.
    ("tar cIf ./prog.sh out1.tar src", "-I", Some("./prog.sh")),
    ("tar cIf ./prog.sh out1.tar src", "-f", Some("out1.tar")),
    ("tar -c --use-compress-p=./prog.sh -f out2.tar src", "-I", Some("./prog.sh")),
    ("tar cf out5.tar --use-compress-prog ./prog.sh src", "-I", Some("./prog.sh")),
    ("tar -c -I./prog.sh -f out4.tar src", "-I", Some("./prog.sh")),
    ("tar -cIf ./prog.sh out.tar src", "-I", Some("f")),
    ("tar -cf out3.tar --checkpoint=1 --checkpoint-act=exec=id src", "--checkpoint-action", Some("exec=id")),
    ("tar -xf out3.tar --to-com=cat", "--to-command", Some("cat")),
    ("tar -cf out6.tar --info-s=./prog.sh src", "-F", Some("./prog.sh")),
    ("tar -C src -cf out7.tar a", "-C", Some("src")),
    // git: parse-options subcommands abbreviate; git's own options and the revision parser's
    // do not (see REFUSED).
    ("git status --porc", "--porcelain", None),
    ("git status --untracked-f=no", "-u", Some("no")),
    ("git grep --open-files-in-p=echo a", "-O", Some("echo")),
    ("git grep -Oecho a", "-O", Some("echo")),
    ("git grep --no-ind a", "--no-index", None),
    ("git rebase --exe=id HEAD~1", "-x", Some("id")),
    ("git rebase --ex=id HEAD~1", "-x", Some("id")),
    ("git rebase -xid HEAD~1", "-x", Some("id")),
    ("git fetch --upload-p=echo /tmp/r", "--upload-pack", Some("echo")),
    ("git ls-remote --upload-p=x /tmp/r", "--upload-pack", Some("x")),
    ("git archive --remote=/tmp/r --exe=x HEAD", "--exec", Some("x")),
    ("git format-patch -o/tmp/fp2 -1", "-o", Some("/tmp/fp2")),
    ("git branch --sho", "--show-current", None),
    ("git config --fil=.git/config --get user.name", "-f", Some(".git/config")),
    ("git tag --li", "-l", None),
    ("git log --output /tmp/l.txt -1", "--output", Some("/tmp/l.txt")),
    ("git diff --output=/tmp/d2.txt", "--output", Some("/tmp/d2.txt")),
    ("git show --output=/tmp/s.txt HEAD", "--output", Some("/tmp/s.txt")),
    ("git -c core.pager=cat log -1", "-c", Some("core.pager=cat")),
    ("git --config-env core.pager=HOME log", "--config-env", Some("core.pager=HOME")),
    ("git --git-dir .git log -1", "--git-dir", Some(".git")),
    ("git --work-tree . status", "--work-tree", Some(".")),
    ("git -C /tmp/repo status", "-C", Some("/tmp/repo")),
    ("git -p status", "-p", None),
    // make: every unambiguous prefix.
    ("make '--ev=$(info X)'", "-E", Some("$(info X)")),
    ("make -E '$(info X)'", "-E", Some("$(info X)")),
    ("make --dir=mk", "-C", Some("mk")),
    ("make --direc=mk", "-C", Some("mk")),
    ("make -Cmk", "-C", Some("mk")),
    ("make --makef=mk/Makefile", "-f", Some("mk/Makefile")),
    ("make --fil=mk/Makefile", "-f", Some("mk/Makefile")),
    ("make -fmk/Makefile", "-f", Some("mk/Makefile")),
    ("make --file mk/Makefile", "-f", Some("mk/Makefile")),
    ("make -nf mk/Makefile", "-f", Some("mk/Makefile")),
    ("make -f -", "-f", Some("-")),
    ("make --inc=/tmp -C mk", "-I", Some("/tmp")),
    ("make -Onone -C mk", "-O", Some("none")),
    ("make -j4 -C mk", "-j", Some("4")),
    // grep.
    ("grep -fpats in.txt", "-f", Some("pats")),
    ("grep --recur a src", "-r", None),
    ("grep --dereference-r a src", "-R", None),
    ("grep --directories=rec a src", "-d", Some("rec")),
    ("grep -d recurse a src", "-d", Some("recurse")),
    // awk (mawk here): `-W exec`, `-We`, `-Wexec` all run the file as the program.
    ("mawk -W exec p.awk", "-W", Some("exec")),
    ("mawk -We p.awk", "-W", Some("e")),
    ("mawk -fp.awk", "-f", Some("p.awk")),
    ("mawk -vx=1 'BEGIN{print x}'", "-v", Some("x=1")),
    // interpreters: a valued option before the inline code.
    ("python3 -W ignore -c 'print(1)'", "-c", Some("print(1)")),
    ("python3 -X dev -c 'print(2)'", "-c", Some("print(2)")),
    ("python3 -Wignore -c 'print(3)'", "-c", Some("print(3)")),
    ("python3 -Ic 'print(4)'", "-c", Some("print(4)")),
    ("python3 -cprint(5)", "-c", Some("print(5)")),
    ("node --stack-size=100 -e 'console.log(1)'", "-e", Some("console.log(1)")),
    ("node --inspect-port 0 -e 'console.log(3)'", "-e", Some("console.log(3)")),
    ("node --title x -e 'console.log(4)'", "-e", Some("console.log(4)")),
    ("perl -I lib -e 'print 1'", "-e", Some("print 1")),
    ("perl -Ilib -e 'print 2'", "-e", Some("print 2")),
    ("perl -le 'print 3'", "-e", Some("print 3")),
    ("perl -lne 'print 4' f", "-e", Some("print 4")),
    // wrappers: getopt_long abbreviations, attached values.
    ("timeout --sig KILL 5 echo", "-s", Some("KILL")),
    ("timeout --k=1 5 echo", "-k", Some("1")),
    ("timeout -sKILL 5 echo", "-s", Some("KILL")),
    ("timeout --fo 5 echo", "--foreground", None),
    ("nice --adj 5 echo", "-n", Some("5")),
    ("nice -n5 echo", "-n", Some("5")),
    ("env --chd=/tmp pwd", "-C", Some("/tmp")),
    ("env --split-s=echo", "-S", Some("echo")),
    ("env -Secho", "-S", Some("echo")),
    ("env --un=HOME echo", "-u", Some("HOME")),
    ("env -uHOME echo", "-u", Some("HOME")),
    ("env --ignore-e echo", "-i", None),
    ("xargs --repl=X echo X", "-i", Some("X")),
    ("xargs -IX echo X", "-I", Some("X")),
    ("xargs --arg-f=/dev/null echo", "-a", Some("/dev/null")),
    ("xargs --max-a 1 echo", "-n", Some("1")),
    ("stdbuf --out=L echo", "-o", Some("L")),
    ("stdbuf -oL echo", "-o", Some("L")),
    ("setsid --f echo", "-f", None),
    ("flock --tim 1 /tmp/lk echo", "-w", Some("1")),
    ("ionice -c3 echo", "-c", Some("3")),
    ("taskset --cpu-l 0 echo", "-c", None),
    ("watch --differences ls", "-d", None),
    // npm expands prefixes ("Expanding --script-sh to --script-shell"), options anywhere.
    ("npm --script-sh=/bin/echo test", "--script-shell", Some("/bin/echo")),
    ("npm --prefix np run where", "--prefix", Some("np")),
    ("npm -C np run where", "--prefix", Some("np")),
    ("npm run where --prefix np", "--prefix", Some("np")),
    // man, less, curl.
    ("man --pag=cat ls", "-P", Some("cat")),
    ("man -Pcat ls", "-P", Some("cat")),
    ("less -o/tmp/l2 f", "-o", Some("/tmp/l2")),
    ("curl -o/tmp/c2 file:///etc/hostname", "-o", Some("/tmp/c2")),
];

/// `(command line, canonical option)`: the program refused the spelling (an error, nothing ran).
#[rustfmt::skip]
const REFUSED: &[(&str, &str)] = &[
    ("git diff --outp=/tmp/d1.txt", "--output"),
    ("git log --outp=/tmp/d3.txt", "--output"),
    ("git show --outp=/tmp/s.txt HEAD", "--output"),
    ("git log --onel", "--oneline"),
    ("git diff --ext-d", "--ext-diff"),
    ("git diff --sta", "--stat"),
    ("git format-patch --output-d=/tmp/fp -1", "-o"),
    ("git --no-pag log -1", "-P"),
    ("git --git-d=.git status", "--git-dir"),
    ("git --work-t=. status", "--work-tree"),
    ("git --exec-p", "--exec-path"),
    ("git --conf=x log", "--config-env"),
    ("python3 --versi", "-V"),
    ("cargo --manifest-pa /tmp/x.toml build", "--manifest-path"),
    ("cargo build --manifest-pa /tmp/x.toml", "--manifest-path"),
    ("bash --nor -c 'echo x'", "--norc"),
    ("bash --rcf /dev/null -c 'echo x'", "--rcfile"),
    ("node --stack-si=100 -e x", "--stack-size"),
];

/// `(command line, candidates)`: an abbreviation the program refused as ambiguous.
#[rustfmt::skip]
const AMBIGUOUS: &[(&str, &[&str])] = &[
    ("tar -xf out3.tar --to=cat", &["-O", "--to-command", "-m", "--totals"]),
    ("make --e=x", &["-e", "-E"]),
    ("git status --sh", &["-s", "--show-stash"]),
    ("git commit --dry --allow-e -m x", &["--allow-empty", "--allow-empty-message"]),
    ("git hash-object --std -w", &["--stdin", "--stdin-paths"]),
    ("ionice --cl 3 echo", &["-c", "-n"]),
    ("grep --fil=pats f", &["-f", "-l", "-L"]),
    ("curl --outp /tmp/c1 file:///etc/hostname", &["-o", "--output-dir"]),
];

#[test]
fn every_spelling_the_real_program_accepts_is_read_as_that_option() {
    let mut wrong = Vec::new();
    for (line, option, value) in ACCEPTED {
        let (_, options) = parsed(line);
        let want = (option.to_string(), value.map(str::to_owned));
        if !options.contains(&want) {
            wrong.push(format!("{line}: want {want:?}, got {options:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_spelling_the_real_program_refuses_is_not_that_option() {
    for (line, option) in REFUSED {
        let (_, options) = parsed(line);
        assert!(
            !options.iter().any(|(o, _)| o == option),
            "{line}: {options:?}"
        );
    }
}

#[test]
fn an_ambiguous_abbreviation_stands_for_every_candidate() {
    for (line, candidates) in AMBIGUOUS {
        let (_, options) = parsed(line);
        for c in *candidates {
            assert!(
                options.iter().any(|(o, _)| o == c),
                "{line}: {c} in {options:?}"
            );
        }
    }
}

#[test]
fn subcommands_are_read_where_the_program_reads_them() {
    for (line, subs) in [
        ("git -C repo status --short", &["status"][..]),
        ("git --git-dir .git log -1", &["log"]),
        ("git stash list", &["stash", "list"]),
        ("git config get user.name", &["config", "get"]),
        ("uv --directory app run pytest -x", &["run"]),
        ("uv tool run ruff check", &["tool", "run"]),
        ("npm --prefix web run build", &["run"]),
        ("cargo +nightly test --workspace", &["test"]),
        ("nix develop .#ci -c cargo test", &["develop"]),
        ("git status.sh", &[]),
    ] {
        let (got, _) = parsed(line);
        assert_eq!(got, subs, "{line}");
    }
}

#[test]
fn options_end_where_the_program_ends_them() {
    for (line, operands) in [
        // An interpreter's options end at its script; what follows is the script's.
        (
            "python3 -W ignore manage.py test -c x",
            &["manage.py", "test", "-c", "x"][..],
        ),
        ("python3 -c 'print(1)' -W x", &["-W", "x"]),
        ("node app.js -e x", &["app.js", "-e", "x"]),
        // A wrapper's options end at its command.
        ("timeout -s KILL 5 rm -rf x", &["5", "rm", "-rf", "x"]),
        // GNU tools permute.
        ("sort in.txt -o out.txt", &["in.txt"]),
        // `--` ends options everywhere.
        ("rm -- -rf", &["-rf"]),
    ] {
        let argv = shell_words(line);
        let spec = programs::spec_for(&argv[0]).unwrap();
        let p = spec::parse(spec, &argv[1..]);
        let got: Vec<&str> = p.operands.iter().map(|&i| argv[i + 1].as_str()).collect();
        assert_eq!(got, operands, "{line}");
    }
}

/// Issue 27, class 4: programs' own languages, in every dialect installed. Each program is run
/// by every dialect on this machine (gawk, mawk, original-awk, busybox awk; GNU sed) in a
/// throwaway folder, bounded by a timeout; where a dialect does the harm (creates `p`, or
/// reads `secret` that no operand named), the analysis must report a hazard for that dialect's
/// command line. The benign twins must do no harm in any dialect and raise no hazard.
#[test]
fn every_installed_dialect_that_does_harm_is_caught() {
    use reasonix::shell::Analysis;
    use std::process::Command;
    const AWKS: &[&[&str]] = &[&["gawk"], &["mawk"], &["original-awk"], &["busybox", "awk"]];
    // (program, harmful): harmful programs must do harm in at least one dialect here.
    const AWK_PROGRAMS: &[(&str, bool)] = &[
        ("BEGIN { ARGV[ARGC++] = \"secret\" } { print }", true),
        ("{ x++ / 2; system(\"touch p\") / 1 }", true),
        ("{ x-- / 2; system(\"touch p\") }", true),
        (
            "BEGIN { split(\"secret\", ARGV); ARGC = 2 } { print }",
            true,
        ),
        ("{ x++ / 2; print x }", false),
        ("{ print ARGV[1], ARGC }", false),
    ];
    const SEDS: &[&[&str]] = &[&["sed"]];
    const SED_SCRIPTS: &[(&str, bool)] = &[
        (":x e touch p", true),
        ("v 4.2 w p", true),
        ("1a foo\\\\\ne touch p", true),
        ("1a foo\\\ne touch p", false),
        (":a;N;$!ba;s/x/y/", false),
    ];
    let timeout = |mut argv: Vec<String>, dir: &std::path::Path| {
        let mut all = vec!["5".to_owned()];
        all.append(&mut argv);
        Command::new("timeout")
            .args(&all)
            .current_dir(dir)
            .stdin(std::process::Stdio::null())
            .output()
    };
    let mut ran = 0;
    let mut failures = Vec::new();
    for (dialects, programs) in [(AWKS, AWK_PROGRAMS), (SEDS, SED_SCRIPTS)] {
        for (program, harmful) in programs {
            let mut harmed_somewhere = false;
            for dialect in dialects {
                let dir = tempfile::tempdir().unwrap();
                std::fs::write(dir.path().join("input"), "line\n").unwrap();
                std::fs::write(dir.path().join("secret"), "SECRET\n").unwrap();
                let mut argv: Vec<String> = dialect.iter().map(|s| s.to_string()).collect();
                argv.push(program.to_string());
                argv.push("input".into());
                let Ok(out) = timeout(argv, dir.path()) else {
                    continue; // not installed here
                };
                if out.status.code() == Some(127) {
                    continue;
                }
                ran += 1;
                let stdout = String::from_utf8_lossy(&out.stdout);
                let harmed = dir.path().join("p").exists() || stdout.contains("SECRET");
                harmed_somewhere |= harmed;
                let line = format!(
                    "{} '{}' input",
                    dialect.join(" "),
                    program.replace('\'', "'\\''")
                );
                let a = Analysis::of(&line);
                let flagged = !a.hazards.is_empty() || !a.analysed;
                if harmed && !flagged {
                    failures.push(format!("{line}: does harm, and the analysis saw none"));
                }
                if !harmful && (harmed || flagged) {
                    failures.push(format!(
                        "{line}: benign twin (harm {harmed}, flagged {flagged}: {:?})",
                        a.hazards
                    ));
                }
            }
            if *harmful && !harmed_somewhere {
                failures.push(format!("{program:?}: did no harm in any dialect here"));
            }
        }
    }
    assert!(ran > 0, "no dialect ran");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
