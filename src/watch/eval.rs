//! `tandem eval game` and `tandem eval motion`: a watched simulated game against its truth.
//!
//! Moves are scored per board as the longest common subsequence of committed and true moves
//! over the longer of the two (one missed move costs one move). Incidents: an injected
//! `illegal-move` is detected by an `illegal_move` event, `missing-handover` by
//! `handover_missing`, `hidden-pocket` by `hidden_pocket`, each on the incident's board between
//! its start and its end + pocket grace + 1 s (an illegal move: until 2 s after the press of
//! the move played instead, see `incident_window`). False alerts: `desync` (lost), and `illegal_move`
//! or pocket alerts that match no injected incident. Latency: wall time of the `press` or
//! `frame` call that returned a move event (motion, reading and tracking; JPEG decoding is
//! reported separately as `decode_ms`).

use std::path::Path;
use std::time::Instant;

use image::RgbImage;
use serde::Serialize;

use crate::engine::{BoardId, Color, Position, Square};
use crate::rules::{DesyncState, Event, EventBody, MoveReading, RuleSet};
use crate::tracker::eval::{ReadingScore, lcs, standing_readings, ucis};
use crate::tracker::{Decision, PocketReading, SquareClass};
use crate::vision::evaluate::{ReadingSummary, Tally};
use crate::vision::{Calibration, CalibrationConfig, Point};

use super::frames::{ClockFeed, ClockPress, FrameFile};
use super::simgame::{SimGameDir, board_of, placement_classes, pocket_counts};
use super::{
    FrameStats, TableReader, TableReading, WatchConfig, WatchError, Watcher, new_tracker,
    pockets_out_of_view,
};

/// Loads and decodes one frame.
pub fn load_frame(path: &Path) -> Result<RgbImage, WatchError> {
    crate::vision::load_frame(path).map_err(|e| WatchError::file(path, e))
}

/// How the calibration of an evaluated game was obtained.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CalibrationUsed {
    /// `"detected"`, or `"truth"` when detection failed or disagreed with the truth corners.
    pub source: String,
    /// Largest distance of a detected corner from the truth, in squares (None if not detected).
    pub detected_error_squares: Option<f64>,
    /// Why detection was not used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback_reason: Option<String>,
}

/// Detects the calibration in the first frame; falls back to the truth corners (flagged) when
/// detection fails or any corner is more than half a square off.
pub fn calibrate_sim(
    game: &SimGameDir,
    first: &RgbImage,
) -> Result<(Calibration, CalibrationUsed), WatchError> {
    let truth = game
        .truth
        .first()
        .ok_or_else(|| WatchError::Reader("truth.jsonl is empty".into()))?;
    let corners: [[Point; 4]; 2] = truth.corners;
    let cfg = CalibrationConfig::default();
    let (reason, error) = match Calibration::detect(first, "sim", &cfg) {
        Ok(cal) => {
            let mut worst: f64 = 0.0;
            for (b, c) in corners.iter().enumerate() {
                let square = (0..4)
                    .map(|i| {
                        let (p, q) = (c[i], c[(i + 1) % 4]);
                        (p[0] - q[0]).hypot(p[1] - q[1])
                    })
                    .sum::<f64>()
                    / 32.0;
                for (p, q) in cal.boards[b].corners.iter().zip(c) {
                    worst = worst.max((p[0] - q[0]).hypot(p[1] - q[1]) / square);
                }
            }
            if worst <= 0.5 {
                return Ok((
                    cal,
                    CalibrationUsed {
                        source: "detected".into(),
                        detected_error_squares: Some(worst),
                        fallback_reason: None,
                    },
                ));
            }
            (
                format!("detected corners up to {worst:.2} squares off the truth"),
                Some(worst),
            )
        }
        Err(e) => (format!("detection failed: {e}"), None),
    };
    Ok((
        true_calibration(game, first)?,
        CalibrationUsed {
            source: "truth".into(),
            detected_error_squares: error,
            fallback_reason: Some(reason),
        },
    ))
}

/// The calibration made from the true corners of the first truth line (`first`: the first
/// frame).
fn true_calibration(game: &SimGameDir, first: &RgbImage) -> Result<Calibration, WatchError> {
    let truth = game
        .truth
        .first()
        .ok_or_else(|| WatchError::Reader("truth.jsonl is empty".into()))?;
    Calibration::manual(
        "sim",
        (first.width(), first.height()),
        truth.corners,
        Some(first),
        &CalibrationConfig::default(),
    )
    .map_err(|e| WatchError::Reader(format!("truth corners: {e}")))
}

/// One event with the processing time of the call that produced it.
#[derive(Debug, Clone)]
pub struct TimedEvent {
    pub event: Event,
    pub latency_ms: f64,
}

/// Runs a watcher over frames (with an optional clock feed); calls `on_event` as events come.
/// Returns per-frame stats and the JPEG decode times (ms).
pub fn watch_frames(
    watcher: &mut Watcher,
    frames: &[FrameFile],
    mut clock: Option<ClockFeed>,
    mut on_event: impl FnMut(&TimedEvent) -> Result<(), WatchError>,
) -> Result<(Vec<FrameStats>, Vec<f64>), WatchError> {
    let mut stats = Vec::with_capacity(frames.len());
    let mut decode = Vec::with_capacity(frames.len());
    // Each event is timed by the wall time of the call that returned it.
    let mut emit = |events: Vec<Event>, since: Instant| -> Result<(), WatchError> {
        let ms = since.elapsed().as_secs_f64() * 1000.0;
        for event in events {
            on_event(&TimedEvent {
                event,
                latency_ms: ms,
            })?;
        }
        Ok(())
    };
    for f in frames {
        let t = Instant::now();
        let img = load_frame(&f.path);
        decode.push(t.elapsed().as_secs_f64() * 1000.0);
        if let Some(clock) = clock.as_mut() {
            let due: Vec<ClockPress> = clock.due(f.ts).to_vec();
            for p in due {
                let t = Instant::now();
                emit(watcher.press_by(p.board, p.ts, p.side), t)?;
            }
        }
        let t = Instant::now();
        match img {
            Ok(img) => {
                let (events, st) = watcher.frame(&img, f.ts)?;
                emit(events, t)?;
                stats.push(st);
            }
            // Skipped with a status event; the watch goes on with the next frame.
            Err(e) => emit(vec![watcher.unreadable_frame(f.ts, e.to_string())], t)?,
        }
    }
    let t = Instant::now();
    emit(watcher.finish(), t)?;
    Ok((stats, decode))
}

