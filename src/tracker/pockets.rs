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

/// Consecutive readings that agree before a shortfall counts as gone (noise guard).
const CLEAR_READINGS: u32 = 3;

#[derive(Debug, Clone, Copy, Default)]
struct KeyState {
    /// Since when more pieces are missing than pending hand-overs and reported hidden pieces
    /// explain.
    hidden_since: Option<u64>,
    /// Hidden pieces already reported (and still missing).
    reported_hidden: u8,
    /// Consecutive readings showing fewer missing pieces than pending hand-overs.
    arrived_run: u32,
    /// Consecutive readings without an unexplained shortfall.
    clear_run: u32,
    /// The visible count as last confirmed by `CLEAR_READINGS` agreeing readings.
    seen: Option<u8>,
    /// A different visible count and how many consecutive readings showed it.
    change: (u8, u32),
}

#[derive(Debug, Clone, Copy)]
struct Handover {
    from: BoardId,
    color: Color,
    role: Role,
    captured_ts: u64,
    reported: bool,
}

/// Compares pocket readings with the engine's pockets and raises pocket alerts.
///
/// Per board, colour and role, the shortfall (held minus visible) is explained first by pending
/// hand-overs (pieces captured on the other board, oldest first), then by hidden pieces. A
/// hand-over still pending after the grace period is `handover_missing` (once per piece); a
/// further shortfall that persists for the grace period is `hidden_pocket` (once per piece).
#[derive(Debug, Clone)]
pub struct PocketWatcher {
    grace_ms: u64,
    /// Per board, colour, pocket role.
    keys: [[[KeyState; 5]; 2]; 2],
    pending: Vec<Handover>,
}

impl PocketWatcher {
    /// A watcher that waits `grace_ms` before any alert.
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
                reported: false,
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
                let short = held.saturating_sub(visible);
                let is_key =
                    |h: &Handover| h.from == board.other() && h.color == color && h.role == role;
                let pending = self.pending.iter().filter(|h| is_key(h)).count() as u8;
                let key = &mut self.keys[board.index()][color.index()][role.index()];
                // Pieces appearing in the pocket are hand-overs arriving (the oldest first),
                // even while the pocket stays short: a piece hidden before the capture must
                // not pass for the capture's missing hand-over.
                let mut arrived = 0u8;
                let seen = *key.seen.get_or_insert(visible);
                if visible == seen {
                    key.change = (visible, 0);
                } else {
                    key.change = if key.change.0 == visible {
                        (visible, key.change.1 + 1)
                    } else {
                        (visible, 1)
                    };
                    if key.change.1 >= CLEAR_READINGS {
                        arrived = visible.saturating_sub(seen).min(pending);
                        key.seen = Some(visible);
                        key.change = (visible, 0);
                    }
                }
                remove_oldest(&mut self.pending, arrived, is_key);
                let pending = pending - arrived;
                // Fewer missing than pending: the oldest hand-overs arrived.
                if short < pending {
                    key.arrived_run += 1;
                    if key.arrived_run >= CLEAR_READINGS {
                        remove_oldest(&mut self.pending, pending - short, is_key);
                    }
                } else {
                    key.arrived_run = 0;
                }
                let piece = Piece { color, role }.char().to_string();
                // Overdue hand-overs, each reported once, while the pocket is still short.
                let mut unexplained = short;
                for h in self.pending.iter_mut().filter(|h| is_key(h)) {
                    if unexplained == 0 {
                        break;
                    }
                    unexplained -= 1;
                    if !h.reported && ts.saturating_sub(h.captured_ts) >= self.grace_ms {
                        h.reported = true;
                        out.push(EventBody::HandoverMissing {
                            from_board: h.from,
                            color,
                            piece: piece.clone(),
                            captured_ts: h.captured_ts,
                        });
                    }
                }
                // What pending hand-overs do not explain is hidden.
                if unexplained > key.reported_hidden {
                    key.clear_run = 0;
                    let since = *key.hidden_since.get_or_insert(ts);
                    if ts.saturating_sub(since) >= self.grace_ms {
                        key.reported_hidden = unexplained;
                        key.hidden_since = None;
                        out.push(EventBody::HiddenPocket {
                            color,
                            piece,
                            held,
                            visible,
                        });
                    }
                } else {
                    key.clear_run += 1;
                    if key.clear_run >= CLEAR_READINGS {
                        key.hidden_since = None;
                        key.reported_hidden = key.reported_hidden.min(unexplained);
                    }
                }
            }
        }
        out
    }
}

/// Removes the `n` oldest pending hand-overs that `is_key` selects (they arrived).
fn remove_oldest(pending: &mut Vec<Handover>, n: u8, is_key: impl Fn(&Handover) -> bool) {
    if n == 0 {
        return;
    }
    let mut left = n;
    pending.retain(|h| {
        if left > 0 && is_key(h) {
            left -= 1;
            false
        } else {
            true
        }
    });
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
        for ts in (0..=5000).step_by(100) {
            events.extend(w.on_reading(BoardId::A, ts, &reading(0), &t));
        }
        // Once, and not also as a hidden piece; it stays pending until it shows up.
        assert!(
            matches!(
                events.as_slice(),
                [EventBody::HandoverMissing {
                    from_board: BoardId::B,
                    captured_ts: 0,
                    ..
                }]
            ),
            "{events:?}"
        );
        assert_eq!(w.pending(BoardId::A), 1);
        for ts in (5100..=5500).step_by(100) {
            assert!(w.on_reading(BoardId::A, ts, &reading(1), &t).is_empty());
        }
        assert_eq!(w.pending(BoardId::A), 0);
    }

    #[test]
    fn a_piece_hidden_before_a_capture_is_hidden_not_a_missing_handover() {
        // White's knight on A vanishes from the pocket; then a white knight is captured on B
        // and handed over (the count goes 0 → 1 while two are held). The piece still missing
        // is the hidden one, not the capture's.
        let one = table_with_white_knight_in_a_pocket();
        let two = Table::from_fen(
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[NN] w KQkq - 0 1 | rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        )
        .unwrap();
        let mut w = PocketWatcher::new(3000);
        let mut events = Vec::new();
        for ts in (0..=6000).step_by(100) {
            if ts == 800 {
                let knight = Piece {
                    color: Color::White,
                    role: Role::Knight,
                };
                w.on_capture(BoardId::B, knight, ts);
            }
            let (t, visible) = match ts {
                0..800 => (&one, 0),
                800..1500 => (&two, 0),
                _ => (&two, 1),
            };
            events.extend(w.on_reading(BoardId::A, ts, &reading(visible), t));
        }
        assert!(
            matches!(
                events.as_slice(),
                [EventBody::HiddenPocket {
                    held: 2,
                    visible: 1,
                    ..
                }]
            ),
            "{events:?}"
        );
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
