//! The referee: applies what happens at a table, in real order, under one rule set, and says what it
//! means as events.
//!
//! The referee never refuses to follow the table. A legal move is played; an illegal move that is
//! physically possible is played too and reported, because an unclaimed illegal move stands (FIDE
//! rapid A4c, text 004 §10); the rule set decides whether it is a loss, a warning, a take-back on
//! claim, or (online) refused. Only input that cannot describe the table (a move from an empty square,
//! an action after the end) is rejected, with a `status` event and no change.

use std::str::FromStr;

use crate::engine::{
    BoardId, Color, IllegalReason, Move, PlayOutcome, Position, Promotion, Role, Table,
    TableFenError, UciMove, Variant,
};

use super::action::{Action, ClaimKind, TimedAction};
use super::event::{Event, EventBody, IllegalConsequence, MatchResult, ResultReason};
use super::ruleset::{
    BackRankPawnDrop, ClaimWindow, Consequence, DrawRules, DropMate, RuleSet, StalemateRule,
};

/// An illegal move that a claim could still punish.
#[derive(Debug, Clone)]
struct PendingIllegal {
    /// What a valid claim does.
    consequence: Consequence,
    /// The board before the illegal move, the move and what it sent away, for a take-back.
    before: Position,
    mv: Move,
    outcome: PlayOutcome,
    /// Set once the claimant has made a move on this board: the claim expires when that move is
    /// completed (clock press), or at once when the table has no clock feed.
    claimant_moved: bool,
}

impl PendingIllegal {
    /// The player who made the illegal move: the side to move before it.
    fn offender(&self) -> Color {
        self.before.turn()
    }
}

/// A move on one board that [`Action::Retract`] can take back: the board before it, the move
/// and what it sent away, and how long the repetition history was before it.
#[derive(Debug, Clone)]
struct Played {
    before: Position,
    mv: Move,
    outcome: PlayOutcome,
    history_len: usize,
    illegal: bool,
    /// The squares right after the move (FEN placement): a steal from the other board may
    /// change them later, and then `before` is no longer this board minus the move.
    after: String,
}

/// The squares of `pos`: its FEN placement without the pockets.
fn placement(pos: &Position) -> String {
    let fen = pos.to_fen();
    fen.split([' ', '[']).next().unwrap_or_default().to_string()
}

/// How many of a board's latest moves stay retractable.
const RETRACTABLE: usize = 16;

#[derive(Debug, Clone, Default)]
struct BoardState {
    /// The latest moves that stand on this board, newest last (at most [`RETRACTABLE`]).
    played: Vec<Played>,
    /// Moves ever recorded in `played`.
    recorded: u64,
    pending: Option<PendingIllegal>,
    /// Illegal moves made so far, per colour (White, Black).
    illegal_moves: [u32; 2],
    /// Whether any clock press was seen on this board (then moves complete at presses).
    clock_feed: bool,
    /// Position keys after each move, with whether that move gave check, for perpetual check.
    history: Vec<(String, Color, bool)>,
}

/// A decisive outcome found while applying one action, before simultaneity is judged.
#[derive(Debug, Clone, Copy)]
struct Decision {
    result: MatchResult,
    reason: ResultReason,
    board: BoardId,
}

/// One match at one table under one rule set.
pub struct Referee {
    rules: RuleSet,
    variant: Variant,
    table_id: String,
    game: u32,
    seq: u64,
    ts: u64,
    table: Table,
    boards: [BoardState; 2],
    over: bool,
}

/// Why a referee could not be created.
#[derive(Debug, thiserror::Error)]
pub enum RefereeError {
    #[error("start position: {0}")]
    Start(#[from] TableFenError),
}

impl Referee {
    /// A new match from the standard start (or `start`, a table FEN `<A> | <B>`).
    pub fn new(
        table_id: &str,
        game: u32,
        rules: RuleSet,
        start: Option<&str>,
    ) -> Result<Self, RefereeError> {
        let table = match start {
            Some(fen) => Table::from_fen(fen)?,
            None => Table::new(),
        };
        Ok(Self {
            variant: rules.variant(),
            rules,
            table_id: table_id.to_string(),
            game,
            seq: 0,
            ts: 0,
            table,
            boards: Default::default(),
            over: false,
        })
    }

