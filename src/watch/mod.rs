//! The tracker on camera frames: frame → motion + square/pocket reading → [`Observation`]s →
//! [`Tracker`] (with clock presses when a clock feed exists) → referee events.
//!
//! [`Watcher`] composes the stages for one calibrated camera watching one table; the reading
//! stage is a [`TableReader`] (the ONNX classifier at run time, or [`TruthReader`], an oracle
//! reading a simulated game's ground truth, to measure motion and tracking alone).
//! [`frames`] lists image folders and clock feeds, [`simgame`] reads simulated game directories
//! and [`eval`] compares a watched game with its truth (`tandem eval game`). See `docs/watch.md`.
//!
//! Invariants: frames are processed in time order; a clock press is handed to the tracker before
//! the first frame at or after its time; each board's reader is adapted at most once, while the
//! tracked board is still in its start position: on a calm frame (not the first) — if a hand
//! was already seen on it, only when the unadapted reading agrees with the start position — or,
//! when the first hand arrives before any such frame, on the first frame (the boards as they were
//! before that hand: a stream is taken to start with the boards in view, as calibration needs).

pub mod drift;
pub mod eval;
pub mod frames;
mod onnx;
pub mod simgame;

use image::RgbImage;
use serde::{Deserialize, Serialize};

use crate::engine::{BoardId, Color, Position, Table};
use crate::rules::{Event, EventBody};
use crate::tracker::{Observation, PocketReading, SquareClass, SquareLook, Tracker, TrackerConfig};
use crate::vision::motion::{MotionConfig, MotionCues, MotionDetector, MotionError, TableMotion};
use crate::vision::{Calibration, OcclusionMap};

pub use drift::{CalibrationWatch, DriftConfig, DriftReport};
pub use frames::{ClockFeed, ClockPress, FrameFile, list_frames};
pub use onnx::OnnxReader;
pub use simgame::{SimGameDir, TruthReader};

/// The `status` state of a frame that could not be read (missing, cut short, not an image):
/// it is skipped, and the watch goes on with the next frame.
pub const FRAME_UNREADABLE: &str = "frame_unreadable";

