//! The HTTP side of the feed: files for pollers, server-sent events for live clients.
//!
//! Routes (GET and HEAD): `/health`, `/round.bpgn`, `/round-a.pgn`, `/round-b.pgn`,
//! `/tables/<id>/game.bpgn`, `/tables/<id>/a.pgn`, `/tables/<id>/b.pgn` and
//! `/tables/<id>/events`. Anything else, and an unknown table, is 404. Files carry a strong `ETag`
//! (a hash of the content) and `Last-Modified`, and answer `If-None-Match` /
//! `If-Modified-Since` with 304, so pollers cost a hash per request and no body.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::sync::{broadcast, watch};

use crate::engine::BoardId;
use crate::rules::Event;

use super::BroadcastError;
use super::config::BroadcastConfig;
use super::live::{LiveGame, Rendered};
use super::round::Round;

const BPGN_TYPE: &str = "text/plain; charset=utf-8";
const PGN_TYPE: &str = "application/x-chess-pgn; charset=utf-8";
/// Live events buffered per slow SSE client before it is dropped (it resumes by Last-Event-ID).
const LIVE_QUEUE: usize = 1024;

/// One event as SSE clients get it: its id (without line breaks or NUL) and its JSON (serde_json
/// escapes every control character, so it holds no raw line break either).
#[derive(Debug)]
struct SseItem {
    table: String,
    id: String,
    json: String,
}

#[derive(Debug)]
struct Feed {
    round: Round,
    backlog: HashMap<String, VecDeque<Arc<SseItem>>>,
    backlog_len: usize,
}

#[derive(Debug)]
struct Shared {
    feed: Mutex<Feed>,
    live: broadcast::Sender<Arc<SseItem>>,
    shutdown: watch::Sender<bool>,
}

/// The daemon's way into the feed: cheap to clone, usable from sync and async code alike.
///
/// Invariant: an event is applied to the round, appended to its table's backlog and sent to live
/// SSE clients under one lock, so a client that subscribes sees every event exactly once.
#[derive(Debug, Clone)]
pub struct BroadcastHandle {
    shared: Arc<Shared>,
}

impl BroadcastHandle {
    /// A feed with the configured tables and no server (the server is [`BroadcastServer::bind`]).
    pub fn new(config: &BroadcastConfig) -> Self {
        let (live, _) = broadcast::channel(LIVE_QUEUE);
        let (shutdown, _) = watch::channel(false);
        BroadcastHandle {
            shared: Arc::new(Shared {
                feed: Mutex::new(Feed {
                    round: Round::from_config(config),
                    backlog: HashMap::new(),
                    backlog_len: config.backlog.max(1),
                }),
                live,
                shutdown,
            }),
        }
    }

    fn feed(&self) -> MutexGuard<'_, Feed> {
        // A panic while holding the lock cannot leave the feed half-updated in a way that
        // matters more than stopping the broadcast would, so a poisoned lock is used as is.
        self.shared
            .feed
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Feeds one referee event: the files change at once and SSE clients get it. Returns whether
    /// the files changed; an error (an event that does not fit the table's game) leaves the
    /// files as they were, but the event still goes to SSE clients.
    pub fn publish(&self, event: &Event) -> Result<bool, BroadcastError> {
        let json = serde_json::to_string(event).map_err(|e| BroadcastError::Json(e.to_string()))?;
        let item = Arc::new(SseItem {
            table: event.table.clone(),
            // SSE cannot carry these in an id (axum would panic); ids from the referee have none.
            id: event.id.replace(['\r', '\n', '\0'], " "),
            json,
        });
        let mut feed = self.feed();
        let result = feed.round.publish(event);
        let cap = feed.backlog_len;
        let backlog = feed.backlog.entry(event.table.clone()).or_default();
        if backlog.len() == cap {
            backlog.pop_front();
        }
        backlog.push_back(item.clone());
        // No receiver is not an error: nobody is watching live.
        let _ = self.shared.live.send(item);
        result
    }

    /// Puts a game at its table, replacing the current one (a replay with the file's tags).
    pub fn insert_game(&self, game: LiveGame) {
        self.feed().round.insert_game(game);
    }

    /// Reads the round under the lock (keep `f` short: publishing waits for it).
    pub fn with_round<T>(&self, f: impl FnOnce(&Round) -> T) -> T {
        f(&self.feed().round)
    }

    /// The retained MQTT payloads of `table`'s game (see [`LiveGame::retained_payloads`]).
    pub fn retained_payloads(&self, table: &str) -> Option<Vec<(String, String)>> {
        self.with_round(|r| r.game(table).map(LiveGame::retained_payloads))
    }

    /// Ends every SSE stream and stops a server started with this handle.
    pub fn shutdown(&self) {
        self.shared.shutdown.send_replace(true);
    }
}

