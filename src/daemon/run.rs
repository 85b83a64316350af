//! The daemon's event loop: start the broker (if none is configured), the publisher, the
//! broadcast server, the tables, the move source and the frame source; route inputs; shut down
//! cleanly.

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};

use crate::broadcast::{BroadcastHandle, BroadcastServer};
use crate::engine::BoardId;
use crate::publish::{
    Board, ClockInput, EmbeddedBroker, Inbound, InboundMessage, MqttConfig, OutboxConfig,
    Publisher, PublisherStats,
};

use super::DaemonError;
use super::config::{DaemonConfig, ReplayConfig, SourceConfig, TableSpec};
use super::source::{self, MoveSource, SourceContext, SourceMessage};
use super::table::{Outcome, TableInput, TableRuntime, color_of};
use super::vision::{self, TableWatch, WatchMessage, WatchOutput, WatchSetup};

/// Where a running daemon can be reached (sent once everything has started).
#[derive(Debug, Clone)]
pub struct Ready {
    /// The broker port the publisher connects to (the embedded broker's when none is configured).
    pub broker_port: u16,
    /// The broadcast server's address (`/health` and the feed), if configured.
    pub http: Option<SocketAddr>,
}

/// One table at the end of a run.
#[derive(Debug, Clone)]
pub struct TableSummary {
    pub id: String,
    pub game: u32,
    pub fen: String,
    pub result: Option<Value>,
    pub last_event_id: Option<String>,
    /// The evidence directory of the last game, finished at shutdown.
    pub evidence: Option<PathBuf>,
}

/// What a run did.
#[derive(Debug, Clone)]
pub struct DaemonSummary {
    /// Events this process published (recovered repeats included).
    pub events: u64,
    /// Inputs rejected by the parser (each got an `error` event).
    pub rejected: u64,
    pub frames: u64,
    pub tables: Vec<TableSummary>,
    pub publisher: PublisherStats,
    /// Median and 99th percentile of outbox-append → PUBACK over this run's messages.
    pub ack_p50: Option<Duration>,
    pub ack_p99: Option<Duration>,
    /// Wall time from start to the end of the shutdown.
    pub elapsed: Duration,
}

fn to_board(b: Board) -> BoardId {
    match b {
        Board::A => BoardId::A,
        Board::B => BoardId::B,
    }
}

struct Daemon {
    tables: Vec<TableRuntime>,
    publisher: Publisher,
    broadcast: Option<BroadcastHandle>,
    evidence: crate::evidence::EvidenceConfig,
    fen_tx: watch::Sender<String>,
    events: u64,
    rejected: u64,
    frames: u64,
    /// Per table: its camera watch, if the table has a calibration and there is a frame source.
    watches: Vec<Option<TableWatch>>,
    /// A folder replay: presses reach the tracker at their own `ts` (the recording's timeline);
    /// live sources use the arrival time on the daemon's clock, as their frames do.
    press_at_message_ts: bool,
    clock_start: Instant,
    clock_offset_ms: u64,
}

impl Daemon {
    /// Journals `input`, applies it and delivers what it caused.
    fn apply(&mut self, idx: usize, input: TableInput, replay: bool) -> Result<(), DaemonError> {
        let table = &mut self.tables[idx];
        if !table.accepts(&input) {
            log::info!("{}: ignoring a redelivered clock press", table.id());
            return Ok(());
        }
        table.journal(&input, replay)?;
        let outcome = table.process(&input);
        let restart = outcome.new_game
            || outcome.events.iter().any(|e| {
                matches!(&e.body, crate::rules::EventBody::Status { state, .. }
                    if state == "position_corrected")
            });
        self.deliver(idx, outcome, true)?;
        if let TableInput::Press {
            board, side, ts, ..
        } = &input
            && let Some(watch) = &self.watches[idx]
        {
            let ts = if self.press_at_message_ts {
                *ts
            } else {
                self.clock_start.elapsed().as_millis() as u64 + self.clock_offset_ms
            };
            watch.send(WatchMessage::Press {
                board: *board,
                side: *side,
                ts,
            });
        }
        if restart && let Some(watch) = &self.watches[idx] {
            let table = &self.tables[idx];
            watch.send(WatchMessage::Restart {
                game: table.game(),
                fen: table.fen(),
                rules: Box::new(table.rules().clone()),
            });
        }
        Ok(())
    }

