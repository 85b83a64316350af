//! Calibration on simulator frames: corners against the truth, orientation (a1), board A/B,
//! pocket overlap, drift after a camera move, and the manual-corner path.

mod common;

use tandem_monitor::sim::{self, CameraConfig, PieceSet, SimSettings, Truth};
use tandem_monitor::vision::{Calibration, CalibrationConfig, CalibrationError, OrientationSource};

const START: &str =
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR | rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR";
const EMPTY: &str = "8/8/8/8/8/8/8/8 | 8/8/8/8/8/8/8/8";

fn settings(preset: &str, seed: u64, w: u32, h: u32) -> SimSettings {
    SimSettings {
        width: w,
        height: h,
        seed,
        camera: CameraConfig::preset(preset).unwrap(),
        shadow_map: 1024,
        ..SimSettings::default()
    }
}

/// Largest corner error of a board in units of that board's square width (from the truth).
fn corner_error(cal: &Calibration, truth: &Truth, b: usize) -> f64 {
    let t = &truth.boards[b].corners;
    let c = &cal.boards[b].corners;
    let sq = (0..4)
        .map(|k| {
            let (p, q) = (t[k], t[(k + 1) % 4]);
            ((p[0] - q[0]) as f64).hypot((p[1] - q[1]) as f64) / 8.0
        })
        .fold(f64::MAX, f64::min);
    (0..4)
        .map(|k| (c[k][0] - t[k][0] as f64).hypot(c[k][1] - t[k][1] as f64) / sq)
        .fold(0.0, f64::max)
}

/// Fraction of the truth pocket quad's area covered by the calibrated quad (grid sampling).
fn pocket_overlap(cal: &Calibration, truth: &Truth, b: usize, side: usize) -> f64 {
    let t: [[f64; 2]; 4] = truth.boards[b].pockets[side]
        .quad
        .map(|p| [p[0] as f64, p[1] as f64]);
    let q = cal.boards[b].pockets[side];
    let inside = |quad: &[[f64; 2]; 4], p: [f64; 2]| {
        let mut s = 0.0f64;
        for i in 0..4 {
            let (a, b) = (quad[i], quad[(i + 1) % 4]);
            let c = (b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0]);
            if s == 0.0 {
                s = c.signum();
            } else if c.signum() != s {
                return false;
            }
        }
        true
    };
    let (lo, hi) = t.iter().fold(([f64::MAX; 2], [f64::MIN; 2]), |(l, h), p| {
        (
            [l[0].min(p[0]), l[1].min(p[1])],
            [h[0].max(p[0]), h[1].max(p[1])],
        )
    });
    let (mut n, mut hit) = (0, 0);
    for i in 0..40 {
        for j in 0..40 {
            let p = [
                lo[0] + (hi[0] - lo[0]) * (i as f64 + 0.5) / 40.0,
                lo[1] + (hi[1] - lo[1]) * (j as f64 + 0.5) / 40.0,
            ];
            if inside(&t, p) {
                n += 1;
                if inside(&q, p) {
                    hit += 1;
                }
            }
        }
    }
    hit as f64 / n.max(1) as f64
}

struct Outcome {
    worst_corner: f64,
    oriented: bool,
    min_overlap: f64,
}

fn evaluate(fen: &str, preset: &str, seed: u64, w: u32, h: u32) -> Result<Outcome, String> {
    let pieces = PieceSet::builtin();
    let frame = sim::render_table(fen, &pieces, &settings(preset, seed, w, h)).unwrap();
    let cal = Calibration::detect(&frame.image, "t", &CalibrationConfig::default())
        .map_err(|e| e.to_string())?;
    let worst_corner = corner_error(&cal, &frame.truth, 0).max(corner_error(&cal, &frame.truth, 1));
    if std::env::var("SWEEP_SIGNED").is_ok() {
        print_signed_errors(&cal, &frame.truth, preset, seed);
    }
    // Right orientation and A/B: every corner within half a square of its truth namesake.
    let oriented = worst_corner < 0.5;
    let min_overlap = (0..2)
        .flat_map(|b| (0..2).map(move |s| (b, s)))
        .map(|(b, s)| pocket_overlap(&cal, &frame.truth, b, s))
        .fold(1.0, f64::min);
    Ok(Outcome {
        worst_corner,
        oriented,
        min_overlap,
    })
}

