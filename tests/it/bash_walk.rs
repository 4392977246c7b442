//! Issue 10, the walk's classes: each attack bash really runs (confirmed under `bash` 5.2 in a
//! throwaway folder before its row was written) next to its benign twin, the legitimate form
//! that must stay allowed, judged through the gate under a user's benign allow-list and under
//! the embedded default policy.
//!
//! A row is `(class, policy, script, verdict)`: the class names the issue's class (or the bug)
//! it proves, "benign" is [`BENIGN`], "default" the embedded policy; every row is judged
//! interactively. An attack must not be allowed (`ask` or `deny`), its twin must be.

use crate::common;

use common::World;
use reasonix::shell::Analysis;
use reasonix::{PolicySet, Posture, Registry};
use serde_json::json;

/// What a developer might allow an agent: everyday readers and builds, no secrets.
const BENIGN: &str = r#"
version: 1
defaults:
  read_only: allow
  writer: ask
  unattended: deny
rules:
  - id: no-secrets
    decision: deny
    paths: ["*.env", ".env", "*.pem", "secrets/**", "~/.ssh/**"]
  - id: everyday
    decision: allow
    tools: [bash]
    commands:
      - "ls"
      - "ls *"
      - "cat *"
      - "head *"
      - "tail *"
      - "sort *"
      - "wc *"
      - "grep *"
      - "echo *"
      - "printf *"
      - "git status"
      - "git log *"
      - "git diff *"
      - "timeout * ls *"
      - "npm test"
      - "cargo test *"
      - "openssl *"
      - "tar *"
      - "make"
      - "make *"
      - "cd *"
      - "read *"
      - "mapfile *"
      - "let *"
      - "test *"
      - "\\[ *"
      - "declare *"
      - "unset *"
      - "strings *"
      - "mytool *"
"#;