    /// Sends events to the outbox, the evidence log and the feed, then clock commands and the
    /// retained state.
    fn deliver(&mut self, idx: usize, outcome: Outcome, record: bool) -> Result<(), DaemonError> {
        let table = &mut self.tables[idx];
        if outcome.new_game {
            table.finish_evidence()?;
            table.open_evidence(&self.evidence)?;
        }
        for event in &outcome.events {
            let value = serde_json::to_value(event)
                .map_err(|e| DaemonError::Table(format!("event as JSON: {e}")))?;
            self.publisher.publish_event(&value)?;
            self.events += 1;
            if record && let Err(e) = table.record(&value) {
                log::error!("{}: evidence: {e}", table.id());
            }
            if let Some(b) = &self.broadcast
                && let Err(e) = b.publish(event)
            {
                log::debug!("{}: broadcast: {e}", table.id());
            }
        }
        for command in &outcome.clock_commands {
            self.publisher.clock_command(command)?;
        }
        if !outcome.events.is_empty() {
            self.publisher.publish_state(table.id(), &table.state())?;
            // The live feed, retained for subscribers that join late (issue 8).
            if let Some(feed) = self
                .broadcast
                .as_ref()
                .and_then(|b| b.retained_payloads(table.id().as_str()))
            {
                for (kind, payload) in feed {
                    self.publisher.publish_feed(table.id(), &kind, payload)?;
                }
            }
        }
        if idx == 0 {
            self.fen_tx.send_replace(table.fen());
        }
        Ok(())
    }

    fn inbound(&mut self, message: InboundMessage) -> Result<(), DaemonError> {
        let input = match message {
            InboundMessage::Rejected { topic, error } => {
                self.rejected += 1;
                log::warn!("rejected input on {topic}: {error}");
                return Ok(());
            }
            InboundMessage::Input(input) => input,
        };
        let Some(idx) = self.tables.iter().position(|t| t.id() == input.table()) else {
            log::warn!(
                "input for table {} which this daemon does not serve",
                input.table()
            );
            return Ok(());
        };
        let table_input = match TableInput::from_inbound(&input) {
            Some(t) => t,
            None => {
                if let Inbound::Clock {
                    board,
                    input: ClockInput::Time(t),
                    ..
                } = input
                {
                    self.tables[idx].clock_time(
                        to_board(board),
                        t.white_ms,
                        t.black_ms,
                        t.running.map(color_of),
                        t.ts,
                    );
                }
                return Ok(());
            }
        };
        self.apply(idx, table_input, false)
    }
}

/// Feeds a move source's inputs to table `idx` in (scaled) real time; `speed` 0 = at once.
async fn pace(
    mut source: Box<dyn MoveSource>,
    speed: f64,
    resume_ts: Option<u64>,
    idx: usize,
    tx: mpsc::Sender<(usize, TableInput)>,
) {
    let base = tokio::time::Instant::now();
    let offset = resume_ts.unwrap_or(0);
    while let Some(item) = source.next_input() {
        if speed > 0.0
            && let Some(at) = item.at_ms
        {
            let due = Duration::from_secs_f64(at.saturating_sub(offset) as f64 / 1000.0 / speed);
            tokio::time::sleep_until(base + due).await;
        }
        if tx.send((idx, item.input)).await.is_err() {
            return;
        }
    }
}

fn table_index(tables: &[TableSpec], id: Option<&str>) -> usize {
    id.and_then(|id| tables.iter().position(|t| t.id == id))
        .unwrap_or(0)
}

