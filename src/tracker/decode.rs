//! Engine-constrained decoding of one stable observation of one board.
//!
//! Every hypothesis is a position reachable from the tracked one: no change, one legal move (drops,
//! promotions, the steal promotion), two legal moves (a fast reply), and, only when those leave
//! the board unexplained, illegal physical moves. Its score is the log-likelihood of the
//! observation given the hypothesised position plus a log prior. The log-likelihood is computed
//! incrementally: a hypothesis only differs from "no change" on the squares it changes, so a square
//! that no hypothesis touches (a misread knight on b1) adds the same to all of them and cancels.

use crate::engine::{BoardId, Color, IllegalReason, Move, Position, Role, Square, Table, Variant};

use super::plausible::MovePrior;
use super::{Observation, PocketReading, SquareClass, SquareEvidence, SquareLook, TrackerConfig};

/// Per-square log-probabilities of one (or the mean of several) observations.
#[derive(Debug, Clone)]
pub struct LogLik {
    ll: [[f32; SquareClass::COUNT]; 64],
    /// The largest log-probability per square (the unconstrained argmax).
    top: [f32; 64],
    /// What the squares looked like in the (latest) observation these come from, if known.
    looks: Option<std::sync::Arc<[SquareLook; 64]>>,
    /// Squares where a piece of some role would be hidden behind a nearer one (bit per square).
    hidden: u64,
}

impl LogLik {
    /// Logs of one observation's probabilities, floored at `cfg.probability_floor`; on squares
    /// where pieces of some roles would be hidden ([`Observation::hidden`]), empty and those
    /// roles are raised to at most `cfg.hidden_empty_nats` below the best of them.
    pub fn from_observation(obs: &Observation, cfg: &TrackerConfig) -> LogLik {
        let mut ll = [[0f32; SquareClass::COUNT]; 64];
        for sq in Square::all() {
            let p = obs.square(sq);
            let l = &mut ll[sq.index()];
            for (d, &x) in l.iter_mut().zip(p) {
                *d = x.max(cfg.probability_floor).ln();
            }
            let roles = obs.hidden[sq.index()];
            if roles != 0 {
                // Empty, then White's and Black's pieces of the hidden roles.
                let alike = |c: usize| c == 0 || roles & (1 << ((c - 1) % 6)) != 0;
                let best = (0..SquareClass::COUNT)
                    .filter(|&c| alike(c))
                    .map(|c| l[c])
                    .fold(f32::NEG_INFINITY, f32::max);
                for c in (0..SquareClass::COUNT).filter(|&c| alike(c)) {
                    l[c] = l[c].max(best - cfg.hidden_empty_nats);
                }
            }
        }
        LogLik::from_logs(ll).with_view(obs)
    }

    /// Takes the looks and hidden squares of `obs` (the latest observation of a run).
    pub fn with_view(mut self, obs: &Observation) -> LogLik {
        self.looks = obs.looks.clone();
        self.hidden = Square::all()
            .filter(|sq| obs.hidden[sq.index()] != 0)
            .fold(0, |m, sq| m | 1 << sq.index());
        self
    }

    /// What `sq` looked like, unless unknown or hidden behind a nearer piece (its patch then
    /// shows that piece whatever stands on `sq`).
    pub fn look(&self, sq: Square) -> Option<&SquareLook> {
        if self.hidden & (1 << sq.index()) != 0 {
            return None;
        }
        self.looks.as_ref().map(|l| &l[sq.index()])
    }

    /// Every class of `sq` but `class` loses `nats`: the square is known to still hold `class`.
    pub fn anchor(&mut self, sq: Square, class: SquareClass, nats: f32) {
        let v = &mut self.ll[sq.index()];
        for (c, x) in v.iter_mut().enumerate() {
            if c != class.index() {
                *x -= nats;
            }
        }
        self.top[sq.index()] = v.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    }

    /// From summed log-probabilities over `n` observations (their mean is used).
    pub fn from_sum(sum: &[[f32; SquareClass::COUNT]; 64], n: u32) -> LogLik {
        let k = 1.0 / n.max(1) as f32;
        LogLik::from_logs(sum.map(|v| v.map(|x| x * k)))
    }

    fn from_logs(ll: [[f32; SquareClass::COUNT]; 64]) -> LogLik {
        let top = std::array::from_fn(|i| ll[i].iter().copied().fold(f32::NEG_INFINITY, f32::max));
        LogLik {
            ll,
            top,
            looks: None,
            hidden: 0,
        }
    }

    /// Makes a square uninformative (all classes equally likely): used for squares known to be
    /// misread persistently, so that they cannot become moves.
    pub fn flatten(&mut self, sq: Square) {
        self.ll[sq.index()] = [0.0; SquareClass::COUNT];
        self.top[sq.index()] = 0.0;
    }

    /// Log-probability of `class` on `sq`.
    #[inline]
    pub fn get(&self, sq: Square, class: SquareClass) -> f32 {
        self.ll[sq.index()][class.index()]
    }

    /// The most likely class of `sq`.
    pub fn argmax(&self, sq: Square) -> SquareClass {
        let v = &self.ll[sq.index()];
        let mut best = 0;
        for i in 1..SquareClass::COUNT {
            if v[i] > v[best] {
                best = i;
            }
        }
        SquareClass::ALL[best]
    }
}

/// What kind of explanation a hypothesis is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HypothesisKind {
    NoChange,
    /// One legal move.
    Move,
    /// Several legal moves in one observation (fast replies), in playing order.
    Sequence,
    /// One physically possible but illegal move (goes to the referee, comes back `illegal_move`),
    /// last in the sequence: legal moves of earlier presses may come before it.
    Illegal,
    /// A drop of a piece this pocket does not hold yet while the partner board has an undecided
    /// change: the decision waits for that board.
    InTransitDrop,
}

/// Longest move sequence one observation can be explained by.
pub const MAX_SEQUENCE: usize = 12;

/// Longest legal chain an illegal move is offered after (the moves of the earlier presses).
const MAX_ILLEGAL_PREFIX: usize = 3;

/// How many of the best chains of each length an illegal move is offered after.
const ILLEGAL_PREFIXES_PER_DEPTH: usize = 4;

/// Adds the best [`ILLEGAL_PREFIXES_PER_DEPTH`] nodes of `frontier` (one chain length) to `keep`.
fn keep_best(keep: &mut Vec<Node>, frontier: &[Node]) {
    let mut order: Vec<usize> = (0..frontier.len()).collect();
    order.sort_unstable_by(|&a, &b| frontier[b].score.total_cmp(&frontier[a].score));
    keep.extend(
        order
            .into_iter()
            .take(ILLEGAL_PREFIXES_PER_DEPTH)
            .map(|i| frontier[i].clone()),
    );
}

/// The share of the beam (1 / this) kept for the chains that pass through the most classes seen
/// in passing during the hand frames: a drop captured at once (`N@g4` after `Kxf2`) shows only
/// there, and at depth 2 a beam ranked by the latest view alone is full of "any drop plus the
/// king's step".
const TRANSIENT_BEAM_SHARE: usize = 2;

/// How many of the best extensions of a whole carried chain stay in the search, whatever the
/// beam keeps; each of them then keeps its own best extension at every depth. An earlier view
/// vouched for the chain, and the moves after it may score low until a later move explains
/// their squares (a bishop's stop on `b4` reads as a bishop missing from `b4` until it takes on
/// `d2`).
const CARRIED_EXTENSIONS: u8 = 4;

/// Change times closer than this are not taken as an order.
const ORDER_TOLERANCE_MS: u64 = 150;

/// A move sequence of at most [`MAX_SEQUENCE`] moves, without allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seq {
    moves: [Option<Move>; MAX_SEQUENCE],
    len: usize,
}

impl Seq {
    const EMPTY: Seq = Seq {
        moves: [None; MAX_SEQUENCE],
        len: 0,
    };

    fn one(m: Move) -> Seq {
        Seq::EMPTY.push(m)
    }

    fn push(mut self, m: Move) -> Seq {
        if self.len < MAX_SEQUENCE {
            self.moves[self.len] = Some(m);
            self.len += 1;
        }
        self
    }

    /// Whether `m` takes a piece back to where an earlier move of the sequence took it from
    /// without having captured anything on the way: a detour no observation can see, so such
    /// sequences only add spurious explanations.
    fn undoes(&self, m: Move) -> bool {
        let (Some(from), to) = (m.from(), m.to()) else {
            return false;
        };
        self.iter().any(|p| {
            let captured = matches!(
                p,
                Move::Normal {
                    capture: Some(_),
                    ..
                } | Move::EnPassant { .. }
            );
            p.to() == from && p.from() == Some(to) && !captured
        })
    }

    fn iter(&self) -> impl Iterator<Item = Move> + '_ {
        self.moves[..self.len].iter().flatten().copied()
    }
}

/// One scored explanation of an observation.
#[derive(Debug, Clone, PartialEq)]
pub struct Hypothesis {
    pub kind: HypothesisKind,
    /// The moves in order (empty for no change).
    pub moves: Vec<Move>,
    /// Log-likelihood relative to "no change" plus the log prior.
    pub score: f32,
    /// The part of `score` the move prior added (how likely players are to make these moves).
    pub plausible: f32,
    /// Identifies the resulting placement (0 for no change): hypotheses that lead to the same
    /// squares cannot be told apart by an observation and do not count as runner-ups.
    pub fingerprint: u64,
}

/// A square whose likeliest class beats the tracked position's by more than this many nats is
/// listed by [`Decoder::contrast`] whatever the hypotheses do there: a piece seen where no
/// hypothesis put one (a drop the pocket does not allow yet) is what a trace reader looks for.
pub const CONTRAST_SEEN_NATS: f32 = 1.0;

/// One square a decision turned on: the class (FEN letter, `.` empty) that the view makes
/// likeliest, and those the tracked position, the best hypothesis and the runner-up put there,
/// each with the view's log-probability of it (the reading after anchoring, before any prior).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct SquareChoice {
    pub square: Square,
    pub seen: (char, f32),
    pub tracked: (char, f32),
    pub best: (char, f32),
    pub runner_up: Option<(char, f32)>,
}

/// The result of decoding one observation.
#[derive(Debug, Clone)]
pub struct Decoded {
    pub best: Hypothesis,
    /// The best hypothesis with a different resulting placement.
    pub runner_up: Option<Hypothesis>,
    /// Squares where the best hypothesis's position disagrees with the observation.
    pub disagreeing: Vec<SquareEvidence>,
    /// Squares where the tracked position itself (no change) disagrees with the observation.
    pub disagreeing_unchanged: Vec<SquareEvidence>,
    /// Number of hypotheses scored.
    pub considered: usize,
    /// Whether illegal physical moves were considered.
    pub illegal_considered: bool,
}

