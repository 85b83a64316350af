//! Training and evaluation data for the square classifier and the pocket reader.
//!
//! [`export_training`] and [`export_sessions`] render random tables and hand each frame to a
//! crop-cutting closure supplied by the caller (the CLI cuts with `vision::Rectifier` from a
//! calibration built of the truth corners, so training sees exactly the run-time geometry;
//! `sim` itself never imports `vision`). Training frames vary piece set (procedural variants of
//! the given sets), board/table style, light, noise/blur/JPEG, pose around the training presets
//! and frame size; sessions are the contract's evaluation tables (start position = `adapt`,
//! random positions on the same table = `test`).
//!
//! The older [`export_dataset`] cuts crops with this module's own [`rectify`] (ground quads
//! lifted in 3D); it is kept for quick looks, not for training the shipped models.

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

// ---------------------------------------------------------------------------------------------
// Classifier training and evaluation data, cut by the vision stage's own rectifier.
// ---------------------------------------------------------------------------------------------

/// The crops of one frame, cut by the caller (the vision stage's `Rectifier` from a calibration
/// made of the truth corners), so that training sees exactly the run-time geometry. `sim` must
/// not depend on `vision`, hence the closure.
#[derive(Clone, Debug, Default)]
pub struct FrameCrops {
    /// Square patch width and height.
    pub square_size: [u32; 2],
    /// 128 RGB patches: board A's squares by `rank * 8 + file`, then board B's.
    pub squares: Vec<u8>,
    /// Pocket patch width and height.
    pub pocket_size: [u32; 2],
    /// 4 RGB patches: A White, A Black, B White, B Black.
    pub pockets: Vec<u8>,
}

/// Cuts the crops of a rendered frame; an `Err` skips the frame (e.g. a board out of view).
pub type CropCutter<'a> = dyn FnMut(&super::Frame) -> Result<FrameCrops, String> + 'a;

/// Frame sizes drawn for classifier data (the range the product is used at).
pub const FRAME_SIZES: [(u32, u32); 5] =
    [(640, 360), (800, 450), (960, 540), (1120, 630), (1280, 720)];

/// Smallest frame accepted by [`parse_frame_sizes`]: below it a square is a few pixels wide and
/// the rectified crops carry no piece shape.
pub const MIN_FRAME_SIZE: (u32, u32) = (160, 90);
/// Largest frame accepted by [`parse_frame_sizes`] (the renderer's cost grows with the area).
pub const MAX_FRAME_SIZE: (u32, u32) = (3840, 2160);

/// Parses a frame-size list such as `320x180,480x270` (each `WIDTHxHEIGHT`, comma-separated,
/// both sides within [`MIN_FRAME_SIZE`]..=[`MAX_FRAME_SIZE`]); the order is kept because the
/// draw in [`export_training`] indexes into it, so equal lists reproduce equal data.
pub fn parse_frame_sizes(text: &str) -> Result<Vec<(u32, u32)>, SimError> {
    let mut sizes = Vec::new();
    for item in text.split(',').map(str::trim) {
        let bad = |why: &str| {
            SimError::Config(format!(
                "frame size '{item}': {why} (expected WIDTHxHEIGHT, e.g. 320x180, within {}x{}..={}x{})",
                MIN_FRAME_SIZE.0, MIN_FRAME_SIZE.1, MAX_FRAME_SIZE.0, MAX_FRAME_SIZE.1
            ))
        };
        let (w, h) = item
            .split_once(['x', 'X'])
            .ok_or_else(|| bad("no 'x' between width and height"))?;
        let w: u32 = w.trim().parse().map_err(|_| bad("width is not a number"))?;
        let h: u32 = h
            .trim()
            .parse()
            .map_err(|_| bad("height is not a number"))?;
        if !(MIN_FRAME_SIZE.0..=MAX_FRAME_SIZE.0).contains(&w)
            || !(MIN_FRAME_SIZE.1..=MAX_FRAME_SIZE.1).contains(&h)
        {
            return Err(bad("out of range"));
        }
        sizes.push((w, h));
    }
    Ok(sizes)
}

/// Roles counted in a pocket, in the pocket model's output order.
pub const POCKET_ROLES: [char; 5] = ['P', 'N', 'B', 'R', 'Q'];

/// Settings of [`export_training`].
#[derive(Clone, Debug, PartialEq)]
pub struct TrainingOptions {
    pub frames: usize,
    pub seed: u64,
    /// Camera presets drawn from (training: `tripod`, `overhead`).
    pub presets: Vec<String>,
    /// Extra pose spread around the preset: yaw ± this many degrees, distance/height ± 12 %.
    pub pose_spread_deg: f32,
    /// Vary each frame's piece set procedurally (scale, taper, colours).
    pub vary_sets: bool,
    /// Where camera poses come from: around `presets`, or the broad [`PoseMode::Wide`] range.
    pub poses: PoseMode,
    /// Share of frames whose four pockets all hold many pieces ([`random_full_pocket`]),
    /// on top of the pockets [`random_training_fen`] draws; 0 keeps the old data stream.
    pub full_pockets: f32,
    /// Share of frames whose four pockets hold what play puts there ([`random_game_pocket`]:
    /// a few pieces, most often one or two); drawn after `full_pockets`, the two together at
    /// most 1; 0 keeps the old data stream.
    pub game_pockets: f32,
    /// Frame sizes drawn from, uniformly (default [`FRAME_SIZES`]; small frames teach the
    /// classifier the blurry, upsampled crops of low-resolution cameras).
    pub frame_sizes: Vec<(u32, u32)>,
    /// Share of tables whose set is a fresh draw of the procedural Staunton family
    /// ([`super::pieces::staunton`]) instead of one of the given sets; 0 keeps the old stream.
    pub staunton: f32,
    /// Frames per table: each table (set, scene, pose, size) is shown in this many positions,
    /// the first being the start position, as a game at the venue shows it. Trainers learn
    /// the run-time adaptation from such groups (`frames.csv` column `table`). 1 = every frame
    /// a new table (the old stream).
    pub episode: usize,
}

