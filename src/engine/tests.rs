//! Module-level tests: illegal-move reasons, physical play, every `Variant` option, the table.

use super::*;

fn sq(s: &str) -> Square {
    s.parse().expect("test square")
}

fn pos(fen: &str) -> Position {
    fen.parse().expect("test FEN")
}

fn uci(p: &Position, s: &str) -> Move {
    p.parse_uci(s).expect("test UCI")
}

fn legal_uci(p: &Position, v: &Variant) -> Vec<String> {
    let mut v: Vec<String> = p.legal_moves(v).iter().map(|m| m.to_string()).collect();
    v.sort();
    v
}

/// Every move the board could physically express: all origin/target pairs of the mover's
/// pieces (with and without promotion pieces) and all drops.
fn all_candidate_moves(p: &Position) -> Vec<Move> {
    let mut out = Vec::new();
    for from in p.by_color(p.turn()) {
        for to in Square::all() {
            for promotion in [
                None,
                Some(Role::Queen),
                Some(Role::Knight),
                Some(Role::King),
            ] {
                if let Ok(m) = p.uci_to_move(UciMove::Normal {
                    from,
                    to,
                    promotion,
                }) {
                    out.push(m);
                }
            }
        }
    }
    for role in Role::ALL {
        for to in Square::all() {
            out.push(Move::Drop { role, to });
        }
    }
    out
}

/// `classify` and `legal_moves` agree, and every legal move leaves the mover's king safe.
fn assert_consistent(p: &Position, v: &Variant) {
    let legal = p.legal_moves(v);
    for m in all_candidate_moves(p) {
        let ok = p.classify(m, v).is_ok();
        assert_eq!(
            ok,
            legal.contains(&m),
            "{p} {m}: classify {:?}",
            p.classify(m, v)
        );
    }
    for &m in legal.iter() {
        let mut c = p.clone();
        c.play(m, v);
        assert!(
            !c.is_king_attacked(p.turn()),
            "{p} {m} leaves king attacked"
        );
        assert_eq!(c.pieces(Color::White, Role::King).count(), 1);
        assert_eq!(c.pieces(Color::Black, Role::King).count(), 1);
    }
    assert_eq!(p.count_legal(v), legal.len() as u64);
}

#[test]
fn start_position_perft() {
    let p = Position::new();
    let v = Variant::crazyhouse();
    assert_eq!(perft(&p, 1, &v), 20);
    assert_eq!(perft(&p, 2, &v), 400);
    assert_eq!(perft(&p, 3, &v), 8902);
    assert_consistent(&p, &v);
}

// ----- every IllegalReason -------------------------------------------------------------------

