//! Motion / hand detection per board: decides when a board may be read at all.
//!
//! The tracker decodes only calm observations, so this stage decides when a move is complete.
//! Per board a region of the frame is watched: the playing area, lifted by the height of the
//! pieces standing on the far rank, plus both pocket zones (a hand putting a piece into a pocket
//! also makes the pocket reading unreliable). The region is cut into cells about a third of a
//! square wide; each cell's mean luma is sampled on a sparse grid (cheap: a few thousand pixels
//! per board, well under a millisecond per frame).
//!
//! Two cues, both gain-compensated by the median cell ratio so that light flicker (the whole
//! scene brighter or darker) cancels, and thresholded per cell so that sensor noise averages out:
//!
//! - **frame difference**: the fraction of cells that changed since the previous frame (a moving
//!   hand or arm);
//! - **background difference**: the fraction of cells that differ from the last calm frame. A
//!   move changes a few squares' worth of cells; a hand or arm resting over the board changes
//!   many more. Above `hand_fraction` the board is not calm even if the hand stands still. The
//!   background is renewed once the frame difference has been calm for `settle_frames` frames
//!   with a small background difference, or after `absorb_ms` of calm in any case (a lasting
//!   change such as a lamp switched on must not block the board forever).
//!
//! The score is `max(frame / frame_full, background / hand_fraction · hand_score)`, kept as is
//! up to 0.5 and squashed above into [0.5, 1) without saturating (the least-moving of several
//! moving frames stays recognisable); the tracker calls an observation calm below its
//! `motion_threshold` (0.3).

use image::RgbImage;
use serde::{Deserialize, Serialize};

use super::calibration::{Calibration, CalibrationError};
use super::geometry::Point;

/// Motion detector settings (TOML, every key optional).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MotionConfig {
    /// Cells per square edge (the cell size follows the board's size in the image).
    pub cells_per_square: f64,
    /// Sampled pixels per cell edge (at most; small cells use every pixel).
    pub samples_per_cell: u32,
    /// How far the region reaches above the board, in square widths (piece height).
    pub piece_height: f64,
    /// A cell changed when its gain-compensated mean luma moved by more than this (grey levels).
    pub cell_threshold: f32,
    /// Fraction of changed cells (frame to frame) that scores 1.
    pub frame_full: f32,
    /// Fraction of cells differing from the background that counts as a hand at rest.
    pub hand_fraction: f32,
    /// Score given to a background difference of `hand_fraction` (≥ the tracker's threshold).
    pub hand_score: f32,
    /// Frame-difference fraction below which a frame counts as calm for background renewal.
    pub calm_fraction: f32,
    /// Calm frames in a row before the background is renewed.
    pub settle_frames: u32,
    /// Calm time after which the background is renewed even with a large difference (ms).
    pub absorb_ms: u64,
    /// Judge each pocket zone on its own as well (`TableMotion::pockets`), so that a zone clear
    /// of a hand over its board can be read. Off: a zone is calm exactly when its board is
    /// (with the ONNX pocket reader the extra readings raised more false pocket alerts than
    /// they found incidents; `docs/tracker.md`).
    pub pocket_zones: bool,
}

impl Default for MotionConfig {
    fn default() -> Self {
        MotionConfig {
            cells_per_square: 3.0,
            samples_per_cell: 4,
            piece_height: 1.5,
            cell_threshold: 6.0,
            frame_full: 0.02,
            hand_fraction: 0.25,
            hand_score: 0.5,
            calm_fraction: 0.004,
            settle_frames: 2,
            absorb_ms: 700,
            pocket_zones: false,
        }
    }
}

/// Why a motion detector could not be built.
#[derive(Debug, thiserror::Error)]
pub enum MotionError {
    #[error("motion: {0}")]
    Invalid(String),
    #[error(transparent)]
    Calibration(#[from] CalibrationError),
}

/// The raw cues of one board in one frame (fractions of the region's cells).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct MotionCues {
    /// Cells changed since the previous frame.
    pub frame: f32,
    /// Cells differing from the background (last calm frame).
    pub background: f32,
    /// The combined score in [0, 1].
    pub score: f32,
}

