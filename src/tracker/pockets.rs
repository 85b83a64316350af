//! Pocket alerts: what each player should hold (the engine's pockets) against what the pocket
//! reader sees, over time.
//!
//! A discrepancy only counts in calm readings and only after it persisted for the grace period;
//! it ends after a few consecutive readings without it (one noisy reading neither raises nor
//! clears an alert). A piece captured on one board is a pending hand-over until the partner's
//! pocket shows it; if the grace period passes first, that is `handover_missing`, any further
//! shortfall is `hidden_pocket`.

use crate::engine::{BoardId, Color, Piece, Role, Table};
use crate::rules::EventBody;

use super::PocketReading;

/// Consecutive readings without a shortfall that end a discrepancy.
const CLEAR_READINGS: u32 = 3;

#[derive(Debug, Clone, Copy, Default)]
struct KeyState {
    shortfall_since: Option<u64>,
    ok_run: u32,
    reported: bool,
}

#[derive(Debug, Clone, Copy)]
struct Handover {
    from: BoardId,
    color: Color,
    role: Role,
    captured_ts: u64,
}

/// Compares pocket readings with the engine's pockets and raises pocket alerts.
#[derive(Debug, Clone)]
pub struct PocketWatcher {
    grace_ms: u64,
    /// Per board, colour, pocket role.
    keys: [[[KeyState; 5]; 2]; 2],
    pending: Vec<Handover>,
}

impl PocketWatcher {
    pub fn new(grace_ms: u64) -> PocketWatcher {
        PocketWatcher {
            grace_ms,
            keys: Default::default(),
            pending: Vec::new(),
        }
    }

    /// A piece left `from` (captured) at `ts`: it must appear in `piece.color`'s pocket on the
    /// other board.
    pub fn on_capture(&mut self, from: BoardId, piece: Piece, ts: u64) {
        if piece.role != Role::King {
            self.pending.push(Handover {
                from,
                color: piece.color,
                role: piece.role,
                captured_ts: ts,
            });
        }
    }

    /// A piece of `color` and `role` was dropped on `board`: a pending hand-over of such a piece
    /// evidently happened.
    pub fn on_drop(&mut self, board: BoardId, color: Color, role: Role) {
        if let Some(i) = self
            .pending
            .iter()
            .position(|h| h.from == board.other() && h.color == color && h.role == role)
        {
            self.pending.remove(i);
        }
    }

    /// Pieces captured on the other board and not yet seen in `board`'s pockets, per colour and
    /// role.
    pub fn in_transit(&self, board: BoardId) -> [[u8; 5]; 2] {
        let mut out = [[0u8; 5]; 2];
        for h in self.pending.iter().filter(|h| h.from == board.other()) {
            let n = &mut out[h.color.index()][h.role.index()];
            *n = n.saturating_add(1);
        }
        out
    }

    /// Pending hand-overs to `board` (for tests and tools).
    pub fn pending(&self, board: BoardId) -> usize {
        self.pending
            .iter()
            .filter(|h| h.from == board.other())
            .count()
    }

