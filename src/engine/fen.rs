//! FEN with pockets: `board[pocket] turn castling ep halfmove fullmove`, `~` after a promoted
//! piece; the nine-field form `…/RNBQKBNR/QRbn w …` is read too. Written in the bracket form.

use super::position::Position;
use super::types::{Bitboard, Color, Piece, Role, Square};
use std::fmt::{self, Write as _};
use std::str::FromStr;

/// A malformed FEN; `at` is the byte offset where the problem was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid FEN at byte {at}: {what}")]
pub struct FenError {
    pub at: usize,
    pub what: &'static str,
}

fn err(at: usize, what: &'static str) -> FenError {
    FenError { at, what }
}

/// Byte offset of `part` inside `whole` (both from the same string).
fn offset(whole: &str, part: &str) -> usize {
    (part.as_ptr() as usize).saturating_sub(whole.as_ptr() as usize)
}

impl FromStr for Position {
    type Err = FenError;
    fn from_str(text: &str) -> Result<Position, FenError> {
        Position::from_fen(text)
    }
}

impl Position {
    /// Parses a FEN (EPD with four fields accepted: clocks default to 0 and 1).
    pub fn from_fen(text: &str) -> Result<Position, FenError> {
        let mut fields = text.split_ascii_whitespace();
        let board_field = fields.next().ok_or(err(0, "empty FEN"))?;
        let mut pos = Position::empty();

        // Split off the pocket: bracket form or ninth rank.
        let (board, pocket) = if let Some(open) = board_field.find('[') {
            let rest = &board_field[open + 1..];
            let close = rest
                .find(']')
                .ok_or(err(offset(text, rest), "pocket '[' without ']'"))?;
            if close + 1 != rest.len() {
                return Err(err(
                    offset(text, rest) + close + 1,
                    "characters after the pocket",
                ));
            }
            (&board_field[..open], Some(&rest[..close]))
        } else {
            let slashes = board_field.matches('/').count();
            if slashes == 8 {
                let cut = board_field.rfind('/').unwrap_or(board_field.len());
                (&board_field[..cut], Some(&board_field[cut + 1..]))
            } else {
                (board_field, None)
            }
        };

        let ranks: Vec<&str> = board.split('/').collect();
        if ranks.len() != 8 {
            return Err(err(0, "the board needs 8 ranks"));
        }
        for (i, rank_text) in ranks.iter().enumerate() {
            let rank = 7 - i as u8;
            let mut file = 0u8;
            let base = offset(text, rank_text);
            let mut last: Option<Square> = None;
            for (j, c) in rank_text.char_indices() {
                if c == '~' {
                    let sq = last.ok_or(err(base + j, "'~' must follow a piece"))?;
                    pos.promoted.add(sq);
                    last = None;
                    continue;
                }
                if let Some(d) = c.to_digit(10) {
                    if !(1..=8).contains(&d) {
                        return Err(err(base + j, "empty-square count must be 1-8"));
                    }
                    file += d as u8;
                    last = None;
                } else {
                    let piece = Piece::from_char(c).ok_or(err(base + j, "unknown piece letter"))?;
                    let sq = Square::from_coords(file, rank)
                        .ok_or(err(base + j, "rank has more than 8 squares"))?;
                    pos.by_color[piece.color.index()].add(sq);
                    pos.by_role[piece.role.index()].add(sq);
                    last = Some(sq);
                    file += 1;
                }
                if file > 8 {
                    return Err(err(base + j, "rank has more than 8 squares"));
                }
            }
            if file != 8 {
                return Err(err(base, "rank does not have 8 squares"));
            }
        }
        for c in Color::ALL {
            if pos.pieces(c, Role::King).count() != 1 {
                return Err(err(0, "each side needs exactly one king"));
            }
        }
        if let Some(pocket) = pocket {
            let base = offset(text, pocket);
            for (j, c) in pocket.char_indices() {
                let piece = Piece::from_char(c)
                    .filter(|p| p.role != Role::King)
                    .ok_or(err(base + j, "unknown pocket piece"))?;
                if !pos.pockets[piece.color.index()].add(piece.role) {
                    return Err(err(base + j, "too many pieces in the pocket"));
                }
            }
        }

        let turn = fields
            .next()
            .ok_or(err(text.len(), "missing side to move"))?;
        pos.turn = match turn {
            "w" | "W" => Color::White,
            "b" | "B" => Color::Black,
            _ => return Err(err(offset(text, turn), "side to move must be w or b")),
        };

        if let Some(castling) = fields.next() {
            let base = offset(text, castling);
            if castling != "-" {
                for (j, c) in castling.char_indices() {
                    let color = if c.is_ascii_uppercase() {
                        Color::White
                    } else {
                        Color::Black
                    };
                    let file = match c.to_ascii_lowercase() {
                        'k' => 7,
                        'q' => 0,
                        f @ 'a'..='h' => f as u8 - b'a',
                        _ => return Err(err(base + j, "castling must be KQkq, file letters or -")),
                    };
                    if let Some(sq) = Square::from_coords(file, color.back_rank()) {
                        // Keep only rights that can exist: unmoved king and rook in the corner.
                        let king_home = Square::from_coords(4, color.back_rank())
                            .is_some_and(|k| pos.pieces(color, Role::King).contains(k));
                        if king_home
                            && (file == 0 || file == 7)
                            && pos.pieces(color, Role::Rook).contains(sq)
                        {
                            pos.castling.add(sq);
                        }
                    }
                }
            }
        }
        for c in Color::ALL {
            pos.king_moved[c.index()] = (pos.castling & Bitboard::rank(c.back_rank())).is_empty();
        }

        if let Some(ep) = fields.next()
            && ep != "-"
        {
            {
                let sq: Square = ep.parse().map_err(|_| {
                    err(offset(text, ep), "en-passant square must be a square or -")
                })?;
                if sq.rank() != 2 && sq.rank() != 5 {
                    return Err(err(
                        offset(text, ep),
                        "en-passant square must be on rank 3 or 6",
                    ));
                }
                pos.ep_square = Some(sq);
            }
        }
        if let Some(h) = fields.next() {
            pos.halfmoves = h
                .parse()
                .map_err(|_| err(offset(text, h), "halfmove clock must be a number"))?;
        }
        if let Some(f) = fields.next() {
            pos.fullmoves = f
                .parse()
                .map_err(|_| err(offset(text, f), "fullmove number must be a number"))?;
            pos.fullmoves = pos.fullmoves.max(1);
        }
        if let Some(extra) = fields.next() {
            return Err(err(offset(text, extra), "unexpected extra field"));
        }
        Ok(pos)
    }