/// The broadcast HTTP server, running on the tokio runtime it was bound in.
#[derive(Debug)]
pub struct BroadcastServer {
    local_addr: SocketAddr,
    handle: BroadcastHandle,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl BroadcastServer {
    /// Binds `config.listen` and serves a new feed built from `config`.
    pub async fn bind(config: &BroadcastConfig) -> Result<Self, BroadcastError> {
        Self::bind_with(BroadcastHandle::new(config), config.listen).await
    }

    /// Binds `addr` and serves an existing feed.
    pub async fn bind_with(
        handle: BroadcastHandle,
        addr: SocketAddr,
    ) -> Result<Self, BroadcastError> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| BroadcastError::Bind { addr, source })?;
        let local_addr = listener
            .local_addr()
            .map_err(|source| BroadcastError::Bind { addr, source })?;
        let app = router(handle.clone());
        let mut stop = handle.shared.shutdown.subscribe();
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    // Ends when shutdown is set, or when every handle is gone.
                    let _ = stop.wait_for(|stopped| *stopped).await;
                })
                .await
        });
        Ok(BroadcastServer {
            local_addr,
            handle,
            task,
        })
    }

    /// The address actually bound (the port chosen for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// A handle to feed events into the served round.
    pub fn handle(&self) -> BroadcastHandle {
        self.handle.clone()
    }

    /// Ends the SSE streams, stops accepting, and waits for open requests to finish.
    pub async fn shutdown(self) -> Result<(), BroadcastError> {
        self.handle.shutdown();
        match self.task.await {
            Ok(result) => result.map_err(BroadcastError::Serve),
            Err(join) => Err(BroadcastError::Serve(std::io::Error::other(join))),
        }
    }
}

fn router(handle: BroadcastHandle) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/round.bpgn", get(round_bpgn))
        .route("/round-a.pgn", get(round_a))
        .route("/round-b.pgn", get(round_b))
        .route("/tables/:table/game.bpgn", get(table_bpgn))
        .route("/tables/:table/a.pgn", get(table_a))
        .route("/tables/:table/b.pgn", get(table_b))
        .route("/tables/:table/events", get(table_events))
        .fallback(not_found)
        .with_state(handle)
}

async fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "not found\n").into_response()
}

