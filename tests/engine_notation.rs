//! Notation round trips over real positions (every 5th of the 7,102 FICS positions): FEN,
//! UCI and SAN of every legal move, plus lenient SAN input forms.

use flate2::read::GzDecoder;
use std::io::Read;
use tandem_monitor::engine::{Move, Position, SanError, Variant};

fn fens() -> Vec<String> {
    let file = std::fs::File::open(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/engine/fics-positions.jsonl.gz"
    ))
    .expect("fixture file is committed");
    let mut text = String::new();
    GzDecoder::new(file)
        .read_to_string(&mut text)
        .expect("fixture is valid gzip UTF-8");
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["fen"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn fen_uci_san_round_trip_on_real_positions() {
    let v = Variant::fics();
    let mut moves_checked = 0;
    let mut kinds = [0usize; 4]; // capture, drop, check, castle
    for fen in fens().iter().step_by(5) {
        let pos: Position = fen.parse().expect("fixture FEN parses");
        let again: Position = pos.to_fen().parse().expect("written FEN parses");
        assert_eq!(again, pos, "{fen}");
        assert_eq!(pos.to_fen(), *fen, "FICS FENs are already canonical");
        for &m in pos.legal_moves(&v).iter() {
            let text = m.to_string();
            assert_eq!(pos.parse_uci(&text), Ok(m), "{fen} {text}");
            let san = pos.san(m, &v);
            assert_eq!(pos.parse_san(&san, &v), Ok(m), "{fen} {san}");
            // Lenient forms: no check suffix, no capture mark.
            let bare = san.trim_end_matches(['+', '#']).replace('x', "");
            if !bare.starts_with('O') {
                assert_eq!(pos.parse_san(&bare, &v), Ok(m), "{fen} {bare}");
            }
            kinds[0] += m.is_capture() as usize;
            kinds[1] += matches!(m, Move::Drop { .. }) as usize;
            kinds[2] += san.ends_with('+') as usize;
            kinds[3] += matches!(m, Move::Castle { .. }) as usize;
            moves_checked += 1;
        }
    }
    assert!(moves_checked > 10_000, "{moves_checked}");
    assert!(
        kinds.iter().all(|&k| k > 0),
        "every kind of move was covered: {kinds:?}"
    );
}

#[test]
fn san_writes_canonical_forms() {
    let v = Variant::default();
    let p: Position = "r3k2r/8/8/8/8/8/8/R3K2R[N] w KQkq - 0 1".parse().unwrap();
    let san = |u: &str| p.san(p.parse_uci(u).unwrap(), &v);
    assert_eq!(san("e1g1"), "O-O");
    assert_eq!(san("e1c1"), "O-O-O");
    assert_eq!(san("N@f3"), "N@f3");
    assert_eq!(san("a1a8"), "Rxa8+");
    let rooks: Position = "4k3/8/8/8/8/8/4K3/R6R[] w - - 0 1".parse().unwrap();
    assert_eq!(rooks.san(rooks.parse_uci("a1d1").unwrap(), &v), "Rad1");
    let q: Position = "4k3/8/8/8/8/8/8/R3K2R[P] w - - 0 1".parse().unwrap();
    assert_eq!(q.san(q.parse_uci("P@d7").unwrap(), &v), "P@d7+");
    let r: Position = "4k3/P7/8/8/8/8/8/4K3[] w - - 0 1".parse().unwrap();
    assert_eq!(r.san(r.parse_uci("a7a8q").unwrap(), &v), "a8=Q+");
    let nb: Position = "4k3/8/8/8/8/1N3N2/8/1N2K3[] w - - 0 1".parse().unwrap();
    assert_eq!(nb.san(nb.parse_uci("f3d2").unwrap(), &v), "Nfd2");
    assert_eq!(nb.san(nb.parse_uci("b1d2").unwrap(), &v), "N1d2");
    assert_eq!(nb.san(nb.parse_uci("b3d2").unwrap(), &v), "Nb3d2");
    let ex: Position = "4k3/8/8/3p4/4P3/8/8/4K3[] w - - 0 1".parse().unwrap();
    assert_eq!(ex.san(ex.parse_uci("e4d5").unwrap(), &v), "exd5");
    let mate: Position = "7k/4N1pp/8/8/8/8/8/4K3[Q] w - - 0 1".parse().unwrap();
    assert_eq!(mate.san(mate.parse_uci("Q@g8").unwrap(), &v), "Q@g8#");
    let distant: Position = "7k/6pp/8/8/8/8/8/4K3[R] w - - 0 1".parse().unwrap();
    assert_eq!(
        distant.san(distant.parse_uci("R@a8").unwrap(), &v),
        "R@a8+",
        "not mate under FICS"
    );
    let fide = Variant {
        mate: tandem_monitor::engine::MateRule::Standard,
        ..v
    };
    assert_eq!(
        distant.san(distant.parse_uci("R@a8").unwrap(), &fide),
        "R@a8#"
    );
}

#[test]
fn san_reads_lenient_forms() {
    let v = Variant::default();
    let p: Position = "r3k2r/P7/8/8/8/8/8/R3K2R[P] w KQkq - 0 1".parse().unwrap();
    let u = |s: &str| p.parse_uci(s).unwrap();
    assert_eq!(p.parse_san("0-0", &v), Ok(u("e1g1")));
    assert_eq!(p.parse_san("O-O-O+", &v), Ok(u("e1c1")));
    assert_eq!(p.parse_san("@e4", &v), Ok(u("P@e4")));
    assert_eq!(p.parse_san("P@e4", &v), Ok(u("P@e4")));
    let ep: Position = "4k3/8/8/3pP3/8/8/8/4K3[] w - d6 0 1".parse().unwrap();
    let exd6 = ep.parse_uci("e5d6").unwrap();
    assert!(matches!(exd6, Move::EnPassant { .. }));
    assert_eq!(ep.parse_san("exd6 e.p.", &v), Ok(exd6));
    assert_eq!(ep.parse_san("ed6", &v), Ok(exd6));
    assert_eq!(ep.san(exd6, &v), "exd6");
    assert_eq!(
        p.parse_san("axb8Q", &v),
        Err(SanError::Illegal("axb8Q".into()))
    );
    assert_eq!(
        p.parse_san("a8Q", &v),
        Err(SanError::Illegal("a8Q".into())),
        "a8 is occupied"
    );
    assert_eq!(
        p.parse_san("axa8", &v),
        Err(SanError::Illegal("axa8".into()))
    );
    let q: Position = "4k3/P7/8/8/8/8/8/4K3[] w - - 0 1".parse().unwrap();
    assert_eq!(
        q.parse_san("a8Q", &v),
        q.parse_uci("a7a8q")
            .map_err(|_| SanError::Illegal(String::new()))
    );
    assert_eq!(
        q.parse_san("a8=N", &v),
        q.parse_uci("a7a8n")
            .map_err(|_| SanError::Illegal(String::new()))
    );
    assert_eq!(
        q.parse_san("a8", &v),
        q.parse_uci("a7a8q")
            .map_err(|_| SanError::Illegal(String::new())),
        "queen if not named (000 §2c)"
    );
    assert!(matches!(q.parse_san("", &v), Err(SanError::Syntax { .. })));
    assert!(matches!(
        q.parse_san("Zf3", &v),
        Err(SanError::Syntax { .. })
    ));
    assert!(matches!(
        q.parse_san("a8=K", &v),
        Err(SanError::Syntax { .. })
    ));
    let two: Position = "4k3/8/8/8/8/8/8/2N1K1N1[] w - - 0 1".parse().unwrap();
    assert_eq!(
        two.parse_san("Ne2", &v),
        Err(SanError::Ambiguous("Ne2".into()))
    );
    assert_eq!(
        two.parse_san("Nge2", &v),
        two.parse_uci("g1e2")
            .map_err(|_| SanError::Illegal(String::new()))
    );
}
