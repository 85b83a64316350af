//! `tandem calibrate`: find both boards, a1, board A and the pockets in one frame; write the
//! calibration TOML and optionally an overlay for a person to check. `tandem classify`: read a
//! frame with a calibration (optionally adapting to the piece set on a start frame first).
//! `tandem eval squares`: score the square classifier on labelled patch sets.

use std::path::PathBuf;

use anyhow::Context;
use tandem_monitor::engine::{BoardId, Color};
use tandem_monitor::sim::fen::square_name;
use tandem_monitor::tracker::SquareClass;
use tandem_monitor::vision::evaluate::{class_label, evaluate_pockets, evaluate_squares};
use tandem_monitor::vision::{
    self, Calibration, CalibrationConfig, CalibrationError, ClassifierConfig, Descriptor,
    FrameReader, PocketConfig, PocketReader, ReaderConfig, SquareClassifier,
};

#[derive(Debug, clap::Args)]
pub struct CalibrateArgs {
    /// A frame of the table (start position or empty boards), PNG or JPEG.
    frame: PathBuf,
    /// Table id; the calibration goes to calibration/<table>.toml unless --out is given.
    #[arg(long)]
    table: String,
    /// Where to write the calibration TOML.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Also draw the calibration onto the frame and save it here (PNG).
    #[arg(long)]
    overlay: Option<PathBuf>,
    /// Corners by hand when detection fails: "A:x,y;x,y;x,y;x,y B:…" (a1, h1, h8, a8 in pixels).
    #[arg(long)]
    corners: Option<String>,
}

pub fn calibrate(args: CalibrateArgs) -> anyhow::Result<()> {
    if args.table.is_empty()
        || !args
            .table
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        anyhow::bail!("--table must be letters, digits, '-' or '_' (it names the file)");
    }
    let frame = tandem_monitor::vision::load_frame(&args.frame)
        .with_context(|| format!("reading {}", args.frame.display()))?;
    let config = CalibrationConfig::default();
    let cal = match &args.corners {
        Some(text) => {
            let corners = vision::parse_corners(text)?;
            Calibration::manual(
                &args.table,
                (frame.width(), frame.height()),
                corners,
                Some(&frame),
                &config,
            )?
        }
        None => match Calibration::detect(&frame, &args.table, &config) {
            Ok(c) => c,
            Err(e @ CalibrationError::NotFound(_)) => return Err(e.into()),
            Err(e) => return Err(e).context("calibrating"),
        },
    };
    let out = args
        .out
        .unwrap_or_else(|| PathBuf::from(format!("calibration/{}.toml", args.table)));
    cal.save(&out)?;
    if let Some(path) = &args.overlay {
        vision::overlay::draw(&frame, &cal)
            .save(path)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    println!(
        "calibrated table {} ({}, quality {:.2}) → {}",
        cal.table,
        cal.method,
        cal.quality,
        out.display()
    );
    for b in &cal.boards {
        let c = b.corners;
        println!(
            "board {}: a1 ({:.1}, {:.1}) h1 ({:.1}, {:.1}) h8 ({:.1}, {:.1}) a8 ({:.1}, {:.1}), orientation {:?}",
            b.label,
            c[0][0],
            c[0][1],
            c[1][0],
            c[1][1],
            c[2][0],
            c[2][1],
            c[3][0],
            c[3][1],
            b.orientation
        );
    }
    // A pocket zone the camera does not see whole cannot show a missing piece; say so now, not
    // when the first alert fails to come.
    let min = PocketConfig::default().min_in_view;
    for (k, zone) in ZONE_NAMES.iter().enumerate() {
        let seen = zone_in_view(&cal, k);
        if seen < 1.0 {
            let effect = if seen < min {
                "nothing missing from it will be alerted on"
            } else {
                "pieces in the rest of it cannot be read"
            };
            eprintln!(
                "warning: pocket zone {zone} is {:.0} % inside the frame; {effect} \
                 ([reader.pockets] min_in_view = {min}); aim the camera so that it sees all four \
                 pockets",
                seen * 100.0
            );
        }
    }
    Ok(())
}

/// `tandem classify`: read one frame with a calibration and print every square's label.
#[derive(Debug, clap::Args)]
pub struct ClassifyArgs {
    /// The frame to read (PNG or JPEG, the calibrated size).
    frame: PathBuf,
    /// The table's calibration TOML (from `tandem calibrate`).
    #[arg(long)]
    calibration: PathBuf,
    /// Print one JSON object (per square: label and probability; per pocket: counts).
    #[arg(long)]
    json: bool,
    /// Adapt to the table first from a frame of the same table and camera showing both boards in
    /// the start position (its 128 squares become labelled samples of this piece set).
    #[arg(long, value_name = "START_FRAME")]
    adapt_start: Option<PathBuf>,
    /// Reader settings (TOML: [rectify], [classifier], [pockets], without_pockets).
    #[arg(long)]
    config: Option<PathBuf>,
    /// The square model (default: models/squares.onnx found beside the working directory, the
    /// executable or the checkout; or $TANDEM_MODELS_DIR).
    #[arg(long)]
    squares_model: Option<PathBuf>,
    /// The pocket model (default: models/pockets.onnx, found the same way).
    #[arg(long)]
    pockets_model: Option<PathBuf>,
}