#[test]
fn every_illegal_reason() {
    use IllegalReason as R;
    let v = Variant::default();
    let start = Position::new();
    let normal = |role, from: &str, to: &str, promotion| Move::Normal {
        role,
        from: sq(from),
        to: sq(to),
        capture: None,
        promotion,
    };
    let cases: Vec<(Position, Move, Variant, R)> = vec![
        (
            start.clone(),
            normal(Role::Pawn, "e3", "e4", None),
            v,
            R::NoPieceOnSquare,
        ),
        (
            start.clone(),
            normal(Role::Knight, "e2", "e4", None),
            v,
            R::WrongPiece,
        ),
        (
            start.clone(),
            normal(Role::Pawn, "e7", "e5", None),
            v,
            R::WrongColour,
        ),
        (
            start.clone(),
            normal(Role::Knight, "b1", "b3", None),
            v,
            R::CannotMoveThatWay,
        ),
        (
            start.clone(),
            normal(Role::Pawn, "e2", "e5", None),
            v,
            R::CannotMoveThatWay,
        ),
        (
            start.clone(),
            normal(Role::Bishop, "c1", "e3", None),
            v,
            R::PathBlocked,
        ),
        (
            start.clone(),
            normal(Role::Knight, "b1", "d2", None),
            v,
            R::OwnPieceOnTarget,
        ),
        (
            pos("4k3/4r3/8/8/8/8/4B3/4K3[] w - - 0 1"),
            normal(Role::Bishop, "e2", "d3", None),
            v,
            R::LeavesKingInCheck,
        ),
        (
            pos("r3k2r/8/8/8/8/8/8/R3K2R[] w - - 0 1"),
            Move::Castle {
                king: Square::E1,
                rook: Square::H1,
            },
            v,
            R::CastlingNotAllowed,
        ),
        (
            pos("4k3/8/8/8/8/8/5r2/R3K2R[] w KQ - 0 1"),
            Move::Castle {
                king: Square::E1,
                rook: Square::H1,
            },
            v,
            R::CastlingNotAllowed,
        ),
        (
            pos("4k3/8/8/8/8/8/8/4K3[P] w - - 0 1"),
            Move::Drop {
                role: Role::Pawn,
                to: sq("a8"),
            },
            v,
            R::PawnDropOnBackRank,
        ),
        (
            pos("4k3/8/8/8/8/8/8/4K3[P] w - - 0 1"),
            Move::Drop {
                role: Role::Pawn,
                to: sq("a1"),
            },
            v,
            R::PawnDropOnBackRank,
        ),
        (
            pos("4k3/8/8/8/8/8/8/4K3[N] w - - 0 1"),
            Move::Drop {
                role: Role::Knight,
                to: sq("e1"),
            },
            v,
            R::DropOnOccupiedSquare,
        ),
        (
            pos("4k3/8/8/8/8/8/8/4K3[P] w - - 0 1"),
            Move::Drop {
                role: Role::Knight,
                to: sq("f3"),
            },
            v,
            R::DropFromEmptyPocket,
        ),
        (
            pos("7k/4N1pp/8/8/8/8/8/4K3[Q] w - - 0 1"),
            Move::Drop {
                role: Role::Queen,
                to: sq("g8"),
            },
            Variant {
                drop_mate: DropMate::Forbidden,
                ..v
            },
            R::DropMate,
        ),
        (
            pos("4k3/P7/8/8/8/8/8/4K3[] w - - 0 1"),
            normal(Role::Pawn, "a7", "a8", None),
            v,
            R::PromotionRequired,
        ),
        (
            pos("4k3/P7/8/8/8/8/8/4K3[] w - - 0 1"),
            normal(Role::Pawn, "a7", "a8", Some(Role::King)),
            v,
            R::InvalidPromotion,
        ),
        (
            start.clone(),
            normal(Role::Pawn, "e2", "e3", Some(Role::Queen)),
            v,
            R::InvalidPromotion,
        ),
        (
            pos("k7/8/8/8/8/8/8/R3K3[] w - - 0 1"),
            normal(Role::Rook, "a1", "a8", None),
            v,
            R::CapturesKing,
        ),
    ];
    for (p, m, var, reason) in cases {
        assert_eq!(p.classify(m, &var), Err(reason), "{p} {m}");
        assert!(!p.legal_moves(&var).contains(&m));
        assert!(!reason.to_string().is_empty());
    }
    // The steal reason comes from the table (see `steal_*` tests).
    assert_eq!(IllegalReason::InvalidSteal.to_string().lines().count(), 1);
}

// ----- physical play from odd positions --------------------------------------------------------

#[test]
fn play_continues_after_a_king_is_left_in_check() {
    let v = Variant::default();
    let mut p = pos("4k3/8/8/8/8/8/4r3/N3K3[] w - - 0 1");
    let m = uci(&p, "a1b3");
    assert_eq!(p.classify(m, &v), Err(IllegalReason::LeavesKingInCheck));
    p.play_physical(m, &v).expect("physically possible");
    // Black to move while White's king stands in check: taking the king is not a move.
    assert_eq!(p.turn(), Color::Black);
    assert!(p.is_king_attacked(Color::White));
    let kx = uci(&p, "e2e1");
    assert_eq!(p.classify(kx, &v), Err(IllegalReason::CapturesKing));
    assert!(matches!(
        p.play_physical(kx, &v),
        Err(PhysicalError::KingCapture(_))
    ));
    assert_consistent(&p, &v);
    // Black's king slides to a5, into the knight's attack: now both kings are in check.
    p.play_physical(uci(&p, "e8a5"), &v)
        .expect("a piece slid across squares");
    assert!(p.is_king_attacked(Color::White) && p.is_king_attacked(Color::Black));
    assert_consistent(&p, &v);
    let moves = p.legal_moves(&v);
    assert!(!moves.is_empty());
    assert!(
        moves.iter().all(|m| m.to() != sq("a5")),
        "the king is never taken"
    );
    assert_eq!(
        p.classify(uci(&p, "b3a5"), &v),
        Err(IllegalReason::CapturesKing)
    );
}

