//! A small reader of table FEN piece placements: just enough to put pieces on a rendered table.
//!
//! Table FEN = two board FENs joined by ` | `, board A first. Of each board only the piece
//! placement and the `[...]` pocket are read (the pocket may follow the placement directly or as
//! the next field); side to move, castling etc. are ignored. A `~` after a piece (promoted) is
//! skipped. The rules engine owns full FEN; this reader exists so the renderer has no dependency
//! on it.

use serde::{Deserialize, Serialize};

use super::SimError;

/// Chess piece kind, in the order the piece-set files use (pawn … king).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum PieceKind {
    Pawn,
    Knight,
    Bishop,
    Rook,
    Queen,
    King,
}

impl PieceKind {
    pub const ALL: [PieceKind; 6] = [
        PieceKind::Pawn,
        PieceKind::Knight,
        PieceKind::Bishop,
        PieceKind::Rook,
        PieceKind::Queen,
        PieceKind::King,
    ];

    /// File stem of the mesh in a piece-set directory (`pawn`, … `king`).
    pub fn name(self) -> &'static str {
        match self {
            PieceKind::Pawn => "pawn",
            PieceKind::Knight => "knight",
            PieceKind::Bishop => "bishop",
            PieceKind::Rook => "rook",
            PieceKind::Queen => "queen",
            PieceKind::King => "king",
        }
    }
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Side colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    White,
    Black,
}

/// A piece: kind and colour; FEN letter uppercase for White.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Piece {
    pub kind: PieceKind,
    pub side: Side,
}

impl Piece {
    pub fn from_fen_char(c: char) -> Option<Piece> {
        let side = if c.is_ascii_uppercase() {
            Side::White
        } else {
            Side::Black
        };
        let kind = match c.to_ascii_lowercase() {
            'p' => PieceKind::Pawn,
            'n' => PieceKind::Knight,
            'b' => PieceKind::Bishop,
            'r' => PieceKind::Rook,
            'q' => PieceKind::Queen,
            'k' => PieceKind::King,
            _ => return None,
        };
        Some(Piece { kind, side })
    }
    pub fn fen_char(self) -> char {
        let c = match self.kind {
            PieceKind::Pawn => 'p',
            PieceKind::Knight => 'n',
            PieceKind::Bishop => 'b',
            PieceKind::Rook => 'r',
            PieceKind::Queen => 'q',
            PieceKind::King => 'k',
        };
        if self.side == Side::White {
            c.to_ascii_uppercase()
        } else {
            c
        }
    }
}

/// One board's placement: `squares[rank * 8 + file]`, a1 = 0, h1 = 7, a8 = 56, and its pockets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoardPlacement {
    pub squares: [Option<Piece>; 64],
    /// Pieces in hand, in FEN order; White's pocket pieces are the white ones.
    pub pocket: Vec<Piece>,
}

impl BoardPlacement {
    pub fn empty() -> Self {
        BoardPlacement {
            squares: [None; 64],
            pocket: Vec::new(),
        }
    }
    pub fn pocket_of(&self, side: Side) -> Vec<Piece> {
        self.pocket
            .iter()
            .copied()
            .filter(|p| p.side == side)
            .collect()
    }
}

/// The two boards of a table, board A first, plus the text they were read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TablePlacement {
    pub boards: [BoardPlacement; 2],
    pub fen: String,
}

/// Square name (`a1` … `h8`) of an index `rank * 8 + file`.
pub fn square_name(index: usize) -> String {
    let file = (b'a' + (index % 8) as u8) as char;
    let rank = (b'1' + (index / 8) as u8) as char;
    format!("{file}{rank}")
}

/// Reads a table FEN (`<board A> | <board B>`).
pub fn parse_table_fen(text: &str) -> Result<TablePlacement, SimError> {
    let parts: Vec<&str> = text.split('|').collect();
    if parts.len() != 2 {
        return Err(SimError::Fen(format!(
            "a table FEN holds two board FENs joined by ' | ', found {} part(s)",
            parts.len()
        )));
    }
    let a = parse_board(parts[0]).map_err(|e| SimError::Fen(format!("board A: {e}")))?;
    let b = parse_board(parts[1]).map_err(|e| SimError::Fen(format!("board B: {e}")))?;
    Ok(TablePlacement {
        boards: [a, b],
        fen: text.trim().to_string(),
    })
}

fn parse_board(text: &str) -> Result<BoardPlacement, String> {
    let text = text.trim();
    let mut fields = text.split_whitespace();
    let first = fields.next().ok_or("empty board FEN")?;
    let (placement, mut pocket_text) = match first.find('[') {
        Some(i) => (&first[..i], Some(first[i..].to_string())),
        None => (first, None),
    };
    if pocket_text.is_none()
        && let Some(next) = fields.next()
        && next.starts_with('[')
    {
        pocket_text = Some(next.to_string());
    }
    let mut board = BoardPlacement::empty();
    let ranks: Vec<&str> = placement.split('/').collect();
    if ranks.len() != 8 {
        return Err(format!(
            "placement '{placement}' has {} ranks, expected 8",
            ranks.len()
        ));
    }
    for (i, rank_text) in ranks.iter().enumerate() {
        let rank = 7 - i;
        let mut file = 0usize;
        for c in rank_text.chars() {
            if c == '~' {
                continue;
            }
            if let Some(d) = c.to_digit(10) {
                if !(1..=8).contains(&d) {
                    return Err(format!("bad empty-square count '{c}' in rank {}", rank + 1));
                }
                file += d as usize;
            } else if let Some(p) = Piece::from_fen_char(c) {
                if file < 8 {
                    board.squares[rank * 8 + file] = Some(p);
                }
                file += 1;
            } else {
                return Err(format!("unexpected character '{c}' in rank {}", rank + 1));
            }
            if file > 8 {
                return Err(format!(
                    "rank {} '{rank_text}' is longer than 8 squares",
                    rank + 1
                ));
            }
        }
        if file != 8 {
            return Err(format!(
                "rank {} '{rank_text}' covers {file} squares, expected 8",
                rank + 1
            ));
        }
    }
    if let Some(p) = pocket_text {
        let inner = p
            .strip_prefix('[')
            .and_then(|s| s.strip_suffix(']'))
            .ok_or_else(|| format!("pocket '{p}' must be written as [...]"))?;
        for c in inner.chars() {
            if c == '~' || c == '-' {
                continue;
            }
            let piece = Piece::from_fen_char(c)
                .ok_or_else(|| format!("unexpected character '{c}' in pocket"))?;
            board.pocket.push(piece);
        }
    }
    Ok(board)
}