    pub fn rules(&self) -> &RuleSet {
        &self.rules
    }

    pub fn table(&self) -> &Table {
        &self.table
    }

    pub fn is_over(&self) -> bool {
        self.over
    }

    /// How many moves have been recorded on `board` so far (a counter that only grows): the
    /// difference across a call tells how many of its moves [`Action::Retract`] could take back.
    pub fn moves_recorded(&self, board: BoardId) -> u64 {
        self.boards[board.index()].recorded
    }

    /// The table as it would be after retracting the last `n` moves on `board` (see
    /// [`Action::Retract`]), or None when they cannot all be retracted (fewer recorded, a steal
    /// changed the board since, or the match is over).
    pub fn table_before(&self, board: BoardId, n: usize) -> Option<Table> {
        let played = &self.boards[board.index()].played;
        if self.over || n > played.len() {
            return None;
        }
        let mut table = self.table.clone();
        for p in played.iter().rev().take(n) {
            if placement(table.board(board)) != p.after {
                return None;
            }
            table.take_back(board, &p.before, p.mv, &p.outcome);
        }
        Some(table)
    }

    /// Applies one action and returns the events it causes, in order.
    pub fn apply(&mut self, timed: TimedAction) -> Vec<Event> {
        self.apply_timed(timed, None)
    }

    /// Applies a move with the mover's remaining clock time (BPGN replays carry it).
    pub fn apply_move_with_clock(
        &mut self,
        board: BoardId,
        notation: &str,
        ts: Option<u64>,
        clock_ms: Option<u64>,
    ) -> Vec<Event> {
        let action = Action::Move {
            board,
            notation: notation.to_string(),
            reading: None,
        };
        self.apply_timed(TimedAction { ts, action }, clock_ms)
    }

    fn apply_timed(&mut self, timed: TimedAction, clock_ms: Option<u64>) -> Vec<Event> {
        if let Some(ts) = timed.ts {
            self.ts = self.ts.max(ts);
        }
        let mut events = Vec::new();
        if self.over {
            self.status(&mut events, "ignored", "the match is over; action ignored");
            return events;
        }
        let decisions = self.apply_one(timed.action, clock_ms, &mut events);
        self.decide(decisions, &mut events);
        events
    }

    fn apply_one(
        &mut self,
        action: Action,
        clock_ms: Option<u64>,
        events: &mut Vec<Event>,
    ) -> Vec<Decision> {
        match action {
            Action::Move {
                board,
                notation,
                reading,
            } => {
                let from = events.len();
                let decisions = self.on_move(board, &notation, clock_ms, events);
                for e in &mut events[from..] {
                    if let (EventBody::Move { reading: r, .. }, Some(b)) = (&mut e.body, e.board)
                        && b == board
                    {
                        *r = reading;
                    }
                }
                decisions
            }
            Action::Press { board } => {
                self.on_press(board, events);
                Vec::new()
            }
            Action::Retract { board } => {
                self.on_retract(board, events);
                Vec::new()
            }
            Action::Flag { board, color } => vec![Decision {
                result: MatchResult::loss_for(board, color),
                reason: ResultReason::Flag,
                board,
            }],
            Action::Resign { board, color } => vec![Decision {
                result: MatchResult::loss_for(board, color),
                reason: ResultReason::Resignation,
                board,
            }],
            Action::DrawAgreed => {
                if self.rules.draws.agreement {
                    vec![Decision {
                        result: MatchResult::Draw,
                        reason: ResultReason::Agreement,
                        board: BoardId::A,
                    }]
                } else {
                    self.status(events, "rejected", "this rule set has no draw by agreement");
                    Vec::new()
                }
            }
            Action::Claim { kind, board, by } => self.on_claim(kind, board, by, events),
            Action::Simultaneous(inner) => inner
                .into_iter()
                .flat_map(|a| self.apply_one(a, None, events))
                .collect(),
        }
    }