/// Options of `tandem eval game`.
#[derive(Debug, Clone)]
pub struct GameEvalOptions {
    pub rules: RuleSet,
    pub watch: WatchConfig,
    /// Feed `clock.jsonl` to the tracker.
    pub clock: bool,
    /// The BPGN record (default: the one named in `game.json`).
    pub games: Option<std::path::PathBuf>,
    /// Record every tracker decision into [`GameEval::decisions`].
    pub trace: bool,
}

/// Recall and precision of one incident type.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct IncidentScore {
    pub kind: String,
    pub injected: usize,
    /// Injected but not counted: visible for less than the pocket grace + 1 s, or cut off by the
    /// end of the recording (no detector can see them; as in `eval tracker-sim`).
    pub undetectable: usize,
    /// Injected but not counted: about a pocket zone out of the camera's view
    /// (`[reader.pockets] min_in_view`, on the true corners).
    pub out_of_view: usize,
    pub detected: usize,
    pub alerts: usize,
    pub alerts_matched: usize,
    pub recall: Option<f64>,
    pub precision: Option<f64>,
}

impl IncidentScore {
    /// Recall and precision from the counts (`None` with nothing to divide by).
    fn set_rates(&mut self) {
        self.recall = (self.injected > 0).then(|| self.detected as f64 / self.injected as f64);
        self.precision = (self.alerts > 0).then(|| self.alerts_matched as f64 / self.alerts as f64);
    }
}

/// Latency percentiles (ms).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Latency {
    pub samples: usize,
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

impl Latency {
    pub fn of(mut v: Vec<f64>) -> Latency {
        v.sort_by(f64::total_cmp);
        let q = |q: f64| {
            if v.is_empty() {
                0.0
            } else {
                v[(((v.len() - 1) as f64) * q).round() as usize]
            }
        };
        Latency {
            samples: v.len(),
            p50: q(0.5),
            p99: q(0.99),
            max: v.last().copied().unwrap_or(0.0),
        }
    }
}

/// The outcome of watching one simulated game.
#[derive(Debug, Clone, Serialize)]
pub struct GameEval {
    pub dir: String,
    pub reader: String,
    pub calibration: String,
    pub calibration_detail: CalibrationUsed,
    /// Whether the reader was adapted on each board's start position.
    pub adapted: [bool; 2],
    pub clock: bool,
    pub frames: usize,
    pub moves_truth: usize,
    pub moves_committed: usize,
    pub moves_right: usize,
    pub move_accuracy: f64,
    /// The standing moves split by how surely the tracker read them: sure moves and guesses,
    /// each committed and right.
    pub readings: ReadingScore,
    pub game_all_right: bool,
    /// Per board, whether its moves went astray and whether the tracker said so.
    pub courses: [BoardCourse; 2],
    pub incidents: Vec<IncidentScore>,
    /// The reader's pocket counts against the truth (frames without a hand over the board).
    pub pockets: PocketScore,
    /// The reader's squares against the truth, on the frames with no hand over the board.
    pub squares: SquareReadings,
    pub desyncs: usize,
    pub false_alerts: usize,
    /// Move events: wall time of the call that returned them.
    pub latency_ms: Latency,
    /// Every move event's latency (ms), in order, for pooling over games.
    #[serde(skip)]
    pub latency_samples: Vec<f64>,
    /// Per frame: motion, reading, tracking (ms).
    pub frame_ms: Latency,
    pub motion_ms: Latency,
    pub read_ms: Latency,
    pub track_ms: Latency,
    pub decode_ms: Latency,
    /// The committed and true moves per board (UCI).
    pub committed: [Vec<String>; 2],
    /// How surely each of `committed` was read (`None`: not read by the tracker).
    pub committed_readings: [Vec<Option<MoveReading>>; 2],
    pub truth: [Vec<String>; 2],
    /// Every alert (not move) event, for inspection.
    pub alerts: Vec<Event>,
    /// Every tracker decision, with [`GameEvalOptions::trace`] (not in the JSON report).
    #[serde(skip)]
    pub decisions: Vec<Decision>,
}

/// Where a board's committed moves first left the truth, and whether the tracker raised a
/// `desync` (lost) on that board at all: a board that goes astray without one leaves an arbiter
/// trusting a wrong position.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct BoardCourse {
    /// The index of the first committed move that is not the true move at that index (`None`
    /// when the committed moves are the truth or a beginning of it).
    pub first_wrong: Option<usize>,
    pub desync_raised: bool,
}

impl BoardCourse {
    /// `committed` against `truth`, with whether a desync was raised.
    pub fn of(committed: &[String], truth: &[String], desync_raised: bool) -> BoardCourse {
        BoardCourse {
            first_wrong: committed
                .iter()
                .enumerate()
                .position(|(i, m)| truth.get(i) != Some(m)),
            desync_raised,
        }
    }

