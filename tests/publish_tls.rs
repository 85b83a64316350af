//! MQTT over TLS against a real Mosquitto: certificates are made with the `openssl` command line
//! in a temp dir, the broker gets a TLS listener on a free port, and a TLS subscriber checks what
//! the publisher delivered. Prints a message and returns when `openssl` or Mosquitto is missing.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rumqttc::{AsyncClient, Event, Incoming, MqttOptions, QoS, TlsConfiguration, Transport};
use serde_json::{Value, json};
use tandem_monitor::publish::{
    FsyncPolicy, MqttConfig, OutboxConfig, PublishError, Publisher, TlsConfig,
};

mod common;
use common::mosquitto::Mosquitto;

/// Runs `openssl` with `args` in `dir`; false (with the reason printed) when it fails.
fn openssl(dir: &Path, args: &[&str]) -> bool {
    match Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
    {
        Ok(out) if out.status.success() => true,
        Ok(out) => {
            eprintln!(
                "openssl {args:?} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            false
        }
        Err(e) => {
            eprintln!("SKIPPED: cannot run openssl: {e}");
            false
        }
    }
}

/// A self-signed CA (`<name>.pem`, `<name>.key`) in `dir`.
fn make_ca(dir: &Path, name: &str) -> bool {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.pem"),
            "-days",
            "2",
            "-subj",
            &format!("/CN={name}"),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ],
    )
}

/// A leaf certificate `<name>.pem`/`<name>.key` signed by CA `ca`, with extensions `ext`.
fn make_leaf(dir: &Path, ca: &str, name: &str, ext: &str) -> bool {
    let ext_file = format!("{name}.ext");
    if std::fs::write(dir.join(&ext_file), ext).is_err() {
        return false;
    }
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.csr"),
            "-subj",
            &format!("/CN={name}"),
        ],
    ) && openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &format!("{name}.csr"),
            "-CA",
            &format!("{ca}.pem"),
            "-CAkey",
            &format!("{ca}.key"),
            "-set_serial",
            "2",
            "-days",
            "2",
            "-out",
            &format!("{name}.pem"),
            "-extfile",
            &ext_file,
        ],
    )
}

/// The PKI of one test: the broker's CA, an unrelated CA, and a server and a client certificate
/// signed by the broker's CA. `None` (skip) when openssl or Mosquitto is unavailable.
struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    fn make() -> Option<Self> {
        if !Mosquitto::available() {
            return None;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let p = dir.path();
        let made = make_ca(p, "ca")
            && make_ca(p, "other-ca")
            && make_leaf(
                p,
                "ca",
                "server",
                "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n\
                 keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
            )
            && make_leaf(
                p,
                "ca",
                "client",
                "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n\
                 extendedKeyUsage=clientAuth\n",
            );
        if !made {
            eprintln!("SKIPPED: could not make test certificates with openssl");
            return None;
        }
        Some(Self { dir })
    }

    fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
    }

    /// Listener lines for Mosquitto; `require_client_cert` turns on mutual TLS.
    fn listener(&self, require_client_cert: bool) -> String {
        format!(
            "cafile {}\ncertfile {}\nkeyfile {}\nrequire_certificate {require_client_cert}\n",
            self.path("ca.pem").display(),
            self.path("server.pem").display(),
            self.path("server.key").display(),
        )
    }

    fn tls(&self, ca: &str, client: bool) -> TlsConfig {
        TlsConfig {
            ca_file: self.path(ca),
            client_cert: client.then(|| self.path("client.pem")),
            client_key: client.then(|| self.path("client.key")),
        }
    }
}

fn config(host: &str, port: u16, outbox: &Path, client_id: &str, tls: TlsConfig) -> MqttConfig {
    MqttConfig {
        host: Some(host.to_string()),
        port,
        client_id: client_id.to_string(),
        tables: vec!["t1".to_string()],
        tls: Some(tls),
        outbox: OutboxConfig {
            dir: outbox.to_path_buf(),
            fsync: FsyncPolicy::Never,
            ..Default::default()
        },
        reconnect_min_ms: 50,
        reconnect_max_ms: 500,
        ..Default::default()
    }
}

