//! The plugin's configuration, every field optional:
//!
//! ```json
//! {"webhookUrl": "https://hooks.example.com/services/T0/B0/x", "restarts": 3, "windowMinutes": 10}
//! ```
//!
//! The values shown for `restarts` and `windowMinutes` are the defaults;
//! without `webhookUrl` alerts are only logged, recorded as Events and
//! counted.

use std::time::Duration;

use serde::Deserialize;

/// The configuration; [`Default`] is the documented defaults, also used
/// without a configuration.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    /// Where alerts are POSTed as JSON; its origin must be granted to the
    /// plugin (`grants.http`). `None`: no webhook.
    #[serde(default)]
    pub webhook_url: Option<String>,
    /// How many restarts within the window make a crash loop; at least 1.
    #[serde(default = "default_restarts")]
    pub restarts: u32,
    /// The window, in minutes; at least 1.
    #[serde(default = "default_window_minutes")]
    pub window_minutes: u32,
}

fn default_restarts() -> u32 {
    3
}

fn default_window_minutes() -> u32 {
    10
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            webhook_url: None,
            restarts: default_restarts(),
            window_minutes: default_window_minutes(),
        }
    }
}

impl Settings {
    /// The operator's configuration, checked; the defaults without one.
    pub fn load() -> Result<Self, herald_sdk::Error> {
        let settings = herald_sdk::config::get::<Self>()?.unwrap_or_default();
        settings.check().map_err(|problem| {
            herald_sdk::Error::new(problem).context("the plugin configuration")
        })?;
        Ok(settings)
    }

    /// What is wrong with the values, if anything.
    pub fn check(&self) -> Result<(), String> {
        if self.restarts == 0 {
            return Err("restarts must be at least 1".to_owned());
        }
        if self.window_minutes == 0 {
            return Err("windowMinutes must be at least 1".to_owned());
        }
        if let Some(url) = &self.webhook_url {
            let lower = url.to_ascii_lowercase();
            if !lower.starts_with("https://") && !lower.starts_with("http://") {
                return Err(format!("webhookUrl {url:?} is not an http(s) URL"));
            }
        }
        Ok(())
    }

    /// The window as a duration.
    pub fn window(&self) -> Duration {
        Duration::from_secs(u64::from(self.window_minutes) * 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_fill_what_is_missing() {
        let settings: Settings =
            herald_sdk::serde_json::from_str(r#"{"webhookUrl": "https://h.example/x"}"#).unwrap();
        assert_eq!(
            settings,
            Settings {
                webhook_url: Some("https://h.example/x".into()),
                ..Settings::default()
            }
        );
        assert_eq!((settings.restarts, settings.window_minutes), (3, 10));
        assert_eq!(settings.window(), Duration::from_secs(600));
        assert_eq!(settings.check(), Ok(()));
    }

    #[test]
    fn nonsense_is_refused() {
        let parse = |json: &str| herald_sdk::serde_json::from_str::<Settings>(json);
        assert!(parse(r#"{"webhook": "x"}"#).is_err(), "unknown keys");
        assert!(parse(r#"{"restarts": -1}"#).is_err());
        let zero: Settings = parse(r#"{"restarts": 0}"#).unwrap();
        assert!(zero.check().unwrap_err().contains("restarts"));
        let zero: Settings = parse(r#"{"windowMinutes": 0}"#).unwrap();
        assert!(zero.check().unwrap_err().contains("windowMinutes"));
        let ftp: Settings = parse(r#"{"webhookUrl": "ftp://x"}"#).unwrap();
        assert!(ftp.check().unwrap_err().contains("ftp://x"));
    }
}
