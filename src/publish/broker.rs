//! The embedded MQTT broker (rumqttd) used when no broker is configured, so that the daemon runs
//! with nothing else installed.
//!
//! rumqttd 0.20 has no shutdown API: its router and server threads run until the process exits.
//! To stop cleanly anyway, rumqttd listens on an internal ephemeral port and a small TCP relay owns
//! the public `127.0.0.1:<port>`. [`EmbeddedBroker::stop`] closes the public listener and every
//! relayed connection (clients see a disconnect and the port is free again); the idle rumqttd
//! threads stay parked until the process ends.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener as StdListener, TcpStream as StdStream};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rumqttd::{Config, ConnectionSettings, RouterConfig, ServerSettings};
use tokio::sync::oneshot;

/// Why the embedded broker could not start.
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    #[error("embedded broker: cannot listen on 127.0.0.1:{port}: {source}")]
    Bind { port: u16, source: std::io::Error },
    #[error("embedded broker: {0}")]
    Start(String),
}

/// A running embedded broker on `127.0.0.1`.
pub struct EmbeddedBroker {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    relay: Option<JoinHandle<()>>,
}

fn rumqttd_config(listen: SocketAddr) -> Config {
    let server = ServerSettings {
        name: "tandem-embedded-v4".to_string(),
        listen,
        tls: None,
        next_connection_delay_ms: 1,
        connections: ConnectionSettings {
            connection_timeout_ms: 60_000,
            max_payload_size: 1 << 20,
            max_inflight_count: 500,
            auth: None,
            external_auth: None,
            dynamic_filters: true,
        },
    };
    Config {
        id: 0,
        router: RouterConfig {
            max_connections: 10_000,
            max_outgoing_packet_count: 200,
            max_segment_size: 4 << 20,
            max_segment_count: 10,
            custom_segment: None,
            initialized_filters: None,
            shared_subscriptions_strategy: Default::default(),
        },
        v4: Some(HashMap::from([("1".to_string(), server)])),
        ..Default::default()
    }
}

impl EmbeddedBroker {
    /// Starts rumqttd and the relay on `127.0.0.1:port` (`port` 0 picks a free port) and returns
    /// once the broker accepts connections. Works with or without a surrounding tokio runtime.
    pub fn start(port: u16) -> Result<Self, BrokerError> {
        let public = StdListener::bind((Ipv4Addr::LOCALHOST, port))
            .map_err(|source| BrokerError::Bind { port, source })?;
        let addr = public
            .local_addr()
            .map_err(|source| BrokerError::Bind { port, source })?;
        public
            .set_nonblocking(true)
            .map_err(|source| BrokerError::Bind { port, source })?;
        let internal = start_rumqttd()?;
        let (stop_tx, stop_rx) = oneshot::channel();
        let relay = std::thread::Builder::new()
            .name("rumqttd-relay".to_string())
            .spawn(move || relay(public, internal, stop_rx))
            .map_err(|e| BrokerError::Start(format!("cannot spawn relay thread: {e}")))?;
        Ok(Self {
            addr,
            stop: Some(stop_tx),
            relay: Some(relay),
        })
    }

    /// The public address (`127.0.0.1:<port>`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The public port (useful when started with port 0).
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Closes the listener and all client connections; the port is free when this returns.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(relay) = self.relay.take() {
            let _ = relay.join();
        }
    }
}

