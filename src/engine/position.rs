//! One board: piece placement, side to move, rights, pockets; legal move generation, legality
//! classification of arbitrary (physical) moves, and move application.

use super::attacks::{Tables, tables};
use super::moves::{Move, MoveList, UciMove, castle_king_target, castle_rook_target};
use super::types::{Bitboard, Color, Piece, Pocket, Role, Square};
use super::variant::{DropMate, MateRule, Promotion, Variant};

/// One chess board of a table with both players' pockets for this board.
///
/// Invariants kept by every constructor and mutator: exactly one king per colour; the bitboards
/// are disjoint per colour and per role; `promoted` and `dropped_pawns` only mark occupied
/// squares; castling rights only name corner squares holding a rook of that colour next to a king
/// on its start square (filtered when parsing).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Position {
    pub(super) by_color: [Bitboard; 2],
    pub(super) by_role: [Bitboard; 6],
    pub(super) turn: Color,
    /// Rook start squares whose castling right is still alive.
    pub(super) castling: Bitboard,
    pub(super) ep_square: Option<Square>,
    pub(super) pockets: [Pocket; 2],
    pub(super) promoted: Bitboard,
    pub(super) dropped_pawns: Bitboard,
    pub(super) king_moved: [bool; 2],
    pub(super) halfmoves: u32,
    pub(super) fullmoves: u32,
}

/// What a move took off this board, for the caller to route into a pocket.
///
/// Every piece here of colour `c` goes, in bughouse, to colour `c`'s pocket on the other board; in
/// crazyhouse a `captured` piece goes to the mover's own pocket with its colour flipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PlayOutcome {
    /// The captured piece as it should enter a pocket (a promoted piece already demoted to a pawn
    /// when `variant.promoted_reverts`).
    pub captured: Option<Piece>,
    /// The mover's own pawn leaving the board by promotion rules: `Promotion::PawnCaptured`
    /// (text 002 7.5) or the pawn handed over in a steal (text 004 §6).
    pub removed: Option<Piece>,
}

/// How a game on one board ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    Checkmate { winner: Color },
    Stalemate,
}

/// Why a move is not legal. Each variant has a one-line human text (`Display`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum IllegalReason {
    #[error("there is no piece on the origin square")]
    NoPieceOnSquare,
    #[error("the piece on the origin square is not the one named")]
    WrongPiece,
    #[error("that piece belongs to the player not on move")]
    WrongColour,
    #[error("the piece cannot move that way")]
    CannotMoveThatWay,
    #[error("the path is blocked by another piece")]
    PathBlocked,
    #[error("the target square holds a piece of the mover's own colour")]
    OwnPieceOnTarget,
    #[error("the move leaves or puts the mover's king in check")]
    LeavesKingInCheck,
    #[error("castling is not allowed (right lost, or out of, through or into check)")]
    CastlingNotAllowed,
    #[error("pawns may not be dropped on that rank")]
    PawnDropOnBackRank,
    #[error("pieces may only be dropped on empty squares")]
    DropOnOccupiedSquare,
    #[error("the pocket holds no such piece")]
    DropFromEmptyPocket,
    #[error("a drop may not give checkmate under these rules")]
    DropMate,
    #[error("a pawn reaching the last rank must promote")]
    PromotionRequired,
    #[error("that promotion is not allowed here")]
    InvalidPromotion,
    #[error("kings cannot be captured")]
    CapturesKing,
    #[error("the piece to be stolen may not be taken from the other board")]
    InvalidSteal,
}

/// Why a move cannot even be carried out physically on the board.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PhysicalError {
    #[error("no piece of the player on move on {0}")]
    NoMoversPiece(Square),
    #[error("the piece on {0} is not the one named in the move")]
    WrongPiece(Square),
    #[error("origin and target are the same square {0}")]
    SameSquare(Square),
    #[error("{0} holds a piece of the mover's own colour")]
    OwnPieceOnTarget(Square),
    #[error("{0} is occupied")]
    Occupied(Square),
    #[error("{0} is empty")]
    EmptySquare(Square),
    #[error("the king on {0} cannot be taken off the board")]
    KingCapture(Square),
    #[error("the pocket holds no {0:?}")]
    EmptyPocket(Role),
    #[error("a king cannot be dropped, promoted to, or put on the board")]
    KingPlacement,
    #[error("this move needs the other board (steal promotion)")]
    NeedsTable,
    #[error("the move is not physically possible: {0}")]
    NotPossible(&'static str),
}

/// Where the move generator puts moves: a list, or just a count (bulk counting in perft).
pub(crate) trait Sink {
    const COUNT: bool;
    fn push(&mut self, m: Move);
    fn add(&mut self, n: u32);
}

struct ListSink<'a>(&'a mut MoveList);
impl Sink for ListSink<'_> {
    const COUNT: bool = false;
    #[inline]
    fn push(&mut self, m: Move) {
        self.0.push(m)
    }
    #[inline]
    fn add(&mut self, _n: u32) {}
}

struct CountSink(u64);
impl Sink for CountSink {
    const COUNT: bool = true;
    #[inline]
    fn push(&mut self, _m: Move) {
        self.0 += 1;
    }
    #[inline]
    fn add(&mut self, n: u32) {
        self.0 += n as u64;
    }
}

const PROMOTION_ROLES: [Role; 4] = [Role::Queen, Role::Rook, Role::Bishop, Role::Knight];

#[inline]
fn last_rank(c: Color) -> u8 {
    match c {
        Color::White => 7,
        Color::Black => 0,
    }
}

#[inline]
fn pawn_start_rank(c: Color) -> u8 {
    match c {
        Color::White => 1,
        Color::Black => 6,
    }
}

#[inline]
fn forward(c: Color) -> i8 {
    match c {
        Color::White => 8,
        Color::Black => -8,
    }
}

