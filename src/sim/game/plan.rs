//! Turning a BPGN game into a timeline: when each move's clock press happens, and the keyframes of
//! every piece and hand that carry it out, with the injected incidents.

use serde::{Deserialize, Serialize};

use super::track::{HandTrack, PieceKey, PieceTrack};
use crate::engine::bpgn::BpgnGame;
use crate::engine::{
    self, BoardId as EBoard, Color, Move, PlayOutcome, Role, Square, Table, Variant,
};
use crate::sim::SimError;
use crate::sim::fen::{Piece, Side};
use crate::sim::math::Vec3;
use crate::sim::rng::SimRng;
use crate::sim::scene::{PieceSpot, TableLayout};

/// Pocket slots laid out per zone: three columns of five; more pieces make the zone denser.
const POCKET_SLOTS: usize = 15;
/// Palm height above a piece's top while grasping it.
const GRIP: f32 = 0.012;
/// How high a piece is lifted while carried.
const LIFT: f32 = 0.045;
/// Seconds the hand needs to leave the table after a press.
const RETRACT: f64 = 0.45;
/// Seconds assumed per move when the BPGN has no clock comment.
const DEFAULT_THINK: f64 = 3.0;

/// The incidents `--inject` can put into a rendered game.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IncidentKind {
    IllegalMove,
    HiddenPocket,
    DropMate,
    MissingHandover,
    Slide,
}

impl IncidentKind {
    pub const ALL: [IncidentKind; 5] = [
        IncidentKind::IllegalMove,
        IncidentKind::HiddenPocket,
        IncidentKind::DropMate,
        IncidentKind::MissingHandover,
        IncidentKind::Slide,
    ];

    pub fn name(self) -> &'static str {
        match self {
            IncidentKind::IllegalMove => "illegal-move",
            IncidentKind::HiddenPocket => "hidden-pocket",
            IncidentKind::DropMate => "drop-mate",
            IncidentKind::MissingHandover => "missing-handover",
            IncidentKind::Slide => "slide",
        }
    }
}

/// An `--inject KIND[@MOVE]` request: MOVE is the 0-based index into the game's move list
/// (both boards interleaved, as in the BPGN); the incident goes to the first eligible move at or
/// after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IncidentRequest {
    pub kind: IncidentKind,
    pub at_move: usize,
}

impl std::str::FromStr for IncidentRequest {
    type Err = SimError;

    fn from_str(s: &str) -> Result<Self, SimError> {
        let (name, at) = match s.split_once('@') {
            Some((n, a)) => (
                n,
                a.trim()
                    .parse::<usize>()
                    .map_err(|_| SimError::Config(format!("incident `{s}`: bad move index")))?,
            ),
            None => (s, 0),
        };
        let kind = IncidentKind::ALL
            .into_iter()
            .find(|k| k.name() == name.trim())
            .ok_or_else(|| {
                SimError::Config(format!(
                    "unknown incident `{name}` (illegal-move, hidden-pocket, drop-mate, missing-handover, slide)"
                ))
            })?;
        Ok(IncidentRequest { kind, at_move: at })
    }
}

/// An injected incident as it ended up in the timeline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Incident {
    pub kind: IncidentKind,
    /// Index of the game move it is attached to.
    pub move_index: usize,
    pub board: String,
    /// SAN of the move as played in the render.
    pub san: String,
    pub description: String,
    /// Time span the incident is visible, ms.
    pub ts_ms: [u64; 2],
    /// Frame span (inclusive) at the render's fps; filled by the renderer.
    pub frames: [u64; 2],
}

/// One clock press.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClockPress {
    pub ts_ms: u64,
    pub board: String,
    pub color: Side,
    pub white_ms: u64,
    pub black_ms: u64,
    /// Index of the game move, `None` for a press that belongs to no game move (an illegal move).
    pub move_index: Option<usize>,
}

/// A game move resolved against the engine, with its clock press time.
#[derive(Clone, Debug)]
pub struct TimedMove {
    pub board: usize,
    pub side: Side,
    pub san: String,
    pub mv: Move,
    pub outcome: PlayOutcome,
    /// The table before the move.
    pub before: Table,
    /// Seconds from the start when the mover presses the clock.
    pub press: f64,
    /// Remaining time of White's and Black's clock of this board after the press, seconds.
    pub remaining: [f64; 2],
}

/// The whole animated game: tracks of pieces and hands, presses and incidents.
#[derive(Clone, Debug)]
pub struct GamePlan {
    pub layout: TableLayout,
    pub moves: Vec<TimedMove>,
    pub pieces: Vec<PieceTrack>,
    /// Hands by board, then White/Black.
    pub hands: [[HandTrack; 2]; 2],
    pub presses: Vec<ClockPress>,
    pub incidents: Vec<Incident>,
    /// Seconds covered by the render.
    pub duration: f64,
}

fn side_of(c: Color) -> Side {
    match c {
        Color::White => Side::White,
        Color::Black => Side::Black,
    }
}

fn sim_piece(p: engine::Piece) -> Piece {
    Piece::from_fen_char(p.char()).expect("engine piece letters are FEN letters")
}

fn eboard(b: usize) -> EBoard {
    if b == 0 { EBoard::A } else { EBoard::B }
}

fn board_name(b: usize) -> String {
    if b == 0 { "A".into() } else { "B".into() }
}

fn ms(t: f64) -> u64 {
    (t.max(0.0) * 1000.0).round() as u64
}