fn event(id: &str, n: u64) -> Value {
    json!({"id": id, "type": "move", "table": "t1", "board": "A", "ts": n, "uci": "e2e4", "san": "e4"})
}

/// A TLS subscriber on `tandem/v1/+/event/#` that records event ids; returns once subscribed.
async fn tls_subscriber(
    port: u16,
    tls: &TlsConfig,
) -> (
    AsyncClient,
    Arc<Mutex<Vec<String>>>,
    tokio::task::JoinHandle<()>,
) {
    let mut options = MqttOptions::new("tls-sub", "127.0.0.1", port);
    options
        .set_keep_alive(Duration::from_secs(5))
        .set_transport(Transport::Tls(TlsConfiguration::Rustls(
            tls.client_config().expect("subscriber TLS config"),
        )));
    let (client, mut eventloop) = AsyncClient::new(options, 100);
    let ids: Arc<Mutex<Vec<String>>> = Arc::default();
    let (subacked_tx, subacked_rx) = tokio::sync::oneshot::channel();
    let mut subacked_tx = Some(subacked_tx);
    let (sub_client, task_ids) = (client.clone(), ids.clone());
    let task = tokio::spawn(async move {
        loop {
            match eventloop.poll().await {
                Ok(Event::Incoming(Incoming::ConnAck(_))) => {
                    let _ = sub_client.try_subscribe("tandem/v1/+/event/#", QoS::AtLeastOnce);
                }
                Ok(Event::Incoming(Incoming::SubAck(_))) => {
                    if let Some(tx) = subacked_tx.take() {
                        let _ = tx.send(());
                    }
                }
                Ok(Event::Incoming(Incoming::Publish(p))) => {
                    let value: Value = serde_json::from_slice(&p.payload).unwrap_or(Value::Null);
                    if let Some(id) = value.get("id").and_then(Value::as_str) {
                        task_ids.lock().unwrap().push(id.to_string());
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    eprintln!("tls subscriber: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    });
    tokio::time::timeout(Duration::from_secs(10), subacked_rx)
        .await
        .expect("TLS subscriber SUBACK within 10 s")
        .expect("subscriber task alive");
    (client, ids, task)
}

async fn wait_for_ids(ids: &Mutex<Vec<String>>, want: &BTreeSet<String>) -> BTreeSet<String> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let got: BTreeSet<String> = ids.lock().unwrap().iter().cloned().collect();
        let missing: BTreeSet<String> = want.difference(&got).cloned().collect();
        if missing.is_empty() || tokio::time::Instant::now() > deadline {
            return missing;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_arrive_over_tls_and_a_wrong_ca_is_refused() {
    let Some(pki) = Pki::make() else { return };
    let broker = Mosquitto::start_with_extra(&pki.listener(false));
    let (sub, ids, sub_task) = tls_subscriber(broker.port, &pki.tls("ca.pem", false)).await;

    let outbox = tempfile::tempdir().unwrap();
    // "localhost" checks the DNS name SAN; the subscriber uses the IP address SAN.
    let (publisher, _inbound) = Publisher::start(config(
        "localhost",
        broker.port,
        outbox.path(),
        "tls-pub",
        pki.tls("ca.pem", false),
    ))
    .unwrap();
    let want: BTreeSet<String> = (0..20).map(|n| format!("tls-{n}")).collect();
    for (n, id) in want.iter().enumerate() {
        publisher.publish_event(&event(id, n as u64)).unwrap();
    }
    assert!(
        publisher.wait_idle(Duration::from_secs(10)).await,
        "{:?}",
        publisher.stats()
    );
    let missing = wait_for_ids(&ids, &want).await;
    assert!(missing.is_empty(), "never received over TLS: {missing:?}");
    let stats = publisher.stats();
    assert_eq!((stats.connections, stats.acked), (1, 20), "{stats:?}");
    publisher.shutdown(Duration::from_secs(5)).await;

    // A CA that did not sign the broker's certificate: no connection, the event stays queued,
    // and the reason is in the stats.
    let outbox = tempfile::tempdir().unwrap();
    let (publisher, _inbound) = Publisher::start(config(
        "127.0.0.1",
        broker.port,
        outbox.path(),
        "tls-wrong-ca",
        pki.tls("other-ca.pem", false),
    ))
    .unwrap();
    publisher.publish_event(&event("wrong-ca-1", 1)).unwrap();
    assert!(!publisher.wait_idle(Duration::from_millis(800)).await);
    let stats = publisher.stats();
    assert_eq!((stats.connections, stats.pending), (0, 1), "{stats:?}");
    assert!(
        stats
            .last_error
            .as_deref()
            .is_some_and(|e| e.to_lowercase().contains("certificate")),
        "{stats:?}"
    );
    publisher.shutdown(Duration::from_millis(100)).await;
    assert!(!ids.lock().unwrap().iter().any(|id| id == "wrong-ca-1"));

    let _ = sub.try_disconnect();
    sub_task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_needs_the_client_certificate() {
    let Some(pki) = Pki::make() else { return };
    let broker = Mosquitto::start_with_extra(&pki.listener(true));

    let outbox = tempfile::tempdir().unwrap();
    let (publisher, _inbound) = Publisher::start(config(
        "127.0.0.1",
        broker.port,
        outbox.path(),
        "mtls-anon",
        pki.tls("ca.pem", false),
    ))
    .unwrap();
    publisher.publish_event(&event("mtls-0", 0)).unwrap();
    assert!(!publisher.wait_idle(Duration::from_millis(800)).await);
    let stats = publisher.stats();
    assert_eq!(stats.connections, 0, "{stats:?}");
    assert!(stats.last_error.is_some(), "{stats:?}");
    publisher.shutdown(Duration::from_millis(100)).await;

    // Same outbox with the client identity: the queued event goes out.
    let (publisher, _inbound) = Publisher::start(config(
        "127.0.0.1",
        broker.port,
        outbox.path(),
        "mtls-client",
        pki.tls("ca.pem", true),
    ))
    .unwrap();
    assert!(
        publisher.wait_idle(Duration::from_secs(10)).await,
        "{:?}",
        publisher.stats()
    );
    let stats = publisher.stats();
    assert_eq!((stats.connections, stats.acked), (1, 1), "{stats:?}");
    publisher.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn unreadable_or_mismatched_tls_files_are_start_errors() {
    let Some(pki) = Pki::make() else { return };
    let outbox = tempfile::tempdir().unwrap();
    let start = |tls: TlsConfig| {
        Publisher::start(config("127.0.0.1", 1, outbox.path(), "tls-bad", tls)).map(|_| ())
    };
    let missing = TlsConfig {
        ca_file: pki.path("absent.pem"),
        ..pki.tls("ca.pem", false)
    };
    match start(missing) {
        Err(PublishError::Config(msg)) => {
            assert!(
                msg.contains("ca_file") && msg.contains("absent.pem"),
                "{msg}"
            )
        }
        other => panic!("a missing CA file must be a config error: {other:?}"),
    }
    // The client key does not belong to the client certificate.
    let mismatched = TlsConfig {
        client_key: Some(pki.path("server.key")),
        ..pki.tls("ca.pem", true)
    };
    match start(mismatched) {
        Err(PublishError::Config(msg)) => assert!(msg.contains("client"), "{msg}"),
        other => panic!("a key of another certificate must be refused: {other:?}"),
    }
    let key_only = TlsConfig {
        client_cert: None,
        ..pki.tls("ca.pem", true)
    };
    assert!(matches!(start(key_only), Err(PublishError::Config(_))));
}
