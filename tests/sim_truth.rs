//! End-to-end checks of the simulator: the truth matches the pixels, frames are deterministic,
//! the mesh loaders read real and hand-written files, bad input is a clear error.

use image::RgbImage;
use tandem_monitor::sim::texture::srgb_to_linear;
use tandem_monitor::sim::{self, Camera, CameraConfig, PieceSet, SimSettings, Truth};

/// A sparse position: only pawns in the centre and no pockets, so that from every test pose no
/// piece stands between the camera and the frame (a king on the third rank seen at 25° hides
/// the edge behind it).
const SPARSE: &str = "8/8/8/3p4/4P3/8/8/8 | 8/8/8/4p3/3P4/8/8/8";

fn luminance(img: &RgbImage, x: f32, y: f32) -> f32 {
    let (w, h) = (img.width() as i64, img.height() as i64);
    let (x0, y0) = (x.floor() as i64, y.floor() as i64);
    let (fx, fy) = (x - x0 as f32, y - y0 as f32);
    let at = |xx: i64, yy: i64| {
        let p = img
            .get_pixel(xx.clamp(0, w - 1) as u32, yy.clamp(0, h - 1) as u32)
            .0;
        // Edges are located in linear light: optical blur happens there, and the gamma curve
        // would pull the steepest point of a blurred step towards its dark side.
        let lin = |v: u8| srgb_to_linear(v as f32 / 255.0) * 255.0;
        0.2126 * lin(p[0]) + 0.7152 * lin(p[1]) + 0.0722 * lin(p[2])
    };
    let top = at(x0, y0) * (1.0 - fx) + at(x0 + 1, y0) * fx;
    let bottom = at(x0, y0 + 1) * (1.0 - fx) + at(x0 + 1, y0 + 1) * fx;
    top * (1.0 - fy) + bottom * fy
}

/// Board coordinates (file, rank ∈ [0, 8]) → pixel, using only the truth: the four corners
/// are undistorted with the truth's lens model, a homography maps the board square onto them,
/// and the result is distorted again.
struct BoardMap {
    cam: Camera,
    h: [f64; 9],
}

impl BoardMap {
    fn new(truth: &Truth, corners: &[[f32; 2]; 4]) -> BoardMap {
        let cam = Camera::new(&truth.camera, truth.width, truth.height).unwrap();
        let und: Vec<(f64, f64)> = corners
            .iter()
            .map(|p| {
                let (x, y) = cam.undistort((p[0] - cam.cx) / cam.f, (p[1] - cam.cy) / cam.f);
                (x as f64, y as f64)
            })
            .collect();
        // Homography from (0,0),(8,0),(8,8),(0,8) to the undistorted corners (DLT, h33 = 1).
        let src = [(0.0, 0.0), (8.0, 0.0), (8.0, 8.0), (0.0, 8.0)];
        let mut a = [[0.0f64; 9]; 8];
        for i in 0..4 {
            let ((x, y), (u, v)) = (src[i], und[i]);
            a[2 * i] = [x, y, 1.0, 0.0, 0.0, 0.0, -u * x, -u * y, u];
            a[2 * i + 1] = [0.0, 0.0, 0.0, x, y, 1.0, -v * x, -v * y, v];
        }
        // Gauss-Jordan on the 8×8 system.
        for c in 0..8 {
            let p = (c..8)
                .max_by(|&i, &j| a[i][c].abs().partial_cmp(&a[j][c].abs()).unwrap())
                .unwrap();
            a.swap(c, p);
            let pivot = a[c];
            for (r, row) in a.iter_mut().enumerate() {
                if r != c {
                    let f = row[c] / pivot[c];
                    for (x, pv) in row.iter_mut().zip(pivot.iter()).skip(c) {
                        *x -= f * pv;
                    }
                }
            }
        }
        let mut h = [1.0; 9];
        for i in 0..8 {
            h[i] = a[i][8] / a[i][i];
        }
        BoardMap { cam, h }
    }

    fn pixel(&self, file: f64, rank: f64) -> [f32; 2] {
        let h = &self.h;
        let w = h[6] * file + h[7] * rank + h[8];
        let x = ((h[0] * file + h[1] * rank + h[2]) / w) as f32;
        let y = ((h[3] * file + h[4] * rank + h[5]) / w) as f32;
        let s = self.cam.distortion(x, y);
        [
            self.cam.cx + self.cam.f * s * x,
            self.cam.cy + self.cam.f * s * y,
        ]
    }
}

