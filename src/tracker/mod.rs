//! The tracker: from a stream of per-square observations of both boards to moves and incidents,
//! with the rules engine as the prior.
//!
//! Data flow: [`Observation`] (from the vision stage, or [`simulate`]) → per-board stability →
//! engine-constrained decoding ([`decode`]) of the next stable observation → moves sent as
//! `rules::Action::Move` to a [`crate::rules::Referee`] the tracker owns → its events, plus the
//! tracker's own `desync`, `hidden_pocket` and `handover_missing` events. See `docs/tracker.md`.
//!
//! Invariants: the referee's table is the only record of the position; the tracker never edits it
//! except through moves. Only stable observations (no hand, no motion, argmax steady) are decoded,
//! so a slid piece is one move. A desync keeps the last good position and never blocks the other
//! board.

pub mod decode;
pub mod eval;
mod look;
pub mod plausible;
mod pockets;
mod rng;
pub mod simulate;
mod track;

pub use decode::{Decoded, Decoder, Evidence, Hypothesis, HypothesisKind, LogLik, SquareChoice};
pub use eval::moves_standing;
pub use pockets::PocketWatcher;
pub use track::{Decision, Tracker, TrackerError};

pub use crate::rules::SquareEvidence;

/// The `state` of the `status` event a tracker raises when a board's clock feed named one
/// player for several presses in a row: from then on it ignores who pressed.
pub const CLOCK_SIDES_IGNORED: &str = "clock_sides_ignored";

/// Whether an event is the tracker's own finding (desync, hidden pocket, missing hand-over, a
/// press its player repeated, a clock feed whose sides it ignores) rather than its referee's
/// verdict on an action. A consumer with its own referee replays [`Tracker::take_applied`] for
/// the latter and passes only these on.
pub fn raised_by_tracker(body: &crate::rules::EventBody) -> bool {
    use crate::rules::{EventBody, REPEATED_PRESS};
    match body {
        EventBody::Desync { .. }
        | EventBody::HiddenPocket { .. }
        | EventBody::HandoverMissing { .. } => true,
        EventBody::IllegalMove { reason, .. } => reason == REPEATED_PRESS,
        EventBody::Status { state, .. } => state == CLOCK_SIDES_IGNORED,
        _ => false,
    }
}

use serde::{Deserialize, Serialize};

use crate::engine::{BoardId, Color, Piece, Position, Role, Square};

/// What a square classifier can see on one square. The discriminant is the fixed index into
/// [`Observation`] probability vectors: `empty, P, N, B, R, Q, K, p, n, b, r, q, k`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum SquareClass {
    Empty = 0,
    WhitePawn,
    WhiteKnight,
    WhiteBishop,
    WhiteRook,
    WhiteQueen,
    WhiteKing,
    BlackPawn,
    BlackKnight,
    BlackBishop,
    BlackRook,
    BlackQueen,
    BlackKing,
}

impl SquareClass {
    /// Number of classes (length of a probability vector).
    pub const COUNT: usize = 13;

    /// All classes in index order.
    pub const ALL: [SquareClass; 13] = [
        SquareClass::Empty,
        SquareClass::WhitePawn,
        SquareClass::WhiteKnight,
        SquareClass::WhiteBishop,
        SquareClass::WhiteRook,
        SquareClass::WhiteQueen,
        SquareClass::WhiteKing,
        SquareClass::BlackPawn,
        SquareClass::BlackKnight,
        SquareClass::BlackBishop,
        SquareClass::BlackRook,
        SquareClass::BlackQueen,
        SquareClass::BlackKing,
    ];

    /// Index into a probability vector.
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The class with this index (< 13).
    pub fn from_index(i: usize) -> Option<SquareClass> {
        SquareClass::ALL.get(i).copied()
    }

    /// The class showing `piece` (or empty).
    #[inline]
    pub const fn of(piece: Option<Piece>) -> SquareClass {
        match piece {
            None => SquareClass::Empty,
            Some(p) => {
                let base = match p.color {
                    Color::White => 1,
                    Color::Black => 7,
                };
                SquareClass::ALL[base + p.role.index()]
            }
        }
    }

    /// The piece this class shows, if any.
    pub const fn piece(self) -> Option<Piece> {
        let i = self as usize;
        if i == 0 {
            return None;
        }
        let (color, r) = if i <= 6 {
            (Color::White, i - 1)
        } else {
            (Color::Black, i - 7)
        };
        Some(Piece {
            color,
            role: Role::ALL[r],
        })
    }