impl Decoded {
    /// Lead of the best over the runner-up (infinite if there is none).
    pub fn margin(&self) -> f32 {
        self.runner_up
            .as_ref()
            .map_or(f32::INFINITY, |r| self.best.score - r.score)
    }

    /// Whether the runner-up explains the views as well as the best, up to float rounding:
    /// choosing between them is a coin toss that a later view may settle. The move prior does
    /// not count here: it says which is likelier, not that the views told them apart.
    pub fn tied(&self) -> bool {
        self.runner_up.as_ref().is_some_and(|r| {
            ((self.best.score - self.best.plausible) - (r.score - r.plausible)).abs() < SCORE_TIE
        })
    }
}

/// Up to six squares a move changes, with their new class.
type Changes = ([(Square, SquareClass); 6], usize);

/// Score, placement fingerprint, kind, moves, and the part of the score the move prior added.
type Entry = (f32, u64, HypothesisKind, Seq, f32);

/// Keeps the best two hypotheses with distinct fingerprints while enumerating, without
/// allocating for the losers.
struct Top<'a> {
    best: Option<Entry>,
    second: Option<Entry>,
    count: usize,
    /// With a clock feed: the number of moves the presses announce, and the cost per move off.
    presses: Option<(u32, f32)>,
    /// [`Evidence::carried`]: breaks ties between chains that end on the same squares.
    carried: &'a [Vec<Move>],
}

/// The most one square of a press view can say for or against a chain (nats, before
/// `press_view_nats`): a view is a single frame, and one misread square must not outweigh the
/// rest of it. 4 (`disagree_nats`) was tried first: validation 869 + 846 moves against 872 + 856
/// with 8 (`docs/tracker.md`).
pub const PRESS_VIEW_SQUARE_CAP: f32 = 8.0;

/// Scores closer than this are equal (chains to the same placement sum the same terms in
/// different orders).
const SCORE_TIE: f32 = 1e-3;

impl Top<'_> {
    /// How many first moves of `seq` an earlier view's best chain shares (the most of any).
    fn carried_prefix(&self, seq: &Seq) -> usize {
        self.carried
            .iter()
            .map(|c| {
                c.iter()
                    .zip(seq.iter())
                    .take_while(|(a, b)| **a == *b)
                    .count()
            })
            .max()
            .unwrap_or(0)
    }

    /// `plausible`: the part of `score` the move prior added. Between chains to the same
    /// placement it does not count: which route or order the moves took is for the views
    /// (and the earlier views' chains) to tell, as before the prior.
    fn offer(&mut self, score: f32, plausible: f32, fp: u64, kind: HypothesisKind, seq: Seq) {
        self.offer_with(score, plausible, fp, kind, seq.len, || seq);
    }

    /// As [`Top::offer`] for a sequence of `len` moves that `seq` builds only if it is kept:
    /// most of the search's candidates are not, and copying their moves was a fifth of the
    /// decoding time.
    #[inline]
    fn offer_with(
        &mut self,
        score: f32,
        plausible: f32,
        fp: u64,
        kind: HypothesisKind,
        len: usize,
        seq: impl FnOnce() -> Seq,
    ) {
        self.count += 1;
        let score = match self.presses {
            Some((n, nats)) => score - nats * (len as f32 - n as f32).abs(),
            None => score,
        };
        match self.best {
            Some(b) if b.1 == fp => {
                // The board cannot tell these apart: on a tie, the chain an earlier view
                // showed the start of (a drop seen on e4 before it took on d3 under the hand).
                let (seen, best_seen) = (score - plausible, b.0 - b.4);
                if seen > best_seen + SCORE_TIE {
                    self.best = Some((score, fp, kind, seq(), plausible));
                } else if seen >= best_seen - SCORE_TIE && !self.carried.is_empty() {
                    let seq = seq();
                    if self.carried_prefix(&seq) > self.carried_prefix(&b.3) {
                        self.best = Some((score, fp, kind, seq, plausible));
                    }
                }
            }
            Some(b) if score > b.0 => {
                // The old best differs from the new one, so it is the runner-up now.
                self.second = Some(b);
                self.best = Some((score, fp, kind, seq(), plausible));
            }
            Some(_) => {
                if self.second.is_none_or(|s| score > s.0) {
                    self.second = Some((score, fp, kind, seq(), plausible));
                }
            }
            None => self.best = Some((score, fp, kind, seq(), plausible)),
        }
    }
}

fn to_hypothesis(e: Entry) -> Hypothesis {
    Hypothesis {
        kind: e.2,
        moves: e.3.iter().collect(),
        score: e.0,
        plausible: e.4,
        fingerprint: e.1,
    }
}

#[inline]
fn mix(x: u64) -> u64 {
    // SplitMix64 finaliser: order-independent sums of these identify sets of (square, class).
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[inline]
fn fp_of(sq: Square, class: SquareClass) -> u64 {
    mix((sq.index() as u64) << 4 | class.index() as u64)
}

/// A reachable position during the search, with its squares and score relative to the base.
#[derive(Clone)]
struct Node {
    pos: Position,
    classes: [SquareClass; 64],
    score: f32,
    /// The part of `score` the move prior added.
    plaus: f32,
    fp: u64,
    seq: Seq,
    /// Pieces dropped so far per colour and pocket role.
    drops: [[u8; 5]; 2],
    /// Transient classes this sequence shows (bits of `Evidence::transient_bit`).
    shown: u32,
    /// Latest change time of the sequence's moves.
    last_t: u64,
    /// How many of its best extensions stay in the search whatever the beam keeps:
    /// [`CARRIED_EXTENSIONS`] for a whole carried chain (`Evidence::carried`), 1 for an
    /// extension kept that way, 0 for any other chain (one the beam keeps on its score too).
    keep: u8,
}

/// Evidence besides the square log-likelihoods of the stable observation.
#[derive(Debug, Clone)]
pub struct Evidence {
    /// This board's pocket reading (median of recent calm readings).
    pub pocket: Option<PocketReading>,
    /// Pieces captured on the other board not yet seen arriving, per colour and role.
    pub in_transit: [[u8; 5]; 2],
    /// Per square and class: 0, or 1 + the index of a class confidently seen on that square
    /// during the hand frames since the last decision (at most 32 of them).
    pub transient_bit: Box<[[u8; SquareClass::COUNT]; 64]>,
    /// When each transient class was first seen (ms), by bit index.
    pub transient_time: [u64; 32],
    /// With a clock feed: clock presses since the last decision (each completes one move).
    pub presses: Option<u32>,
    /// Sequences that best explained earlier views of the change under way. Their prefixes
    /// stay in the beam: a piece dropped and taken back at once (`B@f7 Kxf7 … Kf7e8`) leaves no
    /// trace in the latest view, so the view alone prunes the path the earlier views showed.
    /// Which paths are searched depends on them, never a score; among chains that end on the
    /// same squares with equal scores, the one that shares more first moves with them wins.
    pub carried: Vec<Vec<Move>>,
    /// With a clock feed: what the board showed after each pending press but the latest
    /// (`views[i]` after the press of the chain's move `i`; `None` where no calm frame was
    /// seen); empty when the presses and views are not aligned. Scored with
    /// [`TrackerConfig::press_view_nats`].
    pub views: Vec<Option<LogLik>>,
    /// With a clock feed, per pending move press (oldest first, the chain's moves in order):
    /// the pieces per colour and role that reached this board's pockets by captures pressed
    /// on the other board after that press. The chain's move there cannot have dropped them
    /// ([`TrackerConfig::prior_drop_before_capture`]); empty: no such constraint.
    pub late_arrivals: Vec<[[u8; 5]; 2]>,
}

impl Default for Evidence {
    fn default() -> Self {
        Evidence {
            pocket: None,
            in_transit: [[0; 5]; 2],
            transient_bit: Box::new([[0; SquareClass::COUNT]; 64]),
            transient_time: [0; 32],
            presses: None,
            carried: Vec::new(),
            views: Vec::new(),
            late_arrivals: Vec::new(),
        }
    }
}

impl Evidence {
    /// How many moves the pending presses announce; without a clock, one.
    fn announced_moves(&self) -> usize {
        self.presses.unwrap_or(1).max(1) as usize
    }

    /// Records that `class` was seen on `sq` from `ts` on while the board was moving (the
    /// earliest time is kept). Returns false when the table is full.
    pub fn add_transient(&mut self, sq: Square, class: SquareClass, ts: u64) -> bool {
        let slot = self.transient_bit[sq.index()][class.index()];
        if slot != 0 {
            let t = &mut self.transient_time[slot as usize - 1];
            *t = (*t).min(ts);
            return true;
        }
        let used = self
            .transient_bit
            .iter()
            .flatten()
            .filter(|&&b| b != 0)
            .count();
        if used >= 32 {
            return false;
        }
        self.transient_bit[sq.index()][class.index()] = used as u8 + 1;
        self.transient_time[used] = ts;
        true
    }
}

/// The buffers one part of a depth's expansion reuses from node to node.
#[derive(Default)]
struct Scratch {
    replies: crate::engine::MoveList,
    plausible: Vec<f32>,
}

/// The fewest frontier nodes whose replies are scored on more than one thread (a thread costs
/// tens of microseconds; a node's replies a few).
const PARALLEL_MIN_FRONTIER: usize = 8;

/// A child of a node, scored but not yet materialised.
#[derive(Clone, Copy)]
struct Candidate {
    parent: u32,
    mv: Move,
    score: f32,
    plaus: f32,
    fp: u64,
    shown: u32,
    last_t: u64,
}

/// Scores hypotheses for one board against the table the referee keeps.
pub struct Decoder<'a> {
    table: &'a Table,
    board: BoardId,
    variant: &'a Variant,
    cfg: &'a TrackerConfig,
    base: [SquareClass; 64],
}

