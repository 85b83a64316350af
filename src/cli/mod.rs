//! Subcommands. Each lives in its own file and only parses, calls the library, and prints.

use clap::{Parser, Subcommand};

mod demo;
mod sim;

/// Watches over-the-board Tandem (bughouse) chess tables and referees them.
#[derive(Debug, Parser)]
#[command(name = "tandem", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the main job end to end on the embedded defaults (no camera, no external broker).
    Demo(demo::Args),
    /// Check that the native runtime pieces are in place (ONNX Runtime) and say where they are.
    Doctor,
    /// The table simulator: render camera frames of a bughouse table with ground truth.
    Sim(sim::Args),
}

pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Demo(args) => demo::run(args),
        Command::Doctor => demo::doctor(),
        Command::Sim(args) => sim::run(args),
    }
}
