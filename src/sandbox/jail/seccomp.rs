//! The seccomp filter: refuses, with `EPERM`, what Landlock cannot cover. It is a deny list —
//! everything not named here is allowed, and Landlock and the limits confine the rest.
//!
//! | refused | why |
//! |---|---|
//! | sockets other than UNIX, TCP over IPv4/IPv6 (UDP, raw, SCTP, netlink, packet, vsock…) | Landlock filters TCP only (UDP rules need ABI 10); UDP is let through only when network rules exist, for DNS |
//! | `ptrace`, `process_vm_readv`, `process_vm_writev` | reading or steering other processes |
//! | `io_uring_*` | a second syscall interface that seccomp cannot see into |
//! | `bpf`, `perf_event_open`, `userfaultfd` | kernel attack surface |
//! | `mount` and the new mount API, `umount2`, `pivot_root` | changing what paths mean |
//! | `keyctl`, `add_key`, `request_key` | the kernel keyrings |
//! | `unshare`, `setns`, `clone` with `CLONE_NEWUSER`; `clone3` (refused with `ENOSYS` so libc falls back to `clone`, whose flags can be seen) | new namespaces, user namespaces above all |
//! | module loading, `kexec_*`, `reboot`, `swapon`/`swapoff`, `open_by_handle_at` | the machine itself |
//! | the x32 syscall ABI (numbers with bit 30 set, on x86_64) | a second syscall table a deny list would miss |
//! | only where a run has no mount namespace: the `chmod`, `chown` and `setxattr`/`removexattr` families, the `utime` family but for setting the times to now, `file_setattr`, and the `FS_IOC_SETFLAGS`/`FS_IOC_FSSETXATTR` ioctls | Landlock does not mediate metadata; a read-only mount does, but without one the filter cannot tell the write roots from the rest, so it refuses them everywhere |

use std::collections::BTreeMap;

use nix::libc::{self, c_long};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op,
    SeccompCondition as Cond, SeccompFilter, SeccompRule, TargetArch, sock_filter,
};

/// Classic BPF opcodes and seccomp return values for the few programs written here by hand
/// (`x32_guard`, `allow_unruled`, `enosys_first`, `works`): seccompiler builds only linear
/// chains of rules.
const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const JGE_K: u16 = 0x35;
const JA: u16 = 0x05;
const RET_K: u16 = 0x06;
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;

/// Syscalls refused whatever their arguments.
const REFUSED: &[i64] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_open_by_handle_at,
];

/// Syscalls that change a file's metadata (mode, owner, times, extended attributes, inode
/// flags), refused when a run has no mount namespace to make the rest of the tree read-only.
const METADATA: &[c_long] = &[
    libc::SYS_chmod,
    libc::SYS_fchmod,
    libc::SYS_fchmodat,
    libc::SYS_fchmodat2,
    libc::SYS_chown,
    libc::SYS_fchown,
    libc::SYS_lchown,
    libc::SYS_fchownat,
    libc::SYS_setxattr,
    libc::SYS_lsetxattr,
    libc::SYS_fsetxattr,
    libc::SYS_removexattr,
    libc::SYS_lremovexattr,
    libc::SYS_fremovexattr,
    SYS_SETXATTRAT,
    SYS_REMOVEXATTRAT,
    SYS_FILE_SETATTR,
];

/// The `utime` family, with the index of the argument that points to the new times: refused
/// unless it is null, which sets them to the current time (what `touch` does to a file it has
/// just created — refusing that would make `touch` fail everywhere).
const TIMES: &[(c_long, u8)] = &[
    (libc::SYS_utime, 1),
    (libc::SYS_utimes, 1),
    (libc::SYS_futimesat, 2),
    (libc::SYS_utimensat, 2),
];

/// `setxattrat(2)` (Linux 6.13), `removexattrat(2)` (6.13) and `file_setattr(2)` (6.17): numbers
/// shared by every architecture, not yet in the `libc` crate.
const SYS_SETXATTRAT: c_long = 463;
const SYS_REMOVEXATTRAT: c_long = 466;
const SYS_FILE_SETATTR: c_long = 469;

/// `ioctl` requests that change inode flags (`chattr`; the 32-bit spelling too) or the
/// attributes of `struct fsxattr`.
const FS_IOC_SETFLAGS: u64 = 0x4008_6602;
const FS_IOC32_SETFLAGS: u64 = 0x4004_6602;
const FS_IOC_FSSETXATTR: u64 = 0x401c_5820;

fn cond(arg: u8, op: Op, value: u64) -> Cond {
    // Arguments, operators and values here are constants; `new` only fails on an argument
    // index above 5.
    Cond::new(arg, Len::Dword, op, value).unwrap_or_else(|_| unreachable!("argument index {arg}"))
}

