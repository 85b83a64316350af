//! End-to-end tests of the BPGN reader and writer on the recorded FICS games in fixtures/games.

use proptest::prelude::*;
use tandem_monitor::engine::bpgn::{
    BoardId, BoardPgnOptions, BpgnErrorKind, BpgnGame, BpgnMove, Color, GameResult, TimeControl,
    parse_bpgn, parse_bpgn_lenient, write_board_pgn, write_bpgn,
};

const FICS_64: &[u8] = include_bytes!("../fixtures/games/fics-64.bpgn");
const FICS_1921708: &[u8] = include_bytes!("../fixtures/games/fics-1921708.bpgn");

fn games(bytes: &[u8]) -> Vec<BpgnGame> {
    parse_bpgn(bytes).expect("fixture parses")
}

/// The raw text of each game of a file whose games all start with an `[Event` line.
fn raw_games(bytes: &[u8]) -> Vec<&[u8]> {
    let starts: Vec<usize> = (0..bytes.len())
        .filter(|&i| bytes[i..].starts_with(b"[Event") && (i == 0 || bytes[i - 1] == b'\n'))
        .collect();
    starts
        .iter()
        .enumerate()
        .map(|(k, &s)| &bytes[s..starts.get(k + 1).copied().unwrap_or(bytes.len())])
        .collect()
}

/// Counts, independently of the reader, the move indicators (`12A.`) outside comments and the
/// comments that start with a digit (clock comments).
fn count_indicators_and_clocks(raw: &[u8]) -> (usize, usize) {
    let (mut indicators, mut clocks, mut in_comment) = (0, 0, false);
    for (i, &b) in raw.iter().enumerate() {
        match b {
            b'{' => {
                in_comment = true;
                clocks += usize::from(raw.get(i + 1).is_some_and(u8::is_ascii_digit));
            }
            b'}' => in_comment = false,
            b'A' | b'a' | b'B' | b'b' if !in_comment => {
                let digits_before = raw[..i]
                    .iter()
                    .rev()
                    .take_while(|c| c.is_ascii_digit())
                    .count();
                let starts_token = i == digits_before
                    || raw[i - digits_before - 1].is_ascii_whitespace()
                    || raw[i - digits_before - 1] == b'}';
                if digits_before > 0 && starts_token && raw.get(i + 1) == Some(&b'.') {
                    indicators += 1;
                }
            }
            _ => {}
        }
    }
    (indicators, clocks)
}

#[test]
fn all_65_fixture_games_parse_with_every_move_and_clock() {
    let mut total = 0;
    for file in [FICS_64, FICS_1921708] {
        let parsed = games(file);
        let raw = raw_games(file);
        assert_eq!(parsed.len(), raw.len());
        for (k, (game, raw)) in parsed.iter().zip(&raw).enumerate() {
            let (indicators, clocks) = count_indicators_and_clocks(raw);
            assert!(
                game.moves.len() > 10,
                "game {k} has only {} moves",
                game.moves.len()
            );
            assert_eq!(game.moves.len(), indicators, "game {k}");
            assert_eq!(game.moves.len(), clocks, "game {k}");
            assert!(game.moves.iter().all(|m| m.clock.is_some()), "game {k}");
            assert!(game.time_control().is_some(), "game {k}");
        }
        total += parsed.len();
    }
    assert_eq!(total, 65);
}