/// Each detected corner in the truth board's coordinates (squares), as its offset outward
/// from the true corner along the files and along the ranks (`SWEEP_SIGNED=1`): a bias of
/// the fit shows as a mean far from zero.
fn print_signed_errors(cal: &Calibration, truth: &Truth, preset: &str, seed: u64) {
    use tandem_monitor::vision::Homography;
    const OUT: [[f64; 2]; 4] = [[-1.0, -1.0], [1.0, -1.0], [1.0, 1.0], [-1.0, 1.0]];
    for b in 0..2 {
        let t = truth.boards[b].corners.map(|p| [p[0] as f64, p[1] as f64]);
        let Some(inv) = Homography::from_board_corners(&t).and_then(|h| h.inverse()) else {
            continue;
        };
        let offs: Vec<String> = (0..4)
            .map(|k| {
                let q = inv.map(cal.boards[b].corners[k]);
                let ideal = [4.0 + 4.0 * OUT[k][0], 4.0 + 4.0 * OUT[k][1]];
                format!(
                    "{:+.4} {:+.4}",
                    (q[0] - ideal[0]) * OUT[k][0],
                    (q[1] - ideal[1]) * OUT[k][1]
                )
            })
            .collect();
        println!("signed {preset} {seed} board {b}: {}", offs.join(" | "));
    }
}

#[test]
fn start_position_boards_found_oriented_with_pockets() {
    // low-side is a known failure (see docs/vision-calibration.md); the 2 % target is
    // measured by the sweep below, this test guards against regressions at 8 %.
    for (preset, seed) in [("tripod", 1), ("overhead", 2), ("oblique", 3)] {
        let o = evaluate(START, preset, seed, 960, 540).unwrap_or_else(|e| panic!("{preset}: {e}"));
        println!(
            "{preset} seed {seed}: worst corner {:.4} squares",
            o.worst_corner
        );
        assert!(o.oriented, "{preset}: orientation/A-B wrong");
        assert!(
            o.worst_corner < 0.08,
            "{preset} seed {seed}: worst corner {:.4} squares",
            o.worst_corner
        );
        assert!(
            o.min_overlap > 0.5,
            "{preset}: pocket overlap {:.2}",
            o.min_overlap
        );
    }
}

#[test]
fn empty_boards_follow_the_seating_convention() {
    let o = evaluate(EMPTY, "tripod", 7, 960, 540).unwrap();
    assert!(o.oriented);
    assert!(o.worst_corner < 0.08, "worst corner {:.4}", o.worst_corner);
}

#[test]
fn drift_is_noticed_after_a_camera_move_and_not_without() {
    let pieces = PieceSet::builtin();
    let s = settings("tripod", 5, 960, 540);
    let frame = sim::render_table(START, &pieces, &s).unwrap();
    let cal = Calibration::detect(&frame.image, "t", &CalibrationConfig::default()).unwrap();
    // The same scene and camera again with another frame's noise, exposure and blur (the
    // post effects and the sensor noise follow the seed): no drift.
    let placement = sim::parse_table_fen(START).unwrap();
    let (scene, camera) = sim::build_scene(&placement, &pieces, &s).unwrap();
    let again = sim::render_scene(
        &scene,
        &camera,
        &SimSettings {
            seed: 6,
            ..s.clone()
        },
    );
    assert_eq!(again.truth.boards[0].corners, frame.truth.boards[0].corners);
    let differing = frame
        .image
        .pixels()
        .zip(again.image.pixels())
        .filter(|(a, b)| a != b)
        .count();
    assert!(
        differing > frame.image.len() / 3 / 2,
        "the second frame must carry its own noise ({differing} pixels differ)"
    );
    let d = cal.check(&again.image).unwrap();
    assert!(!d.recalibrate(), "unchanged camera flagged: {d:?}");
    // The camera turned by 1.5° and moved 1 cm.
    let mut moved = s.clone();
    moved.camera.yaw_deg += 1.5;
    moved.camera.target[0] += 0.01;
    let shifted = sim::render_table(START, &pieces, &moved).unwrap();
    let d = cal.check(&shifted.image).unwrap();
    assert!(d.recalibrate(), "camera move missed: {d:?}");
}

#[test]
fn manual_corners_from_the_truth_give_the_truth() {
    let pieces = PieceSet::builtin();
    let frame = sim::render_table(START, &pieces, &settings("oblique", 11, 640, 360)).unwrap();
    let corners = [0, 1].map(|b| {
        frame.truth.boards[b]
            .corners
            .map(|p| [p[0] as f64, p[1] as f64])
    });
    let cal = Calibration::manual(
        "t",
        (640, 360),
        corners,
        Some(&frame.image),
        &CalibrationConfig::default(),
    )
    .unwrap();
    assert!(corner_error(&cal, &frame.truth, 0) < 1e-4);
    assert!(pocket_overlap(&cal, &frame.truth, 1, 0) > 0.5);
    assert!(cal.boards[0].lattice_reference > 0.2);
}

