//! Rectification: per-square patches that include the piece standing on the square, and
//! pocket-zone patches, cut from a frame through sampling maps computed once per calibration.
//!
//! A square's patch is the quad whose bottom edge is the square's lowest edge in the image and
//! whose top edge is the square's far edge lifted straight up in the image by `piece_height`
//! square widths (the camera sees a standing piece above and behind its square). The quad is
//! warped to a `patch_w × patch_h` patch with image-up as patch-up; bilinear taps are stored
//! as (pixel index, 8-bit weights), so cutting all 128 patches is one pass over the taps.

use image::RgbImage;
use serde::{Deserialize, Serialize};

use super::calibration::{Calibration, CalibrationError};
use super::geometry::{Homography, Point};
use crate::tracker::{LOOK_GRID, POCKET_LOOK_GRID, PocketLook, SquareLook};

/// Patch sizes and the upward extension: TOML via serde with defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RectifyConfig {
    pub patch_w: u32,
    pub patch_h: u32,
    /// How far the patch reaches above the square, in square widths as seen in the image.
    pub piece_height: f64,
    /// The pocket network's patch reaches this many squares beyond each side of the calibrated
    /// zone (on the board's plane): pieces stand on the table below that plane and spill over
    /// the zone's edges. Part of the pocket model's input contract (it was trained with 0.5).
    pub pocket_margin: f64,
    pub pocket_w: u32,
    pub pocket_h: u32,
    /// Threads cutting the square patches (the two boards' halves in parallel when 2; the
    /// network runs after, so the cores are free then).
    pub threads: usize,
}

impl Default for RectifyConfig {
    fn default() -> Self {
        RectifyConfig {
            patch_w: 48,
            patch_h: 64,
            piece_height: 1.2,
            pocket_margin: 0.5,
            pocket_w: 96,
            pocket_h: 128,
            threads: 2,
        }
    }
}

impl RectifyConfig {
    /// Refuses sizes and distances no camera set-up needs, before any map is built.
    pub fn validate(&self) -> Result<(), CalibrationError> {
        if self.patch_w == 0
            || self.patch_h == 0
            || self.pocket_w == 0
            || self.pocket_h == 0
            || self.patch_w > 1024
            || self.patch_h > 1024
            || self.pocket_w > 2048
            || self.pocket_h > 2048
            || !(0.0..=10.0).contains(&self.piece_height)
            || !(0.0..=4.0).contains(&self.pocket_margin)
            || !(1..=8).contains(&self.threads)
        {
            return Err(CalibrationError::Invalid(
                "rectify: patch sizes must be 1..=1024 (pockets 1..=2048), piece_height 0..=10, \
                 pocket_margin 0..=4, threads 1..=8"
                    .into(),
            ));
        }
        Ok(())
    }
}

/// One bilinear tap: top-left source pixel index and fixed-point weights (0..=256).
#[derive(Clone, Copy, Debug)]
struct Tap {
    idx: u32,
    wx: u16,
    wy: u16,
}

/// Precomputed sampling maps for one calibration and frame size.
#[derive(Clone, Debug)]
pub struct Rectifier {
    config: RectifyConfig,
    width: u32,
    height: u32,
    /// 128 square maps (board A squares 0..64 by `rank * 8 + file`, then board B), each
    /// `patch_w * patch_h` taps, row-major.
    squares: Vec<Tap>,
    /// 4 pocket maps (A White, A Black, B White, B Black), `pocket_w * pocket_h` taps each.
    pockets: Vec<Tap>,
    /// 4 maps of the zones' surroundings, [`POCKET_WIDE`]² taps each.
    pocket_wide: Vec<Tap>,
    /// Source quads of the square patches (TL, TR, BR, BL), for overlays and tests.
    square_quads: Vec<[Point; 4]>,
    /// Windows over the pocket zones whose taps follow the squares' in `squares` (see
    /// [`Rectifier::add_pocket_windows`]).
    windows: Vec<PocketWindow>,
}

/// A board-square-sized window over a pocket zone. The square classifier reads it like a
/// square, so the pieces in a pocket are recognised by the same classifier, adapted to the same
/// set, as the pieces on the board.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PocketWindow {
    /// Zone 0..4: A White, A Black, B White, B Black.
    pub zone: usize,
    /// Centre on the table in its board's square units (file, rank; a1's outer corner is the
    /// origin), so distances between windows are in squares.
    pub centre: Point,
}