fn rule(conditions: Vec<Cond>) -> SeccompRule {
    SeccompRule::new(conditions).unwrap_or_else(|_| unreachable!("a rule with conditions"))
}

/// The socket rules: refuse every family but UNIX, IPv4 and IPv6, and every IP socket but a
/// TCP stream (and a UDP datagram when `udp` is allowed). Written as "not one of the allowed
/// type values" (the type carries `SOCK_NONBLOCK` and `SOCK_CLOEXEC` in high bits, so each kind
/// has four spellings) because a short filter loads faster in every child.
fn socket_rules(udp: bool) -> Vec<SeccompRule> {
    let (inet, inet6) = (libc::AF_INET as u64, libc::AF_INET6 as u64);
    let mut rules = vec![
        rule(vec![cond(0, Op::Eq, libc::AF_UNSPEC as u64)]),
        rule(vec![cond(0, Op::Gt, inet), cond(0, Op::Lt, inet6)]),
        rule(vec![cond(0, Op::Gt, inet6)]),
    ];
    let flags = [
        0,
        libc::SOCK_NONBLOCK,
        libc::SOCK_CLOEXEC,
        libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
    ];
    let mut kinds = vec![libc::SOCK_STREAM];
    let mut protocols = vec![0, libc::IPPROTO_TCP];
    if udp {
        kinds.push(libc::SOCK_DGRAM);
        protocols.push(libc::IPPROTO_UDP);
    }
    for family in [inet, inet6] {
        let mut not_a_kind = vec![cond(0, Op::Eq, family)];
        for kind in &kinds {
            for flag in flags {
                not_a_kind.push(cond(1, Op::Ne, (kind | flag) as u64));
            }
        }
        rules.push(rule(not_a_kind));
        let mut not_a_protocol = vec![cond(0, Op::Eq, family)];
        for protocol in &protocols {
            not_a_protocol.push(cond(2, Op::Ne, *protocol as u64));
        }
        rules.push(rule(not_a_protocol));
    }
    rules
}

/// Builds the filter. `udp` lets UDP sockets through (for DNS when network rules exist);
/// `metadata` refuses the calls that change a file's metadata (for a run without a mount
/// namespace).
pub fn program(udp: bool, metadata: bool) -> Result<BpfProgram, seccompiler::BackendError> {
    build(udp, metadata, true)
}

/// [`program`], with or without the prefix that allows unruled calls at once
/// ([`allow_unruled`]; without: for the test that holds the two to the same verdicts).
fn build(udp: bool, metadata: bool, fast: bool) -> Result<BpfProgram, seccompiler::BackendError> {
    let eperm = SeccompAction::Errno(libc::EPERM as u32);
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        REFUSED.iter().map(|&nr| (nr, Vec::new())).collect();
    if metadata {
        rules.extend(METADATA.iter().map(|&nr| (nr, Vec::new())));
        for &(nr, times) in TIMES {
            let set = Cond::new(times, Len::Qword, Op::Ne, 0)
                .unwrap_or_else(|_| unreachable!("argument index {times}"));
            rules.insert(nr, vec![rule(vec![set])]);
        }
        rules.insert(
            libc::SYS_ioctl,
            [FS_IOC_SETFLAGS, FS_IOC32_SETFLAGS, FS_IOC_FSSETXATTR]
                .map(|request| rule(vec![cond(1, Op::Eq, request)]))
                .to_vec(),
        );
    }
    rules.insert(libc::SYS_socket, socket_rules(udp));
    rules.insert(
        libc::SYS_clone,
        vec![rule(vec![cond(
            0,
            Op::MaskedEq(libc::CLONE_NEWUSER as u64),
            libc::CLONE_NEWUSER as u64,
        )])],
    );
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|_| seccompiler::BackendError::InvalidTargetArch(std::env::consts::ARCH.into()))?;
    let ruled: Vec<u32> = rules
        .keys()
        .filter_map(|&nr| u32::try_from(nr).ok())
        .collect();
    let refuse = SeccompFilter::new(rules, SeccompAction::Allow, eperm, arch)?;
    let mut program: BpfProgram = refuse.try_into()?;

    // clone3 takes its flags in a struct the filter cannot read: refuse it with ENOSYS, so that
    // libc falls back to clone, whose flags the rule above sees.
    let enosys = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )?;
    let enosys: BpfProgram = enosys.try_into()?;
    let mut combined = x32_guard();
    if fast {
        combined.extend(allow_unruled(&ruled));
    }
    combined.append(&mut program);
    // Both programs are whole filters; only the first one's verdict counts, so clone3 goes
    // first as a separate check.
    let mut out = enosys_first(enosys);
    out.append(&mut combined);
    Ok(out)
}

