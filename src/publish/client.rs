//! The MQTT client: a tokio task around `rumqttc` that delivers the outbox with QoS 1 and feeds
//! clock and arbiter inputs to a channel.
//!
//! Delivery protocol. Every message (event, state, clock command, error event) is first appended
//! to the [`Outbox`]; only then is it handed to rumqttc. rumqttc assigns packet ids itself, so the
//! task maps them back: requests reach rumqttc's queue in the order they are submitted (all under
//! one lock), and each QoS 1 publish produces exactly one `Outgoing::Publish(pkid)` (or
//! `AwaitAck(pkid)` on a packet-id collision) in that order, which pops the submission FIFO.
//! A PUBACK for `pkid` then acknowledges the outbox entry. The session is clean: on any connection
//! error the task drops everything rumqttc still holds and, after the next CONNACK, resubmits every
//! unacknowledged outbox entry in sequence order. Receivers see duplicates (same `id`), never gaps.
//!
//! The lock is a `std::sync::Mutex` held only for short, non-async sections (an fsync with
//! `fsync = "always"` is the longest).

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rumqttc::{
    AsyncClient, ConnectionError, Event, EventLoop, Incoming, LastWill, MqttOptions, Outgoing, QoS,
    SubscribeFilter, TlsConfiguration, Transport,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;

use super::outbox::{FsyncPolicy, Outbox, OutboxConfig, OutboxError};
use super::payloads::{
    ClockCommand, EventError, EventMeta, Inbound, InboundError, Presence, StatusPayload,
    parse_inbound_message,
};
use super::topics::{
    DaemonId, TableId, TopicError, clock_command_topic, daemon_status_topic, error_topic,
    event_topic, feed_topic, state_topic, subscription_filters, table_status_topic,
};

/// TLS settings (rustls with the ring provider). The broker's certificate must be signed by a CA
/// in `ca_file` and name the configured `host` (a DNS name or an IP address SAN); the system trust
/// store is not used. `client_cert` and `client_key` come together or not at all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// PEM file with the CA certificate(s) that sign the broker's certificate.
    pub ca_file: PathBuf,
    /// PEM client certificate for mutual TLS.
    #[serde(default)]
    pub client_cert: Option<PathBuf>,
    /// PEM private key for the client certificate.
    #[serde(default)]
    pub client_key: Option<PathBuf>,
}

impl TlsConfig {
    /// Reads the PEM files and builds the rustls client configuration, so that unreadable or
    /// malformed files are a start error rather than an endless reconnect loop.
    pub fn client_config(&self) -> Result<Arc<rustls::ClientConfig>, PublishError> {
        install_crypto_provider();
        let mut roots = rustls::RootCertStore::empty();
        for cert in read_certs(&self.ca_file, "ca_file")? {
            roots.add(cert).map_err(|e| {
                PublishError::Config(format!(
                    "tls.ca_file {}: unusable CA certificate: {e}",
                    self.ca_file.display()
                ))
            })?;
        }
        let builder = rustls::ClientConfig::builder().with_root_certificates(roots);
        let config = match (&self.client_cert, &self.client_key) {
            (None, None) => builder.with_no_client_auth(),
            (Some(cert), Some(key)) => {
                let chain = read_certs(cert, "client_cert")?;
                let bytes = read_pem_file(key, "client_key")?;
                let key_der = PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| {
                    PublishError::Config(format!(
                        "tls.client_key {}: no PEM private key: {e}",
                        key.display()
                    ))
                })?;
                builder.with_client_auth_cert(chain, key_der).map_err(|e| {
                    PublishError::Config(format!(
                        "tls.client_cert/client_key: unusable client identity: {e}"
                    ))
                })?
            }
            _ => {
                return Err(PublishError::Config(
                    "tls.client_cert and tls.client_key must be set together".to_string(),
                ));
            }
        };
        Ok(Arc::new(config))
    }
}

/// Makes ring the process-wide rustls provider; a provider installed earlier (by us or by the
/// embedding program) is kept.
fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

fn read_pem_file(path: &std::path::Path, field: &str) -> Result<Vec<u8>, PublishError> {
    std::fs::read(path).map_err(|e| {
        PublishError::Config(format!("tls.{field}: cannot read {}: {e}", path.display()))
    })
}

/// Every certificate in a PEM file; an empty or malformed file is an error.
fn read_certs(
    path: &std::path::Path,
    field: &str,
) -> Result<Vec<CertificateDer<'static>>, PublishError> {
    let bytes = read_pem_file(path, field)?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            PublishError::Config(format!("tls.{field} {}: bad PEM: {e}", path.display()))
        })?;
    if certs.is_empty() {
        return Err(PublishError::Config(format!(
            "tls.{field} {}: no PEM certificate in the file",
            path.display()
        )));
    }
    Ok(certs)
}