/// Resolves the game's moves with the engine and gives each its clock press time: the time a
/// board has run is what both of its clocks have used (plus increments), and both boards start
/// together at t = 0.
pub fn time_moves(game: &BpgnGame, v: &Variant) -> Result<Vec<TimedMove>, SimError> {
    let mut table = match game.start_fen() {
        Some(f) => Table::from_fen(f).map_err(|e| SimError::Fen(e.to_string()))?,
        None => Table::new(),
    };
    let tc = game.time_control();
    let base = tc.map(|t| t.base_secs as f64).unwrap_or_else(|| {
        game.moves
            .iter()
            .filter_map(|m| m.clock)
            .fold(0.0, f64::max)
            .ceil()
            .max(60.0)
    });
    let inc = tc.map_or(0.0, |t| t.increment_secs as f64);
    let mut remaining = [[base; 2]; 2];
    let mut made = [[0u32; 2]; 2];
    let mut last_press = [0.0f64; 2];
    let mut out = Vec::with_capacity(game.moves.len());
    for (i, m) in game.moves.iter().enumerate() {
        let b = m.board.index();
        let c = m.color.index();
        let mv = table
            .parse_san(m.board, &m.san, v)
            .map_err(|e| SimError::Config(format!("move {i} ({}): {e}", m.san)))?;
        let before = table.clone();
        let outcome = table
            .play(m.board, mv, v)
            .map_err(|e| SimError::Config(format!("move {i} ({}): {e}", m.san)))?;
        made[b][c] += 1;
        remaining[b][c] = match m.clock {
            Some(s) => s,
            None => (remaining[b][c] - DEFAULT_THINK).max(0.0),
        };
        let used = |c: usize| base + inc * made[b][c] as f64 - remaining[b][c];
        let mut press = used(0) + used(1);
        // A board's presses alternate; keep them strictly increasing whatever the file says.
        press = press.max(last_press[b] + 0.1);
        last_press[b] = press;
        out.push(TimedMove {
            board: b,
            side: side_of(m.color),
            san: m.san.clone(),
            mv,
            outcome,
            before,
            press,
            remaining: remaining[b],
        });
    }
    Ok(out)
}

/// What happens to a capture's piece on its way to the partner.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Handover {
    Direct,
    /// Laid on the table beside the capturer's board, brought over after `delay` s.
    Late {
        delay: f64,
    },
}

/// Per-move incident decisions.
#[derive(Clone, Debug, Default)]
struct MoveMods {
    handover: Option<Handover>,
    slide: bool,
    /// Illegal king step played and taken back before the real move.
    illegal: Option<(Square, Square)>,
    /// After the press the mover takes a piece out of his own pocket zone and keeps it in the
    /// hand, out of the opponent's sight (rule texts 000 §7(3), 004 §5c), for this many seconds.
    hide: Option<f64>,
    incident: Option<usize>,
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    piece: Option<usize>,
    free_at: f64,
}

enum Ev {
    None,
    Grab(usize),
    /// Grab without lifting: the piece stays on its square while slid.
    GrabSlide(usize, PieceSpot),
    SlideOver(PieceSpot),
    Release {
        piece: usize,
        pos: Vec3,
        spot: PieceSpot,
        kind: Piece,
    },
    Press {
        move_index: Option<usize>,
    },
}

struct Way {
    dt: f64,
    palm: Option<Vec3>,
    ev: Ev,
}

struct Planner<'a> {
    layout: &'a TableLayout,
    heights: [f32; 6],
    pieces: Vec<PieceTrack>,
    on_square: [[Option<usize>; 64]; 2],
    /// Pocket slots by board, side.
    slots: [[Vec<Slot>; 2]; 2],
    landed: Vec<f64>,
    hands: [[HandTrack; 2]; 2],
    presses: Vec<ClockPress>,
    clocks: [[f64; 2]; 2],
    last_press: [f64; 2],
    rng: SimRng,
    jitter_m: f32,
    jitter_turn: f32,
}

fn dist(a: Vec3, b: Vec3) -> f64 {
    (a - b).length() as f64
}

impl<'a> Planner<'a> {
    fn height(&self, p: usize) -> f32 {
        self.heights[self.pieces[p].last().piece.kind.index()]
    }

    fn pos(&self, p: usize) -> Vec3 {
        self.pieces[p].last().pos
    }

    fn facing_turn(&self, b: usize, side: Side, pocket: bool) -> f32 {
        // Meshes face +y; a piece faces the opponent, a pocket piece faces its owner's board.
        let toward_far = if pocket {
            self.layout.sits_near(b, side)
        } else {
            let (_, rank) = self.layout.board_axes(b);
            (rank.y > 0.0) == (side == Side::White)
        };
        if toward_far {
            0.0
        } else {
            std::f32::consts::PI
        }
    }

    fn square_pose(&mut self, b: usize, index: usize, side: Side) -> (Vec3, f32) {
        let off = Vec3::new(
            self.rng.sym(self.jitter_m),
            self.rng.sym(self.jitter_m),
            0.0,
        );
        let turn = self.facing_turn(b, side, false) + self.rng.sym(self.jitter_turn);
        (self.layout.square_centre(b, index) + off, turn)
    }

    fn slot_pose(&mut self, b: usize, side: Side, slot: usize) -> (Vec3, f32) {
        let n = self.slots[b][side as usize].len().max(POCKET_SLOTS);
        let off = Vec3::new(self.rng.sym(0.004), self.rng.sym(0.004), 0.0);
        let turn = self.facing_turn(b, side, true) + self.rng.sym(0.3);
        (self.layout.pocket_slot(b, side, slot, n) + off, turn)
    }

    /// A free pocket slot of (b, side) by time `t`; grows the zone when all are taken.
    fn take_slot(&mut self, b: usize, side: Side, piece: usize, t: f64) -> usize {
        let slots = &mut self.slots[b][side as usize];
        let i = match slots
            .iter()
            .position(|s| s.piece.is_none() && s.free_at <= t)
        {
            Some(i) => i,
            None => {
                slots.push(Slot {
                    piece: None,
                    free_at: 0.0,
                });
                slots.len() - 1
            }
        };
        slots[i].piece = Some(piece);
        i
    }

    fn button(&self, b: usize, side: Side) -> Vec3 {
        let [_, cl, ch] = self.layout.clock_size;
        let s = if self.layout.sits_near(b, side) {
            -1.0
        } else {
            1.0
        };
        self.layout.clock_position(b) + Vec3::new(0.0, s * cl * 0.28, ch + 0.008)
    }

