//! A subcommand whose flags clap defines only when the parser enters it ([`clap::Command::defer`]).
//!
//! With the derive API every subcommand's flags are defined on every start, though a process
//! parses one: 0.04–0.08 ms of a `reasonix check` or `sandbox exec` on the 2-core machine of
//! `docs/speed.md` (issue 30). [`Deferred`] wraps a subcommand's `Args` struct or its nested
//! `Subcommand` enum: the variant itself (its name and its one-line `about`, which the parent's
//! help lists) is defined as before, the flags beneath it when clap builds that command — to
//! parse it, to print its help or a usage error, or to write a completion script (which builds
//! them all). What is parsed, printed and refused is the same as without it: the
//! `the_command_line_is_the_same_with_its_subcommands_deferred` test compares, for every
//! command path, its help, short help, usage error and bare form with those of the whole tree;
//! a completion script is written from the whole tree.

use std::cell::Cell;

use clap::{ArgMatches, Args, Command, FromArgMatches, Subcommand};

thread_local! {
    /// Within [`everything_defined`]: every [`Deferred`] is defined at once, as the derive would.
    static EAGER: Cell<bool> = const { Cell::new(false) };
}

/// `make`'s commands defined whole, at once: for a completion script, which lists the `help`
/// subcommand's own tree (clap makes it from the subcommands defined when the parent is built)
/// and each command's flags in the derive's order.
pub fn everything_defined<R>(make: impl FnOnce() -> R) -> R {
    let before = EAGER.replace(true);
    let made = make();
    EAGER.set(before);
    made
}

/// `T`, defined by clap only when its command is built.
pub struct Deferred<T>(pub T);

/// `define` applied to `cmd` when clap builds it (now within [`everything_defined`]).
fn defined(cmd: Command, define: fn(Command) -> Command) -> Command {
    if EAGER.get() {
        define(cmd)
    } else {
        cmd.defer(define)
    }
}

/// `define` applied to `cmd`, keeping the `about` and `long_about` set on it before: the
/// variant's doc comment, which the derive sets after the flags when they are defined at once,
/// so that it wins over what a flattened struct's or a nested enum's doc comment sets.
fn keeping_about(cmd: Command, define: fn(Command) -> Command) -> Command {
    let about = cmd.get_about().cloned();
    let long = cmd.get_long_about().cloned();
    let cmd = define(cmd);
    match (about, long) {
        (Some(about), Some(long)) => cmd.about(about).long_about(long),
        (Some(about), None) => cmd.about(about).long_about(None::<&str>),
        (None, _) => cmd,
    }
}

fn args<T: Args>(cmd: Command) -> Command {
    keeping_about(cmd, T::augment_args)
}

fn args_for_update<T: Args>(cmd: Command) -> Command {
    keeping_about(cmd, T::augment_args_for_update)
}

fn subcommands<T: Subcommand>(cmd: Command) -> Command {
    keeping_about(cmd, T::augment_subcommands)
}

fn subcommands_for_update<T: Subcommand>(cmd: Command) -> Command {
    keeping_about(cmd, T::augment_subcommands_for_update)
}

impl<T: FromArgMatches> FromArgMatches for Deferred<T> {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches(matches).map(Deferred)
    }

    fn from_arg_matches_mut(matches: &mut ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches_mut(matches).map(Deferred)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches(matches)
    }

    fn update_from_arg_matches_mut(&mut self, matches: &mut ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches_mut(matches)
    }
}

impl<T: Args> Args for Deferred<T> {
    fn group_id() -> Option<clap::Id> {
        T::group_id()
    }

    fn augment_args(cmd: Command) -> Command {
        defined(cmd, args::<T>)
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        defined(cmd, args_for_update::<T>)
    }
}

impl<T: Subcommand> Subcommand for Deferred<T> {
    fn augment_subcommands(cmd: Command) -> Command {
        defined(cmd, subcommands::<T>)
    }

    fn augment_subcommands_for_update(cmd: Command) -> Command {
        defined(cmd, subcommands_for_update::<T>)
    }

    fn has_subcommand(name: &str) -> bool {
        T::has_subcommand(name)
    }
}