/// Motion in one frame, per board and per pocket zone.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct TableMotion {
    /// Per board: its playing area and both its pocket zones (a hand anywhere there).
    pub boards: [MotionCues; 2],
    /// Per board and colour (White, Black): the pocket zone alone, lifted by the pieces'
    /// height ([`MotionConfig::pocket_zones`]). A hand over the board but clear of a zone
    /// leaves that zone readable. With `pocket_zones` off, or for a zone too small in the frame
    /// to judge on its own, the board's cues.
    pub pockets: [[MotionCues; 2]; 2],
}

/// Cells a pocket zone needs to be judged on its own.
const MIN_ZONE_CELLS: usize = 6;

/// One watched region's cells: per cell, the byte offsets of its sampled pixels.
#[derive(Clone, Debug)]
struct Region {
    cells: Vec<Vec<u32>>,
    prev: Option<Vec<f32>>,
    background: Option<Vec<f32>>,
    calm_run: u32,
    calm_since: Option<u64>,
}

/// Per-board motion scores from consecutive frames of one calibrated camera.
///
/// Invariant: frames must have the calibration's size (checked); scores are in [0, 1]; the first
/// frame scores 0 (nothing to compare with) and becomes the background.
#[derive(Clone, Debug)]
pub struct MotionDetector {
    cfg: MotionConfig,
    width: u32,
    height: u32,
    regions: [Region; 2],
    /// Per board and colour, the pocket zone alone (None: not judged on its own, or too few
    /// cells in the frame; the zone then moves with its board).
    zones: [[Option<Region>; 2]; 2],
    luma: Vec<f32>,
}

/// Convex hull (monotone chain), counter-clockwise in image coordinates' sense of `cross`.
fn hull(mut pts: Vec<Point>) -> Vec<Point> {
    pts.sort_by(|a, b| a[0].total_cmp(&b[0]).then(a[1].total_cmp(&b[1])));
    pts.dedup();
    if pts.len() < 3 {
        return pts;
    }
    let cross = |o: Point, a: Point, b: Point| {
        (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])
    };
    let mut lower: Vec<Point> = Vec::new();
    for &p in &pts {
        while lower.len() >= 2 && cross(lower[lower.len() - 2], lower[lower.len() - 1], p) <= 0.0 {
            lower.pop();
        }
        lower.push(p);
    }
    let mut upper: Vec<Point> = Vec::new();
    for &p in pts.iter().rev() {
        while upper.len() >= 2 && cross(upper[upper.len() - 2], upper[upper.len() - 1], p) <= 0.0 {
            upper.pop();
        }
        upper.push(p);
    }
    lower.pop();
    upper.pop();
    lower.extend(upper);
    lower
}

fn inside(poly: &[Point], p: Point) -> bool {
    let n = poly.len();
    if n < 3 {
        return false;
    }
    (0..n).all(|i| {
        let (a, b) = (poly[i], poly[(i + 1) % n]);
        (b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0]) >= 0.0
    })
}

fn dist(a: Point, b: Point) -> f64 {
    (a[0] - b[0]).hypot(a[1] - b[1])
}

