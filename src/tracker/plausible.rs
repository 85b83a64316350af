//! How likely a player is to make a move, from what kind of move it is: a small log-linear
//! model over features of the move in its position (a capture and what it takes, a drop next to
//! the enemy king, a check, a knight to the rim, a piece put where a pawn takes it, …).
//!
//! Why: at a low camera many opening moves land on squares the camera cannot see (behind the
//! nearer pieces), so the view cannot tell `g1f3` from `g1e2` or `g1h3`, or `e2e4` from `e2e3`;
//! players almost always choose the first. The decoder adds [`MovePrior::centred`], clamped to
//! ±`TrackerConfig::prior_plausible` nats, to the legal moves it tries: a tie-breaker where the
//! view is unclear, never a veto of what it shows.
//!
//! The weights were fitted by maximum likelihood (softmax over the legal moves) on recorded games
//! that no test render uses (the second validation set renders games 44–55 of them):
//! `tandem eval move-prior --games fixtures/games/fics-64.bpgn --fit 44..64 --test 0..44`
//! (`docs/tracker.md`, "How likely a move is"). Pure computation: no I/O.

use crate::engine::bpgn::BpgnGame;
use crate::engine::{Bitboard, Color, Move, Piece, Position, Role, Square, Table, Variant};

/// Number of features of a move.
pub const FEATURES: usize = 20;

/// What each feature is, in [`features`] order (for reports).
pub const FEATURE_NAMES: [&str; FEATURES] = [
    "capture_value",
    "drop",
    "drop_pawn",
    "drop_near_king",
    "check",
    "hangs_to_pawn",
    "advance",
    "centre",
    "rim",
    "develop",
    "king_walk",
    "castle",
    "pawn_double",
    "queen",
    "escapes_pawn",
    "pawn",
    "promote_knight",
    "promote_bishop_rook",
    "pawn_centre",
    "centre_double",
];

/// Material value of a role in pawns (the king is never captured).
fn value(role: Role) -> f32 {
    match role {
        Role::Pawn => 1.0,
        Role::Knight | Role::Bishop => 3.0,
        Role::Rook => 5.0,
        Role::Queen => 9.0,
        Role::King => 0.0,
    }
}

/// Rank counted from the mover's side (0 = its back rank).
fn rel_rank(sq: Square, c: Color) -> i32 {
    match c {
        Color::White => sq.rank() as i32,
        Color::Black => 7 - sq.rank() as i32,
    }
}

/// Chebyshev distance from the board's centre, in half squares: 1 for d4–e5, 7 on the edge.
fn centre_distance(sq: Square) -> i32 {
    let f = (2 * sq.file() as i32 - 7).abs();
    let r = (2 * sq.rank() as i32 - 7).abs();
    f.max(r)
}

/// What every move of one position is scored against, computed once per position.
struct Context {
    us: Color,
    occ: Bitboard,
    enemy_king: Option<Square>,
    /// Squares an enemy pawn attacks.
    pawn_attacked: Bitboard,
    in_check: bool,
}

impl Context {
    fn of(pos: &Position) -> Context {
        let us = pos.turn();
        let them = us.other();
        let occ = pos.occupied();
        let pawn = Piece {
            color: them,
            role: Role::Pawn,
        };
        let pawn_attacked = pos
            .pieces(them, Role::Pawn)
            .fold(Bitboard::EMPTY, |acc, sq| {
                acc | pos.attacks_from(pawn, sq, occ)
            });
        Context {
            us,
            occ,
            enemy_king: pos.king_of(them),
            pawn_attacked,
            in_check: pos.is_check(),
        }
    }
}

/// The features of `m` (legal or not) in `pos`, the side to move making it.
pub fn features(pos: &Position, m: Move) -> [f32; FEATURES] {
    features_in(pos, &Context::of(pos), m)
}

fn features_in(pos: &Position, cx: &Context, m: Move) -> [f32; FEATURES] {
    let mut f = [0.0f32; FEATURES];
    visit_features(pos, cx, m, |k, v| f[k] = v);
    f
}

