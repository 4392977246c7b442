//! The builtins that assign variables from their operands or their input: which argument names
//! the variable each one fills. The pre-pass ([`scope`](super::scope)) and the walk both read
//! them from here, so that a `read` target is the same variable to both.

/// Builtins whose arguments name variables they assign or declare.
pub(super) const ASSIGNING: &[&str] = &[
    "read",
    "mapfile",
    "readarray",
    "getopts",
    "let",
    "declare",
    "typeset",
    "local",
    "export",
    "readonly",
    "unset",
    "printf",
    "eval",
    "wait",
];

/// The builtins [`filled`] knows.
pub(super) const FILLING: &[&str] = &["read", "mapfile", "readarray", "printf", "getopts", "wait"];

/// For a builtin that fills variables with text from outside the script (`read`, `mapfile`,
/// `readarray`, `printf -v`, `getopts`): the index in `args` (the words after the name) of each
/// word that names such a variable, and the name (the part after an option letter when the
/// name is glued to it: `-aNAME`). `read` with no name fills `REPLY`, `mapfile` `MAPFILE`.
pub(super) fn filled(builtin: &str, args: &[&str]) -> Vec<(Option<usize>, String)> {
    let mut out = Vec::new();
    match builtin {
        "read" | "mapfile" | "readarray" => {
            // Options that take a value; for `read`, `-a` takes the array it fills.
            let valued = if builtin == "read" {
                "adinNptu"
            } else {
                "dnOsuCc"
            };
            let mut operands = false;
            let mut i = 0;
            while i < args.len() {
                let w = args[i];
                i += 1;
                if !operands && w == "--" {
                    operands = true;
                    continue;
                }
                if operands || !w.starts_with('-') || w == "-" {
                    operands = true;
                    out.push((Some(i - 1), w.to_owned()));
                    continue;
                }
                // A cluster: the first letter that takes a value takes the rest, or the next
                // word.
                for (at, letter) in w.char_indices().skip(1) {
                    if !valued.contains(letter) {
                        continue;
                    }
                    let glued = &w[at + letter.len_utf8()..];
                    let value = if glued.is_empty() {
                        i += 1;
                        args.get(i - 1).map(|v| (Some(i - 1), (*v).to_owned()))
                    } else {
                        Some((Some(i - 1), glued.to_owned()))
                    };
                    if letter == 'a' && builtin == "read" {
                        out.extend(value);
                    }
                    break;
                }
            }
            if out.is_empty() {
                let implicit = if builtin == "read" {
                    "REPLY"
                } else {
                    "MAPFILE"
                };
                out.push((None, implicit.to_owned()));
            }
        }
        "wait" => {
            // `wait -p NAME`: NAME gets the id of the job that ended.
            let mut i = 0;
            while i < args.len() {
                let w = args[i];
                i += 1;
                if w == "--" || !w.starts_with('-') {
                    break;
                }
                if let Some(at) = w.find('p') {
                    let glued = &w[at + 1..];
                    if glued.is_empty() {
                        if let Some(name) = args.get(i) {
                            out.push((Some(i), (*name).to_owned()));
                        }
                        i += 1;
                    } else {
                        out.push((Some(i - 1), glued.to_owned()));
                    }
                }
            }
        }
        "printf" => {
            if let Some(at) = args.iter().position(|w| *w == "-v")
                && let Some(name) = args.get(at + 1)
            {
                out.push((Some(at + 1), (*name).to_owned()));
            } else if let Some((at, w)) = args
                .iter()
                .enumerate()
                .find(|(_, w)| w.starts_with("-v") && w.len() > 2)
            {
                out.push((Some(at), w[2..].to_owned()));
            }
        }
        "getopts" => {
            let operands: Vec<usize> = (0..args.len())
                .filter(|&i| !args[i].starts_with('-'))
                .collect();
            if let Some(&at) = operands.get(1) {
                out.push((Some(at), args[at].to_owned()));
            }
            out.push((None, "OPTARG".to_owned()));
        }
        _ => {}
    }
    out
}

/// The variable a name operand assigns: `a` for `a` and `a[i]`.
pub(super) fn base(name: &str) -> &str {
    name.split(['[', '=', '+']).next().unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(builtin: &str, args: &[&str]) -> Vec<String> {
        filled(builtin, args).into_iter().map(|(_, n)| n).collect()
    }

    #[test]
    fn read_fills_its_operands_and_its_array() {
        assert_eq!(names("read", &["-r", "a", "b"]), ["a", "b"]);
        assert_eq!(names("read", &["-ra", "arr"]), ["arr"]);
        assert_eq!(names("read", &["-a", "arr", "-p", "x"]), ["arr"]);
        assert_eq!(names("read", &["-p", "prompt: ", "x"]), ["x"]);
        assert_eq!(names("read", &["-r"]), ["REPLY"]);
        assert_eq!(names("read", &["-aarr"]), ["arr"]);
    }

    #[test]
    fn mapfile_printf_and_getopts_fill_their_variable() {
        assert_eq!(names("mapfile", &["-t", "lines"]), ["lines"]);
        assert_eq!(names("readarray", &["-n", "5", "x"]), ["x"]);
        assert_eq!(names("mapfile", &[]), ["MAPFILE"]);
        assert_eq!(names("printf", &["-v", "out", "%s", "x"]), ["out"]);
        assert_eq!(names("printf", &["%s", "x"]), Vec::<String>::new());
        assert_eq!(names("getopts", &["ab:", "opt"]), ["opt", "OPTARG"]);
        assert_eq!(names("wait", &["-n", "-p", "id"]), ["id"]);
        assert_eq!(names("wait", &["-np", "id", "%1"]), ["id"]);
        assert_eq!(names("wait", &["%1"]), Vec::<String>::new());
    }
}
