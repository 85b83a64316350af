//! The broadcast server on an ephemeral loopback port: every URL, validators, 404s, and the SSE
//! stream with resumption by `Last-Event-ID`. The client is a few lines of raw HTTP/1.1.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use tandem_monitor::broadcast::{BroadcastConfig, BroadcastServer, TableConfig};
use tandem_monitor::engine::bpgn::parse_bpgn;
use tandem_monitor::rules::{Event, RuleSet, replay_game};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

/// Guards every network wait so that a bug fails the test instead of hanging CI.
const PATIENCE: Duration = Duration::from_secs(10);

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

async fn request(addr: SocketAddr, raw: String) -> Reply {
    let mut stream = TcpStream::connect(addr).await.expect("server listens");
    stream.write_all(raw.as_bytes()).await.unwrap();
    let mut bytes = Vec::new();
    timeout(PATIENCE, stream.read_to_end(&mut bytes))
        .await
        .expect("server answers and closes")
        .unwrap();
    let text = String::from_utf8(bytes).expect("answers are UTF-8");
    let (head, body) = text.split_once("\r\n\r\n").expect("a header block");
    let mut lines = head.lines();
    let status = lines.next().unwrap().split(' ').nth(1).unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    Reply {
        status: status.parse().unwrap(),
        headers,
        body: body.to_string(),
    }
}

async fn get(addr: SocketAddr, path: &str, extra: &[(&str, &str)]) -> Reply {
    let mut raw = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n");
    for (n, v) in extra {
        raw.push_str(&format!("{n}: {v}\r\n"));
    }
    raw.push_str("\r\n");
    request(addr, raw).await
}

/// An open SSE connection, read line by line.
struct SseClient {
    stream: TcpStream,
    buffer: String,
}

impl SseClient {
    async fn open(addr: SocketAddr, table: &str, last_id: Option<&str>) -> (u16, SseClient) {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let mut raw = format!(
            "GET /tables/{table}/events HTTP/1.1\r\nHost: test\r\nAccept: text/event-stream\r\n"
        );
        if let Some(id) = last_id {
            raw.push_str(&format!("Last-Event-ID: {id}\r\n"));
        }
        raw.push_str("\r\n");
        stream.write_all(raw.as_bytes()).await.unwrap();
        let mut client = SseClient {
            stream,
            buffer: String::new(),
        };
        let status_line = client.line().await;
        let status = status_line.split(' ').nth(1).unwrap().parse().unwrap();
        while !client.line().await.is_empty() {}
        (status, client)
    }

    async fn line(&mut self) -> String {
        loop {
            if let Some(end) = self.buffer.find('\n') {
                let line = self.buffer[..end].trim_end_matches('\r').to_string();
                self.buffer.drain(..=end);
                return line;
            }
            let mut chunk = [0u8; 4096];
            let n = timeout(PATIENCE, self.stream.read(&mut chunk))
                .await
                .expect("an event arrives in time")
                .unwrap();
            assert!(n > 0, "the stream ended early");
            self.buffer
                .push_str(std::str::from_utf8(&chunk[..n]).unwrap());
        }
    }

    /// The next event's `id` and `data` (chunk-size lines of the chunked body are skipped: they
    /// are neither `id:` nor `data:` lines, and each event travels in one chunk).
    async fn next_event(&mut self) -> (String, String) {
        let (mut id, mut data) = (None, None);
        loop {
            let line = self.line().await;
            if let Some(v) = line.strip_prefix("id:") {
                id = Some(v.trim_start().to_string());
            } else if let Some(v) = line.strip_prefix("data:") {
                data = Some(v.trim_start().to_string());
            } else if line.is_empty()
                && let (Some(id), Some(data)) = (id.take(), data.take())
            {
                return (id, data);
            }
        }
    }
}

fn fics_events() -> Vec<Event> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/games/fics-64.bpgn");
    let games = parse_bpgn(&std::fs::read(path).unwrap()).unwrap();
    replay_game("t1", 1, &RuleSet::fics(), &games[0]).unwrap()
}

fn config() -> BroadcastConfig {
    BroadcastConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        event: "Club night".into(),
        date: Some("2026.11.30".into()),
        backlog: 8,
        tables: vec![
            TableConfig {
                id: "t2".into(),
                ..TableConfig::default()
            },
            TableConfig {
                id: "t1".into(),
                white_a: Some("Ann".into()),
                ..TableConfig::default()
            },
        ],
        ..BroadcastConfig::default()
    }
}

