//! The `cortex` binary's integration tests, one binary (one link): the CLI as a process — commands,
//! settings, hooks, recall, ingest, install and several processes on one database.

mod cli;
mod common;
mod context;
mod hook;
mod hook_inputs;
mod ingest;
mod install;
mod links;
mod people;
mod processes;
mod recall;
mod settings;