impl<'a> Decoder<'a> {
    /// A decoder for `board` of `table` (the referee's).
    pub fn new(
        table: &'a Table,
        board: BoardId,
        variant: &'a Variant,
        cfg: &'a TrackerConfig,
    ) -> Decoder<'a> {
        let pos = table.board(board);
        let base: [SquareClass; 64] =
            std::array::from_fn(|i| SquareClass::on(pos, Square::new(i as u8).expect("i < 64")));
        Decoder {
            table,
            board,
            variant,
            cfg,
            base,
        }
    }

    /// Pocket evidence for a drop `m` after `node`'s drops: how far the reading is from the count
    /// the hypothesis implies (allowing for pieces still being handed over), and whether the
    /// piece had arrived by the move's press ([`Evidence::late_arrivals`]). Also returns the
    /// fingerprint part that makes drops of different pieces distinct.
    #[inline]
    fn pocket_term(&self, ev: &Evidence, node: &Node, m: Move) -> (f32, u64) {
        let Move::Drop { role, .. } = m else {
            return (0.0, 0);
        };
        let color = node.pos.turn();
        let done = node.drops[color.index()][role.index()];
        let fp = mix(2000 + (color.index() * 5 + role.index()) as u64 * 16 + u64::from(done));
        // The pocket when this move's press came held only the pieces that had arrived by then.
        let late = ev
            .late_arrivals
            .get(node.seq.len)
            .map_or(0, |l| l[color.index()][role.index()]);
        let early = if late > 0 && node.pos.pocket(color).count(role) <= late {
            self.cfg.prior_drop_before_capture
        } else {
            0.0
        };
        let Some(reading) = ev.pocket else {
            return (early, fp);
        };
        let held = i32::from(self.table.board(self.board).pocket(color).count(role));
        let seen = i32::from(reading.count(color, role));
        let transit = i32::from(ev.in_transit[color.index()][role.index()]);
        let old = held - i32::from(done);
        let cost = |n: i32| {
            let off = (0..=transit)
                .map(|t| (n - t - seen).abs())
                .min()
                .unwrap_or(0);
            -self.cfg.pocket_mismatch_nats * off as f32
        };
        // At most `pocket_confirm_nats`: a pocket reading may tell drops apart, but a pocket
        // that looks short (a hidden piece) must not create moves on an unchanged board.
        (
            early + (cost(old - 1) - cost(old)).min(self.cfg.pocket_confirm_nats),
            fp,
        )
    }

    /// Bonus for the transient classes (seen during the hand frames) that `changes` shows, not
    /// yet shown by `node`'s sequence; returns the bonus and the new explained mask.
    #[inline]
    ///
    /// Also checks the order: a move whose squares were seen changing clearly before those of an
    /// earlier move of the sequence costs `order_nats`. Returns the bonus, the new mask and the
    /// new latest move time.
    fn transient_term(
        &self,
        ev: &Evidence,
        mask: u32,
        last_t: u64,
        changes: &Changes,
    ) -> (f32, u32, u64) {
        let mut m = mask;
        let mut t = 0;
        for &(sq, class) in &changes.0[..changes.1] {
            let bit = ev.transient_bit[sq.index()][class.index()];
            if bit != 0 {
                m |= 1 << (bit - 1);
                t = t.max(ev.transient_time[bit as usize - 1]);
            }
        }
        let gained = (m & !mask).count_ones();
        let mut bonus = gained as f32 * self.cfg.transient_nats;
        if t > 0 && t + ORDER_TOLERANCE_MS < last_t {
            bonus -= self.cfg.order_nats;
        }
        (bonus, m, last_t.max(t))
    }

    /// Score and fingerprint of `node` after `changes`.
    #[inline]
    fn extend(&self, ll: &LogLik, node: &Node, changes: &Changes) -> (f32, u64) {
        let (mut score, mut fp) = (node.score, node.fp);
        for &(sq, new) in &changes.0[..changes.1] {
            let i = sq.index();
            let old = node.classes[i];
            if old == new {
                continue;
            }
            score += ll.ll[i][new.index()] - ll.ll[i][old.index()];
            if old != self.base[i] {
                fp = fp.wrapping_sub(fp_of(sq, old));
            }
            if new != self.base[i] {
                fp = fp.wrapping_add(fp_of(sq, new));
            }
        }
        (score, fp)
    }

    /// What press `depth`'s view says of a chain whose first `depth` moves leave the squares
    /// `classes` with `changes` applied: its gain over the tracked position on the squares
    /// that differ from it, each clamped to ±[`PRESS_VIEW_SQUARE_CAP`], times
    /// `press_view_nats`. Zero without such a view.
    fn view_term(
        &self,
        ev: &Evidence,
        depth: usize,
        classes: &[SquareClass; 64],
        changes: &Changes,
    ) -> f32 {
        let w = self.cfg.press_view_nats;
        let Some(Some(view)) = depth.checked_sub(1).and_then(|i| ev.views.get(i)) else {
            return 0.0;
        };
        if w == 0.0 {
            return 0.0;
        }
        let mut after = *classes;
        for &(sq, c) in &changes.0[..changes.1] {
            after[sq.index()] = c;
        }
        let cap = PRESS_VIEW_SQUARE_CAP;
        let gain: f32 = Square::all()
            .filter(|sq| after[sq.index()] != self.base[sq.index()])
            .map(|sq| {
                (view.get(sq, after[sq.index()]) - view.get(sq, self.base[sq.index()]))
                    .clamp(-cap, cap)
            })
            .sum();
        w * gain
    }

    /// The node after `m` from `node`, scored as the search scores it; `None` if `m` is not
    /// legal there (or a steal promotion, which only the first move of a search may be).
    fn grow(&self, ll: &LogLik, ev: &Evidence, node: &Node, m: Move) -> Option<Node> {
        let legal = node.pos.legal_moves(self.variant);
        if matches!(m, Move::Steal { .. }) || !legal.iter().any(|&l| l == m) {
            return None;
        }
        let plausible = self.plausibility(&node.pos, &legal, node.seq.len + 1, ev, m);
        let mut pos = node.pos.clone();
        pos.play(m, self.variant);
        let changes = diff(&node.pos, &pos);
        let (score, fp) = self.extend(ll, node, &changes);
        let (pd, pfp) = self.pocket_term(ev, node, m);
        let (td, shown, last_t) = self.transient_term(ev, node.shown, node.last_t, &changes);
        let vd = self.view_term(ev, node.seq.len + 1, &node.classes, &changes);
        let mut classes = node.classes;
        for &(sq, c) in &changes.0[..changes.1] {
            classes[sq.index()] = c;
        }
        let mut drops = node.drops;
        if let Move::Drop { role, .. } = m {
            drops[node.pos.turn().index()][role.index()] += 1;
        }
        Some(Node {
            seq: node.seq.push(m),
            pos,
            classes,
            score: score + pd + td + vd + promotion_prior(m) + plausible,
            plaus: node.plaus + plausible,
            fp: fp.wrapping_add(pfp),
            drops,
            shown,
            last_t,
            keep: node.keep,
        })
    }

    /// How much likelier than expected each of `moves` (the legal moves of `pos`) is for a
    /// player, within ±`prior_plausible` nats, into `out` (zeros when it is off). `depth`: the
    /// move's place in its chain (1 = first). Only moves the presses announce (the first one
    /// without a clock) gain: the search picks the likeliest moves wherever the view does not
    /// constrain them, so a chain longer than announced would otherwise collect bonuses for
    /// moves nobody made.
    fn plausibilities(
        &self,
        pos: &Position,
        moves: &[Move],
        depth: usize,
        ev: &Evidence,
        out: &mut Vec<f32>,
    ) {
        if self.cfg.prior_plausible == 0.0 {
            out.clear();
            out.resize(moves.len(), 0.0);
            return;
        }
        MovePrior::default().centred(pos, moves, out);
        let cap = self.cfg.prior_plausible;
        let announced = depth <= ev.announced_moves();
        for v in out.iter_mut() {
            *v = if announced {
                v.clamp(-cap, cap)
            } else {
                v.clamp(-cap, 0.0)
            };
        }
    }

    /// [`Self::plausibilities`] of one move `m` of `moves`.
    fn plausibility(
        &self,
        pos: &Position,
        moves: &[Move],
        depth: usize,
        ev: &Evidence,
        m: Move,
    ) -> f32 {
        let mut all = Vec::new();
        self.plausibilities(pos, moves, depth, ev, &mut all);
        moves.iter().position(|&x| x == m).map_or(0.0, |i| all[i])
    }

    /// Scores every legal reply of `node` (frontier node `parent`; the move at `depth` of its
    /// chain) into `out`, in move-generation order, without the depth's prior.
    #[allow(clippy::too_many_arguments)]
    fn replies(
        &self,
        ll: &LogLik,
        ev: &Evidence,
        depth: usize,
        parent: usize,
        node: &Node,
        scratch: &mut Scratch,
        out: &mut Vec<Candidate>,
    ) {
        let Scratch { replies, plausible } = scratch;
        replies.clear();
        node.pos.legal_moves_into(self.variant, replies);
        self.plausibilities(&node.pos, replies, depth, ev, plausible);
        for (ri, &m) in replies.iter().enumerate() {
            if node.seq.undoes(m) {
                continue;
            }
            let changes = match effects(&node.pos, m) {
                Some(c) => c,
                None => {
                    let mut grand = node.pos.clone();
                    grand.play(m, self.variant);
                    diff(&node.pos, &grand)
                }
            };
            let (score, fp) = self.extend(ll, node, &changes);
            let (pd, pfp) = self.pocket_term(ev, node, m);
            let (td, shown, last_t) = self.transient_term(ev, node.shown, node.last_t, &changes);
            let vd = self.view_term(ev, depth, &node.classes, &changes);
            out.push(Candidate {
                parent: parent as u32,
                mv: m,
                score: score + pd + td + vd + promotion_prior(m) + plausible[ri],
                plaus: node.plaus + plausible[ri],
                fp: fp.wrapping_add(pfp),
                shown,
                last_t,
            });
        }
    }

    /// Decodes `ll` (this board) with `other` (the partner board's latest reading, used to tell
    /// apart which piece a steal promotion took). `other_busy`: the partner board has an undecided
    /// change, so a drop of a piece not yet in the pocket may be a piece in transit.
    ///
    /// `ev`: the pocket reading (a piece dropped and captured at once leaves only the pocket to
    /// tell what it was) and the classes seen in passing during the hand frames (they tell a
    /// chain of fast moves from a shorter one with the same end).
    pub fn decode(
        &self,
        ll: &LogLik,
        other: Option<&LogLik>,
        other_busy: bool,
        ev: &Evidence,
    ) -> Decoded {
        let pos = self.table.board(self.board);
        let legal = self.table.legal_moves(self.board, self.variant);
        let mut top = Top {
            best: None,
            second: None,
            count: 0,
            presses: ev.presses.map(|n| (n, self.cfg.press_mismatch_nats)),
            carried: &ev.carried,
        };
        top.offer(0.0, 0.0, 0, HypothesisKind::NoChange, Seq::EMPTY);
        let root = Node {
            pos: pos.clone(),
            classes: self.base,
            score: 0.0,
            plaus: 0.0,
            fp: 0,
            seq: Seq::EMPTY,
            drops: [[0; 5]; 2],
            shown: 0,
            last_t: 0,
            keep: 0,
        };
        let mut frontier = Vec::with_capacity(legal.len());
        let mut plausible: Vec<f32> = Vec::new();
        self.plausibilities(pos, &legal, 1, ev, &mut plausible);
        for (i1, &m1) in legal.iter().enumerate() {
            if let Move::Steal { from, to, steal } = m1 {
                let Some(piece) = self.table.board(self.board.other()).piece_at(steal) else {
                    continue;
                };
                let class = SquareClass::of(Some(piece));
                let changes: Changes = (
                    [
                        (from, SquareClass::Empty),
                        (to, class),
                        (to, class),
                        (to, class),
                        (to, class),
                        (to, class),
                    ],
                    2,
                );
                let (mut delta, fp) = self.extend(ll, &root, &changes);
                if let Some(o) = other {
                    delta += o.get(steal, SquareClass::Empty) - o.get(steal, class);
                }
                let fp = fp.wrapping_add(mix(1000 + steal.index() as u64));
                top.offer(
                    delta + self.cfg.prior_move,
                    0.0,
                    fp,
                    HypothesisKind::Move,
                    Seq::one(m1),
                );
                continue;
            }
            let mut child = pos.clone();
            child.play(m1, self.variant);
            let changes = diff(pos, &child);
            let (score, fp) = self.extend(ll, &root, &changes);
            let (pd, pfp) = self.pocket_term(ev, &root, m1);
            let (td, shown, last_t) = self.transient_term(ev, 0, 0, &changes);
            let vd = self.view_term(ev, 1, &self.base, &changes);
            let (score, fp) = (
                score + pd + td + vd + promotion_prior(m1) + plausible[i1],
                fp.wrapping_add(pfp),
            );
            top.offer(
                score + self.cfg.prior_move,
                plausible[i1],
                fp,
                HypothesisKind::Move,
                Seq::one(m1),
            );
            let mut classes = self.base;
            for &(sq, c) in &changes.0[..changes.1] {
                classes[sq.index()] = c;
            }
            let mut drops = root.drops;
            if let Move::Drop { role, .. } = m1 {
                drops[pos.turn().index()][role.index()] += 1;
            }
            frontier.push(Node {
                pos: child,
                classes,
                score,
                plaus: plausible[i1],
                fp,
                seq: Seq::one(m1),
                drops,
                shown,
                last_t,
                keep: 0,
            });
        }
        // A single move carried is whole at depth 1, where every legal move is in the frontier.
        for s in ev.carried.iter().filter(|s| s.len() == 1) {
            if let Some(n) = frontier
                .iter_mut()
                .find(|n| n.seq.iter().eq(s.iter().copied()))
            {
                n.keep = CARRIED_EXTENSIONS;
            }
        }
        let max_len = (self.cfg.max_moves_per_observation as usize).min(MAX_SEQUENCE);
        // With presses pending, the last pressed move may be the illegal one: the best legal
        // chains one press short of the count are kept to offer illegal moves after them.
        let prefix_depth = ev
            .presses
            .map_or(0, |n| (n as usize).saturating_sub(1))
            .min(MAX_ILLEGAL_PREFIX)
            .min(max_len);
        let mut prefixes: Vec<Node> = Vec::new();
        if prefix_depth >= 1 {
            keep_best(&mut prefixes, &frontier);
        }
        // The carried sequences' nodes, one move deeper per depth (the first moves are in the
        // frontier already: every legal move is).
        let mut carried: Vec<(&[Move], Node)> = ev
            .carried
            .iter()
            .filter(|s| s.len() >= 2 && s.len() < max_len)
            .filter_map(|s| Some((s.as_slice(), self.grow(ll, ev, &root, s[0])?)))
            .collect();
        let mut candidates: Vec<Candidate> = Vec::new();
        let mut scratch = Scratch::default();
        let threads = (self.cfg.decode_threads as usize).max(1);
        for depth in 2..=max_len {
            candidates.clear();
            let prior = self.cfg.prior_move + (depth - 1) as f32 * self.cfg.prior_extra_move;
            // The frontier's replies are scored in parts (on other threads when it is wide),
            // then offered in the frontier's order, so the outcome is the same in any number of
            // parts.
            if threads > 1 && frontier.len() >= PARALLEL_MIN_FRONTIER {
                let part = frontier.len().div_ceil(threads);
                let mut rest: Vec<Vec<Candidate>> = vec![Vec::new(); threads - 1];
                std::thread::scope(|scope| {
                    for (k, out) in rest.iter_mut().enumerate() {
                        let nodes = &frontier;
                        let (from, to) = ((k + 1) * part, ((k + 2) * part).min(nodes.len()));
                        scope.spawn(move || {
                            let mut scratch = Scratch::default();
                            for (pi, node) in nodes.iter().enumerate().take(to).skip(from) {
                                self.replies(ll, ev, depth, pi, node, &mut scratch, out);
                            }
                        });
                    }
                    for (pi, node) in frontier.iter().enumerate().take(part) {
                        self.replies(ll, ev, depth, pi, node, &mut scratch, &mut candidates);
                    }
                });
                for out in rest {
                    candidates.extend(out);
                }
            } else {
                for (pi, node) in frontier.iter().enumerate() {
                    self.replies(ll, ev, depth, pi, node, &mut scratch, &mut candidates);
                }
            }
            for c in &candidates {
                let node = &frontier[c.parent as usize];
                top.offer_with(
                    c.score + prior,
                    c.plaus,
                    c.fp,
                    HypothesisKind::Sequence,
                    (node.seq.len + 1).min(MAX_SEQUENCE),
                    || node.seq.push(c.mv),
                );
            }
            if depth == max_len || candidates.is_empty() {
                break;
            }
            // Beam: the best distinct placements go one move deeper.
            let width = self.cfg.beam_width as usize;
            let reserved = width / TRANSIENT_BEAM_SHARE;
            let mut rich: Vec<Candidate> = candidates
                .iter()
                .filter(|c| c.shown != 0)
                .copied()
                .collect();
            rich.sort_unstable_by(|a, b| {
                b.shown
                    .count_ones()
                    .cmp(&a.shown.count_ones())
                    .then(b.score.total_cmp(&a.score))
            });
            rich.truncate(2 * reserved);
            // Only where a carried chain vouches for some node (most decodes: none).
            let mut extending: Vec<Candidate> = Vec::new();
            if frontier.iter().any(|n| n.keep != 0) {
                extending.extend(
                    candidates
                        .iter()
                        .filter(|c| frontier[c.parent as usize].keep != 0),
                );
                extending.sort_unstable_by(|a, b| b.score.total_cmp(&a.score));
            }
            let keep = (width * 4).min(candidates.len());
            if keep < candidates.len() {
                candidates.select_nth_unstable_by(keep, |a, b| b.score.total_cmp(&a.score));
                candidates.truncate(keep);
            }
            candidates.sort_unstable_by(|a, b| b.score.total_cmp(&a.score));
            let mut next: Vec<Node> = Vec::with_capacity(width);
            let mut seen: Vec<u64> = Vec::with_capacity(width);
            let materialise = |c: &Candidate| {
                let parent = &frontier[c.parent as usize];
                let mut child = parent.pos.clone();
                child.play(c.mv, self.variant);
                let changes = diff(&parent.pos, &child);
                let mut classes = parent.classes;
                for &(sq, cl) in &changes.0[..changes.1] {
                    classes[sq.index()] = cl;
                }
                let mut drops = parent.drops;
                if let Move::Drop { role, .. } = c.mv {
                    drops[parent.pos.turn().index()][role.index()] += 1;
                }
                Node {
                    pos: child,
                    classes,
                    score: c.score,
                    plaus: c.plaus,
                    fp: c.fp,
                    seq: parent.seq.push(c.mv),
                    drops,
                    shown: c.shown,
                    last_t: c.last_t,
                    keep: 0,
                }
            };
            // The transient-richest distinct placements first (up to `reserved`), then the best.
            let mut rich_taken = 0;
            for (is_rich, c) in rich
                .iter()
                .map(|c| (true, c))
                .chain(candidates.iter().map(|c| (false, c)))
            {
                if next.len() >= width {
                    break;
                }
                if is_rich && rich_taken >= reserved {
                    continue;
                }
                if is_rich && !seen.contains(&c.fp) {
                    rich_taken += 1;
                }
                if seen.contains(&c.fp) {
                    continue;
                }
                seen.push(c.fp);
                next.push(materialise(c));
            }
            // Then the best extensions of the chains a carried chain vouches for
            // ([`CARRIED_EXTENSIONS`]), wherever they rank.
            let mut taken = vec![0u8; frontier.len()];
            for c in &extending {
                let p = c.parent as usize;
                if taken[p] >= frontier[p].keep {
                    continue;
                }
                taken[p] += 1;
                if let Some(n) = next.iter_mut().find(|n| n.fp == c.fp) {
                    // The same placement by another order: it extends alike.
                    n.keep = n.keep.max(1);
                } else {
                    seen.push(c.fp);
                    next.push(Node {
                        keep: 1,
                        ..materialise(c)
                    });
                }
            }
            // The carried paths get their node of this length in whatever its score now (a
            // whole carried sequence too: the view may show more moves after it).
            carried.retain_mut(|(s, node)| {
                if s.len() < depth {
                    return false;
                }
                let Some(child) = self.grow(ll, ev, node, s[depth - 1]) else {
                    return false;
                };
                *node = child;
                true
            });
            for (s, node) in &carried {
                // A whole carried chain: its extensions are kept from here on.
                let keep = if s.len() == depth {
                    CARRIED_EXTENSIONS
                } else {
                    0
                };
                if let Some(n) = next.iter_mut().find(|n| n.fp == node.fp) {
                    n.keep = n.keep.max(keep);
                } else {
                    seen.push(node.fp);
                    let mut node = node.clone();
                    node.keep = keep;
                    next.push(node);
                }
            }
            frontier = next;
            if depth <= prefix_depth {
                keep_best(&mut prefixes, &frontier);
            }
        }
        let mut illegal_considered = false;
        let explained = |top: &Top| {
            let (best, _, _, seq, _) = top.best.expect("no change is always offered");
            let evidence = self.disagreeing(ll, &seq, pos);
            let margin = top.second.map_or(f32::INFINITY, |s| best - s.0);
            // A chain longer than the presses announce (one move without a clock) may be a
            // detour the search found to the squares of one illegal move (the move prior
            // guides it to such detours): the illegal move is offered against it.
            evidence.is_empty()
                && margin >= self.cfg.commit_margin
                && seq.len <= ev.announced_moves()
        };
        if !explained(&top) {
            illegal_considered = true;
            self.offer_illegal(ll, &root, &legal, other_busy, &mut top);
            for node in &prefixes {
                let legal = node.pos.legal_moves(self.variant);
                self.offer_illegal(ll, node, &legal, other_busy, &mut top);
            }
        }
        let best_entry = top.best.expect("no change is always offered");
        let disagreeing = self.disagreeing(ll, &best_entry.3, pos);
        let disagreeing_unchanged = self.disagreeing(ll, &Seq::EMPTY, pos);
        Decoded {
            best: to_hypothesis(best_entry),
            runner_up: top.second.map(to_hypothesis),
            disagreeing,
            disagreeing_unchanged,
            considered: top.count,
            illegal_considered,
        }
    }

    /// Offers every physically possible illegal move after `node`'s legal chain (the root: no
    /// chain), at `prior_illegal` plus `prior_extra_move` per legal move before it.
    fn offer_illegal(
        &self,
        ll: &LogLik,
        node: &Node,
        legal: &[Move],
        other_busy: bool,
        top: &mut Top,
    ) {
        let pos = &node.pos;
        let chain = node.seq.len as f32 * self.cfg.prior_extra_move;
        let mover = pos.turn();
        let is_legal_pair = |from: Square, to: Square| {
            legal
                .iter()
                .any(|m| m.from() == Some(from) && m.to() == to && !matches!(m, Move::Drop { .. }))
        };
        for (mv, from, to, class) in hand_moves(pos) {
            if is_legal_pair(from, to) {
                continue;
            }
            let changes: Changes = (
                [
                    (from, SquareClass::Empty),
                    (to, class),
                    (from, SquareClass::Empty),
                    (from, SquareClass::Empty),
                    (from, SquareClass::Empty),
                    (from, SquareClass::Empty),
                ],
                2,
            );
            let (d, fp) = self.extend(ll, node, &changes);
            let prior = illegal_prior(pos, mv, self.variant, self.cfg);
            top.offer(
                d + prior + chain,
                node.plaus,
                fp,
                HypothesisKind::Illegal,
                node.seq.push(mv),
            );
        }
        let arriving = if other_busy {
            arriving_roles(self.table.board(self.board.other()), mover, self.variant)
        } else {
            [false; 6]
        };
        for role in Role::POCKET {
            let held = pos.pocket(mover).count(role) > 0;
            if !held && node.seq.len > 0 {
                // A piece in transit is the root's question (the partner board decides first).
                continue;
            }
            let class = SquareClass::of(Some(crate::engine::Piece { color: mover, role }));
            for to in !pos.occupied() {
                let mv = Move::Drop { role, to };
                if legal.contains(&mv) {
                    continue;
                }
                let (kind, prior) = if held {
                    (HypothesisKind::Illegal, self.cfg.prior_illegal)
                } else if arriving[role.index()] {
                    (
                        HypothesisKind::InTransitDrop,
                        self.cfg.prior_in_transit_drop,
                    )
                } else {
                    (HypothesisKind::Illegal, self.cfg.prior_illegal - 2.0)
                };
                let changes: Changes = ([(to, class); 6], 1);
                let (d, fp) = self.extend(ll, node, &changes);
                top.offer(d + prior + chain, node.plaus, fp, kind, node.seq.push(mv));
            }
        }
    }

    /// Squares where the position after `moves` disagrees with the observation by more than
    /// `disagree_nats`.
    fn disagreeing(&self, ll: &LogLik, seq: &Seq, pos: &Position) -> Vec<SquareEvidence> {
        let classes = self.classes_after(seq.iter(), pos);
        let mut out = Vec::new();
        for sq in Square::all() {
            let gap = ll.top[sq.index()] - ll.get(sq, classes[sq.index()]);
            if gap > self.cfg.disagree_nats {
                out.push(SquareEvidence {
                    square: sq.to_string(),
                    observed: ll.argmax(sq).char(),
                    expected: classes[sq.index()].char(),
                    nats: gap,
                });
            }
        }
        out
    }

    /// What each square holds after `moves` from `pos` (the tracked position): a drop of a piece
    /// the pocket does not hold yet shows the piece anyway, a steal the piece taken from the
    /// other board.
    fn classes_after(
        &self,
        moves: impl IntoIterator<Item = Move>,
        pos: &Position,
    ) -> [SquareClass; 64] {
        let mut classes = self.base;
        let mut moves = moves.into_iter().peekable();
        if moves.peek().is_none() {
            // "No change": nothing to play (most decodes ask this once).
            return classes;
        }
        let mut after = pos.clone();
        for mv in moves {
            match mv {
                Move::Steal { from, to, steal } => {
                    classes[from.index()] = SquareClass::Empty;
                    classes[to.index()] =
                        SquareClass::of(self.table.board(self.board.other()).piece_at(steal));
                }
                m => {
                    if after.play_physical(m, self.variant).is_err() {
                        if let Move::Drop { role, to } = m {
                            classes[to.index()] = SquareClass::of(Some(crate::engine::Piece {
                                color: after.turn(),
                                role,
                            }));
                        }
                        continue;
                    }
                    for sq in Square::all() {
                        classes[sq.index()] = SquareClass::on(&after, sq);
                    }
                }
            }
        }
        classes
    }

    /// The squares where the best hypothesis or the runner-up puts another class than the
    /// tracked position, or the view reads another by more than [`CONTRAST_SEEN_NATS`], with
    /// the view's log-probability of each: what told the hypotheses of `decoded` apart.
    /// For the decision trace (not computed otherwise).
    pub fn contrast(&self, ll: &LogLik, decoded: &Decoded) -> Vec<SquareChoice> {
        let pos = self.table.board(self.board);
        let best = self.classes_after(decoded.best.moves.iter().copied(), pos);
        let runner_up = decoded
            .runner_up
            .as_ref()
            .map(|r| self.classes_after(r.moves.iter().copied(), pos));
        Square::all()
            .filter(|&sq| {
                let i = sq.index();
                best[i] != self.base[i]
                    || runner_up.is_some_and(|r| r[i] != self.base[i])
                    || ll.top[i] - ll.get(sq, self.base[i]) > CONTRAST_SEEN_NATS
            })
            .map(|sq| {
                let i = sq.index();
                let side = |c: SquareClass| (c.char(), ll.get(sq, c));
                SquareChoice {
                    square: sq,
                    seen: side(ll.argmax(sq)),
                    tracked: side(self.base[i]),
                    best: side(best[i]),
                    runner_up: runner_up.map(|r| side(r[i])),
                }
            })
            .collect()
    }
}