/// How [`export_training`] draws each frame's camera pose.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PoseMode {
    /// One of `TrainingOptions::presets` with a small spread around it.
    #[default]
    Presets,
    /// A continuous range from flat spectator views to top-down ([`wide_pose`]), never within
    /// [`HELD_OUT_ELEVATION_DEG`] / [`HELD_OUT_YAW_DEG`] of a held-out preset.
    Wide,
}

impl std::str::FromStr for PoseMode {
    type Err = SimError;
    fn from_str(s: &str) -> Result<Self, SimError> {
        match s {
            "presets" => Ok(PoseMode::Presets),
            "wide" => Ok(PoseMode::Wide),
            other => Err(SimError::Config(format!(
                "unknown pose mode '{other}' (known: presets, wide)"
            ))),
        }
    }
}

impl Default for TrainingOptions {
    fn default() -> Self {
        TrainingOptions {
            frames: 100,
            seed: 0,
            presets: vec!["tripod".into(), "overhead".into()],
            pose_spread_deg: 15.0,
            vary_sets: true,
            poses: PoseMode::Presets,
            full_pockets: 0.0,
            game_pockets: 0.0,
            frame_sizes: FRAME_SIZES.to_vec(),
            staunton: 0.0,
            episode: 1,
        }
    }
}

/// Presets held out of training (validation `oblique`, test `low-side`): no training pose of
/// [`PoseMode::Wide`] comes near them.
pub const HELD_OUT_PRESETS: [&str; 2] = ["oblique", "low-side"];
/// A wide pose is rejected when its elevation is within this many degrees of a held-out
/// preset's …
pub const HELD_OUT_ELEVATION_DEG: f32 = 6.0;
/// … and at the same time its yaw within this many degrees of that preset's yaw.
pub const HELD_OUT_YAW_DEG: f32 = 12.0;

/// Downward pitch of the optical axis of a pose, degrees (aimed at the target unless fixed).
pub fn elevation_of(camera: &CameraConfig) -> f32 {
    camera
        .elevation_deg
        .unwrap_or_else(|| camera.height.atan2(camera.distance).to_degrees())
}

/// (elevation, yaw) in degrees of the held-out presets.
pub fn held_out_poses() -> Result<Vec<(f32, f32)>, SimError> {
    HELD_OUT_PRESETS
        .iter()
        .map(|p| CameraConfig::preset(p).map(|c| (elevation_of(&c), c.yaw_deg)))
        .collect()
}

/// Whether a pose of this elevation and yaw lies in the excluded box around a held-out pose.
pub fn near_held_out(elevation_deg: f32, yaw_deg: f32, held_out: &[(f32, f32)]) -> bool {
    held_out.iter().any(|&(e, y)| {
        (elevation_deg - e).abs() <= HELD_OUT_ELEVATION_DEG
            && (yaw_deg - y).abs() <= HELD_OUT_YAW_DEG
    })
}

/// Table points that must be in view: both boards' playing corners (on the board and at
/// piece-top height) and the four pocket zones.
fn framing_points() -> Vec<Vec3> {
    let layout = TableLayout::default();
    let mut pts = Vec::new();
    for b in 0..2 {
        for c in layout.playing_corners(b) {
            pts.push(c);
            pts.push(c + Vec3::new(0.0, 0.0, 0.09));
        }
        for side in [super::Side::White, super::Side::Black] {
            for c in layout.pocket_zone(b, side) {
                pts.push(c);
                pts.push(c + Vec3::new(0.0, 0.0, 0.06));
            }
        }
    }
    pts
}

/// Pixel bounding box of `pts` seen by `cam`, `None` if one is behind the camera.
fn bounds(cam: &Camera, pts: &[Vec3]) -> Option<[f32; 4]> {
    let mut b = [f32::MAX, f32::MAX, f32::MIN, f32::MIN];
    for &p in pts {
        let q = cam.project(p)?;
        b = [
            b[0].min(q[0]),
            b[1].min(q[1]),
            b[2].max(q[0]),
            b[3].max(q[1]),
        ];
    }
    Some(b)
}

/// A training pose from a broad continuous range: elevation 18–85° (flat spectator view to
/// top-down), yaw ±40°, roll ±3°, focal 0.7–1.05, k1 −0.1…0, k2 0…0.02, aimed near the table
/// centre at a distance that makes the table (boards and pockets) fill 60–95 % of the frame.
/// Poses near a held-out preset ([`near_held_out`]) or not showing the whole table are drawn
/// again. The simulator's own pose jitter comes on top at render time.
pub fn wide_pose(
    rng: &mut SimRng,
    (width, height): (u32, u32),
    held_out: &[(f32, f32)],
) -> Result<CameraConfig, SimError> {
    let pts = framing_points();
    for _ in 0..200 {
        let elevation = rng.range(18.0, 85.0);
        let yaw = rng.sym(40.0);
        if near_held_out(elevation, yaw, held_out) {
            continue;
        }
        let fill = rng.range(0.6, 0.95);
        let mut camera = CameraConfig {
            target: [rng.sym(0.03), rng.sym(0.03), 0.0],
            yaw_deg: yaw,
            roll_deg: rng.sym(3.0),
            focal: rng.range(0.7, 1.05),
            k1: rng.range(-0.1, 0.0),
            k2: rng.range(0.0, 0.02),
            ..CameraConfig::default()
        };
        let (se, ce) = elevation.to_radians().sin_cos();
        let mut range = 1.4;
        let mut fits = false;
        for _ in 0..4 {
            camera.distance = range * ce;
            camera.height = range * se;
            let cam = Camera::new(&camera, width, height)?;
            let Some(b) = bounds(&cam, &pts) else {
                range *= 1.5;
                continue;
            };
            let size = ((b[2] - b[0]) / width as f32).max((b[3] - b[1]) / height as f32);
            let margin = 0.02;
            fits = b[0] >= margin * width as f32
                && b[1] >= margin * height as f32
                && b[2] <= (1.0 - margin) * width as f32
                && b[3] <= (1.0 - margin) * height as f32;
            if (size / fill - 1.0).abs() < 0.05 && fits {
                break;
            }
            range *= size / fill;
        }
        if fits && camera.height > 0.1 {
            return Ok(camera);
        }
    }
    Err(SimError::Config(
        "no wide camera pose framing the table in 200 draws".into(),
    ))
}