fn king_start(c: Color) -> Square {
    match c {
        Color::White => Square::E1,
        Color::Black => Square::E8,
    }
}

fn pawn_drop_mask(v: &Variant) -> Bitboard {
    let (lo, hi) = v.pawn_drop_ranks;
    let mut m = Bitboard::EMPTY;
    for r in lo.max(1)..=hi.min(8) {
        m |= Bitboard::rank(r - 1);
    }
    m
}

impl Default for Position {
    fn default() -> Position {
        Position::new()
    }
}

impl Position {
    /// The standard starting position with empty pockets.
    pub fn new() -> Position {
        let back = [
            Role::Rook,
            Role::Knight,
            Role::Bishop,
            Role::Queen,
            Role::King,
            Role::Bishop,
            Role::Knight,
            Role::Rook,
        ];
        let mut p = Position::empty();
        for (file, &role) in back.iter().enumerate() {
            let f = file as u8;
            for (color, rank, prank) in [(Color::White, 0, 1), (Color::Black, 7, 6)] {
                if let (Some(sq), Some(psq)) =
                    (Square::from_coords(f, rank), Square::from_coords(f, prank))
                {
                    p.place(sq, Piece { color, role });
                    p.place(
                        psq,
                        Piece {
                            color,
                            role: Role::Pawn,
                        },
                    );
                }
            }
        }
        p.castling = Square::A1.bb() | Square::H1.bb() | Square::A8.bb() | Square::H8.bb();
        p
    }

    /// A board with nothing on it (not a valid position until kings are placed; crate-internal).
    pub(super) fn empty() -> Position {
        Position {
            by_color: [Bitboard::EMPTY; 2],
            by_role: [Bitboard::EMPTY; 6],
            turn: Color::White,
            castling: Bitboard::EMPTY,
            ep_square: None,
            pockets: [Pocket::EMPTY; 2],
            promoted: Bitboard::EMPTY,
            dropped_pawns: Bitboard::EMPTY,
            king_moved: [false; 2],
            halfmoves: 0,
            fullmoves: 1,
        }
    }

    // ----- accessors -------------------------------------------------------------------------

    /// The side to move.
    pub fn turn(&self) -> Color {
        self.turn
    }
    /// All occupied squares.
    #[inline]
    pub fn occupied(&self) -> Bitboard {
        self.by_color[0] | self.by_color[1]
    }
    /// Squares holding pieces of `c`.
    #[inline]
    pub fn by_color(&self, c: Color) -> Bitboard {
        self.by_color[c.index()]
    }
    /// Squares holding pieces of `role` (both colours).
    #[inline]
    pub fn by_role(&self, r: Role) -> Bitboard {
        self.by_role[r.index()]
    }
    /// Squares holding `c`'s pieces of `role`.
    #[inline]
    pub fn pieces(&self, c: Color, r: Role) -> Bitboard {
        self.by_color[c.index()] & self.by_role[r.index()]
    }
    /// Squares holding promoted pieces (captured as pawns when `promoted_reverts`).
    pub fn promoted(&self) -> Bitboard {
        self.promoted
    }
    /// Squares holding pawns that were dropped (for `dropped_pawn_double_step`).
    pub fn dropped_pawns(&self) -> Bitboard {
        self.dropped_pawns
    }
    /// Rook start squares with a live castling right.
    pub fn castling_rights(&self) -> Bitboard {
        self.castling
    }
    /// The en-passant target square, if the last move was a double step.
    pub fn ep_square(&self) -> Option<Square> {
        self.ep_square
    }
    /// The pocket of `c` on this board.
    pub fn pocket(&self, c: Color) -> &Pocket {
        &self.pockets[c.index()]
    }
    /// Mutable pocket of `c` (the table routes captures into it).
    pub fn pocket_mut(&mut self, c: Color) -> &mut Pocket {
        &mut self.pockets[c.index()]
    }
    /// Whether `c`'s king has ever moved (castling with a dropped rook needs it unmoved).
    pub fn king_moved(&self, c: Color) -> bool {
        self.king_moved[c.index()]
    }
    /// Halfmoves since the last capture or pawn move.
    pub fn halfmoves(&self) -> u32 {
        self.halfmoves
    }
    /// Fullmove number, starting at 1 and incremented after Black's move.
    pub fn fullmoves(&self) -> u32 {
        self.fullmoves
    }

    /// The role on `sq`, if any.
    #[inline]
    pub fn role_at(&self, sq: Square) -> Option<Role> {
        if !self.occupied().contains(sq) {
            return None;
        }
        Role::ALL
            .into_iter()
            .find(|r| self.by_role[r.index()].contains(sq))
    }

    /// The piece on `sq`, if any.
    pub fn piece_at(&self, sq: Square) -> Option<Piece> {
        let role = self.role_at(sq)?;
        let color = if self.by_color[0].contains(sq) {
            Color::White
        } else {
            Color::Black
        };
        Some(Piece { color, role })
    }

    /// The king square of `c` (always present by invariant; `None` only on a crate-internal
    /// empty board under construction).
    #[inline]
    pub fn king_of(&self, c: Color) -> Option<Square> {
        self.pieces(c, Role::King).first()
    }

    // ----- attacks ---------------------------------------------------------------------------

    /// Pieces of `attacker` that attack `sq` given occupancy `occ`.
    #[inline]
    pub fn attackers_to(&self, sq: Square, attacker: Color, occ: Bitboard) -> Bitboard {
        self.attackers_with(tables(), sq, attacker, occ)
    }

    #[inline]
    fn attackers_with(&self, t: &Tables, sq: Square, attacker: Color, occ: Bitboard) -> Bitboard {
        let rq = self.by_role[Role::Rook.index()] | self.by_role[Role::Queen.index()];
        let bq = self.by_role[Role::Bishop.index()] | self.by_role[Role::Queen.index()];
        ((t.pawn(attacker.other(), sq) & self.by_role[0])
            | (t.knight(sq) & self.by_role[1])
            | (t.king(sq) & self.by_role[5])
            | (t.rook(sq, occ) & rq)
            | (t.bishop(sq, occ) & bq))
            & self.by_color[attacker.index()]
    }