    /// Turns the decisive outcomes of one moment into at most one result.
    fn decide(&mut self, decisions: Vec<Decision>, events: &mut Vec<Event>) {
        let Some(first) = decisions.first().copied() else {
            return;
        };
        let wins_one = decisions
            .iter()
            .any(|d| d.result == MatchResult::WhiteATeamWins);
        let wins_two = decisions
            .iter()
            .any(|d| d.result == MatchResult::BlackATeamWins);
        let (result, reason) = if wins_one && wins_two {
            let all = |r: ResultReason| decisions.iter().all(|d| d.reason == r);
            let draws: DrawRules = self.rules.draws;
            if all(ResultReason::Checkmate) && draws.simultaneous_mates {
                (MatchResult::Draw, ResultReason::SimultaneousMates)
            } else if all(ResultReason::Flag) && draws.both_flags {
                (MatchResult::Draw, ResultReason::DoubleFlag)
            } else if draws.simultaneous_claims {
                (MatchResult::Draw, ResultReason::SimultaneousClaims)
            } else {
                (first.result, first.reason)
            }
        } else {
            (first.result, first.reason)
        };
        let board = decisions
            .iter()
            .find(|d| d.result == result && d.reason == reason)
            .map(|d| d.board);
        let text = match (result, reason) {
            (MatchResult::Draw, r) => format!("draw: {}", reason_text(r)),
            (r, why) => format!(
                "{} ({})",
                match r {
                    MatchResult::WhiteATeamWins => "WhiteA and BlackB win",
                    _ => "BlackA and WhiteB win",
                },
                reason_text(why)
            ),
        };
        self.over = true;
        self.push(
            events,
            board,
            EventBody::Result {
                result,
                reason,
                text,
            },
        );
    }

    fn on_move(
        &mut self,
        board: BoardId,
        notation: &str,
        clock_ms: Option<u64>,
        events: &mut Vec<Event>,
    ) -> Vec<Decision> {
        let mover = self.table.board(board).turn();
        let mv = match self.read_move(board, notation) {
            Ok(mv) => mv,
            Err(problem) => {
                self.status(
                    events,
                    "rejected",
                    &format!("board {board}: cannot read move `{notation}`: {problem}"),
                );
                return Vec::new();
            }
        };
        self.note_opponent_moved(board, mover);
        let verdict = self.table.classify(board, mv, &self.variant);
        match verdict {
            Ok(()) => self.play_legal(board, mv, clock_ms, events),
            Err(reason) => self.play_illegal(board, mv, reason, clock_ms, events),
        }
    }

    /// Reads UCI first (the tracker's language), then SAN (the scoresheet's). A UCI promotion with
    /// no piece named promotes to a queen (000 §2(1)c); under 002 7.5 a named piece is ignored,
    /// since the pawn counts as captured whatever was put down.
    fn read_move(&self, board: BoardId, notation: &str) -> Result<Move, String> {
        if let Ok(uci) = UciMove::from_str(notation) {
            let mv = self
                .table
                .uci_to_move(board, uci)
                .map_err(|e| e.to_string())?;
            return Ok(self.default_promotion(board, mv));
        }
        self.table
            .parse_san(board, notation, &self.variant)
            .map_err(|e| e.to_string())
    }

    fn default_promotion(&self, board: BoardId, mv: Move) -> Move {
        if let Move::Normal {
            role: Role::Pawn,
            from,
            to,
            capture,
            promotion: None,
        } = mv
        {
            let last = match self.table.board(board).turn() {
                Color::White => 7,
                Color::Black => 0,
            };
            if to.rank() == last && self.rules.promotion == Promotion::Choose {
                return Move::Normal {
                    role: Role::Pawn,
                    from,
                    to,
                    capture,
                    promotion: Some(Role::Queen),
                };
            }
        }
        if let Move::Normal {
            role: Role::Pawn,
            from,
            to,
            capture,
            promotion: Some(_),
        } = mv
            && self.rules.promotion == Promotion::PawnCaptured
        {
            return Move::Normal {
                role: Role::Pawn,
                from,
                to,
                capture,
                promotion: None,
            };
        }
        mv
    }