/// MQTT settings (the `[mqtt]` TOML table). Every field has a working default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MqttConfig {
    /// Broker host; `None` means "no broker configured": the daemon starts the embedded broker
    /// on `127.0.0.1:port` and connects there.
    pub host: Option<String>,
    pub port: u16,
    /// MQTT client id; must be unique per broker.
    pub client_id: String,
    /// Names `tandem/v1/daemon/<daemon_id>/status`; defaults to the client id.
    pub daemon_id: Option<String>,
    pub username: Option<String>,
    pub password: Option<String>,
    pub tls: Option<TlsConfig>,
    pub keep_alive_secs: u64,
    /// Tables this daemon serves: subscriptions, table status topics, and accepted inputs.
    /// Empty = subscribe for every table (`+`).
    pub tables: Vec<String>,
    /// The persistent outbox.
    pub outbox: OutboxConfig,
    /// Most messages awaiting PUBACK at once.
    pub inflight: u16,
    /// First reconnect delay; doubled on each failure up to `reconnect_max_ms`.
    pub reconnect_min_ms: u64,
    pub reconnect_max_ms: u64,
    /// Publish an `error` event for each rejected inbound message.
    pub publish_input_errors: bool,
    /// Capacity of the inbound channel handed to the daemon.
    pub inbound_capacity: usize,
}

impl Default for MqttConfig {
    fn default() -> Self {
        Self {
            host: None,
            port: 1883,
            client_id: "tandem-monitor".to_string(),
            daemon_id: None,
            username: None,
            password: None,
            tls: None,
            keep_alive_secs: 15,
            tables: Vec::new(),
            outbox: OutboxConfig::default(),
            inflight: 100,
            reconnect_min_ms: 100,
            reconnect_max_ms: 5_000,
            publish_input_errors: true,
            inbound_capacity: 1024,
        }
    }
}

impl MqttConfig {
    /// True when no external broker is configured and the embedded one must be started.
    pub fn needs_embedded_broker(&self) -> bool {
        self.host.is_none()
    }

    /// The host to connect to (the embedded broker's address when none is configured).
    pub fn broker_host(&self) -> &str {
        self.host.as_deref().unwrap_or("127.0.0.1")
    }
}