    /// Squares a piece of `piece` standing on `sq` attacks with occupancy `occ`.
    pub fn attacks_from(&self, piece: Piece, sq: Square, occ: Bitboard) -> Bitboard {
        let t = tables();
        match piece.role {
            Role::Pawn => t.pawn(piece.color, sq),
            Role::Knight => t.knight(sq),
            Role::Bishop => t.bishop(sq, occ),
            Role::Rook => t.rook(sq, occ),
            Role::Queen => t.queen(sq, occ),
            Role::King => t.king(sq),
        }
    }

    /// Pieces giving check to the side to move.
    pub fn checkers(&self) -> Bitboard {
        match self.king_of(self.turn) {
            Some(k) => self.attackers_to(k, self.turn.other(), self.occupied()),
            None => Bitboard::EMPTY,
        }
    }

    /// Whether the side to move is in check.
    pub fn is_check(&self) -> bool {
        self.checkers().nonempty()
    }

    /// Whether `c`'s king is attacked (also for the side not on move, after an illegal move).
    pub fn is_king_attacked(&self, c: Color) -> bool {
        match self.king_of(c) {
            Some(k) => self.attackers_to(k, c.other(), self.occupied()).nonempty(),
            None => false,
        }
    }

    // ----- move generation -------------------------------------------------------------------

    /// All legal moves of the side to move under `v` (no steals: those need the table).
    pub fn legal_moves(&self, v: &Variant) -> MoveList {
        let mut list = MoveList::new();
        self.legal_moves_into(v, &mut list);
        list
    }

    /// Like `legal_moves`, filling a caller-provided list (cleared first).
    pub fn legal_moves_into(&self, v: &Variant, list: &mut MoveList) {
        list.clear();
        self.generate(v, &mut ListSink(list));
    }

    /// Number of legal moves (bulk counted: drops and piece moves are popcounts).
    pub fn count_legal(&self, v: &Variant) -> u64 {
        let mut s = CountSink(0);
        self.generate(v, &mut s);
        s.0
    }

    #[inline]
    fn push_targets<S: Sink>(&self, sink: &mut S, role: Role, from: Square, targets: Bitboard) {
        if S::COUNT {
            sink.add(targets.count());
        } else {
            for to in targets {
                sink.push(Move::Normal {
                    role,
                    from,
                    to,
                    capture: self.role_at(to),
                    promotion: None,
                });
            }
        }
    }

    fn generate<S: Sink>(&self, v: &Variant, sink: &mut S) {
        let t = tables();
        let us = self.turn;
        let them = us.other();
        let ours = self.by_color(us);
        let theirs = self.by_color(them);
        let occ = ours | theirs;
        let their_king = self.pieces(them, Role::King);
        let king = self.king_of(us);
        let checkers = match king {
            Some(k) => self.attackers_with(t, k, them, occ),
            None => Bitboard::EMPTY,
        };

        if let Some(k) = king {
            let occ_wo_king = occ ^ k.bb();
            let targets = t.king(k) & !ours & !their_king;
            for to in targets {
                if self.attackers_with(t, to, them, occ_wo_king).is_empty() {
                    if S::COUNT {
                        sink.add(1);
                    } else {
                        sink.push(Move::Normal {
                            role: Role::King,
                            from: k,
                            to,
                            capture: self.role_at(to),
                            promotion: None,
                        });
                    }
                }
            }
        }
        if checkers.more_than_one() {
            return;
        }
        let (target_mask, drop_mask) = match (king, checkers.first()) {
            (Some(k), Some(c)) => (t.between(k, c) | c.bb(), t.between(k, c)),
            _ => (Bitboard::FULL, !occ),
        };
        let pinned = match king {
            Some(k) => self.pinned(t, k, us),
            None => Bitboard::EMPTY,
        };
        let pin_line = |from: Square| -> Bitboard {
            match king {
                Some(k) if pinned.contains(from) => t.line(k, from),
                _ => Bitboard::FULL,
            }
        };
        let movable = !ours & !their_king & target_mask;

        for from in self.pieces(us, Role::Knight) & !pinned {
            self.push_targets(sink, Role::Knight, from, t.knight(from) & movable);
        }
        for from in self.pieces(us, Role::Bishop) {
            self.push_targets(
                sink,
                Role::Bishop,
                from,
                t.bishop(from, occ) & movable & pin_line(from),
            );
        }
        for from in self.pieces(us, Role::Rook) {
            self.push_targets(
                sink,
                Role::Rook,
                from,
                t.rook(from, occ) & movable & pin_line(from),
            );
        }
        for from in self.pieces(us, Role::Queen) {
            self.push_targets(
                sink,
                Role::Queen,
                from,
                t.queen(from, occ) & movable & pin_line(from),
            );
        }

        // Pawns.
        let fwd = forward(us);
        let last = last_rank(us);
        for from in self.pieces(us, Role::Pawn) {
            let line = pin_line(from);
            let mut targets = Bitboard::EMPTY;
            if let Some(one) = from.offset(fwd)
                && !occ.contains(one)
            {
                targets.add(one);
                if from.rank() == pawn_start_rank(us)
                    && (v.dropped_pawn_double_step || !self.dropped_pawns.contains(from))
                    && let Some(two) = one.offset(fwd)
                    && !occ.contains(two)
                {
                    targets.add(two);
                }
            }
            targets |= t.pawn(us, from) & theirs & !their_king;
            targets &= target_mask & line;
            let promo = targets & Bitboard::rank(last);
            let plain = targets & !promo;
            self.push_targets(sink, Role::Pawn, from, plain);
            for to in promo {
                match v.promotion {
                    Promotion::Choose => {
                        if S::COUNT {
                            sink.add(4);
                        } else {
                            for role in PROMOTION_ROLES {
                                sink.push(Move::Normal {
                                    role: Role::Pawn,
                                    from,
                                    to,
                                    capture: self.role_at(to),
                                    promotion: Some(role),
                                });
                            }
                        }
                    }
                    Promotion::PawnCaptured => {
                        // The pawn vanishes, so blocking/pin reasoning does not apply: test fully.
                        let m = Move::Normal {
                            role: Role::Pawn,
                            from,
                            to,
                            capture: self.role_at(to),
                            promotion: None,
                        };
                        if self.king_safe_after(m, v) {
                            sink.push(m);
                        }
                    }
                    Promotion::Steal => {}
                }
            }
        }

        // En passant: rare, so tested by playing it out.
        if let Some(ep) = self.ep_square
            && !occ.contains(ep)
        {
            for from in t.pawn(them, ep) & self.pieces(us, Role::Pawn) {
                let m = Move::EnPassant { from, to: ep };
                if self.ep_capture_square(from, ep).is_some() && self.king_safe_after(m, v) {
                    sink.push(m);
                }
            }
        }

        // Castling.
        if checkers.is_empty()
            && let Some(k) = king
            && k == king_start(us)
        {
            for rook in self.castling & Bitboard::rank(us.back_rank()) & self.pieces(us, Role::Rook)
            {
                let kt = castle_king_target(k, rook);
                let rt = castle_rook_target(k, rook);
                let path = t.between(k, rook) | kt.bb() | rt.bb();
                if (path & occ & !k.bb() & !rook.bb()).nonempty() {
                    continue;
                }
                let king_path = t.between(k, kt) | kt.bb();
                if king_path
                    .into_iter()
                    .all(|sq| self.attackers_with(t, sq, them, occ).is_empty())
                {
                    sink.push(Move::Castle { king: k, rook });
                }
            }
        }

        // Drops.
        let pocket = self.pockets[us.index()];
        if !pocket.is_empty() {
            let base = drop_mask & !occ;
            for role in pocket.roles() {
                let mut targets = if role == Role::Pawn {
                    base & pawn_drop_mask(v)
                } else {
                    base
                };
                if v.drop_mate == DropMate::Forbidden
                    && let Some(tk) = their_king.first()
                {
                    // Only a checking drop can mate, unless the opponent already stands in check
                    // (after an unclaimed illegal move): then every drop is examined.
                    let checking = if self.attackers_with(t, tk, us, occ).nonempty() {
                        targets
                    } else {
                        self.attacks_from(Piece { color: them, role }, tk, occ) & targets
                    };
                    for to in checking {
                        if self.drop_mates(role, to, v) {
                            targets.remove(to);
                        }
                    }
                }
                if S::COUNT {
                    sink.add(targets.count());
                } else {
                    for to in targets {
                        sink.push(Move::Drop { role, to });
                    }
                }
            }
        }
    }