/// Signed distance (pixels, along the inward normal) of the strongest luminance step near the
/// truth edge point, or `None` when there is no clear step.
fn edge_offset(
    img: &RgbImage,
    p: [f32; 2],
    inward: [f32; 2],
    tangent: [f32; 2],
    reach: f32,
    sign: f32,
    step_height: f32,
) -> Option<f32> {
    let step = 0.25f32;
    // ±reach px, at most ±4: the board's outer edge must stay outside the window.
    let n = 2 * ((reach.min(4.0) / step) as usize) + 1;
    let profile: Vec<f32> = (0..n)
        .map(|i| {
            let t = (i as f32 - (n / 2) as f32) * step;
            (-1..=1)
                .map(|k| {
                    let s = k as f32 * 1.0;
                    luminance(
                        img,
                        p[0] + inward[0] * t + tangent[0] * s,
                        p[1] + inward[1] * t + tangent[1] * s,
                    )
                })
                .sum::<f32>()
                / 3.0
        })
        .collect();
    let grad: Vec<f32> = (1..n - 1)
        .map(|i| (profile[i + 1] - profile[i - 1]) / (2.0 * step))
        .collect();
    // Only steps of the expected direction (border → square) are candidates: wood grain inside
    // the square gives steps of both signs.
    let (best, g) = grad
        .iter()
        .map(|g| g * sign)
        .enumerate()
        .max_by(|a, b| a.1.partial_cmp(&b.1).unwrap())
        .unwrap();
    // A real border/square step of height h blurred over ≤ 3 px has a slope of at least h/5.
    if g < 6.0f32.max(step_height / 5.0) {
        return None;
    }
    // Centroid of the gradient magnitude within ±1.5 px of the peak (the profile is piecewise
    // linear between pixels, so the gradient has plateaus a parabola cannot refine).
    let (mut sw, mut swx) = (0.0f32, 0.0f32);
    for (i, gv) in grad.iter().enumerate() {
        if (i as i64 - best as i64).abs() <= 6 && gv * sign > 0.0 {
            sw += gv.abs();
            swx += gv.abs() * i as f32;
        }
    }
    let off = swx / sw - best as f32;
    Some(((best + 1) as f32 + off - (n / 2) as f32) * step)
}

/// Offsets of the border/playing-area edge at each edge square that contrasts with the border
/// (light squares against a dark wooden frame, dark squares against a vinyl board's margin).
fn edge_offsets(img: &RgbImage, truth: &Truth, board: usize) -> (Vec<f32>, usize) {
    let map = BoardMap::new(truth, &truth.boards[board].corners);
    let mut found = Vec::new();
    let mut tried = 0;
    // Two points per edge square, clear of the notation printed mid-square on the frame.
    for (i, c) in (0..8).flat_map(|i| [(i, i as f64 + 0.22), (i, i as f64 + 0.78)]) {
        // (point on edge, a point slightly inside, a point along the edge), with the square.
        let cases = [
            ((c, 0.0), (c, 0.1), (c + 0.1, 0.0), (i, 0)),
            ((8.0, c), (7.9, c), (8.0, c + 0.1), (7, i)),
            ((c, 8.0), (c, 7.9), (c + 0.1, 8.0), (i, 7)),
            ((0.0, c), (0.1, c), (0.0, c + 0.1), (0, i)),
        ];
        for (e, inside, along, (f, r)) in cases {
            // The clock stands beside the a-file frame at ranks 3–6 and may hide or shade it.
            if f == 0 && e.0 == 0.0 && (2..6).contains(&r) {
                continue;
            }
            tried += 1;
            let p = map.pixel(e.0, e.1);
            // Which way the step goes: compare the square (0.3 inside) with the border (0.22
            // outside, mid-frame); skip squares with no clear contrast.
            let (dx, dy) = (inside.0 - e.0, inside.1 - e.1);
            let at = |k: f64| {
                let q = map.pixel(e.0 + dx * k, e.1 + dy * k);
                luminance(img, q[0], q[1])
            };
            let (square, frame) = (
                (at(2.5) + at(3.0) + at(3.5)) / 3.0,
                (at(-2.0) + at(-2.2) + at(-2.4)) / 3.0,
            );
            if (square - frame).abs() < 0.4 * square.max(frame) {
                continue;
            }
            let sign = (square - frame).signum();
            let q = map.pixel(inside.0, inside.1);
            // The border's outer edge lies ~0.45 squares outside: keep the search window short of it.
            let out = map.pixel(e.0 - (inside.0 - e.0) * 4.5, e.1 - (inside.1 - e.1) * 4.5);
            let reach = 0.6 * ((out[0] - p[0]).powi(2) + (out[1] - p[1]).powi(2)).sqrt();
            let t = map.pixel(along.0, along.1);
            let norm = |v: [f32; 2]| {
                let l = (v[0] * v[0] + v[1] * v[1]).sqrt();
                [v[0] / l, v[1] / l]
            };
            let inward = norm([q[0] - p[0], q[1] - p[1]]);
            let tangent = norm([t[0] - p[0], t[1] - p[1]]);
            if let Some(o) =
                edge_offset(img, p, inward, tangent, reach, sign, (square - frame).abs())
            {
                found.push(o);
            }
        }
    }
    (found, tried)
}

