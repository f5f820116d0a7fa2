//! Units as configuration and status write them, one module each, with the
//! serde adapters every other module uses (`#[serde(with = "…")]`):
//!
//! - [`duration`]: `250ms`, `1s`, `5m`, `1h` (`crate::units::duration`,
//!   `…::duration::option`, and `…::duration::millis_option` for status
//!   fields given in milliseconds);
//! - [`time`]: RFC 3339 timestamps in UTC (`crate::units::time`,
//!   `…::time::option`), and Kubernetes' `MicroTime`;
//! - [`quantity`]: byte quantities as Kubernetes writes them, `64Mi`, `1Gi`
//!   (`crate::units::quantity`, `…::quantity::option`).

pub mod duration;
pub mod quantity;
pub mod time;
