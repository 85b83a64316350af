//! The bughouse engine: game records today (BPGN), positions, moves and legality to come.
pub mod bpgn;