#[test]
fn truth_corners_match_rendered_board_edges() {
    let pieces = PieceSet::builtin();
    for (preset, seed) in [
        ("tripod", 1u64),
        ("oblique", 2),
        ("overhead", 3),
        ("low-side", 4),
    ] {
        let settings = SimSettings {
            width: 640,
            height: 360,
            seed,
            camera: CameraConfig::preset(preset).unwrap(),
            shadow_map: 1024,
            ..SimSettings::default()
        };
        let frame = sim::render_table(SPARSE, &pieces, &settings).unwrap();
        for b in 0..2 {
            let (offsets, tried) = edge_offsets(&frame.image, &frame.truth, b);
            assert!(
                offsets.len() >= 20,
                "{preset} board {b}: only {}/{tried} edges found",
                offsets.len()
            );
            let worst = offsets.iter().fold(0.0f32, |m, o| m.max(o.abs()));
            let mut sorted: Vec<f32> = offsets.iter().map(|o| o.abs()).collect();
            sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
            let median = sorted[sorted.len() / 2];
            eprintln!(
                "{preset} board {b}: {} edges, median |offset| {median:.2} px, worst {worst:.2} px",
                offsets.len()
            );
            assert!(
                median <= 0.75,
                "{preset} board {b}: median offset {median} px"
            );
            assert!(
                worst <= 1.5,
                "{preset} board {b}: worst offset {worst} px ({offsets:?})"
            );
        }
    }
}

#[test]
fn a_shifted_truth_is_detected() {
    // The check above can fail: moving the truth corners by 3 px breaks it.
    let pieces = PieceSet::builtin();
    let settings = SimSettings {
        width: 640,
        height: 360,
        seed: 1,
        shadow_map: 1024,
        ..SimSettings::default()
    };
    let mut frame = sim::render_table(SPARSE, &pieces, &settings).unwrap();
    for c in &mut frame.truth.boards[0].corners {
        c[1] += 3.0;
    }
    let (offsets, _) = edge_offsets(&frame.image, &frame.truth, 0);
    assert!(offsets.iter().any(|o| o.abs() > 1.5), "{offsets:?}");
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    let pieces = PieceSet::builtin();
    let s = SimSettings {
        width: 320,
        height: 180,
        seed: 9,
        shadow_map: 512,
        ..SimSettings::default()
    };
    let a = sim::render_table(SPARSE, &pieces, &s).unwrap();
    let b = sim::render_table(SPARSE, &pieces, &s).unwrap();
    assert_eq!(a.image.as_raw(), b.image.as_raw());
    assert_eq!(
        serde_json::to_string(&a.truth).unwrap(),
        serde_json::to_string(&b.truth).unwrap()
    );
    assert_eq!(
        sim::encode_jpeg(&a.image, 85).unwrap(),
        sim::encode_jpeg(&b.image, 85).unwrap()
    );
    let c = sim::render_table(SPARSE, &pieces, &SimSettings { seed: 10, ..s }).unwrap();
    assert_ne!(a.image.as_raw(), c.image.as_raw());
}

/// A small render from `camera` without lens distortion or look variation, so that what the
/// truth says can be checked against a known geometry.
fn plain_small(camera: CameraConfig) -> SimSettings {
    SimSettings {
        width: 320,
        height: 180,
        seed: 5,
        shadow_map: 256,
        camera: CameraConfig {
            k1: 0.0,
            k2: 0.0,
            ..camera
        },
        variation: sim::Variation::none(),
        ..SimSettings::default()
    }
}

