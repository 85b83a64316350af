//! The BPGN writer and the per-board PGN export.

use super::clock::{format_clk, format_seconds, parse_clock_millis, secs_to_millis};
use super::{BoardId, BpgnGame, BpgnMove, Color, GameResult};

/// Movetext lines are wrapped before they would pass this many characters (a single longer
/// token, such as a long chat comment, stands on its own line).
const LINE_WIDTH: usize = 80;

/// Writes one game as BPGN: tags one per line, a blank line, movetext wrapped at 80 columns with
/// clocks as `{seconds}` to the millisecond, the result comment and result last; LF line ends.
///
/// For any game the reader produced, reading the output gives the same game back (clocks are
/// written to the millisecond the reader keeps). Text the syntax cannot carry is adjusted: a tag
/// value's line break becomes a space, and a comment holding `}` is written as a `;` comment
/// (or, if it also holds a line break, with `}` turned into `)`).
pub fn write_bpgn(game: &BpgnGame) -> String {
    let mut out = String::new();
    write_tags(
        &mut out,
        game.tags.iter().map(|(n, v)| (n.as_str(), v.as_str())),
    );
    if !game.tags.is_empty() {
        out.push('\n');
    }
    let mut text = Movetext::new(out);
    for comment in &game.leading_comments {
        text.comment(comment);
    }
    for m in &game.moves {
        let mut unit = format!("{}{}. {}", m.number, board_letter(m), m.san);
        let clock = m.clock.and_then(secs_to_millis);
        if let Some(millis) = clock {
            unit.push('{');
            unit.push_str(&format_seconds(millis));
            unit.push('}');
        }
        text.unit(&unit);
        for (i, comment) in m.comments.iter().enumerate() {
            if i == 0 && clock.is_none() && parse_clock_millis(comment).is_some() {
                // In braces the reader would take it for the clock the move lacks.
                text.line_comment(&comment.replace('\n', " "));
            } else {
                text.comment(comment);
            }
        }
        // Glyphs after the comments, so that a last chat comment is not read as the result's.
        for nag in &m.nags {
            text.unit(&format!("${nag}"));
        }
    }
    if let Some(result) = game.result {
        if let Some(comment) = &game.result_comment {
            if parse_clock_millis(comment).is_some() && !comment.contains('\n') {
                // In braces it could be read as the last move's clock.
                text.line_comment(comment);
            } else {
                text.comment(comment);
            }
        }
        text.unit(result.as_str());
    }
    text.finish()
}

/// What [`write_board_pgn`] puts into the movetext besides the moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct BoardPgnOptions {
    /// Each move's clock as `{[%clk h:mm:ss.t]}` (the form broadcast viewers read).
    pub clocks: bool,
    /// The moves' other comments (chat is said at the table, so it is off by default) and glyphs.
    pub comments: bool,
}

impl Default for BoardPgnOptions {
    fn default() -> Self {
        BoardPgnOptions {
            clocks: true,
            comments: false,
        }
    }
}

/// Writes the moves of one board as a standard PGN game, for viewers that know no BPGN.
///
/// Tags: the Seven Tag Roster (`White`/`Black` from `WhiteA`/`BlackA` or `WhiteB`/`BlackB`,
/// `Date` with dots, `?` or `-` where unknown), then `Board`, the players' `Elo`s, `Time`,
/// `TimeControl`, `Variant "Bughouse"`, and `SetUp`/`FEN` with the board's half of a table FEN.
/// The result is seen from the board: BPGN `1-0` (WhiteA + BlackB won) is `0-1` on board B; it
/// is the movetext result, else the `Result` tag, else `*`. Move numbers are those of the BPGN
/// file; a Black move is numbered `12...` unless it follows White's move 12 directly.
pub fn write_board_pgn(game: &BpgnGame, board: BoardId, options: BoardPgnOptions) -> String {
    let (white, black) = match board {
        BoardId::A => ("WhiteA", "BlackA"),
        BoardId::B => ("WhiteB", "BlackB"),
    };
    let or = |name: &str, default: &'static str| game.tag(name).unwrap_or(default).to_string();
    let result = game
        .outcome()
        .map_or(GameResult::Unknown, |r| r.on_board(board));
    let mut tags: Vec<(&str, String)> = vec![
        ("Event", or("Event", "?")),
        ("Site", or("Site", "?")),
        (
            "Date",
            game.tag("Date")
                .map_or("????.??.??".to_string(), |d| d.replace('-', ".")),
        ),
        ("Round", or("Round", "-")),
        ("White", or(white, "?")),
        ("Black", or(black, "?")),
        ("Result", result.as_str().to_string()),
        (
            "Board",
            match board {
                BoardId::A => "A",
                BoardId::B => "B",
            }
            .to_string(),
        ),
    ];
    for (pgn_name, bpgn_name) in [
        ("WhiteElo", format!("{white}Elo")),
        ("BlackElo", format!("{black}Elo")),
        ("Time", "Time".to_string()),
        ("TimeControl", "TimeControl".to_string()),
    ] {
        if let Some(value) = game.tag(&bpgn_name) {
            tags.push((pgn_name, value.to_string()));
        }
    }
    tags.push(("Variant", "Bughouse".to_string()));
    if let Some((fen_a, fen_b)) = game.start_board_fens() {
        tags.push(("SetUp", "1".to_string()));
        let fen = match board {
            BoardId::A => fen_a,
            BoardId::B => fen_b,
        };
        tags.push(("FEN", fen.to_string()));
    }
    let mut out = String::new();
    write_tags(&mut out, tags.iter().map(|(n, v)| (*n, v.as_str())));
    out.push('\n');

    let mut text = Movetext::new(out);
    let mut white_move_number = None;
    for m in game.board_moves(board) {
        let unit = match m.color {
            Color::White => format!("{}. {}", m.number, m.san),
            Color::Black if white_move_number == Some(m.number) => m.san.clone(),
            Color::Black => format!("{}... {}", m.number, m.san),
        };
        white_move_number = (m.color == Color::White).then_some(m.number);
        text.unit(&unit);
        if options.clocks
            && let Some(millis) = m.clock.and_then(secs_to_millis)
        {
            text.unit(&format!("{{[%clk {}]}}", format_clk(millis)));
        }
        if options.comments {
            for comment in &m.comments {
                text.comment(comment);
            }
            for nag in &m.nags {
                text.unit(&format!("${nag}"));
            }
        }
    }
    text.unit(result.as_str());
    text.finish()
}