#[test]
fn pawn_dropped_on_back_rank_stays_and_cannot_move() {
    let v = Variant::default();
    let mut p = pos("4k3/8/8/8/8/8/8/4K3[P] w - - 0 1");
    let m = Move::Drop {
        role: Role::Pawn,
        to: sq("c8"),
    };
    assert_eq!(p.classify(m, &v), Err(IllegalReason::PawnDropOnBackRank));
    p.play_physical(m, &v).expect("physically possible");
    p.play_physical(uci(&p, "e8e7"), &v).expect("legal");
    assert!(p.legal_moves(&v).iter().all(|m| m.from() != Some(sq("c8"))));
    assert_consistent(&p, &v);
    let mut q = pos("4k3/8/8/8/8/8/8/4K3[p] b - - 0 1");
    q.play_physical(
        Move::Drop {
            role: Role::Pawn,
            to: sq("h8"),
        },
        &v,
    )
    .expect("possible");
    q.play_physical(uci(&q, "e1d1"), &v).expect("legal");
    // A black pawn on rank 8 may step down like any black pawn.
    assert!(q.legal_moves(&v).iter().any(|m| m.to_string() == "h8h7"));
    assert_consistent(&q, &v);
}

#[test]
fn physical_errors() {
    let v = Variant::default();
    let mut p = Position::new();
    let before = p.clone();
    assert!(matches!(
        p.play_physical(
            Move::Drop {
                role: Role::Knight,
                to: sq("e4")
            },
            &v
        ),
        Err(PhysicalError::EmptyPocket(Role::Knight))
    ));
    assert!(matches!(
        p.play_physical(uci(&before, "e2d1"), &v),
        Err(PhysicalError::OwnPieceOnTarget(_))
    ));
    assert!(matches!(
        p.play_physical(
            Move::Normal {
                role: Role::Pawn,
                from: sq("e7"),
                to: sq("e5"),
                capture: None,
                promotion: None
            },
            &v
        ),
        Err(PhysicalError::NoMoversPiece(_))
    ));
    assert!(matches!(
        p.play_physical(
            Move::Steal {
                from: sq("e2"),
                to: sq("e8"),
                steal: sq("d1")
            },
            &v
        ),
        Err(PhysicalError::NeedsTable)
    ));
    assert_eq!(p, before, "failed physical moves change nothing");
    // A bishop jumping over its own pawn is applied with everything updated.
    p.play_physical(uci(&before, "c1g5"), &v).expect("possible");
    assert_eq!(p.turn(), Color::Black);
    assert_eq!(
        p.piece_at(sq("g5")),
        Some(Piece {
            color: Color::White,
            role: Role::Bishop
        })
    );
    // A king moved wrongly loses castling rights.
    let mut q = pos("r3k2r/8/8/8/8/8/8/R3K2R[] w KQkq - 0 1");
    q.play_physical(uci(&q, "e1e3"), &v).expect("possible");
    assert_eq!(q.castling_rights(), Square::A8.bb() | Square::H8.bb());
    assert!(q.king_moved(Color::White));
}

// ----- variant options -----------------------------------------------------------------------------