#[test]
fn truth_lists_occupancy_pockets_and_occlusion() {
    let pieces = PieceSet::builtin();
    // A king on e2 of board A, seen from straight behind White at 45°, hides e3 behind it.
    let e2 = sim::TableLayout::default().square_centre(0, 12);
    let s = plain_small(CameraConfig {
        target: [e2.x, 0.0, 0.0],
        ..CameraConfig::default()
    });
    let f = sim::render_table("8/8/8/8/8/8/4K3/8[QRp] | 8/8/8/8/8/8/8/8", &pieces, &s).unwrap();
    let a = &f.truth.boards[0];
    assert_eq!(a.squares[12], Some('K'));
    assert_eq!(a.squares.iter().filter(|s| s.is_some()).count(), 1);
    assert!(a.occluded.contains(&"e3".to_string()), "{:?}", a.occluded);
    assert!(!a.occluded.contains(&"e1".to_string()) && !a.occluded.contains(&"e2".to_string()));
    assert_eq!(a.pockets[0].pieces, "QR");
    assert_eq!(a.pockets[1].pieces, "p");
    assert!(f.truth.boards[1].occluded.is_empty());
    // Board A is on the camera's left and its a1 corner nearer (lower in the image) than a8.
    assert!(a.corners[0][0] < f.truth.boards[1].corners[0][0]);
    assert!(a.corners[0][1] > a.corners[3][1]);
    // The JSON round-trips.
    let json = serde_json::to_string(&f.truth).unwrap();
    let back: Truth = serde_json::from_str(&json).unwrap();
    assert_eq!(back, f.truth);
}

#[test]
fn pocket_pieces_behind_the_clock_are_counted_hidden() {
    let pieces = PieceSet::builtin();
    let clock = sim::TableLayout::default().clock_position(0);
    let render = |distance: f32, height: f32| {
        let s = plain_small(CameraConfig {
            target: [clock.x, clock.y, 0.0],
            distance,
            height,
            ..CameraConfig::default()
        });
        let fen = "8/8/8/8/8/8/8/8[QRpppppppp] | 8/8/8/8/8/8/8/8";
        sim::render_table(fen, &pieces, &s).unwrap().truth
    };
    // Low behind White's end of board A: the clock stands between the camera and Black's zone.
    let low = render(0.9, 0.1);
    let a = &low.boards[0];
    assert_eq!(a.pockets[1].pieces, "pppppppp");
    assert_eq!(a.pockets[0].hidden, 0, "nothing stands before White's zone");
    assert!(a.pockets[1].hidden > 0, "{:?}", a.pockets[1]);
    // From above every piece shows.
    let high = render(0.05, 1.5);
    assert_eq!(high.boards[0].pockets.each_ref().map(|p| p.hidden), [0, 0]);
}

#[test]
fn malformed_fen_is_a_clear_error() {
    let pieces = PieceSet::builtin();
    let s = SimSettings {
        width: 64,
        height: 36,
        ..SimSettings::default()
    };
    let e = sim::render_table("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR", &pieces, &s)
        .unwrap_err()
        .to_string();
    assert!(e.contains("table FEN") && e.contains("' | '"), "{e}");
    let e = sim::render_table("8/8/8/8/8/8/8/8 | 8/8/8/8/8/8/8/7", &pieces, &s)
        .unwrap_err()
        .to_string();
    assert!(e.contains("board B") && e.contains("rank 1"), "{e}");
    // And through the command line: one line on stderr, exit code 1, no file written.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.png");
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_tandem"))
        .args([
            "sim",
            "render",
            "8/8/8/8/8/8/8/8 | 8/8/8/x/8/8/8/8",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1));
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("unexpected character 'x'"), "{err}");
    assert!(!out.exists());
}