fn board_letter(m: &BpgnMove) -> char {
    match (m.board, m.color) {
        (BoardId::A, Color::White) => 'A',
        (BoardId::A, Color::Black) => 'a',
        (BoardId::B, Color::White) => 'B',
        (BoardId::B, Color::Black) => 'b',
    }
}

fn write_tags<'a>(out: &mut String, tags: impl Iterator<Item = (&'a str, &'a str)>) {
    for (name, value) in tags {
        out.push('[');
        out.push_str(name);
        out.push_str(" \"");
        for c in value.chars() {
            match c {
                '"' | '\\' => {
                    out.push('\\');
                    out.push(c);
                }
                '\n' | '\r' => out.push(' '),
                c => out.push(c),
            }
        }
        out.push_str("\"]\n");
    }
}

/// Movetext under construction: space-separated units, wrapped at [`LINE_WIDTH`].
struct Movetext {
    out: String,
    line_len: usize,
}

impl Movetext {
    fn new(out: String) -> Self {
        Movetext { out, line_len: 0 }
    }

    fn unit(&mut self, unit: &str) {
        let len = unit.chars().count();
        if self.line_len > 0 {
            if self.line_len + 1 + len > LINE_WIDTH {
                self.out.push('\n');
                self.line_len = 0;
            } else {
                self.out.push(' ');
                self.line_len += 1;
            }
        }
        self.out.push_str(unit);
        self.line_len = match unit.rfind('\n') {
            Some(i) => unit[i + 1..].chars().count(),
            None => self.line_len + len,
        };
    }

    fn comment(&mut self, text: &str) {
        if !text.contains('}') {
            self.unit(&format!("{{{text}}}"));
        } else if !text.contains('\n') {
            self.line_comment(text);
        } else {
            self.unit(&format!("{{{}}}", text.replace('}', ")")));
        }
    }

    /// A `;` comment runs to the end of the line, so the line ends after it.
    fn line_comment(&mut self, text: &str) {
        self.unit(&format!(";{text}"));
        self.out.push('\n');
        self.line_len = 0;
    }

