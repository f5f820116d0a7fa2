//! What the operator grants a plugin for outbound HTTP: the origins it may
//! reach (`plugins.<name>.grants.http`) and the bounds of its requests.
//!
//! An origin is written as Spin writes it: `https://hooks.example.com`,
//! `http://127.0.0.1:8080`, `https://*.example.com`. The scheme (`http` or
//! `https`) is required; the port is optional and defaults to the scheme's
//! (80, 443), and a port that is given must match exactly; `*.` before a
//! domain matches one or more labels below it, never the domain itself.
//! There is no path, query or user: an origin grants a whole server.

use serde::Deserialize;
use std::fmt;
use std::net::IpAddr;
use std::time::Duration;

/// The default `connectTimeout`.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The default `timeout` of a whole request.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The default `maxResponseSize`: 1 MiB.
pub const DEFAULT_MAX_RESPONSE_SIZE: u64 = 1 << 20;
/// The default `maxRequestSize`: 1 MiB.
pub const DEFAULT_MAX_REQUEST_SIZE: u64 = 1 << 20;
/// The default `maxConcurrent`.
pub const DEFAULT_MAX_CONCURRENT: u32 = 4;

/// How an origin is written, for the messages refusing one.
const EXAMPLE: &str =
    "write e.g. https://hooks.example.com, http://10.0.0.7:8080 or https://*.example.com";

/// A host that is neither a domain name nor an IP address; each variant
/// holds the host as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    /// A `[`…`]` host that is not an IPv6 address.
    #[error("host {0:?} is not an IPv6 address in brackets")]
    NotIpv6(String),
    /// Not a domain name (nor, where allowed, `*.` and a domain name).
    #[error(
        "host {text:?} is not a domain name or an IP address{hint}",
        hint = if *wildcard_allowed {
            " (a wildcard is `*.` before a domain, as in *.example.com)"
        } else {
            ""
        }
    )]
    NotADomain {
        /// The host at fault.
        text: String,
        /// True in an origin, where `*.example.com` may be written.
        wildcard_allowed: bool,
    },
}

/// An origin of `allowedOrigins` that does not parse; each variant holds
/// the origin as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OriginError {
    /// No `scheme://`.
    #[error("{0:?} has no scheme: {example}", example = EXAMPLE)]
    NoScheme(String),
    /// A scheme other than `http` or `https`.
    #[error("{text:?}: scheme {scheme:?} is not http or https: {example}", example = EXAMPLE)]
    Scheme {
        /// The origin.
        text: String,
        /// The scheme at fault.
        scheme: String,
    },
    /// A path, query or fragment after the host.
    #[error(
        "{text:?} has a path, query or fragment ({rest:?}): an origin is scheme, host and port \
         only"
    )]
    Path {
        /// The origin.
        text: String,
        /// The part from the first `/`, `?` or `#`.
        rest: String,
    },
    /// `user@` before the host.
    #[error("{0:?} has user information: {example}", example = EXAMPLE)]
    UserInfo(String),
    /// A port that is not 1 to 65535.
    #[error("{text:?}: port {port:?} is not a number from 1 to 65535")]
    Port {
        /// The origin.
        text: String,
        /// The port at fault.
        port: String,
    },
    /// A host that does not parse.
    #[error("{text:?}: {reason}")]
    Host {
        /// The origin.
        text: String,
        /// What is wrong with its host.
        #[source]
        reason: HostError,
    },
}

/// Why a request's URL has no [`Target`] a grant could allow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// A scheme other than `http` or `https` (held here, maybe empty).
    #[error("scheme {0:?} is not http or https")]
    Scheme(String),
    /// `user@` before the host.
    #[error(
        "its URL has user information (user@host), which plugins may not send: put credentials \
         in a header"
    )]
    UserInfo,
    /// No host at all.
    #[error("no host")]
    NoHost,
    /// A host that does not parse.
    #[error(transparent)]
    Host(#[from] HostError),
}

/// `plugins.<name>.grants.http`: outbound HTTP granted to one plugin.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HttpGrant {
    /// The origins requests may go to.
    pub allowed_origins: Vec<Origin>,
    /// How long establishing a connection (name look-up, TCP, TLS) may take.
    #[serde(default = "default_connect_timeout", with = "crate::units::duration")]
    pub connect_timeout: Duration,
    /// How long a whole request may take, connection and response body
    /// included; never longer than 80 % of what is left of the handler call.
    #[serde(default = "default_timeout", with = "crate::units::duration")]
    pub timeout: Duration,
    /// The largest response body the plugin may read, in bytes.
    #[serde(default = "default_max_response_size", with = "crate::units::quantity")]
    pub max_response_size: u64,
    /// The largest request body the plugin may send, in bytes.
    #[serde(default = "default_max_request_size", with = "crate::units::quantity")]
    pub max_request_size: u64,
    /// Requests of the plugin in flight at once, across its instances.
    #[serde(default = "default_max_concurrent")]
    pub max_concurrent: u32,
}

