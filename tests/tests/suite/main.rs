//! Herald's integration suite: one binary, one module per area.

mod acting;
mod api_faults;
mod bad_files;
mod bad_manifests;
mod cluster;
mod crashloop;
mod daemon;
mod deploy;
mod egress;
mod fault_matrix;
mod hostile;
mod identity;
mod informers;
mod kubectl;
mod leader;
mod objects;
mod oci;
mod odd_objects;
mod randomized;
mod rbac;
mod recording;
mod reload;
mod replicas;
mod runtime;
mod sandbox;
mod stuck;
