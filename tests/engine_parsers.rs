//! Malformed input never panics: FEN, table FEN, UCI and SAN parsers on random strings and on
//! valid strings with random bytes replaced.

use proptest::prelude::*;
use tandem_monitor::engine::{Position, Table, UciMove, Variant};

const FEN: &str = "r1bqk2r/pppp1ppp/2n1p3/4P3/1b1Pn3/2NB1N2/PPP2PPP/R1BQK2R[Qnp] b KQkq e3 0 1";
const ALPHABET: &[u8] = b"rnbqkpRNBQKP12345678/[]~ -wbKQkqabcdefgh@=x+#O0()^|e.";

fn mutate(base: &str, edits: &[(u16, u8)]) -> String {
    let mut bytes = base.as_bytes().to_vec();
    for &(at, c) in edits {
        if bytes.is_empty() {
            break;
        }
        let i = at as usize % (bytes.len() + 1);
        let c = ALPHABET[c as usize % ALPHABET.len()];
        match at % 3 {
            0 if i < bytes.len() => bytes[i] = c,
            1 => bytes.insert(i.min(bytes.len()), c),
            _ if i < bytes.len() => {
                bytes.remove(i);
            }
            _ => {}
        }
    }
    bytes.into_iter().map(char::from).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]
    #[test]
    fn fen_and_table_parsers_never_panic(edits in prop::collection::vec((any::<u16>(), any::<u8>()), 0..6), junk in "\\PC{0,40}") {
        let text = mutate(FEN, &edits);
        if let Ok(p) = text.parse::<Position>() {
            // Whatever parses writes a FEN that parses to the same position.
            let again: Position = p.to_fen().parse().expect("written FEN parses");
            prop_assert_eq!(again, p.clone());
            let _ = p.legal_moves(&Variant::default());
        }
        let _ = junk.parse::<Position>();
        let _ = format!("{text} | {FEN}").parse::<Table>();
        let _ = junk.parse::<Table>();
    }

    #[test]
    fn move_parsers_never_panic(edits in prop::collection::vec((any::<u16>(), any::<u8>()), 0..4), junk in "\\PC{0,12}") {
        let p: Position = FEN.parse().expect("valid FEN");
        let v = Variant::default();
        for base in ["e7e8q", "N@f3", "e7e8^d1", "Nbd2", "exd5", "e8=N(b1)", "O-O-O", "P@e4#"] {
            let text = mutate(base, &edits);
            let _ = text.parse::<UciMove>();
            let _ = p.parse_uci(&text);
            let _ = p.parse_san(&text, &v);
        }
        let _ = p.parse_san(&junk, &v);
        let _ = p.parse_uci(&junk);
    }
}