fn default_connect_timeout() -> Duration {
    DEFAULT_CONNECT_TIMEOUT
}

fn default_timeout() -> Duration {
    DEFAULT_TIMEOUT
}

fn default_max_response_size() -> u64 {
    DEFAULT_MAX_RESPONSE_SIZE
}

fn default_max_request_size() -> u64 {
    DEFAULT_MAX_REQUEST_SIZE
}

fn default_max_concurrent() -> u32 {
    DEFAULT_MAX_CONCURRENT
}

impl HttpGrant {
    /// A grant of `origins` with every other setting at its default.
    pub fn new(origins: Vec<Origin>) -> Self {
        HttpGrant {
            allowed_origins: origins,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            timeout: DEFAULT_TIMEOUT,
            max_response_size: DEFAULT_MAX_RESPONSE_SIZE,
            max_request_size: DEFAULT_MAX_REQUEST_SIZE,
            max_concurrent: DEFAULT_MAX_CONCURRENT,
        }
    }

    /// Checks values that parse but cannot work; the error names the key at
    /// fault, relative to `grants.http`.
    pub fn validate(&self) -> Result<(), crate::yaml::Invalid> {
        if self.allowed_origins.is_empty() {
            return Err(crate::yaml::Invalid::new(
                "allowedOrigins",
                "lists no origin: list the servers the plugin may reach, e.g. \
                 https://hooks.example.com, or remove grants.http",
            ));
        }
        for (key, value) in [
            ("connectTimeout", self.connect_timeout),
            ("timeout", self.timeout),
        ] {
            if value < Duration::from_millis(1) {
                return Err(crate::yaml::Invalid::new(key, "must be at least 1ms"));
            }
        }
        if self.max_response_size == 0 {
            return Err(crate::yaml::Invalid::new(
                "maxResponseSize",
                "must be above zero",
            ));
        }
        if self.max_request_size == 0 {
            return Err(crate::yaml::Invalid::new(
                "maxRequestSize",
                "must be above zero",
            ));
        }
        if self.max_concurrent == 0 {
            return Err(crate::yaml::Invalid::new(
                "maxConcurrent",
                "must be at least 1",
            ));
        }
        Ok(())
    }

    /// The first allowed origin that `target` matches.
    pub fn matching(&self, target: &Target) -> Option<&Origin> {
        self.allowed_origins.iter().find(|o| o.matches(target))
    }
}

/// `http` or `https`: the only schemes a plugin's request may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// Plain HTTP.
    Http,
    /// HTTP over TLS.
    Https,
}

impl Scheme {
    /// The scheme's default port.
    pub fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }

    /// As written in URLs.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        match text.to_ascii_lowercase().as_str() {
            "http" => Some(Scheme::Http),
            "https" => Some(Scheme::Https),
            _ => None,
        }
    }
}

/// The host of an origin or a request.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    /// A domain name, lowercase, without a trailing dot.
    Name(String),
    /// `*.` and a domain: any name with one or more labels before `.domain`.
    Wildcard(String),
    /// An IP address literal (IPv6 written in brackets in URLs).
    Ip(IpAddr),
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(name) => f.write_str(name),
            Host::Wildcard(domain) => write!(f, "*.{domain}"),
            Host::Ip(IpAddr::V4(ip)) => write!(f, "{ip}"),
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
        }
    }
}

/// Where one request goes: scheme, host (never a wildcard) and port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Its scheme.
    pub scheme: Scheme,
    /// Its host: a name or an address.
    pub host: Host,
    /// Its port, the scheme's default if the URL gives none.
    pub port: u16,
}

impl Target {
    /// The target of a request URI; the error says why it cannot be one.
    pub fn of_uri(uri: &http::Uri) -> Result<Self, TargetError> {
        let scheme = uri.scheme_str().unwrap_or("");
        let scheme = Scheme::parse(scheme).ok_or_else(|| TargetError::Scheme(scheme.to_owned()))?;
        if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
            // Forwarded, it would reach the origin as `Host: user@host`.
            return Err(TargetError::UserInfo);
        }
        let host = uri
            .host()
            .filter(|h| !h.is_empty())
            .ok_or(TargetError::NoHost)?;
        let host = parse_host(host, false)?;
        Ok(Target {
            scheme,
            host,
            port: uri.port_u16().unwrap_or(scheme.default_port()),
        })
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}:{}", self.scheme.as_str(), self.host, self.port)
    }
}

/// One allowed origin of a grant.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
#[serde(try_from = "String")]
pub struct Origin {
    scheme: Scheme,
    host: Host,
    /// The port as given; `None` means the scheme's default.
    port: Option<u16>,
}

