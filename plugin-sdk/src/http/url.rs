//! The few URL operations the client needs: parsing an absolute `http` or
//! `https` URL into the parts `wasi:http` takes, resolving a redirect's
//! `Location` against it (RFC 3986 §5.2), and comparing origins.

use std::fmt;

/// `http` or `https`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scheme {
    Http,
    Https,
}

impl Scheme {
    fn as_str(self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::Https => "https",
        }
    }

    fn default_port(self) -> &'static str {
        match self {
            Self::Http => "80",
            Self::Https => "443",
        }
    }
}

/// An absolute `http`/`https` URL without fragment or user info.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Url {
    pub(crate) scheme: Scheme,
    /// `host` or `host:port`; the host lowercased, IPv6 in brackets.
    pub(crate) authority: String,
    /// Starts with `/`; the query, if any, included.
    pub(crate) path_and_query: String,
}

impl Url {
    /// Parses an absolute URL; the error says what is wrong with it.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        if let Some(bad) = text.chars().find(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!("contains {bad:?}"));
        }
        let (scheme, rest) = text
            .split_once("://")
            .ok_or_else(|| "not an absolute http:// or https:// URL".to_owned())?;
        let scheme = match scheme.to_ascii_lowercase().as_str() {
            "http" => Scheme::Http,
            "https" => Scheme::Https,
            other => return Err(format!("scheme {other:?} is not http or https")),
        };
        let rest = rest.split('#').next().unwrap_or_default();
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(end);
        let authority = parse_authority(authority)?;
        let path_and_query = if path.starts_with('/') {
            let (path, query) = split_query(path);
            format!("{}{query}", remove_dot_segments(path))
        } else {
            format!("/{path}")
        };
        Ok(Self {
            scheme,
            authority,
            path_and_query,
        })
    }

    /// `location` (a redirect's `Location`) resolved against this URL.
    pub(crate) fn join(&self, location: &str) -> Result<Self, String> {
        let location = location.trim();
        let location = location.split('#').next().unwrap_or_default();
        if has_scheme(location) {
            return Self::parse(location);
        }
        if let Some(rest) = location.strip_prefix("//") {
            return Self::parse(&format!("{}://{rest}", self.scheme.as_str()));
        }
        if let Some(bad) = location
            .chars()
            .find(|c| c.is_whitespace() || c.is_control())
        {
            return Err(format!("contains {bad:?}"));
        }
        let (base_path, base_query) = split_query(&self.path_and_query);
        let path_and_query = if location.is_empty() {
            format!("{base_path}{base_query}")
        } else if location.starts_with('?') {
            format!("{base_path}{location}")
        } else {
            let (path, query) = split_query(location);
            let merged = if path.starts_with('/') {
                path.to_owned()
            } else {
                let directory = &base_path[..base_path.rfind('/').map_or(0, |at| at + 1)];
                format!("{directory}{path}")
            };
            format!("{}{query}", remove_dot_segments(&merged))
        };
        Ok(Self {
            scheme: self.scheme,
            authority: self.authority.clone(),
            path_and_query,
        })
    }

    /// `scheme://host[:port]`, the port only when it is not the scheme's
    /// default: what the host grants HTTP access to.
    pub(crate) fn origin(&self) -> String {
        let default = format!(":{}", self.scheme.default_port());
        let authority = self
            .authority
            .strip_suffix(&default)
            .unwrap_or(&self.authority);
        format!("{}://{authority}", self.scheme.as_str())
    }

    #[cfg(target_arch = "wasm32")]
    pub(crate) fn is_https(&self) -> bool {
        self.scheme == Scheme::Https
    }
}

impl fmt::Display for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}://{}{}",
            self.scheme.as_str(),
            self.authority,
            self.path_and_query
        )
    }
}

/// Whether `text` starts with a URI scheme (`letter *( letter / digit / + / - / . ) ":"`).
fn has_scheme(text: &str) -> bool {
    let Some(colon) = text.find(':') else {
        return false;
    };
    let scheme = &text[..colon];
    let mut characters = scheme.chars();
    characters.next().is_some_and(|c| c.is_ascii_alphabetic())
        && characters.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
}

fn split_query(path: &str) -> (&str, &str) {
    path.split_at(path.find('?').unwrap_or(path.len()))
}