#[test]
fn known_facts_of_game_1921708() {
    let g = &games(FICS_1921708)[0];
    assert_eq!(g.tags.len(), 15);
    assert_eq!(
        g.tags[0],
        ("Event".into(), "FICS rated bughouse match".into())
    );
    assert_eq!(g.tag("WhiteA"), Some("galette"));
    assert_eq!(g.tag("WhiteAElo"), Some("1460"));
    assert_eq!(g.tag("BlackB"), Some("makaka"));
    assert_eq!(g.tag("BlackBElo"), Some("1508"));
    assert_eq!(
        g.time_control(),
        Some(TimeControl {
            base_secs: 120,
            increment_secs: 0
        })
    );
    assert_eq!(g.start_fen(), None);
    assert_eq!(
        g.leading_comments,
        vec!["C: This is game number 1921708 at http://www.bughousedb.com".to_string()]
    );
    let first = &g.moves[0];
    assert_eq!(
        (
            first.number,
            first.board,
            first.color,
            first.san.as_str(),
            first.clock
        ),
        (1, BoardId::B, Color::White, "e4", Some(118.305))
    );
    let last = g.moves.last().expect("the game has moves");
    assert_eq!(
        (
            last.number,
            last.board,
            last.color,
            last.san.as_str(),
            last.clock
        ),
        (37, BoardId::B, Color::White, "Q@c8#", Some(0.456))
    );
    assert_eq!(g.moves.len(), 139);
    assert_eq!(g.lag_millis().map(|l| l.len()), Some(g.moves.len()));
    assert_eq!(g.result, Some(GameResult::FirstTeamWins));
    assert_eq!(g.result_comment.as_deref(), Some("makaka checkmated"));
    // Per board the moves alternate colours, and board B has both players' 37th/36th moves.
    assert_eq!(g.board_moves(BoardId::B).count(), 37 + 36);
    assert_eq!(g.board_moves(BoardId::A).count(), 33 + 33);
}

#[test]
fn known_facts_of_fics_64() {
    let all = games(FICS_64);
    let g = &all[0];
    assert_eq!(g.tag("Site"), Some("FICS"));
    assert_eq!(g.tag("Result"), Some("*"));
    assert_eq!(g.result, None);
    assert_eq!(g.outcome(), Some(GameResult::Unknown));
    let first = &g.moves[0];
    assert_eq!(
        (first.board, first.color, first.san.as_str(), first.clock),
        (BoardId::A, Color::White, "e4", Some(179.547))
    );
    let last = g.moves.last().expect("the game has moves");
    assert_eq!(
        (
            last.number,
            last.board,
            last.color,
            last.san.as_str(),
            last.clock
        ),
        (31, BoardId::A, Color::Black, "Q@e3#", Some(132.42))
    );
    assert_eq!(
        all.iter()
            .filter(|g| g.tag("TimeControl") == Some("120+0"))
            .count(),
        34
    );
    // The chat comments with raw 0xFE separators are read as Latin-1 þ.
    let chat: Vec<&String> = all
        .iter()
        .flat_map(|g| g.moves.iter().flat_map(|m| &m.comments))
        .collect();
    assert!(chat.iter().all(|c| c.starts_with("C:")));
    assert!(
        chat.iter()
            .any(|c| c.contains("Lag >= 30 seconds\u{fe}PoindexterIII(1650)"))
    );
    // Promotions to a knight and drops keep their SAN.
    assert!(all[0].moves.iter().any(|m| m.san == "gxh8=N+"));
}

#[test]
fn write_then_parse_gives_every_fixture_game_back() {
    for file in [FICS_64, FICS_1921708] {
        let parsed = games(file);
        let mut whole = String::new();
        for g in &parsed {
            let text = write_bpgn(g);
            // Movetext wraps at 80 columns; only a single long comment may stand out.
            for line in text.lines().filter(|l| !l.starts_with('[')) {
                let lone_comment = line.starts_with('{') && line.find('}') == Some(line.len() - 1);
                assert!(line.chars().count() <= 80 || lone_comment, "{line}");
            }
            assert_eq!(&games(text.as_bytes())[..], std::slice::from_ref(g));
            whole.push_str(&text);
            whole.push('\n');
        }
        assert_eq!(games(whole.as_bytes()), parsed);
    }
}

#[test]
fn crlf_and_utf8_variants_of_a_fixture_read_the_same() {
    let lf = games(FICS_64);
    let crlf: Vec<u8> = FICS_64
        .iter()
        .flat_map(|&b| {
            if b == b'\n' {
                vec![b'\r', b'\n']
            } else {
                vec![b]
            }
        })
        .collect();
    assert_eq!(games(&crlf), lf);
    let utf8: String = FICS_64.iter().map(|&b| char::from(b)).collect();
    assert_ne!(
        utf8.len(),
        FICS_64.len(),
        "the fixture holds non-ASCII bytes"
    );
    assert_eq!(games(utf8.as_bytes()), lf);
}

