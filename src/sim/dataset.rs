//! Training data for the square classifier: random reachable table positions rendered at random
//! camera poses, cut into perspective-rectified per-square crops (the square plus the space above
//! it where the piece body shows) and pocket-zone crops, with labels.
//!
//! Splits are by camera pose so that validation and test images come from viewpoints the
//! training set never saw: presets `tripod` and `overhead` → `train`, `oblique` → `val`,
//! `low-side` → `test`. A non-default piece set (`--pieces`) is a held-out set too: its crops
//! are all `test`.

use std::fmt::Write as _;
use std::path::Path;

use image::{Rgb, RgbImage};

use super::camera::{CAMERA_PRESETS, Camera, CameraConfig};
use super::fen::square_name;
use super::math::Vec3;
use super::mesh::PieceSet;
use super::rng::SimRng;
use super::scene::TableLayout;
use super::{SimError, SimSettings, build_scene, render_scene};
use crate::engine::{BoardId, Table, Variant};

/// Dataset export settings.
#[derive(Clone, Debug, PartialEq)]
pub struct DatasetOptions {
    pub frames: usize,
    pub seed: u64,
    pub width: u32,
    pub height: u32,
    /// Square crop size (width, height); the square fills the lower `width` rows.
    pub square_crop: [u32; 2],
    /// Pocket crop size.
    pub pocket_crop: [u32; 2],
    /// Random plies played per table (uniform in 0..=max).
    pub max_plies: usize,
    /// Whether the piece set is the default one (else all crops are held out as `test`).
    pub default_set: bool,
}

impl Default for DatasetOptions {
    fn default() -> Self {
        DatasetOptions {
            frames: 10,
            seed: 0,
            width: 960,
            height: 540,
            square_crop: [64, 96],
            pocket_crop: [128, 96],
            max_plies: 80,
            default_set: true,
        }
    }
}

/// Counts of what [`export_dataset`] wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DatasetSummary {
    pub squares: usize,
    pub pockets: usize,
}

/// A reachable table: both boards from the start, random legal moves (captures feed the
/// partner's pockets, so drops appear too).
pub fn random_table_fen(rng: &mut SimRng, max_plies: usize) -> String {
    let v = Variant::fics();
    let mut table = Table::new();
    let plies = rng.below(max_plies + 1);
    for _ in 0..plies {
        let board = if rng.unit() < 0.5 {
            BoardId::A
        } else {
            BoardId::B
        };
        let moves = table.legal_moves(board, &v);
        if moves.is_empty() {
            continue;
        }
        let mv = moves.as_slice()[rng.below(moves.len())];
        // A legal move from `legal_moves` is always playable.
        let _ = table.play(board, mv, &v);
    }
    table.to_fen()
}

/// The split a camera preset belongs to.
pub fn split_of(preset: &str) -> &'static str {
    match preset {
        "oblique" => "val",
        "low-side" => "test",
        _ => "train",
    }
}

/// Solves the homography mapping `src[i]` to `dst[i]` (4 correspondences).
fn homography(src: [[f32; 2]; 4], dst: [[f32; 2]; 4]) -> Option<[f64; 9]> {
    let mut a = [[0f64; 9]; 8];
    for i in 0..4 {
        let (x, y) = (src[i][0] as f64, src[i][1] as f64);
        let (u, v) = (dst[i][0] as f64, dst[i][1] as f64);
        a[2 * i] = [x, y, 1.0, 0.0, 0.0, 0.0, -u * x, -u * y, u];
        a[2 * i + 1] = [0.0, 0.0, 0.0, x, y, 1.0, -v * x, -v * y, v];
    }
    for c in 0..8 {
        let p = (c..8).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))?;
        if a[p][c].abs() < 1e-12 {
            return None;
        }
        a.swap(c, p);
        for r in 0..8 {
            if r != c {
                let f = a[r][c] / a[c][c];
                let pivot = a[c];
                for (x, y) in a[r].iter_mut().zip(pivot).skip(c) {
                    *x -= f * y;
                }
            }
        }
    }
    let mut h = [0f64; 9];
    for i in 0..8 {
        h[i] = a[i][8] / a[i][i];
    }
    h[8] = 1.0;
    Some(h)
}

