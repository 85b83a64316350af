//! The two-board match: two positions, captures routed to the partner, the steal promotion,
//! drops of pieces that never reached the pocket, and material accounting.

use super::fen::FenError;
use super::moves::{Move, MoveList, UciMove};
use super::position::{IllegalReason, Outcome, PhysicalError, PlayOutcome, Position};
use super::types::{BoardId, Color, Piece, Role, Square};
use super::variant::{DropMate, Promotion, Variant};
use std::fmt;
use std::str::FromStr;

/// A bughouse table: board A and board B.
///
/// Routing rule used everywhere: a piece of colour `c` leaving board X (captured, or a pawn
/// removed by a promotion rule) goes to colour `c`'s pocket on the other board, i.e. to the
/// capturer's partner. Material invariant (from the start position, under any sequence of
/// `play`/`play_physical`): `material(c)` stays `[16, 4, 4, 4, 2, 2]` for both colours, because
/// pieces only move between boards and pockets and pieces that came from outside the game are
/// recorded in the `borrowed` ledger.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Table {
    boards: [Position; 2],
    /// Pieces per colour and role that entered the game from outside (drops from an empty pocket
    /// when the other board's same-colour pocket did not hold one either).
    borrowed: [[u8; 6]; 2],
    /// The part of `borrowed` that [`Table::take_back`] recorded: a captured piece taken back
    /// after the partner had dropped it. Playing the capture again repays it instead of
    /// putting a second such piece in the partner's pocket.
    recalled: [[u8; 6]; 2],
}

/// A table position string that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableFenError {
    #[error("a table position is two FENs joined by ' | '")]
    Separator,
    #[error("board {board}: {source}")]
    Board { board: BoardId, source: FenError },
}

/// A move that cannot be carried out physically on the table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    #[error(transparent)]
    Physical(#[from] PhysicalError),
    #[error("no piece of the mover's colour that could be taken stands on {0} of the other board")]
    NothingToSteal(Square),
}

impl Default for Table {
    fn default() -> Table {
        Table::new()
    }
}

impl Table {
    /// Both boards in the starting position, all pockets empty.
    pub fn new() -> Table {
        Table::from_boards(Position::new(), Position::new())
    }

    /// A table from two positions (nothing borrowed).
    pub fn from_boards(a: Position, b: Position) -> Table {
        Table {
            boards: [a, b],
            borrowed: [[0; 6]; 2],
            recalled: [[0; 6]; 2],
        }
    }

    /// Parses `"<FEN A> | <FEN B>"`.
    pub fn from_fen(text: &str) -> Result<Table, TableFenError> {
        let (a, b) = text.split_once('|').ok_or(TableFenError::Separator)?;
        if b.contains('|') {
            return Err(TableFenError::Separator);
        }
        let pa = Position::from_fen(a.trim()).map_err(|source| TableFenError::Board {
            board: BoardId::A,
            source,
        })?;
        let pb = Position::from_fen(b.trim()).map_err(|source| TableFenError::Board {
            board: BoardId::B,
            source,
        })?;
        Ok(Table::from_boards(pa, pb))
    }

    /// `"<FEN A> | <FEN B>"`.
    pub fn to_fen(&self) -> String {
        format!("{} | {}", self.boards[0].to_fen(), self.boards[1].to_fen())
    }

    /// One board.
    pub fn board(&self, id: BoardId) -> &Position {
        &self.boards[id.index()]
    }

    /// Pieces of `color` that entered the game from outside, per role index.
    pub fn borrowed(&self, color: Color) -> [u8; 6] {
        self.borrowed[color.index()]
    }

    /// Puts `piece` into `piece.color`'s pocket on `board` (the referee routes a removed piece
    /// with this). Returns false for a king or a full pocket.
    pub fn add_to_pocket(&mut self, board: BoardId, piece: Piece) -> bool {
        self.boards[board.index()]
            .pocket_mut(piece.color)
            .add(piece.role)
    }

    /// Takes the piece on `square` of `board` off the board (the rule sets' "the dropped piece is
    /// removed and counts as captured by the mated side"); the caller routes it, e.g. with
    /// `add_to_pocket`. Returns the piece as it would enter a pocket and whether it was promoted.
    /// Until routed, the piece is missing from `material`.
    pub fn remove_piece(
        &mut self,
        board: BoardId,
        square: Square,
    ) -> Result<(Piece, bool), PhysicalError> {
        self.boards[board.index()].remove_piece(square)
    }

