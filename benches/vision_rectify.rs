//! Rectification of one 1280×720 frame: 128 square patches (48×64) and 4 pocket patches from
//! precomputed sampling maps; plus the drift check (`watch::drift` runs it every 200 ms of frame
//! time), on an unchanged frame and on a bumped one.
//!
//! `cargo bench --profile dev --bench vision_rectify`

use criterion::{Criterion, criterion_group, criterion_main};
use tandem_monitor::sim::{self, CameraConfig, PieceSet, SimSettings};
use tandem_monitor::vision::{Calibration, CalibrationConfig, Rectifier, RectifyConfig};

fn bench(c: &mut Criterion) {
    let settings = SimSettings {
        seed: 3,
        camera: CameraConfig::preset("tripod").expect("tripod is a preset"),
        ..SimSettings::default()
    };
    let frame = sim::render_table(
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR | rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR",
        &PieceSet::builtin(),
        &settings,
    )
    .expect("the start position renders");
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
    let rect = Rectifier::new(&cal, &RectifyConfig::default()).expect("valid calibration");
    let mut crops = rect
        .rectify(&frame.image)
        .expect("frame has the calibrated size");
    c.bench_function("rectify_1280x720_128_squares_4_pockets", |b| {
        b.iter(|| {
            rect.rectify_into(&frame.image, &mut crops)
                .expect("same size")
        })
    });
    c.bench_function("rectifier_new_sampling_maps", |b| {
        b.iter(|| Rectifier::new(&cal, &RectifyConfig::default()).expect("valid"))
    });
    c.bench_function("drift_check_1280x720", |b| {
        b.iter(|| cal.check(&frame.image).expect("same size"))
    });
    // The camera bumped 7 px right and 4 px down: both lattices fail where they were calibrated
    // and are searched for displaced (what a failing check costs).
    let (w, h) = (frame.image.width(), frame.image.height());
    let bumped = image::RgbImage::from_fn(w, h, |x, y| {
        *frame.image.get_pixel(
            x.saturating_sub(7).min(w - 1),
            y.saturating_sub(4).min(h - 1),
        )
    });
    c.bench_function("drift_check_1280x720_bumped", |b| {
        b.iter(|| cal.check(&bumped).expect("same size"))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
