//! Which resolved addresses the egress proxy refuses unless a `sandbox.network` entry names
//! the address itself: the host's own networks and the cloud metadata services. A name that
//! resolves into one of them (`localhost`, a DNS-rebinding name, `metadata.google.internal`)
//! would otherwise let an allowed host name reach the machine or its neighbours.
//!
//! The ranges are data ([`SPECIAL`]), each row tested below: every range IANA's special-purpose
//! registries mark as not globally reachable (documentation and benchmarking ranges included),
//! the cloud metadata addresses, and the addresses whose IPv4 address is embedded (6to4, NAT64)
//! judged as that address. Beside them, the host's own interface addresses ([`own_addresses`],
//! read again for each connection, so a changed or added address counts at once): a service
//! bound to `0.0.0.0` answers on each of them, whatever range they are in (issue 28).

use std::net::IpAddr;

use ipnet::IpNet;

/// The refused ranges, with what each is. IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`) are
/// judged as the IPv4 address they carry.
pub const SPECIAL: &[(&str, &str)] = &[
    ("0.0.0.0/8", "this-network address"),
    ("10.0.0.0/8", "private address"),
    ("100.64.0.0/10", "shared (carrier-grade NAT) address"),
    ("127.0.0.0/8", "loopback address"),
    (
        "169.254.0.0/16",
        "link-local address (cloud metadata lives at 169.254.169.254)",
    ),
    ("172.16.0.0/12", "private address"),
    (
        "192.0.0.0/24",
        "IETF protocol assignment (some clouds' metadata)",
    ),
    ("192.0.2.0/24", "documentation address (TEST-NET-1)"),
    ("192.88.99.0/24", "deprecated 6to4 relay anycast address"),
    ("192.168.0.0/16", "private address"),
    ("198.18.0.0/15", "benchmarking address"),
    ("198.51.100.0/24", "documentation address (TEST-NET-2)"),
    ("203.0.113.0/24", "documentation address (TEST-NET-3)"),
    ("224.0.0.0/4", "multicast address"),
    ("240.0.0.0/4", "reserved address (broadcast included)"),
    ("::/128", "unspecified address"),
    ("::1/128", "loopback address"),
    ("100::/64", "discard-only address"),
    (
        "2001::/23",
        "IETF protocol assignment (Teredo, benchmarking, ORCHIDs)",
    ),
    ("2001:db8::/32", "documentation address"),
    ("3fff::/20", "documentation address"),
    ("5f00::/16", "segment routing (SRv6) address"),
    ("fec0::/10", "site-local address (deprecated)"),
    ("64:ff9b:1::/48", "local-use IPv4/IPv6 translation address"),
    ("fc00::/7", "unique local (private) address"),
    ("fd00:ec2::254/128", "cloud metadata address"),
    ("fe80::/10", "link-local address"),
    ("ff00::/8", "multicast address"),
];

/// The IPv4 address an IPv6 address carries and reaches: IPv4-mapped (`::ffff:a.b.c.d`), 6to4
/// (`2002:AABB:CCDD::/16`), NAT64 (`64:ff9b::/96`) and IPv4-compatible (`::a.b.c.d`).
fn embedded_v4(v6: std::net::Ipv6Addr) -> Option<std::net::Ipv4Addr> {
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = v6.segments();
    let v4 = |hi: u16, lo: u16| {
        let [a, b] = hi.to_be_bytes();
        let [c, d] = lo.to_be_bytes();
        std::net::Ipv4Addr::new(a, b, c, d)
    };
    match s {
        [0x2002, hi, lo, ..] => Some(v4(hi, lo)),
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(v4(hi, lo)),
        // IPv4-compatible (deprecated), but not `::` and `::1`, rows of their own.
        [0, 0, 0, 0, 0, 0, hi, lo] if hi != 0 => Some(v4(hi, lo)),
        _ => None,
    }
}

/// The address as a connection to it is judged: an IPv6 address that carries an IPv4 address
/// ([`embedded_v4`]) is that IPv4 address.
pub fn judged_as(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => embedded_v4(v6).map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// This machine's own interface addresses, read now (`getifaddrs`): each is the host itself,
/// whatever range it lies in.
pub fn own_addresses() -> Vec<IpAddr> {
    let Ok(all) = nix::ifaddrs::getifaddrs() else {
        return Vec::new();
    };
    let mut own: Vec<IpAddr> = all
        .filter_map(|a| {
            let addr = a.address?;
            if let Some(v4) = addr.as_sockaddr_in() {
                return Some(IpAddr::V4(v4.ip()));
            }
            addr.as_sockaddr_in6().map(|v6| IpAddr::V6(v6.ip()))
        })
        .map(judged_as)
        .collect();
    own.sort();
    own.dedup();
    own
}

/// Why a connection to `ip` is refused unless an entry names the address: a refused range
/// ([`special`]), or one of `own` (the host's own addresses, [`own_addresses`]).
pub fn refused(ip: IpAddr, own: &[IpAddr]) -> Option<&'static str> {
    special(ip).or_else(|| {
        own.contains(&judged_as(ip))
            .then_some("address of this host's own (a service bound to 0.0.0.0 answers there)")
    })
}

