//! Moves, the allocation-free move list, and raw UCI notation.

use super::types::{Role, Square};
use std::fmt;
use std::str::FromStr;

/// A move on one board. Carries the moving role and any captured role so that consumers (SAN,
/// the referee) need not look at the board again; the capture is what stood on the target before
/// the move, not what goes to a pocket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Move {
    /// Any move of a piece from one square to another, including captures and promotions.
    Normal {
        role: Role,
        from: Square,
        to: Square,
        capture: Option<Role>,
        promotion: Option<Role>,
    },
    /// A pawn capturing en passant; `to` is the empty square the pawn lands on.
    EnPassant { from: Square, to: Square },
    /// Castling, given by the king's and the rook's start squares (standard chess only: the king
    /// lands on the c- or g-file, the rook on the d- or f-file). UCI writes it as the king moving
    /// two squares (`e1g1`).
    Castle { king: Square, rook: Square },
    /// A piece from the pocket put on an empty square.
    Drop { role: Role, to: Square },
    /// The steal promotion of rule text 004 §6: the pawn on `from` moves to the last rank `to`
    /// (capturing whatever enemy piece stands there), the piece of the mover's colour standing on
    /// `steal` on the OTHER board is taken from there and put on `to`, and the owner of that
    /// piece receives the pawn in their pocket. UCI: `e7e8^d1` ("promote on e8 taking the piece on
    /// d1 of the other board"); SAN: `e8=N(d1)` naming the stolen piece and its square.
    Steal {
        from: Square,
        to: Square,
        steal: Square,
    },
}

impl Move {
    /// The destination square.
    pub fn to(&self) -> Square {
        match *self {
            Move::Normal { to, .. }
            | Move::EnPassant { to, .. }
            | Move::Drop { to, .. }
            | Move::Steal { to, .. } => to,
            Move::Castle { king, rook } => castle_king_target(king, rook),
        }
    }

    /// The origin square (`None` for drops).
    pub fn from(&self) -> Option<Square> {
        match *self {
            Move::Normal { from, .. } | Move::EnPassant { from, .. } | Move::Steal { from, .. } => {
                Some(from)
            }
            Move::Castle { king, .. } => Some(king),
            Move::Drop { .. } => None,
        }
    }

    /// The role of the piece that moves or is dropped.
    pub fn role(&self) -> Role {
        match *self {
            Move::Normal { role, .. } | Move::Drop { role, .. } => role,
            Move::EnPassant { .. } | Move::Steal { .. } => Role::Pawn,
            Move::Castle { .. } => Role::King,
        }
    }

    /// Whether something is captured on this board.
    pub fn is_capture(&self) -> bool {
        matches!(
            self,
            Move::Normal {
                capture: Some(_),
                ..
            } | Move::EnPassant { .. }
        )
    }

    /// The raw UCI form of this move.
    pub fn to_uci(&self) -> UciMove {
        match *self {
            Move::Normal {
                from,
                to,
                promotion,
                ..
            } => UciMove::Normal {
                from,
                to,
                promotion,
            },
            Move::EnPassant { from, to } => UciMove::Normal {
                from,
                to,
                promotion: None,
            },
            Move::Castle { king, rook } => UciMove::Normal {
                from: king,
                to: castle_king_target(king, rook),
                promotion: None,
            },
            Move::Drop { role, to } => UciMove::Drop { role, to },
            Move::Steal { from, to, steal } => UciMove::Steal { from, to, steal },
        }
    }
}

impl fmt::Display for Move {
    /// Writes UCI.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.to_uci().fmt(f)
    }
}

/// Where the king lands when castling with the rook on `rook`.
pub(crate) fn castle_king_target(king: Square, rook: Square) -> Square {
    let file = if rook.file() > king.file() { 6 } else { 2 };
    Square::from_coords(file, king.rank()).unwrap_or(king)
}

/// Where the rook lands when castling with the rook on `rook`.
pub(crate) fn castle_rook_target(king: Square, rook: Square) -> Square {
    let file = if rook.file() > king.file() { 5 } else { 3 };
    Square::from_coords(file, king.rank()).unwrap_or(rook)
}

/// The largest list a position can produce with room to spare: drops are at most 5 × 64 and
/// board moves stay far below 700 even with every pawn promoted.
pub const MAX_MOVES: usize = 1024;

/// A fixed-capacity list of moves living on the stack, so move generation never allocates.
#[derive(Clone)]
pub struct MoveList {
    len: usize,
    moves: [Move; MAX_MOVES],
}

const FILLER: Move = Move::Drop {
    role: Role::Pawn,
    to: Square::A1,
};

impl MoveList {
    /// An empty list.
    pub fn new() -> MoveList {
        MoveList {
            len: 0,
            moves: [FILLER; MAX_MOVES],
        }
    }

    /// Appends a move; a move beyond capacity (never reached by any position) is dropped.
    #[inline]
    pub fn push(&mut self, m: Move) {
        if let Some(slot) = self.moves.get_mut(self.len) {
            *slot = m;
            self.len += 1;
        }
    }

