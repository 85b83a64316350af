//! A simulator of camera observations from a recorded game, for tests, evaluation and benches.
//!
//! From a BPGN game it produces what a camera over both boards would report at `fps` frames per
//! second, with timing from the clock comments: hand-over-board frames while a move is made (the
//! squares near the hand are occluded, a slid piece passes over the squares between its origin
//! and target), calm frames between moves, fast replies wherever the recorded times leave no calm
//! gap, per-square noise (softmax of the true class's logit plus Gaussian noise), random one-frame
//! confusions, occasional persistent misreads of one square, and noisy pocket readings in which a
//! captured piece appears after a hand-over delay. Optional injected incidents: pieces never handed
//! over, pieces hidden from the pocket. Seeded and deterministic.

use serde::{Deserialize, Serialize};

use crate::engine::bpgn::BpgnGame;
use crate::engine::{BoardId, Color, Move, Position, Role, Square, Table, Variant};

use super::rng::Rng;
use super::{Observation, PocketReading, SquareClass};

/// Noise and timing of the simulated camera and players (every field has a default).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SimConfig {
    pub fps: u32,
    /// Logit of the true class before noise (other classes 0).
    pub signal: f32,
    /// Standard deviation of the Gaussian noise added to every logit.
    pub noise: f32,
    /// Per square and frame: probability that the true class is replaced by a look-alike
    /// (knight↔bishop, pawn↔bishop, queen↔king, a black piece on a dark square read as empty).
    pub confusion_rate: f64,
    /// Per board and second: probability that a persistent misread of one occupied square starts.
    pub persistent_misread_rate: f64,
    /// Length of a persistent misread in frames (min, max).
    pub persistent_frames: (u32, u32),
    /// Time the hand spends over the board for one move (ms, min and max).
    pub hand_ms: (u64, u64),
    /// Shortest time between two presses on one board (ms): a move over the board needs a few
    /// frames of hand even when the recorded time was a premove.
    pub min_move_ms: u64,
    /// Time between the hand leaving the board and the clock press (ms, min and max).
    pub release_ms: (u64, u64),
    /// Probability that a piece is slid (shown on the squares between origin and target).
    pub slide_rate: f64,
    /// Per reading, colour and role: probability that a pocket count is off by one.
    pub pocket_noise: f64,
    /// Delay until a captured piece stands in the partner's pocket (ms, min and max).
    pub handover_ms: (u64, u64),
    /// Per capture: probability that the piece is never handed over (an injected incident).
    pub handover_missing_rate: f64,
    /// Per board and second: probability that a player hides a piece of his pocket for a while.
    pub hidden_pocket_rate: f64,
    /// Seconds of calm frames after the last move.
    pub tail_secs: u64,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            fps: 10,
            signal: 6.0,
            noise: 1.0,
            confusion_rate: 0.002,
            persistent_misread_rate: 0.005,
            persistent_frames: (20, 100),
            hand_ms: (250, 700),
            min_move_ms: 300,
            release_ms: (0, 150),
            slide_rate: 0.3,
            pocket_noise: 0.01,
            handover_ms: (300, 1500),
            handover_missing_rate: 0.0,
            hidden_pocket_rate: 0.0,
            tail_secs: 3,
        }
    }
}

/// An incident the simulator injected, for measuring recall.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Incident {
    /// `hidden_pocket` or `handover_missing`.
    pub kind: String,
    /// The board whose pocket is short.
    pub board: BoardId,
    pub color: Color,
    pub role: Role,
    /// When the pocket became short, and when it stopped being short (ms).
    pub start: u64,
    pub end: u64,
}

/// A simulated game: the truth and the observations of both boards in time order.
#[derive(Debug, Clone)]
pub struct SimGame {
    /// The moves of each board in UCI, in order (board A, board B).
    pub truth: [Vec<String>; 2],
    /// Observations of both boards, ordered by time.
    pub observations: Vec<Observation>,
    /// Clock presses (ts, board), ordered by time.
    pub presses: Vec<(u64, BoardId)>,
    pub incidents: Vec<Incident>,
}

/// Why a game could not be simulated.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("move {index} ({san}) on board {board}: {problem}")]
    Move {
        index: usize,
        san: String,
        board: BoardId,
        problem: String,
    },
    #[error("the game has no moves")]
    Empty,
    #[error("start position: {0}")]
    Start(String),
}

/// One move as the simulator plays it out.
#[derive(Debug, Clone)]
struct SimMove {
    mv: Move,
    /// Hand over the board from `hand_start` to `hand_end`; the clock is pressed at `press`.
    hand_start: u64,
    hand_end: u64,
    press: u64,
    after: Position,
    slide: bool,
}

