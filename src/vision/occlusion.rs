//! Which squares a piece standing on another square may hide from the camera.
//!
//! A camera that looks at the board from the side sees each piece's body rise above its square
//! in the image, over the squares behind it. Such a square's patch (`rectify`: the square at the
//! bottom, the piece body above it) is then filled by the nearer piece's body, and a classifier
//! reads a piece there whether one stands on it or not: a vacated `d2` behind the queen on `d1`
//! keeps reading a pawn. The map says, from the calibration alone, which square centres a piece
//! on each square covers, and so which pieces a position hides, so that such readings can be
//! taken for what they are.
//!
//! Model (no camera pose is estimated, as in `rectify`): a piece of role `r` on square `Y` is an
//! upright box in the image, as wide as half of `Y`'s footprint and `HEIGHT[r]` square widths
//! tall above `Y`'s centre; it covers the square `X` when `X`'s centre lies inside that box and
//! above `Y`'s centre (farther from the camera). A piece of role `s` on `X` would be *hidden*
//! when such a box also reaches at least as high in the image as that piece's own top: then
//! nothing of it shows, and the patch of `X` looks the same whether the piece is there or not (a
//! piece taller than the one in front, a knight behind a pawn, still shows its head).

use crate::engine::{BoardId, Color, Position, Role, Square};

use super::calibration::Calibration;
use super::geometry::Point;

/// Height of a piece's body per role (pawn … king), in widths of its square in the image.
const HEIGHT: [f64; 6] = [0.75, 0.95, 1.05, 0.85, 1.25, 1.4];
/// Half the width of a piece's body, in widths of its square.
const HALF_WIDTH: f64 = 0.25;

/// For both boards, per occupied square and role, the squares whose centre the piece may hide.
#[derive(Debug, Clone)]
pub struct OcclusionMap {
    /// `hides[board][square][role]`: the squares whose centre that piece covers (bit `i` =
    /// square index `i`).
    hides: Box<[[[u64; 6]; 64]; 2]>,
    /// `tops[board][square][role]`: the image row of the top of that piece.
    tops: Box<[[[f64; 6]; 64]; 2]>,
}

