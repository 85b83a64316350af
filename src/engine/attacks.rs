//! Precomputed attack tables: leapers by lookup, sliders by magic bitboards.
//!
//! The magic multipliers are this module's own: a fixed-seed search (`find_magic`) found them
//! and they are stored below, because the search costs about 0.65 s of CPU, which every process
//! paid at its first move generation until 2026-12-07. The tables are built from them behind a
//! `OnceLock` (no build step); a stored multiplier that collides is searched for again.

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

/// The seed of the search that found [`ROOK_MAGICS`] and [`BISHOP_MAGICS`] (rooks a1..h8, then
/// bishops, one generator).
const MAGIC_SEED: u64 = 0x9e37_79b9_7f4a_7c15;

/// Rook multipliers, a1..h8, as the seeded search finds them.
const ROOK_MAGICS: [u64; 64] = [
    0x2080_0020_8040_0010,
    0x00c0_0020_0140_1000,
    0x2100_1100_0840_2002,
    0x0880_0800_8104_1000,
    0x0200_0200_2004_1008,
    0x2300_0400_0801_0012,
    0x0c00_2830_0400_8201,
    0x0180_0100_0040_7a80,
    0x0168_8000_8040_0020,
    0x0010_4000_4020_1000,
    0x1001_0020_0100_1048,
    0x1001_0024_0810_0100,
    0x0801_0004_0801_0012,
    0x4001_0002_0900_0400,
    0x08a2_0004_c802_0001,
    0x2002_8011_4500_2280,
    0x0080_8600_2100_4200,
    0x0010_00c0_0940_2002,
    0x00b0_0020_0400_2800,
    0x100a_8080_1002_0800,
    0x8101_0100_0800_0410,
    0x0244_0080_0200_0480,
    0x0000_0400_1081_0208,
    0x2000_0200_0044_8534,
    0x4104_4004_8000_8033,
    0x0000_8101_0020_4000,
    0x0440_4309_0020_0010,
    0x4600_2409_0010_0100,
    0x0060_0800_8004_0080,
    0x0001_0003_0008_0400,
    0x0004_0844_0001_1002,
    0x0023_0402_0000_8041,
    0x0580_0500_4300_2080,
    0x0400_8040_0280_2008,
    0x0001_0020_0100_4010,
    0x1000_2009_0100_1000,
    0x4410_8008_0180_0c00,
    0xa012_0038_0600_1004,
    0x0020_1001_0400_8802,
    0x0004_8084_0200_0041,
    0x0010_4001_7089_8000,
    0x0080_5000_2000_4004,
    0x1040_4080_1202_0020,
    0x8010_0400_0800_4040,
    0x2001_0801_0011_0004,
    0x0000_0200_0400_8080,
    0x0021_0108_1004_0002,
    0x0800_008c_4302_0024,
    0x0000_8000_2100_5100,
    0x0070_2010_4000_8080,
    0x0000_d042_8200_6a00,
    0x0010_0144_0008_0240,
    0x0001_0801_1005_0100,
    0x0012_0008_1024_0600,
    0x0402_0008_0104_0200,
    0x0281_0010_8a00_4100,
    0x0050_8003_0010_2045,
    0x8208_2100_4012_0882,
    0x8010_6001_0118_3441,
    0x020b_0009_1000_6045,
    0x0241_0010_0248_0005,
    0x0081_0004_0088_0241,
    0x0000_0090_0802_4124,
    0x0048_1229_8041_0402,
];

