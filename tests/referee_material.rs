//! Property: whatever happens at the table — legal moves, illegal moves that stand, claims that take
//! them back, misread moves the tracker retracts, forbidden drop-mates removed by rule, steal promotions — every piece of both colours
//! stays accounted for across both boards and the four pockets (issue 3).

use proptest::prelude::*;
use serde_json::json;
use tandem_monitor::engine::{BoardId, Color, Role, Square};
use tandem_monitor::rules::{EventBody, PRESETS, Referee, RuleSet, TimedAction};

/// Both sets' pieces per colour: 16 pawns, 4 knights, 4 bishops, 4 rooks, 2 queens, 2 kings.
const FULL: [u8; 6] = [16, 4, 4, 4, 2, 2];

/// Turns one random number into one action on the current table.
fn next_action(referee: &Referee, choice: u32) -> serde_json::Value {
    let board = if choice & 1 == 0 {
        BoardId::A
    } else {
        BoardId::B
    };
    let name = if board == BoardId::A { "A" } else { "B" };
    let table = referee.table();
    let position = table.board(board);
    let pick = choice >> 3;
    match (choice >> 1) & 3 {
        // Mostly legal moves (the fast path of every real game).
        0 | 1 => {
            let moves = table.legal_moves(board, &referee.rules().variant());
            if moves.is_empty() {
                return json!({"press": name});
            }
            let mv = moves[pick as usize % moves.len()];
            json!({"board": name, "move": mv.to_uci().to_string()})
        }
        // A physical move that may be illegal: one of the mover's pieces to any square, or a drop.
        2 => {
            let own: Vec<Square> = position.by_color(position.turn()).into_iter().collect();
            let to = Square::new((pick % 64) as u8).expect("in range");
            if pick.is_multiple_of(5) {
                let role = [
                    Role::Pawn,
                    Role::Knight,
                    Role::Bishop,
                    Role::Rook,
                    Role::Queen,
                ][(pick / 64) as usize % 5];
                json!({"board": name, "move": format!("{}@{to}", role.upper_char())})
            } else {
                let from = own[(pick / 64) as usize % own.len().max(1)];
                json!({"board": name, "move": format!("{from}{to}")})
            }
        }
        // The tracker withdrawing a misread move.
        _ if pick.is_multiple_of(3) => json!({"retract": name}),
        // A claim by the player to move (against the opponent's last move).
        _ => {
            let by = match position.turn() {
                Color::White => "white",
                Color::Black => "black",
            };
            json!({"claim": {"kind": "illegal_move", "board": name, "by": by}})
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn material_is_conserved_under_every_rule_set(
        preset in 0usize..PRESETS.len(),
        choices in proptest::collection::vec(any::<u32>(), 1..160),
    ) {
        let rules = RuleSet::preset(PRESETS[preset]).unwrap();
        let mut referee = Referee::new("t", 1, rules, None).unwrap();
        for (i, choice) in choices.into_iter().enumerate() {
            let action = TimedAction::from_json(&next_action(&referee, choice), i).unwrap();
            let events = referee.apply(action);
            for color in [Color::White, Color::Black] {
                prop_assert_eq!(
                    referee.table().material(color),
                    FULL,
                    "{:?} after action {} ({:?}) under {}; table {}",
                    color,
                    i,
                    events.iter().map(|e| &e.body).collect::<Vec<_>>(),
                    PRESETS[preset],
                    referee.table().to_fen()
                );
            }
            if events.iter().any(|e| matches!(e.body, EventBody::Result { .. })) {
                break;
            }
        }
    }
}
