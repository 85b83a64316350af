//! Table calibration: where both boards and the four pocket zones are in the camera image,
//! which corner is a1 and which board is A. Found automatically from one frame (start position
//! or empty boards) or taken from corners a person typed; stored as TOML
//! (`calibration/<table>.toml`) and validated on load.

use std::path::Path;

use image::RgbImage;
use serde::{Deserialize, Serialize};

use super::detect::{self, FoundBoard, Gray, dist, x_corner_contrast};
use super::geometry::{Homography, Point, fraction_inside, inside_convex, is_convex, signed_area};
use crate::engine::{BoardId, Color};

/// Errors of calibration: bad files, bad manual corners, or no boards found.
#[derive(Debug, thiserror::Error)]
pub enum CalibrationError {
    /// The message carries the I/O error itself (no `source` chain, so it is not printed twice).
    #[error("{path}: {error}")]
    Io { path: String, error: std::io::Error },
    #[error("calibration TOML: {0}")]
    Parse(String),
    #[error("invalid calibration: {0}")]
    Invalid(String),
    #[error("manual corners: {0}")]
    Corners(String),
    #[error(
        "automatic board detection failed ({0}); give the corners by hand with \
         --corners \"A:x,y;x,y;x,y;x,y B:x,y;x,y;x,y;x,y\" (a1, h1, h8, a8 of each board, pixels)"
    )]
    NotFound(String),
    #[error("frame is {got_w}×{got_h}, calibration is for {want_w}×{want_h}")]
    ImageSize {
        got_w: u32,
        got_h: u32,
        want_w: u32,
        want_h: u32,
    },
}

/// Where the pocket zone of each player lies, in board squares relative to the playing area
/// (file 0..8, rank 0..8 from White's side): a band beside the a-file edge, split at the
/// board's middle into White's half and Black's half. Defaults follow the simulator's layout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PocketLayout {
    /// Gap between the playing area and the zone (squares).
    pub gap: f64,
    /// Extent of the zone away from the board (squares).
    pub depth: f64,
    /// Distance of the zone from the board's middle line (squares).
    pub from_middle: f64,
    /// Length of the zone along the board edge (squares).
    pub length: f64,
}

impl Default for PocketLayout {
    fn default() -> Self {
        PocketLayout {
            gap: 0.78,
            depth: 2.36,
            from_middle: 1.73,
            length: 3.64,
        }
    }
}

/// How calibration decides what detection cannot see: TOML via serde with defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CalibrationConfig {
    /// Board A is the left one as seen from the camera (else the right one).
    pub a_is_left: bool,
    /// For empty boards (no piece colours to go by): whether White of board A / board B sits
    /// at the edge nearer to the camera (lower in the image).
    pub white_near: [bool; 2],
    pub pockets: PocketLayout,
    /// Difference of the two ends' signed piece brightness (grey levels) above which the
    /// light pieces decide the sides.
    pub min_piece_contrast: f64,
    /// Frames narrower than this (pixels) are also searched at twice their size, whose corners
    /// are kept where both searches place the boards alike: the X-corner filters are sized for
    /// squares tens of pixels wide, which the far board of a small, low frame does not have.
    /// 0 = never.
    pub upscale_below_width: u32,
}

impl Default for CalibrationConfig {
    fn default() -> Self {
        CalibrationConfig {
            a_is_left: true,
            white_near: [true, false],
            pockets: PocketLayout::default(),
            min_piece_contrast: 12.0,
            upscale_below_width: 1000,
        }
    }
}

/// How a board's a1 corner was decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OrientationSource {
    /// The light pieces of the start position stand on White's side.
    PieceColours,
    /// Empty board: dark a1 square and the configured seating (`white_near`).
    Convention,
    /// Given by a person.
    Manual,
}

/// One board of the table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BoardCalibration {
    /// "A" or "B".
    pub label: String,
    /// Outer corners of the 8×8 playing area in pixels: a1, h1, h8, a8.
    pub corners: [Point; 4],
    /// Board coordinates (file, rank ∈ 0..8, a1 corner at (0,0)) → pixels; derived from
    /// `corners`, checked against them on load.
    pub homography: Homography,
    pub orientation: OrientationSource,
    /// Pocket zones in pixels, White's then Black's (convex quads on the table).
    pub pockets: [[Point; 4]; 2],
    /// Fraction of the 49 interior lattice corners confirmed in the calibration frame
    /// (the reference for drift checks); 0 for manual corners without a frame check.
    pub lattice_reference: f64,
}

/// A table's calibration; the file `calibration/<table>.toml`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub table: String,
    /// Image size the calibration is valid for.
    pub width: u32,
    pub height: u32,
    /// When it was made (UTC, RFC 3339).
    pub created: String,
    /// "auto" or "manual".
    pub method: String,
    /// 0..1: mean of the boards' lattice confirmation and edge-fit agreement.
    pub quality: f64,
    /// Board A, then board B.
    pub boards: [BoardCalibration; 2],
}

