//! Integration tests: the real kube-rs client and the real kubectl against the embedded server
//! over real HTTP.

mod admission;
mod common;
mod crds;
mod crud;
mod faults;
mod kinds;
mod kubectl;
mod kubectl_create;
mod lists;
mod protobuf_answers;
mod protobuf_bodies;
mod watches;
mod writes;
