//! Perft speed (nodes/s, single thread) on the public crazyhouse suite: every position at its
//! deepest recorded depth (4, or 2 for the all-drop-types entry), 13.3M leaf nodes per iteration.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use tandem_monitor::engine::{Position, Variant, perft};

fn suite() -> Vec<(String, Position, u32, u64)> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/engine/crazyhouse.perft"
    ))
    .expect("fixture file is committed");
    let mut out = Vec::new();
    let mut id = String::new();
    let mut fen = String::new();
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("id ") {
            id = v.to_string();
        } else if let Some(v) = line.strip_prefix("epd ") {
            fen = v.to_string();
        } else if let Some(v) = line.strip_prefix("perft ") {
            let mut it = v.split_whitespace();
            let d: u32 = it.next().and_then(|s| s.parse().ok()).expect("depth");
            let n: u64 = it.next().and_then(|s| s.parse().ok()).expect("nodes");
            let pos: Position = fen.parse().expect("suite FEN parses");
            out.retain(|(i, _, _, _): &(String, Position, u32, u64)| *i != id);
            out.push((id.clone(), pos, d, n));
        }
    }
    out
}

/// Perft without bulk counting: every leaf move is generated into a list and played.
fn perft_full(pos: &Position, depth: u32, v: &Variant) -> u64 {
    if depth == 0 {
        return 1;
    }
    let mut nodes = 0;
    for &m in pos.legal_moves(v).iter() {
        let mut child = pos.clone();
        let out = child.play(m, v);
        if let Some(c) = out.captured {
            child.pocket_mut(pos.turn()).add(c.role);
        }
        nodes += perft_full(&child, depth - 1, v);
    }
    nodes
}

fn bench(c: &mut Criterion) {
    let v = Variant::crazyhouse();
    let cases = suite();
    let total: u64 = cases.iter().map(|c| c.3).sum();
    let mut group = c.benchmark_group("crazyhouse_perft");
    group.sample_size(10);
    group.throughput(Throughput::Elements(total));
    group.bench_function("suite_deepest", |b| {
        b.iter(|| {
            let mut n = 0;
            for (_, pos, d, _) in &cases {
                n += perft(black_box(pos), *d, &v);
            }
            assert_eq!(n, total);
            n
        })
    });
    // Smaller set for the unbulked figure: depth 3 everywhere (depth 2 for all-drop-types).
    let shallow: Vec<(Position, u32)> = cases
        .iter()
        .map(|(_, p, d, _)| (p.clone(), (*d).min(3)))
        .collect();
    let shallow_total: u64 = shallow.iter().map(|(p, d)| perft(p, *d, &v)).sum();
    group.throughput(Throughput::Elements(shallow_total));
    group.bench_function("suite_depth3_no_bulk", |b| {
        b.iter(|| {
            let mut n = 0;
            for (pos, d) in &shallow {
                n += perft_full(black_box(pos), *d, &v);
            }
            assert_eq!(n, shallow_total);
            n
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