fn read_frame(path: &std::path::Path) -> anyhow::Result<image::RgbImage> {
    tandem_monitor::vision::load_frame(path)
        .with_context(|| format!("cannot read image {}", path.display()))
}

fn reader_config(
    path: Option<&std::path::Path>,
    squares: Option<PathBuf>,
    pockets: Option<PathBuf>,
) -> anyhow::Result<ReaderConfig> {
    let mut config = match path {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("cannot read {}", p.display()))?;
            toml::from_str::<ReaderConfig>(&text)
                .with_context(|| format!("{} is not a valid reader config", p.display()))?
        }
        None => ReaderConfig::default(),
    };
    if squares.is_some() {
        config.classifier.model = squares;
    }
    if pockets.is_some() {
        config.pockets.model = pockets;
    }
    Ok(config)
}

fn placement(labels: &[(SquareClass, f32)]) -> String {
    let mut out = String::new();
    for rank in (0..8).rev() {
        let mut gap = 0;
        for file in 0..8 {
            match labels[rank * 8 + file].0.piece() {
                None => gap += 1,
                Some(p) => {
                    if gap > 0 {
                        out.push_str(&gap.to_string());
                        gap = 0;
                    }
                    out.push(p.char());
                }
            }
        }
        if gap > 0 {
            out.push_str(&gap.to_string());
        }
        if rank > 0 {
            out.push('/');
        }
    }
    out
}

/// The pocket zones in reading order (board A's White and Black, then board B's).
const ZONE_NAMES: [&str; 4] = ["A White", "A Black", "B White", "B Black"];

/// The fraction of zone `k` (in [`ZONE_NAMES`] order) inside the calibrated frame.
fn zone_in_view(cal: &Calibration, k: usize) -> f64 {
    cal.pocket_in_view([BoardId::A, BoardId::B][k / 2], Color::ALL[k % 2])
}

pub fn classify(args: ClassifyArgs) -> anyhow::Result<()> {
    let cal = Calibration::load(&args.calibration)?;
    let config = reader_config(
        args.config.as_deref(),
        args.squares_model,
        args.pockets_model,
    )?;
    let frame = read_frame(&args.frame)?;
    let mut reader = FrameReader::new(&cal, &config)?;
    if let Some(start) = &args.adapt_start {
        let start_frame = read_frame(start)?;
        reader
            .read(&start_frame)
            .with_context(|| format!("reading the start frame {}", start.display()))?;
        reader.adapt_start_from_last()?;
    }
    let reading = reader.read(&frame)?;
    let zones = ZONE_NAMES;
    if args.json {
        let boards: Vec<serde_json::Value> = [BoardId::A, BoardId::B]
            .iter()
            .map(|&b| {
                let labels = reading.labels(b);
                let squares: Vec<serde_json::Value> = labels
                    .iter()
                    .enumerate()
                    .map(|(i, (c, p))| {
                        serde_json::json!({
                            "square": square_name(i),
                            "label": class_label(*c),
                            "probability": p,
                        })
                    })
                    .collect();
                serde_json::json!({
                    "board": b.to_string(),
                    "placement": placement(&labels),
                    "squares": squares,
                })
            })
            .collect();
        let pockets: Vec<serde_json::Value> = reading
            .pockets
            .iter()
            .flat_map(|p| p.zones.iter().enumerate())
            .map(|(k, z)| {
                let c = z.counts;
                serde_json::json!({
                    "zone": zones[k],
                    "board": if k < 2 { "A" } else { "B" },
                    "color": if k % 2 == 0 { "white" } else { "black" },
                    "counts": {"P": c[0], "N": c[1], "B": c[2], "R": c[3], "Q": c[4]},
                    "confidence": z.min_confidence(),
                    "in_view": zone_in_view(&cal, k),
                })
            })
            .collect();
        let out = serde_json::json!({
            "frame": args.frame.display().to_string(),
            "table": cal.table,
            "adapted": args.adapt_start.is_some(),
            "boards": boards,
            "pockets": pockets,
        });
        println!("{}", serde_json::to_string(&out)?);
    } else {
        for b in [BoardId::A, BoardId::B] {
            let labels = reading.labels(b);
            let least = labels.iter().map(|l| l.1).fold(1.0f32, f32::min);
            println!(
                "board {b}: {} (least certain square {:.3})",
                placement(&labels),
                least
            );
        }
        if let Some(p) = &reading.pockets {
            for (k, z) in p.zones.iter().enumerate() {
                let c = z.counts;
                println!(
                    "pocket {}: P{} N{} B{} R{} Q{} (confidence {:.3}, {:.0} % in view)",
                    zones[k],
                    c[0],
                    c[1],
                    c[2],
                    c[3],
                    c[4],
                    z.min_confidence(),
                    zone_in_view(&cal, k) * 100.0
                );
            }
        }
    }
    Ok(())
}