fn bilinear(img: &RgbImage, x: f64, y: f64) -> Rgb<u8> {
    let (w, h) = (img.width() as i64, img.height() as i64);
    let (x0, y0) = (x.floor(), y.floor());
    let (fx, fy) = (x - x0, y - y0);
    let px = |xi: i64, yi: i64| {
        let p = img.get_pixel(xi.clamp(0, w - 1) as u32, yi.clamp(0, h - 1) as u32);
        [p[0] as f64, p[1] as f64, p[2] as f64]
    };
    let (xi, yi) = (x0 as i64, y0 as i64);
    let (a, b, c, d) = (
        px(xi, yi),
        px(xi + 1, yi),
        px(xi, yi + 1),
        px(xi + 1, yi + 1),
    );
    Rgb(std::array::from_fn(|k| {
        let top = a[k] + (b[k] - a[k]) * fx;
        let bot = c[k] + (d[k] - c[k]) * fx;
        (top + (bot - top) * fy).round().clamp(0.0, 255.0) as u8
    }))
}

/// Rectifies the ground quad `ground` (4 world points in order around it) seen by `cam` into a
/// `size` patch: the edge nearest the camera at the bottom, the opposite edge raised by
/// `rise` metres at the top, so an upright object on the quad fills the patch.
pub fn rectify(
    img: &RgbImage,
    cam: &Camera,
    ground: [Vec3; 4],
    rise: f32,
    size: [u32; 2],
) -> Option<RgbImage> {
    let proj: Vec<[f32; 2]> = ground
        .iter()
        .map(|&p| cam.project(p))
        .collect::<Option<Vec<_>>>()?;
    // The near edge: the one lowest in the image.
    let near = (0..4).max_by(|&i, &j| {
        let yi = proj[i][1] + proj[(i + 1) % 4][1];
        let yj = proj[j][1] + proj[(j + 1) % 4][1];
        yi.total_cmp(&yj)
    })?;
    let (mut l, mut r) = (near, (near + 1) % 4);
    if proj[l][0] > proj[r][0] {
        std::mem::swap(&mut l, &mut r);
    }
    // The far corner next to l is the one adjacent to l that is not r.
    let adj = |i: usize, not: usize| {
        if (i + 1) % 4 != not {
            (i + 1) % 4
        } else {
            (i + 3) % 4
        }
    };
    let (fl, fr) = (adj(l, r), adj(r, l));
    let up = Vec3::new(0.0, 0.0, rise);
    let src = [
        [0.0, size[1] as f32],
        [size[0] as f32, size[1] as f32],
        [size[0] as f32, 0.0],
        [0.0, 0.0],
    ];
    let dst = [
        proj[l],
        proj[r],
        cam.project(ground[fr] + up)?,
        cam.project(ground[fl] + up)?,
    ];
    let h = homography(src, dst)?;
    let mut out = RgbImage::new(size[0], size[1]);
    for v in 0..size[1] {
        for u in 0..size[0] {
            let (x, y) = (u as f64 + 0.5, v as f64 + 0.5);
            let w = h[6] * x + h[7] * y + h[8];
            let px = (h[0] * x + h[1] * y + h[2]) / w;
            let py = (h[3] * x + h[4] * y + h[5]) / w;
            out.put_pixel(u, v, bilinear(img, px, py));
        }
    }
    Some(out)
}

fn square_quad(layout: &TableLayout, board: usize, index: usize) -> [Vec3; 4] {
    let (f, r) = ((index % 8) as f32, (index / 8) as f32);
    [
        layout.board_point(board, f, r),
        layout.board_point(board, f + 1.0, r),
        layout.board_point(board, f + 1.0, r + 1.0),
        layout.board_point(board, f, r + 1.0),
    ]
}

fn save_png(img: &RgbImage, path: &Path) -> Result<(), SimError> {
    img.save_with_format(path, image::ImageFormat::Png)
        .map_err(|e| SimError::Image(format!("{}: {e}", path.display())))
}

