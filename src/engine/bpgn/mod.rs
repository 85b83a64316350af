//! BPGN 1.0–1.2 (Bughouse Portable Game Notation): reader, writer and per-board PGN export.
//!
//! The module works at the *syntax* level: a move is kept as its SAN text (validated only for
//! shape, see [`is_san_shaped`]) and never resolved against a position, so it does not depend on
//! the rest of the engine. The SAN resolution is plugged in by the caller.
//!
//! What the reader accepts (documented here because BPGN has no single normative grammar):
//! - input bytes that are valid UTF-8 are read as UTF-8, anything else as Latin-1 (every byte is
//!   one character, so raw bytes such as 0x80 or 0xFE inside chat comments survive); a leading
//!   UTF-8 byte-order mark is skipped; CRLF, LF and lone CR line ends are all accepted;
//! - tags `[Name "value"]`, any number per line, with `\"` and `\\` escapes in the value;
//! - movetext of move indicators `12A.`/`12a.`/`12B.`/`12b.` (upper case: White's move on that
//!   board, lower case: Black's; `12A...` is accepted too), each followed by one SAN token
//!   (piece moves, pawn moves, drops `N@f3`/`@f3`, promotions `gxh8=N+`/`gxh8N`, castling with
//!   `O` or `0`), `!`/`?` suffixes and `$n` glyphs (kept as [`BpgnMove::nags`]);
//! - `{...}` comments and `;` rest-of-line comments; the first `{...}` after a move holding a
//!   decimal number of seconds (`{118.305}`, BPGN 1.2 milliseconds) or `[%clk h:mm:ss.s]` is that
//!   move's clock, every other comment is kept in order in [`BpgnMove::comments`]; comments
//!   before the first move are [`BpgnGame::leading_comments`]; a `{...}` directly before the
//!   result token is [`BpgnGame::result_comment`]; lines starting with `%` are skipped;
//! - results `1-0`, `0-1`, `1/2-1/2`, `*`; a game ends at its result token, at the next tag after
//!   movetext, at a tag after a blank line, or at the end of the input;
//! - the `FEN` tag as a table FEN, the two board FENs (each may carry a `[...]` pocket or the
//!   BFEN `/...` holdings field, left uninterpreted) joined by `|` with optional spaces around
//!   it: see [`BpgnGame::start_board_fens`].
//!
//! Not accepted (an error naming line and column): recursive variations `( ... )`, moves without
//! a move indicator, and unterminated comments or tags.

mod clock;
mod decode;
mod lexer;
mod reader;
mod san;
mod writer;

pub use super::{BoardId, Color};
pub use reader::{parse_bpgn, parse_bpgn_lenient};
pub use san::is_san_shaped;
pub use writer::{BoardPgnOptions, write_board_pgn, write_bpgn};

use std::fmt;
use std::str::FromStr;

/// The outcome of a bughouse game, always stated for the team WhiteA + BlackB (BPGN convention).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum GameResult {
    /// `1-0`: the team WhiteA + BlackB won.
    #[serde(rename = "1-0")]
    FirstTeamWins,
    /// `0-1`: the team BlackA + WhiteB won.
    #[serde(rename = "0-1")]
    SecondTeamWins,
    /// `1/2-1/2`.
    #[serde(rename = "1/2-1/2")]
    Draw,
    /// `*`: unfinished, unknown or abandoned.
    #[serde(rename = "*")]
    Unknown,
}

impl GameResult {
    /// The token as written in BPGN/PGN.
    pub fn as_str(self) -> &'static str {
        match self {
            GameResult::FirstTeamWins => "1-0",
            GameResult::SecondTeamWins => "0-1",
            GameResult::Draw => "1/2-1/2",
            GameResult::Unknown => "*",
        }
    }

    /// The result seen from one board, White's score first, as a per-board PGN states it: on board
    /// B the first team plays Black, so a BPGN `1-0` is `0-1` there.
    pub fn on_board(self, board: BoardId) -> GameResult {
        match (board, self) {
            (BoardId::B, GameResult::FirstTeamWins) => GameResult::SecondTeamWins,
            (BoardId::B, GameResult::SecondTeamWins) => GameResult::FirstTeamWins,
            (_, other) => other,
        }
    }
}

impl fmt::Display for GameResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that is not one of the four result tokens.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a result (expected 1-0, 0-1, 1/2-1/2 or *)")]
pub struct BadResult(pub String);

