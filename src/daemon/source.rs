//! Where a table's inputs come from: move sources (a replayed BPGN game or referee script today,
//! the tracker later) and frame sources (a V4L2 camera, an image folder, the simulator).
//!
//! Move sources are pull-based and deterministic, so a restarted daemon can skip what its
//! journal already holds. Frame sources run on their own threads (capture and rendering block)
//! and hand frames to the daemon through a bounded channel; a full channel drops live frames
//! (the evidence ring wants the newest) but never folder frames replayed as fast as possible.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Deserialize;
use tokio::sync::{mpsc, watch};

use crate::engine::bpgn::{self, BpgnGame};
use crate::engine::{BoardId, Color};
use crate::evidence::Frame;

use super::DaemonError;
use super::config::{CaptureFormat, FolderConfig, ReplayConfig, SimSourceConfig, V4l2Config};
use super::table::TableInput;

/// An input with its time on the game's timeline (ms since the game's start), if known.
#[derive(Debug, Clone, PartialEq)]
pub struct TimedInput {
    pub at_ms: Option<u64>,
    pub input: TableInput,
}

/// A source of table inputs, pulled in order. Implemented by [`BpgnReplay`] and
/// [`ScriptReplay`]; the tracker will implement it for camera moves.
pub trait MoveSource: Send {
    /// The next input, or `None` when the source is exhausted.
    fn next_input(&mut self) -> Option<TimedInput>;

    /// Drops the first `n` inputs (already in the journal of a restarted daemon).
    fn skip(&mut self, n: usize) {
        for _ in 0..n {
            if self.next_input().is_none() {
                break;
            }
        }
    }
}

/// Remaining times per board and colour reconstructed from a game's clock comments, with the
/// timeline ts of each move: a board's elapsed time is what both of its clocks have used up
/// (the same reconstruction as [`crate::rules::replay_game`]).
fn timeline(game: &BpgnGame) -> Vec<(Option<u64>, [u64; 2], Option<u64>)> {
    let base_ms = game
        .time_control()
        .map(|tc| u64::from(tc.base_secs) * 1000)
        .unwrap_or(0);
    let mut remaining = [[base_ms; 2]; 2];
    game.moves
        .iter()
        .map(|mv| {
            let clock_ms = mv.clock.map(|secs| (secs * 1000.0).round().max(0.0) as u64);
            let (b, c) = (mv.board.index(), mv.color.index());
            if let Some(ms) = clock_ms {
                remaining[b][c] = ms;
            }
            let ts = (base_ms > 0)
                .then(|| (2 * base_ms).saturating_sub(remaining[b][0] + remaining[b][1]));
            (ts, remaining[b], clock_ms)
        })
        .collect()
}

/// Reads game `number` (1-based) of a BPGN file.
pub fn load_game(path: &Path, number: usize) -> Result<BpgnGame, DaemonError> {
    let bytes = std::fs::read(path).map_err(|e| DaemonError::io(path, e))?;
    let mut games = bpgn::parse_bpgn(&bytes)
        .map_err(|e| DaemonError::Source(format!("{}: {e}", path.display())))?;
    if number == 0 || number > games.len() {
        return Err(DaemonError::Source(format!(
            "{}: no game {number} (the file has {})",
            path.display(),
            games.len()
        )));
    }
    Ok(games.swap_remove(number - 1))
}

/// A recorded game's moves, in the order played across both boards.
pub struct BpgnReplay {
    inputs: std::vec::IntoIter<TimedInput>,
}

impl BpgnReplay {
    pub fn new(game: &BpgnGame) -> Self {
        let inputs: Vec<TimedInput> = game
            .moves
            .iter()
            .zip(timeline(game))
            .map(|(mv, (ts, _, clock_ms))| TimedInput {
                at_ms: ts,
                input: TableInput::Move {
                    board: mv.board,
                    notation: mv.san.clone(),
                    ts,
                    clock_ms,
                },
            })
            .collect();
        Self {
            inputs: inputs.into_iter(),
        }
    }
}

impl MoveSource for BpgnReplay {
    fn next_input(&mut self) -> Option<TimedInput> {
        self.inputs.next()
    }
}

/// A referee script's actions (`{"actions": [...]}` as `tandem referee` reads it).
pub struct ScriptReplay {
    inputs: std::vec::IntoIter<TimedInput>,
}

