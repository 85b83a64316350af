//! Replaying a recorded BPGN game through the referee.

use crate::engine::bpgn::BpgnGame;
use crate::engine::{BoardId, Color};

use super::event::Event;
use super::referee::{Referee, RefereeError};
use super::ruleset::RuleSet;

/// Plays every move of `game` in file order (the real order across both boards) and returns the
/// events. Time stamps are reconstructed from the clock comments: on a board the time elapsed since
/// the start is what both of its clocks have used up, so `ts` is exact when every move has a clock.
pub fn replay_game(
    table: &str,
    game_number: u32,
    rules: &RuleSet,
    game: &BpgnGame,
) -> Result<Vec<Event>, RefereeError> {
    let mut referee = Referee::new(table, game_number, rules.clone(), game.start_fen())?;
    let base_ms = game
        .time_control()
        .map(|tc| u64::from(tc.base_secs) * 1000)
        .unwrap_or(0);
    // Remaining time per board and colour, from the latest clock comment.
    let mut remaining = [[base_ms; 2]; 2];
    let mut events = Vec::new();
    for mv in &game.moves {
        let clock_ms = mv.clock.map(|secs| (secs * 1000.0).round().max(0.0) as u64);
        let (b, c) = (board_index(mv.board), color_index(mv.color));
        if let Some(ms) = clock_ms {
            remaining[b][c] = ms;
        }
        let ts = (base_ms > 0).then(|| (2 * base_ms).saturating_sub(remaining[b][0] + remaining[b][1]));
        events.extend(referee.apply_move_with_clock(board_id(mv.board), &mv.san, ts, clock_ms));
        if referee.is_over() {
            break;
        }
    }
    Ok(events)
}

fn board_id(b: crate::engine::bpgn::BoardId) -> BoardId {
    match b {
        crate::engine::bpgn::BoardId::A => BoardId::A,
        crate::engine::bpgn::BoardId::B => BoardId::B,
    }
}

fn board_index(b: crate::engine::bpgn::BoardId) -> usize {
    board_id(b).index()
}

fn color_index(c: crate::engine::bpgn::Color) -> usize {
    match c {
        crate::engine::bpgn::Color::White => Color::White.index(),
        crate::engine::bpgn::Color::Black => Color::Black.index(),
    }
}
