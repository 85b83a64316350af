//! `tandem watch` (frames → vision → tracker → events as JSON lines), `tandem eval game` and
//! `tandem eval motion` (a watched simulated game against its truth).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use tandem_monitor::daemon::{V4l2Config, open_camera};
use tandem_monitor::rules::{Event, RuleSet};
use tandem_monitor::vision::Calibration;
use tandem_monitor::watch::eval::{
    GameEvalOptions, TimedEvent, eval_game, eval_motion, watch_frames,
};
use tandem_monitor::watch::{
    ClockFeed, OnnxReader, SimGameDir, TableReader, TruthReader, WatchConfig, Watcher, list_frames,
    new_tracker,
};

/// Which reader turns frames into square probabilities.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReaderKind {
    /// The ONNX square classifier and pocket reader (`models/`).
    Onnx,
    /// The simulator's ground truth (a simulated game directory only): measures motion and
    /// tracking without the classifier; never a vision result.
    Truth,
}

#[derive(Debug, clap::Args)]
pub struct WatchArgs {
    /// A folder of frames (or a simulated game directory with `frames/`), or `camera:N`.
    #[arg(long)]
    source: String,
    /// The table's calibration (`tandem calibrate`).
    #[arg(long)]
    calibration: PathBuf,
    /// Rule set: a preset name or a TOML file.
    #[arg(long)]
    rules: String,
    /// Clock presses as JSON lines (`ts_ms`, `board`, optionally `color`: who pressed), e.g. a
    /// simulated game's clock.jsonl.
    #[arg(long)]
    clock: Option<PathBuf>,
    /// Print events as JSON lines (default: one readable line per event).
    #[arg(long)]
    json: bool,
    /// Frames per second for folders whose file names carry no time (default: game.json's, or 10).
    #[arg(long)]
    fps: Option<f64>,
    #[arg(long, value_enum, default_value_t = ReaderKind::Onnx)]
    reader: ReaderKind,
    /// Watch configuration overrides (TOML: [motion], [tracker]).
    #[arg(long)]
    config: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct EvalGameArgs {
    /// A simulated game directory (frames/, truth.jsonl, clock.jsonl, game.json).
    dir: PathBuf,
    /// Print the report as one JSON object.
    #[arg(long)]
    json: bool,
    #[arg(long, default_value = "fics")]
    rules: String,
    /// Do not feed clock.jsonl (moves are then committed at stability).
    #[arg(long)]
    no_clock: bool,
    #[arg(long, value_enum, default_value_t = ReaderKind::Onnx)]
    reader: ReaderKind,
    /// The BPGN record the game was rendered from (default: game.json's `source`).
    #[arg(long)]
    games: Option<PathBuf>,
    /// Watch configuration overrides (TOML: [motion], [tracker]).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Write every tracker decision (board, time, best and runner-up hypotheses, margin,
    /// whether it committed, unexplained squares) to FILE as JSON lines.
    #[arg(long)]
    trace: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct EvalMotionArgs {
    /// A simulated game directory.
    dir: PathBuf,
    #[arg(long)]
    json: bool,
    #[arg(long)]
    config: Option<PathBuf>,
    /// Write one JSON line per frame (truth hands, motion cues) to this file.
    #[arg(long)]
    trace: Option<PathBuf>,
}

fn load_config(path: Option<&Path>) -> anyhow::Result<WatchConfig> {
    match path {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("cannot read {}", p.display()))?;
            Ok(WatchConfig::from_toml(&text)?)
        }
        None => Ok(WatchConfig::default()),
    }
}

fn onnx_reader(cal: &Calibration, cfg: &WatchConfig) -> anyhow::Result<Box<dyn TableReader>> {
    let reader = OnnxReader::new(cal, &cfg.reader)?;
    if !reader.has_pockets() {
        eprintln!("warning: no pocket model: reading squares only (no pocket alerts)");
    }
    Ok(Box::new(reader))
}

