//! Which addresses `web_fetch` may connect to: public ones only, unless the user named the
//! host in `[web_fetch] allow_hosts`. A name is resolved here, checked, and the connection
//! pinned to the addresses checked, so a DNS answer cannot change between the check and the
//! connect; every redirect is checked again.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use super::error::FetchError;

/// Whether `ip` is reachable on the public internet (not loopback, private, link-local,
/// shared, multicast, reserved or unspecified, and no IPv6 form of such an IPv4 address).
pub(super) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => public_v4(v4),
        IpAddr::V6(v6) => public_v6(v6),
    }
}

fn public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    !(ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || a >= 240
        // Shared address space (carrier-grade NAT), 100.64.0.0/10.
        || (a == 100 && (64..128).contains(&b))
        // Benchmarking, 198.18.0.0/15.
        || (a == 198 && (b == 18 || b == 19))
        // IETF protocol assignments, 192.0.0.0/24.
        || (a == 192 && b == 0 && ip.octets()[2] == 0))
}

fn public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return public_v4(v4);
    }
    let s = ip.segments();
    // IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry an IPv4
    // address the traffic may end at: judge that one.
    let embedded = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    if s[..6] == [0; 6] && !ip.is_loopback() && !ip.is_unspecified() {
        return public_v4(embedded(s[6], s[7]));
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return public_v4(embedded(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        return public_v4(embedded(s[1], s[2]));
    }
    !(ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        // Unique local fc00::/7, link-local fe80::/10, documentation 2001:db8::/32.
        || (s[0] & 0xfe00) == 0xfc00
        || (s[0] & 0xffc0) == 0xfe80
        || (s[0] == 0x2001 && s[1] == 0x0db8))
}

/// Whether `host` (as the URL names it) is one the user allowed to resolve anywhere.
pub(super) fn allowed(host: &str, allow_hosts: &[String]) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    allow_hosts.iter().any(|a| {
        a.trim_start_matches('[')
            .trim_end_matches(']')
            .eq_ignore_ascii_case(host)
    })
}

/// The addresses of `host` to connect to, every one of them checked.
pub(super) async fn resolve(
    host: &str,
    port: u16,
    allow_hosts: &[String],
) -> Result<Vec<SocketAddr>, FetchError> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> = match bare.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::net::lookup_host((bare, port))
            .await
            .map_err(|e| FetchError::Resolve(host.to_string(), e.to_string()))?
            .collect(),
    };
    if addrs.is_empty() {
        return Err(FetchError::Resolve(host.to_string(), "no address".into()));
    }
    if !allowed(host, allow_hosts)
        && let Some(bad) = addrs.iter().find(|a| !is_public(a.ip()))
    {
        return Err(FetchError::NotPublic {
            host: host.to_string(),
            addr: bad.ip(),
        });
    }
    Ok(addrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public(s: &str) -> bool {
        is_public(s.parse().unwrap())
    }

    #[test]
    fn loopback_private_and_their_disguises_are_not_public() {
        for s in [
            "127.0.0.1",
            "127.8.9.1",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "0.1.2.3",
            "255.255.255.255",
            "224.0.0.1",
            "198.18.0.1",
            "::1",
            "::",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::a00:1",
            "2002:7f00:1::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "ff02::1",
        ] {
            assert!(!public(s), "{s} passed as public");
        }
        for s in [
            "1.1.1.1",
            "8.8.8.8",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
            "2002:0808:0808::",
        ] {
            assert!(public(s), "{s} refused");
        }
    }

    #[test]
    fn only_a_named_host_may_resolve_to_a_private_address() {
        let allow = vec!["127.0.0.1".to_string(), "Intranet.Example".to_string()];
        assert!(allowed("127.0.0.1", &allow));
        assert!(allowed("intranet.example", &allow));
        assert!(!allowed("localhost", &allow));
        assert!(allowed("[::1]", &["::1".to_string()]));
    }

    #[tokio::test]
    async fn an_address_is_checked_before_any_connection() {
        let e = resolve("127.0.0.1", 80, &[]).await.unwrap_err();
        assert!(matches!(e, FetchError::NotPublic { .. }), "{e}");
        assert!(e.to_string().contains("127.0.0.1"), "{e}");
        let ok = resolve("127.0.0.1", 80, &["127.0.0.1".into()])
            .await
            .unwrap();
        assert_eq!(ok, vec!["127.0.0.1:80".parse().unwrap()]);
        let e = resolve("localhost", 80, &[]).await.unwrap_err();
        assert!(matches!(e, FetchError::NotPublic { .. }), "{e}");
    }
}
