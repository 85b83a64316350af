//! End to end: `tandem eval game`, `tandem eval motion` and `tandem watch` on the committed
//! simulated game (`fixtures/sim-game`: 20 s of fics-1921708, 31 moves, 320×180).
//!
//! The truth oracle reader (`--reader truth`) isolates calibration, motion detection and tracking
//! from the classifier; the figures asserted are what those stages must reach on this game.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;

fn tandem(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tandem"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the tandem binary runs")
}

fn json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

#[test]
fn eval_game_on_the_fixture_tracks_the_moves_from_frames() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("decisions.jsonl");
    let r = json(&tandem(&[
        "eval",
        "game",
        "fixtures/sim-game",
        "--reader",
        "truth",
        "--json",
        "--trace",
        trace.to_str().unwrap(),
    ]));
    // Calibration is detected from the first frame, not taken from the truth.
    assert_eq!(r["calibration"], "detected", "{}", r["calibration_detail"]);
    assert_eq!(r["moves_truth"], 31);
    // Board A (13 moves) is tracked exactly; the recorded online timing has premove chains
    // 0.1 s apart on board B whose order cannot always be seen, so not every move counts.
    assert_eq!(r["committed"][0], r["truth"][0]);
    let accuracy = r["move_accuracy"].as_f64().unwrap();
    assert!(accuracy >= 0.8, "move_accuracy {accuracy}");
    // Every true move is committed (order aside), nothing more.
    assert_eq!(r["moves_committed"], 31);
    assert_eq!(r["false_alerts"], 0);
    assert_eq!(r["desyncs"], 0);
    assert!(r["latency_ms"]["samples"].as_u64().unwrap() >= 20);
    assert_eq!(r["frames"], 201);
    // The oracle's squares match the truth they come from, in view and behind nearer pieces
    // (it blanks only what a hand hides, and frames with a hand are not scored).
    for kind in ["unoccluded", "occluded", "changed"] {
        let s = &r["squares"][kind];
        assert!(s["rows"].as_u64().unwrap() > 0, "{s}");
        assert_eq!(s["accuracy"], 1.0, "{kind}: {s}");
        assert_eq!(s["confident_errors"], 0.0, "{kind}: {s}");
        assert_eq!(s["errors"].as_array().map(Vec::len), Some(0), "{kind}: {s}");
    }
    // The decision trace: one JSON object per decision; every committed move comes from a
    // decision that passed the commit rules.
    let text = std::fs::read_to_string(&trace).unwrap();
    let decisions: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert!(
        decisions
            .iter()
            .all(|d| d["board"] == "A" || d["board"] == "B")
    );
    let passed: usize = decisions
        .iter()
        .filter(|d| d["committed"] == true)
        .map(|d| d["best"].as_array().unwrap().len())
        .sum();
    assert!(passed >= 31, "{passed} moves in committed decisions");
}

#[test]
fn eval_games_sums_the_games_and_names_a_directory_that_fails() {
    let one = json(&tandem(&[
        "eval",
        "game",
        "fixtures/sim-game",
        "--reader",
        "truth",
        "--json",
    ]));
    let out = tandem(&[
        "eval",
        "games",
        "fixtures/sim-game",
        "fixtures/no-such-game",
        "fixtures/sim-game",
        "--reader",
        "truth",
        "--json",
    ]);
    // The missing directory fails the command, is named, and costs the others nothing.
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("fixtures/no-such-game"), "{stderr}");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(r["failed"], serde_json::json!(["fixtures/no-such-game"]));
    assert_eq!(r["games"].as_array().map(Vec::len), Some(2));
    let s = &r["summary"];
    assert_eq!(s["games"], 2);
    let twice = |key: &str| one[key].as_u64().unwrap() * 2;
    for key in [
        "moves_truth",
        "moves_committed",
        "moves_right",
        "false_alerts",
        "desyncs",
    ] {
        assert_eq!(s[key].as_u64(), Some(twice(key)), "{key}");
    }
    // The same game twice: the pooled accuracy is the game's own; the worst p99 is the larger
    // of the two runs' (latency is wall time, so the runs differ).
    assert!(
        (s["move_accuracy"].as_f64().unwrap() - one["move_accuracy"].as_f64().unwrap()).abs()
            < 1e-9
    );
    assert_eq!(
        s["games_all_right"].as_u64(),
        Some(2 * u64::from(one["game_all_right"].as_bool().unwrap()))
    );
    assert_eq!(
        s["pockets"]["zones"].as_u64(),
        Some(one["pockets"]["zones"].as_u64().unwrap() * 2)
    );
    let p99 = s["latency_p99_worst_ms"].as_f64().unwrap();
    let games_p99: Vec<f64> = r["games"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["latency_p99_ms"].as_f64().unwrap())
        .collect();
    assert_eq!(p99, games_p99.iter().copied().fold(0.0, f64::max));
}