/// Which pocket roles `receiver` (a player on the board next to `other`) can be about to
/// receive: the partner plays the other colour on `other`, so a piece of `receiver`'s colour that
/// the partner can capture in the next two plies there (its own move, or its reply to the
/// opponent's). A promoted piece arrives as a pawn. Nothing is in transit on a board where no
/// such capture is possible (the opening): a drop of an unheld piece is then simply illegal.
pub(crate) fn arriving_roles(other: &Position, receiver: Color, variant: &Variant) -> [bool; 6] {
    let mut roles = [false; 6];
    let mut note = |pos: &Position| {
        if pos.turn() == receiver {
            return;
        }
        for m in pos.legal_moves(variant).iter() {
            let target = match *m {
                Move::Normal { to, .. } | Move::Steal { to, .. } => to,
                Move::EnPassant { .. } => {
                    roles[Role::Pawn.index()] = true;
                    continue;
                }
                _ => continue,
            };
            if let Some(role) = pos.role_at(target) {
                let arrives = if pos.promoted().contains(target) {
                    Role::Pawn
                } else {
                    role
                };
                roles[arrives.index()] = true;
            }
        }
    };
    if other.turn() == receiver {
        for m in other.legal_moves(variant).iter() {
            let mut next = other.clone();
            next.play(*m, variant);
            note(&next);
        }
    } else {
        note(other);
    }
    roles
}