    fn play_legal(
        &mut self,
        board: BoardId,
        mv: Move,
        clock_ms: Option<u64>,
        events: &mut Vec<Event>,
    ) -> Vec<Decision> {
        let mover = self.table.board(board).turn();
        let number = self.table.board(board).fullmoves();
        let san = self.table.san(board, mv, &self.variant);
        let uci = mv.to_uci().to_string();
        let before = self.table.board(board).clone();
        let outcome = match self.table.play(board, mv, &self.variant) {
            Ok(outcome) => outcome,
            Err(reason) => {
                // classify said legal; a disagreement is a bug, reported rather than hidden.
                self.status(events, "error", &format!("board {board}: {uci}: {reason}"));
                return Vec::new();
            }
        };
        self.push(
            events,
            Some(board),
            EventBody::Move {
                color: mover,
                number,
                uci,
                san,
                fen: self.table.board(board).to_fen(),
                clock_ms,
                legal: true,
                reading: None,
            },
        );
        self.record_played(board, before, mv, outcome, false);
        if let (Some(pawn), false) = (outcome.removed, matches!(mv, Move::Steal { .. })) {
            // 002 7.5: a pawn that reached the last rank counts as captured.
            self.push(
                events,
                Some(board),
                EventBody::PieceRemoved {
                    square: mv.to().to_string(),
                    piece: pawn.char().to_string(),
                    to_board: board.other(),
                    to_color: pawn.color,
                    reason: "pawn_reached_last_rank".into(),
                },
            );
        }
        self.after_move(board, mover)
    }

    fn play_illegal(
        &mut self,
        board: BoardId,
        mv: Move,
        reason: IllegalReason,
        clock_ms: Option<u64>,
        events: &mut Vec<Event>,
    ) -> Vec<Decision> {
        let mover = self.table.board(board).turn();
        let uci = mv.to_uci().to_string();
        let code = reason_code(reason).to_string();
        let text = reason.to_string();
        let illegal = |consequence: IllegalConsequence, applied: bool| EventBody::IllegalMove {
            color: mover,
            uci: uci.clone(),
            reason: code.clone(),
            text: text.clone(),
            consequence,
            applied,
        };

        // A forbidden drop-mate has its own procedure in the texts that forbid it.
        if reason == IllegalReason::DropMate {
            match self.rules.drop_mate {
                DropMate::TakenBack | DropMate::Allowed => {
                    // 002 7.3: the piece is taken back and the player moves again.
                    self.push(
                        events,
                        Some(board),
                        illegal(IllegalConsequence::TakenBack, false),
                    );
                    return Vec::new();
                }
                DropMate::RemovedAsCaptured => {
                    // 000/001 §2(1)d: the piece is removed and counts as captured by the mated
                    // side; the removal is not a move.
                    let Move::Drop { to, .. } = mv else {
                        self.status(events, "error", "a drop-mate that is not a drop");
                        return Vec::new();
                    };
                    if let Err(e) = self.table.play_physical(board, mv, &self.variant) {
                        self.status(events, "rejected", &format!("board {board}: {e}"));
                        return Vec::new();
                    }
                    self.push(
                        events,
                        Some(board),
                        illegal(IllegalConsequence::PieceRemoved, true),
                    );
                    // The removal is not a move: nothing before it can be retracted any more.
                    self.boards[board.index()].played.clear();
                    match self.table.remove_piece(board, to) {
                        Ok((piece, _)) => {
                            // Captured by the mated side: to the dropper's colour on the other board.
                            self.table.add_to_pocket(board.other(), piece);
                            self.push(
                                events,
                                Some(board),
                                EventBody::PieceRemoved {
                                    square: to.to_string(),
                                    piece: piece.char().to_string(),
                                    to_board: board.other(),
                                    to_color: piece.color,
                                    reason: "drop_mate".into(),
                                },
                            )
                        }
                        Err(e) => self.status(events, "error", &format!("drop-mate removal: {e}")),
                    }
                    return self.after_move(board, mover);
                }
            }
        }

        // 000 §2(1)b: a pawn dropped on a back rank "falls through".
        if reason == IllegalReason::PawnDropOnBackRank
            && self.rules.back_rank_pawn_drop == BackRankPawnDrop::FallsThrough
        {
            self.push(
                events,
                Some(board),
                illegal(IllegalConsequence::TakenBack, false),
            );
            return Vec::new();
        }

        let count = self.boards[board.index()].illegal_moves[mover.index()] + 1;
        let policy = self.rules.illegal_move;
        let consequence = if count == 1 {
            policy.first
        } else {
            policy.repeated
        };
        if consequence == Consequence::Rejected {
            self.push(
                events,
                Some(board),
                illegal(IllegalConsequence::Rejected, false),
            );
            return Vec::new();
        }

        let before = self.table.board(board).clone();
        let outcome = match self.table.play_physical(board, mv, &self.variant) {
            Ok(outcome) => outcome,
            Err(e) => {
                self.status(
                    events,
                    "rejected",
                    &format!("board {board}: move `{uci}` is not possible on the board: {e}"),
                );
                return Vec::new();
            }
        };
        self.boards[board.index()].illegal_moves[mover.index()] = count;

        let claimable =
            policy.needs_claim && matches!(consequence, Consequence::TakeBack | Consequence::Loss);
        let shown = if claimable {
            IllegalConsequence::Claimable
        } else {
            consequence.into()
        };
        self.push(events, Some(board), illegal(shown, true));
        // The board changed: consumers that follow positions (feed, tracker) see it as a move.
        self.push(
            events,
            Some(board),
            EventBody::Move {
                color: mover,
                number: before.fullmoves(),
                uci: uci.clone(),
                san: uci.clone(),
                fen: self.table.board(board).to_fen(),
                clock_ms,
                legal: false,
                reading: None,
            },
        );
        if consequence != Consequence::TakeBack || claimable {
            self.record_played(board, before.clone(), mv, outcome, true);
        }
        if claimable {
            self.boards[board.index()].pending = Some(PendingIllegal {
                consequence,
                before,
                mv,
                outcome,
                claimant_moved: false,
            });
        } else if consequence == Consequence::Loss {
            return vec![Decision {
                result: MatchResult::loss_for(board, mover),
                reason: ResultReason::IllegalMove,
                board,
            }];
        } else if consequence == Consequence::TakeBack {
            self.take_back(board, &before, mv, &outcome, "illegal_move", events);
            return Vec::new();
        }
        self.after_move(board, mover)
    }