/// Result of a drift check.
#[derive(Clone, Debug, PartialEq)]
pub struct Drift {
    /// Fraction of interior lattice corners confirmed now, per board.
    pub confirmed: [f64; 2],
    /// The same fraction at calibration time.
    pub reference: [f64; 2],
    /// Per board (A, B), whether its lattice failed to confirm where it was calibrated (it
    /// moved, the camera did, or something covers it).
    pub moved: [bool; 2],
    /// Per board that failed: the displacement (pixels) at which its lattice confirms as well as
    /// half its calibration-time fraction and twice as well as in place, if there is one (see
    /// `displaced_lattice`): evidence that the board or the camera moved rather than that a hand
    /// covers it.
    pub shift: [Option<Point>; 2],
}

impl Drift {
    /// Whether a board or the camera moved: recalibrate.
    pub fn recalibrate(&self) -> bool {
        self.moved.contains(&true)
    }
}

/// Current UTC time as RFC 3339 (seconds).
pub fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// How far above a square's centre a standing piece's body is also sampled, in the square's
/// size as seen (the square root of its image area), straight up in the image. Seen from a
/// low camera, a far board's square centres show its pieces' shaded bases and the squares
/// between them, White's as dark as Black's: on the first frames of the 58 test and 48
/// validation renders, board B's two ends differed by less than `min_piece_contrast` at the
/// centres on 10 and 9 rightly placed boards (the convention decided), and by at least 43.6
/// and 37.9 grey levels with the lifted samples added. Lifts of 0.3–0.8 all separated the ends
/// on the four rightly placed boards B of the five frames first looked at.
const PIECE_BODY_LIFT: f64 = 0.35;

/// Signed piece brightness on two rows of squares: the luminance at each square centre and
/// [`PIECE_BODY_LIFT`] above it, minus the median luminance of same-coloured empty squares in
/// the board's middle four rows. Light pieces score positive, dark pieces negative, empty
/// squares about zero. `rows_are_v`: the rows run along u (fixed v) when true.
fn piece_score(g: &Gray, h: &Homography, rows: [usize; 2], rows_are_v: bool) -> f64 {
    let uv = |a: usize, r: usize| -> [f64; 2] {
        let (u, v) = if rows_are_v { (a, r) } else { (r, a) };
        [u as f64, v as f64]
    };
    let at = |a: usize, r: usize| -> Point {
        let [u, v] = uv(a, r);
        h.map([u + 0.5, v + 0.5])
    };
    let parity = |a: usize, r: usize| (a + r) % 2;
    let mut base: [Vec<f32>; 2] = [Vec::new(), Vec::new()];
    for r in 2..6 {
        for a in 0..8 {
            let p = at(a, r);
            if g.contains(p, 0.0) {
                base[parity(a, r)].push(g.sample(p));
            }
        }
    }
    let med = |v: &mut Vec<f32>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v.get(v.len() / 2).copied().unwrap_or(0.0) as f64
    };
    let expected = [med(&mut base[0]), med(&mut base[1])];
    let (mut sum, mut n) = (0.0, 0usize);
    for r in rows {
        for a in 0..8 {
            let p = at(a, r);
            let [u, v] = uv(a, r);
            let quad = [[u, v], [u + 1.0, v], [u + 1.0, v + 1.0], [u, v + 1.0]].map(|c| h.map(c));
            let body = [
                p[0],
                p[1] - PIECE_BODY_LIFT * signed_area(&quad).abs().sqrt(),
            ];
            for q in [p, body] {
                if g.contains(q, 0.0) {
                    sum += g.sample(q) as f64 - expected[parity(a, r)];
                    n += 1;
                }
            }
        }
    }
    if n == 0 { 0.0 } else { sum / n as f64 }
}

/// Square-colour parity: positive when squares with even (u + v) are darker.
fn parity(g: &Gray, h: &Homography) -> f64 {
    let (mut even, mut odd) = (Vec::new(), Vec::new());
    for v in 0..8 {
        for u in 0..8 {
            for (du, dv) in [(0.2, 0.2), (0.8, 0.2), (0.2, 0.8), (0.8, 0.8)] {
                let p = h.map([u as f64 + du, v as f64 + dv]);
                if g.contains(p, 0.0) {
                    let s = g.sample(p);
                    if (u + v) % 2 == 0 {
                        even.push(s)
                    } else {
                        odd.push(s)
                    }
                }
            }
        }
    }
    let med = |v: &mut Vec<f32>| {
        if v.is_empty() {
            return 0.0;
        }
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2] as f64
    };
    med(&mut odd) - med(&mut even)
}

/// Rotates unoriented corners (u,v order) so that a1 comes first.
fn rotate(c: &[Point; 4], k: usize) -> [Point; 4] {
    std::array::from_fn(|i| c[(i + k) % 4])
}

/// Fraction of the 49 interior corners of a board that pass the X-corner test at their
/// calibrated positions.
pub fn lattice_confirmation(g: &Gray, h: &Homography) -> f64 {
    let corners = interior_corners(h);
    confirmed_at(g, &corners, [0.0, 0.0])
}

