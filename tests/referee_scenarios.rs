//! Table-driven scenarios: one per cell of the rule-set table (GUIDE §3), each naming its paragraph.
//!
//! A scenario is a start position, a list of actions in the JSON shape of `tandem referee`, and the
//! events that must follow, in order (other events may come in between), plus event types that must
//! not appear at all.

use serde_json::{Value, json};
use tandem_monitor::rules::{Referee, RuleSet, TimedAction};

struct Scenario {
    /// The paragraph of the rule text the scenario checks.
    cite: &'static str,
    rules: &'static str,
    start: Option<&'static str>,
    actions: Value,
    /// Subsets of events that must appear in this order.
    expect: Value,
    /// Event types that must not appear.
    absent: &'static [&'static str],
}

const EMPTY_B: &str = "4k3/8/8/8/8/8/8/4K3[] w - - 0 1";

fn table(a: &str, b: &str) -> String {
    format!("{a} | {b}")
}

fn run(s: &Scenario) -> Vec<Value> {
    let rules = RuleSet::load(s.rules).unwrap();
    let start = s.start.map(|a| {
        if a.contains('|') {
            a.to_string()
        } else {
            table(a, EMPTY_B)
        }
    });
    let mut referee = Referee::new("t", 1, rules, start.as_deref())
        .unwrap_or_else(|e| panic!("{}: start: {e}", s.cite));
    let mut out = Vec::new();
    for (i, raw) in s.actions.as_array().unwrap().iter().enumerate() {
        let action = TimedAction::from_json(raw, i).unwrap();
        for event in referee.apply(action) {
            out.push(serde_json::to_value(&event).unwrap());
        }
    }
    out
}

fn matches(event: &Value, want: &Value) -> bool {
    want.as_object()
        .unwrap()
        .iter()
        .all(|(k, v)| event.get(k) == Some(v))
}

