//! Precomputed attack tables: leapers by lookup, sliders by magic bitboards.
//!
//! The magic multipliers are searched once per process with a fixed-seed generator (deterministic,
//! a few milliseconds) and the tables are built behind a `OnceLock`, so the engine has no build
//! step and no copied constants.

use super::types::{Bitboard, Color, Square};
use std::sync::OnceLock;

const ROOK_DIRS: [(i8, i8); 4] = [(1, 0), (-1, 0), (0, 1), (0, -1)];
const BISHOP_DIRS: [(i8, i8); 4] = [(1, 1), (1, -1), (-1, 1), (-1, -1)];

#[derive(Clone, Copy, Default)]
struct Magic {
    mask: u64,
    magic: u64,
    shift: u32,
    offset: usize,
}

/// All tables, built once.
pub(crate) struct Tables {
    knight: [u64; 64],
    king: [u64; 64],
    pawn: [[u64; 64]; 2],
    rook_magic: [Magic; 64],
    bishop_magic: [Magic; 64],
    slider: Vec<u64>,
    between: Vec<u64>,
    line: Vec<u64>,
}

static TABLES: OnceLock<Tables> = OnceLock::new();

/// The process-wide tables (built on first use).
#[inline]
pub(crate) fn tables() -> &'static Tables {
    TABLES.get_or_init(Tables::build)
}

fn step_attacks(sq: usize, deltas: &[(i8, i8)]) -> u64 {
    let (f, r) = ((sq % 8) as i8, (sq / 8) as i8);
    let mut bb = 0;
    for &(df, dr) in deltas {
        let (nf, nr) = (f + df, r + dr);
        if (0..8).contains(&nf) && (0..8).contains(&nr) {
            bb |= 1u64 << (nr * 8 + nf);
        }
    }
    bb
}

fn slide(sq: usize, occ: u64, dirs: &[(i8, i8)]) -> u64 {
    let (f, r) = ((sq % 8) as i8, (sq / 8) as i8);
    let mut bb = 0;
    for &(df, dr) in dirs {
        let (mut nf, mut nr) = (f + df, r + dr);
        while (0..8).contains(&nf) && (0..8).contains(&nr) {
            let b = 1u64 << (nr * 8 + nf);
            bb |= b;
            if occ & b != 0 {
                break;
            }
            nf += df;
            nr += dr;
        }
    }
    bb
}

/// Relevant occupancy mask: the rays without their last square.
fn relevant_mask(sq: usize, dirs: &[(i8, i8)]) -> u64 {
    let (f, r) = ((sq % 8) as i8, (sq / 8) as i8);
    let mut bb = 0;
    for &(df, dr) in dirs {
        let (mut nf, mut nr) = (f + df, r + dr);
        while (0..8).contains(&(nf + df)) && (0..8).contains(&(nr + dr)) {
            bb |= 1u64 << (nr * 8 + nf);
            nf += df;
            nr += dr;
        }
    }
    bb
}

struct XorShift(u64);
impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn sparse(&mut self) -> u64 {
        self.next() & self.next() & self.next()
    }
}

/// Finds a collision-free magic for one square and fills its slice of `table`.
fn find_magic(sq: usize, dirs: &[(i8, i8)], rng: &mut XorShift, table: &mut Vec<u64>) -> Magic {
    let mask = relevant_mask(sq, dirs);
    let bits = mask.count_ones();
    let size = 1usize << bits;
    let mut occs = Vec::with_capacity(size);
    let mut atts = Vec::with_capacity(size);
    // Carry-Rippler enumeration of all subsets of the mask.
    let mut sub: u64 = 0;
    loop {
        occs.push(sub);
        atts.push(slide(sq, sub, dirs));
        sub = sub.wrapping_sub(mask) & mask;
        if sub == 0 {
            break;
        }
    }
    let offset = table.len();
    table.resize(offset + size, 0);
    let mut epoch = vec![0u32; size];
    let mut try_no = 0u32;
    loop {
        let magic = rng.sparse();
        if (mask.wrapping_mul(magic) >> 56).count_ones() < 6 {
            continue;
        }
        try_no += 1;
        let shift = 64 - bits;
        let mut ok = true;
        for i in 0..size {
            let idx = (occs[i].wrapping_mul(magic) >> shift) as usize;
            if epoch[idx] != try_no {
                epoch[idx] = try_no;
                table[offset + idx] = atts[i];
            } else if table[offset + idx] != atts[i] {
                ok = false;
                break;
            }
        }
        if ok {
            return Magic {
                mask,
                magic,
                shift,
                offset,
            };
        }
    }
}

