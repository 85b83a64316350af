//! Textures in linear RGB and the procedural materials of the table scene (wood, cloth,
//! board squares, clock faces). Every generator is a pure function of its seed.

use std::path::Path;

use super::SimError;
use super::math::{Vec3, fast_floor};
use super::rng::hash3;

/// A linear-RGB texture with a box-filtered mip chain; sampled bilinearly with wrap-around.
#[derive(Clone, Debug)]
pub struct Texture {
    /// Level 0 first; each level halves both sides (at least 1 texel).
    levels: Vec<Level>,
}

#[derive(Clone, Debug)]
struct Level {
    w: usize,
    h: usize,
    texels: Vec<Vec3>,
}

/// sRGB transfer → linear, for colours given in the usual 0..1 sRGB space.
pub fn srgb_to_linear(c: f32) -> f32 {
    if c <= 0.04045 {
        c / 12.92
    } else {
        ((c + 0.055) / 1.055).powf(2.4)
    }
}

/// Linear → sRGB transfer.
pub fn linear_to_srgb(c: f32) -> f32 {
    let c = c.clamp(0.0, 1.0);
    if c <= 0.003_130_8 {
        c * 12.92
    } else {
        1.055 * c.powf(1.0 / 2.4) - 0.055
    }
}

/// An sRGB triple as a linear colour.
pub fn srgb(c: [f32; 3]) -> Vec3 {
    Vec3::new(
        srgb_to_linear(c[0]),
        srgb_to_linear(c[1]),
        srgb_to_linear(c[2]),
    )
}

impl Texture {
    /// Builds a texture from `w × h` linear texels (row 0 is v = 0).
    ///
    /// # Panics
    /// If the size is zero or `texels.len() != w * h` (a programming error: file input goes
    /// through [`Texture::load`], which checks).
    pub fn from_texels(w: usize, h: usize, texels: Vec<Vec3>) -> Texture {
        assert!(w > 0 && h > 0, "texture size must be positive");
        assert_eq!(texels.len(), w * h, "texel count must match the size");
        let mut levels = vec![Level { w, h, texels }];
        while let Some(l) = levels.last() {
            if l.w <= 1 && l.h <= 1 {
                break;
            }
            let (nw, nh) = ((l.w / 2).max(1), (l.h / 2).max(1));
            let mut t = Vec::with_capacity(nw * nh);
            for y in 0..nh {
                for x in 0..nw {
                    let (x0, y0) = ((2 * x).min(l.w - 1), (2 * y).min(l.h - 1));
                    let (x1, y1) = ((2 * x + 1).min(l.w - 1), (2 * y + 1).min(l.h - 1));
                    let s = l.texels[y0 * l.w + x0]
                        + l.texels[y0 * l.w + x1]
                        + l.texels[y1 * l.w + x0]
                        + l.texels[y1 * l.w + x1];
                    t.push(s * 0.25);
                }
            }
            levels.push(Level {
                w: nw,
                h: nh,
                texels: t,
            });
        }
        Texture { levels }
    }

    /// A texture generated texel by texel from `f(u, v)` with u, v in [0, 1).
    pub fn generate(w: usize, h: usize, f: impl Fn(f32, f32) -> Vec3) -> Texture {
        let mut t = Vec::with_capacity(w * h);
        for y in 0..h {
            for x in 0..w {
                t.push(f((x as f32 + 0.5) / w as f32, (y as f32 + 0.5) / h as f32));
            }
        }
        Texture::from_texels(w, h, t)
    }

