//! Capabilities: how a child loses them between fork and exec ([`CapDrop`], decided with the
//! plan), and the raw `capset`/`prctl` calls that do it.

/// How a child loses its capabilities between fork and exec, decided with the plan (before any
/// fork) from whether Reasonix holds `CAP_SETPCAP`, so that the plan's words and the hook are one
/// decision.
///
/// Either way the permitted, effective and inheritable sets are emptied with `capset` (which
/// empties the ambient set too): lowering one's own sets is always permitted. Uid 0 without any
/// capability is an ordinary user for every check but file ownership. (Landlock itself lets a
/// process with `CAP_SYS_PTRACE` read `/proc/<pid>/environ` of processes outside the sandbox;
/// without this, a root-run command could read Reasonix's own environment.) Exec cannot give a
/// capability back: `no_new_privs` (set before exec) limits what exec grants — to root, to a
/// setuid program, to file capabilities — to the permitted set the process already has, which
/// is empty.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::sandbox::jail) enum CapDrop {
    /// Reasonix holds `CAP_SETPCAP`: also drop every capability from 0 to `last` out of the
    /// bounding set, and lock `SECBIT_NOROOT` so that exec does not treat root as privileged.
    Full {
        /// The highest capability number (`/proc/sys/kernel/cap_last_cap`).
        last: u32,
    },
    /// It does not (the common case for a user other than root): the bounding set cannot be
    /// changed and stays as it is; the sets are still emptied.
    SetsOnly,
}

impl CapDrop {
    /// The drop a plan computed for `caps` applies.
    pub(in crate::sandbox::jail) fn for_capabilities(
        caps: &crate::sandbox::jail::Capabilities,
    ) -> CapDrop {
        if caps.cap_setpcap {
            CapDrop::Full {
                last: highest_capability(),
            }
        } else {
            CapDrop::SetsOnly
        }
    }

    /// The plan's words for it.
    pub(in crate::sandbox::jail) fn words(self, uid: u32) -> String {
        const BOUNDING_KEPT: &str =
            "the bounding set stays as it is (emptying it needs CAP_SETPCAP, which Reasonix lacks)";
        match (self, uid) {
            (CapDrop::Full { .. }, _) => "capabilities: the bounding, permitted, effective, inheritable and ambient sets are emptied and SECBIT_NOROOT is locked, so the process runs without any, root too".into(),
            (CapDrop::SetsOnly, 0) => format!("capabilities: the permitted, effective, inheritable and ambient sets are emptied, so root runs without any, and no_new_privs keeps exec from giving any back; {BOUNDING_KEPT}"),
            (CapDrop::SetsOnly, _) => format!("capabilities: the permitted, effective, inheritable and ambient sets are emptied, and no_new_privs keeps setuid programs and file capabilities from granting any; {BOUNDING_KEPT}"),
        }
    }
}

/// The highest capability number this kernel knows, read before any fork from
/// `/proc/sys/kernel/cap_last_cap`. If it cannot be read: 63 (the most a capability set holds),
/// and the hook stops at the first number the kernel calls invalid.
pub(super) fn highest_capability() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .filter(|n| *n < 64)
        .unwrap_or(63)
}

/// Applies a [`CapDrop`]. Called between fork and exec: system calls only, on the stack
/// (`io::Error::last_os_error` holds a raw code and does not allocate). With
/// [`CapDrop::Full`] every step must succeed — the plan promised them — and the bounding set
/// and the securebits go first, while `CAP_SETPCAP` is still effective.
pub(super) fn drop_capabilities(how: CapDrop) -> std::io::Result<()> {
    use nix::libc;
    const SECBIT_NOROOT: libc::c_ulong = 1 << 0;
    const SECBIT_NOROOT_LOCKED: libc::c_ulong = 1 << 1;
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    if let CapDrop::Full { last } = how {
        for cap in 0..=last {
            // SAFETY: prctl with integer arguments only; no memory is passed to the kernel.
            let rc = unsafe {
                libc::prctl(
                    libc::PR_CAPBSET_DROP,
                    libc::c_ulong::from(cap),
                    0 as libc::c_ulong,
                    0 as libc::c_ulong,
                    0 as libc::c_ulong,
                )
            };
            if rc != 0 {
                let err = std::io::Error::last_os_error();
                // Past the kernel's last capability (only when `last` is the fallback 63).
                if cap > 0 && err.raw_os_error() == Some(libc::EINVAL) {
                    break;
                }
                return Err(err);
            }
        }
        // SAFETY: prctl with integer arguments only; no memory is passed to the kernel.
        let bits = unsafe {
            libc::prctl(
                libc::PR_GET_SECUREBITS,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
            )
        };
        if bits < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // Keep the bits already set (a locked one cannot be cleared), add ours.
        let bits = bits as libc::c_ulong | SECBIT_NOROOT | SECBIT_NOROOT_LOCKED;
        // SAFETY: prctl with integer arguments only; no memory is passed to the kernel.
        let rc = unsafe {
            libc::prctl(
                libc::PR_SET_SECUREBITS,
                bits,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
            )
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    let mut header = Header {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let data = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: `header` and `data` are live, properly laid out (`struct __user_cap_header_struct`
    // and two `struct __user_cap_data_struct`, as _LINUX_CAPABILITY_VERSION_3 requires) for the
    // duration of the call; the kernel reads `data` and may write `header.version`.
    let rc = unsafe { libc::syscall(libc::SYS_capset, &mut header as *mut Header, data.as_ptr()) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
