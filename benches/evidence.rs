//! Evidence write and verify costs: `cargo bench --bench evidence` (or `--profile dev`).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use tandem_monitor::evidence::{
    self, EvidenceConfig, EvidenceLog, Frame, FrameLink, FsyncPolicy, GameMeta, GameRecorder,
    SigningKey,
};

fn meta(game: &str) -> GameMeta {
    GameMeta {
        table: "bench".into(),
        game: game.into(),
        calibration: None,
        model_sha256: None,
        rule_set: "tandem-2024".into(),
        started_ts: 0,
    }
}

fn config(root: &std::path::Path) -> EvidenceConfig {
    EvidenceConfig {
        dir: root.to_path_buf(),
        fsync: FsyncPolicy::Never,
        ..EvidenceConfig::default()
    }
}

fn append_event(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let mut g = c.benchmark_group("evidence/append_event");
    g.throughput(Throughput::Elements(1));
    for (name, key) in [
        ("unsigned", None),
        ("signed", Some(SigningKey::from_bytes(&[1u8; 32]))),
    ] {
        let dir = tmp.path().join(name);
        let mut log = EvidenceLog::create(&dir, &meta(name), &config(tmp.path()), key)
            .expect("fresh directory");
        let mut i = 0i64;
        g.bench_function(name, |b| {
            b.iter(|| {
                i += 1;
                let ev = json!({"id": format!("m{i}"), "type": "move", "table": "bench",
                    "board": "A", "ts": i, "uci": "e2e4", "san": "e4"});
                black_box(log.append_event(&ev).expect("append"))
            })
        });
    }
    g.finish();
}

fn frames(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let bytes: Vec<u8> = (0..100_000u32).map(|i| (i * 7919 % 251) as u8).collect();
    let mut g = c.benchmark_group("evidence/frame_100KB");
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    let mut rec = GameRecorder::start(&meta("ring"), &config(tmp.path()), None).expect("start");
    let shared: std::sync::Arc<[u8]> = bytes.clone().into();
    let mut ts = 0;
    g.bench_function("push_frame_ring_only", |b| {
        b.iter(|| {
            ts += 100;
            rec.push_frame(Frame::new(ts, shared.clone()))
                .expect("push")
        })
    });
    let dir = tmp.path().join("write");
    let mut log =
        EvidenceLog::create(&dir, &meta("write"), &config(tmp.path()), None).expect("create");
    g.bench_function("write_frame_to_disk", |b| {
        b.iter(|| {
            log.write_frame(0, &bytes, None, FrameLink::Commit { event_id: "m" })
                .expect("write")
        })
    });
    g.finish();
}

fn verify(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let mut rec = GameRecorder::start(
        &meta("verify"),
        &config(tmp.path()),
        Some(SigningKey::from_bytes(&[2u8; 32])),
    )
    .expect("start");
    for i in 0..450i64 {
        let id = format!("m{i}");
        rec.record_event(&json!({"id": id, "type": "move", "table": "bench", "ts": i}))
            .expect("event");
        if i % 4 == 0 {
            rec.commit_frame(&id, i, &[0xFF, 0xD8, 0xFF, i as u8])
                .expect("frame");
        }
    }
    let dir = rec.finish(450, None).expect("finish");
    let mut g = c.benchmark_group("evidence/verify");
    g.bench_function("signed_565_records", |b| {
        b.iter(|| black_box(evidence::verify(&dir).expect("verify")))
    });
    g.finish();
}

criterion_group!(benches, append_event, frames, verify);
criterion_main!(benches);