    /// Astray and no desync said so.
    pub fn astray_unannounced(&self) -> bool {
        self.first_wrong.is_some() && !self.desync_raised
    }
}

/// How the reader's pocket counts compared with the truth, over the pocket zones of every frame
/// read whose board had no hand over it (a zone is one player's pocket in one frame).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PocketScore {
    pub zones: usize,
    /// Zones whose five counts were all right.
    pub exact: usize,
    pub exact_fraction: Option<f64>,
    /// Zones that held at least one piece, and how many of those were read exactly.
    pub occupied: usize,
    pub occupied_exact: usize,
    /// Pieces the reader missed and pieces it saw that were not there, summed over zones.
    pub missed: usize,
    pub extra: usize,
    /// The same over the zones whose every piece the camera could see: in view (on the true
    /// corners, `[reader.pockets] min_in_view`) with none hidden (only recordings that say
    /// which pieces were hidden count here).
    pub seen: usize,
    pub seen_exact: usize,
    pub seen_occupied: usize,
    pub seen_occupied_exact: usize,
    /// Per zone (A White, A Black, B White, B Black): zones, exact, occupied, occupied exact,
    /// seen occupied, seen occupied exact.
    pub by_zone: [[usize; 6]; 4],
}

impl PocketScore {
    /// Scores one zone's reading; `seen`: the camera could see every piece of the zone.
    fn add(&mut self, zone: usize, read: &[u8; 5], truth: &[u8; 5], seen: bool) {
        let exact = read == truth;
        let occupied = truth.iter().any(|&n| n > 0);
        self.zones += 1;
        self.exact += exact as usize;
        self.occupied += occupied as usize;
        self.occupied_exact += (occupied && exact) as usize;
        self.seen += seen as usize;
        self.seen_exact += (seen && exact) as usize;
        self.seen_occupied += (seen && occupied) as usize;
        self.seen_occupied_exact += (seen && occupied && exact) as usize;
        if let Some(z) = self.by_zone.get_mut(zone) {
            z[0] += 1;
            z[1] += exact as usize;
            z[2] += occupied as usize;
            z[3] += (exact && occupied) as usize;
            z[4] += (seen && occupied) as usize;
            z[5] += (seen && exact && occupied) as usize;
        }
        for (&r, &t) in read.iter().zip(truth) {
            self.missed += t.saturating_sub(r) as usize;
            self.extra += r.saturating_sub(t) as usize;
        }
        self.exact_fraction = Some(self.exact as f64 / self.zones as f64);
    }

    /// Adds `other`'s zones to these (as if one reader had read both games).
    pub fn merge(&mut self, other: &PocketScore) {
        self.zones += other.zones;
        self.exact += other.exact;
        self.occupied += other.occupied;
        self.occupied_exact += other.occupied_exact;
        self.missed += other.missed;
        self.extra += other.extra;
        self.seen += other.seen;
        self.seen_exact += other.seen_exact;
        self.seen_occupied += other.seen_occupied;
        self.seen_occupied_exact += other.seen_occupied_exact;
        for (z, o) in self.by_zone.iter_mut().zip(&other.by_zone) {
            for (a, b) in z.iter_mut().zip(o) {
                *a += b;
            }
        }
        self.exact_fraction = (self.zones > 0).then(|| self.exact as f64 / self.zones as f64);
    }
}

/// Several games' reports (`tandem eval games`) added up the way the targets are put:
/// moves right of all moves, games with every move right, false alerts per game, each incident
/// kind's recall over all its incidents, the pocket readings of every game; latency as the
/// worst game's p99 and the median of the games' p50, over the games that published moves, and
/// as the p99 of every game's move events pooled (a game of 40 moves has its slowest event as
/// its p99, so the worst game's p99 is the slowest event of all).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GamesSummary {
    pub games: usize,
    pub moves_truth: usize,
    pub moves_committed: usize,
    pub moves_right: usize,
    /// `moves_right` over the sum of each game's larger of `moves_truth` and
    /// `moves_committed` (a game's own `move_accuracy`, pooled).
    pub move_accuracy: f64,
    pub games_all_right: usize,
    pub false_alerts: usize,
    pub false_alerts_per_game: f64,
    pub desyncs: usize,
    /// Games whose detected calibration was not used (the truth's corners were).
    pub truth_calibrations: usize,
    pub incidents: Vec<IncidentScore>,
    pub pockets: PocketScore,
    pub latency_p99_worst_ms: f64,
    pub latency_p50_median_ms: f64,
    pub latency_p99_pooled_ms: f64,
    #[serde(skip)]
    moves_scored: usize,
    #[serde(skip)]
    latency_p50s: Vec<f64>,
    #[serde(skip)]
    latency_samples: Vec<f64>,
}

impl GamesSummary {
    /// Adds one game's report.
    pub fn add(&mut self, g: &GameEval) {
        self.games += 1;
        self.moves_truth += g.moves_truth;
        self.moves_committed += g.moves_committed;
        self.moves_right += g.moves_right;
        self.moves_scored += g.moves_truth.max(g.moves_committed);
        self.move_accuracy = self.moves_right as f64 / self.moves_scored.max(1) as f64;
        self.games_all_right += usize::from(g.game_all_right);
        self.false_alerts += g.false_alerts;
        self.false_alerts_per_game = self.false_alerts as f64 / self.games as f64;
        self.desyncs += g.desyncs;
        self.truth_calibrations += usize::from(g.calibration == "truth");
        for inc in &g.incidents {
            let i = match self.incidents.iter().position(|s| s.kind == inc.kind) {
                Some(i) => i,
                None => {
                    self.incidents.push(IncidentScore {
                        kind: inc.kind.clone(),
                        ..IncidentScore::default()
                    });
                    self.incidents.len() - 1
                }
            };
            let s = &mut self.incidents[i];
            s.injected += inc.injected;
            s.undetectable += inc.undetectable;
            s.out_of_view += inc.out_of_view;
            s.detected += inc.detected;
            s.alerts += inc.alerts;
            s.alerts_matched += inc.alerts_matched;
            s.set_rates();
        }
        self.pockets.merge(&g.pockets);
        self.add_latencies(&g.latency_samples);
    }