/// A piece on its way into a pocket, or hidden from it.
#[derive(Debug, Clone, Copy)]
struct Invisible {
    board: BoardId,
    color: Color,
    role: Role,
    from: u64,
    until: u64,
}

/// Calm time before the clocks start (both boards are seen in the start position first).
const START_MS: u64 = 1500;

/// Simulates `game` under `variant` with `cfg` and `seed`.
pub fn simulate_game(
    game: &BpgnGame,
    variant: &Variant,
    cfg: &SimConfig,
    seed: u64,
) -> Result<SimGame, SimError> {
    let mut rng = Rng::new(seed);
    let mut table = match game.start_fen() {
        Some(fen) => Table::from_fen(fen).map_err(|e| SimError::Start(e.to_string()))?,
        None => Table::new(),
    };
    if game.moves.is_empty() {
        return Err(SimError::Empty);
    }
    let start: [Position; 2] = [
        table.board(BoardId::A).clone(),
        table.board(BoardId::B).clone(),
    ];
    let base_ms = game
        .time_control()
        .map(|tc| u64::from(tc.base_secs) * 1000)
        .unwrap_or(0);
    let mut remaining = [[base_ms; 2]; 2];
    let mut last_ts = 0u64;
    let mut moves: [Vec<SimMove>; 2] = [Vec::new(), Vec::new()];
    let mut truth: [Vec<String>; 2] = [Vec::new(), Vec::new()];
    let mut invisible: Vec<Invisible> = Vec::new();
    let mut incidents = Vec::new();
    let mut presses = Vec::new();
    let mut pocket_snapshots: [Vec<(u64, [[u8; 5]; 2])>; 2] = [Vec::new(), Vec::new()];
    let snapshot = |t: &Table, b: BoardId| -> [[u8; 5]; 2] {
        let mut out = [[0u8; 5]; 2];
        for c in Color::ALL {
            for r in Role::POCKET {
                out[c.index()][r.index()] = t.board(b).pocket(c).count(r);
            }
        }
        out
    };
    for b in [BoardId::A, BoardId::B] {
        pocket_snapshots[b.index()].push((0, snapshot(&table, b)));
    }

    for (index, bm) in game.moves.iter().enumerate() {
        let b = bm.board;
        let bad = |problem: String| SimError::Move {
            index,
            san: bm.san.clone(),
            board: b,
            problem,
        };
        let (bi, ci) = (b.index(), bm.color.index());
        if let Some(secs) = bm.clock {
            remaining[bi][ci] = (secs * 1000.0).round().max(0.0) as u64;
        }
        let clock_ts = if base_ms > 0 {
            (2 * base_ms).saturating_sub(remaining[bi][0] + remaining[bi][1])
        } else {
            last_ts.saturating_sub(START_MS) + 2000
        };
        // File order is the real order: a piece is captured before it is dropped.
        let prev_on_board = moves[bi].last().map_or(0, |m: &SimMove| m.press);
        // Over the board a move takes a few frames even when the record says 0.1 s (a premove
        // online): such moves are delayed to `min_move_ms` after the previous one.
        let press = (clock_ts + START_MS)
            .max(last_ts + 1)
            .max(prev_on_board + cfg.min_move_ms);
        last_ts = press;

        let mv = table
            .parse_san(b, &bm.san, variant)
            .map_err(|e| bad(e.to_string()))?;
        let mover = table.board(b).turn();
        let other_pockets_before = snapshot(&table, b.other());
        table.play(b, mv, variant).map_err(|e| bad(e.to_string()))?;
        truth[bi].push(mv.to_uci().to_string());

        let release = rng.range(cfg.release_ms.0, cfg.release_ms.1);
        let hand = rng.range(cfg.hand_ms.0, cfg.hand_ms.1);
        // At least two frames of hand per move.
        let min_hand = 2 * 1000 / u64::from(cfg.fps.max(1));
        let hand_end = press
            .saturating_sub(release)
            .max(prev_on_board + min_hand)
            .min(press);
        let hand_start = hand_end.saturating_sub(hand).max(prev_on_board);
        let slide = rng.chance(cfg.slide_rate);
        moves[bi].push(SimMove {
            mv,
            hand_start,
            hand_end,
            press,
            after: table.board(b).clone(),
            slide,
        });
        presses.push((press, b));

        // Captured pieces reach the partner's pocket after a delay, or never.
        let after = snapshot(&table, b.other());
        for c in Color::ALL {
            for r in Role::POCKET {
                for _ in other_pockets_before[c.index()][r.index()]..after[c.index()][r.index()] {
                    let missing = rng.chance(cfg.handover_missing_rate);
                    let until = if missing {
                        u64::MAX
                    } else {
                        press + rng.range(cfg.handover_ms.0, cfg.handover_ms.1)
                    };
                    invisible.push(Invisible {
                        board: b.other(),
                        color: c,
                        role: r,
                        from: press,
                        until,
                    });
                    if missing {
                        incidents.push(Incident {
                            kind: "handover_missing".into(),
                            board: b.other(),
                            color: c,
                            role: r,
                            start: press,
                            end: u64::MAX,
                        });
                    }
                }
            }
        }
        // A drop uses up an invisible piece of that kind first (it was in the player's hand).
        if let Move::Drop { role, .. } = mv
            && let Some(inv) = invisible.iter_mut().find(|i| {
                i.board == b
                    && i.color == mover
                    && i.role == role
                    && i.from <= press
                    && i.until > press
            })
        {
            inv.until = press;
            if let Some(inc) = incidents
                .iter_mut()
                .find(|x| x.board == b && x.color == mover && x.role == role && x.end == u64::MAX)
            {
                inc.end = press;
            }
        }
        for bb in [BoardId::A, BoardId::B] {
            pocket_snapshots[bb.index()].push((press, snapshot(&table, bb)));
        }
    }
    let end = last_ts + cfg.tail_secs * 1000;
    for inc in &mut incidents {
        inc.end = inc.end.min(end);
    }
    for inv in &mut invisible {
        inv.until = inv.until.min(end);
    }

    // Hidden pocket pieces: a player keeps one piece of his pocket out of sight for a while.
    let step = 1000 / u64::from(cfg.fps.max(1));
    if cfg.hidden_pocket_rate > 0.0 {
        for b in [BoardId::A, BoardId::B] {
            let mut t = 0;
            while t < end {
                if rng.chance(cfg.hidden_pocket_rate) {
                    // Only a piece that stands visibly in the pocket can be hidden.
                    let mut snap = pocket_at(&pocket_snapshots[b.index()], t);
                    for inv in &invisible {
                        if inv.board == b && inv.from <= t && t < inv.until {
                            let n = &mut snap[inv.color.index()][inv.role.index()];
                            *n = n.saturating_sub(1);
                        }
                    }
                    let held: Vec<(Color, Role)> = Color::ALL
                        .into_iter()
                        .flat_map(|c| Role::POCKET.into_iter().map(move |r| (c, r)))
                        .filter(|&(c, r)| snap[c.index()][r.index()] > 0)
                        .collect();
                    if !held.is_empty() {
                        let (color, role) = held[rng.range(0, held.len() as u64 - 1) as usize];
                        let len = rng.range(6000, 15000);
                        // Hidden until the piece is dropped or the player shows it again.
                        let mut until = (t + len).min(end);
                        for m in &moves[b.index()] {
                            if m.press > t
                                && m.press < until
                                && matches!(m.mv, Move::Drop { role: r, .. } if r == role)
                                && m.after.turn() != color
                            {
                                until = m.press;
                            }
                        }
                        invisible.push(Invisible {
                            board: b,
                            color,
                            role,
                            from: t,
                            until,
                        });
                        incidents.push(Incident {
                            kind: "hidden_pocket".into(),
                            board: b,
                            color,
                            role,
                            start: t,
                            end: until,
                        });
                        t = until;
                    }
                }
                t += 1000;
            }
        }
    }

    let mut observations = Vec::new();
    let mut misread: [Option<(Square, SquareClass, u32)>; 2] = [None, None];
    let mut t = 0;
    while t <= end {
        for b in [BoardId::A, BoardId::B] {
            let ts = t + if b == BoardId::B { step / 2 } else { 0 };
            let frame = render_frame(
                b,
                ts,
                &start[b.index()],
                &moves[b.index()],
                &pocket_snapshots[b.index()],
                &invisible,
                &mut misread[b.index()],
                cfg,
                &mut rng,
            );
            observations.push(frame);
        }
        t += step;
    }
    presses.sort();
    Ok(SimGame {
        truth,
        observations,
        presses,
        incidents,
    })
}

