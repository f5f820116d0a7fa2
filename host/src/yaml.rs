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

/// A value a section's check refused: the key at fault, dotted and relative
/// to where it was checked (`default.memory` inside `limits`), and what is
/// wrong with it. [`Invalid::within`] places it in the enclosing section;
/// [`Invalid::in_source`] names the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {problem}")]
pub struct Invalid {
    /// The dotted key, relative to the section that checked it.
    pub key: String,
    /// What is wrong.
    pub problem: String,
}

impl Invalid {
    /// `key` refused because of `problem`.
    pub fn new(key: impl Into<String>, problem: impl Into<String>) -> Self {
        Invalid {
            key: key.into(),
            problem: problem.into(),
        }
    }

    /// The same error seen from the section `section` holding the key
    /// (`limits` + `default.memory` → `limits.default.memory`; an index
    /// key such as `[2]` joins without a dot; an empty key is the section's).
    pub fn within(self, section: &str) -> Self {
        let key = match self.key.as_str() {
            "" => section.to_owned(),
            key if key.starts_with('[') => format!("{section}{key}"),
            key => format!("{section}.{key}"),
        };
        Invalid { key, ..self }
    }

    /// The error in the file (or `flags`) `source_name`.
    pub fn in_source(&self, source_name: &str) -> ConfigError {
        ConfigError::new(source_name, &self.key, &self.problem)
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
