//! `tandem demo`: the README's main command. The whole chain on embedded defaults: a recorded
//! (simulated) table — frames and its clock — is calibrated from its first frame, then replayed in
//! real time into the daemon: frames → vision (ONNX square and pocket models) → tracker → referee,
//! clock presses over MQTT from a simulated clock bridge; every event goes through the persistent
//! outbox to an embedded MQTT broker, where a subscriber prints it as it arrives, and into a
//! hash-chained evidence log, which is verified at the end. The summary compares the moves seen
//! with the recorded game.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use rumqttc::{AsyncClient, Event as MqttEvent, Incoming, MqttOptions, QoS};
use serde_json::Value;
use tandem_monitor::daemon::{
    self, ClockSimOptions, DaemonConfig, FolderConfig, SourceConfig, TableSpec, run_daemon,
};
use tandem_monitor::engine::{BoardId, bpgn};
use tandem_monitor::evidence::{self, EvidenceConfig};
use tandem_monitor::publish::{EmbeddedBroker, MqttConfig, OutboxConfig, TableId};
use tandem_monitor::runtime;
use tandem_monitor::tracker::eval::lcs;
use tandem_monitor::vision::{Calibration, CalibrationConfig};
use tandem_monitor::watch::SimGameDir;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Directory holding the committed fixtures (defaults to the checkout's `fixtures/`).
    #[arg(long)]
    fixtures: Option<PathBuf>,
    /// Where the calibration, the outbox and the evidence go (a new run directory inside).
    #[arg(long, default_value = "out/demo")]
    out: PathBuf,
    /// Replay speed of the frames and the clock: 1 is real time.
    #[arg(long, default_value_t = 1.0)]
    speed: f64,
    /// Print the events as JSON lines instead of one readable line each.
    #[arg(long)]
    json: bool,
}

const TABLE: &str = "demo";

fn fixtures_dir(arg: Option<PathBuf>) -> PathBuf {
    arg.unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures"))
}

pub fn run(args: Args) -> anyhow::Result<()> {
    if !(args.speed.is_finite() && args.speed > 0.0) {
        bail!("--speed must be a positive number");
    }
    let fixtures = fixtures_dir(args.fixtures.clone());
    // Not locked for the whole run: the subscriber task prints too.
    let mut out = std::io::stdout();

    let lib = runtime::find_onnxruntime()?;
    writeln!(out, "vision : ONNX Runtime {}", lib.display())?;

    // The recording: frames, the clock bridge's presses, and what was really played.
    let game_dir = fixtures.join("sim-game");
    let recording = SimGameDir::load(&game_dir)?;
    let info = &recording.info;
    writeln!(
        out,
        "table  : {} ({} frames, {}x{} at {} fps, {} moves of {}), replayed at {}x",
        game_dir.display(),
        recording.frames.len(),
        info.width,
        info.height,
        info.fps,
        info.moves,
        info.source,
        args.speed
    )?;
    let presses = daemon::load_clock_presses(&game_dir.join("clock.jsonl"))?;

    // Calibration from the first frame, as at a venue before the round.
    let run_dir = new_run_dir(&args.out)?;
    let first = recording
        .frames
        .first()
        .context("the recording has no frames")?;
    let frame = tandem_monitor::vision::load_frame(&first.path)
        .with_context(|| format!("reading {}", first.path.display()))?;
    let cal = Calibration::detect(&frame, TABLE, &CalibrationConfig::default())
        .context("calibrating from the first frame")?;
    let cal_path = run_dir.join("calibration").join(format!("{TABLE}.toml"));
    cal.save(&cal_path)?;
    let overlay = run_dir.join("calibration").join(format!("{TABLE}.png"));
    tandem_monitor::vision::overlay::draw(&frame, &cal)
        .save(&overlay)
        .with_context(|| format!("writing {}", overlay.display()))?;
    writeln!(
        out,
        "camera : both boards found in frame 0 ({}, quality {:.2}) -> {} (check {})",
        cal.method,
        cal.quality,
        cal_path.display(),
        overlay.display()
    )?;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let summary = runtime.block_on(watch_and_publish(
        &recording, &presses, &cal_path, &run_dir, &args,
    ))?;
    writeln!(
        out,
        "mqtt   : {} events published (QoS 1, acknowledged; p99 outbox-to-PUBACK {}), {} received by the subscriber; {} of {} clock presses acknowledged",
        summary.published,
        summary
            .ack_p99
            .map(|d| format!("{:.1} ms", d.as_secs_f64() * 1000.0))
            .unwrap_or_else(|| "n/a".into()),
        summary.events.len(),
        summary.presses_acked,
        presses.len()
    )?;

    // What the camera saw against what was played.
    let games = bpgn::parse_bpgn(
        &std::fs::read(fixtures.join("games/fics-1921708.bpgn"))
            .context("reading the recorded game")?,
    )?;
    let played = games.first().context("the recorded game file is empty")?;
    let mut seen = 0;
    let mut per_board = Vec::new();
    for board in [BoardId::A, BoardId::B] {
        let truth: Vec<String> = played
            .moves
            .iter()
            .take(info.moves)
            .filter(|m| m.board == board)
            .map(|m| m.san.clone())
            .collect();
        let got = moves_on(&summary.events, board);
        let right = lcs(&truth, &got);
        seen += right;
        per_board.push(format!(
            "board {board:?} {right}/{} ({} published)",
            truth.len(),
            got.len()
        ));
    }
    let alerts: Vec<String> = summary
        .events
        .values()
        .filter(|e| {
            [
                "desync",
                "illegal_move",
                "hidden_pocket",
                "handover_missing",
            ]
            .contains(&e["type"].as_str().unwrap_or_default())
        })
        .map(|e| e["type"].as_str().unwrap_or_default().to_string())
        .collect();
    writeln!(
        out,
        "moves  : {seen} of {} played moves seen in order ({}); {} alert(s){}",
        info.moves,
        per_board.join(", "),
        alerts.len(),
        if alerts.is_empty() {
            String::new()
        } else {
            format!(": {}", alerts.join(", "))
        }
    )?;

    let report = evidence::verify(&summary.evidence_dir)?;
    if !report.problems.is_empty() {
        bail!(
            "evidence in {} does not verify: {} problems",
            summary.evidence_dir.display(),
            report.problems.len()
        );
    }
    writeln!(
        out,
        "evidence: {} ({} records, verified)",
        summary.evidence_dir.display(),
        report.records
    )?;
    if summary.events.len() < summary.published {
        bail!(
            "only {} of {} events reached the subscriber",
            summary.events.len(),
            summary.published
        );
    }
    Ok(())
}