/// The patches of one frame: RGB bytes, patch after patch.
#[derive(Clone, Debug)]
pub struct Crops {
    pub patch_w: u32,
    pub patch_h: u32,
    /// 128 patches: board A's 64 squares (index `rank * 8 + file`), then board B's; then
    /// `windows` pocket-window patches of the same size ([`Rectifier::pocket_windows`]).
    pub squares: Vec<u8>,
    /// How many pocket-window patches follow the 128 squares.
    pub windows: usize,
    pub pocket_w: u32,
    pub pocket_h: u32,
    /// 4 patches: A White, A Black, B White, B Black.
    pub pockets: Vec<u8>,
    /// 4 patches of [`POCKET_WIDE`]² pixels, same order: each zone's surroundings (see
    /// [`Crops::pocket_look`]); empty when not cut.
    pub pocket_wide: Vec<u8>,
}

/// Side of the [`Crops::pocket_wide`] patches in pixels (only their block means are used).
pub const POCKET_WIDE: u32 = 32;
/// How much wider than the calibrated zone the look of a pocket is taken (about its centre).
const POCKET_WIDE_SCALE: f64 = 1.3;

impl Crops {
    /// No patches yet (buffers grow on the first [`Rectifier::rectify_into`]).
    pub fn empty() -> Crops {
        Crops {
            patch_w: 0,
            patch_h: 0,
            squares: Vec::new(),
            windows: 0,
            pocket_w: 0,
            pocket_h: 0,
            pockets: Vec::new(),
            pocket_wide: Vec::new(),
        }
    }

    /// The look of every square patch of `board` (0 = A): block means over a
    /// [`LOOK_GRID`]² grid (see [`SquareLook`]). None while the patches are not cut yet.
    pub fn looks(&self, board: usize) -> Option<Box<[SquareLook; 64]>> {
        let (w, h) = (self.patch_w as usize, self.patch_h as usize);
        let n = w * h * 3;
        let all = self.squares.get(board * 64 * n..(board + 1) * 64 * n)?;
        if w < LOOK_GRID || h < LOOK_GRID {
            return None;
        }
        let mut out = Box::new([[[0u8; 3]; LOOK_GRID * LOOK_GRID]; 64]);
        for (patch, look) in all.chunks_exact(n).zip(out.iter_mut()) {
            block_means(patch, w, h, LOOK_GRID, look);
        }
        Some(out)
    }

    /// Patch of square `index` (0..64) on board `board` (0 = A) as an image.
    pub fn square(&self, board: usize, index: usize) -> Option<RgbImage> {
        let n = (self.patch_w * self.patch_h * 3) as usize;
        let k = board * 64 + index;
        let bytes = self.squares.get(k * n..(k + 1) * n)?.to_vec();
        RgbImage::from_raw(self.patch_w, self.patch_h, bytes)
    }

    /// The look of pocket zone `k` (0 = A White, 1 = A Black, 2 = B White, 3 = B Black): a
    /// piece put into a zone or taken out of it changes it, whatever the pocket reader counts.
    /// Taken over an upright box around the zone widened by a third and lifted by the piece
    /// height, so that a piece set down at the zone's edge, or rising out of a foreshortened far
    /// zone, is inside it.
    pub fn pocket_look(&self, k: usize) -> Option<PocketLook> {
        let side = POCKET_WIDE as usize;
        let n = side * side * 3;
        let patch = self.pocket_wide.get(k * n..(k + 1) * n)?;
        let mut look = [[0u8; 3]; POCKET_LOOK_GRID * POCKET_LOOK_GRID];
        block_means(patch, side, side, POCKET_LOOK_GRID, &mut look);
        Some(look)
    }

    /// Pocket patch `k` (0 = A White, 1 = A Black, 2 = B White, 3 = B Black).
    pub fn pocket(&self, k: usize) -> Option<RgbImage> {
        let n = (self.pocket_w * self.pocket_h * 3) as usize;
        let bytes = self.pockets.get(k * n..(k + 1) * n)?.to_vec();
        RgbImage::from_raw(self.pocket_w, self.pocket_h, bytes)
    }
}

/// Mean RGB of each block of a `grid`² grid over a `w × h` RGB patch, row-major into `out`.
fn block_means(patch: &[u8], w: usize, h: usize, grid: usize, out: &mut [[u8; 3]]) {
    for by in 0..grid {
        let (y0, y1) = (by * h / grid, (by + 1) * h / grid);
        for bx in 0..grid {
            let (x0, x1) = (bx * w / grid, (bx + 1) * w / grid);
            let mut sum = [0u32; 3];
            for y in y0..y1 {
                let row = &patch[(y * w + x0) * 3..(y * w + x1) * 3];
                for px in row.chunks_exact(3) {
                    for ch in 0..3 {
                        sum[ch] += px[ch] as u32;
                    }
                }
            }
            let count = (((y1 - y0) * (x1 - x0)) as u32).max(1);
            out[by * grid + bx] = sum.map(|v| ((v + count / 2) / count) as u8);
        }
    }
}