/// `(class, policy, script, verdict)`.
#[rustfmt::skip]
const ROWS: &[(&str, &str, &str, &str)] = &[
    // 1. A redirect that swallows later words: they are arguments of the command.
    ("1", "benign", "sort <list.txt secrets.env", "deny"),
    ("1", "benign", "sort <list.txt", "allow"),
    ("1", "benign", "sort <list.txt names.txt", "allow"),
    ("1", "default", "sort <list.txt .env", "deny"),
    ("1", "default", "sort <list.txt names.txt", "allow"),
    ("1", "default", "grep KEY <README.md .env", "deny"),
    ("1", "default", "grep KEY <README.md src/a.rs", "allow"),
    ("1", "default", "cat <<EOF .env\nx\nEOF", "deny"),
    ("1", "default", "cat <<EOF -\nx\nEOF", "allow"),
    ("1", "benign", "cat notes.txt >out.txt secrets.env", "deny"),
    ("1", "benign", "openssl <input s_client -connect example.com:443", "allow"),
    // A lone `-` before a heredoc or `2>&1` is an argument (tree-sitter drops it).
    ("dash", "default", "cat - <<EOF\nhi\nEOF", "allow"),
    ("dash", "default", "rm -rf - 2>&1", "ask"),
    // A heredoc reaches a shell through a wrapper: its script is read, not refused.
    ("heredoc", "benign", "timeout 5 bash <<EOF\nls -la\nEOF", "allow"),
    ("heredoc", "benign", "timeout 5 bash <<EOF\nls; rm -rf x\nEOF", "ask"),
    ("heredoc", "benign", "timeout 5 bash <<EOF\ncat .env\nEOF", "deny"),
    // A carriage return is part of a word, as in bash: `a\r#` is no comment.
    ("cr", "benign", "echo a\r# ; rm -rf x", "ask"),
    ("cr", "default", "echo a\r# ; rm -rf x", "ask"),
    ("cr", "benign", "echo a\rb", "allow"),
    ("cr", "benign", "git status\r", "ask"),
    ("cr", "benign", "git status\n", "allow"),
    ("cr", "default", "echo a\rb", "allow"),
    ("cr", "default", "cat <<EOF\r\nx\nEOF\r\ncat .env", "deny"),
    // 2. Arithmetic evaluation runs code: a subscript's `$(...)` runs wherever bash evaluates
    // arithmetic, and a variable's value is evaluated in turn.
    ("2", "benign", "x='a[$(touch p)]'; (( x )) && echo big", "ask"),
    ("2", "benign", "x=5; (( x > 3 )) && echo big", "allow"),
    ("2", "default", "x='a[$(touch p)]'; (( x )) && cat README.md", "ask"),
    ("2", "default", "x=5; (( x > 3 )) && cat README.md", "allow"),
    ("2", "benign", "v=$(cat n.txt); [[ $v -eq 1 ]] && echo one", "ask"),
    ("2", "default", "v=$(cat n.txt); [[ $v -eq 1 ]] && cat README.md", "ask"),
    ("2", "default", "v=$(cat n.txt); [[ -n $v ]] && cat README.md", "allow"),
    ("2", "benign", "[[ $# -eq 0 ]] && echo none", "allow"),
    ("2", "benign", "let \"i=a[\\$(touch p)]\"", "ask"),
    ("2", "benign", "let i=1+2", "allow"),
    ("2", "benign", "declare -i n; n='a[$(touch p)]'", "ask"),
    ("2", "benign", "declare -i n; read n < n.txt", "ask"),
    ("2", "benign", "declare -i n=5; echo done", "allow"),
    ("2", "benign", "k='a[$(touch p)]'; arr[$k]=1", "ask"),
    ("2", "benign", "k=2; arr[$k]=1; echo done", "allow"),
    ("2", "benign", "arr=(['$(touch p)']=1)", "ask"),
    ("2", "benign", "k='a[$(touch p)]'; arr=([$k]=1)", "ask"),
    ("2", "benign", "arr=([2]=x [3]=y); echo done", "allow"),
    ("2", "benign", "declare \"a[\\$(touch p)]=1\"", "ask"),
    ("2", "benign", "declare a=1", "allow"),
    ("2", "benign", "printf -v 'a[$(touch p)]' x", "ask"),
    ("2", "benign", "printf -v out %s x", "allow"),
    ("2", "benign", "test -v 'a[$(touch p)]'", "ask"),
    ("2", "benign", "[ -v 'a[$(touch p)]' ]", "ask"),
    ("2", "benign", "test -v HOME", "allow"),
    ("2", "benign", "[ -v HOME ]", "allow"),
    ("2", "benign", "read 'a[$(touch p)]' <<< x", "ask"),
    ("2", "benign", "read -r line <<< x", "allow"),
    ("2", "benign", "x='$(touch p)'; echo \"${x@P}\"", "ask"),
    ("2", "benign", "x='$(touch p)'; cat <<EOF\n${x@P}\nEOF", "ask"),
    ("2", "benign", "x=hi; cat <<EOF\n$x\nEOF", "allow"),
    ("2", "benign", "k='a[$(touch p)]'; echo ${arr[$k]}", "ask"),
    ("2", "benign", "n='a[$(touch p)]'; for ((i=0; i<n; i++)); do echo x; done", "ask"),
    ("2", "benign", "for ((i=0; i<3; i++)); do echo x; done", "allow"),
    ("2", "benign", "x='a[$(touch p)]'; echo ${!x}", "ask"),
    ("2", "benign", "declare -n r='a[$(touch p)]'; echo $r", "ask"),
    ("2", "benign", "declare -n r; r='a[$(touch p)]'; echo \"$r\"", "ask"),
    ("2", "benign", "x=5; declare -n r=x; (( r > 1 )) && echo big", "allow"),
    ("2", "benign", "bash -c '(( $1 ))' _ 'a[$(touch p)]'", "ask"),
    ("2", "benign", "f() { (( $1 )); }; f 'a[$(touch p)]'", "ask"),
    ("2", "benign", "command let 'a[$(touch p)]=1'", "ask"),
    ("2", "benign", "builtin read 'a[$(touch p)]' <<< x", "ask"),
    ("2", "benign", "command let i=1+2", "allow"),
    // 9. Paths made by expansion: braces, bound variables anywhere in a word, splitting of
    // their unquoted values, tilde with the script's own HOME, `~+`.
    ("9", "default", "head -n5 {README.md,.env}", "deny"),
    ("9", "default", "head -n5 {README.md,src/a.rs}", "allow"),
    ("9", "default", "cat .e{n,x}v", "deny"),
    ("9", "default", "cat README.{md,txt}", "allow"),
    ("9", "benign", "head -n5 {README.md,.env}", "deny"),
    ("9", "benign", "head -n5 {README.md,src/a.rs}", "allow"),
    ("9", "benign", "f='README.md .env'; cat $f", "deny"),
    ("9", "benign", "f='README.md src/a.rs'; cat $f", "allow"),
    ("9", "benign", "p=secrets; cat config/${p}.env", "deny"),
    ("9", "benign", "p=src; cat ${p}/a.rs", "allow"),
    ("9", "default", "p=.env; cat ./$p", "deny"),
    ("9", "default", "p=.e; cat ${p}nv", "deny"),
    ("9", "default", "p=READ; cat ${p}ME.md", "allow"),
    ("9", "default", "p=README.md; cat ./$p", "allow"),
    ("9", "default", "p='README.md .env'; cat $p", "deny"),
    ("9", "default", "p='README.md .env'; cat \"$p\"", "allow"),
    ("9", "default", "q='.e*'; cat $q", "deny"),
    ("9", "default", "q='.e*'; cat \"$q\"", "allow"),
    ("9", "default", "for f in .e{n,x}v; do cat $f; done", "deny"),
    ("9", "default", "for f in src/*.rs; do cat \"$f\"; done", "allow"),
    ("9", "default", "HOME=/etc; cat ~/shadow", "deny"),
    ("9", "default", "cat ~+/.env", "deny"),
    ("9", "default", "cat ~+/README.md", "allow"),
    ("9", "default", "cat ~-/README.md", "ask"),
    ("9", "default", "sed {-i,s/a/b/} README.md", "ask"),
    ("9", "default", "sed -n 1p README.md", "allow"),
    ("9", "default", "cat \"\"/$HOME/.aws/credentials", "ask"),
    ("9", "default", "cat \"\"/README.md", "allow"),
    ("9", "default", "cat {1..100000}.txt", "ask"),
    ("9", "default", "cat {1..3}.txt", "allow"),
    // 4. The environment changes what programs do: only variables known to be inert may be
    // set before a command a prefix rule allows.
    ("4", "benign", "TAR_OPTIONS=--to-command=./x.sh tar xf a.tar", "ask"),
    ("4", "benign", "export TAR_OPTIONS=--to-command=./x.sh; tar xf a.tar", "ask"),
    ("4", "benign", "tar xf a.tar", "allow"),
    ("4", "benign", "'export' TAR_OPTIONS=--to-command=./x.sh; tar xf a.tar", "ask"),
    ("4", "benign", "command export TAR_OPTIONS=--to-command=./x.sh; tar xf a.tar", "ask"),
    ("4", "benign", "MAKEFILES=evil.mk make", "ask"),
    ("4", "benign", "GNUMAKEFLAGS='--eval=$(shell id)' make", "ask"),
    ("4", "benign", "make", "allow"),
    ("4", "benign", "LANG=C make test", "allow"),
    ("4", "benign", "env 'BASH_FUNC_git%%=() { id; }' bash -c 'git status'", "ask"),
    ("4", "benign", "env LANG=C bash -c 'git status'", "allow"),
    ("4", "benign", "Npm_Config_Script_Shell=./sh.sh npm test", "ask"),
    ("4", "benign", "npm_config_script_shell=./sh.sh; npm test", "ask"),
    ("4", "benign", "CI=true npm test", "allow"),
    ("4", "benign", "HOME=/tmp/h git status", "ask"),
    ("4", "benign", "CDPATH=/etc; cd ssh && cat ssh_config", "ask"),
    ("4", "benign", "cd src && cat a.rs", "allow"),
    ("4", "benign", "RUST_BACKTRACE=1 cargo test --lib", "allow"),
    ("4", "benign", "d=src; ls $d", "allow"),
    ("4", "benign", "for PAGER in ./x.sh; do git log -p; done", "ask"),
    ("4", "benign", "for f in src/*.rs; do wc -l \"$f\"; done", "allow"),
    ("4", "default", "HOME=/tmp/h git status", "ask"),
    ("4", "default", "HOME=/tmp/h; git status", "ask"),
    ("4", "default", "GIT_TRACE=/tmp/t.txt git log --oneline", "ask"),
    ("4", "default", "git status", "allow"),
    ("4", "default", "GIT_OPTIONAL_LOCKS=0 git status", "allow"),
    ("4", "default", "GIT_PAGER=cat git log --oneline", "allow"),
    ("4", "benign", "while IFS= read -r l; do echo x; done < README.md", "allow"),
    ("4", "benign", "while read -r GIT_DIR; do git status; done < list.txt", "ask"),
    // The oracle's findings (tests/oracle/known.txt, where each stood until fixed): bash read a
    // script otherwise than the analysis did. Those marked (through) let a call through.
    // (through) A newline inside double quotes is text: `bash -c "a<newline>b"` runs two commands.
    ("dq-newline", "default", "bash -c \"echo hi\nrm -rf src\"", "ask"),
    ("dq-newline", "default", "bash -c \"echo hi\nls src\"", "allow"),
    ("dq-newline", "benign", "bash -c \"echo hi\ncat .env\"", "deny"),
    ("dq-newline", "benign", "printf '%s\\n' \"line one\nline two\"", "allow"),
    // (through) Escaped backticks inside backticks are a nested substitution.
    // Its twin gets what its `$(...)` form gets: a substitution's output as an argument is
    // never covered by a prefix rule, except for a reader that opens no operand (`echo`),
    // which does the same whatever it is given (round 4's held-out twins).
    ("backticks", "benign", "echo `echo \\`cat .env\\``", "deny"),
    ("backticks", "benign", "echo \"`echo \\\"$(cat .env)\\\"`\"", "deny"),
    ("backticks", "benign", "v=`echo \\`cat README.md\\``", "allow"),
    ("backticks", "benign", "v=$(echo $(cat README.md))", "allow"),
    ("backticks", "benign", "v=$(head $(cat README.md))", "ask"),
    ("backticks", "benign", "v=`cat README.md`; echo done", "allow"),
    // (through) Backticks glued to text, or blank ones between words: not understood.
    ("glued-backtick", "benign", "cat .e`true`nv", "ask"),
    ("glued-backtick", "benign", "ls x ` ` y", "ask"),
    ("glued-backtick", "benign", "v=`echo z`; ls x y", "allow"),
    // (through) A quote then a backslash-escaped character is one word: not understood.
    ("quote-escape", "default", "cat '.en'\\v", "ask"),
    ("quote-escape", "default", "cat 'READ'ME.md", "allow"),
    // (through) A backslash-escaped word after a newline starts a command: not understood.
    ("line-escape", "default", "ls\n\\rm -rf src", "ask"),
    ("line-escape", "default", "ls\nls -la src", "allow"),
    // (through) `\ #` is a word, not a comment: not understood.
    ("escaped-blank", "default", "\\ #; rm -rf src", "ask"),
    ("escaped-blank", "benign", "git \\ status", "ask"),
    ("escaped-blank", "benign", "git status # \\ note", "allow"),
    ("escaped-blank", "default", "ls a\\ b", "allow"),
    // (through) A redirection's target takes one word: the rest are the command's.
    ("redirect", "default", "cat > build/log .env", "deny"),
    ("redirect", "benign", "rm >build/log -rf src", "ask"),
    ("redirect", "benign", "cat README.md > build/log", "ask"),
    // `$$` is the shell's process id, a trailing `$` itself.
    ("dollar", "benign", "cat notes$$", "ask"),
    ("dollar", "benign", "cat notes$ \"a $ b\"", "allow"),
    // `>& -word` closes the descriptor; `word` is the command's.
    ("close", "benign", "cat >& -secrets/key", "deny"),
    ("close", "benign", "cat <&- README.md", "allow"),
    ("close", "benign", "ls >&- src", "allow"),
    // bash's `time` keyword takes only `-p`.
    ("time", "benign", "time -v ls", "ask"),
    ("time", "benign", "time -p ls", "allow"),
    ("time", "benign", "time ls -la", "allow"),
    // A login or interactive shell runs its startup files first.
    ("login", "default", "bash -lc 'echo hi'", "ask"),
    ("login", "default", "bash -ic 'echo hi'", "ask"),
    ("login", "default", "bash -c 'echo hi'", "allow"),
    // `{`, `[` glued to a word are no group or test: bash runs a program.
    ("bracket", "default", "{}", "ask"),
    ("bracket", "default", "[a]", "ask"),
    ("bracket", "default", "{ ls; }", "allow"),
    ("bracket", "default", "[ -f README.md ] && ls", "allow"),
    ("bracket", "default", "[[ -f README.md ]]&&ls", "allow"),
    // Blanks inside what tree-sitter calls one word: not understood.
    ("blank-word", "default", "ls ] }", "ask"),
    ("blank-word", "default", "ls ']' '}'", "allow"),
    // `1=x` is no assignment (`1` is no name): bash runs the program `1=x`.
    ("name", "default", "1=x ls", "ask"),
    ("name", "default", "LANG=C ls", "allow"),
    // A declaration glued to a bracket is a program's name.
    ("declaration", "benign", "declare}x", "ask"),
    ("declaration", "benign", "declare x", "allow"),
    // Found by the oracle in this round's fuzz runs.
    // (through) Words after redirections with no command before them are a command, which
    // tree-sitter files under the last redirection (the default allowed this, reading `.env`).
    ("bodiless", "default", ">/dev/null 2>&1 x:= .env", "deny"),
    ("bodiless", "default", ">/dev/null 2>&1 ls src", "allow"),
    // `>& WORD` expands WORD a second time when it is no descriptor: code in it runs.
    ("dup-twice", "benign", "ls >& '$(touch p)x'", "ask"),
    ("dup-twice", "benign", "ls >& \"'.env'\"", "ask"),
    ("dup-twice", "benign", "ls >& /dev/null", "allow"),
    ("dup-twice", "benign", "ls 2>&1", "allow"),
    // (through) A here-document tree-sitter ends at other text than its delimiter: bash reads
    // on (the default allowed `cat` while bash ran the `$(...)`).
    ("heredoc-end", "default", "cat <<- $P$\nhi ${X:-$(touch p)}", "ask"),
    ("heredoc-end", "default", "cat <<- EOF\n\thi\n\tEOF", "allow"),
    ("heredoc-end", "default", "cat <<'E O'\nhi\nE O", "allow"),
    // (through) Only digits (or `{NAME}`) make a descriptor: `-rf2>&1` is a word, then `>&1`.
    ("descriptor", "default", "ls\n-rf2>&1", "ask"),
    ("descriptor", "default", "ls 2>&1", "allow"),
    ("descriptor", "default", "ls {fd}>&2", "allow"),
    ("descriptor", "benign", "ls {PATH}>&2; ls", "ask"),
    // Found by the neighbourhood generator: tree-sitter gives the redirection to the list.
    ("descriptor", "benign", "true && ls {PATH}>&2; ls", "ask"),
    ("descriptor", "benign", "true && ls >&2; ls", "allow"),
    // `!` glued to a word is no negation.
    ("negation", "default", "!{ls", "ask"),
    ("negation", "default", "! ls", "allow"),
    ("negation", "default", "!(ls)", "allow"),
    // An assignment to `_` is one: tree-sitter takes it for the command name.
    ("underscore", "default", "_=x rm -rf src", "ask"),
    ("underscore", "default", "_a=x ls", "ask"),
    ("underscore", "default", "ls", "allow"),
    // Issue 27, class 1: the shell's own state. What the walk cannot follow is not
    // understood; name references set the variable they name.
    ("state", "benign", "declare -n r=IFS; r=/; f=README.md; cat $f", "ask"),
    ("state", "benign", "typeset -n r; r=HOME; r=/etc; cat ~/shadow", "ask"),
    ("state", "benign", "local -n r=PS4; echo x", "ask"),
    ("state", "benign", "x=5; declare -n r=x; echo done", "allow"),
    ("state", "benign", "command declare -n r=CDPATH; cd ssh", "ask"),
    ("state", "benign", "declare \"-n\" r=GLOBIGNORE; ls", "ask"),
    ("state", "benign", "set -k; cat README.md X=1", "ask"),
    ("state", "benign", "set -o keyword; echo x", "ask"),
    ("state", "benign", "bash -k -c 'echo x'", "ask"),
    ("state", "benign", "set -euo pipefail; cat README.md", "allow"),
    ("state", "benign", "bash -e -c 'echo x'", "allow"),
    ("state", "benign", "set -o posix; HOME=/etc export X; cat ~/shadow", "ask"),
    ("state", "benign", "POSIXLY_CORRECT=1; HOME=/etc :; cat ~/shadow", "ask"),
    ("state", "benign", "POSIXLY_CORRECT=1 bash -c 'echo x'", "ask"),
    ("state", "benign", "bash --posix -c 'echo x'", "ask"),
    ("state", "benign", "POSIXLY_CORRECT=1 sort README.md", "allow"),
    ("state", "default", "shopt -s dotglob; cat *", "ask"),
    ("state", "default", "bash -O dotglob -c 'cat *'", "ask"),
    ("state", "default", "shopt -s nocaseglob; cat .EN[V]", "ask"),
    ("state", "default", "shopt -s nullglob; cat *.md", "allow"),
    ("state", "default", "shopt -s globstar; cat **/*.env", "ask"),
    ("state", "default", "shopt -s extglob; cat README.md", "allow"),
    ("state", "default", "shopt -q dotglob && echo on", "allow"),
    ("state", "benign", "set -H; echo one\n!!:s/one/two/", "ask"),
    ("state", "benign", "bash -H -c 'echo x'", "ask"),
    ("state", "benign", "declare -a 'x=($(touch p))'", "ask"),
    ("state", "benign", "v='($(touch p))'; declare -a x=$v", "ask"),
    ("state", "benign", "x=(); declare x=\"$1\"", "ask"),
    ("state", "benign", "typeset -a \"x=(\\`touch p\\`)\"", "ask"),
    ("state", "benign", "declare -a x=(a b); echo done", "allow"),
    ("state", "benign", "declare -a 'x=(a b)'; echo done", "allow"),
    ("state", "benign", "declare x=README.md; echo done", "allow"),
    ("state", "benign", "true & wait -p 'a[$(touch p)]' -n", "ask"),
    ("state", "benign", "mapfile -C 'touch p' -c 1 < list.txt", "ask"),
    ("state", "benign", "mapfile -t lines < list.txt", "allow"),
    ("state", "benign", "declare -l f=.ENV; cat $f", "ask"),
    ("state", "benign", "declare f=README.md; cat $f", "allow"),
    ("state", "benign", "history -r notes.txt", "ask"),
    ("state", "benign", "fc -e vi", "ask"),
    // Issue 27, class 8: plain arrays are ordinary bash.
    ("arrays", "benign", "declare -a arr=(a b); echo \"${arr[1]}\"", "allow"),
    ("arrays", "benign", "arr=(README.md src/a.rs); cat \"${arr[@]}\"", "allow"),
    ("arrays", "benign", "arr=(README.md .env); cat \"${arr[1]}\"", "deny"),
    ("arrays", "benign", "declare -a arr=(README.md secrets.env); cat \"${arr[0]}\"", "deny"),
    ("arrays", "benign", "arr=(a b); arr[1]=.env; cat \"${arr[1]}\"", "ask"),
    // Issue 27, class 2: words the parse dropped. Text tree-sitter keeps as text where bash
    // expands must hold no expansion.
    ("dropped", "benign", "cat <<EOF\n  $(touch p)\nEOF", "ask"),
    ("dropped", "benign", "cat <<-EOF\n\t$(touch p)\n\tEOF", "ask"),
    ("dropped", "benign", "cat <<EOF\n  `touch p`\nEOF", "ask"),
    ("dropped", "benign", "cat <<EOF\n  plain text, 5$\nEOF", "allow"),
    ("dropped", "benign", "cat <<'EOF'\n  $(touch p)\nEOF", "allow"),
    ("dropped", "benign", "cat <<EOF\n$\\\n(touch p)\nEOF", "ask"),
    ("dropped", "benign", "cat <<EOF\na \\\nb\nEOF", "allow"),
    ("dropped", "benign", "echo \"$\\\n(touch p)\"", "ask"),
    ("dropped", "benign", "echo \"a \\\nb\"", "allow"),
    ("dropped", "benign", "cat <<< \"$\\\n(touch p)\"", "ask"),
    ("dropped", "benign", "cat <<< \"a \\\nb\"", "allow"),
    ("dropped", "benign", "cat $'README.md\\0.env'", "allow"),
    ("dropped", "benign", "cat $'.env\\0README.md'", "deny"),
    // Issue 27, class 3: `sh` is dash. What dash reads otherwise than bash is not understood.
    ("dash", "benign", "sh -c \"echo $'a' ; ls\"", "ask"),
    ("dash", "benign", "sh -c 'ls &> /dev/null .env'", "deny"),
    ("dash", "benign", "sh -c 'ls &> /dev/null src'", "ask"),
    ("dash", "benign", "sh -c 'ls > /dev/null 2>&1'", "allow"),
    ("dash", "benign", "bash -c 'ls &> /dev/null'", "allow"),
    ("dash", "default", "find . -name '*.rs' -exec sh -c 'cat <<< \"$1\"' _ {} \\;", "ask"),
    ("dash", "default", "echo src | xargs sh -c 'echo {a,b}'", "ask"),
    ("dash", "default", "watch \"cat \\$'x'\"", "ask"),
    ("dash", "default", "watch \"cat README.md\"", "allow"),
    ("dash", "default", "sh <<EOF\n[[ -f x ]] && ls\nEOF", "ask"),
    ("dash", "default", "sh <<EOF\n[ -f x ] && ls\nEOF", "allow"),
    ("dash", "default", "dash -c 'HOME=/etc :; cat ~/shadow'", "ask"),
    ("dash", "default", "zsh -c 'ls'", "ask"),
    // Issue 27, class 4: programs' own languages, in every dialect (run by every installed
    // dialect in tests/it/bash_programs.rs).
    ("dialect", "default", "sed ':x e touch p' README.md", "ask"),
    ("dialect", "default", "sed 'v 4.2 w p' README.md", "ask"),
    ("dialect", "default", "sed '1a foo\\\\\ne touch p' README.md", "ask"),
    ("dialect", "default", "sed ':a;N;$!ba;s/x/y/' README.md", "allow"),
    ("dialect", "default", "awk 'BEGIN { ARGV[ARGC++] = \".env\" } { print }'", "ask"),
    ("dialect", "default", "awk '{ x++ / 2; system(\"touch p\") / 1 }' README.md", "ask"),
    ("dialect", "default", "awk '{ x++ / 2; print x }' README.md", "allow"),
    ("dialect", "default", "mawk '{ print ARGV[1] }' README.md", "allow"),
    // Issue 27, class 5: readers of what the command line does not name.
    ("unnamed", "default", "wc --files0-from=- < list.txt", "ask"),
    ("unnamed", "default", "wc --files0=list.txt", "ask"),
    ("unnamed", "default", "sort --files0-from=list.txt", "ask"),
    ("unnamed", "default", "wc -l README.md", "allow"),
    ("unnamed", "default", "grep -f - README.md < list.txt", "ask"),
    ("unnamed", "default", "grep -f names.txt README.md", "allow"),
    ("unnamed", "default", "diff -N outside .", "ask"),
    ("unnamed", "default", "diff README.md names.txt", "allow"),
    ("unnamed", "default", "man -l - < list.txt", "ask"),
    ("unnamed", "default", "less --lesskey-src=keys.txt README.md", "ask"),
    ("unnamed", "default", "less README.md", "allow"),
    ("unnamed", "default", "git grep --no-index KEY", "ask"),
    ("unnamed", "default", "git diff --no-index a b", "ask"),
    ("unnamed", "default", "git cat-file --batch < list.txt", "ask"),
    ("unnamed", "default", "git cat-file -p HEAD:README.md", "allow"),
    ("unnamed", "default", "git log -L1,2:.env", "deny"),
    ("unnamed", "default", "git log -L1,2:README.md", "allow"),
    ("unnamed", "default", "tree -R", "ask"),
    ("unnamed", "default", "tree -L 2", "allow"),
    ("unnamed", "default", "yq --in-place .a x.yaml", "ask"),
    ("unnamed", "default", "yq --in-pl .a x.yaml", "ask"),
    ("unnamed", "default", "yq .a x.yaml", "allow"),
    // Issue 27, class 6: options that write or run.
    ("writes", "default", "tar -g snap.db -cf - src", "ask"),
    ("writes", "default", "tar --index-file=idx -tvf a.tar", "ask"),
    ("writes", "benign", "tar -g snap.db -cf - src", "ask"),
    ("writes", "benign", "tar -tf a.tar", "allow"),
    ("writes", "benign", "tar -cf link/x.tar src", "deny"),
    ("writes", "benign", "tar -cf out.tar src", "allow"),
    ("writes", "benign", "tar -xf a.tar -C link", "deny"),
    ("writes", "benign", "tar -xPf a.tar", "ask"),
    ("writes", "benign", "tar -xf a.tar -C src", "allow"),
    ("writes", "benign", "sort -o link/out README.md", "deny"),
    // A device as a program's output changes no file: never denied as a write outside the
    // workspace (`sort -o` still asks for its hazard, as it did before options wrote paths).
    ("writes", "benign", "sort -o /dev/null README.md", "ask"),
    ("writes", "benign", "sort -o /dev/stdout README.md", "ask"),
    ("writes", "benign", "sort -o /dev/sda README.md", "deny"),
    ("writes", "default", "tar -xf a.tar -C out", "ask"),
    ("writes", "default", "script -q log.txt", "ask"),
    ("writes", "default", "script -q -c ls log.txt", "ask"),
    ("writes", "default", "strace -o trace.txt ls", "ask"),
    ("writes", "default", "strace -o '|sh' ls", "ask"),
    ("writes", "default", "strace -E LD_PRELOAD=./x.so ls", "ask"),
    ("writes", "default", "valgrind --log-file=v.txt ls", "ask"),
    ("writes", "default", "fakeroot -s state.db ls", "ask"),
    ("writes", "default", "make CC=./evil.sh", "ask"),
    ("writes", "benign", "make CC=./evil.sh", "ask"),
    ("writes", "benign", "make test V=1", "allow"),
    // Issue 27, class 7: folders reached by another name (`link` is a symbolic link to a
    // folder outside the workspace): the folder a program obeys is resolved and confined.
    ("folder", "default", "cd link && git status", "deny"),
    ("folder", "default", "git -C link status", "deny"),
    ("folder", "default", "env --chdir=link git status", "deny"),
    ("folder", "default", "make -C link", "deny"),
    ("folder", "default", "make -f link/Makefile", "deny"),
    ("folder", "default", "npm --prefix link test", "deny"),
    ("folder", "default", "cd src && git status", "allow"),
    ("folder", "default", "git -C src status", "allow"),
    // Issue 27, round 4: readers and writers still missed. A folder diff compares is read
    // whole (every file beneath, `.env` too): judged like `grep -r`, whatever its spelling (a
    // fallback does not allow it while a rule protects paths; an explicit `diff *` allow does,
    // as it does `grep -r`, and the jail hides what the rules protect).
    ("folder-read", "default", "diff src old", "ask"),
    ("folder-read", "default", "diff -r src old", "ask"),
    ("folder-read", "default", "diff --recursive link src", "ask"),
    ("folder-read", "default", "diff -q . old", "ask"),
    ("folder-read", "default", "diff src/a.rs old/a.rs", "allow"),
    ("folder-read", "benign", "diff -u README.md names.txt", "allow"),
    // `@FILE`: arguments read from a file (gcc, binutils, javac…), for a program known to
    // read them or one no table knows; a known program that does not is left alone.
    ("argfile", "default", "strings @list.txt", "ask"),
    ("argfile", "benign", "strings @list.txt", "ask"),
    ("argfile", "default", "strings @.env", "deny"),
    ("argfile", "benign", "strings -a a.tar", "allow"),
    ("argfile", "benign", "mytool @list.txt", "ask"),
    ("argfile", "benign", "mytool --verbose list.txt", "allow"),
    ("argfile", "default", "gcc @list.txt", "ask"),
    ("argfile", "default", "echo @list.txt", "allow"),
    ("argfile", "default", "jq -r @csv x.yaml", "allow"),
    // man-db reads a name with a `/` as a local page, whose `.so` requests read other files.
    ("man-local", "default", "man ./page.1", "ask"),
    ("man-local", "default", "man -l page.1", "ask"),
    ("man-local", "default", "man --local-file page.1", "ask"),
    ("man-local", "default", "man -al page.1", "ask"),
    ("man-local", "default", "man ls", "allow"),
    ("man-local", "default", "man 5 crontab", "allow"),
    // `~` in an option's value: bash expands it in a word of its own (`-f ~/x.tar`), not
    // glued (`-f~/x.tar`, `--file=~/x.tar`, judged as written, which fails closed).
    ("tilde-value", "benign", "tar -cf ~/x.tar src", "deny"),
    ("tilde-value", "benign", "tar -c -f ~/x.tar src", "deny"),
    ("tilde-value", "benign", "tar -xf a.tar -C ~/x", "deny"),
    ("tilde-value", "benign", "sort -o ~/x README.md", "deny"),
    ("tilde-value", "benign", "sort --output ~/x README.md", "deny"),
    ("tilde-value", "benign", "tar --file=~/x.tar -c src", "deny"),
    ("tilde-value", "benign", "tar -cf out.tar src", "allow"),
    ("tilde-value", "benign", "sort README.md", "allow"),
    // Options moved onto the specs: every spelling the program accepts.
    ("spec-rows", "default", "wc --files0-fr=list.txt", "ask"),
    ("spec-rows", "default", "du --files0-from=- -s < list.txt", "ask"),
    ("spec-rows", "default", "du -sh src", "allow"),
    ("spec-rows", "default", "git grep --no-index KEY", "ask"),
    ("spec-rows", "default", "git cat-file --batch-all-objects --batch-check", "ask"),
    ("spec-rows", "default", "strace --output=t.txt ls", "ask"),
    ("spec-rows", "default", "strace -fo t.txt ls", "ask"),
    ("spec-rows", "default", "valgrind --xml-file=x.xml ls", "ask"),
    ("spec-rows", "default", "valgrind --log-socket=127.0.0.1:1500 ls", "ask"),
    ("spec-rows", "default", "fakeroot --lib ./x.so ls", "ask"),
    ("spec-rows", "default", "fakeroot -i state.db ls", "ask"),
    // The held-out corpus' twins: a reader that opens no operand does the same whatever its
    // words become (what a substitution runs is judged as its own command); `read` fills a
    // variable from what its redirection reads; `tar -t` lists.
    ("inert", "default", "echo \"$(cat .env)\"", "deny"),
    ("inert", "default", "echo \"$(date -u +%F)\"", "allow"),
    ("inert", "default", "cat \"$(echo README.md)\"", "ask"),
    ("inert", "default", "echo \"$x\" > out.txt", "ask"),
    ("inert", "default", "printf -v line '%s-%s' a b; echo \"$line\"", "allow"),
    ("inert", "default", "read -r x < .env; echo \"$x\"", "deny"),
    ("inert", "default", "read -r x < names.txt; echo \"$x\"", "allow"),
    ("inert", "default", "read -r IFS < names.txt; echo \"$x\"", "ask"),
    ("inert", "default", "tar -tf a.tar --to-command=sh", "ask"),
    ("inert", "default", "tar -tf a.tar", "allow"),
];