#[derive(Deserialize)]
struct Script {
    actions: Vec<serde_json::Value>,
}

impl ScriptReplay {
    pub fn from_file(path: &Path) -> Result<Self, DaemonError> {
        let text = std::fs::read_to_string(path).map_err(|e| DaemonError::io(path, e))?;
        let script: Script = serde_json::from_str(&text).map_err(|e| {
            DaemonError::Source(format!("{} is not a referee script: {e}", path.display()))
        })?;
        let inputs: Vec<TimedInput> = script
            .actions
            .into_iter()
            .map(|action| TimedInput {
                at_ms: action.get("ts").and_then(serde_json::Value::as_u64),
                input: TableInput::Script { action },
            })
            .collect();
        Ok(Self {
            inputs: inputs.into_iter(),
        })
    }
}

impl MoveSource for ScriptReplay {
    fn next_input(&mut self) -> Option<TimedInput> {
        self.inputs.next()
    }
}

/// Opens the move source a replay configuration names.
pub fn open_replay(config: &ReplayConfig) -> Result<Box<dyn MoveSource>, DaemonError> {
    match (&config.bpgn, &config.script) {
        (Some(path), _) => Ok(Box::new(BpgnReplay::new(&load_game(path, config.game)?))),
        (None, Some(path)) => Ok(Box::new(ScriptReplay::from_file(path)?)),
        (None, None) => Err(DaemonError::Source(
            "a replay needs a bpgn or a script file".into(),
        )),
    }
}

/// One clock press of a game's clock timeline, as a clock bridge would report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockPressAt {
    pub board: BoardId,
    /// The player who moved and pressed.
    pub side: Color,
    /// Timeline ms since the game's start.
    pub ts: u64,
    pub white_ms: u64,
    pub black_ms: u64,
}

#[derive(Deserialize)]
struct PressRecord {
    #[serde(alias = "ts")]
    ts_ms: u64,
    board: BoardId,
    #[serde(alias = "side")]
    color: Color,
    white_ms: u64,
    black_ms: u64,
}

/// Reads a recorded clock timeline: JSON lines with `ts_ms` (or `ts`), `board`, `color` (or
/// `side`), `white_ms`, `black_ms` — the `clock.jsonl` that `tandem sim game` writes beside its
/// frames. Sorted by time (stable).
pub fn load_clock_presses(path: &Path) -> Result<Vec<ClockPressAt>, DaemonError> {
    let text = std::fs::read_to_string(path).map_err(|e| DaemonError::io(path, e))?;
    let mut presses = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let r: PressRecord = serde_json::from_str(line)
            .map_err(|e| DaemonError::Source(format!("{} line {}: {e}", path.display(), n + 1)))?;
        presses.push(ClockPressAt {
            board: r.board,
            side: r.color,
            ts: r.ts_ms,
            white_ms: r.white_ms,
            black_ms: r.black_ms,
        });
    }
    presses.sort_by_key(|p| p.ts);
    Ok(presses)
}

/// The presses of a game (one per move that has a clock comment), with both remaining times.
/// Empty when the game has no time control.
pub fn clock_timeline(game: &BpgnGame) -> Vec<ClockPressAt> {
    game.moves
        .iter()
        .zip(timeline(game))
        .filter_map(|(mv, (ts, remaining, clock_ms))| {
            clock_ms?;
            Some(ClockPressAt {
                board: mv.board,
                side: mv.color,
                ts: ts?,
                white_ms: remaining[0],
                black_ms: remaining[1],
            })
        })
        .collect()
}

/// What frame sources send to the daemon.
#[derive(Debug)]
pub enum SourceMessage {
    Frame(Frame),
    /// A state change to report as a `status` event on every table (camera lost, restored).
    Notice {
        state: String,
        detail: String,
    },
    /// The source has nothing more (folder replayed).
    Ended,
}

/// Shared by the daemon and a frame-source thread.
#[derive(Clone)]
pub struct SourceContext {
    pub tx: mpsc::Sender<SourceMessage>,
    pub stop: Arc<AtomicBool>,
    /// The daemon's clock: frame `ts` is ms since this instant plus `ts_offset_ms`.
    pub start: Instant,
    pub ts_offset_ms: u64,
    /// The first table's current FEN, for the simulator.
    pub fen: watch::Receiver<String>,
}

