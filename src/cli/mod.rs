//! Subcommands. Each lives in its own file and only parses, calls the library, and prints.
//!
//! Their doc comments are clap's `--help` text, where `[motion]` names a TOML section and
//! `<board>` a placeholder: rustdoc would take them for links and HTML.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

use clap::{Parser, Subcommand};

mod broadcast;
mod broker;
mod demo;
mod engine;
mod evidence;
mod referee;
mod run;
mod sim;
mod tracker;
mod vision;
mod watch;

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
    /// Count the leaf nodes of the legal move tree of one board (last token: the count).
    Perft(engine::PerftArgs),
    /// List the legal moves of one board in UCI, sorted, one per line.
    Moves(engine::MovesArgs),
    /// Referee a scripted match (JSON actions, see docs/referee.md) and print its events.
    Referee(referee::RefereeArgs),
    /// Replay every game of a BPGN file through the referee and print the events.
    Replay(referee::ReplayArgs),
    /// Tamper-evident game evidence: verify, export, show.
    Evidence(evidence::Args),
    /// The live broadcast feed: replay a BPGN game into it and serve it, or render its files.
    Broadcast(broadcast::BroadcastArgs),
    /// Run the embedded MQTT broker on 127.0.0.1 until Ctrl-C.
    Broker(broker::Args),
    /// The table simulator: render camera frames of a bughouse table with ground truth.
    Sim(sim::Args),
    /// The daemon: watch tables from a frame/move source, referee them, publish over MQTT.
    Run(run::RunArgs),
    /// Replay a BPGN game's clock presses to an MQTT broker, as a clock bridge would.
    ClockSim(run::ClockSimArgs),
    /// Measure a stage against known truth (`tracker-sim`: the tracker on simulated observations).
    #[command(subcommand)]
    Eval(tracker::EvalCommand),
    /// Find both boards, a1, board A and the pockets in a frame; write calibration/<table>.toml.
    Calibrate(vision::CalibrateArgs),
    /// Watch a table from frames (a folder or camera:N) and print the referee's events.
    Watch(watch::WatchArgs),
    /// Read every square and pocket of a frame with a calibration (optionally adapting first).
    Classify(vision::ClassifyArgs),
}

pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Demo(args) => demo::run(args),
        Command::Doctor => demo::doctor(),
        Command::Perft(args) => engine::perft(args),
        Command::Moves(args) => engine::moves(args),
        Command::Referee(args) => referee::referee(args),
        Command::Replay(args) => referee::replay(args),
        Command::Evidence(args) => evidence::run(args),
        Command::Broadcast(args) => broadcast::run(args),
        Command::Broker(args) => broker::run(args),
        Command::Sim(args) => sim::run(args),
        Command::Run(args) => run::run(args),
        Command::ClockSim(args) => run::clock_sim(args),
        Command::Eval(cmd) => tracker::eval(cmd),
        Command::Calibrate(args) => vision::calibrate(args),
        Command::Watch(args) => watch::watch(args),
        Command::Classify(args) => vision::classify(args),
    }
}