impl MotionDetector {
    /// Lays out the watched cells of both boards for `cal`'s frame size.
    pub fn new(cal: &Calibration, cfg: &MotionConfig) -> Result<MotionDetector, MotionError> {
        cal.validate()?;
        if !(0.5..=16.0).contains(&cfg.cells_per_square)
            || !(1..=32).contains(&cfg.samples_per_cell)
            || !(0.0..=10.0).contains(&cfg.piece_height)
            || cfg.cell_threshold.is_nan()
            || cfg.cell_threshold <= 0.0
            || cfg.frame_full.is_nan()
            || cfg.frame_full <= 0.0
            || cfg.hand_fraction.is_nan()
            || cfg.hand_fraction <= 0.0
            || !(0.0..=1.0).contains(&cfg.hand_score)
            || cfg.settle_frames == 0
        {
            return Err(MotionError::Invalid(
                "cells_per_square 0.5..=16, samples_per_cell 1..=32, piece_height 0..=10, \
                 positive thresholds and fractions, hand_score 0..=1, settle_frames ≥ 1"
                    .into(),
            ));
        }
        let (w, h) = (cal.width, cal.height);
        let mut zones: [[Option<Region>; 2]; 2] = Default::default();
        let regions = [0, 1].map(|b| {
            let board = &cal.boards[b];
            let c = &board.corners;
            let square =
                (dist(c[0], c[1]) + dist(c[1], c[2]) + dist(c[2], c[3]) + dist(c[3], c[0])) / 32.0;
            let lift = cfg.piece_height * square;
            let lifted = |points: &[Point]| {
                hull(
                    points
                        .iter()
                        .flat_map(|p| [*p, [p[0], p[1] - lift]])
                        .collect(),
                )
            };
            // Small images: keep cells big enough that sensor noise averages out.
            let cell = (square / cfg.cells_per_square).max(6.0);
            let step = (cell / cfg.samples_per_cell as f64).max(1.0);
            if cfg.pocket_zones {
                for (slot, quad) in zones[b].iter_mut().zip(&board.pockets) {
                    let zone = Region::new(&lifted(quad), cell, step, w, h);
                    *slot = (zone.cells.len() >= MIN_ZONE_CELLS).then_some(zone);
                }
            }
            let area: Vec<Point> = c
                .iter()
                .chain(board.pockets.iter().flatten())
                .copied()
                .collect();
            Region::new(&lifted(&area), cell, step, w, h)
        });
        if regions.iter().any(|r| r.cells.len() < 16) {
            return Err(MotionError::Invalid(
                "a board covers too few pixels to watch for motion".into(),
            ));
        }
        Ok(MotionDetector {
            cfg: cfg.clone(),
            width: w,
            height: h,
            regions,
            zones,
            luma: Vec::new(),
        })
    }

    /// Number of watched cells per board (for tests and diagnostics).
    pub fn cell_counts(&self) -> [usize; 2] {
        [self.regions[0].cells.len(), self.regions[1].cells.len()]
    }

    /// Scores the next frame (taken at `ts` ms): per board and per pocket zone, how much is
    /// moving or covering it.
    pub fn update(&mut self, frame: &RgbImage, ts: u64) -> Result<TableMotion, MotionError> {
        if frame.width() != self.width || frame.height() != self.height {
            return Err(MotionError::Calibration(CalibrationError::ImageSize {
                got_w: frame.width(),
                got_h: frame.height(),
                want_w: self.width,
                want_h: self.height,
            }));
        }
        let raw = frame.as_raw();
        let mut out = TableMotion::default();
        for b in 0..2 {
            let board = self.regions[b].cues(raw, ts, &self.cfg, &mut self.luma);
            out.boards[b] = board;
            for (c, zone) in self.zones[b].iter_mut().enumerate() {
                out.pockets[b][c] = match zone {
                    Some(z) => z.cues(raw, ts, &self.cfg, &mut self.luma),
                    None => board,
                };
            }
        }
        Ok(out)
    }
}

impl Region {
    /// The cells of `poly` (convex), `cell` pixels wide, sampled every `step` pixels, clipped to
    /// a `w` × `h` frame.
    fn new(poly: &[Point], cell: f64, step: f64, w: u32, h: u32) -> Region {
        let (mut x0, mut y0, mut x1, mut y1) = (f64::MAX, f64::MAX, f64::MIN, f64::MIN);
        for p in poly {
            x0 = x0.min(p[0]);
            y0 = y0.min(p[1]);
            x1 = x1.max(p[0]);
            y1 = y1.max(p[1]);
        }
        let x0 = x0.max(0.0);
        let y0 = y0.max(0.0);
        let x1 = x1.min(w as f64);
        let y1 = y1.min(h as f64);
        let mut cells = Vec::new();
        let mut cy = y0;
        while cy + cell <= y1 + 0.5 * cell {
            let mut cx = x0;
            while cx + cell <= x1 + 0.5 * cell {
                if inside(poly, [cx + 0.5 * cell, cy + 0.5 * cell]) {
                    let mut offs = Vec::new();
                    let mut sy = cy + 0.5 * step;
                    while sy < cy + cell {
                        let mut sx = cx + 0.5 * step;
                        while sx < cx + cell {
                            let (px, py) = (sx as i64, sy as i64);
                            if px >= 0 && py >= 0 && (px as u32) < w && (py as u32) < h {
                                offs.push((py as u32 * w + px as u32) * 3);
                            }
                            sx += step;
                        }
                        sy += step;
                    }
                    if !offs.is_empty() {
                        cells.push(offs);
                    }
                }
                cx += cell;
            }
            cy += cell;
        }
        Region {
            cells,
            prev: None,
            background: None,
            calm_run: 0,
            calm_since: None,
        }
    }

