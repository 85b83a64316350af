//! The `tandem perft` / `tandem moves` shapes other tools depend on.

use std::process::Command;

fn tandem(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tandem"))
        .args(args)
        .output()
        .expect("the binary runs")
}

#[test]
fn perft_prints_the_count_as_last_token() {
    let fen = "r1bqk2r/pppp1ppp/2n1p3/4P3/1b1Pn3/2NB1N2/PPP2PPP/R1BQK2R[] b KQkq -";
    let out = tandem(&["perft", fen, "3", "--rules", "crazyhouse"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    assert_eq!(text.split_whitespace().last(), Some("58057"));
    let out = tandem(&[
        "perft",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1",
        "2",
    ]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .last(),
        Some("400")
    );
}

#[test]
fn moves_prints_sorted_uci_lines() {
    let out = tandem(&[
        "moves",
        "4k3/8/8/8/8/8/8/4K3[N] w - - 0 1",
        "--rules",
        "fics",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let lines: Vec<&str> = text.lines().collect();
    let mut sorted = lines.clone();
    sorted.sort();
    assert_eq!(lines, sorted);
    assert_eq!(lines.len(), 62 + 5, "62 knight drops and 5 king moves");
    assert!(lines.contains(&"N@f3") && lines.contains(&"e1d1"));
}

#[test]
fn errors_are_one_line() {
    for args in [
        &["moves", "not a fen"][..],
        &[
            "perft",
            "4k3/8/8/8/8/8/8/4K3[] w - -",
            "2",
            "--rules",
            "nope",
        ][..],
        &[
            "moves",
            "4k3/8/8/8/8/8/8/4K3[] w - - | 4k3/8/8/8/8/8/8/4K3[] w - -",
        ][..],
    ] {
        let out = tandem(args);
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
}
