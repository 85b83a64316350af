//! Standard algebraic notation with drops (`N@f3`, `P@e4`) and the steal promotion (`e8=N(b1)`).
//! Output is strict and canonical; input is lenient (`0-0`, missing `+`, `e8Q`, `@f3`, optional
//! `x`).

use super::moves::{Move, MoveList};
use super::position::Position;
use super::table::Table;
use super::types::{BoardId, Role, Square};
use super::variant::{Promotion, Variant};
use std::fmt::Write as _;

/// SAN that cannot be read, or names no (or more than one) legal move.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SanError {
    #[error("invalid SAN {text:?} at byte {at}: {what}")]
    Syntax {
        text: String,
        at: usize,
        what: &'static str,
    },
    #[error("SAN {0:?} names no legal move")]
    Illegal(String),
    #[error("SAN {0:?} is ambiguous")]
    Ambiguous(String),
}

/// The parts of a SAN string, before matching against the legal moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Parsed {
    Castle {
        long: bool,
    },
    Drop {
        role: Role,
        to: Square,
    },
    Move {
        role: Role,
        file: Option<u8>,
        rank: Option<u8>,
        to: Square,
        promotion: Option<Role>,
        steal: Option<(Option<Role>, Square)>,
    },
}

fn syntax(text: &str, at: usize, what: &'static str) -> SanError {
    SanError::Syntax {
        text: text.to_string(),
        at,
        what,
    }
}

fn parse(text: &str) -> Result<Parsed, SanError> {
    let trimmed = text.trim();
    let trimmed = trimmed
        .strip_suffix("e.p.")
        .map(str::trim_end)
        .unwrap_or(trimmed);
    let s = trimmed.trim_end_matches(['+', '#', '!', '?']);
    if s.is_empty() {
        return Err(syntax(text, 0, "empty move"));
    }
    if !s.is_ascii() {
        return Err(syntax(text, 0, "non-ASCII character"));
    }
    let castle: String = s
        .chars()
        .filter(|&c| c != '-')
        .map(|c| if c == '0' || c == 'o' { 'O' } else { c })
        .collect();
    if castle == "OO" {
        return Ok(Parsed::Castle { long: false });
    }
    if castle == "OOO" {
        return Ok(Parsed::Castle { long: true });
    }
    if let Some((role_part, sq_part)) = s.split_once('@') {
        let role = match role_part {
            "" => Role::Pawn,
            r if r.len() == 1 => Role::from_char(r.chars().next().unwrap_or('?'))
                .filter(|&r| r != Role::King)
                .ok_or_else(|| syntax(text, 0, "drop role must be P N B R Q"))?,
            _ => return Err(syntax(text, 0, "drop role must be one letter")),
        };
        let to = sq_part
            .parse()
            .map_err(|_| syntax(text, role_part.len() + 1, "expected a square after '@'"))?;
        return Ok(Parsed::Drop { role, to });
    }
    // Steal suffix: `=N(b1)` or `(b1)`.
    let (body, steal) = match s.find('(') {
        Some(open) => {
            let inner = s[open + 1..]
                .strip_suffix(')')
                .ok_or_else(|| syntax(text, open, "'(' without ')'"))?;
            let sq: Square = inner
                .parse()
                .map_err(|_| syntax(text, open + 1, "expected the stolen piece's square"))?;
            let mut body = &s[..open];
            let mut role = None;
            if let Some(last) = body.chars().last()
                && last.is_ascii_uppercase()
            {
                role = Role::from_char(last);
                body = &body[..body.len() - 1];
            }
            (body.trim_end_matches('='), Some((role, sq)))
        }
        None => (s, None),
    };
    let mut chars: Vec<(usize, char)> = body
        .char_indices()
        .filter(|&(_, c)| !matches!(c, 'x' | 'X' | ':' | '-'))
        .collect();
    // Promotion: a role letter after the target square, with or without '='.
    let mut promotion = None;
    if let Some(&(i, c)) = chars.last()
        && steal.is_none()
        && c.is_ascii_alphabetic()
        && chars.len() >= 3
    {
        let prev = chars[chars.len() - 2].1;
        let prev = if prev == '=' && chars.len() >= 4 {
            chars[chars.len() - 3].1
        } else {
            prev
        };
        if prev.is_ascii_digit() {
            promotion = Some(
                Role::from_char(c)
                    .filter(|r| !matches!(r, Role::King | Role::Pawn))
                    .ok_or_else(|| syntax(text, i, "promotion role must be N B R Q"))?,
            );
            chars.pop();
        }
    }
    if chars.last().is_some_and(|&(_, c)| c == '=') {
        chars.pop();
    }
    let role = match chars.first() {
        Some(&(_, c)) if "NBRQKP".contains(c) => {
            chars.remove(0);
            Role::from_char(c).unwrap_or(Role::Pawn)
        }
        _ => Role::Pawn,
    };
    if chars.len() < 2 {
        return Err(syntax(text, 0, "expected a target square"));
    }
    let n = chars.len();
    let to_text: String = chars[n - 2..].iter().map(|&(_, c)| c).collect();
    let to: Square = to_text
        .parse()
        .map_err(|_| syntax(text, chars[n - 2].0, "expected a target square"))?;
    let (mut file, mut rank) = (None, None);
    for &(i, c) in &chars[..n - 2] {
        match c {
            'a'..='h' if file.is_none() => file = Some(c as u8 - b'a'),
            '1'..='8' if rank.is_none() => rank = Some(c as u8 - b'1'),
            _ => return Err(syntax(text, i, "unexpected character")),
        }
    }
    Ok(Parsed::Move {
        role,
        file,
        rank,
        to,
        promotion,
        steal,
    })
}