impl OcclusionMap {
    /// Builds the map from both boards' homographies.
    pub fn new(cal: &Calibration) -> OcclusionMap {
        let mut hides = Box::new([[[0u64; 6]; 64]; 2]);
        let mut tops = Box::new([[[0f64; 6]; 64]; 2]);
        for (b, board) in cal.boards.iter().enumerate().take(2) {
            let h = &board.homography;
            let centre =
                |i: usize| -> Point { h.map([(i % 8) as f64 + 0.5, (i / 8) as f64 + 0.5]) };
            let width = |i: usize| -> f64 {
                let (f, r) = ((i % 8) as f64, (i / 8) as f64);
                let xs =
                    [[f, r], [f + 1.0, r], [f + 1.0, r + 1.0], [f, r + 1.0]].map(|p| h.map(p)[0]);
                let (lo, hi) = xs
                    .iter()
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
                        (lo.min(x), hi.max(x))
                    });
                hi - lo
            };
            let centres: Vec<Point> = (0..64).map(centre).collect();
            for y in 0..64 {
                let (c, w) = (centres[y], width(y));
                for (role, &tall) in HEIGHT.iter().enumerate() {
                    let top = c[1] - tall * w;
                    tops[b][y][role] = top;
                    let mut mask = 0u64;
                    for (x, p) in centres.iter().enumerate() {
                        if x != y
                            && p[1] < c[1]
                            && p[1] > top
                            && (p[0] - c[0]).abs() <= HALF_WIDTH * w
                        {
                            mask |= 1 << x;
                        }
                    }
                    hides[b][y][role] = mask;
                }
            }
        }
        OcclusionMap { hides, tops }
    }

    /// Per square of `board`, the roles (bit `Role::index`) a piece of which would be hidden
    /// entirely there behind a nearer piece of `pos` (the square's own piece does not count).
    pub fn hidden(&self, board: BoardId, pos: &Position) -> [u8; 64] {
        let (hides, tops) = (&self.hides[board.index()], &self.tops[board.index()]);
        let pieces: Vec<(usize, usize)> = Color::ALL
            .iter()
            .flat_map(|&c| Role::ALL.iter().map(move |&r| (c, r)))
            .flat_map(|(c, r)| {
                pos.pieces(c, r)
                    .into_iter()
                    .map(move |sq| (sq.index(), r.index()))
            })
            .collect();
        let mut out = [0u8; 64];
        for &(y, ry) in &pieces {
            let (mask, top) = (hides[y][ry], tops[y][ry]);
            for (x, roles) in out.iter_mut().enumerate() {
                if mask & (1 << x) == 0 {
                    continue;
                }
                for (r, &own_top) in tops[x].iter().enumerate() {
                    if top <= own_top {
                        *roles |= 1 << r;
                    }
                }
            }
        }
        out
    }

    /// The squares whose centre a piece of `role` on `sq` of `board` covers.
    pub fn hidden_by(&self, board: BoardId, sq: Square, role: Role) -> u64 {
        self.hides[board.index()][sq.index()][role.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Table;
    use crate::vision::CalibrationConfig;

    /// A calibration of two boards seen from White's side at a low angle: ranks get shallower
    /// (and narrower) with distance, as in a perspective view.
    fn low_view() -> Calibration {
        let board = |x0: f64| {
            // a1, h1, h8, a8: the near edge wide and low in the image, the far edge narrow.
            [
                [x0, 600.0],
                [x0 + 400.0, 600.0],
                [x0 + 350.0, 470.0],
                [x0 + 50.0, 470.0],
            ]
        };
        Calibration::manual(
            "t",
            (1280, 720),
            [board(60.0), board(700.0)],
            None,
            &CalibrationConfig::default(),
        )
        .unwrap()
    }

    #[test]
    fn a_piece_hides_the_squares_just_behind_it_not_those_in_front_or_beside() {
        let map = OcclusionMap::new(&low_view());
        let sq = |s: &str| s.parse::<Square>().unwrap();
        let bit = |s: &str| 1u64 << sq(s).index();
        let queen = map.hidden_by(BoardId::A, sq("d1"), Role::Queen);
        assert_ne!(queen & bit("d2"), 0, "the queen on d1 hides d2");
        assert_eq!(queen & (bit("c1") | bit("e1") | bit("c2") | bit("e2")), 0);
        assert_eq!(queen & bit("d1"), 0);
        // Nothing hides what is nearer to the camera.
        assert_eq!(
            map.hidden_by(BoardId::A, sq("d4"), Role::King) & bit("d3"),
            0
        );
        // A pawn is shorter than a king.
        let pawn = map.hidden_by(BoardId::A, sq("d2"), Role::Pawn).count_ones();
        let king = map.hidden_by(BoardId::A, sq("d2"), Role::King).count_ones();
        assert!(pawn <= king && king >= 1, "pawn {pawn}, king {king}");
        // In the start position a pawn behind the queen or the king is hidden, and so would a
        // pawn be on d2 once it left; a knight behind a pawn shows its head, and nothing is
        // hidden in the empty middle.
        let start = Table::new();
        let pawn = 1u8 << Role::Pawn.index();
        let hidden = map.hidden(BoardId::A, start.board(BoardId::A));
        assert_ne!(hidden[sq("d2").index()] & pawn, 0);
        assert_ne!(hidden[sq("e2").index()] & pawn, 0);
        assert_eq!(hidden[sq("d5").index()], 0);
        let moved = "rnbqkbnr/pppppppp/8/8/3P4/5N2/PPP1PPPP/RNBQKB1R b KQkq - 1 1";
        let pos: Position = Position::from_fen(moved).unwrap();
        let hidden = map.hidden(BoardId::A, &pos);
        assert_ne!(hidden[sq("d2").index()] & pawn, 0, "d2 behind the queen");
        assert_eq!(hidden[sq("f3").index()] & (1 << Role::Knight.index()), 0);
    }
}
