//! `tandem sim …`: the table simulator (renders frames with ground truth).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use tandem_monitor::sim::{self, CameraConfig, PieceSet, SimSettings};
use tandem_monitor::vision::RectifyConfig;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: SimCommand,
}

#[derive(Debug, clap::Subcommand)]
enum SimCommand {
    /// Render one frame of a static table position (table FEN: "<board A> | <board B>").
    Render(RenderArgs),
    /// Render a whole BPGN game as JPEG frames with hands, clock presses and per-frame truth.
    Game(GameArgs),
    /// Export per-square and pocket crops with labels for training the square classifier.
    Dataset(DatasetArgs),
}

#[derive(Debug, clap::Args)]
struct GameArgs {
    /// BPGN file.
    file: PathBuf,
    /// Which game of the file (0-based).
    #[arg(long, default_value_t = 0)]
    game: usize,
    /// Output directory (frames/, truth.jsonl, clock.jsonl, game.json).
    #[arg(long)]
    out: PathBuf,
    #[arg(long, default_value_t = 10.0)]
    fps: f64,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    #[arg(long)]
    pieces: Option<PathBuf>,
    /// Camera pose and lens from a TOML file (fields of CameraConfig).
    #[arg(long, conflicts_with = "camera_preset")]
    camera: Option<PathBuf>,
    /// Named camera pose: tripod, overhead, oblique, low-side.
    #[arg(long)]
    camera_preset: Option<String>,
    #[arg(long, default_value_t = 640)]
    width: u32,
    #[arg(long, default_value_t = 360)]
    height: u32,
    /// Incident to inject: illegal-move, hidden-pocket, drop-mate, missing-handover, slide,
    /// optionally `@N` = first eligible move at or after move index N (0-based, both boards).
    #[arg(long = "inject")]
    inject: Vec<String>,
    /// Render only the first this many seconds of the game.
    #[arg(long)]
    seconds: Option<f64>,
    /// JPEG quality of the frames.
    #[arg(long, default_value_t = 80)]
    quality: u8,
    /// Worker threads (0 = all cores).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Render without look variation, camera jitter and sensor effects.
    #[arg(long)]
    clean: bool,
    /// Only plan the timeline: write clock.jsonl and game.json, render no frames.
    #[arg(long)]
    plan_only: bool,
}

#[derive(Debug, clap::Args)]
struct DatasetArgs {
    /// Output directory. Training data: squares.u8/.csv, pockets.u8/.csv, frames.csv (raw RGB
    /// patches cut by the vision rectifier). With --sessions: one eval directory per table.
    #[arg(long)]
    out: PathBuf,
    /// Number of rendered training frames (each gives 128 square crops and 4 pocket crops).
    #[arg(long, default_value_t = 100)]
    frames: usize,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Piece set directories (repeatable); default: the dreamchess classic set (if installed)
    /// and the built-in set.
    #[arg(long)]
    pieces: Vec<PathBuf>,
    /// Camera presets, comma-separated (default: tripod,overhead; with --sessions: low-side,oblique).
    #[arg(long, value_delimiter = ',')]
    presets: Vec<String>,
    /// Render the sets as they are (no procedural scale/taper/colour variation).
    #[arg(long)]
    no_set_variation: bool,
    /// Write this many evaluation sessions per preset instead of training data.
    #[arg(long)]
    sessions: Option<usize>,
    /// Random positions per session (test rows), besides the start position (adapt rows).
    #[arg(long, default_value_t = 4)]
    positions: usize,
    /// Training camera poses: `presets` (around --presets) or `wide` (elevation 18–85°, yaw
    /// ±40°, never near the held-out presets low-side and oblique).
    #[arg(long, default_value = "presets")]
    poses: sim::dataset::PoseMode,
    /// Share of training frames whose four pockets all hold many pieces (0..=1).
    #[arg(long, default_value_t = 0.0)]
    full_pockets: f32,
    /// Share of training frames whose four pockets hold what play puts there: 0..=6 pieces,
    /// one to three most likely (0..=1; with --full-pockets at most 1 together).
    #[arg(long, default_value_t = 0.0)]
    game_pockets: f32,
    /// Frame sizes drawn from (training frames or sessions), e.g. `320x180,480x270` (default: 640x360, 800x450,
    /// 960x540, 1120x630, 1280x720).
    #[arg(long)]
    sizes: Option<String>,
    /// Share of training tables whose set is a fresh procedural Staunton design (0..=1).
    #[arg(long, default_value_t = 0.0)]
    staunton: f32,
    /// Frames per training table, the first in the start position (1 = a new table per frame).
    #[arg(long, default_value_t = 1)]
    episode: usize,
    /// Pocket patches reach this many squares beyond each side of the calibrated zone (the
    /// reader's `pocket_margin`; default: the reader's default, which the committed pocket
    /// model was trained with).
    #[arg(long)]
    pocket_margin: Option<f64>,
}