    /// Adds one game's move-event latencies (none: the game published no moves).
    fn add_latencies(&mut self, samples: &[f64]) {
        if samples.is_empty() {
            return;
        }
        let game = Latency::of(samples.to_vec());
        self.latency_p99_worst_ms = self.latency_p99_worst_ms.max(game.p99);
        self.latency_p50s.push(game.p50);
        self.latency_p50_median_ms = median(&self.latency_p50s);
        self.latency_samples.extend(samples);
        self.latency_p99_pooled_ms = Latency::of(self.latency_samples.clone()).p99;
    }
}

/// The median of `v` (the mean of the middle two for an even count; 0 when empty).
fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Whether the camera saw every piece of a zone: it was in view and the recording says none
/// was hidden.
fn seen_whole(hidden: Option<usize>, out_of_view: bool) -> bool {
    hidden == Some(0) && !out_of_view
}

/// One board at one frame as the recording has it.
struct TrueBoard {
    pockets: PocketReading,
    /// How many pieces of White's and Black's pocket were hidden (if the recording says).
    pockets_hidden: Option<[usize; 2]>,
    squares: [SquareClass; 64],
    /// Squares whose centre a nearer object hides (bit per square index).
    occluded: u64,
}

/// The square readings of the frames with no hand over the board, against the truth: squares
/// in plain view, squares whose centre a nearer piece hides, and (counted in those too) the
/// squares the latest hand over the board changed, which the tracker's decisions turn on.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SquareReadings {
    pub unoccluded: ReadingSummary,
    pub occluded: ReadingSummary,
    pub changed: ReadingSummary,
}

/// Per board, what the truth showed before the latest hand, to tell the squares it changed.
#[derive(Debug, Clone, Default)]
struct BoardHistory {
    /// The truth at the latest frame with no hand.
    last: Option<[SquareClass; 64]>,
    /// `last` when the latest hand came.
    before_hand: Option<[SquareClass; 64]>,
    in_hand: bool,
}

/// A reader that scores its inner reader's pocket counts and squares against the game's truth
/// as it goes.
struct ReadingScoring {
    inner: Box<dyn TableReader>,
    /// Per frame time: each board's truth, or None while a hand is over the board.
    truth: std::collections::HashMap<u64, [Option<TrueBoard>; 2]>,
    /// Per board, White's and Black's zone out of view on the true corners.
    out_of_view: [[bool; 2]; 2],
    score: std::sync::Arc<std::sync::Mutex<PocketScore>>,
    /// Unoccluded, occluded and changed squares.
    squares: std::sync::Arc<std::sync::Mutex<[Tally; 3]>>,
    history: [BoardHistory; 2],
}

impl TableReader for ReadingScoring {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn read(&mut self, frame: &RgbImage, ts: u64) -> Result<TableReading, WatchError> {
        let reading = self.inner.read(frame, ts)?;
        let Some(truth) = self.truth.get(&ts) else {
            return Ok(reading);
        };
        if let (Some(read), Ok(mut score)) = (reading.pockets.as_ref(), self.score.lock()) {
            for (b, (r, t)) in read.iter().zip(truth).enumerate() {
                if let Some(t) = t {
                    for c in 0..2 {
                        let hidden = t.pockets_hidden.map(|h| h[c]);
                        let seen = seen_whole(hidden, self.out_of_view[b][c]);
                        score.add(2 * b + c, &r.counts[c], &t.pockets.counts[c], seen);
                    }
                }
            }
        }
        if let Ok(mut tally) = self.squares.lock() {
            for ((read, t), h) in reading.squares.iter().zip(truth).zip(&mut self.history) {
                let Some(t) = t else {
                    if !h.in_hand {
                        h.in_hand = true;
                        h.before_hand = h.last;
                    }
                    continue;
                };
                h.in_hand = false;
                for (i, probs) in read.iter().enumerate() {
                    let occluded = t.occluded & (1 << i) != 0;
                    tally[usize::from(occluded)].add(t.squares[i], probs);
                    if h.before_hand.is_some_and(|b| b[i] != t.squares[i]) {
                        tally[2].add(t.squares[i], probs);
                    }
                }
                h.last = Some(t.squares);
            }
        }
        Ok(reading)
    }

    fn adapt(
        &mut self,
        frame: &RgbImage,
        board: BoardId,
        start: &Position,
    ) -> Result<bool, WatchError> {
        self.inner.adapt(frame, board, start)
    }

    fn recalibrate(&mut self, cal: &Calibration) -> Result<(), WatchError> {
        self.inner.recalibrate(cal)
    }

    fn trial_read(&mut self, frame: &RgbImage, ts: u64) -> Result<TableReading, WatchError> {
        self.inner.trial_read(frame, ts)
    }

    fn confirm(
        &mut self,
        frame: &RgbImage,
        board: BoardId,
        position: &Position,
    ) -> Result<(), WatchError> {
        self.inner.confirm(frame, board, position)
    }
}

/// The event type that detects an injected incident kind (None: not an alert incident).
fn alert_for(kind: &str) -> Option<&'static str> {
    match kind {
        "illegal-move" => Some("illegal_move"),
        "missing-handover" => Some("handover_missing"),
        "hidden-pocket" => Some("hidden_pocket"),
        _ => None,
    }
}

