//! Plane geometry for calibration: homographies fitted by the normalised DLT, line fits and
//! intersections. Everything in `f64`; pixels follow the OpenCV convention (centre of the
//! top-left pixel is (0, 0)).

use serde::{Deserialize, Serialize};

/// A point in the plane (pixels or board units).
pub type Point = [f64; 2];

/// A projective map of the plane, row-major 3×3, normalised so that `h[8] == 1` when possible.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Homography(pub [f64; 9]);

impl Homography {
    /// Maps a point; `None` when it lands on the line at infinity.
    pub fn apply(&self, p: Point) -> Option<Point> {
        let h = &self.0;
        let w = h[6] * p[0] + h[7] * p[1] + h[8];
        if w.abs() < 1e-12 || !w.is_finite() {
            return None;
        }
        let x = (h[0] * p[0] + h[1] * p[1] + h[2]) / w;
        let y = (h[3] * p[0] + h[4] * p[1] + h[5]) / w;
        (x.is_finite() && y.is_finite()).then_some([x, y])
    }

    /// Maps a point known to be inside the fitted region (the fit guarantees a finite image);
    /// non-finite results come out as NaN rather than a panic.
    pub fn map(&self, p: Point) -> Point {
        self.apply(p).unwrap_or([f64::NAN, f64::NAN])
    }

    /// The inverse map, `None` for a singular matrix.
    pub fn inverse(&self) -> Option<Homography> {
        let m = &self.0;
        let c = [
            m[4] * m[8] - m[5] * m[7],
            m[2] * m[7] - m[1] * m[8],
            m[1] * m[5] - m[2] * m[4],
            m[5] * m[6] - m[3] * m[8],
            m[0] * m[8] - m[2] * m[6],
            m[2] * m[3] - m[0] * m[5],
            m[3] * m[7] - m[4] * m[6],
            m[1] * m[6] - m[0] * m[7],
            m[0] * m[4] - m[1] * m[3],
        ];
        let det = m[0] * c[0] + m[1] * c[3] + m[2] * c[6];
        if det.abs() < 1e-15 || !det.is_finite() {
            return None;
        }
        Some(Homography(c.map(|v| v / det)).normalised())
    }

    fn normalised(self) -> Homography {
        let s = self.0[8];
        if s.abs() > 1e-12 {
            Homography(self.0.map(|v| v / s))
        } else {
            self
        }
    }

    /// Composition `self ∘ other` (apply `other` first).
    pub fn then_after(&self, other: &Homography) -> Homography {
        let (a, b) = (&self.0, &other.0);
        let mut r = [0.0; 9];
        for i in 0..3 {
            for j in 0..3 {
                r[3 * i + j] = (0..3).map(|k| a[3 * i + k] * b[3 * k + j]).sum();
            }
        }
        Homography(r).normalised()
    }

    /// Least-squares homography taking `src[i]` to `dst[i]` (at least 4 pairs, not collinear),
    /// by the DLT on Hartley-normalised coordinates (centroid at 0, mean distance √2).
    pub fn fit(src: &[Point], dst: &[Point]) -> Option<Homography> {
        if src.len() < 4 || src.len() != dst.len() {
            return None;
        }
        let (ts, ns) = normalising(src)?;
        let (td, nd) = normalising(dst)?;
        // Normal equations of the 2n×9 system with h33 fixed to 1 would bias the fit; instead
        // solve AᵀA h = 0 for the smallest eigenvector by inverse iteration on AᵀA.
        let mut ata = [[0.0f64; 9]; 9];
        for (s, d) in ns.iter().zip(&nd) {
            let (x, y, u, v) = (s[0], s[1], d[0], d[1]);
            let rows = [
                [-x, -y, -1.0, 0.0, 0.0, 0.0, u * x, u * y, u],
                [0.0, 0.0, 0.0, -x, -y, -1.0, v * x, v * y, v],
            ];
            for r in rows {
                for i in 0..9 {
                    for j in 0..9 {
                        ata[i][j] += r[i] * r[j];
                    }
                }
            }
        }
        let h = smallest_eigenvector(&ata)?;
        let hn = Homography(h);
        // Undo the normalisations: H = Td⁻¹ · Hn · Ts.
        let td_inv = td.inverse()?;
        let full = td_inv.then_after(&hn.then_after(&ts));
        full.0.iter().all(|v| v.is_finite()).then_some(full)
    }

    /// The exact homography taking the unit-free board square (0,0),(8,0),(8,8),(0,8) to four
    /// pixel corners (a1, h1, h8, a8 order).
    pub fn from_board_corners(corners: &[Point; 4]) -> Option<Homography> {
        let src = [[0.0, 0.0], [8.0, 0.0], [8.0, 8.0], [0.0, 8.0]];
        Homography::fit(&src, corners)
    }
}