fn print_event(e: &Event, json: bool) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string(e)?)?;
    } else {
        let v = serde_json::to_value(e)?;
        let kind = v.get("type").and_then(|t| t.as_str()).unwrap_or("?");
        let board = e.board.map(|b| format!(" {b:?}")).unwrap_or_default();
        let detail = v
            .get("san")
            .or_else(|| v.get("text"))
            .or_else(|| v.get("detail"))
            .and_then(|t| t.as_str())
            .unwrap_or("");
        writeln!(out, "{:>8} ms {kind}{board} {detail}", e.ts)?;
    }
    out.flush()?;
    Ok(())
}

pub fn watch(args: WatchArgs) -> anyhow::Result<()> {
    let rules = RuleSet::load(&args.rules)?;
    let cal = Calibration::load(&args.calibration)?;
    let cfg = load_config(args.config.as_deref())?;
    let clock = match &args.clock {
        Some(p) => Some(ClockFeed::load(p)?),
        None => None,
    };
    if let Some(n) = args.source.strip_prefix("camera:") {
        let device: u32 = n
            .parse()
            .with_context(|| format!("camera:{n}: the device must be a number"))?;
        return watch_camera(device, &cal, rules, &cfg, args.reader, args.json);
    }
    let dir = PathBuf::from(&args.source);
    let sim = dir.join("game.json").exists() && dir.join("frames").is_dir();
    let (frames_dir, game) = if sim {
        (dir.join("frames"), Some(SimGameDir::load(&dir)?))
    } else {
        (dir.clone(), None)
    };
    let fps = args
        .fps
        .or(game.as_ref().map(|g| g.info.fps))
        .unwrap_or(10.0);
    let frames = list_frames(&frames_dir, fps)?;
    let reader: Box<dyn TableReader> = match (args.reader, &game) {
        (ReaderKind::Onnx, _) => onnx_reader(&cal, &cfg)?,
        (ReaderKind::Truth, Some(g)) => Box::new(TruthReader::new(g, 0.97)?),
        (ReaderKind::Truth, None) => {
            bail!("--reader truth needs a simulated game directory (game.json, truth.jsonl)")
        }
    };
    let tracker = new_tracker(&cal.table, rules, &cfg)?;
    let mut watcher = Watcher::new(&cal, reader, tracker, &cfg)?;
    let json = args.json;
    watch_frames(&mut watcher, &frames, clock, |e: &TimedEvent| {
        print_event(&e.event, json)
            .map_err(|e| tandem_monitor::watch::WatchError::Reader(e.to_string()))
    })?;
    Ok(())
}

fn watch_camera(
    device: u32,
    cal: &Calibration,
    rules: RuleSet,
    cfg: &WatchConfig,
    reader: ReaderKind,
    json: bool,
) -> anyhow::Result<()> {
    if reader == ReaderKind::Truth {
        bail!("--reader truth needs a simulated game directory, not a camera");
    }
    let config = V4l2Config {
        device,
        width: cal.width,
        height: cal.height,
        ..V4l2Config::default()
    };
    let mut camera = open_camera(&config)?;
    let reader = onnx_reader(cal, cfg)?;
    let tracker = new_tracker(&cal.table, rules, cfg)?;
    let mut watcher = Watcher::new(cal, reader, tracker, cfg)?;
    let start = std::time::Instant::now();
    loop {
        let buffer = camera
            .frame()
            .with_context(|| format!("camera /dev/video{device} stopped"))?;
        let img = buffer
            .decode_image::<nokhwa::pixel_format::RgbFormat>()
            .with_context(|| format!("camera /dev/video{device}: undecodable frame"))?;
        let ts = start.elapsed().as_millis() as u64;
        let (events, _) = watcher.frame(&img, ts)?;
        for e in &events {
            print_event(e, json)?;
        }
    }
}

