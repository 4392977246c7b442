//! What a wrapper runs, recorded. [`wrappers::unwrap`] reads one command as a wrapper and
//! returns what it unwrapped; this side records it: the wrapper's flag, its hazards and
//! features, each inner command (an inner command of the wrapper, whose own wrappers are read
//! in turn) and each script (analysed one level deeper, its commands becoming inner commands of
//! the wrapper).

use super::{Walker, analyse};
use crate::word::Word;
use crate::wrappers::{self, Inner, Unwrapped};
use crate::{Assignment, Feature};

impl Walker<'_> {
    /// Reads the command at `index` as a wrapper, if it is one, recording what it runs.
    pub(super) fn unwrap(&mut self, index: usize) {
        let Unwrapped {
            transparent,
            inner,
            hazards,
            features,
        } = wrappers::unwrap(&self.out.commands[index], self.stdin.get(&index));
        self.out.commands[index].wrapper = transparent;
        for mut hazard in hazards {
            hazard.command = Some(index);
            self.out.hazards.push(hazard);
        }
        self.out.features.extend(features);
        for part in inner {
            match part {
                Inner::Command {
                    words,
                    assignments,
                    how,
                } => self.inner(index, words, assignments, &how),
                Inner::Script { text, how } => self.nested(index, &text, &how),
            }
        }
    }

    /// Analyses a script found inside a command (`bash -c`, `env -S`, `watch`): its commands
    /// become inner commands of `parent`.
    fn nested(&mut self, parent: usize, script: &str, how: &str) {
        self.out.features.insert(Feature::NestedShell);
        self.reread(Some(parent), script, how);
    }

    /// Analyses `script` one level deeper, in the context `how`, and records what it found:
    /// its commands become inner commands of `parent`, or commands of this level when there is
    /// none (a backtick body bash parses again, [`Walker::substitution`]).
    pub(super) fn reread(&mut self, parent: Option<usize>, script: &str, how: &str) {
        let mut context = self.context.clone();
        context.push(how.to_owned());
        // The shell that reads it: the one named (`sh -c`, `dash <<EOF`, `find -exec sh -c`),
        // `sh` for the programs that run their command with `sh -c`, and for a backtick body
        // the shell around it.
        let shell = parent.map(|p| self.out.commands[p].basename().to_owned());
        let posix = match shell.as_deref() {
            None => self.posix,
            Some("sh" | "dash" | "ash" | "posh" | "watch" | "flock" | "script") => true,
            Some("zsh" | "ksh" | "mksh" | "yash" | "ksh93" | "fish" | "csh" | "tcsh") => {
                // Read as bash for what it may run, and not understood.
                self.problem(format!(
                    "`{how}`: only bash and sh (dash) scripts are analysed"
                ));
                false
            }
            Some(_) => false,
        };
        let inner = analyse(script, self.depth + 1, self.levels, &context, posix);
        let offset = self.out.commands.len();
        for mut c in inner.commands {
            c.parent = c.parent.map(|p| p + offset).or(parent);
            self.out.commands.push(c);
        }
        for mut r in inner.redirects {
            r.command = r.command.map(|c| c + offset);
            self.out.redirects.push(r);
        }
        for mut h in inner.hazards {
            h.command = h.command.map(|c| c + offset);
            self.out.hazards.push(h);
        }
        self.out.features.extend(inner.features);
        for p in inner.problems {
            self.problem(format!("in `{how}`: {p}"));
        }
    }

    /// Records an inner command of `parent` (a wrapper's argv tail), then reads its wrappers.
    fn inner(&mut self, parent: usize, words: Vec<Word>, assignments: Vec<Assignment>, how: &str) {
        let mut context = self.context.clone();
        context.push(how.to_owned());
        let saved = std::mem::replace(&mut self.context, context);
        let index = self.push(words, assignments);
        self.context = saved;
        self.out.commands[index].parent = Some(parent);
        self.out.features.insert(Feature::Wrapper);
        // A builtin reached through `command` or `builtin` assigns and evaluates as it would
        // written alone.
        self.filled_variables(index);
        self.builtin_operands(index, false);
        self.exported(index);
        self.shell_state(index);
        // What the wrapper reads on stdin reaches what it runs (`timeout 5 bash <<EOF`), except
        // under xargs, which reads its stdin itself.
        if how != "xargs"
            && let Some(body) = self.stdin.get(&parent).cloned()
        {
            self.stdin.insert(index, body);
        }
        self.unwrap(index);
    }
}