/// The 49 interior corners of a board in pixels (rank-major from b2), each with the radius of
/// its X-corner ring test (a fifth of the local square, 2–6 px).
fn interior_corners(h: &Homography) -> Vec<(Point, f64)> {
    let mut out = Vec::with_capacity(49);
    for r in 1..8 {
        for f in 1..8 {
            let p = h.map([f as f64, r as f64]);
            let q = h.map([f as f64 + 1.0, r as f64]);
            let sq = ((p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2)).sqrt();
            out.push((p, (0.2 * sq).clamp(2.0, 6.0)));
        }
    }
    out
}

/// Fraction of `corners` that pass the X-corner test displaced by `offset` pixels.
fn confirmed_at(g: &Gray, corners: &[(Point, f64)], offset: Point) -> f64 {
    let ok = corners
        .iter()
        .filter(|&&(p, rad)| {
            let p = [p[0] + offset[0], p[1] + offset[1]];
            g.contains(p, rad + 2.0) && x_corner_contrast(g, p, rad, 15.0).is_some()
        })
        .count();
    ok as f64 / corners.len().max(1) as f64
}

/// Where a board's lattice shows when it does not show at its calibrated place: the
/// displacement (pixels, less than half a square either way, so that the lattice's own period
/// cannot answer) at which most interior corners pass the X-corner test, and that fraction.
/// A camera or board that moved shows its lattice displaced; a hand over the board shows it
/// nowhere. The displacements are scanned with the 16 corners of every other line; a best
/// that reaches `need` is placed finer and measured with all 49.
fn displaced_lattice(g: &Gray, h: &Homography, need: f64) -> (Point, f64) {
    let c = h.map([4.0, 4.0]);
    let step_of = |d: Point| {
        let q = h.map([4.0 + d[0], 4.0 + d[1]]);
        (q[0] - c[0]).hypot(q[1] - c[1])
    };
    let square = step_of([1.0, 0.0]).min(step_of([0.0, 1.0]));
    let reach = 0.45 * square;
    // Nearer than this the X-corner test at the calibrated place would have passed.
    let least = (0.15 * square).max(2.0);
    let pitch = (0.1 * square).clamp(1.0, 3.0);
    let n = (reach / pitch).floor() as i32;
    let corners = interior_corners(h);
    // Files and ranks 1, 3, 5, 7 of the 7 × 7 interior corners.
    let sparse: Vec<(Point, f64)> = corners
        .iter()
        .enumerate()
        .filter(|(i, _)| (i / 7) % 2 == 0 && (i % 7) % 2 == 0)
        .map(|(_, c)| *c)
        .collect();
    let mut best = ([0.0, 0.0], 0.0);
    for iy in -n..=n {
        for ix in -n..=n {
            let d = [ix as f64 * pitch, iy as f64 * pitch];
            if d[0].hypot(d[1]) < least {
                continue;
            }
            let c = confirmed_at(g, &sparse, d);
            if c > best.1 {
                best = (d, c);
            }
        }
    }
    if best.1 < need {
        // Not displaced (most likely covered): no need to place it finer.
        return best;
    }
    // Finer around the best: the mean of the offsets where the most of all 49 corners pass
    // (the test passes on a plateau around the true displacement).
    let fine = pitch / 3.0;
    let mut top = (0.0, Vec::new());
    for iy in -3..=3 {
        for ix in -3..=3 {
            let d = [best.0[0] + ix as f64 * fine, best.0[1] + iy as f64 * fine];
            let c = confirmed_at(g, &corners, d);
            if c > top.0 {
                top = (c, vec![d]);
            } else if c == top.0 {
                top.1.push(d);
            }
        }
    }
    let n = top.1.len().max(1) as f64;
    let mean = [
        top.1.iter().map(|d| d[0]).sum::<f64>() / n,
        top.1.iter().map(|d| d[1]).sum::<f64>() / n,
    ];
    (mean, confirmed_at(g, &corners, mean))
}

impl BoardCalibration {
    fn build(
        label: &str,
        corners: [Point; 4],
        orientation: OrientationSource,
        layout: &PocketLayout,
        g: Option<&Gray>,
    ) -> Result<BoardCalibration, CalibrationError> {
        let homography = Homography::from_board_corners(&corners).ok_or_else(|| {
            CalibrationError::Invalid(format!("board {label}: degenerate corners"))
        })?;
        let band = |r0: f64, r1: f64| {
            let (f0, f1) = (-layout.gap - layout.depth, -layout.gap);
            [[f1, r0], [f0, r0], [f0, r1], [f1, r1]].map(|p| homography.map(p))
        };
        let mid = 4.0;
        let pockets = [
            band(
                mid - layout.from_middle,
                mid - layout.from_middle - layout.length,
            ),
            band(
                mid + layout.from_middle,
                mid + layout.from_middle + layout.length,
            ),
        ];
        let lattice_reference = g.map_or(0.0, |g| lattice_confirmation(g, &homography));
        Ok(BoardCalibration {
            label: label.to_string(),
            corners,
            homography,
            orientation,
            pockets,
            lattice_reference,
        })
    }

    /// Square centre (index `rank * 8 + file`) in pixels.
    pub fn square_centre(&self, index: usize) -> Point {
        self.homography
            .map([(index % 8) as f64 + 0.5, (index / 8) as f64 + 0.5])
    }
}