#[test]
fn a_blank_frame_says_to_give_corners_by_hand() {
    let img = image::RgbImage::from_pixel(320, 180, image::Rgb([90, 90, 90]));
    match Calibration::detect(&img, "t", &CalibrationConfig::default()) {
        Err(e @ CalibrationError::NotFound(_)) => assert!(e.to_string().contains("--corners")),
        other => panic!("expected NotFound, got {other:?}"),
    }
}

/// The sweep for the report: presets × seeds at 1280×720; run with
/// `cargo test --test vision_calibration sweep -- --ignored --nocapture`.
#[test]
#[ignore]
fn sweep() {
    let n: u64 = std::env::var("SWEEP_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(25);
    // Seeds from SWEEP_FIRST (default 100): other seeds are fresh frames to check a choice on.
    let first: u64 = std::env::var("SWEEP_FIRST")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100);
    let (mut total, mut within, mut oriented, mut pockets) = (0, 0, 0, 0);
    let mut errs = Vec::new();
    for preset in sim::CAMERA_PRESETS {
        for seed in first..first + n {
            total += 1;
            match evaluate(START, preset, seed, 1280, 720) {
                Ok(o) => {
                    within += (o.worst_corner <= 0.02) as u32;
                    oriented += o.oriented as u32;
                    pockets += (o.min_overlap > 0.5) as u32;
                    errs.push(o.worst_corner);
                    println!(
                        "{preset:9} seed {seed}: worst corner {:.4} sq, oriented {}, pocket overlap {:.2}",
                        o.worst_corner, o.oriented, o.min_overlap
                    );
                }
                Err(e) => println!("{preset:9} seed {seed}: FAILED {e}"),
            }
        }
    }
    errs.sort_by(|a, b| a.total_cmp(b));
    println!(
        "frames {total}: corners within 2% {within}, oriented+A/B {oriented}, pockets overlap>0.5 {pockets}; median worst {:.4}",
        errs.get(errs.len() / 2).copied().unwrap_or(f64::NAN)
    );
}

/// One frame in detail (env P = preset, S = seed, W = width, EMPTYB = empty boards); writes
/// the frame, the overlay and the X-corners into the temporary directory.
#[test]
#[ignore]
fn debug_one() {
    let dir = std::env::temp_dir();
    let preset = std::env::var("P").unwrap_or("tripod".into());
    let seed: u64 = std::env::var("S")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100);
    let pieces = PieceSet::builtin();
    let fen = if std::env::var("EMPTYB").is_ok() {
        EMPTY
    } else {
        START
    };
    let w: u32 = std::env::var("W")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1280);
    let frame = sim::render_table(fen, &pieces, &settings(&preset, seed, w, w * 9 / 16)).unwrap();
    frame.image.save(dir.join("dbg.png")).unwrap();
    let g = tandem_monitor::vision::detect::Gray::from_rgb(&frame.image);
    let lin = tandem_monitor::vision::detect::lines::linear_luminance(&frame.image);
    let xs = tandem_monitor::vision::detect::x_corners(&g, &lin);
    println!("x-corners {}", xs.len());
    let ls = tandem_monitor::vision::detect::find_lattices(
        &g,
        &xs,
        std::env::var("MINP")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(12),
    );
    for l in &ls {
        println!(
            "lattice {} pts rms {:.3} first {:?}",
            l.points.len(),
            l.rms,
            l.points.first()
        );
    }
    for b in tandem_monitor::vision::detect::find_boards(&g, &lin) {
        println!("board {:?}", b);
    }
    for t in &frame.truth.boards {
        println!("truth {:?}", t.corners);
        let q = t.corners.map(|p| [p[0] as f64, p[1] as f64]);
        let inside: Vec<_> = xs
            .iter()
            .filter(|p| tandem_monitor::vision::calibration::in_pocket(&q, **p))
            .collect();
        println!("  x-corners inside: {}", inside.len());
        {
            use tandem_monitor::vision::detect::{Lens, lines};
            let lin = lines::linear_luminance(&frame.image);
            let h = tandem_monitor::vision::Homography::from_board_corners(&q).unwrap();
            let lens = Lens {
                centre: [639.5, 359.5],
                kappa: 0.0,
            };
            let s = lines::edge_samples(&lin, &h, &lens, &lines::BOARD_CELLS, true, &[]);
            let mut per = std::collections::BTreeMap::new();
            for e in &s {
                *per.entry((e.axis, e.c as i32)).or_insert(0) += 1;
            }
            println!("  truth-H edge samples {} {per:?}", s.len());
        }
        if std::env::var_os("XS").is_some() {
            println!("  {inside:.1?}");
        }
    }
    if let Ok(cal) = Calibration::detect(&frame.image, "t", &CalibrationConfig::default()) {
        for b in &cal.boards {
            println!("cal {} {:?}", b.label, b.corners);
        }
        tandem_monitor::vision::overlay::draw(&frame.image, &cal)
            .save(dir.join("dbg-ov.png"))
            .unwrap();
    }
    let mut img = frame.image.clone();
    for p in &xs {
        img.put_pixel(p[0] as u32, p[1] as u32, image::Rgb([255, 0, 0]));
    }
    img.save(dir.join("dbg-x.png")).unwrap();
}