#[test]
fn board_pgn_of_every_fixture_game() {
    for file in [FICS_64, FICS_1921708] {
        for g in games(file) {
            for board in [BoardId::A, BoardId::B] {
                let pgn = write_board_pgn(&g, board, BoardPgnOptions::default());
                let moves = g.board_moves(board).count();
                assert_eq!(pgn.matches("[%clk ").count(), moves);
                assert!(pgn.contains("[Variant \"Bughouse\"]"));
                let plain = write_board_pgn(
                    &g,
                    board,
                    BoardPgnOptions {
                        clocks: false,
                        comments: false,
                    },
                );
                let last = g.board_moves(board).last().expect("both boards have moves");
                assert!(plain.contains(&last.san));
                assert!(!plain.contains('{'));
            }
        }
    }
    let g = &games(FICS_1921708)[0];
    let b = write_board_pgn(g, BoardId::B, BoardPgnOptions::default());
    assert!(b.contains("[White \"networc\"]\n[Black \"makaka\"]\n[Result \"0-1\"]\n"));
    assert!(b.contains("[WhiteElo \"1446\"]\n[BlackElo \"1508\"]\n"));
    let flat_b = b.replace('\n', " ");
    assert!(flat_b.contains("1. e4 {[%clk 0:01:58.3]} e6 {[%clk 0:01:59.9]} 2. e5"));
    assert!(
        flat_b
            .trim_end()
            .ends_with("37. Q@c8# {[%clk 0:00:00.4]} 0-1")
    );
    let a = write_board_pgn(g, BoardId::A, BoardPgnOptions::default());
    assert!(a.contains("[White \"galette\"]\n[Black \"buszak\"]\n[Result \"1-0\"]\n"));
}

#[test]
fn a_corrupted_game_is_reported_with_its_position_and_the_rest_survive() {
    let text = String::from_utf8_lossy(FICS_64).into_owned();
    let start_of_game_6 = text
        .match_indices("[Event")
        .nth(6)
        .map(|(i, _)| i)
        .expect("64 games");
    let target = text[start_of_game_6..]
        .find("1A. ")
        .map(|i| start_of_game_6 + i + 4)
        .expect("game 6 has a first move");
    let mut corrupted = text.clone();
    corrupted.replace_range(target..target + 2, "Zq9");
    let line = corrupted[..target].matches('\n').count() + 1;
    let column = target - corrupted[..target].rfind('\n').map_or(0, |i| i + 1) + 1;

    let e = parse_bpgn(corrupted.as_bytes()).expect_err("corrupted move");
    assert_eq!((e.game, e.line, e.column), (6, line, column));
    assert!(matches!(e.kind, BpgnErrorKind::BadSan(ref s) if s.starts_with("Zq9")));
    let lenient = parse_bpgn_lenient(corrupted.as_bytes());
    assert_eq!(lenient.len(), 64);
    assert_eq!(lenient.iter().filter(|r| r.is_err()).count(), 1);
    let good = games(FICS_64);
    assert_eq!(lenient[7].as_ref().ok(), Some(&good[7]));

    let unclosed = &FICS_1921708[..FICS_1921708.len() - 30];
    let unclosed = [unclosed, b" {no end".as_slice()].concat();
    let e = parse_bpgn(&unclosed).expect_err("unclosed comment");
    assert_eq!(e.kind, BpgnErrorKind::UnterminatedComment);
    assert_eq!(e.line, 13);
}

fn arb_text(max: usize) -> impl Strategy<Value = String> {
    // Comment text: anything but `}` (a `{...}` comment cannot hold it) and CR (the reader
    // reads line ends as LF); a number split by a line break is not kept apart from a clock.
    proptest::collection::vec(
        any::<char>().prop_filter("no } or CR", |c| *c != '}' && *c != '\r'),
        0..max,
    )
    .prop_map(|v| {
        let text: String = v.into_iter().collect();
        let numeric = text
            .chars()
            .all(|c| c.is_ascii_digit() || c.is_whitespace() || c == '.' || c == '-');
        if numeric {
            text.replace('\n', " ")
        } else {
            text
        }
    })
}