/// A promoted piece that is captured at once leaves no trace of what it was: prefer the queen
/// (the default promotion) by a hair.
#[inline]
fn promotion_prior(m: Move) -> f32 {
    match m {
        Move::Normal {
            promotion: Some(r), ..
        } if r != Role::Queen => -0.1,
        _ => 0.0,
    }
}

/// Reorders the moves of a sequence hypothesis (White's among themselves, Black's among
/// themselves) so that they agree best with when their squares were seen to change
/// (`changed_at`, ms per square, from the hand frames): one observation after a chain of fast
/// moves shows where pieces ended, not in which order they went there. Only orders in which every
/// move is legal and that lead to the same placement are considered; ties keep the given order.
pub fn order_by_change_times(
    start: &Position,
    moves: &[Move],
    changed_at: &[Option<u64>; 64],
    variant: &Variant,
) -> Vec<Move> {
    if moves.len() < 2 || moves.len() > 8 {
        return moves.to_vec();
    }
    let Some((end, _)) = replay(start, moves, variant) else {
        return moves.to_vec();
    };
    let time_of = |m: &Move| -> Option<u64> {
        // When both squares of the move had changed: the target if it still shows the mover's
        // piece at the end, the origin if it ends empty.
        let to = m.to();
        let on_to = SquareClass::on(&end, to)
            .piece()
            .filter(|p| p.role == m.role() || m.role() == Role::Pawn)
            .and_then(|_| changed_at[to.index()]);
        let on_from = m
            .from()
            .filter(|f| SquareClass::on(&end, *f) == SquareClass::Empty)
            .and_then(|f| changed_at[f.index()]);
        match (on_to, on_from) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    };
    let inversions = |order: &[Move]| -> usize {
        let times: Vec<Option<u64>> = order.iter().map(time_of).collect();
        let mut n = 0;
        for i in 0..times.len() {
            for j in i + 1..times.len() {
                if let (Some(a), Some(b)) = (times[i], times[j])
                    && a > b
                {
                    n += 1;
                }
            }
        }
        n
    };
    let first: Vec<Move> = moves.iter().copied().step_by(2).collect();
    let second: Vec<Move> = moves.iter().copied().skip(1).step_by(2).collect();
    let mut best = moves.to_vec();
    let mut best_inv = inversions(moves);
    if best_inv == 0 {
        return best;
    }
    for p in permutations(&first) {
        for q in permutations(&second) {
            let order: Vec<Move> = (0..moves.len())
                .map(|i| if i % 2 == 0 { p[i / 2] } else { q[i / 2] })
                .collect();
            let inv = inversions(&order);
            if inv < best_inv
                && let Some((e, resolved)) = replay(start, &order, variant)
                && same_placement(&e, &end)
            {
                best_inv = inv;
                best = resolved;
            }
        }
    }
    best
}

/// How much better (nats) an order must explain the views after the clock presses than the
/// decoder's own order before it replaces it.
const VIEW_ORDER_MARGIN: f32 = 1.0;

