//! Costs on the event path that do not involve the network: outbox append+ack (with and without
//! compaction pressure) and inbound parsing.
//!
//! `cargo bench --bench publish_outbox`

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use tandem_monitor::publish::{FsyncPolicy, Outbox, OutboxConfig, parse_inbound};

const EVENT: &str = r#"{"id":"t1-g3-A-17","type":"move","table":"t1","board":"A","ts":1764536400123,"uci":"N@f3","san":"N@f3"}"#;

fn outbox(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut ob = Outbox::open(OutboxConfig {
        dir: dir.path().to_path_buf(),
        fsync: FsyncPolicy::Never,
        max_bytes: 1 << 30,
        compact_min_dead: 4096,
    })
    .expect("open outbox");
    c.bench_function(
        "outbox append+ack (fsync never, compaction every 4096)",
        |b| {
            b.iter(|| {
                let seq = ob
                    .append("tandem/v1/t1/event/move", EVENT, false)
                    .expect("append");
                black_box(ob.ack(seq).expect("ack"));
            })
        },
    );
    drop(ob);
    let dir = tempfile::tempdir().expect("temp dir");
    let mut ob = Outbox::open(OutboxConfig {
        dir: dir.path().to_path_buf(),
        fsync: FsyncPolicy::Always,
        max_bytes: 1 << 30,
        compact_min_dead: 4096,
    })
    .expect("open outbox");
    c.bench_function("outbox push+ack (fsync always, one fsync per push)", |b| {
        b.iter(|| {
            let seq = ob
                .push("tandem/v1/t1/event/move", EVENT, false)
                .expect("push");
            black_box(ob.ack(seq).expect("ack"));
        })
    });
}

fn inbound(c: &mut Criterion) {
    let press =
        br#"{"side":"white","ts":1764536400123,"white_ms":287400,"black_ms":300000,"seq":17}"#;
    let claim = br#"{"cmd":"claim","board":"A","side":"black","claim":"illegal_move","event_id":"t1-g3-A-17"}"#;
    c.bench_function("parse_inbound clock press", |b| {
        b.iter(|| {
            black_box(parse_inbound(
                "tandem/v1/t1/clock/A/press",
                black_box(press),
            ))
        })
    });
    c.bench_function("parse_inbound arbiter claim", |b| {
        b.iter(|| black_box(parse_inbound("tandem/v1/t1/arbiter/cmd", black_box(claim))))
    });
}

criterion_group!(benches, outbox, inbound);
criterion_main!(benches);