    /// Scores this region in the next frame (`raw` RGB bytes) and renews its references;
    /// `luma` is scratch space.
    fn cues(&mut self, raw: &[u8], ts: u64, cfg: &MotionConfig, luma: &mut Vec<f32>) -> MotionCues {
        luma.clear();
        for offs in &self.cells {
            let mut sum = 0u32;
            for &o in offs {
                let o = o as usize;
                sum += 77 * raw[o] as u32 + 150 * raw[o + 1] as u32 + 29 * raw[o + 2] as u32;
            }
            luma.push(sum as f32 / (256.0 * offs.len() as f32));
        }
        let thr = cfg.cell_threshold;
        let frame_frac = self
            .prev
            .as_ref()
            .map_or(0.0, |p| changed_fraction(luma, p, thr));
        let bg_frac = self
            .background
            .as_ref()
            .map_or(0.0, |p| changed_fraction(luma, p, thr));
        let calm = frame_frac <= cfg.calm_fraction;
        if calm {
            self.calm_run += 1;
            self.calm_since.get_or_insert(ts);
        } else {
            self.calm_run = 0;
            self.calm_since = None;
        }
        let settled = self.calm_run >= cfg.settle_frames
            && (bg_frac < cfg.hand_fraction
                || self
                    .calm_since
                    .is_some_and(|t| ts.saturating_sub(t) >= cfg.absorb_ms));
        if self.background.is_none() || settled {
            self.background = Some(luma.clone());
        }
        let bg_term = if bg_frac >= cfg.hand_fraction && !settled {
            cfg.hand_score * bg_frac / cfg.hand_fraction
        } else {
            0.0
        };
        match &mut self.prev {
            Some(p) => p.copy_from_slice(luma),
            None => self.prev = Some(luma.clone()),
        }
        MotionCues {
            frame: frame_frac,
            background: bg_frac,
            score: squash((frame_frac / cfg.frame_full).max(bg_term)),
        }
    }
}

/// Maps a raw motion measure (≥ 0; 1 = `frame_full` of the cells changed) into [0, 1): the
/// identity up to 0.5 (so the tracker's calm threshold keeps its meaning), then
/// `1 − 0.25 / raw`, continuous and strictly increasing. It never saturates, so among many
/// moving frames the least-moving one can still be told (the tracker decodes it when no calm
/// frame follows a clock press).
fn squash(raw: f32) -> f32 {
    if raw.is_nan() || raw <= 0.0 {
        0.0
    } else if raw <= 0.5 {
        raw
    } else {
        1.0 - 0.25 / raw
    }
}

