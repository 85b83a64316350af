//! Whole-line refinement of a board's homography and the lens: the square edges along every
//! grid line (and the playing area's outer edge where it is visible) are located sub-pixel in
//! linear light at hundreds of places, and one weighted least-squares fit of all lines and
//! X-corners gives the homography. The noise of a corner then falls with the square root of
//! the edge samples instead of being magnified by extrapolating a few X-corners.
//!
//! Each sample's profile is taken across the predicted line; it is kept only when the levels
//! on both sides are the expected square colours (a piece in front of the edge changes them).
//! Interior lines alternate in polarity along their length, so any residual bias of the step
//! location (a non-linear tone curve) cancels between neighbouring segments.

use crate::vision::geometry::{Homography, Point, smallest_eigenvector};

use super::{Gray, Lens};

/// One located edge point: on board line `axis = c` (axis 0: u = c, a file line; axis 1:
/// v = c, a rank line), at pixel `p` of the distorted image.
#[derive(Clone, Copy, Debug)]
pub struct EdgeSample {
    pub axis: usize,
    pub c: f64,
    pub p: Point,
    /// Relative weight in the fit (X-corners count more than one edge sample).
    pub weight: f64,
}

/// Linear-light luminance (0..1) of an sRGB frame, where a blurred step edge crosses the
/// mean of its two levels at the true edge.
pub fn linear_luminance(img: &image::RgbImage) -> Gray {
    let lut: Vec<f32> = (0..256)
        .map(|i| {
            let c = i as f32 / 255.0;
            if c <= 0.04045 {
                c / 12.92
            } else {
                ((c + 0.055) / 1.055).powf(2.4)
            }
        })
        .collect();
    let data = img
        .pixels()
        .map(|p| {
            0.2126 * lut[p[0] as usize] + 0.7152 * lut[p[1] as usize] + 0.0722 * lut[p[2] as usize]
        })
        .collect();
    Gray {
        width: img.width() as usize,
        height: img.height() as usize,
        data,
    }
}

/// Median luminance of squares with even and odd (u + v), each from four samples near the
/// square's corners (pieces stand in the middle).
fn square_levels(lin: &Gray, h: &Homography, lens: &Lens, cells: &Cells) -> Option<[f32; 2]> {
    let mut v: [Vec<f32>; 2] = [Vec::new(), Vec::new()];
    for r in cells[1][0]..cells[1][1] {
        for f in cells[0][0]..cells[0][1] {
            let mut s: Vec<f32> = [(0.15, 0.15), (0.85, 0.15), (0.15, 0.85), (0.85, 0.85)]
                .iter()
                .filter_map(|&(a, b)| {
                    let p = lens.distort(h.map([f as f64 + a, r as f64 + b]));
                    lin.contains(p, 1.0).then(|| lin.sample(p))
                })
                .collect();
            if s.len() == 4 {
                s.sort_by(|a, b| a.total_cmp(b));
                v[(f + r).rem_euclid(2) as usize].push(0.5 * (s[1] + s[2]));
            }
        }
    }
    let med = |v: &mut Vec<f32>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v.get(v.len() / 2).copied()
    };
    Some([med(&mut v[0])?, med(&mut v[1])?])
}

/// Median luminance of squares with even and odd (u + v) next to the X-corners `anchors`
/// (board coordinates): there the squares are certainly visible.
fn anchor_levels(lin: &Gray, h: &Homography, lens: &Lens, anchors: &[Point]) -> Option<[f32; 2]> {
    let mut v: [Vec<f32>; 2] = [Vec::new(), Vec::new()];
    for a in anchors {
        for (du, dv) in [(-0.25, -0.25), (0.25, -0.25), (0.25, 0.25), (-0.25, 0.25)] {
            let b = [a[0] + du, a[1] + dv];
            let p = lens.distort(h.map(b));
            if lin.contains(p, 1.0) {
                let parity = (b[0].floor() as i64 + b[1].floor() as i64).rem_euclid(2) as usize;
                v[parity].push(lin.sample(p));
            }
        }
    }
    if v[0].len() < 8 || v[1].len() < 8 {
        return None;
    }
    let med = |v: &mut Vec<f32>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    Some([med(&mut v[0]), med(&mut v[1])])
}

