//! Test doubles, built only with the `testkit` feature (tests, benches, examples) and never
//! in the shipped binary: scripted model servers on 127.0.0.1 for each wire API.

pub mod scripted;
pub mod scripted_wire;