    fn finish(mut self) -> String {
        if self.line_len > 0 {
            self.out.push('\n');
        }
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse_bpgn;
    use super::*;

    /// The text with its line breaks turned into spaces, to check content regardless of wrapping.
    fn flat(text: &str) -> String {
        text.replace('\n', " ")
    }

    fn one(src: &str) -> BpgnGame {
        let mut games = parse_bpgn(src.as_bytes()).expect("test input parses");
        assert_eq!(games.len(), 1);
        games.remove(0)
    }

    const SAMPLE: &str = "[Event \"Club \\\"night\\\"\"][Site \"Bonn\"]\n[Date \"2026-11-30\"]\n\
        [WhiteA \"Ann\"][WhiteAElo \"1500\"][BlackA \"Bob\"][WhiteB \"Cid\"][BlackB \"Dan\"]\n\
        [TimeControl \"180+0\"][Result \"1-0\"]\n\n\
        {C: game start} 1A. e4{179.547} 1a. Nc6{179.340} 1B. d4{178.0} {C: hello} 1b. d5!{177.9}\n\
        2A. Nf3{178.1} 2B. c4 2b. e6 2a. e5{170.25} {makaka resigns} 1-0\n";

    #[test]
    fn bpgn_writer_layout() {
        let g = one(SAMPLE);
        let text = write_bpgn(&g);
        assert!(text.starts_with("[Event \"Club \\\"night\\\"\"]\n[Site \"Bonn\"]\n"));
        assert!(
            text.contains("[Result \"1-0\"]\n\n{C: game start} 1A. e4{179.547} 1a. Nc6{179.34}")
        );
        assert!(flat(&text).contains("1b. d5{177.9} $1"));
        assert!(flat(&text).ends_with("2a. e5{170.25} {makaka resigns} 1-0 "));
        assert!(text.lines().all(|l| l.chars().count() <= LINE_WIDTH));
        assert_eq!(one(&text), g);
    }

    #[test]
    fn long_movetext_wraps_at_80_columns() {
        let mut src = String::from("[Event \"x\"]\n\n");
        for n in 1..=40 {
            src.push_str(&format!("{n}A. Nf3{{100.125}} {n}a. Nf6{{99.5}} "));
        }
        let g = one(&src);
        let text = write_bpgn(&g);
        let movetext: Vec<&str> = text.lines().skip(2).collect();
        assert!(movetext.len() > 5);
        assert!(movetext.iter().all(|l| l.chars().count() <= LINE_WIDTH));
        assert!(movetext.iter().any(|l| l.chars().count() > LINE_WIDTH - 20));
        assert_eq!(one(&text), g);
    }

    #[test]
    fn awkward_comments_survive_a_round_trip() {
        let mut g = one("1A. e4 ;12.5 \n 1a. e5{1.0} {x} $1 *");
        assert_eq!(g.moves[0].clock, None);
        assert_eq!(g.moves[0].comments, vec!["12.5 ".to_string()]);
        assert_eq!(g.result_comment, None);
        assert_eq!(one(&write_bpgn(&g)), g);
        g.moves[1].comments.push("a } brace".into());
        g.moves[1].comments.push("two\nlines }".into());
        let back = one(&write_bpgn(&g));
        assert_eq!(back.moves[1].comments[1], "a } brace");
        assert_eq!(back.moves[1].comments[2], "two\nlines )");
    }

    #[test]
    fn board_pgn_for_each_board() {
        let g = one(SAMPLE);
        let a = write_board_pgn(&g, BoardId::A, BoardPgnOptions::default());
        assert!(a.contains("[White \"Ann\"]\n[Black \"Bob\"]\n[Result \"1-0\"]\n"));
        assert!(a.contains("[Date \"2026.11.30\"]"));
        assert!(a.contains("[WhiteElo \"1500\"]"));
        assert!(!a.contains("BlackElo"));
        assert!(a.contains("[Variant \"Bughouse\"]"));
        assert!(flat(&a).contains(
            "1. e4 {[%clk 0:02:59.5]} Nc6 {[%clk 0:02:59.3]} 2. Nf3 {[%clk 0:02:58.1]} e5 {[%clk 0:02:50.2]} 1-0 "
        ));
        let b = write_board_pgn(&g, BoardId::B, BoardPgnOptions::default());
        assert!(b.contains("[White \"Cid\"]\n[Black \"Dan\"]\n[Result \"0-1\"]\n"));
        assert!(flat(&b).contains("1. d4 {[%clk 0:02:58.0]} d5 {[%clk 0:02:57.9]} 2. c4 e6 0-1 "));
        assert!(!b.contains("hello"));
        let b = write_board_pgn(
            &g,
            BoardId::B,
            BoardPgnOptions {
                clocks: false,
                comments: true,
            },
        );
        assert!(flat(&b).contains("1. d4 {C: hello} d5 $1 2. c4 e6 0-1 "));
    }

    #[test]
    fn board_pgn_takes_its_half_of_a_table_fen() {
        let fen_a = "4k3/8/8/8/8/8/8/4K3[Qq] b - - 0 7";
        let fen_b = "4k3/8/8/8/8/8/8/R3K3[] w Q - 0 1";
        let g = one(&format!(
            "[FEN \"{fen_a} | {fen_b}\"]\n\n7a. Q@e2+ 1B. Kd1 *"
        ));
        let a = write_board_pgn(&g, BoardId::A, BoardPgnOptions::default());
        assert!(a.contains(&format!("[SetUp \"1\"]\n[FEN \"{fen_a}\"]\n")));
        assert!(a.contains("\n7... Q@e2+ *\n"));
        assert!(a.contains("[White \"?\"]") && a.contains("[Result \"*\"]"));
        let b = write_board_pgn(&g, BoardId::B, BoardPgnOptions::default());
        assert!(b.contains(&format!("[FEN \"{fen_b}\"]")));
    }
}