/// How well a placement shows a start position: the share of its 64 squares whose centre
/// agrees with the position (a piece on both home rows at each end of one axis, the
/// middle four rows showing their square colour), along the better of the two axes.
/// `None` when the square colours cannot be told from the X-corners.
pub fn start_position_agreement(
    lin: &Gray,
    h: &Homography,
    lens: &Lens,
    anchors: &[Point],
) -> Option<f64> {
    let levels = anchor_levels(lin, h, lens, anchors)?;
    let contrast = (levels[0] - levels[1]).abs();
    if contrast < 0.02 {
        return None;
    }
    let mut covered = [[false; 8]; 8];
    for (u, row) in covered.iter_mut().enumerate() {
        for (v, c) in row.iter_mut().enumerate() {
            let p = lens.distort(h.map([u as f64 + 0.5, v as f64 + 0.5]));
            let expected = levels[(u + v) % 2];
            *c = !lin.contains(p, 1.0) || (lin.sample(p) - expected).abs() > 0.3 * contrast;
        }
    }
    let home = |i: usize| !(2..=5).contains(&i);
    let agree = |axis: usize| {
        let mut n = 0;
        for (u, row) in covered.iter().enumerate() {
            for (v, &c) in row.iter().enumerate() {
                let along = if axis == 0 { u } else { v };
                if c == home(along) {
                    n += 1;
                }
            }
        }
        n as f64 / 64.0
    };
    Some(agree(0).max(agree(1)))
}

/// A profile across a predicted line: the two side levels and the step location.
struct Profile {
    minus: f32,
    plus: f32,
    /// Pixel of the level crossing, `None` when there is not exactly one.
    at: Option<Point>,
}

/// Profile across a predicted line at `q` along unit normal `n`: the step is looked for
/// within `search` pixels (the strongest gradient of sign `polarity`, or of either sign when
/// `polarity` is 0), its side levels are the means `near..far` pixels from it, and its
/// location is where the profile crosses their mean.
fn profile(
    lin: &Gray,
    q: Point,
    n: Point,
    search: f64,
    near: f64,
    far: f64,
    polarity: f32,
) -> Option<Profile> {
    let reach = search + far;
    if !lin.contains([q[0] - n[0] * reach, q[1] - n[1] * reach], 1.0)
        || !lin.contains([q[0] + n[0] * reach, q[1] + n[1] * reach], 1.0)
    {
        return None;
    }
    const STEP: f64 = 0.5;
    let k = (reach / STEP).ceil() as i32;
    let vals: Vec<f32> = (-k..=k)
        .map(|i| {
            let s = i as f64 * STEP;
            lin.sample([q[0] + n[0] * s, q[1] + n[1] * s])
        })
        .collect();
    let pos = |i: usize| (i as i32 - k) as f64 * STEP;
    // Strongest step (gradient over ±1 px) within the search window.
    let mut best: Option<(f32, usize)> = None;
    for i in 2..vals.len() - 2 {
        if pos(i).abs() > search {
            continue;
        }
        let gd = vals[i + 2] - vals[i - 2];
        let score = if polarity == 0.0 {
            gd.abs()
        } else {
            gd * polarity.signum()
        };
        if best.is_none_or(|b| score > b.0) {
            best = Some((score, i));
        }
    }
    let (_, ip) = best?;
    let sp = pos(ip);
    let side = |lo: f64, hi: f64| {
        let (mut sum, mut cnt) = (0.0f32, 0usize);
        for (i, v) in vals.iter().enumerate() {
            let s = pos(i);
            if s >= lo && s <= hi {
                sum += v;
                cnt += 1;
            }
        }
        (cnt > 0).then(|| sum / cnt as f32)
    };
    let minus = side(sp - far, sp - near)?;
    let plus = side(sp + near, sp + far)?;
    let mid = 0.5 * (minus + plus);
    // The mean crossing nearest the gradient peak, within `near` of it.
    let mut at = None;
    let mut best_d = f64::MAX;
    for i in 0..vals.len() - 1 {
        let (s0, s1) = (pos(i), pos(i + 1));
        if (s0 - sp).abs() > near && (s1 - sp).abs() > near {
            continue;
        }
        let (v0, v1) = (vals[i] as f64, vals[i + 1] as f64);
        let m = mid as f64;
        if (v0 - m) * (v1 - m) > 0.0 || v0 == v1 {
            continue;
        }
        let s = s0 + (m - v0) / (v1 - v0) * (s1 - s0);
        if (s - sp).abs() < best_d {
            best_d = (s - sp).abs();
            at = Some([q[0] + n[0] * s, q[1] + n[1] * s]);
        }
    }
    Some(Profile { minus, plus, at })
}