/// The SAN of the published moves of `board`, in event order.
fn moves_on(events: &BTreeMap<u64, Value>, board: BoardId) -> Vec<String> {
    let name = format!("{board:?}");
    events
        .values()
        .filter(|e| e["type"] == "move" && e["board"] == name.as_str())
        .filter_map(|e| e["san"].as_str().map(str::to_string))
        .collect()
}

struct Summary {
    published: usize,
    /// Received events by their number in the game (`<table>/<game>/<n>`), deduplicated.
    events: BTreeMap<u64, Value>,
    presses_acked: usize,
    evidence_dir: PathBuf,
    ack_p99: Option<Duration>,
}

fn new_run_dir(root: &Path) -> anyhow::Result<PathBuf> {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let dir = root.join(format!("run-{stamp}"));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(dir)
}

async fn watch_and_publish(
    recording: &SimGameDir,
    presses: &[daemon::ClockPressAt],
    calibration: &Path,
    run_dir: &Path,
    args: &Args,
) -> anyhow::Result<Summary> {
    // The broker first, and a subscriber on it, so that no event goes by unseen; then the daemon.
    let broker = EmbeddedBroker::start(0).context("embedded MQTT broker")?;
    let port = broker.port();
    let received: Arc<Mutex<BTreeMap<u64, Value>>> = Arc::default();
    let subscriber = subscribe(port, received.clone(), args.json).await?;

    let config = DaemonConfig {
        tables: vec![TableSpec {
            id: TABLE.into(),
            rules: "fics".into(),
            boards: ["A".into(), "B".into()],
            start: None,
            calibration: Some(calibration.to_path_buf()),
        }],
        source: SourceConfig::Folder(FolderConfig {
            dir: recording.dir.join("frames"),
            realtime: true,
            speed: args.speed,
            fps: recording.info.fps,
        }),
        moves: None,
        mqtt: MqttConfig {
            host: Some("127.0.0.1".into()),
            port,
            client_id: "tandem-demo".into(),
            tables: vec![TABLE.into()],
            outbox: OutboxConfig {
                dir: run_dir.join("outbox"),
                ..OutboxConfig::default()
            },
            ..MqttConfig::default()
        },
        evidence: EvidenceConfig {
            dir: run_dir.join("evidence"),
            ..EvidenceConfig::default()
        },
        broadcast: None,
        state_dir: run_dir.join("state"),
        exit_when_done: true,
        vision: Default::default(),
    };
    // The clock bridge starts with the frames: both follow the recording's timeline.
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    let daemon = tokio::spawn(run_daemon(config, std::future::pending(), Some(ready_tx)));
    let clock = ClockSimOptions {
        host: "127.0.0.1".into(),
        port,
        table: TableId::new(TABLE)?,
        speed: args.speed,
        client_id: "tandem-demo-clock".into(),
        drain_timeout: Duration::from_secs(5),
    };
    let presses_acked = match ready_rx.await {
        Ok(_) => {
            daemon::run_clock_sim(presses, &clock)
                .await
                .context("the simulated clock")?
                .acked
        }
        Err(_) => 0,
    };
    let summary = daemon
        .await
        .context("the daemon task")?
        .context("the daemon")?;

    let published = summary.events as usize;
    let deadline = Instant::now() + Duration::from_secs(5);
    while received.lock().map(|r| r.len()).unwrap_or(0) < published && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    subscriber.abort();
    broker.stop();
    let table = summary
        .tables
        .first()
        .context("the daemon reported no table")?;
    let events = received.lock().map(|r| r.clone()).unwrap_or_default();
    Ok(Summary {
        published,
        events,
        presses_acked,
        evidence_dir: table
            .evidence
            .clone()
            .context("the daemon kept no evidence")?,
        ack_p99: summary.ack_p99,
    })
}