impl Drop for EmbeddedBroker {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Attempts at an internal port before giving up.
const INTERNAL_ATTEMPTS: u32 = 8;
/// The lowest internal port tried.
const INTERNAL_MIN_PORT: u16 = 10_000;

/// Starts rumqttd on an internal port and returns its address once it answers an MQTT CONNECT.
///
/// rumqttd binds its listener itself from a port number, so a port has to be chosen first.
/// It is taken below the kernel's ephemeral range: `bind(0)` and outgoing connections draw from
/// that range, so another socket of this process (a parallel test, a client) could otherwise
/// take the port between the probe and rumqttd's bind, and the readiness check would then
/// reach the wrong listener. The MQTT handshake proves the listener is rumqttd; a port that
/// fails it is given up and the next one tried (a rumqttd that could not bind stays parked).
fn start_rumqttd() -> Result<SocketAddr, BrokerError> {
    let high = ephemeral_low().max(INTERNAL_MIN_PORT + 1000);
    let span = u32::from(high - INTERNAL_MIN_PORT);
    let mut pick = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0)
        ^ std::process::id().wrapping_mul(2_654_435_761);
    let mut last_error = String::from("no free internal port");
    for _ in 0..INTERNAL_ATTEMPTS {
        pick = pick.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let port = INTERNAL_MIN_PORT + ((pick >> 8) % span) as u16;
        let internal = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        // Free now? (Closed again at once: rumqttd binds it itself.)
        if StdListener::bind(internal).is_err() {
            last_error = format!("{internal} is taken");
            continue;
        }
        std::thread::Builder::new()
            .name("rumqttd".to_string())
            .spawn(move || {
                let mut broker = rumqttd::Broker::new(rumqttd_config(internal));
                if let Err(e) = broker.start() {
                    log::error!("embedded broker stopped: {e}");
                }
            })
            .map_err(|e| BrokerError::Start(format!("cannot spawn broker thread: {e}")))?;
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match mqtt_handshake(internal) {
                Ok(()) => return Ok(internal),
                Err(e) if Instant::now() > deadline => {
                    last_error = format!("rumqttd did not answer on {internal} within 5 s: {e}");
                    break;
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    }
    Err(BrokerError::Start(last_error))
}

/// The first port of the kernel's ephemeral range (32768 when it cannot be read).
fn ephemeral_low() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}

/// One MQTT 3.1.1 CONNECT (clean session, client id `tandem-probe`) answered by an accepting
/// CONNACK.
fn mqtt_handshake(addr: SocketAddr) -> std::io::Result<()> {
    let timeout = Duration::from_millis(500);
    let mut stream = StdStream::connect_timeout(&addr, Duration::from_millis(100))?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    let id = b"tandem-probe";
    let mut packet = vec![0x10, (10 + 2 + id.len()) as u8];
    packet.extend_from_slice(&[0, 4, b'M', b'Q', b'T', b'T', 4, 0x02, 0, 10]);
    packet.extend_from_slice(&(id.len() as u16).to_be_bytes());
    packet.extend_from_slice(id);
    stream.write_all(&packet)?;
    let mut ack = [0u8; 4];
    stream.read_exact(&mut ack)?;
    if ack[0] == 0x20 && ack[1] == 2 && ack[3] == 0 {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "not an accepting MQTT CONNACK: {ack:02x?}"
        )))
    }
}

/// Accepts on `public` and pipes each connection to rumqttd until `stop` fires; dropping the
/// runtime at the end closes every socket.
fn relay(public: StdListener, internal: SocketAddr, stop: oneshot::Receiver<()>) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            log::error!("embedded broker relay: no runtime: {e}");
            return;
        }
    };
    runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::from_std(public) {
            Ok(l) => l,
            Err(e) => {
                log::error!("embedded broker relay: {e}");
                return;
            }
        };
        let accept = async {
            loop {
                match listener.accept().await {
                    Ok((mut client, _)) => {
                        tokio::spawn(async move {
                            let _ = client.set_nodelay(true);
                            if let Ok(mut upstream) = tokio::net::TcpStream::connect(internal).await
                            {
                                let _ = upstream.set_nodelay(true);
                                let _ =
                                    tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
                            }
                        });
                    }
                    Err(e) => {
                        log::warn!("embedded broker relay: accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
        };
        tokio::select! {
            _ = stop => {}
            _ = accept => {}
        }
    });
    // Dropping the runtime cancels the relayed connections and closes their sockets.
    drop(runtime);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_and_stop_frees_the_port() {
        let broker = EmbeddedBroker::start(0).unwrap();
        let addr = broker.addr();
        assert!(StdStream::connect(addr).is_ok());
        broker.stop();
        assert!(StdListener::bind(addr).is_ok(), "port still taken");
    }

    #[test]
    fn taken_port_is_a_bind_error() {
        let holder = StdListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = holder.local_addr().unwrap().port();
        assert!(matches!(
            EmbeddedBroker::start(port),
            Err(BrokerError::Bind { .. })
        ));
    }

    #[test]
    fn readiness_needs_an_mqtt_answer_not_just_a_listener() {
        // Some other program's listener on the port: it accepts and answers, but not with a CONNACK.
        let other = StdListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let addr = other.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = other.accept().unwrap();
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n");
        });
        assert!(mqtt_handshake(addr).is_err());
        server.join().unwrap();
        let broker = EmbeddedBroker::start(0).unwrap();
        assert!(
            mqtt_handshake(broker.addr()).is_ok(),
            "the relay reaches rumqttd"
        );
        assert!(ephemeral_low() > INTERNAL_MIN_PORT);
    }
}
