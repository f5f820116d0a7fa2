//! Container image references (`[registry/]repository[:tag][@digest]`),
//! parsed and normalized the way Docker and containerd resolve them.

use std::fmt;

/// The registry an image without one is pulled from.
pub const DEFAULT_REGISTRY: &str = "docker.io";

/// A parsed, normalized image reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageReference {
    /// The registry host, lowercased, with its port if any: `docker.io`,
    /// `ghcr.io`, `registry.local:5000`, `localhost`.
    pub registry: String,
    /// The repository path within the registry; single-component Docker Hub
    /// names get `library/`: `library/nginx`.
    pub repository: String,
    /// The tag, if one was written.
    pub tag: Option<String>,
    /// The digest (`sha256:...`), if one was written.
    pub digest: Option<String>,
}

/// Why an image reference is malformed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidReference(String);

impl fmt::Display for InvalidReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidReference {}

impl ImageReference {
    /// Parses `reference` as written in a Pod spec.
    pub fn parse(reference: &str) -> Result<Self, InvalidReference> {
        let invalid =
            |why: &str| InvalidReference(format!("{why} in image reference {reference:?}"));
        let (name_and_tag, digest) = match reference.split_once('@') {
            Some((rest, digest)) => {
                let (algorithm, hex) = digest
                    .split_once(':')
                    .ok_or_else(|| invalid("digest without algorithm"))?;
                let algorithm_ok = !algorithm.is_empty()
                    && algorithm.chars().all(|c| {
                        c.is_ascii_lowercase() || c.is_ascii_digit() || "+._-".contains(c)
                    });
                if !algorithm_ok || hex.len() < 32 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
                    return Err(invalid("malformed digest"));
                }
                (rest, Some(digest.to_owned()))
            }
            None => (reference, None),
        };
        // A tag follows the last `:` only if no `/` comes after it; an
        // earlier `:` belongs to a registry port (`host:5000/app`).
        let (name, tag) = match name_and_tag.rsplit_once(':') {
            Some((name, tag)) if !tag.contains('/') => (name, Some(tag)),
            _ => (name_and_tag, None),
        };
        if let Some(tag) = tag {
            let first_ok = tag
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
            if !first_ok
                || tag.len() > 128
                || !tag
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
            {
                return Err(invalid("malformed tag"));
            }
        }
        // The first component is a registry only if it looks like a host
        // (a dot, a port, or `localhost`) and something follows it.
        let (registry, repository) = match name.split_once('/') {
            Some((host, path)) if host.contains(['.', ':']) || host == "localhost" => {
                (host.to_ascii_lowercase(), path)
            }
            _ => (DEFAULT_REGISTRY.to_owned(), name),
        };
        if registry.is_empty() || registry.starts_with(['.', ':', '-']) {
            return Err(invalid("malformed registry"));
        }
        let registry = if registry == "index.docker.io" || registry == "registry-1.docker.io" {
            DEFAULT_REGISTRY.to_owned()
        } else {
            registry
        };
        let repository_ok = !repository.is_empty()
            && repository.split('/').all(|component| {
                let edges_ok = component.starts_with(|c: char| c.is_ascii_alphanumeric())
                    && component.ends_with(|c: char| c.is_ascii_alphanumeric());
                edges_ok
                    && component
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c))
            });
        if !repository_ok {
            return Err(invalid("malformed repository"));
        }
        let repository = if registry == DEFAULT_REGISTRY && !repository.contains('/') {
            format!("library/{repository}")
        } else {
            repository.to_owned()
        };
        Ok(Self {
            registry,
            repository,
            tag: tag.map(str::to_owned),
            digest,
        })
    }

    /// Whether the reference names one immutable image (it has a digest).
    pub fn is_pinned(&self) -> bool {
        self.digest.is_some()
    }
}