#[test]
fn dreamchess_meshes_load_when_installed() {
    let dir = std::path::Path::new(tandem_monitor::sim::mesh::DREAMCHESS_CLASSIC);
    if !dir.join("pawn.dcm").exists() {
        eprintln!(
            "skipped: dreamchess-data is not installed ({} missing)",
            dir.display()
        );
        return;
    }
    for set_dir in [dir.to_path_buf(), dir.with_file_name("elements")] {
        let set = PieceSet::load(&set_dir).unwrap();
        let heights: Vec<f32> = set.meshes.iter().map(|m| m.bounds().1.z).collect();
        // pawn < knight, bishop < queen < king; king scaled to the configured height.
        assert!(
            heights[0] < heights[1] && heights[2] < heights[4] && heights[4] < heights[5],
            "{heights:?}"
        );
        assert!((heights[5] - set.config.king_height).abs() < 1e-4);
        for m in set.meshes.iter() {
            assert!(m.triangles.len() > 300, "{} triangles", m.triangles.len());
            assert!(m.normals.iter().all(|n| (n.length() - 1.0).abs() < 1e-3));
            assert!(m.bounds().0.z.abs() < 1e-6);
        }
        assert!(set.textures.is_some(), "white.png/black.png load");
    }
}

#[test]
fn obj_piece_set_loads_with_config() {
    let dir = tempfile::tempdir().unwrap();
    // A square pyramid per piece, height growing pawn → king, y up, with one quad base.
    for (i, name) in ["pawn", "knight", "bishop", "rook", "queen", "king"]
        .iter()
        .enumerate()
    {
        let h = 1.0 + i as f32 * 0.2;
        let obj = format!(
            "# tiny test piece\nv -0.4 0 -0.4\nv 0.4 0 -0.4\nv 0.4 0 0.4\nv -0.4 0 0.4\nv 0 {h} 0\nvt 0 0\n\
             f 1/1 2/1 3/1 4/1\nf 1 5 2\nf 2 5 3\nf 3 5 4\nf -5 -1 -2\n"
        );
        std::fs::write(dir.path().join(format!("{name}.obj")), obj).unwrap();
    }
    std::fs::write(
        dir.path().join("set.toml"),
        "up = \"y\"\nking_height = 0.1\nwhite = [0.9, 0.9, 0.85]\n",
    )
    .unwrap();
    let set = PieceSet::load(dir.path()).unwrap();
    assert!(set.name.starts_with("obj-"));
    let (lo, hi) = set.meshes[5].bounds();
    assert!(
        (hi.z - lo.z - 0.1).abs() < 1e-5,
        "king height along z after y-up conversion"
    );
    assert!(lo.z.abs() < 1e-6);
    let pawn_h = set.meshes[0].bounds().1.z;
    assert!(
        (pawn_h - 0.1 / 2.0).abs() < 1e-4,
        "pawn scaled with the same factor: {pawn_h}"
    );
    assert_eq!(
        set.meshes[5].triangles.len(),
        6,
        "quad base fan-triangulated + 4 sides"
    );
    assert_eq!(set.config.white, Some([0.9, 0.9, 0.85]));
    assert_eq!(set.config.black, None);
    // It renders.
    let s = SimSettings {
        width: 160,
        height: 90,
        shadow_map: 256,
        ..SimSettings::default()
    };
    sim::render_table("4k3/8/8/8/8/8/8/4K3 | 8/8/8/8/8/8/8/8", &set, &s).unwrap();
    // A broken file is an error naming it, not a panic.
    std::fs::write(dir.path().join("rook.obj"), "v 0 0 0\nf 1 2 3\n").unwrap();
    let e = PieceSet::load(dir.path()).unwrap_err().to_string();
    assert!(e.contains("rook.obj") && e.contains("out of range"), "{e}");
    std::fs::write(dir.path().join("set.toml"), "colour = 1\n").unwrap();
    assert!(PieceSet::load(dir.path()).is_err());
    // An explicit scale (metres per model unit) replaces the king-height normalisation.
    std::fs::write(
        dir.path().join("rook.obj"),
        std::fs::read_to_string(dir.path().join("pawn.obj")).unwrap(),
    )
    .unwrap();
    std::fs::write(dir.path().join("set.toml"), "up = \"y\"\nscale = 0.05\n").unwrap();
    let set = PieceSet::load(dir.path()).unwrap();
    assert!((set.meshes[5].bounds().1.z - 2.0 * 0.05).abs() < 1e-5);
    std::fs::write(dir.path().join("set.toml"), "scale = -1.0\n").unwrap();
    assert!(PieceSet::load(dir.path()).is_err());
}