/// Why the publisher could not start or accept a message.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    #[error(transparent)]
    Outbox(#[from] OutboxError),
    #[error("invalid event: {0}")]
    Event(#[from] EventError),
    #[error("invalid MQTT configuration: {0}")]
    Topic(#[from] TopicError),
    #[error("invalid MQTT configuration: {0}")]
    Config(String),
    /// The publisher task has stopped.
    #[error("the MQTT publisher is shut down")]
    Stopped,
}

/// What the daemon receives from subscribed topics.
#[derive(Debug, Clone, PartialEq)]
pub enum InboundMessage {
    /// A valid clock or arbiter input.
    Input(Inbound),
    /// A rejected message: log it (an `error` event was already published if configured).
    Rejected { topic: String, error: InboundError },
}

/// Counters for health output and the load test.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PublisherStats {
    /// Messages appended to the outbox by this process.
    pub enqueued: u64,
    /// Outbox entries acknowledged by the broker (PUBACK).
    pub acked: u64,
    /// Publishes handed to rumqttc, including resends after reconnects.
    pub sent: u64,
    /// Unacknowledged outbox entries right now.
    pub pending: usize,
    /// Successful connections (the first one included).
    pub connections: u64,
    pub connected: bool,
    pub inbound: u64,
    pub rejected: u64,
    /// The last connection error (e.g. "Connection refused, return code: `NotAuthorized`"),
    /// for health output; kept after a successful reconnect.
    pub last_error: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Entry(u64),
    Control,
}

struct Shared {
    outbox: Outbox,
    connected: bool,
    stopping: bool,
    fifo: VecDeque<Slot>,
    inflight: HashMap<u16, Slot>,
    collided: Option<(u16, Slot)>,
    /// Highest outbox seq handed to rumqttc on the current connection.
    submitted_upto: u64,
    /// Every seq up to here is on stable storage (per the fsync policy) and may be sent.
    durable_upto: u64,
    entries_in_flight: usize,
    controls_in_flight: usize,
    window: usize,
    enqueued_at: HashMap<u64, Instant>,
    latencies: Vec<Duration>,
    stats: PublisherStats,
    error_seq: u64,
}

/// Keeps at most this many latency samples (enough for the load test, bounded for a daemon).
const MAX_LATENCY_SAMPLES: usize = 1 << 20;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Shared {
    /// Hands pending outbox entries to rumqttc while connected and the window has room.
    fn pump(&mut self, client: &AsyncClient) {
        while self.connected && self.entries_in_flight < self.window {
            let Some(seq) = self
                .outbox
                .pending_after(self.submitted_upto)
                .next()
                .filter(|seq| *seq <= self.durable_upto)
            else {
                break;
            };
            let entry = self
                .outbox
                .get(seq)
                .expect("pending_after yields only pending seqs");
            self.submitted_upto = seq;
            match client.try_publish(
                entry.topic.clone(),
                QoS::AtLeastOnce,
                entry.retain,
                entry.payload.clone().into_bytes(),
            ) {
                Ok(()) => {
                    self.fifo.push_back(Slot::Entry(seq));
                    self.entries_in_flight += 1;
                    self.stats.sent += 1;
                }
                Err(e) => {
                    // The channel holds more than the window, so this is an invalid topic, which
                    // push() rules out; drop the entry rather than block the queue forever.
                    log::error!(
                        "outbox entry {seq} on {:?} cannot be published ({e}); dropping it",
                        entry.topic
                    );
                    let _ = self.outbox.ack(seq);
                }
            }
        }
    }

    /// Appends to the outbox; with `fsync = "never"` the entry may be sent at once, otherwise the
    /// sync thread sends it after its group fsync.
    fn queue(
        &mut self,
        client: &AsyncClient,
        sync_wake: Option<&SyncSender<()>>,
        topic: String,
        payload: String,
        retain: bool,
    ) -> Result<u64, OutboxError> {
        let seq = self.outbox.append(topic, payload, retain)?;
        self.stats.enqueued += 1;
        self.enqueued_at.insert(seq, Instant::now());
        match sync_wake {
            Some(wake) => {
                // A full channel means a wake-up is already pending: nothing to do.
                let _ = wake.try_send(());
            }
            None => {
                self.durable_upto = seq;
                self.pump(client);
            }
        }
        Ok(seq)
    }

    fn control(&mut self, client: &AsyncClient, topic: String, payload: Vec<u8>) {
        if client
            .try_publish(topic, QoS::AtLeastOnce, true, payload)
            .is_ok()
        {
            self.fifo.push_back(Slot::Control);
            self.controls_in_flight += 1;
        }
    }

    fn new(outbox: Outbox, window: usize) -> Self {
        let durable_upto = outbox.last_seq();
        let pending = outbox.len();
        Self {
            outbox,
            connected: false,
            stopping: false,
            fifo: VecDeque::new(),
            inflight: HashMap::new(),
            collided: None,
            submitted_upto: 0,
            durable_upto,
            entries_in_flight: 0,
            controls_in_flight: 0,
            window,
            enqueued_at: HashMap::new(),
            latencies: Vec::new(),
            stats: PublisherStats {
                pending,
                ..Default::default()
            },
            error_seq: 0,
        }
    }

    /// rumqttc wrote a QoS 1 publish with `pkid`: the oldest submission (or the one parked by a
    /// packet-id collision on that pkid) now waits for that PUBACK.
    fn on_sent(&mut self, pkid: u16) {
        let slot = match self.collided {
            Some((p, slot)) if p == pkid => {
                self.collided = None;
                Some(slot)
            }
            _ => self.fifo.pop_front(),
        };
        if let Some(slot) = slot {
            self.inflight.insert(pkid, slot);
        }
    }

    /// rumqttc parked the oldest submission because `pkid` is still in flight; it is written
    /// (and reported by `on_sent(pkid)`) once that pkid is acknowledged.
    fn on_collision(&mut self, pkid: u16) {
        if let Some(slot) = self.fifo.pop_front() {
            self.collided = Some((pkid, slot));
        }
    }

    /// The broker acknowledged `pkid`: the outbox entry leaves the outbox; more may be sent.
    fn on_puback(&mut self, pkid: u16, client: &AsyncClient) {
        if let Some(slot) = self.inflight.remove(&pkid) {
            self.settle(slot);
            self.pump(client);
        }
    }

    fn drop_connection_state(&mut self) {
        self.connected = false;
        self.fifo.clear();
        self.inflight.clear();
        self.collided = None;
        self.submitted_upto = 0;
        self.entries_in_flight = 0;
        self.controls_in_flight = 0;
    }

    fn settle(&mut self, slot: Slot) {
        match slot {
            Slot::Entry(seq) => {
                self.entries_in_flight = self.entries_in_flight.saturating_sub(1);
                match self.outbox.ack(seq) {
                    Ok(true) => {
                        self.stats.acked += 1;
                        if let Some(t) = self.enqueued_at.remove(&seq)
                            && self.latencies.len() < MAX_LATENCY_SAMPLES
                        {
                            self.latencies.push(t.elapsed());
                        }
                    }
                    Ok(false) => {}
                    Err(e) => log::error!("outbox: cannot record ack of {seq}: {e}"),
                }
            }
            Slot::Control => self.controls_in_flight = self.controls_in_flight.saturating_sub(1),
        }
    }
}

struct Settings {
    daemon: DaemonId,
    tables: Vec<TableId>,
    filters: Vec<String>,
    reconnect_min: Duration,
    reconnect_max: Duration,
    publish_input_errors: bool,
    /// Wakes the group-commit thread (`fsync = "always"` only).
    sync_wake: Option<SyncSender<()>>,
}

/// Publishes events through the outbox and receives clock and arbiter inputs.
///
/// Cloning is not offered: one publisher owns one outbox directory.
pub struct Publisher {
    shared: Arc<Mutex<Shared>>,
    client: AsyncClient,
    progress: Arc<Notify>,
    settings: Arc<Settings>,
    task: Option<JoinHandle<()>>,
    sync_thread: Option<std::thread::JoinHandle<()>>,
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    // A panic while holding the lock would already have been a bug; keep going with the data.
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

fn status_payload(status: Presence, daemon: &DaemonId) -> Vec<u8> {
    serde_json::to_vec(&StatusPayload {
        status,
        daemon: daemon.clone(),
        ts: now_ms(),
    })
    .expect("status payload is plain data")
}

impl Publisher {
    /// Opens the outbox, connects (in the background, retrying with backoff) and returns the
    /// publisher and the channel of inbound clock/arbiter messages.
    ///
    /// Must be called inside a tokio runtime. Unacknowledged entries from a previous run are
    /// delivered first. The caller must keep draining the inbound channel: while it is full the
    /// MQTT task waits (backpressure to the broker), and acknowledgements wait with it.
    pub fn start(
        config: MqttConfig,
    ) -> Result<(Publisher, mpsc::Receiver<InboundMessage>), PublishError> {
        if config.tls.is_some() && config.needs_embedded_broker() {
            return Err(PublishError::Config(
                "tls needs a host: the embedded broker only speaks plain TCP on 127.0.0.1"
                    .to_string(),
            ));
        }
        let tls = config
            .tls
            .as_ref()
            .map(TlsConfig::client_config)
            .transpose()?;
        if config.inflight == 0 || config.inbound_capacity == 0 {
            return Err(PublishError::Config(
                "inflight and inbound_capacity must be at least 1".to_string(),
            ));
        }
        let daemon = DaemonId::new(
            config
                .daemon_id
                .clone()
                .unwrap_or_else(|| config.client_id.clone()),
        )?;
        let tables = config
            .tables
            .iter()
            .map(TableId::new)
            .collect::<Result<Vec<_>, _>>()?;
        let outbox = Outbox::open(config.outbox.clone())?;
        let fsync = outbox.fsync_policy();

        let mut options = MqttOptions::new(
            config.client_id.clone(),
            config.broker_host().to_string(),
            config.port,
        );
        options
            .set_keep_alive(Duration::from_secs(config.keep_alive_secs.max(5)))
            .set_clean_session(true)
            .set_inflight(config.inflight)
            .set_max_packet_size(1 << 20, 1 << 20)
            .set_last_will(LastWill::new(
                daemon_status_topic(&daemon),
                status_payload(Presence::Offline, &daemon),
                QoS::AtLeastOnce,
                true,
            ));
        if let Some(tls) = tls {
            options.set_transport(Transport::Tls(TlsConfiguration::Rustls(tls)));
        }
        match (&config.username, &config.password) {
            (Some(user), password) => {
                options.set_credentials(user.clone(), password.clone().unwrap_or_default());
            }
            (None, Some(_)) => {
                return Err(PublishError::Config(
                    "password is set without username".to_string(),
                ));
            }
            (None, None) => {}
        }
        // Room for the whole window plus status and error messages: try_publish never sees a
        // full channel.
        let capacity = usize::from(config.inflight) + 2 * tables.len() + 64;
        let (client, eventloop) = AsyncClient::new(options, capacity);
        let (sync_wake_tx, sync_wake_rx) = match fsync {
            FsyncPolicy::Always => {
                let (tx, rx) = sync_channel(1);
                (Some(tx), Some(rx))
            }
            FsyncPolicy::Never => (None, None),
        };
        let progress = Arc::new(Notify::new());
        let shared = Arc::new(Mutex::new(Shared::new(
            outbox,
            usize::from(config.inflight),
        )));
        let settings = Arc::new(Settings {
            daemon,
            filters: subscription_filters(&tables),
            tables,
            reconnect_min: Duration::from_millis(config.reconnect_min_ms.max(1)),
            reconnect_max: Duration::from_millis(
                config.reconnect_max_ms.max(config.reconnect_min_ms.max(1)),
            ),
            publish_input_errors: config.publish_input_errors,
            sync_wake: sync_wake_tx,
        });
        let (inbound_tx, inbound_rx) = mpsc::channel(config.inbound_capacity);
        let sync_thread = match sync_wake_rx {
            Some(rx) => {
                let (shared, client, progress) = (shared.clone(), client.clone(), progress.clone());
                Some(
                    std::thread::Builder::new()
                        .name("outbox-sync".to_string())
                        .spawn(move || sync_loop(rx, shared, client, progress))
                        .map_err(|e| {
                            PublishError::Config(format!(
                                "cannot start the outbox sync thread: {e}"
                            ))
                        })?,
                )
            }
            None => None,
        };
        let task = tokio::spawn(run(
            eventloop,
            client.clone(),
            shared.clone(),
            settings.clone(),
            progress.clone(),
            inbound_tx,
        ));
        Ok((
            Publisher {
                shared,
                client,
                progress,
                settings,
                task: Some(task),
                sync_thread,
            },
            inbound_rx,
        ))
    }

    /// Validates a referee event and queues it for `tandem/v1/<table>/event/<type>`.
    ///
    /// Returns the outbox sequence number once the event is written to the outbox file (safe from
    /// a crash of this process). With `fsync = "always"` it is sent only after a group fsync has
    /// made it safe from a power loss too; [`Publisher::wait_durable`] waits for that. Delivery
    /// happens in the background (QoS 1, not retained). Never blocks on the network.
    pub fn publish_event(&self, event: &Value) -> Result<u64, PublishError> {
        let meta = EventMeta::from_event(event)?;
        let topic = event_topic(&meta.table, &meta.event_type)?;
        self.enqueue(topic, event.to_string(), false)
    }

    /// Queues the table state for the retained `tandem/v1/<table>/state`.
    pub fn publish_state(&self, table: &TableId, state: &Value) -> Result<u64, PublishError> {
        self.enqueue(state_topic(table), state.to_string(), true)
    }

    /// Queues one file of the live feed for the retained `tandem/v1/<table>/feed/<kind>`.
    pub fn publish_feed(
        &self,
        table: &TableId,
        kind: &str,
        payload: String,
    ) -> Result<u64, PublishError> {
        self.enqueue(feed_topic(table, kind), payload, true)
    }

    /// Queues a command for a clock (`tandem/v1/<table>/clock/<board>/cmd`, QoS 1, not retained).
    pub fn clock_command(&self, command: &ClockCommand) -> Result<u64, PublishError> {
        let payload = serde_json::to_string(command).expect("clock commands are plain data");
        self.enqueue(
            clock_command_topic(&command.table, command.board),
            payload,
            false,
        )
    }

    fn enqueue(&self, topic: String, payload: String, retain: bool) -> Result<u64, PublishError> {
        let mut shared = lock(&self.shared);
        if shared.stopping {
            return Err(PublishError::Stopped);
        }
        let seq = shared.queue(
            &self.client,
            self.settings.sync_wake.as_ref(),
            topic,
            payload,
            retain,
        )?;
        Ok(seq)
    }

    /// Waits until entry `seq` is on stable storage per the fsync policy; false on timeout.
    pub async fn wait_durable(&self, seq: u64, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.progress.notified();
            if lock(&self.shared).durable_upto >= seq {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return false;
            }
        }
    }

    /// Current counters.
    pub fn stats(&self) -> PublisherStats {
        let shared = lock(&self.shared);
        let mut stats = shared.stats.clone();
        stats.pending = shared.outbox.len();
        stats.connected = shared.connected;
        stats
    }

    /// Takes the enqueue→PUBACK latencies recorded so far (entries enqueued by this process).
    pub fn take_ack_latencies(&self) -> Vec<Duration> {
        std::mem::take(&mut lock(&self.shared).latencies)
    }

    /// The daemon id used in status payloads and the Last Will topic.
    pub fn daemon_id(&self) -> &DaemonId {
        &self.settings.daemon
    }

    /// Waits until every outbox entry and status message is acknowledged; false on timeout.
    pub async fn wait_idle(&self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.progress.notified();
            {
                let shared = lock(&self.shared);
                if shared.connected && shared.outbox.is_empty() && shared.controls_in_flight == 0 {
                    return true;
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return false;
            }
        }
    }

    /// Publishes retained `offline` statuses, waits up to `timeout` for pending acknowledgements,
    /// and disconnects. Unacknowledged entries stay in the outbox for the next start.
    pub async fn shutdown(mut self, timeout: Duration) {
        {
            let mut shared = lock(&self.shared);
            if shared.connected {
                let payload = status_payload(Presence::Offline, &self.settings.daemon);
                for table in &self.settings.tables {
                    shared.control(&self.client, table_status_topic(table), payload.clone());
                }
                shared.control(
                    &self.client,
                    daemon_status_topic(&self.settings.daemon),
                    payload,
                );
            }
        }
        self.wait_idle(timeout).await;
        lock(&self.shared).stopping = true;
        let _ = self.client.try_disconnect();
        if let Some(mut task) = self.task.take()
            && tokio::time::timeout(Duration::from_secs(2), &mut task)
                .await
                .is_err()
        {
            log::warn!("mqtt task did not stop within 2 s; aborting it");
            task.abort();
            let _ = task.await;
        }
        self.stop_sync_thread();
        if let Some(handle) = self.sync_thread.take() {
            let _ = tokio::task::spawn_blocking(move || handle.join()).await;
        }
        // Everything holding the outbox has ended: a new Publisher may open it at once.
    }

    /// Asks the sync thread to do a last group fsync and end (stopping is already set).
    fn stop_sync_thread(&self) {
        lock(&self.shared).stopping = true;
        if let Some(wake) = &self.settings.sync_wake {
            // Full means a wake-up is queued and not yet received: it will see `stopping`.
            let _ = wake.try_send(());
        }
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        // Without shutdown() the connection just drops: the broker sends the Last Will.
        if let Some(task) = self.task.take() {
            task.abort();
        }
        self.stop_sync_thread();
    }
}

async fn run(
    mut eventloop: EventLoop,
    client: AsyncClient,
    shared: Arc<Mutex<Shared>>,
    settings: Arc<Settings>,
    progress: Arc<Notify>,
    inbound_tx: mpsc::Sender<InboundMessage>,
) {
    let mut backoff = settings.reconnect_min;
    loop {
        match eventloop.poll().await {
            Ok(Event::Incoming(Incoming::ConnAck(_))) => {
                backoff = settings.reconnect_min;
                let mut s = lock(&shared);
                s.connected = true;
                s.stats.connections += 1;
                let filters = settings
                    .filters
                    .iter()
                    .map(|f| SubscribeFilter::new(f.clone(), QoS::AtLeastOnce));
                if let Err(e) = client.try_subscribe_many(filters) {
                    log::error!("mqtt: cannot subscribe: {e}");
                }
                let online = status_payload(Presence::Online, &settings.daemon);
                s.control(
                    &client,
                    daemon_status_topic(&settings.daemon),
                    online.clone(),
                );
                for table in &settings.tables {
                    s.control(&client, table_status_topic(table), online.clone());
                }
                s.pump(&client);
                drop(s);
                progress.notify_waiters();
            }
            Ok(Event::Outgoing(Outgoing::Publish(pkid))) => lock(&shared).on_sent(pkid),
            Ok(Event::Outgoing(Outgoing::AwaitAck(pkid))) => lock(&shared).on_collision(pkid),
            Ok(Event::Incoming(Incoming::PubAck(ack))) => {
                lock(&shared).on_puback(ack.pkid, &client);
                progress.notify_waiters();
            }
            Ok(Event::Incoming(Incoming::Publish(publish))) => {
                let message = match parse_inbound_message(
                    &settings.tables,
                    &publish.topic,
                    &publish.payload,
                    publish.retain,
                ) {
                    Ok(input) => {
                        lock(&shared).stats.inbound += 1;
                        InboundMessage::Input(input)
                    }
                    Err(error) => {
                        log::warn!("mqtt: rejected input: {error}");
                        let mut s = lock(&shared);
                        s.stats.rejected += 1;
                        if settings.publish_input_errors
                            && let Some(table) = InboundError::table_in_topic(&publish.topic)
                        {
                            s.error_seq += 1;
                            let ts = now_ms();
                            let id =
                                format!("{}-input-error-{ts}-{}", settings.daemon, s.error_seq);
                            let event = error.error_event(&id, &table, &publish.topic, ts);
                            if let Err(e) = s.queue(
                                &client,
                                settings.sync_wake.as_ref(),
                                error_topic(&table),
                                event.to_string(),
                                false,
                            ) {
                                log::error!("mqtt: cannot queue error event: {e}");
                            }
                        }
                        InboundMessage::Rejected {
                            topic: publish.topic.clone(),
                            error,
                        }
                    }
                };
                if inbound_tx.send(message).await.is_err() {
                    log::debug!("mqtt: inbound receiver dropped");
                }
            }
            Ok(Event::Outgoing(Outgoing::Disconnect)) => {
                if lock(&shared).stopping {
                    break;
                }
            }
            Ok(_) => {}
            Err(error) => {
                {
                    let mut s = lock(&shared);
                    // Drop what rumqttc still holds (its queue and pending resends); the outbox
                    // is resubmitted in order after the next CONNACK.
                    eventloop.clean();
                    eventloop.pending.clear();
                    let was_connected = s.connected;
                    s.drop_connection_state();
                    s.stats.last_error = Some(error.to_string());
                    if s.stopping {
                        break;
                    }
                    if was_connected {
                        log::warn!("mqtt: connection lost: {error}; reconnecting");
                    } else {
                        log::debug!("mqtt: connect failed: {error}");
                    }
                }
                if matches!(error, ConnectionError::RequestsDone) {
                    break;
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(settings.reconnect_max);
            }
        }
    }
    lock(&shared).drop_connection_state();
    progress.notify_waiters();
}

/// Group commit: one fsync covers every append made before it, however many producers wait.
/// Runs on its own thread because fsync blocks; ends when the publisher is gone.
fn sync_loop(
    wake: Receiver<()>,
    shared: Arc<Mutex<Shared>>,
    client: AsyncClient,
    progress: Arc<Notify>,
) {
    let mut retry = false;
    loop {
        if !retry && wake.recv().is_err() {
            return;
        }
        let (target, handle) = {
            let s = lock(&shared);
            let target = s.outbox.last_seq();
            if target <= s.durable_upto {
                if s.stopping {
                    return;
                }
                retry = false;
                continue;
            }
            (target, s.outbox.sync_handle())
        };
        match handle.and_then(|file| {
            file.sync_data().map_err(|source| OutboxError::Io {
                path: PathBuf::from("outbox.log"),
                source,
            })
        }) {
            Ok(()) => {
                let mut s = lock(&shared);
                s.durable_upto = s.durable_upto.max(target);
                s.pump(&client);
                retry = false;
            }
            Err(e) => {
                log::error!("outbox: fsync failed ({e}); retrying, nothing is sent meanwhile");
                std::thread::sleep(Duration::from_millis(100));
                retry = true;
            }
        }
        progress.notify_waiters();
        if lock(&shared).stopping {
            return; // after one last attempt: the outbox keeps whatever is not durable
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_defaults_and_toml() {
        let cfg: MqttConfig = toml::from_str(
            r#"
            host = "broker.local"
            port = 8883
            username = "u"
            password = "p"
            tables = ["t1", "t2"]
            [outbox]
            dir = "/tmp/x"
            fsync = "never"
            [tls]
            ca_file = "/etc/ca.pem"
            "#,
        )
        .unwrap();
        assert_eq!(cfg.broker_host(), "broker.local");
        assert!(!cfg.needs_embedded_broker());
        assert_eq!(cfg.outbox.dir, PathBuf::from("/tmp/x"));
        assert_eq!(cfg.keep_alive_secs, 15);
        assert!(cfg.tls.is_some());
        let d: MqttConfig = toml::from_str("").unwrap();
        assert!(d.needs_embedded_broker());
        assert_eq!(d.broker_host(), "127.0.0.1");
        assert!(toml::from_str::<MqttConfig>("hots = \"x\"").is_err());
    }

    #[tokio::test]
    async fn start_refuses_bad_configs() {
        let dir = tempfile::tempdir().unwrap();
        let base = MqttConfig {
            outbox: OutboxConfig {
                dir: dir.path().to_path_buf(),
                ..Default::default()
            },
            ..Default::default()
        };
        let tls = MqttConfig {
            host: Some("broker.local".into()),
            tls: Some(TlsConfig {
                ca_file: "/x".into(),
                client_cert: None,
                client_key: None,
            }),
            ..base.clone()
        };
        match Publisher::start(tls.clone()) {
            Err(PublishError::Config(msg)) => assert!(msg.contains("cannot read /x"), "{msg}"),
            other => panic!(
                "missing CA file must be a config error, got {:?}",
                other.err()
            ),
        }
        let embedded_tls = MqttConfig {
            host: None,
            ..tls.clone()
        };
        match Publisher::start(embedded_tls) {
            Err(PublishError::Config(msg)) => assert!(msg.contains("needs a host"), "{msg}"),
            other => panic!("tls without host must be refused, got {:?}", other.err()),
        }
        let not_pem = dir.path().join("not.pem");
        std::fs::write(&not_pem, "just text\n").unwrap();
        let half_identity = TlsConfig {
            ca_file: not_pem.clone(),
            client_cert: Some(not_pem.clone()),
            client_key: None,
        };
        match half_identity.client_config() {
            Err(PublishError::Config(msg)) => assert!(msg.contains("no PEM certificate"), "{msg}"),
            other => panic!(
                "a CA file without certificates must fail, got {:?}",
                other.err()
            ),
        }
        let bad_table = MqttConfig {
            tables: vec!["a/b".into()],
            ..base.clone()
        };
        assert!(matches!(
            Publisher::start(bad_table),
            Err(PublishError::Topic(_))
        ));
        let pw = MqttConfig {
            password: Some("p".into()),
            ..base.clone()
        };
        assert!(matches!(Publisher::start(pw), Err(PublishError::Config(_))));
    }

    fn pending_seqs(outbox: &Outbox) -> Vec<u64> {
        outbox.pending().map(|e| e.seq).collect()
    }

    /// The pkid bookkeeping, driven with the event sequence rumqttc produces, including a
    /// packet-id collision and a reconnect.
    #[test]
    fn pkid_mapping_follows_rumqttc_events() {
        let dir = tempfile::tempdir().unwrap();
        let outbox = Outbox::open(OutboxConfig {
            dir: dir.path().to_path_buf(),
            fsync: FsyncPolicy::Never,
            ..Default::default()
        })
        .unwrap();
        // A client whose event loop is never polled: try_publish only fills its queue.
        let (client, _eventloop) = AsyncClient::new(MqttOptions::new("t", "127.0.0.1", 9), 64);
        let mut s = Shared::new(outbox, 3);
        s.connected = true;
        for i in 1..=4 {
            let seq = s
                .queue(
                    &client,
                    None,
                    format!("tandem/v1/t/event/e{i}"),
                    "{}".into(),
                    false,
                )
                .unwrap();
            assert_eq!(seq, i);
        }
        assert_eq!(
            s.fifo,
            VecDeque::from([Slot::Entry(1), Slot::Entry(2), Slot::Entry(3)])
        );
        assert_eq!(s.stats.sent, 3, "window of 3 holds entry 4 back");
        s.on_sent(1);
        s.on_sent(2);
        s.on_collision(1); // entry 3 got pkid 1, still in flight for entry 1
        assert_eq!(s.collided, Some((1, Slot::Entry(3))));
        s.on_puback(1, &client); // acknowledges entry 1, not entry 3
        assert_eq!(pending_seqs(&s.outbox), vec![2, 3, 4]);
        assert_eq!(
            s.fifo,
            VecDeque::from([Slot::Entry(4)]),
            "window freed: 4 submitted"
        );
        s.on_sent(1); // the parked entry 3 is written with pkid 1
        s.on_sent(3);
        assert_eq!(s.inflight.get(&1), Some(&Slot::Entry(3)));
        assert_eq!(s.inflight.get(&3), Some(&Slot::Entry(4)));
        s.on_puback(2, &client);
        s.on_puback(1, &client);
        assert_eq!(pending_seqs(&s.outbox), vec![4]);
        s.on_puback(7, &client); // unsolicited: ignored
        // Connection lost before entry 4's PUBACK: it is sent again after reconnecting.
        s.drop_connection_state();
        s.connected = true;
        s.pump(&client);
        assert_eq!(s.fifo, VecDeque::from([Slot::Entry(4)]));
        s.on_sent(1);
        s.on_puback(1, &client);
        assert!(s.outbox.is_empty());
        assert_eq!(s.stats.acked, 4);
        assert_eq!(s.stats.sent, 5);
        assert_eq!(s.latencies.len(), 4);
    }

    #[tokio::test]
    async fn events_are_on_disk_before_any_broker_exists() {
        let dir = tempfile::tempdir().unwrap();
        // Port 9 (discard) on localhost: nothing listens, so nothing is ever acknowledged.
        let cfg = MqttConfig {
            host: Some("127.0.0.1".into()),
            port: 9,
            outbox: OutboxConfig {
                dir: dir.path().to_path_buf(),
                fsync: FsyncPolicy::Always,
                ..Default::default()
            },
            ..Default::default()
        };
        let (publisher, _rx) = Publisher::start(cfg.clone()).unwrap();
        let ev = serde_json::json!({"id":"e1","type":"move","table":"t1","ts":1,"board":"A"});
        assert_eq!(publisher.publish_event(&ev).unwrap(), 1);
        // The group-commit thread makes it durable although no broker ever answers.
        assert!(publisher.wait_durable(1, Duration::from_secs(5)).await);
        assert!(!publisher.wait_durable(2, Duration::from_millis(20)).await);
        assert!(matches!(
            publisher.publish_event(&serde_json::json!({"id":"e2"})),
            Err(PublishError::Event(_))
        ));
        assert!(!publisher.wait_idle(Duration::from_millis(50)).await);
        assert_eq!(publisher.stats().pending, 1);
        drop(publisher);
        // The aborted task releases the outbox (and its lock) when the runtime next runs it.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let outbox = Outbox::open(cfg.outbox).unwrap();
        let entry = outbox.pending().next().unwrap();
        assert_eq!(entry.topic, "tandem/v1/t1/event/move");
        assert_eq!(serde_json::from_str::<Value>(&entry.payload).unwrap(), ev);
    }
}
