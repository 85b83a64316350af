//! `tandem broadcast render` and `tandem broadcast replay` from the outside.

use std::path::Path;
use std::process::Command;

use tandem_monitor::engine::bpgn::{GameResult, parse_bpgn};

fn tandem() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tandem"))
}

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/games")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn render_writes_the_three_files_of_the_final_game() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("feed");
    let status = tandem()
        .args([
            "broadcast",
            "render",
            &fixture("fics-1921708.bpgn"),
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(status.status.success(), "{status:?}");
    let recorded = parse_bpgn(&std::fs::read(fixture("fics-1921708.bpgn")).unwrap()).unwrap();
    let game = parse_bpgn(&std::fs::read(out.join("game.bpgn")).unwrap()).unwrap();
    assert_eq!(game.len(), 1);
    assert_eq!(game[0].moves.len(), recorded[0].moves.len());
    assert_eq!(game[0].tag("BlackB"), Some("makaka"));
    // The last move mates BlackB: the team BlackA + WhiteB wins (GUIDE §2).
    assert_eq!(game[0].result, Some(GameResult::SecondTeamWins));
    let a = std::fs::read_to_string(out.join("a.pgn")).unwrap();
    let b = std::fs::read_to_string(out.join("b.pgn")).unwrap();
    assert!(a.contains("[White \"galette\"]") && a.contains("[Result \"0-1\"]"));
    assert!(b.contains("[White \"networc\"]") && b.contains("[Result \"1-0\"]"));
    assert!(b.contains("Q@c8#"));
}

#[test]
fn bad_arguments_fail_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        vec!["broadcast", "render", "/no/such/file.bpgn", "--out"],
        vec![
            "broadcast",
            "render",
            &fixture("fics-64.bpgn"),
            "--game",
            "65",
            "--out",
        ],
    ] {
        let output = tandem().args(&args).arg(dir.path()).output().unwrap();
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("error: "), "{stderr}");
    }
    let output = tandem()
        .args([
            "broadcast",
            "replay",
            &fixture("fics-64.bpgn"),
            "--speed",
            "0",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn replay_runs_to_the_result_and_exits() {
    // ~4 minutes of clock time at 2000x: about 0.1 s.
    let output = tandem()
        .args([
            "broadcast",
            "replay",
            &fixture("fics-1921708.bpgn"),
            "--speed",
            "2000",
            "--listen",
            "127.0.0.1:0",
            "--exit",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.lines().any(|l| l == "B 37. Q@c8#"), "{stdout}");
    assert!(stdout.trim_end().ends_with("checkmate)"), "{stdout}");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("/tables/t1/game.bpgn"), "{stderr}");
}