/// `tandem eval squares`: adapt on the `adapt` rows, score the `test` rows.
#[derive(Debug, clap::Args)]
pub struct SquaresArgs {
    /// A directory with labels.csv (path,label,split), or a parent of such session directories.
    #[arg(long)]
    dataset: PathBuf,
    /// Print the report as one JSON object (the default prints a short summary).
    #[arg(long)]
    json: bool,
    /// The square model (default: models/squares.onnx, see `tandem classify --help`).
    #[arg(long)]
    model: Option<PathBuf>,
    /// Weight of the k-NN vote in [0, 1] (0 = network only).
    #[arg(long)]
    mix: Option<f32>,
    /// Softmax temperature over cosine similarities.
    #[arg(long)]
    temperature: Option<f32>,
    /// Samples per class averaged into its similarity.
    #[arg(long)]
    neighbours: Option<usize>,
    /// The same for a square's embedding vote beside the features (descriptor `both`).
    #[arg(long)]
    embedding_neighbours: Option<usize>,
    /// Fit --mix and --temperature per session on the adapt rows (leave-one-out) instead of
    /// using them as given.
    #[arg(long)]
    fit: bool,
    /// Also classify every patch mirrored and average the two (test-time augmentation; on by
    /// default).
    #[arg(long)]
    mirror: Option<bool>,
    /// What the k-NN vote compares: embedding, features (whitened per table) or both.
    #[arg(long)]
    descriptor: Option<Descriptor>,
    /// Softmax temperature over the whitened features' cosine similarities.
    #[arg(long)]
    feature_temperature: Option<f32>,
    /// Shrinkage of the per-table whitening of the features, in (0, 1] (1 = none).
    #[arg(long)]
    shrinkage: Option<f32>,
}

pub fn eval_squares(args: SquaresArgs) -> anyhow::Result<()> {
    let mut config = ClassifierConfig {
        model: args.model,
        ..ClassifierConfig::default()
    };
    if config.model.is_none() {
        config.model = Some(vision::find_model("squares.onnx")?);
    }
    config.mix = args.mix.unwrap_or(config.mix);
    config.temperature = args.temperature.unwrap_or(config.temperature);
    config.neighbours = args.neighbours.unwrap_or(config.neighbours);
    config.embedding_neighbours = args
        .embedding_neighbours
        .unwrap_or(config.embedding_neighbours);
    config.fit_mixture = args.fit;
    config.mirror = args.mirror.unwrap_or(config.mirror);
    config.descriptor = args.descriptor.unwrap_or(config.descriptor);
    config.feature_temperature = args
        .feature_temperature
        .unwrap_or(config.feature_temperature);
    config.shrinkage = args.shrinkage.unwrap_or(config.shrinkage);
    config.validate()?;
    let mut classifier = SquareClassifier::load(&config)?;
    let report = evaluate_squares(&mut classifier, &args.dataset)?;
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!(
            "{} session(s), {} adapt rows, {} test rows: accuracy {:.5} (without adaptation {:.5})",
            report.sessions,
            report.adapt_rows,
            report.test_rows,
            report.accuracy,
            report.accuracy_without_adaptation
        );
        for e in report.errors.iter().take(5) {
            println!("  {} read as {}: {}", e.truth, e.predicted, e.count);
        }
    }
    Ok(())
}

/// `tandem eval pockets`: count every pocket patch of a labelled set and compare.
#[derive(Debug, clap::Args)]
pub struct PocketsArgs {
    /// A directory with pockets.csv (path,P,N,B,R,Q,split), or a parent of such directories.
    #[arg(long)]
    dataset: PathBuf,
    /// Print the report as one JSON object.
    #[arg(long)]
    json: bool,
    /// The pocket model (default: models/pockets.onnx).
    #[arg(long)]
    model: Option<PathBuf>,
}

pub fn eval_pockets(args: PocketsArgs) -> anyhow::Result<()> {
    let config = PocketConfig {
        model: args.model,
        ..PocketConfig::default()
    };
    let mut reader = PocketReader::load(&config)?;
    let report = evaluate_pockets(&mut reader, &args.dataset)?;
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!(
            "{} pocket(s) in {} session(s): {} exactly right ({:.4})",
            report.pockets, report.sessions, report.exact, report.exact_fraction
        );
    }
    Ok(())
}