    /// The FEN in bracket form, e.g. `rnbqkbnr/…/RNBQKBNR[QRbn] w KQkq - 0 1`.
    pub fn to_fen(&self) -> String {
        let mut s = String::with_capacity(90);
        for rank in (0..8u8).rev() {
            let mut empty = 0;
            for file in 0..8u8 {
                let Some(sq) = Square::from_coords(file, rank) else {
                    continue;
                };
                match self.piece_at(sq) {
                    Some(p) => {
                        if empty > 0 {
                            let _ = write!(s, "{empty}");
                            empty = 0;
                        }
                        s.push(p.char());
                        if self.promoted.contains(sq) {
                            s.push('~');
                        }
                    }
                    None => empty += 1,
                }
            }
            if empty > 0 {
                let _ = write!(s, "{empty}");
            }
            if rank > 0 {
                s.push('/');
            }
        }
        s.push('[');
        for color in Color::ALL {
            for role in [
                Role::Queen,
                Role::Rook,
                Role::Bishop,
                Role::Knight,
                Role::Pawn,
            ] {
                for _ in 0..self.pockets[color.index()].count(role) {
                    s.push(Piece { color, role }.char());
                }
            }
        }
        s.push(']');
        let _ = write!(s, " {} ", self.turn.char());
        let mut any = false;
        for (sq, c) in [
            (Square::H1, 'K'),
            (Square::A1, 'Q'),
            (Square::H8, 'k'),
            (Square::A8, 'q'),
        ] {
            if self.castling.contains(sq) {
                s.push(c);
                any = true;
            }
        }
        if !any {
            s.push('-');
        }
        match self.ep_square {
            Some(sq) => {
                let _ = write!(s, " {sq}");
            }
            None => s.push_str(" -"),
        }
        let _ = write!(s, " {} {}", self.halfmoves, self.fullmoves);
        s
    }
}

