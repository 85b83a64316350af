//! `tandem sim game` from the command line: incidents are reported and recorded, bad requests
//! are refused with a message.

use std::process::Command;

const GAME: &str = "fixtures/games/fics-1921708.bpgn";

#[test]
fn plan_only_run_records_the_requested_incident() {
    let out = tempfile::tempdir().expect("tempdir");
    let run = Command::new(env!("CARGO_BIN_EXE_tandem"))
        .args([
            "sim",
            "game",
            GAME,
            "--plan-only",
            "--inject",
            "slide@3",
            "--out",
        ])
        .arg(out.path())
        .output()
        .expect("runs");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains("incident slide"), "{stdout}");
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.path().join("game.json")).expect("game.json"),
    )
    .expect("json");
    let inc = &json["incidents"][0];
    assert_eq!(inc["kind"], "slide");
    assert!(inc["move_index"].as_u64().expect("index") >= 3);
    assert!(
        !out.path().join("truth.jsonl").exists(),
        "plan only renders nothing"
    );
    assert!(out.path().join("clock.jsonl").exists());
}

#[test]
fn unknown_incident_is_refused() {
    let out = tempfile::tempdir().expect("tempdir");
    let run = Command::new(env!("CARGO_BIN_EXE_tandem"))
        .args([
            "sim",
            "game",
            GAME,
            "--plan-only",
            "--inject",
            "teleport",
            "--out",
        ])
        .arg(out.path())
        .output()
        .expect("runs");
    assert!(!run.status.success());
    assert!(String::from_utf8_lossy(&run.stderr).contains("unknown incident"));
}