    /// Loads an image file (sRGB) as a linear texture. Image row 0 is the top, i.e. v = 1
    /// in the OpenGL convention the dreamchess and OBJ texture coordinates use.
    pub fn load(path: &Path) -> Result<Texture, SimError> {
        let img = image::open(path)
            .map_err(|e| SimError::Image(format!("{}: {e}", path.display())))?
            .to_rgb8();
        let (w, h) = (img.width() as usize, img.height() as usize);
        if w == 0 || h == 0 {
            return Err(SimError::Image(format!("{}: empty image", path.display())));
        }
        let lut: Vec<f32> = (0..256).map(|i| srgb_to_linear(i as f32 / 255.0)).collect();
        let mut t = Vec::with_capacity(w * h);
        for y in 0..h {
            for x in 0..w {
                let p = img.get_pixel(x as u32, (h - 1 - y) as u32).0;
                t.push(Vec3::new(
                    lut[p[0] as usize],
                    lut[p[1] as usize],
                    lut[p[2] as usize],
                ));
            }
        }
        Ok(Texture::from_texels(w, h, t))
    }

    pub fn size(&self) -> (usize, usize) {
        (self.levels[0].w, self.levels[0].h)
    }

    /// Mean colour (the last mip level).
    pub fn mean(&self) -> Vec3 {
        self.levels
            .last()
            .map(|l| l.texels[0])
            .unwrap_or(Vec3::ZERO)
    }

    /// Bilinear sample at (u, v) of mip `level`, wrapping.
    pub fn sample(&self, u: f32, v: f32, level: usize) -> Vec3 {
        let l = &self.levels[level.min(self.levels.len() - 1)];
        let x = u * l.w as f32 - 0.5;
        let y = v * l.h as f32 - 0.5;
        let (xf, yf) = (fast_floor(x), fast_floor(y));
        let (fx, fy) = (x - xf, y - yf);
        let wrap = |i: i64, n: usize| i.rem_euclid(n as i64) as usize;
        let (x0, y0) = (wrap(xf as i64, l.w), wrap(yf as i64, l.h));
        let (x1, y1) = ((x0 + 1) % l.w, (y0 + 1) % l.h);
        let t = &l.texels;
        let a = t[y0 * l.w + x0].lerp(t[y0 * l.w + x1], fx);
        let b = t[y1 * l.w + x0].lerp(t[y1 * l.w + x1], fx);
        a.lerp(b, fy)
    }
}

/// Smooth value noise in [0, 1] on an integer lattice, periodic with `period` cells.
pub fn value_noise(x: f32, y: f32, seed: u32, period: i32) -> f32 {
    let (xf, yf) = (fast_floor(x), fast_floor(y));
    let (fx, fy) = (x - xf, y - yf);
    let (sx, sy) = (fx * fx * (3.0 - 2.0 * fx), fy * fy * (3.0 - 2.0 * fy));
    let p = period.max(1);
    let (xi, yi) = ((xf as i32).rem_euclid(p), (yf as i32).rem_euclid(p));
    let (xj, yj) = (
        if xi + 1 == p { 0 } else { xi + 1 },
        if yi + 1 == p { 0 } else { yi + 1 },
    );
    let h = |a: i32, b: i32| (hash3(a, b, seed) >> 8) as f32 * (1.0 / (1u32 << 24) as f32);
    let (h00, h10, h01, h11) = (h(xi, yi), h(xj, yi), h(xi, yj), h(xj, yj));
    let a = h00 + (h10 - h00) * sx;
    let b = h01 + (h11 - h01) * sx;
    a + (b - a) * sy
}

/// Fractal sum of `octaves` value-noise layers, periodic with `period` base cells; in [0, 1].
pub fn fbm(x: f32, y: f32, seed: u32, period: i32, octaves: u32) -> f32 {
    let (mut sum, mut amp, mut norm, mut f) = (0.0, 1.0, 0.0, 1.0);
    for o in 0..octaves {
        sum += amp * value_noise(x * f, y * f, seed.wrapping_add(o * 7919), period * f as i32);
        norm += amp;
        amp *= 0.5;
        f *= 2.0;
    }
    sum / norm
}