/// The cells taken for squares: `[u range, v range]`, each `[lo, hi)`.
pub type Cells = [[i32; 2]; 2];

/// The 8×8 playing area.
pub const BOARD_CELLS: Cells = [[0, 8], [0, 8]];

/// Edge samples along every grid line of the `cells` of a board whose undistorted
/// homography is `h` (board (u, v) → undistorted pixel); with `outer`, also along the
/// boundary of the cells where the frame beyond differs from the squares.
pub fn edge_samples(
    lin: &Gray,
    h: &Homography,
    lens: &Lens,
    cells: &Cells,
    outer_lines: bool,
    anchors: &[Point],
) -> Vec<EdgeSample> {
    edge_samples_with_support(lin, h, lens, cells, outer_lines, anchors).0
}

/// [`edge_samples`] and the support of the placement: the sum over lines of the fraction
/// of a line's profiles that were accepted (each line counts at most one, whatever its
/// length in the image).
pub fn edge_samples_with_support(
    lin: &Gray,
    h: &Homography,
    lens: &Lens,
    cells: &Cells,
    outer_lines: bool,
    anchors: &[Point],
) -> (Vec<EdgeSample>, f64) {
    let mut support = 0.0;
    let Some(levels) =
        anchor_levels(lin, h, lens, anchors).or_else(|| square_levels(lin, h, lens, cells))
    else {
        return (Vec::new(), 0.0);
    };
    let contrast = (levels[0] - levels[1]).abs();
    if contrast < 0.02 {
        return (Vec::new(), 0.0);
    }
    let colour = |f: i32, r: i32| -> Option<f32> {
        ((cells[0][0]..cells[0][1]).contains(&f) && (cells[1][0]..cells[1][1]).contains(&r))
            .then(|| levels[(f + r).rem_euclid(2) as usize])
    };
    let max_len = lin.width.max(lin.height) as f64 / 4.0;
    let mut out = Vec::new();
    for axis in 0..2 {
        let other = 1 - axis;
        for c in cells[axis][0]..=cells[axis][1] {
            let outer = c == cells[axis][0] || c == cells[axis][1];
            if outer && !outer_lines {
                continue;
            }
            // Outer edge: (inside level, outside level, sample) candidates, filtered below.
            let mut outer_cand: Vec<(f32, f32, Point)> = Vec::new();
            let (mut tried, before) = (0usize, out.len());
            for seg in cells[other][0]..cells[other][1] {
                // Squares on the minus and plus side of the line along this segment.
                let (sm, sp) = if axis == 0 {
                    (colour(c - 1, seg), colour(c, seg))
                } else {
                    (colour(seg, c - 1), colour(seg, c))
                };
                let at = |t: f64, d: f64| {
                    let b = if axis == 0 {
                        [c as f64 + d, t]
                    } else {
                        [t, c as f64 + d]
                    };
                    lens.distort(h.map(b))
                };
                let (a0, a1) = (at(seg as f64, 0.0), at(seg as f64 + 1.0, 0.0));
                let len = ((a1[0] - a0[0]).powi(2) + (a1[1] - a0[1]).powi(2)).sqrt();
                // A square edge longer than a quarter of the frame belongs to no board that
                // fits in it (a placement far beyond a small lattice maps there; sampling it
                // pixel by pixel would take minutes).
                if !len.is_finite() || len < 4.0 || len > max_len {
                    continue;
                }
                // One sample per pixel of the segment, away from the X-junctions at its ends.
                let n_samples = (len * 0.76).floor() as usize;
                for i in 0..n_samples {
                    let t = seg as f64 + 0.12 + 0.76 * (i as f64 + 0.5) / n_samples as f64;
                    let q = at(t, 0.0);
                    let (qm, qp) = (at(t, -0.05), at(t, 0.05));
                    let d = [qp[0] - qm[0], qp[1] - qm[1]];
                    let dl = (d[0] * d[0] + d[1] * d[1]).sqrt();
                    if !dl.is_finite() || dl < 1e-9 {
                        continue;
                    }
                    let scale = dl / 0.1;
                    // Search ±0.3 square; side levels 2 px to 0.25 square (+2 px) away.
                    let search = (0.3 * scale).min(10.0);
                    let (near, far) = (2.0, (0.25 * scale + 2.0).min(7.0));
                    if far < near + 1.0 || far > 0.6 * scale {
                        continue;
                    }
                    let n = [d[0] / dl, d[1] / dl];
                    let polarity = match (sm, sp) {
                        (Some(a), Some(b)) => b - a,
                        _ => 0.0,
                    };
                    tried += 1;
                    let Some(pr) = profile(lin, q, n, search, near, far, polarity) else {
                        continue;
                    };
                    let Some(p) = pr.at else { continue };
                    match (sm, sp) {
                        (Some(em), Some(ep)) => {
                            let tol = 0.3 * contrast;
                            if (pr.minus - em).abs() < tol
                                && (pr.plus - ep).abs() < tol
                                && (pr.plus - pr.minus).abs() > 0.5 * contrast
                            {
                                out.push(EdgeSample {
                                    axis,
                                    c: c as f64,
                                    p,
                                    weight: 1.0,
                                });
                            }
                        }
                        (Some(e), None) if outer && (pr.minus - e).abs() < 0.3 * contrast => {
                            outer_cand.push((pr.minus, pr.plus, p));
                        }
                        (None, Some(e)) if outer && (pr.plus - e).abs() < 0.3 * contrast => {
                            outer_cand.push((pr.plus, pr.minus, p));
                        }
                        _ => {}
                    }
                }
            }
            if outer && outer_cand.len() >= 8 {
                // The frame (or table) beyond the edge: one level along the line.
                let mut fr: Vec<f32> = outer_cand.iter().map(|c| c.1).collect();
                fr.sort_by(|a, b| a.total_cmp(b));
                let frame = fr[fr.len() / 2];
                for (inside, outside, p) in outer_cand {
                    if (outside - frame).abs() < 0.2 * contrast
                        && (inside - outside).abs() > 0.35 * contrast
                    {
                        out.push(EdgeSample {
                            axis,
                            c: c as f64,
                            p,
                            weight: 1.0,
                        });
                    }
                }
            }
            if tried > 0 {
                support += (out.len() - before) as f64 / tried as f64;
            }
        }
    }
    (out, support)
}