#[derive(Debug, clap::Args)]
struct RenderArgs {
    /// Table FEN: two board FENs joined by " | ", board A first; pockets as [...].
    fen: String,
    /// Output image; JPEG (quality 85) if the extension is .jpg/.jpeg, PNG otherwise.
    #[arg(long)]
    out: PathBuf,
    /// Camera pose and lens from a TOML file (fields of CameraConfig).
    #[arg(long, conflicts_with = "camera_preset")]
    camera: Option<PathBuf>,
    /// Named camera pose: tripod, overhead, oblique, low-side.
    #[arg(long)]
    camera_preset: Option<String>,
    /// Seed of every random choice (look, jitter, noise).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Piece set directory (dreamchess set.cfg + .dcm, or pawn.obj … king.obj + set.toml), or a
    /// set built in code: `geometric`, `turned`, `staunton:SEED`.
    #[arg(long)]
    pieces: Option<PathBuf>,
    /// Also write the ground truth as JSON here.
    #[arg(long)]
    truth: Option<PathBuf>,
    #[arg(long, default_value_t = 1280)]
    width: u32,
    #[arg(long, default_value_t = 720)]
    height: u32,
    /// Anti-aliasing samples per pixel side (1 = fast, 2 = smoother).
    #[arg(long, default_value_t = 1)]
    supersample: u32,
    /// Variation amplitudes from a TOML file (fields of sim::Variation).
    #[arg(long, conflicts_with = "clean")]
    variation: Option<PathBuf>,
    /// Render without look variation, camera jitter and sensor effects.
    #[arg(long)]
    clean: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    match args.command {
        SimCommand::Render(a) => render(a),
        SimCommand::Game(a) => game(a),
        SimCommand::Dataset(a) => dataset(a),
    }
}

fn camera_of(file: &Option<PathBuf>, preset: &Option<String>) -> anyhow::Result<CameraConfig> {
    Ok(match (file, preset) {
        (Some(path), _) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            CameraConfig::from_toml(&text).with_context(|| path.display().to_string())?
        }
        (None, Some(name)) => CameraConfig::preset(name)?,
        (None, None) => CameraConfig::default(),
    })
}

/// `--pieces`: a set directory, or a set built in code (`geometric`, `turned`,
/// `staunton:SEED`); none = the default set.
fn piece_set(dir: &Option<PathBuf>) -> anyhow::Result<PieceSet> {
    let Some(dir) = dir else {
        return Ok(PieceSet::default_set()?);
    };
    if let Some(set) = dir.to_str().and_then(sim::pieces::named_set) {
        return Ok(set?);
    }
    PieceSet::load(dir).with_context(|| format!("loading pieces from {}", dir.display()))
}

fn game(a: GameArgs) -> anyhow::Result<()> {
    let text = std::fs::read(&a.file).with_context(|| format!("reading {}", a.file.display()))?;
    let games = tandem_monitor::engine::bpgn::parse_bpgn(&text)
        .with_context(|| a.file.display().to_string())?;
    let g = games
        .get(a.game)
        .with_context(|| format!("{} holds {} game(s)", a.file.display(), games.len()))?;
    let requests = a
        .inject
        .iter()
        .map(|s| s.parse::<sim::game::IncidentRequest>())
        .collect::<Result<Vec<_>, _>>()?;
    let pieces = piece_set(&a.pieces)?;
    let mut settings = SimSettings {
        width: a.width,
        height: a.height,
        seed: a.seed,
        camera: camera_of(&a.camera, &a.camera_preset)?,
        // A 1024² shadow map is as sharp as the frame below 1000 px wide, at a quarter the cost.
        shadow_map: if a.width <= 960 { 1024 } else { 2048 },
        ..SimSettings::default()
    };
    if a.clean {
        settings.variation = sim::Variation::none();
    }
    let options = sim::game::GameOptions {
        fps: a.fps,
        jpeg_quality: a.quality,
        max_seconds: a.seconds,
        threads: a.threads,
        plan_only: a.plan_only,
    };
    let summary = sim::game::render_game(
        g,
        &a.file.display().to_string(),
        a.game,
        &requests,
        &pieces,
        &settings,
        &options,
        &a.out,
    )?;
    let info = &summary.info;
    println!(
        "{} frames ({:.1} s of play, {} moves) at {}×{} in {:.1} s = {:.2} frames/s, {:.1} MB → {}",
        info.frames,
        info.duration_ms as f64 / 1000.0,
        info.moves,
        info.width,
        info.height,
        summary.seconds,
        info.frames as f64 / summary.seconds.max(1e-9),
        summary.bytes as f64 / 1e6,
        a.out.display()
    );
    for i in &info.incidents {
        println!(
            "incident {}: move {} ({}{}), frames {}–{}: {}",
            i.kind.name(),
            i.move_index,
            i.board,
            i.san,
            i.frames[0],
            i.frames[1],
            i.description
        );
    }
    Ok(())
}

