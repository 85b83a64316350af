//! `tandem calibrate` end to end: a rendered frame in, a loadable calibration and an overlay
//! out; manual corners; a clear message when detection fails.

use std::process::Command;

use tandem_monitor::sim::{self, CameraConfig, PieceSet, SimSettings};
use tandem_monitor::vision::Calibration;

const START: &str =
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR | rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR";

fn tandem() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tandem"))
}

#[test]
fn calibrate_writes_toml_and_overlay() {
    let dir = tempfile::tempdir().unwrap();
    let settings = SimSettings {
        width: 800,
        height: 450,
        seed: 21,
        camera: CameraConfig::preset("overhead").unwrap(),
        shadow_map: 1024,
        ..SimSettings::default()
    };
    let frame = sim::render_table(START, &PieceSet::builtin(), &settings).unwrap();
    let png = dir.path().join("frame.png");
    frame.save(&png).unwrap();
    let toml = dir.path().join("cal/t7.toml");
    let overlay = dir.path().join("overlay.png");
    let out = tandem()
        .args(["calibrate", png.to_str().unwrap(), "--table", "t7", "--out"])
        .arg(&toml)
        .arg("--overlay")
        .arg(&overlay)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cal = Calibration::load(&toml).unwrap();
    assert_eq!((cal.width, cal.height), (800, 450));
    assert_eq!(cal.table, "t7");
    let a1 = frame.truth.boards[0].corners[0];
    let got = cal.boards[0].corners[0];
    assert!(
        (got[0] - a1[0] as f64).hypot(got[1] - a1[1] as f64) < 3.0,
        "a1 of A at {got:?}, truth {a1:?}"
    );
    let img = image::open(&overlay).unwrap();
    assert_eq!((img.width(), img.height()), (800, 450));

    // Manual corners: the truth's, written as a person would type them.
    let spec: Vec<String> = (0..2)
        .map(|b| {
            let c = frame.truth.boards[b].corners;
            format!(
                "{}:{}",
                ["A", "B"][b],
                c.iter()
                    .map(|p| format!("{:.1},{:.1}", p[0], p[1]))
                    .collect::<Vec<_>>()
                    .join(";")
            )
        })
        .collect();
    let manual = dir.path().join("manual.toml");
    let out = tandem()
        .args([
            "calibrate",
            png.to_str().unwrap(),
            "--table",
            "t7",
            "--corners",
        ])
        .arg(spec.join(" "))
        .arg("--out")
        .arg(&manual)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m = Calibration::load(&manual).unwrap();
    assert_eq!(m.method, "manual");
    assert!((m.boards[1].corners[2][0] - frame.truth.boards[1].corners[2][0] as f64).abs() < 0.06);
}

#[test]
fn failed_detection_points_to_manual_corners() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("grey.png");
    image::RgbImage::from_pixel(320, 180, image::Rgb([120, 120, 120]))
        .save(&png)
        .unwrap();
    let out = tandem()
        .args(["calibrate", png.to_str().unwrap(), "--table", "x", "--out"])
        .arg(dir.path().join("x.toml"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("automatic board detection failed") && err.contains("--corners"),
        "{err}"
    );
    let out = tandem()
        .args([
            "calibrate",
            png.to_str().unwrap(),
            "--table",
            "x",
            "--corners",
            "A:1,2",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("manual corners"));
}