async fn health(State(handle): State<BroadcastHandle>) -> Response {
    let body = handle.with_round(|round| {
        serde_json::json!({
            "status": "ok",
            "tables": round.tables(),
            "version": round.version(),
        })
        .to_string()
    });
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

async fn round_bpgn(State(h): State<BroadcastHandle>, headers: HeaderMap) -> Response {
    let (rendered, modified) = h.with_round(|r| (r.rendered_bpgn().clone(), r.modified()));
    file(&headers, rendered, modified, BPGN_TYPE)
}

async fn round_a(State(h): State<BroadcastHandle>, headers: HeaderMap) -> Response {
    let (rendered, modified) = h.with_round(|r| (r.rendered_pgn(BoardId::A).clone(), r.modified()));
    file(&headers, rendered, modified, PGN_TYPE)
}

async fn round_b(State(h): State<BroadcastHandle>, headers: HeaderMap) -> Response {
    let (rendered, modified) = h.with_round(|r| (r.rendered_pgn(BoardId::B).clone(), r.modified()));
    file(&headers, rendered, modified, PGN_TYPE)
}

/// Which rendering of a table's game a URL asks for.
#[derive(Clone, Copy)]
enum TableFile {
    Bpgn,
    Board(BoardId),
}

fn table_file(h: &BroadcastHandle, table: &str, headers: &HeaderMap, which: TableFile) -> Response {
    let found = h.with_round(|r| {
        r.game(table).map(|g| match which {
            TableFile::Bpgn => (g.rendered_bpgn().clone(), g.modified(), BPGN_TYPE),
            TableFile::Board(board) => (g.rendered_pgn(board).clone(), g.modified(), PGN_TYPE),
        })
    });
    match found {
        Some((rendered, modified, content_type)) => file(headers, rendered, modified, content_type),
        None => (StatusCode::NOT_FOUND, "no such table\n").into_response(),
    }
}

async fn table_bpgn(
    State(h): State<BroadcastHandle>,
    Path(table): Path<String>,
    headers: HeaderMap,
) -> Response {
    table_file(&h, &table, &headers, TableFile::Bpgn)
}

async fn table_a(
    State(h): State<BroadcastHandle>,
    Path(table): Path<String>,
    headers: HeaderMap,
) -> Response {
    table_file(&h, &table, &headers, TableFile::Board(BoardId::A))
}

async fn table_b(
    State(h): State<BroadcastHandle>,
    Path(table): Path<String>,
    headers: HeaderMap,
) -> Response {
    table_file(&h, &table, &headers, TableFile::Board(BoardId::B))
}

/// A text file with validators; 304 when the client's copy is current.
fn file(
    headers: &HeaderMap,
    rendered: Rendered,
    modified: SystemTime,
    content_type: &'static str,
) -> Response {
    let etag = format!("\"{:016x}\"", rendered.hash);
    let last_modified = httpdate::fmt_http_date(modified);
    let not_modified = match headers.get(header::IF_NONE_MATCH) {
        // If-None-Match wins over If-Modified-Since (RFC 9110 13.2.2).
        Some(value) => value.to_str().is_ok_and(|v| {
            v.split(',')
                .map(|t| t.trim().trim_start_matches("W/"))
                .any(|t| t == "*" || t == etag)
        }),
        None => headers
            .get(header::IF_MODIFIED_SINCE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| httpdate::parse_http_date(v).ok())
            .is_some_and(|since| whole_seconds(modified) <= whole_seconds(since)),
    };
    let mut response = if not_modified {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let body = axum::body::Body::from(rendered.text.to_string());
        ([(header::CONTENT_TYPE, content_type)], body).into_response()
    };
    let h = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    if let Ok(v) = HeaderValue::from_str(&last_modified) {
        h.insert(header::LAST_MODIFIED, v);
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    response
}

fn whole_seconds(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// What an SSE stream still has to send.
struct Stream {
    table: String,
    replay: VecDeque<Arc<SseItem>>,
    live: broadcast::Receiver<Arc<SseItem>>,
    stop: watch::Receiver<bool>,
}

/// `GET /tables/<id>/events`: the table's events as server-sent events, each `id:` the event id
/// and `data:` its JSON. A client sending `Last-Event-ID` gets the backlog after that event;
/// without it, or with an id no longer in the backlog, it gets the whole backlog first. A client
/// too slow for the live queue is disconnected and resumes with its last id.
async fn table_events(
    State(h): State<BroadcastHandle>,
    Path(table): Path<String>,
    headers: HeaderMap,
) -> Response {
    let last_id = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let start = {
        let feed = h.feed();
        let backlog = feed.backlog.get(&table);
        if backlog.is_none() && feed.round.game(&table).is_none() {
            return (StatusCode::NOT_FOUND, "no such table\n").into_response();
        }
        let replay: VecDeque<_> = match backlog {
            Some(items) => {
                let after = last_id
                    .as_deref()
                    .and_then(|id| items.iter().position(|i| i.id == id))
                    .map_or(0, |p| p + 1);
                items.iter().skip(after).cloned().collect()
            }
            None => VecDeque::new(),
        };
        // Subscribed under the lock: nothing published in between is lost or sent twice.
        Stream {
            table,
            replay,
            live: h.shared.live.subscribe(),
            stop: h.shared.shutdown.subscribe(),
        }
    };
    let stream = futures_util::stream::unfold(start, |mut s| async move {
        if let Some(item) = s.replay.pop_front() {
            return Some((Ok::<_, Infallible>(sse_event(&item)), s));
        }
        loop {
            if *s.stop.borrow() {
                return None;
            }
            tokio::select! {
                changed = s.stop.changed() => {
                    if changed.is_err() || *s.stop.borrow() {
                        return None;
                    }
                }
                received = s.live.recv() => match received {
                    Ok(item) if item.table == s.table => {
                        return Some((Ok(sse_event(&item)), s));
                    }
                    Ok(_) => {}
                    // Lagged or closed: end the stream; the client resumes by Last-Event-ID.
                    Err(_) => return None,
                },
            }
        }
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

fn sse_event(item: &SseItem) -> SseEvent {
    SseEvent::default()
        .id(item.id.as_str())
        .data(item.json.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_ids_do_not_break_the_event_stream() {
        let handle = BroadcastHandle::new(&BroadcastConfig::default());
        let event = Event {
            id: "t\r\n1\0/1/1".into(),
            table: "t1".into(),
            ts: 0,
            board: None,
            body: crate::rules::EventBody::Status {
                state: "error".into(),
                detail: "two\r\nlines".into(),
            },
        };
        assert!(!handle.publish(&event).unwrap());
        let feed = handle.feed();
        let item = &feed.backlog["t1"][0];
        assert_eq!(item.id, "t  1 /1/1");
        assert!(!item.json.contains(['\r', '\n']));
        // Building the SSE message would panic on a raw line break or NUL.
        let _ = sse_event(item);
    }

    #[test]
    fn backlog_is_bounded_per_table() {
        let config = BroadcastConfig {
            backlog: 3,
            ..BroadcastConfig::default()
        };
        let handle = BroadcastHandle::new(&config);
        let mut referee =
            crate::rules::Referee::new("t1", 1, crate::rules::RuleSet::fics(), None).unwrap();
        for san in ["e4", "e5", "Nf3", "Nc6", "Bb5"] {
            for e in referee.apply_move_with_clock(BoardId::A, san, None, None) {
                assert!(handle.publish(&e).unwrap());
            }
        }
        let feed = handle.feed();
        let ids: Vec<_> = feed.backlog["t1"].iter().map(|i| i.id.as_str()).collect();
        assert_eq!(ids, ["t1/1/3", "t1/1/4", "t1/1/5"]);
        assert_eq!(feed.round.game("t1").unwrap().game().moves.len(), 5);
    }
}