/// Settings of [`export_sessions`].
#[derive(Clone, Debug, PartialEq)]
pub struct SessionOptions {
    /// Sessions (tables) per camera preset.
    pub sessions: usize,
    /// Random positions per session (the `test` rows), besides the start position (`adapt`).
    pub positions: usize,
    pub seed: u64,
    pub presets: Vec<String>,
    /// Frame sizes drawn from, one per session (default [`FRAME_SIZES`]).
    pub frame_sizes: Vec<(u32, u32)>,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            sessions: 4,
            positions: 4,
            seed: 0,
            presets: vec!["low-side".into(), "oblique".into()],
            frame_sizes: FRAME_SIZES.to_vec(),
        }
    }
}

/// What an export wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExportSummary {
    pub frames: usize,
    pub skipped: usize,
    pub squares: usize,
    pub pockets: usize,
}

/// The standard start position of both boards, empty pockets.
pub const START_TABLE: &str =
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR | rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR";

/// A procedural variation of a piece set: per-kind scale and taper, and (half the time) fixed
/// piece colours instead of the scene style's, so a classifier cannot learn one set's shapes
/// or palette by heart.
pub fn varied_set(base: &PieceSet, rng: &mut SimRng) -> PieceSet {
    let mut set = base.clone();
    let global = Vec3::new(
        rng.range(0.85, 1.15),
        rng.range(0.85, 1.15),
        rng.range(0.85, 1.15),
    );
    for m in &mut set.meshes {
        let s = Vec3::new(
            global.x * rng.range(0.9, 1.1),
            global.y * rng.range(0.9, 1.1),
            global.z * rng.range(0.9, 1.1),
        );
        let taper = rng.range(-0.25, 0.35);
        *m = std::sync::Arc::new(m.varied(s, taper));
    }
    if rng.unit() < 0.5 {
        let light = rng.range(0.55, 0.98);
        let dark = rng.range(0.03, 0.35);
        let tint = |v: f32, rng: &mut SimRng| {
            let warm = rng.sym(0.12);
            [
                (v * (1.0 + warm)).clamp(0.0, 1.0),
                v,
                (v * (1.0 - warm)).clamp(0.0, 1.0),
            ]
        };
        set.config.white = Some(tint(light, rng));
        set.config.black = Some(tint(dark, rng));
    }
    set.name = format!("{}~varied", base.name);
    set
}

/// FEN of one board placement with its pocket in brackets.
fn board_fen(squares: &[Option<char>; 64], pocket: &str) -> String {
    let mut s = String::new();
    for rank in (0..8).rev() {
        let mut gap = 0;
        for file in 0..8 {
            match squares[rank * 8 + file] {
                Some(c) => {
                    if gap > 0 {
                        let _ = write!(s, "{gap}");
                        gap = 0;
                    }
                    s.push(c);
                }
                None => gap += 1,
            }
        }
        if gap > 0 {
            let _ = write!(s, "{gap}");
        }
        if rank > 0 {
            s.push('/');
        }
    }
    format!("{s}[{pocket}]")
}

/// A random pocket: 0..=8 pieces per role, small counts most likely (as in play), the whole
/// range covered.
fn random_pocket(rng: &mut SimRng, upper: bool) -> String {
    let cap = [0, 1, 2, 3, 4, 6, 8][rng.below(7)];
    pocket_of(rng, upper, cap, 0.35)
}

/// A full pocket: most roles present, 0..=8 of each with large counts common, so the pocket
/// reader sees crowded zones (play rarely makes them, and they are the hard ones to count).
pub fn random_full_pocket(rng: &mut SimRng, upper: bool) -> String {
    let cap = 3 + rng.below(6);
    pocket_of(rng, upper, cap, 0.15)
}

/// A pocket as play fills it: 0..=6 pieces, one to three most likely, pawns the commonest role
/// (on the rendered FICS games a zone holds at most 4 pieces, 58 % none, 24 % one, 14 % two; the
/// tail is there for longer games).
pub fn random_game_pocket(rng: &mut SimRng, upper: bool) -> String {
    const SIZES: [usize; 18] = [0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 4, 4, 5, 6];
    // Indices into `POCKET_ROLES`: pawns 5 in 12, knights, bishops and rooks 2, queens 1.
    const ROLES: [usize; 12] = [0, 0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4];
    let n = SIZES[rng.below(SIZES.len())];
    let mut counts = [0usize; 5];
    for _ in 0..n {
        counts[ROLES[rng.below(ROLES.len())]] += 1;
    }
    pocket_letters(counts, upper)
}

/// How a training table's pockets are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PocketDraw {
    /// `random_pocket` on 60 % of the boards, else the position's own pocket.
    Usual,
    /// Every pocket a [`random_full_pocket`].
    Full,
    /// Every pocket a [`random_game_pocket`].
    Game,
}

/// Per role: none with probability `p_none`, else 0..=`cap` pieces; upper case for White.
fn pocket_of(rng: &mut SimRng, upper: bool, cap: usize, p_none: f32) -> String {
    let mut counts = [0; 5];
    for n in &mut counts {
        if rng.unit() >= p_none {
            *n = rng.below(cap + 1);
        }
    }
    pocket_letters(counts, upper)
}

/// FEN letters of `counts` pieces per `POCKET_ROLES` role; upper case for White.
fn pocket_letters(counts: [usize; 5], upper: bool) -> String {
    let mut out = String::new();
    for (role, n) in POCKET_ROLES.into_iter().zip(counts) {
        let c = if upper {
            role
        } else {
            role.to_ascii_lowercase()
        };
        out.extend(std::iter::repeat_n(c, n));
    }
    out
}

