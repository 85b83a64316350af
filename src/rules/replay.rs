//! Replaying a recorded BPGN game through the referee.

use crate::engine::bpgn::BpgnGame;

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
        let (b, c) = (mv.board.index(), mv.color.index());
        if let Some(ms) = clock_ms {
            remaining[b][c] = ms;
        }
        let ts =
            (base_ms > 0).then(|| (2 * base_ms).saturating_sub(remaining[b][0] + remaining[b][1]));
        events.extend(referee.apply_move_with_clock(mv.board, &mv.san, ts, clock_ms));
        if referee.is_over() {
            break;
        }
    }
    Ok(events)
}
