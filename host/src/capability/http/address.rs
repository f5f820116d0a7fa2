//! Which addresses a plugin's request may connect to, whatever its host
//! name resolved to.
//!
//! The rule: a request connects only to addresses the host checked itself
//! after resolving the name once (so a name cannot resolve to a checked
//! address and then, on a second look-up, to another: no DNS rebinding).
//! Addresses that reach the node or its cloud rather than a service are
//! refused:
//!
//! - loopback (`127.0.0.0/8`, `::1`), unless the origin that matched is
//!   `localhost` or names the address literally;
//! - unspecified and "this network" (`0.0.0.0/8`, `::`; Linux connects
//!   `0.0.0.0` to the node itself);
//! - link-local (`169.254.0.0/16`, `fe80::/10`) and cloud metadata services
//!   (`169.254.169.254`, AWS's `fd00:ec2::254`, Alibaba's `100.100.100.200`),
//!   unless the origin that matched names the address literally
//!   (`http://169.254.169.254`).
//!
//! IPv4 addresses written as IPv6 (`::ffff:127.0.0.1`, and NAT64's
//! `64:ff9b::/96`, which a NAT64 gateway turns back into IPv4) are judged as
//! the IPv4 address they carry. Private ranges (`10/8`, `172.16/12`,
//! `192.168/16`, `fc00::/7` but AWS's metadata address) are allowed: they are
//! where in-cluster services live. If any address a name resolves to is
//! refused, the request is refused.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is not an ordinary destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Special {
    /// The node itself.
    Loopback,
    /// `0.0.0.0/8` or `::`.
    Unspecified,
    /// A link-local address.
    LinkLocal,
    /// A cloud metadata service.
    Metadata,
}

impl fmt::Display for Special {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Special::Loopback => "a loopback address",
            Special::Unspecified => "an unspecified address",
            Special::LinkLocal => "a link-local address",
            Special::Metadata => "a cloud metadata address",
        })
    }
}

/// Alibaba Cloud's metadata service.
const ALIBABA_METADATA: Ipv4Addr = Ipv4Addr::new(100, 100, 100, 200);
/// The metadata service of AWS, GCP, Azure and others.
const LINK_LOCAL_METADATA: Ipv4Addr = Ipv4Addr::new(169, 254, 169, 254);
/// AWS's IPv6 metadata service.
const AWS_METADATA_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254);

/// What `ip` is, if it is not an ordinary destination.
pub fn classify(ip: IpAddr) -> Option<Special> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => classify_v4(v4),
            None => classify_v6(v6),
        },
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<Special> {
    if ip == LINK_LOCAL_METADATA || ip == ALIBABA_METADATA {
        Some(Special::Metadata)
    } else if ip.is_loopback() {
        Some(Special::Loopback)
    } else if ip.octets()[0] == 0 {
        Some(Special::Unspecified)
    } else if ip.is_link_local() {
        Some(Special::LinkLocal)
    } else {
        None
    }
}

fn classify_v6(ip: Ipv6Addr) -> Option<Special> {
    if ip == AWS_METADATA_V6 {
        Some(Special::Metadata)
    } else if ip.is_loopback() {
        Some(Special::Loopback)
    } else if ip.is_unspecified() {
        Some(Special::Unspecified)
    } else if ip.is_unicast_link_local() {
        Some(Special::LinkLocal)
    } else {
        None
    }
}

/// The IPv4 address an IPv6 address carries: IPv4-mapped (`::ffff:a.b.c.d`)
/// or NAT64's well-known prefix (`64:ff9b::a.b.c.d`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    let segments = ip.segments();
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let [.., a, b, c, d] = ip.octets();
        return Some(Ipv4Addr::new(a, b, c, d));
    }
    None
}

/// What the origin that matched a request says about special addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exemption {
    /// The origin names this address literally.
    pub literal: Option<IpAddr>,
    /// The origin's host is `localhost`.
    pub localhost: bool,
}

/// Checks one resolved address of a request whose origin gave `exemption`;
/// the error is why it is refused.
pub fn check(ip: IpAddr, exemption: Exemption) -> Result<(), Special> {
    let Some(special) = classify(ip) else {
        return Ok(());
    };
    if exemption.literal == Some(ip) {
        return Ok(());
    }
    if special == Special::Loopback && exemption.localhost {
        return Ok(());
    }
    Err(special)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    const NONE: Exemption = Exemption {
        literal: None,
        localhost: false,
    };

    #[test]
    fn addresses_that_reach_the_node_or_its_cloud_are_special() {
        for (address, special) in [
            ("127.0.0.1", Special::Loopback),
            ("127.1.2.3", Special::Loopback),
            ("::1", Special::Loopback),
            ("0.0.0.0", Special::Unspecified),
            ("0.1.2.3", Special::Unspecified),
            ("::", Special::Unspecified),
            ("169.254.1.1", Special::LinkLocal),
            ("fe80::1", Special::LinkLocal),
            ("febf::1", Special::LinkLocal),
            ("169.254.169.254", Special::Metadata),
            ("fd00:ec2::254", Special::Metadata),
            ("100.100.100.200", Special::Metadata),
            // IPv4 carried in IPv6 is judged as IPv4.
            ("::ffff:127.0.0.1", Special::Loopback),
            ("::ffff:169.254.169.254", Special::Metadata),
            ("::ffff:0.0.0.0", Special::Unspecified),
            ("64:ff9b::a9fe:a9fe", Special::Metadata),
            ("64:ff9b::7f00:1", Special::Loopback),
        ] {
            assert_eq!(classify(ip(address)), Some(special), "{address}");
        }
    }

    #[test]
    fn private_and_public_addresses_are_ordinary() {
        for address in [
            "10.0.0.7",
            "172.16.0.1",
            "192.168.1.1",
            "100.64.0.1",
            "93.184.215.14",
            "fd00::1",
            "fd00:ec2::253",
            "2001:db8::1",
            "::ffff:10.0.0.7",
            "64:ff9b::a00:7",
        ] {
            assert_eq!(classify(ip(address)), None, "{address}");
        }
    }

    #[test]
    fn an_origin_naming_the_address_or_localhost_exempts_it() {
        assert_eq!(check(ip("10.0.0.7"), NONE), Ok(()));
        assert_eq!(check(ip("127.0.0.1"), NONE), Err(Special::Loopback));
        let literal = |text: &str| Exemption {
            literal: Some(ip(text)),
            localhost: false,
        };
        assert_eq!(check(ip("127.0.0.1"), literal("127.0.0.1")), Ok(()));
        assert_eq!(
            check(ip("169.254.169.254"), literal("169.254.169.254")),
            Ok(())
        );
        // Naming one special address exempts that address only.
        assert_eq!(
            check(ip("127.0.0.2"), literal("127.0.0.1")),
            Err(Special::Loopback)
        );
        assert_eq!(
            check(ip("::ffff:127.0.0.1"), literal("127.0.0.1")),
            Err(Special::Loopback)
        );
        let localhost = Exemption {
            literal: None,
            localhost: true,
        };
        assert_eq!(check(ip("127.0.0.1"), localhost), Ok(()));
        assert_eq!(check(ip("::1"), localhost), Ok(()));
        // localhost exempts loopback, not the rest of the node's addresses.
        assert_eq!(
            check(ip("169.254.169.254"), localhost),
            Err(Special::Metadata)
        );
        assert_eq!(check(ip("0.0.0.0"), localhost), Err(Special::Unspecified));
    }
}