impl fmt::Display for Position {
    /// Writes the FEN.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_fen())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for fen in [
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1",
            "r1bqk2r/pppp1ppp/2n1p3/4P3/1b1Pn3/2NB1N2/PPP2PPP/R1BQK2R[] b KQkq - 3 7",
            "4k3/1Q~6/8/8/4b3/8/Kpp5/8[] b - - 0 1",
            "2k5/8/8/8/8/8/8/4K3[QRBNPqrbnp] w - - 0 1",
            "rnbqkbnr/ppp1pppp/8/3pP3/8/8/PPPP1PPP/RNBQKBNR[Nq] w Kq d6 0 3",
        ] {
            let p = Position::from_fen(fen).unwrap();
            assert_eq!(p.to_fen(), fen);
        }
    }

    #[test]
    fn nine_field_and_epd_forms() {
        let p = Position::from_fen("4k3/1Q~6/8/8/4b3/8/Kpp5/8/ b - -").unwrap();
        assert_eq!(p.to_fen(), "4k3/1Q~6/8/8/4b3/8/Kpp5/8[] b - - 0 1");
        let p = Position::from_fen("4k3/8/8/8/8/8/8/4K3/QRbn w - - 0 1").unwrap();
        assert_eq!(p.pocket(Color::White).count(Role::Queen), 1);
        assert_eq!(p.pocket(Color::Black).count(Role::Knight), 1);
        assert_eq!(p.to_fen(), "4k3/8/8/8/8/8/8/4K3[QRbn] w - - 0 1");
    }

    #[test]
    fn errors_say_where() {
        let e = Position::from_fen("4k3/8/8/8/8/8/8/4K3[Qx] w - - 0 1").unwrap_err();
        assert_eq!(e.at, 21);
        let e = Position::from_fen("4k3/8/8/8/8/8/8/4K3[] x - - 0 1").unwrap_err();
        assert_eq!(e.at, 22);
        assert!(
            Position::from_fen("4k3/8/8/8/8/8/8/8[] w - - 0 1").is_err(),
            "no white king"
        );
        assert!(Position::from_fen("4k3/8/8/8/8/8/8/4K4[] w - - 0 1").is_err());
        assert!(Position::from_fen("4k3/8/8/8/8/8/4K3[] w - - 0 1").is_err());
        assert!(Position::from_fen("~4k3/8/8/8/8/8/8/4K3[] w - - 0 1").is_err());
        assert!(Position::from_fen("4k3/8/8/8/8/8/8/4K3[K] w - - 0 1").is_err());
        assert!(Position::from_fen("4k3/8/8/8/8/8/8/4K3[] w - e4 0 1").is_err());
        assert!(Position::from_fen("").is_err());
    }

    #[test]
    fn impossible_castling_rights_are_dropped() {
        let p = Position::from_fen("4k3/8/8/8/8/8/8/R3K3[] w KQkq - 0 1").unwrap();
        assert_eq!(p.castling_rights(), Square::A1.bb());
        assert!(!p.king_moved(Color::White));
        assert!(p.king_moved(Color::Black));
    }
}
