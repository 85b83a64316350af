//! Property: on a table, random play mixing legal moves and illegal physical moves (wrong
//! geometry, kings left in check, drops from empty pockets, steals) conserves material: each
//! colour's 16 + 16 pieces stay accounted for across both boards and all pockets, promoted
//! pieces counted as pawns and pieces from outside the game in the `borrowed` ledger. (This holds
//! when captured promoted pieces revert to pawns, as in every rule set we know.)

use proptest::prelude::*;
use tandem_monitor::engine::{
    BoardId, Color, DropMate, MateRule, Move, Promotion, Role, Square, Table, Variant,
};

const FULL: [u8; 6] = [16, 4, 4, 4, 2, 2];

fn variant(i: u8) -> Variant {
    let promotion =
        [Promotion::Choose, Promotion::PawnCaptured, Promotion::Steal][(i % 3) as usize];
    Variant {
        promotion,
        drop_mate: if i & 4 != 0 {
            DropMate::Forbidden
        } else {
            DropMate::Allowed
        },
        mate: if i & 8 != 0 {
            MateRule::Standard
        } else {
            MateRule::DropInterposable
        },
        drop_mate_rule: if i & 16 != 0 {
            MateRule::Standard
        } else {
            MateRule::DropInterposable
        },
        // Without reverting, a captured promoted queen enters a pocket as a queen: the 16-piece
        // sets are then not conserved by the rules themselves, so the property needs reverting.
        promoted_reverts: true,
        dropped_rook_castles: i & 32 != 0,
        dropped_pawn_double_step: i & 64 != 0,
        ..Variant::default()
    }
}

fn square(n: u16) -> Square {
    Square::new((n % 64) as u8).expect("below 64")
}

fn step(t: &mut Table, v: &Variant, kind: u8, a: u16, b: u16, c: u16) {
    let board = if a & 1 == 0 { BoardId::A } else { BoardId::B };
    let pos = t.board(board).clone();
    match kind % 4 {
        // Legal move (most of the time).
        0 | 1 => {
            let moves = t.legal_moves(board, v);
            if !moves.is_empty() {
                let m = moves[b as usize % moves.len()];
                t.play(board, m, v).expect("a generated move is legal");
            }
        }
        // A piece of the mover moved anywhere.
        2 => {
            let mine: Vec<Square> = pos.by_color(pos.turn()).collect();
            let from = mine[b as usize % mine.len()];
            let to = square(c);
            let promotion = if c & 64 != 0 { Some(Role::Queen) } else { None };
            if let Ok(m) = pos.uci_to_move(tandem_monitor::engine::UciMove::Normal {
                from,
                to,
                promotion,
            }) {
                let _ = t.play_physical(board, m, v);
            }
        }
        // A drop, from the pocket or not, or a steal of anything.
        _ => {
            if c & 1 == 0 {
                let role = Role::POCKET[b as usize % 5];
                let _ = t.play_physical(
                    board,
                    Move::Drop {
                        role,
                        to: square(c >> 1),
                    },
                    v,
                );
            } else {
                let pawns: Vec<Square> = pos.pieces(pos.turn(), Role::Pawn).collect();
                if !pawns.is_empty() {
                    let from = pawns[b as usize % pawns.len()];
                    let m = Move::Steal {
                        from,
                        to: square(c >> 1),
                        steal: square(c >> 7),
                    };
                    let _ = t.play_physical(board, m, v);
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn material_is_conserved(v in any::<u8>(), steps in prop::collection::vec((any::<u8>(), any::<u16>(), any::<u16>(), any::<u16>()), 1..120)) {
        let v = variant(v);
        let mut t = Table::new();
        for (kind, a, b, c) in steps {
            step(&mut t, &v, kind, a, b, c);
            for color in Color::ALL {
                prop_assert_eq!(t.material(color), FULL, "{:?} after {}", color, t.to_fen());
                prop_assert_eq!(t.board(BoardId::A).pieces(color, Role::King).count(), 1);
                prop_assert_eq!(t.board(BoardId::B).pieces(color, Role::King).count(), 1);
            }
        }
    }
}