/// On x86_64, refuse every syscall number with the x32 bit (0x40000000) set, before anything
/// else looks at the number.
fn x32_guard() -> BpfProgram {
    if std::env::consts::ARCH != "x86_64" {
        return Vec::new();
    }
    vec![
        // A = seccomp_data.nr
        sock_filter {
            code: LD_W_ABS,
            jt: 0,
            jf: 0,
            k: 0,
        },
        // if A >= 0x40000000 then next else skip one
        sock_filter {
            code: JGE_K,
            jt: 0,
            jf: 1,
            k: 0x4000_0000,
        },
        sock_filter {
            code: RET_K,
            jt: 0,
            jf: 0,
            k: SECCOMP_RET_ERRNO | libc::EPERM as u32,
        },
    ]
}

/// A prefix that allows at once every syscall number the main filter has no rule for, and
/// lets the others through to it: a binary search over the sorted numbers of `ruled`.
///
/// The main filter (seccompiler's) compares the number with each ruled syscall in turn, so an
/// allowed call walks all of them. The kernel walks the filter that way once for every syscall
/// number when the filter is installed, to cache which ones it always allows
/// (`seccomp_cache_prepare`, with interrupts off): that was half of the install's cost, in the
/// spawn path of every run. Through this prefix, an unruled number reaches `RET ALLOW` in about
/// ten steps. The arch and x32 checks come before it. Empty where the search would not fit the
/// 8-bit jumps of classic BPF (it does by far for the ~45 numbers ruled here).
fn allow_unruled(ruled: &[u32]) -> BpfProgram {
    /// Numbers a leaf compares one by one.
    const LEAF: usize = 3;
    /// The code for `nrs` (sorted); jumps to the main filter are recorded in `to_filter`.
    fn search(nrs: &[u32], out: &mut BpfProgram, to_filter: &mut Vec<usize>) {
        if nrs.len() <= LEAF {
            for &nr in nrs {
                to_filter.push(out.len());
                out.push(sock_filter {
                    code: JEQ_K,
                    jt: 0,
                    jf: 0,
                    k: nr,
                });
            }
            out.push(sock_filter {
                code: RET_K,
                jt: 0,
                jf: 0,
                k: SECCOMP_RET_ALLOW,
            });
            return;
        }
        let (low, high) = nrs.split_at(nrs.len() / 2);
        let branch = out.len();
        // if nr >= high[0]: the high half (jt, set below); else the low half, next.
        out.push(sock_filter {
            code: JGE_K,
            jt: 0,
            jf: 0,
            k: high[0],
        });
        search(low, out, to_filter);
        // Cannot fit only where the whole prefix is too long, which `allow_unruled` discards.
        out[branch].jt = u8::try_from(out.len() - branch - 1).unwrap_or(u8::MAX);
        search(high, out, to_filter);
    }
    let mut sorted = ruled.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out = vec![sock_filter {
        code: LD_W_ABS,
        jt: 0,
        jf: 0,
        k: 0, // seccomp_data.nr
    }];
    let mut to_filter = Vec::new();
    search(&sorted, &mut out, &mut to_filter);
    // Every jump, to the main filter right after the prefix, must fit in 8 bits.
    let end = out.len();
    if end > usize::from(u8::MAX) {
        return Vec::new();
    }
    for i in to_filter {
        out[i].jt = (end - i - 1) as u8;
    }
    out
}

/// Turns the clone3 filter into a prefix: its "allow" returns become jumps past its end, so the
/// main filter runs next.
fn enosys_first(program: BpfProgram) -> BpfProgram {
    let len = program.len();
    program
        .into_iter()
        .enumerate()
        .map(|(i, ins)| {
            if ins.code == RET_K && ins.k == SECCOMP_RET_ALLOW {
                // Jump to the instruction right after this program.
                sock_filter {
                    code: JA,
                    jt: 0,
                    jf: 0,
                    k: (len - i - 1) as u32,
                }
            } else {
                ins
            }
        })
        .collect()
}