/// A table for classifier data: the start position, a reachable position after random plies,
/// or a scatter of pieces on arbitrary squares (pawns on back ranks included); pockets are
/// often replaced by random ones holding up to 8 pieces per role.
pub fn random_training_fen(rng: &mut SimRng) -> Result<String, SimError> {
    random_training_fen_with(rng, PocketDraw::Usual)
}

/// [`random_training_fen`] with its pockets drawn as `pockets` says (the squares are drawn as
/// before; with [`PocketDraw::Usual`] the random stream is unchanged).
pub fn random_training_fen_with(rng: &mut SimRng, pockets: PocketDraw) -> Result<String, SimError> {
    let kind = rng.unit();
    if kind < 0.1 && pockets == PocketDraw::Usual {
        return Ok(START_TABLE.to_string());
    }
    let placement = super::parse_table_fen(&random_table_fen(rng, 140))?;
    let mut boards = Vec::new();
    for b in &placement.boards {
        let mut squares: [Option<char>; 64] =
            std::array::from_fn(|i| b.squares[i].map(|p| p.fen_char()));
        if kind > 0.7 {
            // Scatter: a random density of random pieces anywhere.
            let density = rng.range(0.05, 0.7);
            const LETTERS: &[u8] = b"PNBRQKpnbrqk";
            for sq in squares.iter_mut() {
                *sq = if rng.unit() < density {
                    Some(LETTERS[rng.below(LETTERS.len())] as char)
                } else {
                    None
                };
            }
        }
        let pocket: String = match pockets {
            PocketDraw::Full => random_full_pocket(rng, true) + &random_full_pocket(rng, false),
            PocketDraw::Game => random_game_pocket(rng, true) + &random_game_pocket(rng, false),
            PocketDraw::Usual if rng.unit() < 0.6 => {
                random_pocket(rng, true) + &random_pocket(rng, false)
            }
            PocketDraw::Usual => b.pocket.iter().map(|p| p.fen_char()).collect(),
        };
        boards.push(board_fen(&squares, &pocket));
    }
    Ok(boards.join(" | "))
}

/// Counts of `POCKET_ROLES` among FEN letters (case-insensitive: a zone holds one colour).
pub fn pocket_counts(pieces: &str) -> [usize; 5] {
    let mut n = [0; 5];
    for c in pieces.chars() {
        if let Some(k) = POCKET_ROLES
            .iter()
            .position(|r| *r == c.to_ascii_uppercase())
        {
            n[k] += 1;
        }
    }
    n
}

fn label_of(c: Option<char>) -> String {
    c.map_or("empty".to_string(), |c| c.to_string())
}

fn create_dir(p: &Path) -> Result<(), SimError> {
    std::fs::create_dir_all(p).map_err(|e| SimError::Io(p.to_path_buf(), e))
}

fn write_all(w: &mut impl std::io::Write, bytes: &[u8], path: &Path) -> Result<(), SimError> {
    w.write_all(bytes)
        .map_err(|e| SimError::Io(path.to_path_buf(), e))
}

fn check_crops(c: &FrameCrops) -> Result<(), String> {
    let sq = (c.square_size[0] * c.square_size[1] * 3) as usize;
    let pk = (c.pocket_size[0] * c.pocket_size[1] * 3) as usize;
    if c.squares.len() != 128 * sq || c.pockets.len() != 4 * pk {
        return Err(format!(
            "crop cutter returned {} square and {} pocket bytes for {:?}/{:?} patches",
            c.squares.len(),
            c.pockets.len(),
            c.square_size,
            c.pocket_size
        ));
    }
    Ok(())
}

