//! A run's network namespace: nothing in it but `lo`, and on `lo` the egress proxy's listening
//! socket (`crate::egress`).
//!
//! The namespace is made before the fork, by a short-lived thread of Reasonix: it leaves the
//! host's network namespace (`unshare(CLONE_NEWNET)` applies to the calling thread only), brings
//! `lo` up, binds `127.0.0.1:PORT` and opens its namespace as a descriptor, then ends — so no
//! thread of Reasonix stays in it. The listening socket stays in the new namespace, while
//! `accept` and the proxy's outgoing connections are made by Reasonix in the host's namespace.
//! Between fork and exec the child joins the namespace through the descriptor
//! ([`enter`], before it clones into its mount and PID namespaces), so every process of the run
//! has no route anywhere but to the proxy: a connection that ignores `HTTP_PROXY` finds no
//! network to reach.
//!
//! It needs `CAP_SYS_ADMIN` in the host's user namespace (root): a thread cannot make a user
//! namespace of its own in a process with several threads, so a Reasonix run by another user
//! has no network namespace, and the plan says so.

use std::fs::File;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use nix::libc;

/// A network namespace with `lo` up and a socket listening in it.
#[derive(Debug)]
pub(crate) struct NetNs {
    /// The namespace (`/proc/thread-self/ns/net` of the thread that made it).
    pub fd: OwnedFd,
    /// Listening on `127.0.0.1:port` inside it.
    pub listener: TcpListener,
}

/// Makes a network namespace with `lo` up and a listener on `127.0.0.1:port` (0: any port).
pub(crate) fn make(port: u16) -> io::Result<NetNs> {
    std::thread::Builder::new()
        .name("reasonix-netns".into())
        .spawn(move || -> io::Result<NetNs> {
            // SAFETY: unshare takes an integer flag; CLONE_NEWNET moves only this thread, which
            // ends below, into a new network namespace.
            if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                return Err(io::Error::last_os_error());
            }
            loopback_up()?;
            let fd: OwnedFd = File::open("/proc/thread-self/ns/net")?.into();
            let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))?;
            Ok(NetNs { fd, listener })
        })?
        .join()
        .map_err(|_| io::Error::other("the thread making the network namespace panicked"))?
}

/// Brings `lo` up in the calling thread's network namespace (`SIOCSIFFLAGS` with `IFF_UP`).
fn loopback_up() -> io::Result<()> {
    // SAFETY: socket with integer arguments; the descriptor is owned at once below.
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a descriptor just returned by socket and owned by nothing else.
    let sock = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw) };
    // SAFETY: ifreq is plain data; all zeroes is a valid value (an empty name, no flags).
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
        *dst = *src as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS reads the name and writes the flags of `req`, which lives for the
    // call; the descriptor is a socket of this thread's namespace.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS as _, &mut req) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the union's flags member was just written by SIOCGIFFLAGS.
    unsafe {
        req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
    }
    // SAFETY: as above; SIOCSIFFLAGS reads the name and the flags.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS as _, &req) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Joins the network namespace `fd` (between fork and exec: a system call, no allocation).
pub(crate) fn enter(fd: RawFd) -> io::Result<()> {
    // SAFETY: setns with a descriptor the child inherited and an integer flag.
    if unsafe { libc::setns(fd, libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether a network namespace can be made here (tried: made, `lo` up, a listener, dropped).
pub(crate) fn works() -> bool {
    make(0).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listener_lives_in_a_namespace_of_its_own() {
        if !works() {
            assert!(
                std::env::var_os("REASONIX_NO_SKIP").is_none(),
                "no network namespace can be made here"
            );
            eprintln!("SKIPPED: no network namespace can be made here");
            return;
        }
        let ns = make(0).unwrap();
        let addr = ns.listener.local_addr().unwrap();
        assert!(addr.ip().is_loopback());
        // From the host's namespace, nothing listens there: the socket is in the other one.
        assert!(std::net::TcpStream::connect(addr).is_err());
        let host = std::fs::read_link("/proc/self/ns/net").unwrap();
        let made = std::fs::read_link(format!("/proc/self/fd/{}", ns.fd.as_raw_fd())).unwrap();
        assert_ne!(host, made);
    }
}