/// Whether two calibrations put every corner of both boards within half a square of each
/// other (the same placement, up to the fit's precision).
fn same_placement(a: &Calibration, b: &Calibration) -> bool {
    a.boards.iter().zip(&b.boards).all(|(x, y)| {
        let square = (0..4)
            .map(|i| dist(x.corners[i], x.corners[(i + 1) % 4]))
            .sum::<f64>()
            / 32.0;
        x.corners
            .iter()
            .zip(&y.corners)
            .all(|(p, q)| dist(*p, *q) <= 0.5 * square)
    })
}

/// Largest angle (degrees) between the planes of a table's two boards as found. Both lie on
/// one table, so their planes agree up to the fit's error: at most 3.8° on the 53 of 64
/// rendered first frames (640×360, `low-side`) placed right, where a far board's few pixels
/// leave its horizon uncertain; a limit of 3° changed no result of the 200 frames of two
/// 1280×720 sweeps (seeds 100–124 and 200–224, four poses). The 5 placed wrong (a grid grown
/// across the table's edge, or placed a square or more off) differ by 5.1° to 11.6°. A thin
/// margin: a check against the worst mistakes, not a proof.
const MAX_PLANE_ANGLE_DEG: f64 = 4.5;

/// The angle (degrees) between the planes of two boards whose undistorted homographies
/// (board → pixel) are `a` and `b` in a `width` × `height` frame, for a focal length of
/// [`detect::FOCAL_WIDTHS`] frame widths about the frame's centre (boards on one plane share
/// its horizon line, so the angle is then 0 whatever the focal length). `None` for degenerate
/// homographies.
fn plane_angle_deg(a: &Homography, b: &Homography, width: u32, height: u32) -> Option<f64> {
    let f = detect::FOCAL_WIDTHS * width as f64;
    let (cx, cy) = ((width as f64 - 1.0) / 2.0, (height as f64 - 1.0) / 2.0);
    let normal = |h: &Homography| -> Option<[f64; 3]> {
        let h = &h.0;
        // The vanishing points of the board's two line families, and the horizon through them.
        let (p, q) = ([h[0], h[3], h[6]], [h[1], h[4], h[7]]);
        let l = [
            p[1] * q[2] - p[2] * q[1],
            p[2] * q[0] - p[0] * q[2],
            p[0] * q[1] - p[1] * q[0],
        ];
        // The plane's normal in camera coordinates is Kᵀ l.
        let n = [f * l[0], f * l[1], cx * l[0] + cy * l[1] + l[2]];
        let len = n.iter().map(|x| x * x).sum::<f64>().sqrt();
        (len.is_finite() && len > 0.0).then(|| n.map(|x| x / len))
    };
    let (na, nb) = (normal(a)?, normal(b)?);
    let cos = na.iter().zip(&nb).map(|(x, y)| x * y).sum::<f64>().abs();
    Some(cos.min(1.0).acos().to_degrees())
}

fn centre(c: &[Point; 4]) -> Point {
    [
        c.iter().map(|p| p[0]).sum::<f64>() / 4.0,
        c.iter().map(|p| p[1]).sum::<f64>() / 4.0,
    ]
}

impl Calibration {
    /// Finds both boards, their a1 corners, which is A, and the pockets in one frame.
    pub fn detect(
        frame: &RgbImage,
        table: &str,
        config: &CalibrationConfig,
    ) -> Result<Calibration, CalibrationError> {
        let native = Self::detect_at(frame, table, config, 1);
        if frame.width() >= config.upscale_below_width {
            return native.map(|(cal, _)| cal);
        }
        match (native, Self::detect_at(frame, table, config, 2)) {
            // Where both place the boards alike, the enlarged search's corners: of the 38 test
            // first frames both placed right, it had 27 within 2 % of a square, the frame's own
            // size 11, and choosing by `quality` (how well the lattices are confirmed) 20
            // (`docs/vision-calibration.md`, "The enlarged search's corners"). Where they
            // differ, the placement that shows a start position more clearly (by more than one
            // square's worth) wins: a board placed a rank off confirms its lattice as well as
            // the right one. Otherwise the better fit.
            (Ok((n, sn)), Ok((u, su))) => Ok(if same_placement(&n, &u) {
                u
            } else if (su - sn).abs() > 1.0 / 64.0 {
                if su > sn { u } else { n }
            } else if u.quality > n.quality {
                u
            } else {
                n
            }),
            (Ok((n, _)), Err(_)) => Ok(n),
            (Err(_), Ok((u, _))) => Ok(u),
            (Err(e), Err(_)) => Err(e),
        }
    }