    /// FEN letter, `.` for empty.
    pub fn char(self) -> char {
        self.piece().map_or('.', |p| p.char())
    }

    /// The class on `sq` of `pos`.
    #[inline]
    pub fn on(pos: &Position, sq: Square) -> SquareClass {
        SquareClass::of(pos.piece_at(sq))
    }
}

/// Pocket contents of one board as read by the pocket reader: counts per colour (White, Black)
/// and droppable role (`P N B R Q`, [`Role::POCKET`] order).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct PocketReading {
    pub counts: [[u8; 5]; 2],
    /// What White's and Black's zone looked like ([`PocketLook`]), from readers that cut the
    /// zones; a piece put into a zone changes it even where the counts misread. Not serialised.
    #[serde(skip)]
    pub looks: Option<[PocketLook; 2]>,
    /// White's and Black's zone lie partly outside the camera's view: what their counts miss
    /// may be there, so they raise no pocket alert. (The decoder still weighs drops with them:
    /// the part in view shows some pieces; `docs/tracker.md`.)
    #[serde(default)]
    pub out_of_view: [bool; 2],
    /// Per zone (White's, Black's), whether nothing moved in or over it in this frame, from
    /// sources that watch the zones on their own (`vision::motion::TableMotion::pockets`): a
    /// hand over the board but clear of a zone leaves the zone readable. `None`: a zone counts
    /// as calm exactly when its board does.
    #[serde(default)]
    pub calm: Option<[bool; 2]>,
    /// Per zone, how sure the reader is of its whole count (the least certain role's
    /// probability), from readers that know (`None`: sure).
    #[serde(default)]
    pub confidence: Option<[f32; 2]>,
}

impl PocketReading {
    /// Whether `color`'s zone is in view (its counts say what the pocket holds).
    pub fn in_view(&self, color: Color) -> bool {
        !self.out_of_view[color.index()]
    }

    /// The count of `role` in `color`'s pocket (0 for the king).
    pub fn count(&self, color: Color, role: Role) -> u8 {
        if role == Role::King {
            0
        } else {
            self.counts[color.index()][role.index()]
        }
    }
}

/// Blocks per side of a [`PocketLook`].
pub const POCKET_LOOK_GRID: usize = 8;

/// What a pocket zone and its surroundings looked like: the mean RGB of each block of a
/// [`POCKET_LOOK_GRID`]² grid (row-major). Finer than a [`SquareLook`]: a zone is larger than
/// a square and a pawn set down in it may cover only a small part of it.
pub type PocketLook = [[u8; 3]; POCKET_LOOK_GRID * POCKET_LOOK_GRID];

/// Blocks per side of a [`SquareLook`] (the patch is cut into `LOOK_GRID × LOOK_GRID` blocks).
pub const LOOK_GRID: usize = 4;

/// What one square's patch looked like, coarsely: the mean RGB of each block of a
/// [`LOOK_GRID`]² grid over the patch (row-major). Block means average sensor noise away while a
/// piece arriving, leaving or being replaced moves many of them by tens of levels, so two looks
/// of a square tell whether anything there changed, whatever the classifier makes of it.
pub type SquareLook = [[u8; 3]; LOOK_GRID * LOOK_GRID];

/// One reading of one board at `ts` (ms). Invariant (checked by [`Observation::new`]): 64 squares
/// (a1 = 0 … h8 = 63), each a finite non-negative vector over [`SquareClass`] in index order;
/// `motion` in `[0, 1]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    pub board: BoardId,
    pub ts: u64,
    squares: Box<[[f32; SquareClass::COUNT]; 64]>,
    /// 0 = calm, 1 = a hand over the board (or strong motion).
    pub motion: f32,
    pub pockets: Option<PocketReading>,
    /// Per square, the roles (bit `Role::index`) a piece of which would be hidden entirely
    /// behind a nearer piece there (all zero = not known). The square's patch then shows the
    /// nearer piece's body whether such a piece stands there or not, so the reading cannot tell
    /// those roles from an empty square (see [`TrackerConfig::hidden_empty_nats`]); set by the
    /// watcher from the calibration and the tracked position (`vision::OcclusionMap`).
    pub hidden: [u8; 64],
    /// Per square, what its patch looked like (None when the reader has no patches, e.g. the
    /// simulator's truth). Lets the tracker see that a square has not changed since it last
    /// confirmed it ([`TrackerConfig::unchanged_look_nats`]).
    pub looks: Option<std::sync::Arc<[SquareLook; 64]>>,
}