#[test]
fn motion_is_never_calm_while_a_hand_hides_squares() {
    let r = json(&tandem(&["eval", "motion", "fixtures/sim-game", "--json"]));
    assert!(r["over_board_frames"].as_u64().unwrap() > 50);
    assert_eq!(r["over_board_stable"], 0);
    // Hand-free frames are mostly calm (only the frame right after a hand leaves moves).
    let free = r["free_frames"].as_f64().unwrap();
    let moving = r["free_frames_moving"].as_f64().unwrap();
    assert!(
        moving / free < 0.2,
        "{moving} of {free} hand-free frames scored as motion"
    );
}

/// Calibrates from the fixture's first frame into `dir`; returns the calibration file.
fn calibrate_fixture(dir: &Path) -> PathBuf {
    let cal = dir.join("sim.toml");
    let out = tandem(&[
        "calibrate",
        "fixtures/sim-game/frames/000000.jpg",
        "--table",
        "sim",
        "--out",
        cal.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    cal
}

/// `tandem watch --json` on the simulated game in `game` with the truth reader and its clock
/// feed; the events it printed.
fn watch_events(game: &Path, cal: &Path) -> Vec<serde_json::Value> {
    let out = tandem(&[
        "watch",
        "--source",
        game.to_str().unwrap(),
        "--calibration",
        cal.to_str().unwrap(),
        "--rules",
        "fics",
        "--clock",
        game.join("clock.jsonl").to_str().unwrap(),
        "--reader",
        "truth",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is a JSON event"))
        .collect()
}

#[test]
fn watch_prints_the_moves_as_json_lines() {
    let dir = tempfile::tempdir().unwrap();
    let cal = calibrate_fixture(dir.path());
    let events = watch_events(Path::new("fixtures/sim-game"), &cal);
    let moves: Vec<&serde_json::Value> = events.iter().filter(|e| e["type"] == "move").collect();
    assert_eq!(moves.len(), 31);
    assert_eq!(moves[0]["table"], "sim");
    assert!(
        moves
            .iter()
            .all(|m| m["id"].is_string() && m["ts"].is_u64())
    );
    let first_a = moves.iter().find(|m| m["board"] == "A").unwrap();
    assert_eq!(first_a["uci"], "d2d4");
}

#[test]
fn watch_fails_cleanly_without_a_camera_or_frames() {
    let dir = tempfile::tempdir().unwrap();
    let cal = calibrate_fixture(dir.path());
    for source in ["camera:97", dir.path().to_str().unwrap()] {
        let out = tandem(&[
            "watch",
            "--source",
            source,
            "--calibration",
            cal.to_str().unwrap(),
            "--rules",
            "fics",
            "--reader",
            "truth",
            "--json",
        ]);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "one clear line: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn a_frame_cut_short_is_skipped_with_a_status_and_the_watch_goes_on() {
    // Frame 50 (5 s into the game) cut to half its bytes, as a file still being written: the
    // `image` crate would decode it with grey rows; the watch skips it and says so.
    let dir = tempfile::tempdir().unwrap();
    let game = dir.path().join("game");
    std::fs::create_dir_all(game.join("frames")).unwrap();
    for entry in std::fs::read_dir("fixtures/sim-game").unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), game.join(entry.file_name())).unwrap();
        }
    }
    for entry in std::fs::read_dir("fixtures/sim-game/frames").unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), game.join("frames").join(entry.file_name())).unwrap();
    }
    let cut = game.join("frames/000050.jpg");
    let bytes = std::fs::read(&cut).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let cal = calibrate_fixture(dir.path());
    let events = watch_events(&game, &cal);
    let statuses: Vec<&serde_json::Value> =
        events.iter().filter(|e| e["type"] == "status").collect();
    assert_eq!(statuses.len(), 1, "{statuses:?}");
    assert_eq!(statuses[0]["state"], "frame_unreadable");
    assert_eq!(statuses[0]["ts"], 5000);
    let detail = statuses[0]["detail"].as_str().unwrap();
    assert!(detail.contains("cut short"), "{detail}");
    // The frames after it are watched: every move is still seen.
    assert_eq!(events.iter().filter(|e| e["type"] == "move").count(), 31);
}

