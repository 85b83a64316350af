//! What the live feed costs: applying a referee event, rendering a game and a 16-table round after
//! a change, and one HTTP poll of the round file over loopback (200 and 304).
//!
//! `cargo bench --bench broadcast_feed` (or `--profile dev` to reuse the debug build cache).

use std::hint::black_box;
use std::net::SocketAddr;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use tandem_monitor::broadcast::{
    BroadcastConfig, BroadcastServer, GameInfo, LiveGame, Round, TableConfig,
};
use tandem_monitor::engine::BoardId;
use tandem_monitor::engine::bpgn::{BpgnGame, parse_bpgn};
use tandem_monitor::rules::{Event, RuleSet, replay_game};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const TABLES: usize = 16;

fn fixture() -> (BpgnGame, Vec<Event>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/games/fics-1921708.bpgn");
    let mut games = parse_bpgn(&std::fs::read(path).expect("fixture exists")).expect("parses");
    let game = games.remove(0);
    let events = replay_game("t1", 1, &RuleSet::fics(), &game).expect("replays");
    (game, events)
}

/// The same game's events as if played at `table`.
fn at_table(events: &[Event], table: &str) -> Vec<Event> {
    events
        .iter()
        .map(|e| Event {
            id: e.id.replacen("t1/", &format!("{table}/"), 1),
            table: table.to_string(),
            ..e.clone()
        })
        .collect()
}

fn round_config() -> BroadcastConfig {
    BroadcastConfig {
        listen: "127.0.0.1:0".parse().expect("a literal address"),
        date: Some("2026.11.30".into()),
        tables: (1..=TABLES)
            .map(|i| TableConfig {
                id: format!("t{i}"),
                ..TableConfig::default()
            })
            .collect(),
        ..BroadcastConfig::default()
    }
}

fn feed(c: &mut Criterion) {
    let (game, events) = fixture();
    let info = GameInfo::from_bpgn(&game);

    c.bench_function("live_game_apply_all_events_140", |b| {
        b.iter(|| {
            let mut live = LiveGame::new("t1", info.clone());
            for e in &events {
                live.apply(e).expect("fits");
            }
            black_box(live.version())
        })
    });

    let mut full = LiveGame::new("t1", info.clone());
    for e in &events[..events.len() - 1] {
        full.apply(e).expect("fits");
    }
    let last = events.last().expect("a game has events");
    c.bench_function("live_game_move_then_render_bpgn_and_both_pgn", |b| {
        b.iter_batched(
            || {
                let mut live = LiveGame::new("t1", info.clone());
                for e in &events[..events.len() - 1] {
                    live.apply(e).expect("fits");
                }
                live
            },
            |mut live| {
                live.apply(last).expect("fits");
                black_box(live.bpgn().len() + live.board_pgn(BoardId::A).len())
                    + live.board_pgn(BoardId::B).len()
            },
            criterion::BatchSize::SmallInput,
        )
    });
    c.bench_function("live_game_cached_render", |b| {
        b.iter(|| black_box(full.bpgn().len()))
    });

    let mut round = Round::from_config(&round_config());
    for i in 1..=TABLES {
        for e in at_table(&events[..events.len() - 1], &format!("t{i}")) {
            round.publish(&e).expect("fits");
        }
    }
    // One table changes (its game is replaced by one with the last move): the round file is
    // re-rendered from that game's new text and the other 15 cached texts.
    let mut with_last = full.clone();
    with_last.apply(last).expect("fits");
    c.bench_function("round16_change_then_render_round_bpgn", |b| {
        b.iter_batched(
            || with_last.clone(),
            |game| {
                round.insert_game(game);
                black_box(round.bpgn().len())
            },
            criterion::BatchSize::SmallInput,
        )
    });

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let server = runtime
        .block_on(BroadcastServer::bind(&round_config()))
        .expect("binds loopback");
    let handle = server.handle();
    for i in 1..=TABLES {
        for e in at_table(&events, &format!("t{i}")) {
            handle.publish(&e).expect("fits");
        }
    }
    let addr = server.local_addr();
    let etag = runtime.block_on(poll(addr, None)).1;
    c.bench_function("http_get_round_bpgn_200", |b| {
        b.iter(|| black_box(runtime.block_on(poll(addr, None)).0))
    });
    c.bench_function("http_get_round_bpgn_304", |b| {
        b.iter(|| black_box(runtime.block_on(poll(addr, Some(&etag))).0))
    });
    runtime
        .block_on(server.shutdown())
        .expect("the server stops");
}

/// One GET of `/round.bpgn` on a new connection; returns the body length and the ETag.
async fn poll(addr: SocketAddr, etag: Option<&str>) -> (usize, String) {
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connects");
    let mut request = String::from("GET /round.bpgn HTTP/1.1\r\nHost: b\r\nConnection: close\r\n");
    if let Some(tag) = etag {
        request.push_str(&format!("If-None-Match: {tag}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.expect("writes");
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).await.expect("reads");
    let text = String::from_utf8_lossy(&bytes);
    let tag = text
        .lines()
        .find_map(|l| l.strip_prefix("etag: "))
        .unwrap_or_default()
        .to_string();
    (bytes.len(), tag)
}

criterion_group!(benches, feed);
criterion_main!(benches);