/// Whether a filter can be installed here: tried on a throwaway thread, which it confines
/// alone, with a filter of one instruction that allows every call. That is what can be missing
/// (a kernel without seccomp filters, a confinement that refuses `seccomp` itself); the kernel's
/// cost of a filter grows with its length, and a run's own program that cannot be built refuses
/// or is listed by its plan, one that cannot be loaded fails its run's start (issue 12: the
/// trial loaded the whole program, compiled twice per process).
pub fn works() -> bool {
    let allow: BpfProgram = vec![sock_filter {
        code: RET_K,
        jt: 0,
        jf: 0,
        k: SECCOMP_RET_ALLOW,
    }];
    std::thread::spawn(move || seccompiler::apply_filter(&allow).is_ok())
        .join()
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a classic-BPF program of the instructions these filters use over one call's
    /// `seccomp_data` (little-endian): its verdict and how many instructions it took.
    fn verdict(program: &[sock_filter], arch: u32, nr: u32, args: [u64; 6]) -> (u32, usize) {
        let word = |offset: u32| -> u32 {
            match offset {
                0 => nr,
                4 => arch,
                16..=63 => {
                    let arg = args[((offset - 16) / 8) as usize];
                    if (offset - 16).is_multiple_of(8) {
                        arg as u32
                    } else {
                        (arg >> 32) as u32
                    }
                }
                _ => panic!("load at {offset}"),
            }
        };
        let (mut a, mut pc, mut steps) = (0u32, 0usize, 0usize);
        loop {
            let ins = &program[pc];
            steps += 1;
            let jump = |taken: bool| 1 + usize::from(if taken { ins.jt } else { ins.jf });
            pc += match ins.code {
                0x20 => {
                    a = word(ins.k);
                    1
                }
                0x54 => {
                    a &= ins.k;
                    1
                }
                0x05 => 1 + ins.k as usize,
                0x15 => jump(a == ins.k),
                0x25 => jump(a > ins.k),
                0x35 => jump(a >= ins.k),
                0x06 => return (ins.k, steps),
                code => panic!("opcode {code:#x} at {pc}"),
            };
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_prefix_that_allows_unruled_calls_changes_no_verdict_and_shortens_their_walk() {
        const X86_64: u32 = 0xc000_003e;
        const I386: u32 = 0x4000_0003;
        let (inet, inet6) = (libc::AF_INET as u64, libc::AF_INET6 as u64);
        let args: Vec<[u64; 6]> = vec![
            [0; 6],
            [inet, libc::SOCK_DGRAM as u64, 0, 0, 0, 0],
            [
                inet,
                libc::SOCK_STREAM as u64,
                libc::IPPROTO_TCP as u64,
                0,
                0,
                0,
            ],
            [
                inet6,
                (libc::SOCK_STREAM | libc::SOCK_CLOEXEC) as u64,
                0,
                0,
                0,
                0,
            ],
            [inet6, libc::SOCK_RAW as u64, 0, 0, 0, 0],
            [libc::AF_NETLINK as u64, 3, 0, 0, 0, 0],
            [libc::AF_UNIX as u64, libc::SOCK_STREAM as u64, 0, 0, 0, 0],
            [(libc::CLONE_NEWUSER | libc::SIGCHLD) as u64, 0, 0, 0, 0, 0],
            [3, FS_IOC_SETFLAGS, 0, 0, 0, 0],
            [3, FS_IOC_FSSETXATTR, 1, 0, 0, 0],
            [0, 1, 1, 0, 0, 0],
            [u64::MAX; 6],
        ];
        let numbers: Vec<u32> = (0..=600)
            .chain([0x4000_0000, 0x4000_003b, 0x4000_0200, u32::MAX])
            .collect();
        for (udp, metadata) in [(false, false), (true, false), (false, true), (true, true)] {
            let fast = build(udp, metadata, true).unwrap();
            let slow = build(udp, metadata, false).unwrap();
            assert!(fast.len() > slow.len());
            for arch in [X86_64, I386, 0] {
                for &nr in &numbers {
                    for a in &args {
                        assert_eq!(
                            verdict(&fast, arch, nr, *a).0,
                            verdict(&slow, arch, nr, *a).0,
                            "udp {udp}, metadata {metadata}, arch {arch:#x}, nr {nr}, {a:?}"
                        );
                    }
                }
            }
            // The walk the kernel makes for each number when the filter is installed: with the
            // prefix, nearly every allowed number is allowed in a few steps.
            let quick = |p: &BpfProgram| {
                (0..=460)
                    .filter(|&nr| verdict(p, X86_64, nr, [0; 6]).0 == SECCOMP_RET_ALLOW)
                    .filter(|&nr| verdict(p, X86_64, nr, [0; 6]).1 <= 20)
                    .count()
            };
            assert!(quick(&fast) >= 380, "{}", quick(&fast));
            assert_eq!(quick(&slow), 0);
        }
    }

    #[test]
    fn the_filter_compiles_with_and_without_udp() {
        assert!(program(false, false).unwrap().len() > 40);
        assert!(program(true, false).is_ok());
        let with_metadata = program(false, true).unwrap().len();
        assert!(with_metadata > program(false, false).unwrap().len());
    }
}