    /// [`Calibration::detect`] with the boards searched in `frame` enlarged `scale` times
    /// (corners and fit residual brought back to `frame`'s pixels); with the sum of both
    /// boards' start-position agreement (`FoundBoard::start_agreement`, 0 where unjudged).
    fn detect_at(
        frame: &RgbImage,
        table: &str,
        config: &CalibrationConfig,
        scale: u32,
    ) -> Result<(Calibration, f64), CalibrationError> {
        let g = Gray::from_rgb(frame);
        let found = if scale > 1 {
            let big = image::imageops::resize(
                frame,
                frame.width() * scale,
                frame.height() * scale,
                image::imageops::FilterType::Triangle,
            );
            let gb = Gray::from_rgb(&big);
            let lin = detect::lines::linear_luminance(&big);
            let mut f = detect::find_boards(&gb, &lin);
            let k = scale as f64;
            for b in &mut f {
                b.rms /= k;
                for c in &mut b.corners {
                    c[0] = (c[0] + 0.5) / k - 0.5;
                    c[1] = (c[1] + 0.5) / k - 0.5;
                }
            }
            f
        } else {
            let lin = detect::lines::linear_luminance(frame);
            detect::find_boards(&g, &lin)
        };
        if found.len() < 2 {
            return Err(CalibrationError::NotFound(format!(
                "{} board(s) found, 2 needed",
                found.len()
            )));
        }
        // The two largest boards are this table's (neighbouring tables are farther away).
        let mut two: Vec<FoundBoard> = found.into_iter().take(2).collect();
        // The fits are in the pixels of the frame as searched (enlarged `scale` times).
        let (w, h) = frame.dimensions();
        match plane_angle_deg(&two[0].fit.h, &two[1].fit.h, w * scale, h * scale) {
            Some(angle) if angle <= MAX_PLANE_ANGLE_DEG => {}
            angle => {
                return Err(CalibrationError::NotFound(format!(
                    "the two boards found do not lie on one table (their planes differ by {})",
                    angle.map_or("an undefined angle".to_string(), |a| format!("{a:.1}°"))
                )));
            }
        }
        let start_agreement: f64 = two.iter().filter_map(|b| b.start_agreement).sum();
        two.sort_by(|a, b| centre(&a.corners)[0].total_cmp(&centre(&b.corners)[0]));
        if !config.a_is_left {
            two.reverse();
        }
        let mut boards = Vec::new();
        let mut quality = 0.0;
        for (b, fb) in two.iter().enumerate() {
            let h = Homography::from_board_corners(&fb.corners).ok_or_else(|| {
                CalibrationError::NotFound("a board's corners are degenerate".into())
            })?;
            // Dark a1: parity says whether corner (0,0) is on a dark square.
            let dark00 = parity(&g, &h) > 0.0;
            let ks: [usize; 2] = if dark00 { [0, 2] } else { [1, 3] };
            // White's home rows for rotation k, in (u, v) board coordinates.
            let home = |k: usize| -> f64 {
                match k {
                    0 => piece_score(&g, &h, [0, 1], true),
                    1 => piece_score(&g, &h, [7, 6], false),
                    2 => piece_score(&g, &h, [7, 6], true),
                    _ => piece_score(&g, &h, [0, 1], false),
                }
            };
            let (w0, w1) = (home(ks[0]), home(ks[1]));
            let (k, source) = if (w0 - w1).abs() >= config.min_piece_contrast {
                (
                    if w0 > w1 { ks[0] } else { ks[1] },
                    OrientationSource::PieceColours,
                )
            } else {
                // Empty board: the seating convention. Near = the a1–h1 edge lower in the image.
                let near_y = |k: usize| {
                    let c = rotate(&fb.corners, k);
                    (c[0][1] + c[1][1]) * 0.5
                };
                let near = if near_y(ks[0]) > near_y(ks[1]) {
                    ks[0]
                } else {
                    ks[1]
                };
                let far = if near == ks[0] { ks[1] } else { ks[0] };
                (
                    if config.white_near[b] { near } else { far },
                    OrientationSource::Convention,
                )
            };
            let corners = rotate(&fb.corners, k);
            let label = if b == 0 { "A" } else { "B" };
            let bc = BoardCalibration::build(label, corners, source, &config.pockets, Some(&g))?;
            quality += 0.5 * bc.lattice_reference.min(1.0) * (1.0 / (1.0 + fb.rms)).min(1.0);
            boards.push(bc);
        }
        let [a, b]: [BoardCalibration; 2] = boards
            .try_into()
            .map_err(|_| CalibrationError::NotFound("fewer than two boards".into()))?;
        Ok((
            Calibration {
                table: table.to_string(),
                width: frame.width(),
                height: frame.height(),
                created: now_rfc3339(),
                method: "auto".into(),
                quality,
                boards: [a, b],
            },
            start_agreement,
        ))
    }

    /// A calibration from corners a person gave (a1, h1, h8, a8 per board); `frame`, if given,
    /// provides the drift reference.
    pub fn manual(
        table: &str,
        size: (u32, u32),
        corners: [[Point; 4]; 2],
        frame: Option<&RgbImage>,
        config: &CalibrationConfig,
    ) -> Result<Calibration, CalibrationError> {
        let g = frame.map(Gray::from_rgb);
        let mut boards = Vec::new();
        for (b, c) in corners.iter().enumerate() {
            let label = if b == 0 { "A" } else { "B" };
            check_corners(label, c, size)?;
            boards.push(BoardCalibration::build(
                label,
                *c,
                OrientationSource::Manual,
                &config.pockets,
                g.as_ref(),
            )?);
        }
        let [a, b]: [BoardCalibration; 2] = boards
            .try_into()
            .map_err(|_| CalibrationError::Corners("two boards needed".into()))?;
        Ok(Calibration {
            table: table.to_string(),
            width: size.0,
            height: size.1,
            created: now_rfc3339(),
            method: "manual".into(),
            quality: 1.0,
            boards: [a, b],
        })
    }