/// Fraction of cells whose luma differs from `reference` by more than the threshold after
/// compensating a global gain (the median ratio of the two frames' cells: light flicker cancels;
/// a hand covering less than half the region does not move the median). The threshold is `thr`
/// or, on noisier images, `NOISE_SIGMAS` times the noise estimated from the median absolute
/// difference (again robust to a hand over less than half of the cells).
fn changed_fraction(now: &[f32], reference: &[f32], thr: f32) -> f32 {
    let mut ratios: Vec<f32> = now
        .iter()
        .zip(reference)
        .filter(|(_, r)| **r > 8.0)
        .map(|(n, r)| n / r)
        .collect();
    let gain = if ratios.is_empty() {
        1.0
    } else {
        let mid = ratios.len() / 2;
        *ratios.select_nth_unstable_by(mid, |a, b| a.total_cmp(b)).1
    };
    let mut diffs: Vec<f32> = now
        .iter()
        .zip(reference)
        .map(|(n, r)| (*n - gain * *r).abs())
        .collect();
    let mid = diffs.len() / 2;
    let mad = if diffs.is_empty() {
        0.0
    } else {
        *diffs.select_nth_unstable_by(mid, |a, b| a.total_cmp(b)).1
    };
    let thr = thr.max(NOISE_SIGMAS * 1.4826 * mad);
    let changed = diffs.iter().filter(|d| **d > thr).count();
    changed as f32 / now.len().max(1) as f32
}

