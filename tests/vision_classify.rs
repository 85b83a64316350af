//! `tandem classify` and `tandem eval squares` end to end on rendered simulator frames.
//!
//! The plumbing tests use the designed fixture models (`fixtures/vision/*-fixture.onnx`, see
//! `training/make_test_vision_models.py`), so they check wiring, not recognition.

use std::path::{Path, PathBuf};
use std::process::Command;

use tandem_monitor::sim::{self, CameraConfig, PieceSet, SimSettings};
use tandem_monitor::vision::{Calibration, CalibrationConfig};

const START: &str =
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR | rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR";

fn tandem() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tandem"))
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/vision")
        .join(name)
}

/// Renders `fen` on a small table and writes the frame and a calibration from the truth corners.
fn table(dir: &Path, fen: &str, name: &str) -> (PathBuf, PathBuf, sim::Frame) {
    let settings = SimSettings {
        width: 640,
        height: 360,
        seed: 5,
        camera: CameraConfig::preset("overhead").unwrap(),
        shadow_map: 512,
        ..SimSettings::default()
    };
    let frame = sim::render_table(fen, &PieceSet::builtin(), &settings).unwrap();
    let png = dir.join(format!("{name}.png"));
    frame.save(&png).unwrap();
    let corners = [0, 1].map(|b| {
        frame.truth.boards[b]
            .corners
            .map(|p| [p[0] as f64, p[1] as f64])
    });
    let cal = Calibration::manual(
        "t1",
        (frame.image.width(), frame.image.height()),
        corners,
        Some(&frame.image),
        &CalibrationConfig::default(),
    )
    .unwrap();
    let toml = dir.join("t1.toml");
    cal.save(&toml).unwrap();
    (png, toml, frame)
}

fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// One clear line on stderr, exit 1, no panic.
fn run_fails(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    assert!(
        !err.contains("panicked") && !err.contains("internal error"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    err
}

#[test]
fn classify_json_shape_and_adaptation_on_the_start_frame() {
    let dir = tempfile::tempdir().unwrap();
    let (png, toml, frame) = table(dir.path(), START, "start");
    // Nearest-neighbour only, by the embedding (the feature vote leaves a square's own sample
    // out): every start square's nearest sample is itself, so after adapting on this very frame
    // each square must read as the truth's piece. A wrong square order between adaptation and
    // reading, or a wrong start placement, breaks this.
    let config = dir.path().join("reader.toml");
    std::fs::write(
        &config,
        "[classifier]\nmix = 1.0\nneighbours = 1\nfit_mixture = false\ndescriptor = \"embedding\"\n",
    )
    .unwrap();
    let out = run_ok(
        tandem()
            .arg("classify")
            .arg(&png)
            .arg("--calibration")
            .arg(&toml)
            .arg("--json")
            .arg("--adapt-start")
            .arg(&png)
            .arg("--config")
            .arg(&config)
            .arg("--squares-model")
            .arg(fixture("squares-fixture.onnx"))
            .arg("--pockets-model")
            .arg(fixture("pockets-fixture.onnx")),
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["adapted"], true);
    assert_eq!(v["table"], "t1");
    let boards = v["boards"].as_array().unwrap();
    assert_eq!(boards.len(), 2);
    for (b, board) in boards.iter().enumerate() {
        assert_eq!(board["board"], ["A", "B"][b]);
        let squares = board["squares"].as_array().unwrap();
        assert_eq!(squares.len(), 64);
        for (i, sq) in squares.iter().enumerate() {
            let truth = frame.truth.boards[b].squares[i];
            let want = truth.map_or("empty".to_string(), |c| c.to_string());
            assert_eq!(
                sq["label"],
                want.as_str(),
                "board {b} square {}",
                sq["square"]
            );
            let p = sq["probability"].as_f64().unwrap();
            assert!(p > 0.0 && p <= 1.0 + 1e-6);
        }
        assert_eq!(
            board["placement"],
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR"
        );
        assert_eq!(squares[0]["square"], "a1");
        assert_eq!(squares[63]["square"], "h8");
    }
    let pockets = v["pockets"].as_array().unwrap();
    assert_eq!(pockets.len(), 4);
    assert_eq!(pockets[1]["zone"], "A Black");
    assert_eq!(pockets[2]["board"], "B");
    assert_eq!(pockets[3]["color"], "black");
    for p in pockets {
        for role in ["P", "N", "B", "R", "Q"] {
            assert!(p["counts"][role].as_u64().unwrap() <= 8);
        }
    }
}

#[test]
fn classify_and_eval_refuse_bad_input_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let (png, toml, _) = table(dir.path(), START, "start");
    let sq = fixture("squares-fixture.onnx");
    let pk = fixture("pockets-fixture.onnx");
    let classify = |frame: &Path, cal: &Path| {
        let mut c = tandem();
        c.arg("classify")
            .arg(frame)
            .arg("--calibration")
            .arg(cal)
            .arg("--json")
            .arg("--squares-model")
            .arg(&sq)
            .arg("--pockets-model")
            .arg(&pk);
        c
    };
    let err = run_fails(&mut classify(&dir.path().join("nope.png"), &toml));
    assert!(err.contains("nope.png"), "{err}");
    let corrupt = dir.path().join("corrupt.png");
    std::fs::write(&corrupt, b"\x89PNG but not really").unwrap();
    let err = run_fails(&mut classify(&corrupt, &toml));
    assert!(err.contains("corrupt.png"), "{err}");
    let err = run_fails(&mut classify(&png, &dir.path().join("missing.toml")));
    assert!(err.contains("missing.toml"), "{err}");
    // A frame of another size than the calibration.
    let small = dir.path().join("small.png");
    image::RgbImage::new(100, 100).save(&small).unwrap();
    run_fails(&mut classify(&small, &toml));
    // A model that does not exist.
    let err = run_fails(
        tandem()
            .arg("classify")
            .arg(&png)
            .arg("--calibration")
            .arg(&toml)
            .arg("--squares-model")
            .arg(dir.path().join("none.onnx")),
    );
    assert!(err.contains("none.onnx"), "{err}");

    // eval squares: a malformed row names its line; an unknown label is refused.
    let set = dir.path().join("set");
    std::fs::create_dir(&set).unwrap();
    std::fs::write(
        set.join("labels.csv"),
        "path,label,split\na.png,K,test\nb.png\n",
    )
    .unwrap();
    let eval = |d: &Path| {
        let mut c = tandem();
        c.args(["eval", "squares", "--json", "--dataset"])
            .arg(d)
            .arg("--model")
            .arg(&sq);
        c
    };
    let err = run_fails(&mut eval(&set));
    assert!(err.contains("line 3"), "{err}");
    std::fs::write(
        set.join("labels.csv"),
        "path,label,split\na.png,king,test\n",
    )
    .unwrap();
    let err = run_fails(&mut eval(&set));
    assert!(err.contains("unknown label `king`"), "{err}");
    let err = run_fails(&mut eval(&dir.path().join("no-such-dir")));
    assert!(err.contains("no-such-dir"), "{err}");
}

#[test]
fn eval_squares_reports_json_from_rendered_patches() {
    // Adapt rows: the start frame's 128 patches; test rows: a different position on the same
    // table. The fixture network alone knows no pieces, so adaptation must help.
    let dir = tempfile::tempdir().unwrap();
    let (_, toml, start) = table(dir.path(), START, "start");
    let cal = Calibration::load(&toml).unwrap();
    let rect = tandem_monitor::vision::Rectifier::new(
        &cal,
        &tandem_monitor::vision::RectifyConfig::default(),
    )
    .unwrap();
    let fen = "r1bqkb1r/pppp1ppp/2n2n2/4p3/4P3/2N2N2/PPPP1PPP/R1BQKB1R | \
               rnbqkbnr/pp1ppppp/8/2p5/4P3/8/PPPP1PPP/RNBQKBNR";
    let (_, _, later) = table(dir.path(), fen, "later");
    let set = dir.path().join("session");
    std::fs::create_dir(&set).unwrap();
    let mut csv = String::from("path,label,split\n");
    for (frame, split) in [(&start, "adapt"), (&later, "test")] {
        let crops = rect.rectify(&frame.image).unwrap();
        for b in 0..2 {
            for i in 0..64 {
                let name = format!("{split}-{b}-{i}.png");
                crops.square(b, i).unwrap().save(set.join(&name)).unwrap();
                let label =
                    frame.truth.boards[b].squares[i].map_or("empty".to_string(), |c| c.to_string());
                csv.push_str(&format!("{name},{label},{split}\n"));
            }
        }
    }
    std::fs::write(set.join("labels.csv"), csv).unwrap();
    let out = run_ok(
        tandem()
            .args(["eval", "squares", "--json", "--dataset"])
            .arg(&set)
            .arg("--model")
            .arg(fixture("squares-fixture.onnx")),
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["adapt_rows"], 128);
    assert_eq!(v["test_rows"], 128);
    let with = v["accuracy"].as_f64().unwrap();
    let without = v["accuracy_without_adaptation"].as_f64().unwrap();
    // The fixture network puts every patch in class 0..=2 by colour: at best the empties.
    let empties = v["per_class"]["empty"]["test_rows"].as_u64().unwrap() as f64;
    assert!(without <= empties / 128.0 + 1e-9, "{without}");
    assert!(with > without, "adaptation {with} vs network {without}");
    let per_class = v["per_class"].as_object().unwrap();
    let rows: u64 = per_class
        .values()
        .map(|c| c["test_rows"].as_u64().unwrap())
        .sum();
    assert_eq!(rows, 128);
}

/// The committed models on a table they never saw: the piece set `geometric`, a design kept
/// out of training (`sim::pieces`; dreamchess `elements` would not do: it has the training
/// set's meshes), under the held-out camera preset `low-side`. Adapt on the start position,
/// then read two other positions on the same table; count unoccluded squares right.
#[test]
fn committed_models_adapt_to_an_unseen_piece_set_at_a_held_out_pose() {
    use tandem_monitor::engine::BoardId;
    use tandem_monitor::vision::{FrameReader, ReaderConfig};

    let pieces = tandem_monitor::sim::pieces::geometric();
    let settings = SimSettings {
        width: 960,
        height: 540,
        seed: 7,
        camera: CameraConfig::preset("low-side").unwrap(),
        shadow_map: 1024,
        ..SimSettings::default()
    };
    let start = sim::render_table(START, &pieces, &settings).unwrap();
    let corners = [0, 1].map(|b| {
        start.truth.boards[b]
            .corners
            .map(|p| [p[0] as f64, p[1] as f64])
    });
    let cal = Calibration::manual(
        "held-out",
        (start.image.width(), start.image.height()),
        corners,
        Some(&start.image),
        &CalibrationConfig::default(),
    )
    .unwrap();
    let mut reader = FrameReader::new(&cal, &ReaderConfig::default()).unwrap();
    reader.read(&start.image).unwrap();
    // The default pocket reader cuts windows over one zone per board (the farther one, which
    // the windows read; the nearer one is the counting network's).
    let mut zones: Vec<usize> = reader
        .rectifier()
        .pocket_windows()
        .iter()
        .map(|w| w.zone)
        .collect();
    zones.dedup();
    assert_eq!(
        zones.iter().map(|z| z / 2).collect::<Vec<_>>(),
        [0, 1],
        "{zones:?}"
    );
    assert!(reader.reading().pockets.is_some());
    reader.adapt_start_from_last().unwrap();
    let positions = [
        "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R | \
         rnbqk2r/ppp1bppp/4pn2/3p4/2PP4/2N2N2/PP2PPPP/R1BQKB1R",
        "2kr3r/ppp2ppp/2n1bn2/2b1p3/4P3/2NP1N2/PPP1BPPP/R1B2RK1 | \
         r4rk1/pp2qppp/2nbbn2/3p4/3P4/2NBPN2/PPQ2PPP/R1B2RK1",
    ];
    let (mut right, mut right_plain, mut total) = (0usize, 0usize, 0usize);
    for fen in positions {
        let frame = sim::render_table(fen, &pieces, &settings).unwrap();
        reader.read(&frame.image).unwrap();
        let reading = reader.reading();
        let plain = reader.classifier().network_probabilities();
        for (b, id) in [BoardId::A, BoardId::B].into_iter().enumerate() {
            let truth = &frame.truth.boards[b];
            let labels = reading.labels(id);
            for i in 0..64 {
                let name = tandem_monitor::sim::fen::square_name(i);
                if truth.occluded.contains(&name) {
                    continue;
                }
                let want = truth.squares[i].map_or('.', |c| c);
                total += 1;
                right += usize::from(labels[i].0.char() == want);
                let p = &plain[b * 64 + i];
                let best = (0..13).max_by(|&x, &y| p[x].total_cmp(&p[y])).unwrap();
                let plain_label = tandem_monitor::tracker::SquareClass::ALL[best].char();
                right_plain += usize::from(plain_label == want);
            }
        }
    }
    let acc = right as f64 / total as f64;
    let plain = right_plain as f64 / total as f64;
    eprintln!("held-out: {right}/{total} = {acc:.4} after adaptation, {plain:.4} network alone");
    // low-side hides many squares behind pieces: 193 of 256 are unoccluded here.
    assert!(total > 150, "{total} unoccluded squares");
    // Measured on `geometric`: stage 4 (2026-12-02) 163/193 = 0.8446 after adaptation, 0.6943
    // for the network alone; stage 3 152/193 = 0.7876 and 0.6218. The floor sits below both so
    // that it catches a broken pipeline, not noise; raise it with better models.
    assert!(acc >= 0.70, "accuracy {acc:.4} after adaptation");
    assert!(
        acc > plain,
        "adaptation {acc:.4} vs network alone {plain:.4}"
    );
}