fn alert_type(e: &Event) -> Option<&'static str> {
    match &e.body {
        EventBody::IllegalMove { .. } => Some("illegal_move"),
        EventBody::HandoverMissing { .. } => Some("handover_missing"),
        EventBody::HiddenPocket { .. } => Some("hidden_pocket"),
        EventBody::Status { state, .. } if state == "calibration_lost" => Some("calibration_lost"),
        _ => None,
    }
}

/// Watches a simulated game directory with `reader` (built from the loaded game) and scores it.
pub fn eval_game(
    game: &SimGameDir,
    make_reader: impl FnOnce(&SimGameDir, &Calibration) -> Result<Box<dyn TableReader>, WatchError>,
    opts: &GameEvalOptions,
) -> Result<GameEval, WatchError> {
    let variant = opts.rules.variant();
    let truth = game.true_moves(opts.games.as_deref(), &variant)?;
    let first_frame = game
        .frames
        .first()
        .ok_or_else(|| WatchError::file(&game.dir, "no frames"))?;
    let first = load_frame(&first_frame.path)?;
    let (cal, cal_used) = calibrate_sim(game, &first)?;
    // Which pocket zones the camera sees, on the true corners (what no reader can see is not
    // held against it); the fallback calibration is made from them already.
    let min_in_view = opts.watch.reader.pockets.min_in_view;
    let out_of_view = if cal_used.source == "truth" {
        pockets_out_of_view(&cal, min_in_view)
    } else {
        pockets_out_of_view(&true_calibration(game, &first)?, min_in_view)
    };
    drop(first);
    let pocket_score = std::sync::Arc::new(std::sync::Mutex::new(PocketScore::default()));
    let square_score = std::sync::Arc::new(std::sync::Mutex::new(<[Tally; 3]>::default()));
    let mut true_boards = std::collections::HashMap::new();
    for t in &game.truth {
        let fens: Vec<&str> = t.table_fen.split('|').collect();
        let mut boards = [None, None];
        for (b, slot) in boards.iter_mut().enumerate() {
            if t.hands[b] {
                continue;
            }
            let squares = fens
                .get(b)
                .ok_or_else(|| format!("no board {b} in the table FEN"))
                .and_then(|f| placement_classes(f))
                .map_err(|e| WatchError::Reader(format!("truth at {}: {e}", t.ts_ms)))?;
            *slot = Some(TrueBoard {
                pockets: pocket_counts(&t.pockets[b][0], &t.pockets[b][1]),
                pockets_hidden: t.pockets_hidden.map(|h| h[b]),
                squares,
                occluded: t.occluded[b]
                    .iter()
                    .filter_map(|n| n.parse::<Square>().ok())
                    .fold(0, |m, sq| m | 1 << sq.index()),
            });
        }
        true_boards.insert(t.ts_ms, boards);
    }
    let reader: Box<dyn TableReader> = Box::new(ReadingScoring {
        inner: make_reader(game, &cal)?,
        truth: true_boards,
        out_of_view,
        score: pocket_score.clone(),
        squares: square_score.clone(),
        history: Default::default(),
    });
    let mut tracker = new_tracker("sim", opts.rules.clone(), &opts.watch)?;
    tracker.record_decisions(opts.trace);
    let mut watcher = Watcher::new(&cal, reader, tracker, &opts.watch)?;
    let mut events: Vec<TimedEvent> = Vec::new();
    let clock = opts.clock.then(|| game.clock());
    let (stats, decode) = watch_frames(&mut watcher, &game.frames, clock, |e| {
        events.push(e.clone());
        Ok(())
    })?;

    let standing = standing_readings(events.iter().map(|e| &e.event));
    let committed = ucis(&standing);
    let latencies: Vec<_> = events
        .iter()
        .filter(|e| matches!(e.event.body, EventBody::Move { .. }))
        .map(|e| e.latency_ms)
        .collect();
    let mut right = 0;
    let mut all_right = true;
    let mut readings = ReadingScore::default();
    for b in 0..2 {
        right += lcs(&committed[b], &truth.moves[b]);
        all_right &= committed[b] == truth.moves[b];
        readings.add(&ReadingScore::of_board(&standing[b], &truth.moves[b]));
    }
    let moves_truth = truth.moves[0].len() + truth.moves[1].len();
    let moves_committed = committed[0].len() + committed[1].len();

    let grace = opts.watch.tracker.pocket_grace_ms;
    let presses = game.clock();
    let window = |inc: &super::simgame::IncidentInfo| {
        incident_window(inc, board_of(&inc.board), presses.presses(), grace)
    };
    let mut matched = vec![false; events.len()];
    let mut scores: Vec<IncidentScore> = ["illegal-move", "missing-handover", "hidden-pocket"]
        .iter()
        .map(|k| IncidentScore {
            kind: k.to_string(),
            ..IncidentScore::default()
        })
        .collect();
    for inc in &game.info.incidents {
        let Some(want) = alert_for(&inc.kind) else {
            continue;
        };
        let board = board_of(&inc.board);
        let score = scores
            .iter_mut()
            .find(|s| s.kind == inc.kind)
            .expect("every alert kind has a score row");
        let last_ts = game.frames.last().map_or(0, |f| f.ts);
        let needs = if inc.kind == "illegal-move" {
            0
        } else {
            grace + 1000
        };
        if inc.ts_ms[1].saturating_sub(inc.ts_ms[0]) < needs || inc.ts_ms[0] + needs > last_ts {
            score.undetectable += 1;
            continue;
        }
        let zone = truth.incident_zone(inc);
        if zone.is_some_and(|(b, c)| out_of_view[b.index()][c.index()]) {
            score.out_of_view += 1;
            continue;
        }
        score.injected += 1;
        let (from, to) = window(inc);
        let hit = events.iter().enumerate().position(|(k, e)| {
            !matched[k]
                && alert_type(&e.event) == Some(want)
                && names_incident(inc, zone, &e.event, board)
                && (from..=to).contains(&e.event.ts)
        });
        if let Some(k) = hit {
            matched[k] = true;
            score.detected += 1;
        }
    }
    let mut desyncs = 0;
    let mut false_alerts = 0;
    let mut alerts = Vec::new();
    for (k, e) in events.iter().enumerate() {
        if !matches!(e.event.body, EventBody::Move { .. }) {
            alerts.push(e.event.clone());
        }
        if let EventBody::Desync {
            state: DesyncState::Lost,
            ..
        } = e.event.body
        {
            desyncs += 1;
            false_alerts += 1;
        }
        if let Some(t) = alert_type(&e.event) {
            if let Some(s) = scores.iter_mut().find(|s| alert_for(&s.kind) == Some(t)) {
                s.alerts += 1;
                if matched[k] {
                    s.alerts_matched += 1;
                }
            }
            // A pocket alert inside any pocket incident's window (of either kind, any zone) is
            // explained.
            let explained = matched[k]
                || game.info.incidents.iter().any(|i| {
                    alert_for(&i.kind).is_some()
                        && (alert_for(&i.kind) == Some(t)
                            || (matches!(t, "hidden_pocket" | "handover_missing")
                                && i.kind != "illegal-move"))
                        && names_incident(i, None, &e.event, board_of(&i.board))
                        && {
                            let (from, to) = window(i);
                            (from..=to).contains(&e.event.ts)
                        }
                });
            if !explained {
                false_alerts += 1;
            }
        }
    }
    for s in &mut scores {
        s.set_rates();
    }
    Ok(GameEval {
        dir: game.dir.display().to_string(),
        reader: watcher.reader_name().to_string(),
        calibration: cal_used.source.clone(),
        calibration_detail: cal_used,
        adapted: watcher.adapted(),
        clock: opts.clock,
        frames: stats.len(),
        moves_truth,
        moves_committed,
        moves_right: right,
        move_accuracy: right as f64 / moves_truth.max(moves_committed).max(1) as f64,
        readings,
        game_all_right: all_right,
        courses: [0, 1].map(|b| {
            let desync = events.iter().any(|e| {
                e.event.board.map(BoardId::index) == Some(b)
                    && matches!(
                        e.event.body,
                        EventBody::Desync {
                            state: DesyncState::Lost,
                            ..
                        }
                    )
            });
            BoardCourse::of(&committed[b], &truth.moves[b], desync)
        }),
        incidents: scores,
        pockets: pocket_score.lock().map(|s| s.clone()).unwrap_or_default(),
        squares: square_score
            .lock()
            .map(|t| SquareReadings {
                unoccluded: t[0].summary(),
                occluded: t[1].summary(),
                changed: t[2].summary(),
            })
            .unwrap_or_default(),
        desyncs,
        false_alerts,
        latency_ms: Latency::of(latencies.clone()),
        latency_samples: latencies,
        frame_ms: Latency::of(
            stats
                .iter()
                .map(|s| s.motion_ms + s.read_ms + s.track_ms)
                .collect(),
        ),
        motion_ms: Latency::of(stats.iter().map(|s| s.motion_ms).collect()),
        read_ms: Latency::of(stats.iter().map(|s| s.read_ms).collect()),
        track_ms: Latency::of(stats.iter().map(|s| s.track_ms).collect()),
        decode_ms: Latency::of(decode),
        committed,
        committed_readings: standing.map(|moves| moves.into_iter().map(|(_, r)| r).collect()),
        truth: truth.moves,
        alerts,
        decisions: watcher.take_decisions(),
    })
}