fn check(s: &Scenario) {
    let events = run(s);
    let mut rest = events.iter();
    for want in s.expect.as_array().unwrap() {
        assert!(
            rest.any(|e| matches(e, want)),
            "{} [{}]: expected {want} in order; events were:\n{}",
            s.cite,
            s.rules,
            events
                .iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    for kind in s.absent {
        assert!(
            !events.iter().any(|e| e["type"] == *kind),
            "{} [{}]: no `{kind}` event expected; events were:\n{}",
            s.cite,
            s.rules,
            events
                .iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

// ---- pawn drops ----------------------------------------------------------------------------

const PAWN_IN_HAND: &str = "4k3/8/8/8/8/8/8/4K3[P] w - - 0 1";

#[test]
fn pawn_drop_on_ranks_2_to_7_is_legal_everywhere() {
    for rules in ["tandem-2024", "turnier", "dsb", "verein", "fics"] {
        for square in ["a2", "h7"] {
            check(&Scenario {
                cite: "000 §2(1)b, 001 §2(1)b, 002 7.4, 004 §5b",
                rules,
                start: Some(PAWN_IN_HAND),
                actions: json!([{"board": "A", "move": format!("P@{square}")}]),
                expect: json!([{"type": "move", "uci": format!("P@{square}"), "legal": true}]),
                absent: &["illegal_move"],
            });
        }
    }
}

#[test]
fn pawn_dropped_on_back_rank_falls_through_under_000() {
    check(&Scenario {
        cite: "000 §2(1)b: the pawn falls through",
        rules: "tandem-2024",
        start: Some(PAWN_IN_HAND),
        actions: json!([{"board": "A", "move": "P@a8"}, {"board": "A", "move": "P@a3"}]),
        expect: json!([
            {"type": "illegal_move", "reason": "pawn_drop_on_back_rank", "consequence": "taken_back", "applied": false},
            {"type": "move", "uci": "P@a3", "legal": true}
        ]),
        absent: &["result"],
    });
}

#[test]
fn pawn_dropped_on_back_rank_is_an_illegal_move_elsewhere() {
    for (rules, cite) in [
        ("turnier", "001 §2(1)b with §4(1)c"),
        ("dsb", "002 7.4 with 8.3"),
        ("verein", "004 §5b with §10"),
    ] {
        check(&Scenario {
            cite,
            rules,
            start: Some(PAWN_IN_HAND),
            actions: json!([
                {"board": "A", "move": "P@a1"},
                {"claim": {"kind": "illegal_move", "board": "A", "by": "black"}}
            ]),
            expect: json!([
                {"type": "illegal_move", "reason": "pawn_drop_on_back_rank", "consequence": "claimable", "applied": true},
                {"type": "result", "result": "0-1", "reason": "illegal_move"}
            ]),
            absent: &[],
        });
    }
    check(&Scenario {
        cite: "FICS: illegal drops are refused",
        rules: "fics",
        start: Some(PAWN_IN_HAND),
        actions: json!([{"board": "A", "move": "P@a1"}, {"board": "A", "move": "P@a2"}]),
        expect: json!([
            {"type": "illegal_move", "consequence": "rejected", "applied": false},
            {"type": "move", "uci": "P@a2"}
        ]),
        absent: &["result"],
    });
}

#[test]
fn pawn_dropped_on_its_start_rank_may_double_step() {
    check(&Scenario {
        cite: "004 §5b: a pawn dropped on its start square may make the double step",
        rules: "verein",
        start: Some(PAWN_IN_HAND),
        actions: json!([
            {"board": "A", "move": "P@e2"},
            {"board": "A", "move": "e8d8"},
            {"board": "A", "move": "e2e4"}
        ]),
        expect: json!([{"type": "move", "uci": "e2e4", "legal": true}]),
        absent: &["illegal_move"],
    });
}

// ---- drops giving check and mate -----------------------------------------------------------

#[test]
fn a_drop_may_give_check_everywhere() {
    for rules in ["tandem-2024", "turnier", "dsb", "verein", "fics"] {
        check(&Scenario {
            cite: "002 7.3 (and silent elsewhere): drops giving check are allowed",
            rules,
            start: Some("4k3/8/8/8/8/8/8/4K3[N] w - - 0 1"),
            actions: json!([{"board": "A", "move": "N@d6"}]),
            expect: json!([{"type": "move", "san": "N@d6+", "legal": true}]),
            absent: &["illegal_move", "result"],
        });
    }
}

/// A smothered mate by a knight drop: Black Kh8, Rg8, pawns g7 h7; White drops N@f7.
const SMOTHER: &str = "6rk/6pp/8/8/8/8/8/4K3[N] w - - 0 1";

#[test]
fn drop_mate_is_removed_and_counts_as_captured_under_000_and_001() {
    for (rules, cite) in [("tandem-2024", "000 §2(1)d"), ("turnier", "001 §2(1)d")] {
        check(&Scenario {
            cite,
            rules,
            start: Some(SMOTHER),
            actions: json!([{"board": "A", "move": "N@f7"}, {"board": "A", "move": "g8f8"}]),
            expect: json!([
                {"type": "illegal_move", "reason": "drop_mate", "consequence": "piece_removed"},
                // Captured by the mated Black on A: goes to his partner, White on B.
                {"type": "piece_removed", "square": "f7", "piece": "N", "to_board": "B", "to_color": "white"},
                // The removal is not a move: Black is to move.
                {"type": "move", "uci": "g8f8", "color": "black"}
            ]),
            absent: &["result"],
        });
    }
}

#[test]
fn drop_mate_is_taken_back_under_dsb() {
    check(&Scenario {
        cite: "002 7.3: a piece dropped with mate must be taken back",
        rules: "dsb",
        start: Some(SMOTHER),
        actions: json!([{"board": "A", "move": "N@f7"}, {"board": "A", "move": "N@f6"}]),
        expect: json!([
            {"type": "illegal_move", "reason": "drop_mate", "consequence": "taken_back", "applied": false},
            {"type": "move", "uci": "N@f6", "color": "white"}
        ]),
        absent: &["result", "piece_removed"],
    });
}

#[test]
fn drop_mate_wins_under_verein_and_fics() {
    for (rules, cite) in [("verein", "004 §5b"), ("fics", "FICS")] {
        check(&Scenario {
            cite,
            rules,
            start: Some(SMOTHER),
            actions: json!([{"board": "A", "move": "N@f7"}]),
            expect: json!([
                {"type": "move", "san": "N@f7#"},
                {"type": "result", "result": "1-0", "reason": "checkmate"}
            ]),
            absent: &["illegal_move"],
        });
    }
}

/// Q@a8 mates on the back rank, but a drop on b8..g8 could block it.
const BACK_RANK: &str = "7k/6pp/8/8/8/8/8/4K3[Q] w - - 0 1";

#[test]
fn a_drop_mate_that_a_drop_could_block_is_no_drop_mate_under_000() {
    check(&Scenario {
        cite: "000 §2(1)e: not a drop-mate if an interposing drop would be possible",
        rules: "tandem-2024",
        start: Some(BACK_RANK),
        actions: json!([{"board": "A", "move": "Q@a8"}]),
        // Allowed as a drop; and by FIDE rules (§7(6)) it is mate: Black holds nothing to interpose.
        expect: json!([
            {"type": "move", "uci": "Q@a8", "legal": true},
            {"type": "result", "result": "1-0", "reason": "checkmate"}
        ]),
        absent: &["illegal_move", "piece_removed"],
    });
    check(&Scenario {
        cite: "001 §2(1)d has no §2(1)e: the same drop is a forbidden drop-mate",
        rules: "turnier",
        start: Some(BACK_RANK),
        actions: json!([{"board": "A", "move": "Q@a8"}]),
        expect: json!([
            {"type": "illegal_move", "reason": "drop_mate"},
            {"type": "piece_removed", "square": "a8", "piece": "Q"}
        ]),
        absent: &["result"],
    });
}

// ---- mate definitions ----------------------------------------------------------------------

/// Rh1-h8 checks along the back rank; Black (Ka8, pawns a7 b7) has nothing to interpose.
const ROOK_MATE: &str = "k7/pp6/8/8/8/8/8/K6R[] w - - 0 1";

#[test]
fn a_check_only_a_drop_could_block_is_mate_under_fide_rules() {
    for (rules, cite) in [
        ("tandem-2024", "000 §7(6) FIDE"),
        ("turnier", "001 §7(5) FIDE"),
        ("dsb", "002 8.1 FIDE"),
        (
            "verein",
            "004 §3a: mate avertable only with a piece not in hand",
        ),
    ] {
        check(&Scenario {
            cite,
            rules,
            start: Some(ROOK_MATE),
            actions: json!([{"board": "A", "move": "h1h8"}]),
            expect: json!([{"type": "result", "result": "1-0", "reason": "checkmate"}]),
            absent: &[],
        });
    }
}

#[test]
fn a_check_a_drop_could_block_is_not_mate_on_fics() {
    check(&Scenario {
        cite: "FICS: interposable by a drop is not mate",
        rules: "fics",
        start: Some(ROOK_MATE),
        actions: json!([{"board": "A", "move": "h1h8"}]),
        expect: json!([{"type": "move", "san": "Rh8+"}]),
        absent: &["result"],
    });
}

#[test]
fn a_check_blockable_by_a_piece_in_hand_is_never_mate() {
    for rules in ["tandem-2024", "turnier", "dsb", "verein", "fics"] {
        check(&Scenario {
            cite: "004 §3a / FIDE: a drop from the pocket is a legal reply",
            rules,
            start: Some("k7/pp6/8/8/8/8/8/K6R[n] w - - 0 1"),
            actions: json!([{"board": "A", "move": "h1h8"}, {"board": "A", "move": "N@b8"}]),
            expect: json!([{"type": "move", "uci": "N@b8", "legal": true}]),
            absent: &["result"],
        });
    }
}

#[test]
fn mate_on_board_b_is_scored_for_the_team() {
    check(&Scenario {
        cite: "000 §7(2): WhiteA plays with BlackB; BPGN 1-0 is that team's win",
        rules: "tandem-2024",
        start: Some("4k3/8/8/8/8/8/8/4K3[] w - - 0 1 | k7/pp6/8/8/8/8/8/K6R[] w - - 0 1"),
        actions: json!([{"board": "B", "move": "Rh8#"}]),
        expect: json!([{"type": "result", "board": "B", "result": "0-1", "reason": "checkmate"}]),
        absent: &[],
    });
}

// ---- promotion ----------------------------------------------------------------------------

const PROMOTE: &str = "k7/4P3/8/8/8/8/8/4K3[] w - - 0 1";

#[test]
fn promotion_without_a_named_piece_is_a_queen() {
    check(&Scenario {
        cite: "000 §2(1)c: the queen when no piece is named",
        rules: "tandem-2024",
        start: Some(PROMOTE),
        actions: json!([{"board": "A", "move": "e7e8"}]),
        expect: json!([{"type": "move", "uci": "e7e8q", "san": "e8=Q+"}]),
        absent: &["illegal_move"],
    });
}

#[test]
fn a_captured_promoted_piece_goes_over_as_a_pawn() {
    for (rules, cite) in [
        ("tandem-2024", "000 §2(1)c"),
        ("turnier", "001 §2(1)c"),
        ("fics", "FICS"),
    ] {
        check(&Scenario {
            cite,
            rules,
            // Black's pawn d6 takes White's promoted knight on e5; the piece goes to White on B.
            start: Some("k7/8/3p4/4N~3/8/8/8/K7[] b - - 0 1 | 4k3/8/8/8/8/8/8/4K3[] w - - 0 1"),
            actions: json!([
                {"board": "A", "move": "d6e5"},
                {"board": "B", "move": "P@e4"},
                {"board": "B", "move": "e8d8"},
                {"board": "B", "move": "N@d4"}
            ]),
            expect: json!([
                {"type": "move", "board": "A", "uci": "d6e5"},
                {"type": "move", "board": "B", "uci": "P@e4", "legal": true},
                {"type": "illegal_move", "board": "B", "uci": "N@d4", "reason": "drop_from_empty_pocket"}
            ]),
            absent: &["result"],
        });
    }
}

#[test]
fn a_pawn_reaching_the_last_rank_counts_as_captured_under_dsb() {
    check(&Scenario {
        cite: "002 7.5",
        rules: "dsb",
        start: Some(PROMOTE),
        // Whatever piece the player puts down, the pawn counts as captured.
        actions: json!([{"board": "A", "move": "e7e8q"}]),
        expect: json!([
            {"type": "move", "uci": "e7e8", "legal": true},
            // Treated as captured by Black on A: it goes to Black's partner, White on B.
            {"type": "piece_removed", "square": "e8", "piece": "P", "to_board": "B", "to_color": "white"}
        ]),
        absent: &["illegal_move", "result"],
    });
}

#[test]
fn steal_promotion_takes_a_piece_from_the_partners_opponent() {
    check(&Scenario {
        cite: "004 §6",
        rules: "verein",
        start: Some("k7/4P3/8/8/8/8/8/4K3[] w - - 0 1 | 4k3/8/8/8/8/8/8/1N2K3[] w - - 0 1"),
        // The knight on b1 of board B (White on B is the partner's opponent) moves to e8 of A;
        // White on B gets the pawn in hand and can drop it.
        actions: json!([
            {"board": "A", "move": "e7e8^b1"},
            {"board": "B", "move": "P@d4"}
        ]),
        expect: json!([
            {"type": "move", "board": "A", "uci": "e7e8^b1", "legal": true},
            {"type": "move", "board": "B", "uci": "P@d4", "legal": true}
        ]),
        absent: &["illegal_move"],
    });
}

#[test]
fn steal_promotion_is_impossible_without_a_piece_that_may_be_taken() {
    check(&Scenario {
        cite: "004 §6: impossible if nothing may be taken",
        rules: "verein",
        start: Some("k7/4P3/8/8/8/8/8/4K3[] w - - 0 1 | 4k3/8/8/8/8/8/4P3/4K3[] w - - 0 1"),
        actions: json!([{"board": "A", "move": "e7e8q"}]),
        expect: json!([{"type": "illegal_move", "consequence": "claimable"}]),
        absent: &[],
    });
    check(&Scenario {
        cite: "004 §6: not a piece whose removal gives check",
        rules: "verein",
        // The bishop e2 shields White's king on B from the rook e8.
        start: Some("k7/4P3/8/8/8/8/8/4K3[] w - - 0 1 | 4r1k1/8/8/8/8/8/4B3/4K3[] w - - 0 1"),
        actions: json!([{"board": "A", "move": "e7e8^e2"}]),
        expect: json!([{"type": "illegal_move", "consequence": "claimable"}]),
        absent: &[],
    });
}

// ---- castling with a dropped rook ----------------------------------------------------------

fn dropped_rook_castling(rules: &'static str) -> Scenario {
    Scenario {
        cite: "004 §5b: a rook dropped on its start square counts as unmoved",
        rules,
        start: Some("4k3/8/8/8/8/8/7b/4K2R[R] w K - 0 1"),
        actions: json!([
            {"board": "A", "move": "h1h2"},
            {"board": "A", "move": "e8d8"},
            {"board": "A", "move": "h2a2"},
            {"board": "A", "move": "d8e8"},
            {"board": "A", "move": "R@h1"},
            {"board": "A", "move": "e8d8"},
            {"board": "A", "move": "e1g1"}
        ]),
        expect: json!([]),
        absent: &[],
    }
}

#[test]
fn a_dropped_rook_may_castle_under_verein_only() {
    let mut verein = dropped_rook_castling("verein");
    verein.expect = json!([{"type": "move", "uci": "e1g1", "san": "O-O", "legal": true}]);
    verein.absent = &["illegal_move"];
    check(&verein);
    let mut fics = dropped_rook_castling("fics");
    fics.expect = json!([{"type": "illegal_move", "uci": "e1g1", "consequence": "rejected"}]);
    check(&fics);
}

// ---- illegal moves -------------------------------------------------------------------------

/// White (Ke1) is in check from the rook a1 and twice steps along the checked rank.
fn illegal_twice(rules: &'static str) -> Vec<Value> {
    let s = Scenario {
        cite: "",
        rules,
        start: Some("4k3/8/8/8/8/8/8/r3K3[] w - - 0 1"),
        actions: json!([
            {"board": "A", "move": "e1d1"},
            {"board": "A", "move": "e8e7"},
            {"board": "A", "move": "d1e2"},
            {"board": "A", "move": "e7e6"},
            {"board": "A", "move": "e2d1"},
            {"claim": {"kind": "illegal_move", "board": "A", "by": "black"}}
        ]),
        expect: json!([]),
        absent: &[],
    };
    run(&s)
}

#[test]
fn first_illegal_move_is_taken_back_when_claimed_and_the_second_loses_under_000() {
    check(&Scenario {
        cite: "000 §4(1)c: the first illegal move has no consequence; claimed, it is taken back",
        rules: "tandem-2024",
        start: Some("4k3/8/8/8/8/8/8/r3K3[] w - - 0 1"),
        actions: json!([
            {"board": "A", "move": "e1d1"},
            {"claim": {"kind": "illegal_move", "board": "A", "by": "black"}},
            {"board": "A", "move": "e1e2"},
            {"board": "A", "move": "a1a2"},
            {"board": "A", "move": "e2d1"},
            {"board": "A", "move": "a2a1"},
            {"board": "A", "move": "d1c2"},
            {"board": "A", "move": "a1a2"},
            {"board": "A", "move": "c2b2"},
            {"claim": {"kind": "illegal_move", "board": "A", "by": "black"}}
        ]),
        expect: json!([
            {"type": "illegal_move", "uci": "e1d1", "reason": "leaves_king_in_check", "consequence": "claimable"},
            {"type": "move_retracted", "uci": "e1d1", "color": "white"},
            {"type": "move", "uci": "e1e2", "color": "white", "legal": true},
            {"type": "illegal_move", "uci": "c2b2", "consequence": "claimable"},
            {"type": "result", "result": "0-1", "reason": "illegal_move"}
        ]),
        absent: &[],
    });
    // Unclaimed, the illegal move stands and play goes on from the position it made.
    check(&Scenario {
        cite: "000 §4(1)c with FIDE rapid A4c: an unclaimed illegal move stands",
        rules: "tandem-2024",
        start: Some("4k3/8/8/8/8/8/8/r3K3[] w - - 0 1"),
        actions: json!([
            {"board": "A", "move": "e1d1"},
            {"board": "A", "move": "e8e7"},
            {"board": "A", "move": "d1e2"}
        ]),
        expect: json!([
            {"type": "illegal_move", "uci": "e1d1", "applied": true},
            {"type": "move", "uci": "e1d1", "legal": false},
            {"type": "move", "uci": "e8e7", "legal": true},
            {"type": "move", "uci": "d1e2", "legal": true}
        ]),
        absent: &["result", "move_retracted"],
    });
}

#[test]
fn a_claimed_illegal_move_loses_under_001_002_004() {
    for (rules, cite) in [
        ("turnier", "001 §4(1)c"),
        ("dsb", "002 8.3"),
        ("verein", "004 §10"),
    ] {
        let events = illegal_twice(rules);
        assert!(
            events.iter().any(|e| e["type"] == "illegal_move"
                && e["uci"] == "e1d1"
                && e["consequence"] == "claimable"),
            "{cite}: {events:?}"
        );
        // The claim comes too late for e1d1 (Black has moved since), but in time for e2d1.
        assert!(
            events.iter().any(|e| e["type"] == "result"
                && e["result"] == "0-1"
                && e["reason"] == "illegal_move"),
            "{cite}: {events:?}"
        );
    }
}

#[test]
fn the_claim_expires_once_the_claimant_completes_his_move_under_004() {
    check(&Scenario {
        cite: "004 §10: the right to claim ends when the opponent has completed his move",
        rules: "verein",
        start: Some("4k3/8/8/8/8/8/8/r3K3[] w - - 0 1"),
        actions: json!([
            {"board": "A", "move": "e1d1"},
            {"press": "A"},
            {"board": "A", "move": "e8e7"},
            {"press": "A"},
            {"claim": {"kind": "illegal_move", "board": "A", "by": "black"}}
        ]),
        expect: json!([
            {"type": "illegal_move", "uci": "e1d1", "consequence": "claimable"},
            {"type": "claim_rejected", "by": "black", "kind": "illegal_move"}
        ]),
        absent: &["result"],
    });
    check(&Scenario {
        cite: "004 §7 and §10: before the press the move is not complete, the claim still stands",
        rules: "verein",
        start: Some("4k3/8/8/8/8/8/8/r3K3[] w - - 0 1"),
        actions: json!([
            {"board": "A", "move": "e1d1"},
            {"press": "A"},
            {"board": "A", "move": "e8e7"},
            {"claim": {"kind": "illegal_move", "board": "A", "by": "black"}}
        ]),
        expect: json!([{"type": "result", "result": "0-1", "reason": "illegal_move"}]),
        absent: &["claim_rejected"],
    });
}

#[test]
fn illegal_moves_are_refused_online() {
    check(&Scenario {
        cite: "FICS: an illegal move is not made",
        rules: "fics",
        start: Some("4k3/8/8/8/8/8/8/r3K3[] w - - 0 1"),
        actions: json!([{"board": "A", "move": "e1d1"}, {"board": "A", "move": "e1e2"}]),
        expect: json!([
            {"type": "illegal_move", "uci": "e1d1", "consequence": "rejected", "applied": false},
            {"type": "move", "uci": "e1e2", "legal": true}
        ]),
        absent: &["result"],
    });
}

// ---- stalemate ----------------------------------------------------------------------------

/// Black (Ka8) is stalemated by Qc7 + Kb6 on B; on A White's Kb5-b6 stalemates Black the same way.
const BOTH_STALEMATE: &str = "k7/2Q5/8/1K6/8/8/8/8[] w - - 0 1 | k7/2Q5/1K6/8/8/8/8/8[] b - - 0 1";

#[test]
fn both_boards_stalemated_is_a_draw_under_000_and_001() {
    for (rules, cite) in [("tandem-2024", "000 §6(1)b"), ("turnier", "001 §6b")] {
        check(&Scenario {
            cite,
            rules,
            start: Some(BOTH_STALEMATE),
            actions: json!([{"board": "A", "move": "b5b6"}]),
            expect: json!([{"type": "result", "result": "1/2-1/2", "reason": "both_stalemated"}]),
            absent: &[],
        });
    }
}

#[test]
fn there_is_no_stalemate_under_dsb_and_a_single_stalemate_never_ends_the_match() {
    check(&Scenario {
        cite: "002 9.5: there is no stalemate; the player must drop (and waits)",
        rules: "dsb",
        start: Some(BOTH_STALEMATE),
        actions: json!([{"board": "A", "move": "b5b6"}]),
        expect: json!([{"type": "move", "uci": "b5b6"}]),
        absent: &["result"],
    });
    check(&Scenario {
        cite: "000 §6(1)b: one stalemated board is no draw",
        rules: "tandem-2024",
        start: Some("k7/2Q5/8/1K6/8/8/8/8[] w - - 0 1 | 4k3/8/8/8/8/8/8/4K3[] w - - 0 1"),
        actions: json!([{"board": "A", "move": "b5b6"}]),
        expect: json!([{"type": "move", "uci": "b5b6"}]),
        absent: &["result"],
    });
}

// ---- flags, claims and other draws ----------------------------------------------------------

fn two_flags() -> Value {
    json!([{"simultaneous": [
        {"flag": {"board": "A", "color": "white"}},
        {"flag": {"board": "B", "color": "white"}}
    ]}])
}

#[test]
fn a_single_flag_loses() {
    for rules in ["tandem-2024", "turnier", "dsb", "verein", "fics"] {
        check(&Scenario {
            cite: "000 §4(1)b, 001 §4b, 002 8.2, 004 §3b",
            rules,
            start: None,
            actions: json!([{"flag": {"board": "B", "color": "black"}}]),
            expect: json!([{"type": "result", "result": "0-1", "reason": "flag"}]),
            absent: &[],
        });
    }
}

#[test]
fn simultaneous_claims_draw_under_000_and_001() {
    for (rules, cite) in [("tandem-2024", "000 §6(1)a"), ("turnier", "001 §6a")] {
        check(&Scenario {
            cite,
            rules,
            start: None,
            actions: two_flags(),
            expect: json!([{"type": "result", "result": "1/2-1/2", "reason": "simultaneous_claims"}]),
            absent: &[],
        });
    }
}

#[test]
fn both_flags_draw_under_dsb_and_verein() {
    for (rules, cite) in [("dsb", "002 9.2"), ("verein", "004 §4b")] {
        check(&Scenario {
            cite,
            rules,
            start: None,
            actions: two_flags(),
            expect: json!([{"type": "result", "result": "1/2-1/2", "reason": "double_flag"}]),
            absent: &[],
        });
    }
    check(&Scenario {
        cite: "FICS: the first flag decides",
        rules: "fics",
        start: None,
        actions: two_flags(),
        expect: json!([{"type": "result", "result": "0-1", "reason": "flag"}]),
        absent: &[],
    });
}

#[test]
fn simultaneous_mates_draw_under_dsb_and_verein() {
    for (rules, cite) in [("dsb", "002 9.1"), ("verein", "004 §4c")] {
        check(&Scenario {
            cite,
            rules,
            start: Some("k7/pp6/8/8/8/8/8/K6R[] w - - 0 1 | k7/pp6/8/8/8/8/8/K6R[] w - - 0 1"),
            actions: json!([{"simultaneous": [
                {"board": "A", "move": "h1h8"},
                {"board": "B", "move": "h1h8"}
            ]}]),
            expect: json!([{"type": "result", "result": "1/2-1/2", "reason": "simultaneous_mates"}]),
            absent: &[],
        });
    }
}

/// Qe8+ Kh7 Qe4+ Kh8, twice more: the position after Qe8+ occurs three times.
fn perpetual(rules: &'static str) -> Scenario {
    Scenario {
        cite: "002 9.3: perpetual check on one board",
        rules,
        start: Some("7k/6p1/8/8/8/8/8/K3Q3[] w - - 0 1"),
        actions: json!([
            {"board": "A", "move": "e1e8"}, {"board": "A", "move": "h8h7"},
            {"board": "A", "move": "e8e4"}, {"board": "A", "move": "h7h8"},
            {"board": "A", "move": "e4e8"}, {"board": "A", "move": "h8h7"},
            {"board": "A", "move": "e8e4"}, {"board": "A", "move": "h7h8"},
            {"board": "A", "move": "e4e8"},
            {"claim": {"kind": "perpetual_check", "board": "A", "by": "black"}}
        ]),
        expect: json!([]),
        absent: &[],
    }
}

#[test]
fn perpetual_check_draws_under_dsb_only() {
    let mut dsb = perpetual("dsb");
    dsb.expect = json!([{"type": "result", "result": "1/2-1/2", "reason": "perpetual_check"}]);
    check(&dsb);
    let mut tandem = perpetual("tandem-2024");
    tandem.expect = json!([{"type": "claim_rejected", "kind": "perpetual_check"}]);
    tandem.absent = &["result"];
    check(&tandem);
}

#[test]
fn a_perpetual_claim_needs_three_repetitions() {
    let mut early = perpetual("dsb");
    early.actions = json!([
        {"board": "A", "move": "e1e8"}, {"board": "A", "move": "h8h7"},
        {"board": "A", "move": "e8e4"}, {"board": "A", "move": "h7h8"},
        {"board": "A", "move": "e4e8"},
        {"claim": {"kind": "perpetual_check", "board": "A", "by": "black"}}
    ]);
    early.expect = json!([{"type": "claim_rejected"}]);
    early.absent = &["result"];
    check(&early);
}

#[test]
fn agreement_and_resignation_end_the_match() {
    for rules in ["tandem-2024", "turnier", "dsb", "verein", "fics"] {
        check(&Scenario {
            cite: "002 9.4, 004 §4a: agreement of all",
            rules,
            start: None,
            actions: json!([{"draw_agreed": true}, {"board": "A", "move": "e2e4"}]),
            expect: json!([
                {"type": "result", "result": "1/2-1/2", "reason": "agreement"},
                {"type": "status", "state": "ignored"}
            ]),
            absent: &["move"],
        });
        check(&Scenario {
            cite: "000 §4(1)d, 001 §4d, 002 8.4, 004 §3c: resignation",
            rules,
            start: None,
            actions: json!([{"resign": {"board": "A", "color": "black"}}]),
            expect: json!([{"type": "result", "result": "1-0", "reason": "resignation"}]),
            absent: &[],
        });
    }
}

#[test]
fn unreadable_input_is_a_status_event_not_a_change() {
    check(&Scenario {
        cite: "robustness",
        rules: "tandem-2024",
        start: None,
        actions: json!([
            {"board": "A", "move": "zz9"},
            {"board": "A", "move": "e3e4"},
            {"board": "A", "move": "e2e4"}
        ]),
        expect: json!([
            {"type": "status", "state": "rejected"},
            {"type": "status", "state": "rejected"},
            {"type": "move", "uci": "e2e4", "number": 1}
        ]),
        absent: &["illegal_move"],
    });
}

#[test]
fn a_retracted_misread_move_is_undone_and_its_capture_comes_back() {
    // The tracker read exd5 on A, then saw it was wrong: the pawn is back on d5 (not in B's
    // pocket), White moves again, and e4e5 stands.
    check(&Scenario {
        cite: "tracker correction (issue 6)",
        rules: "fics",
        start: Some(
            "rnbqkbnr/ppp1pppp/8/3p4/4P3/8/PPPP1PPP/RNBQKBNR[] w KQkq - 0 2 \
             | rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1",
        ),
        actions: json!([
            {"board": "A", "move": "e4d5"},
            {"retract": "A"},
            {"board": "A", "move": "e4e5"},
            {"retract": "B"}
        ]),
        expect: json!([
            {"type": "move", "uci": "e4d5", "legal": true},
            {"type": "move_retracted", "uci": "e4d5", "reason": "misread", "color": "white",
             "fen": "rnbqkbnr/ppp1pppp/8/3p4/4P3/8/PPPP1PPP/RNBQKBNR[] w KQkq - 0 2"},
            {"type": "move", "uci": "e4e5", "legal": true, "color": "white"},
            {"type": "status", "state": "rejected"}
        ]),
        absent: &["illegal_move"],
    });
}

#[test]
fn a_move_read_by_the_camera_keeps_its_reading_in_the_move_event() {
    // The daemon journals the tracker's moves as actions and its own referee makes the `move`
    // events: the reading must survive that path (and a replay of the journal).
    let events = run(&Scenario {
        cite: "docs/referee.md, move actions",
        rules: "fics",
        start: Some("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1"),
        actions: json!([
            {"board": "A", "move": "e2e4", "reading": {"lead": 0.4, "guess": true}},
            {"board": "A", "move": "e7e5"}
        ]),
        expect: json!([]),
        absent: &[],
    });
    let moves: Vec<&Value> = events.iter().filter(|e| e["type"] == "move").collect();
    assert_eq!(moves.len(), 2, "{events:?}");
    assert_eq!(moves[0]["reading"], json!({"lead": 0.4, "guess": true}));
    assert!(moves[1].get("reading").is_none(), "{:?}", moves[1]);
}