fn pocket_at(snapshots: &[(u64, [[u8; 5]; 2])], t: u64) -> [[u8; 5]; 2] {
    let i = snapshots.partition_point(|(ts, _)| *ts <= t);
    snapshots[i.saturating_sub(1)].1
}

/// A look-alike of `class` for confusions and misreads.
fn confuse(class: SquareClass, sq: Square, rng: &mut Rng) -> SquareClass {
    use SquareClass::*;
    let dark = (sq.file() + sq.rank()).is_multiple_of(2);
    match class {
        Empty => {
            if rng.chance(0.5) {
                WhitePawn
            } else {
                BlackPawn
            }
        }
        c if dark && c.index() >= 7 && rng.chance(0.5) => Empty,
        WhiteKnight => WhiteBishop,
        WhiteBishop => {
            if rng.chance(0.5) {
                WhiteKnight
            } else {
                WhitePawn
            }
        }
        WhitePawn => WhiteBishop,
        WhiteQueen => WhiteKing,
        WhiteKing => WhiteQueen,
        WhiteRook => WhitePawn,
        BlackKnight => BlackBishop,
        BlackBishop => {
            if rng.chance(0.5) {
                BlackKnight
            } else {
                BlackPawn
            }
        }
        BlackPawn => BlackBishop,
        BlackQueen => BlackKing,
        BlackKing => BlackQueen,
        BlackRook => BlackPawn,
    }
}