    /// Our pieces pinned to our king `k`.
    fn pinned(&self, t: &Tables, k: Square, us: Color) -> Bitboard {
        let them = us.other();
        let occ = self.occupied();
        let snipers = ((t.rook(k, Bitboard::EMPTY)
            & (self.pieces(them, Role::Rook) | self.pieces(them, Role::Queen)))
            | (t.bishop(k, Bitboard::EMPTY)
                & (self.pieces(them, Role::Bishop) | self.pieces(them, Role::Queen))))
            & self.by_color(them);
        let mut pinned = Bitboard::EMPTY;
        for s in snipers {
            let b = t.between(k, s) & occ;
            if !b.more_than_one() {
                pinned |= b & self.by_color(us);
            }
        }
        pinned
    }

    /// The square of the pawn captured en passant by `from` → `ep`, if that capture is possible.
    fn ep_capture_square(&self, from: Square, ep: Square) -> Option<Square> {
        let us = self.turn;
        let cap = Square::from_coords(ep.file(), from.rank())?;
        let ok = self.ep_square == Some(ep)
            && !self.occupied().contains(ep)
            && self.pieces(us.other(), Role::Pawn).contains(cap)
            && self.pieces(us, Role::Pawn).contains(from)
            && tables().pawn(us, from).contains(ep);
        ok.then_some(cap)
    }

    /// Whether the mover's king is not attacked after playing `m` (played on a copy).
    fn king_safe_after(&self, m: Move, v: &Variant) -> bool {
        let us = self.turn;
        let mut p = self.clone();
        p.apply(m, v);
        !p.is_king_attacked(us)
    }

    /// Whether dropping `role` on `to` checkmates (judged by `v.drop_mate_rule`; inside this test
    /// further drop-mates of the defender count as legal, which bounds the recursion).
    fn drop_mates(&self, role: Role, to: Square, v: &Variant) -> bool {
        let mut p = self.clone();
        p.apply(Move::Drop { role, to }, v);
        let inner = Variant {
            drop_mate: DropMate::Allowed,
            mate: v.drop_mate_rule,
            ..*v
        };
        p.is_checkmate(&inner)
    }

    /// Checkmate of the side to move under `v.mate`.
    pub fn is_checkmate(&self, v: &Variant) -> bool {
        let checkers = self.checkers();
        if checkers.is_empty() {
            return false;
        }
        if v.mate == MateRule::DropInterposable && self.drop_could_interpose(checkers) {
            return false;
        }
        self.count_legal(v) == 0
    }

    /// A single slider check with at least one empty square between checker and king.
    fn drop_could_interpose(&self, checkers: Bitboard) -> bool {
        let (Some(c), Some(k)) = (checkers.single(), self.king_of(self.turn)) else {
            return false;
        };
        matches!(
            self.role_at(c),
            Some(Role::Bishop | Role::Rook | Role::Queen)
        ) && tables().between(k, c).nonempty()
    }