    /// Checks for mate and double stalemate after a move on `board` by `mover`.
    fn after_move(&mut self, board: BoardId, mover: Color) -> Vec<Decision> {
        let position = self.table.board(board);
        let gave_check = position.is_check();
        // FEN without the move counters: placement, side to move, castling, en passant, pockets.
        let key = position
            .to_fen()
            .split(' ')
            .take(4)
            .collect::<Vec<_>>()
            .join(" ");
        self.boards[board.index()]
            .history
            .push((key, mover, gave_check));
        let mut decisions = Vec::new();
        if self.table.is_checkmate(board, &self.variant) {
            decisions.push(Decision {
                result: MatchResult::loss_for(board, mover.other()),
                reason: ResultReason::Checkmate,
                board,
            });
        } else if self.rules.stalemate == StalemateRule::DrawIfBothBoards
            && [BoardId::A, BoardId::B]
                .iter()
                .all(|&b| self.table.is_stalemate(b, &self.variant))
        {
            decisions.push(Decision {
                result: MatchResult::Draw,
                reason: ResultReason::BothStalemated,
                board,
            });
        }
        decisions
    }

    /// A move by the claimant of a pending illegal move closes the claim window when the move is
    /// complete: at his clock press if the table has a clock feed, else at once.
    fn note_opponent_moved(&mut self, board: BoardId, mover: Color) {
        if self.rules.illegal_move.claim_window != ClaimWindow::UntilOpponentCompletesMove {
            return;
        }
        let state = &mut self.boards[board.index()];
        if let Some(pending) = &mut state.pending
            && pending.offender() != mover
        {
            if state.clock_feed {
                pending.claimant_moved = true;
            } else {
                state.pending = None;
            }
        }
    }

    fn on_press(&mut self, board: BoardId, events: &mut Vec<Event>) {
        let state = &mut self.boards[board.index()];
        state.clock_feed = true;
        // The player who just moved presses; the side to move is now his opponent.
        let presser = self.table.board(board).turn().other();
        if state
            .pending
            .as_ref()
            .is_some_and(|p| p.offender() != presser && p.claimant_moved)
        {
            state.pending = None;
        }
        self.push(
            events,
            Some(board),
            EventBody::Clock {
                color: presser,
                remaining_ms: None,
            },
        );
    }