/// Hartley-style normalisation of pixels: `y' = s (y − m)`.
#[derive(Clone, Copy)]
struct Norm {
    m: Point,
    s: f64,
}

impl Norm {
    fn matrix(&self) -> Homography {
        Homography([
            self.s,
            0.0,
            -self.s * self.m[0],
            0.0,
            self.s,
            -self.s * self.m[1],
            0.0,
            0.0,
            1.0,
        ])
    }
}

/// Board (u, v) ↦ ((u − 4)/4, (v − 4)/4): board coordinates of order one.
const BOARD_NORM: Homography = Homography([0.25, 0.0, -1.0, 0.0, 0.25, -1.0, 0.0, 0.0, 1.0]);

/// Result of a line fit: the homography board → undistorted pixel, the weighted sum of
/// squared pixel residuals and the samples' inlier mask.
pub struct LineFit {
    pub h: Homography,
    pub cost: f64,
    pub used: usize,
}

/// Fits the homography board → undistorted pixel to edge samples (already undistorted in
/// `und`) by iteratively reweighted homogeneous least squares on
/// `g₁·y − c g₃·y = 0` (u lines) / `g₂·y − c g₃·y = 0` (v lines), `G` = pixel → board,
/// weighted so that residuals are pixel distances to the lines. `inlier` is updated when
/// `reject` is set (samples farther than 3 robust sigmas, at least 0.4 px, are dropped).
pub fn fit_lines(
    samples: &[EdgeSample],
    und: &[Point],
    start: &Homography,
    inlier: &mut [bool],
    reject: bool,
) -> Option<LineFit> {
    let n = inlier.iter().filter(|&&b| b).count();
    if n < 12 {
        return None;
    }
    let (mut mx, mut my) = (0.0, 0.0);
    for (p, _) in und.iter().zip(inlier.iter()).filter(|(_, b)| **b) {
        mx += p[0];
        my += p[1];
    }
    let m = [mx / n as f64, my / n as f64];
    let md = und
        .iter()
        .zip(inlier.iter())
        .filter(|(_, b)| **b)
        .map(|(p, _)| ((p[0] - m[0]).powi(2) + (p[1] - m[1]).powi(2)).sqrt())
        .sum::<f64>()
        / n as f64;
    if md < 1e-9 {
        return None;
    }
    let norm = Norm {
        m,
        s: std::f64::consts::SQRT_2 / md,
    };
    let t = norm.matrix();
    // G' = N_b · H⁻¹ · T⁻¹ : normalised pixel → normalised board.
    let mut g = BOARD_NORM
        .then_after(&start.inverse()?)
        .then_after(&t.inverse()?)
        .0;
    let ys: Vec<Point> = und
        .iter()
        .map(|p| [norm.s * (p[0] - m[0]), norm.s * (p[1] - m[1])])
        .collect();
    // Pixel residual of sample k under G, with its row of the homogeneous system.
    let residual = |g: &[f64; 9], smp: &EdgeSample, y: &Point| -> (f64, f64, [f64; 9]) {
        let cn = 0.25 * smp.c - 1.0;
        let gi = if smp.axis == 0 { 0 } else { 3 };
        let denom = g[6] * y[0] + g[7] * y[1] + g[8];
        let num = g[gi] * y[0] + g[gi + 1] * y[1] + g[gi + 2];
        let cur = num / denom;
        // |∇ of the board coordinate| in pixels⁻¹, up to the common factor |denom|.
        let grad =
            ((g[gi] - cur * g[6]).powi(2) + (g[gi + 1] - cur * g[7]).powi(2)).sqrt() * norm.s;
        let mut row = [0.0f64; 9];
        row[gi] = y[0];
        row[gi + 1] = y[1];
        row[gi + 2] = 1.0;
        row[6] = -cn * y[0];
        row[7] = -cn * y[1];
        row[8] = -cn;
        if !grad.is_finite() || grad < 1e-12 {
            return (f64::INFINITY, 0.0, row);
        }
        let w = 1.0 / grad;
        ((num - cn * denom) * w, w, row)
    };
    let mut cost = 0.0;
    for iter in 0..4 {
        if reject && iter >= 1 {
            let res: Vec<f64> = samples
                .iter()
                .zip(&ys)
                .map(|(smp, y)| residual(&g, smp, y).0)
                .collect();
            let mut a: Vec<f64> = res
                .iter()
                .zip(inlier.iter())
                .filter(|(_, b)| **b)
                .map(|(r, _)| r.abs())
                .collect();
            a.sort_by(|x, y| x.total_cmp(y));
            let cut = (3.0 * 1.4826 * a.get(a.len() / 2).copied().unwrap_or(0.0)).max(0.4);
            for (k, r) in res.iter().enumerate() {
                inlier[k] = r.abs() <= cut;
            }
            if inlier.iter().filter(|&&b| b).count() < 12 {
                return None;
            }
        }
        let mut ata = [[0.0f64; 9]; 9];
        for (k, (smp, y)) in samples.iter().zip(&ys).enumerate() {
            if !inlier[k] {
                continue;
            }
            let (r, w, row) = residual(&g, smp, y);
            if !r.is_finite() {
                continue;
            }
            let ww = w * w * smp.weight;
            for i in 0..9 {
                if row[i] == 0.0 {
                    continue;
                }
                for j in 0..9 {
                    ata[i][j] += ww * row[i] * row[j];
                }
            }
        }
        let e = smallest_eigenvector(&ata)?;
        // Keep the sign so that the weights' denominators stay comparable.
        let dot: f64 = e.iter().zip(g.iter()).map(|(a, b)| a * b).sum();
        g = if dot < 0.0 { e.map(|v| -v) } else { e };
        cost = samples
            .iter()
            .zip(&ys)
            .zip(inlier.iter())
            .filter(|(_, b)| **b)
            .map(|((smp, y), _)| smp.weight * residual(&g, smp, y).0.powi(2))
            .sum();
    }
    // H = (N_b⁻¹ · G' · T)⁻¹.
    let g_full = BOARD_NORM
        .inverse()?
        .then_after(&Homography(g))
        .then_after(&t);
    let h = g_full.inverse()?;
    let used = inlier.iter().filter(|&&b| b).count();
    (h.0.iter().all(|v| v.is_finite()) && cost.is_finite()).then_some(LineFit { h, cost, used })
}