/// Whether alert `e` names the incident `inc` (on `incident_board`): an illegal move is reported
/// on its own board; a pocket alert must name the incident's pocket `zone` (board and colour;
/// for a missing hand-over the partner's pocket on the other board,
/// [`super::simgame::TrueGame::incident_zone`]),
/// or, where the zone is unknown, may be on either board.
fn names_incident(
    inc: &super::simgame::IncidentInfo,
    zone: Option<(BoardId, Color)>,
    e: &Event,
    incident_board: Option<BoardId>,
) -> bool {
    if inc.kind == "illegal-move" {
        return e.board == incident_board;
    }
    let named = match &e.body {
        EventBody::HandoverMissing { color, .. } | EventBody::HiddenPocket { color, .. } => {
            e.board.map(|b| (b, *color))
        }
        _ => None,
    };
    zone.is_none() || named == zone
}

/// When an alert may answer an injected incident: from its start until its end plus the pocket
/// grace and a second for pocket incidents; for an illegal move until 2 s after the press that
/// completed the move played instead (the first press on its board after the incident's end),
/// because a move pressed and taken back shows as a second press of the same player
/// (`repeated_press`) only at that press.
fn incident_window(
    inc: &super::simgame::IncidentInfo,
    board: Option<BoardId>,
    presses: &[ClockPress],
    grace: u64,
) -> (u64, u64) {
    let [start, end] = inc.ts_ms;
    if inc.kind != "illegal-move" {
        return (start, end + grace + 1000);
    }
    let completed = presses
        .iter()
        .find(|p| Some(p.board) == board && p.ts > end)
        .map_or(end, |p| p.ts);
    (start, completed.max(end) + 2000)
}

