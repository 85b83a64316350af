//! Time to decode one stable observation of one board in a bughouse middlegame (FICS game #0 of
//! `fics-64.bpgn` after 30 moves on board A, both sides holding pieces): every legal move and
//! every legal two-move sequence exhaustively, longer chains by beam (the default, up to 12
//! moves), two-move sequences only, and single moves only. The observation shows a fast reply (two moves) with
//! simulated classifier noise.

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use tandem_monitor::engine::bpgn::parse_bpgn;
use tandem_monitor::engine::{BoardId, Table, Variant};
use tandem_monitor::tracker::{Decoder, Evidence, LogLik, Observation, SquareClass, TrackerConfig};

fn middlegame() -> Table {
    let bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/games/fics-64.bpgn"
    ))
    .expect("fixture file is committed");
    let games = parse_bpgn(&bytes).expect("fixture parses");
    let v = Variant::fics();
    let mut table = Table::new();
    let mut on_a = 0;
    for m in &games[0].moves {
        let mv = table.parse_san(m.board, &m.san, &v).expect("recorded move");
        table.play(m.board, mv, &v).expect("legal");
        if m.board == BoardId::A {
            on_a += 1;
            if on_a == 30 {
                break;
            }
        }
    }
    table
}

/// A noisy observation of `table`'s board A after two legal moves (deterministic noise), and
/// those moves in UCI.
fn observation(table: &Table, v: &Variant) -> (Observation, Vec<String>) {
    let mut pos = table.board(BoardId::A).clone();
    let mut played = Vec::new();
    for _ in 0..2 {
        let mv = pos.legal_moves(v)[3];
        played.push(mv.to_string());
        pos.play(mv, v);
    }
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut noise = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    let exact = Observation::exact(BoardId::A, 0, &pos, 0.0);
    let squares: Vec<[f32; SquareClass::COUNT]> = tandem_monitor::engine::Square::all()
        .map(|sq| {
            let p = exact.square(sq);
            std::array::from_fn(|i| (6.0 * p[i] + 2.0 * noise()).exp())
        })
        .collect();
    let obs = Observation::new(BoardId::A, 0, &squares, 0.0, None).expect("valid");
    (obs, played)
}

fn bench(c: &mut Criterion) {
    let table = middlegame();
    let v = Variant::fics();
    let (obs, played) = observation(&table, &v);
    let ev = Evidence::default();
    let mut group = c.benchmark_group("tracker_decode");
    for (name, max_moves) in [
        ("default_beam_12", 12),
        ("two_moves", 2),
        ("single_move", 1),
    ] {
        let cfg = TrackerConfig {
            max_moves_per_observation: max_moves,
            ..TrackerConfig::default()
        };
        let ll = LogLik::from_observation(&obs, &cfg);
        let decoded = Decoder::new(&table, BoardId::A, &v, &cfg).decode(&ll, None, false, &ev);
        let found: Vec<String> = decoded.best.moves.iter().map(|m| m.to_string()).collect();
        eprintln!(
            "{name}: {} hypotheses, best {:?} {found:?}, played {played:?}",
            decoded.considered, decoded.best.kind
        );
        if max_moves >= 2 {
            assert_eq!(found, played, "the bench must decode what was played");
        }
        group.bench_function(name, |b| {
            b.iter(|| {
                let ll = LogLik::from_observation(black_box(&obs), &cfg);
                Decoder::new(&table, BoardId::A, &v, &cfg).decode(&ll, None, false, &ev)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