/// The upright box (TL, TR, BR, BL) around pocket quad `q` scaled by [`POCKET_WIDE_SCALE`]
/// about its centre, together with the same lifted by `lift` pixels.
fn wide_box(q: &[Point; 4], lift: f64) -> [Point; 4] {
    let c = [
        q.iter().map(|p| p[0]).sum::<f64>() / 4.0,
        q.iter().map(|p| p[1]).sum::<f64>() / 4.0,
    ];
    let scaled = q.map(|p| {
        [
            c[0] + POCKET_WIDE_SCALE * (p[0] - c[0]),
            c[1] + POCKET_WIDE_SCALE * (p[1] - c[1]),
        ]
    });
    let x0 = scaled.iter().map(|p| p[0]).fold(f64::MAX, f64::min);
    let x1 = scaled.iter().map(|p| p[0]).fold(f64::MIN, f64::max);
    let y0 = scaled.iter().map(|p| p[1]).fold(f64::MAX, f64::min) - lift;
    let y1 = scaled.iter().map(|p| p[1]).fold(f64::MIN, f64::max);
    [[x0, y0], [x1, y0], [x1, y1], [x0, y1]]
}

/// Orders a quad as (TL, TR, BR, BL) with its lowest edge at the bottom.
fn upright(q: &[Point; 4]) -> [Point; 4] {
    let low = (0..4)
        .max_by(|&a, &b| {
            let ya = q[a][1] + q[(a + 1) % 4][1];
            let yb = q[b][1] + q[(b + 1) % 4][1];
            ya.total_cmp(&yb)
        })
        .unwrap_or(0);
    let (p0, p1, p2, p3) = (q[low], q[(low + 1) % 4], q[(low + 2) % 4], q[(low + 3) % 4]);
    if p0[0] <= p1[0] {
        [p3, p2, p1, p0]
    } else {
        [p2, p3, p0, p1]
    }
}

/// Centres of one-square windows along `(lo, hi)`: evenly spaced, at most `step` apart, the
/// outer ones half a square inside the ends (one in the middle when the span is a square or
/// less).
fn window_centres((lo, hi): (f64, f64), step: f64) -> Vec<f64> {
    let span = hi - lo - 1.0;
    if span <= 1e-9 {
        return vec![(lo + hi) / 2.0];
    }
    let n = (span / step - 1e-9).ceil().max(1.0) as usize;
    (0..=n)
        .map(|i| lo + 0.5 + span * i as f64 / n as f64)
        .collect()
}

/// `q` (a zone quad in pixels) grown by `margin` squares on every side in the board's
/// coordinates of `hb`; unchanged when the margin is 0 or the homography has no inverse.
fn widened(q: &[Point; 4], hb: &Homography, margin: f64) -> [Point; 4] {
    let Some(inv) = (margin > 0.0).then(|| hb.inverse()).flatten() else {
        return *q;
    };
    let b = q.map(|p| inv.map(p));
    let c = [
        b.iter().map(|p| p[0]).sum::<f64>() / 4.0,
        b.iter().map(|p| p[1]).sum::<f64>() / 4.0,
    ];
    b.map(|p| {
        hb.map([
            p[0] + margin * (p[0] - c[0]).signum(),
            p[1] + margin * (p[1] - c[1]).signum(),
        ])
    })
}

fn lifted(q: [Point; 4], lift: f64) -> [Point; 4] {
    let [tl, tr, br, bl] = q;
    [[tl[0], tl[1] - lift], [tr[0], tr[1] - lift], br, bl]
}

fn taps(quad: &[Point; 4], pw: u32, ph: u32, w: u32, h: u32) -> Result<Vec<Tap>, CalibrationError> {
    let (fw, fh) = (pw as f64, ph as f64);
    let rect = [[0.0, 0.0], [fw, 0.0], [fw, fh], [0.0, fh]];
    let map = Homography::fit(&rect, quad)
        .ok_or_else(|| CalibrationError::Invalid("degenerate crop quad".into()))?;
    let mut out = Vec::with_capacity((pw * ph) as usize);
    for y in 0..ph {
        for x in 0..pw {
            let p = map.map([x as f64 + 0.5, y as f64 + 0.5]);
            let (px, py) = (
                p[0].clamp(0.0, w as f64 - 1.001),
                p[1].clamp(0.0, h as f64 - 1.001),
            );
            let (px, py) = if px.is_finite() && py.is_finite() {
                (px, py)
            } else {
                (0.0, 0.0)
            };
            let (x0, y0) = (px.floor(), py.floor());
            out.push(Tap {
                idx: (y0 as u32).min(h - 2) * w + (x0 as u32).min(w - 2),
                wx: ((px - x0) * 256.0).round() as u16,
                wy: ((py - y0) * 256.0).round() as u16,
            });
        }
    }
    Ok(out)
}

