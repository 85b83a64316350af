//! The bughouse rules engine core: boards, pockets, moves, legality, notation. No I/O.
//!
//! * [`Position`] is one board with both pockets of that board: legal move generation including
//!   drops (magic bitboards, pins and check evasions handled directly), [`Position::classify`]
//!   for why an arbitrary move is illegal, and [`Position::play_physical`] to carry on after an
//!   illegal move that nobody claimed (FIDE rapid A4c, text 004 §10).
//! * [`Table`] is the two-board match: captures go to the partner, the steal promotion of text
//!   004 §6, drops of pieces that were never handed over, and material accounting.
//! * [`Variant`] holds the rule options the engine needs; `Default` is FICS bughouse.
//! * Notation: FEN with pockets (`fen`), UCI ([`UciMove`]) and SAN (`san`); game records as BPGN
//!   ([`bpgn`], syntax only: SAN is resolved against a [`Table`] by the caller).
//!
//! Capture routing is the caller's choice: [`PlayOutcome`] says what left the board.

mod attacks;
pub mod bpgn;
mod fen;
mod moves;
mod position;
mod san;
mod table;
mod types;
mod variant;

pub use fen::FenError;
pub use moves::{MAX_MOVES, Move, MoveList, UciError, UciMove};
pub use position::{IllegalReason, Outcome, PhysicalError, PlayOutcome, Position, UciParseError};
pub use san::SanError;
pub use table::{Table, TableError, TableFenError};
pub use types::{Bitboard, BoardId, Color, ParseSquareError, Piece, Pocket, Role, Square};
pub use variant::{DropMate, MateRule, Promotion, Variant};

/// Where perft puts captured pieces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureRouting {
    /// Crazyhouse: into the mover's own pocket with the colour flipped (also a piece removed by
    /// a promotion rule goes to the opponent's pocket).
    OwnPocket,
    /// Captured pieces leave this board for good (single-board view of bughouse: they go to the
    /// other board). This is what Fairy-Stockfish's `bughouse` perft counts.
    Discard,
}

/// Number of leaf nodes `depth` plies below `pos` with crazyhouse capture routing; depth 1 is
/// bulk counted.
pub fn perft(pos: &Position, depth: u32, variant: &Variant) -> u64 {
    perft_with(pos, depth, variant, CaptureRouting::OwnPocket)
}

/// Perft with an explicit capture routing.
pub fn perft_with(pos: &Position, depth: u32, variant: &Variant, routing: CaptureRouting) -> u64 {
    match depth {
        0 => 1,
        1 => pos.count_legal(variant),
        _ => {
            let moves = pos.legal_moves(variant);
            let mut nodes = 0;
            for &m in moves.iter() {
                let mut child = pos.clone();
                let mover = pos.turn();
                let out = child.play(m, variant);
                if routing == CaptureRouting::OwnPocket {
                    if let Some(c) = out.captured {
                        child.pocket_mut(mover).add(c.role);
                    }
                    if let Some(r) = out.removed {
                        child.pocket_mut(mover.other()).add(r.role);
                    }
                }
                nodes += perft_with(&child, depth - 1, variant, routing);
            }
            nodes
        }
    }
}

#[cfg(test)]
mod tests;
