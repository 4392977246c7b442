//! Which resolved addresses the egress proxy refuses unless a `sandbox.network` entry names
//! the address itself: the host's own networks and the cloud metadata services. A name that
//! resolves into one of them (`localhost`, a DNS-rebinding name, `metadata.google.internal`)
//! would otherwise let an allowed host name reach the machine or its neighbours.
//!
//! The ranges are data ([`SPECIAL`]), each row tested below.

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
    ("192.168.0.0/16", "private address"),
    ("198.18.0.0/15", "benchmarking address"),
    ("224.0.0.0/4", "multicast address"),
    ("240.0.0.0/4", "reserved address (broadcast included)"),
    ("::/128", "unspecified address"),
    ("::1/128", "loopback address"),
    ("64:ff9b:1::/48", "local-use IPv4/IPv6 translation address"),
    ("fc00::/7", "unique local (private) address"),
    ("fd00:ec2::254/128", "cloud metadata address"),
    ("fe80::/10", "link-local address"),
    ("ff00::/8", "multicast address"),
];

/// What `ip` is when it lies in a refused range, e.g. `"loopback address"`.
pub fn special(ip: IpAddr) -> Option<&'static str> {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
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