/// What `ip` is when it lies in a refused range, e.g. `"loopback address"`.
pub fn special(ip: IpAddr) -> Option<&'static str> {
    let ip = judged_as(ip);
    // The metadata row is more specific than the private one it lies in: the longest prefix wins.
    SPECIAL
        .iter()
        .filter_map(|(net, what)| {
            let net: IpNet = net.parse().ok()?;
            net.contains(&ip).then_some((net.prefix_len(), *what))
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, what)| what)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_parses_and_refuses_its_own_first_address() {
        for (net, what) in SPECIAL {
            let parsed: IpNet = net.parse().unwrap_or_else(|e| panic!("{net}: {e}"));
            assert_eq!(special(parsed.network()), Some(*what), "{net}");
        }
    }

    #[test]
    fn each_row_refuses_an_address_inside_it() {
        let rows: &[(&str, &str)] = &[
            ("0.1.2.3", "this-network"),
            ("10.200.1.1", "private"),
            ("100.127.255.254", "carrier-grade"),
            ("127.0.0.1", "loopback"),
            ("127.255.0.9", "loopback"),
            ("169.254.169.254", "link-local"),
            ("172.31.255.255", "private"),
            ("192.0.0.192", "IETF"),
            ("192.168.1.1", "private"),
            ("198.19.0.1", "benchmarking"),
            ("239.255.255.250", "multicast"),
            ("255.255.255.255", "reserved"),
            ("::", "unspecified"),
            ("::1", "loopback"),
            ("64:ff9b:1::1", "translation"),
            ("fd12:3456::1", "unique local"),
            ("fd00:ec2::254", "metadata"),
            ("fe80::1", "link-local"),
            ("ff02::1", "multicast"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:169.254.169.254", "link-local"),
        ];
        for (ip, word) in rows {
            let what = special(ip.parse().unwrap());
            assert!(what.is_some_and(|w| w.contains(word)), "{ip}: {what:?}");
        }
    }

    #[test]
    fn the_new_rows_and_embedded_ipv4_addresses_are_refused() {
        let rows: &[(&str, &str)] = &[
            ("192.0.2.2", "TEST-NET-1"),
            ("198.51.100.7", "TEST-NET-2"),
            ("203.0.113.9", "TEST-NET-3"),
            ("192.88.99.1", "6to4 relay"),
            ("2001:db8::1", "documentation"),
            ("3fff::1", "documentation"),
            ("2001:2::1", "IETF"),
            ("100::1", "discard"),
            ("5f00::1", "segment routing"),
            ("fec0::1", "site-local"),
            ("::7f00:1", "loopback"),
            // 6to4 and NAT64 forms of 127.0.0.1 and 10.0.0.1.
            ("2002:7f00:1::", "loopback"),
            ("64:ff9b::a00:1", "private"),
            ("::ffff:192.0.2.2", "TEST-NET-1"),
        ];
        for (ip, what) in rows {
            let got = special(ip.parse().unwrap());
            assert!(got.is_some_and(|g| g.contains(what)), "{ip}: {got:?}");
        }
        // A 6to4 or NAT64 address of a public IPv4 address is not refused for its form.
        assert_eq!(special("2002:808:808::".parse().unwrap()), None);
        assert_eq!(special("64:ff9b::808:808".parse().unwrap()), None);
    }

    #[test]
    fn the_hosts_own_addresses_are_refused_in_every_spelling_and_others_are_not() {
        let own: Vec<IpAddr> = vec!["8.8.4.4".parse().unwrap(), "2606:4700::1".parse().unwrap()];
        for ip in [
            "8.8.4.4",
            "::ffff:8.8.4.4",
            "2002:808:404::1",
            "2606:4700::1",
        ] {
            let got = refused(ip.parse().unwrap(), &own);
            assert!(got.is_some_and(|g| g.contains("own")), "{ip}: {got:?}");
        }
        assert_eq!(refused("8.8.8.8".parse().unwrap(), &own), None);
        // Read from this machine: loopback is among them.
        assert!(own_addresses().contains(&"127.0.0.1".parse().unwrap()));
    }

    #[test]
    fn public_addresses_are_not_special() {
        for ip in [
            "1.1.1.1",
            "140.82.112.3",
            "100.63.255.255",
            "100.128.0.0",
            "172.32.0.1",
            "198.20.0.1",
            "2606:4700::1111",
            "64:ff9b::8.8.8.8",
        ] {
            assert_eq!(special(ip.parse().unwrap()), None, "{ip}");
        }
    }
}
