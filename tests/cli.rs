//! The `tandem` binary's contract: subcommands listed, version, one-line errors with exit codes 1
//! and 2, and the exact output shapes other tools depend on (issues 2 and 3).

use std::process::{Command, Output};

fn tandem(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tandem"))
        .args(args)
        .output()
        .expect("run tandem")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1";

#[test]
fn help_lists_the_subcommands_and_version_works() {
    let help = tandem(&["--help"]);
    assert!(help.status.success());
    for sub in [
        "demo",
        "perft",
        "moves",
        "referee",
        "replay",
        "sim",
        "evidence",
        "broadcast",
    ] {
        assert!(stdout(&help).contains(sub), "--help lacks {sub}");
    }
    let version = tandem(&["--version"]);
    assert!(version.status.success());
    assert!(stdout(&version).contains(env!("CARGO_PKG_VERSION")));
}

#[test]
fn usage_errors_exit_2_and_failures_exit_1_with_one_line() {
    let usage = tandem(&["perft"]);
    assert_eq!(usage.status.code(), Some(2));
    assert_eq!(stderr(&usage).lines().count(), 1, "{}", stderr(&usage));

    let bad_fen = tandem(&["moves", "rnbqkbnr/ppp/8 w"]);
    assert_eq!(bad_fen.status.code(), Some(1));
    let err = stderr(&bad_fen);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: "), "{err}");
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{err}"
    );

    let missing = tandem(&["replay", "/nonexistent/game.bpgn"]);
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(stderr(&missing).lines().count(), 1);

    // A missing calibration names the file and the reason once, on one line.
    let no_cal = tandem(&[
        "watch",
        "--source",
        "camera:0",
        "--calibration",
        "/nonexistent/table.toml",
        "--rules",
        "fics",
        "--json",
    ]);
    assert_eq!(no_cal.status.code(), Some(1));
    let err = stderr(&no_cal);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("/nonexistent/table.toml"), "{err}");
    assert_eq!(err.matches("No such file").count(), 1, "{err}");

    let rules = tandem(&["moves", START, "--rules", "blitz"]);
    assert_eq!(rules.status.code(), Some(1));
    assert!(stderr(&rules).contains("unknown rule set"));
}

#[test]
fn perft_prints_the_count_as_last_token() {
    let out = tandem(&["perft", START, "3"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let last = stdout(&out).split_whitespace().last().unwrap().to_string();
    assert_eq!(last, "8902");
}

#[test]
fn moves_are_sorted_uci_one_per_line() {
    let out = tandem(&[
        "moves",
        "4k3/8/8/8/8/8/8/4K3[N] w - - 0 1",
        "--rules",
        "fics",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<String> = stdout(&out).lines().map(str::to_string).collect();
    let mut sorted = lines.clone();
    sorted.sort();
    assert_eq!(lines, sorted);
    // 5 king moves plus a knight drop on each of the 62 empty squares.
    assert_eq!(lines.len(), 5 + 62);
    assert!(lines.contains(&"N@f3".to_string()));
}

#[test]
fn referee_prints_json_events() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("match.json");
    std::fs::write(
        &script,
        r#"{"rules": "turnier", "actions": [
            {"board": "A", "move": "e2e4"}, {"press": "A"},
            {"board": "B", "move": "Nf3"},
            {"resign": {"board": "B", "color": "black"}}
        ]}"#,
    )
    .unwrap();
    let out = tandem(&["referee", script.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let events: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["move", "clock", "move", "result"]);
    assert_eq!(events[2]["san"], "Nf3");
    // Black on B plays with White on A: his resignation is that team's loss.
    assert_eq!(events[3]["result"], "0-1");
    for e in &events {
        assert!(
            e["id"].is_string() && e["table"].is_string() && e["ts"].is_u64(),
            "{e}"
        );
    }

    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, r#"{"actions": [{"teleport": "A"}]}"#).unwrap();
    let out = tandem(&["referee", broken.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out).lines().count(), 1);
}

#[test]
fn replay_prints_one_event_per_line_for_every_game() {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/games/fics-1921708.bpgn"
    );
    let out = tandem(&["replay", file, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let events: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let moves = events.iter().filter(|e| e["type"] == "move").count();
    assert_eq!(moves, 139);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "result");
    assert_eq!(last["reason"], "checkmate");
}

#[test]
fn the_move_prior_predicts_recorded_moves_better_than_chance() {
    let games = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/games/fics-64.bpgn");
    let out = tandem(&[
        "eval",
        "move-prior",
        "--games",
        games,
        "--fit",
        "60..64",
        "--test",
        "0..4",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let loss = |k: &str| report["log_loss"][k].as_f64().unwrap();
    // Nats per move: the committed weights and freshly fitted ones both beat a uniform choice
    // among the legal moves on games neither was fitted on.
    assert!(loss("current") < loss("uniform") - 0.3, "{report}");
    assert!(loss("fitted") < loss("uniform"), "{report}");
    assert!(report["test_positions"].as_u64().unwrap() > 100, "{report}");
    let bad = tandem(&["eval", "move-prior", "--games", games, "--fit", "5..5"]);
    assert_eq!(bad.status.code(), Some(1));
    assert_eq!(stderr(&bad).trim().lines().count(), 1, "{}", stderr(&bad));
}