impl SourceContext {
    fn now_ms(&self) -> i64 {
        (self.start.elapsed().as_millis() as u64 + self.ts_offset_ms) as i64
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Sleeps up to `d`, waking early when asked to stop; false when stopping.
    fn sleep(&self, d: Duration) -> bool {
        let end = Instant::now() + d;
        while Instant::now() < end {
            if self.stopped() {
                return false;
            }
            std::thread::sleep((end - Instant::now()).min(Duration::from_millis(50)));
        }
        !self.stopped()
    }

    fn notice(&self, state: &str, detail: String) {
        log::warn!("capture: {state}: {detail}");
        let _ = self.tx.blocking_send(SourceMessage::Notice {
            state: state.to_string(),
            detail,
        });
    }
}

/// Opens a V4L2 camera through nokhwa and starts its stream. Without a camera (CI, dev
/// machines) this fails with an error naming the device.
pub fn open_camera(config: &V4l2Config) -> Result<nokhwa::Camera, DaemonError> {
    use nokhwa::pixel_format::RgbFormat;
    use nokhwa::utils::{
        CameraFormat, CameraIndex, FrameFormat, RequestedFormat, RequestedFormatType,
    };
    let format = match config.format {
        CaptureFormat::Mjpeg => FrameFormat::MJPEG,
        CaptureFormat::Yuyv => FrameFormat::YUYV,
    };
    let requested = RequestedFormat::new::<RgbFormat>(RequestedFormatType::Closest(
        CameraFormat::new_from(config.width, config.height, format, config.fps),
    ));
    let fail = |e: nokhwa::NokhwaError| {
        DaemonError::Source(format!(
            "camera /dev/video{}: {}",
            config.device,
            super::config::one_line(&e.to_string())
        ))
    };
    let mut camera =
        nokhwa::Camera::new(CameraIndex::Index(config.device), requested).map_err(fail)?;
    camera.open_stream().map_err(fail)?;
    Ok(camera)
}

/// Captures until stopped; reopens a lost camera with exponential backoff and reports the loss
/// and the recovery as notices.
pub fn run_v4l2(config: &V4l2Config, ctx: &SourceContext) {
    let min = Duration::from_millis(config.reconnect_min_ms.max(1));
    let max = Duration::from_millis(config.reconnect_max_ms).max(min);
    let mut backoff = min;
    let mut reported_down = false;
    while !ctx.stopped() {
        let mut camera = match open_camera(config) {
            Ok(c) => c,
            Err(e) => {
                if !reported_down {
                    ctx.notice("camera_unavailable", e.to_string());
                    reported_down = true;
                }
                if !ctx.sleep(backoff) {
                    return;
                }
                backoff = (backoff * 2).min(max);
                continue;
            }
        };
        if reported_down {
            ctx.notice(
                "camera_restored",
                format!("/dev/video{} is back", config.device),
            );
            reported_down = false;
        }
        backoff = min;
        while !ctx.stopped() {
            let buffer = match camera.frame() {
                Ok(b) => b,
                Err(e) => {
                    ctx.notice(
                        "camera_lost",
                        format!(
                            "/dev/video{}: {}",
                            config.device,
                            super::config::one_line(&e.to_string())
                        ),
                    );
                    reported_down = true;
                    break;
                }
            };
            let ts = ctx.now_ms();
            let bytes = match config.format {
                CaptureFormat::Mjpeg => buffer.buffer().to_vec(),
                CaptureFormat::Yuyv => {
                    match buffer
                        .decode_image::<nokhwa::pixel_format::RgbFormat>()
                        .map_err(|e| e.to_string())
                        .and_then(|img| {
                            crate::sim::encode_jpeg(&img, config.jpeg_quality)
                                .map_err(|e| e.to_string())
                        }) {
                        Ok(b) => b,
                        Err(e) => {
                            log::warn!("capture: undecodable frame: {e}");
                            continue;
                        }
                    }
                }
            };
            let _ = ctx.tx.try_send(SourceMessage::Frame(Frame::new(ts, bytes)));
        }
        let _ = camera.stop_stream();
    }
}

/// Replays a recorded folder once, then ends. Frames carry their recorded times (see
/// [`FolderConfig`]); with `realtime` they are sent when due (scaled by `speed`), else as fast as
/// the daemon takes them. A recording loses no frame to a full channel: the sender waits. A
/// resumed daemon (`ts_offset_ms` > 0, the journal's last time) skips the frames up to it.
pub fn run_folder(config: &FolderConfig, ctx: &SourceContext) {
    let files = match crate::watch::list_frames(&config.dir, config.fps) {
        Ok(f) => f,
        Err(e) => {
            ctx.notice("source_failed", e.to_string());
            let _ = ctx.tx.blocking_send(SourceMessage::Ended);
            return;
        }
    };
    let resume = ctx.ts_offset_ms;
    let files: Vec<_> = files
        .into_iter()
        .filter(|f| resume == 0 || f.ts > resume)
        .collect();
    let first = files.first().map(|f| f.ts).unwrap_or(0);
    let began = Instant::now();
    for file in &files {
        if ctx.stopped() {
            return;
        }
        if config.realtime {
            let due = Duration::from_millis(file.ts - first).div_f64(config.speed);
            if let Some(wait) = due.checked_sub(began.elapsed())
                && !ctx.sleep(wait)
            {
                return;
            }
        }
        let bytes = match std::fs::read(&file.path) {
            Ok(b) => b,
            Err(e) => {
                ctx.notice(
                    crate::watch::FRAME_UNREADABLE,
                    format!("{}: {e}", file.path.display()),
                );
                continue;
            }
        };
        let frame = SourceMessage::Frame(Frame::new(file.ts as i64, bytes));
        if ctx.tx.blocking_send(frame).is_err() {
            return;
        }
    }
    let _ = ctx.tx.blocking_send(SourceMessage::Ended);
}

/// Renders the table at `fps` until stopped.
pub fn run_sim(config: &SimSourceConfig, ctx: &SourceContext) {
    let pieces = crate::sim::PieceSet::builtin();
    let settings = crate::sim::SimSettings {
        width: config.width,
        height: config.height,
        seed: config.seed,
        shadow_map: 256,
        ..crate::sim::SimSettings::default()
    };
    let period = Duration::from_secs_f64(1.0 / config.fps);
    while !ctx.stopped() {
        let began = Instant::now();
        let fen = config
            .fen
            .clone()
            .unwrap_or_else(|| ctx.fen.borrow().clone());
        match crate::sim::render_table(&fen, &pieces, &settings)
            .and_then(|f| crate::sim::encode_jpeg(&f.image, 85))
        {
            Ok(bytes) => {
                let _ = ctx
                    .tx
                    .try_send(SourceMessage::Frame(Frame::new(ctx.now_ms(), bytes)));
            }
            Err(e) => log::warn!("sim: cannot render {fen:?}: {e}"),
        }
        if !ctx.sleep(period.saturating_sub(began.elapsed())) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GAME: &str = "[Event \"t\"]\n[TimeControl \"180+0\"]\n\n1A. e4{179.5} 1a. e5{178.0} 1B. d4{179.0} 2A. Nf3{177.0} *\n";

    fn game() -> BpgnGame {
        bpgn::parse_bpgn(GAME.as_bytes()).unwrap().remove(0)
    }

    fn ctx() -> (SourceContext, mpsc::Receiver<SourceMessage>) {
        let (tx, rx) = mpsc::channel(16);
        let (_fen_tx, fen) = watch::channel(String::new());
        (
            SourceContext {
                tx,
                stop: Arc::default(),
                start: Instant::now(),
                ts_offset_ms: 0,
                fen,
            },
            rx,
        )
    }

    #[test]
    fn clock_timeline_follows_the_clock_comments() {
        let presses = clock_timeline(&game());
        assert_eq!(presses.len(), 4);
        assert_eq!(presses[0].ts, 500);
        assert_eq!(
            (presses[0].white_ms, presses[0].black_ms),
            (179_500, 180_000)
        );
        // Board A after 1...e5: white used 0.5 s, black 2 s.
        assert_eq!(presses[1].ts, 2_500);
        assert_eq!(presses[1].side, Color::Black);
        assert_eq!(presses[2].board, BoardId::B);
        assert_eq!(presses[2].ts, 1_000);
        assert!(clock_timeline(&BpgnGame::default()).is_empty());
    }

    #[test]
    fn clock_presses_are_read_from_json_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("clock.jsonl");
        std::fs::write(
            &path,
            "{\"ts_ms\":1795,\"board\":\"B\",\"color\":\"black\",\"white_ms\":1,\"black_ms\":2}\n\n\
             {\"ts\":1695,\"board\":\"A\",\"side\":\"white\",\"white_ms\":3,\"black_ms\":4}\n",
        )
        .unwrap();
        let presses = load_clock_presses(&path).unwrap();
        assert_eq!(presses.len(), 2);
        assert_eq!((presses[0].ts, presses[0].board), (1695, BoardId::A));
        assert_eq!((presses[1].side, presses[1].black_ms), (Color::Black, 2));
        std::fs::write(&path, "{\"ts_ms\":1,\"board\":\"C\"}\n").unwrap();
        let err = load_clock_presses(&path).unwrap_err().to_string();
        assert!(err.contains("line 1"), "{err}");
    }

    #[test]
    fn bpgn_replay_resumes_after_skip() {
        let mut all = BpgnReplay::new(&game());
        let first: Vec<_> = std::iter::from_fn(|| all.next_input()).collect();
        assert_eq!(first.len(), 4);
        let mut resumed = BpgnReplay::new(&game());
        resumed.skip(3);
        assert_eq!(resumed.next_input().as_ref(), first.get(3));
        assert_eq!(resumed.next_input(), None);
    }

    #[test]
    fn missing_camera_fails_cleanly_and_is_reported() {
        let config = V4l2Config {
            device: 97,
            reconnect_min_ms: 10,
            reconnect_max_ms: 20,
            ..V4l2Config::default()
        };
        let err = open_camera(&config)
            .err()
            .expect("no camera 97 on a test machine");
        assert!(err.to_string().contains("/dev/video97"), "{err}");
        let (ctx, mut rx) = ctx();
        let stop = ctx.stop.clone();
        let thread = std::thread::spawn(move || run_v4l2(&config, &ctx));
        let first = rx.blocking_recv().unwrap();
        stop.store(true, Ordering::Relaxed);
        thread.join().unwrap();
        assert!(
            matches!(&first, SourceMessage::Notice { state, .. } if state == "camera_unavailable"),
            "{first:?}"
        );
    }

    #[test]
    fn sim_renders_the_current_position_as_jpeg() {
        let (mut ctx, mut rx) = ctx();
        let (fen_tx, fen) = watch::channel(crate::engine::Table::new().to_fen());
        ctx.fen = fen;
        let stop = ctx.stop.clone();
        let config = SimSourceConfig {
            fps: 20.0,
            width: 64,
            height: 48,
            ..SimSourceConfig::default()
        };
        let thread = std::thread::spawn(move || run_sim(&config, &ctx));
        let first = rx.blocking_recv().unwrap();
        stop.store(true, Ordering::Relaxed);
        drop(fen_tx);
        thread.join().unwrap();
        let SourceMessage::Frame(frame) = first else {
            panic!("{first:?}")
        };
        let img =
            image::load_from_memory_with_format(&frame.bytes, image::ImageFormat::Jpeg).unwrap();
        assert_eq!((img.width(), img.height()), (64, 48));
    }

    #[test]
    fn folder_replays_every_image_then_ends() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b.jpg", "a.png", "notes.txt", "c.JPEG"] {
            std::fs::write(dir.path().join(name), name).unwrap();
        }
        let (ctx, mut rx) = ctx();
        let config = FolderConfig {
            dir: dir.path().to_path_buf(),
            realtime: false,
            speed: 1.0,
            fps: 10.0,
        };
        let thread = std::thread::spawn(move || run_folder(&config, &ctx));
        let mut got = Vec::new();
        loop {
            match rx.blocking_recv().unwrap() {
                SourceMessage::Frame(f) => {
                    got.push((f.ts_ms, String::from_utf8(f.bytes.to_vec()).unwrap()))
                }
                SourceMessage::Ended => break,
                other => panic!("{other:?}"),
            }
        }
        thread.join().unwrap();
        // Names without a time: the position in the list at 10 fps.
        let want = [(0, "a.png"), (100, "b.jpg"), (200, "c.JPEG")];
        assert_eq!(got, want.map(|(t, n)| (t, n.to_string())));
    }
}
