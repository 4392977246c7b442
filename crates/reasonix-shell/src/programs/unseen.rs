//! The checks behind the hazard rows for what a program reads, writes or runs without the
//! command line naming it (issue 27, classes 5 and 6): a list of files fed on stdin or read
//! from a file (`--files0-from`), patterns or requests on stdin (`grep -f -`, `git cat-file
//! --batch`), folders compared whole (`diff -N DIR .`), files a man page's `.so` requests
//! name, a log or state file a wrapper's own option writes (`strace -o`, `valgrind
//! --log-file`, `fakeroot -s`, `script FILE`), and files edited in place (`yq --in-place`).
//!
//! Where an option alone decides (`--files0-from`, `diff -N`, `man -l`, `git cat-file
//! --batch`, `strace -o`, `valgrind --log-file`, `fakeroot -s`, `yq --in-place`), the option
//! is a risk of the program's spec, matched in every spelling the program accepts. The checks
//! here read the matcher's output ([`Parsed`]) for what an option's value or an operand
//! decides: `-f -`, `-o '|CMD'`, a folder operand, a local man page, an `@FILE` argument file.

use super::spec::Parsed;
use crate::Command;

/// `grep -f -`, `rg --file=-`: the patterns come from stdin.
pub fn patterns_from_stdin(_: &Command, parsed: &Parsed) -> Option<String> {
    parsed
        .options
        .iter()
        .any(|f| f.name == "-f" && !f.negated && f.value == Some("-"))
        .then(|| "-f - reads its patterns from stdin".to_owned())
}

/// `diff DIR/ .`: an operand that names a folder by its spelling (`.`, `..`, a trailing `/`)
/// is compared whole, every file beneath read. (The options that do the same, `-N`,
/// `--from-file`, are risks of diff's spec; any other operand that is a folder is judged at
/// the policy stage, where it is resolved: [`Analysis::folder_reads`](crate::Analysis).)
pub fn diff_folders(command: &Command, parsed: &Parsed) -> Option<String> {
    parsed
        .operands
        .iter()
        .map(|&i| command.argv[i + 1].as_str())
        .find(|w| matches!(*w, "." | "..") || w.ends_with('/') || w.ends_with("/."))
        .map(|w| format!("{w}: compares folders whole, reading files it does not name"))
}

/// `man ./page.1`: man-db reads a name with a `/` in it as a local page, whose `.so` requests
/// read other files (`man -l` is a risk of man's spec).
pub fn man_local(command: &Command, parsed: &Parsed) -> Option<String> {
    parsed
        .operands
        .iter()
        .map(|&i| command.argv[i + 1].as_str())
        .find(|w| w.contains('/'))
        .map(|w| format!("{w}: a local page, whose .so requests read files it does not name"))
}

/// `strace -o '|CMD'`, `-o '!CMD'`: the trace is piped to a command (`-o FILE` writes, a risk
/// of the spec; this row says that it runs).
pub fn tracer_pipe(_: &Command, parsed: &Parsed) -> Option<String> {
    parsed
        .options
        .iter()
        .filter(|f| f.name == "-o" && !f.negated)
        .filter_map(|f| f.value)
        .find(|v| v.starts_with(['|', '!']))
        .map(|v| format!("-o {v} runs a command"))
}

/// Programs that replace an argument `@FILE` with the arguments FILE holds (GNU libiberty's
/// `expandargv`: gcc, binutils; the JDK's launchers; clang, rustc, .NET, 7-Zip's list files):
/// FILE is read, and the arguments it holds are on no command line a rule sees. Sorted
/// (searched by bisection; a test checks the order).
pub const ARGUMENT_FILES: &[&str] = &[
    "7z",
    "7za",
    "7zr",
    "addr2line",
    "ar",
    "as",
    "c++",
    "c++filt",
    "cc",
    "clang",
    "clang++",
    "clang-cl",
    "clang-cpp",
    "cpp",
    "csc",
    "dlltool",
    "dotnet",
    "elfedit",
    "g++",
    "gcc",
    "gccgo",
    "gdc",
    "gfortran",
    "gnat",
    "gold",
    "gprof",
    "jar",
    "jarsigner",
    "java",
    "javac",
    "javadoc",
    "javap",
    "jdeps",
    "jlink",
    "jpackage",
    "kotlinc",
    "ld",
    "ld.bfd",
    "ld.gold",
    "ld.lld",
    "lld",
    "mcs",
    "msbuild",
    "nm",
    "nvcc",
    "objcopy",
    "objdump",
    "ranlib",
    "readelf",
    "rustc",
    "scalac",
    "size",
    "strings",
    "strip",
    "swiftc",
    "wasm-ld",
    "windres",
];