    fn grip(&self, p: usize, at: Vec3) -> Vec3 {
        at + Vec3::new(0.0, 0.0, self.height(p) + GRIP)
    }

    /// Ways of picking up piece `p` (the hand comes from `from`).
    fn grab(&self, ways: &mut Vec<Way>, from: Vec3, p: usize) -> Vec3 {
        let at = self.grip(p, self.pos(p));
        ways.push(Way {
            dt: 0.15 + 0.5 * dist(from, at).min(0.8),
            palm: Some(at),
            ev: Ev::Grab(p),
        });
        let up = at + Vec3::new(0.0, 0.0, LIFT);
        ways.push(Way {
            dt: 0.15,
            palm: Some(up),
            ev: Ev::None,
        });
        up
    }

    /// Ways of carrying the grasped `p` to `to` and putting it down as `kind` at `spot`.
    fn put(
        &self,
        ways: &mut Vec<Way>,
        from: Vec3,
        p: usize,
        to: Vec3,
        spot: PieceSpot,
        kind: Piece,
    ) -> Vec3 {
        let h = self.heights[kind.kind.index()].max(self.height(p));
        let above = to + Vec3::new(0.0, 0.0, h + GRIP + LIFT);
        ways.push(Way {
            dt: 0.2 + 0.6 * dist(from, above).min(1.2),
            palm: Some(above),
            ev: Ev::None,
        });
        let down = to + Vec3::new(0.0, 0.0, h + GRIP);
        ways.push(Way {
            dt: 0.15,
            palm: Some(down),
            ev: Ev::Release {
                piece: p,
                pos: to,
                spot,
                kind,
            },
        });
        down
    }

    fn press(&self, ways: &mut Vec<Way>, from: Vec3, b: usize, side: Side, mi: Option<usize>) {
        let btn = self.button(b, side);
        let above = btn + Vec3::new(0.0, 0.0, 0.035);
        ways.push(Way {
            dt: 0.15 + 0.4 * dist(from, above).min(1.0),
            palm: Some(above),
            ev: Ev::None,
        });
        ways.push(Way {
            dt: 0.1,
            palm: Some(btn + Vec3::new(0.0, 0.0, 0.012)),
            ev: Ev::Press { move_index: mi },
        });
    }

    /// Plays `ways` with the player's hand. With a `deadline` the ways up to the last press
    /// are compressed (never stretched) to end exactly then and start no earlier than
    /// `earliest`; without one they start at `earliest`. Ways after the last press keep their
    /// pace. Returns the time each way ends.
    fn perform(
        &mut self,
        b: usize,
        side: Side,
        ways: Vec<Way>,
        earliest: f64,
        deadline: Option<f64>,
    ) -> Vec<f64> {
        let last_press = ways.iter().rposition(|w| matches!(w.ev, Ev::Press { .. }));
        let scaled_len = last_press.map_or(0, |i| i + 1);
        let p: f64 = ways[..scaled_len].iter().map(|w| w.dt).sum();
        let (start, k) = match deadline {
            Some(d) => {
                let avail = (d - earliest).max(0.0);
                let k = if p > avail { avail / p } else { 1.0 };
                (d - p * k, k)
            }
            None => (earliest, 1.0),
        };
        let hi = side as usize;
        self.hands[b][hi].cut_at(start);
        self.hands[b][hi].push(start, self.hands[b][hi].palm(start));
        let mut held: Vec<(usize, Vec3, PieceSpot)> = Vec::new();
        let mut t = start;
        let mut times = Vec::with_capacity(ways.len());
        for (i, w) in ways.into_iter().enumerate() {
            t += w.dt * if i < scaled_len { k } else { 1.0 };
            if let (Some(d), Some(lp)) = (deadline, last_press)
                && i == lp
            {
                t = d;
            }
            self.hands[b][hi].push(t, w.palm);
            let palm = w.palm.unwrap_or(self.hands[b][hi].entry);
            match w.ev {
                Ev::Grab(p) | Ev::GrabSlide(p, _) => {
                    let last = self.pieces[p].last();
                    let spot = match w.ev {
                        Ev::GrabSlide(_, s) => s,
                        _ => PieceSpot::InHand,
                    };
                    self.pieces[p].push(PieceKey { t, spot, ..last });
                    if let PieceSpot::Pocket { board, side, slot } = last.spot {
                        // Only the slot it leaves: a slot it is planned to return to stays taken.
                        let s = &mut self.slots[board][side as usize][slot];
                        if s.piece == Some(p) {
                            s.piece = None;
                            s.free_at = t;
                        }
                    }
                    held.push((p, palm - last.pos, spot));
                }
                Ev::SlideOver(spot) => {
                    for h in &mut held {
                        h.2 = spot;
                    }
                }
                Ev::Release {
                    piece,
                    pos,
                    spot,
                    kind,
                } => {
                    held.retain(|h| h.0 != piece);
                    let turn = self.pieces[piece].last().turn;
                    let turn = match spot {
                        PieceSpot::Square { .. } | PieceSpot::Pocket { .. } => {
                            self.turn_for(piece, spot, kind, turn)
                        }
                        PieceSpot::InHand => turn,
                    };
                    self.pieces[piece].push(PieceKey {
                        t,
                        pos,
                        turn,
                        spot,
                        piece: kind,
                    });
                    self.landed[piece] = t;
                }
                Ev::Press { move_index } => {
                    let c = side as usize;
                    if move_index.is_none() {
                        // An extra press: the mover's clock ran since the board's last press.
                        self.clocks[b][c] = (self.clocks[b][c] - (t - self.last_press[b])).max(0.0);
                    }
                    self.last_press[b] = t;
                    self.presses.push(ClockPress {
                        ts_ms: ms(t),
                        board: board_name(b),
                        color: side,
                        white_ms: ms(self.clocks[b][0]),
                        black_ms: ms(self.clocks[b][1]),
                        move_index,
                    });
                }
                Ev::None => {}
            }
            if !matches!(w.ev, Ev::Release { .. } | Ev::Grab(_) | Ev::GrabSlide(..)) {
                for &(p, off, spot) in &held {
                    let last = self.pieces[p].last();
                    self.pieces[p].push(PieceKey {
                        t,
                        pos: palm - off,
                        spot,
                        ..last
                    });
                }
            }
            times.push(t);
        }
        times
    }

