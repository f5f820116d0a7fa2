//! The `herald` binary as people run it: `plugin check` and `plugin replay`
//! on the shipped examples and on broken files, the daemon's endpoints,
//! readiness, hot reload and graceful shutdown, configuration errors, the
//! demo, the Helm chart, and the dashboard in a real browser.

mod apiserver;
mod check;
mod compiler;
mod dashboard;
mod demo;
mod helm;
mod helm_admission;
mod helm_upgrade;
mod hostile;
mod pipe;
mod plugin_new;
mod process;
mod proto_roundtrip;
mod proto_schema;
mod rbac;
mod replay;
mod run;
mod sdk_go;
mod sdk_js;
mod sdk_python;
mod stuck;
// The suite's: a test that never returns ends this binary too, naming itself.
#[path = "../../../tests/tests/suite/watchdog.rs"]
mod watchdog;
mod webhooks;