#[cfg(test)]
mod tests {
    use super::*;

    const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR";

    #[test]
    fn start_position_and_pocket_are_read() {
        let t = parse_table_fen(&format!("{START}[Qp] w KQkq - 0 1 | {START} b - - 0 1")).unwrap();
        let a = &t.boards[0];
        assert_eq!(a.squares[0], Piece::from_fen_char('R'));
        assert_eq!(a.squares[4], Piece::from_fen_char('K'));
        assert_eq!(a.squares[60], Piece::from_fen_char('k'));
        assert_eq!(a.squares.iter().filter(|s| s.is_some()).count(), 32);
        assert_eq!(
            a.pocket_of(Side::White),
            vec![Piece::from_fen_char('Q').unwrap()]
        );
        assert_eq!(
            a.pocket_of(Side::Black),
            vec![Piece::from_fen_char('p').unwrap()]
        );
        assert!(t.boards[1].pocket.is_empty());
    }

    #[test]
    fn pocket_as_separate_field_and_promotion_marks() {
        let t =
            parse_table_fen("4k3/8/8/8/8/8/8/3Q~K3 [NN] w - - | 8/8/8/8/8/8/8/4K2k []").unwrap();
        assert_eq!(t.boards[0].squares[3], Piece::from_fen_char('Q'));
        assert_eq!(t.boards[0].squares[4], Piece::from_fen_char('K'));
        assert_eq!(t.boards[0].pocket.len(), 2);
        assert_eq!(t.boards[1].squares[7], Piece::from_fen_char('k'));
    }

    #[test]
    fn malformed_fens_are_errors_naming_the_problem() {
        let cases = [
            (START.to_string(), "two board FENs"),
            (
                format!("{START} | rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP"),
                "7 ranks",
            ),
            (
                format!("{START} | rnbqkbnr/pppppppp/9/8/8/8/PPPPPPPP/RNBQKBNR"),
                "bad empty-square",
            ),
            (
                format!("{START} | rnbqkbnr/ppppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR"),
                "longer than 8",
            ),
            (
                format!("{START} | rnbqkbnr/ppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR"),
                "covers 7",
            ),
            (format!("{START}[Qx | {START}"), "[...]"),
            (format!("{START}[Qx] | {START}"), "'x' in pocket"),
            (
                format!("{START} | rnbqkbnr/ppppXppp/8/8/8/8/PPPPPPPP/RNBQKBNR"),
                "'X'",
            ),
        ];
        for (fen, needle) in cases {
            let err = parse_table_fen(&fen).expect_err(&fen).to_string();
            assert!(err.contains(needle), "{fen}: {err}");
        }
    }

    fn write_board(squares: &[Option<Piece>; 64]) -> String {
        let mut out = String::new();
        for rank in (0..8).rev() {
            let mut empty = 0;
            for file in 0..8 {
                match squares[rank * 8 + file] {
                    Some(p) => {
                        if empty > 0 {
                            out.push_str(&empty.to_string());
                            empty = 0;
                        }
                        out.push(p.fen_char());
                    }
                    None => empty += 1,
                }
            }
            if empty > 0 {
                out.push_str(&empty.to_string());
            }
            if rank > 0 {
                out.push('/');
            }
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn any_text_parses_or_errors_without_panicking(s in "\\PC{0,120}") {
            let _ = parse_table_fen(&s);
        }

        #[test]
        fn written_placements_read_back(cells in proptest::collection::vec(0u8..13, 128)) {
            let letters = ['P', 'N', 'B', 'R', 'Q', 'K', 'p', 'n', 'b', 'r', 'q', 'k'];
            let board = |part: &[u8]| -> [Option<Piece>; 64] {
                std::array::from_fn(|i| letters.get(part[i] as usize).and_then(|&c| Piece::from_fen_char(c)))
            };
            let (a, b) = (board(&cells[..64]), board(&cells[64..]));
            let fen = format!("{}[Qp] w - - | {} b", write_board(&a), write_board(&b));
            let t = parse_table_fen(&fen).unwrap();
            proptest::prop_assert_eq!(t.boards[0].squares, a);
            proptest::prop_assert_eq!(t.boards[1].squares, b);
            proptest::prop_assert_eq!(t.boards[0].pocket.len(), 2);
        }
    }

    #[test]
    fn square_names() {
        assert_eq!(square_name(0), "a1");
        assert_eq!(square_name(7), "h1");
        assert_eq!(square_name(63), "h8");
    }
}