/// Calls `put(k, value)` for the features of `m` that may not be zero, each at most once, in
/// no particular order (the others are zero): the decoder scores tens of thousands of moves per
/// view, and most of the twenty features of a move are zero.
#[inline]
fn visit_features(pos: &Position, cx: &Context, m: Move, mut put: impl FnMut(usize, f32)) {
    let (us, occ, enemy_king) = (cx.us, cx.occ, cx.enemy_king);
    let pawn_hits = |sq: Square| cx.pawn_attacked.contains(sq);
    match m {
        Move::Normal {
            role,
            from,
            to,
            capture,
            promotion,
        } => {
            // Otherwise a promotion is scored as the pawn's move: the promoted piece's features
            // would favour the queen for her checks and threats, not for how often she is
            // chosen.
            match promotion {
                Some(Role::Knight) => put(16, 1.0),
                Some(Role::Bishop | Role::Rook) => put(17, 1.0),
                _ => {}
            }
            if let Some(c) = capture {
                put(0, value(c) / 3.0);
            }
            let mut after = occ;
            after.remove(from);
            after.add(to);
            if let Some(k) = enemy_king {
                let piece = Piece { color: us, role };
                if pos.attacks_from(piece, to, after).contains(k) {
                    put(4, 1.0);
                }
            }
            if role != Role::Pawn && pawn_hits(to) {
                put(5, value(role) / 3.0);
            }
            put(
                6,
                (rel_rank(to, us) - rel_rank(from, us)).clamp(-3, 3) as f32 / 2.0,
            );
            let centre = (centre_distance(from) - centre_distance(to)) as f32 / 2.0;
            if role == Role::Pawn {
                put(18, centre);
            } else {
                put(7, centre);
            }
            if matches!(role, Role::Knight | Role::Bishop) && matches!(to.file(), 0 | 7) {
                put(8, 1.0);
            }
            if matches!(role, Role::Knight | Role::Bishop) && rel_rank(from, us) == 0 {
                put(9, 1.0);
            }
            if role == Role::King && !cx.in_check {
                put(10, 1.0);
            }
            if role == Role::Pawn && (rel_rank(to, us) - rel_rank(from, us)) == 2 {
                put(12, 1.0);
                if matches!(from.file(), 3 | 4) {
                    put(19, 1.0);
                }
            }
            if role == Role::Queen {
                put(13, 1.0);
            }
            if role != Role::Pawn && pawn_hits(from) {
                put(14, value(role) / 3.0);
            }
            if role == Role::Pawn {
                put(15, 1.0);
            }
        }
        Move::EnPassant { from, to } => {
            put(0, 1.0 / 3.0);
            put(6, (rel_rank(to, us) - rel_rank(from, us)) as f32 / 2.0);
            put(15, 1.0);
        }
        Move::Castle { .. } => put(11, 1.0),
        Move::Drop { role, to } => {
            put(1, 1.0);
            if role == Role::Pawn {
                put(2, 1.0);
            }
            if let Some(k) = enemy_king {
                let dist = (k.file() as i32 - to.file() as i32)
                    .abs()
                    .max((k.rank() as i32 - to.rank() as i32).abs());
                if dist <= 2 {
                    put(3, 1.0);
                }
                let piece = Piece { color: us, role };
                if pos.attacks_from(piece, to, occ | to.bb()).contains(k) {
                    put(4, 1.0);
                }
            }
            if role != Role::Pawn && pawn_hits(to) {
                put(5, value(role) / 3.0);
            }
        }
        Move::Steal { from, to, .. } => {
            if let Some(c) = pos.role_at(to) {
                put(0, value(c) / 3.0);
            }
            put(6, (rel_rank(to, us) - rel_rank(from, us)) as f32 / 2.0);
            put(15, 1.0);
        }
    }
}

/// A log-linear move model: `weights · features` is a move's log-odds up to a constant per
/// position.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MovePrior {
    /// One weight per feature, in nats per unit of the feature.
    pub weights: [f32; FEATURES],
}

impl Default for MovePrior {
    /// The fitted weights (module docs).
    fn default() -> Self {
        MovePrior { weights: FITTED }
    }
}