#[inline]
fn run_taps(taps: &[Tap], src: &[u8], stride: usize, out: &mut [u8]) {
    for (t, o) in taps.iter().zip(out.chunks_exact_mut(3)) {
        let i = t.idx as usize * 3;
        let (wx, wy) = (t.wx as u32, t.wy as u32);
        let w = [
            (256 - wx) * (256 - wy),
            wx * (256 - wy),
            (256 - wx) * wy,
            wx * wy,
        ];
        // One range check for the 2×2 neighbourhood (the map keeps x0 ≤ w−2, y0 ≤ h−2).
        let Some(px) = src.get(i..i + stride + 6) else {
            continue;
        };
        let (top, bot) = px.split_at(stride);
        let (top, bot) = (&top[..6], &bot[..6]);
        for c in 0..3 {
            let v = top[c] as u32 * w[0]
                + top[c + 3] as u32 * w[1]
                + bot[c] as u32 * w[2]
                + bot[c + 3] as u32 * w[3];
            o[c] = ((v + 32_768) >> 16) as u8;
        }
    }
}

impl Rectifier {
    /// The patch sizes and lifts the maps were built with.
    pub fn config(&self) -> &RectifyConfig {
        &self.config
    }

    /// Precomputes the sampling maps of all 128 squares and 4 pockets.
    pub fn new(cal: &Calibration, config: &RectifyConfig) -> Result<Rectifier, CalibrationError> {
        cal.validate()?;
        config.validate()?;
        let (w, h) = (cal.width, cal.height);
        let mut squares = Vec::with_capacity(128 * (config.patch_w * config.patch_h) as usize);
        let mut pockets = Vec::new();
        let mut pocket_wide = Vec::new();
        let mut square_quads = Vec::with_capacity(128);
        for board in &cal.boards {
            let hb = &board.homography;
            for index in 0..64 {
                let (f, r) = ((index % 8) as f64, (index / 8) as f64);
                let q = [[f, r], [f + 1.0, r], [f + 1.0, r + 1.0], [f, r + 1.0]].map(|p| hb.map(p));
                let up = upright(&q);
                let width = (up[2][0] - up[3][0]).hypot(up[2][1] - up[3][1]);
                let quad = lifted(up, config.piece_height * width);
                squares.extend(taps(&quad, config.patch_w, config.patch_h, w, h)?);
                square_quads.push(quad);
            }
            let c = &board.corners;
            let sq = ((c[1][0] - c[0][0]).hypot(c[1][1] - c[0][1])
                + (c[3][0] - c[2][0]).hypot(c[3][1] - c[2][1]))
                / 16.0;
            for pq in &board.pockets {
                // The margin widens the counting network's patch only; the look keeps its box.
                let zone = widened(pq, hb, config.pocket_margin);
                let quad = lifted(upright(&zone), config.piece_height * sq);
                pockets.extend(taps(&quad, config.pocket_w, config.pocket_h, w, h)?);
                let wide = wide_box(pq, config.piece_height * sq);
                pocket_wide.extend(taps(&wide, POCKET_WIDE, POCKET_WIDE, w, h)?);
            }
        }
        Ok(Rectifier {
            config: config.clone(),
            width: w,
            height: h,
            squares,
            pockets,
            pocket_wide,
            square_quads,
            windows: Vec::new(),
        })
    }

    /// Source quad (TL, TR, BR, BL in pixels) of square patch `k` (board A 0..64, B 64..128).
    pub fn square_quad(&self, k: usize) -> Option<[Point; 4]> {
        self.square_quads.get(k).copied()
    }