/// Similarity normalising a point set (Hartley), returned with the normalised points.
fn normalising(p: &[Point]) -> Option<(Homography, Vec<Point>)> {
    let n = p.len() as f64;
    let cx = p.iter().map(|q| q[0]).sum::<f64>() / n;
    let cy = p.iter().map(|q| q[1]).sum::<f64>() / n;
    let md = p
        .iter()
        .map(|q| ((q[0] - cx).powi(2) + (q[1] - cy).powi(2)).sqrt())
        .sum::<f64>()
        / n;
    if md < 1e-12 || !md.is_finite() {
        return None;
    }
    let s = std::f64::consts::SQRT_2 / md;
    let t = Homography([s, 0.0, -s * cx, 0.0, s, -s * cy, 0.0, 0.0, 1.0]);
    let pts = p
        .iter()
        .map(|q| [s * (q[0] - cx), s * (q[1] - cy)])
        .collect();
    Some((t, pts))
}

/// Eigenvector of the smallest eigenvalue of a symmetric positive semi-definite 9×9 matrix,
/// by Jacobi rotations (robust, and 9×9 is tiny).
pub(crate) fn smallest_eigenvector(m: &[[f64; 9]; 9]) -> Option<[f64; 9]> {
    let mut a = *m;
    let mut v = [[0.0f64; 9]; 9];
    for (i, row) in v.iter_mut().enumerate() {
        row[i] = 1.0;
    }
    for _sweep in 0..60 {
        let off: f64 = (0..9)
            .flat_map(|i| (0..9).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i][j] * a[i][j])
            .sum();
        if off < 1e-22 {
            break;
        }
        for p in 0..9 {
            for q in p + 1..9 {
                if a[p][q].abs() < 1e-300 {
                    continue;
                }
                let theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for row in a.iter_mut() {
                    let (akp, akq) = (row[p], row[q]);
                    row[p] = c * akp - s * akq;
                    row[q] = s * akp + c * akq;
                }
                let (rp, rq) = (a[p], a[q]);
                for k in 0..9 {
                    a[p][k] = c * rp[k] - s * rq[k];
                    a[q][k] = s * rp[k] + c * rq[k];
                }
                for row in v.iter_mut() {
                    let (vkp, vkq) = (row[p], row[q]);
                    row[p] = c * vkp - s * vkq;
                    row[q] = s * vkp + c * vkq;
                }
            }
        }
    }
    let k = (0..9).min_by(|&i, &j| a[i][i].total_cmp(&a[j][j]))?;
    let e: [f64; 9] = std::array::from_fn(|i| v[i][k]);
    e.iter().all(|x| x.is_finite()).then_some(e)
}

/// Total-least-squares line through points: (point on line, unit direction).
pub fn fit_line(p: &[Point]) -> Option<(Point, Point)> {
    if p.len() < 2 {
        return None;
    }
    let n = p.len() as f64;
    let cx = p.iter().map(|q| q[0]).sum::<f64>() / n;
    let cy = p.iter().map(|q| q[1]).sum::<f64>() / n;
    let (mut sxx, mut sxy, mut syy) = (0.0, 0.0, 0.0);
    for q in p {
        let (dx, dy) = (q[0] - cx, q[1] - cy);
        sxx += dx * dx;
        sxy += dx * dy;
        syy += dy * dy;
    }
    let angle = 0.5 * (2.0 * sxy).atan2(sxx - syy);
    let d = [angle.cos(), angle.sin()];
    (sxx + syy > 1e-12).then_some(([cx, cy], d))
}

/// Intersection of two lines given as (point, direction); `None` when parallel.
pub fn intersect(a: (Point, Point), b: (Point, Point)) -> Option<Point> {
    let ((p, d), (q, e)) = (a, b);
    let den = d[0] * e[1] - d[1] * e[0];
    if den.abs() < 1e-9 {
        return None;
    }
    let t = ((q[0] - p[0]) * e[1] - (q[1] - p[1]) * e[0]) / den;
    Some([p[0] + t * d[0], p[1] + t * d[1]])
}

/// Signed area of a polygon (positive when counter-clockwise in a y-up frame).
pub fn signed_area(p: &[Point]) -> f64 {
    let n = p.len();
    (0..n)
        .map(|i| {
            let (a, b) = (p[i], p[(i + 1) % n]);
            a[0] * b[1] - b[0] * a[1]
        })
        .sum::<f64>()
        * 0.5
}

/// Whether a quadrilateral is strictly convex (all turns the same way, none degenerate).
pub fn is_convex(q: &[Point; 4]) -> bool {
    let mut sign = 0.0f64;
    for i in 0..4 {
        let (a, b, c) = (q[i], q[(i + 1) % 4], q[(i + 2) % 4]);
        let cross = (b[0] - a[0]) * (c[1] - b[1]) - (b[1] - a[1]) * (c[0] - b[0]);
        if cross.abs() < 1e-6 || !cross.is_finite() {
            return false;
        }
        if sign == 0.0 {
            sign = cross.signum();
        } else if cross.signum() != sign {
            return false;
        }
    }
    true
}

/// Whether point `p` lies inside the convex quadrilateral `q`.
pub fn inside_convex(q: &[Point; 4], p: Point) -> bool {
    let mut sign = 0.0f64;
    for i in 0..4 {
        let (a, b) = (q[i], q[(i + 1) % 4]);
        let cross = (b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0]);
        if sign == 0.0 {
            sign = cross.signum();
        } else if cross.signum() != sign && cross != 0.0 {
            return false;
        }
    }
    true
}

