//! `tandem calibrate`: find both boards, a1, board A and the pockets in one frame; write the
//! calibration TOML and optionally an overlay for a person to check.

use std::path::PathBuf;

use anyhow::Context;
use tandem_monitor::vision::{self, Calibration, CalibrationConfig, CalibrationError};

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
    let frame = image::open(&args.frame)
        .with_context(|| format!("reading {}", args.frame.display()))?
        .to_rgb8();
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
    Ok(())
}