#[test]
fn mate_rules_differ_on_distant_slider_checks() {
    // Back-rank check by a rook from a distance, black pocket empty.
    let p = pos("R6k/6pp/8/8/8/8/8/4K3[] b - - 0 1");
    let standard = Variant {
        mate: MateRule::Standard,
        ..Variant::default()
    };
    let fics = Variant {
        mate: MateRule::DropInterposable,
        ..Variant::default()
    };
    assert!(p.is_checkmate(&standard));
    assert_eq!(
        p.outcome(&standard),
        Some(Outcome::Checkmate {
            winner: Color::White
        })
    );
    assert!(
        !p.is_checkmate(&fics),
        "a drop on b8..g8 could block later (000 §2e)"
    );
    assert_eq!(p.outcome(&fics), None);
    // Contact check: mate under both rules.
    let q = pos("6Qk/4N1pp/8/8/8/8/8/4K3[] b - - 0 1");
    assert!(q.is_checkmate(&standard));
    assert!(q.is_checkmate(&fics));
    // Stalemate.
    let s = pos("k7/2Q5/1K6/8/8/8/8/8[] b - - 0 1");
    assert!(s.is_stalemate(&standard));
    assert_eq!(s.outcome(&fics), Some(Outcome::Stalemate));
    let s2 = pos("k7/2Q5/1K6/8/8/8/8/8[n] b - - 0 1");
    assert!(!s2.is_stalemate(&standard), "a drop is a move");
}

#[test]
fn drop_mate_forbidden_excludes_only_mating_drops() {
    let p = pos("7k/6pp/8/8/8/8/8/4K3[R] w - - 0 1");
    let allowed = Variant {
        mate: MateRule::Standard,
        drop_mate_rule: MateRule::Standard,
        ..Variant::default()
    };
    let forbidden_std = Variant {
        drop_mate: DropMate::Forbidden,
        ..allowed
    };
    // Text 000: ordinary mate is FIDE's, but a drop-mate is judged with §2e.
    let forbidden_fics = Variant {
        drop_mate: DropMate::Forbidden,
        drop_mate_rule: MateRule::DropInterposable,
        ..allowed
    };
    let n_all = p.legal_moves(&allowed).len();
    // R@a8 … R@f8 mate under FIDE mate: six drops excluded.
    assert_eq!(p.legal_moves(&forbidden_std).len(), n_all - 6);
    assert_eq!(p.count_legal(&forbidden_std), (n_all - 6) as u64);
    let r_e8 = Move::Drop {
        role: Role::Rook,
        to: sq("e8"),
    };
    assert_eq!(
        p.classify(r_e8, &forbidden_std),
        Err(IllegalReason::DropMate)
    );
    // Under the interposable rule they are not mate, so they stay legal (000 §2e).
    assert_eq!(p.legal_moves(&forbidden_fics).len(), n_all);
    assert_eq!(p.classify(r_e8, &forbidden_fics), Ok(()));
    assert_consistent(&p, &forbidden_std);
    // A contact drop mate is forbidden under both.
    let q = pos("7k/4N1pp/8/8/8/8/8/4K3[Q] w - - 0 1");
    let qg8 = Move::Drop {
        role: Role::Queen,
        to: sq("g8"),
    };
    assert_eq!(
        q.classify(qg8, &forbidden_fics),
        Err(IllegalReason::DropMate)
    );
    assert_eq!(q.classify(qg8, &allowed), Ok(()));
    assert_consistent(&q, &forbidden_fics);
}

#[test]
fn pawn_captured_promotion_removes_the_pawn() {
    let v = Variant {
        promotion: Promotion::PawnCaptured,
        ..Variant::default()
    };
    let p = pos("1n2k3/P7/8/8/8/8/8/4K3[] w - - 0 1");
    let moves = legal_uci(&p, &v);
    assert!(moves.contains(&"a7a8".to_string()));
    assert!(moves.contains(&"a7b8".to_string()));
    assert!(
        !moves.iter().any(|m| m.len() == 5),
        "no promotion pieces: {moves:?}"
    );
    let mut q = p.clone();
    let out = q.play(uci(&p, "a7b8"), &v);
    assert_eq!(
        out.captured,
        Some(Piece {
            color: Color::Black,
            role: Role::Knight
        })
    );
    assert_eq!(
        out.removed,
        Some(Piece {
            color: Color::White,
            role: Role::Pawn
        })
    );
    assert!(q.piece_at(sq("b8")).is_none());
    assert_consistent(&p, &v);
    // The table routes the pawn like a capture: to White's pocket on the other board (002 7.5).
    let mut t = Table::from_boards(p.clone(), Position::new());
    t.play(BoardId::A, uci(&p, "a7a8"), &v).expect("legal");
    assert_eq!(
        t.board(BoardId::B).pocket(Color::White).count(Role::Pawn),
        1
    );
}

