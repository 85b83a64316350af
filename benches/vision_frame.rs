//! One 1280×720 simulator frame → rectify, classify both boards' 128 squares in one ONNX call
//! (with the start-position adaptation bank active), count the four pockets in one call.
//! Target: median ≤ 15 ms on the 2-core machine (ONNX Runtime with 2 intra-op threads).
//!
//! Two views of it: `vision_frame_*` reads the same frame again and again with the change gate
//! off (every square through the network: the cost of a frame where everything changed), and
//! `vision_stream_*` reads a rendered game (hands, moves, sensor noise) frame after frame with
//! the defaults, as `watch` does; it also prints the median and p99 of one pass.
//!
//! `cargo bench --profile dev --bench vision_frame` (models from `models/`, or
//! `TANDEM_MODELS_DIR`); the ONNX Runtime library as for `tandem doctor`.

use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use image::RgbImage;
use tandem_monitor::engine::bpgn::parse_bpgn;
use tandem_monitor::sim::game::{GameRenderer, piece_heights, plan_game};
use tandem_monitor::sim::{self, CameraConfig, PieceSet, SimSettings};
use tandem_monitor::vision::gate::ChangeGate;
use tandem_monitor::vision::{
    Calibration, CalibrationConfig, ClassifierConfig, FrameReader, PocketConfig, PocketReader,
    ReaderConfig, SquareClassifier,
};

const START: &str =
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR | rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR";
const MIDGAME: &str = "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N1PN2/PP3PPP/R2QKB1R[Pn] w KQ - 0 9 | \
                       r2qk2r/ppp2ppp/2n1b3/3p4/3P4/2PB1N2/PP3PPP/R2Q1RK1[Bp] b kq - 0 10";

fn bench(c: &mut Criterion) {
    let settings = SimSettings {
        seed: 3,
        camera: CameraConfig::preset("tripod").expect("tripod is a preset"),
        ..SimSettings::default()
    };
    let pieces = PieceSet::default_set().expect("the default piece set loads");
    let start = sim::render_table(START, &pieces, &settings).expect("the start renders");
    let frame = sim::render_table(MIDGAME, &pieces, &settings).expect("the middlegame renders");
    let corners = [0, 1].map(|b| {
        frame.truth.boards[b]
            .corners
            .map(|p| [p[0] as f64, p[1] as f64])
    });
    let cal = Calibration::manual(
        "bench",
        (frame.image.width(), frame.image.height()),
        corners,
        Some(&frame.image),
        &CalibrationConfig::default(),
    )
    .expect("truth corners are a valid calibration");
    let ungated = ReaderConfig {
        classifier: ClassifierConfig {
            gate_threshold: 0.0,
            ..ClassifierConfig::default()
        },
        ..ReaderConfig::default()
    };
    let mut reader = FrameReader::new(&cal, &ungated)
        .expect("models/squares.onnx and models/pockets.onnx load (or TANDEM_MODELS_DIR)");
    reader.read(&start.image).expect("start frame reads");
    reader.adapt_start_from_last().expect("start adaptation");
    c.bench_function("vision_frame_1280x720_rectify_128_squares_4_pockets", |b| {
        b.iter(|| {
            reader
                .read(&frame.image)
                .expect("frame of the calibrated size")
                .squares
                .len()
        })
    });

    // The parts, to see where the time goes.
    let crops = reader.reading().crops.clone();
    let mut probs = Vec::new();
    c.bench_function("vision_squares_128_adapted", |b| {
        b.iter(|| {
            reader
                .classifier_mut()
                .classify(&crops, &mut probs)
                .expect("valid crops")
        })
    });
    // The change gate's comparison of 128 unchanged patches (its worst case: every block read).
    let mut gate = ChangeGate::new(crops.patch_w, crops.patch_h, 16, 4.0, 0);
    let all: Vec<usize> = (0..128).collect();
    gate.remember(&crops.squares, &all);
    let mut changed = Vec::new();
    c.bench_function("vision_gate_128_unchanged", |b| {
        b.iter(|| {
            gate.changed(&crops.squares, &mut changed);
            changed.len()
        })
    });
    // The tracker's "unchanged since confirmed" test needs every square's look (block means).
    c.bench_function("vision_looks_128", |b| {
        b.iter(|| (crops.looks(0), crops.looks(1)))
    });
    let mut pockets = PocketReader::load(&PocketConfig::default()).expect("pocket model loads");
    c.bench_function("vision_pockets_4", |b| {
        b.iter(|| pockets.read(&crops).expect("valid crops"))
    });

    // Busy-waiting ONNX Runtime workers, for comparison with the default (no spinning).
    let spinning = ReaderConfig {
        classifier: ClassifierConfig {
            spinning: true,
            gate_threshold: 0.0,
            ..ClassifierConfig::default()
        },
        pockets: PocketConfig {
            spinning: true,
            ..PocketConfig::default()
        },
        ..ReaderConfig::default()
    };
    let mut spin_reader = FrameReader::new(&cal, &spinning).expect("models load");
    spin_reader.read(&start.image).expect("start frame reads");
    spin_reader
        .adapt_start_from_last()
        .expect("start adaptation");
    c.bench_function("vision_frame_spinning_threads", |b| {
        b.iter(|| {
            spin_reader
                .read(&frame.image)
                .expect("frame of the calibrated size")
                .squares
                .len()
        })
    });
}

