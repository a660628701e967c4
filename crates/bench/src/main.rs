//! `cortex-bench`: the lab beside the product. `bench` measures speed and memory (store
//! throughput, find latency, cold start, the team server under load, …) and `eval` retrieval
//! quality on BEIR-layout datasets; BENCHMARKS.md reports what they print. None of this ships
//! in `cortex`, the binary people install: the benchmarks open the memory service in-process
//! or drive that binary as a user would.

mod bench;
mod corpus;
mod eval;
mod output;
mod secrets;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "cortex-bench", version, about = "Benchmarks and retrieval evaluation of Cortex Memory")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Measure store throughput, find latency, cold start and memory on a synthetic corpus.
    Bench(bench::BenchArgs),
    /// Retrieval quality on a BEIR-layout dataset, per route (lexical, dense, hybrid).
    Eval(eval::EvalArgs),
    /// The secret scanner over real texts: what it finds (false positives, on such texts) and
    /// its CPU cost per KB and per item.
    Secrets(secrets::SecretsArgs),
}

fn main() -> ExitCode {
    if let Err(e) = init_logging() {
        eprintln!("cortex-bench: {e}");
        return ExitCode::from(2);
    }
    let outcome = match Cli::parse().command {
        Command::Bench(args) => bench::run(args),
        Command::Eval(args) => eval::run(args),
        Command::Secrets(args) => secrets::run(args),
    };
    outcome.unwrap_or_else(|error| {
        eprintln!("cortex-bench: {error}");
        ExitCode::FAILURE
    })
}

/// Progress goes to stderr, so stdout holds only the tables; `CORTEX_LOG` sets the level, as
/// for `cortex` (read through the same settings table).
fn init_logging() -> Result<(), String> {
    let level = cortex_service::settings::LOG.get(|k| std::env::var(k).ok()).map_err(|e| e.to_string())?;
    tracing_subscriber::fmt().with_writer(std::io::stderr).with_max_level(level).with_ansi(false).init();
    Ok(())
}