/// Why an observation was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ObservationError {
    #[error("an observation needs 64 squares, got {0}")]
    SquareCount(usize),
    #[error("square {square}: probabilities must be finite and non-negative with a positive sum")]
    BadProbabilities { square: Square },
    #[error("motion must be a number in [0, 1], got {0}")]
    BadMotion(f32),
}

impl Observation {
    /// Validates and normalises the square vectors (each scaled to sum 1).
    pub fn new(
        board: BoardId,
        ts: u64,
        squares: &[[f32; SquareClass::COUNT]],
        motion: f32,
        pockets: Option<PocketReading>,
    ) -> Result<Observation, ObservationError> {
        if squares.len() != 64 {
            return Err(ObservationError::SquareCount(squares.len()));
        }
        if !(0.0..=1.0).contains(&motion) {
            return Err(ObservationError::BadMotion(motion));
        }
        let mut out = Box::new([[0f32; SquareClass::COUNT]; 64]);
        for (i, (dst, src)) in out.iter_mut().zip(squares).enumerate() {
            let sum: f32 = src.iter().sum();
            if src.iter().any(|p| !p.is_finite() || *p < 0.0) || sum <= 0.0 || !sum.is_finite() {
                let square = Square::new(i as u8).expect("i < 64");
                return Err(ObservationError::BadProbabilities { square });
            }
            for (d, s) in dst.iter_mut().zip(src) {
                *d = s / sum;
            }
        }
        Ok(Observation {
            board,
            ts,
            squares: out,
            motion,
            pockets,
            hidden: [0; 64],
            looks: None,
        })
    }

    /// A noiseless observation of `pos` (probability 1 on the true class), for tests and tools.
    pub fn exact(board: BoardId, ts: u64, pos: &Position, motion: f32) -> Observation {
        let mut squares = Box::new([[0f32; SquareClass::COUNT]; 64]);
        for sq in Square::all() {
            squares[sq.index()][SquareClass::on(pos, sq).index()] = 1.0;
        }
        Observation {
            board,
            ts,
            squares,
            motion: motion.clamp(0.0, 1.0),
            pockets: None,
            hidden: [0; 64],
            looks: None,
        }
    }

    /// The probability vector of one square.
    #[inline]
    pub fn square(&self, sq: Square) -> &[f32; SquareClass::COUNT] {
        &self.squares[sq.index()]
    }

    /// Replaces one square's vector (normalised; a bad vector leaves the square unchanged and
    /// returns the error).
    pub fn set_square(
        &mut self,
        sq: Square,
        probs: [f32; SquareClass::COUNT],
    ) -> Result<(), ObservationError> {
        let sum: f32 = probs.iter().sum();
        if probs.iter().any(|p| !p.is_finite() || *p < 0.0) || sum <= 0.0 || !sum.is_finite() {
            return Err(ObservationError::BadProbabilities { square: sq });
        }
        self.squares[sq.index()] = probs.map(|p| p / sum);
        Ok(())
    }

    /// The most probable class of a square and its probability.
    pub fn argmax(&self, sq: Square) -> (SquareClass, f32) {
        let v = &self.squares[sq.index()];
        let mut best = 0;
        for i in 1..SquareClass::COUNT {
            if v[i] > v[best] {
                best = i;
            }
        }
        (SquareClass::ALL[best], v[best])
    }
}