impl FromStr for GameResult {
    type Err = BadResult;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "1-0" => Ok(GameResult::FirstTeamWins),
            "0-1" => Ok(GameResult::SecondTeamWins),
            "1/2-1/2" => Ok(GameResult::Draw),
            "*" => Ok(GameResult::Unknown),
            other => Err(BadResult(other.to_string())),
        }
    }
}

/// A time control `base+increment` in whole seconds, as in the `TimeControl` tag (`120+0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct TimeControl {
    pub base_secs: u32,
    pub increment_secs: u32,
}

/// One move of a bughouse game as written: which board and side, its number and SAN, not resolved.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BpgnMove {
    /// The move number written in the file (per board, as in PGN).
    pub number: u32,
    pub board: BoardId,
    pub color: Color,
    /// The SAN text without `!`/`?` suffixes (those are in `nags`); check marks are kept.
    pub san: String,
    /// Seconds left on the mover's clock after the move, exact to the millisecond (the reader
    /// rounds to 1 ms, so this is always `n / 1000.0` for an integer `n`).
    pub clock: Option<f64>,
    /// Numeric annotation glyphs, `$1` for `!`, `$2` for `?`, `$3` `!!`, `$4` `??`, `$5` `!?`, `$6` `?!`.
    pub nags: Vec<u8>,
    /// The other comments after this move (chat `C: ...`, etc.), verbatim, in file order.
    pub comments: Vec<String>,
}

/// One bughouse game: the tag pairs and the interleaved moves of both boards in order of play.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct BpgnGame {
    /// Tag pairs in file order; a name may repeat, [`BpgnGame::tag`] returns the first.
    pub tags: Vec<(String, String)>,
    /// Comments between the tags and the first move (FICS puts the game number there).
    pub leading_comments: Vec<String>,
    /// Moves of both boards in the order they were played.
    pub moves: Vec<BpgnMove>,
    /// The game termination token of the movetext, if any (the `Result` tag is separate: see
    /// [`BpgnGame::outcome`]).
    pub result: Option<GameResult>,
    /// The comment directly before the result token, such as `makaka checkmated`.
    pub result_comment: Option<String>,
}

impl BpgnGame {
    /// The value of the first tag called `name` (case-sensitive, as PGN tag names are).
    pub fn tag(&self, name: &str) -> Option<&str> {
        self.tags
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The movetext result, or failing that the `Result` tag; `None` if neither says anything.
    pub fn outcome(&self) -> Option<GameResult> {
        self.result
            .or_else(|| self.tag("Result").and_then(|v| v.trim().parse().ok()))
    }

    /// The `TimeControl` tag as `base+increment` or `base` seconds; `None` if absent or of
    /// another form (`-`, `?`, PGN's `40/7200:3600`).
    pub fn time_control(&self) -> Option<TimeControl> {
        let value = self.tag("TimeControl")?.trim();
        let (base, increment) = value.split_once('+').unwrap_or((value, "0"));
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(base) || !digits(increment) {
            return None;
        }
        Some(TimeControl {
            base_secs: base.parse().ok()?,
            increment_secs: increment.parse().ok()?,
        })
    }

    /// The `FEN` tag verbatim (a table FEN), or `None` when the game starts from the initial position.
    pub fn start_fen(&self) -> Option<&str> {
        self.tag("FEN")
    }

    /// The `FEN` tag split into the FENs of board A and board B at the `|` separator, trimmed.
    /// `None` if there is no `FEN` tag or it does not hold exactly two non-empty parts.
    pub fn start_board_fens(&self) -> Option<(&str, &str)> {
        let (a, b) = self.start_fen()?.split_once('|')?;
        let (a, b) = (a.trim(), b.trim());
        if a.is_empty() || b.is_empty() || b.contains('|') {
            return None;
        }
        Some((a, b))
    }

    /// The BPGN 1.2 `Lag` tag: one lag figure per move in milliseconds, as written.
    /// `None` if the tag is absent or holds anything but whitespace-separated integers.
    pub fn lag_millis(&self) -> Option<Vec<u32>> {
        self.tag("Lag")?
            .split_whitespace()
            .map(|t| t.parse().ok())
            .collect()
    }

    /// The moves of one board, in order.
    pub fn board_moves(&self, board: BoardId) -> impl Iterator<Item = &BpgnMove> {
        self.moves.iter().filter(move |m| m.board == board)
    }
}

/// Where and why a BPGN input could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("BPGN game {game} (counting from 0), line {line}, column {column}: {kind}")]
pub struct BpgnError {
    /// Index of the game in the input, counting from 0 (the index in [`parse_bpgn_lenient`]'s result).
    pub game: usize,
    /// Line of the offending text, counting from 1.
    pub line: usize,
    /// Column (in characters) of the offending text, counting from 1.
    pub column: usize,
    pub kind: BpgnErrorKind,
}

/// What was wrong at a [`BpgnError`]'s position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BpgnErrorKind {
    #[error("a `{{` comment is never closed")]
    UnterminatedComment,
    #[error("a tag is not closed by `]` before the end of the line")]
    UnterminatedTag,
    #[error("a tag name must follow `[`")]
    MissingTagName,
    #[error("tag `{0}` needs a quoted value")]
    MissingTagValue(String),
    #[error("unexpected character {0:?}")]
    UnexpectedChar(char),
    #[error("`{0}` is not a move number with a board letter such as `12A.` or `12b.`")]
    BadMoveNumber(String),
    #[error("`{0}` does not have the shape of a SAN move")]
    BadSan(String),
    #[error("move `{0}` has no move number and board such as `12A.` before it")]
    MoveWithoutNumber(String),
    #[error("move number `{0}` is not followed by a move")]
    MissingMove(String),
    #[error("`{0}` is not a numeric annotation glyph $0..$255")]
    BadNag(String),
    #[error("variations `( ... )` are not supported in BPGN")]
    Variation,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn game_with_tags(tags: &[(&str, &str)]) -> BpgnGame {
        BpgnGame {
            tags: tags
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            ..BpgnGame::default()
        }
    }

