//! The per-table tracker: stability per board, decoding, committing moves to the referee,
//! desync and pocket alerts.

use crate::engine::{BoardId, Color, Piece, Role, Square, Table, Variant};
use crate::rules::{
    Action, Consequence, DesyncState, Event, EventBody, IllegalConsequence, MoveReading,
    REPEATED_PRESS, Referee, RefereeError, RuleSet, TimedAction,
};

use super::decode::{
    CONTRAST_SEEN_NATS, Decoded, Decoder, Evidence, HypothesisKind, LogLik, SquareChoice,
    arriving_roles, order_by_change_times, order_by_views, taken_back_move, view_gain,
};
use super::look::LookRefs;

/// Probability a square's top class needs before a change of it is believed (change times).
const CHANGE_CONFIDENCE: f32 = 0.9;

/// How long a mating move waits for an earlier change on the other board to be decided.
const MATE_WAIT_MS: u64 = 2000;

/// Calm pocket readings whose per-count median is compared with drop hypotheses.
const POCKET_READINGS: usize = 5;
/// Views kept of pending presses (a chain is at most 12 moves long).
const MAX_PRESS_VIEWS: usize = 12;
/// Commit decisions per board a rewind may reach back over (within `rewind_moves` moves).
const MAX_REWIND_DECISIONS: usize = 4;
/// Presses in a row by one side after which a board's clock feed is taken to name the wrong
/// side (a misconfigured bridge): from then on the sides it names are ignored.
const SAME_SIDE_PRESSES: u32 = 4;

/// Earlier best sequences kept in the search of a change under way (oldest dropped first).
const MAX_CARRIED: usize = 8;

/// Both colours' pockets (White, Black) on the board across from `b`: where `b`'s captures go.
fn partner_pockets(table: &Table, b: BoardId) -> [crate::engine::Pocket; 2] {
    crate::engine::Color::ALL.map(|c| *table.board(b.other()).pocket(c))
}

/// The pieces `after` holds beyond `before`, one entry per piece.
fn pieces_added(
    before: &[crate::engine::Pocket; 2],
    after: &[crate::engine::Pocket; 2],
) -> Vec<Piece> {
    let mut out = Vec::new();
    for color in crate::engine::Color::ALL {
        for role in Role::POCKET {
            let (was, now) = (
                before[color.index()].count(role),
                after[color.index()].count(role),
            );
            out.extend((was..now).map(|_| Piece { color, role }));
        }
    }
    out
}

/// The per-count median of some readings.
fn median_reading(readings: &std::collections::VecDeque<PocketReading>) -> Option<PocketReading> {
    if readings.is_empty() {
        return None;
    }
    let mut out = PocketReading::default();
    for c in 0..2 {
        for r in 0..5 {
            let mut v: Vec<u8> = readings.iter().map(|x| x.counts[c][r]).collect();
            v.sort_unstable();
            out.counts[c][r] = v[v.len() / 2];
        }
    }
    Some(out)
}
use super::pockets::PocketWatcher;
use super::{
    CLOCK_SIDES_IGNORED, Observation, PocketReading, SquareClass, SquareEvidence, TrackerConfig,
};

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
    /// The same before suspect squares were flattened: what a rewind weighs (the suspects of a
    /// wrong commit are its evidence).
    raw: Option<LogLik>,
    /// The moves the referee recorded for each of the latest commit decisions, newest last (at
    /// most [`MAX_REWIND_DECISIONS`]): what a rewind may take back.
    recent: Vec<Vec<crate::engine::Move>>,
    stable_ts: u64,
    /// Something may have changed since the last decision (motion seen, or a residue left).
    open: bool,
    /// The first hand frame since the last decision (when the board started changing).
    open_since: Option<u64>,
    /// The latest hand frame (or clock press) since the last decision: when the change ended.
    last_motion: Option<u64>,
    /// The clock presses not yet matched by a committed move, oldest first.
    press_times: std::collections::VecDeque<PendingPress>,
    /// Who made the latest press on this board, when the clock feed says.
    last_side: Option<Color>,
    /// When the latest press on this board came.
    last_press_ts: u64,
    /// Presses in a row by the side the latest press named.
    same_side: u32,
    /// The clock feed named one side for [`SAME_SIDE_PRESSES`] presses in a row: its sides are
    /// ignored.
    sides_ignored: bool,
    /// When the referee last answered a move committed on this board with `illegal_move`.
    illegal_ts: Option<u64>,
    /// Pieces that reached this board's pockets by captures committed on the other board, with
    /// the capture's clock press, kept while a pending press here may be older (with a clock
    /// feed only): a drop pressed before such a capture cannot have used its piece.
    arrivals: Vec<(u64, Piece)>,
    /// Moves committed (with a clock feed) before their press arrived, e.g. a fast reply seen
    /// together with the move before it: the next presses complete them instead of waiting
    /// for a move that was already made.
    ahead: u32,
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
    /// The latest calm pocket readings since the last hand frame (the median is used).
    pockets: std::collections::VecDeque<PocketReading>,
    /// Confirmed square changes (square, class, since) in time order, for transients.
    change_log: std::collections::VecDeque<(Square, SquareClass, u64)>,
    /// Since when the board is fully explained but undecided between hypotheses.
    undecided_since: Option<u64>,
    candidate: [Option<(SquareClass, u64)>; 64],
    changed_at: [Option<u64>; 64],
    /// When the last decision was taken: change times before it belong to older moves.
    decided_ts: u64,
    /// The classes the last committed view showed on squares its moves did not explain (square,
    /// class, first seen): often the next move, already made (a fast reply); they count as
    /// transients for the next decision, which the change times since `decided_ts` miss.
    leftover: Vec<(Square, SquareClass, u64)>,
    /// With a clock feed: the latest press while presses are pending, and the least-moving
    /// observation since it (decoded when no calm one comes in time).
    window: Option<PressWindow>,
    /// With a clock feed: the view after each pending press but the latest (oldest first; the
    /// latest press's view is in `window`). When a decision commits several moves at once,
    /// these tell their order: after press `i` the board showed the first `i` moves. Each
    /// with its motion (a calm view, or the least-moving one with a hand in it).
    press_views: std::collections::VecDeque<Option<(f32, LogLik)>>,
    /// The decision under way is tentative (a single calm or the least-moving observation after
    /// a press, not a stable run): it may commit a move that explains every square, nothing else.
    tentative: bool,
    /// The tentative view was calm; a least-moving view that was not (a hand may still hold a
    /// piece over the board) commits only what explains every square.
    tentative_calm: bool,
    /// What each square looked like when last confirmed (see `super::look`).
    looks: LookRefs,
    /// Per square, how many tentative decisions in a row on `residue_pos` left it unexplained
    /// read as the same class (the class, the count).
    residue_streak: [Option<(char, u32)>; 64],
    /// The tracked position those decisions were taken on.
    residue_pos: Option<crate::engine::Position>,
    /// Drops in the best explanations of tentative decisions on `residue_pos`, with the time of
    /// the view that first had each: a drop two views apart agree on is no one-view blip.
    drops_seen: Vec<(crate::engine::Move, u64)>,
    /// The best sequences of earlier undecided decisions (newest last, see
    /// [`Evidence::carried`]); trimmed as their moves are committed, cleared when the board is
    /// decided unchanged.
    carried: Vec<Vec<crate::engine::Move>>,
}

/// A press view (see [`BoardTrack::press_views`]) if it was calm: its motion under `threshold`.
fn calm_view(view: &Option<(f32, LogLik)>, threshold: f32) -> Option<(f32, &LogLik)> {
    view.as_ref()
        .filter(|(m, _)| *m < threshold)
        .map(|(m, ll)| (*m, ll))
}

/// A clock press not yet matched by a committed move.
#[derive(Debug, Clone, Copy)]
struct PendingPress {
    ts: u64,
    /// When the same side pressed again before the other side pressed: the move of this press
    /// did not stand (made and taken back, or no move at all), so no lasting move answers it
    /// (a *void* press).
    again: Option<u64>,
    /// Who pressed, when the clock feed says.
    side: Option<Color>,
    /// A void press already reported (see [`TrackerConfig::repeated_press`]).
    reported: bool,
}

/// The observations after a clock press on one board (see [`TrackerConfig::stall_window_ms`]).
#[derive(Debug, Clone)]
struct PressWindow {
    /// When the window started (the latest press, or the last fallback decision).
    since: u64,
    /// The least-moving observation since then: (motion, ts, log-likelihoods); earliest on ties.
    best: Option<(f32, u64, LogLik)>,
    /// What the board showed after the press: the first calm observation since it, else the
    /// least-moving one (kept across fallback decisions, unlike `best`).
    view: Option<(f32, LogLik)>,
}

impl BoardTrack {
    /// Clock presses not yet matched by committed moves.
    fn presses(&self) -> u32 {
        self.press_times.len() as u32
    }

    /// The views after the pending presses but the latest, one per pressed move in order,
    /// when every pending press vouches for a move, each but the latest has its view, and
    /// the presses whose side the feed names alternate from `to_move` (the side to move on
    /// the tracked board); else none (a view could then belong to another move: a press whose
    /// move was taken back looks like a move press until the same side presses again).
    /// Only calm views are given; one with a hand in it is `None`.
    fn aligned_press_views(&self, to_move: Color, motion_threshold: f32) -> Vec<Option<LogLik>> {
        let n = self.press_views.len();
        if n == 0 || n + 1 != self.presses() as usize || self.move_presses() != self.presses() {
            return Vec::new();
        }
        let mut side = to_move;
        for p in &self.press_times {
            if p.side.is_some_and(|s| s != side) {
                return Vec::new();
            }
            side = side.other();
        }
        self.press_views
            .iter()
            .map(|v| calm_view(v, motion_threshold).map(|(_, ll)| ll.clone()))
            .collect()
    }

    /// Keeps the view after a press whose window just closed, with its motion.
    fn push_press_view(&mut self, view: Option<(f32, LogLik)>) {
        if self.press_views.len() == MAX_PRESS_VIEWS {
            self.press_views.pop_front();
        }
        self.press_views.push_back(view);
    }

    /// Forgets the first `n` press views (their presses are answered).
    fn drain_press_views(&mut self, n: usize) {
        let n = n.min(self.press_views.len());
        self.press_views.drain(..n);
    }

    /// [`Evidence::late_arrivals`]: per pending move press, the arrivals pressed after it.
    fn late_arrivals(&self) -> Vec<[[u8; 5]; 2]> {
        self.press_times
            .iter()
            .filter(|p| p.again.is_none())
            .map(|p| {
                let mut late = [[0u8; 5]; 2];
                for (ts, piece) in &self.arrivals {
                    if *ts > p.ts {
                        let n = &mut late[piece.color.index()][piece.role.index()];
                        *n = n.saturating_add(1);
                    }
                }
                late
            })
            .collect()
    }

    /// Pending presses that vouch for a lasting move (not void: [`PendingPress::again`]).
    fn move_presses(&self) -> u32 {
        self.press_times
            .iter()
            .filter(|p| p.again.is_none())
            .count() as u32
    }

    fn new(pos: &crate::engine::Position) -> BoardTrack {
        BoardTrack {
            shown: std::array::from_fn(|i| {
                SquareClass::on(pos, Square::new(i as u8).expect("i < 64"))
            }),
            candidate: [None; 64],
            pockets: std::collections::VecDeque::new(),
            change_log: std::collections::VecDeque::new(),
            undecided_since: None,
            changed_at: [None; 64],
            decided_ts: 0,
            leftover: Vec::new(),
            window: None,
            press_views: std::collections::VecDeque::new(),
            tentative: false,
            tentative_calm: false,
            looks: LookRefs::default(),
            residue_streak: [None; 64],
            residue_pos: None,
            drops_seen: Vec::new(),
            carried: Vec::new(),
            open_since: None,
            prev: None,
            run: 0,
            sum: Box::new([[0.0; SquareClass::COUNT]; 64]),
            stable: None,
            raw: None,
            recent: Vec::new(),
            stable_ts: 0,
            open: false,
            last_motion: None,
            press_times: std::collections::VecDeque::new(),
            last_side: None,
            last_press_ts: 0,
            same_side: 0,
            sides_ignored: false,
            illegal_ts: None,
            arrivals: Vec::new(),
            ahead: 0,
            unexplained_since: None,
            lost: false,
            suspects: [None; 64],
            refused: None,
        }
    }
}

/// One decision of the tracker on one board, recorded when [`Tracker::record_decisions`] is on:
/// what it believed and why it did or did not commit (for diagnosing a game afterwards, e.g.
/// `tandem eval game --trace FILE`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Decision {
    pub board: BoardId,
    /// The time of the view decided on.
    pub ts: u64,
    /// A single view after a press (or without a clock), not a stable run.
    pub tentative: bool,
    /// Clock presses pending on the board.
    pub presses: u32,
    /// The best hypothesis: its kind, moves (UCI) and score (nats, priors included).
    pub kind: String,
    pub best: Vec<String>,
    pub score: f32,
    pub runner_up: Option<Vec<String>>,
    pub runner_up_score: Option<f32>,
    pub margin: f32,
    /// Whether the best hypothesis passed the commit rules (it may still wait for the other
    /// board when it would end the match).
    pub committed: bool,
    /// Squares the best hypothesis leaves unexplained.
    pub unexplained: Vec<SquareEvidence>,
    /// The squares the best hypothesis or the runner-up changes, or the view reads otherwise
    /// than the tracked position ([`Decoder::contrast`]).
    pub squares: Vec<SquareChoice>,
    /// The pocket counts drops were weighed with (White's zone, Black's; pawn to queen): the
    /// median of the board's latest calm readings, if there were any.
    pub pocket: Option<[[u8; 5]; 2]>,
    /// Pieces handed over by captures on the other board that no reading has shown arriving
    /// yet, per colour and role: drops may use them.
    pub in_transit: [[u8; 5]; 2],
    /// Whether the other board had an undecided change: only then is a drop of a piece its
    /// capture may be handing over considered (`InTransitDrop`).
    pub other_busy: bool,
    /// The tracked position decided from (FEN with the pockets in brackets; after a rewind, the
    /// position it reached): what the hypotheses could play, e.g. whether a drop's piece was
    /// held yet.
    pub fen: String,
}

