//! Frames per second of the table simulator at 1280×720 (single-threaded).
//!
//! `render_frame`: one frame of a prepared scene (what a game renderer pays per frame);
//! `render_table`: the whole call from a FEN including scene building and texture baking.
//! Run: `cargo bench --profile dev --bench sim_render` (the dev profile the brief measures).

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use tandem_monitor::sim::{self, PieceSet, SimRng, SimSettings, parse_table_fen, render};

const FEN: &str = "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R[Pn] w KQkq - | rnb1kbnr/ppp2ppp/8/3pp3/4P3/8/PPPP1PPP/RNBQKB1R[Qp] b";

/// CPU time of this thread in milliseconds (Linux; 10 ms ticks), so the frame rate can be
/// reported independently of how busy the shared machine is. `None` elsewhere.
fn thread_cpu_ms() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    let f: Vec<&str> = s.rsplit(')').next()?.split_whitespace().collect();
    let user: f64 = f.get(11)?.parse().ok()?;
    let system: f64 = f.get(12)?.parse().ok()?;
    Some((user + system) * 10.0)
}

fn bench(c: &mut Criterion) {
    let pieces = PieceSet::default_set().expect("default piece set loads");
    let settings = SimSettings {
        seed: 7,
        ..SimSettings::default()
    };
    let placement = parse_table_fen(FEN).expect("bench FEN is valid");
    let (scene, camera) =
        sim::build_scene(&placement, &pieces, &settings).expect("bench scene builds");
    let post = sim::post_effects(&settings.variation, settings.seed, None);
    let opts = render::RenderOptions::default();
    // Only when benchmarking: `cargo test --all-targets` runs this binary once without `--bench`.
    let benchmarking = std::env::args().any(|a| a == "--bench");
    if let Some(t0) = thread_cpu_ms().filter(|_| benchmarking) {
        let n = 10;
        for _ in 0..n {
            black_box(render::render_image(
                &scene,
                &camera,
                &opts,
                &post,
                &mut SimRng::new(1),
            ));
        }
        let per = (thread_cpu_ms().unwrap_or(t0) - t0) / n as f64;
        eprintln!(
            "render_frame CPU time: {per:.0} ms/frame = {:.1} frames/s single-threaded",
            1000.0 / per.max(1.0)
        );
        let t1 = thread_cpu_ms().unwrap_or(0.0);
        for _ in 0..3 {
            black_box(sim::render_table(FEN, &pieces, &settings).expect("renders"));
        }
        eprintln!(
            "render_table CPU time: {:.0} ms/frame",
            (thread_cpu_ms().unwrap_or(t1) - t1) / 3.0
        );
    }
    let mut g = c.benchmark_group("sim_1280x720");
    g.sample_size(10).measurement_time(Duration::from_secs(8));
    g.bench_function("render_frame", |b| {
        b.iter(|| {
            render::render_image(
                black_box(&scene),
                &camera,
                &opts,
                &post,
                &mut SimRng::new(1),
            )
        })
    });
    g.bench_function("render_table", |b| {
        b.iter(|| sim::render_table(black_box(FEN), &pieces, &settings).expect("renders"))
    });
    let frame = sim::render_table(FEN, &pieces, &settings).expect("renders");
    let jpeg = sim::encode_jpeg(&frame.image, 85).expect("encodes");
    if benchmarking {
        eprintln!("typical JPEG frame at quality 85: {} bytes", jpeg.len());
    }
    g.bench_function("encode_jpeg_q85", |b| {
        b.iter(|| sim::encode_jpeg(black_box(&frame.image), 85).expect("encodes"))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
