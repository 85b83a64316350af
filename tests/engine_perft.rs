//! The public crazyhouse perft suite (fixtures/engine/crazyhouse.perft): every position must match
//! exactly, to depth 4 (the 10M-node entry included: bulk counting keeps it well under a second).

use tandem_monitor::engine::{Position, Variant, perft};

struct Case {
    id: String,
    fen: String,
    counts: Vec<(u32, u64)>,
}

fn load() -> Vec<Case> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/engine/crazyhouse.perft"
    ))
    .expect("fixture file is committed");
    let mut cases: Vec<Case> = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(id) = line.strip_prefix("id ") {
            cases.push(Case {
                id: id.to_string(),
                fen: String::new(),
                counts: Vec::new(),
            });
        } else if let Some(fen) = line.strip_prefix("epd ") {
            cases.last_mut().expect("id precedes epd").fen = fen.to_string();
        } else if let Some(rest) = line.strip_prefix("perft ") {
            let mut it = rest.split_whitespace();
            let d: u32 = it.next().and_then(|s| s.parse().ok()).expect("depth");
            let n: u64 = it.next().and_then(|s| s.parse().ok()).expect("count");
            cases
                .last_mut()
                .expect("id precedes perft")
                .counts
                .push((d, n));
        }
    }
    cases
}

#[test]
fn crazyhouse_suite_matches_to_depth_four() {
    let v = Variant::crazyhouse();
    let cases = load();
    assert_eq!(cases.len(), 5, "suite has five positions");
    let mut checked = 0;
    for case in &cases {
        let pos: Position = case
            .fen
            .parse()
            .unwrap_or_else(|e| panic!("{}: {e}", case.id));
        for &(depth, expected) in &case.counts {
            assert_eq!(
                perft(&pos, depth, &v),
                expected,
                "{} depth {depth}",
                case.id
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 18);
}