#[test]
fn eval_motion_trace_has_one_line_per_frame_with_cues() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let r = json(&tandem(&[
        "eval",
        "motion",
        "fixtures/sim-game",
        "--json",
        "--trace",
        trace.to_str().unwrap(),
    ]));
    let text = std::fs::read_to_string(&trace).unwrap();
    let rows: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    assert_eq!(rows.len() as u64, r["frames"].as_u64().unwrap());
    // Per board: truth hand flags and cues whose scores stay in [0, 1).
    for row in &rows {
        for b in 0..2 {
            let s = row["cues"][b]["score"].as_f64().unwrap();
            assert!((0.0..1.0).contains(&s), "{row}");
            assert!(row["hand"][b].is_boolean());
        }
    }
    let over: u64 = rows
        .iter()
        .map(|row| (0..2).filter(|&b| row["over_board"][b] == true).count() as u64)
        .sum();
    assert_eq!(over, r["over_board_frames"].as_u64().unwrap());
}

#[test]
fn a_bumped_camera_is_reported_and_the_boards_are_found_again() {
    let dir = tempfile::tempdir().unwrap();
    // Frame 100 is 10 s into the game; 3 px right and 2 px down is a quarter of a square here.
    common::bump::bumped_game(dir.path(), 100, 3, 2);
    let off = dir.path().join("off.toml");
    std::fs::write(&off, "[drift]\ncheck_every_ms = 0\n").unwrap();
    let game = dir.path().to_str().unwrap();
    let eval = |extra: &[&str]| {
        let mut args = vec![
            "eval",
            "game",
            game,
            "--games",
            "fixtures/games/fics-1921708.bpgn",
            "--json",
        ];
        args.extend_from_slice(extra);
        json(&tandem(&args))
    };
    let watched = eval(&[]);
    let statuses: Vec<(u64, String)> = watched["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["type"] == "status")
        .map(|a| {
            (
                a["ts"].as_u64().unwrap(),
                a["state"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let at = |state: &str| statuses.iter().find(|s| s.1 == state).map(|s| s.0);
    let lost = at("calibration_lost").unwrap_or_else(|| panic!("{statuses:?}"));
    let found = at("recalibrated").unwrap_or_else(|| panic!("{statuses:?}"));
    assert!(
        (10_000..=12_000).contains(&lost) && (lost..=lost + 2000).contains(&found),
        "{statuses:?}"
    );
    assert_eq!(statuses.len(), 2, "{statuses:?}");
    // Without the calibration watch the patches are cut a quarter square off for the last
    // half of the game, and moves there are lost; with it the bump costs nothing against the
    // same game never bumped.
    let unwatched = eval(&["--config", off.to_str().unwrap()]);
    let still = json(&tandem(&[
        "eval",
        "game",
        "fixtures/sim-game",
        "--games",
        "fixtures/games/fics-1921708.bpgn",
        "--json",
    ]));
    let (with, without, unbumped) = (
        watched["moves_right"].as_u64().unwrap(),
        unwatched["moves_right"].as_u64().unwrap(),
        still["moves_right"].as_u64().unwrap(),
    );
    assert!(
        with > without && with >= unbumped,
        "{with} moves right with the watch, {without} without, {unbumped} never bumped"
    );
}
