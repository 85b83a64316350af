//! End-to-end tests of `tandem run` against a real Mosquitto (started on a free port with a
//! temporary config; never 1883): a replayed game with `tandem clock-sim` presses survives a
//! broker restart and a `kill -9` of the daemon with every event delivered; arbiter commands
//! round trip; configuration errors are one clear line.
//!
//! Mosquitto tests print a message and return when `/usr/sbin/mosquitto` is absent.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rumqttc::{AsyncClient, Event, Incoming, MqttOptions, QoS};
use serde_json::{Value, json};
use tandem_monitor::daemon::{DaemonConfig, Ready, run_daemon};

mod common;
use common::mosquitto::{Mosquitto, signal};
const TANDEM: &str = env!("CARGO_BIN_EXE_tandem");
const GAME: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/games/fics-1921708.bpgn"
);

/// Every message on `filter`, from a persistent session that rides out broker restarts.
struct Collector {
    messages: Arc<Mutex<Vec<(String, Value, bool)>>>,
    client: AsyncClient,
    task: tokio::task::JoinHandle<()>,
}

impl Collector {
    async fn start(port: u16, client_id: &str, filter: &str, clean: bool) -> Self {
        let mut options = MqttOptions::new(client_id, "127.0.0.1", port);
        options
            .set_clean_session(clean)
            .set_keep_alive(Duration::from_secs(5))
            .set_max_packet_size(1 << 20, 1 << 20);
        let (client, mut eventloop) = AsyncClient::new(options, 100);
        let messages: Arc<Mutex<Vec<(String, Value, bool)>>> = Arc::default();
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
        let mut ready_tx = Some(ready_tx);
        let (sub, filter, store) = (client.clone(), filter.to_string(), messages.clone());
        let task = tokio::spawn(async move {
            loop {
                match eventloop.poll().await {
                    Ok(Event::Incoming(Incoming::ConnAck(_))) => {
                        let _ = sub.try_subscribe(filter.clone(), QoS::AtLeastOnce);
                    }
                    Ok(Event::Incoming(Incoming::SubAck(_))) => {
                        if let Some(tx) = ready_tx.take() {
                            let _ = tx.send(());
                        }
                    }
                    Ok(Event::Incoming(Incoming::Publish(p))) => {
                        let value = serde_json::from_slice(&p.payload).unwrap_or(Value::Null);
                        store
                            .lock()
                            .unwrap()
                            .push((p.topic.clone(), value, p.retain));
                    }
                    Ok(_) => {}
                    Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
        });
        tokio::time::timeout(Duration::from_secs(10), ready_rx)
            .await
            .expect("SUBACK within 10 s")
            .expect("collector alive");
        Self {
            messages,
            client,
            task,
        }
    }

    fn snapshot(&self) -> Vec<(String, Value, bool)> {
        self.messages.lock().unwrap().clone()
    }

    /// Waits until `pred` holds for the messages so far; panics with them after `timeout`.
    async fn wait_until(
        &self,
        timeout: Duration,
        what: &str,
        pred: impl Fn(&[(String, Value, bool)]) -> bool,
    ) {
        let deadline = Instant::now() + timeout;
        loop {
            if pred(&self.snapshot()) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; got {:?}",
                self.snapshot().iter().rev().take(5).collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn stop(self) {
        let _ = self.client.disconnect().await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        self.task.abort();
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn write_config(dir: &Path, port: u16, source: &str) -> PathBuf {
    let path = dir.join("daemon.toml");
    std::fs::write(
        &path,
        format!(
            "state_dir = \"state\"\n\
             [[tables]]\nid = \"t1\"\nrules = \"fics\"\n\
             {source}\n\
             [mqtt]\nhost = \"127.0.0.1\"\nport = {port}\nclient_id = \"tandem-e2e\"\nreconnect_max_ms = 300\n\
             [mqtt.outbox]\ndir = \"outbox\"\n\
             [evidence]\ndir = \"evidence\"\n\
             [broadcast]\nlisten = \"127.0.0.1:0\"\n"
        ),
    )
    .expect("write config");
    path
}

fn spawn_daemon(config: &Path) -> Child {
    Command::new(TANDEM)
        .args(["run", "--log", "warn", "--config"])
        .arg(config)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn tandem run")
}

fn is_event(topic: &str) -> bool {
    topic.starts_with("tandem/v1/t1/event/")
}

#[test]
fn replayed_game_survives_broker_restart_and_kill9() {
    let Some(mut broker) = Mosquitto::available().then(Mosquitto::start) else {
        return;
    };
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    // The game's clock timeline is 234 s long: 25x makes it about 9 s.
    let speed = "25";
    let config = write_config(
        dir.path(),
        broker.port,
        &format!("[source]\nkind = \"replay\"\nbpgn = \"{GAME}\"\nspeed = {speed}\n"),
    );
    let collector = rt.block_on(Collector::start(
        broker.port,
        "e2e-collector",
        "tandem/v1/#",
        false,
    ));

    let mut daemon = spawn_daemon(&config);
    let clock_sim = Command::new(TANDEM)
        .args([
            "clock-sim",
            GAME,
            "--speed",
            speed,
            "--table",
            "t1",
            "--broker",
        ])
        .arg(format!("127.0.0.1:{}", broker.port))
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn clock-sim");

    let events_so_far = |c: &Collector| c.snapshot().iter().filter(|m| is_event(&m.0)).count();
    rt.block_on(
        collector.wait_until(Duration::from_secs(20), "first events", |m| {
            m.iter().filter(|m| is_event(&m.0)).count() >= 10
        }),
    );
    broker.restart();
    let before_kill = events_so_far(&collector);
    rt.block_on(
        collector.wait_until(Duration::from_secs(20), "events after the restart", |m| {
            m.iter().filter(|m| is_event(&m.0)).count() >= before_kill + 20
        }),
    );
    daemon.kill().expect("kill -9 the daemon");
    let _ = daemon.wait();
    std::thread::sleep(Duration::from_millis(300));
    let mut daemon = spawn_daemon(&config);

    rt.block_on(
        collector.wait_until(Duration::from_secs(60), "the result", |m| {
            m.iter().any(|(t, _, _)| t == "tandem/v1/t1/event/result")
        }),
    );
    let clock_sim_status = clock_sim.wait_with_output().expect("clock-sim ends");
    assert!(clock_sim_status.status.success(), "clock-sim failed");
    // Let trailing presses (after the mate) arrive, then stop cleanly.
    std::thread::sleep(Duration::from_millis(500));
    signal(&daemon, "TERM");
    let status = daemon.wait().expect("daemon exits");
    assert!(status.success(), "daemon exit after SIGTERM: {status}");
    std::thread::sleep(Duration::from_millis(300));
    // The evidence log, resumed after the kill -9 and finished at SIGTERM, verifies.
    let report = tandem_monitor::evidence::verify(&dir.path().join("evidence/t1/1")).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    let messages = collector.snapshot();
    rt.block_on(collector.stop());

    // Deduplicate by id: a repeated id must carry exactly the same event.
    let mut events: BTreeMap<String, Value> = BTreeMap::new();
    let mut copies = 0;
    for (topic, value, _) in messages.iter().filter(|m| is_event(&m.0)) {
        let id = value["id"]
            .as_str()
            .expect("every event has an id")
            .to_string();
        assert!(
            topic.ends_with(value["type"].as_str().unwrap()),
            "{topic}: {value}"
        );
        if let Some(first) = events.get(&id) {
            copies += 1;
            assert_eq!(first, value, "two different events share id {id}");
        } else {
            events.insert(id, value.clone());
        }
    }
    // No gaps: the game's ids are t1/1/1 ..= t1/1/N.
    let seqs: BTreeSet<u64> = events
        .keys()
        .map(|id| id.strip_prefix("t1/1/").expect("game 1").parse().unwrap())
        .collect();
    let n = *seqs.last().unwrap();
    assert_eq!(
        seqs,
        (1..=n).collect::<BTreeSet<u64>>(),
        "missing event ids"
    );
    // Every move of the game (139 up to the mate) arrived once.
    let moves = events.values().filter(|e| e["type"] == "move").count();
    let game = tandem_monitor::daemon::load_game(Path::new(GAME), 1).unwrap();
    assert_eq!(moves, game.moves.len());
    let results: Vec<&Value> = events.values().filter(|e| e["type"] == "result").collect();
    assert_eq!(results.len(), 1);
    assert!(
        events.values().any(|e| e["type"] == "clock"),
        "no press arrived"
    );
    eprintln!(
        "{} events, {} redelivered copies, {} moves",
        events.len(),
        copies,
        moves
    );

    // Clocks were told to stop on the result.
    let stops: BTreeSet<&str> = messages
        .iter()
        .filter(|(t, v, _)| t.contains("/clock/") && t.ends_with("/cmd") && v["cmd"] == "stop")
        .map(|(t, _, _)| t.as_str())
        .collect();
    assert_eq!(stops.len(), 2, "{stops:?}");

    // The retained state a newcomer sees: the last event and the result; the daemon is offline.
    let retained = rt.block_on(async {
        let c = Collector::start(broker.port, "e2e-late", "tandem/v1/#", true).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let got = c.snapshot();
        c.stop().await;
        got
    });
    let state = retained
        .iter()
        .find(|(t, _, r)| t == "tandem/v1/t1/state" && *r)
        .map(|m| m.1.clone())
        .expect("retained state");
    assert_eq!(state["last_event_id"], json!(format!("t1/1/{n}")));
    // The retained evidence head anchors the log kept on disk.
    let head: tandem_monitor::evidence::ChainHead = state["evidence_head"]
        .as_str()
        .expect("evidence head in the state")
        .parse()
        .expect("seq:hash");
    let anchored = tandem_monitor::evidence::verify_with(
        &dir.path().join("evidence/t1/1"),
        &tandem_monitor::evidence::VerifyOptions {
            expected_head: Some(head),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(anchored.problems.is_empty(), "{:?}", anchored.problems);
    // The live feed is retained too, one file per kind (issue 8).
    for kind in ["bpgn", "pgn/A", "pgn/B"] {
        let topic = format!("tandem/v1/t1/feed/{kind}");
        assert!(
            retained.iter().any(|(t, _, r)| *t == topic && *r),
            "no retained {topic}"
        );
    }
    assert_eq!(state["result"]["id"], results[0]["id"]);
    assert_eq!(state["over"], true);
    let status = retained
        .iter()
        .find(|(t, _, r)| t == "tandem/v1/daemon/tandem-e2e/status" && *r)
        .expect("retained daemon status");
    assert_eq!(status.1["status"], "offline");
}

#[test]
fn arbiter_commands_round_trip() {
    let Some(broker) = Mosquitto::available().then(Mosquitto::start) else {
        return;
    };
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let config = DaemonConfig::load(&write_config(dir.path(), broker.port, "")).unwrap();
    rt.block_on(async {
        let collector = Collector::start(broker.port, "arbiter-view", "tandem/v1/t1/#", true).await;
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<Ready>();
        let daemon = tokio::spawn(run_daemon(
            config,
            async {
                let _ = stop_rx.await;
            },
            Some(ready_tx),
        ));
        ready_rx.await.expect("daemon ready");
        // Wait for the daemon's subscription (its online status is published after it).
        collector
            .wait_until(Duration::from_secs(10), "online", |m| {
                m.iter()
                    .any(|(t, v, _)| t == "tandem/v1/t1/status" && v["status"] == "online")
            })
            .await;
        let mut options = MqttOptions::new("arbiter", "127.0.0.1", broker.port);
        options.set_keep_alive(Duration::from_secs(5));
        let (arbiter, mut eventloop) = AsyncClient::new(options, 16);
        let poll = tokio::spawn(async move { while eventloop.poll().await.is_ok() {} });
        let topic = "tandem/v1/t1/arbiter/cmd";
        let send = |payload: &str| {
            let (a, p) = (arbiter.clone(), payload.to_string());
            async move { a.publish(topic, QoS::AtLeastOnce, false, p).await.unwrap() }
        };
        let has = |pred: fn(&(String, Value, bool)) -> bool| {
            move |m: &[(String, Value, bool)]| m.iter().any(pred)
        };

        send("{not json").await;
        collector
            .wait_until(
                Duration::from_secs(10),
                "error event",
                has(|(t, v, _)| t == "tandem/v1/t1/event/error" && v["code"] == "malformed_json"),
            )
            .await;
        send(r#"{"cmd": "teleport"}"#).await;
        collector
            .wait_until(
                Duration::from_secs(10),
                "unknown command",
                has(|(_, v, _)| v["code"] == "unknown_command"),
            )
            .await;
        send(r#"{"cmd": "claim", "board": "A", "side": "black", "claim": "illegal_move"}"#).await;
        collector
            .wait_until(
                Duration::from_secs(10),
                "claim rejected",
                has(|(t, v, _)| t == "tandem/v1/t1/event/claim_rejected" && v["id"] == "t1/1/1"),
            )
            .await;
        collector
            .wait_until(
                Duration::from_secs(10),
                "clocks stopped on the claim",
                has(|(t, v, _)| t == "tandem/v1/t1/clock/B/cmd" && v["cmd"] == "stop"),
            )
            .await;
        send(r#"{"cmd": "resign", "board": "B", "side": "black", "by": "arbiter"}"#).await;
        collector
            .wait_until(
                Duration::from_secs(10),
                "result",
                has(|(t, v, _)| {
                    t == "tandem/v1/t1/event/result"
                        && v["result"] == "0-1"
                        && v["reason"] == "resignation"
                }),
            )
            .await;
        collector
            .wait_until(
                Duration::from_secs(10),
                "message on the clock",
                has(|(t, v, _)| t == "tandem/v1/t1/clock/A/cmd" && v["cmd"] == "message"),
            )
            .await;
        collector
            .wait_until(
                Duration::from_secs(10),
                "state with the result",
                has(|(t, v, _)| t == "tandem/v1/t1/state" && v["result"]["result"] == "0-1"),
            )
            .await;
        send(r#"{"cmd": "start", "rules": "dsb"}"#).await;
        collector
            .wait_until(
                Duration::from_secs(10),
                "game 2",
                has(|(t, v, _)| {
                    t == "tandem/v1/t1/state"
                        && v["game"] == 2
                        && v["rules"] == "dsb"
                        && v["result"].is_null()
                }),
            )
            .await;

        let _ = stop_tx.send(());
        let summary = daemon.await.unwrap().unwrap();
        assert_eq!(summary.rejected, 2);
        assert_eq!(summary.tables[0].game, 2);
        poll.abort();
        collector.stop().await;
    });
}

#[test]
fn config_errors_are_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    for (text, want) in [
        (
            "[[tables]]\nid = \"t1\"\nrules = \"blitz\"\n",
            "tables[0].rules",
        ),
        (
            "[[tables]]\nid = \"t1\"\n[source]\nkind = \"camera\"\n",
            "line 4: unknown variant `camera`",
        ),
        ("[[tables]]\nid = \"t1\"\n[mqtt]\nhots = \"x\"\n", "hots"),
    ] {
        let path = dir.path().join("bad.toml");
        std::fs::write(&path, text).unwrap();
        let out = Command::new(TANDEM)
            .args(["run", "--config"])
            .arg(&path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{text}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("error: config "), "{stderr}");
        assert!(stderr.contains(want), "{text:?}: {stderr}");
    }
}

#[test]
fn documented_example_config_loads() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/daemon.example.toml");
    let config = DaemonConfig::load(&path).unwrap();
    assert_eq!(config.tables[0].id, "t1");
    assert_eq!(
        config.tables[0].boards,
        ["left".to_string(), "right".to_string()]
    );
    let replay = config.replay().expect("the example replays a game");
    assert!(replay.bpgn.as_ref().unwrap().is_file());
    assert!(config.broadcast.is_some());
}