/// A board for the joint refinement: its homography board (u, v) → undistorted pixel and its
/// X-corners (board coordinates, distorted pixel).
#[derive(Clone, Debug)]
pub struct BoardFit {
    pub h: Homography,
    pub xcorners: Vec<(Point, Point)>,
}

/// Weight of one X-corner (per line through it) relative to one edge sample.
const X_WEIGHT: f64 = 4.0;

/// The samples a board's homography is refined on: its interior grid lines within `cells`
/// and its X-corners. Not the playing area's outer edge, where the squares meet the board's
/// frame: an inlay, a bevel or printed notation can move it, and in the rendered games its
/// samples lay up to half a pixel off the truth, the interior lines' within 0.07 px
/// (`docs/vision-calibration.md`, "The outer edge left out of the fit").
fn samples_of(lin: &Gray, b: &BoardFit, lens: &Lens, cells: &Cells) -> Vec<EdgeSample> {
    let anchors: Vec<Point> = b.xcorners.iter().map(|x| x.0).collect();
    let mut s = edge_samples(lin, &b.h, lens, cells, false, &anchors);
    for (bp, px) in &b.xcorners {
        for (axis, &c) in bp.iter().enumerate() {
            s.push(EdgeSample {
                axis,
                c,
                p: *px,
                weight: X_WEIGHT,
            });
        }
    }
    s
}

