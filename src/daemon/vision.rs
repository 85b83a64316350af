//! A table watched by the camera: frames → vision → tracker on a thread of its own, and what the
//! tracker concludes back to the daemon as [`TableInput`]s, which are journaled like any input.
//!
//! The tracker keeps its own referee as its prior; the daemon's referee follows it by replaying
//! the actions the tracker applied (moves, the presses that completed them) as
//! [`TableInput::Script`] entries, and gets the tracker's own findings (desync, hidden pocket,
//! missing hand-over) as [`TableInput::Observed`]. So the events of a table remain a function of
//! its journal, and a restarted daemon resumes its game and restarts the tracker from the
//! journaled position.
//!
//! Frames and presses reach the tracker in time order whatever order they arrive in: frames are
//! held back `hold_ms` of frame time before they are read, so that a clock press that arrives over
//! MQTT a little after the frames it follows still comes first; a press that arrives before the
//! frames it follows (the frame source lagging) waits for the first frame at or after its time.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::mpsc as std_mpsc;
use std::thread::JoinHandle;

use tokio::sync::mpsc;

use crate::engine::{BoardId, Color};
use crate::evidence::Frame;
use crate::rules::{Event, EventBody, RuleSet};
use crate::tracker::{Tracker, raised_by_tracker};
use crate::vision::Calibration;
use crate::watch::{OnnxReader, TableReader, WatchError, Watcher, drift};

use super::DaemonError;
use super::config::VisionConfig;
use super::table::TableInput;

/// What the daemon hands to a watched table's thread.
#[derive(Debug)]
pub enum WatchMessage {
    Frame(Frame),
    /// A clock press on `board` by `side` at `ts` (the watcher's timeline).
    Press {
        board: BoardId,
        side: crate::engine::Color,
        ts: u64,
    },
    /// A new game or a corrected position: track from `fen` (a table FEN) under `rules`.
    Restart {
        game: u32,
        fen: String,
        rules: Box<RuleSet>,
    },
    /// The frame source ended: read every held frame, then report [`WatchOutput::Drained`].
    Flush,
}

/// What a watched table's thread sends back.
#[derive(Debug)]
pub enum WatchOutput {
    /// Inputs for table `idx`, in order.
    Inputs(usize, Vec<TableInput>),
    /// Table `idx` has read everything it was sent before a [`WatchMessage::Flush`].
    Drained(usize),
}

/// How a watched table is set up.
#[derive(Clone)]
pub struct WatchSetup {
    pub idx: usize,
    pub table: String,
    pub calibration: Calibration,
    /// Where the calibration came from; a recalibration is written back there.
    pub calibration_path: PathBuf,
    pub config: VisionConfig,
}

impl WatchSetup {
    /// Loads the calibration file of table `idx`.
    pub fn load(
        idx: usize,
        table: &str,
        calibration: &Path,
        config: &VisionConfig,
    ) -> Result<WatchSetup, DaemonError> {
        let loaded = Calibration::load(calibration)
            .map_err(|e| DaemonError::Source(format!("table {table}: calibration {e}")))?;
        Ok(WatchSetup {
            idx,
            table: table.to_string(),
            calibration: loaded,
            calibration_path: calibration.to_path_buf(),
            config: config.clone(),
        })
    }

    fn reader(&self) -> Result<Box<dyn TableReader>, WatchError> {
        let reader = OnnxReader::new(&self.calibration, &self.config.watch.reader)?;
        if !reader.has_pockets() {
            log::warn!(
                "{}: no pocket model: reading squares only (no pocket alerts)",
                self.table
            );
        }
        let min = self.config.watch.reader.pockets.min_in_view;
        for board in [BoardId::A, BoardId::B] {
            for color in Color::ALL {
                let seen = self.calibration.pocket_in_view(board, color);
                if seen < min {
                    log::warn!(
                        "{}: board {board}'s {color:?} pocket zone is {:.0} % inside the frame \
                         (min_in_view {min}): no pocket alerts for it",
                        self.table,
                        seen * 100.0
                    );
                }
            }
        }
        Ok(Box::new(reader))
    }

    fn watcher(&self, game: u32, fen: &str, rules: RuleSet) -> Result<Watcher, WatchError> {
        let tracker = Tracker::new(
            &self.table,
            game,
            rules,
            Some(fen),
            self.config.watch.tracker.clone(),
        )?;
        Watcher::new(
            &self.calibration,
            self.reader()?,
            tracker,
            &self.config.watch,
        )
    }
}

/// The SHA-256 of the square model a watched table reads with (for the evidence log).
pub fn model_sha256(config: &VisionConfig) -> Option<String> {
    let path: PathBuf = match &config.watch.reader.classifier.model {
        Some(p) => p.clone(),
        None => crate::vision::classify::find_model("squares.onnx").ok()?,
    };
    let bytes = std::fs::read(path).ok()?;
    Some(crate::evidence::sha256_hex(&bytes))
}