    /// No legal move and not in check.
    pub fn is_stalemate(&self, v: &Variant) -> bool {
        !self.is_check() && self.count_legal(v) == 0
    }

    /// Checkmate or stalemate, if the game on this board is over by position.
    pub fn outcome(&self, v: &Variant) -> Option<Outcome> {
        if self.is_checkmate(v) {
            Some(Outcome::Checkmate {
                winner: self.turn.other(),
            })
        } else if self.is_stalemate(v) {
            Some(Outcome::Stalemate)
        } else {
            None
        }
    }

    // ----- UCI ---------------------------------------------------------------------------------

    /// Relates a raw UCI move to this position (role, capture, castling, en passant).
    /// `e1g1`/`e1c1` (and king-takes-own-rook `e1h1`) with king and rook on their start squares
    /// become `Castle`; a pawn moving diagonally onto the en-passant square becomes `EnPassant`.
    pub fn uci_to_move(&self, uci: UciMove) -> Result<Move, IllegalReason> {
        match uci {
            UciMove::Drop { role, to } => Ok(Move::Drop { role, to }),
            UciMove::Steal { from, to, steal } => Ok(Move::Steal { from, to, steal }),
            UciMove::Normal {
                from,
                to,
                promotion,
            } => {
                let piece = self.piece_at(from).ok_or(IllegalReason::NoPieceOnSquare)?;
                if piece.role == Role::King
                    && from == king_start(piece.color)
                    && to.rank() == from.rank()
                {
                    let own_rook = |sq: Square| self.pieces(piece.color, Role::Rook).contains(sq);
                    let rank = from.rank();
                    let corner = |file| Square::from_coords(file, rank);
                    let rook = match to.file() {
                        6 | 7 => corner(7),
                        0 | 2 => corner(0),
                        _ => None,
                    };
                    if let Some(rook) = rook
                        && own_rook(rook)
                        && (to.file() == 6 || to.file() == 2 || to == rook)
                    {
                        return Ok(Move::Castle { king: from, rook });
                    }
                }
                if piece.role == Role::Pawn
                    && Some(to) == self.ep_square
                    && from.file() != to.file()
                    && !self.occupied().contains(to)
                {
                    return Ok(Move::EnPassant { from, to });
                }
                Ok(Move::Normal {
                    role: piece.role,
                    from,
                    to,
                    capture: self.role_at(to),
                    promotion,
                })
            }
        }
    }

    /// Parses UCI text and relates it to this position (syntax errors and an empty origin
    /// square are told apart by `UciParseError`).
    pub fn parse_uci(&self, text: &str) -> Result<Move, UciParseError> {
        let uci: UciMove = text.parse()?;
        Ok(self.uci_to_move(uci)?)
    }

    // ----- legality of arbitrary moves ---------------------------------------------------------

    /// Whether `mv` is legal here, and if not, the first reason found (checked in the order a
    /// referee would: piece, colour, geometry, path, target, promotion, king safety, drop rules).
    /// For `Move::Steal` only the pawn's part is checked; `Table::classify` checks the steal.
    /// The `capture` field of `Move::Normal` is ignored (the board decides).
    pub fn classify(&self, mv: Move, v: &Variant) -> Result<(), IllegalReason> {
        use IllegalReason as R;
        let t = tables();
        let us = self.turn;
        let them = us.other();
        let occ = self.occupied();
        let own = |sq: Square| self.by_color(us).contains(sq);
        match mv {
            Move::Drop { role, to } => {
                if role == Role::King || self.pockets[us.index()].count(role) == 0 {
                    return Err(R::DropFromEmptyPocket);
                }
                if occ.contains(to) {
                    return Err(R::DropOnOccupiedSquare);
                }
                if role == Role::Pawn && !pawn_drop_mask(v).contains(to) {
                    return Err(R::PawnDropOnBackRank);
                }
                if !self.king_safe_after(mv, v) {
                    return Err(R::LeavesKingInCheck);
                }
                if v.drop_mate == DropMate::Forbidden && self.drop_mates(role, to, v) {
                    return Err(R::DropMate);
                }
                Ok(())
            }
            Move::Normal {
                role,
                from,
                to,
                promotion,
                ..
            } => {
                let piece = self.piece_at(from).ok_or(R::NoPieceOnSquare)?;
                if piece.color != us {
                    return Err(R::WrongColour);
                }
                if piece.role != role {
                    return Err(R::WrongPiece);
                }
                if from == to {
                    return Err(R::CannotMoveThatWay);
                }
                self.check_geometry(t, role, from, to, v)?;
                if own(to) {
                    return Err(R::OwnPieceOnTarget);
                }
                if self.pieces(them, Role::King).contains(to) {
                    return Err(R::CapturesKing);
                }
                let reaches_last = role == Role::Pawn && to.rank() == last_rank(us);
                match (reaches_last, v.promotion, promotion) {
                    (false, _, Some(_)) => return Err(R::InvalidPromotion),
                    (true, Promotion::Choose, None) | (true, Promotion::Steal, _) => {
                        return Err(R::PromotionRequired);
                    }
                    (true, Promotion::Choose, Some(Role::Pawn | Role::King)) => {
                        return Err(R::InvalidPromotion);
                    }
                    (true, Promotion::PawnCaptured, Some(_)) => return Err(R::InvalidPromotion),
                    _ => {}
                }
                if !self.king_safe_after(mv, v) {
                    return Err(R::LeavesKingInCheck);
                }
                Ok(())
            }
            Move::EnPassant { from, to } => {
                let piece = self.piece_at(from).ok_or(R::NoPieceOnSquare)?;
                if piece.color != us {
                    return Err(R::WrongColour);
                }
                if piece.role != Role::Pawn {
                    return Err(R::WrongPiece);
                }
                if self.ep_capture_square(from, to).is_none() {
                    return Err(R::CannotMoveThatWay);
                }
                if !self.king_safe_after(mv, v) {
                    return Err(R::LeavesKingInCheck);
                }
                Ok(())
            }
            Move::Castle { king, rook } => {
                let piece = self.piece_at(king).ok_or(R::NoPieceOnSquare)?;
                if piece.color != us {
                    return Err(R::WrongColour);
                }
                if piece.role != Role::King
                    || self.piece_at(rook)
                        != Some(Piece {
                            color: us,
                            role: Role::Rook,
                        })
                {
                    return Err(R::WrongPiece);
                }
                if king != king_start(us)
                    || rook.rank() != king.rank()
                    || !self.castling.contains(rook)
                {
                    return Err(R::CastlingNotAllowed);
                }
                let kt = castle_king_target(king, rook);
                let rt = castle_rook_target(king, rook);
                let path = t.between(king, rook) | kt.bb() | rt.bb();
                if (path & occ & !king.bb() & !rook.bb()).nonempty() {
                    return Err(R::PathBlocked);
                }
                let king_path = king.bb() | t.between(king, kt) | kt.bb();
                if king_path
                    .into_iter()
                    .any(|sq| self.attackers_with(t, sq, them, occ).nonempty())
                {
                    return Err(R::CastlingNotAllowed);
                }
                Ok(())
            }
            Move::Steal { from, to, .. } => {
                let piece = self.piece_at(from).ok_or(R::NoPieceOnSquare)?;
                if piece.color != us {
                    return Err(R::WrongColour);
                }
                if piece.role != Role::Pawn {
                    return Err(R::WrongPiece);
                }
                self.check_geometry(t, Role::Pawn, from, to, v)?;
                if own(to) {
                    return Err(R::OwnPieceOnTarget);
                }
                if self.pieces(them, Role::King).contains(to) {
                    return Err(R::CapturesKing);
                }
                if v.promotion != Promotion::Steal || to.rank() != last_rank(us) {
                    return Err(R::InvalidPromotion);
                }
                // Occupancy after a steal equals that after a promotion.
                let as_promotion = Move::Normal {
                    role: Role::Pawn,
                    from,
                    to,
                    capture: self.role_at(to),
                    promotion: Some(Role::Queen),
                };
                let choose = Variant {
                    promotion: Promotion::Choose,
                    ..*v
                };
                if !self.king_safe_after(as_promotion, &choose) {
                    return Err(R::LeavesKingInCheck);
                }
                Ok(())
            }
        }
    }