    fn on_claim(
        &mut self,
        kind: ClaimKind,
        board: BoardId,
        by: Color,
        events: &mut Vec<Event>,
    ) -> Vec<Decision> {
        let reject = |this: &mut Self, events: &mut Vec<Event>, reason: &str| {
            this.push(
                events,
                Some(board),
                EventBody::ClaimRejected {
                    by,
                    kind: serde_json::to_value(kind)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default(),
                    reason: reason.to_string(),
                },
            );
        };
        match kind {
            ClaimKind::Flag => vec![Decision {
                result: MatchResult::loss_for(board, by.other()),
                reason: ResultReason::Flag,
                board,
            }],
            ClaimKind::IllegalMove => {
                let state = &mut self.boards[board.index()];
                let Some(pending) = state.pending.take() else {
                    reject(
                        self,
                        events,
                        "no illegal move of the opponent can be claimed now",
                    );
                    return Vec::new();
                };
                if pending.offender() == by {
                    state.pending = Some(pending);
                    reject(self, events, "a player cannot claim his own illegal move");
                    return Vec::new();
                }
                match pending.consequence {
                    Consequence::Loss => vec![Decision {
                        result: MatchResult::loss_for(board, pending.offender()),
                        reason: ResultReason::IllegalMove,
                        board,
                    }],
                    _ => {
                        self.take_back(
                            board,
                            &pending.before,
                            pending.mv,
                            &pending.outcome,
                            "claimed_illegal_move",
                            events,
                        );
                        Vec::new()
                    }
                }
            }
            ClaimKind::PerpetualCheck => {
                if !self.rules.draws.perpetual_check {
                    reject(self, events, "this rule set has no draw by perpetual check");
                    return Vec::new();
                }
                if self.is_perpetual(board, by.other()) {
                    vec![Decision {
                        result: MatchResult::Draw,
                        reason: ResultReason::PerpetualCheck,
                        board,
                    }]
                } else {
                    reject(
                        self,
                        events,
                        "the position has not repeated three times under continuous check",
                    );
                    Vec::new()
                }
            }
        }
    }

    /// The current position of `board` occurred three times, and every move of `checker` since its
    /// first occurrence gave check.
    fn is_perpetual(&self, board: BoardId, checker: Color) -> bool {
        let history = &self.boards[board.index()].history;
        let Some((current, _, _)) = history.last() else {
            return false;
        };
        let occurrences: Vec<usize> = history
            .iter()
            .enumerate()
            .filter(|(_, (key, _, _))| key == current)
            .map(|(i, _)| i)
            .collect();
        if occurrences.len() < 3 {
            return false;
        }
        history[occurrences[0]..]
            .iter()
            .filter(|(_, mover, _)| *mover == checker)
            .all(|(_, _, check)| *check)
    }

    /// Restores `board` to before an illegal move (FIDE 7.5.1): the same player moves again. The other
    /// board keeps everything that happened there; a piece the illegal move sent to the partner's
    /// pocket comes back if it is still there.
    fn take_back(
        &mut self,
        board: BoardId,
        before: &Position,
        mv: Move,
        outcome: &PlayOutcome,
        reason: &str,
        events: &mut Vec<Event>,
    ) {
        let offender = before.turn();
        self.table.take_back(board, before, mv, outcome);
        self.boards[board.index()].pending = None;
        // The board is back before the illegal move: what was recorded since is void.
        self.boards[board.index()].played.clear();
        self.push(
            events,
            Some(board),
            EventBody::MoveRetracted {
                color: offender,
                uci: mv.to_uci().to_string(),
                reason: reason.to_string(),
                fen: self.table.board(board).to_fen(),
            },
        );
    }

    fn record_played(
        &mut self,
        board: BoardId,
        before: Position,
        mv: Move,
        outcome: PlayOutcome,
        illegal: bool,
    ) {
        let after = placement(self.table.board(board));
        let state = &mut self.boards[board.index()];
        state.recorded += 1;
        if state.played.len() == RETRACTABLE {
            state.played.remove(0);
        }
        state.played.push(Played {
            before,
            mv,
            outcome,
            history_len: state.history.len(),
            illegal,
            after,
        });
    }