/// Parameters of a procedural wood surface.
#[derive(Clone, Copy, Debug)]
pub struct Wood {
    /// Base colour (linear) and the darker late-wood colour of the rings.
    pub light: Vec3,
    pub dark: Vec3,
    /// Rings per unit of the across-grain coordinate.
    pub ring_frequency: f32,
    /// How much the rings wander (0 = straight stripes).
    pub turbulence: f32,
    pub seed: u32,
}

impl Wood {
    /// Colour at (along, across) grain coordinates in texture units: long streaks along the
    /// grain, growth rings that wander slowly, and fine pores.
    pub fn at(&self, along: f32, across: f32) -> Vec3 {
        const P: i32 = 1 << 14;
        let warp = fbm(along * 1.2 + 11.0, across * 2.5 + 7.0, self.seed, P, 3);
        let ring = ((across * self.ring_frequency + self.turbulence * 3.0 * warp)
            * std::f32::consts::TAU)
            .sin()
            * 0.5
            + 0.5;
        let ring = ring * ring * ring;
        let streak = fbm(
            along * 2.0 + 3.0,
            across * self.ring_frequency * 14.0 + 5.0,
            self.seed ^ 0x55,
            P,
            2,
        );
        let pores = value_noise(
            along * 40.0,
            across * self.ring_frequency * 60.0,
            self.seed ^ 0xAA,
            P,
        );
        let t = (0.45 * ring + 0.4 * (streak - 0.5) + 0.35 * (warp - 0.5) + 0.1 * pores + 0.2)
            .clamp(0.0, 1.0);
        self.light.lerp(self.dark, t)
    }
}

/// Table top of veneer strips (`strips` across the v direction) in one wood, `aspect` = table
/// length / depth so the grain keeps its proportions.
pub fn table_wood(wood: Wood, strips: u32, aspect: f32, w: usize, h: usize) -> Texture {
    let strips = strips.max(1);
    Texture::generate(w, h, |u, v| {
        let p = (v * strips as f32).floor();
        let local = v * strips as f32 - p;
        let mut wd = wood;
        wd.seed = wood.seed.wrapping_add(p as u32 * 101);
        let shade = 0.9 + 0.2 * (hash3(p as i32, 3, wood.seed) as f32 / u32::MAX as f32);
        let c = wd.at(
            u * aspect * 1.5 + p * 0.37,
            (local + p * 1.3) / strips as f32 * 1.5,
        ) * shade;
        // Faint joint between strips.
        let d = local.min(1.0 - local) * h as f32 / strips as f32;
        c * (0.8 + 0.2 * d.clamp(0.0, 1.0))
    })
}

/// Melamine / laminate: nearly uniform with a faint mottle.
pub fn laminate(colour: Vec3, seed: u32, w: usize, h: usize) -> Texture {
    Texture::generate(w, h, |u, v| {
        colour * (0.95 + 0.1 * fbm(u * 16.0, v * 8.0, seed, 1 << 14, 4))
    })
}

/// A woven cloth: fine isotropic noise plus a faint weave.
pub fn cloth(colour: Vec3, seed: u32, w: usize, h: usize) -> Texture {
    Texture::generate(w, h, |u, v| {
        let n = fbm(u * 24.0, v * 24.0, seed, 24, 5);
        let weave = ((u * 600.0 * std::f32::consts::TAU).sin()
            * (v * 600.0 * std::f32::consts::TAU).sin())
            * 0.04;
        colour * (0.82 + 0.3 * n + weave)
    })
}

/// Colours and textures of a chess board.
#[derive(Clone, Copy, Debug)]
pub struct BoardLook {
    pub light: Wood,
    pub dark: Wood,
    pub border: Wood,
    /// Border width as a fraction of the board side (on each edge).
    pub border_fraction: f32,
    /// Thin inlay line between border and squares (linear colour).
    pub inlay: Option<Vec3>,
    /// A printed vinyl/roll-up board: flat colours with a faint mottle instead of wood grain.
    pub flat: bool,
    /// Files and ranks printed on the frame.
    pub notation: bool,
}