    /// Movement rules of `role` from `from` to `to` on this board, ignoring what stands on `to`
    /// except for pawns (which move straight only onto empty squares and diagonally only to capture).
    fn check_geometry(
        &self,
        t: &Tables,
        role: Role,
        from: Square,
        to: Square,
        v: &Variant,
    ) -> Result<(), IllegalReason> {
        use IllegalReason as R;
        let us = self.turn;
        let occ = self.occupied();
        match role {
            Role::Knight => t
                .knight(from)
                .contains(to)
                .then_some(())
                .ok_or(R::CannotMoveThatWay),
            Role::King => t
                .king(from)
                .contains(to)
                .then_some(())
                .ok_or(R::CannotMoveThatWay),
            Role::Bishop | Role::Rook | Role::Queen => {
                let empty = match role {
                    Role::Bishop => t.bishop(from, Bitboard::EMPTY),
                    Role::Rook => t.rook(from, Bitboard::EMPTY),
                    _ => t.queen(from, Bitboard::EMPTY),
                };
                if !empty.contains(to) {
                    Err(R::CannotMoveThatWay)
                } else if (t.between(from, to) & occ).nonempty() {
                    Err(R::PathBlocked)
                } else {
                    Ok(())
                }
            }
            Role::Pawn => {
                let fwd = forward(us);
                if from.offset(fwd) == Some(to) {
                    return if occ.contains(to) {
                        Err(R::PathBlocked)
                    } else {
                        Ok(())
                    };
                }
                if from.offset(2 * fwd) == Some(to) && from.rank() == pawn_start_rank(us) {
                    if !v.dropped_pawn_double_step && self.dropped_pawns.contains(from) {
                        return Err(R::CannotMoveThatWay);
                    }
                    let one = from.offset(fwd).unwrap_or(to);
                    return if occ.contains(one) || occ.contains(to) {
                        Err(R::PathBlocked)
                    } else {
                        Ok(())
                    };
                }
                if t.pawn(us, from).contains(to) {
                    return if occ.contains(to) {
                        Ok(())
                    } else {
                        Err(R::CannotMoveThatWay)
                    };
                }
                Err(R::CannotMoveThatWay)
            }
        }
    }

    // ----- applying moves ----------------------------------------------------------------------

    /// Applies a LEGAL move (as from `legal_moves`, or accepted by `classify`) and returns what
    /// left the board. No legality check is made (perft speed); for anything else use
    /// `play_physical`. A `Move::Steal` only moves and removes the pawn here: use
    /// `play_steal_push` (or `Table::play`) to also place the stolen piece.
    pub fn play(&mut self, mv: Move, v: &Variant) -> PlayOutcome {
        self.apply(mv, v)
    }

    /// Applies any move that is physically possible, legal or not: a piece of the side to move
    /// stands on the origin, the target holds no piece of the mover (and no king: kings never
    /// leave the board), a drop needs the piece in the pocket. Everything is updated as for a
    /// legal move (side to move flips, rights lost, …), so play continues from positions no legal
    /// game reaches.
    pub fn play_physical(&mut self, mv: Move, v: &Variant) -> Result<PlayOutcome, PhysicalError> {
        self.check_physical(mv)?;
        Ok(self.apply(mv, v))
    }

