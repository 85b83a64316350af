//! `tandem perft` and `tandem moves`: the engine on one board, for scripts and differential tests.

use std::io::Write;

use anyhow::{Context, bail};
use tandem_monitor::engine::{CaptureRouting, Position, Variant, perft_with};
use tandem_monitor::rules::RuleSet;

/// The engine's view of `--rules`: a rule-set preset or TOML file, or `crazyhouse` for the public
/// crazyhouse perft suites (captures go to the capturer's own pocket). Under a bughouse rule set a
/// single board is counted as Fairy-Stockfish's `bughouse` perft does: captures leave the board.
fn variant_for(rules: &str) -> anyhow::Result<(Variant, CaptureRouting)> {
    if rules == "crazyhouse" {
        return Ok((Variant::crazyhouse(), CaptureRouting::OwnPocket));
    }
    let set = RuleSet::load(rules)?;
    Ok((set.variant(), CaptureRouting::Discard))
}

fn position(fen: &str) -> anyhow::Result<Position> {
    if fen.contains('|') {
        bail!("give one board's FEN, not a table position");
    }
    fen.parse::<Position>().context("reading the FEN")
}

#[derive(Debug, clap::Args)]
pub struct PerftArgs {
    /// Position as FEN with pocket, e.g. "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1".
    fen: String,
    /// Depth in plies.
    depth: u32,
    /// Rule set: a preset (fics, the default; tandem-2024, turnier, dsb, verein), a TOML file, or
    /// crazyhouse (captures go to the capturer's own pocket).
    #[arg(long, default_value = "fics")]
    rules: String,
}

/// Prints the node count as the last token.
pub fn perft(args: PerftArgs) -> anyhow::Result<()> {
    let (variant, routing) = variant_for(&args.rules)?;
    let pos = position(&args.fen)?;
    if args.depth > 8 {
        bail!("depth {} is too deep (at most 8)", args.depth);
    }
    let nodes = perft_with(&pos, args.depth, &variant, routing);
    writeln!(std::io::stdout().lock(), "{nodes}")?;
    Ok(())
}

#[derive(Debug, clap::Args)]
pub struct MovesArgs {
    /// Position as FEN with pocket.
    fen: String,
    /// Rule set: a preset name (default fics), a TOML file, or crazyhouse.
    #[arg(long, default_value = "fics")]
    rules: String,
}

/// Prints the legal moves in UCI, one per line, sorted.
pub fn moves(args: MovesArgs) -> anyhow::Result<()> {
    let (variant, _) = variant_for(&args.rules)?;
    let pos = position(&args.fen)?;
    let mut moves: Vec<String> = pos
        .legal_moves(&variant)
        .iter()
        .map(|m| m.to_string())
        .collect();
    moves.sort();
    let mut out = std::io::stdout().lock();
    for m in moves {
        writeln!(out, "{m}")?;
    }
    Ok(())
}