/// Weights fitted on fics-64 games 44–63 (module docs), but for the two promotion terms: those
/// games promote 30 times, 29 to a queen and once to a knight, too few for the fit to move
/// those weights far from 0, so they are set from the counts (knight log(1/29) ≈ −3.4; bishop
/// and rook never, −5).
const FITTED: [f32; FEATURES] = [
    3.13, -0.546, 0.0992, 0.647, 1.63, -1.25, -0.198, 0.395, -0.36, 0.955, -0.992, 1.1, -1.78,
    -0.949, 1.46, 0.301, -3.4, -5.0, 0.439, 3.22,
];

impl MovePrior {
    /// `m`'s log-odds in `pos` (not centred).
    pub fn raw(&self, pos: &Position, m: Move) -> f32 {
        self.raw_in(pos, &Context::of(pos), m)
    }

    #[inline]
    fn raw_in(&self, pos: &Position, cx: &Context, m: Move) -> f32 {
        let mut raw = 0.0;
        visit_features(pos, cx, m, |k, v| raw += self.weights[k] * v);
        raw
    }

    /// How much more likely than expected each of `moves` (all the legal moves of `pos`) is:
    /// its log-probability under the softmax over `moves` plus that distribution's entropy,
    /// written into `out` (cleared first). The expectation over the moves is 0 in every
    /// position, so a chain gains nothing for its length, and a forced reply (a recapture
    /// everyone makes) scores about 0 whatever it captures.
    pub fn centred(&self, pos: &Position, moves: &[Move], out: &mut Vec<f32>) {
        out.clear();
        let cx = Context::of(pos);
        out.extend(moves.iter().map(|&m| self.raw_in(pos, &cx, m)));
        if out.is_empty() {
            return;
        }
        // log p + H = v − log Z − Σ p (v − log Z) = v − E_p[v]: one pass of exponentials.
        let max = out.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let (mut sum, mut weighted) = (0.0f32, 0.0f32);
        for &v in out.iter() {
            let e = (v - max).exp();
            sum += e;
            weighted += e * v;
        }
        let mean = weighted / sum;
        for v in out.iter_mut() {
            *v -= mean;
        }
    }

    /// Mean log-probability of the chosen moves under the softmax over each position's moves
    /// (`samples`: each position's feature rows and the index of the move played).
    pub fn log_likelihood(&self, samples: &[Sample]) -> f64 {
        if samples.is_empty() {
            return 0.0;
        }
        let w = self.weights.map(f64::from);
        let mut total = 0.0f64;
        for s in samples {
            let scores: Vec<f64> = s.rows.iter().map(|r| dot(&w, r)).collect();
            total += scores[s.played] - log_sum_exp(&scores);
        }
        total / samples.len() as f64
    }

    /// Fits the weights by maximum likelihood with an L2 penalty `l2` (per sample), by full-batch
    /// gradient ascent with Adam steps; deterministic.
    pub fn fit(samples: &[Sample], l2: f64, iterations: usize) -> MovePrior {
        let mut w = [0.0f64; FEATURES];
        let (mut m1, mut m2) = ([0.0f64; FEATURES], [0.0f64; FEATURES]);
        let (b1, b2, lr, eps) = (0.9f64, 0.999f64, 0.05f64, 1e-8f64);
        let n = samples.len().max(1) as f64;
        for t in 1..=iterations {
            let mut grad = [0.0f64; FEATURES];
            for s in samples {
                let scores: Vec<f64> = s.rows.iter().map(|r| dot(&w, r)).collect();
                let z = log_sum_exp(&scores);
                for (k, r) in s.rows.iter().enumerate() {
                    let p = (scores[k] - z).exp();
                    let y = if k == s.played { 1.0 } else { 0.0 };
                    for (g, &x) in grad.iter_mut().zip(r.iter()) {
                        *g += (y - p) * x as f64;
                    }
                }
            }
            for i in 0..FEATURES {
                let g = grad[i] / n - l2 * w[i];
                m1[i] = b1 * m1[i] + (1.0 - b1) * g;
                m2[i] = b2 * m2[i] + (1.0 - b2) * g * g;
                let mh = m1[i] / (1.0 - b1.powi(t as i32));
                let vh = m2[i] / (1.0 - b2.powi(t as i32));
                w[i] += lr * mh / (vh.sqrt() + eps);
            }
        }
        let mut weights = [0.0f32; FEATURES];
        for (o, &v) in weights.iter_mut().zip(w.iter()) {
            *o = v as f32;
        }
        MovePrior { weights }
    }
}