fn arb_move() -> impl Strategy<Value = BpgnMove> {
    let san = prop_oneof![
        Just("e4".to_string()),
        Just("exd5".to_string()),
        Just("N@f3".to_string()),
        Just("gxh8=N+".to_string()),
        Just("O-O-O#".to_string()),
        Just("Rdxe1".to_string()),
    ];
    (
        1u32..200,
        any::<bool>(),
        any::<bool>(),
        san,
        proptest::option::of(-5_000i64..10_000_000),
        proptest::collection::vec(any::<u8>(), 0..2),
        proptest::collection::vec(arb_text(12), 0..2),
    )
        .prop_map(
            |(number, on_a, white, san, millis, nags, comments)| BpgnMove {
                number,
                board: if on_a { BoardId::A } else { BoardId::B },
                color: if white { Color::White } else { Color::Black },
                san,
                clock: millis.map(|ms| ms as f64 / 1000.0),
                nags,
                comments,
            },
        )
}

fn arb_game() -> impl Strategy<Value = BpgnGame> {
    let tag = ("[A-Za-z][A-Za-z0-9_]{0,8}", "[^\n\r]{0,12}");
    let result = proptest::option::of(prop_oneof![
        Just(GameResult::FirstTeamWins),
        Just(GameResult::SecondTeamWins),
        Just(GameResult::Draw),
        Just(GameResult::Unknown),
    ]);
    (
        proptest::collection::vec(tag, 0..4),
        proptest::collection::vec(arb_text(10), 0..2),
        proptest::collection::vec(arb_move(), 0..12),
        result,
        proptest::option::of(arb_text(10)),
    )
        .prop_filter(
            "an empty input is no game",
            |(tags, _, moves, result, _)| !tags.is_empty() || !moves.is_empty() || result.is_some(),
        )
        .prop_map(|(tags, leading, moves, result, comment)| {
            let mut g = BpgnGame {
                tags,
                leading_comments: leading,
                moves,
                result,
                result_comment: result.and(comment),
            };
            // Shapes the reader never produces (and the writer documents it cannot keep apart):
            // a glyph-free last comment before a comment-less result is the result's comment.
            if g.result.is_some() && g.result_comment.is_none() {
                match g.moves.last_mut() {
                    Some(m) if m.nags.is_empty() => m.comments.clear(),
                    Some(_) => {}
                    None => g.leading_comments.clear(),
                }
            }
            g
        })
}

proptest! {
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let lenient = parse_bpgn_lenient(&bytes);
        let strict = parse_bpgn(&bytes);
        prop_assert_eq!(strict.is_ok(), lenient.iter().all(Result::is_ok));
    }

    #[test]
    fn mutated_fixture_text_never_panics(
        start in 0usize..FICS_1921708.len(),
        edits in proptest::collection::vec((0usize..4000, any::<u8>()), 1..8),
    ) {
        let mut bytes = FICS_1921708[start.min(FICS_1921708.len() - 1)..].to_vec();
        for (at, b) in edits {
            let at = at % bytes.len();
            bytes[at] = b;
        }
        for game in parse_bpgn_lenient(&bytes).into_iter().flatten() {
            // Whatever was read can be written and read back.
            let back = parse_bpgn(write_bpgn(&game).as_bytes());
            prop_assert_eq!(back.ok(), Some(vec![game]));
        }
    }

    #[test]
    fn generated_games_round_trip(game in arb_game()) {
        let text = write_bpgn(&game);
        let back = parse_bpgn(text.as_bytes());
        prop_assert_eq!(back.as_ref().ok().map(|v| v.len()), Some(1), "{}", text);
        prop_assert_eq!(&back.ok().map(|mut v| v.remove(0)), &Some(game), "{}", text);
    }
}
