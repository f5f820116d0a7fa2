//! Herald's integration suite: one binary, one module per area.

mod bad_files;
mod cluster;
mod daemon;
mod deploy;
mod hostile;
mod informers;
mod leader;
mod objects;
mod randomized;
mod rbac;
mod recording;
mod reload;
mod replicas;
mod runtime;
mod sandbox;
