//! The daemon watching a recorded table end to end: the committed simulated game's frames
//! (folder source, paced in accelerated real time) and its clock bridge over MQTT → vision (the
//! committed ONNX models) → tracker → referee → embedded broker, journal and evidence.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use tandem_monitor::daemon::{
    ClockSimOptions, DaemonConfig, FolderConfig, SourceConfig, TableSpec, load_clock_presses,
    run_clock_sim, run_daemon,
};
use tandem_monitor::evidence::{self, EvidenceConfig};
use tandem_monitor::publish::{MqttConfig, OutboxConfig, TableId};
use tandem_monitor::vision::{Calibration, CalibrationConfig};

mod common;

const SPEED: f64 = 4.0;

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// What one run of the daemon over a recording left behind.
struct Run {
    dir: tempfile::TempDir,
    summary: tandem_monitor::daemon::DaemonSummary,
    presses: usize,
    acked: usize,
}

/// Runs the daemon on the recording in `game` (its `frames/` and `clock.jsonl`), the table
/// calibrated from the fixture's first frame.
fn watch_recording(game: &Path) -> Run {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sim-game");
    let dir = tempfile::tempdir().unwrap();
    let frame = image::open(fixture.join("frames/000000.jpg"))
        .unwrap()
        .to_rgb8();
    let cal = Calibration::detect(&frame, "t1", &CalibrationConfig::default()).unwrap();
    let cal_path = dir.path().join("t1.toml");
    cal.save(&cal_path).unwrap();

    let config = DaemonConfig {
        tables: vec![TableSpec {
            id: "t1".into(),
            rules: "fics".into(),
            boards: ["A".into(), "B".into()],
            start: None,
            calibration: Some(cal_path),
        }],
        source: SourceConfig::Folder(FolderConfig {
            dir: game.join("frames"),
            realtime: true,
            speed: SPEED,
            fps: 10.0,
        }),
        moves: None,
        mqtt: MqttConfig {
            port: 0,
            client_id: "daemon-vision-test".into(),
            outbox: OutboxConfig {
                dir: dir.path().join("outbox"),
                ..OutboxConfig::default()
            },
            ..MqttConfig::default()
        },
        evidence: EvidenceConfig {
            dir: dir.path().join("evidence"),
            ..EvidenceConfig::default()
        },
        broadcast: None,
        state_dir: dir.path().join("state"),
        exit_when_done: true,
        vision: Default::default(),
    };
    let presses = load_clock_presses(&game.join("clock.jsonl")).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (summary, clock) = rt.block_on(async {
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
        let daemon = tokio::spawn(run_daemon(config, std::future::pending(), Some(ready_tx)));
        let ready = ready_rx.await.unwrap();
        let clock = run_clock_sim(
            &presses,
            &ClockSimOptions {
                host: "127.0.0.1".into(),
                port: ready.broker_port,
                table: TableId::new("t1").unwrap(),
                speed: SPEED,
                client_id: "daemon-vision-clock".into(),
                drain_timeout: Duration::from_secs(10),
            },
        )
        .await
        .unwrap();
        (daemon.await.unwrap().unwrap(), clock)
    });
    Run {
        dir,
        summary,
        presses: presses.len(),
        acked: clock.acked,
    }
}

#[test]
fn recorded_frames_and_clock_presses_become_refereed_moves() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sim-game");
    let Run {
        dir,
        summary,
        presses,
        acked,
    } = watch_recording(&fixture);
    assert_eq!(acked, presses);
    assert_eq!(summary.frames, 201);
    assert_eq!(summary.publisher.pending, 0);

    // The journal: every clock press, and the tracker's moves as referee actions.
    let journal = lines(&dir.path().join("state/t1/journal.jsonl"));
    let count = |input: &str| journal.iter().filter(|l| l["input"] == input).count();
    assert_eq!(count("press"), presses);
    let tracked_moves = journal
        .iter()
        .filter(|l| l["input"] == "script" && l["action"].get("move").is_some())
        .count();

    // The evidence log: the calibration and the model it was read with, and the moves.
    let game = summary.tables[0].evidence.clone().unwrap();
    let report = evidence::verify(&game).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    let log = lines(&game.join("log.jsonl"));
    let meta = &log[0]["payload"];
    assert!(meta["calibration"].as_str().unwrap().contains("[[boards]]"));
    assert_eq!(meta["model_sha256"].as_str().map(str::len), Some(64));
    let moves: Vec<&Value> = log
        .iter()
        .map(|r| &r["payload"])
        .filter(|p| p["type"] == "move")
        .collect();
    // Each tracked move is judged: it stands (a move event) or is rejected (an illegal move).
    let rejected = log
        .iter()
        .map(|r| &r["payload"])
        .filter(|p| p["type"] == "illegal_move" && p["applied"] == false)
        .filter(|p| p["reason"] != "repeated_press")
        .count();
    assert_eq!(moves.len() + rejected, tracked_moves);
    // The recording holds 31 moves (13 on A, 18 on B); the committed models on this
    // tripod view find 23 of them in order (docs/daemon.md); the bounds leave room for retraining.
    let on = |b: &str| {
        moves
            .iter()
            .filter(|m| m["board"] == b && m["legal"] == true)
            .count()
    };
    assert!(on("A") >= 6 && on("B") >= 6, "A {} B {}", on("A"), on("B"));
    assert!(moves.len() <= 40, "{} moves for 31 played", moves.len());
}

