//! payidem's deterministic simulator: one process, one seed, no threads,
//! no real clock or network. It runs the real operation machine, the real
//! `Call`, the real journal engine (over a simulated disk) and the real
//! verifier (inside a simulated platform), injects faults, and checks the
//! invariants as every event runs. A seed replays its run exactly.

pub mod platform;
pub mod profile;
pub mod rng;
pub mod runner;
pub mod world;

pub use payidem::sim::Bug;
pub use runner::{run_seed, Summary};
pub use world::{Report, Violation};