/// A plain MQTT client on `tandem/v1/demo/event/#` that prints each event as it arrives.
async fn subscribe(
    port: u16,
    received: Arc<Mutex<BTreeMap<u64, Value>>>,
    json: bool,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let mut options = MqttOptions::new("tandem-demo-viewer", "127.0.0.1", port);
    options.set_keep_alive(Duration::from_secs(5));
    let (client, mut eventloop) = AsyncClient::new(options, 64);
    let filter = format!("tandem/v1/{TABLE}/event/#");
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    let mut ready_tx = Some(ready_tx);
    let task = tokio::spawn(async move {
        loop {
            match eventloop.poll().await {
                Ok(MqttEvent::Incoming(Incoming::ConnAck(_))) => {
                    let _ = client.try_subscribe(filter.clone(), QoS::AtLeastOnce);
                }
                Ok(MqttEvent::Incoming(Incoming::SubAck(_))) => {
                    if let Some(tx) = ready_tx.take() {
                        let _ = tx.send(());
                    }
                }
                Ok(MqttEvent::Incoming(Incoming::Publish(p))) => {
                    let Ok(value) = serde_json::from_slice::<Value>(&p.payload) else {
                        continue;
                    };
                    // Ids are `<table>/<game>/<n>`; receivers deduplicate by id: a
                    // redelivery is not printed twice.
                    let Some(n) = value["id"]
                        .as_str()
                        .and_then(|id| id.rsplit('/').next())
                        .and_then(|n| n.parse::<u64>().ok())
                    else {
                        continue;
                    };
                    let line = describe(&p.topic, &value, json);
                    let fresh = received
                        .lock()
                        .map(|mut r| r.insert(n, value).is_none())
                        .unwrap_or(false);
                    if fresh {
                        println!("{line}");
                    }
                }
                Ok(_) => {}
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    });
    tokio::time::timeout(Duration::from_secs(10), ready_rx)
        .await
        .context("the demo subscriber got no SUBACK within 10 s")?
        .context("the demo subscriber stopped")?;
    Ok(task)
}

fn describe(topic: &str, event: &Value, json: bool) -> String {
    if json {
        return event.to_string();
    }
    let board = event["board"].as_str().unwrap_or("-");
    let secs = event["ts"].as_u64().unwrap_or(0) as f64 / 1000.0;
    let what = match event["type"].as_str().unwrap_or("?") {
        "move" => format!(
            "{}{} {}{}",
            event["number"],
            if event["color"] == "white" {
                "."
            } else {
                "..."
            },
            event["san"].as_str().unwrap_or("?"),
            if event["reading"]["guess"] == true {
                " (uncertain reading)"
            } else {
                ""
            }
        ),
        "result" => format!(
            "result {} ({})",
            event["result"].as_str().unwrap_or("?"),
            event["text"].as_str().unwrap_or("")
        ),
        "status" => format!(
            "status {}: {}",
            event["state"].as_str().unwrap_or("?"),
            event["detail"].as_str().unwrap_or("")
        ),
        "desync" => format!(
            "desync {} ({} squares disagree)",
            event["state"].as_str().unwrap_or("?"),
            event["squares"].as_array().map_or(0, Vec::len)
        ),
        "clock" => format!("clock {}", event["color"].as_str().unwrap_or("?")),
        other => format!("{other} {event}"),
    };
    format!("{secs:7.1}s  {board}  {what:<28} [{topic}]")
}

pub fn doctor() -> anyhow::Result<()> {
    let lib = runtime::find_onnxruntime()?;
    runtime::onnx_environment()?;
    println!("onnxruntime: {}", lib.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guessed_move_is_shown_as_an_uncertain_reading() {
        let mv = |reading: Value| {
            serde_json::json!({"type": "move", "board": "A", "ts": 1200, "number": 1,
                "color": "white", "san": "e4", "reading": reading})
        };
        let topic = "tandem/v1/t1/event/move";
        let guessed = describe(
            topic,
            &mv(serde_json::json!({"guess": true, "lead": 0.4})),
            false,
        );
        assert!(guessed.contains("1. e4 (uncertain reading)"), "{guessed}");
        let sure = describe(topic, &mv(serde_json::json!({"guess": false})), false);
        assert!(
            sure.contains("1. e4") && !sure.contains("uncertain"),
            "{sure}"
        );
    }
}