#[test]
fn a_bumped_camera_is_an_alert_with_its_frames_kept_and_the_boards_are_found_again() {
    let game = tempfile::tempdir().unwrap();
    // 10 s into the recording the camera moves 3 px right and 2 px down.
    common::bump::bumped_game(game.path(), 100, 3, 2);
    let run = watch_recording(game.path());
    assert_eq!(run.summary.frames, 201);
    let evidence = run.summary.tables[0].evidence.clone().unwrap();
    let report = evidence::verify(&evidence).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    let log = lines(&evidence.join("log.jsonl"));
    let status: Vec<(&str, i64, &str)> = log
        .iter()
        .filter(|r| r["payload"]["type"] == "status")
        .map(|r| {
            let p = &r["payload"];
            (
                p["state"].as_str().unwrap(),
                p["ts"].as_i64().unwrap(),
                p["id"].as_str().unwrap(),
            )
        })
        .collect();
    let lost = status
        .iter()
        .find(|s| s.0 == "calibration_lost")
        .unwrap_or_else(|| panic!("{status:?}"));
    // After the bump; how soon is `tests/watch_game.rs`'s to check: the table stamps an event
    // no earlier than its latest input, and on a loaded machine the watch runs seconds behind
    // the clock presses (16.8 s measured with two evaluations running beside the test).
    assert!(lost.1 >= 10_000, "{status:?}");
    assert!(
        status
            .iter()
            .any(|s| s.0 == "recalibrated" && s.1 >= lost.1 && s.1 <= lost.1 + 2000),
        "{status:?}"
    );
    // Journaled as the camera's notices are (a restart replays them), and the frames around the
    // alert are in the evidence.
    let journal = lines(&run.dir.path().join("state/t1/journal.jsonl"));
    let notices: Vec<&str> = journal
        .iter()
        .filter(|l| l["input"] == "notice")
        .filter_map(|l| l["state"].as_str())
        .collect();
    assert!(notices.starts_with(&["calibration_lost"]), "{notices:?}");
    let window = log
        .iter()
        .find(|r| r["kind"] == "incident_window" && r["payload"]["incident_id"] == lost.2);
    assert!(window.is_some(), "no incident window for {}", lost.2);
    let kept = log
        .iter()
        .filter(|r| r["kind"] == "frame" && r["payload"]["incident_id"] == lost.2)
        .count();
    assert!(kept >= 20, "{kept} frames kept around the bump");
    // The calibration found again replaced the table's file (a restart starts from it), the
    // one it replaced kept beside it.
    let before = Calibration::load(&run.dir.path().join("t1.toml.prev")).unwrap();
    let after = Calibration::load(&run.dir.path().join("t1.toml")).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sim-game");
    let frame = image::open(fixture.join("frames/000000.jpg"))
        .unwrap()
        .to_rgb8();
    let original = Calibration::detect(&frame, "t1", &CalibrationConfig::default()).unwrap();
    assert_eq!(before.boards[0].corners, original.boards[0].corners);
    for (old, new) in original.boards.iter().zip(&after.boards) {
        for (p, q) in old.corners.iter().zip(&new.corners) {
            let (dx, dy) = (q[0] - p[0], q[1] - p[1]);
            assert!(
                (dx - 3.0).abs() < 1.0 && (dy - 2.0).abs() < 1.0,
                "moved by ({dx}, {dy})"
            );
        }
    }
}

#[test]
fn a_press_its_player_repeats_reaches_the_arbiter_as_an_illegal_move() {
    // The recording's clock feed with one press of board A made twice by the same player, half
    // a second apart (a move taken back after the press, or a press without a move).
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sim-game");
    let game = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(fixture.join("frames"), game.path().join("frames")).unwrap();
    let presses: Vec<Value> = lines(&fixture.join("clock.jsonl"));
    let on_a: Vec<&Value> = presses.iter().filter(|p| p["board"] == "A").collect();
    let first = on_a
        .windows(2)
        .find(|w| w[1]["ts_ms"].as_i64().unwrap() - w[0]["ts_ms"].as_i64().unwrap() >= 1500)
        .map(|w| w[0].clone())
        .expect("a press of board A with time after it");
    let mut again = first.clone();
    again["ts_ms"] = (first["ts_ms"].as_i64().unwrap() + 500).into();
    again["move_index"] = Value::Null;
    let mut feed: Vec<Value> = presses.clone();
    feed.push(again);
    feed.sort_by_key(|p| p["ts_ms"].as_i64().unwrap());
    let text: String = feed.iter().map(|p| format!("{p}\n")).collect();
    std::fs::write(game.path().join("clock.jsonl"), text).unwrap();

    let run = watch_recording(game.path());
    assert_eq!(run.acked, presses.len() + 1);
    let evidence = run.summary.tables[0].evidence.clone().unwrap();
    let log = lines(&evidence.join("log.jsonl"));
    let reported: Vec<&Value> = log
        .iter()
        .map(|r| &r["payload"])
        .filter(|p| p["type"] == "illegal_move" && p["reason"] == "repeated_press")
        .collect();
    assert_eq!(reported.len(), 1, "{reported:?}");
    assert_eq!(reported[0]["board"], "A");
    assert_eq!(reported[0]["color"], first["color"]);
    assert_eq!(reported[0]["uci"], "");
    // Journaled as the tracker's own finding, so that a restart replays it.
    let journal = lines(&run.dir.path().join("state/t1/journal.jsonl"));
    assert!(
        journal
            .iter()
            .any(|l| l["input"] == "observed" && l["body"]["reason"] == "repeated_press"),
        "no observed input for the report"
    );
}