/// One position of a recorded game: the features of each of its legal moves and which was played.
#[derive(Debug, Clone)]
pub struct Sample {
    pub rows: Vec<[f32; FEATURES]>,
    pub played: usize,
}

/// `w · row` in double precision.
fn dot(w: &[f64; FEATURES], row: &[f32; FEATURES]) -> f64 {
    w.iter().zip(row).map(|(&wi, &x)| wi * f64::from(x)).sum()
}

fn log_sum_exp(v: &[f64]) -> f64 {
    let max = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    if !max.is_finite() {
        return max;
    }
    max + v.iter().map(|x| (x - max).exp()).sum::<f64>().ln()
}

/// The positions of `game` as samples, each with the legal moves of the board that moved (in
/// the table's order, pockets from both boards' play) and the move the record says was played.
pub fn samples_from_game(game: &BpgnGame, variant: &Variant) -> Result<Vec<Sample>, SampleError> {
    let mut table = match game.start_fen() {
        Some(fen) => Table::from_fen(fen).map_err(|e| SampleError::Start(e.to_string()))?,
        None => Table::new(),
    };
    let mut out = Vec::with_capacity(game.moves.len());
    for (index, bm) in game.moves.iter().enumerate() {
        let bad = |problem: String| SampleError::Move {
            index,
            san: bm.san.clone(),
            problem,
        };
        let mv = table
            .parse_san(bm.board, &bm.san, variant)
            .map_err(|e| bad(e.to_string()))?;
        let legal = table.legal_moves(bm.board, variant);
        if let Some(played) = legal.iter().position(|&m| m == mv) {
            let pos = table.board(bm.board);
            let cx = Context::of(pos);
            out.push(Sample {
                rows: legal.iter().map(|&m| features_in(pos, &cx, m)).collect(),
                played,
            });
        }
        table
            .play(bm.board, mv, variant)
            .map_err(|e| bad(e.to_string()))?;
    }
    Ok(out)
}

