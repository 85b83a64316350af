//! `tandem perft` and `tandem moves`: the engine on one board, for scripts and differential tests.

use std::io::Write;

use anyhow::{Context, bail};
use tandem_monitor::engine::{CaptureRouting, Position, Variant, perft_with};

/// Rule set names this command knows for now (the rules module's presets replace this mapping).
fn variant_for(rules: &str) -> anyhow::Result<(Variant, CaptureRouting)> {
    match rules {
        // Single-board view of bughouse: captures go to the other board (as Fairy-Stockfish's
        // `bughouse` perft counts).
        "fics" => Ok((Variant::fics(), CaptureRouting::Discard)),
        "crazyhouse" => Ok((Variant::crazyhouse(), CaptureRouting::OwnPocket)),
        other => bail!("unknown rule set {other:?} (known: fics, crazyhouse)"),
    }
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
    /// Rule set: fics (default; captures leave the board) or crazyhouse (captures to own pocket).
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
    /// Rule set: fics (default) or crazyhouse.
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