/// Bishop multipliers, a1..h8, as the seeded search finds them after the rooks'.
const BISHOP_MAGICS: [u64; 64] = [
    0x0848_0208_2204_0013,
    0x8010_a400_8582_1200,
    0x0008_0084_3084_0822,
    0x0808_0481_0804_0000,
    0x1304_0421_0000_8104,
    0x5001_0120_1020_4023,
    0x8104_8801_b820_0420,
    0x200a_0080_8401_2000,
    0x0040_1020_0104_2084,
    0x840a_5050_4242_8020,
    0x0000_7001_0220_2920,
    0x4410_1c0c_1080_0002,
    0x0040_0404_2200_0000,
    0x0180_0208_0209_0202,
    0x4020_0208_1104_1202,
    0x0001_0430_8c04_2000,
    0x4140_6610_0242_4400,
    0x0028_0120_0801_0460,
    0x0188_0621_0200_2a00,
    0x0014_0048_4010_2008,
    0x0105_0002_9040_0002,
    0x8001_0222_0041_0400,
    0x104a_0419_1801_3446,
    0x008a_0000_8200_8238,
    0x04a0_0600_0810_0430,
    0x0008_2200_0882_0801,
    0x2508_0412_0800_5010,
    0x4008_0802_0020_2020,
    0x2441_0010_1300_4000,
    0x0030_0080_6040_7000,
    0x4008_1080_0042_0800,
    0x0012_0210_5029_0100,
    0x0210_0804_8220_0500,
    0xcc01_1120_4810_0480,
    0x0020_4028_0650_0440,
    0x0004_8e00_8058_0080,
    0x0040_1020_2002_0080,
    0x0028_0104_4008_0807,
    0x4601_0411_0800_8800,
    0x8040_810e_0410_4200,
    0x9012_1011_0400_088a,
    0xa003_0802_1208_1050,
    0x00c1_0040_4840_1004,
    0x9000_00a0_1440_0800,
    0x0008_0210_4040_5401,
    0x4020_0082_0600_2090,
    0x0004_1904_2403_0100,
    0x0424_008a_0202_6250,
    0x8004_0882_5090_0040,
    0x1c00_4300_88a0_4200,
    0x0001_0200_9404_0001,
    0x8040_2100_2088_0061,
    0x2010_0404_5044_2032,
    0x0800_8408_5004_4001,
    0x0004_0408_0214_0004,
    0x0004_080a_0422_2020,
    0x8088_8021_1002_2000,
    0x1081_a104_1611_4400,
    0x0205_010a_2406_0820,
    0x0000_0007_2041_1080,
    0x1008_0002_0843_0400,
    0x580c_0260_2881_0840,
    0x8020_2044_1020_a110,
    0x12c0_0224_0102_0018,
];

/// Every occupancy of one slider's relevant squares, with the attacks it leaves.
struct Occupancies {
    mask: u64,
    bits: u32,
    occs: Vec<u64>,
    atts: Vec<u64>,
}

impl Occupancies {
    fn of(sq: usize, dirs: &[(i8, i8)]) -> Occupancies {
        let mask = relevant_mask(sq, dirs);
        let bits = mask.count_ones();
        let mut occs = Vec::with_capacity(1 << bits);
        let mut atts = Vec::with_capacity(1 << bits);
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
        Occupancies {
            mask,
            bits,
            occs,
            atts,
        }
    }

    /// Fills `slot` (one entry per index) by `magic`; false at the first collision of two
    /// occupancies with different attacks. `epoch` marks the slots this try wrote.
    fn fill(&self, magic: u64, slot: &mut [u64], epoch: &mut [u32], try_no: u32) -> bool {
        let shift = 64 - self.bits;
        for (&occ, &att) in self.occs.iter().zip(&self.atts) {
            let idx = (occ.wrapping_mul(magic) >> shift) as usize;
            if epoch[idx] != try_no {
                epoch[idx] = try_no;
                slot[idx] = att;
            } else if slot[idx] != att {
                return false;
            }
        }
        true
    }

    /// The lookup entry for multiplier `magic`, its slice appended to `table`; `None` (and
    /// `table` as it was) if two occupancies with different attacks collide under it.
    fn place(&self, magic: u64, table: &mut Vec<u64>) -> Option<Magic> {
        let offset = table.len();
        let size = 1usize << self.bits;
        table.resize(offset + size, 0);
        let mut epoch = vec![0u32; size];
        if self.fill(magic, &mut table[offset..], &mut epoch, 1) {
            Some(Magic {
                mask: self.mask,
                magic,
                shift: 64 - self.bits,
                offset,
            })
        } else {
            table.truncate(offset);
            None
        }
    }
}