    /// Takes back the last move recorded on `board` (see [`Action::Retract`]): the board before
    /// it is restored with its current pockets, a dropped piece goes back to the dropper and a
    /// captured one comes back from the partner's pocket. The clocks are not touched: the
    /// presses that completed the misread move complete the move really made.
    fn on_retract(&mut self, board: BoardId, events: &mut Vec<Event>) {
        let state = &mut self.boards[board.index()];
        let Some(played) = state.played.pop() else {
            self.status(
                events,
                "rejected",
                &format!("board {board}: no move to retract"),
            );
            return;
        };
        if placement(self.table.board(board)) != played.after {
            // A steal on the other board took a piece from this one since.
            self.boards[board.index()].played.clear();
            self.status(
                events,
                "rejected",
                &format!(
                    "board {board}: a steal changed the board since its last move; not retracted"
                ),
            );
            return;
        }
        let state = &mut self.boards[board.index()];
        state.history.truncate(played.history_len);
        let offender = played.before.turn();
        if played.illegal {
            let n = &mut state.illegal_moves[offender.index()];
            *n = n.saturating_sub(1);
        }
        if state.pending.as_ref().is_some_and(|p| p.mv == played.mv) {
            state.pending = None;
        }
        self.table
            .take_back(board, &played.before, played.mv, &played.outcome);
        self.push(
            events,
            Some(board),
            EventBody::MoveRetracted {
                color: offender,
                uci: played.mv.to_uci().to_string(),
                reason: super::event::MISREAD.into(),
                fen: self.table.board(board).to_fen(),
            },
        );
    }

    fn status(&mut self, events: &mut Vec<Event>, state: &str, detail: &str) {
        self.push(
            events,
            None,
            EventBody::Status {
                state: state.to_string(),
                detail: detail.to_string(),
            },
        );
    }

    fn push(&mut self, events: &mut Vec<Event>, board: Option<BoardId>, body: EventBody) {
        self.seq += 1;
        events.push(Event {
            id: format!("{}/{}/{}", self.table_id, self.game, self.seq),
            table: self.table_id.clone(),
            ts: self.ts,
            board,
            body,
        });
    }
}

fn reason_text(reason: ResultReason) -> &'static str {
    match reason {
        ResultReason::Checkmate => "checkmate",
        ResultReason::Flag => "time exceeded",
        ResultReason::DoubleFlag => "both teams exceeded the time",
        ResultReason::IllegalMove => "illegal move",
        ResultReason::Resignation => "resignation",
        ResultReason::SimultaneousMates => "simultaneous mates",
        ResultReason::SimultaneousClaims => "simultaneous claims",
        ResultReason::BothStalemated => "both players to move are stalemated",
        ResultReason::PerpetualCheck => "perpetual check",
        ResultReason::Agreement => "agreement",
    }
}

/// The machine-readable name of an illegal-move reason used in events.
fn reason_code(reason: IllegalReason) -> &'static str {
    match reason {
        IllegalReason::NoPieceOnSquare => "no_piece_on_square",
        IllegalReason::WrongPiece => "wrong_piece",
        IllegalReason::WrongColour => "wrong_colour",
        IllegalReason::CannotMoveThatWay => "cannot_move_that_way",
        IllegalReason::PathBlocked => "path_blocked",
        IllegalReason::OwnPieceOnTarget => "own_piece_on_target",
        IllegalReason::LeavesKingInCheck => "leaves_king_in_check",
        IllegalReason::CastlingNotAllowed => "castling_not_allowed",
        IllegalReason::PawnDropOnBackRank => "pawn_drop_on_back_rank",
        IllegalReason::DropOnOccupiedSquare => "drop_on_occupied_square",
        IllegalReason::DropFromEmptyPocket => "drop_from_empty_pocket",
        IllegalReason::DropMate => "drop_mate",
        IllegalReason::PromotionRequired => "promotion_required",
        IllegalReason::InvalidPromotion => "invalid_promotion",
        IllegalReason::CapturesKing => "captures_king",
        IllegalReason::InvalidSteal => "invalid_steal",
    }
}