/// Tracker configuration (TOML section `[tracker]`; every field has a default).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrackerConfig {
    /// Consecutive calm observations with an unchanged argmax before a board counts as stable.
    pub stable_frames: u32,
    /// Motion score at or above which an observation is not calm.
    pub motion_threshold: f32,
    /// Only squares whose top probability reaches this take part in the "argmax unchanged" test
    /// (a flickering uncertain square must not keep the board unstable forever).
    pub confident_probability: f32,
    /// Floor for probabilities before taking logs (a classifier's 0 is never certain).
    pub probability_floor: f32,
    /// On a square where pieces of some roles would be hidden ([`Observation::hidden`]), empty
    /// and those roles (both colours) are never more than this many nats apart below the best
    /// of them: the reading cannot tell them apart (a vacated `d2` behind the queen keeps
    /// reading a pawn; a pawn "dropped" there is only the queen's body). A large value
    /// switches it off.
    pub hidden_empty_nats: f32,
    /// A square whose patch looks as it did when the tracker last confirmed it (every block
    /// mean within [`TrackerConfig::unchanged_look_levels`] after the board's overall gain is
    /// taken out) holds what it held then: every other class loses this many nats, so a
    /// persistent misread there cannot become or block a move. 0 switches it off.
    pub unchanged_look_nats: f32,
    /// Largest block-mean difference (grey levels) of a square's look that still counts as
    /// unchanged.
    pub unchanged_look_levels: f32,
    /// Log prior of one legal move (no change is 0).
    pub prior_move: f32,
    /// Log prior added for each further legal move explained by the same observation (fast
    /// replies: a move and its reply, or longer chains when nothing stable was seen between).
    pub prior_extra_move: f32,
    /// Log prior of an illegal but physically possible move.
    pub prior_illegal: f32,
    /// Log prior of an illegal move the piece cannot make at all (off its geometry, or through
    /// another piece). Over the board these are far rarer than moves that ignore check, while a
    /// tracker that committed a wrong move earlier sees them often: a knight put on e2 instead
    /// of f3 makes the bishop's f1-c4 look blocked.
    pub prior_illegal_geometry: f32,
    /// Log prior of a drop of a piece the pocket does not hold (yet) while the partner board has an
    /// undecided change (the piece may be in transit); such a decision waits for that board.
    pub prior_in_transit_drop: f32,
    /// With a clock feed: log prior of a drop of a piece that reached the pocket only by a
    /// capture on the other board pressed after this drop's own press. The piece was not there
    /// yet; the tracker merely decided the other board first. 0 switches it off.
    pub prior_drop_before_capture: f32,
    /// Log-likelihood cost of a pocket reading that does not show the count a drop hypothesis
    /// implies (pocket readings are noisy and late, so this is mild).
    pub pocket_mismatch_nats: f32,
    /// Most a pocket reading that shows a drop's piece gone may add to the drop's score. Small:
    /// it tells apart sequences that end on the same squares (`P@e3 Kxe3` from a king walk),
    /// but a pocket that looks short (a hidden piece) must not make a drop of an unchanged board.
    pub pocket_confirm_nats: f32,
    /// Bonus for each class a move sequence shows on a square that was seen there in passing
    /// during the hand frames (tells a fast chain from a shorter one with the same end).
    pub transient_nats: f32,
    /// With a clock feed: cost per move by which a hypothesis differs from the number of clock
    /// presses since the last decision.
    pub press_mismatch_nats: f32,
    /// Cost of a move order that contradicts when the squares were seen changing.
    pub order_nats: f32,
    /// With a clock feed, weight of the calm views after the pending presses in choosing a
    /// chain: press `i`'s view should show the chain's first `i` moves, and each chain earns
    /// this times that view's log-likelihood gain over the tracked position on the squares its
    /// first `i` moves change (each square's gain clamped to
    /// ±[`decode::PRESS_VIEW_SQUARE_CAP`]). 0 = off: the views only order a chain.
    pub press_view_nats: f32,
    /// How long (ms) an undecided but fully explained board may wait for more evidence before
    /// the best hypothesis is committed anyway (waiting on the same view helps no further).
    pub undecided_commit_ms: u64,
    /// Required lead (nats, mean log-likelihood scale) of the best hypothesis over the runner-up
    /// with a different resulting position.
    pub commit_margin: f32,
    /// Required lead of the best hypothesis over "no change".
    pub commit_margin_none: f32,
    /// Both leads above while a clock press on the board is pending (the press says a move
    /// was made) and the best hypothesis has no more moves than presses are pending. Lower
    /// than the margins without a press: chosen on the validation renders
    /// (`docs/tracker.md`); without a clock feed the stricter margins keep the tracker from
    /// committing noise.
    pub commit_margin_pressed: f32,
    /// A square disagrees with a hypothesis when its best class is this many nats more likely than
    /// the hypothesised one.
    pub disagree_nats: f32,
    /// Disagreeing squares that make a board out of sync (a single square is a misread).
    pub desync_min_squares: u32,
    /// How long (ms of observations) the board must stay unexplained before `desync` is raised.
    pub desync_grace_ms: u64,
    /// How long (ms) a pocket discrepancy must persist in calm readings before an alert.
    pub pocket_grace_ms: u64,
    /// With a clock feed: each player's pressed but undecided moves excuse as many pieces
    /// missing from his pocket (they may be drops not yet committed). Off by default: it cuts
    /// false pocket alerts but also late hand-overs the receiving player has a move pending for
    /// (`docs/tracker.md`, Pockets). Off, such a player is alerted on only after two calm
    /// readings in a row show his pocket short.
    pub pocket_excuse_undecided: bool,
    /// Judge a zone's missing pieces by its total as well as per role: a piece is hidden only
    /// while the zone shows fewer pieces in all than its owner holds, and a role the reader never
    /// named there may be hidden once the zone was seen to hold as many pieces as the engine
    /// says (the reader misnamed it), and no hand-over is missing while it shows that many. The
    /// reader tells pieces from an empty table better than it names their roles on a set it
    /// was not trained on (`docs/tracker.md`, Pockets).
    pub pocket_totals: bool,
    /// With `pocket_totals` and a clock feed: while the partner has pressed moves undecided on
    /// the other board, up to that many of the pieces a zone shows beyond what its owner holds
    /// (per role) are taken as captures on their way that the engine does not know of yet, not
    /// as misnamed pieces, so they no longer make the total explain a missing piece away. With
    /// a perfect reader it finds hidden pieces that such an arrival masked; with today's
    /// reader, which misnames pieces often while the other board is undecided, it raises more
    /// false alerts than it finds (`docs/tracker.md`, Pockets). Off by default.
    pub pocket_partner_arrivals: bool,
    /// A piece of a player's that the board's latest view shows where the tracked position has
    /// none (by more than `disagree_nats`) is not hidden: it is more likely a drop the tracker
    /// took for another move than a piece in his hand (`PocketWatcher::on_board_view`).
    pub pocket_board_view: bool,
    /// A pocket zone read with less confidence than this ([`PocketReading::confidence`]) is
    /// left out of the pocket alerts' readings, as a zone under a hand is. 0: every reading
    /// counts.
    pub pocket_min_confidence: f32,
    /// A pocket zone whose look ([`PocketReading::looks`]) moved by more than this many grey
    /// levels in some block since before a capture received the hand-over, whatever the pocket
    /// reader counts; one that looks as it did when its content was last known hides nothing.
    /// 0 switches the pocket looks off (the counts alone decide).
    pub pocket_look_levels: f32,
    /// A hand-over counts as seen arriving once this many consecutive readings of the
    /// receiving zone since the capture, calm or not, showed every piece of its role the owner
    /// holds (and, with `pocket_totals`, as many pieces in all): its piece missing later is
    /// `hidden_pocket`, not `handover_missing` (`PocketWatcher::with_glimpses`). 0: off.
    pub pocket_glimpses: u32,
    /// Longest move sequence one observation may be explained by (1 = single moves only; at most
    /// `decode::MAX_SEQUENCE`). Two-move sequences are searched exhaustively, longer ones by beam.
    pub max_moves_per_observation: u32,
    /// Sequences kept per depth beyond two moves.
    pub beam_width: u32,
    /// Threads that score a search depth's replies together (1 = the tracker's own thread
    /// only). The outcome is the same for any count; a busy view's long chains decode faster.
    pub decode_threads: u32,
    /// Bounds every wait for a stable run (ms). With a clock feed: how long after a press the
    /// tracker waits for a calm observation before it decodes the least-moving observation
    /// since the press (the first calm one is decoded at once); the window then starts again
    /// until the press is committed. Without a clock feed: how long a board may keep changing
    /// without a stable run before single calm observations are decoded. Such tentative
    /// decisions commit only a move that explains every square with the usual margins, and a
    /// drop only where the dropped piece was seen in two consecutive observations (a one-frame
    /// misread of one square must not become a move). 0 turns this off: only stable runs are
    /// decoded (measured against each other in `docs/tracker.md`).
    pub stall_window_ms: u64,
    /// With a clock press pending, a tentative decision on a calm view may leave up to this
    /// many squares unexplained, provided none of them is changed by the decided moves: a
    /// persistent misread must not hold every later press back. A view that is not calm (the
    /// least-moving one of a press window: a hand may still hold a piece over the board) never
    /// leaves any. 0 = a tentative decision must explain every square.
    pub tentative_residue_squares: u32,
    /// A square the decided moves leave empty may stay unexplained too (even if they vacate
    /// it, in a view that is not calm, or beyond `tentative_residue_squares`) once the
    /// tentative decisions on the same tracked position have left it unexplained, read as the
    /// same piece, this many times in a row: a vacated square that keeps reading as a piece
    /// (a neighbour's body in its patch) must not hold the board back for the rest of the
    /// game. 0 = never.
    pub persistent_residue_decisions: u32,
    /// A press still undecided this long (ms) after it came, with the next press on the board
    /// already in (the reply was made too): the best hypothesis that beats "no change" is
    /// committed whatever its lead, if it claims no more moves than were pressed. Waiting
    /// longer only piles up presses, and a chain decoded over many presses is worse than the
    /// best guess now (never stall). 0 switches it off.
    pub overdue_ms: u64,
    /// An overdue press whose best hypothesis only ties its runner-up (chains that explain the
    /// views equally, e.g. moves on squares no view shows) waits for a view that tells them
    /// apart, until this many presses are pending; then the best is committed anyway (never
    /// stall). 2 or less commits ties as soon as the press is overdue.
    pub overdue_tie_presses: u32,
    /// With a clock feed: a board decided unchanged while its view shows, on an empty square,
    /// a piece its player does not hold but a capture on the partner board could hand over,
    /// and that board has a press undecided, keeps its own presses for up to this long (ms
    /// after its oldest pending press) instead of forgetting them: the drop is waiting for
    /// the partner's capture to be committed. 0 switches it off.
    pub await_partner_ms: u64,
    /// A later view that the tracked position explains badly (its best explanation is illegal,
    /// or leaves `desync_min_squares` squares unexplained) is decoded again from before each of
    /// the latest commit decisions on the board that together committed at most `rewind_moves`
    /// moves; when a legal chain from there explains every square and its position fits the
    /// view by at least `rewind_nats` more than the tracked one's best (an illegal best also
    /// pays `prior_illegal`), the misread moves are retracted (`move_retracted`, reason
    /// `misread`) and the chain is committed. One wrong commit otherwise costs the rest of the
    /// board's game. 0 switches rewinds off (`rewind_excess_moves`' too).
    pub rewind_nats: f32,
    /// The most moves a rewind may take back (0 = none): the longer the chain decoded again,
    /// the likelier it is wrong in turn.
    pub rewind_moves: u32,
    /// With a clock feed, a rewind is also tried when the tracked position's best explanation
    /// needs at least this many moves more than the pending presses announce: an earlier
    /// commit that took the wrong way to a square can leave the board reachable only by a
    /// detour. The rewound chain is taken when it needs at most one move more than its
    /// presses (a view often shows the next move before its press) and its position fits the
    /// view at least as well (`rewind_nats` is not asked: the detour usually ends on the same
    /// position). 0 switches it off; otherwise at least 2.
    pub rewind_excess_moves: u32,
    /// Whether a capture the tracker only guessed (its move's `reading.guess`) may raise
    /// `handover_missing` when its piece does not reach the partner's pocket. Such captures
    /// are wrong about half the time, and a wrong one expects a hand-over nobody owes.
    pub guessed_capture_alerts: bool,
    /// A press whose move did not stand is looked at in the view that followed it: its side
    /// pressed again before the other side did (when the clock feed names who pressed), or,
    /// without sides, a decision commits fewer moves than presses and leaves it between them.
    /// When an illegal move of the side to move explains that view by at least this many nats
    /// over the position before it (without sides, also this many more than the next committed
    /// move), the player made it, pressed and took it back, and it goes to the referee as an
    /// illegal move in its place. Only under rule sets that refuse illegal moves (`fics`):
    /// where one stands until claimed, the referee would keep a move the board no longer
    /// shows. 0 switches it off.
    pub taken_back_nats: f32,
    /// How many squares besides the taken-back move's own may disagree with its press view
    /// (by more than [`TrackerConfig::disagree_nats`]): a square misread elsewhere on the
    /// board then does not hide the move.
    pub taken_back_misfit_squares: u32,
    /// Whether a press the same side repeated before the other side pressed is reported when
    /// no view shows an illegal move for it (a hand over the board the whole time, a move
    /// behind nearer pieces, or a press without a move): an `illegal_move` without a move
    /// (`uci` empty, reason `repeated_press`), at the repeated press, or, when the view after
    /// the first press is still to be judged (nothing before it is pending), once it is. A
    /// clock takes a press only from the side whose time runs, so a repeated press means a
    /// complete move was undone or never made. Under the same rule sets as
    /// [`TrackerConfig::taken_back_nats`].
    pub repeated_press: bool,
    /// The most (nats, either way) that how likely a player is to make a move
    /// (`plausible::MovePrior`: its log-probability among the position's legal moves over the
    /// expected one) adds to a decoded legal move: where the view cannot tell moves apart
    /// (squares behind nearer pieces), the move players make wins. Only moves the presses
    /// announce (the first without a clock) may gain. 0 switches it off.
    pub prior_plausible: f32,
}