/// 5×7 bitmaps (rows top to bottom, bit 4 = leftmost column) of the notation printed on a
/// board's frame: files `a`–`h`, ranks `1`–`8`.
const NOTATION_GLYPHS: [[u8; 7]; 16] = [
    [
        0b00000, 0b00000, 0b01110, 0b00001, 0b01111, 0b10001, 0b01111,
    ], // a
    [
        0b10000, 0b10000, 0b11110, 0b10001, 0b10001, 0b10001, 0b11110,
    ], // b
    [
        0b00000, 0b00000, 0b01110, 0b10000, 0b10000, 0b10001, 0b01110,
    ], // c
    [
        0b00001, 0b00001, 0b01111, 0b10001, 0b10001, 0b10001, 0b01111,
    ], // d
    [
        0b00000, 0b00000, 0b01110, 0b10001, 0b11111, 0b10000, 0b01110,
    ], // e
    [
        0b00110, 0b01001, 0b01000, 0b11100, 0b01000, 0b01000, 0b01000,
    ], // f
    [
        0b00000, 0b01111, 0b10001, 0b10001, 0b01111, 0b00001, 0b01110,
    ], // g
    [
        0b10000, 0b10000, 0b10110, 0b11001, 0b10001, 0b10001, 0b10001,
    ], // h
    [
        0b00100, 0b01100, 0b00100, 0b00100, 0b00100, 0b00100, 0b01110,
    ], // 1
    [
        0b01110, 0b10001, 0b00001, 0b00010, 0b00100, 0b01000, 0b11111,
    ], // 2
    [
        0b11111, 0b00010, 0b00100, 0b00010, 0b00001, 0b10001, 0b01110,
    ], // 3
    [
        0b00010, 0b00110, 0b01010, 0b10010, 0b11111, 0b00010, 0b00010,
    ], // 4
    [
        0b11111, 0b10000, 0b11110, 0b00001, 0b00001, 0b10001, 0b01110,
    ], // 5
    [
        0b00110, 0b01000, 0b10000, 0b11110, 0b10001, 0b10001, 0b01110,
    ], // 6
    [
        0b11111, 0b00001, 0b00010, 0b00100, 0b01000, 0b01000, 0b01000,
    ], // 7
    [
        0b01110, 0b10001, 0b10001, 0b01110, 0b10001, 0b10001, 0b01110,
    ], // 8
];

/// Whether board-texture point (u, v) lies on a stroke of the frame's notation. Letters stand
/// in the middle of the bottom and top frame under each file, digits in the left and right
/// frame beside each rank, all upright for White.
fn on_notation(u: f32, v: f32, b: f32, sq: f32) -> bool {
    let gh = 0.42 * b; // glyph height
    let gw = gh * 5.0 / 7.0;
    let cell = |du: f32, dv: f32, glyph: usize| -> bool {
        // du, dv: offset from the glyph centre.
        let gx = du / gw + 0.5;
        let gy = 0.5 - dv / gh;
        if !(0.0..1.0).contains(&gx) || !(0.0..1.0).contains(&gy) {
            return false;
        }
        let (col, row) = ((gx * 5.0) as usize, (gy * 7.0) as usize);
        NOTATION_GLYPHS[glyph][row.min(6)] >> (4 - col.min(4)) & 1 == 1
    };
    let x = (u - b) / sq;
    let y = (v - b) / sq;
    if (0.0..8.0).contains(&x) && (v < b || v > 1.0 - b) {
        let f = x.floor();
        let cv = if v < b { b * 0.5 } else { 1.0 - b * 0.5 };
        return cell(u - (b + (f + 0.5) * sq), v - cv, f as usize);
    }
    if (0.0..8.0).contains(&y) && (u < b || u > 1.0 - b) {
        let r = y.floor();
        let cu = if u < b { b * 0.5 } else { 1.0 - b * 0.5 };
        return cell(u - cu, v - (b + (r + 0.5) * sq), 8 + r as usize);
    }
    false
}