pub fn eval_game_cmd(args: EvalGameArgs) -> anyhow::Result<()> {
    let game = SimGameDir::load(&args.dir)?;
    let opts = GameEvalOptions {
        rules: RuleSet::load(&args.rules)?,
        watch: load_config(args.config.as_deref())?,
        clock: !args.no_clock,
        games: args.games.clone(),
        trace: args.trace.is_some(),
    };
    let kind = args.reader;
    let report = eval_game(
        &game,
        |g, cal| match kind {
            ReaderKind::Truth => Ok(Box::new(TruthReader::new(g, 0.97)?) as Box<dyn TableReader>),
            ReaderKind::Onnx => onnx_reader(cal, &opts.watch)
                .map_err(|e| tandem_monitor::watch::WatchError::Reader(e.to_string())),
        },
        &opts,
    )?;
    if let Some(path) = &args.trace {
        write_json_lines(path, &report.decisions)?;
    }
    if report.calibration == "truth" {
        eprintln!(
            "warning: calibration from the TRUTH corners ({})",
            report
                .calibration_detail
                .fallback_reason
                .as_deref()
                .unwrap_or("detection not used")
        );
    }
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!(
            "{}: reader {}, calibration {}, moves right {}/{} ({:.4}), game all right {}, false alerts {}, latency p50 {:.2} ms p99 {:.2} ms",
            report.dir,
            report.reader,
            report.calibration,
            report.moves_right,
            report.moves_truth,
            report.move_accuracy,
            report.game_all_right,
            report.false_alerts,
            report.latency_ms.p50,
            report.latency_ms.p99
        );
        for (board, c) in ["A", "B"].iter().zip(&report.courses) {
            if let Some(k) = c.first_wrong {
                println!(
                    "  board {board}: astray from move {} ({})",
                    k + 1,
                    if c.desync_raised {
                        "desync raised"
                    } else {
                        "no desync raised"
                    }
                );
            }
        }
        let r = &report.readings;
        println!(
            "  sure moves right {}/{}, guesses right {}/{}",
            r.sure.right, r.sure.committed, r.guessed.right, r.guessed.committed
        );
        for s in &report.incidents {
            if s.injected > 0 || s.alerts > 0 || s.out_of_view > 0 {
                println!(
                    "  {}: detected {}/{}, alerts {} ({} matched); not counted: {} out of view, {} undetectable",
                    s.kind,
                    s.detected,
                    s.injected,
                    s.alerts,
                    s.alerts_matched,
                    s.out_of_view,
                    s.undetectable
                );
            }
        }
    }
    Ok(())
}

pub fn eval_motion_cmd(args: EvalMotionArgs) -> anyhow::Result<()> {
    let game = SimGameDir::load(&args.dir)?;
    let cfg = load_config(args.config.as_deref())?;
    let (report, cal) = eval_motion(&game, &cfg)?;
    if let Some(path) = &args.trace {
        write_json_lines(path, &report.trace)?;
    }
    if args.json {
        let mut v = serde_json::to_value(&report)?;
        v["calibration"] = cal.into();
        println!("{v}");
    } else {
        println!(
            "calibration {cal}: hand frames {} (calm {}), over the board {} (calm {}, stable {}), free {} (moving {}), motion p50 {:.3} ms p99 {:.3} ms",
            report.hand_frames,
            report.hand_frames_calm,
            report.over_board_frames,
            report.over_board_calm,
            report.over_board_stable,
            report.free_frames,
            report.free_frames_moving,
            report.motion_ms.p50,
            report.motion_ms.p99
        );
    }
    Ok(())
}

/// Writes `rows` to `path`, one JSON object per line.
pub(super) fn write_json_lines<T: serde::Serialize>(
    path: &std::path::Path,
    rows: &[T],
) -> anyhow::Result<()> {
    let mut text = String::new();
    for row in rows {
        text.push_str(&serde_json::to_string(row)?);
        text.push('\n');
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}