/// Motion detection against the truth's hands, per board.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MotionEval {
    pub frames: usize,
    /// Frames (both boards counted) where the truth has a hand over the board's half.
    pub hand_frames: usize,
    /// Of those, frames scored calm.
    pub hand_frames_calm: usize,
    /// Hand frames where the hand hides squares or something on the board changes (not just a
    /// hand at the clock or a pocket), and of those the ones scored calm, and the ones scored
    /// calm together with the previous frame (what the tracker would take as stable).
    pub over_board_frames: usize,
    pub over_board_calm: usize,
    pub over_board_stable: usize,
    /// Frames without a hand scored as motion (costs latency only).
    pub free_frames: usize,
    pub free_frames_moving: usize,
    pub motion_ms: Latency,
    /// Per frame and board: the truth and the cues (for `--trace`; not in the summary).
    #[serde(skip)]
    pub trace: Vec<MotionTraceRow>,
}

/// One frame of `tandem eval motion --trace`: per board the truth's hand, whether the hand is
/// over the board (hides a square), and the motion cues.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MotionTraceRow {
    pub ts: u64,
    pub hand: [bool; 2],
    pub over_board: [bool; 2],
    pub cues: [crate::vision::motion::MotionCues; 2],
    /// Per board and colour, the pocket zone's own cues.
    pub pockets: [[crate::vision::motion::MotionCues; 2]; 2],
}