    fn turn_for(&mut self, _p: usize, spot: PieceSpot, kind: Piece, _old: f32) -> f32 {
        match spot {
            PieceSpot::Square { board, .. } => {
                self.facing_turn(board, kind.side, false) + self.rng.sym(self.jitter_turn)
            }
            PieceSpot::Pocket { board, side, .. } => {
                self.facing_turn(board, side, true) + self.rng.sym(0.3)
            }
            PieceSpot::InHand => 0.0,
        }
    }

    fn hand_rest(&self, b: usize, side: Side) -> Vec3 {
        self.hands[b][side as usize].entry
    }

    fn piece_on(&self, b: usize, sq: Square) -> Result<usize, SimError> {
        self.on_square[b][sq.index()]
            .ok_or_else(|| SimError::Config(format!("no physical piece on {sq} of board {b}")))
    }

    /// Ways (after the press at `press`) of taking a piece out of (b, side)'s own pocket zone,
    /// holding it off the table for `delay` s and putting it back into the zone. The piece
    /// is the one standing there longest (failing that the first to arrive, waited for), not
    /// the piece this move drops (its slot is freed only when the ways are performed);
    /// returns the index of the grabbing way.
    fn hide_own_piece(
        &mut self,
        ways: &mut Vec<Way>,
        b: usize,
        side: Side,
        press: f64,
        delay: f64,
        dropped: Option<usize>,
    ) -> Result<usize, SimError> {
        let p = self.slots[b][side as usize]
            .iter()
            .filter_map(|s| s.piece)
            .filter(|&p| Some(p) != dropped)
            .min_by(|&x, &y| {
                let late = |p: usize| (self.landed[p] - press).max(0.0);
                late(x)
                    .total_cmp(&late(y))
                    .then(self.landed[x].total_cmp(&self.landed[y]))
            })
            .ok_or_else(|| {
                SimError::Config(format!(
                    "hidden-pocket: no piece stands in the pocket of board {b} to hide"
                ))
            })?;
        let wait = self.landed[p] + 0.2 - press;
        let from = self.button(b, side);
        if wait > 0.0 {
            ways.push(Way {
                dt: wait,
                palm: Some(from + Vec3::new(0.0, 0.0, 0.05)),
                ev: Ev::None,
            });
        }
        let grab = ways.len();
        self.grab(ways, from, p);
        // Off the table with the piece (a hand in the lap): the board stays calm meanwhile.
        ways.push(Way {
            dt: RETRACT,
            palm: None,
            ev: Ev::None,
        });
        ways.push(Way {
            dt: delay,
            palm: None,
            ev: Ev::None,
        });
        let kind = self.pieces[p].last().piece;
        let back = press + wait.max(0.0) + delay + 1.0;
        let slot = self.take_slot(b, side, p, back);
        let (at, _) = self.slot_pose(b, side, slot);
        let entry = self.hand_rest(b, side);
        self.put(
            ways,
            entry,
            p,
            at,
            PieceSpot::Pocket {
                board: b,
                side,
                slot,
            },
            kind,
        );
        Ok(grab)
    }

    /// A physical piece of `kind` in (b, side)'s pocket, the earliest landed first; failing
    /// that one lying off the zones (a late handover).
    fn pocket_piece(&self, b: usize, side: Side, kind: Piece) -> Result<usize, SimError> {
        let from_slots = self.slots[b][side as usize]
            .iter()
            .filter_map(|s| s.piece)
            .filter(|&p| self.pieces[p].last().piece == kind)
            .min_by(|&x, &y| self.landed[x].total_cmp(&self.landed[y]));
        from_slots
            .or_else(|| {
                (0..self.pieces.len()).find(|&p| {
                    let k = self.pieces[p].last();
                    k.piece == kind && k.spot == PieceSpot::InHand
                })
            })
            .ok_or_else(|| {
                SimError::Config(format!(
                    "no {} in the pocket of board {b} to drop",
                    kind.fen_char()
                ))
            })
    }
}