    /// Validates invariants: image size, convex non-degenerate corners inside the image,
    /// homography consistent with the corners.
    pub fn validate(&self) -> Result<(), CalibrationError> {
        if self.width < 16 || self.height < 16 || self.width > 16_384 || self.height > 16_384 {
            return Err(CalibrationError::Invalid(format!(
                "image size {}×{} out of range",
                self.width, self.height
            )));
        }
        for (b, board) in self.boards.iter().enumerate() {
            let want = if b == 0 { "A" } else { "B" };
            if board.label != want {
                return Err(CalibrationError::Invalid(format!(
                    "board {} labelled '{}'",
                    want, board.label
                )));
            }
            check_corners(&board.label, &board.corners, (self.width, self.height))
                .map_err(|e| CalibrationError::Invalid(e.to_string()))?;
            for (i, bc) in [[0.0, 0.0], [8.0, 0.0], [8.0, 8.0], [0.0, 8.0]]
                .iter()
                .enumerate()
            {
                let p = board.homography.apply(*bc).ok_or_else(|| {
                    CalibrationError::Invalid(format!("board {want}: singular homography"))
                })?;
                let c = board.corners[i];
                if (p[0] - c[0]).hypot(p[1] - c[1]) > 1.0 {
                    return Err(CalibrationError::Invalid(format!(
                        "board {want}: homography disagrees with corner {i} by more than 1 px"
                    )));
                }
            }
            for q in &board.pockets {
                if !q.iter().all(|p| p[0].is_finite() && p[1].is_finite()) || !is_convex(q) {
                    return Err(CalibrationError::Invalid(format!(
                        "board {want}: pocket quad is not a convex quadrilateral"
                    )));
                }
            }
        }
        if !(0.0..=1.0).contains(&self.quality) {
            return Err(CalibrationError::Invalid("quality outside 0..1".into()));
        }
        Ok(())
    }

    /// TOML text.
    pub fn to_toml(&self) -> Result<String, CalibrationError> {
        toml::to_string(self).map_err(|e| CalibrationError::Parse(e.to_string()))
    }

    /// Parses and validates TOML text.
    pub fn from_toml(text: &str) -> Result<Calibration, CalibrationError> {
        let c: Calibration =
            toml::from_str(text).map_err(|e| CalibrationError::Parse(e.to_string()))?;
        c.validate()?;
        Ok(c)
    }

    /// Loads and validates `path`.
    pub fn load(path: &Path) -> Result<Calibration, CalibrationError> {
        let text = std::fs::read_to_string(path).map_err(|error| CalibrationError::Io {
            path: path.display().to_string(),
            error,
        })?;
        Calibration::from_toml(&text)
    }

    /// Writes the TOML file (creating its directory).
    pub fn save(&self, path: &Path) -> Result<(), CalibrationError> {
        let io = |error| CalibrationError::Io {
            path: path.display().to_string(),
            error,
        };
        if let Some(dir) = path.parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        std::fs::write(path, self.to_toml()?).map_err(io)
    }

    /// The fraction of `board`'s `color` pocket zone inside the frame. A zone the camera does
    /// not see whole cannot show that a piece is missing from it.
    pub fn pocket_in_view(&self, board: BoardId, color: Color) -> f64 {
        let zone = &self.boards[board.index()].pockets[color.index()];
        fraction_inside(zone, f64::from(self.width), f64::from(self.height))
    }

    /// Errors unless `frame` has the calibrated size.
    pub fn check_size(&self, frame: &RgbImage) -> Result<(), CalibrationError> {
        if frame.width() != self.width || frame.height() != self.height {
            return Err(CalibrationError::ImageSize {
                got_w: frame.width(),
                got_h: frame.height(),
                want_w: self.width,
                want_h: self.height,
            });
        }
        Ok(())
    }

    /// Whether the camera or a board moved since calibration: the interior lattice corners
    /// are tested at their calibrated positions (49 ring tests per board, well under a
    /// millisecond); a board is considered moved when fewer than half as many confirm as at
    /// calibration time (pieces in play cover some, a shift of a few pixels breaks all).
    pub fn check(&self, frame: &RgbImage) -> Result<Drift, CalibrationError> {
        self.check_size(frame)?;
        let g = Gray::from_rgb(frame);
        let confirmed = [0, 1].map(|b| lattice_confirmation(&g, &self.boards[b].homography));
        let reference = [0, 1].map(|b| self.boards[b].lattice_reference);
        // Half as many corners as at calibration time must confirm.
        let need = [0, 1].map(|b| {
            0.5 * if reference[b] > 0.0 {
                reference[b]
            } else {
                0.5
            }
        });
        let moved = [0, 1].map(|b| confirmed[b] < need[b]);
        let shift = [0, 1].map(|b| {
            if !moved[b] {
                return None;
            }
            // Displaced only when the lattice shows there clearly better than in place (a
            // hand that leaves a few corners visible lets some pass at any offset).
            let (d, c) = displaced_lattice(&g, &self.boards[b].homography, need[b]);
            (c >= need[b] && c >= 2.0 * confirmed[b]).then_some(d)
        });
        Ok(Drift {
            confirmed,
            reference,
            moved,
            shift,
        })
    }
}

