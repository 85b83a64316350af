//! `tandem sim …`: the table simulator (renders frames with ground truth).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use tandem_monitor::sim::{self, CameraConfig, PieceSet, SimSettings};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: SimCommand,
}

#[derive(Debug, clap::Subcommand)]
enum SimCommand {
    /// Render one frame of a static table position (table FEN: "<board A> | <board B>").
    Render(RenderArgs),
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
    /// Piece set directory: dreamchess (set.cfg + .dcm) or pawn.obj … king.obj (+ set.toml).
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
    }
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
    let pieces = match &a.pieces {
        Some(dir) => {
            PieceSet::load(dir).with_context(|| format!("loading pieces from {}", dir.display()))?
        }
        None => PieceSet::default_set()?,
    };
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