#[allow(clippy::too_many_arguments)]
fn render_frame(
    board: BoardId,
    ts: u64,
    start: &Position,
    moves: &[SimMove],
    pockets: &[(u64, [[u8; 5]; 2])],
    invisible: &[Invisible],
    misread: &mut Option<(Square, SquareClass, u32)>,
    cfg: &SimConfig,
    rng: &mut Rng,
) -> Observation {
    // The position shown: after every move whose hand has left the board.
    let done = moves.partition_point(|m| m.hand_end <= ts);
    let shown = if done == 0 {
        start
    } else {
        &moves[done - 1].after
    };
    let mut classes: [SquareClass; 64] =
        std::array::from_fn(|i| SquareClass::on(shown, Square::new(i as u8).expect("i < 64")));
    let mut occluded = 0u64;
    let active = moves
        .get(done)
        .filter(|m| m.hand_start <= ts && ts < m.hand_end);
    if let Some(m) = active {
        // Around the hand: a few squares near the target (and origin) are hidden.
        let mut centres = vec![m.mv.to()];
        if let Some(from) = m.mv.from() {
            centres.push(from);
        }
        for c in centres {
            for sq in Square::all() {
                let df = (sq.file() as i32 - c.file() as i32).abs();
                let dr = (sq.rank() as i32 - c.rank() as i32).abs();
                if df <= 1 && dr <= 1 && rng.chance(0.5) {
                    occluded |= 1 << sq.index();
                }
            }
        }
        // A slid piece shows on a square between origin and target in the middle of the move.
        if m.slide
            && let Some(from) = m.mv.from()
        {
            let to = m.mv.to();
            let frac = (ts - m.hand_start) as f64 / (m.hand_end - m.hand_start).max(1) as f64;
            let (ff, fr) = (from.file() as f64, from.rank() as f64);
            let (tf, tr) = (to.file() as f64, to.rank() as f64);
            let f = (ff + (tf - ff) * frac).round() as u8;
            let r = (fr + (tr - fr) * frac).round() as u8;
            if let Some(mid) = Square::from_coords(f, r) {
                let piece = SquareClass::on(shown, from);
                if piece != SquareClass::Empty {
                    classes[from.index()] = SquareClass::Empty;
                    classes[mid.index()] = piece;
                }
            }
        }
    }
    // Persistent misreads start on calm boards at random and end when their square changes.
    if let Some((sq, _, left)) = misread {
        if *left == 0 || SquareClass::on(shown, *sq) == SquareClass::Empty {
            *misread = None;
        } else {
            *left -= 1;
        }
    }
    if misread.is_none()
        && rng.chance(cfg.persistent_misread_rate / f64::from(cfg.fps.max(1)))
        && let Some(sq) = shown
            .occupied()
            .into_iter()
            .nth(rng.range(0, u64::from(shown.occupied().count().max(1)) - 1) as usize)
    {
        let wrong = confuse(classes[sq.index()], sq, rng);
        let len = rng.range(
            u64::from(cfg.persistent_frames.0),
            u64::from(cfg.persistent_frames.1),
        ) as u32;
        *misread = Some((sq, wrong, len));
    }
    if let Some((sq, wrong, _)) = *misread
        && SquareClass::on(shown, sq) != SquareClass::Empty
    {
        classes[sq.index()] = wrong;
    }

    let mut probs = [[0f32; SquareClass::COUNT]; 64];
    for sq in Square::all() {
        let i = sq.index();
        let v = &mut probs[i];
        if occluded & (1 << i) != 0 {
            for x in v.iter_mut() {
                *x = (2.0 * cfg.noise * rng.normal() as f32).exp();
            }
            continue;
        }
        let mut class = classes[i];
        if rng.chance(cfg.confusion_rate) {
            class = confuse(class, sq, rng);
        }
        let mut max = f32::NEG_INFINITY;
        for (c, x) in v.iter_mut().enumerate() {
            let mut logit = cfg.noise * rng.normal() as f32;
            if c == class.index() {
                logit += cfg.signal;
            }
            *x = logit;
            max = max.max(logit);
        }
        for x in v.iter_mut() {
            *x = (*x - max).exp();
        }
    }
    let motion = if active.is_some() {
        0.6 + 0.4 * rng.f64() as f32
    } else {
        0.1 * rng.f64() as f32
    };

    // Pocket reading: the engine's pockets minus pieces not (yet) visible, with noise.
    let mut counts = pocket_at(pockets, ts);
    for inv in invisible {
        if inv.board == board && inv.from <= ts && ts < inv.until {
            let n = &mut counts[inv.color.index()][inv.role.index()];
            *n = n.saturating_sub(1);
        }
    }
    for row in counts.iter_mut() {
        for n in row.iter_mut() {
            if rng.chance(cfg.pocket_noise) {
                *n = if rng.chance(0.5) {
                    n.saturating_add(1)
                } else {
                    n.saturating_sub(1)
                };
            }
        }
    }
    Observation::new(
        board,
        ts,
        &probs,
        motion.clamp(0.0, 1.0),
        Some(PocketReading {
            counts,
            ..PocketReading::default()
        }),
    )
    .expect("simulated probabilities are finite and positive")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::bpgn::parse_bpgn;

    const GAME: &str = "[Event \"t\"]\n[TimeControl \"180+0\"]\n\n1A. e4{179.0} 1a. e5{178.0} \
        1B. d4{179.5} 2A. Nf3{177.0} 1b. d5{178.5} 2a. Nc6{176.0} 3A. Bb5{175.9} *\n";

    fn game() -> BpgnGame {
        parse_bpgn(GAME.as_bytes()).unwrap().remove(0)
    }

    #[test]
    fn same_seed_same_stream_other_seed_other_noise() {
        let v = Variant::fics();
        let cfg = SimConfig::default();
        let a = simulate_game(&game(), &v, &cfg, 5).unwrap();
        let b = simulate_game(&game(), &v, &cfg, 5).unwrap();
        let c = simulate_game(&game(), &v, &cfg, 6).unwrap();
        assert_eq!(a.observations, b.observations);
        assert_eq!(a.truth, c.truth);
        assert_ne!(a.observations, c.observations);
        assert_eq!(a.truth[0], ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5"]);
        assert_eq!(a.truth[1], ["d2d4", "d7d5"]);
    }

    #[test]
    fn every_move_is_made_under_a_hand_and_boards_interleave_in_time() {
        let v = Variant::fics();
        let cfg = SimConfig::default();
        let sim = simulate_game(&game(), &v, &cfg, 1).unwrap();
        assert!(sim.observations.windows(2).all(|w| w[0].ts <= w[1].ts));
        for &(press, board) in &sim.presses {
            let hand = sim.observations.iter().any(|o| {
                o.board == board && o.ts + 1000 >= press && o.ts <= press && o.motion >= 0.6
            });
            assert!(hand, "no hand frame before the press at {press} on {board}");
        }
        // Calm frames exist and are calm.
        assert!(sim.observations.iter().any(|o| o.motion < 0.1));
        // Presses of one board are at least `min_move_ms` apart.
        for b in [BoardId::A, BoardId::B] {
            let t: Vec<u64> = sim
                .presses
                .iter()
                .filter(|p| p.1 == b)
                .map(|p| p.0)
                .collect();
            assert!(t.windows(2).all(|w| w[1] - w[0] >= cfg.min_move_ms));
        }
    }

    #[test]
    fn a_truncated_record_is_an_error_not_a_panic() {
        let text = "[Event \"t\"]\n\n1A. Qe7+{179.0} *\n";
        let g = parse_bpgn(text.as_bytes()).unwrap().remove(0);
        assert!(simulate_game(&g, &Variant::fics(), &SimConfig::default(), 1).is_err());
    }
}