/// The fraction of a convex polygon's area that lies inside the image `[0, width] × [0,
/// height]` (0 for a degenerate polygon). Clips it against the four edges in turn.
pub fn fraction_inside(poly: &[Point], width: f64, height: f64) -> f64 {
    let whole = signed_area(poly).abs();
    if whole.is_nan() || whole <= 0.0 {
        return 0.0;
    }
    // Each edge: which coordinate, the limit, and whether points below it are inside.
    let edges = [
        (0, 0.0, false),
        (0, width, true),
        (1, 0.0, false),
        (1, height, true),
    ];
    let mut clipped: Vec<Point> = poly.to_vec();
    for (axis, limit, below) in edges {
        let inside = |p: &Point| {
            if below {
                p[axis] <= limit
            } else {
                p[axis] >= limit
            }
        };
        let mut next = Vec::with_capacity(clipped.len() + 2);
        for i in 0..clipped.len() {
            let (a, b) = (clipped[(i + clipped.len() - 1) % clipped.len()], clipped[i]);
            if inside(&a) != inside(&b) {
                let t = (limit - a[axis]) / (b[axis] - a[axis]);
                next.push([a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])]);
            }
            if inside(&b) {
                next.push(b);
            }
        }
        if next.len() < 3 {
            return 0.0;
        }
        clipped = next;
    }
    (signed_area(&clipped).abs() / whole).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_part_of_a_quad_inside_the_image_is_measured_by_area() {
        let square = |x: f64, y: f64| [[x, y], [x + 10.0, y], [x + 10.0, y + 10.0], [x, y + 10.0]];
        assert_eq!(fraction_inside(&square(5.0, 5.0), 100.0, 50.0), 1.0);
        assert!((fraction_inside(&square(-5.0, 5.0), 100.0, 50.0) - 0.5).abs() < 1e-9);
        assert!((fraction_inside(&square(95.0, 45.0), 100.0, 50.0) - 0.25).abs() < 1e-9);
        assert_eq!(fraction_inside(&square(200.0, 5.0), 100.0, 50.0), 0.0);
        // A triangle cut by the left edge: the part with x >= 0 of (-10,0) (10,0) (10,20).
        let tri = [[-10.0, 0.0], [10.0, 0.0], [10.0, 20.0]];
        assert!((fraction_inside(&tri, 100.0, 50.0) - 0.75).abs() < 1e-9);
        assert_eq!(
            fraction_inside(&[[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]], 100.0, 50.0),
            0.0
        );
    }

    #[test]
    fn dlt_recovers_a_projective_map_and_its_inverse() {
        let h = Homography([1.3, 0.2, 400.0, -0.1, 0.9, 300.0, 0.0004, -0.0007, 1.0]);
        let src: Vec<Point> = (0..5)
            .flat_map(|i| (0..5).map(move |j| [i as f64 * 20.0, j as f64 * 15.0]))
            .collect();
        let dst: Vec<Point> = src.iter().map(|&p| h.map(p)).collect();
        let fit = Homography::fit(&src, &dst).unwrap();
        for (s, d) in src.iter().zip(&dst) {
            let q = fit.map(*s);
            assert!((q[0] - d[0]).abs() < 1e-6 && (q[1] - d[1]).abs() < 1e-6);
        }
        let inv = fit.inverse().unwrap();
        let back = inv.map(dst[7]);
        assert!((back[0] - src[7][0]).abs() < 1e-6 && (back[1] - src[7][1]).abs() < 1e-6);
    }

    #[test]
    fn collinear_points_have_no_homography() {
        let src: Vec<Point> = (0..6).map(|i| [i as f64, 2.0 * i as f64]).collect();
        let dst = src.clone();
        let ok = Homography::fit(&src, &dst);
        // A degenerate fit may come back, but it must not map an off-line point sensibly.
        if let Some(h) = ok {
            let p = h.apply([0.0, 5.0]);
            assert!(p.is_none_or(|p| (p[0] - 0.0).abs() > 1e-3 || (p[1] - 5.0).abs() > 1e-3));
        }
    }

    #[test]
    fn lines_intersect_and_quads_are_checked() {
        let a = fit_line(&[[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]).unwrap();
        let b = fit_line(&[[0.0, 2.0], [2.0, 0.0]]).unwrap();
        let x = intersect(a, b).unwrap();
        assert!((x[0] - 1.0).abs() < 1e-9 && (x[1] - 1.0).abs() < 1e-9);
        let sq = [[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]];
        assert!(is_convex(&sq));
        assert!(!is_convex(&[
            [0.0, 0.0],
            [1.0, 0.0],
            [0.0, 1.0],
            [1.0, 1.0]
        ]));
        assert!(inside_convex(&sq, [0.5, 0.5]));
        assert!(!inside_convex(&sq, [1.5, 0.5]));
        assert!((signed_area(&sq) - 1.0).abs() < 1e-12);
    }
}