/// Builds the animated timeline of a game.
pub fn plan_game(
    game: &BpgnGame,
    layout: &TableLayout,
    piece_heights: [f32; 6],
    requests: &[IncidentRequest],
    seed: u64,
    max_seconds: Option<f64>,
) -> Result<GamePlan, SimError> {
    let v = Variant::fics();
    let mut moves = time_moves(game, &v)?;
    if let Some(limit) = max_seconds {
        // Incidents are chosen among the moves the render covers.
        let keep = moves.iter().take_while(|m| m.press <= limit).count();
        moves.truncate(keep);
    }
    let mut mods: Vec<MoveMods> = vec![MoveMods::default(); moves.len()];
    let mut incidents: Vec<Incident> = Vec::new();
    // A drop-mate ends the game, so it is placed first and the others among what is left.
    let mut ordered: Vec<&IncidentRequest> = requests.iter().collect();
    ordered.sort_by_key(|r| r.kind != IncidentKind::DropMate);
    for r in ordered {
        choose_incident(r, &mut moves, &mut mods, &mut incidents, &v)?;
    }
    let start = match moves.first() {
        Some(m) => m.before.clone(),
        None => match game.start_fen() {
            Some(f) => Table::from_fen(f).map_err(|e| SimError::Fen(e.to_string()))?,
            None => Table::new(),
        },
    };
    let base = game.time_control().map_or(120.0, |t| t.base_secs as f64);
    let root = SimRng::new(seed).fork(0x6A3E);
    let hand = |b: usize, side: Side| {
        let near = layout.sits_near(b, side);
        let s = if near { -1.0 } else { 1.0 };
        let cx = layout.board_centre(b).x;
        let edge = layout.table_size[1] * 0.5;
        HandTrack::new(
            Vec3::new(
                cx + 0.18 * if b == 0 { -1.0 } else { 1.0 },
                s * (edge + 0.3),
                0.3,
            ),
            Vec3::new(cx, s * (edge + 0.12), 0.12),
        )
    };
    let mut pl = Planner {
        layout,
        heights: piece_heights,
        pieces: Vec::new(),
        on_square: [[None; 64]; 2],
        slots: std::array::from_fn(|_| {
            std::array::from_fn(|_| {
                vec![
                    Slot {
                        piece: None,
                        free_at: 0.0
                    };
                    POCKET_SLOTS
                ]
            })
        }),
        landed: Vec::new(),
        hands: [
            [hand(0, Side::White), hand(0, Side::Black)],
            [hand(1, Side::White), hand(1, Side::Black)],
        ],
        presses: Vec::new(),
        clocks: [[base; 2]; 2],
        last_press: [0.0; 2],
        rng: root.fork(1),
        jitter_m: 0.004,
        jitter_turn: 0.25,
    };
    // The starting position: one physical piece per engine piece.
    for b in 0..2 {
        let pos = start.board(eboard(b));
        for sq in Square::all() {
            if let Some(p) = pos.piece_at(sq) {
                let piece = sim_piece(p);
                let (at, turn) = pl.square_pose(b, sq.index(), piece.side);
                pl.pieces.push(PieceTrack::new(PieceKey {
                    t: 0.0,
                    pos: at,
                    turn,
                    spot: PieceSpot::Square {
                        board: b,
                        index: sq.index(),
                    },
                    piece,
                }));
                pl.landed.push(0.0);
                pl.on_square[b][sq.index()] = Some(pl.pieces.len() - 1);
            }
        }
        for c in Color::ALL {
            for role in Role::ALL {
                for _ in 0..pos.pocket(c).count(role) {
                    let piece = sim_piece(engine::Piece { color: c, role });
                    let id = pl.pieces.len();
                    let slot = pl.take_slot(b, piece.side, id, 0.0);
                    let (at, turn) = pl.slot_pose(b, piece.side, slot);
                    pl.pieces.push(PieceTrack::new(PieceKey {
                        t: 0.0,
                        pos: at,
                        turn,
                        spot: PieceSpot::Pocket {
                            board: b,
                            side: piece.side,
                            slot,
                        },
                        piece,
                    }));
                    pl.landed.push(0.0);
                }
            }
        }
    }

    let mut deferred: Vec<(usize, f64, usize, f64)> = Vec::new(); // (move, start, piece, delay)
    for (i, m) in moves.iter().enumerate() {
        let b = m.board;
        let side = m.side;
        let md = &mods[i];
        let mut earliest = pl.last_press[b];
        let mut ways = Vec::new();
        let mut palm = pl.hand_rest(b, side);
        let mut spans: Vec<(usize, usize)> = Vec::new(); // way index ranges for the incident
        if let Some((from, to)) = md.illegal {
            let k = pl.piece_on(b, from)?;
            let a = ways.len();
            palm = pl.grab(&mut ways, palm, k);
            let kind = pl.pieces[k].last().piece;
            let (at, _) = pl.square_pose(b, to.index(), side);
            let spot = PieceSpot::Square {
                board: b,
                index: to.index(),
            };
            palm = pl.put(&mut ways, palm, k, at, spot, kind);
            pl.press(&mut ways, palm, b, side, None);
            palm = pl.button(b, side);
            // The opponent objects; the mover takes the king back.
            ways.push(Way {
                dt: 0.8,
                palm: Some(palm + Vec3::new(0.0, 0.0, 0.05)),
                ev: Ev::None,
            });
            let home = pl.pos(k);
            let grip_at = at + Vec3::new(0.0, 0.0, pl.height(k) + GRIP);
            ways.push(Way {
                dt: 0.3,
                palm: Some(grip_at),
                ev: Ev::Grab(k),
            });
            ways.push(Way {
                dt: 0.12,
                palm: Some(grip_at + Vec3::new(0.0, 0.0, LIFT)),
                ev: Ev::None,
            });
            palm = pl.put(
                &mut ways,
                grip_at,
                k,
                home,
                PieceSpot::Square {
                    board: b,
                    index: from.index(),
                },
                kind,
            );
            spans.push((a, ways.len() - 1));
        }
        // The move itself.
        let captured_sq = match m.mv {
            Move::Normal {
                capture: Some(_),
                to,
                ..
            } => Some(to),
            Move::EnPassant { from, to } => Square::from_coords(to.file(), from.rank()),
            _ => None,
        };
        let captured = match captured_sq {
            Some(sq) => Some(pl.piece_on(b, sq)?),
            None => None,
        };
        if let Some(c) = captured {
            palm = pl.grab(&mut ways, palm, c);
        }
        let mut moved: Vec<(usize, Square, Square, Piece)> = Vec::new();
        let mut dropped = None;
        match m.mv {
            Move::Normal {
                from,
                to,
                promotion,
                ..
            } => {
                let p = pl.piece_on(b, from)?;
                let kind = match promotion {
                    Some(r) => sim_piece(engine::Piece {
                        color: if side == Side::White {
                            Color::White
                        } else {
                            Color::Black
                        },
                        role: r,
                    }),
                    None => pl.pieces[p].last().piece,
                };
                moved.push((p, from, to, kind));
            }
            Move::EnPassant { from, to } => {
                let p = pl.piece_on(b, from)?;
                moved.push((p, from, to, pl.pieces[p].last().piece));
            }
            Move::Castle { king, rook } => {
                let (kf, rf) = if rook.file() > king.file() {
                    (6, 5)
                } else {
                    (2, 3)
                };
                let kt = Square::from_coords(kf, king.rank()).expect("castling stays on its rank");
                let rt = Square::from_coords(rf, king.rank()).expect("castling stays on its rank");
                let kp = pl.piece_on(b, king)?;
                let rp = pl.piece_on(b, rook)?;
                moved.push((kp, king, kt, pl.pieces[kp].last().piece));
                moved.push((rp, rook, rt, pl.pieces[rp].last().piece));
            }
            Move::Drop { role, to } => {
                let kind = sim_piece(engine::Piece {
                    color: if side == Side::White {
                        Color::White
                    } else {
                        Color::Black
                    },
                    role,
                });
                let p = pl.pocket_piece(b, side, kind)?;
                dropped = Some(p);
                earliest = earliest.max(pl.landed[p]);
                palm = pl.grab(&mut ways, palm, p);
                let (at, _) = pl.square_pose(b, to.index(), side);
                palm = pl.put(
                    &mut ways,
                    palm,
                    p,
                    at,
                    PieceSpot::Square {
                        board: b,
                        index: to.index(),
                    },
                    kind,
                );
                pl.on_square[b][to.index()] = Some(p);
            }
            Move::Steal { .. } => {
                return Err(SimError::Config(format!(
                    "move {i} ({}): steal promotions are not animated",
                    m.san
                )));
            }
        }
        for &(p, from, to, kind) in &moved {
            let a = ways.len();
            let (at, _) = pl.square_pose(b, to.index(), side);
            let spot = PieceSpot::Square {
                board: b,
                index: to.index(),
            };
            if md.slide {
                let start = pl.grip(p, pl.pos(p));
                ways.push(Way {
                    dt: 0.15 + 0.5 * dist(palm, start).min(0.8),
                    palm: Some(start),
                    ev: Ev::GrabSlide(
                        p,
                        PieceSpot::Square {
                            board: b,
                            index: from.index(),
                        },
                    ),
                });
                let (df, dr) = (
                    to.file() as i32 - from.file() as i32,
                    to.rank() as i32 - from.rank() as i32,
                );
                let n = df.abs().max(dr.abs());
                for s in 1..n {
                    let f = from.file() as i32 + df.signum() * s;
                    let r = from.rank() as i32 + dr.signum() * s;
                    let idx = (r * 8 + f) as usize;
                    let c = pl.layout.square_centre(b, idx);
                    ways.push(Way {
                        dt: 0.18,
                        palm: Some(pl.grip(p, c)),
                        ev: Ev::SlideOver(PieceSpot::Square {
                            board: b,
                            index: idx,
                        }),
                    });
                }
                let end = pl.grip(p, at);
                ways.push(Way {
                    dt: 0.18,
                    palm: Some(end),
                    ev: Ev::Release {
                        piece: p,
                        pos: at,
                        spot,
                        kind,
                    },
                });
                palm = end;
                spans.push((a, ways.len() - 1));
            } else {
                palm = pl.grab(&mut ways, palm, p);
                palm = pl.put(&mut ways, palm, p, at, spot, kind);
            }
        }
        for &(p, from, to, _) in &moved {
            if pl.on_square[b][from.index()] == Some(p) {
                pl.on_square[b][from.index()] = None;
            }
            let _ = to;
        }
        for &(p, _, to, _) in &moved {
            pl.on_square[b][to.index()] = Some(p);
        }
        if let Some(sq) = captured_sq
            && captured_sq != moved.first().map(|x| x.2)
        {
            pl.on_square[b][sq.index()] = None;
        }
        // The captured piece: to the partner's pocket now, later, or after a while in the hand.
        let mut after_press: Vec<Way> = Vec::new();
        if let (Some(c), Some(cap)) = (captured, m.outcome.captured) {
            let kind = sim_piece(cap);
            let ob = 1 - b;
            let handover = md.handover.unwrap_or(Handover::Direct);
            match handover {
                Handover::Direct => {
                    let slot = pl.take_slot(ob, kind.side, c, m.press);
                    let (at, _) = pl.slot_pose(ob, kind.side, slot);
                    palm = pl.put(
                        &mut ways,
                        palm,
                        c,
                        at,
                        PieceSpot::Pocket {
                            board: ob,
                            side: kind.side,
                            slot,
                        },
                        kind,
                    );
                }
                Handover::Late { delay } => {
                    // Beside the capturer's board, at the capturer's edge, outside every zone.
                    let s = if layout.sits_near(b, side) { -1.0 } else { 1.0 };
                    let cx = layout.board_centre(b).x;
                    let gap = layout.board_half() + layout.board_gap * 0.5;
                    let x = cx + if b == 0 { gap * 0.35 } else { -gap * 0.35 };
                    let at = Vec3::new(x, s * (layout.board_half() + 0.06), 0.0);
                    let a = ways.len();
                    palm = pl.put(&mut ways, palm, c, at, PieceSpot::InHand, kind);
                    spans.push((a, a));
                    deferred.push((i, m.press + delay, c, delay));
                }
            }
        }
        pl.press(&mut ways, palm, b, side, Some(i));
        let hide_grab = match md.hide {
            Some(delay) => {
                Some(pl.hide_own_piece(&mut after_press, b, side, m.press, delay, dropped)?)
            }
            None => None,
        };
        pl.clocks[b] = m.remaining;
        let press_way = ways.len() - 1;
        let n_after = after_press.len();
        ways.extend(after_press);
        ways.push(Way {
            dt: RETRACT,
            palm: None,
            ev: Ev::None,
        });
        let times = pl.perform(b, side, ways, earliest, Some(m.press));
        if let Some(ix) = md.incident {
            let inc = &mut incidents[ix];
            let last = times.len() - 1;
            inc.ts_ms = match inc.kind {
                IncidentKind::HiddenPocket => {
                    // From taking the piece out of the zone until it stands there again.
                    let grab = press_way + 1 + hide_grab.unwrap_or(0);
                    [ms(times[grab]), ms(times[press_way + n_after])]
                }
                IncidentKind::MissingHandover => {
                    let t = spans.first().map_or(times[press_way], |s| times[s.0 + 1]);
                    [ms(t), ms(t)]
                }
                _ => match (spans.first(), spans.last()) {
                    (Some(f), Some(l)) => [ms(times[f.0]), ms(times[l.1.min(last)])],
                    _ => [ms(times[press_way]); 2],
                },
            };
        }
        // A late handover: the capturer comes back for the piece once the delay is over.
        if let Some(&(mi, at_t, c, _)) = deferred.iter().find(|d| d.0 == i) {
            let kind = pl.pieces[c].last().piece;
            let ob = 1 - b;
            let mut w2 = Vec::new();
            let rest = pl.hand_rest(b, side);
            let p2 = pl.grab(&mut w2, rest, c);
            let slot = pl.take_slot(ob, kind.side, c, at_t);
            let (at, _) = pl.slot_pose(ob, kind.side, slot);
            pl.put(
                &mut w2,
                p2,
                c,
                at,
                PieceSpot::Pocket {
                    board: ob,
                    side: kind.side,
                    slot,
                },
                kind,
            );
            w2.push(Way {
                dt: RETRACT,
                palm: None,
                ev: Ev::None,
            });
            let n2 = w2.len();
            let times2 = pl.perform(b, side, w2, at_t, None);
            if let Some(ix) = mods[mi].incident {
                incidents[ix].ts_ms[1] = ms(times2[n2 - 2]);
            }
        }
    }
    let last_press = moves.last().map_or(0.0, |m| m.press);
    let mut duration = last_press + 1.5;
    for h in pl.hands.iter().flatten() {
        duration = duration.max(h.end() + 0.2);
    }
    if let Some(limit) = max_seconds {
        duration = duration.min(limit.max(0.1));
    }
    let mut presses = pl.presses;
    presses.sort_by_key(|p| p.ts_ms);
    Ok(GamePlan {
        layout: layout.clone(),
        moves,
        pieces: pl.pieces,
        hands: pl.hands,
        presses,
        incidents,
        duration,
    })
}