#[test]
fn dropped_rook_castles_only_with_the_option() {
    for option in [false, true] {
        let v = Variant {
            dropped_rook_castles: option,
            ..Variant::default()
        };
        let mut p = pos("4k3/8/8/8/8/8/8/4K2R[R] w K - 0 1");
        for m in ["h1h2", "e8d8", "R@h1", "d8e8"] {
            let mv = uci(&p, m);
            assert_eq!(p.classify(mv, &v), Ok(()), "{m}");
            p.play(mv, &v);
        }
        assert_eq!(legal_uci(&p, &v).contains(&"e1g1".to_string()), option);
        assert_consistent(&p, &v);
    }
    // Not once the king has moved, even back to e1.
    let v = Variant {
        dropped_rook_castles: true,
        ..Variant::default()
    };
    let mut p = pos("4k3/8/8/8/8/8/8/4K3[R] w - - 0 1");
    for m in ["e1d1", "e8d8", "d1e1", "d8e8", "R@h1", "e8d8"] {
        let mv = uci(&p, m);
        p.play(mv, &v);
    }
    assert!(!legal_uci(&p, &v).contains(&"e1g1".to_string()));
}

#[test]
fn dropped_pawn_double_step_only_with_the_option() {
    for option in [false, true] {
        let v = Variant {
            dropped_pawn_double_step: option,
            ..Variant::default()
        };
        let mut p = pos("4k3/8/8/8/8/8/8/4K3[P] w - - 0 1");
        for m in ["P@a2", "e8d8"] {
            let mv = uci(&p, m);
            p.play(mv, &v);
        }
        let double = uci(&p, "a2a4");
        assert_eq!(p.classify(double, &v).is_ok(), option);
        if !option {
            assert_eq!(
                p.classify(double, &v),
                Err(IllegalReason::CannotMoveThatWay)
            );
        }
        assert_consistent(&p, &v);
    }
}

#[test]
fn promoted_pieces_revert_when_captured() {
    let p = pos("4k3/8/8/8/8/8/1q~6/R3K3[] w - - 0 1");
    let mut a = p.clone();
    let out = a.play(uci(&p, "a1a2"), &Variant::default());
    assert!(out.captured.is_none());
    let mut b = pos("4k3/8/8/8/8/8/1q~6/1R2K3[] w - - 0 1");
    let m = uci(&b, "b1b2");
    let out = b.play(m, &Variant::default());
    assert_eq!(
        out.captured,
        Some(Piece {
            color: Color::Black,
            role: Role::Pawn
        })
    );
    let mut c = pos("4k3/8/8/8/8/8/1q~6/1R2K3[] w - - 0 1");
    let keep = Variant {
        promoted_reverts: false,
        ..Variant::default()
    };
    assert_eq!(
        c.play(m, &keep).captured,
        Some(Piece {
            color: Color::Black,
            role: Role::Queen
        })
    );
}

// ----- the table -------------------------------------------------------------------------------