    /// Number of moves.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// No moves (with `is_check`: mate or stalemate).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Empties the list for reuse.
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Keeps only the moves for which `f` is true.
    pub fn retain(&mut self, mut f: impl FnMut(&Move) -> bool) {
        let mut w = 0;
        for r in 0..self.len {
            if f(&self.moves[r]) {
                self.moves[w] = self.moves[r];
                w += 1;
            }
        }
        self.len = w;
    }

    /// The moves as a slice.
    pub fn as_slice(&self) -> &[Move] {
        &self.moves[..self.len]
    }

    /// Iterates the moves in generation order.
    pub fn iter(&self) -> std::slice::Iter<'_, Move> {
        self.as_slice().iter()
    }

    /// Whether `m` is in the list (exact equality, capture field included).
    pub fn contains(&self, m: &Move) -> bool {
        self.as_slice().contains(m)
    }
}

impl Default for MoveList {
    fn default() -> Self {
        MoveList::new()
    }
}

impl fmt::Debug for MoveList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl std::ops::Deref for MoveList {
    type Target = [Move];
    fn deref(&self) -> &[Move] {
        self.as_slice()
    }
}

impl<'a> IntoIterator for &'a MoveList {
    type Item = &'a Move;
    type IntoIter = std::slice::Iter<'a, Move>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// A move in UCI notation as written, before it is related to a position: `e2e4`, `e7e8q`,
/// `N@f3`, `e7e8^d1` (steal). Convert with `Position::uci_to_move`/`Table::uci_to_move`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UciMove {
    Normal {
        from: Square,
        to: Square,
        promotion: Option<Role>,
    },
    Drop {
        role: Role,
        to: Square,
    },
    Steal {
        from: Square,
        to: Square,
        steal: Square,
    },
}

/// A malformed UCI string; `at` is the byte offset of the first offending character.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid UCI move {text:?} at byte {at}: {what}")]
pub struct UciError {
    pub text: String,
    pub at: usize,
    pub what: &'static str,
}

fn parse_sq(s: &str, at: usize, text: &str) -> Result<Square, UciError> {
    s.get(at..at + 2)
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| UciError {
            text: text.to_string(),
            at,
            what: "expected a square like e4",
        })
}

impl FromStr for UciMove {
    type Err = UciError;
    fn from_str(text: &str) -> Result<UciMove, UciError> {
        let err = |at, what| UciError {
            text: text.to_string(),
            at,
            what,
        };
        let b = text.as_bytes();
        if !text.is_ascii() {
            return Err(err(0, "non-ASCII character"));
        }
        if b.len() == 4 && b[1] == b'@' {
            let role = Role::from_char(b[0] as char)
                .filter(|&r| r != Role::King)
                .ok_or_else(|| err(0, "expected a drop role P N B R Q"))?;
            let to = parse_sq(text, 2, text)?;
            return Ok(UciMove::Drop { role, to });
        }
        if b.len() < 4 {
            return Err(err(b.len(), "too short"));
        }
        let from = parse_sq(text, 0, text)?;
        let to = parse_sq(text, 2, text)?;
        match b.len() {
            4 => Ok(UciMove::Normal {
                from,
                to,
                promotion: None,
            }),
            5 => {
                let role = Role::from_char(b[4] as char)
                    .filter(|r| !matches!(r, Role::Pawn | Role::King))
                    .ok_or_else(|| err(4, "expected a promotion role n b r q"))?;
                Ok(UciMove::Normal {
                    from,
                    to,
                    promotion: Some(role),
                })
            }
            7 if b[4] == b'^' => {
                let steal = parse_sq(text, 5, text)?;
                Ok(UciMove::Steal { from, to, steal })
            }
            _ => Err(err(4, "unexpected trailing characters")),
        }
    }
}

impl fmt::Display for UciMove {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            UciMove::Normal {
                from,
                to,
                promotion,
            } => {
                write!(f, "{from}{to}")?;
                if let Some(p) = promotion {
                    write!(f, "{}", p.char())?;
                }
                Ok(())
            }
            UciMove::Drop { role, to } => write!(f, "{}@{to}", role.upper_char()),
            UciMove::Steal { from, to, steal } => write!(f, "{from}{to}^{steal}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uci_round_trips() {
        for s in [
            "e2e4", "e7e8q", "a2a1n", "N@f3", "P@e4", "Q@h8", "e7e8^d1", "e1g1",
        ] {
            let m: UciMove = s.parse().unwrap();
            assert_eq!(m.to_string(), s);
        }
    }

    #[test]
    fn uci_errors_say_where() {
        let e = "e2e9".parse::<UciMove>().unwrap_err();
        assert_eq!(e.at, 2);
        let e = "e7e8k".parse::<UciMove>().unwrap_err();
        assert_eq!(e.at, 4);
        assert!("K@e4".parse::<UciMove>().is_err());
        assert!("e2".parse::<UciMove>().is_err());
        assert!("e2e4xx".parse::<UciMove>().is_err());
        assert!("é2e4".parse::<UciMove>().is_err());
    }

    #[test]
    fn move_list_retains() {
        let mut l = MoveList::new();
        for sq in Square::all() {
            l.push(Move::Drop {
                role: Role::Knight,
                to: sq,
            });
        }
        assert_eq!(l.len(), 64);
        l.retain(|m| m.to().rank() == 0);
        assert_eq!(l.len(), 8);
    }
}