impl Default for TrackerConfig {
    fn default() -> Self {
        TrackerConfig {
            stable_frames: 2,
            motion_threshold: 0.3,
            confident_probability: 0.6,
            probability_floor: 1e-6,
            hidden_empty_nats: 1.0,
            unchanged_look_nats: 4.0,
            unchanged_look_levels: 6.0,
            prior_move: -1.0,
            prior_extra_move: -2.0,
            prior_illegal: -8.0,
            prior_illegal_geometry: -16.0,
            prior_in_transit_drop: -2.0,
            prior_drop_before_capture: -8.0,
            pocket_mismatch_nats: 4.0,
            pocket_confirm_nats: 1.0,
            transient_nats: 1.0,
            order_nats: 0.3,
            press_view_nats: 0.5,
            press_mismatch_nats: 3.0,
            undecided_commit_ms: 1000,
            commit_margin: 3.0,
            commit_margin_none: 3.0,
            commit_margin_pressed: 1.5,
            disagree_nats: 4.0,
            desync_min_squares: 2,
            desync_grace_ms: 1000,
            pocket_grace_ms: 3000,
            pocket_excuse_undecided: false,
            pocket_partner_arrivals: false,
            pocket_totals: true,
            pocket_board_view: true,
            pocket_min_confidence: 0.0,
            pocket_look_levels: 10.0,
            pocket_glimpses: 3,
            max_moves_per_observation: 12,
            beam_width: 48,
            decode_threads: 2,
            stall_window_ms: 1000,
            tentative_residue_squares: 1,
            persistent_residue_decisions: 3,
            overdue_ms: 1500,
            overdue_tie_presses: 4,
            await_partner_ms: 6000,
            rewind_nats: 8.0,
            rewind_moves: 3,
            rewind_excess_moves: 2,
            guessed_capture_alerts: true,
            taken_back_nats: 4.0,
            taken_back_misfit_squares: 1,
            repeated_press: true,
            prior_plausible: 2.0,
        }
    }
}