#[test]
fn captures_go_to_the_partner() {
    let v = Variant::default();
    let mut t = Table::new();
    for m in ["e2e4", "d7d5", "e4d5"] {
        let mv = t.board(BoardId::A).parse_uci(m).expect("uci");
        t.play(BoardId::A, mv, &v).expect("legal");
    }
    // White on A took a black pawn: it goes to Black on B (White A's partner).
    assert_eq!(
        t.board(BoardId::B).pocket(Color::Black).count(Role::Pawn),
        1
    );
    assert!(t.board(BoardId::A).pocket(Color::White).is_empty());
    assert_eq!(t.material(Color::Black), [16, 4, 4, 4, 2, 2]);
    let b = t.board(BoardId::B).clone();
    assert!(b.legal_moves(&v).is_empty() || b.turn() == Color::White);
    // Illegal moves are refused by `play` with the reason.
    let bad = t.board(BoardId::A).parse_uci("e8e6").expect("uci");
    assert_eq!(
        t.play(BoardId::A, bad, &v),
        Err(IllegalReason::CannotMoveThatWay)
    );
    assert_eq!(t.to_fen().matches(" | ").count(), 1);
    let again: Table = t.to_fen().parse().expect("table FEN");
    assert_eq!(again.to_fen(), t.to_fen());
}

fn steal_variant() -> Variant {
    Variant {
        promotion: Promotion::Steal,
        ..Variant::default()
    }
}

#[test]
fn steal_takes_a_piece_from_the_other_board() {
    let v = steal_variant();
    let a = pos("4k3/P7/8/8/8/8/8/4K3[] w - - 0 1");
    let mut t = Table::from_boards(a, Position::new());
    let steals: Vec<String> = t
        .legal_moves(BoardId::A, &v)
        .iter()
        .filter(|m| matches!(m, Move::Steal { .. }))
        .map(|m| m.to_string())
        .collect();
    // Seven white non-pawn, non-king pieces on B: R N B Q B N R.
    assert_eq!(steals.len(), 7, "{steals:?}");
    assert!(steals.contains(&"a7a8^d1".to_string()));
    assert!(
        t.board(BoardId::A)
            .legal_moves(&v)
            .iter()
            .all(|m| m.to().rank() != 7 || m.role() != Role::Pawn)
    );
    let mv = t
        .uci_to_move(BoardId::A, "a7a8^d1".parse().expect("uci"))
        .expect("move");
    assert_eq!(t.san(BoardId::A, mv, &v), "a8=Q(d1)+");
    assert_eq!(t.parse_san(BoardId::A, "a8=Q(d1)", &v), Ok(mv));
    assert!(
        t.parse_san(BoardId::A, "a8=N(d1)", &v).is_err(),
        "d1 holds a queen"
    );
    let out = t.play(BoardId::A, mv, &v).expect("legal steal");
    assert_eq!(
        out.removed,
        Some(Piece {
            color: Color::White,
            role: Role::Pawn
        })
    );
    assert_eq!(
        t.board(BoardId::A).piece_at(sq("a8")),
        Some(Piece {
            color: Color::White,
            role: Role::Queen
        })
    );
    assert!(t.board(BoardId::B).piece_at(sq("d1")).is_none());
    assert_eq!(
        t.board(BoardId::B).pocket(Color::White).count(Role::Pawn),
        1,
        "004 §6: that player gets the pawn"
    );
}

#[test]
fn steal_impossible_if_nothing_may_be_taken() {
    let v = steal_variant();
    let a = pos("4k3/P7/8/8/8/8/8/4K3[] w - - 0 1");
    let b = pos("4k3/pppppppp/8/8/8/8/PPPPPPPP/4K3[] w - - 0 1");
    let t = Table::from_boards(a, b);
    let moves = t.legal_moves(BoardId::A, &v);
    assert!(
        moves.iter().all(|m| m.from() != Some(sq("a7"))),
        "{moves:?}"
    );
    let m = t
        .uci_to_move(BoardId::A, "a7a8^e1".parse().expect("uci"))
        .expect("move");
    assert_eq!(
        t.classify(BoardId::A, m, &v),
        Err(IllegalReason::InvalidSteal)
    );
}

