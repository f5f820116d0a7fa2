//! Configuration text: YAML read into typed sections, and the error that
//! names the key at fault. Every section of the configuration, and every
//! sidecar file, is read through here.

/// An invalid configuration, naming the key at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}: {key}: {problem}")]
pub struct ConfigError {
    /// The file (or `flags`).
    pub source_name: String,
    /// The dotted key, e.g. `limits.default.memory`.
    pub key: String,
    /// What is wrong.
    pub problem: String,
}

impl ConfigError {
    /// The error of `key` in `source_name`, each part kept on one line
    /// whatever the input holds (keys and values from the file are quoted
    /// in it, and the error is logged).
    pub fn new(source_name: &str, key: &str, problem: &str) -> Self {
        use crate::text::escape_controls;
        ConfigError {
            source_name: escape_controls(source_name),
            key: escape_controls(key),
            problem: escape_controls(problem),
        }
    }
}

/// Parses YAML text into `T`, naming the key at fault (`a.b[2].c`).
pub fn parse_yaml<T: serde::de::DeserializeOwned + Default>(
    text: &str,
    source_name: &str,
) -> Result<T, ConfigError> {
    if text.trim().is_empty() {
        return Ok(T::default());
    }
    let deserializer = serde_yaml::Deserializer::from_str(text);
    serde_path_to_error::deserialize(deserializer).map_err(|e| {
        let key = match e.path().to_string() {
            path if path == "." || path.is_empty() => "(top level)".to_owned(),
            path => path,
        };
        ConfigError::new(source_name, &key, &e.into_inner().to_string())
    })
}