    /// Tiles the pocket zones of `cal` (the calibration this rectifier was built from) marked in
    /// `zones` (A White, A Black, B White, B Black) with windows one square wide, centres at
    /// most `step` squares apart and at least half a square inside the zone; from now on they
    /// are cut after the squares (see [`Crops::windows`]). Replaces earlier windows; returns how
    /// many there are.
    pub fn add_pocket_windows(
        &mut self,
        cal: &Calibration,
        step: f64,
        zones: [bool; 4],
    ) -> Result<usize, CalibrationError> {
        if !(0.05..=4.0).contains(&step) {
            return Err(CalibrationError::Invalid(format!(
                "rectify: pocket window step must be 0.05..=4 squares, not {step}"
            )));
        }
        let config = &self.config;
        let (w, h) = (self.width, self.height);
        // Built aside, so that an error leaves the rectifier as it was.
        let mut taps_out = Vec::new();
        let mut windows = Vec::new();
        for (b, board) in cal.boards.iter().enumerate() {
            let hb = &board.homography;
            let back = hb.inverse().ok_or_else(|| {
                CalibrationError::Invalid(format!("board {}: singular homography", board.label))
            })?;
            for (side, pq) in board.pockets.iter().enumerate() {
                if !zones[2 * b + side] {
                    continue;
                }
                let on_table = pq.map(|p| back.map(p));
                let range = |axis: usize| {
                    let v = on_table.map(|p| p[axis]);
                    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
                    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    (lo, hi)
                };
                let (files, ranks) = (range(0), range(1));
                if ![files.0, files.1, ranks.0, ranks.1]
                    .iter()
                    .all(|v| v.is_finite())
                {
                    return Err(CalibrationError::Invalid(format!(
                        "board {}: pocket zone does not map onto the table",
                        board.label
                    )));
                }
                for r in window_centres(ranks, step) {
                    for f in window_centres(files, step) {
                        let q = [
                            [f - 0.5, r - 0.5],
                            [f + 0.5, r - 0.5],
                            [f + 0.5, r + 0.5],
                            [f - 0.5, r + 0.5],
                        ]
                        .map(|p| hb.map(p));
                        let up = upright(&q);
                        let width = (up[2][0] - up[3][0]).hypot(up[2][1] - up[3][1]);
                        let quad = lifted(up, config.piece_height * width);
                        taps_out.extend(taps(&quad, config.patch_w, config.patch_h, w, h)?);
                        windows.push(PocketWindow {
                            zone: 2 * b + side,
                            centre: [f, r],
                        });
                    }
                }
            }
        }
        let squares = self.square_quads.len() * (config.patch_w * config.patch_h) as usize;
        self.squares.truncate(squares);
        self.squares.extend(taps_out);
        self.windows = windows;
        Ok(self.windows.len())
    }

    /// The pocket windows in the order their patches follow the squares.
    pub fn pocket_windows(&self) -> &[PocketWindow] {
        &self.windows
    }

    /// Cuts all square and pocket patches of `frame` into `crops` (reusing its buffers).
    pub fn rectify_into(
        &self,
        frame: &RgbImage,
        crops: &mut Crops,
    ) -> Result<(), CalibrationError> {
        if frame.width() != self.width || frame.height() != self.height {
            return Err(CalibrationError::ImageSize {
                got_w: frame.width(),
                got_h: frame.height(),
                want_w: self.width,
                want_h: self.height,
            });
        }
        let c = &self.config;
        crops.patch_w = c.patch_w;
        crops.patch_h = c.patch_h;
        crops.pocket_w = c.pocket_w;
        crops.pocket_h = c.pocket_h;
        crops.squares.resize(self.squares.len() * 3, 0);
        crops.windows = self.windows.len();
        crops.pockets.resize(self.pockets.len() * 3, 0);
        let src = frame.as_raw();
        let stride = self.width as usize * 3;
        let parts = c.threads.clamp(1, 8);
        if parts == 1 {
            run_taps(&self.squares, src, stride, &mut crops.squares);
        } else {
            // Equal runs of whole taps; the last part runs on this thread. If the system
            // refuses a thread, everything is cut again on this one (no panic, same bytes).
            let per = self.squares.len().div_ceil(parts);
            let all_spawned = std::thread::scope(|s| {
                let mut jobs = self
                    .squares
                    .chunks(per)
                    .zip(crops.squares.chunks_mut(per * 3));
                let last = jobs.next_back();
                let mut ok = true;
                for (taps, out) in jobs {
                    ok &= std::thread::Builder::new()
                        .spawn_scoped(s, move || run_taps(taps, src, stride, out))
                        .is_ok();
                }
                if let Some((taps, out)) = last {
                    run_taps(taps, src, stride, out);
                }
                ok
            });
            if !all_spawned {
                run_taps(&self.squares, src, stride, &mut crops.squares);
            }
        }
        run_taps(&self.pockets, src, stride, &mut crops.pockets);
        crops.pocket_wide.resize(self.pocket_wide.len() * 3, 0);
        run_taps(&self.pocket_wide, src, stride, &mut crops.pocket_wide);
        Ok(())
    }

