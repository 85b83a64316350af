//! `tandem watch` (frames → vision → tracker → events as JSON lines), `tandem eval game`,
//! `tandem eval games` and `tandem eval motion` (watched simulated games against their truth).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use tandem_monitor::daemon::{V4l2Config, open_camera};
use tandem_monitor::rules::{Event, RuleSet};
use tandem_monitor::vision::Calibration;
use tandem_monitor::watch::eval::{
    GameEval, GameEvalOptions, GamesSummary, TimedEvent, eval_game, eval_motion, watch_frames,
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
    #[command(flatten)]
    watch: EvalWatchArgs,
    /// The BPGN record the game was rendered from (default: game.json's `source`).
    #[arg(long)]
    games: Option<PathBuf>,
    /// Write every tracker decision (board, time, best and runner-up hypotheses, margin,
    /// whether it committed, unexplained squares) to FILE as JSON lines.
    #[arg(long)]
    trace: Option<PathBuf>,
}

/// How `eval game` and `eval games` watch a simulated game.
#[derive(Debug, clap::Args)]
pub struct EvalWatchArgs {
    #[arg(long, default_value = "fics")]
    rules: String,
    /// Do not feed clock.jsonl (moves are then committed at stability).
    #[arg(long)]
    no_clock: bool,
    #[arg(long, value_enum, default_value_t = ReaderKind::Onnx)]
    reader: ReaderKind,
    /// Watch configuration overrides (TOML: [motion], [tracker]).
    #[arg(long)]
    config: Option<PathBuf>,
}

impl EvalWatchArgs {
    fn options(&self, games: Option<PathBuf>, trace: bool) -> anyhow::Result<GameEvalOptions> {
        Ok(GameEvalOptions {
            rules: RuleSet::load(&self.rules)?,
            watch: load_config(self.config.as_deref())?,
            clock: !self.no_clock,
            games,
            trace,
        })
    }
}

#[derive(Debug, clap::Args)]
pub struct EvalGamesArgs {
    /// Simulated game directories, watched one after another.
    #[arg(required = true)]
    dirs: Vec<PathBuf>,
    /// Print one JSON object: the summary and a row per game.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    watch: EvalWatchArgs,
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
    // Whether the frame before was undecodable: one status per run of such frames.
    let mut failing = false;
    loop {
        let buffer = camera
            .frame()
            .with_context(|| format!("camera /dev/video{device} stopped"))?;
        let ts = start.elapsed().as_millis() as u64;
        let events = match buffer.decode_image::<nokhwa::pixel_format::RgbFormat>() {
            Ok(img) => {
                failing = false;
                watcher.frame(&img, ts)?.0
            }
            Err(_) if failing => continue,
            Err(e) => {
                failing = true;
                vec![watcher.unreadable_frame(ts, format!("camera /dev/video{device}: {e}"))]
            }
        };
        for e in &events {
            print_event(e, json)?;
        }
    }
}

/// Watches the simulated game in `dir` with `kind`'s reader and scores it.
fn eval_dir(dir: &Path, kind: ReaderKind, opts: &GameEvalOptions) -> anyhow::Result<GameEval> {
    let game = SimGameDir::load(dir)?;
    Ok(eval_game(
        &game,
        |g, cal| match kind {
            ReaderKind::Truth => Ok(Box::new(TruthReader::new(g, 0.97)?) as Box<dyn TableReader>),
            ReaderKind::Onnx => onnx_reader(cal, &opts.watch)
                .map_err(|e| tandem_monitor::watch::WatchError::Reader(e.to_string())),
        },
        opts,
    )?)
}

pub fn eval_game_cmd(args: EvalGameArgs) -> anyhow::Result<()> {
    let opts = args
        .watch
        .options(args.games.clone(), args.trace.is_some())?;
    let report = eval_dir(&args.dir, args.watch.reader, &opts)?;
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

/// One game's row in `eval games --json`.
#[derive(Debug, serde::Serialize)]
struct GameRow<'a> {
    dir: &'a str,
    calibration: &'a str,
    moves_right: usize,
    moves_truth: usize,
    moves_committed: usize,
    game_all_right: bool,
    false_alerts: usize,
    desyncs: usize,
    latency_p99_ms: f64,
}

pub fn eval_games_cmd(args: EvalGamesArgs) -> anyhow::Result<()> {
    let opts = args.watch.options(None, false)?;
    let mut summary = GamesSummary::default();
    let mut reports = Vec::new();
    let mut failed = Vec::new();
    for dir in &args.dirs {
        match eval_dir(dir, args.watch.reader, &opts) {
            Ok(report) => {
                summary.add(&report);
                if !args.json {
                    println!(
                        "{}: moves right {}/{}, all right {}, false alerts {}, desyncs {}, calibration {}, latency p99 {:.1} ms",
                        report.dir,
                        report.moves_right,
                        report.moves_truth,
                        report.game_all_right,
                        report.false_alerts,
                        report.desyncs,
                        report.calibration,
                        report.latency_ms.p99
                    );
                }
                reports.push(report);
            }
            // One broken directory does not cost the others' figures; it is named here and
            // fails the command at the end.
            Err(e) => {
                eprintln!("error: {}: {e:#}", dir.display());
                failed.push(dir.display().to_string());
            }
        }
    }
    if args.json {
        let games: Vec<GameRow> = reports
            .iter()
            .map(|r| GameRow {
                dir: &r.dir,
                calibration: &r.calibration,
                moves_right: r.moves_right,
                moves_truth: r.moves_truth,
                moves_committed: r.moves_committed,
                game_all_right: r.game_all_right,
                false_alerts: r.false_alerts,
                desyncs: r.desyncs,
                latency_p99_ms: r.latency_ms.p99,
            })
            .collect();
        println!(
            "{}",
            serde_json::json!({ "summary": summary, "games": games, "failed": failed })
        );
    } else {
        let s = &summary;
        println!(
            "{} games: moves right {}/{} ({:.4}), all right {}, false alerts {} ({:.2} per game), desyncs {}, truth calibrations {}",
            s.games,
            s.moves_right,
            s.moves_truth,
            s.move_accuracy,
            s.games_all_right,
            s.false_alerts,
            s.false_alerts_per_game,
            s.desyncs,
            s.truth_calibrations
        );
        for i in &s.incidents {
            println!(
                "  {}: detected {}/{}, alerts {} ({} matched); not counted: {} out of view, {} undetectable",
                i.kind,
                i.detected,
                i.injected,
                i.alerts,
                i.alerts_matched,
                i.out_of_view,
                i.undetectable
            );
        }
        let p = &s.pockets;
        println!(
            "  pockets: zones exactly right {}/{}, occupied {}/{}, unoccluded {}/{} (occupied {}/{})",
            p.exact,
            p.zones,
            p.occupied_exact,
            p.occupied,
            p.seen_exact,
            p.seen,
            p.seen_occupied_exact,
            p.seen_occupied
        );
        println!(
            "  latency: worst game's p99 {:.1} ms, median of the games' p50 {:.2} ms, p99 of all \
             move events {:.1} ms",
            s.latency_p99_worst_ms, s.latency_p50_median_ms, s.latency_p99_pooled_ms
        );
    }
    if !failed.is_empty() {
        bail!(
            "{} of {} game directories failed",
            failed.len(),
            args.dirs.len()
        );
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