/// Runs only the motion detector over a simulated game and compares with the truth's hands.
pub fn eval_motion(
    game: &SimGameDir,
    cfg: &WatchConfig,
) -> Result<(MotionEval, String), WatchError> {
    let first_frame = game
        .frames
        .first()
        .ok_or_else(|| WatchError::file(&game.dir, "no frames"))?;
    let first = load_frame(&first_frame.path)?;
    let (cal, used) = calibrate_sim(game, &first)?;
    let mut det = crate::vision::motion::MotionDetector::new(&cal, &cfg.motion)?;
    let threshold = cfg.tracker.motion_threshold;
    let mut out = MotionEval::default();
    let mut times = Vec::new();
    let mut prev_calm = [true; 2];
    // A hand is over the board when it hides a square that neither the hand-free frame before
    // nor the one after hides (a hand at the clock or a pocket hides no square).
    let mut next_free: Vec<[Option<usize>; 2]> = vec![[None, None]; game.truth.len()];
    let mut upcoming = [None, None];
    for (i, t) in game.truth.iter().enumerate().rev() {
        for (slot, hand) in upcoming.iter_mut().zip(t.hands) {
            if !hand {
                *slot = Some(i);
            }
        }
        next_free[i] = upcoming;
    }
    let mut last_free: [Option<usize>; 2] = [None, None];
    for f in &game.frames {
        let img = load_frame(&f.path)?;
        let t = Instant::now();
        let motion = det.update(&img, f.ts)?;
        let cues = motion.boards;
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        out.frames += 1;
        let Some(truth) = game.truth_at(f.ts) else {
            continue;
        };
        let mut row = MotionTraceRow {
            ts: f.ts,
            hand: truth.hands,
            over_board: [false; 2],
            cues,
            pockets: motion.pockets,
        };
        for b in 0..2 {
            let calm = cues[b].score < threshold;
            if truth.hands[b] {
                out.hand_frames += 1;
                out.hand_frames_calm += calm as usize;
                let i = game.truth.partition_point(|t| t.ts_ms < f.ts);
                let hidden_by = |k: Option<usize>| {
                    k.map_or(&[][..], |k: usize| game.truth[k].occluded[b].as_slice())
                };
                let (before, after) = (hidden_by(last_free[b]), hidden_by(next_free[i][b]));
                let over = truth.occluded[b]
                    .iter()
                    .any(|s| !before.contains(s) && !after.contains(s));
                row.over_board[b] = over;
                if over {
                    out.over_board_frames += 1;
                    out.over_board_calm += calm as usize;
                    out.over_board_stable += (calm && prev_calm[b]) as usize;
                }
            } else {
                out.free_frames += 1;
                out.free_frames_moving += (!calm) as usize;
                last_free[b] = Some(game.truth.partition_point(|t| t.ts_ms < f.ts));
            }
            prev_calm[b] = calm;
        }
        out.trace.push(row);
    }
    out.motion_ms = Latency::of(times);
    Ok((out, used.source))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pocket_readings_are_scored_exactly_and_only_visible_zones_count_as_seen() {
        let mut s = PocketScore::default();
        assert!(seen_whole(Some(0), false));
        assert!(!seen_whole(Some(1), false), "a piece hidden");
        assert!(!seen_whole(None, false), "an old recording");
        assert!(!seen_whole(Some(0), true), "a zone out of view");
        s.add(0, &[1, 0, 0, 0, 0], &[1, 0, 0, 0, 0], true); // seen, right
        s.add(1, &[0, 0, 0, 0, 0], &[2, 1, 0, 0, 0], false); // a piece hidden: not seen
        s.add(1, &[0, 0, 1, 0, 0], &[0; 5], false); // old recording: not seen
        s.add(3, &[0, 0, 0, 0, 0], &[0, 0, 0, 0, 1], true); // seen, missed the queen
        assert_eq!(
            (s.zones, s.exact, s.occupied, s.occupied_exact),
            (4, 1, 3, 1)
        );
        assert_eq!((s.missed, s.extra), (4, 1));
        assert_eq!(
            (s.seen, s.seen_exact, s.seen_occupied, s.seen_occupied_exact),
            (2, 1, 2, 1)
        );
        assert_eq!(s.by_zone[1], [2, 0, 1, 0, 0, 0]);
        assert_eq!(s.by_zone[3], [1, 0, 1, 0, 1, 0]);
        assert_eq!(s.exact_fraction, Some(0.25));
    }

    #[test]
    fn pocket_alerts_name_the_incident_zone_and_illegal_moves_its_board() {
        let inc = |kind: &str| super::super::simgame::IncidentInfo {
            kind: kind.into(),
            move_index: 1,
            board: "B".into(),
            san: "exd5".into(),
            ts_ms: [1000, 2000],
        };
        // Move 1 is Black's on board B: a white piece captured there goes to White on A.
        let game = super::super::simgame::TrueGame {
            moves: [vec![], vec!["e2e4".into(), "d7d5".into()]],
            movers: vec![(BoardId::B, Color::White), (BoardId::B, Color::Black)],
        };
        let handover = inc("missing-handover");
        let hidden = inc("hidden-pocket");
        assert_eq!(
            game.incident_zone(&handover),
            Some((BoardId::A, Color::White))
        );
        assert_eq!(
            game.incident_zone(&hidden),
            Some((BoardId::B, Color::Black))
        );
        assert_eq!(game.incident_zone(&inc("illegal-move")), None);
        let alert = |board: BoardId, body: EventBody| Event {
            id: "t/1".into(),
            table: "t".into(),
            ts: 1500,
            board: Some(board),
            body,
        };
        let missing = |color| EventBody::HandoverMissing {
            from_board: BoardId::B,
            color,
            piece: "P".into(),
            captured_ts: 1000,
        };
        let b = Some(BoardId::B);
        let zone = game.incident_zone(&handover);
        assert!(names_incident(
            &handover,
            zone,
            &alert(BoardId::A, missing(Color::White)),
            b
        ));
        assert!(!names_incident(
            &handover,
            zone,
            &alert(BoardId::A, missing(Color::Black)),
            b
        ));
        assert!(!names_incident(
            &handover,
            zone,
            &alert(BoardId::B, missing(Color::White)),
            b
        ));
        assert!(names_incident(
            &handover,
            None,
            &alert(BoardId::B, missing(Color::Black)),
            b
        ));
        let shown = EventBody::HiddenPocket {
            color: Color::Black,
            piece: "n".into(),
            held: 1,
            visible: 0,
        };
        let zone = game.incident_zone(&hidden);
        assert!(names_incident(
            &hidden,
            zone,
            &alert(BoardId::B, shown.clone()),
            b
        ));
        assert!(!names_incident(
            &hidden,
            zone,
            &alert(BoardId::A, shown.clone()),
            b
        ));
        let illegal = inc("illegal-move");
        assert!(names_incident(
            &illegal,
            None,
            &alert(BoardId::B, shown.clone()),
            b
        ));
        assert!(!names_incident(
            &illegal,
            None,
            &alert(BoardId::A, shown),
            b
        ));
    }

    #[test]
    fn an_illegal_move_is_answered_until_the_press_of_the_move_played_instead() {
        let inc = |kind: &str| super::super::simgame::IncidentInfo {
            kind: kind.into(),
            move_index: 34,
            board: "B".into(),
            san: "Nxd5".into(),
            ts_ms: [33_590, 36_123],
        };
        let press = |ts, board| ClockPress {
            ts,
            board,
            side: None,
        };
        // The illegal step's own press (34.5 s), a press on the other board, then the
        // replacement move's press on B 2.7 s after the king was taken back.
        let presses = [
            press(34_510, BoardId::B),
            press(36_868, BoardId::A),
            press(38_869, BoardId::B),
        ];
        let b = Some(BoardId::B);
        assert_eq!(
            incident_window(&inc("illegal-move"), b, &presses, 4000),
            (33_590, 40_869)
        );
        assert_eq!(
            incident_window(&inc("illegal-move"), b, &presses[..2], 4000),
            (33_590, 38_123),
            "no later press: 2 s after the end"
        );
        assert_eq!(
            incident_window(&inc("hidden-pocket"), b, &presses, 4000),
            (33_590, 41_123),
            "pocket incidents keep the grace"
        );
    }

    #[test]
    fn a_board_is_astray_from_its_first_move_that_is_not_the_truth() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let truth = s(&["e2e4", "e7e5", "g1f3"]);
        let course = |committed: &[&str], desync| BoardCourse::of(&s(committed), &truth, desync);
        // Behind is not astray; a wrong move, or one more than was played, is.
        assert_eq!(course(&["e2e4", "e7e5"], false).first_wrong, None);
        assert_eq!(
            course(&["e2e4", "e7e6", "g1f3"], false).first_wrong,
            Some(1)
        );
        assert_eq!(
            course(&["e2e4", "e7e5", "g1f3", "b8c6"], false).first_wrong,
            Some(3)
        );
        assert!(course(&["e2e3"], false).astray_unannounced());
        assert!(!course(&["e2e3"], true).astray_unannounced());
        assert!(!course(&["e2e4"], false).astray_unannounced());
    }

    #[test]
    fn pooled_latency_is_the_p99_of_every_move_event_not_the_slowest_game() {
        // Two games of 50 events: one slow event in the first sets its p99 (its slowest, as
        // in any game of at most 50 events); pooled over 100 it is past the 99th percentile.
        let mut s = GamesSummary::default();
        let mut first: Vec<f64> = (10..59).map(f64::from).collect();
        first.push(80.0);
        s.add_latencies(&first);
        s.add_latencies(&[]);
        s.add_latencies(&(20..70).map(f64::from).collect::<Vec<_>>());
        assert_eq!(s.latency_p99_worst_ms, 80.0);
        assert_eq!(s.latency_p99_pooled_ms, 69.0);
        assert_eq!(s.latency_p50_median_ms, (35.0 + 45.0) / 2.0);
    }

    #[test]
    fn lcs_and_percentiles() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(lcs(&s(&["a", "b", "c"]), &s(&["a", "c"])), 2);
        let l = Latency::of(vec![3.0, 1.0, 2.0]);
        assert_eq!((l.samples, l.p50, l.max), (3, 2.0, 3.0));
        assert_eq!(Latency::of(Vec::new()).p99, 0.0);
    }
}
