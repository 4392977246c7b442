//! Build facts for `reasonix --version`: the commit the binary was built from and the build
//! profile. Without git (a tarball, a vendored copy) the commit is `unknown`, or whatever
//! `REASONIX_COMMIT` says; the build never fails for want of it.
//!
//! Also how the binary is linked on Linux with glibc: its relative relocations packed
//! (`-z pack-relative-relocs`, DT_RELR). The executable stays position-independent (address-space
//! randomization kept), but the dynamic linker reads a 30 KB table instead of 1.8 MB of RELA
//! entries at every start: −2.5 MB of peak memory for a one-call check (issue 12, README's
//! Speed section). It needs GNU ld ≥ 2.38 or lld ≥ 15 to link and glibc ≥ 2.36 to run;
//! `REASONIX_PACK_RELOCS=0` links without it, for an older system.
//!
//! And, in a release build for x86_64 Linux with glibc (where rustc links with its own LLD),
//! the functions a one-call check runs are laid out together at the start of the code
//! (`--symbol-ordering-file linker/startup.order`, written by `benches/startup-order.sh`): the
//! kernel maps code around each page first run, so the same work spread over 18 MB of code
//! cost 7.6 MB more peak memory (README's Speed section). Names the file lists that the binary
//! no longer defines are skipped; only the layout changes, never the code.
//! `REASONIX_LINK_ORDER=0` links without it (a linker other than LLD does not know the option).
//!
//! And, on Linux with glibc, the unwinder (`_Unwind_*`, what a panic and a backtrace use) linked
//! in from GCC's static `libgcc_eh.a` rather than loaded from `libgcc_s.so.1` at every start: the
//! dynamic linker then maps one library fewer, and libgcc_s's constructor no longer asks the CPU
//! for its features (a trapped `cpuid` on a virtual machine). −0.15 ms a process on the 2-core
//! machine of `docs/speed.md` (issue 30). Panics unwind as before (the Claude hook's panic
//! becomes exit 2). `REASONIX_STATIC_UNWIND=0` links libgcc_s as rustc does by default.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=REASONIX_COMMIT");
    let commit = std::env::var("REASONIX_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(git_commit)
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=REASONIX_COMMIT={}", commit.trim());
    let profile = std::env::var("PROFILE").unwrap_or_else(|_| "unknown".to_owned());
    println!("cargo:rustc-env=REASONIX_PROFILE={profile}");
    println!("cargo:rerun-if-env-changed=REASONIX_PACK_RELOCS");
    let linux_gnu = std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
        && std::env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu");
    if linux_gnu && std::env::var("REASONIX_PACK_RELOCS").as_deref() != Ok("0") {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    println!("cargo:rerun-if-env-changed=REASONIX_STATIC_UNWIND");
    if linux_gnu && std::env::var("REASONIX_STATIC_UNWIND").as_deref() != Ok("0") {
        // Whole: the unwinder's objects are in before std's `-lgcc_s` is reached, so that
        // (linked as needed) it is not needed.
        println!("cargo:rustc-link-lib=static:-bundle,+whole-archive=gcc_eh");
    }
    println!("cargo:rerun-if-env-changed=REASONIX_LINK_ORDER");
    println!("cargo:rerun-if-changed=linker/startup.order");
    let x86_64 = std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("x86_64");
    if linux_gnu
        && x86_64
        && profile == "release"
        && std::env::var("REASONIX_LINK_ORDER").as_deref() != Ok("0")
    {
        // The folder cargo runs this script for, read when it runs: a script compiled once may
        // be reused for a checkout elsewhere (a worktree sharing the target folder), and a path
        // compiled into it would then name that checkout's order file.
        let root = std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default();
        let order = Path::new(&root).join("linker/startup.order");
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}

/// The short commit of HEAD, and the files whose change means a new commit (so that cargo runs
/// this again after a commit or a checkout). `None` when git or the repository is absent.
fn git_commit() -> Option<String> {
    let commit = git(&["rev-parse", "--short=12", "HEAD"])?;
    let mut watched = vec![git(&["rev-parse", "--git-path", "HEAD"])?];
    if let Some(branch) = git(&["rev-parse", "--symbolic-full-name", "HEAD"])
        && branch.starts_with("refs/")
    {
        watched.extend(git(&["rev-parse", "--git-path", &branch]));
    }
    watched.extend(git(&["rev-parse", "--git-path", "packed-refs"]));
    for file in watched {
        // A path that does not exist would make cargo run this script on every build.
        if Path::new(&file).exists() {
            println!("cargo:rerun-if-changed={file}");
        }
    }
    Some(commit)
}

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}
