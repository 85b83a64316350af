//! One 1280×720 simulator frame → rectify, classify both boards' 128 squares in one ONNX call
//! (with the start-position adaptation bank active), count the four pockets in one call.
//! Target: median ≤ 15 ms on the 2-core machine (ONNX Runtime with 2 intra-op threads).
//!
//! `cargo bench --profile dev --bench vision_frame` (models from `models/`, or
//! `TANDEM_MODELS_DIR`); the ONNX Runtime library as for `tandem doctor`.

use criterion::{Criterion, criterion_group, criterion_main};
use tandem_monitor::sim::{self, CameraConfig, PieceSet, SimSettings};
use tandem_monitor::vision::{
    Calibration, CalibrationConfig, ClassifierConfig, FrameReader, PocketConfig, PocketReader,
    ReaderConfig,
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
    let mut reader = FrameReader::new(&cal, &ReaderConfig::default())
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
    let mut pockets = PocketReader::load(&PocketConfig::default()).expect("pocket model loads");
    c.bench_function("vision_pockets_4", |b| {
        b.iter(|| pockets.read(&crops).expect("valid crops"))
    });

    // Busy-waiting ONNX Runtime workers, for comparison with the default (no spinning).
    let spinning = ReaderConfig {
        classifier: ClassifierConfig {
            spinning: true,
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

criterion_group!(benches, bench);
criterion_main!(benches);