/// Finds a collision-free magic for one square and fills its slice of `table`.
fn find_magic(sq: usize, dirs: &[(i8, i8)], rng: &mut XorShift, table: &mut Vec<u64>) -> Magic {
    let occ = Occupancies::of(sq, dirs);
    let size = 1usize << occ.bits;
    let offset = table.len();
    table.resize(offset + size, 0);
    let mut epoch = vec![0u32; size];
    let mut try_no = 0u32;
    loop {
        let magic = rng.sparse();
        if (occ.mask.wrapping_mul(magic) >> 56).count_ones() < 6 {
            continue;
        }
        try_no += 1;
        if occ.fill(magic, &mut table[offset..], &mut epoch, try_no) {
            return Magic {
                mask: occ.mask,
                magic,
                shift: 64 - occ.bits,
                offset,
            };
        }
    }
}

/// The magic of `sq` from `stored`, else searched for (with `rng`, created on first need).
fn stored_or_found(
    sq: usize,
    dirs: &[(i8, i8)],
    stored: u64,
    rng: &mut Option<XorShift>,
    table: &mut Vec<u64>,
) -> Magic {
    Occupancies::of(sq, dirs)
        .place(stored, table)
        .unwrap_or_else(|| {
            let rng = rng.get_or_insert(XorShift(MAGIC_SEED));
            find_magic(sq, dirs, rng, table)
        })
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
        let mut rng = None;
        let mut slider = Vec::with_capacity(107_648);
        let mut rook_magic = [Magic::default(); 64];
        let mut bishop_magic = [Magic::default(); 64];
        for (sq, m) in rook_magic.iter_mut().enumerate() {
            *m = stored_or_found(sq, &ROOK_DIRS, ROOK_MAGICS[sq], &mut rng, &mut slider);
        }
        for (sq, m) in bishop_magic.iter_mut().enumerate() {
            *m = stored_or_found(sq, &BISHOP_DIRS, BISHOP_MAGICS[sq], &mut rng, &mut slider);
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
    fn every_stored_magic_is_collision_free() {
        let mut table = Vec::new();
        for sq in 0..64 {
            for (dirs, stored) in [(&ROOK_DIRS, ROOK_MAGICS), (&BISHOP_DIRS, BISHOP_MAGICS)] {
                let occ = Occupancies::of(sq, dirs);
                assert!(occ.place(stored[sq], &mut table).is_some(), "square {sq}");
            }
        }
        // A multiplier that sends two occupancies with different attacks to one slot is not.
        assert!(
            Occupancies::of(0, &ROOK_DIRS)
                .place(0, &mut table)
                .is_none()
        );
    }

    /// The stored multipliers are what this module's seeded search finds (about 0.65 s in a
    /// release build; `cargo test --release -- --ignored stored_magics` prints them).
    #[test]
    #[ignore = "the search the stored multipliers spare every process"]
    fn the_stored_magics_are_the_seeded_searchs() {
        let mut rng = XorShift(MAGIC_SEED);
        let mut table = Vec::new();
        let mut found = |dirs: &[(i8, i8)]| -> Vec<u64> {
            (0..64)
                .map(|sq| find_magic(sq, dirs, &mut rng, &mut table).magic)
                .collect()
        };
        let (rooks, bishops) = (found(&ROOK_DIRS), found(&BISHOP_DIRS));
        println!("ROOK_MAGICS {rooks:#018x?}\nBISHOP_MAGICS {bishops:#018x?}");
        assert_eq!(rooks, ROOK_MAGICS);
        assert_eq!(bishops, BISHOP_MAGICS);
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
