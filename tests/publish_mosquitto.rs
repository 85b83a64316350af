//! End-to-end delivery tests of `publish` against a real Mosquitto (started on a free port with a
//! temporary config; never 1883) and against the embedded rumqttd broker.
//!
//! Mosquitto tests print a message and return when `/usr/sbin/mosquitto` is absent.

use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rumqttc::{AsyncClient, Event, Incoming, MqttOptions, QoS};
use serde_json::{Value, json};
use tandem_monitor::publish::{
    EmbeddedBroker, FsyncPolicy, InboundMessage, MqttConfig, OutboxConfig, Publisher, TableId,
};

mod common;
use common::mosquitto::Mosquitto;
const CHILD_ENV: &str = "TANDEM_PUBLISH_KILL9_CHILD";

/// A second MQTT client that records every message on `filter`, reconnecting on errors.
struct Collector {
    client: AsyncClient,
    ids: Arc<Mutex<HashMap<String, usize>>>,
    messages: Arc<Mutex<Vec<(String, Value)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Collector {
    /// Connects with a persistent session (`clean_session = false`) and waits for the SUBACK.
    async fn start(port: u16, client_id: &str, filter: &str) -> Self {
        let mut options = MqttOptions::new(client_id, "127.0.0.1", port);
        options
            .set_clean_session(false)
            .set_keep_alive(Duration::from_secs(5))
            .set_max_packet_size(1 << 20, 1 << 20);
        let (client, mut eventloop) = AsyncClient::new(options, 100);
        let ids: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let messages: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
        let (subacked_tx, subacked_rx) = tokio::sync::oneshot::channel();
        let mut subacked_tx = Some(subacked_tx);
        let (sub_client, filter, task_ids, task_messages) = (
            client.clone(),
            filter.to_string(),
            ids.clone(),
            messages.clone(),
        );
        let task = tokio::spawn(async move {
            loop {
                match eventloop.poll().await {
                    Ok(Event::Incoming(Incoming::ConnAck(_))) => {
                        let _ = sub_client.try_subscribe(filter.clone(), QoS::AtLeastOnce);
                    }
                    Ok(Event::Incoming(Incoming::SubAck(_))) => {
                        if let Some(tx) = subacked_tx.take() {
                            let _ = tx.send(());
                        }
                    }
                    Ok(Event::Incoming(Incoming::Publish(p))) => {
                        let value: Value =
                            serde_json::from_slice(&p.payload).unwrap_or(Value::Null);
                        if let Some(id) = value.get("id").and_then(Value::as_str) {
                            *task_ids.lock().unwrap().entry(id.to_string()).or_default() += 1;
                        }
                        task_messages.lock().unwrap().push((p.topic.clone(), value));
                    }
                    Ok(_) => {}
                    Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
        });
        tokio::time::timeout(Duration::from_secs(10), subacked_rx)
            .await
            .expect("collector SUBACK within 10 s")
            .expect("collector task alive");
        Self {
            client,
            ids,
            messages,
            task,
        }
    }

    fn ids(&self) -> BTreeSet<String> {
        self.ids.lock().unwrap().keys().cloned().collect()
    }

    async fn wait_for_ids(&self, want: &BTreeSet<String>, timeout: Duration) -> BTreeSet<String> {
        let deadline = Instant::now() + timeout;
        loop {
            let have = self.ids();
            if want.is_subset(&have) || Instant::now() > deadline {
                return want.difference(&have).cloned().collect();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn wait_for_message(
        &self,
        pred: impl Fn(&str, &Value) -> bool,
        timeout: Duration,
    ) -> Option<(String, Value)> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(m) = self
                .messages
                .lock()
                .unwrap()
                .iter()
                .find(|(t, v)| pred(t, v))
            {
                return Some(m.clone());
            }
            if Instant::now() > deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn stop(self) {
        let _ = self.client.try_disconnect();
        self.task.abort();
    }
}

fn config(port: u16, outbox: &Path, client_id: &str, tables: &[&str]) -> MqttConfig {
    MqttConfig {
        host: Some("127.0.0.1".to_string()),
        port,
        client_id: client_id.to_string(),
        tables: tables.iter().map(|t| t.to_string()).collect(),
        outbox: OutboxConfig {
            dir: outbox.to_path_buf(),
            fsync: FsyncPolicy::Always,
            ..Default::default()
        },
        reconnect_min_ms: 50,
        reconnect_max_ms: 500,
        ..Default::default()
    }
}

fn event(id: &str, table: &str, n: u64) -> Value {
    json!({"id": id, "type": "move", "table": table, "board": if n.is_multiple_of(2) {"A"} else {"B"},
           "ts": n, "uci": "e2e4", "san": "e4"})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_arrives_across_a_mosquitto_restart() {
    if !Mosquitto::available() {
        return;
    }
    let mut broker = Mosquitto::start();
    let collector = Collector::start(broker.port, "restart-sub", "tandem/v1/+/event/#").await;
    // A graceful restart saves the subscriber's persistent session in Mosquitto's database, so
    // that it survives the hard kill below (as it would on a production broker).
    broker.restart();
    let outbox = tempfile::tempdir().unwrap();
    let (publisher, _inbound) =
        Publisher::start(config(broker.port, outbox.path(), "restart-pub", &["t1"])).unwrap();
    let id = |n: u64| format!("restart-{n}");
    let want: BTreeSet<String> = (0..200).map(id).collect();
    let first: BTreeSet<String> = (0..100).map(id).collect();
    for n in 0..100u64 {
        publisher.publish_event(&event(&id(n), "t1", n)).unwrap();
        if n % 10 == 0 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    assert!(
        collector
            .wait_for_ids(&first, Duration::from_secs(20))
            .await
            .is_empty()
    );
    // Freeze the broker: the next events are written to its socket but never acknowledged.
    broker.freeze();
    for n in 100..150u64 {
        publisher.publish_event(&event(&id(n), "t1", n)).unwrap();
    }
    // Wait until all 50 are handed to the connection (after the group fsync) and every earlier
    // PUBACK has been processed: exactly the 50 are in flight when the broker dies.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let stats = publisher.stats();
        if stats.sent >= 150 && stats.pending == 50 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "in-flight events must have been handed to the connection: {stats:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    broker.kill9_and_restart();
    for n in 150..200u64 {
        publisher.publish_event(&event(&id(n), "t1", n)).unwrap();
        if n % 10 == 0 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    assert!(
        publisher.wait_idle(Duration::from_secs(30)).await,
        "outbox not drained: {:?}",
        publisher.stats()
    );
    let missing = collector.wait_for_ids(&want, Duration::from_secs(30)).await;
    assert!(missing.is_empty(), "never received: {missing:?}");
    let stats = publisher.stats();
    assert!(stats.connections >= 2, "no reconnect happened: {stats:?}");
    assert!(
        stats.sent >= 250,
        "the 50 unacknowledged events must have been sent again: {stats:?}"
    );
    assert_eq!(stats.acked, 200);
    publisher.shutdown(Duration::from_secs(5)).await;
    collector.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_are_sent_and_a_refused_login_loses_nothing() {
    if !Mosquitto::available() {
        return;
    }
    let Some(broker) = Mosquitto::start_with_password("tandem", "s3cret") else {
        return;
    };
    let outbox = tempfile::tempdir().unwrap();
    let mut cfg = config(broker.port, outbox.path(), "auth-pub", &["t1"]);
    cfg.username = Some("tandem".to_string());
    cfg.password = Some("wrong".to_string());
    let (publisher, _inbound) = Publisher::start(cfg.clone()).unwrap();
    publisher.publish_event(&event("auth-1", "t1", 1)).unwrap();
    assert!(!publisher.wait_idle(Duration::from_millis(500)).await);
    let stats = publisher.stats();
    assert_eq!((stats.connections, stats.pending), (0, 1), "{stats:?}");
    assert!(
        stats
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("NotAuthorized")),
        "{stats:?}"
    );
    publisher.shutdown(Duration::from_millis(100)).await;

    cfg.password = Some("s3cret".to_string());
    let (publisher, _inbound) = Publisher::start(cfg).unwrap();
    assert!(
        publisher.wait_idle(Duration::from_secs(10)).await,
        "{:?}",
        publisher.stats()
    );
    assert_eq!(publisher.stats().connections, 1);
    publisher.shutdown(Duration::from_secs(5)).await;
}

/// Child side of the kill -9 test: enqueue events forever, announcing each one on stdout after
/// `publish_event` returned (i.e. after it is in the outbox file).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return; // Only meaningful when re-invoked by publisher_killed_with_sigkill_loses_nothing.
    };
    let (port, dir) = spec.split_once(',').expect("port,dir");
    let (publisher, _inbound) = Publisher::start(config(
        port.parse().expect("port"),
        Path::new(dir),
        "kill9-pub",
        &["t9"],
    ))
    .unwrap();
    use std::io::Write;
    let mut stdout = std::io::stdout();
    for n in 0.. {
        let id = format!("kill9-{n}");
        publisher.publish_event(&event(&id, "t9", n)).unwrap();
        writeln!(stdout, "enqueued {id}").unwrap();
        stdout.flush().unwrap();
        if n % 50 == 0 {
            tokio::task::yield_now().await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publisher_killed_with_sigkill_loses_nothing() {
    if !Mosquitto::available() {
        return;
    }
    let broker = Mosquitto::start();
    let collector = Collector::start(broker.port, "kill9-sub", "tandem/v1/t9/event/#").await;
    let outbox = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "kill9_child", "--nocapture", "--test-threads=1"])
        .env(
            CHILD_ENV,
            format!("{},{}", broker.port, outbox.path().display()),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut announced = BTreeSet::new();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    while announced.len() < 2000 {
        let line = lines
            .next()
            .expect("child ended early")
            .expect("child stdout");
        if let Some(id) = line.strip_prefix("enqueued ") {
            announced.insert(id.to_string());
        }
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // Lines the child wrote before dying may still be in the pipe: they are enqueued too.
    for line in lines.map_while(Result::ok) {
        if let Some(id) = line.strip_prefix("enqueued ") {
            announced.insert(id.to_string());
        }
    }
    let received_before_restart = collector.ids().len();

    let (publisher, _inbound) =
        Publisher::start(config(broker.port, outbox.path(), "kill9-pub-2", &["t9"])).unwrap();
    let recovered = publisher.stats().pending;
    assert!(
        publisher.wait_idle(Duration::from_secs(30)).await,
        "outbox not drained: {:?}",
        publisher.stats()
    );
    let missing = collector
        .wait_for_ids(&announced, Duration::from_secs(30))
        .await;
    assert!(
        missing.is_empty(),
        "{} of {} enqueued events never arrived (recovered {recovered}, {received_before_restart} before restart): {:?}",
        missing.len(),
        announced.len(),
        missing.iter().take(10).collect::<Vec<_>>()
    );
    eprintln!(
        "kill -9: {} enqueued, {received_before_restart} received before the kill, {recovered} recovered from the outbox",
        announced.len()
    );
    publisher.shutdown(Duration::from_secs(5)).await;
    collector.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_will_marks_a_dead_daemon_offline() {
    if !Mosquitto::available() {
        return;
    }
    let broker = Mosquitto::start();
    let collector = Collector::start(broker.port, "lwt-sub", "tandem/v1/daemon/+/status").await;
    let outbox = tempfile::tempdir().unwrap();
    let (publisher, _inbound) =
        Publisher::start(config(broker.port, outbox.path(), "lwt-pub", &["t1"])).unwrap();
    let is = |want: &'static str| {
        move |t: &str, v: &Value| t == "tandem/v1/daemon/lwt-pub/status" && v["status"] == want
    };
    assert!(
        collector
            .wait_for_message(is("online"), Duration::from_secs(10))
            .await
            .is_some()
    );
    drop(publisher); // no DISCONNECT: the broker must publish the Last Will
    let (_, offline) = collector
        .wait_for_message(is("offline"), Duration::from_secs(20))
        .await
        .expect("Last Will published");
    assert_eq!(offline["daemon"], "lwt-pub");
    collector.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_broker_round_trip_with_inputs_and_error_events() {
    let broker = EmbeddedBroker::start(0).unwrap();
    let collector = Collector::start(broker.port(), "emb-sub", "tandem/v1/#").await;
    let outbox = tempfile::tempdir().unwrap();
    let (publisher, mut inbound) =
        Publisher::start(config(broker.port(), outbox.path(), "emb-pub", &["t1"])).unwrap();
    assert!(publisher.wait_idle(Duration::from_secs(10)).await);

    publisher.publish_event(&event("emb-1", "t1", 1)).unwrap();
    publisher
        .publish_state(&TableId::new("t1").unwrap(), &json!({"fen": "x | y"}))
        .unwrap();
    let (topic, got) = collector
        .wait_for_message(|_, v| v["id"] == "emb-1", Duration::from_secs(10))
        .await
        .expect("event via embedded broker");
    assert_eq!(topic, "tandem/v1/t1/event/move");
    assert_eq!(got, event("emb-1", "t1", 1));
    assert!(
        collector
            .wait_for_message(
                |t, v| t == "tandem/v1/t1/state" && v["fen"] == "x | y",
                Duration::from_secs(10)
            )
            .await
            .is_some()
    );

    // Retained: a subscriber arriving later still gets the state and the online status.
    let late = Collector::start(broker.port(), "emb-late", "tandem/v1/#").await;
    assert!(
        late.wait_for_message(|t, _| t == "tandem/v1/t1/state", Duration::from_secs(5))
            .await
            .is_some(),
        "retained state not delivered to a late subscriber"
    );
    assert!(
        late.wait_for_message(
            |t, v| t == "tandem/v1/t1/status" && v["status"] == "online",
            Duration::from_secs(5)
        )
        .await
        .is_some(),
        "retained table status not delivered to a late subscriber"
    );
    late.stop();

    // Inputs: a valid clock press reaches the daemon channel; garbage becomes an error event.
    collector
        .client
        .publish(
            "tandem/v1/t1/clock/A/press",
            QoS::AtLeastOnce,
            false,
            br#"{"side":"white","ts":77}"#.to_vec(),
        )
        .await
        .unwrap();
    collector
        .client
        .publish(
            "tandem/v1/t1/arbiter/cmd",
            QoS::AtLeastOnce,
            false,
            br#"{"cmd":"launch_rockets"}"#.to_vec(),
        )
        .await
        .unwrap();
    let mut seen_press = false;
    let mut seen_reject = false;
    while !(seen_press && seen_reject) {
        match tokio::time::timeout(Duration::from_secs(10), inbound.recv())
            .await
            .expect("inbound within 10 s")
            .expect("channel open")
        {
            InboundMessage::Input(input) => {
                assert_eq!(input.table().as_str(), "t1");
                seen_press = true;
            }
            InboundMessage::Rejected { error, .. } => {
                assert_eq!(error.code(), "unknown_command");
                seen_reject = true;
            }
        }
    }
    let (_, error_event) = collector
        .wait_for_message(
            |t, _| t == "tandem/v1/t1/event/error",
            Duration::from_secs(10),
        )
        .await
        .expect("error event published");
    assert_eq!(error_event["code"], "unknown_command");
    assert!(publisher.wait_idle(Duration::from_secs(10)).await);
    publisher.shutdown(Duration::from_secs(5)).await;
    collector.stop();
    broker.stop();
}

/// Load test: 50 tables × N events through one publisher into one Mosquitto, plus a subscriber.
/// Run with `cargo test --test publish_mosquitto -- --ignored --nocapture load_`;
/// `TANDEM_LOAD_EVENTS` (per table, default 200) and `TANDEM_LOAD_FSYNC` (`always`/`never`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "load test; run explicitly"]
async fn load_50_tables() {
    if !Mosquitto::available() {
        return;
    }
    let per_table: u64 = std::env::var("TANDEM_LOAD_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let fsync = match std::env::var("TANDEM_LOAD_FSYNC").as_deref() {
        Ok("never") => FsyncPolicy::Never,
        _ => FsyncPolicy::Always,
    };
    let pace_ms: u64 = std::env::var("TANDEM_LOAD_PACE_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let tables: Vec<String> = (0..50).map(|i| format!("load-{i:02}")).collect();
    let broker = Mosquitto::start();
    let collector = Collector::start(broker.port, "load-sub", "tandem/v1/+/event/#").await;
    let outbox_dir: PathBuf = std::env::var("TANDEM_LOAD_OUTBOX_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| std::env::temp_dir());
    let outbox = tempfile::tempdir_in(outbox_dir).unwrap();
    let table_refs: Vec<&str> = tables.iter().map(String::as_str).collect();
    let mut cfg = config(broker.port, outbox.path(), "load-pub", &table_refs);
    cfg.outbox.fsync = fsync;
    let rss_before = vm_rss_kib();
    let (publisher, _inbound) = Publisher::start(cfg).unwrap();
    assert!(publisher.wait_idle(Duration::from_secs(10)).await);
    let publisher = Arc::new(publisher);
    let start = Instant::now();
    let mut producers = Vec::new();
    for table in tables.clone() {
        let publisher = publisher.clone();
        producers.push(tokio::spawn(async move {
            for n in 0..per_table {
                let id = format!("{table}-{n}");
                publisher.publish_event(&event(&id, &table, n)).unwrap();
                if pace_ms > 0 {
                    tokio::time::sleep(Duration::from_millis(pace_ms)).await;
                } else if n % 8 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        }));
    }
    for p in producers {
        p.await.unwrap();
    }
    let enqueue_done = start.elapsed();
    assert!(publisher.wait_idle(Duration::from_secs(300)).await);
    let acked = start.elapsed();
    let rss_peak = vm_hwm_kib();
    let rss_after = vm_rss_kib();
    let total = per_table * tables.len() as u64;
    let want: BTreeSet<String> = tables
        .iter()
        .flat_map(|t| (0..per_table).map(move |n| format!("{t}-{n}")))
        .collect();
    let missing = collector.wait_for_ids(&want, Duration::from_secs(60)).await;
    let received = start.elapsed();
    assert!(missing.is_empty(), "{} events missing", missing.len());
    let mut lat = publisher.take_ack_latencies();
    lat.sort();
    let pct = |p: f64| lat[((lat.len() as f64 * p).ceil() as usize).clamp(1, lat.len()) - 1];
    println!(
        "load: 50 tables x {per_table} events = {total}, fsync {fsync:?}, pace {pace_ms} ms\n\
         enqueue {:.3} s, all acked {:.3} s -> {:.0} events/s acked, all received by subscriber {:.3} s\n\
         enqueue->PUBACK latency: p50 {:?} p99 {:?} max {:?} ({} samples)\n\
         VmRSS before {} KiB, after {} KiB, VmHWM {} KiB (test process incl. subscriber)",
        enqueue_done.as_secs_f64(),
        acked.as_secs_f64(),
        total as f64 / acked.as_secs_f64(),
        received.as_secs_f64(),
        pct(0.50),
        pct(0.99),
        lat.last().copied().unwrap_or_default(),
        lat.len(),
        rss_before,
        rss_after,
        rss_peak,
    );
    collector.stop();
}

fn proc_status_kib(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn vm_rss_kib() -> u64 {
    proc_status_kib("VmRSS:")
}

fn vm_hwm_kib() -> u64 {
    proc_status_kib("VmHWM:")
}