    /// The physical checks of `play_physical` without playing.
    pub fn check_physical(&self, mv: Move) -> Result<(), PhysicalError> {
        use PhysicalError as E;
        let us = self.turn;
        let occ = self.occupied();
        let mine = |sq: Square| self.by_color(us).contains(sq);
        let target_ok = |to: Square| -> Result<(), PhysicalError> {
            if mine(to) {
                Err(E::OwnPieceOnTarget(to))
            } else if self.by_role(Role::King).contains(to) {
                Err(E::KingCapture(to))
            } else {
                Ok(())
            }
        };
        match mv {
            Move::Normal {
                role,
                from,
                to,
                promotion,
                ..
            } => {
                if !mine(from) {
                    return Err(E::NoMoversPiece(from));
                }
                if self.role_at(from) != Some(role) {
                    return Err(E::WrongPiece(from));
                }
                if from == to {
                    return Err(E::SameSquare(from));
                }
                if matches!(promotion, Some(Role::King)) {
                    return Err(E::KingPlacement);
                }
                if promotion.is_some() && role != Role::Pawn {
                    return Err(E::NotPossible("only pawns promote"));
                }
                target_ok(to)
            }
            Move::EnPassant { from, to } => {
                if !self.pieces(us, Role::Pawn).contains(from) {
                    return Err(E::NoMoversPiece(from));
                }
                if occ.contains(to) {
                    return Err(E::Occupied(to));
                }
                let cap = Square::from_coords(to.file(), from.rank())
                    .ok_or(E::NotPossible("bad squares"))?;
                if !self.pieces(us.other(), Role::Pawn).contains(cap) || to.file() == from.file() {
                    return Err(E::NotPossible("no pawn to capture en passant"));
                }
                Ok(())
            }
            Move::Castle { king, rook } => {
                if !self.pieces(us, Role::King).contains(king) {
                    return Err(E::NoMoversPiece(king));
                }
                if !self.pieces(us, Role::Rook).contains(rook) || rook.rank() != king.rank() {
                    return Err(E::WrongPiece(rook));
                }
                let kt = castle_king_target(king, rook);
                let rt = castle_rook_target(king, rook);
                for sq in [kt, rt] {
                    if occ.contains(sq) && sq != king && sq != rook {
                        return Err(E::Occupied(sq));
                    }
                }
                Ok(())
            }
            Move::Drop { role, to } => {
                if role == Role::King {
                    return Err(E::KingPlacement);
                }
                if occ.contains(to) {
                    return Err(E::Occupied(to));
                }
                if self.pockets[us.index()].count(role) == 0 {
                    return Err(E::EmptyPocket(role));
                }
                Ok(())
            }
            Move::Steal { .. } => Err(E::NeedsTable),
        }
    }

    /// Puts `piece` on `sq` without touching anything else.
    #[inline]
    fn place(&mut self, sq: Square, piece: Piece) {
        self.by_color[piece.color.index()].add(sq);
        self.by_role[piece.role.index()].add(sq);
    }

    /// Takes whatever stands on `sq` off the board, with its promoted flag.
    #[inline]
    fn take(&mut self, sq: Square) -> Option<(Piece, bool)> {
        let piece = self.piece_at(sq)?;
        self.by_color[piece.color.index()].remove(sq);
        self.by_role[piece.role.index()].remove(sq);
        let promoted = self.promoted.contains(sq);
        self.promoted.remove(sq);
        self.dropped_pawns.remove(sq);
        Some((piece, promoted))
    }

    fn pocket_form(piece: Piece, promoted: bool, v: &Variant) -> Piece {
        if promoted && v.promoted_reverts {
            Piece {
                color: piece.color,
                role: Role::Pawn,
            }
        } else {
            piece
        }
    }

