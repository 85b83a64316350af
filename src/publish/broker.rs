//! The embedded MQTT broker (rumqttd) used when no broker is configured, so that the daemon runs
//! with nothing else installed.
//!
//! rumqttd 0.20 has no shutdown API: its router and server threads run until the process exits.
//! To stop cleanly anyway, rumqttd listens on an internal ephemeral port and a small TCP relay owns
//! the public `127.0.0.1:<port>`. [`EmbeddedBroker::stop`] closes the public listener and every
//! relayed connection (clients see a disconnect and the port is free again); the idle rumqttd
//! threads stay parked until the process ends.

use std::collections::HashMap;
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
        let internal = {
            let probe = StdListener::bind((Ipv4Addr::LOCALHOST, 0))
                .map_err(|source| BrokerError::Bind { port: 0, source })?;
            probe
                .local_addr()
                .map_err(|source| BrokerError::Bind { port: 0, source })?
        };
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
        while StdStream::connect_timeout(&internal, Duration::from_millis(100)).is_err() {
            if Instant::now() > deadline {
                return Err(BrokerError::Start(format!(
                    "rumqttd did not listen on {internal} within 5 s"
                )));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
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
}