fn fit_all(
    samples: &[Vec<EdgeSample>],
    boards: &[BoardFit],
    inl: &mut [Vec<bool>],
    lens: &Lens,
    reject: bool,
) -> Option<(Vec<Homography>, f64)> {
    let mut hs = Vec::new();
    let mut cost = 0.0;
    for ((s, b), m) in samples.iter().zip(boards).zip(inl.iter_mut()) {
        let und: Vec<Point> = s.iter().map(|e| lens.undistort(e.p)).collect();
        let f = fit_lines(s, &und, &b.h, m, reject)?;
        cost += f.cost;
        hs.push(f.h);
    }
    Some((hs, cost))
}

/// Refines the boards' homographies and the lens radial term jointly from whole grid lines;
/// `f2` is the squared focal length in pixels the κ search is scaled by. Boards whose fit
/// fails keep their homography; the lens is kept when no fit succeeds.
pub fn refine(lin: &Gray, boards: &mut [BoardFit], lens: Lens, f2: f64) -> Lens {
    let mut lens = lens;
    for pass in 0..2 {
        let samples: Vec<Vec<EdgeSample>> = boards
            .iter()
            .map(|b| samples_of(lin, b, &lens, &BOARD_CELLS))
            .collect();
        let mut inl: Vec<Vec<bool>> = samples.iter().map(|s| vec![true; s.len()]).collect();
        let Some((hs, _)) = fit_all(&samples, boards, &mut inl, &lens, true) else {
            return lens;
        };
        for (b, h) in boards.iter_mut().zip(hs) {
            b.h = h;
        }
        if pass == 1 {
            break;
        }
        // κ with the inliers fixed: a coarse then a fine grid in k1 = κ f².
        let k1_0 = lens.kappa * f2;
        let mut best = (f64::MAX, k1_0);
        for (step, n) in [(0.004, 10), (0.0004, 10)] {
            let centre = best.1;
            for i in -n..=n {
                let k1 = centre + i as f64 * step;
                let l = Lens {
                    centre: lens.centre,
                    kappa: k1 / f2,
                };
                if let Some((_, c)) = fit_all(&samples, boards, &mut inl, &l, false)
                    && c < best.0
                {
                    best = (c, k1);
                }
            }
        }
        lens.kappa = best.1 / f2;
        if let Some((hs, _)) = fit_all(&samples, boards, &mut inl, &lens, false) {
            for (b, h) in boards.iter_mut().zip(hs) {
                b.h = h;
            }
        }
    }
    lens
}

