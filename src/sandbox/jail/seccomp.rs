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
    const LD_W_ABS: u16 = 0x20;
    const JGE_K: u16 = 0x35;
    const RET_K: u16 = 0x06;
    const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
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

/// Turns the clone3 filter into a prefix: its "allow" returns become jumps past its end, so the
/// main filter runs next.
fn enosys_first(program: BpfProgram) -> BpfProgram {
    const RET_K: u16 = 0x06;
    const JA: u16 = 0x05;
    const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
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
/// alone.
pub fn works() -> bool {
    let Ok(program) = program(false, false) else {
        return false;
    };
    std::thread::spawn(move || seccompiler::apply_filter(&program).is_ok())
        .join()
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_compiles_with_and_without_udp() {
        assert!(program(false, false).unwrap().len() > 40);
        assert!(program(true, false).is_ok());
        let with_metadata = program(false, true).unwrap().len();
        assert!(with_metadata > program(false, false).unwrap().len());
    }
}
