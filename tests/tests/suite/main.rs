//! Herald's integration suite: one binary, one module per area.

mod bad_files;
mod cluster;
mod daemon;
mod hostile;
mod informers;
mod objects;
mod randomized;
mod recording;
mod reload;
mod runtime;
mod sandbox;