    /// Applies a move without checks; never panics, whatever the move.
    fn apply(&mut self, mv: Move, v: &Variant) -> PlayOutcome {
        let us = self.turn;
        let mut out = PlayOutcome::default();
        self.ep_square = None;
        let mut reset_clock = false;
        match mv {
            Move::Normal {
                from,
                to,
                promotion,
                ..
            } => {
                reset_clock = self.apply_step(from, to, promotion, false, v, &mut out);
            }
            Move::Steal { from, to, .. } => {
                reset_clock = self.apply_step(from, to, None, true, v, &mut out);
            }
            Move::EnPassant { from, to } => {
                if let Some((piece, _)) = self.take(from) {
                    if let Some(cap_sq) = Square::from_coords(to.file(), from.rank())
                        && let Some((cap, cap_promoted)) = self.take(cap_sq)
                    {
                        out.captured = Some(Self::pocket_form(cap, cap_promoted, v));
                    }
                    if let Some((cap, cap_promoted)) = self.take(to) {
                        // Only reachable through physically odd input; keep material consistent.
                        out.captured
                            .get_or_insert(Self::pocket_form(cap, cap_promoted, v));
                    }
                    self.place(to, piece);
                    reset_clock = true;
                }
            }
            Move::Castle { king, rook } => {
                let kt = castle_king_target(king, rook);
                let rt = castle_rook_target(king, rook);
                let k = self.take(king);
                let r = self.take(rook);
                if let Some((kp, _)) = k {
                    self.place(kt, kp);
                }
                if let Some((rp, rpromoted)) = r {
                    self.place(rt, rp);
                    if rpromoted {
                        self.promoted.add(rt);
                    }
                }
                self.king_moved[us.index()] = true;
                self.castling &= !Bitboard::rank(us.back_rank());
            }
            Move::Drop { role, to } => {
                if role != Role::King
                    && !self.occupied().contains(to)
                    && self.pockets[us.index()].remove(role)
                {
                    self.place(to, Piece { color: us, role });
                    match role {
                        // A drop never resets the halfmove clock, not even a pawn drop (as FSF).
                        Role::Pawn => self.dropped_pawns.add(to),
                        Role::Rook => {
                            let corner =
                                to.rank() == us.back_rank() && (to.file() == 0 || to.file() == 7);
                            if v.dropped_rook_castles
                                && corner
                                && !self.king_moved[us.index()]
                                && self.king_of(us) == Some(king_start(us))
                            {
                                self.castling.add(to);
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        self.finish(out, reset_clock)
    }

    /// A piece moving from `from` to `to` (normal moves and the pawn half of a steal); returns
    /// whether the halfmove clock resets.
    fn apply_step(
        &mut self,
        from: Square,
        to: Square,
        promotion: Option<Role>,
        is_steal: bool,
        v: &Variant,
        out: &mut PlayOutcome,
    ) -> bool {
        let us = self.turn;
        let was_dropped = self.dropped_pawns.contains(from);
        let Some((piece, was_promoted)) = self.take(from) else {
            return false;
        };
        let mut reset_clock = false;
        if let Some((cap, cap_promoted)) = self.take(to) {
            out.captured = Some(Self::pocket_form(cap, cap_promoted, v));
            reset_clock = true;
        }
        let role = piece.role;
        if role == Role::Pawn {
            reset_clock = true;
        }
        if role == Role::Pawn && (is_steal || to.rank() == last_rank(us)) {
            match promotion {
                Some(p) if !is_steal && !matches!(p, Role::Pawn | Role::King) => {
                    self.place(to, Piece { color: us, role: p });
                    self.promoted.add(to);
                }
                _ if is_steal || v.promotion == Promotion::PawnCaptured => {
                    out.removed = Some(piece);
                }
                _ => self.place(to, piece),
            }
        } else {
            self.place(to, piece);
            if was_promoted {
                self.promoted.add(to);
            }
            if role == Role::Pawn && was_dropped {
                self.dropped_pawns.add(to);
            }
            if role == Role::Pawn
                && from.file() == to.file()
                && (from.rank() as i8 - to.rank() as i8).abs() == 2
            {
                // Recorded only when an enemy pawn could take en passant (as Stockfish-family
                // FENs do), so FENs of equal positions compare equal.
                let ep = Square::from_coords(from.file(), (from.rank() + to.rank()) / 2);
                self.ep_square = ep.filter(|&e| {
                    (tables().pawn(us, e) & self.pieces(us.other(), Role::Pawn)).nonempty()
                });
            }
        }
        if role == Role::King {
            self.king_moved[us.index()] = true;
            self.castling &= !Bitboard::rank(us.back_rank());
        }
        self.castling.remove(from);
        self.castling.remove(to);
        reset_clock
    }

    fn finish(&mut self, out: PlayOutcome, reset_clock: bool) -> PlayOutcome {
        if reset_clock {
            self.halfmoves = 0;
        } else {
            self.halfmoves = self.halfmoves.saturating_add(1);
        }
        if self.turn == Color::Black {
            self.fullmoves = self.fullmoves.saturating_add(1);
        }
        self.turn = self.turn.other();
        out
    }

    // ----- primitives for the table ------------------------------------------------------------

    /// Pieces of `victim` that the steal promotion may take from this board: no pawns, no king,
    /// and not a piece whose removal leaves `victim`'s king attacked (text 004 §6).
    pub fn steal_candidates(&self, victim: Color, _v: &Variant) -> Bitboard {
        let t = tables();
        let occ = self.occupied();
        let mut out = Bitboard::EMPTY;
        let Some(k) = self.king_of(victim) else {
            return out;
        };
        let pieces = self.by_color(victim) & !self.by_role(Role::Pawn) & !self.by_role(Role::King);
        for sq in pieces {
            if self
                .attackers_with(t, k, victim.other(), occ ^ sq.bb())
                .is_empty()
            {
                out.add(sq);
            }
        }
        out
    }

    /// The pawn half of a steal promotion: the pawn on `from` moves to `to` (capturing what stands
    /// there), leaves the board (reported in `removed`, to go to the stolen piece's owner), and
    /// `stolen` (taken from the other board by the caller, `promoted` flag kept) is put on `to`.
    /// The side to move flips. The caller is responsible for legality (`Table::play` checks).
    pub fn play_steal_push(
        &mut self,
        from: Square,
        to: Square,
        stolen: Piece,
        promoted: bool,
        v: &Variant,
    ) -> PlayOutcome {
        let out = self.apply(
            Move::Steal {
                from,
                to,
                steal: to,
            },
            v,
        );
        if !self.occupied().contains(to) && stolen.role != Role::King {
            self.place(to, stolen);
            if promoted {
                self.promoted.add(to);
            }
        }
        out
    }

    /// Takes the piece on `sq` off the board (a king cannot be removed), returning it and whether
    /// it was promoted. Castling rights tied to the square are lost.
    pub fn remove_piece(&mut self, sq: Square) -> Result<(Piece, bool), PhysicalError> {
        if self.by_role(Role::King).contains(sq) {
            return Err(PhysicalError::KingCapture(sq));
        }
        let taken = self.take(sq).ok_or(PhysicalError::EmptySquare(sq))?;
        self.castling.remove(sq);
        Ok(taken)
    }

    /// Puts `piece` on the empty square `sq` (no kings: there is always exactly one per colour).
    pub fn put_piece(
        &mut self,
        sq: Square,
        piece: Piece,
        promoted: bool,
    ) -> Result<(), PhysicalError> {
        if piece.role == Role::King {
            return Err(PhysicalError::KingPlacement);
        }
        if self.occupied().contains(sq) {
            return Err(PhysicalError::Occupied(sq));
        }
        self.place(sq, piece);
        if promoted {
            self.promoted.add(sq);
        }
        Ok(())
    }
}

/// A UCI string that is malformed or does not fit the position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UciParseError {
    #[error(transparent)]
    Syntax(#[from] super::moves::UciError),
    #[error("{0}")]
    Illegal(#[from] IllegalReason),
}