fn check_corners(label: &str, c: &[Point; 4], size: (u32, u32)) -> Result<(), CalibrationError> {
    if c.iter().any(|p| !p[0].is_finite() || !p[1].is_finite()) {
        return Err(CalibrationError::Corners(format!(
            "board {label}: non-finite corner"
        )));
    }
    let (w, h) = (size.0 as f64, size.1 as f64);
    let margin = 0.25 * w.max(h);
    if c.iter()
        .any(|p| p[0] < -margin || p[1] < -margin || p[0] > w + margin || p[1] > h + margin)
    {
        return Err(CalibrationError::Corners(format!(
            "board {label}: a corner lies far outside the {}×{} image",
            size.0, size.1
        )));
    }
    if !is_convex(c) || signed_area(c).abs() < 64.0 {
        return Err(CalibrationError::Corners(format!(
            "board {label}: corners a1,h1,h8,a8 must form a convex quadrilateral of at least 64 px²"
        )));
    }
    Ok(())
}

/// Parses `"A:x,y;x,y;x,y;x,y B:x,y;x,y;x,y;x,y"` (a1, h1, h8, a8 per board, pixels).
pub fn parse_corners(text: &str) -> Result<[[Point; 4]; 2], CalibrationError> {
    let mut out: [Option<[Point; 4]>; 2] = [None, None];
    for part in text.split_whitespace() {
        let (label, rest) = part
            .split_once(':')
            .ok_or_else(|| CalibrationError::Corners(format!("'{part}': expected A:… or B:…")))?;
        let b = match label {
            "A" | "a" => 0,
            "B" | "b" => 1,
            other => {
                return Err(CalibrationError::Corners(format!(
                    "unknown board '{other}' (A or B)"
                )));
            }
        };
        let pts: Vec<Point> = rest
            .split(';')
            .map(|xy| {
                let (x, y) = xy
                    .split_once(',')
                    .ok_or_else(|| CalibrationError::Corners(format!("'{xy}': expected x,y")))?;
                let p = |s: &str| {
                    s.trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|v| v.is_finite())
                        .ok_or_else(|| CalibrationError::Corners(format!("'{s}' is not a number")))
                };
                Ok([p(x)?, p(y)?])
            })
            .collect::<Result<_, CalibrationError>>()?;
        let four: [Point; 4] = pts.try_into().map_err(|v: Vec<Point>| {
            CalibrationError::Corners(format!("board {label}: {} corners, 4 needed", v.len()))
        })?;
        if out[b].replace(four).is_some() {
            return Err(CalibrationError::Corners(format!(
                "board {label} given twice"
            )));
        }
    }
    match out {
        [Some(a), Some(b)] => Ok([a, b]),
        _ => Err(CalibrationError::Corners(
            "both boards needed: \"A:x,y;x,y;x,y;x,y B:x,y;x,y;x,y;x,y\"".into(),
        )),
    }
}