fn matches(p: &Parsed, m: &Move) -> bool {
    match (*p, *m) {
        (Parsed::Castle { long }, Move::Castle { king, rook }) => {
            (rook.file() < king.file()) == long
        }
        (Parsed::Drop { role, to }, Move::Drop { role: r, to: t }) => role == r && to == t,
        (
            Parsed::Move {
                role,
                file,
                rank,
                to,
                promotion,
                steal,
            },
            m,
        ) => {
            let from_ok = |from: Square| {
                file.is_none_or(|f| f == from.file()) && rank.is_none_or(|r| r == from.rank())
            };
            match m {
                Move::Normal {
                    role: r,
                    from,
                    to: t,
                    promotion: pr,
                    ..
                } => {
                    steal.is_none()
                        && r == role
                        && t == to
                        && from_ok(from)
                        && (promotion.is_none() || pr == promotion)
                }
                Move::EnPassant { from, to: t } => {
                    steal.is_none()
                        && role == Role::Pawn
                        && t == to
                        && from_ok(from)
                        && promotion.is_none()
                }
                Move::Steal {
                    from,
                    to: t,
                    steal: s,
                } => {
                    role == Role::Pawn
                        && t == to
                        && from_ok(from)
                        && steal.is_some_and(|(_, sq)| sq == s)
                }
                // `Kg1` style castling is not accepted; only O-O.
                _ => false,
            }
        }
        _ => false,
    }
}

/// Picks the one legal move a SAN names; a missing promotion piece means the queen (text 000
/// §2c: "queen if not named").
fn pick(text: &str, p: &Parsed, legal: &MoveList) -> Result<Move, SanError> {
    let found: Vec<Move> = legal.iter().copied().filter(|m| matches(p, m)).collect();
    match found.len() {
        0 => Err(SanError::Illegal(text.to_string())),
        1 => Ok(found[0]),
        _ => {
            let queen: Vec<&Move> = found
                .iter()
                .filter(|m| {
                    matches!(
                        m,
                        Move::Normal {
                            promotion: Some(Role::Queen),
                            ..
                        }
                    )
                })
                .collect();
            let all_promotions_of_one = found.iter().all(|m| {
                matches!(
                    m,
                    Move::Normal {
                        promotion: Some(_),
                        ..
                    }
                ) && m.from() == found[0].from()
            });
            if all_promotions_of_one && queen.len() == 1 {
                Ok(*queen[0])
            } else {
                Err(SanError::Ambiguous(text.to_string()))
            }
        }
    }
}

impl Position {
    /// Reads SAN naming a legal move here (not steals: see `Table::parse_san`).
    pub fn parse_san(&self, text: &str, v: &Variant) -> Result<Move, SanError> {
        let p = parse(text)?;
        pick(text, &p, &self.legal_moves(v))
    }

    /// Canonical SAN of `mv` (legal or not), with `+`/`#` judged by `v.mate`. A steal is written
    /// without the stolen piece's letter (`e8(b1)`); `Table::san` writes `e8=N(b1)`.
    pub fn san(&self, mv: Move, v: &Variant) -> String {
        self.san_with(mv, v, None, None)
    }