/// Renders `options.frames` random tables and writes `squares/*.png`, `pockets/*.png`,
/// `labels.csv` (`path,label,split`), `pockets.csv` (`path,pieces,split`) and `frames.csv`.
pub fn export_dataset(
    pieces: &PieceSet,
    options: &DatasetOptions,
    out: &Path,
) -> Result<DatasetSummary, SimError> {
    for d in ["squares", "pockets"] {
        let p = out.join(d);
        std::fs::create_dir_all(&p).map_err(|e| SimError::Io(p.clone(), e))?;
    }
    let mut labels = String::from("path,label,split\n");
    let mut pocket_csv = String::from("path,pieces,split\n");
    let mut frames_csv = String::from("frame,seed,camera,pieces,split,table_fen\n");
    let mut summary = DatasetSummary {
        squares: 0,
        pockets: 0,
    };
    let root = SimRng::new(options.seed).fork(0xDA7A);
    for i in 0..options.frames {
        let mut rng = root.fork(i as u64);
        let preset = CAMERA_PRESETS[rng.below(CAMERA_PRESETS.len())];
        let split = if options.default_set {
            split_of(preset)
        } else {
            "test"
        };
        let fen = random_table_fen(&mut rng, options.max_plies);
        let settings = SimSettings {
            width: options.width,
            height: options.height,
            seed: rng.next_u64(),
            camera: CameraConfig::preset(preset)?,
            jpeg_artifacts: Some(60 + rng.below(36) as u8),
            ..SimSettings::default()
        };
        let placement = super::parse_table_fen(&fen)?;
        let (scene, cam) = build_scene(&placement, pieces, &settings)?;
        let frame = render_scene(&scene, &cam, &settings);
        let _ = writeln!(
            frames_csv,
            "{i},{},{preset},{},{split},\"{fen}\"",
            settings.seed, pieces.name
        );
        for (b, bt) in frame.truth.boards.iter().enumerate() {
            let bn = if b == 0 { 'A' } else { 'B' };
            for index in 0..64 {
                let quad = square_quad(&scene.layout, b, index);
                let Some(crop) = rectify(&frame.image, &cam, quad, 0.09, options.square_crop)
                else {
                    continue;
                };
                let rel = format!("squares/{i:06}_{bn}_{}.png", square_name(index));
                save_png(&crop, &out.join(&rel))?;
                let label = bt.squares[index].map_or("empty".to_string(), |c| c.to_string());
                let _ = writeln!(labels, "{rel},{label},{split}");
                summary.squares += 1;
            }
            for (s, pt) in bt.pockets.iter().enumerate() {
                let zone = scene.layout.pocket_zone(b, pt.side);
                let Some(crop) = rectify(&frame.image, &cam, zone, 0.08, options.pocket_crop)
                else {
                    continue;
                };
                let side = if s == 0 { 'w' } else { 'b' };
                let rel = format!("pockets/{i:06}_{bn}_{side}.png");
                save_png(&crop, &out.join(&rel))?;
                let pieces = if pt.pieces.is_empty() {
                    "empty"
                } else {
                    pt.pieces.as_str()
                };
                let _ = writeln!(pocket_csv, "{rel},{pieces},{split}");
                summary.pockets += 1;
            }
        }
    }
    for (name, text) in [
        ("labels.csv", &labels),
        ("pockets.csv", &pocket_csv),
        ("frames.csv", &frames_csv),
    ] {
        let p = out.join(name);
        std::fs::write(&p, text).map_err(|e| SimError::Io(p.clone(), e))?;
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn homography_maps_the_four_points() {
        let src = [[0.0, 96.0], [64.0, 96.0], [64.0, 0.0], [0.0, 0.0]];
        let dst = [[10.0, 200.0], [90.0, 210.0], [80.0, 100.0], [20.0, 95.0]];
        let h = homography(src, dst).unwrap();
        for (s, d) in src.iter().zip(dst) {
            let (x, y) = (s[0] as f64, s[1] as f64);
            let w = h[6] * x + h[7] * y + h[8];
            assert!(((h[0] * x + h[1] * y + h[2]) / w - d[0] as f64).abs() < 1e-6);
            assert!(((h[3] * x + h[4] * y + h[5]) / w - d[1] as f64).abs() < 1e-6);
        }
    }

    #[test]
    fn random_tables_are_valid_and_vary() {
        let mut rng = SimRng::new(5);
        let fens: Vec<String> = (0..4).map(|_| random_table_fen(&mut rng, 60)).collect();
        for f in &fens {
            assert!(Table::from_fen(f).is_ok(), "{f}");
            assert!(super::super::parse_table_fen(f).is_ok(), "{f}");
        }
        assert!(fens.iter().any(|f| f != &fens[0]));
    }

    #[test]
    fn splits_hold_out_camera_poses() {
        assert_eq!(split_of("tripod"), "train");
        assert_eq!(split_of("oblique"), "val");
        assert_eq!(split_of("low-side"), "test");
    }
}