impl Origin {
    /// Its scheme.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// Its host.
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// Its port (the scheme's default if it names none).
    pub fn port(&self) -> u16 {
        self.port.unwrap_or(self.scheme.default_port())
    }

    /// True when a request to `target` is within this origin.
    pub fn matches(&self, target: &Target) -> bool {
        if self.scheme != target.scheme || self.port() != target.port {
            return false;
        }
        match (&self.host, &target.host) {
            (Host::Name(granted), Host::Name(name)) => granted == name,
            (Host::Wildcard(domain), Host::Name(name)) => name
                .strip_suffix(domain.as_str())
                .and_then(|prefix| prefix.strip_suffix('.'))
                .is_some_and(|labels| !labels.is_empty()),
            (Host::Ip(granted), Host::Ip(ip)) => granted == ip,
            _ => false,
        }
    }

    /// True when this origin's host is `localhost`.
    pub fn names_localhost(&self) -> bool {
        matches!(&self.host, Host::Name(name) if name == "localhost")
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}", self.scheme.as_str(), self.host)?;
        match self.port {
            Some(port) => write!(f, ":{port}"),
            None => Ok(()),
        }
    }
}

impl std::str::FromStr for Origin {
    type Err = OriginError;

    fn from_str(text: &str) -> Result<Self, OriginError> {
        let (scheme, rest) = text
            .split_once("://")
            .ok_or_else(|| OriginError::NoScheme(text.to_owned()))?;
        let scheme = Scheme::parse(scheme).ok_or_else(|| OriginError::Scheme {
            text: text.to_owned(),
            scheme: scheme.to_owned(),
        })?;
        if let Some(at) = rest.find(['/', '?', '#']) {
            return Err(OriginError::Path {
                text: text.to_owned(),
                rest: rest[at..].to_owned(),
            });
        }
        if rest.contains('@') {
            return Err(OriginError::UserInfo(text.to_owned()));
        }
        // The port follows the last ':' unless that is inside an IPv6 literal.
        let (host, port) = match rest.rfind(':') {
            Some(colon) if !rest[colon..].contains(']') => {
                (&rest[..colon], Some(&rest[colon + 1..]))
            }
            _ => (rest, None),
        };
        let port = port
            .map(|p| match p.parse::<u16>() {
                Ok(port) if port > 0 => Ok(port),
                _ => Err(OriginError::Port {
                    text: text.to_owned(),
                    port: p.to_owned(),
                }),
            })
            .transpose()?;
        let host = parse_host(host, true).map_err(|reason| OriginError::Host {
            text: text.to_owned(),
            reason,
        })?;
        Ok(Origin { scheme, host, port })
    }
}

impl TryFrom<String> for Origin {
    type Error = OriginError;

    fn try_from(text: String) -> Result<Self, OriginError> {
        text.parse()
    }
}

