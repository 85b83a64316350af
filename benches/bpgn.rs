//! BPGN throughput: reading the 64-game FICS fixture, writing it back, and the per-board export.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use tandem_monitor::engine::bpgn::{
    BoardId, BoardPgnOptions, parse_bpgn, write_board_pgn, write_bpgn,
};

const FICS_64: &[u8] = include_bytes!("../fixtures/games/fics-64.bpgn");

fn bpgn(c: &mut Criterion) {
    let games = parse_bpgn(FICS_64).expect("the fixture parses");
    let moves: usize = games.iter().map(|g| g.moves.len()).sum();

    let mut group = c.benchmark_group("bpgn");
    group.throughput(Throughput::Bytes(FICS_64.len() as u64));
    group.bench_function("parse_fics_64", |b| {
        b.iter(|| parse_bpgn(black_box(FICS_64)))
    });
    group.throughput(Throughput::Elements(moves as u64));
    group.bench_function("write_fics_64", |b| {
        b.iter(|| {
            black_box(&games)
                .iter()
                .map(write_bpgn)
                .map(|s| s.len())
                .sum::<usize>()
        })
    });
    group.bench_function("board_pgn_fics_64", |b| {
        b.iter(|| {
            black_box(&games)
                .iter()
                .flat_map(|g| {
                    [BoardId::A, BoardId::B]
                        .map(|board| write_board_pgn(g, board, BoardPgnOptions::default()).len())
                })
                .sum::<usize>()
        })
    });
    group.finish();
}

criterion_group!(benches, bpgn);
criterion_main!(benches);