#[test]
fn steal_not_if_removal_gives_check() {
    let v = steal_variant();
    let a = pos("4k3/P7/8/8/8/8/8/4K3[] w - - 0 1");
    // On B the white rook e2 shields its king from the black rook e8; only the knight may go.
    let b = pos("4r2k/8/8/8/8/8/4R3/1N2K3[] w - - 0 1");
    assert_eq!(b.steal_candidates(Color::White, &v), sq("b1").bb());
    let t = Table::from_boards(a, b);
    let steals: Vec<String> = t
        .legal_moves(BoardId::A, &v)
        .iter()
        .filter(|m| matches!(m, Move::Steal { .. }))
        .map(|m| m.to_string())
        .collect();
    assert_eq!(steals, ["a7a8^b1"]);
}

#[test]
fn physical_drop_from_empty_pocket_borrows() {
    let v = Variant::default();
    let mut t = Table::new();
    // White on A drops a knight it does not have; White's pocket on B is empty too: borrowed.
    let n = Move::Drop {
        role: Role::Knight,
        to: sq("e4"),
    };
    assert_eq!(
        t.classify(BoardId::A, n, &v),
        Err(IllegalReason::DropFromEmptyPocket)
    );
    t.play_physical(BoardId::A, n, &v).expect("physical");
    assert_eq!(t.borrowed(Color::White)[Role::Knight.index()], 1);
    assert_eq!(t.material(Color::White), [16, 4, 4, 4, 2, 2]);
    t.play_physical(
        BoardId::A,
        Move::Drop {
            role: Role::Pawn,
            to: sq("e5"),
        },
        &v,
    )
    .expect("physical");
    assert_eq!(t.borrowed(Color::Black)[Role::Pawn.index()], 1);
    assert_eq!(t.material(Color::Black), [16, 4, 4, 4, 2, 2]);
    // Removing a piece takes it out of the accounting until routed.
    let (piece, promoted) = t.remove_piece(BoardId::A, sq("e4")).expect("knight there");
    assert_eq!((piece.role, promoted), (Role::Knight, false));
    assert_eq!(t.material(Color::White)[Role::Knight.index()], 3);
    assert!(t.add_to_pocket(BoardId::B, piece));
    assert_eq!(t.material(Color::White), [16, 4, 4, 4, 2, 2]);
    assert!(t.remove_piece(BoardId::A, sq("e1")).is_err(), "kings stay");

    // A white pawn already captured on B waits in White's pocket there (not yet handed over on
    // A's side of the table): a drop on A from the empty pocket takes that one.
    let start = "rnbqkbnr/pppppppp/8/8/8/8/1PPPPPPP/RNBQKBNR[] w KQkq - 0 1 | rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[P] w KQkq - 0 1";
    let mut t: Table = start.parse().expect("table FEN");
    assert_eq!(t.material(Color::White), [16, 4, 4, 4, 2, 2]);
    t.play_physical(
        BoardId::A,
        Move::Drop {
            role: Role::Pawn,
            to: sq("a3"),
        },
        &v,
    )
    .expect("physical");
    assert_eq!(
        t.board(BoardId::B).pocket(Color::White).count(Role::Pawn),
        0
    );
    assert_eq!(t.borrowed(Color::White), [0; 6]);
    assert_eq!(t.material(Color::White), [16, 4, 4, 4, 2, 2]);
}

#[test]
fn a_capture_taken_back_after_its_piece_was_dropped_and_played_again_repays_it() {
    let v = Variant::default();
    let mut t = Table::new();
    let a = BoardId::A;
    for uci in ["e2e4", "d7d5"] {
        let m = t.board(a).parse_uci(uci).unwrap();
        t.play(a, m, &v).unwrap();
    }
    let before = t.board(a).clone();
    let take = before.parse_uci("e4d5").unwrap();
    let out = t.play(a, take, &v).unwrap();
    // Black's partner on B drops the pawn at once.
    let e4 = t.board(BoardId::B).parse_uci("e2e4").unwrap();
    t.play(BoardId::B, e4, &v).unwrap();
    let drop = Move::Drop {
        role: Role::Pawn,
        to: sq("e5"),
    };
    t.play(BoardId::B, drop, &v).unwrap();
    let after = t.clone();
    t.take_back(a, &before, take, &out);
    assert_eq!(t.borrowed(Color::Black)[Role::Pawn.index()], 1);
    assert_eq!(t.material(Color::Black), [16, 4, 4, 4, 2, 2]);
    t.play(a, take, &v).unwrap();
    assert_eq!(
        t.board(BoardId::B),
        after.board(BoardId::B),
        "no second pawn in the pocket"
    );
    assert_eq!(t.borrowed(Color::Black), [0; 6]);
    assert_eq!(t.material(Color::Black), [16, 4, 4, 4, 2, 2]);
    // Only what was recalled is repaid: the recapture's pawn goes to the pocket as usual.
    let m = t.board(a).parse_uci("d8d5").unwrap();
    t.play(a, m, &v).unwrap();
    assert_eq!(
        t.board(BoardId::B).pocket(Color::White).count(Role::Pawn),
        1
    );
}