/// A running watched table.
pub struct TableWatch {
    tx: std_mpsc::SyncSender<WatchMessage>,
    thread: Option<JoinHandle<()>>,
}

impl TableWatch {
    /// Starts the thread for `setup`, tracking game `game` from `fen` under `rules`. Fails when the
    /// models cannot be loaded (one clear error at start, not a thread that dies later).
    pub fn start(
        setup: WatchSetup,
        game: u32,
        fen: &str,
        rules: RuleSet,
        out: mpsc::UnboundedSender<WatchOutput>,
    ) -> Result<TableWatch, DaemonError> {
        let watcher = setup
            .watcher(game, fen, rules)
            .map_err(|e| DaemonError::Source(format!("table {}: {e}", setup.table)))?;
        let (tx, rx) = std_mpsc::sync_channel(64);
        let thread = std::thread::Builder::new()
            .name(format!("watch-{}", setup.table))
            .spawn(move || WatchLoop::new(setup, watcher, out).run(rx))
            .map_err(|e| DaemonError::Source(format!("cannot start a watch thread: {e}")))?;
        Ok(TableWatch {
            tx,
            thread: Some(thread),
        })
    }

    /// Hands `message` to the thread; waits while its queue is full (a recording loses no frame).
    /// Must be called from a multi-threaded tokio runtime or outside one.
    pub fn send(&self, message: WatchMessage) {
        match self.tx.try_send(message) {
            Ok(()) => {}
            Err(std_mpsc::TrySendError::Full(m)) => {
                let send = || self.tx.send(m).is_ok();
                let sent = match tokio::runtime::Handle::try_current() {
                    Ok(_) => tokio::task::block_in_place(send),
                    Err(_) => send(),
                };
                if !sent {
                    log::warn!("watch thread gone; message dropped");
                }
            }
            Err(std_mpsc::TrySendError::Disconnected(_)) => {
                log::warn!("watch thread gone; message dropped");
            }
        }
    }
}