/// A board top: border frame around 8×8 squares, each square with its own grain offset and
/// orientation. `n` texels per side. v grows from rank 1 towards rank 8.
pub fn board_top(look: &BoardLook, n: usize) -> Texture {
    let b = look.border_fraction;
    let sq = (1.0 - 2.0 * b) / 8.0;
    Texture::generate(n, n, |u, v| {
        let (x, y) = ((u - b) / sq, (v - b) / sq);
        if (0.0..8.0).contains(&x) && (0.0..8.0).contains(&y) {
            let (fi, ri) = (x.floor(), y.floor());
            let light_sq = (fi as i32 + ri as i32) % 2 == 1;
            let mut w = if light_sq { look.light } else { look.dark };
            if look.flat {
                return w.light * (0.96 + 0.08 * fbm(u * 40.0, v * 40.0, w.seed, 1 << 14, 3));
            }
            w.seed = w.seed.wrapping_add((ri as u32) * 8 + fi as u32);
            let turned = hash3(fi as i32, ri as i32, w.seed) & 1 == 1;
            let (along, across) = if turned {
                (y - ri, x - fi)
            } else {
                (x - fi, y - ri)
            };
            let c = w.at(
                along * 0.5 + fi * 0.31,
                across * 0.2 + ri * 0.17 + fi * 0.05,
            );
            // A tiny darkening right at square seams (veneer joints).
            let seam_d = (x - fi).min(1.0 - (x - fi)).min(y - ri).min(1.0 - (y - ri));
            c * (0.93 + 0.07 * (seam_d * 60.0).clamp(0.0, 1.0))
        } else {
            let inside = |d: f32| d.abs() < 0.1 * b;
            let d_in = if (0.0..8.0).contains(&x) {
                0.0
            } else if x < 0.0 {
                x * sq
            } else {
                (x - 8.0) * sq
            };
            let d_in_y = if (0.0..8.0).contains(&y) {
                0.0
            } else if y < 0.0 {
                y * sq
            } else {
                (y - 8.0) * sq
            };
            if let Some(c) = look.inlay
                && inside(d_in.abs().max(d_in_y.abs()) - 0.25 * b)
            {
                return c;
            }
            if look.flat {
                if look.notation && on_notation(u, v, b, sq) {
                    return look.dark.light * 0.8;
                }
                return look.border.light
                    * (0.96 + 0.08 * fbm(u * 40.0, v * 40.0, look.border.seed, 1 << 14, 3));
            }
            if look.notation && on_notation(u, v, b, sq) {
                return look.light.light * 0.9;
            }
            let horizontal = d_in_y.abs() > d_in.abs();
            let (along, across) = if horizontal { (u, v) } else { (v, u) };
            look.border.at(along * 3.0, across * 0.6)
        }
    })
}