/// Why a tracker configuration is unusable.
#[derive(Debug, thiserror::Error)]
pub enum TrackerConfigError {
    #[error("tracker config: {0}")]
    Toml(#[from] toml::de::Error),
    #[error("tracker config: {0}")]
    Invalid(String),
}

impl TrackerConfig {
    /// Reads a TOML table of overrides (missing keys keep their defaults).
    pub fn from_toml(text: &str) -> Result<TrackerConfig, TrackerConfigError> {
        let cfg: TrackerConfig = toml::from_str(text)?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks ranges that would make the tracker meaningless.
    pub fn validate(&self) -> Result<(), TrackerConfigError> {
        let bad = |m: &str| Err(TrackerConfigError::Invalid(m.to_string()));
        if self.stable_frames == 0 {
            return bad("stable_frames must be at least 1");
        }
        if self.probability_floor.is_nan()
            || self.probability_floor <= 0.0
            || self.probability_floor >= 0.1
        {
            return bad("probability_floor must be in (0, 0.1)");
        }
        if self.hidden_empty_nats.is_nan() || self.hidden_empty_nats < 0.0 {
            return bad("hidden_empty_nats must be non-negative");
        }
        if !(self.prior_illegal.is_finite() && self.prior_illegal_geometry.is_finite()) {
            return bad("prior_illegal and prior_illegal_geometry must be finite log priors");
        }
        if !(self.prior_drop_before_capture.is_finite() && self.prior_drop_before_capture <= 0.0) {
            return bad("prior_drop_before_capture must be a finite log prior ≤ 0 (0 = off)");
        }
        if !(self.unchanged_look_nats.is_finite() && self.unchanged_look_nats >= 0.0) {
            return bad("unchanged_look_nats must be a non-negative number (0 = off)");
        }
        if !(self.unchanged_look_levels.is_finite() && self.unchanged_look_levels > 0.0) {
            return bad("unchanged_look_levels must be a positive number of grey levels");
        }
        if !(self.pocket_look_levels.is_finite() && self.pocket_look_levels >= 0.0) {
            return bad(
                "pocket_look_levels must be a non-negative number of grey levels (0 = off)",
            );
        }
        if !(0.0..=1.0).contains(&self.pocket_min_confidence) {
            return bad("pocket_min_confidence must be a probability in [0, 1] (0 = off)");
        }
        if !(self.press_view_nats.is_finite() && self.press_view_nats >= 0.0) {
            return bad("press_view_nats must be a non-negative number (0 = off)");
        }
        if !(self.pocket_confirm_nats.is_finite() && self.pocket_confirm_nats >= 0.0) {
            return bad("pocket_confirm_nats must be a non-negative number (0 = off)");
        }
        if self.commit_margin < 0.0
            || self.commit_margin_none < 0.0
            || self.commit_margin_pressed < 0.0
            || self.commit_margin_pressed.is_nan()
        {
            return bad("margins must be non-negative");
        }
        if self.max_moves_per_observation == 0
            || self.max_moves_per_observation as usize > decode::MAX_SEQUENCE
        {
            return bad("max_moves_per_observation must be in 1..=12");
        }
        if self.beam_width == 0 {
            return bad("beam_width must be at least 1");
        }
        if self.decode_threads == 0 || self.decode_threads > 64 {
            return bad("decode_threads must be in 1..=64");
        }
        if !(self.rewind_nats.is_finite() && self.rewind_nats >= 0.0) {
            return bad("rewind_nats must be a non-negative number (0 = off)");
        }
        if !(self.taken_back_nats.is_finite() && self.taken_back_nats >= 0.0) {
            return bad("taken_back_nats must be a non-negative number (0 = off)");
        }
        if !(self.prior_plausible.is_finite() && self.prior_plausible >= 0.0) {
            return bad("prior_plausible must be a non-negative number (0 = off)");
        }
        if self.taken_back_misfit_squares > 64 {
            return bad("taken_back_misfit_squares must be 0..=64");
        }
        if self.rewind_moves > decode::MAX_SEQUENCE as u32 {
            return bad("rewind_moves must be in 0..=12");
        }
        if self.rewind_excess_moves == 1 || self.rewind_excess_moves > decode::MAX_SEQUENCE as u32 {
            return bad("rewind_excess_moves must be 0 (off) or in 2..=12");
        }
        if self.desync_min_squares == 0 {
            return bad("desync_min_squares must be at least 1");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_index_order_is_the_documented_one() {
        let letters: String = SquareClass::ALL.iter().map(|c| c.char()).collect();
        assert_eq!(letters, ".PNBRQKpnbrqk");
        for (i, c) in SquareClass::ALL.iter().enumerate() {
            assert_eq!(c.index(), i);
            assert_eq!(SquareClass::of(c.piece()), *c);
        }
    }

    #[test]
    fn malformed_observations_are_errors() {
        let good = [[1.0 / 13.0; SquareClass::COUNT]; 64];
        assert!(Observation::new(BoardId::A, 0, &good, 0.0, None).is_ok());
        assert_eq!(
            Observation::new(BoardId::A, 0, &good[..63], 0.0, None),
            Err(ObservationError::SquareCount(63))
        );
        let mut bad = good;
        bad[10][3] = f32::NAN;
        assert!(matches!(
            Observation::new(BoardId::A, 0, &bad, 0.0, None),
            Err(ObservationError::BadProbabilities { .. })
        ));
        let zero = [[0.0; SquareClass::COUNT]; 64];
        assert!(Observation::new(BoardId::A, 0, &zero, 0.0, None).is_err());
        assert!(Observation::new(BoardId::A, 0, &good, 1.5, None).is_err());
    }

    #[test]
    fn config_toml_overrides_and_validation() {
        let cfg = TrackerConfig::from_toml("stable_frames = 4\ncommit_margin = 5.0\n").unwrap();
        assert_eq!(cfg.stable_frames, 4);
        assert_eq!(cfg.commit_margin, 5.0);
        assert_eq!(cfg.beam_width, TrackerConfig::default().beam_width);
        assert!(TrackerConfig::from_toml("stable_frames = 0").is_err());
        assert!(TrackerConfig::from_toml("max_moves_per_observation = 13").is_err());
        assert!(TrackerConfig::from_toml("no_such_key = 1").is_err());
        assert!(TrackerConfig::from_toml("commit_margin_pressed = -1.0").is_err());
        assert!(TrackerConfig::from_toml("commit_margin_pressed = nan").is_err());
    }
}