/// Formats fully qualified: `docker.io/library/nginx:1.27@sha256:...`.
impl fmt::Display for ImageReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn parse(reference: &str) -> (String, String, Option<String>, Option<String>) {
        let parsed = ImageReference::parse(reference).unwrap_or_else(|error| panic!("{error}"));
        (
            parsed.registry,
            parsed.repository,
            parsed.tag,
            parsed.digest,
        )
    }

    fn expect(
        registry: &str,
        repository: &str,
        tag: Option<&str>,
        digest: Option<&str>,
    ) -> (String, String, Option<String>, Option<String>) {
        (
            registry.into(),
            repository.into(),
            tag.map(Into::into),
            digest.map(Into::into),
        )
    }

    #[test]
    fn bare_names_are_docker_hub_library_images() {
        assert_eq!(
            parse("nginx"),
            expect("docker.io", "library/nginx", None, None)
        );
        assert_eq!(
            parse("nginx:1.27"),
            expect("docker.io", "library/nginx", Some("1.27"), None)
        );
        assert_eq!(
            parse("library/nginx:latest"),
            expect("docker.io", "library/nginx", Some("latest"), None)
        );
        assert_eq!(
            parse("docker.io/nginx"),
            expect("docker.io", "library/nginx", None, None)
        );
        assert_eq!(
            parse("index.docker.io/library/nginx"),
            expect("docker.io", "library/nginx", None, None)
        );
    }

    #[test]
    fn user_repositories_stay_on_docker_hub() {
        assert_eq!(
            parse("bitnami/redis:7.2"),
            expect("docker.io", "bitnami/redis", Some("7.2"), None)
        );
        assert_eq!(
            parse("docker.io/bitnami/redis"),
            expect("docker.io", "bitnami/redis", None, None)
        );
    }

    #[test]
    fn hosts_ports_and_localhost_are_registries() {
        assert_eq!(
            parse("ghcr.io/acme/api:v2"),
            expect("ghcr.io", "acme/api", Some("v2"), None)
        );
        assert_eq!(
            parse("GHCR.IO/acme/api"),
            expect("ghcr.io", "acme/api", None, None)
        );
        assert_eq!(
            parse("localhost/app"),
            expect("localhost", "app", None, None)
        );
        assert_eq!(
            parse("localhost:5000/app"),
            expect("localhost:5000", "app", None, None)
        );
        assert_eq!(
            parse("registry.example.com:5000/team/app:2.1"),
            expect("registry.example.com:5000", "team/app", Some("2.1"), None)
        );
        assert_eq!(
            parse("[::1]:5000/app:dev"),
            expect("[::1]:5000", "app", Some("dev"), None)
        );
        assert_eq!(
            parse("quay.io/org/sub/image"),
            expect("quay.io", "org/sub/image", None, None)
        );
    }

    #[test]
    fn digests_pin_with_or_without_tags() {
        let digest = Some(DIGEST);
        assert_eq!(
            parse(&format!("nginx@{DIGEST}")),
            expect("docker.io", "library/nginx", None, digest)
        );
        assert_eq!(
            parse(&format!("nginx:1.27@{DIGEST}")),
            expect("docker.io", "library/nginx", Some("1.27"), digest)
        );
        assert_eq!(
            parse(&format!("localhost:5000/app@{DIGEST}")),
            expect("localhost:5000", "app", None, digest)
        );
        assert!(
            ImageReference::parse(&format!("nginx@{DIGEST}"))
                .unwrap()
                .is_pinned()
        );
        assert!(!ImageReference::parse("nginx:1").unwrap().is_pinned());
    }

    #[test]
    fn malformed_references_are_rejected() {
        for bad in [
            "",
            ":1.0",
            "nginx:",
            "nginx@",
            "nginx@sha256:xyz",
            "nginx@sha256",
            "Nginx",
            "acme/API:1",
            "nginx:-bad",
            "ghcr.io/",
            "ghcr.io//app",
            "app/",
            "-app",
            "a:b:c",
        ] {
            assert!(
                ImageReference::parse(bad).is_err(),
                "{bad:?} parsed as {:?}",
                ImageReference::parse(bad)
            );
        }
        assert_eq!(
            ImageReference::parse("nginx:").unwrap_err().to_string(),
            "malformed tag in image reference \"nginx:\""
        );
    }

    #[test]
    fn displays_fully_qualified() {
        assert_eq!(
            ImageReference::parse("nginx").unwrap().to_string(),
            "docker.io/library/nginx"
        );
        let pinned = format!("ghcr.io/acme/api:v2@{DIGEST}");
        assert_eq!(ImageReference::parse(&pinned).unwrap().to_string(), pinned);
    }
}