/// Seconds until the mover's next move on the same board would start its hand (conservative).
fn free_after(moves: &[TimedMove], i: usize) -> f64 {
    let m = &moves[i];
    moves[i + 1..]
        .iter()
        .find(|n| n.board == m.board && n.side == m.side)
        .map_or(f64::INFINITY, |n| n.press - 1.6 - m.press)
}

/// Whether the captured piece of move `i` is dropped by the partner within `window` seconds.
fn partner_drops_soon(moves: &[TimedMove], i: usize, window: f64) -> bool {
    let m = &moves[i];
    let Some(cap) = m.outcome.captured else {
        return false;
    };
    moves[i + 1..].iter().any(|n| {
        n.board != m.board
            && n.press <= m.press + window + 1.5
            && matches!(n.mv, Move::Drop { role, .. } if role == cap.role)
            && side_of(cap.color) == n.side
    })
}

fn choose_incident(
    r: &IncidentRequest,
    moves: &mut Vec<TimedMove>,
    mods: &mut Vec<MoveMods>,
    incidents: &mut Vec<Incident>,
    v: &Variant,
) -> Result<(), SimError> {
    let n = moves.len();
    let taken = |mods: &Vec<MoveMods>, i: usize| mods[i].incident.is_some();
    let mut record = |i: usize, mods: &mut Vec<MoveMods>, moves: &Vec<TimedMove>, desc: String| {
        mods[i].incident = Some(incidents.len());
        incidents.push(Incident {
            kind: r.kind,
            move_index: i,
            board: board_name(moves[i].board),
            san: moves[i].san.clone(),
            description: desc,
            ts_ms: [0, 0],
            frames: [0, 0],
        });
    };
    let none = || {
        SimError::Config(format!(
            "no move at or after index {} is eligible for `{}`",
            r.at_move,
            r.kind.name()
        ))
    };
    match r.kind {
        IncidentKind::Slide => {
            let i = (r.at_move..n)
                .find(|&i| {
                    !taken(mods, i)
                        && matches!(moves[i].mv, Move::Normal { role: Role::Bishop | Role::Rook | Role::Queen, from, to, .. }
                            if (from.file() as i32 - to.file() as i32).abs().max((from.rank() as i32 - to.rank() as i32).abs()) >= 2)
                })
                .ok_or_else(none)?;
            mods[i].slide = true;
            record(
                i,
                mods,
                moves,
                format!(
                    "{} slid across the squares in between instead of lifted",
                    moves[i].san
                ),
            );
        }
        IncidentKind::HiddenPocket => {
            // Long enough to outlast the tracker's 3-s pocket grace with room to spare.
            let want: f64 = 6.0;
            let mut best: Option<(usize, f64)> = None;
            for i in r.at_move..n {
                if taken(mods, i) || mods[i].slide {
                    continue;
                }
                let m = &moves[i];
                let after = match moves.get(i + 1) {
                    Some(next) => next.before.clone(),
                    None => {
                        let mut t = m.before.clone();
                        t.play(eboard(m.board), m.mv, v)
                            .map_err(|e| SimError::Config(e.to_string()))?;
                        t
                    }
                };
                let color = if m.side == Side::White {
                    Color::White
                } else {
                    Color::Black
                };
                if after.board(eboard(m.board)).pocket(color).is_empty() {
                    continue;
                }
                // Fetching, holding out of sight and putting back take ~2.2 s besides the delay.
                let gap = free_after(moves, i) - 2.2;
                if gap < 1.0 {
                    continue;
                }
                if best.is_none_or(|(_, g)| gap > g) {
                    best = Some((i, gap));
                }
                if gap >= want {
                    break;
                }
            }
            let (i, gap) = best.ok_or_else(none)?;
            let delay = gap.min(want);
            mods[i].hide = Some(delay);
            record(
                i,
                mods,
                moves,
                format!(
                    "after the press the mover keeps a piece of his own pocket in his hand, out of sight, for {delay:.1} s"
                ),
            );
        }
        IncidentKind::MissingHandover => {
            let want: f64 = 4.0;
            let mut best: Option<(usize, f64)> = None;
            for i in r.at_move..n {
                if taken(mods, i) || moves[i].outcome.captured.is_none() || mods[i].slide {
                    continue;
                }
                // The late handover itself takes about 1.2 s of the capturer's free time.
                let gap = free_after(moves, i) - 1.2;
                if gap < 1.0 || partner_drops_soon(moves, i, want.min(gap)) {
                    continue;
                }
                if best.is_none_or(|(_, g)| gap > g) {
                    best = Some((i, gap));
                }
                if gap >= want {
                    best = Some((i, gap));
                    break;
                }
            }
            let (i, gap) = best.ok_or_else(none)?;
            let delay = gap.min(want);
            let cap = moves[i].outcome.captured.map(|p| p.char()).unwrap_or('?');
            mods[i].handover = Some(Handover::Late { delay });
            record(
                i,
                mods,
                moves,
                format!(
                    "captured {cap} left beside the board for {delay:.1} s before it reaches the partner's pocket"
                ),
            );
        }
        IncidentKind::IllegalMove => {
            let mut found = None;
            for i in r.at_move..n {
                if taken(mods, i) || mods[i].slide {
                    continue;
                }
                let m = &moves[i];
                let prev = moves[..i]
                    .iter()
                    .rev()
                    .find(|p| p.board == m.board)
                    .map_or(0.0, |p| p.press);
                if m.press - prev < 4.0 {
                    continue;
                }
                let pos = m.before.board(eboard(m.board));
                let Some(k) = pos.king_of(pos.turn()) else {
                    continue;
                };
                for df in -1i32..=1 {
                    for dr in -1i32..=1 {
                        let (f, rk) = (k.file() as i32 + df, k.rank() as i32 + dr);
                        if (df, dr) == (0, 0) || !(0..8).contains(&f) || !(0..8).contains(&rk) {
                            continue;
                        }
                        let to = Square::from_coords(f as u8, rk as u8).expect("on the board");
                        if pos.piece_at(to).is_some() {
                            continue;
                        }
                        let mv = Move::Normal {
                            role: Role::King,
                            from: k,
                            to,
                            capture: None,
                            promotion: None,
                        };
                        if m.before.classify(eboard(m.board), mv, v).is_err() && found.is_none() {
                            found = Some((i, k, to));
                        }
                    }
                }
                if found.is_some() {
                    break;
                }
            }
            let (i, k, to) = found.ok_or_else(none)?;
            mods[i].illegal = Some((k, to));
            record(
                i,
                mods,
                moves,
                format!(
                    "king {k}-{to} into check, clock pressed, taken back, then {} played",
                    moves[i].san
                ),
            );
        }
        IncidentKind::DropMate => {
            let mut found = None;
            'search: for i in r.at_move..n {
                if mods[i..].iter().any(|x| x.incident.is_some()) {
                    break;
                }
                let m = &moves[i];
                let eb = eboard(m.board);
                let pos = m.before.board(eb);
                let turn = pos.turn();
                for role in Role::ALL {
                    if role == Role::King || pos.pocket(turn).count(role) == 0 {
                        continue;
                    }
                    for to in Square::all() {
                        if pos.piece_at(to).is_some() {
                            continue;
                        }
                        let mv = Move::Drop { role, to };
                        if m.before.classify(eb, mv, v).is_err() {
                            continue;
                        }
                        let mut t = m.before.clone();
                        if t.play(eb, mv, v).is_ok() && t.is_checkmate(eb, v) {
                            found = Some((i, mv, t.clone()));
                            break 'search;
                        }
                    }
                }
            }
            let (i, mv, _) = found.ok_or_else(none)?;
            let m = &mut moves[i];
            let played = m.san.clone();
            m.san = m.before.san(eboard(m.board), mv, v);
            let mut t = m.before.clone();
            m.outcome = t
                .play(eboard(m.board), mv, v)
                .map_err(|e| SimError::Config(e.to_string()))?;
            m.mv = mv;
            moves.truncate(i + 1);
            mods.truncate(i + 1);
            let desc = if played == moves[i].san {
                format!(
                    "{} mates (the game's own move); the render ends with it",
                    moves[i].san
                )
            } else {
                format!(
                    "{} mates instead of the game's {played}; the render ends with it",
                    moves[i].san
                )
            };
            record(i, mods, moves, desc);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incident_requests_parse_with_and_without_move() {
        let r: IncidentRequest = "slide@12".parse().unwrap();
        assert_eq!((r.kind, r.at_move), (IncidentKind::Slide, 12));
        let r: IncidentRequest = "drop-mate".parse().unwrap();
        assert_eq!((r.kind, r.at_move), (IncidentKind::DropMate, 0));
        assert!("teleport".parse::<IncidentRequest>().is_err());
        assert!("slide@x".parse::<IncidentRequest>().is_err());
        for k in IncidentKind::ALL {
            assert_eq!(k.name().parse::<IncidentRequest>().unwrap().kind, k);
        }
    }

    #[test]
    fn presses_without_clock_comments_fall_back_to_fixed_thinking_time() {
        let text = b"[Event \"x\"]\n1A. e4 1a. e5 1B. d4\n*\n";
        let game = crate::engine::bpgn::parse_bpgn(text).unwrap().remove(0);
        let moves = time_moves(&game, &Variant::fics()).unwrap();
        assert_eq!(moves.len(), 3);
        assert!((moves[0].press - DEFAULT_THINK).abs() < 1e-9);
        assert!((moves[1].press - 2.0 * DEFAULT_THINK).abs() < 1e-9);
        // Board B runs on its own clock from t = 0.
        assert!((moves[2].press - DEFAULT_THINK).abs() < 1e-9);
    }
}