/// Front plate of a chess clock: dark body with two LCD windows showing digit-like bars.
pub fn clock_face(body: Vec3, seed: u32) -> Texture {
    let lcd = srgb([0.62, 0.66, 0.58]);
    let ink = srgb([0.12, 0.13, 0.12]);
    Texture::generate(256, 128, |u, v| {
        for (i, x0) in [0.08f32, 0.54].into_iter().enumerate() {
            let (lx, ly) = ((u - x0) / 0.38, (v - 0.3) / 0.4);
            if (0.0..1.0).contains(&lx) && (0.0..1.0).contains(&ly) {
                // Four seven-segment-ish digit cells.
                let cell = (lx * 4.0).floor();
                let cx = lx * 4.0 - cell;
                let h = hash3(cell as i32, i as i32, seed);
                let on = |bit: u32| (h >> bit) & 1 == 1;
                let vert = (cx > 0.2 && cx < 0.3) || (cx > 0.7 && cx < 0.8);
                let horiz = (cx > 0.2 && cx < 0.8)
                    && ((ly - 0.2).abs() < 0.05
                        || (ly - 0.5).abs() < 0.05
                        || (ly - 0.8).abs() < 0.05);
                let seg = (vert
                    && ly > 0.2
                    && ly < 0.8
                    && on(1 + (ly > 0.5) as u32 * 2 + (cx > 0.5) as u32))
                    || (horiz && on(5 + ((ly * 3.0) as u32)));
                return if seg && cell != 1.0
                    || (cell == 1.0
                        && cx > 0.85
                        && ((ly - 0.35).abs() < 0.05 || (ly - 0.65).abs() < 0.05))
                {
                    ink
                } else {
                    lcd
                };
            }
        }
        body * (0.9 + 0.2 * value_noise(u * 40.0, v * 20.0, seed, 40))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notation_sits_in_the_frame_beside_its_file_and_rank() {
        let (b, sq) = (0.05f32, 0.9f32 / 8.0);
        let hits = |u0: f32, u1: f32, v0: f32, v1: f32| {
            let mut n = 0;
            for i in 0..200 {
                for j in 0..200 {
                    let (u, v) = (
                        u0 + (u1 - u0) * i as f32 / 200.0,
                        v0 + (v1 - v0) * j as f32 / 200.0,
                    );
                    n += on_notation(u, v, b, sq) as usize;
                }
            }
            n
        };
        // Under file a (bottom frame) and beside rank 8 (left frame) there are strokes...
        assert!(hits(b, b + sq, 0.0, b) > 100);
        assert!(hits(0.0, b, 1.0 - b - sq, 1.0 - b) > 100);
        // ...none on the playing area or in the frame's corners.
        assert_eq!(hits(b, 1.0 - b, b, 1.0 - b), 0);
        assert_eq!(hits(0.0, b, 0.0, b), 0);
        // 'a' and 'h' differ.
        let glyph = |u0: f32| {
            (0..50)
                .flat_map(|i| (0..50).map(move |j| (i, j)))
                .filter(|&(i, j)| {
                    on_notation(u0 + sq * i as f32 / 50.0, b * j as f32 / 50.0, b, sq)
                })
                .count()
        };
        assert_ne!(glyph(b), glyph(b + 7.0 * sq));
    }

    #[test]
    fn srgb_round_trip() {
        for i in 0..=10 {
            let c = i as f32 / 10.0;
            assert!((linear_to_srgb(srgb_to_linear(c)) - c).abs() < 1e-5);
        }
    }

    #[test]
    fn mip_chain_preserves_mean_and_sampling_wraps() {
        let t = Texture::generate(16, 8, |u, _| Vec3::new(u, 0.0, 1.0));
        let mean = t.mean();
        assert!((mean.x - 0.5).abs() < 1e-5 && (mean.z - 1.0).abs() < 1e-6);
        let a = t.sample(0.25, 0.5, 0);
        let b = t.sample(1.25, -0.5, 0);
        assert!((a - b).length() < 1e-5);
    }

    #[test]
    fn board_top_has_contrasting_squares() {
        let wood = |l: [f32; 3], s| Wood {
            light: srgb(l),
            dark: srgb(l) * 0.8,
            ring_frequency: 3.0,
            turbulence: 0.3,
            seed: s,
        };
        let look = BoardLook {
            light: wood([0.9, 0.8, 0.6], 1),
            dark: wood([0.4, 0.25, 0.12], 2),
            border: wood([0.3, 0.2, 0.1], 3),
            border_fraction: 0.06,
            inlay: None,
            flat: false,
            notation: true,
        };
        let t = board_top(&look, 128);
        let sq = (1.0 - 0.12) / 8.0;
        // a1 (dark) and b1 (light) centres.
        let a1 = t.sample(0.06 + 0.5 * sq, 0.06 + 0.5 * sq, 0);
        let b1 = t.sample(0.06 + 1.5 * sq, 0.06 + 0.5 * sq, 0);
        assert!(b1.x > a1.x * 1.5, "light {b1:?} dark {a1:?}");
    }
}