#[test]
fn cli_writes_jpeg_and_truth() {
    let dir = tempfile::tempdir().unwrap();
    let (out, truth) = (dir.path().join("frame.jpg"), dir.path().join("truth.json"));
    let cam = dir.path().join("cam.toml");
    std::fs::write(&cam, "height = 1.1\nyaw_deg = 5.0\nk1 = -0.05\n").unwrap();
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_tandem"))
        .args([
            "sim",
            "render",
            "4k3/8/8/8/8/8/8/4K3[Q] | 4k3/8/8/8/8/8/8/4K3[q]",
            "--seed",
            "3",
            "--width",
            "160",
            "--height",
            "90",
        ])
        .arg("--out")
        .arg(&out)
        .arg("--truth")
        .arg(&truth)
        .arg("--camera")
        .arg(&cam)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let bytes = std::fs::read(&out).unwrap();
    assert_eq!(&bytes[..3], &[0xFF, 0xD8, 0xFF], "JPEG magic");
    let img = image::load_from_memory(&bytes).unwrap();
    assert_eq!((img.width(), img.height()), (160, 90));
    let t: Truth = serde_json::from_str(&std::fs::read_to_string(&truth).unwrap()).unwrap();
    assert_eq!((t.width, t.height, t.seed), (160, 90, 3));
    assert!(
        t.camera.height > 1.0,
        "camera file used (jitter is only ±4 cm)"
    );
    assert_eq!(t.boards[0].pockets[0].pieces, "Q");
    assert_eq!(t.boards[1].pockets[1].pieces, "q");
    // An unknown preset is a usage-level error, not a panic.
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_tandem"))
        .args([
            "sim",
            "render",
            "8/8/8/8/8/8/8/8 | 8/8/8/8/8/8/8/8",
            "--camera-preset",
            "drone",
            "--out",
        ])
        .arg(dir.path().join("x.png"))
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown camera preset 'drone'"));
}

#[test]
fn a_lifted_piece_leaves_its_square_in_the_truth_and_the_image() {
    use tandem_monitor::sim::math::Vec3;
    use tandem_monitor::sim::scene::{ObjectKind, PieceSpot};
    let pieces = PieceSet::builtin();
    let settings = SimSettings {
        width: 320,
        height: 180,
        seed: 4,
        shadow_map: 512,
        ..SimSettings::default()
    };
    let placement = sim::parse_table_fen("4k3/8/8/8/8/8/8/4K3 | 4k3/8/8/8/8/8/8/4K3").unwrap();
    let (mut scene, camera) = sim::build_scene(&placement, &pieces, &settings).unwrap();
    let before = sim::render_scene(&scene, &camera, &settings);
    let e1 = PieceSpot::Square { board: 0, index: 4 };
    let i = scene.piece_at(e1).expect("white king on e1 of board A");
    let ObjectKind::Piece { piece, .. } = scene.objects[i].kind else {
        unreachable!("piece_at returns pieces")
    };
    scene.objects[i].kind = ObjectKind::Piece {
        piece,
        spot: PieceSpot::InHand,
    };
    scene.objects[i].transform.translation =
        scene.objects[i].transform.translation + Vec3::new(0.15, 0.0, 0.1);
    let after = sim::render_scene(&scene, &camera, &settings);
    assert_eq!(before.truth.boards[0].squares[4], Some('K'));
    assert_eq!(after.truth.boards[0].squares[4], None);
    assert_eq!(after.truth.boards[1], before.truth.boards[1]);
    // The pixels where the king stood changed (the board shows through now); the other
    // board's did not.
    let window_change = |board: usize, index: usize| {
        let [x, y] = before.truth.boards[board].square_centres[index];
        let mut sum = 0i64;
        for dy in -12..=0 {
            for dx in -4..=4 {
                let (px, py) = (
                    (x.round() as i64 + dx) as u32,
                    (y.round() as i64 + dy) as u32,
                );
                let (a, b) = (
                    before.image.get_pixel(px, py).0,
                    after.image.get_pixel(px, py).0,
                );
                sum += (0..3)
                    .map(|c| (a[c] as i64 - b[c] as i64).abs())
                    .sum::<i64>();
            }
        }
        sum as f64 / (13.0 * 9.0 * 3.0)
    };
    let here = window_change(0, 4);
    let elsewhere = window_change(1, 60);
    assert!(
        here > 8.0 && elsewhere < 1.0,
        "mean change at e1 {here:.1}, on board B {elsewhere:.1}"
    );
}