    pub(super) fn san_with(
        &self,
        mv: Move,
        v: &Variant,
        stolen: Option<Role>,
        after: Option<&Position>,
    ) -> String {
        let mut s = String::with_capacity(10);
        match mv {
            Move::Castle { king, rook } => {
                s.push_str(if rook.file() > king.file() {
                    "O-O"
                } else {
                    "O-O-O"
                });
            }
            Move::Drop { role, to } => {
                let _ = write!(s, "{}@{to}", role.upper_char());
            }
            Move::EnPassant { from, to } => {
                let _ = write!(s, "{}x{to}", (b'a' + from.file()) as char);
            }
            Move::Normal {
                role,
                from,
                to,
                promotion,
                ..
            } => {
                let capture = self.occupied().contains(to);
                if role == Role::Pawn {
                    if capture || from.file() != to.file() {
                        let _ = write!(s, "{}x", (b'a' + from.file()) as char);
                    }
                    let _ = write!(s, "{to}");
                    if let Some(p) = promotion {
                        let _ = write!(s, "={}", p.upper_char());
                    }
                } else {
                    s.push(role.upper_char());
                    let others: Vec<Square> = self
                        .legal_moves(v)
                        .iter()
                        .filter_map(|m| match *m {
                            Move::Normal {
                                role: r,
                                from: f,
                                to: t,
                                ..
                            } if r == role && t == to && f != from => Some(f),
                            _ => None,
                        })
                        .collect();
                    if !others.is_empty() {
                        let file_unique = others.iter().all(|o| o.file() != from.file());
                        let rank_unique = others.iter().all(|o| o.rank() != from.rank());
                        if file_unique {
                            s.push((b'a' + from.file()) as char);
                        } else if rank_unique {
                            s.push((b'1' + from.rank()) as char);
                        } else {
                            let _ = write!(s, "{from}");
                        }
                    }
                    if capture {
                        s.push('x');
                    }
                    let _ = write!(s, "{to}");
                }
            }
            Move::Steal { from, to, steal } => {
                if self.occupied().contains(to) || from.file() != to.file() {
                    let _ = write!(s, "{}x", (b'a' + from.file()) as char);
                }
                let _ = write!(s, "{to}");
                match stolen {
                    Some(r) => {
                        let _ = write!(s, "={}({steal})", r.upper_char());
                    }
                    None => {
                        let _ = write!(s, "({steal})");
                    }
                }
            }
        }
        let owned;
        let after = match after {
            Some(p) => p,
            None => {
                let mut p = self.clone();
                if p.play_physical(mv, v).is_err() {
                    p.play(mv, v);
                }
                owned = p;
                &owned
            }
        };
        if after.is_checkmate(v) {
            s.push('#');
        } else if after.is_check() {
            s.push('+');
        }
        s
    }
}

impl Table {
    /// Reads SAN naming a legal move on `board`, steals included (`e8=N(b1)`; the letter, if
    /// given, must match the piece on that square of the other board).
    pub fn parse_san(&self, board: BoardId, text: &str, v: &Variant) -> Result<Move, SanError> {
        let p = parse(text)?;
        if let Parsed::Move {
            steal: Some((Some(role), sq)),
            ..
        } = p
            && self.board(board.other()).role_at(sq) != Some(role)
        {
            return Err(SanError::Illegal(text.to_string()));
        }
        pick(text, &p, &self.legal_moves(board, v))
    }

    /// Canonical SAN of `mv` on `board`, steals written `e8=N(b1)`.
    pub fn san(&self, board: BoardId, mv: Move, v: &Variant) -> String {
        let pos = self.board(board);
        match mv {
            Move::Steal { steal, .. } => {
                let stolen = self.board(board.other()).role_at(steal);
                let mut t = self.clone();
                let after = match t.play_physical(board, mv, v) {
                    Ok(_) => Some(t.board(board).clone()),
                    Err(_) => None,
                };
                pos.san_with(mv, v, stolen, after.as_ref())
            }
            _ if v.promotion == Promotion::Steal => {
                let mut t = self.clone();
                let after = match t.play_physical(board, mv, v) {
                    Ok(_) => Some(t.board(board).clone()),
                    Err(_) => None,
                };
                pos.san_with(mv, v, None, after.as_ref())
            }
            _ => pos.san(mv, v),
        }
    }
}