/// The first frame of a rendered game: start position, 640x360, `low-side`, `elements` set
/// (validation render `el-low-g37`).
fn low_side_start_frame() -> image::RgbImage {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/vision/low-side-elements-start.jpg"
    );
    image::open(path).unwrap().to_rgb8()
}

/// The largest distance of a corner from its truth, in squares (the board's shortest side / 8).
fn worst_corner_squares(cal: &Calibration, truth: &[[[f64; 2]; 4]; 2]) -> f64 {
    (0..2)
        .map(|b| {
            let t = &truth[b];
            let square = (0..4)
                .map(|k| (t[k][0] - t[(k + 1) % 4][0]).hypot(t[k][1] - t[(k + 1) % 4][1]) / 8.0)
                .fold(f64::MAX, f64::min);
            let c = &cal.boards[b].corners;
            (0..4)
                .map(|k| (c[k][0] - t[k][0]).hypot(c[k][1] - t[k][1]) / square)
                .fold(0.0, f64::max)
        })
        .fold(0.0, f64::max)
}

#[test]
fn a_start_position_board_is_placed_where_its_pieces_stand() {
    // The first frames of the validation renders `geo-low-g42` and `el-low-g42` (640x360,
    // `low-side`, the same table and camera, the `geometric` and `elements` sets). Board B's
    // near home rows hide their lines and its far rows are a few pixels deep: placed by its
    // lines alone it came out two ranks towards the far edge with `geometric`; with
    // `elements` a neighbouring table's board was taken, and once the start position
    // decided, board B's lattice had grown a false row that left the true placement beyond
    // its extent, two ranks off again.
    let truth: [[[f64; 2]; 4]; 2] = [
        [
            [58.118042, 242.78407],
            [297.3757, 219.83374],
            [270.7475, 139.43027],
            [92.087326, 152.90082],
        ],
        [
            [493.4992, 122.94336],
            [335.7571, 134.58339],
            [382.64706, 211.5704],
            [584.6865, 191.81516],
        ],
    ];
    for set in ["geometric", "elements"] {
        let path = format!(
            "{}/fixtures/vision/low-side-g42-{set}.jpg",
            env!("CARGO_MANIFEST_DIR")
        );
        let frame = image::open(path).unwrap().to_rgb8();
        let cal = Calibration::detect(&frame, "t", &CalibrationConfig::default()).unwrap();
        let worst = worst_corner_squares(&cal, &truth);
        assert!(worst < 0.05, "{set}: worst corner {worst} squares");
    }
}

#[test]
fn a_far_boards_pieces_turn_it_whatever_the_seating() {
    // The first frame of the validation render `el-low-g53` (640x360, `low-side`, `elements`):
    // board B is far from the camera, seen at a slant, with White at its far edge. At the
    // square centres its White pieces showed their shaded bases and read as dark as Black's
    // (the two ends differed by about 4 grey levels, below `min_piece_contrast`), so the seating
    // convention decided; with the pieces' bodies sampled too they differ by about 38, and the
    // pieces decide even against a convention that does not hold at this table.
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/vision/low-side-elements-white-far.jpg"
    );
    let frame = image::open(path).unwrap().to_rgb8();
    let truth: [[[f64; 2]; 4]; 2] = [
        [
            [59.594543, 262.28577],
            [297.552, 235.38223],
            [267.5093, 148.51639],
            [89.879425, 164.03311],
        ],
        [
            [485.95892, 129.68994],
            [331.6122, 142.96272],
            [381.40674, 225.78043],
            [578.0648, 203.01395],
        ],
    ];
    for white_near in [[true, false], [true, true]] {
        let config = CalibrationConfig {
            white_near,
            ..CalibrationConfig::default()
        };
        let cal = Calibration::detect(&frame, "t", &config).unwrap();
        for board in &cal.boards {
            assert_eq!(
                board.orientation,
                OrientationSource::PieceColours,
                "board {} with white_near {white_near:?}",
                board.label
            );
        }
        let worst = worst_corner_squares(&cal, &truth);
        assert!(
            worst < 0.05,
            "white_near {white_near:?}: worst corner {worst} squares"
        );
    }
}

