//! `tandem demo`: the README's main command. Runs what exists of the chain end to end on embedded
//! defaults: the daemon replays a recorded BPGN match in accelerated real time through the referee;
//! every event goes through the persistent outbox to an embedded MQTT broker, where a subscriber
//! prints it as it arrives, and into a hash-chained evidence log, which is verified at the end.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use rumqttc::{AsyncClient, Event as MqttEvent, Incoming, MqttOptions, QoS};
use serde_json::Value;
use tandem_monitor::daemon::{DaemonConfig, ReplayConfig, SourceConfig, TableSpec, run_daemon};
use tandem_monitor::engine::bpgn;
use tandem_monitor::evidence::{self, EvidenceConfig};
use tandem_monitor::publish::{EmbeddedBroker, MqttConfig, OutboxConfig};
use tandem_monitor::rules::RuleSet;
use tandem_monitor::runtime;
use tandem_monitor::vision::model::OnnxModel;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Directory holding the committed fixtures (defaults to the checkout's `fixtures/`).
    #[arg(long)]
    fixtures: Option<PathBuf>,
    /// Where the outbox and the evidence go (a new run directory is made inside).
    #[arg(long, default_value = "out/demo")]
    out: PathBuf,
    /// Replay speed: 1 is real time, 0 is as fast as possible.
    #[arg(long, default_value_t = 40.0)]
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
    let fixtures = fixtures_dir(args.fixtures.clone());
    // Not locked for the whole run: the subscriber task prints too.
    let mut out = std::io::stdout();

    // Vision runtime: the ONNX Runtime library and a model run through `ort`.
    let lib = runtime::find_onnxruntime()?;
    let model_path = fixtures.join("tiny-linear.onnx");
    let mut model = OnnxModel::load(&model_path, 1).context("vision runtime self-test")?;
    model.run(&[1, 4], vec![1.0, 2.0, 3.0, 4.0])?;
    writeln!(
        out,
        "vision : ONNX Runtime {} (self-test model ran)",
        lib.display()
    )?;

    // The match: a full BPGN 1.2 record, refereed under the online rules it was played with.
    let game_path = fixtures.join("games/fics-1921708.bpgn");
    let bytes = std::fs::read(&game_path)
        .with_context(|| format!("cannot read {}", game_path.display()))?;
    let games = bpgn::parse_bpgn(&bytes).with_context(|| game_path.display().to_string())?;
    let game = games.first().context("the demo game file is empty")?;
    let rules = RuleSet::fics();
    writeln!(
        out,
        "match  : {} ({} moves), rules {}, replayed at {}x",
        game_path.display(),
        game.moves.len(),
        rules.name,
        args.speed
    )?;

    let run_dir = new_run_dir(&args.out)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let summary = runtime.block_on(publish_and_record(&game_path, &run_dir, &args, &rules))?;
    writeln!(
        out,
        "mqtt   : {} events published (QoS 1, acknowledged; p99 outbox-to-PUBACK {}), {} received by the subscriber",
        summary.published,
        summary
            .ack_p99
            .map(|d| format!("{:.1} ms", d.as_secs_f64() * 1000.0))
            .unwrap_or_else(|| "n/a".into()),
        summary.received
    )?;
    writeln!(
        out,
        "result : {}",
        summary.result.as_deref().unwrap_or("no result")
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
    if summary.received < summary.published {
        bail!(
            "only {} of {} events reached the subscriber",
            summary.received,
            summary.published
        );
    }
    Ok(())
}

struct Summary {
    published: usize,
    received: usize,
    result: Option<String>,
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

async fn publish_and_record(
    game_path: &Path,
    run_dir: &Path,
    args: &Args,
    rules: &RuleSet,
) -> anyhow::Result<Summary> {
    // The broker first, and a subscriber on it, so that no event goes by unseen; then the daemon.
    let broker = EmbeddedBroker::start(0).context("embedded MQTT broker")?;
    let port = broker.port();
    let received: Arc<Mutex<BTreeSet<String>>> = Arc::default();
    let subscriber = subscribe(port, received.clone(), args.json).await?;

    let config = DaemonConfig {
        tables: vec![TableSpec {
            id: TABLE.into(),
            rules: rules.name.clone(),
            boards: ["A".into(), "B".into()],
            start: None,
        }],
        source: SourceConfig::Replay(ReplayConfig {
            bpgn: Some(game_path.to_path_buf()),
            script: None,
            game: 1,
            speed: args.speed,
            table: None,
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
    };
    let summary = run_daemon(config, std::future::pending(), None)
        .await
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
    let result = table.result.as_ref().map(|r| {
        format!(
            "{} {}",
            r["result"].as_str().unwrap_or("?"),
            r["text"].as_str().unwrap_or("")
        )
    });
    Ok(Summary {
        published,
        received: received.lock().map(|r| r.len()).unwrap_or(0),
        result,
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
    received: Arc<Mutex<BTreeSet<String>>>,
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
                    let id = value["id"].as_str().unwrap_or_default().to_string();
                    // Receivers deduplicate by id: a redelivery is not printed twice.
                    let fresh = received.lock().map(|mut r| r.insert(id)).unwrap_or(false);
                    if fresh {
                        println!("{}", describe(&p.topic, &value, json));
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
            "{}{} {}",
            event["number"],
            if event["color"] == "white" {
                "."
            } else {
                "..."
            },
            event["san"].as_str().unwrap_or("?")
        ),
        "result" => format!(
            "result {} ({})",
            event["result"].as_str().unwrap_or("?"),
            event["text"].as_str().unwrap_or("")
        ),
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