/// One line fit of a board's homography with the lens fixed, over the lines of `cells`
/// (no outer lines) and the X-corners; `false` (homography unchanged) when it fails.
pub fn refine_fixed_lens(lin: &Gray, b: &mut BoardFit, lens: &Lens, cells: &Cells) -> bool {
    let s = samples_of(lin, b, lens, cells);
    let und: Vec<Point> = s.iter().map(|e| lens.undistort(e.p)).collect();
    let mut inl = vec![true; s.len()];
    match fit_lines(&s, &und, &b.h, &mut inl, true) {
        Some(f) => {
            b.h = f.h;
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A board (dark 0.05 / light 0.5 squares, frame 0.25, table 0.12) seen through `h`,
    /// with bright discs ("pieces") on the first two ranks; 4×4 supersampled.
    fn render(h: &Homography, w: usize, hgt: usize) -> Gray {
        render_with_pieces(h, w, hgt, &[0, 1])
    }

    /// [`render`] with the discs on the ranks `rows`.
    fn render_with_pieces(h: &Homography, w: usize, hgt: usize, rows: &[i64]) -> Gray {
        render_board(h, w, hgt, rows, 0.0)
    }

    /// [`render_with_pieces`] with the outermost squares reaching `overhang` squares into
    /// the frame: the playing area's edge seen off its place, the grid lines where they are.
    fn render_board(h: &Homography, w: usize, hgt: usize, rows: &[i64], overhang: f64) -> Gray {
        let inv = h.inverse().expect("test homography is invertible");
        let squares = -overhang..8.0 + overhang;
        let mut data = vec![0.0f32; w * hgt];
        for y in 0..hgt {
            for x in 0..w {
                let mut acc = 0.0;
                for sy in 0..4 {
                    for sx in 0..4 {
                        let p = [
                            x as f64 + (sx as f64 + 0.5) / 4.0 - 0.5,
                            y as f64 + (sy as f64 + 0.5) / 4.0 - 0.5,
                        ];
                        let b = inv.map(p);
                        let (fu, fv) = (b[0].floor().clamp(0.0, 7.0), b[1].floor().clamp(0.0, 7.0));
                        let inside = squares.contains(&b[0]) && squares.contains(&b[1]);
                        let piece = inside
                            && rows.contains(&(fv as i64))
                            && (b[0] - fu - 0.5).hypot(b[1] - fv - 0.5) < 0.3;
                        acc += if piece {
                            0.9
                        } else if inside {
                            if (fu + fv) as i64 % 2 == 0 { 0.05 } else { 0.5 }
                        } else if (-0.6..8.6).contains(&b[0]) && (-0.6..8.6).contains(&b[1]) {
                            0.25
                        } else {
                            0.12
                        };
                    }
                }
                data[y * w + x] = acc / 16.0;
            }
        }
        Gray {
            width: w,
            height: hgt,
            data,
        }
    }

    /// Every outer corner of `fit`, distorted back through `lens`, within 0.1 px of `truth`
    /// (a1, h1, h8, a8).
    fn assert_corners_within_a_tenth_of_a_pixel(fit: &BoardFit, lens: &Lens, truth: &[Point; 4]) {
        for (k, t) in truth.iter().enumerate() {
            let c = [[0.0, 0.0], [8.0, 0.0], [8.0, 8.0], [0.0, 8.0]][k];
            let p = lens.distort(fit.h.map(c));
            let err = (p[0] - t[0]).hypot(p[1] - t[1]);
            assert!(err < 0.1, "corner {k}: {p:?} vs {t:?} ({err:.3} px)");
        }
    }

    #[test]
    fn line_fit_recovers_the_corners_from_a_rough_start() {
        let truth = [[60.0, 260.0], [330.0, 250.0], [300.0, 62.0], [92.0, 70.0]];
        let h_true = Homography::from_board_corners(&truth).unwrap();
        let lin = render(&h_true, 400, 300);
        let rough = [[61.2, 259.0], [329.0, 251.1], [301.0, 61.0], [91.0, 71.2]];
        let lens = Lens {
            centre: [199.5, 149.5],
            kappa: 0.0,
        };
        let start = Homography::from_board_corners(&rough).unwrap();
        let n_samples = edge_samples(&lin, &start, &lens, &BOARD_CELLS, true, &[]).len();
        assert!(n_samples > 500, "only {n_samples} edge samples");
        let mut boards = [BoardFit {
            h: start,
            xcorners: Vec::new(),
        }];
        let f2 = (0.8f64 * 400.0).powi(2);
        let lens = refine(&lin, &mut boards, lens, f2);
        assert!(lens.kappa.abs() * f2 < 0.01, "k1 {}", lens.kappa * f2);
        assert_corners_within_a_tenth_of_a_pixel(&boards[0], &lens, &truth);
    }

    #[test]
    fn the_corners_follow_the_grid_lines_not_the_playing_areas_outer_edge() {
        // The squares reach 0.01 square (about a third of a pixel here) beyond the grid's
        // outer lines, as the rendered games' outer edges lay off the truth: within the fit's
        // outlier cut, so only leaving the edge out keeps the corners where the lines put them.
        let truth = [[60.0, 260.0], [330.0, 250.0], [300.0, 62.0], [92.0, 70.0]];
        let h_true = Homography::from_board_corners(&truth).unwrap();
        let lin = render_board(&h_true, 400, 300, &[0, 1], 0.01);
        let lens = Lens {
            centre: [199.5, 149.5],
            kappa: 0.0,
        };
        let mut boards = [BoardFit {
            h: h_true,
            xcorners: Vec::new(),
        }];
        let f2 = (0.8f64 * 400.0).powi(2);
        let lens = refine(&lin, &mut boards, lens, f2);
        assert_corners_within_a_tenth_of_a_pixel(&boards[0], &lens, &truth);
    }

    #[test]
    fn a_start_position_agrees_with_its_own_placement_only() {
        let truth = [[60.0, 260.0], [330.0, 250.0], [300.0, 62.0], [92.0, 70.0]];
        let h = Homography::from_board_corners(&truth).unwrap();
        let lens = Lens {
            centre: [199.5, 149.5],
            kappa: 0.0,
        };
        // The X-corners a start position shows: the lines between its empty middle rows.
        let xcorners: Vec<Point> = (1..8)
            .flat_map(|u| (3..6).map(move |v| [u as f64, v as f64]))
            .collect();
        let start = render_with_pieces(&h, 400, 300, &[0, 1, 6, 7]);
        let right = start_position_agreement(&start, &h, &lens, &xcorners).unwrap();
        assert!(right > 0.95, "the true placement agrees {right}");
        // The same lattice placed two ranks further: board (u, v) is the true (u, v + 2).
        let shifted = h.then_after(&Homography([1.0, 0.0, 0.0, 0.0, 1.0, 2.0, 0.0, 0.0, 1.0]));
        let anchors: Vec<Point> = xcorners.iter().map(|p| [p[0], p[1] - 2.0]).collect();
        let off = start_position_agreement(&start, &shifted, &lens, &anchors).unwrap();
        assert!(off < 0.75, "two ranks off agrees {off}");
        // Empty boards show no start position anywhere.
        let empty = render_with_pieces(&h, 400, 300, &[]);
        let none = start_position_agreement(&empty, &h, &lens, &xcorners).unwrap();
        assert!(none < 0.6, "an empty board agrees {none}");
    }

    #[test]
    fn squares_larger_than_a_quarter_of_the_frame_give_no_samples() {
        // A placement three times the true board's size (the kind that lies far beyond a small
        // lattice): its lines 0, 1, 2 are the true lines 0, 3, 6, real edges between squares of
        // the colours it expects, but its squares (105 px or more) are larger than a quarter
        // of the 360 px frame, so no board that fits in the frame has them.
        let truth = [[10.0, 290.0], [350.0, 290.0], [350.0, 10.0], [10.0, 10.0]];
        let h = Homography::from_board_corners(&truth).unwrap();
        let lin = render(&h, 360, 300);
        let lens = Lens {
            centre: [179.5, 149.5],
            kappa: 0.0,
        };
        let big = h.then_after(&Homography([3.0, 0.0, 0.0, 0.0, 3.0, 0.0, 0.0, 0.0, 1.0]));
        // Its squares 0..2 on both axes (the true 0..6) lie inside the frame.
        let inside: Cells = [[0, 2], [0, 2]];
        assert!(edge_samples(&lin, &big, &lens, &inside, true, &[]).is_empty());
        // The true placement has samples there, so the image does show those edges.
        let true_inside: Cells = [[0, 6], [0, 6]];
        assert!(edge_samples(&lin, &h, &lens, &true_inside, true, &[]).len() > 300);
    }

    #[test]
    fn wrong_square_colours_give_no_samples() {
        // A uniform image has no edges with the expected colours on both sides.
        let lin = Gray {
            width: 200,
            height: 200,
            data: vec![0.3; 200 * 200],
        };
        let h = Homography::from_board_corners(&[
            [20.0, 180.0],
            [180.0, 180.0],
            [180.0, 20.0],
            [20.0, 20.0],
        ])
        .unwrap();
        let lens = Lens {
            centre: [99.5, 99.5],
            kappa: 0.0,
        };
        assert!(edge_samples(&lin, &h, &lens, &BOARD_CELLS, true, &[]).is_empty());
    }
}
