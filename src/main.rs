//! The `reasonix` binary: the command line over the library's gate.

#![forbid(unsafe_code)]

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