/// Parses a URL's host: an IP literal (IPv6 in brackets), a domain name, or
/// (in an origin) `*.` and a domain name.
fn parse_host(text: &str, wildcard_allowed: bool) -> Result<Host, HostError> {
    if let Some(inner) = text.strip_prefix('[') {
        let ip = inner
            .strip_suffix(']')
            .and_then(|ip| ip.parse::<std::net::Ipv6Addr>().ok())
            .ok_or_else(|| HostError::NotIpv6(text.to_owned()))?;
        return Ok(Host::Ip(IpAddr::V6(ip)));
    }
    if let Ok(ip) = text.parse::<std::net::Ipv4Addr>() {
        return Ok(Host::Ip(IpAddr::V4(ip)));
    }
    let name = text.to_ascii_lowercase();
    let name = name.strip_suffix('.').unwrap_or(&name);
    let (wildcard, domain) = match name.strip_prefix("*.") {
        Some(domain) if wildcard_allowed => (true, domain),
        _ => (false, name),
    };
    let valid_label = |label: &str| {
        !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    if domain.is_empty() || domain.len() > 253 || !domain.split('.').all(valid_label) {
        return Err(HostError::NotADomain {
            text: text.to_owned(),
            wildcard_allowed,
        });
    }
    Ok(if wildcard {
        Host::Wildcard(domain.to_owned())
    } else {
        Host::Name(domain.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(text: &str) -> Origin {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn target(url: &str) -> Target {
        Target::of_uri(&url.parse().unwrap()).unwrap()
    }

    #[test]
    fn origins_parse_with_scheme_host_and_optional_port() {
        let plain = origin("https://Hooks.Example.com");
        assert_eq!(plain.scheme(), Scheme::Https);
        assert_eq!(plain.host(), &Host::Name("hooks.example.com".into()));
        assert_eq!(plain.port(), 443);
        assert_eq!(plain.to_string(), "https://hooks.example.com");
        assert_eq!(origin("http://127.0.0.1:8080").port(), 8080);
        assert_eq!(
            origin("http://[::1]:8080").host(),
            &Host::Ip("::1".parse().unwrap())
        );
        assert_eq!(origin("http://[fd00:ec2::254]").port(), 80);
        assert_eq!(
            origin("https://*.example.com").host(),
            &Host::Wildcard("example.com".into())
        );
        assert_eq!(
            origin("http://svc.ns.svc.cluster.local.:80").host(),
            &Host::Name("svc.ns.svc.cluster.local".into())
        );
    }

    #[test]
    fn origins_without_scheme_or_with_a_path_or_bad_parts_are_refused_saying_why() {
        for (text, says) in [
            ("hooks.example.com", "no scheme"),
            ("ftp://hooks.example.com", "not http or https"),
            ("https://hooks.example.com/", "path"),
            ("https://hooks.example.com/api", "path"),
            ("https://hooks.example.com?x=1", "query"),
            ("https://user@hooks.example.com", "user information"),
            ("https://hooks.example.com:0", "port"),
            ("https://hooks.example.com:99999", "port"),
            ("https://hooks.example.com:", "port"),
            ("https://", "not a domain name"),
            ("https://*", "not a domain name"),
            ("https://a.*.example.com", "not a domain name"),
            ("https://exa mple.com", "not a domain name"),
            ("http://[::1", "IPv6"),
            ("http://[nope]:80", "IPv6"),
        ] {
            let error = text.parse::<Origin>().expect_err(text).to_string();
            assert!(error.contains(says), "{text}: {error}");
        }
    }

    #[test]
    fn an_origin_matches_its_scheme_host_and_port_exactly() {
        let granted = origin("https://hooks.example.com");
        assert!(granted.matches(&target("https://hooks.example.com/a?b=c")));
        assert!(granted.matches(&target("https://HOOKS.example.com:443/")));
        assert!(granted.matches(&target("https://hooks.example.com./")));
        assert!(!granted.matches(&target("http://hooks.example.com/")));
        assert!(!granted.matches(&target("https://hooks.example.com:8443/")));
        assert!(!granted.matches(&target("https://example.com/")));
        assert!(!granted.matches(&target("https://evil-hooks.example.com/")));
        assert!(!granted.matches(&target("https://hooks.example.com.evil.net/")));
        let port = origin("http://127.0.0.1:8080");
        assert!(port.matches(&target("http://127.0.0.1:8080/")));
        assert!(!port.matches(&target("http://127.0.0.1/")));
        assert!(!port.matches(&target("http://127.0.0.2:8080/")));
        assert!(!port.matches(&target("http://localhost:8080/")));
        let v6 = origin("http://[::1]:8080");
        assert!(v6.matches(&target("http://[::1]:8080/")));
        assert!(v6.matches(&target("http://[0:0::1]:8080/")));
    }

    #[test]
    fn a_wildcard_matches_one_or_more_labels_below_its_domain_never_the_domain() {
        let granted = origin("https://*.example.com");
        assert!(granted.matches(&target("https://a.example.com/")));
        assert!(granted.matches(&target("https://a.b.example.com/")));
        assert!(!granted.matches(&target("https://example.com/")));
        assert!(!granted.matches(&target("https://badexample.com/")));
        assert!(!granted.matches(&target("https://a.example.com.evil.net/")));
        assert!(!granted.matches(&target("http://a.example.com/")));
        // A name is not an address, whatever it resolves to.
        assert!(!granted.matches(&target("https://93.184.215.14/")));
    }

    #[test]
    fn requests_with_other_schemes_or_no_host_have_no_target() {
        for url in ["ftp://example.com/", "/just/a/path"] {
            let uri: http::Uri = url.parse().unwrap();
            assert!(Target::of_uri(&uri).is_err(), "{url}");
        }
    }

    #[test]
    fn a_grant_needs_an_origin_and_workable_bounds() {
        let ok = HttpGrant::new(vec![origin("https://hooks.example.com")]);
        assert_eq!(ok.validate(), Ok(()));
        let key = |grant: HttpGrant| grant.validate().unwrap_err().key;
        assert_eq!(key(HttpGrant::new(vec![])), "allowedOrigins");
        assert_eq!(
            key(HttpGrant {
                timeout: Duration::ZERO,
                ..ok.clone()
            }),
            "timeout"
        );
        assert_eq!(
            key(HttpGrant {
                connect_timeout: Duration::ZERO,
                ..ok.clone()
            }),
            "connectTimeout"
        );
        assert_eq!(
            key(HttpGrant {
                max_response_size: 0,
                ..ok.clone()
            }),
            "maxResponseSize"
        );
        assert_eq!(
            key(HttpGrant {
                max_concurrent: 0,
                ..ok
            }),
            "maxConcurrent"
        );
    }
}