/// The squares named in `evidence`.
fn squares_of(evidence: &[SquareEvidence]) -> Vec<Square> {
    evidence
        .iter()
        .filter_map(|e| e.square.parse().ok())
        .collect()
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
    /// The stream has ended ([`Tracker::finish`], no observation since): no later view can
    /// decide a pending press, so its best chain is committed as it stands.
    finished: bool,
    table_id: String,
    game: u32,
    seq: u64,
    /// Referee actions applied since the last [`Tracker::take_applied`].
    applied: Vec<TimedAction>,
    /// Decisions recorded since the last [`Tracker::take_decisions`], when recording is on.
    decisions: Option<Vec<Decision>>,
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
            pockets: PocketWatcher::new(cfg.pocket_grace_ms)
                .with_looks(cfg.pocket_look_levels)
                .with_glimpses(cfg.pocket_glimpses)
                .excusing_undecided(cfg.pocket_excuse_undecided)
                .judging_totals(cfg.pocket_totals)
                .counting_partner_arrivals(cfg.pocket_partner_arrivals),
            cfg,
            referee,
            variant,
            boards,
            clock_feed: false,
            finished: false,
            table_id: table_id.to_string(),
            game,
            seq: 0,
            applied: Vec::new(),
            decisions: None,
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

    /// The referee actions (moves, presses) the tracker applied since the last call, in order:
    /// replaying them on another referee from the same position gives the same table. The daemon
    /// journals them so that its own referee follows the camera.
    pub fn take_applied(&mut self) -> Vec<TimedAction> {
        std::mem::take(&mut self.applied)
    }

    /// Starts (or stops) recording every decision (see [`Decision`]).
    pub fn record_decisions(&mut self, on: bool) {
        self.decisions = on.then(Vec::new);
    }

    /// The decisions recorded since the last call (empty when recording is off).
    pub fn take_decisions(&mut self) -> Vec<Decision> {
        self.decisions
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// The configuration in use.
    pub fn config(&self) -> &TrackerConfig {
        &self.cfg
    }

    /// A clock press on `board` at `ts` by a side the feed does not name (see
    /// [`Tracker::press_by`]).
    pub fn press(&mut self, board: BoardId, ts: u64) -> Vec<Event> {
        self.press_by(board, ts, None)
    }

    /// A clock press on `board` at `ts` by `side` (the player who pressed, if the clock says):
    /// from the first press on, the table has a clock feed and moves are committed at the next
    /// stable observation after a press (004 §7). A side that presses twice in a row had its
    /// first press's move taken back (an illegal move the player noticed) or made none: that
    /// press vouches for no move, and what its view showed is reported if it was an illegal
    /// move (see [`TrackerConfig::taken_back_nats`]), else the repeated press itself (see
    /// [`TrackerConfig::repeated_press`]).
    pub fn press_by(&mut self, board: BoardId, ts: u64, side: Option<Color>) -> Vec<Event> {
        self.clock_feed = true;
        let mut events = Vec::new();
        let bt = &mut self.boards[board.index()];
        let mut side = side.filter(|_| !bt.sides_ignored);
        if side.is_some() && bt.last_side == side {
            bt.same_side += 1;
        } else {
            bt.same_side = 1;
        }
        if side.is_some() && bt.same_side >= SAME_SIDE_PRESSES {
            bt.sides_ignored = true;
            bt.last_side = None;
            side = None;
            let body = EventBody::Status {
                state: CLOCK_SIDES_IGNORED.to_string(),
                detail: format!(
                    "board {board}: the clock named the same player for {SAME_SIDE_PRESSES} \
                     presses in a row; which player pressed is ignored from now on"
                ),
            };
            events.push(self.event(ts, Some(board), body));
        }
        let bt = &mut self.boards[board.index()];
        let repeated = side.is_some() && bt.last_side == side;
        let earlier = PendingPress {
            ts: bt.last_press_ts,
            side,
            again: Some(ts),
            reported: false,
        };
        bt.last_side = side;
        bt.last_press_ts = ts;
        if repeated {
            let behind = bt.press_times.len() > 1;
            match bt.press_times.back_mut() {
                // Presses before it still wait for their moves, so it cannot be answered yet:
                // say now that its move did not stand.
                Some(last) if behind => {
                    last.again = Some(ts);
                    last.reported = true;
                    let last = *last;
                    events.extend(self.repeated_press_alert(board, ts, last));
                }
                Some(last) => last.again = Some(ts),
                // The earlier press was answered already, by a move decided for it or by a
                // view that showed no change: unless that was the illegal move, say now that
                // its move did not stand.
                None if bt.illegal_ts.is_some_and(|t| t >= earlier.ts) => {}
                None => events.extend(self.repeated_press_alert(board, ts, earlier)),
            }
        }
        let bt = &mut self.boards[board.index()];
        if bt.ahead > 0 {
            // This press completes a move committed before it: nothing is pending.
            bt.ahead -= 1;
            let press = TimedAction {
                ts: Some(ts),
                action: Action::Press { board },
            };
            self.applied.push(press.clone());
            events.extend(self.referee.apply(press));
            return events;
        }
        if bt.presses() > 0 {
            // The previous press's window closes: keep what the board showed after it.
            let view = bt.window.take().and_then(|w| w.view);
            bt.push_press_view(view);
        }
        bt.press_times.push_back(PendingPress {
            ts,
            side,
            again: None,
            reported: false,
        });
        bt.last_motion = Some(ts);
        bt.open = true;
        // The latest press says every move so far is complete: the window starts again.
        bt.window = Some(PressWindow {
            since: ts,
            best: None,
            view: None,
        });
        if bt.press_times.front().is_some_and(|p| p.again.is_some()) {
            // Nothing before the press whose move was taken back is pending: say so now, not
            // at the next commit.
            let aligned = bt.press_views.len() + 1 == bt.presses() as usize;
            let answered = self.void_presses(board, ts, aligned.then_some(0), &mut events);
            let bt = &mut self.boards[board.index()];
            bt.drain_press_views(answered);
        }
        let bt = &mut self.boards[board.index()];
        if bt.stable.is_some() {
            bt.stable_ts = ts;
            events.extend(self.decide(board, true));
        }
        self.close_window_if_done(board);
        events
    }

    /// The stream of observations ends (the recording or the game is over): every board with
    /// a pending press is decided tentatively on the least-moving observation since its latest
    /// press, then, while presses remain, on the calm views after its pending presses (newest
    /// first, until one commits). A best chain is committed if it beats "no change" and its
    /// runner-up at all (unexplained squares, a single sighting of a drop and a small lead no
    /// longer hold it back: no later view will come), unless it is a drop of a piece still to
    /// come from the other board; of a chain longer than the presses, the pressed moves.
    pub fn finish(&mut self) -> Vec<Event> {
        self.finished = true;
        let mut events = Vec::new();
        for b in [BoardId::A, BoardId::B] {
            let bt = &mut self.boards[b.index()];
            if !self.clock_feed || bt.presses() == 0 {
                continue;
            }
            let mut ts = bt.last_press_ts;
            if let Some((motion, at, ll)) = bt.window.as_mut().and_then(|w| w.best.take()) {
                ts = at;
                events.extend(self.decide_tentative(b, ll, at, motion));
            }
            // That view may show a hand over the board (the recording ended mid-move). The
            // calm views after the pending presses, newest first, may still show the moves
            // pressed by then (decided before the end, they met the stricter rules of a live
            // decision), and nothing later will; the first that commits has the last word.
            let bt = &self.boards[b.index()];
            let threshold = self.cfg.motion_threshold;
            let views: Vec<_> = bt
                .window
                .iter()
                .map(|w| &w.view)
                .chain(bt.press_views.iter().rev())
                .filter_map(|v| calm_view(v, threshold).map(|(m, ll)| (m, ll.clone())))
                .collect();
            for (motion, ll) in views {
                if self.boards[b.index()].presses() == 0 {
                    break;
                }
                let decided = self.decide_tentative(b, ll, ts, motion);
                let committed = decided
                    .iter()
                    .any(|e| matches!(e.body, EventBody::Move { .. }));
                events.extend(decided);
                if committed {
                    break;
                }
            }
        }
        events
    }

    /// Closes the press window of `b` once no press is pending any more.
    fn close_window_if_done(&mut self, b: BoardId) {
        let bt = &mut self.boards[b.index()];
        if bt.presses() == 0 {
            bt.window = None;
            bt.drain_press_views(usize::MAX);
        }
    }

    /// Keeps the view of the board after its latest press (see [`PressWindow::view`]).
    fn note_press_view(&mut self, obs: &Observation) {
        let bt = &mut self.boards[obs.board.index()];
        let Some(win) = bt.window.as_mut() else {
            return;
        };
        // The first calm observation stays; until one comes, the least-moving one.
        let better = match &win.view {
            None => true,
            Some((m, _)) => *m >= self.cfg.motion_threshold && obs.motion < *m,
        };
        if better {
            win.view = Some((obs.motion, LogLik::from_observation(obs, &self.cfg)));
        }
    }

    /// Suspect squares (persistent misreads) made uninformative in `ll`; a suspect whose
    /// reading changed is forgotten.
    fn flatten_suspects(&mut self, b: BoardId, ll: &mut LogLik) {
        let bt = &mut self.boards[b.index()];
        for sq in Square::all() {
            if let Some(s) = bt.suspects[sq.index()] {
                if ll.argmax(sq) == s {
                    ll.flatten(sq);
                } else {
                    bt.suspects[sq.index()] = None;
                }
            }
        }
    }

    /// Decides `b` tentatively on one observation's reading (`ll` at `ts`, its motion score
    /// `motion`), outside a stable run: only a move that explains every square is committed;
    /// "no change" and unexplained views change nothing (no press is dropped, no desync clock
    /// starts).
    fn decide_tentative(&mut self, b: BoardId, mut ll: LogLik, ts: u64, motion: f32) -> Vec<Event> {
        let raw = ll.clone();
        self.flatten_suspects(b, &mut ll);
        let bt = &mut self.boards[b.index()];
        let saved = (bt.stable.take(), bt.stable_ts, bt.raw.replace(raw));
        bt.stable = Some(ll);
        bt.stable_ts = ts;
        bt.tentative = true;
        bt.tentative_calm = motion < self.cfg.motion_threshold;
        let events = self.decide(b, true);
        let bt = &mut self.boards[b.index()];
        bt.tentative = false;
        (bt.stable, bt.stable_ts, bt.raw) = saved;
        self.close_window_if_done(b);
        events
    }

    /// Without a clock feed, a board that has been changing for `stall_window_ms` without a
    /// stable run is decided tentatively on single calm observations. With a clock feed, a board with a pending press is
    /// decided on the best evidence after the press: the first calm observation (even before a
    /// stable run forms), else, once
    /// `stall_window_ms` have passed, the least-moving observation since the press; then the
    /// window starts again, so a press is re-examined until it is committed (never stall).
    fn press_window(&mut self, obs: &Observation, calm: bool, stable: bool) -> Vec<Event> {
        let b = obs.board;
        let window_ms = self.cfg.stall_window_ms;
        if window_ms == 0 {
            // Off: only stable runs are decoded (see `TrackerConfig::stall_window_ms`).
            return Vec::new();
        }
        let bt = &mut self.boards[b.index()];
        if !self.clock_feed {
            // Without a clock the move is complete at stability; a board that has been changing
            // for `stall_window_ms` without a stable run (hands keep coming, e.g. at 5 fps) is
            // decided on its single calm frames (never stall).
            if calm
                && !stable
                && bt.open
                && bt
                    .open_since
                    .is_some_and(|t| obs.ts.saturating_sub(t) >= window_ms)
            {
                let ll = LogLik::from_observation(obs, &self.cfg);
                return self.decide_tentative(b, ll, obs.ts, obs.motion);
            }
            return Vec::new();
        }
        if bt.presses() == 0 {
            bt.window = None;
            return Vec::new();
        }
        let Some(win) = bt.window.as_mut() else {
            return Vec::new();
        };
        if obs.ts <= win.since {
            return Vec::new();
        }
        if calm && !stable {
            let ll = LogLik::from_observation(obs, &self.cfg);
            return self.decide_tentative(b, ll, obs.ts, obs.motion);
        }
        if stable {
            // A stable run is decided by the normal path.
            return Vec::new();
        }
        if win.best.as_ref().is_none_or(|(m, _, _)| obs.motion < *m) {
            win.best = Some((obs.motion, obs.ts, LogLik::from_observation(obs, &self.cfg)));
        }
        if obs.ts < win.since.saturating_add(window_ms) {
            return Vec::new();
        }
        let best = win.best.take();
        win.since = obs.ts;
        match best {
            Some((motion, ts, ll)) => self.decide_tentative(b, ll, ts, motion),
            None => Vec::new(),
        }
    }

    /// Takes one observation and returns the events it causes, in order.
    pub fn observe(&mut self, obs: &Observation) -> Vec<Event> {
        // The stream goes on after all (a flush, not the end).
        self.finished = false;
        let b = obs.board;
        let calm = obs.motion < self.cfg.motion_threshold;
        let mut events = Vec::new();
        self.note_press_view(obs);
        if let Some(reading) = &obs.pockets {
            // The decoder weighs drops with every reading of a calm board.
            let bt = &mut self.boards[b.index()];
            if calm {
                if bt.pockets.len() == POCKET_READINGS {
                    bt.pockets.pop_front();
                }
                bt.pockets.push_back(*reading);
            }
            self.pockets
                .on_glimpse(b, obs.ts, reading, self.referee.table());
            // The pocket alerts, with the zones that are calm and read surely enough.
            let zones_calm = reading.calm.unwrap_or([calm; 2]);
            let sure = reading.confidence.map_or([true; 2], |c| {
                c.map(|c| c >= self.cfg.pocket_min_confidence)
            });
            let readable = [zones_calm[0] && sure[0], zones_calm[1] && sure[1]];
            if readable.contains(&true) {
                // Pressed moves not yet committed may be drops the pocket already shows: the
                // engine lags behind them.
                let undecided = self.undecided_by_colour(b);
                let bt = &self.boards[b.index()];
                if self.cfg.pocket_board_view {
                    // Only a view taken since the last decision: an older one shows pieces
                    // since moved.
                    let shown = match &bt.raw {
                        Some(view) if bt.stable_ts >= bt.decided_ts => unexpected_pieces(
                            view,
                            self.referee.table().board(b),
                            self.cfg.disagree_nats,
                        ),
                        _ => [[0; 5]; 2],
                    };
                    self.pockets.on_board_view(b, shown);
                }
                if self.cfg.pocket_partner_arrivals && self.clock_feed {
                    // Colour c's pocket on `b` is fed by the other colour on the other board.
                    let [white, black] = self.undecided_by_colour(b.other());
                    self.pockets.on_partner_undecided(b, [black, white]);
                }
                let alerts = self.pockets.on_reading(
                    b,
                    obs.ts,
                    reading,
                    readable,
                    self.referee.table(),
                    undecided,
                );
                for body in alerts {
                    events.push(self.event(obs.ts, Some(b), body));
                }
            }
        }
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
                if bt.change_log.len() == 256 {
                    bt.change_log.pop_front();
                }
                bt.change_log.push_back((sq, c, since));
            } else {
                bt.candidate[i] = Some((c, obs.ts));
            }
        }
        if !calm {
            bt.prev = None;
            bt.run = 0;
            bt.stable = None;
            // Pocket readings from before a hand are of an earlier state (a drop takes the
            // piece out of the pocket): decisions weigh only those since.
            bt.pockets.clear();
            bt.last_motion = Some(obs.ts);
            bt.open = true;
            bt.open_since.get_or_insert(obs.ts);
            bt.refused = None;
            events.extend(self.press_window(obs, false, false));
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
        let ll = LogLik::from_observation(obs, &self.cfg);
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
            events.extend(self.press_window(obs, true, false));
            return events;
        }
        let raw = LogLik::from_sum(&bt.sum, bt.run).with_view(obs);
        let mut mean = raw.clone();
        self.flatten_suspects(b, &mut mean);
        let bt = &mut self.boards[b.index()];
        bt.stable = Some(mean);
        bt.raw = Some(raw);
        bt.stable_ts = obs.ts;
        let due = if self.clock_feed {
            bt.presses() > 0 || bt.lost || (bt.open && bt.unexplained_since.is_some())
        } else {
            bt.open || bt.lost
        };
        if due {
            events.extend(self.decide(b, true));
            self.close_window_if_done(b);
        } else if !self.boards[b.index()].open && self.note_suspects(b) && !self.clock_feed {
            // (While the board is open, a change is not a misread yet: with a clock feed the
            // press usually comes after the board is stable again.)
            // Several squares changed without any motion seen (a move between two frames):
            // decide now rather than call real changes misreads.
            let bt = &mut self.boards[b.index()];
            bt.last_motion.get_or_insert(obs.ts);
            bt.open = true;
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
        for (sq, seen, _) in disagree {
            bt.suspects[sq.index()] = Some(seen);
        }
        false
    }

    /// Decodes board `b` from its current stable reading and acts on the result.
    fn decide(&mut self, b: BoardId, may_wait_for_other: bool) -> Vec<Event> {
        let mut events = Vec::new();
        let Some(mut ll) = self.boards[b.index()].stable.clone() else {
            return events;
        };
        // Squares that look as they did when last confirmed hold what they held then.
        self.boards[b.index()]
            .looks
            .anchor(&mut ll, self.referee.table().board(b), &self.cfg);
        // Keep the two boards in playing order: a change on the other board that ended earlier
        // and is ready to be decided goes first (a capture before its drop, a move before the
        // mate that ends the match).
        let (me, them) = (&self.boards[b.index()], &self.boards[b.other().index()]);
        if may_wait_for_other
            && them.open
            && them.stable.is_some()
            && (!self.clock_feed || them.presses() > 0)
            && them.last_motion.unwrap_or(u64::MAX) < me.last_motion.unwrap_or(u64::MAX)
        {
            events.extend(self.decide(b.other(), false));
        }
        let ts = self.boards[b.index()].stable_ts;
        let other = self.boards[b.other().index()].stable.clone();
        let other_busy = self.boards[b.other().index()].open;
        let (decoded, contrast, pocket, in_transit) = {
            let table = self.referee.table();
            let bt = &self.boards[b.index()];
            let mut ev = Evidence {
                pocket: median_reading(&bt.pockets),
                in_transit: self.pockets.in_transit(b),
                presses: self.clock_feed.then_some(bt.move_presses()),
                carried: bt.carried.clone(),
                views: bt.aligned_press_views(table.board(b).turn(), self.cfg.motion_threshold),
                late_arrivals: if self.clock_feed && self.cfg.prior_drop_before_capture < 0.0 {
                    bt.late_arrivals()
                } else {
                    Vec::new()
                },
                ..Evidence::default()
            };
            let pos = table.board(b);
            for &(sq, class, since) in bt.change_log.iter().rev() {
                if since < bt.decided_ts {
                    break;
                }
                if class != SquareClass::on(pos, sq) && !ev.add_transient(sq, class, since) {
                    break;
                }
            }
            for &(sq, class, since) in &bt.leftover {
                if class != SquareClass::on(pos, sq) && !ev.add_transient(sq, class, since) {
                    break;
                }
            }
            let decoder = Decoder::new(table, b, &self.variant, &self.cfg);
            let decoded = decoder.decode(&ll, other.as_ref(), other_busy, &ev);
            let contrast = self
                .decisions
                .is_some()
                .then(|| decoder.contrast(&ll, &decoded));
            (
                decoded,
                contrast,
                ev.pocket.map(|p| p.counts),
                ev.in_transit,
            )
        };
        // A pending clock press says a move was made: "no change" and runner-ups need less
        // beating (`commit_margin_pressed`), but only for as many moves as were pressed: more
        // moves than presses claim moves no press vouches for yet.
        let presses = self.boards[b.index()].move_presses();
        let pressed = self.clock_feed && presses > 0;
        let vouched = pressed && decoded.best.moves.len() <= presses as usize;
        let (margin_min, none_min) = if vouched {
            (
                self.cfg.commit_margin_pressed,
                self.cfg.commit_margin_pressed,
            )
        } else {
            (self.cfg.commit_margin, self.cfg.commit_margin_none)
        };
        let margin_ok = decoded.margin() >= margin_min;
        let best = &decoded.best;
        let beats_none = best.score >= none_min;
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

        let clean = decoded.disagreeing.len() < self.cfg.desync_min_squares as usize;
        if bt.tentative {
            self.note_residue(b, &decoded);
        }
        let bt = &self.boards[b.index()];
        // A fully explained view that stays undecided gets no better by waiting: after a while
        // the best explanation is taken (never stall).
        let waited_out = decoded.disagreeing.is_empty()
            && beats_none
            && bt
                .undecided_since
                .is_some_and(|t| ts.saturating_sub(t) >= self.cfg.undecided_commit_ms);
        // An illegal move is only believed when it explains the whole board.
        let believable = best.kind != HypothesisKind::Illegal || decoded.disagreeing.is_empty();
        let tentative = bt.tentative;
        // A move and its reply both pressed while the first is still undecided, long after its
        // press: the best guess now beats a longer chain later (`overdue_ms`). Not a tie,
        // though: two chains that explain the views equally (moves on squares no view shows)
        // are a coin toss, and one wrong commit costs the moves after it; a later view of the
        // squares may still tell them apart, unless the presses pile up
        // (`overdue_tie_presses`).
        let overdue = vouched
            && (!decoded.tied() || presses >= self.cfg.overdue_tie_presses)
            && presses >= 2
            && self.cfg.overdue_ms > 0
            && bt
                .press_times
                .iter()
                .find(|p| p.again.is_none())
                .is_some_and(|p| ts.saturating_sub(p.ts) >= self.cfg.overdue_ms)
            && !best.moves.is_empty();
        // The stream has ended: no later view can decide the pending presses, so the best
        // chain is the last word on them (a guess unless its margin says otherwise). A legal
        // chain need only beat "no change" as the presses score it (a move per press): a view
        // that barely shows the pressed moves shows nothing better either; an illegal one must
        // also beat the board unchanged without presses. Of a chain
        // longer than the presses, only as many moves as were pressed. Not a drop of a piece
        // still to come from the other board: no later view will show that capture, and the
        // referee would answer the guess with an alert.
        let last_word = self.finished
            && pressed
            && (vouched || best.kind == HypothesisKind::Sequence)
            && best.kind != HypothesisKind::InTransitDrop
            && (best.kind != HypothesisKind::Illegal || best.score > 0.0)
            && !best.moves.is_empty()
            && decoded.margin() > 0.0;
        let committable = best.kind != HypothesisKind::NoChange
            && believable
            && (!tentative
                || last_word
                || (self.residue_unrelated(b, &decoded, pressed)
                    && self.not_a_one_view_blip(b, ts, &best.moves, vouched)))
            && (margin_ok || (waited_out && !tentative) || overdue || last_word)
            && (beats_none || last_word)
            && bt.refused != Some(best.fingerprint);
        if let Some(trace) = self.decisions.as_mut() {
            let ucis = |h: &crate::tracker::Hypothesis| -> Vec<String> {
                h.moves.iter().map(|m| m.to_uci().to_string()).collect()
            };
            trace.push(Decision {
                board: b,
                ts,
                tentative: bt.tentative,
                presses: bt.presses(),
                kind: format!("{:?}", best.kind),
                best: ucis(best),
                score: best.score,
                runner_up: decoded.runner_up.as_ref().map(ucis),
                runner_up_score: decoded.runner_up.as_ref().map(|r| r.score),
                margin: decoded.margin(),
                committed: committable,
                unexplained: decoded.disagreeing.clone(),
                squares: contrast.unwrap_or_default(),
                pocket,
                in_transit,
                other_busy,
                fen: self.referee.table().board(b).to_fen(),
            });
        }
        if tentative {
            let seen = &mut self.boards[b.index()].drops_seen;
            for &m in &decoded.best.moves {
                if matches!(m, crate::engine::Move::Drop { .. }) && !seen.iter().any(|s| s.0 == m) {
                    seen.push((m, ts));
                }
            }
        }
        if let Some(rewound) = self.try_rewind(b, ts, &decoded) {
            events.extend(rewound);
            return events;
        }
        let (best, bt) = (&decoded.best, &self.boards[b.index()]);
        if !committable
            && !best.moves.is_empty()
            && matches!(best.kind, HypothesisKind::Sequence | HypothesisKind::Move)
            && !bt.carried.contains(&best.moves)
        {
            let moves = best.moves.clone();
            let carried = &mut self.boards[b.index()].carried;
            if carried.len() >= MAX_CARRIED {
                carried.remove(0);
            }
            carried.push(moves);
        }
        let (best, bt) = (&decoded.best, &self.boards[b.index()]);
        if committable && may_wait_for_other && self.mate_waits_for_other(b, &best.moves) {
            // This would end the match while the other board, whose change ended first, is
            // not decided yet: its move came first, so wait for it (a frame or two).
            return events;
        }
        if committable {
            let fp = best.fingerprint;
            let moves = if best.kind == HypothesisKind::Sequence {
                // Change times of this chain: confirmed changes since the last decision, else a
                // change seen once that the stable reading agrees with.
                let times: [Option<u64>; 64] = std::array::from_fn(|i| {
                    let sq = Square::new(i as u8).expect("i < 64");
                    let confirmed = bt.changed_at[i].filter(|&t| t >= bt.decided_ts);
                    let seen_once = bt.candidate[i]
                        .filter(|&(c, t)| t >= bt.decided_ts && ll.argmax(sq) == c)
                        .map(|(_, t)| t);
                    confirmed.or(seen_once)
                });
                let start = self.referee.table().board(b);
                let views: Vec<Option<&LogLik>> = bt
                    .press_views
                    .iter()
                    .map(|v| v.as_ref().map(|(_, ll)| ll))
                    .collect();
                order_by_views(start, &best.moves, &views, &self.variant).unwrap_or_else(|| {
                    order_by_change_times(start, &best.moves, &times, &self.variant)
                })
            } else {
                best.moves.clone()
            };
            // An illegal move after legal ones: the legal ones are committed here, the illegal
            // one is decided again from the position they reach (refusal and alert as usual).
            let mut moves = moves;
            if last_word && !vouched {
                moves.truncate(presses as usize);
            }
            let illegal_after = best.kind == HypothesisKind::Illegal && moves.len() > 1;
            let moves = if illegal_after {
                moves[..moves.len() - 1].to_vec()
            } else {
                moves
            };
            let before = self.referee.table().to_fen();
            let pending = bt.presses();
            // Press k's view is `press_views[k]` while every pending press but the latest has
            // one (the latest press's view is still in its window).
            let aligned = bt.press_views.len() + 1 == pending as usize;
            let taken_back = if illegal_after
                || pending as usize <= moves.len()
                || bt.last_side.is_some()
                || !aligned
            {
                None
            } else {
                self.taken_back(b, &moves)
            };
            // Presses this decision answers, in order (moves, and presses whose move did not
            // stand).
            let reading = MoveReading::new(decoded.margin(), !margin_ok);
            let mut used = 0;
            let mut recorded = Vec::new();
            for (i, mv) in moves.into_iter().enumerate() {
                if let Some((_, illegal)) = taken_back.filter(|&(at, _)| at == i) {
                    events.extend(self.commit(b, illegal, ts, true, reading));
                    used += 1;
                }
                used += self.void_presses(b, ts, aligned.then_some(used), &mut events);
                let n = self.referee.moves_recorded(b);
                events.extend(self.commit(b, mv, ts, true, reading));
                used += 1;
                if self.referee.moves_recorded(b) > n {
                    recorded.push(mv);
                }
            }
            used += self.void_presses(b, ts, aligned.then_some(used), &mut events);
            self.note_recent(b, recorded);
            let bt = &mut self.boards[b.index()];
            // The views of the presses answered are used up.
            bt.drain_press_views(used);
            let used = used as u32;
            if self.clock_feed && pending > 0 && used > pending {
                // A press decided more moves than were pressed (a fast reply seen with its
                // move): their presses are still to come.
                bt.ahead += used - pending;
            }
            bt.decided_ts = ts;
            bt.undecided_since = None;
            if illegal_after && self.referee.table().to_fen() != before {
                // No look is confirmed: the view shows the illegal move's squares changed.
                events.extend(self.decide(b, false));
                return events;
            }
            if self.referee.table().to_fen() == before {
                bt.refused = Some(fp);
                bt.leftover.clear();
            } else {
                let unexplained = squares_of(&decoded.disagreeing);
                bt.looks
                    .confirm(&ll, self.referee.table().board(b), &unexplained);
                bt.leftover = unexplained
                    .iter()
                    .map(|&sq| {
                        let class = ll.argmax(sq);
                        let since = bt
                            .change_log
                            .iter()
                            .rev()
                            .find(|&&(s, c, _)| s == sq && c == class)
                            .map_or(ts, |&(_, _, t)| t);
                        (sq, class, since)
                    })
                    .collect();
            }
            if decoded.disagreeing.is_empty() {
                bt.open = false;
                bt.open_since = None;
                bt.last_motion = None;
            }
            if clean {
                self.explained(b, ts, &mut events);
            }
            return events;
        }
        if tentative {
            // A single view outside a stable run: only a fully explained move is believed.
            return events;
        }
        if best.kind == HypothesisKind::NoChange
            && margin_ok
            && clean
            && pressed
            && self.awaits_partner(b, &ll, ts)
        {
            // The press's drop waits for the capture on the other board that hands its piece
            // over: decide that board first if it can be, and keep this board's presses.
            if may_wait_for_other && self.boards[b.other().index()].stable.is_some() {
                let before = self.referee.table().to_fen();
                events.extend(self.decide(b.other(), false));
                if self.referee.table().to_fen() != before {
                    events.extend(self.decide(b, false));
                }
            }
            return events;
        }
        if best.kind == HypothesisKind::NoChange && margin_ok && clean {
            let bt = &mut self.boards[b.index()];
            bt.open = false;
            bt.open_since = None;
            bt.last_motion = None;
            bt.decided_ts = ts;
            bt.undecided_since = None;
            bt.leftover.clear();
            // Nothing changed after all: the chains earlier views suggested are over.
            bt.carried.clear();
            if self.clock_feed {
                bt.press_times.clear();
                bt.drain_press_views(usize::MAX);
            }
            let unexplained = squares_of(&decoded.disagreeing);
            bt.looks
                .confirm(&ll, self.referee.table().board(b), &unexplained);
            self.explained(b, ts, &mut events);
            let _ = self.note_suspects(b);
            return events;
        }
        if best.kind != HypothesisKind::NoChange && bt.refused == Some(best.fingerprint) && clean {
            // Still showing a move the referee refused: nothing new to say.
            return events;
        }
        // Unexplained (or undecided): wait for more evidence; after the grace period, desync.
        let evidence = if believable {
            &decoded.disagreeing
        } else {
            &decoded.disagreeing_unchanged
        };
        let clean = evidence.len() < self.cfg.desync_min_squares as usize;
        let bt = &mut self.boards[b.index()];
        if evidence.is_empty() {
            bt.undecided_since.get_or_insert(ts);
        } else {
            bt.undecided_since = None;
        }
        let since = *bt.unexplained_since.get_or_insert(ts);
        if !bt.lost && ts.saturating_sub(since) >= self.cfg.desync_grace_ms && !clean {
            bt.lost = true;
            let fen = self.referee.table().board(b).to_fen();
            let body = EventBody::Desync {
                state: DesyncState::Lost,
                squares: evidence.clone(),
                fen,
            };
            events.push(self.event(ts, Some(b), body));
        }
        events
    }

    /// Whether board `b`'s view `ll` shows, on a square empty in the tracked position, a piece
    /// (by more than [`CONTRAST_SEEN_NATS`] over empty) whose owner holds none of its kind but
    /// could receive one from a capture on the other board, while that board has a press
    /// undecided and `b`'s oldest pending press is younger than `await_partner_ms`.
    fn awaits_partner(&self, b: BoardId, ll: &LogLik, ts: u64) -> bool {
        let wait = self.cfg.await_partner_ms;
        let bt = &self.boards[b.index()];
        let them = &self.boards[b.other().index()];
        if wait == 0
            || them.presses() == 0
            || bt
                .press_times
                .front()
                .is_none_or(|p| ts.saturating_sub(p.ts) > wait)
        {
            return false;
        }
        let table = self.referee.table();
        let pos = table.board(b);
        let other = table.board(b.other());
        let mut arriving: [Option<[bool; 6]>; 2] = [None, None];
        for sq in Square::all() {
            if pos.role_at(sq).is_some() {
                continue;
            }
            let seen = ll.argmax(sq);
            let Some(piece) = seen.piece() else { continue };
            if piece.role == Role::King
                || pos.pocket(piece.color).count(piece.role) > 0
                || ll.get(sq, seen) - ll.get(sq, SquareClass::Empty) <= CONTRAST_SEEN_NATS
            {
                continue;
            }
            let roles = arriving[piece.color.index()]
                .get_or_insert_with(|| arriving_roles(other, piece.color, &self.variant));
            if roles[piece.role.index()] {
                return true;
            }
        }
        false
    }

    /// The table after `moves` on `b` (legal or physical), if they can be played.
    fn table_after(&self, b: BoardId, moves: &[crate::engine::Move]) -> Option<Table> {
        let mut after = self.referee.table().clone();
        for &m in moves {
            if after.play(b, m, &self.variant).is_err()
                && after.play_physical(b, m, &self.variant).is_err()
            {
                return None;
            }
        }
        Some(after)
    }

    /// Whether a tentative decision (one view, at `ts`) may commit `moves` on `b`: every square
    /// a drop lands on (and that still shows the dropped piece at the end) must have shown its
    /// new class confidently in two consecutive observations (hand frames included), or, for a
    /// chain the pending presses vouch for (`vouched`: no more moves than presses), the drop
    /// must have been in the best explanation of an earlier view on the same position. A drop
    /// onto any empty square is legal in bughouse, so a one-frame misread of one square would
    /// otherwise become a move; a board move changes two squares, which one misread does not.
    fn not_a_one_view_blip(
        &self,
        b: BoardId,
        ts: u64,
        moves: &[crate::engine::Move],
        vouched: bool,
    ) -> bool {
        let Some(after) = self.table_after(b, moves) else {
            return false;
        };
        let (before, after) = (self.referee.table().board(b), after.board(b));
        let bt = &self.boards[b.index()];
        moves.iter().all(|m| match *m {
            crate::engine::Move::Drop { to, .. } => {
                let new = SquareClass::on(after, to);
                new == SquareClass::on(before, to)
                    || new == SquareClass::Empty
                    || bt.shown[to.index()] == new
                    || (vouched && bt.drops_seen.iter().any(|&(d, t)| d == *m && t < ts))
            }
            _ => true,
        })
    }

    /// Counts, per square, the tentative decisions in a row on the same tracked position that
    /// left it unexplained read as the same class.
    fn note_residue(&mut self, b: BoardId, decoded: &Decoded) {
        let pos = self.referee.table().board(b);
        let bt = &mut self.boards[b.index()];
        if bt.residue_pos.as_ref() != Some(pos) {
            bt.residue_pos = Some(pos.clone());
            bt.residue_streak = [None; 64];
            bt.drops_seen.clear();
        }
        let mut next = [None; 64];
        for e in &decoded.disagreeing {
            if let Ok(sq) = e.square.parse::<Square>() {
                let run = match bt.residue_streak[sq.index()] {
                    Some((seen, n)) if seen == e.observed => n + 1,
                    _ => 1,
                };
                next[sq.index()] = Some((e.observed, run));
            }
        }
        bt.residue_streak = next;
    }

    /// Whether the squares a tentative decision leaves unexplained may stay so: none at all, or
    /// (with a press pending) at most `tentative_residue_squares` squares that the decided moves
    /// do not change, besides any square the moves leave empty that has stayed unexplained as
    /// the same class for `persistent_residue_decisions` decisions in a row.
    fn residue_unrelated(&self, b: BoardId, decoded: &Decoded, pressed: bool) -> bool {
        let persistent = self.cfg.persistent_residue_decisions;
        let bt = &self.boards[b.index()];
        // A square the moves leave empty that has read as the same piece for that many
        // decisions is no hand and no move (most likely a neighbour's body in its patch).
        let residue: Vec<Square> = decoded
            .disagreeing
            .iter()
            .filter_map(|e| Some((e.square.parse::<Square>().ok()?, e.expected)))
            .filter(|&(sq, expected)| {
                persistent == 0
                    || expected != SquareClass::Empty.char()
                    || bt.residue_streak[sq.index()].is_none_or(|(_, n)| n < persistent)
            })
            .map(|(sq, _)| sq)
            .collect();
        if residue.is_empty() {
            return pressed || decoded.disagreeing.is_empty();
        }
        if !pressed
            || !bt.tentative_calm
            || residue.len() > self.cfg.tentative_residue_squares as usize
        {
            return false;
        }
        let Some(after) = self.table_after(b, &decoded.best.moves) else {
            return false;
        };
        let (before, after) = (self.referee.table().board(b), after.board(b));
        residue
            .iter()
            .all(|&sq| SquareClass::on(before, sq) == SquareClass::on(after, sq))
    }

    /// Whether `moves` on `b` would mate while the other board has an undecided change that
    /// ended earlier.
    fn mate_waits_for_other(&self, b: BoardId, moves: &[crate::engine::Move]) -> bool {
        let (me, them) = (&self.boards[b.index()], &self.boards[b.other().index()]);
        // Only a recent change is waited for: a board out of sync must not hold the match.
        let recent = them
            .last_motion
            .is_some_and(|t| me.stable_ts.saturating_sub(t) < MATE_WAIT_MS);
        let earlier = them.open
            && recent
            && them.last_motion.unwrap_or(u64::MAX) < me.last_motion.unwrap_or(u64::MAX)
            && (!self.clock_feed || them.presses() > 0);
        if !earlier {
            return false;
        }
        let mut table = self.referee.table().clone();
        for &m in moves {
            if table.play(b, m, &self.variant).is_err() {
                return false;
            }
        }
        table.is_checkmate(b, &self.variant)
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

    /// Answers the pending presses at the front of `b`'s queue whose move did not stand
    /// ([`PendingPress::again`]): one whose view (`press_views[view + k]`, if the views are
    /// aligned) shows an illegal move of the side to move goes to the referee as that move;
    /// any other is dropped. Returns how many presses were answered.
    fn void_presses(
        &mut self,
        b: BoardId,
        ts: u64,
        view: Option<usize>,
        events: &mut Vec<Event>,
    ) -> usize {
        let mut n = 0;
        while self.boards[b.index()]
            .press_times
            .front()
            .is_some_and(|p| p.again.is_some())
        {
            let bt = &self.boards[b.index()];
            if bt.press_times.front().is_some_and(|p| p.reported) {
                self.boards[b.index()].press_times.pop_front();
                n += 1;
                continue;
            }
            let shown = view
                .and_then(|k| bt.press_views.get(k + n))
                .and_then(|v| v.as_ref().map(|(_, ll)| ll))
                .filter(|_| self.refuses_illegal_moves())
                .and_then(|ll| {
                    let pos = self.referee.table().board(b);
                    taken_back_move(pos, ll, &self.variant, &self.cfg)
                })
                .filter(|&(_, gain)| {
                    gain >= self.cfg.taken_back_nats && self.cfg.taken_back_nats > 0.0
                });
            match shown {
                Some((illegal, gain)) => {
                    let reading = MoveReading::new(gain, false);
                    events.extend(self.commit(b, illegal, ts, true, reading));
                }
                None => {
                    let press = self.boards[b.index()].press_times.pop_front();
                    if let Some(event) = press.and_then(|p| self.repeated_press_alert(b, ts, p)) {
                        events.push(event);
                    }
                }
            }
            n += 1;
        }
        n
    }

    /// The `illegal_move` without a move for `press`, whose side pressed again before the
    /// other side did, when no view showed an illegal move for it (see
    /// [`TrackerConfig::repeated_press`]).
    fn repeated_press_alert(&mut self, b: BoardId, ts: u64, press: PendingPress) -> Option<Event> {
        let color = press.side?;
        if !self.cfg.repeated_press || !self.refuses_illegal_moves() {
            return None;
        }
        let [mover, other] = match color {
            Color::White => ["White", "Black"],
            Color::Black => ["Black", "White"],
        };
        // Times are relative: a live table's are milliseconds since the epoch.
        let text = format!(
            "{mover} pressed the clock twice before {other} pressed (the first press {:.1} s \
             before the second): the move of the first press was taken back, or there was none; \
             the camera showed no illegal move",
            press.again.unwrap_or(press.ts).saturating_sub(press.ts) as f64 / 1000.0,
        );
        let body = EventBody::IllegalMove {
            color,
            uci: String::new(),
            reason: REPEATED_PRESS.to_string(),
            text,
            consequence: IllegalConsequence::Rejected,
            applied: false,
        };
        Some(self.event(ts, Some(b), body))
    }

    /// Whether the rule set refuses every illegal move (so reporting one leaves the board as
    /// it is, the way a player who takes his move back leaves it).
    fn refuses_illegal_moves(&self) -> bool {
        let policy = self.referee.rules().illegal_move;
        policy.first == Consequence::Rejected && policy.repeated == Consequence::Rejected
    }

    /// Where `moves` (about to be committed on `b`, fewer than the pending presses) leave a
    /// press whose view shows an illegal move that was taken back (see
    /// [`TrackerConfig::taken_back_nats`]): the index of the committed move it came before,
    /// and the move.
    fn taken_back(
        &self,
        b: BoardId,
        moves: &[crate::engine::Move],
    ) -> Option<(usize, crate::engine::Move)> {
        if self.cfg.taken_back_nats <= 0.0 || !self.refuses_illegal_moves() {
            return None;
        }
        let bt = &self.boards[b.index()];
        let mut pos = self.referee.table().board(b).clone();
        let mut found: Option<(f32, usize, crate::engine::Move)> = None;
        // Press i's view shows the position after moves[..i]; one that shows neither it nor the
        // next move, but an illegal move from it, is a press whose move was taken back.
        for (i, &next) in moves.iter().enumerate() {
            let mut after = pos.clone();
            after.play(next, &self.variant);
            if let Some(Some((_, view))) = bt.press_views.get(i)
                && let Some((illegal, gain)) = taken_back_move(&pos, view, &self.variant, &self.cfg)
            {
                let lead = gain - view_gain(&pos, &after, view).max(0.0);
                if gain >= self.cfg.taken_back_nats
                    && lead >= self.cfg.taken_back_nats
                    && found.is_none_or(|(l, _, _)| lead > l)
                {
                    found = Some((lead, i, illegal));
                }
            }
            pos = after;
        }
        found.map(|(_, i, mv)| (i, mv))
    }

    /// Keeps the moves one commit decision recorded, for a later rewind.
    fn note_recent(&mut self, b: BoardId, recorded: Vec<crate::engine::Move>) {
        let recent = &mut self.boards[b.index()].recent;
        if !recorded.is_empty() {
            recent.push(recorded);
        }
        if recent.len() > MAX_REWIND_DECISIONS {
            recent.drain(..recent.len() - MAX_REWIND_DECISIONS);
        }
    }

    /// Per colour, `b`'s moves pressed but not yet committed: the first pending press is the
    /// side to move's, the next the other's, and so on.
    fn undecided_by_colour(&self, b: BoardId) -> [u8; 2] {
        let to_move = self.referee.table().board(b).turn().index();
        let n = self.boards[b.index()].presses().min(u32::from(u8::MAX)) as u8;
        std::array::from_fn(|c| if c == to_move { n.div_ceil(2) } else { n / 2 })
    }

    /// Tries to explain the current view of `b` from before its latest commit decisions (see
    /// [`TrackerConfig::rewind_nats`]), when the tracked position explains it badly (`decoded`),
    /// or only by a detour of more moves than the presses announce
    /// ([`TrackerConfig::rewind_excess_moves`]). On success the misread moves are retracted,
    /// the chain committed and its events returned.
    fn try_rewind(&mut self, b: BoardId, ts: u64, decoded: &Decoded) -> Option<Vec<Event>> {
        if self.cfg.rewind_nats <= 0.0 {
            return None;
        }
        let bt = &self.boards[b.index()];
        if bt.recent.is_empty() || (bt.tentative && !bt.tentative_calm) {
            return None;
        }
        // One square left unexplained is usually a misread of that square, not of a move.
        let badly = decoded.best.kind == HypothesisKind::Illegal
            || decoded.disagreeing.len() >= self.cfg.desync_min_squares as usize;
        let presses = bt.presses() as usize;
        let detour = self.clock_feed
            && self.cfg.rewind_excess_moves > 0
            && decoded.best.moves.len() >= presses + self.cfg.rewind_excess_moves as usize;
        if !badly && !detour {
            return None;
        }
        let raw = bt.raw.as_ref()?;
        let fit = |pos: &crate::engine::Position| -> f32 {
            Square::all()
                .map(|sq| raw.get(sq, SquareClass::on(pos, sq)))
                .sum()
        };
        // How well the position the tracked one's best explanation reaches fits the view; an
        // illegal explanation also pays its prior.
        let illegal = if decoded.best.kind == HypothesisKind::Illegal {
            self.cfg.prior_illegal
        } else {
            0.0
        };
        let current = fit(self.table_after(b, &decoded.best.moves)?.board(b)) + illegal;
        let other = self.boards[b.other().index()].stable.clone();
        let other_busy = self.boards[b.other().index()].open;
        let ev = |presses: u32| Evidence {
            pocket: median_reading(&bt.pockets),
            in_transit: self.pockets.in_transit(b),
            presses: self.clock_feed.then_some(presses),
            ..Evidence::default()
        };
        let mut found: Option<(f32, usize, usize, Vec<crate::engine::Move>, f32)> = None;
        let mut undo = 0;
        for k in 1..=bt.recent.len() {
            let undone = &bt.recent[bt.recent.len() - k];
            undo += undone.len();
            if undo > self.cfg.rewind_moves as usize {
                break;
            }
            let Some(table) = self.referee.table_before(b, undo) else {
                break;
            };
            let taken: Vec<crate::engine::Move> = bt.recent[bt.recent.len() - k..]
                .iter()
                .flatten()
                .copied()
                .collect();
            let dec = Decoder::new(&table, b, &self.variant, &self.cfg).decode(
                raw,
                other.as_ref(),
                other_busy,
                &ev(bt.presses() + undo as u32),
            );
            let h = &dec.best;
            if !matches!(h.kind, HypothesisKind::Move | HypothesisKind::Sequence)
                || !dec.disagreeing.is_empty()
                || dec.margin() < self.cfg.commit_margin
                || h.moves.len() < undo
                || h.moves[..undo] == taken[..]
            {
                continue;
            }
            let mut after = table;
            if h.moves
                .iter()
                .any(|&m| after.play(b, m, &self.variant).is_err())
            {
                continue;
            }
            let gain = fit(after.board(b)) - current;
            let needed = if badly {
                self.cfg.rewind_nats
            } else if (presses + undo..=presses + undo + 1).contains(&h.moves.len()) {
                0.0
            } else {
                continue;
            };
            if gain >= needed && found.as_ref().is_none_or(|f| gain > f.0) {
                found = Some((gain, k, undo, h.moves.clone(), dec.margin()));
            }
        }
        let (gain, k, undo, moves, lead) = found?;
        let reading = MoveReading::new(lead, false);
        let mut events = Vec::new();
        for _ in 0..undo {
            let before = partner_pockets(self.referee.table(), b);
            let retract = TimedAction {
                ts: Some(ts),
                action: Action::Retract { board: b },
            };
            self.applied.push(retract.clone());
            events.extend(self.referee.apply(retract));
            // What went back from the other board's pockets was never handed over.
            for piece in pieces_added(&partner_pockets(self.referee.table(), b), &before) {
                self.pockets.on_capture_retracted(b, piece);
                let arrivals = &mut self.boards[b.other().index()].arrivals;
                if let Some(i) = arrivals.iter().rposition(|(_, p)| *p == piece) {
                    arrivals.remove(i);
                }
            }
        }
        let pending = self.boards[b.index()].presses();
        let mut recorded = Vec::new();
        for (i, &mv) in moves.iter().enumerate() {
            let n = self.referee.moves_recorded(b);
            // The retracted moves' presses were applied already.
            events.extend(self.commit(b, mv, ts, i >= undo, reading));
            if self.referee.moves_recorded(b) > n {
                recorded.push(mv);
            }
        }
        let bt = &mut self.boards[b.index()];
        let len = bt.recent.len();
        bt.recent.truncate(len - k);
        self.note_recent(b, recorded);
        if let Some(trace) = self.decisions.as_mut() {
            trace.push(Decision {
                board: b,
                ts,
                tentative: self.boards[b.index()].tentative,
                presses: pending,
                kind: format!("Rewind({undo})"),
                best: moves.iter().map(|m| m.to_uci().to_string()).collect(),
                score: gain,
                runner_up: None,
                runner_up_score: None,
                margin: gain,
                committed: true,
                unexplained: Vec::new(),
                // Decoded from an earlier position: the squares and the pocket are that
                // decision's, not recorded again; the position is the one the rewind reached.
                squares: Vec::new(),
                pocket: None,
                in_transit: self.pockets.in_transit(b),
                other_busy: self.boards[b.other().index()].open,
                fen: self.referee.table().board(b).to_fen(),
            });
        }
        let bt = &mut self.boards[b.index()];
        let new = moves.len() - undo;
        bt.drain_press_views(new);
        if self.clock_feed && pending > 0 && new as u32 > pending {
            bt.ahead += new as u32 - pending;
        }
        bt.decided_ts = ts;
        bt.undecided_since = None;
        bt.leftover.clear();
        bt.carried.clear();
        bt.suspects = [None; 64];
        bt.refused = None;
        bt.open = false;
        bt.open_since = None;
        bt.last_motion = None;
        if let Some(raw) = bt.raw.clone() {
            bt.looks.confirm(&raw, self.referee.table().board(b), &[]);
        }
        self.explained(b, ts, &mut events);
        Some(events)
    }

    /// Sends one move to the referee and keeps the pocket watcher informed; with `press`, it
    /// completes the oldest pending clock press (if any). The move's event carries `reading`.
    fn commit(
        &mut self,
        b: BoardId,
        mv: crate::engine::Move,
        ts: u64,
        press: bool,
        reading: MoveReading,
    ) -> Vec<Event> {
        let mover = self.referee.table().board(b).turn();
        let before = partner_pockets(self.referee.table(), b);
        // A move was made by the time of the press it completes: a chain decided at a view
        // seconds later must not date its captures (and the receiving zone's look from before
        // them, against which a hand-over is seen arriving) to that view. (The watcher keeps
        // it no later than `ts`.)
        let made_ts = match self.boards[b.index()].press_times.front() {
            Some(p) if press && self.clock_feed => p.ts,
            _ => ts,
        };
        let action = Action::Move {
            board: b,
            notation: mv.to_uci().to_string(),
            reading: Some(reading),
        };
        let timed = TimedAction {
            ts: Some(ts),
            action,
        };
        self.applied.push(timed.clone());
        let mut events = self.referee.apply(timed);
        if events
            .iter()
            .any(|e| matches!(e.body, EventBody::IllegalMove { .. }))
        {
            self.boards[b.index()].illegal_ts = Some(ts);
        }
        let table = self.referee.table();
        // Whatever reached the other board's pockets is a pending hand-over.
        for piece in pieces_added(&before, &partner_pockets(table, b)) {
            let partner = &mut self.boards[b.other().index()];
            if press && self.clock_feed && partner.press_times.iter().any(|p| p.ts < made_ts) {
                partner.arrivals.push((made_ts, piece));
            }
            if reading.guess && !self.cfg.guessed_capture_alerts {
                self.pockets.on_guessed_capture(b, piece, made_ts, ts);
            } else {
                self.pockets.on_capture(b, piece, made_ts, ts);
            }
        }
        if let crate::engine::Move::Drop { role, .. } = mv {
            let held = table.board(b).pocket(mover).count(role);
            self.pockets.on_drop(b, mover, role, held, ts);
        }
        let bt = &mut self.boards[b.index()];
        bt.carried.retain_mut(|s| {
            if s.first() != Some(&mv) {
                return false;
            }
            s.remove(0);
            !s.is_empty()
        });
        if press && self.clock_feed && bt.presses() > 0 {
            bt.press_times.pop_front();
            // Only a pending press older than an arrival makes it matter (later presses are).
            let oldest = bt.press_times.front().map(|p| p.ts);
            bt.arrivals.retain(|(t, _)| oldest.is_some_and(|o| *t > o));
            let press = TimedAction {
                ts: Some(ts),
                action: Action::Press { board: b },
            };
            self.applied.push(press.clone());
            events.extend(self.referee.apply(press));
        }
        events
    }

    /// An event raised outside the tracker by what watches it (the calibration watch), numbered
    /// in the tracker's sequence so that its id is unique in the game.
    pub fn notice(&mut self, ts: u64, board: Option<BoardId>, body: EventBody) -> Event {
        self.event(ts, board, body)
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

/// Per colour and pocket role, the squares where `view` shows such a piece by more than `nats`
/// over what `pos` has there (a dropped piece the tracked position lacks).
fn unexpected_pieces(view: &LogLik, pos: &crate::engine::Position, nats: f32) -> [[u8; 5]; 2] {
    let mut out = [[0u8; 5]; 2];
    for sq in Square::all() {
        let seen = view.argmax(sq);
        let expected = SquareClass::on(pos, sq);
        let Some(piece) = seen.piece() else { continue };
        if seen == expected || view.get(sq, seen) - view.get(sq, expected) <= nats {
            continue;
        }
        if let Some(n) = out[piece.color.index()].get_mut(piece.role.index()) {
            *n = n.saturating_add(1);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Position;
    use crate::rules::Event;
    use crate::tracker::SquareLook;

    fn tracker(rules: RuleSet, fen: Option<&str>) -> Tracker {
        Tracker::new("t", 1, rules, fen, TrackerConfig::default()).unwrap()
    }

    #[test]
    fn press_views_score_chains_only_while_they_line_up_with_the_moves() {
        let table = Table::default();
        let start = table.board(BoardId::A);
        let cfg = TrackerConfig::default();
        let view = LogLik::from_observation(&Observation::exact(BoardId::A, 0, start, 0.0), &cfg);
        let track = |sides: [Option<Color>; 2], motion: f32| {
            let mut bt = BoardTrack::new(start);
            for (k, side) in sides.into_iter().enumerate() {
                bt.press_times.push_back(PendingPress {
                    ts: 1000 * k as u64,
                    again: None,
                    side,
                    reported: false,
                });
            }
            bt.push_press_view(Some((motion, view.clone())));
            bt
        };
        let (w, b) = (Some(Color::White), Some(Color::Black));
        assert_eq!(
            track([w, b], 0.0)
                .aligned_press_views(Color::White, cfg.motion_threshold)
                .len(),
            1
        );
        assert_eq!(
            track([None, None], 0.0)
                .aligned_press_views(Color::White, cfg.motion_threshold)
                .len(),
            1
        );
        // Black pressed first with White to move: the first press completed no move of the
        // tracked position (a move taken back, committed before it), so no view lines up.
        assert!(
            track([b, w], 0.0)
                .aligned_press_views(Color::White, cfg.motion_threshold)
                .is_empty()
        );
        assert!(
            track([w, w], 0.0)
                .aligned_press_views(Color::White, cfg.motion_threshold)
                .is_empty()
        );
        // A view with a hand in it orders chains but does not score them.
        let handy = track([w, b], 0.9).aligned_press_views(Color::White, cfg.motion_threshold);
        assert!(handy.len() == 1 && handy[0].is_none());
        // A void press, or a view missing for a press, misaligns them too.
        let mut void = track([w, b], 0.0);
        void.press_times[0].again = Some(500);
        assert!(
            void.aligned_press_views(Color::White, cfg.motion_threshold)
                .is_empty()
        );
        let mut short = track([w, b], 0.0);
        short.drain_press_views(1);
        assert!(
            short
                .aligned_press_views(Color::White, cfg.motion_threshold)
                .is_empty()
        );
        assert!(short.press_views.is_empty());
    }

    #[test]
    fn unexpected_pieces_counts_pieces_the_position_lacks_by_colour_and_role() {
        let tracked = Position::default();
        // Seen: a white knight on e4 and a black pawn on d5 where the tracked position has
        // none, and the white king moved to e2 (a king is never in a pocket).
        let seen = Position::from_fen("rnbqkbnr/ppp1pppp/8/3p4/4N3/8/PPPPKPPP/RNBQ1BNR w - - 0 1")
            .unwrap();
        let view = LogLik::from_observation(
            &Observation::exact(BoardId::A, 0, &seen, 0.0),
            &TrackerConfig::default(),
        );
        let mut want = [[0u8; 5]; 2];
        want[Color::White.index()][Role::Knight.index()] = 1;
        want[Color::Black.index()][Role::Pawn.index()] = 1;
        assert_eq!(unexpected_pieces(&view, &tracked, 4.0), want);
        // Readings that disagree by less than the threshold count for nothing.
        assert_eq!(unexpected_pieces(&view, &tracked, 100.0), [[0; 5]; 2]);
        assert_eq!(unexpected_pieces(&view, &seen, 4.0), [[0; 5]; 2]);
    }

    /// The default configuration with the press window on (`stall_window_ms`).
    fn windowed_cfg() -> TrackerConfig {
        TrackerConfig {
            stall_window_ms: 1000,
            ..TrackerConfig::default()
        }
    }

    /// A tracker with the press window on (`stall_window_ms`, whatever the default).
    fn windowed() -> Tracker {
        Tracker::new("t", 1, RuleSet::fics(), None, windowed_cfg()).unwrap()
    }

    /// `n` observations of `pos` on `board` every 100 ms from `*ts`.
    fn feed(
        t: &mut Tracker,
        board: BoardId,
        pos: &Position,
        n: usize,
        motion: f32,
        ts: &mut u64,
    ) -> Vec<Event> {
        let mut out = Vec::new();
        for _ in 0..n {
            out.extend(t.observe(&Observation::exact(board, *ts, pos, motion)));
            *ts += 100;
        }
        out
    }

    fn play(pos: &Position, ucis: &[&str]) -> Position {
        let mut p = pos.clone();
        for u in ucis {
            let m = p.parse_uci(u).unwrap();
            p.play_physical(m, &crate::engine::Variant::default())
                .unwrap();
        }
        p
    }

    fn moves(events: &[Event]) -> Vec<String> {
        events
            .iter()
            .filter_map(|e| match &e.body {
                EventBody::Move { uci, .. } => Some(uci.clone()),
                _ => None,
            })
            .collect()
    }

    /// A move made under a hand, then calm frames of the new position.
    fn make_move(t: &mut Tracker, board: BoardId, after: &Position, ts: &mut u64) -> Vec<Event> {
        let before = t.table().board(board).clone();
        let mut ev = feed(t, board, &before, 3, 1.0, ts);
        ev.extend(feed(t, board, after, 4, 0.0, ts));
        ev
    }

    #[test]
    fn a_board_is_decoded_only_after_k_calm_unchanged_frames() {
        let mut t = tracker(RuleSet::fics(), None);
        let after = play(t.table().board(BoardId::A), &["e2e4"]);
        let mut ts = 0;
        let start = t.table().board(BoardId::A).clone();
        assert!(feed(&mut t, BoardId::A, &start, 3, 1.0, &mut ts).is_empty());
        // The first calm frame is not stable yet (K = 2).
        assert!(feed(&mut t, BoardId::A, &after, 1, 0.0, &mut ts).is_empty());
        let ev = feed(&mut t, BoardId::A, &after, 1, 0.0, &mut ts);
        assert_eq!(moves(&ev), ["e2e4"]);
        // Calm frames after that commit nothing more.
        assert!(moves(&feed(&mut t, BoardId::A, &after, 10, 0.0, &mut ts)).is_empty());
    }

    #[test]
    fn a_hand_over_the_board_resets_stability() {
        let mut t = tracker(RuleSet::fics(), None);
        let after = play(t.table().board(BoardId::A), &["e2e4"]);
        let mut ts = 0;
        let mut ev = Vec::new();
        for i in 0..10 {
            // Calm and moving frames alternate: never two calm ones in a row.
            let motion = if i % 2 == 0 { 1.0 } else { 0.0 };
            ev.extend(feed(&mut t, BoardId::A, &after, 1, motion, &mut ts));
        }
        assert!(moves(&ev).is_empty());
    }

    #[test]
    fn single_move_drop_and_promotion() {
        let fen = "4k3/4P3/8/8/8/8/8/4K3[N] w - - 0 1 | 4k3/8/8/8/8/8/8/4K3 w - - 0 1";
        let mut t = tracker(RuleSet::fics(), Some(fen));
        let mut ts = 0;
        let a = t.table().board(BoardId::A).clone();
        let dropped = play(&a, &["N@c3"]);
        assert_eq!(
            moves(&make_move(&mut t, BoardId::A, &dropped, &mut ts)),
            ["N@c3"]
        );
        let kmove = play(&dropped, &["e8f7"]);
        assert_eq!(
            moves(&make_move(&mut t, BoardId::A, &kmove, &mut ts)),
            ["e8f7"]
        );
        let promoted = play(&kmove, &["e7e8q"]);
        assert_eq!(
            moves(&make_move(&mut t, BoardId::A, &promoted, &mut ts)),
            ["e7e8q"]
        );
    }

    #[test]
    fn steal_promotion_and_the_other_board_accepts_the_missing_piece() {
        // 004 §6: White's pawn on e7 (board A) promotes by taking White's knight from board B.
        let fen = "8/4P1k1/8/8/8/8/8/4K3 w - - 0 1 | 6k1/8/8/8/8/8/8/1N2K3 b - - 0 1";
        let mut t = tracker(RuleSet::verein(), Some(fen));
        let mut ts = 0;
        let mut a = t.table().board(BoardId::A).clone();
        a.remove_piece("e7".parse().unwrap()).unwrap();
        let knight = crate::engine::Piece {
            color: crate::engine::Color::White,
            role: Role::Knight,
        };
        a.put_piece("e8".parse().unwrap(), knight, false).unwrap();
        let mut b = t.table().board(BoardId::B).clone();
        b.remove_piece("b1".parse().unwrap()).unwrap();
        // The partner board is seen without its knight first.
        let b_before = t.table().board(BoardId::B).clone();
        let mut ev = feed(&mut t, BoardId::B, &b_before, 2, 1.0, &mut ts);
        ev.extend(feed(&mut t, BoardId::B, &b, 2, 0.0, &mut ts));
        ev.extend(make_move(&mut t, BoardId::A, &a, &mut ts));
        ev.extend(feed(&mut t, BoardId::B, &b, 20, 0.0, &mut ts));
        assert_eq!(moves(&ev), ["e7e8^b1"], "{ev:?}");
        assert!(
            !ev.iter()
                .any(|e| matches!(e.body, EventBody::Desync { .. })),
            "{ev:?}"
        );
        assert!(
            t.table()
                .board(BoardId::B)
                .piece_at("b1".parse().unwrap())
                .is_none()
        );
    }

    #[test]
    fn a_fast_reply_is_split_into_two_moves_in_order() {
        let mut t = tracker(RuleSet::fics(), None);
        let mut ts = 0;
        let after = play(t.table().board(BoardId::B), &["d2d4", "g8f6"]);
        assert_eq!(
            moves(&make_move(&mut t, BoardId::B, &after, &mut ts)),
            ["d2d4", "g8f6"]
        );
    }

    #[test]
    fn a_slid_piece_is_one_move() {
        let fen = "4k3/8/8/8/8/8/8/R3K3 w - - 0 1 | 4k3/8/8/8/8/8/8/4K3 w - - 0 1";
        let mut t = tracker(RuleSet::fics(), Some(fen));
        let mut ts = 0;
        let start = t.table().board(BoardId::A).clone();
        let mut ev = Vec::new();
        // Under the hand the rook passes a2, a3, a4 (each seen for a frame), then stands on a5.
        for sq in ["a2", "a3", "a4"] {
            let mut p = start.clone();
            let rook = p.remove_piece("a1".parse().unwrap()).unwrap().0;
            p.put_piece(sq.parse().unwrap(), rook, false).unwrap();
            ev.extend(feed(&mut t, BoardId::A, &p, 1, 0.9, &mut ts));
        }
        let end = play(&start, &["a1a5"]);
        ev.extend(feed(&mut t, BoardId::A, &end, 4, 0.0, &mut ts));
        assert_eq!(moves(&ev), ["a1a5"]);
    }

    /// Plays `ucis` on board A of a tracker without a clock, one move after the other (hand
    /// frames, then calm frames), the squares each move changes looking different afterwards;
    /// the last move's knight reads as well on f3 as on h3. Returns the committed moves.
    fn knight_between_f3_and_h3(with_looks: bool) -> Vec<String> {
        use crate::tracker::LOOK_GRID;
        let mut t = tracker(RuleSet::fics(), None);
        let mut ts = 0;
        // Every square its own grey; a square a move changes gets brighter.
        let mut looks: [SquareLook; 64] =
            std::array::from_fn(|i| [[40 + i as u8 * 2; 3]; LOOK_GRID * LOOK_GRID]);
        let mut pos = t.table().board(BoardId::A).clone();
        let mut ev = Vec::new();
        for (k, uci) in ["e2e4", "e7e5", "g1f3"].iter().enumerate() {
            ev.extend(feed(&mut t, BoardId::A, &pos, 3, 1.0, &mut ts));
            let after = play(&pos, &[uci]);
            for sq in Square::all() {
                if SquareClass::on(&pos, sq) != SquareClass::on(&after, sq) {
                    looks[sq.index()] = looks[sq.index()].map(|b| b.map(|v| v + 60));
                }
            }
            let last = k == 2;
            for _ in 0..4 {
                let mut o = Observation::exact(BoardId::A, ts, &after, 0.0);
                if last {
                    let mut v = [0.0; SquareClass::COUNT];
                    v[SquareClass::WhiteKnight.index()] = 0.5;
                    v[SquareClass::Empty.index()] = 0.5;
                    o.set_square("f3".parse().unwrap(), v).unwrap();
                    o.set_square("h3".parse().unwrap(), v).unwrap();
                }
                if with_looks {
                    o.looks = Some(std::sync::Arc::new(looks));
                }
                ev.extend(t.observe(&o));
                ts += 100;
            }
            pos = after;
        }
        moves(&ev)
    }

    #[test]
    fn a_square_that_looks_unchanged_keeps_its_piece_so_the_knight_went_where_pixels_changed() {
        assert_eq!(knight_between_f3_and_h3(true), ["e2e4", "e7e5", "g1f3"]);
        // Without looks, f3 and h3 explain the view equally well: nothing is committed (yet).
        assert_eq!(knight_between_f3_and_h3(false), ["e2e4", "e7e5"]);
    }

    /// Board A with a clock feed: `ucis` are played under a hand, then `presses` presses come,
    /// then calm views in which e4 reads a white pawn and e3 empty only 0.706 : 0.294 each, so
    /// a pawn on e4 leads one on e3 by 2 ln 2.4 ≈ 1.75 nats. Returns the committed moves.
    fn pawn_on_e4_by_a_small_lead(ucis: &[&str], presses: u32) -> Vec<String> {
        // The views' lead alone: the move prior would add to e2e4's.
        let cfg = TrackerConfig {
            prior_plausible: 0.0,
            ..TrackerConfig::default()
        };
        let mut t = Tracker::new("t", 1, RuleSet::fics(), None, cfg).unwrap();
        let mut ts = 0;
        let start = t.table().board(BoardId::A).clone();
        let after = play(&start, ucis);
        let mut ev = feed(&mut t, BoardId::A, &start, 3, 1.0, &mut ts);
        for _ in 0..presses {
            ev.extend(t.press(BoardId::A, ts));
            ts += 50;
        }
        for _ in 0..4 {
            let mut o = Observation::exact(BoardId::A, ts, &after, 0.0);
            let mut pawn = [0.0; SquareClass::COUNT];
            pawn[SquareClass::WhitePawn.index()] = 0.706;
            pawn[SquareClass::Empty.index()] = 0.294;
            let empty = {
                let mut v = pawn;
                v.swap(SquareClass::WhitePawn.index(), SquareClass::Empty.index());
                v
            };
            o.set_square("e4".parse().unwrap(), pawn).unwrap();
            o.set_square("e3".parse().unwrap(), empty).unwrap();
            ev.extend(t.observe(&o));
            ts += 100;
        }
        moves(&ev)
    }

    #[test]
    fn a_pressed_move_needs_a_smaller_lead_than_moves_no_press_vouches_for() {
        // One press, one move: a lead of 1.75 nats is enough (`commit_margin_pressed`).
        assert_eq!(pawn_on_e4_by_a_small_lead(&["e2e4"], 1), ["e2e4"]);
        // One press but two moves seen: the reply is vouched for by no press, so the stricter
        // `commit_margin` applies and nothing is committed yet.
        assert!(pawn_on_e4_by_a_small_lead(&["e2e4", "e7e5"], 1).is_empty());
        assert_eq!(
            pawn_on_e4_by_a_small_lead(&["e2e4", "e7e5"], 2),
            ["e2e4", "e7e5"]
        );
    }

    #[test]
    fn a_misread_square_does_not_become_a_move() {
        let mut t = tracker(RuleSet::fics(), None);
        let mut ts = 0;
        let after = play(t.table().board(BoardId::A), &["e2e4"]);
        let misread = |pos: &Position, ts: u64, motion: f32| {
            // The knight on b1 reads as a pawn (0.7) for the whole time.
            let mut o = Observation::exact(BoardId::A, ts, pos, motion);
            let mut v = [0.0; SquareClass::COUNT];
            v[SquareClass::WhitePawn.index()] = 0.7;
            v[SquareClass::WhiteKnight.index()] = 0.3;
            o.set_square("b1".parse().unwrap(), v).unwrap();
            o
        };
        let start = t.table().board(BoardId::A).clone();
        let mut ev = Vec::new();
        for _ in 0..10 {
            ev.extend(t.observe(&misread(&start, ts, 0.0)));
            ts += 100;
        }
        for _ in 0..3 {
            ev.extend(t.observe(&misread(&start, ts, 1.0)));
            ts += 100;
        }
        for _ in 0..10 {
            ev.extend(t.observe(&misread(&after, ts, 0.0)));
            ts += 100;
        }
        assert_eq!(moves(&ev), ["e2e4"]);
        assert!(
            !ev.iter()
                .any(|e| matches!(e.body, EventBody::Desync { .. })),
            "{ev:?}"
        );
    }

    #[test]
    fn an_illegal_move_goes_through_the_referee() {
        // The white king steps next to the black king's bishop diagonal: it stays in check.
        let fen = "4k3/8/8/8/1b6/8/8/4K3 w - - 0 1 | 4k3/8/8/8/8/8/8/4K3 w - - 0 1";
        let mut t = tracker(RuleSet::tandem_2024(), Some(fen));
        let mut ts = 0;
        let after = play(t.table().board(BoardId::A), &["e1d2"]);
        let ev = make_move(&mut t, BoardId::A, &after, &mut ts);
        assert!(
            ev.iter().any(
                |e| matches!(&e.body, EventBody::IllegalMove { uci, reason, .. }
                if uci == "e1d2" && reason == "leaves_king_in_check")
            ),
            "{ev:?}"
        );
        assert!(ev.iter().any(
            |e| matches!(&e.body, EventBody::Move { uci, legal: false, .. } if uci == "e1d2")
        ));
    }

    #[test]
    fn an_illegal_move_pressed_after_a_legal_reply_is_reported() {
        // Black moves and presses; White's king then steps into the bishop's diagonal and
        // White presses; the first calm view shows both (issue 6, 50-s renders: the illegal
        // move was only found when it was the first pending press).
        let fen = "4k3/8/8/8/1b6/8/8/4K3 b - - 0 1 | 4k3/8/8/8/8/8/8/4K3 w - - 0 1";
        let mut t = Tracker::new("t", 1, RuleSet::fics(), Some(fen), windowed_cfg()).unwrap();
        let mut ts = 0;
        let start = t.table().board(BoardId::A).clone();
        let mut ev = feed(&mut t, BoardId::A, &start, 3, 0.0, &mut ts);
        ev.extend(feed(&mut t, BoardId::A, &start, 3, 1.0, &mut ts));
        ev.extend(t.press(BoardId::A, ts));
        ev.extend(feed(&mut t, BoardId::A, &start, 3, 1.0, &mut ts));
        ev.extend(t.press(BoardId::A, ts));
        let both = play(&start, &["e8e7", "e1d2"]);
        ev.extend(feed(&mut t, BoardId::A, &both, 4, 0.0, &mut ts));
        assert_eq!(
            moves(&ev).first().map(String::as_str),
            Some("e8e7"),
            "{ev:?}"
        );
        assert!(
            ev.iter()
                .any(|e| matches!(&e.body, EventBody::IllegalMove { uci, .. } if uci == "e1d2")),
            "{ev:?}"
        );
    }

    /// White steps into the rook's rank with the king and presses; the board shows it for one
    /// calm frame, then the king goes back and White plays Kf1 and presses again (the 50-s
    /// renders' injected illegal move). `sides`: the presses say who pressed. Returns the
    /// events.
    fn king_step_taken_back(cfg: TrackerConfig, sides: bool) -> Vec<Event> {
        king_step_taken_back_misread(cfg, sides, None)
    }

    /// The same, with `misread` read as a black rook in the view after the first press.
    fn king_step_taken_back_misread(
        cfg: TrackerConfig,
        sides: bool,
        misread: Option<Square>,
    ) -> Vec<Event> {
        let a = BoardId::A;
        let fen = "4k3/8/8/8/8/8/r7/4K3 w - - 0 1 | 4k3/8/8/8/8/8/8/4K3 w - - 0 1";
        let mut t = Tracker::new("t", 1, RuleSet::fics(), Some(fen), cfg).unwrap();
        let white = sides.then_some(Color::White);
        let mut ts = 0;
        let start = t.table().board(a).clone();
        let mut ev = feed(&mut t, a, &start, 3, 0.0, &mut ts);
        ev.extend(feed(&mut t, a, &start, 3, 1.0, &mut ts));
        ev.extend(t.press_by(a, ts, white));
        let mut view = Observation::exact(a, ts, &play(&start, &["e1d2"]), 0.0);
        if let Some(sq) = misread {
            let mut rook = [0.0; SquareClass::COUNT];
            rook[SquareClass::BlackRook.index()] = 1.0;
            view.set_square(sq, rook).unwrap();
        }
        ev.extend(t.observe(&view));
        ts += 100;
        ev.extend(feed(&mut t, a, &start, 3, 1.0, &mut ts));
        ev.extend(t.press_by(a, ts, white));
        ev.extend(feed(&mut t, a, &play(&start, &["e1f1"]), 4, 0.0, &mut ts));
        ev
    }

    /// The `uci` of every `illegal_move` in `ev` (empty for one reported without a move).
    fn illegal_ucis(ev: &[Event]) -> Vec<&str> {
        ev.iter()
            .filter_map(|e| match &e.body {
                EventBody::IllegalMove { uci, .. } => Some(uci.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_press_repeated_by_the_same_side_reports_the_move_taken_back() {
        let ev = king_step_taken_back(windowed_cfg(), true);
        assert_eq!(moves(&ev), ["e1f1"], "{ev:?}");
        assert_eq!(illegal_ucis(&ev), ["e1d2"], "{ev:?}");
        // The referee's verdict on the move the tracker applied, not the tracker's own finding.
        assert!(
            ev.iter()
                .filter(|e| matches!(e.body, EventBody::IllegalMove { .. }))
                .all(|e| !crate::tracker::raised_by_tracker(&e.body))
        );
        // The same without the press's view (switched off): the move stands, and the repeated
        // press is reported without a move; with that off too, nothing is said.
        let off = TrackerConfig {
            taken_back_nats: 0.0,
            ..windowed_cfg()
        };
        let ev = king_step_taken_back(off.clone(), true);
        assert_eq!(moves(&ev), ["e1f1"], "{ev:?}");
        assert_eq!(illegal_ucis(&ev), [""], "{ev:?}");
        let silent = TrackerConfig {
            repeated_press: false,
            ..off
        };
        let ev = king_step_taken_back(silent, true);
        assert_eq!(moves(&ev), ["e1f1"], "{ev:?}");
        assert!(illegal_ucis(&ev).is_empty(), "{ev:?}");
        // A square misread elsewhere in the press's view still lets the move show; with no
        // misfit allowed it hides it, and only the repeated press is reported.
        let h8: Square = "h8".parse().unwrap();
        let ev = king_step_taken_back_misread(windowed_cfg(), true, Some(h8));
        assert_eq!(illegal_ucis(&ev), ["e1d2"], "{ev:?}");
        let strict = TrackerConfig {
            taken_back_misfit_squares: 0,
            ..windowed_cfg()
        };
        let ev = king_step_taken_back_misread(strict, true, Some(h8));
        assert_eq!(moves(&ev), ["e1f1"], "{ev:?}");
        assert_eq!(illegal_ucis(&ev), [""], "{ev:?}");
        // Without sides the press is left over between the committed moves: found too.
        let ev = king_step_taken_back(windowed_cfg(), false);
        assert_eq!(moves(&ev), ["e1f1"], "{ev:?}");
        assert!(
            ev.iter()
                .any(|e| matches!(&e.body, EventBody::IllegalMove { uci, .. } if uci == "e1d2")),
            "{ev:?}"
        );
    }

    /// White presses twice before Black presses, then the calm view shows `e1f1`. With `bump`
    /// the board is calm right after the first press (no move: "no change" answers it), else
    /// a hand is over the board from before the first press until after the second (a move
    /// made and taken back unseen). Checks what holds either way and returns the events.
    fn white_presses_twice(cfg: TrackerConfig, rules: RuleSet, bump: bool) -> Vec<Event> {
        let a = BoardId::A;
        let fen = "4k3/8/8/8/8/8/r7/4K3 w - - 0 1 | 4k3/8/8/8/8/8/8/4K3 w - - 0 1";
        let mut t = Tracker::new("t", 1, rules, Some(fen), cfg).unwrap();
        let mut ts = 0;
        let start = t.table().board(a).clone();
        let mut ev = feed(&mut t, a, &start, 3, 0.0, &mut ts);
        if !bump {
            ev.extend(feed(&mut t, a, &start, 3, 1.0, &mut ts));
        }
        ev.extend(t.press_by(a, ts, Some(Color::White)));
        ev.extend(feed(
            &mut t,
            a,
            &start,
            1,
            if bump { 0.0 } else { 1.0 },
            &mut ts,
        ));
        ev.extend(feed(&mut t, a, &start, 3, 1.0, &mut ts));
        ev.extend(t.press_by(a, ts, Some(Color::White)));
        ev.extend(feed(&mut t, a, &play(&start, &["e1f1"]), 4, 0.0, &mut ts));
        assert_eq!(moves(&ev), ["e1f1"], "{ev:?}");
        assert!(
            !ev.iter()
                .any(|e| matches!(&e.body, EventBody::Desync { .. })),
            "{ev:?}"
        );
        assert_eq!(
            t.boards[a.index()].presses(),
            0,
            "both presses are answered"
        );
        ev
    }

    #[test]
    fn a_clock_bumped_without_a_move_is_reported_and_changes_nothing() {
        // The repeated press says a press went without a move (FIDE 7.5.4 treats that as an
        // illegal move).
        let ev = white_presses_twice(windowed_cfg(), RuleSet::fics(), true);
        assert_eq!(illegal_ucis(&ev), [""], "{ev:?}");
        let off = TrackerConfig {
            repeated_press: false,
            ..windowed_cfg()
        };
        assert!(illegal_ucis(&white_presses_twice(off, RuleSet::fics(), true)).is_empty());
    }

    #[test]
    fn a_press_repeated_with_no_move_seen_is_reported_without_a_move() {
        let run = |cfg, rules| white_presses_twice(cfg, rules, false);
        let ev = run(windowed_cfg(), RuleSet::fics());
        let reported: Vec<_> = ev
            .iter()
            .filter(|e| matches!(e.body, EventBody::IllegalMove { .. }))
            .collect();
        assert!(
            matches!(
                reported.as_slice(),
                [Event { board: Some(BoardId::A), body: EventBody::IllegalMove {
                    color: Color::White, uci, reason, text, applied: false, ..
                }, .. }] if uci.is_empty() && reason == REPEATED_PRESS && text.contains("the first press 0.4 s before the second")
            ),
            "{ev:?}"
        );
        // Made by the tracker itself: a consumer with its own referee passes it on.
        assert!(crate::tracker::raised_by_tracker(&reported[0].body));
        // Switched off, or under rules where an illegal move stands until claimed: nothing.
        let off = TrackerConfig {
            repeated_press: false,
            ..windowed_cfg()
        };
        assert!(illegal_ucis(&run(off, RuleSet::fics())).is_empty());
        assert!(illegal_ucis(&run(windowed_cfg(), RuleSet::turnier())).is_empty());
    }

    /// Board A (White: king e1; Black: king e8, rook a2): White plays `e1f1` under a hand and
    /// presses. Returns the tracker, its events, the time and the position after the move.
    fn white_moves_the_king_and_presses() -> (Tracker, Vec<Event>, u64, crate::engine::Position) {
        let a = BoardId::A;
        let fen = "4k3/8/8/8/8/8/r7/4K3 w - - 0 1 | 4k3/8/8/8/8/8/8/4K3 w - - 0 1";
        let mut t = Tracker::new("t", 1, RuleSet::fics(), Some(fen), windowed_cfg()).unwrap();
        let mut ts = 0;
        let start = t.table().board(a).clone();
        let mut ev = feed(&mut t, a, &start, 3, 0.0, &mut ts);
        let moved = play(&start, &["e1f1"]);
        ev.extend(feed(&mut t, a, &moved, 3, 1.0, &mut ts));
        ev.extend(t.press_by(a, ts, Some(Color::White)));
        (t, ev, ts, moved)
    }

    #[test]
    fn a_press_repeated_behind_an_undecided_move_is_reported_at_once() {
        // White moves and presses with the hand still over the board; Black presses (a move
        // he takes back unseen) and presses again, all before any calm view: the repeated
        // press is reported when it comes, and the calm view then commits both real moves.
        let a = BoardId::A;
        let (mut t, mut ev, mut ts, moved) = white_moves_the_king_and_presses();
        ev.extend(feed(&mut t, a, &moved, 3, 1.0, &mut ts));
        ev.extend(t.press_by(a, ts, Some(Color::Black)));
        ev.extend(feed(&mut t, a, &moved, 3, 1.0, &mut ts));
        let repeated = ts;
        let at_press = t.press_by(a, ts, Some(Color::Black));
        assert!(
            matches!(
                at_press.as_slice(),
                [Event { ts, body: EventBody::IllegalMove { color: Color::Black, uci, reason, .. }, .. }]
                    if *ts == repeated && uci.is_empty() && reason == REPEATED_PRESS
            ),
            "{at_press:?}"
        );
        ev.extend(at_press);
        ev.extend(feed(&mut t, a, &play(&moved, &["e8d8"]), 4, 0.0, &mut ts));
        assert_eq!(moves(&ev), ["e1f1", "e8d8"], "{ev:?}");
        assert_eq!(illegal_ucis(&ev), [""], "reported once: {ev:?}");
        assert_eq!(t.boards[a.index()].presses(), 0, "every press is answered");
    }

    #[test]
    fn a_press_repeated_while_a_move_waits_for_its_press_is_reported() {
        // White moves and presses; the calm view already shows Black's reply, so it is
        // committed before its press. White then presses again before Black did.
        let a = BoardId::A;
        let (mut t, mut ev, mut ts, moved) = white_moves_the_king_and_presses();
        let replied = play(&moved, &["e8d8"]);
        ev.extend(feed(&mut t, a, &replied, 3, 1.0, &mut ts));
        ev.extend(feed(&mut t, a, &replied, 4, 0.0, &mut ts));
        assert_eq!(moves(&ev), ["e1f1", "e8d8"], "{ev:?}");
        assert_eq!(
            t.boards[a.index()].ahead,
            1,
            "the reply waits for its press"
        );
        let again = t.press_by(a, ts, Some(Color::White));
        assert_eq!(illegal_ucis(&again), [""], "{again:?}");
    }

    #[test]
    fn a_clock_that_names_one_player_for_every_press_has_its_sides_ignored() {
        // A bridge that reports White for every press of board A (nobody moves).
        let a = BoardId::A;
        let mut t = Tracker::new("t", 1, RuleSet::fics(), None, windowed_cfg()).unwrap();
        let mut ts = 0;
        let start = t.table().board(a).clone();
        let mut alerts = Vec::new();
        for k in 1..=6 {
            let ev = t.press_by(a, ts, Some(Color::White));
            let ignored = ev.iter().any(|e| {
                matches!(&e.body, EventBody::Status { state, .. } if state == CLOCK_SIDES_IGNORED)
                    && crate::tracker::raised_by_tracker(&e.body)
            });
            assert_eq!(ignored, k == SAME_SIDE_PRESSES, "press {k}: {ev:?}");
            alerts.push(illegal_ucis(&ev).len());
            let ev = feed(&mut t, a, &start, 3, 0.0, &mut ts);
            alerts.push(illegal_ucis(&ev).len());
        }
        // The repeats before the feed is found out are reported, none after.
        let before: usize = alerts[..2 * SAME_SIDE_PRESSES as usize - 2].iter().sum();
        let after: usize = alerts[2 * SAME_SIDE_PRESSES as usize - 2..].iter().sum();
        assert_eq!(
            (before, after),
            (SAME_SIDE_PRESSES as usize - 2, 0),
            "{alerts:?}"
        );
        assert!(t.boards[a.index()].sides_ignored);
    }

    /// White's knight went to f3, but the views after the press read it on h3 (f3 empty), so
    /// g1h3 is committed; after Black's reply the views show the knight on f3. Returns the
    /// events and the tracked position of board A.
    fn misread_knight_then_reply(cfg: TrackerConfig) -> (Vec<Event>, String) {
        let a = BoardId::A;
        let mut t = Tracker::new("t", 1, RuleSet::fics(), None, cfg).unwrap();
        let mut ts = 0;
        let start = t.table().board(a).clone();
        let mut ev = feed(&mut t, a, &start, 3, 0.0, &mut ts);
        ev.extend(feed(&mut t, a, &start, 3, 1.0, &mut ts));
        ev.extend(t.press(a, ts));
        let real = play(&start, &["g1f3"]);
        let (f3, h3): (Square, Square) = ("f3".parse().unwrap(), "h3".parse().unwrap());
        let knight = SquareClass::on(&real, f3).index();
        for _ in 0..4 {
            let mut o = Observation::exact(a, ts, &real, 0.0);
            let mut empty_f3 = [0.0; SquareClass::COUNT];
            (empty_f3[SquareClass::Empty.index()], empty_f3[knight]) = (0.9, 0.1);
            let mut knight_h3 = [0.0; SquareClass::COUNT];
            (knight_h3[SquareClass::Empty.index()], knight_h3[knight]) = (0.1, 0.9);
            o.set_square(f3, empty_f3).unwrap();
            o.set_square(h3, knight_h3).unwrap();
            ev.extend(t.observe(&o));
            ts += 100;
        }
        assert_eq!(
            moves(&ev),
            ["g1h3"],
            "the misread is committed first: {ev:?}"
        );
        ev.extend(feed(&mut t, a, &real, 3, 1.0, &mut ts));
        ev.extend(t.press(a, ts));
        let both = play(&start, &["g1f3", "e7e5"]);
        ev.extend(feed(&mut t, a, &both, 4, 0.0, &mut ts));
        let fen = t.table().board(a).to_fen();
        (ev, fen)
    }

    /// That `misread_knight_then_reply`'s misread `g1h3` was retracted and the board stands on
    /// `g1f3 e7e5`, with no desync.
    fn assert_knight_misread_retracted(ev: &[Event], fen: &str) {
        assert!(
            ev.iter().any(|e| matches!(&e.body,
                EventBody::MoveRetracted { uci, reason, .. }
                    if uci == "g1h3" && reason == crate::rules::MISREAD)),
            "{ev:?}"
        );
        assert_eq!(
            crate::tracker::moves_standing(ev)[0],
            ["g1f3", "e7e5"],
            "{ev:?}"
        );
        assert_eq!(fen, play(&Position::default(), &["g1f3", "e7e5"]).to_fen());
        assert!(
            !ev.iter()
                .any(|e| matches!(e.body, EventBody::Desync { .. })),
            "{ev:?}"
        );
    }

    #[test]
    fn a_misread_move_is_retracted_when_later_views_show_what_was_played() {
        // At most two moves per view: otherwise the knight walking back and forth (h3g1, g1f3,
        // with the reply split into e7e6 e6e5) explains the view from the misread position too,
        // and the rewind would come from that detour (the next test), not from the squares the
        // misread leaves unexplained.
        let cfg = TrackerConfig {
            max_moves_per_observation: 2,
            ..windowed_cfg()
        };
        let (ev, fen) = misread_knight_then_reply(cfg.clone());
        assert_knight_misread_retracted(&ev, &fen);
        // Without rewinds the misread stands.
        let (ev, _) = misread_knight_then_reply(TrackerConfig {
            rewind_nats: 0.0,
            ..cfg
        });
        assert_eq!(crate::tracker::moves_standing(&ev)[0][0], "g1h3");
    }

    #[test]
    fn a_misread_the_view_reaches_only_by_a_detour_is_retracted() {
        // With any number of moves per view the misread position explains the view too, by
        // the knight walking back (`e7e6 h3g1 e6e5 g1f3`): four moves for the one press.
        let (ev, fen) = misread_knight_then_reply(windowed_cfg());
        assert_knight_misread_retracted(&ev, &fen);
        // Without detour rewinds the misread stands and the detour is committed.
        let (ev, _) = misread_knight_then_reply(TrackerConfig {
            rewind_excess_moves: 0,
            ..windowed_cfg()
        });
        let standing = &crate::tracker::moves_standing(&ev)[0];
        assert_eq!(standing[0], "g1h3", "{ev:?}");
        assert!(standing.len() > 2, "{ev:?}");
    }

    #[test]
    fn a_view_with_a_hand_still_over_the_board_commits_only_a_full_explanation() {
        // Regression (issue 6, low-side renders with a perfect reader, `el-low-g18`): Black
        // pressed d7d5 and White took at once; no calm frame came, and the least-moving view
        // (White's hand over the board with both pawns) showed d7, d5 and e4 empty, d6 hidden
        // behind a nearer piece. `d7d6` explained all of it but e4 and was committed; the
        // board never recovered.
        let fen = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1 | \
                   rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
        let mut t = Tracker::new("t", 1, RuleSet::fics(), Some(fen), windowed_cfg()).unwrap();
        let mut ts = 0;
        let start = t.table().board(BoardId::A).clone();
        let d6: Square = "d6".parse().unwrap();
        let view = |pos: &Position, ts: u64, motion: f32| {
            let mut o = Observation::exact(BoardId::A, ts, pos, motion);
            o.hidden[d6.index()] = 1 << Role::Pawn.index();
            o
        };
        let mut ev = Vec::new();
        for motion in [0.0, 0.0, 0.0, 0.9, 0.9, 0.9] {
            ev.extend(t.observe(&view(&start, ts, motion)));
            ts += 100;
        }
        ev.extend(t.press(BoardId::A, ts));
        let mut mid = play(&start, &["d7d5", "e4d5"]);
        mid.remove_piece("d5".parse().unwrap()).unwrap();
        for _ in 0..15 {
            ev.extend(t.observe(&view(&mid, ts, 0.6)));
            ts += 100;
        }
        assert!(moves(&ev).is_empty(), "{ev:?}");
        ev.extend(t.press(BoardId::A, ts));
        let after = play(&start, &["d7d5", "e4d5"]);
        for _ in 0..4 {
            ev.extend(t.observe(&view(&after, ts, 0.0)));
            ts += 100;
        }
        assert_eq!(moves(&ev), ["d7d5", "e4d5"], "{ev:?}");
    }

    #[test]
    fn desync_is_raised_with_evidence_recovered_and_never_blocks_the_other_board() {
        let mut t = tracker(RuleSet::fics(), None);
        let mut ts = 0;
        let start = t.table().board(BoardId::A).clone();
        let mut broken = start.clone();
        broken.remove_piece("a1".parse().unwrap()).unwrap();
        broken.remove_piece("h8".parse().unwrap()).unwrap();
        let mut ev = feed(&mut t, BoardId::A, &start, 3, 1.0, &mut ts);
        ev.extend(feed(&mut t, BoardId::A, &broken, 20, 0.0, &mut ts));
        let lost: Vec<_> = ev
            .iter()
            .filter_map(|e| match &e.body {
                EventBody::Desync {
                    state: DesyncState::Lost,
                    squares,
                    ..
                } => Some(squares.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(lost.len(), 1, "{ev:?}");
        let squares: Vec<_> = lost[0].iter().map(|s| s.square.as_str()).collect();
        assert_eq!(squares, ["a1", "h8"]);
        assert_eq!(lost[0][0].expected, 'R');
        assert_eq!(lost[0][0].observed, '.');
        assert!(t.is_desynced(BoardId::A));
        // Board B goes on meanwhile.
        let b_after = play(t.table().board(BoardId::B), &["e2e4"]);
        assert_eq!(
            moves(&make_move(&mut t, BoardId::B, &b_after, &mut ts)),
            ["e2e4"]
        );
        // The rooks are put back: recovered, and A's next move is tracked.
        let mut ev = feed(&mut t, BoardId::A, &start, 3, 1.0, &mut ts);
        ev.extend(feed(&mut t, BoardId::A, &start, 5, 0.0, &mut ts));
        assert!(ev.iter().any(|e| matches!(
            e.body,
            EventBody::Desync {
                state: DesyncState::Recovered,
                ..
            }
        )));
        assert!(!t.is_desynced(BoardId::A));
        let a_after = play(&start, &["g1f3"]);
        assert_eq!(
            moves(&make_move(&mut t, BoardId::A, &a_after, &mut ts)),
            ["g1f3"]
        );
    }

    #[test]
    fn with_a_clock_feed_moves_are_committed_at_presses() {
        let mut t = tracker(RuleSet::fics(), None);
        let mut ts = 0;
        assert!(t.press(BoardId::B, 0).is_empty());
        // That press was for nothing on the board yet; a calm board commits nothing.
        let start = t.table().board(BoardId::A).clone();
        let after = play(&start, &["e2e4"]);
        let ev = make_move(&mut t, BoardId::A, &after, &mut ts);
        assert!(moves(&ev).is_empty(), "no press on A yet: {ev:?}");
        let ev = t.press(BoardId::A, ts);
        assert_eq!(moves(&ev), ["e2e4"]);
        // What the tracker applied, replayed on a fresh referee, gives the tracked table.
        let applied = t.take_applied();
        assert_eq!(applied.len(), 2, "{applied:?}");
        assert!(matches!(
            applied[1].action,
            Action::Press { board: BoardId::A }
        ));
        let mut referee = Referee::new("t", 1, RuleSet::fics(), None).unwrap();
        for a in applied {
            referee.apply(a);
        }
        assert_eq!(referee.table().to_fen(), t.table().to_fen());
        assert!(t.take_applied().is_empty());
    }

    #[test]
    fn a_recorded_decision_shows_the_squares_it_turned_on() {
        let mut t = tracker(RuleSet::fics(), None);
        t.record_decisions(true);
        let mut ts = 0;
        // A clock feed, so that the move is committed at its press.
        assert!(t.press(BoardId::B, 0).is_empty());
        let start = t.table().board(BoardId::A).clone();
        let after = play(&start, &["e2e4"]);
        make_move(&mut t, BoardId::A, &after, &mut ts);
        assert_eq!(moves(&t.press(BoardId::A, ts)), ["e2e4"]);
        let decisions = t.take_decisions();
        let d = decisions
            .iter()
            .rfind(|d| d.committed && d.board == BoardId::A)
            .expect("the committing decision is recorded");
        assert_eq!(d.best, ["e2e4"]);
        let square = |name: &str| d.squares.iter().find(|c| c.square.to_string() == name);
        let e4 = square("e4").expect("e4 is listed");
        assert_eq!((e4.tracked.0, e4.best.0, e4.seen.0), ('.', 'P', 'P'));
        assert_eq!(square("e2").map(|c| c.best.0), Some('.'));
        assert!(square("d2").is_none(), "{:?}", d.squares);
        // No pocket reading came with the views and no capture is on its way; board B's
        // press is still undecided.
        assert_eq!(d.pocket, None);
        assert_eq!(d.in_transit, [[0; 5]; 2]);
        assert!(d.other_busy);
        assert_eq!(d.fen, start.to_fen(), "decided from the start position");
    }

    /// One move on `board` at the over-the-board pace of a 5 fps camera: hand frames while the
    /// move is made, the press, frames of the hand leaving (`retreat`, scored `retreat_motion`),
    /// then the opponent's hand arrives before a second calm frame could follow.
    fn busy_move(
        t: &mut Tracker,
        board: BoardId,
        after: &Position,
        retreat: &[f32],
        ts: &mut u64,
    ) -> Vec<Event> {
        let before = t.table().board(board).clone();
        let mut ev = Vec::new();
        for _ in 0..4 {
            ev.extend(feed(t, board, &before, 1, 1.0, ts));
            *ts += 100;
        }
        ev.extend(t.press(board, *ts - 50));
        for &m in retreat {
            ev.extend(feed(t, board, after, 1, m, ts));
            *ts += 100;
        }
        ev
    }

    #[test]
    fn with_a_clock_feed_a_single_calm_frame_after_the_press_commits() {
        // Regression (issue 6): at 5 fps a busy board shows one calm frame between two hands;
        // the tracker waited for two in a row and stalled with every press pending.
        let mut t = windowed();
        let mut ts = 0;
        let mut ev = Vec::new();
        for uci in ["e2e4", "e7e5", "g1f3", "b8c6"] {
            let after = play(t.table().board(BoardId::A), &[uci]);
            ev.extend(busy_move(
                &mut t,
                BoardId::A,
                &after,
                &[0.9, 0.6, 0.0],
                &mut ts,
            ));
        }
        assert_eq!(moves(&ev), ["e2e4", "e7e5", "g1f3", "b8c6"], "{ev:?}");
    }

    #[test]
    fn a_vacated_square_hidden_behind_a_nearer_piece_may_keep_reading_its_piece() {
        // d2d4 from a low camera: the vacated d2 behind the queen on d1 still reads a pawn.
        let start = Table::new().board(BoardId::A).clone();
        let after = play(&start, &["d2d4"]);
        let d2: Square = "d2".parse().unwrap();
        let view = |hidden: [u8; 64], ts: u64| {
            let mut obs = Observation::exact(BoardId::A, ts, &after, 0.0);
            let mut p = [0.001; SquareClass::COUNT];
            p[SquareClass::WhitePawn.index()] = 0.99;
            obs.set_square(d2, p).unwrap();
            obs.hidden = hidden;
            obs
        };
        let mut behind_queen = [0u8; 64];
        behind_queen[d2.index()] = 1 << crate::engine::Role::Pawn.index();
        for (hidden, expected) in [([0u8; 64], vec![]), (behind_queen, vec!["d2d4"])] {
            let mut t = windowed();
            let mut ts = 0;
            let mut ev = feed(&mut t, BoardId::A, &start, 3, 1.0, &mut ts);
            ev.extend(t.press(BoardId::A, ts));
            // One calm view after the press, then the opponent's hand.
            ev.extend(t.observe(&view(hidden, ts + 100)));
            ts += 200;
            ev.extend(feed(&mut t, BoardId::A, &after, 1, 1.0, &mut ts));
            assert_eq!(
                moves(&ev),
                expected,
                "hidden {:?}: {ev:?}",
                hidden[d2.index()]
            );
        }
    }

    #[test]
    fn a_chain_decided_after_several_presses_is_ordered_by_what_followed_each_press() {
        // After each press one calm frame shows the new position, but only faintly (below the
        // confidence that records change times) and with the vacated g1 still reading a knight
        // (a leak from a neighbouring piece), so no single view commits the move that emptied
        // g1. A stable run at the end decides the whole chain at once; the views kept after
        // each press give its order. (`overdue_ms` off: this is about ordering a chain once it
        // is decided, not about how long the tracker may wait; with it on, the first press is
        // forced after 1.5 s, on a faint view.)
        let mut t = Tracker::new(
            "t",
            1,
            RuleSet::fics(),
            None,
            TrackerConfig {
                stall_window_ms: 1000,
                overdue_ms: 0,
                ..TrackerConfig::default()
            },
        )
        .unwrap();
        let mut ts = 0;
        let start = t.table().board(BoardId::A).clone();
        let played = ["g1f3", "e7e6", "d2d4", "g8f6"];
        let faint = |pos: &Position, ts: u64| {
            let mut obs = Observation::exact(BoardId::A, ts, pos, 0.0);
            for sq in Square::all() {
                let mut p = [0.15 / 12.0; SquareClass::COUNT];
                p[SquareClass::on(pos, sq).index()] = 0.85;
                obs.set_square(sq, p).unwrap();
            }
            obs
        };
        let leak = |obs: &mut Observation| {
            let mut p = [0.01; SquareClass::COUNT];
            p[SquareClass::WhiteKnight.index()] = 0.9;
            obs.set_square(Square::G1, p).unwrap();
        };
        let mut ev = Vec::new();
        for k in 1..=played.len() {
            let before = play(&start, &played[..k - 1]);
            let after = play(&start, &played[..k]);
            for pos in [&before, &before, &after] {
                // The mover's hand (the frames show little), then the press.
                let mut hand = faint(pos, ts);
                hand.motion = 1.0;
                ev.extend(t.observe(&hand));
                ts += 100;
            }
            ev.extend(t.press(BoardId::A, ts));
            let mut obs = faint(&after, ts + 100);
            leak(&mut obs);
            ev.extend(t.observe(&obs));
            ts += 200;
        }
        let end = play(&start, &played);
        for _ in 0..3 {
            let mut obs = Observation::exact(BoardId::A, ts, &end, 0.0);
            leak(&mut obs);
            ev.extend(t.observe(&obs));
            ts += 100;
        }
        assert_eq!(moves(&ev), played, "{ev:?}");
    }

    #[test]
    fn with_a_clock_feed_a_board_that_is_never_calm_still_commits_its_presses() {
        // No calm frame at all: after the press window the least-moving frame is decoded.
        let mut t = windowed();
        let mut ts = 0;
        let mut ev = Vec::new();
        for uci in ["d2d4", "d7d5", "c2c4"] {
            let after = play(t.table().board(BoardId::B), &[uci]);
            ev.extend(busy_move(
                &mut t,
                BoardId::B,
                &after,
                &[0.95, 0.6, 0.7, 0.9, 0.95, 0.9],
                &mut ts,
            ));
        }
        assert_eq!(moves(&ev), ["d2d4", "d7d5", "c2c4"], "{ev:?}");
        assert!(
            !ev.iter()
                .any(|e| matches!(e.body, EventBody::Desync { .. })),
            "{ev:?}"
        );
    }

    #[test]
    fn a_tentative_view_that_does_not_explain_every_square_commits_nothing() {
        // After the press only moving frames come, and they show a hand over d2/d4 read as
        // pieces: no move explains them, so nothing is committed and no desync is raised, and
        // the press is kept until a stable view decides it.
        let mut t = windowed();
        let mut ts = 0;
        let start = t.table().board(BoardId::A).clone();
        let after = play(&start, &["d2d4"]);
        let mut ev = feed(&mut t, BoardId::A, &start, 3, 1.0, &mut ts);
        ev.extend(t.press(BoardId::A, ts));
        for _ in 0..12 {
            let mut o = Observation::exact(BoardId::A, ts, &after, 0.8);
            let mut v = [0.0; SquareClass::COUNT];
            v[SquareClass::BlackQueen.index()] = 1.0;
            o.set_square("d3".parse().unwrap(), v).unwrap();
            o.set_square("e3".parse().unwrap(), v).unwrap();
            ev.extend(t.observe(&o));
            ts += 200;
        }
        assert!(moves(&ev).is_empty(), "{ev:?}");
        assert!(
            !ev.iter()
                .any(|e| matches!(e.body, EventBody::Desync { .. })),
            "{ev:?}"
        );
        let ev = feed(&mut t, BoardId::A, &after, 2, 0.0, &mut ts);
        assert_eq!(moves(&ev), ["d2d4"]);
    }

    /// Board A plays `ucis` with a press after each, and only single calm frames between hand
    /// frames follow (no stable run ever forms), every frame reading `misread` on `square`.
    fn pressed_with_a_square_misread(
        cfg: TrackerConfig,
        ucis: &[&str],
        square: &str,
        misread: [f32; SquareClass::COUNT],
    ) -> Vec<Event> {
        let mut t = Tracker::new("t", 1, RuleSet::fics(), None, cfg).unwrap();
        let mut ts = 0;
        let mut ev = Vec::new();
        let mut after = t.table().board(BoardId::A).clone();
        for uci in ucis {
            after = play(&after, &[uci]);
            ev.extend(feed(&mut t, BoardId::A, &after, 1, 1.0, &mut ts));
            ev.extend(t.press(BoardId::A, ts));
            for motion in [0.0, 1.0, 0.0, 1.0] {
                let mut o = Observation::exact(BoardId::A, ts, &after, motion);
                o.set_square(square.parse().unwrap(), misread).unwrap();
                ev.extend(t.observe(&o));
                ts += 100;
            }
        }
        ev
    }

    fn no_desync(ev: &[Event]) -> bool {
        !ev.iter()
            .any(|e| matches!(e.body, EventBody::Desync { .. }))
    }

    #[test]
    fn a_persistent_misread_elsewhere_does_not_hold_a_pressed_move_back() {
        // e1's king always reads as empty: with one unexplained square allowed the pressed
        // moves are committed, with none (the old rule) every press waits.
        let run = |residue: u32| {
            let cfg = TrackerConfig {
                stall_window_ms: 1000,
                tentative_residue_squares: residue,
                ..TrackerConfig::default()
            };
            let mut empty = [0.0; SquareClass::COUNT];
            empty[SquareClass::Empty.index()] = 1.0;
            pressed_with_a_square_misread(cfg, &["d2d4", "d7d5", "c2c4"], "e1", empty)
        };
        let ev = run(1);
        assert_eq!(moves(&ev), ["d2d4", "d7d5", "c2c4"], "{ev:?}");
        assert!(no_desync(&ev), "{ev:?}");
        assert!(moves(&run(0)).is_empty());
    }

    #[test]
    fn a_vacated_square_misread_decision_after_decision_does_not_stall_the_board() {
        // After `d2d3` the vacated d2 keeps reading the pawn (it stands just behind, in d2's
        // patch): the move changes that square, so the one-square residue does not cover it.
        // Once three decisions in a row have left d2 unexplained as a pawn, it no longer holds
        // the board back; with the rule off every later press waits for a stable run that
        // never comes.
        let run = |persistent: u32| {
            let cfg = TrackerConfig {
                stall_window_ms: 1000,
                persistent_residue_decisions: persistent,
                ..TrackerConfig::default()
            };
            // 5.3 nats for the pawn: unexplained (over 4), yet no illegal drop (8).
            let mut pawn = [0.0; SquareClass::COUNT];
            pawn[SquareClass::WhitePawn.index()] = 0.995;
            pawn[SquareClass::Empty.index()] = 0.005;
            pressed_with_a_square_misread(cfg, &["d2d3", "e7e5", "g1f3", "b8c6"], "d2", pawn)
        };
        let ev = run(3);
        assert_eq!(moves(&ev), ["d2d3", "e7e5", "g1f3", "b8c6"], "{ev:?}");
        assert!(no_desync(&ev), "{ev:?}");
        assert!(moves(&run(0)).is_empty());
    }

    #[test]
    fn without_a_clock_a_board_never_stable_is_decided_on_single_calm_frames() {
        // 5 fps, hands every 1.2 s with one calm frame between: no stable run ever forms.
        let mut t = windowed();
        let mut ts = 0;
        let mut ev = Vec::new();
        let mut pos = t.table().board(BoardId::A).clone();
        for uci in ["e2e4", "c7c5", "g1f3", "d7d6", "d2d4"] {
            for _ in 0..5 {
                ev.extend(feed(&mut t, BoardId::A, &pos, 1, 1.0, &mut ts));
                ts += 100;
            }
            pos = play(&pos, &[uci]);
            ev.extend(feed(&mut t, BoardId::A, &pos, 1, 0.0, &mut ts));
            ts += 100;
        }
        // The first single calm frame comes before the stall window is over; from then on
        // every move is committed (the first two as one fast chain).
        assert_eq!(
            moves(&ev),
            ["e2e4", "c7c5", "g1f3", "d7d6", "d2d4"],
            "{ev:?}"
        );
    }

    /// Board A after 1. e4 e5 with a white pawn in White's pocket (White to move).
    fn with_a_pawn_in_hand() -> Tracker {
        let cfg = TrackerConfig {
            stall_window_ms: 1000,
            ..TrackerConfig::default()
        };
        let fen = "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR[P] w KQkq - 0 2 | \
                   rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1";
        Tracker::new("t", 1, RuleSet::fics(), Some(fen), cfg).unwrap()
    }

    #[test]
    fn a_one_frame_misread_after_a_press_does_not_become_a_drop() {
        // A press with nothing visible yet, then one calm frame in which an empty square reads
        // as a pawn: a drop there would explain that view, but the square showed the pawn
        // once only, so it is a misread (seen in fast play: a stale press plus one blip).
        let mut t = with_a_pawn_in_hand();
        let mut ts = 0;
        let pos = t.table().board(BoardId::A).clone();
        let mut ev = feed(&mut t, BoardId::A, &pos, 3, 1.0, &mut ts);
        ev.extend(t.press(BoardId::A, ts - 50));
        let mut o = Observation::exact(BoardId::A, ts, &pos, 0.0);
        let mut pawn = [0.0; SquareClass::COUNT];
        pawn[SquareClass::WhitePawn.index()] = 1.0;
        o.set_square("c3".parse().unwrap(), pawn).unwrap();
        ev.extend(t.observe(&o));
        ts += 100;
        ev.extend(feed(&mut t, BoardId::A, &pos, 1, 1.0, &mut ts));
        ev.extend(feed(&mut t, BoardId::A, &pos, 3, 0.0, &mut ts));
        assert!(moves(&ev).is_empty(), "{ev:?}");
    }

    #[test]
    fn a_drop_seen_twice_is_committed_on_a_single_calm_frame() {
        // The counterpart: the dropped pawn shows in the frame of the hand leaving and in the
        // one calm frame before the next hand.
        let mut t = with_a_pawn_in_hand();
        let mut ts = 0;
        let after = play(t.table().board(BoardId::A), &["P@c3"]);
        let ev = busy_move(&mut t, BoardId::A, &after, &[0.6, 0.0], &mut ts);
        assert_eq!(moves(&ev), ["P@c3"], "{ev:?}");
    }

    /// With a pawn in hand (see [`with_a_pawn_in_hand`]): hand frames, the press, then one frame
    /// of `P@c3` at `motion`. Returns the tracker, the events and the time of the next frame.
    fn pawn_dropped_seen_once(motion: f32) -> (Tracker, Vec<Event>, u64) {
        let mut t = with_a_pawn_in_hand();
        let mut ts = 0;
        let pos = t.table().board(BoardId::A).clone();
        let after = play(&pos, &["P@c3"]);
        let mut ev = feed(&mut t, BoardId::A, &pos, 3, 1.0, &mut ts);
        ev.extend(t.press(BoardId::A, ts - 50));
        ev.extend(feed(&mut t, BoardId::A, &after, 1, motion, &mut ts));
        (t, ev, ts)
    }

    #[test]
    fn a_drop_two_calm_views_agree_on_is_committed_though_hands_hide_it_in_between() {
        // Regression (issue 6, `el-low-g43`): hands kept coming over board B, and between the
        // calm views that showed the dropped knight the hand frames hid its square, so the
        // square never showed it in two observations in a row; the drop waited, presses piling
        // up, to the end of the game.
        let (mut t, mut ev, mut ts) = pawn_dropped_seen_once(0.0);
        assert!(moves(&ev).is_empty(), "one view is not enough: {ev:?}");
        let pos = t.table().board(BoardId::A).clone();
        let after = play(&pos, &["P@c3"]);
        // A hand frame that hides c3 (read empty), then the next calm view.
        ev.extend(feed(&mut t, BoardId::A, &pos, 1, 1.0, &mut ts));
        ev.extend(feed(&mut t, BoardId::A, &after, 1, 0.0, &mut ts));
        assert_eq!(moves(&ev), ["P@c3"], "{ev:?}");
    }

    #[test]
    fn a_drop_pressed_just_before_the_end_is_committed_when_the_stream_finishes() {
        // The hand leaving shows the drop in one frame, then the recording ends: no second
        // sighting will come.
        let (mut t, ev, _) = pawn_dropped_seen_once(0.6);
        assert!(moves(&ev).is_empty(), "{ev:?}");
        assert_eq!(moves(&t.finish()), ["P@c3"]);
    }

    /// Board A: White takes Black's knight on c6 (pressed, the hand still over the board);
    /// board B: Black, who holds nothing yet, drops that knight on d5 at once and presses, and
    /// B's view shows the knight only faintly (3.9 nats over empty: "no change" explains it
    /// within `disagree_nats`). Then A calms down and B is seen once more.
    fn knight_dropped_before_its_capture_is_decided(cfg: TrackerConfig) -> Vec<Event> {
        let fen = "r1bqkbnr/pppp1ppp/2n5/1B2p3/4P3/5N2/PPPP1PPP/RNBQK2R[] w KQkq - 4 4 | \
                   rnbqkbnr/pppp1ppp/8/4p3/3PP3/8/PPP2PPP/RNBQKBNR[] b KQkq - 0 2";
        let mut t = Tracker::new("t", 1, RuleSet::fics(), Some(fen), cfg).unwrap();
        let mut ts = 0;
        let a0 = t.table().board(BoardId::A).clone();
        let a1 = play(&a0, &["b5c6"]);
        let b0 = t.table().board(BoardId::B).clone();
        let mut ev = feed(&mut t, BoardId::A, &a0, 3, 1.0, &mut ts);
        ev.extend(t.press(BoardId::A, ts));
        ev.extend(feed(&mut t, BoardId::A, &a1, 1, 1.0, &mut ts));
        // B: Black drops the knight on d5 (the hand gone, it reads faintly) and presses.
        ev.extend(feed(&mut t, BoardId::B, &b0, 3, 1.0, &mut ts));
        ev.extend(t.press(BoardId::B, ts));
        let faint = {
            let mut p = [0.0; SquareClass::COUNT];
            p[SquareClass::BlackKnight.index()] = 0.95;
            p[SquareClass::Empty.index()] = 0.02;
            p[SquareClass::BlackPawn.index()] = 0.03;
            p
        };
        let d5 = "d5".parse().unwrap();
        let seen_b = |t: &mut Tracker, ts: &mut u64, ev: &mut Vec<Event>, n: usize| {
            for _ in 0..n {
                let mut o = Observation::exact(BoardId::B, *ts, &b0, 0.0);
                o.set_square(d5, faint).unwrap();
                ev.extend(t.observe(&o));
                *ts += 100;
            }
        };
        seen_b(&mut t, &mut ts, &mut ev, 4);
        // A calms down: the capture is decided.
        ev.extend(feed(&mut t, BoardId::A, &a1, 4, 0.0, &mut ts));
        seen_b(&mut t, &mut ts, &mut ev, 4);
        ev
    }

    #[test]
    fn a_drop_pressed_before_its_capture_is_decided_keeps_its_press() {
        let ev = knight_dropped_before_its_capture_is_decided(windowed_cfg());
        assert_eq!(moves(&ev), ["b5c6", "N@d5"], "{ev:?}");
        // Off: B is decided unchanged while A is busy, its press forgotten.
        let off = TrackerConfig {
            await_partner_ms: 0,
            ..windowed_cfg()
        };
        let ev = knight_dropped_before_its_capture_is_decided(off);
        assert_eq!(moves(&ev), ["b5c6"], "{ev:?}");
    }

    #[test]
    fn a_drop_still_to_come_from_the_other_board_is_no_last_word() {
        // Board A's White holds nothing, but Black on B can take a knight or a bishop and pass
        // it. After White's press one moving frame shows d3 as a knight or (less likely) a
        // bishop, then the stream ends (`geo-low-g37`). The capture that would make the drop
        // legal can no longer be seen; committing the guess would have the referee raise an
        // illegal drop.
        let fen = "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR[] w KQkq - 0 2 | \
                   rnbqkbnr/ppp2ppp/3p4/2B1N3/8/8/PPPPPPPP/RN1QKB1R[] b KQkq - 0 3";
        let mut t = Tracker::new("t", 1, RuleSet::fics(), Some(fen), windowed_cfg()).unwrap();
        let mut ts = 0;
        let pos = t.table().board(BoardId::A).clone();
        let mut after = Observation::exact(BoardId::A, ts, &pos, 0.6);
        let mut d3 = [0.0; SquareClass::COUNT];
        d3[SquareClass::WhiteKnight.index()] = 0.6;
        d3[SquareClass::WhiteBishop.index()] = 0.4;
        after.set_square("d3".parse().unwrap(), d3).unwrap();
        // Hands over board B too: its change is undecided.
        let b = t.table().board(BoardId::B).clone();
        let mut ev = feed(&mut t, BoardId::B, &b, 2, 1.0, &mut ts);
        ev.extend(feed(&mut t, BoardId::A, &pos, 3, 1.0, &mut ts));
        ev.extend(t.press(BoardId::A, ts - 50));
        after.ts = ts;
        ev.extend(t.observe(&after));
        ev.extend(t.finish());
        assert!(moves(&ev).is_empty(), "{ev:?}");
        assert!(
            !ev.iter()
                .any(|e| matches!(e.body, EventBody::IllegalMove { .. })),
            "{ev:?}"
        );
    }

    #[test]
    fn at_the_end_the_calm_view_after_an_earlier_press_has_the_last_word() {
        // `el-low-g46`: White's drop and Black's reply seen in one calm view after White's
        // press (a drop seen once is not committed), then Black's press, and until the
        // recording ends the only views show a hand over the board (here: nothing moved).
        let mut t = with_a_pawn_in_hand();
        let mut ts = 0;
        let pos = t.table().board(BoardId::A).clone();
        let both = play(&pos, &["P@c3", "b8c6"]);
        let mut ev = feed(&mut t, BoardId::A, &pos, 3, 1.0, &mut ts);
        ev.extend(t.press(BoardId::A, ts - 50));
        ev.extend(feed(&mut t, BoardId::A, &both, 1, 0.0, &mut ts));
        ev.extend(feed(&mut t, BoardId::A, &pos, 1, 1.0, &mut ts));
        ev.extend(t.press(BoardId::A, ts - 50));
        ev.extend(feed(&mut t, BoardId::A, &pos, 3, 0.8, &mut ts));
        assert!(moves(&ev).is_empty(), "{ev:?}");
        assert_eq!(moves(&t.finish()), ["P@c3", "b8c6"]);
    }

    /// Board A after one press shows `ucis` played, with a hand still read on `hand_on` in
    /// every calm view (its reading changing from frame to frame, no persistent misread), up
    /// to the end of the stream. Returns the events before and at [`Tracker::finish`].
    fn pressed_then_half_hidden_to_the_end(
        ucis: &[&str],
        hand_on: [&str; 2],
    ) -> (Vec<Event>, Vec<Event>) {
        let mut t = windowed();
        let mut ts = 0;
        let start = t.table().board(BoardId::A).clone();
        let after = play(&start, ucis);
        let mut ev = feed(&mut t, BoardId::A, &start, 3, 1.0, &mut ts);
        ev.extend(t.press(BoardId::A, ts));
        for (k, motion) in [0.0, 1.0, 0.0, 1.0, 0.0].into_iter().enumerate() {
            let mut o = Observation::exact(BoardId::A, ts, &after, motion);
            let hand = [SquareClass::BlackQueen, SquareClass::BlackRook][k % 2];
            let mut v = [0.0; SquareClass::COUNT];
            v[hand.index()] = 1.0;
            for sq in hand_on {
                o.set_square(sq.parse().unwrap(), v).unwrap();
            }
            ev.extend(t.observe(&o));
            ts += 200;
        }
        (ev, t.finish())
    }

    #[test]
    fn a_pressed_move_still_half_hidden_at_the_end_is_committed_when_the_stream_finishes() {
        // No tentative decision may commit with two squares unexplained, and waiting is right
        // while later views can come. When the stream ends, the press's best chain stands.
        let (ev, last) = pressed_then_half_hidden_to_the_end(&["d2d4"], ["d3", "e3"]);
        assert!(moves(&ev).is_empty(), "{ev:?}");
        assert_eq!(moves(&last), ["d2d4"]);
    }

    #[test]
    fn at_the_end_a_pressed_move_the_view_barely_shows_is_the_last_word() {
        // Validation `el-low-g55`: four presses pending when the stream ended, the views under
        // the hands barely showing their moves; the best chain scored below an unchanged board
        // without presses (−1.5 nats) but far above one with four, and nothing was committed.
        // Here a2a3 is pressed; a3 stays under the hand and a2 reads a pawn almost as well as
        // empty.
        let mut t = windowed();
        let mut ts = 0;
        let start = t.table().board(BoardId::A).clone();
        let after = play(&start, &["a2a3"]);
        let mut ev = feed(&mut t, BoardId::A, &start, 3, 1.0, &mut ts);
        ev.extend(t.press(BoardId::A, ts));
        let a2: Square = "a2".parse().unwrap();
        for motion in [0.0, 1.0, 0.0] {
            let mut o = Observation::exact(BoardId::A, ts, &after, motion);
            let mut hand = [0.0; SquareClass::COUNT];
            hand[SquareClass::BlackQueen.index()] = 1.0;
            for sq in ["a3", "b3"] {
                o.set_square(sq.parse().unwrap(), hand).unwrap();
            }
            let mut unsure = [0.0; SquareClass::COUNT];
            unsure[SquareClass::Empty.index()] = 0.6;
            unsure[SquareClass::WhitePawn.index()] = 0.4;
            o.set_square(a2, unsure).unwrap();
            ev.extend(t.observe(&o));
            ts += 200;
        }
        assert!(moves(&ev).is_empty(), "{ev:?}");
        assert_eq!(moves(&t.finish()), ["a2a3"]);
    }

    #[test]
    fn at_the_end_a_chain_longer_than_the_presses_gives_only_the_pressed_moves() {
        // The reply is on the board but not pressed yet: only the pressed move is committed.
        let (ev, last) = pressed_then_half_hidden_to_the_end(&["e2e4", "e7e5"], ["c3", "d3"]);
        assert!(moves(&ev).is_empty(), "{ev:?}");
        assert_eq!(moves(&last), ["e2e4"]);
    }

    #[test]
    fn a_reply_committed_before_its_press_takes_that_press() {
        // A move and its fast reply are seen in one view at the first press: both are
        // committed, and the reply's press, arriving later, completes it instead of waiting
        // for a third move (a stale press invites any one-view misread to become a move).
        let mut t = windowed();
        let mut ts = 0;
        let start = t.table().board(BoardId::A).clone();
        let both = play(&start, &["e2e4", "e7e5"]);
        let mut ev = feed(&mut t, BoardId::A, &start, 3, 1.0, &mut ts);
        ev.extend(t.press(BoardId::A, ts));
        ev.extend(feed(&mut t, BoardId::A, &both, 3, 0.0, &mut ts));
        assert_eq!(moves(&ev), ["e2e4", "e7e5"], "{ev:?}");
        let late = t.press(BoardId::A, ts);
        assert!(
            late.iter().any(|e| matches!(
                e.body,
                EventBody::Clock {
                    color: crate::engine::Color::Black,
                    ..
                }
            )),
            "{late:?}"
        );
        assert_eq!(t.boards[0].presses(), 0);
        let applied = t.take_applied();
        assert!(matches!(
            applied.last().map(|a| &a.action),
            Some(Action::Press { board: BoardId::A })
        ));
        let after = play(&both, &["g1f3"]);
        let ev = busy_move(&mut t, BoardId::A, &after, &[0.6, 0.0, 0.0], &mut ts);
        assert_eq!(moves(&ev), ["g1f3"], "{ev:?}");
    }

    #[test]
    fn a_press_just_before_the_end_is_decided_when_the_stream_finishes() {
        let mut t = windowed();
        let mut ts = 0;
        let after = play(t.table().board(BoardId::A), &["g1f3"]);
        let ev = busy_move(&mut t, BoardId::A, &after, &[0.9, 0.7], &mut ts);
        assert!(moves(&ev).is_empty(), "{ev:?}");
        assert_eq!(moves(&t.finish()), ["g1f3"]);
        // Nothing pending any more: finishing again says nothing.
        assert!(t.finish().is_empty());
    }

    #[test]
    fn a_hidden_pocket_piece_is_reported_after_the_grace_period() {
        let fen = "4k3/8/8/8/8/8/8/4K3[Q] w - - 0 1 | 4k3/8/8/8/8/8/8/4K3 w - - 0 1";
        let mut t = tracker(RuleSet::fics(), Some(fen));
        let pos = t.table().board(BoardId::A).clone();
        let mut alerts = Vec::new();
        // The queen shows in White's pocket once, then is gone from 100 ms on.
        for i in 0..40u64 {
            let o = Observation::exact(BoardId::A, i * 100, &pos, 0.0);
            let o = with_pocket(o, (0, Role::Queen), u8::from(i == 0));
            for e in t.observe(&o) {
                if matches!(e.body, EventBody::HiddenPocket { .. }) {
                    alerts.push(e.ts);
                }
            }
        }
        assert_eq!(alerts, [3100]);
    }

    /// `o` with a pocket reading that shows `count` pieces of `role` for colour index `color`
    /// (0 White) and nothing else.
    fn with_pocket(mut o: Observation, (color, role): (usize, Role), count: u8) -> Observation {
        let mut r = PocketReading::default();
        r.counts[color][role.index()] = count;
        o.pockets = Some(r);
        o
    }

    /// Board A's White holds a knight the reader shows in half a second of calm views; then a
    /// hand stays over the board for five and a half seconds and the zone shows no knight.
    /// `zone_calm` is what the readings say of the zones' own motion. Returns the pocket alerts.
    fn knight_gone_under_a_busy_board(zone_calm: Option<[bool; 2]>) -> Vec<Event> {
        knight_gone(TrackerConfig::default(), 1.0, zone_calm, None)
    }

    /// Board A's White holds a knight the reader shows in half a second of calm views; then the
    /// board's motion is `motion` for five and a half seconds and the zone shows no knight, the
    /// readings marked `zone_calm` and read with `confidence`. Returns the pocket alerts.
    fn knight_gone(
        cfg: TrackerConfig,
        motion: f32,
        zone_calm: Option<[bool; 2]>,
        confidence: Option<[f32; 2]>,
    ) -> Vec<Event> {
        let fen = "4k3/8/8/8/8/8/8/4K3[N] w - - 0 1 | 4k3/8/8/8/8/8/8/4K3 w - - 0 1";
        let mut t = Tracker::new("t", 1, RuleSet::fics(), Some(fen), cfg).unwrap();
        let pos = t.table().board(BoardId::A).clone();
        let mut ev = Vec::new();
        for i in 0..60u64 {
            let (motion, knights) = if i < 5 { (0.0, 1) } else { (motion, 0) };
            let o = Observation::exact(BoardId::A, i * 100, &pos, motion);
            let mut o = with_pocket(o, (0, Role::Knight), knights);
            if let Some(r) = &mut o.pockets {
                r.calm = zone_calm;
                r.confidence = confidence.filter(|_| i >= 5);
            }
            ev.extend(t.observe(&o));
        }
        ev.retain(|e| {
            matches!(
                e.body,
                EventBody::HiddenPocket { .. } | EventBody::HandoverMissing { .. }
            )
        });
        ev
    }

    #[test]
    fn a_capture_decided_after_its_press_dates_its_hand_over_to_the_press() {
        // White's e4xd5 on board A is pressed while a hand still covers the board; the board is
        // calm again 1.6 s later and the capture is committed then. The black pawn never shows
        // in board B's Black zone.
        let (a, b) = (BoardId::A, BoardId::B);
        let fen = "4k3/8/8/3p4/4P3/8/8/4K3 w - - 0 1 | 4k3/8/8/8/8/8/8/4K3 w - - 0 1";
        let mut t =
            Tracker::new("t", 1, RuleSet::fics(), Some(fen), TrackerConfig::default()).unwrap();
        let start = t.table().board(a).clone();
        let other = t.table().board(b).clone();
        let mut ts = 0;
        let mut ev = feed(&mut t, a, &start, 3, 0.0, &mut ts);
        ev.extend(feed(&mut t, a, &start, 3, 1.0, &mut ts));
        let pressed = ts;
        ev.extend(t.press(a, pressed));
        ev.extend(feed(&mut t, a, &start, 16, 1.0, &mut ts));
        ev.extend(feed(&mut t, a, &play(&start, &["e4d5"]), 4, 0.0, &mut ts));
        assert_eq!(moves(&ev), ["e4d5"], "{ev:?}");
        let committed = ev
            .iter()
            .find(|e| matches!(e.body, EventBody::Move { .. }))
            .map(|e| e.ts)
            .unwrap();
        assert!(committed > pressed + 1000, "committed at {committed}");
        for _ in 0..60 {
            let o = Observation::exact(b, ts, &other, 0.0);
            ev.extend(t.observe(&with_pocket(o, (1, Role::Pawn), 0)));
            ts += 100;
        }
        let missing: Vec<_> = ev
            .iter()
            .filter_map(|e| match &e.body {
                EventBody::HandoverMissing { captured_ts, .. } => Some((e.ts, *captured_ts)),
                _ => None,
            })
            .collect();
        // Dated to the press; due `pocket_grace_ms` after the commit (the watcher learned of the
        // capture only then).
        assert!(
            matches!(missing.as_slice(), [(at, captured)] if *captured == pressed && *at >= committed + 3000),
            "pressed {pressed}, committed {committed}: {missing:?}"
        );
    }

    #[test]
    fn a_pocket_zone_clear_of_the_hand_over_its_board_is_still_read() {
        let alerts = knight_gone_under_a_busy_board(Some([true; 2]));
        assert!(
            matches!(alerts.as_slice(), [e] if matches!(&e.body,
                EventBody::HiddenPocket { piece, held: 1, visible: 0, .. } if piece == "N")),
            "{alerts:?}"
        );
        // Without the zones' own motion a zone is read only while its board is calm.
        assert!(knight_gone_under_a_busy_board(None).is_empty());
        // Nor is a zone read while a hand is in it.
        assert!(knight_gone_under_a_busy_board(Some([false, true])).is_empty());
    }

    #[test]
    fn a_zone_read_unsurely_counts_only_as_far_as_configured() {
        let cfg = |min| TrackerConfig {
            pocket_min_confidence: min,
            ..TrackerConfig::default()
        };
        // A calm board; the reader, 0.4 sure of White's zone, shows the knight gone.
        let unsure = Some([0.4, 1.0]);
        assert_eq!(knight_gone(cfg(0.0), 0.0, None, unsure).len(), 1);
        assert!(knight_gone(cfg(0.5), 0.0, None, unsure).is_empty());
        // Surer than the threshold, the reading counts.
        assert_eq!(knight_gone(cfg(0.5), 0.0, None, Some([0.6, 1.0])).len(), 1);
        assert!(cfg(1.5).validate().is_err());
    }

    #[test]
    fn undecided_presses_can_excuse_the_pieces_their_drops_took() {
        // Regression (issue 6, `eval tracker-sim --clock` game 34): a drop pressed but not yet
        // decided left the engine one pawn more than the pocket showed, and after the grace
        // period the pawn passed for a hidden or missing one.
        let fen = "4k3/8/8/8/8/8/8/4K3[P] w - - 0 1 | 4k3/8/8/8/8/8/8/4K3 w - - 0 1";
        let cfg = TrackerConfig {
            pocket_excuse_undecided: true,
            ..TrackerConfig::default()
        };
        let mut t = Tracker::new("t", 1, RuleSet::fics(), Some(fen), cfg).unwrap();
        let start = t.table().board(BoardId::A).clone();
        let after = play(&start, &["P@e3"]);
        let mut ts = 0;
        let mut ev = Vec::new();
        let e3 = Square::from_coords(4, 2).unwrap();
        let mut observe =
            |t: &mut Tracker, pos: &Position, motion: f32, pawns: u8, unclear: bool| {
                let mut o = Observation::exact(BoardId::A, ts, pos, motion);
                if unclear {
                    let mut p = [0.0; SquareClass::COUNT];
                    p[SquareClass::Empty.index()] = 0.5;
                    p[SquareClass::of(Some(Piece {
                        color: crate::engine::Color::White,
                        role: Role::Pawn,
                    }))
                    .index()] = 0.5;
                    o.set_square(e3, p).unwrap();
                }
                ts += 100;
                (t.observe(&with_pocket(o, (0, Role::Pawn), pawns)), ts)
            };
        for _ in 0..5 {
            ev.extend(observe(&mut t, &start, 0.0, 1, false).0);
        }
        ev.extend(observe(&mut t, &after, 1.0, 0, false).0);
        let (more, now) = observe(&mut t, &after, 1.0, 0, false);
        ev.extend(more);
        ev.extend(t.press(BoardId::A, now));
        // Four seconds of calm views in which e3 is unclear: nothing is decided meanwhile.
        for _ in 0..40 {
            ev.extend(observe(&mut t, &after, 0.0, 0, true).0);
        }
        for _ in 0..5 {
            ev.extend(observe(&mut t, &after, 0.0, 0, false).0);
        }
        assert_eq!(moves(&ev), ["P@e3"], "{ev:?}");
        let alerts: Vec<_> = ev
            .iter()
            .filter(|e| {
                matches!(
                    e.body,
                    EventBody::HiddenPocket { .. } | EventBody::HandoverMissing { .. }
                )
            })
            .collect();
        assert!(alerts.is_empty(), "{alerts:?}");
    }

    /// Board A of `fen` plays `chain` at premove pace with a clock: five calm frames, each move
    /// shown under a hand (two frames) and pressed, one calm view of the end, the next hand.
    /// The pocket reader shows one piece of `role` for colour index `color` (0 White) until the
    /// hands and none after: the chain drops it.
    fn quick_chain_dropping(fen: &str, chain: &[&str], (color, role): (usize, Role)) -> Vec<Event> {
        let mut t = tracker(RuleSet::fics(), Some(fen));
        let start = t.table().board(BoardId::A).clone();
        let mut ts = 0;
        let mut observe = |t: &mut Tracker, pos: &Position, motion: f32, count: u8| {
            let o = Observation::exact(BoardId::A, ts, pos, motion);
            ts += 100;
            (t.observe(&with_pocket(o, (color, role), count)), ts)
        };
        let mut ev = Vec::new();
        for _ in 0..5 {
            ev.extend(observe(&mut t, &start, 0.0, 1).0);
        }
        // The pocket zone is not calm under the hands, so it is not read then.
        for i in 1..=chain.len() {
            let now = play(&start, &chain[..i]);
            ev.extend(observe(&mut t, &now, 1.0, 1).0);
            let (more, now_ts) = observe(&mut t, &now, 1.0, 1);
            ev.extend(more);
            ev.extend(t.press(BoardId::A, now_ts - 50));
        }
        let end = play(&start, chain);
        ev.extend(observe(&mut t, &end, 0.0, 0).0);
        ev.extend(observe(&mut t, &end, 1.0, 0).0);
        ev
    }

    #[test]
    fn a_drop_is_weighed_against_the_pocket_after_the_hands_not_before() {
        // Regression (issue 6, `eval tracker-sim --clock` game 30): a drop captured at once
        // (P@e3 Kxe3 Kb1, three quick presses) ends where Kb1 Ke3 does; the pawn gone from
        // White's pocket tells them apart, but the median of the last five calm readings, four
        // of them from before the hands, still showed it and counted against the drop.
        let fen = "8/8/8/8/8/8/5k2/K7[P] w - - 0 1 | \
                   rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
        let chain = ["P@e3", "f2e3", "a1b1"];
        let ev = quick_chain_dropping(fen, &chain, (0, Role::Pawn));
        assert_eq!(moves(&ev), chain, "{ev:?}");
    }

    #[test]
    fn a_drop_pressed_before_the_capture_that_feeds_the_pocket_drops_what_was_there() {
        // Regression (issue 6, validation `el-low-g33`): White on A drops a pawn on f6 and
        // presses; then Black on B takes a knight (White's next piece) and presses; then
        // g7xf6 on A. Board B is decided first, so when A's view comes White holds a knight,
        // and the view shows no dropped piece; but the drop was pressed before the knight was
        // taken.
        let fen = "4k3/6p1/8/8/8/8/8/4K3[P] w - - 0 1 | \
                   rnbqkbnr/pppp1ppp/8/4p3/3N4/8/PPPPPPPP/R1BQKBNR b KQkq - 0 2";
        let run = |cfg: TrackerConfig| {
            let mut t = Tracker::new("t", 1, RuleSet::fics(), Some(fen), cfg).unwrap();
            let mut ts = 0;
            let a = t.table().board(BoardId::A).clone();
            let b = t.table().board(BoardId::B).clone();
            let mut ev = feed(&mut t, BoardId::A, &a, 3, 0.0, &mut ts);
            ev.extend(feed(&mut t, BoardId::B, &b, 3, 0.0, &mut ts));
            ev.extend(feed(&mut t, BoardId::A, &a, 2, 1.0, &mut ts));
            ev.extend(t.press(BoardId::A, ts - 50));
            ev.extend(feed(&mut t, BoardId::B, &b, 2, 1.0, &mut ts));
            ev.extend(t.press(BoardId::B, ts - 50));
            ev.extend(feed(&mut t, BoardId::A, &a, 2, 1.0, &mut ts));
            ev.extend(t.press(BoardId::A, ts - 50));
            ev.extend(feed(
                &mut t,
                BoardId::B,
                &play(&b, &["e5d4"]),
                3,
                0.0,
                &mut ts,
            ));
            let taken = play(&a, &["P@f6", "g7f6"]);
            ev.extend(feed(&mut t, BoardId::A, &taken, 3, 0.0, &mut ts));
            moves(&ev)
        };
        assert_eq!(run(TrackerConfig::default()), ["e5d4", "P@f6", "g7f6"]);
        let off = TrackerConfig {
            prior_drop_before_capture: 0.0,
            ..TrackerConfig::default()
        };
        // Without the press times the view cannot tell the drops apart: A waits.
        assert_eq!(run(off), ["e5d4"]);
    }

    #[test]
    fn a_drop_captured_at_once_and_seen_only_under_the_hands_stays_in_the_search() {
        // Regression (issue 6, `eval tracker-sim --clock` game 30): Nxf2 Kxf2 N@g4 Ke2 in four
        // quick presses ends where Nxf2 Ke2 Nf2g4 does. Only the hand frames showed the king on
        // f2; ranked by the last view alone, "any knight drop plus Ke2" filled the beam at
        // depth 2 and the true chain was never scored.
        let fen = "4k3/8/8/8/6n1/8/5P2/4K3[n] b - - 0 1 | \
                   rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
        let chain = ["g4f2", "e1f2", "N@g4", "f2e2"];
        let ev = quick_chain_dropping(fen, &chain, (1, Role::Knight));
        assert_eq!(moves(&ev), chain, "{ev:?}");
    }

    #[test]
    fn a_chain_an_earlier_view_showed_the_start_of_wins_a_tie() {
        // After game 59 of `eval tracker-sim --clock`, board A: B@b5 pressed, then one calm view
        // that already shows Black's P@e4 (seen once: undecided, and B@b5 P@e4 is carried),
        // then f3e5 and the pawn taking on d3 under hands that cover e4, each pressed. P@c4
        // f3e5 c4xd3 ends on the same squares, pockets included, with the same score: the
        // carried start decides. Calm frames read both pockets (the one after B@b5 still shows
        // Black's two pawns: the reader lags).
        let fen = "r1bqk2r/ppp2ppp/2n1p3/3n1p2/3P4/2PB1N2/P1PB1PPP/R2QK2R[Bpp] w KQkq - 3 9 | \
                   rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
        let chain = ["B@b5", "P@e4", "f3e5", "e4d3"];
        let mut t = tracker(RuleSet::fics(), Some(fen));
        let start = t.table().board(BoardId::A).clone();
        let e4: Square = "e4".parse().unwrap();
        let mut ts = 0;
        let mut observe = |t: &mut Tracker, moves: usize, calm: bool| {
            let mut o = Observation::exact(
                BoardId::A,
                ts,
                &play(&start, &chain[..moves]),
                if calm { 0.0 } else { 1.0 },
            );
            if calm {
                let read = play(&start, &chain[..if moves == 2 { 1 } else { moves }]);
                let mut r = PocketReading::default();
                let colors = [crate::engine::Color::White, crate::engine::Color::Black];
                for (c, color) in colors.into_iter().enumerate() {
                    for (i, &role) in Role::POCKET.iter().enumerate() {
                        r.counts[c][i] = read.pocket(color).count(role);
                    }
                }
                o.pockets = Some(r);
            } else if moves >= 2 {
                o.set_square(e4, [1.0; SquareClass::COUNT]).unwrap();
            }
            ts += 100;
            (t.observe(&o), ts)
        };
        let mut ev = Vec::new();
        for _ in 0..5 {
            ev.extend(observe(&mut t, 0, true).0);
        }
        for moves in 1..=chain.len() {
            ev.extend(observe(&mut t, moves, false).0);
            let (more, now) = observe(&mut t, moves, false);
            ev.extend(more);
            ev.extend(t.press(BoardId::A, now - 50));
            if moves == 1 {
                ev.extend(observe(&mut t, 2, true).0);
            }
        }
        for _ in 0..4 {
            ev.extend(observe(&mut t, chain.len(), true).0);
        }
        assert_eq!(moves(&ev), chain, "{ev:?}");
    }

    #[test]
    fn a_single_move_an_undecided_view_shows_is_carried() {
        let mut t = tracker(RuleSet::fics(), None);
        let start = t.table().board(BoardId::A).clone();
        let after = play(&start, &["e2e4"]);
        let mut ts = 0;
        let mut ev = feed(&mut t, BoardId::A, &start, 4, 0.0, &mut ts);
        ev.extend(feed(&mut t, BoardId::A, &start, 3, 1.0, &mut ts));
        // e2 reads as likely a pawn as empty, e4 a pawn at 0.7: `e2e4` explains the view best
        // but not surely enough to commit.
        let (e2, e4): (Square, Square) = ("e2".parse().unwrap(), "e4".parse().unwrap());
        for _ in 0..3 {
            let mut o = Observation::exact(BoardId::A, ts, &after, 0.0);
            o.set_square(e2, piece_or_empty(SquareClass::WhitePawn, 0.5))
                .unwrap();
            o.set_square(e4, piece_or_empty(SquareClass::WhitePawn, 0.7))
                .unwrap();
            ev.extend(t.observe(&o));
            ts += 100;
        }
        assert!(moves(&ev).is_empty(), "{ev:?}");
        assert_eq!(
            t.boards[0].carried,
            vec![vec![start.parse_uci("e2e4").unwrap()]]
        );
    }

    #[test]
    fn chains_carried_from_earlier_views_end_when_the_board_is_decided_unchanged() {
        let mut t = tracker(RuleSet::fics(), None);
        let start = t.table().board(BoardId::A).clone();
        let mut ts = 0;
        feed(&mut t, BoardId::A, &start, 4, 0.0, &mut ts);
        // As if an earlier view had shown e4 e5 best without deciding it.
        t.boards[0].carried = vec![vec![
            start.parse_uci("e2e4").unwrap(),
            play(&start, &["e2e4"]).parse_uci("e7e5").unwrap(),
        ]];
        // A hand, and the board stays as it was.
        let ev = make_move(&mut t, BoardId::A, &start, &mut ts);
        assert!(moves(&ev).is_empty(), "{ev:?}");
        assert!(t.boards[0].carried.is_empty());
    }

    #[test]
    fn decoding_never_proposes_a_move_the_engine_does_not_know() {
        // Every committed move is one the referee reads back as legal on a normal game.
        let mut t = tracker(RuleSet::fics(), None);
        let mut ts = 0;
        for uci in ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6"] {
            let after = play(t.table().board(BoardId::A), &[uci]);
            let ev = make_move(&mut t, BoardId::A, &after, &mut ts);
            assert_eq!(moves(&ev), [uci]);
            assert!(
                ev.iter()
                    .all(|e| !matches!(e.body, EventBody::IllegalMove { .. }))
            );
        }
    }

    /// A square's reading: `class` at `share`, empty at the rest.
    fn piece_or_empty(class: SquareClass, share: f32) -> [f32; SquareClass::COUNT] {
        let mut p = [0f32; SquareClass::COUNT];
        p[class.index()] = share;
        p[SquareClass::Empty.index()] = 1.0 - share;
        p
    }

    /// `pos` on board A, except that f3 and h3 read a white knight at 52 % and 48 %: the knight
    /// from g1 stands on one of them, and the reading barely says which.
    fn knight_on_f3_or_h3(pos: &Position, ts: u64, motion: f32, f3_share: f32) -> Observation {
        let mut o = Observation::exact(BoardId::A, ts, pos, motion);
        let mix = |knight: f32| piece_or_empty(SquareClass::WhiteKnight, knight);
        o.set_square("f3".parse().unwrap(), mix(f3_share)).unwrap();
        o.set_square("h3".parse().unwrap(), mix(1.0 - f3_share))
            .unwrap();
        o
    }

    /// g1f3 seen only as "f3 or h3", pressed, then e7e5 pressed 1.6 s later; at 5 fps with
    /// hands coming and going, only single calm frames (tentative decisions) in between.
    fn an_unclear_move_and_its_reply(cfg: TrackerConfig) -> Vec<Event> {
        let mut t = Tracker::new("t", 1, RuleSet::fics(), None, cfg).unwrap();
        an_unclear_move_and_its_reply_on(&mut t, 0.52).0
    }

    /// As `an_unclear_move_and_its_reply`, on `t`, with f3 reading the knight at `f3_share`
    /// (h3 the rest). Returns the events and the time after the last observation.
    fn an_unclear_move_and_its_reply_on(t: &mut Tracker, f3_share: f32) -> (Vec<Event>, u64) {
        let mut ts = 0;
        let start = t.table().board(BoardId::A).clone();
        let mut ev = feed(t, BoardId::A, &start, 3, 0.0, &mut ts);
        let knight = play(&start, &["g1f3"]);
        let reply = play(&knight, &["e7e5"]);
        ev.extend(feed(t, BoardId::A, &start, 3, 1.0, &mut ts));
        ev.extend(t.press(BoardId::A, ts));
        let first_press = ts;
        // Hands over the board, one calm frame between them.
        let show = |t: &mut Tracker, view: &Position, ts: &mut u64, ev: &mut Vec<Event>| {
            for motion in [1.0, 1.0, 0.0] {
                ev.extend(t.observe(&knight_on_f3_or_h3(view, *ts, motion, f3_share)));
                *ts += 100;
            }
        };
        for view in [&knight, &knight, &knight, &reply, &reply] {
            show(t, view, &mut ts, &mut ev);
        }
        assert!(
            moves(&ev).is_empty(),
            "undecided before the reply's press: {ev:?}"
        );
        ev.extend(t.press(BoardId::A, first_press + 1600));
        ts = first_press + 1700;
        show(t, &reply, &mut ts, &mut ev);
        (ev, ts)
    }

    #[test]
    fn an_overdue_press_commits_the_best_guess() {
        // Regression (issue 6, low-side renders): an unclear move kept its press pending, the
        // replies' presses piled up behind it and the board never committed again.
        let ev = an_unclear_move_and_its_reply(TrackerConfig {
            stall_window_ms: 1000,
            overdue_ms: 1500,
            ..TrackerConfig::default()
        });
        assert_eq!(moves(&ev), ["g1f3", "e7e5"], "{ev:?}");
        let waiting = an_unclear_move_and_its_reply(TrackerConfig {
            stall_window_ms: 1000,
            overdue_ms: 0,
            ..TrackerConfig::default()
        });
        assert!(moves(&waiting).is_empty(), "{waiting:?}");
    }

    fn readings(events: &[Event]) -> Vec<Option<MoveReading>> {
        events
            .iter()
            .filter_map(|e| match &e.body {
                EventBody::Move { reading, .. } => Some(*reading),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_move_read_clearly_is_sure_and_an_overdue_guess_says_it_is_a_guess() {
        // Clean views of e2e4: committed with a lead well over the margin, not a guess.
        let mut t = tracker(RuleSet::fics(), None);
        let after = play(t.table().board(BoardId::A), &["e2e4"]);
        let mut ts = 0;
        let ev = make_move(&mut t, BoardId::A, &after, &mut ts);
        let [Some(sure)] = readings(&ev)[..] else {
            panic!("one move read by the tracker: {ev:?}");
        };
        assert!(!sure.guess);
        assert!(
            sure.lead
                .is_none_or(|l| l >= f64::from(TrackerConfig::default().commit_margin)),
            "{sure:?}"
        );
        // g1f3 seen as "f3 or h3" and committed only because its reply was pressed too.
        let ev = an_unclear_move_and_its_reply(TrackerConfig {
            stall_window_ms: 1000,
            overdue_ms: 1500,
            ..TrackerConfig::default()
        });
        assert_eq!(moves(&ev), ["g1f3", "e7e5"], "{ev:?}");
        let guessed = readings(&ev);
        assert!(
            guessed.iter().all(|r| r.is_some_and(|r| r.guess
                && r.lead.is_some_and(|l| l < f64::from(
                    TrackerConfig::default().commit_margin_pressed
                )))),
            "{guessed:?}"
        );
    }

    #[test]
    fn an_overdue_press_does_not_commit_a_tie() {
        // Regression (issue 6, low-side renders with a perfect reader): a king move and a
        // knight move on squares no view showed explained the views equally; the overdue rule
        // committed one of them, and the wrong one cost every later move of the board.
        // The views alone first; the move prior (below) prefers g1f3 but leaves their tie a
        // tie, and only picks when the tie is forced.
        let cfg = TrackerConfig {
            stall_window_ms: 1000,
            overdue_ms: 1500,
            prior_plausible: 0.0,
            ..TrackerConfig::default()
        };
        let mut t = Tracker::new("t", 1, RuleSet::fics(), None, cfg.clone()).unwrap();
        let (mut ev, mut ts) = an_unclear_move_and_its_reply_on(&mut t, 0.5);
        assert!(moves(&ev).is_empty(), "g1f3 and g1h3 tie: {ev:?}");
        // The prior prefers g1f3 but does not untie the views: the press still waits.
        let with_prior = TrackerConfig {
            prior_plausible: TrackerConfig::default().prior_plausible,
            ..cfg.clone()
        };
        let mut p = Tracker::new("t", 1, RuleSet::fics(), None, with_prior.clone()).unwrap();
        let (prior_ev, _) = an_unclear_move_and_its_reply_on(&mut p, 0.5);
        assert!(moves(&prior_ev).is_empty(), "{prior_ev:?}");
        let start = t.table().board(BoardId::A).clone();
        let reply = play(&start, &["g1f3", "e7e5"]);
        ev.extend(feed(&mut t, BoardId::A, &reply, 3, 0.0, &mut ts));
        assert_eq!(moves(&ev), ["g1f3", "e7e5"], "{ev:?}");
        // With as many presses pending as `overdue_tie_presses` asks, the tie is committed:
        // one of the two knight moves, then the reply (never stall).
        let cfg = TrackerConfig {
            overdue_tie_presses: 2,
            ..cfg
        };
        let mut t = Tracker::new("t", 1, RuleSet::fics(), None, cfg).unwrap();
        let (ev, _) = an_unclear_move_and_its_reply_on(&mut t, 0.5);
        let committed = moves(&ev);
        assert_eq!(committed.len(), 2, "{ev:?}");
        assert!(["g1f3", "g1h3"].contains(&committed[0].as_str()), "{ev:?}");
        assert_eq!(committed[1], "e7e5", "{ev:?}");
        // With the move prior the forced choice is the knight move players make.
        let mut p = Tracker::new(
            "t",
            1,
            RuleSet::fics(),
            None,
            TrackerConfig {
                overdue_tie_presses: 2,
                ..with_prior
            },
        )
        .unwrap();
        let (ev, _) = an_unclear_move_and_its_reply_on(&mut p, 0.5);
        assert_eq!(moves(&ev), ["g1f3", "e7e5"], "{ev:?}");
    }
}