/// Renders `options.frames` random tables with training sets, poses and looks, cuts them with
/// `cut` and appends the raw patches to `squares.u8` / `pockets.u8` (uint8 RGB, patch after
/// patch) with one CSV row per patch in `squares.csv` / `pockets.csv`, plus `frames.csv`.
/// Raw bytes keep 100 k+ patches quick to load; the CSV rows say the patch size.
pub fn export_training(
    sets: &[PieceSet],
    options: &TrainingOptions,
    cut: &mut CropCutter<'_>,
    out: &Path,
) -> Result<ExportSummary, SimError> {
    use std::io::Write as _;
    if sets.is_empty() || options.presets.is_empty() || options.frame_sizes.is_empty() {
        return Err(SimError::Config(
            "training export needs at least one piece set, camera preset and frame size".into(),
        ));
    }
    for (name, share) in [
        ("full_pockets", options.full_pockets),
        ("game_pockets", options.game_pockets),
        (
            "full_pockets + game_pockets",
            options.full_pockets + options.game_pockets,
        ),
        ("staunton", options.staunton),
    ] {
        if !(0.0..=1.0).contains(&share) {
            return Err(SimError::Config(format!(
                "{name} is a share of the frames: {share} is not within 0..=1"
            )));
        }
    }
    let sizes = &options.frame_sizes;
    create_dir(out)?;
    let open = |name: &str| -> Result<std::io::BufWriter<std::fs::File>, SimError> {
        let p = out.join(name);
        std::fs::File::create(&p)
            .map(std::io::BufWriter::new)
            .map_err(|e| SimError::Io(p, e))
    };
    let (mut sq_bin, mut pk_bin) = (open("squares.u8")?, open("pockets.u8")?);
    let (mut sq_csv, mut pk_csv, mut fr_csv) = (
        open("squares.csv")?,
        open("pockets.csv")?,
        open("frames.csv")?,
    );
    let (csv_path, pk_path) = (out.join("squares.csv"), out.join("pockets.csv"));
    write_all(
        &mut sq_csv,
        b"frame,board,index,label,occluded,width,height\n",
        &csv_path,
    )?;
    write_all(
        &mut pk_csv,
        b"frame,zone,P,N,B,R,Q,width,height\n",
        &pk_path,
    )?;
    write_all(
        &mut fr_csv,
        b"frame,seed,camera,pieces,width,height,table_fen,table\n",
        &out.join("frames.csv"),
    )?;
    let held_out = held_out_poses()?;
    let mut summary = ExportSummary::default();
    let root = SimRng::new(options.seed).fork(0x7EA1);
    let episode = options.episode.max(1);
    for i in 0..options.frames {
        let (table, pos) = (i / episode, i % episode);
        // Every draw but the position's is the table's: the same for all frames of an episode.
        let mut rng = if episode == 1 {
            root.fork(i as u64)
        } else {
            root.fork(table as u64 | 1 << 48)
        };
        let base = &sets[rng.below(sets.len())];
        let base = if options.staunton > 0.0 && rng.unit() < options.staunton {
            &super::pieces::staunton(&mut rng.fork(0x57A))
        } else {
            base
        };
        let set = if options.vary_sets && rng.unit() < 0.75 {
            varied_set(base, &mut rng.fork(0x5E7))
        } else {
            base.clone()
        };
        let (preset, camera, (width, height)) = match options.poses {
            PoseMode::Presets => {
                let preset = options.presets[rng.below(options.presets.len())].clone();
                let mut camera = CameraConfig::preset(&preset)?;
                let spread = options.pose_spread_deg;
                camera.yaw_deg += rng.sym(spread);
                camera.distance *= 1.0 + rng.sym(0.12);
                camera.height *= 1.0 + rng.sym(0.12);
                camera.roll_deg += rng.sym(spread * 0.2);
                camera.focal *= 1.0 + rng.sym(0.08);
                let size = sizes[rng.below(sizes.len())];
                (preset, camera, size)
            }
            PoseMode::Wide => {
                let size = sizes[rng.below(sizes.len())];
                let camera = wide_pose(&mut rng, size, &held_out)?;
                let e = elevation_of(&camera);
                (format!("wide:e{e:.0}:y{:.0}", camera.yaw_deg), camera, size)
            }
        };
        let variation = super::Variation {
            noise: rng.range(0.0, 0.03),
            blur_px: rng.range(0.0, 1.6),
            exposure_stops: rng.range(0.1, 0.6),
            piece_offset_m: if rng.unit() < 0.3 { 0.012 } else { 0.005 },
            hall: rng.unit() < 0.7,
            ..super::Variation::default()
        };
        let draw = rng.unit();
        let pockets = if draw < options.full_pockets {
            PocketDraw::Full
        } else if draw < options.full_pockets + options.game_pockets {
            PocketDraw::Game
        } else {
            PocketDraw::Usual
        };
        let fen = match (episode, pos) {
            (1, _) => random_training_fen_with(&mut rng, pockets)?,
            (_, 0) => START_TABLE.to_string(),
            _ => random_training_fen_with(&mut rng.fork(0xF0 + pos as u64), pockets)?,
        };
        let settings = SimSettings {
            width,
            height,
            seed: rng.next_u64(),
            camera,
            variation,
            shadow_map: 1024,
            jpeg_artifacts: (rng.unit() < 0.7).then(|| 35 + rng.below(61) as u8),
            ..SimSettings::default()
        };
        let placement = super::parse_table_fen(&fen)?;
        let (scene, cam) = build_scene(&placement, &set, &settings)?;
        let frame = render_scene(&scene, &cam, &settings);
        let crops = match cut(&frame).and_then(|c| check_crops(&c).map(|_| c)) {
            Ok(c) => c,
            Err(_) => {
                summary.skipped += 1;
                continue;
            }
        };
        let [sw, sh] = crops.square_size;
        let [pw, ph] = crops.pocket_size;
        write_all(&mut sq_bin, &crops.squares, &out.join("squares.u8"))?;
        write_all(&mut pk_bin, &crops.pockets, &out.join("pockets.u8"))?;
        let mut rows = String::new();
        for (b, bt) in frame.truth.boards.iter().enumerate() {
            for index in 0..64 {
                let occ = bt.occluded.contains(&square_name(index)) as u8;
                let _ = writeln!(
                    rows,
                    "{i},{b},{index},{},{occ},{sw},{sh}",
                    label_of(bt.squares[index])
                );
            }
        }
        write_all(&mut sq_csv, rows.as_bytes(), &csv_path)?;
        let mut rows = String::new();
        for (b, bt) in frame.truth.boards.iter().enumerate() {
            for (s, pt) in bt.pockets.iter().enumerate() {
                let n = pocket_counts(&pt.pieces);
                let _ = writeln!(
                    rows,
                    "{i},{},{},{},{},{},{},{pw},{ph}",
                    b * 2 + s,
                    n[0],
                    n[1],
                    n[2],
                    n[3],
                    n[4]
                );
            }
        }
        write_all(&mut pk_csv, rows.as_bytes(), &pk_path)?;
        let _ = writeln!(
            fr_csv,
            "{i},{},{preset},{},{width},{height},\"{fen}\",{table}",
            settings.seed, set.name
        );
        summary.frames += 1;
        summary.squares += 128;
        summary.pockets += 4;
    }
    for w in [
        &mut sq_bin,
        &mut pk_bin,
        &mut sq_csv,
        &mut pk_csv,
        &mut fr_csv,
    ] {
        w.flush().map_err(|e| SimError::Io(out.to_path_buf(), e))?;
    }
    Ok(summary)
}

fn patch_image(bytes: &[u8], size: [u32; 2], k: usize) -> Option<RgbImage> {
    let n = (size[0] * size[1] * 3) as usize;
    RgbImage::from_raw(size[0], size[1], bytes.get(k * n..(k + 1) * n)?.to_vec())
}

