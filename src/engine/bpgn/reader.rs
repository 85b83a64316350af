//! The BPGN reader: games from bytes, one error per broken game without losing the others.

use super::clock::{millis_to_secs, parse_clock_millis};
use super::decode::decode;
use super::lexer::{LexError, Lexer, Spanned, Token};
use super::{BpgnError, BpgnErrorKind, BpgnGame, BpgnMove};

/// Reads every game of a BPGN file; the first malformed game makes the whole read fail (use
/// [`parse_bpgn_lenient`] to keep the good games). Never panics, whatever the bytes.
pub fn parse_bpgn(bytes: &[u8]) -> Result<Vec<BpgnGame>, BpgnError> {
    parse_bpgn_lenient(bytes).into_iter().collect()
}

/// Reads every game of a BPGN file, one entry per game in file order: a malformed game yields
/// its error and reading resumes at the next line that starts a tag block, so one broken game
/// does not hide the others. Never panics, whatever the bytes.
pub fn parse_bpgn_lenient(bytes: &[u8]) -> Vec<Result<BpgnGame, BpgnError>> {
    let text = decode(bytes);
    let mut reader = Reader {
        lexer: Lexer::new(&text),
        peeked: None,
    };
    let mut games = Vec::new();
    loop {
        let game = games.len();
        match reader.game() {
            Ok(Some(g)) => games.push(Ok(g)),
            Ok(None) => break,
            Err(e) => {
                games.push(Err(BpgnError {
                    game,
                    line: e.line,
                    column: e.column,
                    kind: e.kind,
                }));
                reader.peeked = None;
                reader.lexer.resync_after(e.line);
            }
        }
    }
    games
}

/// Where the latest comment went, so that a following result token can claim it.
#[derive(Clone, Copy)]
enum CommentSlot {
    Leading,
    LastMove,
}

struct Reader<'a> {
    lexer: Lexer<'a>,
    peeked: Option<Spanned<'a>>,
}

impl<'a> Reader<'a> {
    fn peek(&mut self) -> Result<Option<&Spanned<'a>>, LexError> {
        if self.peeked.is_none() {
            self.peeked = self.lexer.next_token()?;
        }
        Ok(self.peeked.as_ref())
    }

    fn next(&mut self) -> Result<Option<Spanned<'a>>, LexError> {
        self.peek()?;
        Ok(self.peeked.take())
    }

    /// One game, `Ok(None)` when the input holds no further game.
    fn game(&mut self) -> Result<Option<BpgnGame>, LexError> {
        let mut game = BpgnGame::default();
        let mut in_movetext = false;
        // The first `{...}` after a move may be its clock.
        let mut clock_slot_open = false;
        let mut last_comment: Option<CommentSlot> = None;
        while let Some(next) = self.peek()? {
            let starts_next_game = matches!(next.token, Token::Tag { .. })
                && (in_movetext || (next.after_blank_line && !game.tags.is_empty()));
            if starts_next_game {
                break;
            }
            let Some(Spanned {
                token,
                line,
                column,
                ..
            }) = self.next()?
            else {
                break;
            };
            let error = |kind| LexError { line, column, kind };
            let comment_slot = match token {
                Token::Tag { name, value } => {
                    game.tags.push((name, value));
                    None
                }
                Token::Comment(text) => {
                    let slot = place_comment(&mut game, text, clock_slot_open);
                    clock_slot_open = false;
                    slot
                }
                Token::LineComment(text) => {
                    clock_slot_open = false;
                    place_comment(&mut game, text, false)
                }
                Token::MoveIndicator {
                    number,
                    board,
                    color,
                    text,
                } => {
                    in_movetext = true;
                    let (san, nag) = match self.next()? {
                        Some(Spanned {
                            token: Token::San { san, nag },
                            ..
                        }) => (san, nag),
                        _ => return Err(error(BpgnErrorKind::MissingMove(text.to_string()))),
                    };
                    game.moves.push(BpgnMove {
                        number,
                        board,
                        color,
                        san,
                        clock: None,
                        nags: nag.into_iter().collect(),
                        comments: Vec::new(),
                    });
                    clock_slot_open = true;
                    None
                }
                Token::San { san, .. } => {
                    return Err(error(BpgnErrorKind::MoveWithoutNumber(san)));
                }
                Token::Nag(nag) => {
                    // A glyph before the first move annotates nothing: tolerated and dropped.
                    if let Some(m) = game.moves.last_mut() {
                        m.nags.push(nag);
                    }
                    None
                }
                Token::Result(result) => {
                    game.result = Some(result);
                    game.result_comment = match last_comment {
                        Some(CommentSlot::Leading) => game.leading_comments.pop(),
                        Some(CommentSlot::LastMove) => {
                            game.moves.last_mut().and_then(|m| m.comments.pop())
                        }
                        None => None,
                    };
                    return Ok(Some(game));
                }
            };
            last_comment = comment_slot;
        }
        let empty = game.tags.is_empty() && game.moves.is_empty();
        Ok((!empty).then_some(game))
    }
}

