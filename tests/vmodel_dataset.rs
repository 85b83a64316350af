//! Classifier data cut by the run-time rectifier: evaluation sessions in the layout that
//! `tandem eval squares --dataset DIR` reads (labels.csv `path,label,split`).

use tandem_monitor::sim::dataset::{FrameCrops, SessionOptions, export_sessions};
use tandem_monitor::sim::{Frame, PieceSet};
use tandem_monitor::vision::{Calibration, CalibrationConfig, Rectifier, RectifyConfig};

fn cut(frame: &Frame) -> Result<FrameCrops, String> {
    let t = &frame.truth;
    let corners = [0, 1].map(|b| t.boards[b].corners.map(|p| [p[0] as f64, p[1] as f64]));
    let cal = Calibration::manual(
        "t",
        (t.width, t.height),
        corners,
        None,
        &CalibrationConfig::default(),
    )
    .map_err(|e| e.to_string())?;
    let c = Rectifier::new(&cal, &RectifyConfig::default())
        .and_then(|r| r.rectify(&frame.image))
        .map_err(|e| e.to_string())?;
    Ok(FrameCrops {
        square_size: [c.patch_w, c.patch_h],
        squares: c.squares,
        pocket_size: [c.pocket_w, c.pocket_h],
        pockets: c.pockets,
    })
}

#[test]
fn sessions_hold_start_position_adapt_rows_and_random_test_rows() {
    let out = tempfile::tempdir().expect("tempdir");
    let opts = SessionOptions {
        sessions: 1,
        positions: 1,
        seed: 7,
        presets: vec!["tripod".into()],
        ..SessionOptions::default()
    };
    let s = export_sessions(&PieceSet::builtin(), &opts, &mut cut, out.path()).expect("export");
    assert_eq!((s.frames, s.skipped, s.squares, s.pockets), (2, 0, 256, 8));
    let dir = out.path().join("tripod-00");
    let labels = std::fs::read_to_string(dir.join("labels.csv")).expect("labels");
    let occluded = std::fs::read_to_string(dir.join("occluded.csv")).expect("occluded");
    let mut lines = labels.lines();
    assert_eq!(lines.next(), Some("path,label,split"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let adapt: Vec<&Vec<&str>> = rows.iter().filter(|r| r[2] == "adapt").collect();
    assert_eq!(adapt.len(), 128, "the whole start position adapts");
    let count = |l: &str| adapt.iter().filter(|r| r[1] == l).count();
    assert_eq!(
        [
            count("empty"),
            count("P"),
            count("p"),
            count("N"),
            count("k")
        ],
        [64, 16, 16, 4, 2]
    );
    // Every test square is either a test row or listed as occluded.
    let tests = rows.iter().filter(|r| r[2] == "test").count();
    assert_eq!(tests + occluded.lines().count() - 1, 128);
    // Crops are the contract's 48×64 patches; a1 of board A holds White's rook at the start.
    assert!(
        adapt
            .iter()
            .any(|r| r[0] == "squares/00_A_a1.png" && r[1] == "R")
    );
    let img = image::open(dir.join("squares/00_A_a1.png")).expect("png");
    assert_eq!((img.width(), img.height()), (48, 64));
    let pocket = image::open(dir.join("pockets/00_B_b.png")).expect("pocket png");
    assert_eq!((pocket.width(), pocket.height()), (96, 128));
    let pockets = std::fs::read_to_string(dir.join("pockets.csv")).expect("pockets.csv");
    assert_eq!(pockets.lines().count(), 1 + 8);
    assert!(pockets.contains("pockets/00_A_w.png,0,0,0,0,0,adapt"));
    let index = std::fs::read_to_string(out.path().join("sessions.csv")).expect("index");
    assert!(
        index
            .lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("tripod-00,tripod,"))
    );
}