/// Why a recorded game could not be turned into samples.
#[derive(Debug, thiserror::Error)]
pub enum SampleError {
    #[error("start position: {0}")]
    Start(String),
    #[error("move {index} ({san}): {problem}")]
    Move {
        index: usize,
        san: String,
        problem: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::bpgn::parse_bpgn;

    fn position(fen: &str) -> Position {
        Table::from_fen(&format!(
            "{fen} | rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
        ))
        .unwrap()
        .board(crate::engine::BoardId::A)
        .clone()
    }

    fn centred_of(pos: &Position, uci: &str) -> f32 {
        let v = Variant::default();
        let moves = pos.legal_moves(&v);
        let mut out = Vec::new();
        MovePrior::default().centred(pos, &moves, &mut out);
        let m = pos.parse_uci(uci).unwrap();
        out[moves.iter().position(|&x| x == m).unwrap()]
    }

    #[test]
    fn features_name_what_the_move_does() {
        let pos = position("4k3/8/8/3p4/8/2N5/8/4K3[Q] w - - 0 1");
        let f = |uci: &str| features(&pos, pos.parse_uci(uci).unwrap());
        let name = |n: &str| FEATURE_NAMES.iter().position(|&x| x == n).unwrap();
        assert_eq!(f("c3d5")[name("capture_value")], 1.0 / 3.0);
        assert_eq!(f("c3e4")[name("capture_value")], 0.0);
        assert_eq!(f("c3a4")[name("rim")], 1.0);
        assert_eq!(f("c3b5")[name("rim")], 0.0);
        // The knight on e4 would stand where the d5 pawn takes it.
        assert_eq!(f("c3e4")[name("hangs_to_pawn")], 1.0);
        assert_eq!(f("Q@e7")[name("drop_near_king")], 1.0);
        assert_eq!(f("Q@e7")[name("check")], 1.0);
        assert_eq!(f("Q@a6")[name("check")], 0.0);
        assert_eq!(f("e1d2")[name("king_walk")], 1.0);
        let start = Position::new();
        let g = |uci: &str| features(&start, start.parse_uci(uci).unwrap());
        assert_eq!(g("e2e4")[name("centre_double")], 1.0);
        assert_eq!(g("b2b4")[name("centre_double")], 0.0);
        assert_eq!(g("g1f3")[name("develop")], 1.0);
    }

    #[test]
    fn the_fitted_prior_prefers_the_moves_players_make_from_the_start() {
        let start = Position::new();
        assert!(centred_of(&start, "e2e4") > centred_of(&start, "e2e3"));
        assert!(centred_of(&start, "d2d4") > centred_of(&start, "b2b4"));
        assert!(centred_of(&start, "g1f3") > centred_of(&start, "g1h3"));
        assert!(centred_of(&start, "b1c3") > centred_of(&start, "b1a3"));
    }

    #[test]
    fn centred_log_odds_are_log_probability_plus_entropy_and_average_zero() {
        let v = Variant::default();
        for fen in [
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1",
            "r1bqk2r/pppp1ppp/2n2n2/2b1p3/2B1P3/2N2N2/PPPP1PPP/R1BQK2R[Pn] w KQkq - 0 1",
        ] {
            let pos = position(fen);
            let moves = pos.legal_moves(&v);
            let mut out = Vec::new();
            let prior = MovePrior::default();
            prior.centred(&pos, &moves, &mut out);
            let raw: Vec<f32> = moves.iter().map(|&m| prior.raw(&pos, m)).collect();
            let max = raw.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
            let z: f32 = raw.iter().map(|r| (r - max).exp()).sum();
            let expectation: f32 = raw
                .iter()
                .zip(&out)
                .map(|(r, c)| (r - max).exp() / z * c)
                .sum();
            assert!(expectation.abs() < 1e-4, "{fen}: {expectation}");
            // Each value is its move's log-probability plus the entropy (in f64 here), and the
            // raw score is the weights' dot product with the feature row.
            let log_z = f64::from(max) + f64::from(z).ln();
            let entropy: f64 = raw
                .iter()
                .map(|&r| {
                    let lp = f64::from(r) - log_z;
                    -lp.exp() * lp
                })
                .sum();
            for ((&m, &r), &c) in moves.iter().zip(&raw).zip(&out) {
                let want = f64::from(r) - log_z + entropy;
                assert!(
                    (f64::from(c) - want).abs() < 1e-4,
                    "{fen} {m}: {c} vs {want}"
                );
                let row = features(&pos, m);
                let dot: f32 = prior.weights.iter().zip(row).map(|(w, x)| w * x).sum();
                assert!((r - dot).abs() < 1e-5, "{fen} {m}: {r} vs {dot}");
            }
        }
    }

    #[test]
    fn fitting_learns_what_the_records_do() {
        // Players who always capture when they can: the fitted capture weight is positive and
        // the likelihood beats the uniform one.
        let text = "[Event \"t\"]\n\n1A. e4 {1} 1a. d5 {1} 2A. exd5 {1} 2a. Qxd5 {1} 3A. Nc3 {1} 3a. Qxg2 {1} 4A. Bxg2 {1} *\n";
        let game = parse_bpgn(text.as_bytes()).unwrap().remove(0);
        let samples = samples_from_game(&game, &Variant::default()).unwrap();
        assert_eq!(samples.len(), 7);
        let fitted = MovePrior::fit(&samples, 0.001, 300);
        let uniform = MovePrior {
            weights: [0.0; FEATURES],
        };
        assert!(fitted.weights[0] > 0.5, "{:?}", fitted.weights);
        assert!(fitted.log_likelihood(&samples) > uniform.log_likelihood(&samples) + 0.1);
    }
}