/// What the analysis must read, as bash does (each confirmed under bash 5.2 by the oracle).
#[derive(Debug)]
enum Reading {
    /// Exactly these commands, in the analysis' order.
    Commands(&'static [&'static [&'static str]]),
    /// At least this command among others.
    Reports(&'static [&'static str]),
    /// Not understood: bash reads it some way the analysis does not.
    NotUnderstood,
}

/// `(class, "reads", script, reading)`.
#[rustfmt::skip]
const READS: &[(&str, &str, &str, Reading)] = &[
    ("dq-newline", "reads", "bash -c \"echo hi\nls src\"", Reading::Commands(&[&["bash", "-c", "echo hi\nls src"], &["echo", "hi"], &["ls", "src"]])),
    ("dq-newline", "reads", "ls \" \" \"a \" \"\n\"", Reading::Commands(&[&["ls", " ", "a ", "\n"]])),
    ("dq-newline", "reads", "ls \"a\n\n$HOME\n b\"", Reading::Commands(&[&["ls", "a\n\n$HOME\n b"]])),
    ("backticks", "reads", "echo `echo \\`rm -rf src\\``", Reading::Reports(&["rm", "-rf", "src"])),
    ("backticks", "reads", "echo \"`printf %s \\\"a b\\\"`\"", Reading::Reports(&["printf", "%s", "a b"])),
    ("backticks", "reads", "echo `printf %s \\\"a b\\\"`", Reading::Reports(&["printf", "%s", "\"a", "b\""])),
    ("glued-backtick", "reads", "ls x ` ` y", Reading::NotUnderstood),
    ("glued-backtick", "reads", "rm -r`true`f src", Reading::NotUnderstood),
    ("quote-escape", "reads", "cat '.en'\\v", Reading::NotUnderstood),
    ("line-escape", "reads", "ls\n\\rm -rf src", Reading::NotUnderstood),
    ("escaped-blank", "reads", "\\ #; rm -rf src", Reading::NotUnderstood),
    ("escaped-blank", "reads", "git \\ status", Reading::NotUnderstood),
    ("redirect", "reads", "rm >build/log -rf src", Reading::Commands(&[&["rm", "-rf", "src"]])),
    ("redirect", "reads", "cat - 2>&1", Reading::Commands(&[&["cat", "-"]])),
    ("dollar", "reads", "ls a$ $ b$$ \"c $ d\"", Reading::Commands(&[&["ls", "a$", "$", "b$$", "c $ d"]])),
    ("close", "reads", "ls >& -x y", Reading::Commands(&[&["ls", "x", "y"]])),
    ("close", "reads", "ls 2<&-x", Reading::Commands(&[&["ls", "x"]])),
    ("close", "reads", "ls >&- x", Reading::Commands(&[&["ls", "x"]])),
    ("time", "reads", "time -o stats.txt make", Reading::NotUnderstood),
    ("time", "reads", "time -p -- make -j2", Reading::Commands(&[&["time", "-p", "--", "make", "-j2"], &["make", "-j2"]])),
    ("blank-word", "reads", "ls ] }", Reading::NotUnderstood),
    ("bracket", "reads", "{}", Reading::NotUnderstood),
    ("bracket", "reads", "[a]", Reading::NotUnderstood),
    ("name", "reads", "1=x ls", Reading::NotUnderstood),
    ("declaration", "reads", "export}x", Reading::NotUnderstood),
    ("bodiless", "reads", ">/dev/null 2>&1 x:= .env", Reading::Commands(&[&["x:=", ".env"]])),
    ("bodiless", "reads", ">& -i", Reading::Commands(&[&["i"]])),
    ("glued-target", "reads", "ls > {\\*P in x", Reading::NotUnderstood),
    ("blank-word", "reads", "$ sed a", Reading::NotUnderstood),
    ("negation", "reads", "!ls", Reading::Commands(&[&["!ls"]])),
    ("negation", "reads", "!{ls", Reading::NotUnderstood),
    ("heredoc-end", "reads", "cat <<- $P$\nhi ${X:-$(touch p)}", Reading::NotUnderstood),
    ("descriptor", "reads", "#\\\n-exec2>&1", Reading::Commands(&[&["-exec2"]])),
    ("descriptor", "reads", "ls -5>out x", Reading::Commands(&[&["ls", "-5", "x"]])),
    ("descriptor", "reads", "ls 2>&1 | cat 0< f", Reading::NotUnderstood),
    ("glued-target", "reads", ">> P{\\J }", Reading::NotUnderstood),
    ("underscore", "reads", "_=x rm -rf src", Reading::NotUnderstood),
    ("descriptor", "reads", "ls {fd}>&2 x", Reading::Commands(&[&["ls", "x"]])),
    ("regex", "reads", "ls =~ x", Reading::Commands(&[&["ls", "=~", "x"]])),
    ("dropped", "reads", "echo $'a\\0b' c", Reading::Commands(&[&["echo", "a", "c"]])),
    ("dropped", "reads", "printf %s $'a\\x00q'r", Reading::Commands(&[&["printf", "%s", "ar"]])),
    ("dropped", "reads", "cat <<EOF\n  $(rm -rf src)\nEOF", Reading::NotUnderstood),
    ("dropped", "reads", "cat <<EOF\n$\\\n(rm -rf src)\nEOF", Reading::NotUnderstood),
    ("dropped", "reads", "cat <<EOF\n$(r\\\nm -rf src)\nEOF", Reading::NotUnderstood),
    ("dropped", "reads", "echo \"$(r\\\nm -rf src)\"", Reading::Reports(&["rm", "-rf", "src"])),
    ("state", "reads", "declare -a 'x=($(rm -rf src))'", Reading::NotUnderstood),
    ("state", "reads", "set -k; ls X=1", Reading::NotUnderstood),
    ("dash", "reads", "find . -exec sh -c 'wc -l \"$1\"' _ {} \\;", Reading::Reports(&["wc", "-l", "$1"])),
    ("dash", "reads", "find . -exec sh -c 'cat <<< \"$1\"' _ {} \\;", Reading::NotUnderstood),
    ("dash", "reads", "echo src | xargs sh -c 'ls -la'", Reading::Reports(&["ls", "-la"])),
    ("dash", "reads", "echo src | xargs sh -c 'ls {a,b}'", Reading::NotUnderstood),
    ("dash", "reads", "sh -c 'echo $\"a\"'", Reading::NotUnderstood),
];

#[test]
fn the_analysis_reads_each_finding_as_bash_does() {
    let mut failures = Vec::new();
    for (class, _, script, want) in READS {
        let a = Analysis::of(script);
        let got: Vec<Vec<&str>> = a
            .commands
            .iter()
            .map(|c| c.argv.iter().map(String::as_str).collect())
            .collect();
        let ok = match want {
            Reading::NotUnderstood => !a.analysed,
            Reading::Commands(commands) => a.analysed && got == *commands,
            Reading::Reports(command) => a.analysed && got.iter().any(|c| c == command),
        };
        if !ok {
            failures.push(format!(
                "class {class}: {script:?}: want {want:?}, got {got:?} (problems {:?})",
                a.problems
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The workspace the ROWS are judged in: the files they name, a secret, and a link outside.
fn rows_world() -> World {
    let w = World::new();
    w.file(".env", "KEY=1");
    w.file("secrets.env", "KEY=1");
    w.file("list.txt", "b\na\n");
    w.file("names.txt", "x\n");
    w.file("README.md", "");
    w.file("src/a.rs", "");
    w.file("x.yaml", "a: 1\n");
    w.file("a.tar", "");
    w.file("keys.txt", "");
    w.file("old/a.rs", "");
    w.file("page.1", ".so /etc/hostname\n");
    w.link("link", &w.outside);
    w
}

#[test]
fn each_attack_is_refused_and_its_benign_twin_allowed() {
    let w = rows_world();
    let benign = PolicySet::from_yaml("benign.yaml", BENIGN).unwrap();
    let default = PolicySet::embedded_default();
    let mut failures = Vec::new();
    for (class, policy, script, want) in ROWS {
        let policy = if *policy == "benign" {
            &benign
        } else {
            &default
        };
        let gate = common::gate_over(
            Registry::with_builtins(),
            policy,
            &w.ws,
            Posture::Interactive,
        );
        let call = json!({"name": "bash", "arguments": {"command": script}});
        let a = gate.admit_text(&call.to_string()).into_admission();
        if a.verdict.as_str() != *want {
            failures.push(format!(
                "class {class}: {script:?}: want {want}, got {} — {:?}",
                a.verdict, a.reasons
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} failed:\n{}",
        failures.len(),
        ROWS.len(),
        failures.join("\n")
    );
}

/// The neighbourhood of every class: each attack row, rewritten in forms bash runs alike (in
/// a group, a subshell, after `true &&`, through `bash -c`, `timeout`, `env`, `command`), must
/// still not be allowed. A fix that holds only for the example as written fails here.
#[test]
fn each_attack_stays_refused_in_its_neighbourhood() {
    let w = rows_world();
    let benign = PolicySet::from_yaml("benign.yaml", BENIGN).unwrap();
    let default = PolicySet::embedded_default();
    let quote = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
    let mut failures = Vec::new();
    let mut checked = 0;
    for (class, policy, script, want) in ROWS {
        if *want == "allow" {
            continue;
        }
        let policy = if *policy == "benign" {
            &benign
        } else {
            &default
        };
        let gate = common::gate_over(
            Registry::with_builtins(),
            policy,
            &w.ws,
            Posture::Interactive,
        );
        // Through a program (`timeout`, `env`), `time` is /usr/bin/time, not the keyword.
        let simple =
            !script.contains(['\n', ';', '&', '|', '<', '>', '(', '`', '$']) && *class != "time";
        let mut forms = vec![
            format!("{{ {script}\n}}"),
            format!("({script}\n)"),
            format!("true && {script}"),
            format!("bash -c {}", quote(script)),
        ];
        if simple {
            forms.push(format!("timeout 5 {script}"));
            forms.push(format!("env {script}"));
            forms.push(format!("command {script}"));
        }
        for form in forms {
            checked += 1;
            let call = json!({"name": "bash", "arguments": {"command": form}});
            let a = gate.admit_text(&call.to_string()).into_admission();
            if a.verdict.as_str() == "allow" {
                failures.push(format!(
                    "class {class}: {form:?} is allowed — {:?}",
                    a.reasons
                ));
            }
        }
    }
    assert!(checked > 300, "only {checked} forms");
    assert!(
        failures.is_empty(),
        "{} of {checked} forms allowed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