#[tokio::test]
async fn every_url_with_validators_and_404s() {
    let server = BroadcastServer::bind(&config()).await.unwrap();
    let addr = server.local_addr();
    assert_ne!(addr.port(), 0);
    let handle = server.handle();
    let events = fics_events();
    for e in &events[..10] {
        assert!(handle.publish(e).unwrap());
    }

    let health = get(addr, "/health", &[]).await;
    assert_eq!(health.status, 200);
    let json: serde_json::Value = serde_json::from_str(&health.body).unwrap();
    assert_eq!(json["status"], "ok");
    assert_eq!(json["tables"], serde_json::json!(["t2", "t1"]));

    let game = get(addr, "/tables/t1/game.bpgn", &[]).await;
    assert_eq!(game.status, 200);
    let parsed = parse_bpgn(game.body.as_bytes()).unwrap();
    assert_eq!(parsed.len(), 1);
    assert_eq!(parsed[0].moves.len(), 10);
    assert_eq!(parsed[0].tag("WhiteA"), Some("Ann"));
    let etag = game.header("etag").expect("an ETag").to_string();
    let modified = game
        .header("last-modified")
        .expect("Last-Modified")
        .to_string();

    let again = get(addr, "/tables/t1/game.bpgn", &[("If-None-Match", &etag)]).await;
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    let again = get(
        addr,
        "/tables/t1/game.bpgn",
        &[("If-Modified-Since", &modified)],
    )
    .await;
    assert_eq!(again.status, 304);
    let old = "Thu, 01 Jan 2015 00:00:00 GMT";
    let stale = get(addr, "/tables/t1/game.bpgn", &[("If-Modified-Since", old)]).await;
    assert_eq!(stale.status, 200);
    assert_eq!(stale.body, game.body);
    let head = request(
        addr,
        "HEAD /round.bpgn HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n".into(),
    )
    .await;
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty() && head.header("etag").is_some());

    // A new move is served on the next request, under a new ETag.
    assert!(handle.publish(&events[10]).unwrap());
    let newer = get(addr, "/tables/t1/game.bpgn", &[("If-None-Match", &etag)]).await;
    assert_eq!(newer.status, 200);
    assert_ne!(newer.header("etag"), Some(etag.as_str()));
    assert_eq!(
        parse_bpgn(newer.body.as_bytes()).unwrap()[0].moves.len(),
        11
    );

    for (path, board_moves) in [("/tables/t1/a.pgn", "1. e4"), ("/tables/t1/b.pgn", "1. e4")] {
        let pgn = get(addr, path, &[]).await;
        assert_eq!(pgn.status, 200, "{path}");
        assert!(pgn.body.contains(board_moves), "{path}: {}", pgn.body);
        assert!(pgn.body.contains("[%clk 0:02:5"), "{path}: {}", pgn.body);
        assert!(
            pgn.header("content-type").unwrap().contains("pgn"),
            "{path}"
        );
    }

    let round = get(addr, "/round.bpgn", &[]).await;
    assert_eq!(round.status, 200);
    let games = parse_bpgn(round.body.as_bytes()).unwrap();
    assert_eq!(games.len(), 2);
    assert!(games[0].moves.is_empty(), "t2 is configured first");
    assert_eq!(games[1].moves.len(), 11);
    for path in ["/round-a.pgn", "/round-b.pgn"] {
        let pgn = get(addr, path, &[]).await;
        assert_eq!(pgn.status, 200, "{path}");
        assert_eq!(
            pgn.body.matches("[Event \"Club night\"]").count(),
            2,
            "{path}"
        );
        assert!(pgn.header("etag").is_some());
    }

    for path in [
        "/tables/nope/game.bpgn",
        "/tables/nope/a.pgn",
        "/tables/nope/events",
        "/tables/t1/c.pgn",
        "/tables/t1",
        "/tables//game.bpgn",
        "/tables/t1/game.bpgn/x",
        "/nothing",
        "/",
    ] {
        assert_eq!(get(addr, path, &[]).await.status, 404, "{path}");
    }
    // Garbage instead of a request: an error answer, and the server keeps serving.
    let garbage = request(addr, "\u{1}\u{2} nonsense\r\n\r\n".to_string()).await;
    assert!((400..500).contains(&garbage.status), "{}", garbage.status);
    assert_eq!(get(addr, "/health", &[]).await.status, 200);

    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn sse_stream_with_backlog_live_events_and_resume() {
    let server = BroadcastServer::bind(&config()).await.unwrap();
    let addr = server.local_addr();
    let handle = server.handle();
    let events = fics_events();
    for e in &events[..5] {
        handle.publish(e).unwrap();
    }

    // A new client gets the backlog first.
    let (status, mut first) = SseClient::open(addr, "t1", None).await;
    assert_eq!(status, 200);
    for expected in &events[..5] {
        let (id, data) = first.next_event().await;
        assert_eq!(id, expected.id);
        let event: Event = serde_json::from_str(&data).unwrap();
        assert_eq!(&event, expected);
    }
    // Then live events, as they are published.
    handle.publish(&events[5]).unwrap();
    let (id, _) = first.next_event().await;
    assert_eq!(id, events[5].id);

    // Resuming after event 3 gives 4, 5, 6 and nothing twice.
    let (_, mut resumed) = SseClient::open(addr, "t1", Some(&events[2].id)).await;
    for expected in &events[3..6] {
        assert_eq!(resumed.next_event().await.0, expected.id);
    }
    handle.publish(&events[6]).unwrap();
    assert_eq!(resumed.next_event().await.0, events[6].id);
    assert_eq!(first.next_event().await.0, events[6].id);

    // The backlog is bounded (8): an id that fell out of it replays what is kept.
    for e in &events[7..20] {
        handle.publish(e).unwrap();
    }
    let (_, mut late) = SseClient::open(addr, "t1", Some(&events[0].id)).await;
    assert_eq!(late.next_event().await.0, events[12].id);

    // An empty configured table streams; an unknown one is 404.
    let (status, _) = SseClient::open(addr, "t2", None).await;
    assert_eq!(status, 200);
    let (status, _) = SseClient::open(addr, "t9", None).await;
    assert_eq!(status, 404);

    // Shutdown ends open streams instead of waiting for them forever.
    timeout(PATIENCE, server.shutdown())
        .await
        .expect("shutdown does not hang on open streams")
        .unwrap();
}