/// Whether pixel `p` lies in a pocket zone quad.
pub fn in_pocket(q: &[Point; 4], p: Point) -> bool {
    inside_convex(q, p)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The homography (board → pixel) of a board with 5 cm squares whose a1 corner stands at
    /// `origin` (metres) on the table, its rank direction tilted up by `tilt` degrees, seen in
    /// a 640 × 360 frame by a pinhole camera of focal `f` pixels at (0.2, −0.8, 0.6) m looking
    /// at (0.2, 0.2, 0).
    fn board_view(origin: [f64; 2], tilt: f64, f: f64) -> Homography {
        let sub = |a: [f64; 3], b: [f64; 3]| [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
        let cross = |a: [f64; 3], b: [f64; 3]| {
            [
                a[1] * b[2] - a[2] * b[1],
                a[2] * b[0] - a[0] * b[2],
                a[0] * b[1] - a[1] * b[0],
            ]
        };
        let unit = |a: [f64; 3]| {
            let n = (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt();
            a.map(|x| x / n)
        };
        let dot = |a: [f64; 3], b: [f64; 3]| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
        let eye = [0.2, -0.8, 0.6];
        let ahead = unit(sub([0.2, 0.2, 0.0], eye));
        let right = unit(cross(ahead, [0.0, 0.0, 1.0]));
        let down = cross(ahead, right);
        let t = tilt.to_radians();
        let corners = [[0.0, 0.0], [8.0, 0.0], [8.0, 8.0], [0.0, 8.0]].map(|[u, v]: [f64; 2]| {
            let w = [
                origin[0] + 0.05 * u,
                origin[1] + 0.05 * v * t.cos(),
                0.05 * v * t.sin(),
            ];
            let c = sub(w, eye);
            let z = dot(c, ahead);
            [319.5 + f * dot(c, right) / z, 179.5 + f * dot(c, down) / z]
        });
        Homography::from_board_corners(&corners).unwrap()
    }

    #[test]
    fn boards_on_one_table_share_its_plane_a_tilted_one_does_not() {
        for f in [512.0, 700.0] {
            let (a, b) = (
                board_view([-0.2, 0.0], 0.0, f),
                board_view([0.25, 0.0], 0.0, f),
            );
            let angle = plane_angle_deg(&a, &b, 640, 360).unwrap();
            assert!(angle < 0.01, "focal {f}: {angle}°");
        }
        // At the focal length the measure assumes (0.8 frame widths) the angle is the tilt.
        let a = board_view([-0.2, 0.0], 0.0, 512.0);
        let tilted = board_view([0.25, 0.0], 10.0, 512.0);
        let angle = plane_angle_deg(&a, &tilted, 640, 360).unwrap();
        assert!((angle - 10.0).abs() < 0.1, "{angle}°");
        assert!(angle > MAX_PLANE_ANGLE_DEG);
    }

    fn square(x: f64, y: f64, s: f64) -> [Point; 4] {
        [[x, y + s], [x + s, y + s], [x + s, y], [x, y]]
    }

    #[test]
    fn corners_parse_and_reject_bad_text() {
        let c =
            parse_corners("A:10,200;200,200;200,10;10,10 B:300,200;500,200;500,10;300,10").unwrap();
        assert_eq!(c[0][1], [200.0, 200.0]);
        assert_eq!(c[1][3], [300.0, 10.0]);
        for bad in [
            "A:1,2;3,4;5,6",
            "A:1,2;3,4;5,6;7,8",
            "C:1,2;3,4;5,6;7,8 A:1,2;3,4;5,6;7,8",
            "A:1,x;3,4;5,6;7,8 B:1,2;3,4;5,6;7,8",
            "A:1,2;3,4;5,6;7,8 A:1,2;3,4;5,6;7,8",
        ] {
            assert!(parse_corners(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn manual_calibration_round_trips_and_validation_catches_damage() {
        let cal = Calibration::manual(
            "t1",
            (640, 360),
            [square(20.0, 40.0, 240.0), square(360.0, 40.0, 240.0)],
            None,
            &CalibrationConfig::default(),
        )
        .unwrap();
        let text = cal.to_toml().unwrap();
        let back = Calibration::from_toml(&text).unwrap();
        assert_eq!(back.boards[1].corners, cal.boards[1].corners);
        // a1 at (0,0): the square centre of a1 lies near the a1 corner.
        let a1 = back.boards[0].square_centre(0);
        assert!((a1[0] - 35.0).abs() < 1e-6 && (a1[1] - 265.0).abs() < 1e-6);
        // The pockets lie left of the a-file edge for this orientation.
        assert!(back.boards[0].pockets[0].iter().all(|p| p[0] < 20.0));

        let mut bad = cal.clone();
        bad.boards[0].corners[2] = bad.boards[0].corners[0];
        assert!(Calibration::from_toml(&bad.to_toml().unwrap()).is_err());
        let mut bad = cal.clone();
        bad.width = 0;
        assert!(bad.validate().is_err());
        let mut bad = cal.clone();
        bad.boards[1].homography.0[2] += 50.0;
        assert!(bad.validate().is_err());
        assert!(Calibration::from_toml("table = 3").is_err());
        let frame = RgbImage::new(320, 200);
        assert!(matches!(
            cal.check(&frame),
            Err(CalibrationError::ImageSize { .. })
        ));
    }

    #[test]
    fn a_pocket_zone_beyond_the_frame_edge_is_partly_out_of_view() {
        let table = |size, xa: f64, xb: f64| {
            Calibration::manual(
                "t",
                size,
                [square(xa, 100.0, 240.0), square(xb, 100.0, 240.0)],
                None,
                &CalibrationConfig::default(),
            )
            .unwrap()
        };
        // Board A 20 px from the left edge: its zones lie left of it, mostly beyond the edge;
        // board B's are inside.
        let near_edge = table((1280, 440), 20.0, 500.0);
        for color in Color::ALL {
            let seen = near_edge.pocket_in_view(BoardId::A, color);
            assert!(seen < 0.5, "{color:?}: {seen}");
            assert_eq!(near_edge.pocket_in_view(BoardId::B, color), 1.0);
        }
        let centred = table((1280, 440), 300.0, 700.0);
        for board in [BoardId::A, BoardId::B] {
            for color in Color::ALL {
                assert_eq!(centred.pocket_in_view(board, color), 1.0);
            }
        }
    }

    #[test]
    fn manual_corners_must_be_a_convex_quad() {
        let crossed = [[0.0, 0.0], [100.0, 100.0], [100.0, 0.0], [0.0, 100.0]];
        let r = Calibration::manual(
            "t",
            (640, 360),
            [crossed, square(300.0, 50.0, 100.0)],
            None,
            &CalibrationConfig::default(),
        );
        assert!(matches!(r, Err(CalibrationError::Corners(_))));
    }

    #[test]
    fn rfc3339_has_the_shape() {
        let s = now_rfc3339();
        assert_eq!(s.len(), 20);
        assert!(s.ends_with('Z') && s.as_bytes()[10] == b'T');
        assert!(s.starts_with("20"));
    }
}
