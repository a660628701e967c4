//! The `cortex-bench` binary's integration tests, one binary (one link): each subcommand run as a
//! process on a tiny input, checking what it prints.

mod bench;
mod common;
mod eval;
mod fill;
mod secrets;