fn parse_authority(authority: &str) -> Result<String, String> {
    if authority.is_empty() {
        return Err("no host".to_owned());
    }
    if authority.contains('@') {
        return Err("user info in URLs is not supported (send an Authorization header)".to_owned());
    }
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (address, after) = rest
            .split_once(']')
            .ok_or_else(|| format!("unclosed '[' in {authority:?}"))?;
        if address.is_empty()
            || !address
                .chars()
                .all(|c| c.is_ascii_hexdigit() || ":.".contains(c))
        {
            return Err(format!("invalid IPv6 address {address:?}"));
        }
        let port = match after {
            "" => None,
            _ => Some(
                after
                    .strip_prefix(':')
                    .ok_or_else(|| format!("unexpected {after:?} after the address"))?,
            ),
        };
        (format!("[{}]", address.to_ascii_lowercase()), port)
    } else {
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        };
        let valid = !host.is_empty()
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-._~%".contains(c));
        if !valid {
            return Err(format!("invalid host {host:?}"));
        }
        (host.to_ascii_lowercase(), port)
    };
    match port {
        None => Ok(host),
        Some(port) if !port.is_empty() && port.len() <= 5 && port.parse::<u16>().is_ok() => {
            Ok(format!("{host}:{port}"))
        }
        Some(port) => Err(format!("invalid port {port:?}")),
    }
}

/// RFC 3986 §5.2.4: `.` and `..` segments removed from an absolute path.
fn remove_dot_segments(path: &str) -> String {
    let mut output: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    let last = segments.len().saturating_sub(1);
    for (index, segment) in segments.iter().enumerate() {
        match *segment {
            "." => {
                if index == last {
                    output.push("");
                }
            }
            ".." => {
                output.pop();
                if index == last {
                    output.push("");
                }
            }
            segment => output.push(segment),
        }
    }
    format!("/{}", output.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> String {
        Url::parse(text).unwrap().to_string()
    }

    #[test]
    fn absolute_urls_parse_into_wasi_parts() {
        let url = Url::parse("HTTPS://Hooks.Example.com:8443/a/b?x=1#frag").unwrap();
        assert_eq!(url.scheme, Scheme::Https);
        assert_eq!(url.authority, "hooks.example.com:8443");
        assert_eq!(url.path_and_query, "/a/b?x=1");
        assert_eq!(parse("http://example.com"), "http://example.com/");
        assert_eq!(parse("http://example.com?q"), "http://example.com/?q");
        assert_eq!(parse("http://[::1]:8080/x"), "http://[::1]:8080/x");
        assert_eq!(parse("http://a/b/../c/./d"), "http://a/c/d");
    }

    #[test]
    fn bad_urls_say_why() {
        for (text, expected) in [
            ("example.com/x", "absolute"),
            ("ftp://example.com/", "scheme"),
            ("http:///x", "no host"),
            ("http://user:pw@example.com/", "user info"),
            ("http://exa mple.com/", "' '"),
            ("http://example.com:99999/", "port"),
            ("http://example.com:/", "port"),
            ("http://ex$ample.com/", "invalid host"),
            ("http://[::1/", "unclosed"),
        ] {
            let error = Url::parse(text).unwrap_err();
            assert!(error.contains(expected), "{text}: {error}");
        }
    }

    #[test]
    fn locations_resolve_as_rfc_3986_says() {
        let base = Url::parse("https://a.example/b/c/d?q").unwrap();
        let join = |location: &str| base.join(location).unwrap().to_string();
        assert_eq!(join("http://other.example/x"), "http://other.example/x");
        assert_eq!(join("//other.example/x"), "https://other.example/x");
        assert_eq!(join("/x/y?z"), "https://a.example/x/y?z");
        assert_eq!(join("g"), "https://a.example/b/c/g");
        assert_eq!(join("./g/"), "https://a.example/b/c/g/");
        assert_eq!(join("../g"), "https://a.example/b/g");
        assert_eq!(join("../../../../g"), "https://a.example/g");
        assert_eq!(join("?y"), "https://a.example/b/c/d?y");
        assert_eq!(join(""), "https://a.example/b/c/d?q");
        assert_eq!(join("g#frag"), "https://a.example/b/c/g");
        assert!(base.join("mailto:x@example.com").is_err());
        assert!(base.join("/a b").is_err());
    }

    #[test]
    fn origins_drop_default_ports() {
        let origin = |text: &str| Url::parse(text).unwrap().origin();
        assert_eq!(origin("https://a.example:443/x"), "https://a.example");
        assert_eq!(origin("https://a.example:80/x"), "https://a.example:80");
        assert_eq!(origin("http://a.example:80/x"), "http://a.example");
        assert_eq!(origin("http://A.example:8080"), "http://a.example:8080");
    }
}