/// Writes evaluation sessions for `tandem eval squares`: one directory per table
/// (`<preset>-<k>/`), each with `labels.csv` (`path,label,split`): the start-position frame's
/// 128 crops as `adapt` rows and `options.positions` random positions on the same table (same
/// scene seed: board, light, pose, piece set) as `test` rows. Occluded test squares go to
/// `occluded.csv` (same columns) instead; pocket crops with their counts to `pockets.csv`
/// (`path,P,N,B,R,Q,split`). `sessions.csv` at the top lists the sessions.
pub fn export_sessions(
    set: &PieceSet,
    options: &SessionOptions,
    cut: &mut CropCutter<'_>,
    out: &Path,
) -> Result<ExportSummary, SimError> {
    let sizes = &options.frame_sizes;
    if sizes.is_empty() {
        return Err(SimError::Config(
            "sessions need at least one frame size".into(),
        ));
    }
    create_dir(out)?;
    let mut index = String::from("dir,camera,pieces,width,height,seed\n");
    let mut summary = ExportSummary::default();
    let root = SimRng::new(options.seed).fork(0x5E55);
    for (pi, preset) in options.presets.iter().enumerate() {
        for k in 0..options.sessions {
            let mut rng = root.fork((pi * 10_000 + k) as u64);
            let (width, height) = sizes[rng.below(sizes.len())];
            let settings = SimSettings {
                width,
                height,
                seed: rng.next_u64(),
                camera: CameraConfig::preset(preset)?,
                shadow_map: 1024,
                jpeg_artifacts: (rng.unit() < 0.5).then(|| 50 + rng.below(46) as u8),
                ..SimSettings::default()
            };
            let name = format!("{preset}-{k:02}");
            let dir = out.join(&name);
            create_dir(&dir.join("squares"))?;
            create_dir(&dir.join("pockets"))?;
            let mut labels = String::from("path,label,split\n");
            let mut occluded = String::from("path,label,split\n");
            let mut pockets = String::from("path,P,N,B,R,Q,split\n");
            for pos in 0..=options.positions {
                let fen = if pos == 0 {
                    START_TABLE.to_string()
                } else {
                    random_training_fen(&mut rng)?
                };
                let split = if pos == 0 { "adapt" } else { "test" };
                let placement = super::parse_table_fen(&fen)?;
                let (scene, cam) = build_scene(&placement, set, &settings)?;
                let frame = render_scene(&scene, &cam, &settings);
                let crops = match cut(&frame).and_then(|c| check_crops(&c).map(|_| c)) {
                    Ok(c) => c,
                    Err(_) => {
                        summary.skipped += 1;
                        continue;
                    }
                };
                for (b, bt) in frame.truth.boards.iter().enumerate() {
                    let bn = if b == 0 { 'A' } else { 'B' };
                    for i in 0..64 {
                        let sqn = square_name(i);
                        let rel = format!("squares/{pos:02}_{bn}_{sqn}.png");
                        let img = patch_image(&crops.squares, crops.square_size, b * 64 + i)
                            .ok_or_else(|| SimError::Image("square patch".into()))?;
                        save_png(&img, &dir.join(&rel))?;
                        let row = format!("{rel},{},{split}\n", label_of(bt.squares[i]));
                        if split == "test" && bt.occluded.contains(&sqn) {
                            occluded.push_str(&row);
                        } else {
                            labels.push_str(&row);
                        }
                        summary.squares += 1;
                    }
                    for (s, pt) in bt.pockets.iter().enumerate() {
                        let side = if s == 0 { 'w' } else { 'b' };
                        let rel = format!("pockets/{pos:02}_{bn}_{side}.png");
                        let img = patch_image(&crops.pockets, crops.pocket_size, b * 2 + s)
                            .ok_or_else(|| SimError::Image("pocket patch".into()))?;
                        save_png(&img, &dir.join(&rel))?;
                        let n = pocket_counts(&pt.pieces);
                        let _ = writeln!(
                            pockets,
                            "{rel},{},{},{},{},{},{split}",
                            n[0], n[1], n[2], n[3], n[4]
                        );
                        summary.pockets += 1;
                    }
                }
                summary.frames += 1;
            }
            for (file, text) in [
                ("labels.csv", &labels),
                ("occluded.csv", &occluded),
                ("pockets.csv", &pockets),
            ] {
                let p = dir.join(file);
                std::fs::write(&p, text).map_err(|e| SimError::Io(p.clone(), e))?;
            }
            let _ = writeln!(
                index,
                "{name},{preset},{},{width},{height},{}",
                set.name, settings.seed
            );
        }
    }
    let p = out.join("sessions.csv");
    std::fs::write(&p, index).map_err(|e| SimError::Io(p.clone(), e))?;
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

    #[test]
    fn pocket_counts_count_roles_of_either_colour() {
        assert_eq!(pocket_counts("PPnQ"), [2, 1, 0, 0, 1]);
        assert_eq!(pocket_counts(""), [0; 5]);
        assert_eq!(
            pocket_counts("rrrbK"),
            [0, 0, 1, 3, 0],
            "kings are not counted"
        );
    }

    #[test]
    fn board_fen_writes_what_the_parser_reads() {
        let mut squares = [None; 64];
        squares[0] = Some('R');
        squares[12] = Some('P');
        squares[63] = Some('k');
        let fen = board_fen(&squares, "PPq");
        let t = super::super::parse_table_fen(&format!("{fen} | {fen}")).unwrap();
        let b = &t.boards[0];
        assert_eq!(b.squares[0].map(|p| p.fen_char()), Some('R'));
        assert_eq!(b.squares[12].map(|p| p.fen_char()), Some('P'));
        assert_eq!(b.squares[63].map(|p| p.fen_char()), Some('k'));
        assert_eq!(b.squares.iter().flatten().count(), 3);
        let pocket: String = b.pocket.iter().map(|p| p.fen_char()).collect();
        assert_eq!(pocket_counts(&pocket), [2, 0, 0, 0, 1]);
    }

    #[test]
    fn training_tables_parse_and_cover_full_pockets_and_the_start() {
        let mut rng = SimRng::new(11);
        let (mut start, mut max_role, mut scattered) = (0, 0, 0);
        for _ in 0..300 {
            let fen = random_training_fen(&mut rng).unwrap();
            let t = super::super::parse_table_fen(&fen).unwrap();
            if fen == START_TABLE {
                start += 1;
            }
            for b in &t.boards {
                for side in [super::super::Side::White, super::super::Side::Black] {
                    let p: String = b.pocket_of(side).iter().map(|p| p.fen_char()).collect();
                    let n = pocket_counts(&p);
                    assert!(n.iter().all(|&k| k <= 8), "{fen}");
                    max_role = max_role.max(*n.iter().max().unwrap());
                }
                // A pawn on a back rank only comes from the scatter tables.
                if [0, 56].iter().any(|&r| {
                    (r..r + 8).any(|i| {
                        b.squares[i].is_some_and(|p| p.kind == super::super::PieceKind::Pawn)
                    })
                }) {
                    scattered += 1;
                }
            }
        }
        assert!(start > 10, "start position drawn {start} times");
        assert_eq!(max_role, 8, "some pocket holds 8 of a role");
        assert!(scattered > 10, "pieces on odd squares: {scattered}");
    }

    #[test]
    fn held_out_presets_are_excluded_and_training_presets_are_not() {
        let held = held_out_poses().unwrap();
        assert_eq!(held.len(), 2);
        for name in HELD_OUT_PRESETS {
            let c = CameraConfig::preset(name).unwrap();
            let (e, y) = (elevation_of(&c), c.yaw_deg);
            assert!(near_held_out(e, y, &held), "{name} itself");
            assert!(near_held_out(e + 5.9, y - 11.9, &held), "{name} box corner");
            assert!(!near_held_out(e + 6.5, y, &held), "{name} elevation edge");
            assert!(!near_held_out(e, y + 12.5, &held), "{name} yaw edge");
        }
        for name in ["tripod", "overhead"] {
            let c = CameraConfig::preset(name).unwrap();
            assert!(!near_held_out(elevation_of(&c), c.yaw_deg, &held), "{name}");
        }
    }

    #[test]
    fn wide_poses_frame_the_table_span_the_range_and_avoid_held_out_poses() {
        let held = held_out_poses().unwrap();
        let pts = framing_points();
        let mut rng = SimRng::new(21);
        let (mut lo, mut hi, mut yaw_lo, mut yaw_hi) = (90f32, 0f32, 0f32, 0f32);
        for k in 0..120 {
            let size = FRAME_SIZES[k % FRAME_SIZES.len()];
            let c = wide_pose(&mut rng, size, &held).unwrap();
            let e = elevation_of(&c);
            assert!(!near_held_out(e, c.yaw_deg, &held), "{e} {}", c.yaw_deg);
            assert!(
                (17.9..=85.1).contains(&e) && c.yaw_deg.abs() <= 40.0,
                "{c:?}"
            );
            let cam = Camera::new(&c, size.0, size.1).unwrap();
            let b = bounds(&cam, &pts).unwrap();
            assert!(b[0] > 0.0 && b[1] > 0.0, "{c:?} {b:?}");
            assert!(b[2] < size.0 as f32 && b[3] < size.1 as f32, "{c:?} {b:?}");
            let fill = ((b[2] - b[0]) / size.0 as f32).max((b[3] - b[1]) / size.1 as f32);
            assert!(fill > 0.45, "table fills {fill} of the frame: {c:?}");
            (lo, hi) = (lo.min(e), hi.max(e));
            (yaw_lo, yaw_hi) = (yaw_lo.min(c.yaw_deg), yaw_hi.max(c.yaw_deg));
        }
        assert!(lo < 25.0 && hi > 75.0, "elevations {lo}..{hi}");
        assert!(yaw_lo < -30.0 && yaw_hi > 30.0, "yaws {yaw_lo}..{yaw_hi}");
    }

    #[test]
    fn frame_sizes_parse_in_order_and_reject_bad_input() {
        assert_eq!(
            parse_frame_sizes("320x180, 480X270").unwrap(),
            vec![(320, 180), (480, 270)]
        );
        assert_eq!(TrainingOptions::default().frame_sizes, FRAME_SIZES.to_vec());
        for bad in [
            "", "320", "320x", "x180", "320x-1", "100x180", "320x60", "5000x180", "320x180,",
        ] {
            let e = parse_frame_sizes(bad).unwrap_err().to_string();
            assert!(e.contains("frame size"), "{bad}: {e}");
        }
    }

    #[test]
    fn small_frame_sizes_still_frame_the_table_at_wide_poses() {
        let held = held_out_poses().unwrap();
        let pts = framing_points();
        let mut rng = SimRng::new(5);
        for k in 0..40 {
            let size = [(320, 180), (480, 270)][k % 2];
            let c = wide_pose(&mut rng, size, &held).unwrap();
            let cam = Camera::new(&c, size.0, size.1).unwrap();
            let b = bounds(&cam, &pts).unwrap();
            assert!(b[0] > 0.0 && b[1] > 0.0, "{c:?} {b:?}");
            assert!(b[2] < size.0 as f32 && b[3] < size.1 as f32, "{c:?} {b:?}");
        }
    }

    /// Per-role counts of the 400 pockets of 100 training tables drawn with `draw` (seed 8).
    fn drawn_pockets(draw: PocketDraw) -> Vec<[usize; 5]> {
        let mut rng = SimRng::new(8);
        let mut out = Vec::new();
        for _ in 0..100 {
            let fen = random_training_fen_with(&mut rng, draw).unwrap();
            let t = super::super::parse_table_fen(&fen).unwrap();
            for b in &t.boards {
                for side in [super::super::Side::White, super::super::Side::Black] {
                    let p: String = b.pocket_of(side).iter().map(|p| p.fen_char()).collect();
                    out.push(pocket_counts(&p));
                }
            }
        }
        out
    }

    #[test]
    fn game_pockets_hold_a_few_pieces_mostly_pawns() {
        let pockets = drawn_pockets(PocketDraw::Game);
        let sizes: Vec<usize> = pockets.iter().map(|n| n.iter().sum()).collect();
        let mut roles = [0usize; 5];
        for n in &pockets {
            roles.iter_mut().zip(n).for_each(|(r, k)| *r += k);
        }
        assert!(sizes.iter().all(|&n| n <= 6), "{sizes:?}");
        let occupied = sizes.iter().filter(|&&n| n > 0).count();
        let small = sizes.iter().filter(|&&n| (1..=3).contains(&n)).count();
        assert!(
            occupied > 280 && occupied < 380,
            "{occupied} of 400 zones occupied"
        );
        assert!(
            small * 2 > sizes.len(),
            "{small} of 400 zones with one to three pieces"
        );
        assert!(
            roles[0] > roles[1..].iter().copied().max().unwrap_or(0),
            "{roles:?}"
        );
    }

    #[test]
    fn full_pockets_are_crowded_and_off_by_default() {
        let (mut total, mut eights) = (0, 0);
        for n in drawn_pockets(PocketDraw::Full) {
            assert!(n.iter().all(|&k| k <= 8), "{n:?}");
            total += n.iter().sum::<usize>();
            eights += n.iter().filter(|&&k| k == 8).count();
        }
        assert!(
            total as f32 / 400.0 > 8.0,
            "mean pocket size {}",
            total as f32 / 400.0
        );
        assert!(eights > 10, "{eights} roles with 8 pieces");
        let (mut a, mut b) = (SimRng::new(3), SimRng::new(3));
        assert_eq!(
            random_training_fen(&mut a).unwrap(),
            random_training_fen_with(&mut b, PocketDraw::Usual).unwrap()
        );
        assert_eq!(TrainingOptions::default().poses, PoseMode::Presets);
        assert_eq!("wide".parse::<PoseMode>().unwrap(), PoseMode::Wide);
        assert!("flat".parse::<PoseMode>().is_err());
    }

    #[test]
    fn varied_sets_change_shapes_deterministically() {
        let base = PieceSet::builtin();
        let a = varied_set(&base, &mut SimRng::new(3));
        let b = varied_set(&base, &mut SimRng::new(3));
        let c = varied_set(&base, &mut SimRng::new(4));
        assert_eq!(a.meshes[0].positions, b.meshes[0].positions);
        assert_ne!(a.meshes[0].positions, base.meshes[0].positions);
        assert_ne!(a.meshes[0].positions, c.meshes[0].positions);
        assert_eq!(a.meshes[5].triangles, base.meshes[5].triangles);
    }

    #[test]
    fn training_export_writes_one_row_per_patch_and_skips_refused_frames() {
        let dir = std::env::temp_dir().join(format!("tandem-vmodel-train-{}", std::process::id()));
        let mut calls = 0;
        let mut cut = |f: &super::super::Frame| -> Result<FrameCrops, String> {
            calls += 1;
            if calls == 2 {
                return Err("out of view".into());
            }
            // A fake cutter: patch k is filled with k, so rows and bytes can be matched.
            let mut squares = Vec::new();
            for k in 0..128u8 {
                squares.extend(std::iter::repeat_n(k, 4 * 2 * 3));
            }
            assert!(f.image.width() >= 640);
            Ok(FrameCrops {
                square_size: [4, 2],
                squares,
                pocket_size: [2, 2],
                pockets: vec![9; 4 * 2 * 2 * 3],
            })
        };
        let opts = TrainingOptions {
            frames: 3,
            seed: 1,
            ..TrainingOptions::default()
        };
        let s = export_training(&[PieceSet::builtin()], &opts, &mut cut, &dir).unwrap();
        assert_eq!((s.frames, s.skipped, s.squares, s.pockets), (2, 1, 256, 8));
        let bytes = std::fs::read(dir.join("squares.u8")).unwrap();
        assert_eq!(bytes.len(), 256 * 24);
        assert_eq!(bytes[24 * 130], 2, "second frame's third patch");
        let csv = std::fs::read_to_string(dir.join("squares.csv")).unwrap();
        let rows: Vec<&str> = csv.lines().skip(1).collect();
        assert_eq!(rows.len(), 256);
        assert!(rows[130].starts_with("2,0,2,"), "{}", rows[130]);
        let pockets = std::fs::read_to_string(dir.join("pockets.csv")).unwrap();
        assert_eq!(pockets.lines().count(), 1 + 8);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn episodes_show_one_table_in_several_positions_starting_from_the_start() {
        let dir = std::env::temp_dir().join(format!("tandem-episodes-{}", std::process::id()));
        let mut cut = |_: &super::super::Frame| -> Result<FrameCrops, String> {
            Ok(FrameCrops {
                square_size: [1, 1],
                squares: vec![0; 128 * 3],
                pocket_size: [1, 1],
                pockets: vec![0; 4 * 3],
            })
        };
        let opts = TrainingOptions {
            frames: 6,
            seed: 5,
            episode: 3,
            staunton: 1.0,
            frame_sizes: vec![(320, 180)],
            ..TrainingOptions::default()
        };
        export_training(&[PieceSet::builtin()], &opts, &mut cut, &dir).unwrap();
        let bad = TrainingOptions {
            staunton: 1.5,
            ..opts.clone()
        };
        let err = export_training(&[PieceSet::builtin()], &bad, &mut cut, &dir).unwrap_err();
        assert!(err.to_string().contains("staunton"), "{err}");
        let frames = std::fs::read_to_string(dir.join("frames.csv")).unwrap();
        let rows: Vec<Vec<&str>> = frames
            .lines()
            .skip(1)
            .map(|l| l.split(',').collect())
            .collect();
        assert_eq!(rows.len(), 6);
        // frame,seed,camera,pieces,width,height,table_fen…,table
        for (i, r) in rows.iter().enumerate() {
            let first = &rows[i - i % 3];
            assert_eq!(r.last(), Some(&(i / 3).to_string().as_str()));
            assert_eq!(
                r[1..4],
                first[1..4],
                "frame {i} keeps its table's seed, camera, set"
            );
            assert!(r[3].starts_with("staunton"), "{}", r[3]);
        }
        let fens: Vec<&str> = frames
            .lines()
            .skip(1)
            .map(|l| l.split('"').nth(1).unwrap())
            .collect();
        assert_eq!(fens[0], START_TABLE);
        assert_eq!(fens[3], START_TABLE);
        assert_ne!(fens[1], START_TABLE);
        assert_ne!(fens[1], fens[2]);
        assert_ne!(rows[0][1], rows[3][1], "a new table, a new scene");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