/// How many noise standard deviations a cell must change by on noisy images.
const NOISE_SIGMAS: f32 = 5.0;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vision::calibration::CalibrationConfig;
    use image::Rgb;

    fn cal() -> Calibration {
        let corners = |x0: f64| -> [Point; 4] {
            [
                [x0, 330.0],
                [x0 + 240.0, 330.0],
                [x0 + 240.0, 90.0],
                [x0, 90.0],
            ]
        };
        Calibration::manual(
            "t",
            (640, 360),
            [corners(60.0), corners(340.0)],
            None,
            &CalibrationConfig::default(),
        )
        .unwrap()
    }

    /// A checkered table with deterministic per-frame uniform noise (±`noise` grey levels, ±6 is
    /// σ ≈ 3.5, a noisy webcam) and a global gain (light flicker).
    fn frame(seed: u32, noise: i32, gain: f32) -> RgbImage {
        let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
        RgbImage::from_fn(640, 360, |x, y| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            let base = if ((x / 30) + (y / 30)) % 2 == 0 {
                170
            } else {
                70
            };
            let n = (state % (2 * noise as u32 + 1)) as i32 - noise;
            let v = ((base + n) as f32 * gain).clamp(0.0, 255.0) as u8;
            Rgb([v, v, v])
        })
    }

    fn paint_hand(img: &mut RgbImage, x0: u32, y0: u32, w: u32, h: u32) {
        for y in y0..(y0 + h).min(img.height()) {
            for x in x0..(x0 + w).min(img.width()) {
                img.put_pixel(x, y, Rgb([220, 170, 140]));
            }
        }
    }

    #[test]
    fn noise_and_flicker_stay_calm_a_hand_does_not() {
        let cal = cal();
        let mut det = MotionDetector::new(&cal, &MotionConfig::default()).unwrap();
        assert!(det.cell_counts().iter().all(|&n| n > 100));
        let mut ts = 0;
        for i in 0..6u32 {
            let gain = if i % 2 == 0 { 1.0 } else { 1.12 };
            let s = det.update(&frame(i, 6, gain), ts).unwrap().boards;
            assert!(s[0].score < 0.3 && s[1].score < 0.3, "frame {i}: {s:?}");
            ts += 100;
        }
        // A hand and forearm reaching over board A (left) from the near edge.
        let mut img = frame(7, 6, 1.0);
        paint_hand(&mut img, 70, 100, 165, 260);
        let s = det.update(&img, ts).unwrap().boards;
        assert!(s[0].score >= 0.3, "{s:?}");
        assert!(s[1].score < 0.3, "{s:?}");
        // The hand stands still: frame difference calm, background difference still large.
        ts += 100;
        let mut img = frame(8, 6, 1.0);
        paint_hand(&mut img, 70, 100, 165, 260);
        let s = det.update(&img, ts).unwrap().boards;
        assert!(s[0].frame < 0.01, "{s:?}");
        assert!(s[0].score >= 0.3, "a resting hand is not calm: {s:?}");
        // Gone again: calm after the frame that shows it leaving.
        ts += 100;
        det.update(&frame(9, 6, 1.0), ts).unwrap();
        ts += 100;
        let s = det.update(&frame(10, 6, 1.0), ts).unwrap().boards;
        assert!(s[0].score < 0.3, "{s:?}");
    }

    #[test]
    fn a_pocket_zone_is_judged_on_its_own() {
        // Board A's zones lie left of its a-file: White's at x < 37, y 262..371, Black's at
        // y 49..158 (the default layout for these corners).
        let cal = cal();
        let cfg = MotionConfig {
            pocket_zones: true,
            ..MotionConfig::default()
        };
        let mut det = MotionDetector::new(&cal, &cfg).unwrap();
        let mut off = MotionDetector::new(&cal, &MotionConfig::default()).unwrap();
        let mut ts = 0;
        for i in 0..3u32 {
            det.update(&frame(i, 6, 1.0), ts).unwrap();
            off.update(&frame(i, 6, 1.0), ts).unwrap();
            ts += 100;
        }
        // A hand over the middle of board A, clear of its zones: the board moves, they do not.
        let mut img = frame(3, 6, 1.0);
        paint_hand(&mut img, 130, 150, 100, 180);
        let m = det.update(&img, ts).unwrap();
        assert!(m.boards[0].score >= 0.3, "{m:?}");
        assert!(m.pockets[0].iter().all(|z| z.score < 0.3), "{m:?}");
        // Not judged on their own, the zones move with their board.
        let m = off.update(&img, ts).unwrap();
        assert_eq!(m.pockets, m.boards.map(|b| [b; 2]));
        // Gone; then a hand in White's zone of board A: that zone moves, Black's does not.
        for i in 4..7u32 {
            ts += 100;
            det.update(&frame(i, 6, 1.0), ts).unwrap();
        }
        ts += 100;
        let mut img = frame(7, 6, 1.0);
        paint_hand(&mut img, 0, 270, 37, 90);
        let m = det.update(&img, ts).unwrap();
        assert!(m.pockets[0][0].score >= 0.3, "{m:?}");
        assert!(m.pockets[0][1].score < 0.3, "{m:?}");
        assert!(
            m.boards[0].score >= 0.3,
            "a zone belongs to its board's region: {m:?}"
        );
    }

    #[test]
    fn a_moved_piece_settles_into_the_background() {
        let cal = cal();
        let mut det = MotionDetector::new(&cal, &MotionConfig::default()).unwrap();
        let mut ts = 0;
        det.update(&frame(1, 8, 1.0), ts).unwrap();
        // One piece (about a square) appears and stays: one frame of motion, then calm.
        let mut scores = Vec::new();
        for i in 0..4u32 {
            ts += 100;
            let mut img = frame(2 + i, 8, 1.0);
            paint_hand(&mut img, 150, 200, 30, 40);
            scores.push(det.update(&img, ts).unwrap().boards[0].score);
        }
        assert!(scores[0] >= 0.3, "{scores:?}");
        assert!(scores[2] < 0.3 && scores[3] < 0.3, "{scores:?}");
    }

    #[test]
    fn the_score_keeps_its_order_above_full_motion() {
        assert_eq!(squash(0.0), 0.0);
        assert_eq!(squash(f32::NAN), 0.0);
        assert_eq!(squash(0.29), 0.29);
        assert!((squash(0.5) - 0.5).abs() < 1e-6);
        let raws = [0.5, 0.6, 1.0, 2.0, 10.0, 50.0, 1e6];
        let scores: Vec<f32> = raws.iter().map(|&r| squash(r)).collect();
        assert!(scores.windows(2).all(|w| w[0] < w[1]), "{scores:?}");
        assert!(scores.iter().all(|s| *s < 1.0), "{scores:?}");
    }

    #[test]
    fn wrong_frame_size_and_bad_config_are_errors() {
        let cal = cal();
        let mut det = MotionDetector::new(&cal, &MotionConfig::default()).unwrap();
        assert!(det.update(&RgbImage::new(320, 180), 0).is_err());
        let bad = MotionConfig {
            settle_frames: 0,
            ..MotionConfig::default()
        };
        assert!(MotionDetector::new(&cal, &bad).is_err());
    }
}