    #[test]
    fn result_tokens_round_trip_through_str_and_serde() {
        for r in [
            GameResult::FirstTeamWins,
            GameResult::SecondTeamWins,
            GameResult::Draw,
            GameResult::Unknown,
        ] {
            assert_eq!(r.as_str().parse::<GameResult>(), Ok(r));
            let json = serde_json::to_string(&r).expect("a unit enum always serialises");
            assert_eq!(json, format!("\"{}\"", r.as_str()));
            assert_eq!(serde_json::from_str::<GameResult>(&json).ok(), Some(r));
        }
        assert!("1-1".parse::<GameResult>().is_err());
    }

    #[test]
    fn board_b_sees_the_result_mirrored() {
        assert_eq!(
            GameResult::FirstTeamWins.on_board(BoardId::B),
            GameResult::SecondTeamWins
        );
        assert_eq!(
            GameResult::FirstTeamWins.on_board(BoardId::A),
            GameResult::FirstTeamWins
        );
        assert_eq!(GameResult::Draw.on_board(BoardId::B), GameResult::Draw);
    }

    #[test]
    fn time_control_forms() {
        let tc = |v| game_with_tags(&[("TimeControl", v)]).time_control();
        assert_eq!(
            tc("120+0"),
            Some(TimeControl {
                base_secs: 120,
                increment_secs: 0
            })
        );
        assert_eq!(
            tc("180+2"),
            Some(TimeControl {
                base_secs: 180,
                increment_secs: 2
            })
        );
        assert_eq!(
            tc("300"),
            Some(TimeControl {
                base_secs: 300,
                increment_secs: 0
            })
        );
        assert_eq!(tc("-"), None);
        assert_eq!(tc("40/7200:3600"), None);
        assert_eq!(tc("+5"), None);
        assert_eq!(BpgnGame::default().time_control(), None);
    }

    #[test]
    fn start_fen_splits_into_boards() {
        let a = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1";
        let table = format!("{a} | {a}");
        let g = game_with_tags(&[("FEN", &table)]);
        assert_eq!(g.start_fen(), Some(table.as_str()));
        assert_eq!(g.start_board_fens(), Some((a, a)));
        assert_eq!(game_with_tags(&[("FEN", a)]).start_board_fens(), None);
        assert_eq!(BpgnGame::default().start_fen(), None);
    }

    #[test]
    fn outcome_prefers_movetext_over_tag() {
        let mut g = game_with_tags(&[("Result", "0-1")]);
        assert_eq!(g.outcome(), Some(GameResult::SecondTeamWins));
        g.result = Some(GameResult::Draw);
        assert_eq!(g.outcome(), Some(GameResult::Draw));
        assert_eq!(BpgnGame::default().outcome(), None);
    }

    #[test]
    fn lag_tag_reads_integers_only() {
        assert_eq!(
            game_with_tags(&[("Lag", "177 311  258")]).lag_millis(),
            Some(vec![177, 311, 258])
        );
        assert_eq!(game_with_tags(&[("Lag", "177 x")]).lag_millis(), None);
    }
}