/// Orders a chain of moves decided at once by what the board showed after each clock press:
/// `views[i]` is the reading after the press that completed move `i` (`None` where no frame
/// was seen), so the position after the first `i + 1` moves should explain it. Each side's
/// moves may be permuted (sides alternate); only orders that are legal and reach the same
/// placement count; the given order stays unless another beats it by `VIEW_ORDER_MARGIN`.
/// `None` without views (or when the chain cannot be replayed): the caller falls back to the
/// change times.
pub fn order_by_views(
    start: &Position,
    moves: &[Move],
    views: &[Option<&LogLik>],
    variant: &Variant,
) -> Option<Vec<Move>> {
    let scored = moves.len().saturating_sub(1).min(views.len());
    if moves.len() < 2 || !views[..scored].iter().any(Option::is_some) {
        return None;
    }
    let (end, given) = replay(start, moves, variant)?;
    let view_score = |pos: &Position, step: usize| -> f32 {
        match views.get(step).copied().flatten() {
            Some(ll) if step < scored => Square::all()
                .map(|sq| ll.get(sq, SquareClass::on(pos, sq)))
                .sum(),
            _ => 0.0,
        }
    };
    let score_of = |order: &[Move]| -> f32 {
        let mut pos = start.clone();
        let mut total = 0.0;
        for (step, &m) in order.iter().enumerate() {
            pos.play(m, variant);
            total += view_score(&pos, step);
        }
        total
    };
    let given_score = score_of(&given);
    // Beam over prefixes: (position, the moves left to the side to move, those left to the
    // other side, order so far, score).
    const BEAM: usize = 64;
    type State = (Position, Vec<Move>, Vec<Move>, Vec<Move>, f32);
    let first: Vec<Move> = moves.iter().copied().step_by(2).collect();
    let second: Vec<Move> = moves.iter().copied().skip(1).step_by(2).collect();
    let mut beam: Vec<State> = vec![(start.clone(), first, second, Vec::new(), 0.0)];
    for step in 0..moves.len() {
        let mut next: Vec<State> = Vec::new();
        for (pos, mine, theirs, order, score) in &beam {
            let legal = pos.legal_moves(variant);
            for k in 0..mine.len() {
                let uci = mine[k].to_uci();
                let Some(found) = legal.iter().copied().find(|l| l.to_uci() == uci) else {
                    continue;
                };
                let mut p = pos.clone();
                p.play(found, variant);
                let mut rest = mine.clone();
                rest.remove(k);
                let mut o = order.clone();
                o.push(found);
                let s = score + view_score(&p, step);
                next.push((p, theirs.clone(), rest, o, s));
            }
        }
        next.sort_by(|a, b| b.4.total_cmp(&a.4));
        next.truncate(BEAM);
        if next.is_empty() {
            return None;
        }
        beam = next;
    }
    let (_, _, _, order, score) = beam
        .into_iter()
        .find(|(p, _, _, _, _)| same_placement(p, &end))?;
    Some(if score > given_score + VIEW_ORDER_MARGIN {
        order
    } else {
        given
    })
}

/// Plays `moves` from `start`, each re-resolved by its UCI form (a reordered capture captures
/// something else); `None` if one is not legal there.
fn replay(start: &Position, moves: &[Move], variant: &Variant) -> Option<(Position, Vec<Move>)> {
    let mut pos = start.clone();
    let mut out = Vec::with_capacity(moves.len());
    for &m in moves {
        if matches!(m, Move::Steal { .. }) {
            return None;
        }
        let uci = m.to_uci();
        let found = pos
            .legal_moves(variant)
            .iter()
            .copied()
            .find(|l| l.to_uci() == uci)?;
        pos.play(found, variant);
        out.push(found);
    }
    Some((pos, out))
}

fn same_placement(a: &Position, b: &Position) -> bool {
    Color::ALL
        .iter()
        .all(|&c| Role::ALL.iter().all(|&r| a.pieces(c, r) == b.pieces(c, r)))
}

fn permutations(items: &[Move]) -> Vec<Vec<Move>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut out = Vec::new();
    for i in 0..items.len() {
        let mut rest = items.to_vec();
        let x = rest.remove(i);
        for mut p in permutations(&rest) {
            p.insert(0, x);
            out.push(p);
        }
    }
    out
}

/// The squares that differ between two positions, with their class in `after`.
fn diff(before: &Position, after: &Position) -> Changes {
    let mut changed = crate::engine::Bitboard::EMPTY;
    for c in Color::ALL {
        for r in Role::ALL {
            changed |= before.pieces(c, r) ^ after.pieces(c, r);
        }
    }
    let mut out: Changes = ([(Square::A1, SquareClass::Empty); 6], 0);
    for sq in changed {
        if out.1 == 6 {
            break;
        }
        out.0[out.1] = (sq, SquareClass::on(after, sq));
        out.1 += 1;
    }
    out
}

/// Every move a hand can make with a piece of the side to move on `pos`, legal or not: to any
/// square its own pieces do not hold except a king's, a pawn reaching the last rank shown as a
/// queen. Yields the move, its squares and the class the target then shows.
fn hand_moves(pos: &Position) -> impl Iterator<Item = (Move, Square, Square, SquareClass)> + '_ {
    let mover = pos.turn();
    let last_rank = match mover {
        Color::White => 7,
        Color::Black => 0,
    };
    pos.by_color(mover).into_iter().flat_map(move |from| {
        let role = pos.role_at(from);
        (!pos.by_color(mover)).into_iter().filter_map(move |to| {
            let role = role?;
            if pos.role_at(to) == Some(Role::King) {
                return None;
            }
            let promotion = (role == Role::Pawn && to.rank() == last_rank).then_some(Role::Queen);
            let mv = Move::Normal {
                role,
                from,
                to,
                capture: pos.role_at(to),
                promotion,
            };
            let class = SquareClass::of(Some(crate::engine::Piece {
                color: mover,
                role: promotion.unwrap_or(role),
            }));
            Some((mv, from, to, class))
        })
    })
}

/// The prior of an illegal hand move: one no piece can make (wrong geometry, or through a
/// piece) is rarer than one into or leaving check.
fn illegal_prior(pos: &Position, mv: Move, variant: &Variant, cfg: &TrackerConfig) -> f32 {
    match pos.classify(mv, variant) {
        Err(IllegalReason::CannotMoveThatWay | IllegalReason::PathBlocked) => {
            cfg.prior_illegal_geometry
        }
        _ => cfg.prior_illegal,
    }
}

/// How much better `view` fits `after` than `before`: the log-likelihood difference over the
/// squares whose contents differ.
pub fn view_gain(before: &Position, after: &Position, view: &LogLik) -> f32 {
    let changes = diff(before, after);
    changes.0[..changes.1]
        .iter()
        .map(|&(sq, new)| view.get(sq, new) - view.get(sq, SquareClass::on(before, sq)))
        .sum()
}

/// A move made, pressed and taken back before the next press: the illegal move of the side to
/// move on `pos` that best explains `view` and leaves no square of it disagreeing by more than
/// `disagree_nats`, with its [`view_gain`] over `pos` itself. Moves into or leaving check are
/// the ones players notice and take back; a move no piece can make pays
/// `prior_illegal_geometry − prior_illegal` more. Promotions are to a queen. `None` if no
/// illegal move explains the view.
pub fn taken_back_move(
    pos: &Position,
    view: &LogLik,
    variant: &Variant,
    cfg: &TrackerConfig,
) -> Option<(Move, f32)> {
    let disagrees = |sq: Square, class: SquareClass| {
        view.top[sq.index()] - view.get(sq, class) > cfg.disagree_nats
    };
    let off: Vec<Square> = Square::all()
        .filter(|&sq| disagrees(sq, SquareClass::on(pos, sq)))
        .collect();
    let mut best: Option<(Move, f32)> = None;
    for (mv, from, to, class) in hand_moves(pos) {
        // Like any illegal move, only believed when it explains the view, here but for
        // `taken_back_misfit_squares` squares elsewhere.
        let elsewhere = off.iter().filter(|&&sq| sq != from && sq != to).count();
        if elsewhere > cfg.taken_back_misfit_squares as usize
            || disagrees(from, SquareClass::Empty)
            || disagrees(to, class)
            || pos.classify(mv, variant).is_ok()
        {
            continue;
        }
        let gain = view.get(from, SquareClass::Empty) - view.get(from, SquareClass::on(pos, from))
            + view.get(to, class)
            - view.get(to, SquareClass::on(pos, to))
            + illegal_prior(pos, mv, variant, cfg)
            - cfg.prior_illegal;
        if best.is_none_or(|(_, g)| gain > g) {
            best = Some((mv, gain));
        }
    }
    best
}