/// Files a comment: the move's clock if the clock slot is open and the text is a clock,
/// otherwise a comment of the last move or, before the first move, a leading comment.
/// Returns where a plain comment went (`None` for a clock).
fn place_comment(game: &mut BpgnGame, text: String, clock_slot_open: bool) -> Option<CommentSlot> {
    match game.moves.last_mut() {
        None => {
            game.leading_comments.push(text);
            Some(CommentSlot::Leading)
        }
        Some(m) => {
            if clock_slot_open && let Some(millis) = parse_clock_millis(&text) {
                m.clock = Some(millis_to_secs(millis));
                return None;
            }
            m.comments.push(text);
            Some(CommentSlot::LastMove)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::bpgn::{BoardId, Color, GameResult};

    #[test]
    fn crlf_latin1_input_with_odd_bytes_in_comments() {
        let src: &[u8] = b"[Event \"Caf\xe9\"]\r\n[WhiteA \"J\xfcrgen\"][BlackA \"x\"]\r\n\r\n\
            1A. e4{179.5} {C:a(1) kibitzes: lag\xfeb(2) kibitzes: \x80!}\r\n1a. e5{178.25}\r\n";
        let games = parse_bpgn(src).expect("parses");
        assert_eq!(games.len(), 1);
        let g = &games[0];
        assert_eq!(g.tag("Event"), Some("Café"));
        assert_eq!(g.tag("WhiteA"), Some("Jürgen"));
        assert_eq!(g.tag("BlackA"), Some("x"));
        assert_eq!(g.moves.len(), 2);
        assert_eq!(
            g.moves[0].comments,
            vec!["C:a(1) kibitzes: lag\u{fe}b(2) kibitzes: \u{80}!".to_string()]
        );
        assert_eq!(g.moves[1].clock, Some(178.25));
        assert_eq!(g.result, None);
    }

    #[test]
    fn moves_keep_board_side_number_and_order() {
        let g = &parse_bpgn(b"1B. e4{118.305} 1b. e6 1A. d4 2B. e5 1a. Nc6").expect("parses")[0];
        let seen: Vec<(u32, BoardId, Color, &str)> = g
            .moves
            .iter()
            .map(|m| (m.number, m.board, m.color, m.san.as_str()))
            .collect();
        assert_eq!(
            seen,
            vec![
                (1, BoardId::B, Color::White, "e4"),
                (1, BoardId::B, Color::Black, "e6"),
                (1, BoardId::A, Color::White, "d4"),
                (2, BoardId::B, Color::White, "e5"),
                (1, BoardId::A, Color::Black, "Nc6"),
            ]
        );
        assert_eq!(g.moves[0].clock, Some(118.305));
        assert_eq!(g.moves[1].clock, None);
    }

    #[test]
    fn only_the_first_comment_after_a_move_is_its_clock() {
        let g = &parse_bpgn(b"1A. e4 $1 {12.5} {13.0} 1a. e5 {C: hi} {11.0} *").expect("parses")[0];
        assert_eq!(g.moves[0].clock, Some(12.5));
        assert_eq!(g.moves[0].nags, vec![1]);
        assert_eq!(g.moves[0].comments, vec!["13.0".to_string()]);
        assert_eq!(g.moves[1].clock, None);
        assert_eq!(g.moves[1].comments, vec!["C: hi".to_string()]);
        assert_eq!(g.result, Some(GameResult::Unknown));
        // The comment right before the result token is the result's, whatever it holds.
        assert_eq!(g.result_comment.as_deref(), Some("11.0"));
    }

    #[test]
    fn leading_and_result_comments() {
        let src = b"[Result \"1-0\"]\n{C: game 7}\n1B. e4{1.0} 1b. f6 {chat}\n{b checkmated} 1-0";
        let g = &parse_bpgn(src).expect("parses")[0];
        assert_eq!(g.leading_comments, vec!["C: game 7".to_string()]);
        assert_eq!(g.moves[1].comments, vec!["chat".to_string()]);
        assert_eq!(g.result_comment.as_deref(), Some("b checkmated"));
        assert_eq!(g.result, Some(GameResult::FirstTeamWins));
        let g = &parse_bpgn(b"[A \"1\"]\n{aborted} *").expect("parses")[0];
        assert!(g.leading_comments.is_empty() && g.moves.is_empty());
        assert_eq!(g.result_comment.as_deref(), Some("aborted"));
    }

    #[test]
    fn games_split_at_results_tags_after_movetext_and_blank_lines() {
        let src =
            b"[G \"1\"]\n1A. e4 1-0 [G \"2\"]\n1A. d4\n[G \"3\"]\n\n[G \"4\"]\n[H \"4\"]\n{tail}";
        let games = parse_bpgn(src).expect("parses");
        let ids: Vec<&str> = games.iter().map(|g| g.tag("G").unwrap_or("-")).collect();
        assert_eq!(ids, vec!["1", "2", "3", "4"]);
        assert_eq!(games[1].moves.len(), 1);
        assert_eq!(games[1].result, None);
        assert_eq!(games[3].tag("H"), Some("4"));
        assert_eq!(games[3].leading_comments, vec!["tail".to_string()]);
        assert_eq!(parse_bpgn(b"").expect("empty is fine"), vec![]);
        assert_eq!(parse_bpgn(b"  \n{only a comment}\n").expect("fine"), vec![]);
    }

    #[test]
    fn suffixes_become_glyphs() {
        let g = &parse_bpgn(b"1A. e4!? 1a. e5?? 1B. Nf3 ! 1b. Nf6 $14").expect("parses")[0];
        let nags: Vec<&[u8]> = g.moves.iter().map(|m| m.nags.as_slice()).collect();
        assert_eq!(nags, vec![&[5][..], &[4], &[1], &[14]]);
        assert_eq!(g.moves[0].san, "e4");
    }

    #[test]
    fn malformed_input_reports_game_line_and_column() {
        let src = b"[Event \"ok\"]\n\n1A. e4 1a. e5 *\n\n[Event \"bad\"]\n\n1A. e4 1a. Zz9 1B. d4\n\n[Event \"ok too\"]\n1A. c4 *\n";
        let e = parse_bpgn(src).expect_err("game 1 is broken");
        assert_eq!((e.game, e.line, e.column), (1, 7, 12));
        assert_eq!(e.kind, BpgnErrorKind::BadSan("Zz9".into()));
        assert!(e.to_string().contains("line 7, column 12"), "{e}");
        let all = parse_bpgn_lenient(src);
        assert_eq!(all.len(), 3);
        assert!(all[0].is_ok() && all[1].is_err());
        let last = all[2]
            .as_ref()
            .expect("the game after the broken one is read");
        assert_eq!(last.tag("Event"), Some("ok too"));
        assert_eq!(last.moves[0].san, "c4");
    }

    #[test]
    fn parser_level_errors() {
        let kind = |src: &[u8]| parse_bpgn(src).expect_err("malformed").kind;
        assert_eq!(
            kind(b"1A. e4 e5"),
            BpgnErrorKind::MoveWithoutNumber("e5".into())
        );
        assert_eq!(
            kind(b"1A. {c} e4"),
            BpgnErrorKind::MissingMove("1A.".into())
        );
        assert_eq!(kind(b"1A."), BpgnErrorKind::MissingMove("1A.".into()));
        let e = parse_bpgn(b"[Event \"x\"]\n1A. e4 {open\n1a. e5\n").expect_err("malformed");
        assert_eq!(
            (e.line, e.column, e.kind),
            (2, 8, BpgnErrorKind::UnterminatedComment)
        );
    }

    #[test]
    fn a_broken_tag_block_is_skipped_whole() {
        let src = b"[Event \"a\"]\n[Site \"unterminated]\n[Date \"x\"]\n1A. e4 *\n[Event \"b\"]\n1A. d4 *\n";
        let all = parse_bpgn_lenient(src);
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].as_ref().err().map(|e| e.line), Some(2));
        assert_eq!(all[1].as_ref().ok().and_then(|g| g.tag("Event")), Some("b"));
    }
}
