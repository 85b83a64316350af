//! The per-table tracker: stability per board, decoding, committing moves to the referee,
//! desync and pocket alerts.

use crate::engine::{BoardId, Piece, Role, Square, Table, Variant};
use crate::rules::{
    Action, DesyncState, Event, EventBody, Referee, RefereeError, RuleSet, TimedAction,
};

use super::decode::{Decoder, HypothesisKind, LogLik, order_by_change_times};

/// Probability a square's top class needs before a change of it is believed (change times).
const CHANGE_CONFIDENCE: f32 = 0.9;
use super::pockets::PocketWatcher;
use super::{Observation, SquareClass, TrackerConfig};

/// Why a tracker could not be created.
#[derive(Debug, thiserror::Error)]
pub enum TrackerError {
    #[error(transparent)]
    Referee(#[from] RefereeError),
    #[error(transparent)]
    Config(#[from] super::TrackerConfigError),
}

/// What the tracker knows about one board between observations.
#[derive(Debug, Clone)]
struct BoardTrack {
    /// Argmax of the previous calm observation (None after motion), with confidence flags.
    prev: Option<([SquareClass; 64], u64)>,
    /// Consecutive calm observations with an unchanged confident argmax.
    run: u32,
    /// Summed log-probabilities over the current run.
    sum: Box<[[f32; SquareClass::COUNT]; 64]>,
    /// The mean log-likelihood of the current stable run (None while not stable).
    stable: Option<LogLik>,
    stable_ts: u64,
    /// Something may have changed since the last decision (motion seen, or a residue left).
    open: bool,
    /// Clock presses not yet matched by committed moves.
    presses: u32,
    /// Desync: since when the board is unexplained, and whether `desync` was raised.
    unexplained_since: Option<u64>,
    lost: bool,
    /// Squares read persistently as something the position does not have, outside any move.
    suspects: [Option<SquareClass>; 64],
    /// A hypothesis the referee refused (not applied): do not submit it again until motion.
    refused: Option<u64>,
    /// Per square: the class confidently seen there lately, a candidate new class (with when it
    /// was first seen), and when the shown class last changed. Updated on every observation,
    /// hand frames included, to order the moves of a fast chain.
    shown: [SquareClass; 64],
    /// The latest calm pocket reading.
    pocket: Option<super::PocketReading>,
    candidate: [Option<(SquareClass, u64)>; 64],
    changed_at: [Option<u64>; 64],
}

impl BoardTrack {
    fn new(pos: &crate::engine::Position) -> BoardTrack {
        BoardTrack {
            shown: std::array::from_fn(|i| {
                SquareClass::on(pos, Square::new(i as u8).expect("i < 64"))
            }),
            candidate: [None; 64],
            pocket: None,
            changed_at: [None; 64],
            prev: None,
            run: 0,
            sum: Box::new([[0.0; SquareClass::COUNT]; 64]),
            stable: None,
            stable_ts: 0,
            open: false,
            presses: 0,
            unexplained_since: None,
            lost: false,
            suspects: [None; 64],
            refused: None,
        }
    }
}

/// Tracks one table: turns observations of both boards (and optional clock presses) into moves
/// for the referee it owns, and forwards the referee's events together with its own (`desync`,
/// `hidden_pocket`, `handover_missing`).
///
/// Invariant: the referee's table is the tracked position; a board is decoded only on a stable
/// observation and only when something may have changed (motion since the last decision, a
/// pending clock press, or an unexplained residue).
pub struct Tracker {
    cfg: TrackerConfig,
    referee: Referee,
    variant: Variant,
    boards: [BoardTrack; 2],
    pockets: PocketWatcher,
    clock_feed: bool,
    table_id: String,
    game: u32,
    seq: u64,
}

impl Tracker {
    /// A tracker for a match from the start position (or `start`, a table FEN).
    pub fn new(
        table_id: &str,
        game: u32,
        rules: RuleSet,
        start: Option<&str>,
        cfg: TrackerConfig,
    ) -> Result<Tracker, TrackerError> {
        cfg.validate()?;
        let variant = rules.variant();
        let referee = Referee::new(table_id, game, rules, start)?;
        let boards = [
            BoardTrack::new(referee.table().board(BoardId::A)),
            BoardTrack::new(referee.table().board(BoardId::B)),
        ];
        Ok(Tracker {
            pockets: PocketWatcher::new(cfg.pocket_grace_ms),
            cfg,
            referee,
            variant,
            boards,
            clock_feed: false,
            table_id: table_id.to_string(),
            game,
            seq: 0,
        })
    }

    /// The referee (its table is the tracked position).
    pub fn referee(&self) -> &Referee {
        &self.referee
    }

    /// The tracked position of both boards.
    pub fn table(&self) -> &Table {
        self.referee.table()
    }

    /// Whether `board` is currently out of sync (a `desync` was raised and not yet recovered).
    pub fn is_desynced(&self, board: BoardId) -> bool {
        self.boards[board.index()].lost
    }

    /// The configuration in use.
    pub fn config(&self) -> &TrackerConfig {
        &self.cfg
    }

    /// A clock press on `board` at `ts`: from the first press on, the table has a clock feed and
    /// moves are committed at the next stable observation after a press (004 §7).
    pub fn press(&mut self, board: BoardId, ts: u64) -> Vec<Event> {
        self.clock_feed = true;
        let bt = &mut self.boards[board.index()];
        bt.presses += 1;
        bt.open = true;
        if bt.stable.is_some() {
            bt.stable_ts = ts;
            return self.decide(board, true);
        }
        Vec::new()
    }

    /// Takes one observation and returns the events it causes, in order.
    pub fn observe(&mut self, obs: &Observation) -> Vec<Event> {
        let b = obs.board;
        let calm = obs.motion < self.cfg.motion_threshold;
        let mut events = Vec::new();
        if calm && let Some(reading) = &obs.pockets {
            self.boards[b.index()].pocket = Some(*reading);
            let alerts = self
                .pockets
                .on_reading(b, obs.ts, reading, self.referee.table());
            for body in alerts {
                events.push(self.event(obs.ts, Some(b), body));
            }
        }
        let floor = self.cfg.probability_floor;
        let k = self.cfg.stable_frames;
        let conf = self.cfg.confident_probability;
        let bt = &mut self.boards[b.index()];
        for sq in Square::all() {
            let i = sq.index();
            let (c, p) = obs.argmax(sq);
            if p < CHANGE_CONFIDENCE {
                continue;
            }
            if c == bt.shown[i] {
                bt.candidate[i] = None;
            } else if let Some((cand, since)) = bt.candidate[i]
                && cand == c
            {
                bt.shown[i] = c;
                bt.changed_at[i] = Some(since);
                bt.candidate[i] = None;
            } else {
                bt.candidate[i] = Some((c, obs.ts));
            }
        }
        if !calm {
            bt.prev = None;
            bt.run = 0;
            bt.stable = None;
            bt.open = true;
            bt.refused = None;
            return events;
        }
        let mut argmax = [SquareClass::Empty; 64];
        let mut confident = 0u64;
        for sq in Square::all() {
            let (c, p) = obs.argmax(sq);
            argmax[sq.index()] = c;
            if p >= conf {
                confident |= 1 << sq.index();
            }
        }
        let same = bt.prev.is_some_and(|(prev, prev_conf)| {
            let both = confident & prev_conf;
            Square::all()
                .filter(|sq| both & (1 << sq.index()) != 0)
                .all(|sq| prev[sq.index()] == argmax[sq.index()])
        });
        let ll = LogLik::from_observation(obs, floor);
        if same {
            bt.run += 1;
            for sq in Square::all() {
                for c in SquareClass::ALL {
                    bt.sum[sq.index()][c.index()] += ll.get(sq, c);
                }
            }
        } else {
            bt.run = 1;
            for sq in Square::all() {
                for c in SquareClass::ALL {
                    bt.sum[sq.index()][c.index()] = ll.get(sq, c);
                }
            }
        }
        bt.prev = Some((argmax, confident));
        if bt.run < k {
            bt.stable = None;
            return events;
        }
        let mut mean = LogLik::from_sum(&bt.sum, bt.run);
        for sq in Square::all() {
            if let Some(s) = bt.suspects[sq.index()] {
                if mean.argmax(sq) == s {
                    mean.flatten(sq);
                } else {
                    bt.suspects[sq.index()] = None;
                }
            }
        }
        bt.stable = Some(mean);
        bt.stable_ts = obs.ts;
        let due = if self.clock_feed {
            bt.presses > 0 || bt.lost || (bt.open && bt.unexplained_since.is_some())
        } else {
            bt.open || bt.lost
        };
        if due {
            events.extend(self.decide(b, true));
        } else if self.note_suspects(b) {
            // Several squares changed without any motion seen (a move between two frames):
            // decide now rather than call real changes misreads.
            self.boards[b.index()].open = true;
            events.extend(self.decide(b, true));
        }
        events
    }

    /// Marks squares that disagree with the tracked position while nothing is being decided:
    /// persistent misreads, later made uninformative so that they cannot become moves.
    /// Returns true instead (marking nothing) when two or more squares disagree: that is a change
    /// the tracker missed, not a misread.
    fn note_suspects(&mut self, b: BoardId) -> bool {
        let pos = self.referee.table().board(b).clone();
        let bt = &mut self.boards[b.index()];
        let Some(ll) = &bt.stable else { return false };
        let disagree: Vec<(Square, SquareClass, SquareClass)> = Square::all()
            .filter_map(|sq| {
                let expected = SquareClass::on(&pos, sq);
                let seen = ll.argmax(sq);
                (seen != expected
                    && ll.get(sq, seen) - ll.get(sq, expected) > self.cfg.disagree_nats)
                    .then_some((sq, seen, expected))
            })
            .collect();
        if disagree.len() >= 2 {
            return true;
        }
        for (sq, seen, expected) in disagree {
            {
                if std::env::var("TRK_DEBUG").is_ok() {
                    eprintln!(
                        "{} {b} suspect {sq} {:?} expected {:?}",
                        bt.stable_ts, seen, expected
                    );
                }
                bt.suspects[sq.index()] = Some(seen);
            }
        }
        false
    }

    /// Decodes board `b` from its current stable reading and acts on the result.
    fn decide(&mut self, b: BoardId, may_wait_for_other: bool) -> Vec<Event> {
        let mut events = Vec::new();
        let Some(ll) = self.boards[b.index()].stable.clone() else {
            return events;
        };
        let ts = self.boards[b.index()].stable_ts;
        let other = self.boards[b.other().index()].stable.clone();
        let other_busy = self.boards[b.other().index()].open;
        let decoded = {
            let table = self.referee.table();
            Decoder::new(table, b, &self.variant, &self.cfg, &ll).decode(
                &ll,
                other.as_ref(),
                other_busy,
                self.boards[b.index()].pocket.as_ref(),
            )
        };
        if std::env::var("TRK_DEBUG").is_ok() {
            eprintln!(
                "{ts} {b} best {:?} {:?} score {:.2} margin {:.2} runner {:?} disagree {:?} open {} lost {}",
                decoded.best.kind,
                decoded
                    .best
                    .moves
                    .iter()
                    .map(|m| m.to_string())
                    .collect::<Vec<_>>(),
                decoded.best.score,
                decoded.margin(),
                decoded.runner_up.as_ref().map(|r| (
                    r.moves.iter().map(|m| m.to_string()).collect::<Vec<_>>(),
                    r.score
                )),
                decoded
                    .disagreeing
                    .iter()
                    .map(|d| format!("{}:{}>{}", d.square, d.expected, d.observed))
                    .collect::<Vec<_>>(),
                self.boards[b.index()].open,
                self.boards[b.index()].lost,
            );
        }
        let margin_ok = decoded.margin() >= self.cfg.commit_margin;
        let best = &decoded.best;
        let beats_none = best.score >= self.cfg.commit_margin_none;
        let bt = &self.boards[b.index()];

        if best.kind == HypothesisKind::InTransitDrop && margin_ok && beats_none {
            // The dropped piece is probably still being captured on the other board: decide that
            // board first, then this one again.
            if may_wait_for_other && self.boards[b.other().index()].stable.is_some() {
                events.extend(self.decide(b.other(), false));
                events.extend(self.decide(b, false));
            }
            return events;
        }

        let committable = best.kind != HypothesisKind::NoChange
            && margin_ok
            && beats_none
            && bt.refused != Some(best.fingerprint);
        let clean = decoded.disagreeing.len() < self.cfg.desync_min_squares as usize;
        if committable {
            let fp = best.fingerprint;
            let moves = if best.kind == HypothesisKind::Sequence {
                order_by_change_times(
                    self.referee.table().board(b),
                    &best.moves,
                    &bt.changed_at,
                    &self.variant,
                )
            } else {
                best.moves.clone()
            };
            let before = self.referee.table().to_fen();
            for mv in moves {
                events.extend(self.commit(b, mv, ts));
            }
            let bt = &mut self.boards[b.index()];
            if self.referee.table().to_fen() == before {
                bt.refused = Some(fp);
            }
            if decoded.disagreeing.is_empty() {
                bt.open = false;
            }
            if clean {
                self.explained(b, ts, &mut events);
            }
            return events;
        }
        if best.kind == HypothesisKind::NoChange && margin_ok && clean {
            let bt = &mut self.boards[b.index()];
            bt.open = false;
            if self.clock_feed {
                bt.presses = 0;
            }
            self.explained(b, ts, &mut events);
            let _ = self.note_suspects(b);
            return events;
        }
        if best.kind != HypothesisKind::NoChange && bt.refused == Some(best.fingerprint) && clean {
            // Still showing a move the referee refused: nothing new to say.
            return events;
        }
        // Unexplained (or undecided): wait for more evidence; after the grace period, desync.
        let bt = &mut self.boards[b.index()];
        let since = *bt.unexplained_since.get_or_insert(ts);
        if !bt.lost && ts.saturating_sub(since) >= self.cfg.desync_grace_ms && !clean {
            bt.lost = true;
            let fen = self.referee.table().board(b).to_fen();
            let body = EventBody::Desync {
                state: DesyncState::Lost,
                squares: decoded.disagreeing.clone(),
                fen,
            };
            events.push(self.event(ts, Some(b), body));
        }
        events
    }

    /// The board is explained again: clear the desync clock and report a recovery.
    fn explained(&mut self, b: BoardId, ts: u64, events: &mut Vec<Event>) {
        let bt = &mut self.boards[b.index()];
        bt.unexplained_since = None;
        if bt.lost {
            bt.lost = false;
            let fen = self.referee.table().board(b).to_fen();
            let body = EventBody::Desync {
                state: DesyncState::Recovered,
                squares: Vec::new(),
                fen,
            };
            events.push(self.event(ts, Some(b), body));
        }
    }

    /// Sends one move to the referee and keeps the pocket watcher informed.
    fn commit(&mut self, b: BoardId, mv: crate::engine::Move, ts: u64) -> Vec<Event> {
        let table = self.referee.table();
        let mover = table.board(b).turn();
        let other_before = *table.board(b.other()).pocket(mover.other());
        let other_before_own = *table.board(b.other()).pocket(mover);
        let action = Action::Move {
            board: b,
            notation: mv.to_uci().to_string(),
        };
        let mut events = self.referee.apply(TimedAction {
            ts: Some(ts),
            action,
        });
        let table = self.referee.table();
        // Whatever reached the other board's pockets is a pending hand-over.
        for (color, before) in [(mover.other(), other_before), (mover, other_before_own)] {
            let after = table.board(b.other()).pocket(color);
            for role in Role::POCKET {
                for _ in before.count(role)..after.count(role) {
                    self.pockets.on_capture(b, Piece { color, role }, ts);
                }
            }
        }
        if let crate::engine::Move::Drop { role, .. } = mv {
            self.pockets.on_drop(b, mover, role);
        }
        let bt = &mut self.boards[b.index()];
        if self.clock_feed && bt.presses > 0 {
            bt.presses -= 1;
            events.extend(self.referee.apply(TimedAction {
                ts: Some(ts),
                action: Action::Press { board: b },
            }));
        }
        events
    }

    fn event(&mut self, ts: u64, board: Option<BoardId>, body: EventBody) -> Event {
        self.seq += 1;
        Event {
            id: format!("{}/{}/tracker-{}", self.table_id, self.game, self.seq),
            table: self.table_id.clone(),
            ts,
            board,
            body,
        }
    }
}