/// The changes of a simple move (not castling, not a promotion) without playing it.
#[inline]
fn effects(pos: &Position, mv: Move) -> Option<Changes> {
    let mover = pos.turn();
    let mut out: Changes = ([(Square::A1, SquareClass::Empty); 6], 0);
    let piece = |role| SquareClass::of(Some(crate::engine::Piece { color: mover, role }));
    match mv {
        Move::Normal {
            role,
            from,
            to,
            promotion: None,
            ..
        } => {
            out.0[0] = (from, SquareClass::Empty);
            out.0[1] = (to, piece(role));
            out.1 = 2;
        }
        Move::Drop { role, to } => {
            out.0[0] = (to, piece(role));
            out.1 = 1;
        }
        Move::EnPassant { from, to } => {
            out.0[0] = (from, SquareClass::Empty);
            out.0[1] = (to, piece(Role::Pawn));
            out.0[2] = (
                Square::from_coords(to.file(), from.rank()).expect("on the board"),
                SquareClass::Empty,
            );
            out.1 = 3;
        }
        _ => return None,
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_exact(table: &Table, board: BoardId, after: &Position) -> Decoded {
        let cfg = TrackerConfig::default();
        let v = Variant::default();
        let obs = Observation::exact(board, 0, after, 0.0);
        let ll = LogLik::from_observation(&obs, &cfg);
        Decoder::new(table, board, &v, &cfg).decode(&ll, None, false, &Evidence::default())
    }

    /// Board A's view after `ucis`, every square read exactly.
    fn exact_view(table: &Table, ucis: &[&str], cfg: &TrackerConfig) -> LogLik {
        let obs = Observation::exact(BoardId::A, 0, &after(table, BoardId::A, ucis), 0.0);
        LogLik::from_observation(&obs, cfg)
    }

    fn after(table: &Table, board: BoardId, ucis: &[&str]) -> Position {
        let v = Variant::default();
        let mut t = table.clone();
        for u in ucis {
            let mv = t.board(board).parse_uci(u).unwrap();
            t.play_physical(board, mv, &v).unwrap();
        }
        t.board(board).clone()
    }

    #[test]
    fn single_move_is_found_with_a_margin() {
        let t = Table::new();
        let d = decode_exact(&t, BoardId::A, &after(&t, BoardId::A, &["e2e4"]));
        assert_eq!(d.best.kind, HypothesisKind::Move);
        assert_eq!(d.best.moves[0].to_string(), "e2e4");
        assert!(d.margin() > 3.0, "margin {}", d.margin());
        assert!(d.disagreeing.is_empty());
    }

    #[test]
    fn the_contrast_names_the_moved_squares_and_a_piece_seen_where_no_hypothesis_puts_one() {
        let t = Table::new();
        let cfg = TrackerConfig::default();
        let mut obs = Observation::exact(BoardId::A, 0, &after(&t, BoardId::A, &["e2e4"]), 0.0);
        // A white pawn faintly on f5 (no pocket holds one: no drop puts it there).
        let mut faint = [0f32; SquareClass::COUNT];
        faint[SquareClass::Empty.index()] = 0.1;
        faint[SquareClass::WhitePawn.index()] = 0.9;
        obs.set_square("f5".parse().unwrap(), faint).unwrap();
        let ll = LogLik::from_observation(&obs, &cfg);
        let v = Variant::default();
        let decoder = Decoder::new(&t, BoardId::A, &v, &cfg);
        let d = decoder.decode(&ll, None, false, &Evidence::default());
        assert_eq!(ucis(&d.best.moves), ["e2e4"]);
        let contrast = decoder.contrast(&ll, &d);
        let named: Vec<String> = contrast.iter().map(|c| c.square.to_string()).collect();
        for sq in ["e2", "e4", "f5"] {
            assert!(named.iter().any(|n| n == sq), "{sq} missing from {named:?}");
        }
        let e4 = contrast
            .iter()
            .find(|c| c.square.to_string() == "e4")
            .unwrap();
        assert_eq!((e4.tracked.0, e4.best.0, e4.seen.0), ('.', 'P', 'P'));
        assert!(e4.best.1 > e4.tracked.1);
        let f5 = contrast
            .iter()
            .find(|c| c.square.to_string() == "f5")
            .unwrap();
        assert_eq!((f5.seen.0, f5.tracked.0, f5.best.0), ('P', '.', '.'));
        assert!((f5.seen.1 - f5.tracked.1 - (0.9f32 / 0.1).ln()).abs() < 1e-3);
        // Squares nothing touches and the view agrees with are left out.
        assert!(!named.iter().any(|n| n == "a1" || n == "e7"), "{named:?}");
    }

    #[test]
    fn nothing_is_in_transit_where_no_capture_is_possible() {
        let v = Variant::default();
        let start = Position::new();
        assert_eq!(arriving_roles(&start, Color::White, &v), [false; 6]);
        assert_eq!(arriving_roles(&start, Color::Black, &v), [false; 6]);
        // 1. e4 d5: White (partner of our Black) can take the pawn now, and only that.
        let mut p = start.clone();
        for u in ["e2e4", "d7d5"] {
            let m = p.parse_uci(u).unwrap();
            p.play(m, &v);
        }
        let mut pawn_only = [false; 6];
        pawn_only[Role::Pawn.index()] = true;
        assert_eq!(arriving_roles(&p, Color::Black, &v), pawn_only);
        // Our White's partner is Black, who answers White's move: Bc4 dxc4 gives a bishop.
        assert!(arriving_roles(&p, Color::White, &v)[Role::Bishop.index()]);
    }

    #[test]
    fn fast_reply_is_two_moves_in_order() {
        let t = Table::new();
        let d = decode_exact(&t, BoardId::A, &after(&t, BoardId::A, &["e2e4", "d7d5"]));
        assert_eq!(d.best.kind, HypothesisKind::Sequence);
        let ucis: Vec<_> = d.best.moves.iter().map(|m| m.to_string()).collect();
        assert_eq!(ucis, ["e2e4", "d7d5"]);
    }

    #[test]
    fn a_path_an_earlier_view_showed_stays_in_the_search() {
        // Regression (issue 6, `eval tracker-sim --clock` game 2): B@f7+ Kxf7 N@g5+ Ke8, four
        // presses, ends where N@g5 alone would. The latest view shows nothing of the bishop's
        // life, so the beam drops that path; the earlier view that showed it keeps it in.
        let t = Table::from_fen(
            "rnbqk1nr/pppp2pp/8/8/8/8/PPPPPPPP/RNBQKBNR[BN] w KQkq - 0 1 | \
             rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        )
        .unwrap();
        let chain = ["B@f7", "e8f7", "N@g5", "f7e8"];
        // Without the move prior, which finds this chain alone (below).
        let cfg = TrackerConfig {
            prior_plausible: 0.0,
            ..TrackerConfig::default()
        };
        let v = Variant::default();
        let ll = exact_view(&t, &chain, &cfg);
        let mut ev = Evidence {
            pocket: Some(PocketReading::default()),
            presses: Some(4),
            ..Evidence::default()
        };
        let decode = |ev: &Evidence| {
            let d = Decoder::new(&t, BoardId::A, &v, &cfg).decode(&ll, None, false, ev);
            ucis(&d.best.moves)
        };
        assert_eq!(decode(&ev), ["N@g5"], "without the earlier view");
        let start = t.board(BoardId::A);
        ev.carried = vec![self::chain(start, &chain[..2])];
        assert_eq!(decode(&ev), chain);
        // A bishop dropped with check and taken, a knight dropped with check: the moves
        // players make, so the prior keeps the chain in the beam without the earlier view.
        let cfg = TrackerConfig::default();
        ev.carried.clear();
        let d = Decoder::new(&t, BoardId::A, &v, &cfg).decode(&ll, None, false, &ev);
        assert_eq!(ucis(&d.best.moves), chain);
    }

    #[test]
    fn the_moves_after_a_carried_chain_stay_in_the_search_until_they_explain_the_view() {
        // Regression (issue 6, validation render `el-low-g44`, board B): `P@e5 Bb4+ Bd2 Bxd2+
        // Nxd2`, five presses, was best by about 2 nats once whole, but the bishop's stop on b4,
        // empty in the latest view, sank `P@e5 Bb4+ Bd2` below the beam at depth 3; an earlier
        // view had carried `P@e5 Bb4+`. A beam one placement wide stands in for the crowd of
        // chains that explain more squares early.
        let t = Table::from_fen(
            "rnbqkbnr/ppp2ppp/4p3/3p4/3P4/4P3/PPP2PPP/RNBQKBNR[P] w KQkq - 0 1 | \
             rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        )
        .unwrap();
        let chain = ["P@e5", "f8b4", "c1d2", "b4d2", "b1d2"];
        let cfg = TrackerConfig {
            beam_width: 1,
            prior_plausible: 0.0,
            ..TrackerConfig::default()
        };
        let v = Variant::default();
        let ll = exact_view(&t, &chain, &cfg);
        let mut ev = Evidence {
            presses: Some(5),
            ..Evidence::default()
        };
        let decode = |ev: &Evidence| {
            let d = Decoder::new(&t, BoardId::A, &v, &cfg).decode(&ll, None, false, ev);
            ucis(&d.best.moves)
        };
        assert_ne!(decode(&ev), chain, "the narrow beam alone finds it");
        ev.carried = vec![self::chain(t.board(BoardId::A), &chain[..2])];
        assert_eq!(decode(&ev), chain);
    }

    #[test]
    fn a_search_scored_on_several_threads_decides_as_on_one() {
        // A busy view: a five-move chain under noise that leaves many chains close, so a part
        // of a depth lost, scored twice or offered out of order would change the best, the
        // runner-up, their scores or the count.
        let t = Table::from_fen(
            "rnbqkbnr/ppp2ppp/4p3/3p4/3P4/4P3/PPP2PPP/RNBQKBNR[PNb] w KQkq - 0 1 | \
             rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        )
        .unwrap();
        let base = TrackerConfig::default();
        let exact = exact_view(&t, &["P@e5", "f8b4", "c1d2", "b4d2", "b1d2"], &base);
        let mut logs = exact.ll;
        let mut x = 7u64;
        for l in logs.iter_mut().flatten() {
            x = mix(x);
            *l += (x % 1000) as f32 / 250.0 - 2.0;
        }
        let ev = Evidence {
            presses: Some(5),
            ..Evidence::default()
        };
        let v = Variant::default();
        // The exact view too: chains to one placement tie there, and the order they are
        // offered in picks the one reported.
        for ll in [LogLik::from_logs(logs), exact] {
            let decode = |threads| {
                let cfg = TrackerConfig {
                    decode_threads: threads,
                    ..base.clone()
                };
                Decoder::new(&t, BoardId::A, &v, &cfg).decode(&ll, None, false, &ev)
            };
            let outcome = |d: &Decoded| {
                let h = |h: &Hypothesis| (ucis(&h.moves), h.score.to_bits());
                (h(&d.best), d.runner_up.as_ref().map(h), d.considered)
            };
            let one = outcome(&decode(1));
            assert!(one.0.0.len() >= 3, "a chain, not {:?}", one.0.0);
            for threads in [2, 3, 5] {
                assert_eq!(outcome(&decode(threads)), one, "{threads} threads");
            }
        }
    }

    #[test]
    fn a_pocket_that_shows_a_dropped_piece_gone_tells_a_drop_from_a_walk() {
        // Regression (issue 6, `eval tracker-sim --clock` game 17): P@e3 Kxe3 R@e7+ P@e6 and
        // R@d7 Ke3 Rd7e7+ P@e6 end on the same squares; only White's pocket, which no longer
        // shows the pawn, tells them apart.
        let t = Table::from_fen(
            "8/8/8/8/8/8/5k2/K7[PRp] w - - 0 1 | \
             rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        )
        .unwrap();
        let chain = ["P@e3", "f2e3", "R@e7", "P@e6"];
        let v = Variant::default();
        let obs = Observation::exact(BoardId::A, 0, &after(&t, BoardId::A, &chain), 0.0);
        // An earlier view (R on d7) showed the walk best, so it is searched too.
        let walk = self::chain(t.board(BoardId::A), &["R@d7", "f2e3", "d7e7"]);
        let ev = Evidence {
            pocket: Some(PocketReading::default()),
            presses: Some(4),
            carried: vec![walk],
            ..Evidence::default()
        };
        // The move prior prefers the rook's walk by more than the pocket's 1 nat (and the
        // simulated game still ends right): the pocket alone is the point here.
        let decode = |confirm: f32| {
            let cfg = TrackerConfig {
                pocket_confirm_nats: confirm,
                prior_plausible: 0.0,
                ..TrackerConfig::default()
            };
            let ll = LogLik::from_observation(&obs, &cfg);
            Decoder::new(&t, BoardId::A, &v, &cfg).decode(&ll, None, false, &ev)
        };
        let with = decode(1.0);
        assert_eq!(ucis(&with.best.moves), chain);
        assert!(
            (with.margin() - 1.0).abs() < 1e-3,
            "margin {}",
            with.margin()
        );
        assert!(
            decode(0.0).margin().abs() < 1e-3,
            "a tie without the pocket"
        );
    }

    #[test]
    fn a_drop_cannot_use_a_piece_captured_on_the_other_board_after_its_press() {
        // Regression (issue 6, validation `el-low-g33`): White dropped a pawn on f6, taken at
        // once; a knight reached White's pocket from the other board only afterwards, but that
        // capture was decided first. The view cannot tell the pieces apart; the press times can.
        let t = Table::from_fen(
            "4k3/6p1/8/8/8/8/8/4K3[PN] w - - 0 1 | \
             rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        )
        .unwrap();
        let v = Variant::default();
        let cfg = TrackerConfig {
            prior_plausible: 0.0,
            ..TrackerConfig::default()
        };
        let obs = Observation::exact(
            BoardId::A,
            0,
            &after(&t, BoardId::A, &["P@f6", "g7f6"]),
            0.0,
        );
        let ll = LogLik::from_observation(&obs, &cfg);
        let decode = |late: Option<Role>| {
            let mut first = [[0u8; 5]; 2];
            if let Some(role) = late {
                first[Color::White.index()][role.index()] = 1;
            }
            let ev = Evidence {
                presses: Some(2),
                late_arrivals: vec![first, [[0; 5]; 2]],
                ..Evidence::default()
            };
            Decoder::new(&t, BoardId::A, &v, &cfg).decode(&ll, None, false, &ev)
        };
        assert!(
            decode(None).margin().abs() < 1e-3,
            "a tie without the times"
        );
        for (late, dropped) in [(Role::Knight, "P@f6"), (Role::Pawn, "N@f6")] {
            let d = decode(Some(late));
            assert_eq!(ucis(&d.best.moves), [dropped, "g7f6"], "{late:?} came late");
            let gap = -cfg.prior_drop_before_capture;
            assert!((d.margin() - gap).abs() < 1e-3, "margin {}", d.margin());
        }
    }

    #[test]
    fn no_change_is_best_for_an_unchanged_board() {
        let t = Table::new();
        let d = decode_exact(&t, BoardId::B, t.board(BoardId::B));
        assert_eq!(d.best.kind, HypothesisKind::NoChange);
        assert!(!d.illegal_considered);
    }

    #[test]
    fn an_illegal_move_is_considered_when_nothing_legal_fits() {
        // White's king walks into the bishop's diagonal: the king ends in check.
        let t = Table::from_fen(
            "4k3/8/8/8/1b6/8/8/4K3 w - - 0 1 | rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        )
        .unwrap();
        let d = decode_exact(&t, BoardId::A, &after(&t, BoardId::A, &["e1d2"]));
        assert!(d.illegal_considered);
        assert_eq!(d.best.kind, HypothesisKind::Illegal);
        assert_eq!(d.best.moves[0].to_string(), "e1d2");
    }

    #[test]
    fn a_move_through_a_piece_is_a_rarer_illegal_move_than_one_into_check() {
        // Bishop f1-c4 through the knight on e2 (what a wrongly tracked knight makes a legal
        // move look like), and the king e1-d1 into the rook's file.
        let t = Table::from_fen(
            "3rk3/8/8/8/8/8/4N3/4KB2 w - - 0 1 | rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        )
        .unwrap();
        // Single moves only: longer legal detours to the same squares are not the point here.
        let cfg = TrackerConfig {
            max_moves_per_observation: 1,
            ..TrackerConfig::default()
        };
        assert!(cfg.prior_illegal_geometry < cfg.prior_illegal);
        let v = Variant::default();
        for (uci, prior) in [
            ("f1c4", cfg.prior_illegal_geometry),
            ("e1d1", cfg.prior_illegal),
        ] {
            let obs = Observation::exact(BoardId::A, 0, &after(&t, BoardId::A, &[uci]), 0.0);
            let ll = LogLik::from_observation(&obs, &cfg);
            let d = Decoder::new(&t, BoardId::A, &v, &cfg).decode(
                &ll,
                None,
                false,
                &Evidence::default(),
            );
            assert_eq!(d.best.kind, HypothesisKind::Illegal, "{uci}");
            assert_eq!(d.best.moves[0].to_string(), uci);
            // An exact view: the score is the two squares' change plus the prior.
            let ln = |p: f32| p.max(cfg.probability_floor).ln();
            let seen = 2.0 * (ln(1.0) - ln(0.0));
            assert!(
                (d.best.score - (seen + prior)).abs() < 1e-3,
                "{uci}: {}",
                d.best.score
            );
        }
    }

    #[test]
    fn a_view_that_cannot_tell_two_moves_apart_takes_the_one_players_make() {
        // e2 empty, and e3 reads a pawn a little more surely than e4 does (the pushed pawn's
        // body rising into the patch in front of it): the view alone says e2e3.
        let t = Table::new();
        let v = Variant::default();
        let obs = Observation::exact(BoardId::A, 0, &after(&t, BoardId::A, &["e2e4"]), 0.0);
        let base = TrackerConfig::default();
        let mut ll = LogLik::from_observation(&obs, &base);
        let sq = |name: &str| name.parse::<Square>().unwrap().index();
        let (e3, e4) = (sq("e3"), sq("e4"));
        let pawn = SquareClass::of(Some(crate::engine::Piece {
            color: Color::White,
            role: Role::Pawn,
        }))
        .index();
        ll.ll[e3] = ll.ll[e4];
        ll.ll[e3][pawn] += 0.5;
        ll.top[e3] = ll.ll[e3].iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let best = |cfg: &TrackerConfig| {
            let d = Decoder::new(&t, BoardId::A, &v, cfg).decode(
                &ll,
                None,
                false,
                &Evidence::default(),
            );
            d.best
                .moves
                .iter()
                .map(|m| m.to_string())
                .collect::<Vec<_>>()
        };
        let off = TrackerConfig {
            prior_plausible: 0.0,
            ..base.clone()
        };
        assert_eq!(best(&off), ["e2e3"]);
        assert!(base.prior_plausible > 0.0);
        assert_eq!(best(&base), ["e2e4"]);
    }

    /// The moves of `ucis` played one after the other from `pos`.
    fn chain(pos: &Position, ucis: &[&str]) -> Vec<Move> {
        let v = Variant::default();
        let mut p = pos.clone();
        ucis.iter()
            .map(|u| {
                let m = p.parse_uci(u).unwrap();
                p.play(m, &v);
                m
            })
            .collect()
    }

    fn ucis(moves: &[Move]) -> Vec<String> {
        moves.iter().map(|m| m.to_uci().to_string()).collect()
    }

    #[test]
    fn the_view_after_a_press_tells_a_chain_the_latest_view_cannot() {
        let v = Variant::default();
        let t = Table::default();
        let b = BoardId::A;
        // Two presses: `e2e4 e7e5`. The latest view leans to a pawn on e3 (the pawn on e4
        // hides behind e5's, say); the view after White's press showed it on e4.
        let mut latest = Observation::exact(b, 0, &after(&t, b, &["e2e4", "e7e5"]), 0.0);
        let lean = |pawn: f32| {
            let mut p = [0.0; SquareClass::COUNT];
            p[SquareClass::Empty.index()] = 1.0 - pawn;
            p[SquareClass::of(Some(crate::engine::Piece {
                color: Color::White,
                role: crate::engine::Role::Pawn,
            }))
            .index()] = pawn;
            p
        };
        let e3 = "e3".parse().unwrap();
        let e4 = "e4".parse().unwrap();
        latest.set_square(e3, lean(0.8)).unwrap();
        latest.set_square(e4, lean(0.2)).unwrap();
        let first = Observation::exact(b, 0, &after(&t, b, &["e2e4"]), 0.0);
        let decode = |weight: f32| {
            let cfg = TrackerConfig {
                press_view_nats: weight,
                ..TrackerConfig::default()
            };
            let ev = Evidence {
                presses: Some(2),
                views: vec![Some(LogLik::from_observation(&first, &cfg))],
                ..Evidence::default()
            };
            let ll = LogLik::from_observation(&latest, &cfg);
            let d = Decoder::new(&t, b, &v, &cfg).decode(&ll, None, false, &ev);
            (ucis(&d.best.moves), d.margin())
        };
        assert_eq!(decode(0.0).0, ["e2e3", "e7e5"], "the latest view alone");
        let (best, margin) = decode(0.5);
        assert_eq!(best, ["e2e4", "e7e5"]);
        assert!(margin > 1.5, "the press view decides it clearly: {margin}");
        // Without a view for that press the chain is the latest view's again.
        let cfg = TrackerConfig::default();
        let ev = Evidence {
            presses: Some(2),
            views: vec![None],
            ..Evidence::default()
        };
        let ll = LogLik::from_observation(&latest, &cfg);
        let d = Decoder::new(&t, b, &v, &cfg).decode(&ll, None, false, &ev);
        assert_eq!(ucis(&d.best.moves), ["e2e3", "e7e5"]);
    }

    #[test]
    fn the_views_after_the_presses_order_a_chain_decided_at_once() {
        let v = Variant::default();
        let cfg = TrackerConfig::default();
        let t = Table::default();
        let start = t.board(BoardId::A).clone();
        let played = ["d2d4", "g8f6", "g1f3", "e7e6"];
        // The decoder found the same moves in another order (same final placement).
        let decided = chain(&start, &["g1f3", "e7e6", "d2d4", "g8f6"]);
        let views: Vec<LogLik> = (1..played.len())
            .map(|k| {
                let obs =
                    Observation::exact(BoardId::A, 0, &after(&t, BoardId::A, &played[..k]), 0.0);
                LogLik::from_observation(&obs, &cfg)
            })
            .collect();
        let refs: Vec<Option<&LogLik>> = views.iter().map(Some).collect();
        let ordered = order_by_views(&start, &decided, &refs, &v).unwrap();
        assert_eq!(ucis(&ordered), played);
        // Views that agree with the decided order keep it; no views, no opinion.
        let kept = order_by_views(&start, &ordered, &refs, &v).unwrap();
        assert_eq!(ucis(&kept), played);
        assert!(order_by_views(&start, &decided, &[], &v).is_none());
        assert!(order_by_views(&start, &decided, &[None, None], &v).is_none());
        // A view missing in the middle still orders by the others.
        let gap = [refs[0], None, refs[2]];
        assert_eq!(
            ucis(&order_by_views(&start, &decided, &gap, &v).unwrap()),
            played
        );
    }
}