    /// One calm reading of `board`'s pockets at `ts`; returns the alerts it completes.
    pub fn on_reading(
        &mut self,
        board: BoardId,
        ts: u64,
        reading: &PocketReading,
        table: &Table,
    ) -> Vec<EventBody> {
        let mut out = Vec::new();
        for color in Color::ALL {
            for role in Role::POCKET {
                let held = table.board(board).pocket(color).count(role);
                let visible = reading.count(color, role);
                let key = &mut self.keys[board.index()][color.index()][role.index()];
                if visible >= held {
                    key.ok_run += 1;
                    if key.ok_run >= CLEAR_READINGS {
                        key.shortfall_since = None;
                        key.reported = false;
                        self.pending.retain(|h| {
                            !(h.from == board.other() && h.color == color && h.role == role)
                        });
                    }
                    continue;
                }
                key.ok_run = 0;
                let since = *key.shortfall_since.get_or_insert(ts);
                if key.reported || ts.saturating_sub(since) < self.grace_ms {
                    continue;
                }
                key.reported = true;
                let piece = Piece { color, role }.char().to_string();
                let mut missing = held - visible;
                let mut keep = Vec::new();
                for h in self.pending.drain(..) {
                    if missing > 0 && h.from == board.other() && h.color == color && h.role == role
                    {
                        missing -= 1;
                        out.push(EventBody::HandoverMissing {
                            from_board: h.from,
                            color,
                            piece: piece.clone(),
                            captured_ts: h.captured_ts,
                        });
                    } else {
                        keep.push(h);
                    }
                }
                self.pending = keep;
                if missing > 0 {
                    out.push(EventBody::HiddenPocket {
                        color,
                        piece,
                        held,
                        visible,
                    });
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table_with_white_knight_in_a_pocket() -> Table {
        Table::from_fen(
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[N] w KQkq - 0 1 | rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        )
        .unwrap()
    }

    fn reading(white_knights: u8) -> PocketReading {
        let mut r = PocketReading::default();
        r.counts[0][Role::Knight.index()] = white_knights;
        r
    }

    #[test]
    fn hidden_pocket_only_after_the_grace_period() {
        let t = table_with_white_knight_in_a_pocket();
        let mut w = PocketWatcher::new(3000);
        let mut events = Vec::new();
        for ts in (0..=2900).step_by(100) {
            events.extend(w.on_reading(BoardId::A, ts, &reading(0), &t));
        }
        assert!(events.is_empty(), "{events:?}");
        events.extend(w.on_reading(BoardId::A, 3000, &reading(0), &t));
        assert!(matches!(
            events.as_slice(),
            [EventBody::HiddenPocket { held: 1, visible: 0, color: Color::White, piece }] if piece == "N"
        ));
        // Raised once, not every reading.
        assert!(w.on_reading(BoardId::A, 3100, &reading(0), &t).is_empty());
    }

    #[test]
    fn one_noisy_reading_does_not_clear_the_shortfall() {
        let t = table_with_white_knight_in_a_pocket();
        let mut w = PocketWatcher::new(1000);
        let mut events = Vec::new();
        for ts in (0..=1000).step_by(100) {
            let r = if ts == 500 { reading(1) } else { reading(0) };
            events.extend(w.on_reading(BoardId::A, ts, &r, &t));
        }
        assert_eq!(events.len(), 1, "{events:?}");
    }

    #[test]
    fn a_visible_pocket_raises_nothing() {
        let t = table_with_white_knight_in_a_pocket();
        let mut w = PocketWatcher::new(1000);
        for ts in (0..=5000).step_by(100) {
            assert!(w.on_reading(BoardId::A, ts, &reading(1), &t).is_empty());
        }
    }

    #[test]
    fn a_capture_never_handed_over_is_handover_missing() {
        let t = table_with_white_knight_in_a_pocket();
        let mut w = PocketWatcher::new(1000);
        let knight = Piece {
            color: Color::White,
            role: Role::Knight,
        };
        w.on_capture(BoardId::B, knight, 0);
        let mut events = Vec::new();
        for ts in (0..=1200).step_by(100) {
            events.extend(w.on_reading(BoardId::A, ts, &reading(0), &t));
        }
        assert!(matches!(
            events.as_slice(),
            [EventBody::HandoverMissing {
                from_board: BoardId::B,
                ..
            }]
        ));
        assert_eq!(w.pending(BoardId::A), 0);
    }

    #[test]
    fn a_handover_that_arrives_clears_the_pending_capture() {
        let t = table_with_white_knight_in_a_pocket();
        let mut w = PocketWatcher::new(1000);
        let knight = Piece {
            color: Color::White,
            role: Role::Knight,
        };
        w.on_capture(BoardId::B, knight, 0);
        let mut events = Vec::new();
        for ts in (0..=3000).step_by(100) {
            let r = if ts < 600 { reading(0) } else { reading(1) };
            events.extend(w.on_reading(BoardId::A, ts, &r, &t));
        }
        assert!(events.is_empty(), "{events:?}");
        assert_eq!(w.pending(BoardId::A), 0);
    }
}