/// Frames `0..n` of the fixture game (FICS 1921708, both boards) at 1280×720, 5 frames/s,
/// `tripod` pose, default piece set, rendered on two threads.
fn game_frames(n: u64) -> Vec<(RgbImage, [[[f64; 2]; 4]; 2])> {
    let bytes = include_bytes!("../fixtures/games/fics-1921708.bpgn");
    let game = &parse_bpgn(bytes).expect("fixture BPGN parses")[0];
    let settings = SimSettings {
        seed: 11,
        camera: CameraConfig::preset("tripod").expect("tripod is a preset"),
        ..SimSettings::default()
    };
    let pieces = PieceSet::default_set().expect("the default piece set loads");
    let heights = piece_heights(&pieces, &settings).expect("piece heights");
    let plan = plan_game(
        game,
        &settings.layout,
        heights,
        &[],
        settings.seed,
        Some(30.0),
    )
    .expect("the fixture game plans");
    let renderer = GameRenderer::new(&plan, &pieces, &settings).expect("the game renders");
    let render = |f: u64| {
        let (img, truth) = renderer.frame(f, 5.0);
        (
            img,
            truth.corners.map(|b| b.map(|p| [p[0] as f64, p[1] as f64])),
        )
    };
    std::thread::scope(|s| {
        let odd = s.spawn(|| (1..n).step_by(2).map(render).collect::<Vec<_>>());
        let even: Vec<_> = (0..n).step_by(2).map(render).collect();
        let odd = odd.join().expect("render thread");
        let mut all = Vec::with_capacity(n as usize);
        let (mut e, mut o) = (even.into_iter(), odd.into_iter());
        for f in 0..n {
            all.extend(if f % 2 == 0 { e.next() } else { o.next() });
        }
        all
    })
}

fn bench_stream(c: &mut Criterion) {
    // Only when benchmarking: `cargo test --all-targets` runs this binary once without `--bench`.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let frames = game_frames(60);
    let cal = Calibration::manual(
        "bench-stream",
        (frames[0].0.width(), frames[0].0.height()),
        frames[0].1,
        Some(&frames[0].0),
        &CalibrationConfig::default(),
    )
    .expect("truth corners are a valid calibration");
    let mut reader = FrameReader::new(&cal, &ReaderConfig::default()).expect("models load");
    reader.read(&frames[0].0).expect("start frame reads");
    reader.adapt_start_from_last().expect("start adaptation");
    // Timed passes for the per-frame median (criterion reports the mean of its samples), the
    // parts timed one by one on their own copies of the reader's stages.
    let rectifier = reader.rectifier().clone();
    let mut squares = SquareClassifier::load(&ClassifierConfig::default()).expect("squares.onnx");
    let mut pockets = PocketReader::load(&PocketConfig::default()).expect("pockets.onnx");
    let mut crops = rectifier
        .rectify(&frames[0].0)
        .expect("start frame rectifies");
    squares.adapt_start(&crops).expect("start adaptation");
    let (mut probs, mut rows) = (Vec::new(), 0usize);
    let mut ms: [Vec<f64>; 4] = Default::default();
    let passes = 3;
    for _ in 0..passes {
        for (img, _) in &frames[1..] {
            let t0 = Instant::now();
            rectifier
                .rectify_into(img, &mut crops)
                .expect("frame rectifies");
            let t1 = Instant::now();
            squares.classify(&crops, &mut probs).expect("squares");
            let t2 = Instant::now();
            pockets.read(&crops).expect("pockets");
            let t3 = Instant::now();
            for (v, (a, b)) in ms.iter_mut().zip([(t0, t3), (t0, t1), (t1, t2), (t2, t3)]) {
                v.push((b - a).as_secs_f64() * 1e3);
            }
            rows += squares.last_network_rows();
        }
    }
    let [total, rect, sq, po] = ms.map(|mut v| {
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2], v[(v.len() * 99 / 100).min(v.len() - 1)])
    });
    eprintln!(
        "vision_stream {passes} passes over {} frames, median (p99) ms: frame {:.2} ({:.2}), \
         rectify {:.2} ({:.2}), squares {:.2} ({:.2}), pockets {:.2} ({:.2}); \
         network rows per frame {:.1} of 128",
        frames.len() - 1,
        total.0,
        total.1,
        rect.0,
        rect.1,
        sq.0,
        sq.1,
        po.0,
        po.1,
        rows as f64 / (passes * (frames.len() - 1)) as f64
    );
    let mut next = 1;
    c.bench_function("vision_stream_1280x720_game_frames_gated", |b| {
        b.iter(|| {
            let (img, _) = &frames[next];
            next = if next + 1 == frames.len() {
                1
            } else {
                next + 1
            };
            reader.read(img).expect("frame reads").squares.len()
        })
    });
}

criterion_group!(benches, bench, bench_stream);
criterion_main!(benches);