/// An argument `@FILE` for a program that reads argument files ([`ARGUMENT_FILES`]), or for a
/// program no table knows (`known` false), which may: the arguments FILE holds are not
/// understood. A program with an option spec or a reader row is known not to read them (`npm
/// i @types/node`, `jq -r @csv`).
pub fn argument_file(command: &Command, known: bool) -> Option<String> {
    let word = command.argv[1..]
        .iter()
        .find(|w| w.len() > 1 && w.starts_with('@'))?;
    let name = command.basename();
    let trimmed = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
    let reads = [name, trimmed]
        .iter()
        .any(|n| ARGUMENT_FILES.binary_search(n).is_ok());
    if known && !reads {
        return None;
    }
    Some(if reads {
        format!(
            "{word}: {name} reads its arguments from {:?}; no rule sees them",
            &word[1..]
        )
    } else {
        format!(
            "{word}: a program no table knows may read its arguments from {:?}",
            &word[1..]
        )
    })
}

/// The files `@FILE` arguments name, for the programs [`argument_file`] says read them.
pub fn argument_file_paths(command: &Command, known: bool) -> Vec<String> {
    if argument_file(command, known).is_none() {
        return Vec::new();
    }
    command.words[1..]
        .iter()
        .filter(|w| w.text.len() > 1 && w.text.starts_with('@'))
        .flat_map(|w| w.expanded_texts())
        .filter_map(|t| t.strip_prefix('@'))
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `script [FILE]`: writes a typescript, to `typescript` when no file is named.
pub fn script_log(command: &Command, parsed: &Parsed) -> Option<String> {
    let file = parsed
        .operands
        .first()
        .map_or("typescript", |&i| command.argv[i + 1].as_str());
    let log = ["-I", "-O", "-B", "-T"]
        .iter()
        .find_map(|o| parsed.get(o).and_then(|f| f.value));
    match log {
        Some(l) if l != "/dev/null" => Some(format!("writes the log file {l:?}")),
        _ if file == "/dev/null" => None,
        _ => Some(format!("writes the typescript {file:?}")),
    }
}

/// `tar -x -P`: absolute names (and `--transform`) write wherever the archive says.
pub fn tar_absolute(_: &Command, parsed: &Parsed) -> Option<String> {
    (parsed.has("-x") && parsed.has("-P"))
        .then(|| "-x with -P writes to the absolute paths the archive holds".to_owned())
}

/// The files or folders a command writes through its options: each option with the role
/// [`Role::Writes`](super::spec::Role::Writes) (`sort -o F`, `tar -g F`), the archive `tar` creates or updates (`-cf F`),
/// and the folder it extracts into (`-x -C D`). They are judged as paths the call changes,
/// resolved and confined (a `-f` that is a symbolic link to a file outside the workspace writes
/// there). A value in a word of its own is taken as bash expands it: `-f ~/x.tar` writes in
/// the home folder (bash expands that `~`, not the one in `-f~/x.tar` or `--file=~/x.tar`,
/// which stays text and is judged as written). A value decided at run time is left to the
/// option's hazard, and a device (`-o /dev/null`) too, as before.
pub fn written_paths(command: &Command, parsed: &Parsed) -> Vec<String> {
    use super::spec::{Found, Role};
    let words = &command.words[1..];
    let values = |f: &Found| -> Vec<String> {
        match (f.value, f.value_at) {
            (Some(v), None) => vec![v.to_owned()],
            (Some(_), Some(at)) => words[at]
                .expanded_texts()
                .into_iter()
                .map(str::to_owned)
                .collect(),
            (None, _) => Vec::new(),
        }
    };
    let mut out: Vec<String> = parsed
        .options
        .iter()
        .filter(|f| f.role() == Role::Writes)
        .flat_map(values)
        .filter(|v| !v.is_empty() && v != "-" && !crate::walk::is_device(v))
        .collect();
    if matches!(command.basename(), "tar" | "gtar") {
        let creates = parsed.has_any(&["-c", "-r", "-u", "-A", "--delete"]);
        if creates && let Some(f) = parsed.get("-f") {
            out.extend(
                values(f)
                    .into_iter()
                    .filter(|v| v != "-" && !v.starts_with("/dev/")),
            );
        }
        if parsed.has("-x")
            && let Some(f) = parsed.get("-C")
        {
            out.extend(values(f));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_argument_file_table_is_sorted() {
        assert!(ARGUMENT_FILES.windows(2).all(|w| w[0] < w[1]));
    }
}