/// Runs the daemon until `shutdown` completes (SIGINT/SIGTERM in the CLI) or, with
/// `exit_when_done`, until the move source is exhausted and every message is acknowledged.
///
/// Must run inside a multi-threaded tokio runtime. `ready` receives the broker port and the
/// HTTP address once everything has started.
pub async fn run_daemon(
    mut config: DaemonConfig,
    shutdown: impl Future<Output = ()>,
    ready: Option<oneshot::Sender<Ready>>,
) -> Result<DaemonSummary, DaemonError> {
    let started = Instant::now();
    let broker = if config.mqtt.needs_embedded_broker() {
        let b = EmbeddedBroker::start(config.mqtt.port)?;
        config.mqtt.port = b.port();
        Some(b)
    } else {
        None
    };
    if config.mqtt.tables.is_empty() {
        config.mqtt.tables = config.tables.iter().map(|t| t.id.clone()).collect();
    }
    let broker_port = config.mqtt.port;
    let (publisher, mut inbound) = Publisher::start(config.mqtt.clone())?;

    let (server, broadcast) = match &config.broadcast {
        Some(b) => {
            let server = BroadcastServer::bind(b).await?;
            let handle = server.handle();
            (Some(server), Some(handle))
        }
        None => (None, None),
    };

    let frame_source = matches!(
        config.source,
        SourceConfig::V4l2(_) | SourceConfig::Folder(_) | SourceConfig::Sim(_)
    );
    let mut tables = Vec::new();
    let mut recovered = Vec::new();
    let mut setups = Vec::new();
    for (idx, spec) in config.tables.iter().enumerate() {
        let setup = match (&spec.calibration, frame_source) {
            (Some(path), true) => Some(WatchSetup::load(idx, &spec.id, path, &config.vision)?),
            _ => None,
        };
        let (mut table, history, last) =
            TableRuntime::open(spec, &config.state_dir, setup.is_some())?;
        if let (Some(path), Some(_)) = (&spec.calibration, &setup) {
            let text = std::fs::read_to_string(path).map_err(|e| DaemonError::io(path, e))?;
            table.set_camera(text, vision::model_sha256(&config.vision));
        }
        setups.push(setup);
        if let Some(b) = &broadcast {
            for event in &history {
                let _ = b.publish(event);
            }
        }
        if !history.is_empty() {
            log::info!(
                "{}: resumed game {} from the journal ({} events)",
                spec.id,
                table.game(),
                history.len()
            );
        }
        table.open_evidence(&config.evidence)?;
        tables.push(table);
        recovered.push(last);
    }
    let (fen_tx, fen_rx) = watch::channel(tables[0].fen());
    // The camera chain of watched tables, each tracking from its journaled position.
    let (watch_tx, mut watch_rx) = mpsc::unbounded_channel::<WatchOutput>();
    let mut watches = Vec::new();
    for (setup, table) in setups.iter().zip(&tables) {
        watches.push(match setup {
            Some(s) => Some(TableWatch::start(
                s.clone(),
                table.game(),
                &table.fen(),
                table.rules().clone(),
                watch_tx.clone(),
            )?),
            None => None,
        });
    }
    drop(watch_tx);
    let watched = watches.iter().flatten().count();
    let clock_offset_ms = tables.iter().map(TableRuntime::last_ts).max().unwrap_or(0);
    let mut daemon = Daemon {
        tables,
        publisher,
        broadcast,
        evidence: config.evidence.clone(),
        fen_tx,
        events: 0,
        rejected: 0,
        frames: 0,
        watches,
        press_at_message_ts: matches!(config.source, SourceConfig::Folder(_)),
        clock_start: started,
        clock_offset_ms,
    };
    // The last journaled input's events may not have reached the outbox before a crash:
    // publish them again (receivers deduplicate by id), and the current state.
    for (idx, last) in recovered.into_iter().enumerate() {
        let mut last = last;
        last.new_game = false;
        daemon.deliver(idx, last, false)?;
        let state = daemon.tables[idx].state();
        daemon
            .publisher
            .publish_state(daemon.tables[idx].id(), &state)?;
    }

    // The move source, resumed after what the journal already holds.
    let (input_tx, mut input_rx) = mpsc::channel::<(usize, TableInput)>(64);
    let mut pacers = Vec::new();
    if let Some(replay) = config.replay().cloned() {
        // `table = "*"`: every table replays the game (load tests); each resumes on its own.
        let targets: Vec<usize> = match replay.table.as_deref() {
            Some("*") => (0..config.tables.len()).collect(),
            other => vec![table_index(&config.tables, other)],
        };
        for idx in targets {
            let mut source = source::open_replay(&replay)?;
            let (done, last_ts) = daemon.tables[idx].replay_progress();
            source.skip(done);
            pacers.push(tokio::spawn(pace(
                source,
                replay.speed,
                last_ts,
                idx,
                input_tx.clone(),
            )));
        }
    }
    let mut replaying = !pacers.is_empty();
    drop(input_tx);

    // The frame source, on its own thread.
    let stop = Arc::new(AtomicBool::new(false));
    let (frame_tx, mut frame_rx) = mpsc::channel::<SourceMessage>(8);
    let ctx = SourceContext {
        tx: frame_tx,
        stop: stop.clone(),
        start: started,
        ts_offset_ms: clock_offset_ms,
        fen: fen_rx,
    };
    let capture = match config.source.clone() {
        SourceConfig::V4l2(c) => Some(std::thread::spawn(move || source::run_v4l2(&c, &ctx))),
        SourceConfig::Folder(c) => Some(std::thread::spawn(move || source::run_folder(&c, &ctx))),
        SourceConfig::Sim(c) => Some(std::thread::spawn(move || source::run_sim(&c, &ctx))),
        SourceConfig::None | SourceConfig::Replay(_) => {
            drop(ctx);
            None
        }
    };

    if let Some(tx) = ready {
        let _ = tx.send(Ready {
            broker_port,
            http: server.as_ref().map(BroadcastServer::local_addr),
        });
    }

    tokio::pin!(shutdown);
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let mut frames_open = capture.is_some();
    let mut drained = 0usize;
    let mut watching = watched > 0;
    // Done (with `exit_when_done`): the move source is exhausted and a replayed folder has ended
    // and been read to its last frame by every watched table.
    let folder = config.replays_folder();
    let outcome: Result<(), DaemonError> = loop {
        let step = tokio::select! {
            _ = &mut shutdown => break Ok(()),
            message = inbound.recv() => match message {
                Some(m) => daemon.inbound(m),
                None => break Err(DaemonError::Mqtt("the publisher stopped".into())),
            },
            next = input_rx.recv(), if replaying => match next {
                Some((idx, input)) => daemon.apply(idx, input, true),
                None => {
                    replaying = false;
                    log::info!("move source exhausted");
                    Ok(())
                }
            },
            message = frame_rx.recv(), if frames_open => match message {
                Some(SourceMessage::Frame(frame)) => {
                    daemon.frames += 1;
                    for w in daemon.watches.iter().flatten() {
                        w.send(WatchMessage::Frame(frame.clone()));
                    }
                    let mut result = Ok(());
                    for t in &mut daemon.tables {
                        result = result.and(t.push_frame(frame.clone()));
                    }
                    result
                }
                Some(SourceMessage::Notice { state, detail }) => {
                    let mut result = Ok(());
                    for idx in 0..daemon.tables.len() {
                        let input = TableInput::Notice { state: state.clone(), detail: detail.clone() };
                        result = result.and(daemon.apply(idx, input, false));
                    }
                    result
                }
                Some(SourceMessage::Ended) | None => {
                    frames_open = false;
                    for w in daemon.watches.iter().flatten() {
                        w.send(WatchMessage::Flush);
                    }
                    Ok(())
                }
            },
            output = watch_rx.recv(), if watching => match output {
                Some(WatchOutput::Inputs(idx, inputs)) => {
                    let mut result = Ok(());
                    for input in inputs {
                        result = result.and_then(|_| daemon.apply(idx, input, false));
                    }
                    result
                }
                Some(WatchOutput::Drained(_)) => {
                    drained += 1;
                    Ok(())
                }
                None => {
                    watching = false;
                    Ok(())
                }
            },
            _ = tick.tick(), if config.exit_when_done && !replaying
                && (!folder || (!frames_open && drained >= watched)) => {
                if daemon.publisher.stats().pending == 0 {
                    break Ok(());
                }
                Ok(())
            }
        };
        if let Err(e) = step {
            break Err(e);
        }
    };

    // Shutdown: stop inputs, finish evidence, drain the outbox, retained offline status.
    stop.store(true, Ordering::Relaxed);
    // Watch threads end with their channels: they read what is queued, not what they hold back.
    daemon.watches.clear();
    for p in pacers {
        p.abort();
    }
    let mut summaries = Vec::new();
    for t in &mut daemon.tables {
        let evidence = match t.finish_evidence() {
            Ok(dir) => dir,
            Err(e) => {
                log::error!("{}: cannot finish the evidence log: {e}", t.id());
                None
            }
        };
        let state = t.state();
        summaries.push(TableSummary {
            id: t.id().to_string(),
            game: t.game(),
            fen: t.fen(),
            result: state.get("result").filter(|r| !r.is_null()).cloned(),
            last_event_id: state["last_event_id"].as_str().map(str::to_string),
            evidence,
        });
    }
    let stats = daemon.publisher.stats();
    let mut latencies = daemon.publisher.take_ack_latencies();
    latencies.sort();
    let quantile = |q: f64| {
        latencies
            .get(((latencies.len() as f64 * q).ceil() as usize).saturating_sub(1))
            .copied()
    };
    let (ack_p50, ack_p99) = (quantile(0.5), quantile(0.99));
    daemon.publisher.shutdown(Duration::from_secs(5)).await;
    if let Some(server) = server {
        if let Some(b) = &daemon.broadcast {
            b.shutdown();
        }
        let _ = server.shutdown().await;
    }
    if let Some(handle) = capture {
        let _ = tokio::task::spawn_blocking(move || handle.join()).await;
    }
    if let Some(b) = broker {
        b.stop();
    }
    outcome?;
    Ok(DaemonSummary {
        events: daemon.events,
        rejected: daemon.rejected,
        frames: daemon.frames,
        tables: summaries,
        publisher: stats,
        ack_p50,
        ack_p99,
        elapsed: started.elapsed(),
    })
}