    /// Material of `color`: pieces on both boards (promoted pieces as pawns) plus both pockets,
    /// minus borrowed pieces, indexed by role. From a start position it stays
    /// `[16, 4, 4, 4, 2, 2]`.
    pub fn material(&self, color: Color) -> [u8; 6] {
        let mut m = [0i32; 6];
        for pos in &self.boards {
            for role in Role::ALL {
                let bb = pos.pieces(color, role);
                m[role.index()] += (bb & !pos.promoted()).count() as i32;
                m[Role::Pawn.index()] += (bb & pos.promoted()).count() as i32;
                m[role.index()] += pos.pocket(color).count(role) as i32;
            }
        }
        let mut out = [0u8; 6];
        for (i, o) in out.iter_mut().enumerate() {
            *o = (m[i] - self.borrowed[color.index()][i] as i32).clamp(0, 255) as u8;
        }
        out
    }

    fn route(&mut self, board: BoardId, out: &PlayOutcome) {
        let other = board.other();
        for piece in [out.captured, out.removed].into_iter().flatten() {
            let (c, r) = (piece.color.index(), piece.role.index());
            if self.recalled[c][r] > 0 {
                self.recalled[c][r] -= 1;
                self.borrowed[c][r] -= 1;
                continue;
            }
            self.boards[other.index()]
                .pocket_mut(piece.color)
                .add(piece.role);
        }
    }

    /// Legal moves on `board`, including `Move::Steal` under `Promotion::Steal` (none if no piece
    /// may be taken from the other board).
    pub fn legal_moves(&self, board: BoardId, v: &Variant) -> MoveList {
        let pos = self.board(board);
        let mut list = pos.legal_moves(v);
        if v.promotion == Promotion::Steal {
            let candidates = self.board(board.other()).steal_candidates(pos.turn(), v);
            if candidates.nonempty() {
                let choose = Variant {
                    promotion: Promotion::Choose,
                    drop_mate: DropMate::Allowed,
                    ..*v
                };
                for m in pos.legal_moves(&choose).iter() {
                    if let Move::Normal {
                        from,
                        to,
                        promotion: Some(Role::Queen),
                        ..
                    } = *m
                    {
                        for steal in candidates {
                            list.push(Move::Steal { from, to, steal });
                        }
                    }
                }
            }
        }
        list
    }

    /// Whether `mv` is legal on `board`; steals are checked against the other board.
    pub fn classify(&self, board: BoardId, mv: Move, v: &Variant) -> Result<(), IllegalReason> {
        let pos = self.board(board);
        pos.classify(mv, v)?;
        if let Move::Steal { steal, .. } = mv
            && !self
                .board(board.other())
                .steal_candidates(pos.turn(), v)
                .contains(steal)
        {
            return Err(IllegalReason::InvalidSteal);
        }
        Ok(())
    }

    /// Plays a legal move on `board` and routes what left the board to the other board's
    /// pockets. An illegal move is refused with its reason (use `play_physical` to apply it).
    pub fn play(
        &mut self,
        board: BoardId,
        mv: Move,
        v: &Variant,
    ) -> Result<PlayOutcome, IllegalReason> {
        self.classify(board, mv, v)?;
        let out = match mv {
            Move::Steal { from, to, steal } => {
                let (piece, promoted) = self.boards[board.other().index()]
                    .remove_piece(steal)
                    .map_err(|_| IllegalReason::InvalidSteal)?;
                self.boards[board.index()].play_steal_push(from, to, piece, promoted, v)
            }
            _ => self.boards[board.index()].play(mv, v),
        };
        self.route(board, &out);
        Ok(out)
    }