impl Tables {
    fn build() -> Tables {
        let mut knight = [0; 64];
        let mut king = [0; 64];
        let mut pawn = [[0; 64]; 2];
        for sq in 0..64 {
            knight[sq] = step_attacks(
                sq,
                &[
                    (1, 2),
                    (2, 1),
                    (2, -1),
                    (1, -2),
                    (-1, -2),
                    (-2, -1),
                    (-2, 1),
                    (-1, 2),
                ],
            );
            king[sq] = step_attacks(
                sq,
                &[
                    (1, 0),
                    (1, 1),
                    (0, 1),
                    (-1, 1),
                    (-1, 0),
                    (-1, -1),
                    (0, -1),
                    (1, -1),
                ],
            );
            pawn[0][sq] = step_attacks(sq, &[(-1, 1), (1, 1)]);
            pawn[1][sq] = step_attacks(sq, &[(-1, -1), (1, -1)]);
        }
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
        let mut slider = Vec::with_capacity(107_648);
        let mut rook_magic = [Magic::default(); 64];
        let mut bishop_magic = [Magic::default(); 64];
        for (sq, m) in rook_magic.iter_mut().enumerate() {
            *m = find_magic(sq, &ROOK_DIRS, &mut rng, &mut slider);
        }
        for (sq, m) in bishop_magic.iter_mut().enumerate() {
            *m = find_magic(sq, &BISHOP_DIRS, &mut rng, &mut slider);
        }
        let mut between = vec![0u64; 64 * 64];
        let mut line = vec![0u64; 64 * 64];
        for a in 0..64 {
            for b in 0..64 {
                if a == b {
                    continue;
                }
                let bit_b = 1u64 << b;
                for dirs in [&ROOK_DIRS, &BISHOP_DIRS] {
                    if slide(a, 0, dirs) & bit_b != 0 {
                        let a_ray = slide(a, bit_b, dirs);
                        let b_ray = slide(b, 1u64 << a, dirs);
                        between[a * 64 + b] = a_ray & b_ray;
                        line[a * 64 + b] =
                            (slide(a, 0, dirs) & slide(b, 0, dirs)) | (1u64 << a) | bit_b;
                    }
                }
            }
        }
        Tables {
            knight,
            king,
            pawn,
            rook_magic,
            bishop_magic,
            slider,
            between,
            line,
        }
    }

    #[inline]
    pub(crate) fn knight(&self, sq: Square) -> Bitboard {
        Bitboard(self.knight[sq.index()])
    }

    #[inline]
    pub(crate) fn king(&self, sq: Square) -> Bitboard {
        Bitboard(self.king[sq.index()])
    }

    /// Squares a pawn of `color` on `sq` attacks.
    #[inline]
    pub(crate) fn pawn(&self, color: Color, sq: Square) -> Bitboard {
        Bitboard(self.pawn[color.index()][sq.index()])
    }

    #[inline]
    pub(crate) fn rook(&self, sq: Square, occ: Bitboard) -> Bitboard {
        let m = &self.rook_magic[sq.index()];
        let idx = ((occ.0 & m.mask).wrapping_mul(m.magic) >> m.shift) as usize;
        Bitboard(self.slider[m.offset + idx])
    }

    #[inline]
    pub(crate) fn bishop(&self, sq: Square, occ: Bitboard) -> Bitboard {
        let m = &self.bishop_magic[sq.index()];
        let idx = ((occ.0 & m.mask).wrapping_mul(m.magic) >> m.shift) as usize;
        Bitboard(self.slider[m.offset + idx])
    }

    #[inline]
    pub(crate) fn queen(&self, sq: Square, occ: Bitboard) -> Bitboard {
        self.rook(sq, occ) | self.bishop(sq, occ)
    }

    /// Squares strictly between `a` and `b` if they share a line, else empty.
    #[inline]
    pub(crate) fn between(&self, a: Square, b: Square) -> Bitboard {
        Bitboard(self.between[a.index() * 64 + b.index()])
    }

    /// The whole line through `a` and `b` (edge to edge) if they share one, else empty.
    #[inline]
    pub(crate) fn line(&self, a: Square, b: Square) -> Bitboard {
        Bitboard(self.line[a.index() * 64 + b.index()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_lookups_match_slow_slides() {
        let t = tables();
        let mut rng = XorShift(12345);
        for _ in 0..2000 {
            let occ = rng.next() & rng.next();
            let sq = (rng.next() % 64) as usize;
            let s = Square::new_masked(sq as u32);
            assert_eq!(t.rook(s, Bitboard(occ)).0, slide(sq, occ, &ROOK_DIRS));
            assert_eq!(t.bishop(s, Bitboard(occ)).0, slide(sq, occ, &BISHOP_DIRS));
        }
    }

    #[test]
    fn between_and_line() {
        let t = tables();
        let a1 = Square::A1;
        let h8 = Square::H8;
        assert_eq!(t.between(a1, h8).count(), 6);
        assert_eq!(t.line(a1, h8).count(), 8);
        assert!(t.between(Square::A1, Square::B8).is_empty());
        assert_eq!(t.between(Square::E1, Square::H1).count(), 2);
        assert_eq!(t.knight(Square::A1).count(), 2);
    }
}