/// Random walks mixing legal and illegal physical moves under varied options; at every step
/// `classify` must agree with `legal_moves` (which uses pins and evasions, while `classify`
/// plays the move out), so the generator stays right from positions no legal game reaches.
#[test]
fn generator_agrees_with_classify_on_random_physical_walks() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut checked = 0;
    for game in 0..12u64 {
        let v = Variant {
            drop_mate: if game % 2 == 0 {
                DropMate::Forbidden
            } else {
                DropMate::Allowed
            },
            drop_mate_rule: if game % 4 == 0 {
                MateRule::Standard
            } else {
                MateRule::DropInterposable
            },
            mate: if game % 3 == 0 {
                MateRule::Standard
            } else {
                MateRule::DropInterposable
            },
            promotion: [Promotion::Choose, Promotion::PawnCaptured, Promotion::Steal]
                [(game % 3) as usize],
            dropped_rook_castles: game % 4 == 1,
            dropped_pawn_double_step: game % 5 != 2,
            ..Variant::default()
        };
        let mut t = Table::new();
        for step in 0..36 {
            let board = if rnd() % 2 == 0 {
                BoardId::A
            } else {
                BoardId::B
            };
            let p = t.board(board).clone();
            if step % 3 == 0 {
                assert_consistent(&p, &v);
                checked += 1;
            }
            let legal = t.legal_moves(board, &v);
            if rnd() % 4 != 0 && !legal.is_empty() {
                let m = legal[(rnd() % legal.len() as u64) as usize];
                t.play(board, m, &v).expect("generated moves are legal");
            } else if rnd() % 2 == 0 {
                let mine: Vec<Square> = p.by_color(p.turn()).collect();
                let from = mine[(rnd() % mine.len() as u64) as usize];
                let to = Square::new((rnd() % 64) as u8).expect("below 64");
                if let Ok(m) = p.uci_to_move(UciMove::Normal {
                    from,
                    to,
                    promotion: None,
                }) {
                    let _ = t.play_physical(board, m, &v);
                }
            } else {
                let role = Role::POCKET[(rnd() % 5) as usize];
                let to = Square::new((rnd() % 64) as u8).expect("below 64");
                let _ = t.play_physical(board, Move::Drop { role, to }, &v);
            }
        }
    }
    assert!(checked >= 100);
}

#[test]
fn table_outcome_counts_steals_as_defences() {
    // White on A is mated unless the a7 pawn may promote by stealing (it blocks nothing, but
    // capturing on b8 removes the checking rook).
    let a = pos("1r5K/P4q2/8/8/8/8/8/k7[] w - - 0 1");
    let standard = Variant {
        mate: MateRule::Standard,
        promotion: Promotion::Steal,
        ..Variant::default()
    };
    let with_piece = Table::from_boards(a.clone(), Position::new());
    let without = Table::from_boards(a.clone(), pos("4k3/8/8/8/8/8/8/4K3[] w - - 0 1"));
    assert!(a.is_checkmate(&standard), "on its own board nothing helps");
    assert_eq!(
        with_piece.outcome(BoardId::A, &standard),
        None,
        "a7xb8 stealing a piece"
    );
    assert_eq!(
        without.outcome(BoardId::A, &standard),
        Some(Outcome::Checkmate {
            winner: Color::Black
        })
    );
}
