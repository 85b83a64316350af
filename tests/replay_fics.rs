//! The recorded FICS games replay under the `fics` rule set with every move legal and every clock
//! time read (issue 3).
//!
//! One record is defective: game #23 of `fics-64.bpgn` lost its opening moves in the source data set
//! (its first move is `1A. Qe7+`, impossible from the initial position, and the Fairy-Stockfish
//! position suite skips it too). The referee must say so instead of inventing a game.

const TRUNCATED_GAME: usize = 23;

use std::path::Path;

use tandem_monitor::engine::bpgn::parse_bpgn;
use tandem_monitor::rules::{EventBody, RuleSet, replay_game};

fn games(name: &str) -> Vec<tandem_monitor::engine::bpgn::BpgnGame> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/games")
        .join(name);
    parse_bpgn(&std::fs::read(&path).unwrap()).unwrap()
}

#[test]
fn every_fics_game_replays_legally_with_clock_times() {
    let rules = RuleSet::fics();
    let mut all = games("fics-64.bpgn");
    all.extend(games("fics-1921708.bpgn"));
    assert_eq!(all.len(), 65);
    let mut total_moves = 0;
    for (i, game) in all.iter().enumerate() {
        let events = replay_game("t1", i as u32 + 1, &rules, game).unwrap();
        if i == TRUNCATED_GAME {
            let first = &events[0];
            assert!(
                matches!(&first.body, EventBody::Status { state, detail }
                    if state == "rejected" && detail.contains("Qe7+")),
                "{first:?}"
            );
            continue;
        }
        let moves: Vec<_> = events
            .iter()
            .filter_map(|e| match &e.body {
                EventBody::Move {
                    legal,
                    clock_ms,
                    san,
                    ..
                } => Some((*legal, *clock_ms, san.clone())),
                _ => None,
            })
            .collect();
        let trouble: Vec<_> = events
            .iter()
            .filter(|e| {
                matches!(
                    e.body,
                    EventBody::IllegalMove { .. } | EventBody::Status { .. }
                )
            })
            .collect();
        assert!(trouble.is_empty(), "game {i}: {trouble:?}");
        assert!(moves.iter().all(|(legal, _, _)| *legal), "game {i}");
        // Every move was played (a game may end early only by a result).
        let ended = events
            .iter()
            .any(|e| matches!(e.body, EventBody::Result { .. }));
        if !ended {
            assert_eq!(moves.len(), game.moves.len(), "game {i}");
        }
        for ((_, clock, san), recorded) in moves.iter().zip(&game.moves) {
            let want = recorded.clock.map(|s| (s * 1000.0).round() as u64);
            assert_eq!(*clock, want, "game {i} move {san}: clock");
            // The SAN we write matches the record up to check marks the FICS log may omit.
            let strip = |s: &str| s.trim_end_matches(['+', '#']).replace('x', "");
            assert_eq!(strip(san), strip(&recorded.san), "game {i}");
        }
        total_moves += moves.len();
    }
    assert!(total_moves > 5000, "{total_moves}");
    assert_eq!(all[TRUNCATED_GAME].moves[0].san, "Qe7+");
}

#[test]
fn a_game_ending_in_mate_gives_a_checkmate_result() {
    let rules = RuleSet::fics();
    let game = &games("fics-64.bpgn")[0];
    assert!(game.moves.last().unwrap().san.ends_with('#'));
    let events = replay_game("t1", 1, &rules, game).unwrap();
    let last = events.last().unwrap();
    assert!(
        matches!(
            last.body,
            EventBody::Result {
                reason: tandem_monitor::rules::ResultReason::Checkmate,
                ..
            }
        ),
        "{last:?}"
    );
}