    /// Cuts all square and pocket patches of `frame`.
    pub fn rectify(&self, frame: &RgbImage) -> Result<Crops, CalibrationError> {
        let mut crops = Crops::empty();
        self.rectify_into(frame, &mut crops)?;
        Ok(crops)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vision::calibration::CalibrationConfig;
    use image::Rgb;

    #[test]
    fn looks_are_the_block_means_of_each_patch() {
        let (w, h) = (8u32, 12u32);
        let n = (w * h * 3) as usize;
        let mut squares = vec![0u8; 128 * n];
        // Board B's square 5: red 200 in the top-left block (2×3 pixels), 10 elsewhere.
        let patch = &mut squares[(64 + 5) * n..(64 + 6) * n];
        for y in 0..h as usize {
            for x in 0..w as usize {
                let v = if x < 2 && y < 3 { 200 } else { 10 };
                patch[(y * w as usize + x) * 3] = v;
            }
        }
        let crops = Crops {
            patch_w: w,
            patch_h: h,
            squares,
            ..Crops::empty()
        };
        let b = crops.looks(1).unwrap();
        assert_eq!(b[5][0], [200, 0, 0]);
        assert!(b[5][1..].iter().all(|m| *m == [10, 0, 0]));
        assert!(b[4].iter().all(|m| *m == [0, 0, 0]));
        assert!(
            crops
                .looks(0)
                .unwrap()
                .iter()
                .flatten()
                .all(|m| *m == [0, 0, 0])
        );
        assert!(crops.looks(2).is_none(), "there are two boards");
    }

    #[test]
    fn a_pocket_look_is_the_block_means_of_its_zone() {
        let side = POCKET_WIDE as usize;
        let n = side * side * 3;
        // Zone 2 (B White): green 90 in the bottom-right block, 30 elsewhere.
        let mut pocket_wide = vec![0u8; 4 * n];
        for y in 0..side {
            for x in 0..side {
                let v = if x >= side * 7 / 8 && y >= side * 7 / 8 {
                    90
                } else {
                    30
                };
                pocket_wide[2 * n + (y * side + x) * 3 + 1] = v;
            }
        }
        let crops = Crops {
            pocket_wide,
            ..Crops::empty()
        };
        let look = crops.pocket_look(2).unwrap();
        assert_eq!(look[63], [0, 90, 0]);
        assert!(look[..63].iter().all(|m| *m == [0, 30, 0]));
        assert_eq!(crops.pocket_look(1).unwrap(), [[0, 0, 0]; 64]);
        assert!(crops.pocket_look(4).is_none(), "there are four zones");
    }

    #[test]
    fn a_pocket_margin_grows_the_zone_on_the_board_plane() {
        // A board seen in perspective (far side narrower), so that pixels and squares differ.
        let far = |x0: f64| -> [Point; 4] {
            [
                [x0, 180.0],
                [x0 + 160.0, 180.0],
                [x0 + 130.0, 60.0],
                [x0 + 30.0, 60.0],
            ]
        };
        let cal = two_boards(far);
        let board = &cal.boards[0];
        let inv = board.homography.inverse().unwrap();
        for zone in &board.pockets {
            assert_eq!(widened(zone, &board.homography, 0.0), *zone);
            let before = zone.map(|p| inv.map(p));
            let after = widened(zone, &board.homography, 0.5).map(|p| inv.map(p));
            let span = |q: &[Point; 4], axis: usize| {
                let lo = q.iter().map(|p| p[axis]).fold(f64::MAX, f64::min);
                let hi = q.iter().map(|p| p[axis]).fold(f64::MIN, f64::max);
                (lo, hi)
            };
            for axis in 0..2 {
                let (lo0, hi0) = span(&before, axis);
                let (lo1, hi1) = span(&after, axis);
                assert!((lo0 - 0.5 - lo1).abs() < 1e-6, "{lo0} → {lo1}");
                assert!((hi0 + 0.5 - hi1).abs() < 1e-6, "{hi0} → {hi1}");
            }
        }
        // The margin changes the network's patches only.
        let img = RgbImage::from_fn(400, 200, |x, y| Rgb([x as u8, y as u8, (x ^ y) as u8]));
        let cut = |margin: f64| {
            let config = RectifyConfig {
                pocket_margin: margin,
                ..RectifyConfig::default()
            };
            Rectifier::new(&cal, &config)
                .unwrap()
                .rectify(&img)
                .unwrap()
        };
        let (plain, grown) = (cut(0.0), cut(0.5));
        assert_eq!(plain.squares, grown.squares);
        assert_eq!(plain.pocket_wide, grown.pocket_wide);
        assert_ne!(plain.pockets, grown.pockets);
    }

    #[test]
    fn rectify_settings_out_of_range_are_refused() {
        assert!(RectifyConfig::default().validate().is_ok());
        for margin in [-0.1, 4.5, f64::NAN] {
            let config = RectifyConfig {
                pocket_margin: margin,
                ..RectifyConfig::default()
            };
            assert!(config.validate().is_err(), "margin {margin}");
        }
    }

    #[test]
    fn window_centres_span_the_zone_at_most_a_step_apart() {
        let c = window_centres((0.0, 3.6), 0.5);
        assert_eq!(c.len(), 7);
        assert!((c[0] - 0.5).abs() < 1e-9 && (c[6] - 3.1).abs() < 1e-9);
        assert!(c.windows(2).all(|w| w[1] - w[0] <= 0.5 + 1e-9));
        assert_eq!(window_centres((1.0, 1.8), 0.5), vec![1.4]);
    }

    #[test]
    fn pocket_windows_tile_every_zone_and_are_cut_after_the_squares() {
        let cal = side_by_side();
        let plain = Rectifier::new(&cal, &RectifyConfig::default()).unwrap();
        let mut r = plain.clone();
        assert!(r.add_pocket_windows(&cal, 0.0, [true; 4]).is_err());
        // Default zones are 2.36 × 3.64 squares: 4 × 7 windows each.
        assert_eq!(
            r.add_pocket_windows(&cal, 0.5, [false, true, true, false])
                .unwrap(),
            2 * 28
        );
        assert!(
            r.pocket_windows()
                .iter()
                .all(|w| w.zone == 1 || w.zone == 2)
        );
        assert_eq!(r.add_pocket_windows(&cal, 0.5, [true; 4]).unwrap(), 4 * 28);
        for zone in 0..4 {
            let board = &cal.boards[zone / 2];
            let back = board.homography.inverse().unwrap();
            let quad = board.pockets[zone % 2].map(|p| back.map(p));
            let (f0, f1) = (quad.map(|p| p[0]), quad.map(|p| p[1]));
            let lo = |v: [f64; 4]| v.iter().copied().fold(f64::MAX, f64::min);
            let hi = |v: [f64; 4]| v.iter().copied().fold(f64::MIN, f64::max);
            let mine: Vec<_> = r
                .pocket_windows()
                .iter()
                .filter(|w| w.zone == zone)
                .collect();
            assert_eq!(mine.len(), 28);
            for w in mine {
                let [f, rank] = w.centre;
                assert!(
                    f >= lo(f0) + 0.5 - 1e-6 && f <= hi(f0) - 0.5 + 1e-6,
                    "{w:?}"
                );
                assert!(
                    rank >= lo(f1) + 0.5 - 1e-6 && rank <= hi(f1) - 0.5 + 1e-6,
                    "{w:?}"
                );
            }
        }
        // Again: replaced, not added.
        assert_eq!(r.add_pocket_windows(&cal, 0.5, [true; 4]).unwrap(), 112);
        // A zone that does not map onto the table (board B, after board A's windows were
        // built) is refused and leaves the windows as they were.
        let mut broken = cal.clone();
        broken.boards[1].pockets[1] = [[f64::NAN; 2]; 4];
        assert!(r.add_pocket_windows(&broken, 0.5, [true; 4]).is_err());
        assert_eq!(r.pocket_windows().len(), 112);
        // A blob at one of board B's window centres shows at the bottom middle of its patch
        // (the square at the bottom, the space above it over the rest); squares are unchanged.
        let (k, c) = r
            .pocket_windows()
            .iter()
            .enumerate()
            .filter(|(_, w)| w.zone == 2)
            .map(|(k, w)| (k, cal.boards[1].homography.map(w.centre)))
            .find(|(_, c)| (10.0..390.0).contains(&c[0]) && (60.0..190.0).contains(&c[1]))
            .unwrap();
        let mut frame = RgbImage::from_pixel(400, 200, image::Rgb([20, 20, 20]));
        for y in (c[1] as u32 - 3)..=(c[1] as u32 + 3) {
            for x in (c[0] as u32 - 3)..=(c[0] as u32 + 3) {
                frame.put_pixel(x, y, image::Rgb([250, 0, 0]));
            }
        }
        let crops = r.rectify(&frame).unwrap();
        let base = plain.rectify(&frame).unwrap();
        assert_eq!(crops.windows, 112);
        let pb = 48 * 64 * 3;
        assert_eq!(crops.squares.len(), (128 + 112) * pb);
        assert_eq!(crops.squares[..128 * pb], base.squares[..]);
        let patch = &crops.squares[(128 + k) * pb..(129 + k) * pb];
        let at = |x: usize, y: usize| &patch[(y * 48 + x) * 3..(y * 48 + x) * 3 + 3];
        assert_eq!(at(24, 50), [250, 0, 0]);
        assert_eq!(at(24, 5), [20, 20, 20]);
    }

    /// Two top-down boards in a 400×200 frame: A at x 20..180, B at x 220..380, y 20..180.
    fn side_by_side() -> Calibration {
        let corners = |x0: f64| -> [Point; 4] {
            [
                [x0, 180.0],
                [x0 + 160.0, 180.0],
                [x0 + 160.0, 20.0],
                [x0, 20.0],
            ]
        };
        two_boards(corners)
    }

    /// A 400×200 frame holding two boards, A at x0 = 20 and B at x0 = 220, each drawn by
    /// `corners(x0)` (a1, h1, h8, a8).
    fn two_boards(corners: impl Fn(f64) -> [Point; 4]) -> Calibration {
        Calibration::manual(
            "t",
            (400, 200),
            [corners(20.0), corners(220.0)],
            None,
            &CalibrationConfig::default(),
        )
        .unwrap()
    }

    #[test]
    fn cutting_on_several_threads_gives_the_same_bytes() {
        let (w, h) = (400u32, 200u32);
        let cal = side_by_side();
        let img = RgbImage::from_fn(w, h, |x, y| {
            Rgb([(x * 7 + y) as u8, (x ^ y) as u8, (x * y / 3) as u8])
        });
        let cut = |threads: usize| {
            let config = RectifyConfig {
                threads,
                ..RectifyConfig::default()
            };
            Rectifier::new(&cal, &config)
                .unwrap()
                .rectify(&img)
                .unwrap()
        };
        let one = cut(1);
        assert!(one.squares.iter().any(|&v| v != 0));
        for threads in [2, 3, 8] {
            let many = cut(threads);
            assert!(one.squares == many.squares, "{threads} threads");
            assert!(one.pockets == many.pockets, "{threads} threads");
        }
        for threads in [0, 9] {
            let config = RectifyConfig {
                threads,
                ..RectifyConfig::default()
            };
            assert!(Rectifier::new(&cal, &config).is_err(), "{threads} threads");
        }
    }

    #[test]
    fn patches_show_their_own_square_and_what_stands_above_it() {
        // A synthetic top-down board: square (f, r) is painted with a colour encoding its
        // index, everything else black; board A left, board B right.
        let (w, h) = (400u32, 200u32);
        let cal = side_by_side();
        let mut img = RgbImage::new(w, h);
        for (b, x0) in [(0u8, 20.0), (1u8, 220.0)] {
            for y in 20..180 {
                for x in (x0 as u32)..(x0 as u32 + 160) {
                    let f = (x - x0 as u32) / 20;
                    let r = 7 - (y - 20) / 20;
                    img.put_pixel(x, y, Rgb([(r * 8 + f) as u8 * 3, 100 + 50 * b, 7]));
                }
            }
        }
        let rect = Rectifier::new(&cal, &RectifyConfig::default()).unwrap();
        let crops = rect.rectify(&img).unwrap();
        assert_eq!(crops.squares.len(), 128 * 48 * 64 * 3);
        assert_eq!(crops.pockets.len(), 4 * 96 * 128 * 3);
        for (b, idx) in [(0, 0), (0, 27), (1, 9), (1, 62)] {
            let p = crops.square(b, idx).unwrap();
            // The bottom part of the patch is the square itself.
            let px = p.get_pixel(24, 56);
            assert_eq!(px[0] as usize, idx * 3, "board {b} square {idx}");
            assert_eq!(px[1], 100 + 50 * b as u8);
            // Its top shows the square above it in the image (the next rank here).
            if idx / 8 < 7 {
                let top = p.get_pixel(24, 20);
                assert_eq!(top[0] as usize, (idx + 8) * 3);
            }
        }
        let small = RgbImage::new(100, 100);
        assert!(rect.rectify(&small).is_err());
    }

    #[test]
    fn upright_orders_any_rotation() {
        let q = [[0.0, 0.0], [10.0, 0.0], [10.0, 10.0], [0.0, 10.0]];
        for k in 0..4 {
            let r: [Point; 4] = std::array::from_fn(|i| q[(i + k) % 4]);
            assert_eq!(
                upright(&r),
                [[0.0, 0.0], [10.0, 0.0], [10.0, 10.0], [0.0, 10.0]]
            );
            let m: [Point; 4] = std::array::from_fn(|i| r[3 - i]);
            assert_eq!(
                upright(&m),
                [[0.0, 0.0], [10.0, 0.0], [10.0, 10.0], [0.0, 10.0]]
            );
        }
    }
}