/// One table replaying a recorded game: replays game `game` of `bpgn` at `speed` on one table (`table`)
/// under `rules`, through an embedded broker, with state and evidence under `out_dir`, and
/// returns when every event is acknowledged. `ready` gets the broker port before the first move.
pub async fn run_replay_demo(
    bpgn: &Path,
    game: usize,
    rules: &str,
    speed: f64,
    table: &str,
    out_dir: &Path,
    ready: Option<oneshot::Sender<Ready>>,
) -> Result<DaemonSummary, DaemonError> {
    let config = DaemonConfig {
        tables: vec![TableSpec {
            id: table.to_string(),
            rules: rules.to_string(),
            boards: ["A".into(), "B".into()],
            start: None,
            calibration: None,
        }],
        source: SourceConfig::Replay(ReplayConfig {
            bpgn: Some(bpgn.to_path_buf()),
            script: None,
            game,
            speed,
            table: None,
        }),
        moves: None,
        mqtt: MqttConfig {
            port: 0,
            client_id: format!("tandem-demo-{table}"),
            outbox: OutboxConfig {
                dir: out_dir.join("outbox"),
                ..OutboxConfig::default()
            },
            ..MqttConfig::default()
        },
        evidence: crate::evidence::EvidenceConfig {
            dir: out_dir.join("evidence"),
            ..Default::default()
        },
        broadcast: None,
        state_dir: out_dir.join("state"),
        exit_when_done: true,
        vision: Default::default(),
    };
    run_daemon(config, std::future::pending(), ready).await
}