/// Why watching failed.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error("{path}: {problem}")]
    File { path: String, problem: String },
    #[error(transparent)]
    Motion(#[from] MotionError),
    #[error(transparent)]
    Tracker(#[from] crate::tracker::TrackerError),
    #[error(transparent)]
    Observation(#[from] crate::tracker::ObservationError),
    #[error("reader: {0}")]
    Reader(String),
    #[error("watch config: {0}")]
    Config(String),
    #[error(transparent)]
    Calibration(#[from] crate::vision::CalibrationError),
}

impl WatchError {
    pub(crate) fn file(path: &std::path::Path, problem: impl std::fmt::Display) -> WatchError {
        WatchError::File {
            path: path.display().to_string(),
            problem: problem.to_string(),
        }
    }
}

/// What a reader sees in one frame: per board 64 probability vectors over [`SquareClass`]
/// (a1 = 0 … h8 = 63) and, if the reader has a pocket model, both pockets' counts.
#[derive(Debug, Clone, PartialEq)]
pub struct TableReading {
    pub squares: [Box<[[f32; SquareClass::COUNT]; 64]>; 2],
    pub pockets: Option<[PocketReading; 2]>,
    /// Per board, what each square's patch looked like (readers that cut patches).
    pub looks: Option<[std::sync::Arc<[SquareLook; 64]>; 2]>,
}

/// Reads squares and pockets of one frame. The classifier implements it for camera frames;
/// [`TruthReader`] for simulated games. Adaptation hooks are optional.
pub trait TableReader: Send {
    /// Short name for reports (`"onnx"`, `"truth"`).
    fn name(&self) -> &str;

    /// Reads the frame taken at `ts` (ms).
    fn read(&mut self, frame: &RgbImage, ts: u64) -> Result<TableReading, WatchError>;

    /// Adapts to this table's pieces, board and light: `frame` (the frame just read) shows
    /// `start` on `board`. Returns whether the reader changed. By default the same as
    /// [`TableReader::confirm`].
    fn adapt(
        &mut self,
        frame: &RgbImage,
        board: BoardId,
        start: &Position,
    ) -> Result<bool, WatchError> {
        self.confirm(frame, board, start)?;
        Ok(false)
    }

    /// Cuts the squares where `cal` (a new calibration of the same table: the camera or a board
    /// moved) puts them from the next frame on, keeping what the reader learnt of the table.
    fn recalibrate(&mut self, _cal: &Calibration) -> Result<(), WatchError> {
        Ok(())
    }

    /// Reads `frame` only to judge a candidate calibration (nothing of it is recorded). By
    /// default the same as [`TableReader::read`].
    fn trial_read(&mut self, frame: &RgbImage, ts: u64) -> Result<TableReading, WatchError> {
        self.read(frame, ts)
    }

    /// Confirms that board `board` of `frame` (the frame just read) shows `position` (a position
    /// the tracker committed, on a calm frame): readers may keep it as a labelled example.
    fn confirm(
        &mut self,
        _frame: &RgbImage,
        _board: BoardId,
        _position: &Position,
    ) -> Result<(), WatchError> {
        Ok(())
    }
}

/// Watch configuration (TOML sections `[motion]`, `[tracker]` and `[reader]`, all optional).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WatchConfig {
    pub motion: MotionConfig,
    pub tracker: TrackerConfig,
    /// The ONNX frame reader (rectification, square classifier, pocket reader).
    pub reader: crate::vision::ReaderConfig,
    /// Do not adapt the reader on the start position.
    pub no_adapt: bool,
    /// Watching the calibration (`[drift]`).
    pub drift: DriftConfig,
}

impl WatchConfig {
    /// Reads TOML overrides (missing keys keep their defaults).
    pub fn from_toml(text: &str) -> Result<WatchConfig, WatchError> {
        let cfg: WatchConfig =
            toml::from_str(text).map_err(|e| WatchError::Config(e.to_string()))?;
        cfg.tracker
            .validate()
            .map_err(|e| WatchError::Config(e.to_string()))?;
        cfg.drift.validate().map_err(WatchError::Config)?;
        cfg.reader
            .pockets
            .validate()
            .map_err(|e| WatchError::Config(e.to_string()))?;
        Ok(cfg)
    }
}

/// What happened in one frame, besides the events (for evaluation and diagnostics).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct FrameStats {
    pub ts: u64,
    pub motion: [MotionCues; 2],
    /// Time spent on motion, reading and tracking (ms of wall time in this process).
    pub motion_ms: f64,
    pub read_ms: f64,
    pub track_ms: f64,
}

/// Watches one table through one calibrated camera.
///
/// Invariant: the tracker's referee table is the watched position; `frame` must be called with
/// increasing timestamps, and `press` with the clock feed's presses before the first frame at or
/// after their time.
pub struct Watcher {
    motion: MotionDetector,
    reader: Box<dyn TableReader>,
    tracker: Tracker,
    adapt: bool,
    adapted: [bool; 2],
    /// A hand or motion was seen on the board since the start.
    moved: [bool; 2],
    /// Boards with a committed move waiting for a calm frame to confirm it to the reader.
    to_confirm: [bool; 2],
    frames: u64,
    /// The first frame, kept while a board may still need it for adaptation.
    first_frame: Option<RgbImage>,
    /// Which squares the tracked position's pieces may hide from this camera.
    occlusion: OcclusionMap,
    /// The calibration in force and whether it still holds.
    drift: CalibrationWatch,
    motion_cfg: MotionConfig,
    /// `[reader.pockets] min_in_view`.
    pocket_min_in_view: f64,
    /// Per board, White's and Black's pocket zone out of view under the calibration in force.
    pockets_out_of_view: [[bool; 2]; 2],
}

/// Per board, whether White's and Black's pocket zones have less than `min` of their area
/// inside the frame.
pub fn pockets_out_of_view(cal: &Calibration, min: f64) -> [[bool; 2]; 2] {
    [BoardId::A, BoardId::B].map(|b| Color::ALL.map(|c| cal.pocket_in_view(b, c) < min))
}

impl Watcher {
    /// A watcher for the table `cal` calibrates, reading with `reader`, tracking with `tracker`.
    pub fn new(
        cal: &Calibration,
        reader: Box<dyn TableReader>,
        tracker: Tracker,
        cfg: &WatchConfig,
    ) -> Result<Watcher, WatchError> {
        Ok(Watcher {
            motion: MotionDetector::new(cal, &cfg.motion)?,
            reader,
            tracker,
            adapt: !cfg.no_adapt,
            adapted: [false; 2],
            moved: [false; 2],
            to_confirm: [false; 2],
            frames: 0,
            first_frame: None,
            occlusion: OcclusionMap::new(cal),
            drift: CalibrationWatch::new(cal.clone(), cfg.drift.clone()),
            motion_cfg: cfg.motion.clone(),
            pocket_min_in_view: cfg.reader.pockets.min_in_view,
            pockets_out_of_view: pockets_out_of_view(cal, cfg.reader.pockets.min_in_view),
        })
    }

    /// The tracker (its referee's table is the watched position).
    pub fn tracker(&self) -> &Tracker {
        &self.tracker
    }

    /// The referee actions the tracker applied since the last call ([`Tracker::take_applied`]).
    pub fn take_applied(&mut self) -> Vec<crate::rules::TimedAction> {
        self.tracker.take_applied()
    }

    /// The tracker's decisions recorded since the last call ([`Tracker::take_decisions`]).
    pub fn take_decisions(&mut self) -> Vec<crate::tracker::Decision> {
        self.tracker.take_decisions()
    }

    /// The calibration in force (a recalibration replaces the one the watcher started with).
    pub fn calibration(&self) -> &Calibration {
        self.drift.calibration()
    }

    /// Whether the reader was adapted on each board's start position.
    pub fn adapted(&self) -> [bool; 2] {
        self.adapted
    }

    /// Name of the reader in use.
    pub fn reader_name(&self) -> &str {
        self.reader.name()
    }

    /// A clock press on `board` at `ts` (from the clock feed).
    pub fn press(&mut self, board: BoardId, ts: u64) -> Vec<Event> {
        self.press_by(board, ts, None)
    }

    /// A clock press on `board` at `ts` by `side`, if the clock feed names who pressed
    /// ([`crate::tracker::Tracker::press_by`]).
    pub fn press_by(
        &mut self,
        board: BoardId,
        ts: u64,
        side: Option<crate::engine::Color>,
    ) -> Vec<Event> {
        let events = self.tracker.press_by(board, ts, side);
        self.note_moves(&events);
        events
    }

    /// The frames end (recording or game over): presses still pending are decided on the best
    /// frame seen since them (see [`Tracker::finish`]).
    pub fn finish(&mut self) -> Vec<Event> {
        let events = self.tracker.finish();
        self.note_moves(&events);
        events
    }

    /// Whether the tracked board `b` is still in its start position.
    fn untouched(&self, b: BoardId) -> bool {
        self.tracker.table().board(b).to_fen() == Table::new().board(b).to_fen()
    }

    /// A board whose first hand arrives before a calm frame could adapt the reader is adapted
    /// on the first frame, which showed it before that hand. Runs before the current frame is
    /// read, so the reader's last frame is the current one again afterwards.
    fn adapt_on_first_frame(&mut self, calm: &[bool; 2]) -> Result<(), WatchError> {
        let Some(first) = self.first_frame.take() else {
            return Ok(());
        };
        let start = Table::new();
        let due: Vec<BoardId> = [BoardId::A, BoardId::B]
            .into_iter()
            .filter(|&b| {
                let i = b.index();
                !self.adapted[i] && !self.moved[i] && !calm[i] && self.untouched(b)
            })
            .collect();
        if !due.is_empty() {
            self.reader.read(&first, 0)?;
            for b in due {
                self.reader.adapt(&first, b, start.board(b))?;
                self.adapted[b.index()] = true;
            }
        }
        // Kept only while a board can still use it.
        if (0..2).any(|i| !self.adapted[i] && !self.moved[i]) {
            self.first_frame = Some(first);
        }
        Ok(())
    }

    fn note_moves(&mut self, events: &[Event]) {
        for e in events {
            if let (EventBody::Move { .. }, Some(b)) = (&e.body, e.board) {
                self.to_confirm[b.index()] = true;
            }
        }
    }

    /// Checks the calibration when due ([`CalibrationWatch::observe`]); once it is lost, looks
    /// for the boards in `frame` and takes them when the frame read through them shows the
    /// tracked positions.
    fn watch_calibration(
        &mut self,
        frame: &RgbImage,
        ts: u64,
        calm: [bool; 2],
    ) -> Result<DriftOutcome, WatchError> {
        let report = self.drift.observe(frame, ts, calm)?;
        let mut events = Vec::new();
        if let Some(d) = &report.lost {
            let boards: Vec<String> = [BoardId::A, BoardId::B]
                .into_iter()
                .filter(|b| report.blocked[b.index()])
                .map(|b| b.to_string())
                .collect();
            let detail = format!(
                "the camera or board {} moved: {} of the lattice corners confirm where the \
                 calibration expects them ({} at calibration); such a board is not read until \
                 the boards are found again",
                boards.join(" and "),
                percent(d.confirmed),
                percent(d.reference),
            );
            events.push(self.status(ts, "calibration_lost", detail));
        }
        if report.restored {
            events.push(self.status(
                ts,
                "calibration_restored",
                "the boards are where they were calibrated again".into(),
            ));
        }
        if report.retry
            && self.drift.config().recalibrate
            && let Some(found) = self.find_boards(frame, ts, report.shift)?
        {
            let shift = [0, 1].map(|b| {
                let (old, new) = (
                    &self.drift.calibration().boards[b].corners,
                    &found.boards[b].corners,
                );
                (0..4)
                    .map(|k| (old[k][0] - new[k][0]).hypot(old[k][1] - new[k][1]))
                    .sum::<f64>()
                    / 4.0
            });
            self.motion = MotionDetector::new(&found, &self.motion_cfg)?;
            self.occlusion = OcclusionMap::new(&found);
            self.pockets_out_of_view = pockets_out_of_view(&found, self.pocket_min_in_view);
            self.drift.replace(found);
            let detail = format!(
                "the boards were found again and read as tracked; corners moved by {:.1} px \
                     (board A) and {:.1} px (board B) on average",
                shift[0], shift[1]
            );
            events.push(self.status(ts, drift::RECALIBRATED, detail));
            return Ok(DriftOutcome {
                events,
                blocked: [false; 2],
            });
        }
        Ok(DriftOutcome {
            events,
            blocked: report.blocked,
        })
    }

    /// Looks for the boards in `frame`; returns a calibration through which the frame reads as
    /// the tracked position on at least `min_agreement` squares of each board. Candidates, in
    /// this order: the boards detected afresh, then with their corners relabelled (a1 in another
    /// corner, A and B swapped); the old corners moved by `shift`, where the lattices showed
    /// displaced (a board that did not show moved as the other; a hand over a board defeats a
    /// detection but not this). The reader is left cutting where the returned calibration says,
    /// or where it cut before.
    fn find_boards(
        &mut self,
        frame: &RgbImage,
        ts: u64,
        shift: [Option<crate::vision::Point>; 2],
    ) -> Result<Option<Calibration>, WatchError> {
        let old = self.drift.calibration().clone();
        let config = crate::vision::CalibrationConfig::default();
        let size = (frame.width(), frame.height());
        let manual = |corners: [[crate::vision::Point; 4]; 2]| {
            Calibration::manual(&old.table, size, corners, Some(frame), &config).ok()
        };
        let detected: Box<dyn Iterator<Item = Calibration>> =
            match Calibration::detect(frame, &old.table, &config) {
                Ok(found) => {
                    let corners = [0, 1].map(|b| found.boards[b].corners);
                    let relabelled = (1..8).filter_map(move |v: usize| {
                        let (turn, swap) = (v % 4, v >= 4);
                        let board = |b: usize| {
                            let c = corners[if swap { 1 - b } else { b }];
                            std::array::from_fn(|k| c[(k + turn) % 4])
                        };
                        manual([board(0), board(1)])
                    });
                    Box::new(std::iter::once(found).chain(relabelled))
                }
                Err(_) => Box::new(std::iter::empty()),
            };
        let moved = std::iter::once_with(|| drift::displaced(&old, shift, frame)).flatten();
        let min = self.drift.config().min_agreement;
        let tracked = [BoardId::A, BoardId::B].map(|b| self.tracker.table().board(b).clone());
        for candidate in detected.chain(moved) {
            let agrees = self.reader.recalibrate(&candidate).and_then(|()| {
                let reading = self.reader.trial_read(frame, ts)?;
                Ok([BoardId::A, BoardId::B]
                    .into_iter()
                    .all(|b| agreement(&reading, b, &tracked[b.index()]) >= min))
            });
            match agrees {
                Ok(true) => return Ok(Some(candidate)),
                Ok(false) => {}
                Err(e) => {
                    // Cut where the calibration in force says, whatever the error.
                    self.reader.recalibrate(&old)?;
                    return Err(e);
                }
            }
        }
        self.reader.recalibrate(&old)?;
        Ok(None)
    }

    /// A `status` event [`FRAME_UNREADABLE`]: the frame taken at `ts` could not be decoded
    /// (`detail` says why) and was skipped.
    pub fn unreadable_frame(&mut self, ts: u64, detail: String) -> Event {
        let body = EventBody::Status {
            state: FRAME_UNREADABLE.to_string(),
            detail,
        };
        self.tracker.notice(ts, None, body)
    }

    /// A `status` event of the calibration watch (`state` one of [`drift::STATUS_STATES`]).
    fn status(&mut self, ts: u64, state: &str, detail: String) -> Event {
        debug_assert!(drift::STATUS_STATES.contains(&state));
        let body = EventBody::Status {
            state: state.to_string(),
            detail,
        };
        self.tracker.notice(ts, None, body)
    }

    /// Processes one frame taken at `ts`; returns the events it caused and what it measured.
    pub fn frame(
        &mut self,
        frame: &RgbImage,
        ts: u64,
    ) -> Result<(Vec<Event>, FrameStats), WatchError> {
        let t0 = std::time::Instant::now();
        let TableMotion {
            boards: motion,
            pockets: zone_motion,
        } = self.motion.update(frame, ts)?;
        let t1 = std::time::Instant::now();
        let threshold = self.tracker.config().motion_threshold;
        let calm = [motion[0].score < threshold, motion[1].score < threshold];
        let first = self.frames == 0;
        self.frames += 1;
        let drift = self.watch_calibration(frame, ts, calm)?;
        let blocked = drift.blocked;
        if blocked == [true; 2] {
            let idle = FrameStats {
                ts,
                motion,
                motion_ms: ms(t0, t1),
                // The calibration check, and any search for the boards.
                read_ms: ms(t1, std::time::Instant::now()),
                track_ms: 0.0,
            };
            return Ok((drift.events, idle));
        }
        let mut events = drift.events;
        self.adapt_on_first_frame(&calm)?;
        if first && self.adapt {
            self.first_frame = Some(frame.clone());
        }
        let reading = self.reader.read(frame, ts)?;
        for b in [BoardId::A, BoardId::B] {
            let i = b.index();
            self.moved[i] |= !calm[i];
            // The first frame has no motion reference; do not trust it for adaptation.
            if self.adapt && !self.adapted[i] && !first && calm[i] && !blocked[i] {
                let start = Table::new().board(b).clone();
                if self.untouched(b) && (!self.moved[i] || agreement(&reading, b, &start) >= 56) {
                    self.reader.adapt(frame, b, &start)?;
                    self.adapted[i] = true;
                }
            }
        }
        let t2 = std::time::Instant::now();
        for b in [BoardId::A, BoardId::B] {
            let i = b.index();
            if blocked[i] {
                continue;
            }
            let mut obs = Observation::new(
                b,
                ts,
                &reading.squares[i][..],
                motion[i].score.clamp(0.0, 1.0),
                reading.pockets.map(|p| {
                    let out = self.pockets_out_of_view[i];
                    PocketReading {
                        out_of_view: [0, 1].map(|c| p[i].out_of_view[c] || out[c]),
                        calm: Some(zone_motion[i].map(|m| m.score < threshold)),
                        ..p[i]
                    }
                }),
            )?;
            // Where a piece would be hidden behind a nearer one, the reading cannot tell it
            // from an empty square (a vacated d2 behind the queen keeps reading a pawn).
            obs.hidden = self.occlusion.hidden(b, self.tracker.table().board(b));
            obs.looks = reading.looks.as_ref().map(|l| l[i].clone());
            let out = self.tracker.observe(&obs);
            self.note_moves(&out);
            events.extend(out);
        }
        for b in [BoardId::A, BoardId::B] {
            let i = b.index();
            if self.to_confirm[i] && calm[i] && !blocked[i] && !self.tracker.is_desynced(b) {
                let pos = self.tracker.table().board(b).clone();
                self.reader.confirm(frame, b, &pos)?;
                self.to_confirm[b.index()] = false;
            }
        }
        let t3 = std::time::Instant::now();
        Ok((
            events,
            FrameStats {
                ts,
                motion,
                motion_ms: ms(t0, t1),
                read_ms: ms(t1, t2),
                track_ms: ms(t2, t3),
            },
        ))
    }
}

/// Squares of `board` whose most probable class is the one `pos` has.
fn agreement(reading: &TableReading, board: BoardId, pos: &Position) -> usize {
    crate::engine::Square::all()
        .filter(|sq| {
            let v = &reading.squares[board.index()][sq.index()];
            let best = (0..SquareClass::COUNT)
                .max_by(|&a, &b| v[a].total_cmp(&v[b]))
                .unwrap_or(0);
            best == SquareClass::on(pos, *sq).index()
        })
        .count()
}

/// The events of a calibration check, and which boards must not be read on this frame.
struct DriftOutcome {
    events: Vec<Event>,
    blocked: [bool; 2],
}

fn percent(fractions: [f64; 2]) -> String {
    format!(
        "{:.0} % / {:.0} %",
        100.0 * fractions[0],
        100.0 * fractions[1]
    )
}

fn ms(a: std::time::Instant, b: std::time::Instant) -> f64 {
    (b - a).as_secs_f64() * 1000.0
}

/// A tracker for watching `table_id` under `rules` from the start position.
pub fn new_tracker(
    table_id: &str,
    rules: crate::rules::RuleSet,
    cfg: &WatchConfig,
) -> Result<Tracker, WatchError> {
    Ok(Tracker::new(table_id, 1, rules, None, cfg.tracker.clone())?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// Reads nothing (uniform probabilities) and records which frame each adaptation used,
    /// by the red value of its top-left pixel.
    struct Recorder(Arc<Mutex<Vec<(BoardId, u8)>>>);

    impl TableReader for Recorder {
        fn name(&self) -> &str {
            "recorder"
        }
        fn read(&mut self, _frame: &RgbImage, _ts: u64) -> Result<TableReading, WatchError> {
            let uniform = || Box::new([[1.0 / SquareClass::COUNT as f32; SquareClass::COUNT]; 64]);
            Ok(TableReading {
                squares: [uniform(), uniform()],
                pockets: None,
                looks: None,
            })
        }
        fn adapt(
            &mut self,
            frame: &RgbImage,
            board: BoardId,
            _start: &Position,
        ) -> Result<bool, WatchError> {
            self.0
                .lock()
                .unwrap()
                .push((board, frame.get_pixel(0, 0)[0]));
            Ok(true)
        }
    }

    #[test]
    fn pocket_zones_beyond_the_frame_are_out_of_view_as_configured() {
        let err = WatchConfig::from_toml("[reader.pockets]\nmin_in_view = 1.5\n").unwrap_err();
        assert!(err.to_string().contains("min_in_view"), "{err}");
        let square = |x: f64| {
            [
                [x, 340.0],
                [x + 240.0, 340.0],
                [x + 240.0, 100.0],
                [x, 100.0],
            ]
        };
        let cal = Calibration::manual(
            "t",
            (1280, 440),
            [square(20.0), square(500.0)],
            None,
            &crate::vision::CalibrationConfig::default(),
        )
        .unwrap();
        // Board A hugs the left edge: its zones, beside its outer edge, are mostly beyond it.
        assert_eq!(
            pockets_out_of_view(&cal, 0.9),
            [[true, true], [false, false]]
        );
        assert_eq!(pockets_out_of_view(&cal, 0.0), [[false; 2]; 2]);
    }

    #[test]
    fn a_board_whose_first_hand_comes_before_a_calm_frame_adapts_on_the_first_frame() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/sim-game/frames/000000.jpg"
        );
        let base = image::open(path).unwrap().to_rgb8();
        let cal = Calibration::detect(&base, "t", &Default::default()).unwrap();
        let tagged = |tag: u8, hand_over_a: bool| {
            let mut f = base.clone();
            if hand_over_a {
                // A dark "hand" over the left third of board A (the detector compensates a
                // change of the whole region as a change of light).
                let c = &cal.boards[0].corners;
                let (x0, x1) = (
                    c.iter().map(|p| p[0]).fold(f64::MAX, f64::min),
                    c.iter().map(|p| p[0]).fold(0.0, f64::max),
                );
                let (y0, y1) = (
                    c.iter().map(|p| p[1]).fold(f64::MAX, f64::min),
                    c.iter().map(|p| p[1]).fold(0.0, f64::max),
                );
                for y in (y0.max(0.0) as u32)..(y1 as u32).min(f.height()) {
                    for x in (x0.max(0.0) as u32)..((x0 + (x1 - x0) / 3.0) as u32).min(f.width()) {
                        f.put_pixel(x, y, image::Rgb([30, 20, 15]));
                    }
                }
            }
            f.put_pixel(0, 0, image::Rgb([tag, 0, 0]));
            f
        };
        let log = Arc::new(Mutex::new(Vec::new()));
        let cfg = WatchConfig::default();
        let tracker = new_tracker("t", crate::rules::RuleSet::fics(), &cfg).unwrap();
        let mut w = Watcher::new(&cal, Box::new(Recorder(log.clone())), tracker, &cfg).unwrap();
        w.frame(&tagged(10, false), 0).unwrap();
        assert!(
            log.lock().unwrap().is_empty(),
            "the first frame alone adapts nothing"
        );
        // Frame 2: a hand arrives over A; B stays calm and adapts on this frame as before.
        w.frame(&tagged(20, true), 100).unwrap();
        w.frame(&tagged(30, true), 200).unwrap();
        let got = log.lock().unwrap().clone();
        assert_eq!(got, [(BoardId::A, 10), (BoardId::B, 20)], "{got:?}");
        assert_eq!(w.adapted(), [true, true]);
        assert!(
            w.first_frame.is_none(),
            "the first frame is not kept once no board needs it"
        );
    }
}