#[test]
fn the_same_frame_gives_the_same_calibration_every_time() {
    // Regression: the lattice growth visited cells in hash order, and this frame was
    // calibrated one way in some runs and 12 squares off in others.
    let frame = low_side_start_frame();
    let corners = || {
        Calibration::detect(&frame, "t", &CalibrationConfig::default())
            .map(|c| c.boards.iter().map(|b| b.corners).collect::<Vec<_>>())
            .map_err(|e| e.to_string())
    };
    let first = corners();
    for _ in 0..7 {
        assert_eq!(corners(), first);
    }
}

#[test]
fn a_small_low_frame_is_also_searched_enlarged() {
    // The same 640x360 `low-side` start frame: searched at its own size, the far board's
    // corners come out about twelve squares off the truth; searched at twice
    // the size as well, the better detection is within 5 % of a square (the board's shortest
    // side / 8) of the truth.
    let frame = low_side_start_frame();
    // The simulator's truth corners of this frame (a1, h1, h8, a8 per board, pixels).
    let truth: [[[f64; 2]; 4]; 2] = [
        [
            [74.49834, 245.74736],
            [297.03235, 227.3081],
            [278.68365, 144.75742],
            [111.53548, 155.8795],
        ],
        [
            [492.40417, 130.8017],
            [340.43707, 140.69447],
            [378.03992, 220.49687],
            [573.6741, 203.82935],
        ],
    ];
    let worst = |cfg: &CalibrationConfig| {
        worst_corner_squares(&Calibration::detect(&frame, "t", cfg).unwrap(), &truth)
    };
    let both = worst(&CalibrationConfig::default());
    assert!(both < 0.05, "worst corner {both} squares");
    let native = worst(&CalibrationConfig {
        upscale_below_width: 0,
        ..CalibrationConfig::default()
    });
    assert!(
        native > 1.0,
        "worst corner {native} squares at the frame's own size"
    );
}

#[test]
fn a_moved_camera_shows_the_lattice_displaced_and_a_covered_board_shows_it_nowhere() {
    let pieces = PieceSet::builtin();
    let s = settings("tripod", 5, 960, 540);
    let frame = sim::render_table(START, &pieces, &s).unwrap();
    let cal = Calibration::detect(&frame.image, "t", &CalibrationConfig::default()).unwrap();
    let d = cal.check(&frame.image).unwrap();
    assert_eq!(d.moved, [false; 2], "{d:?}");
    assert_eq!(
        d.shift, [None; 2],
        "nothing searched where the lattice holds: {d:?}"
    );

    // The whole picture 7 px right and 4 px down: both lattices are found there.
    let d = cal
        .check(&common::bump::shifted(&frame.image, 7, 4))
        .unwrap();
    assert_eq!(d.moved, [true; 2], "{d:?}");
    for shift in d.shift {
        let [x, y] = shift.unwrap_or_else(|| panic!("no displaced lattice: {d:?}"));
        assert!(
            (x - 7.0).abs() <= 3.0 && (y - 4.0).abs() <= 3.0,
            "found at ({x:.1}, {y:.1}): {d:?}"
        );
    }

    // A dark "arm" over board A: its lattice does not confirm, and shows nowhere else; board B
    // is untouched.
    let c = &cal.boards[0].corners;
    let (x0, x1) = (
        c.iter().map(|p| p[0]).fold(f64::MAX, f64::min) as u32,
        c.iter().map(|p| p[0]).fold(0.0, f64::max) as u32,
    );
    let (y0, y1) = (
        c.iter().map(|p| p[1]).fold(f64::MAX, f64::min) as u32,
        c.iter().map(|p| p[1]).fold(0.0, f64::max) as u32,
    );
    let mut covered = frame.image.clone();
    for y in y0..y1.min(covered.height()) {
        for x in x0..x1.min(covered.width()) {
            covered.put_pixel(x, y, image::Rgb([40, 30, 25]));
        }
    }
    let d = cal.check(&covered).unwrap();
    assert_eq!(d.moved, [true, false], "{d:?}");
    assert_eq!(d.shift, [None, None], "{d:?}");
}