#[cfg(test)]
mod tests {
    use super::*;

    const GAME: &str = "[Event \"t\"]\n[TimeControl \"180+0\"]\n\n1A. e4{179.5} 1a. e5{178.0} 1B. d4{179.0} 2A. Qh5{177.0} 1b. Nc6{178.5} 2a. Nc6{176.0} 3A. Bc4{176.0} 3a. Nf6{175.0} 4A. Qxf7#{175.5} 1-0\n";

    #[test]
    fn replay_demo_publishes_every_event_through_the_embedded_broker() {
        let dir = tempfile::tempdir().unwrap();
        let game = dir.path().join("g.bpgn");
        std::fs::write(&game, GAME).unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let summary = rt
            .block_on(run_replay_demo(
                &game,
                1,
                "fics",
                0.0,
                "demo",
                dir.path(),
                None,
            ))
            .unwrap();
        let table = &summary.tables[0];
        assert_eq!(table.result.as_ref().unwrap()["result"], "1-0");
        assert_eq!(table.result.as_ref().unwrap()["reason"], "checkmate");
        // 9 moves and the result, all acknowledged by the broker.
        assert_eq!(summary.events, 10);
        assert_eq!(table.last_event_id.as_deref(), Some("demo/1/10"));
        assert_eq!(summary.publisher.pending, 0);
        let report = crate::evidence::verify(table.evidence.as_ref().unwrap()).unwrap();
        assert!(report.problems.is_empty(), "{:?}", report.problems);

        // A second run over the same state directory resumes: nothing new happens.
        let again = rt
            .block_on(run_replay_demo(
                &game,
                1,
                "fics",
                0.0,
                "demo",
                dir.path(),
                None,
            ))
            .unwrap();
        assert_eq!(again.tables[0].last_event_id.as_deref(), Some("demo/1/10"));
        // Only the last journaled input's events are published again (here: the mate and result).
        assert_eq!(again.events, 2);
    }
}