    /// Applies a physically possible move, legal or not, and routes captures. A drop from an
    /// empty pocket takes the piece from the same colour's pocket on the other board if it holds
    /// one (the only other place such a piece can be; in the rule texts' words, the partner had
    /// not handed it over yet), else records it as borrowed. A steal takes any non-king piece of
    /// the mover's colour from `steal` on the other board.
    pub fn play_physical(
        &mut self,
        board: BoardId,
        mv: Move,
        v: &Variant,
    ) -> Result<PlayOutcome, TableError> {
        let (bi, oi) = (board.index(), board.other().index());
        let mover = self.boards[bi].turn();
        match mv {
            Move::Drop { role, to } => {
                if role == Role::King {
                    return Err(PhysicalError::KingPlacement.into());
                }
                if self.boards[bi].occupied().contains(to) {
                    return Err(PhysicalError::Occupied(to).into());
                }
                if self.boards[bi].pocket(mover).count(role) == 0 {
                    if self.boards[oi].pocket_mut(mover).remove(role) {
                        self.boards[bi].pocket_mut(mover).add(role);
                    } else if self.boards[bi].pocket_mut(mover).add(role) {
                        self.borrowed[mover.index()][role.index()] += 1;
                    }
                }
                let out = self.boards[bi].play_physical(mv, v)?;
                self.route(board, &out);
                Ok(out)
            }
            Move::Steal { from, to, steal } => {
                let last = match mover {
                    Color::White => 7,
                    Color::Black => 0,
                };
                if to.rank() != last {
                    return Err(PhysicalError::NotPossible(
                        "a steal needs the pawn on the last rank",
                    )
                    .into());
                }
                self.boards[bi].check_physical(Move::Normal {
                    role: Role::Pawn,
                    from,
                    to,
                    capture: None,
                    promotion: None,
                })?;
                let ok = self.boards[oi]
                    .piece_at(steal)
                    .is_some_and(|p| p.color == mover && p.role != Role::King);
                if !ok {
                    return Err(TableError::NothingToSteal(steal));
                }
                let (piece, promoted) = self.boards[oi].remove_piece(steal)?;
                let out = self.boards[bi].play_steal_push(from, to, piece, promoted, v);
                self.route(board, &out);
                Ok(out)
            }
            _ => {
                let out = self.boards[bi].play_physical(mv, v)?;
                self.route(board, &out);
                Ok(out)
            }
        }
    }

    /// Takes back an illegal move `mv` on `board` that produced `out` (FIDE 7.5.1: the position
    /// before it is restored and the same player moves again). `before` is that board as it was.
    /// What happened on the other board since stays; this board keeps its current pockets, plus a
    /// dropped piece back in the mover's hand. A piece the move sent to the other board comes
    /// back from that pocket if it is still there; if the partner has dropped it meanwhile, the
    /// restored piece is recorded as borrowed so that material stays accounted for, and the next
    /// capture of such a piece repays it (a misread capture retracted and played again, or
    /// replaced by the same capture, leaves the partner's pocket as it was).
    pub fn take_back(&mut self, board: BoardId, before: &Position, mv: Move, out: &PlayOutcome) {
        let (bi, oi) = (board.index(), board.other().index());
        let mover = before.turn();
        let mut restored = before.clone();
        for c in Color::ALL {
            *restored.pocket_mut(c) = *self.boards[bi].pocket(c);
        }
        if let Move::Drop { role, .. } = mv {
            restored.pocket_mut(mover).add(role);
        }
        for piece in [out.captured, out.removed].into_iter().flatten() {
            if !self.boards[oi].pocket_mut(piece.color).remove(piece.role) {
                self.borrowed[piece.color.index()][piece.role.index()] += 1;
                self.recalled[piece.color.index()][piece.role.index()] += 1;
            }
        }
        if let Move::Steal { to, steal, .. } = mv
            && let Some(piece) = self.boards[bi].piece_at(to)
        {
            // The stolen piece goes back where it stood; if that square is taken by now, to its
            // owner's pocket on that board.
            let promoted = self.boards[bi].promoted().contains(to);
            if self.boards[oi].put_piece(steal, piece, promoted).is_err() {
                self.boards[oi].pocket_mut(piece.color).add(piece.role);
            }
        }
        self.boards[bi] = restored;
    }

    /// Checkmate on `board` (steal promotions count as defences under `Promotion::Steal`).
    pub fn is_checkmate(&self, board: BoardId, v: &Variant) -> bool {
        let pos = self.board(board);
        if !pos.is_checkmate(v) {
            return false;
        }
        v.promotion != Promotion::Steal || self.legal_moves(board, v).is_empty()
    }

    /// Stalemate on `board` (no legal move, steals included, and not in check).
    pub fn is_stalemate(&self, board: BoardId, v: &Variant) -> bool {
        !self.board(board).is_check() && self.legal_moves(board, v).is_empty()
    }

    /// Checkmate or stalemate on `board`, steals counted as defences.
    pub fn outcome(&self, board: BoardId, v: &Variant) -> Option<Outcome> {
        let pos = self.board(board);
        if self.is_checkmate(board, v) {
            Some(Outcome::Checkmate {
                winner: pos.turn().other(),
            })
        } else if self.is_stalemate(board, v) {
            Some(Outcome::Stalemate)
        } else {
            None
        }
    }

    /// Relates a raw UCI move to `board`.
    pub fn uci_to_move(&self, board: BoardId, uci: UciMove) -> Result<Move, IllegalReason> {
        self.board(board).uci_to_move(uci)
    }
}

impl FromStr for Table {
    type Err = TableFenError;
    fn from_str(s: &str) -> Result<Table, TableFenError> {
        Table::from_fen(s)
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_fen())
    }
}