impl Drop for TableWatch {
    fn drop(&mut self) {
        // Closing the channel ends the thread after what it holds.
        let (dead, _) = std_mpsc::sync_channel(1);
        drop(std::mem::replace(&mut self.tx, dead));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The thread's state: the watcher and the frames held back.
struct WatchLoop {
    setup: WatchSetup,
    watcher: Watcher,
    out: mpsc::UnboundedSender<WatchOutput>,
    held: VecDeque<Frame>,
    /// Presses waiting for a frame at or after their time, in time order.
    presses: VecDeque<(u64, BoardId, crate::engine::Color)>,
    /// The last problem reported as a `status` event, so a broken stream gives one event.
    last_problem: Option<String>,
    problems: u64,
}

impl WatchLoop {
    fn new(
        setup: WatchSetup,
        watcher: Watcher,
        out: mpsc::UnboundedSender<WatchOutput>,
    ) -> WatchLoop {
        WatchLoop {
            setup,
            watcher,
            out,
            held: VecDeque::new(),
            presses: VecDeque::new(),
            last_problem: None,
            problems: 0,
        }
    }

    fn run(mut self, rx: std_mpsc::Receiver<WatchMessage>) {
        while let Ok(message) = rx.recv() {
            match message {
                WatchMessage::Frame(frame) => {
                    self.held.push_back(frame);
                    self.release(false);
                }
                WatchMessage::Press { board, side, ts } => {
                    let at = self.presses.partition_point(|p| p.0 <= ts);
                    self.presses.insert(at, (ts, board, side));
                    self.release(false);
                }
                WatchMessage::Restart { game, fen, rules } => {
                    self.held.clear();
                    self.presses.clear();
                    match self.setup.watcher(game, &fen, *rules) {
                        Ok(w) => self.watcher = w,
                        Err(e) => self.problem("vision_error", format!("restart: {e}")),
                    }
                }
                WatchMessage::Flush => {
                    self.release(true);
                    let events = self.watcher.finish();
                    self.emit(events);
                    let _ = self.out.send(WatchOutput::Drained(self.setup.idx));
                }
            }
        }
    }

    /// Hands over, in time order, every press whose time a frame has reached (with the frames
    /// before it), then the frames older than the hold; with `all`, everything.
    fn release(&mut self, all: bool) {
        let newest = self.held.back().map(|f| f.ts_ms);
        while let Some(&(ts, board, side)) = self.presses.front() {
            if !all && newest.is_none_or(|n| n < ts as i64) {
                break;
            }
            while self.held.front().is_some_and(|f| f.ts_ms < ts as i64) {
                self.read_front();
            }
            self.presses.pop_front();
            let events = self.watcher.press_by(board, ts, Some(side));
            self.emit(events);
        }
        let hold = self.setup.config.hold_ms as i64;
        while let (Some(front), Some(newest)) = (self.held.front(), newest) {
            if !all && front.ts_ms.saturating_add(hold) > newest {
                break;
            }
            self.read_front();
        }
    }

    fn read_front(&mut self) {
        let Some(frame) = self.held.pop_front() else {
            return;
        };
        let ts = frame.ts_ms.max(0) as u64;
        let image = match crate::vision::decode_frame(&frame.bytes) {
            Ok(i) => i,
            Err(e) => {
                self.problem(
                    crate::watch::FRAME_UNREADABLE,
                    format!("frame at {ts} ms: {e}"),
                );
                return;
            }
        };
        match self.watcher.frame(&image, ts) {
            Ok((events, _)) => {
                self.emit(events);
                if self.last_problem.take().is_some() {
                    self.send(vec![TableInput::Notice {
                        state: "vision_ok".into(),
                        detail: format!(
                            "frames are read again ({} frame(s) could not be)",
                            self.problems
                        ),
                    }]);
                    self.problems = 0;
                }
            }
            Err(e) => self.problem("vision_error", format!("frame at {ts} ms: {e}")),
        }
    }

    /// Turns the watcher's output into table inputs: the referee actions the tracker applied,
    /// then the tracker's own findings.
    fn emit(&mut self, events: Vec<Event>) {
        let mut inputs: Vec<TableInput> = self
            .watcher
            .take_applied()
            .iter()
            .map(|a| TableInput::Script {
                action: a.to_json(),
            })
            .collect();
        if events.iter().any(
            |e| matches!(&e.body, EventBody::Status { state, .. } if state == drift::RECALIBRATED),
        ) {
            self.save_calibration();
        }
        inputs.extend(events.into_iter().filter_map(|e| match e.body {
            // The calibration watch's findings (`calibration_lost`, `recalibrated`, …), as the
            // camera's own notices are reported.
            EventBody::Status { state, detail }
                if drift::STATUS_STATES.contains(&state.as_str()) =>
            {
                Some(TableInput::Notice { state, detail })
            }
            body if raised_by_tracker(&body) => Some(TableInput::Observed {
                board: e.board,
                ts: e.ts,
                body,
            }),
            _ => None,
        }));
        self.send(inputs);
    }

    /// Writes the calibration the watcher found again over the table's calibration file, so that
    /// a restart starts from where the boards are now; the file it replaces is kept beside it
    /// (`<file>.prev`). A failure is reported (`calibration_unsaved`), the watch goes on.
    fn save_calibration(&mut self) {
        let path = &self.setup.calibration_path;
        let mut prev = path.clone().into_os_string();
        prev.push(".prev");
        let saved = std::fs::copy(path, &prev)
            .map_err(|e| format!("cannot keep {} as {}: {e}", path.display(), prev.display()))
            .and_then(|_| {
                save_atomically(self.watcher.calibration(), path)
                    .map_err(|e| format!("cannot write {}: {e}", path.display()))
            });
        match saved {
            Ok(()) => log::info!(
                "{}: recalibrated; {} written (the previous calibration kept as {})",
                self.setup.table,
                path.display(),
                Path::new(&prev).display()
            ),
            Err(detail) => {
                log::warn!("{}: calibration_unsaved: {detail}", self.setup.table);
                self.send(vec![TableInput::Notice {
                    state: "calibration_unsaved".into(),
                    detail,
                }]);
            }
        }
    }

    /// Reports a problem once per kind of problem (the first of a run of failing frames).
    fn problem(&mut self, state: &str, detail: String) {
        self.problems += 1;
        log::warn!("{}: {state}: {detail}", self.setup.table);
        if self.last_problem.as_deref() != Some(state) {
            self.last_problem = Some(state.to_string());
            self.send(vec![TableInput::Notice {
                state: state.to_string(),
                detail,
            }]);
        }
    }

    fn send(&self, inputs: Vec<TableInput>) {
        if !inputs.is_empty() {
            let _ = self.out.send(WatchOutput::Inputs(self.setup.idx, inputs));
        }
    }
}

/// Writes `cal` to `path` through a temporary file beside it, so that a crash leaves the old
/// file or the new one, never half of one.
fn save_atomically(cal: &Calibration, path: &Path) -> Result<(), String> {
    let mut tmp = path.to_path_buf().into_os_string();
    tmp.push(".tmp");
    cal.save(Path::new(&tmp)).map_err(|e| e.to_string())?;
    std::fs::rename(&tmp, path).map_err(|e| e.to_string())
}