/// Cuts a frame's crops exactly as at run time: a manual calibration from the simulator's
/// true corners and a `vision::Rectifier` with `config` (the reader's default unless a data
/// option changes it).
fn cut_with_rectifier(
    frame: &sim::Frame,
    config: &RectifyConfig,
) -> Result<sim::dataset::FrameCrops, String> {
    use tandem_monitor::vision::{Calibration, CalibrationConfig, Rectifier};
    let t = &frame.truth;
    let corners = [0, 1].map(|b| t.boards[b].corners.map(|p| [p[0] as f64, p[1] as f64]));
    let cal = Calibration::manual(
        "sim",
        (t.width, t.height),
        corners,
        None,
        &CalibrationConfig::default(),
    )
    .map_err(|e| e.to_string())?;
    let rect = Rectifier::new(&cal, config).map_err(|e| e.to_string())?;
    let crops = rect.rectify(&frame.image).map_err(|e| e.to_string())?;
    Ok(sim::dataset::FrameCrops {
        square_size: [crops.patch_w, crops.patch_h],
        squares: crops.squares,
        pocket_size: [crops.pocket_w, crops.pocket_h],
        pockets: crops.pockets,
    })
}

fn dataset(a: DatasetArgs) -> anyhow::Result<()> {
    let t0 = Instant::now();
    let mut config = RectifyConfig::default();
    if let Some(m) = a.pocket_margin {
        config.pocket_margin = m;
    }
    // Checked once here, so that a bad value is one error rather than a skip on every frame.
    config.validate()?;
    let mut cut = |f: &sim::Frame| cut_with_rectifier(f, &config);
    let s = if let Some(sessions) = a.sessions {
        let set = match a.pieces.as_slice() {
            [one] => piece_set(&Some(one.clone()))?,
            _ => {
                anyhow::bail!("--sessions needs exactly one --pieces directory (the held-out set)")
            }
        };
        let mut opts = sim::dataset::SessionOptions {
            sessions,
            positions: a.positions,
            seed: a.seed,
            ..sim::dataset::SessionOptions::default()
        };
        if !a.presets.is_empty() {
            opts.presets = a.presets.clone();
        }
        if let Some(sizes) = &a.sizes {
            opts.frame_sizes = sim::dataset::parse_frame_sizes(sizes)?;
        }
        sim::dataset::export_sessions(&set, &opts, &mut cut, &a.out)?
    } else {
        let sets = if a.pieces.is_empty() {
            let mut v = vec![PieceSet::builtin()];
            let classic = std::path::Path::new(sim::mesh::DREAMCHESS_CLASSIC);
            if classic.join("pawn.dcm").exists() {
                v.push(PieceSet::load(classic)?);
            }
            v
        } else {
            a.pieces
                .iter()
                .map(|d| piece_set(&Some(d.clone())))
                .collect::<anyhow::Result<Vec<_>>>()?
        };
        let mut opts = sim::dataset::TrainingOptions {
            frames: a.frames,
            seed: a.seed,
            vary_sets: !a.no_set_variation,
            poses: a.poses,
            full_pockets: a.full_pockets,
            game_pockets: a.game_pockets,
            staunton: a.staunton,
            episode: a.episode,
            ..sim::dataset::TrainingOptions::default()
        };
        if !a.presets.is_empty() {
            opts.presets = a.presets.clone();
        }
        if let Some(sizes) = &a.sizes {
            opts.frame_sizes = sim::dataset::parse_frame_sizes(sizes)?;
        }
        sim::dataset::export_training(&sets, &opts, &mut cut, &a.out)?
    };
    println!(
        "{} frames ({} skipped) → {} square crops, {} pocket crops in {:.1} s → {}",
        s.frames,
        s.skipped,
        s.squares,
        s.pockets,
        t0.elapsed().as_secs_f64(),
        a.out.display()
    );
    Ok(())
}

fn render(a: RenderArgs) -> anyhow::Result<()> {
    let camera = match (&a.camera, &a.camera_preset) {
        (Some(path), _) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            CameraConfig::from_toml(&text).with_context(|| path.display().to_string())?
        }
        (None, Some(name)) => CameraConfig::preset(name)?,
        (None, None) => CameraConfig::default(),
    };
    let pieces = piece_set(&a.pieces)?;
    let mut settings = SimSettings {
        width: a.width,
        height: a.height,
        seed: a.seed,
        camera,
        supersample: a.supersample,
        ..SimSettings::default()
    };
    if a.clean {
        settings.variation = sim::Variation::none();
    }
    if let Some(path) = &a.variation {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        settings.variation = toml::from_str(&text).with_context(|| path.display().to_string())?;
    }
    let t0 = Instant::now();
    let frame = sim::render_table(&a.fen, &pieces, &settings)?;
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    frame.save(&a.out)?;
    if let Some(p) = &a.truth {
        let json = serde_json::to_string_pretty(&frame.truth)?;
        std::fs::write(p, json).with_context(|| format!("writing {}", p.display()))?;
    }
    println!(
        "rendered {}×{} with {} in {ms:.0} ms → {}",
        a.width,
        a.height,
        pieces.name,
        a.out.display()
    );
    Ok(())
}
