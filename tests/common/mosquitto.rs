//! A Mosquitto broker for integration tests: a child process on a free port of 127.0.0.1 (never
//! 1883) with persistence in a temporary directory, which tests stop, freeze, kill and restart.
#![allow(dead_code)] // each test file uses a different part

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const MOSQUITTO: &str = "/usr/sbin/mosquitto";

/// A port of 127.0.0.1 free now, below the kernel's ephemeral range: the broker binds it only
/// later, and a port from that range (what `bind(0)` gives) can meanwhile become the local port
/// of any outgoing connection of the tests running in parallel (the broker then fails to start,
/// or a client reaches the wrong socket).
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let low: u32 = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768);
    let (first, span) = (10_000u32, low.saturating_sub(10_000).max(1000));
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos())
        ^ std::process::id().wrapping_mul(2_654_435_761);
    for _ in 0..1000 {
        let k = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = first + seed.wrapping_add(k.wrapping_mul(7_919)) % span;
        if TcpListener::bind((Ipv4Addr::LOCALHOST, port as u16)).is_ok() {
            return port as u16;
        }
    }
    panic!("no free port of 127.0.0.1 below the ephemeral range");
}

pub fn wait_for_port(port: u16, up: bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_ok() != up {
        assert!(
            Instant::now() < deadline,
            "port {port} did not become {}",
            if up { "reachable" } else { "free" }
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A Mosquitto child process with persistence in a temp dir, so that a graceful restart keeps
/// persistent subscriber sessions and their queued messages (as a production broker would).
pub struct Mosquitto {
    pub port: u16,
    dir: tempfile::TempDir,
    child: Option<Child>,
    /// Extra configuration lines (authentication, TLS options of the listener).
    extra: String,
    /// Whether clients may connect without a username.
    anonymous: bool,
}

impl Mosquitto {
    pub fn available() -> bool {
        if Path::new(MOSQUITTO).exists() {
            true
        } else {
            eprintln!("SKIPPED: {MOSQUITTO} is not installed");
            false
        }
    }

    pub fn start() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut m = Self {
            port: free_port(),
            dir,
            child: None,
            extra: String::new(),
            anonymous: true,
        };
        m.spawn();
        m
    }

    /// A broker that accepts only `user`/`password` (password file made by mosquitto_passwd).
    pub fn start_with_password(user: &str, password: &str) -> Option<Self> {
        let dir = tempfile::tempdir().expect("temp dir");
        let passwd = dir.path().join("passwd");
        let made = Command::new("mosquitto_passwd")
            .arg("-b")
            .arg("-c")
            .arg(&passwd)
            .args([user, password])
            .status()
            .is_ok_and(|s| s.success());
        if !made {
            eprintln!("SKIPPED: mosquitto_passwd is not available");
            return None;
        }
        let mut m = Self {
            port: free_port(),
            dir,
            child: None,
            extra: format!("password_file {}\n", passwd.display()),
            anonymous: false,
        };
        m.spawn();
        Some(m)
    }

    /// An anonymous broker whose only listener also takes `extra` (e.g. `certfile`, `keyfile`,
    /// `cafile` lines make `port` a TLS listener).
    pub fn start_with_extra(extra: &str) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut m = Self {
            port: free_port(),
            dir,
            child: None,
            extra: extra.to_string(),
            anonymous: true,
        };
        m.spawn();
        m
    }

    pub fn spawn(&mut self) {
        let conf = self.dir.path().join("mosquitto.conf");
        std::fs::write(
            &conf,
            format!(
                "listener {} 127.0.0.1\nallow_anonymous {}\npersistence true\npersistence_location {}/\n\
                 user root\nmax_queued_messages 100000\nlog_dest none\n{}",
                self.port,
                self.anonymous,
                self.dir.path().display(),
                self.extra,
            ),
        )
        .expect("write mosquitto.conf");
        let child = Command::new(MOSQUITTO)
            .arg("-c")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn mosquitto");
        self.child = Some(child);
        wait_for_port(self.port, true);
    }

    /// SIGTERM (Mosquitto saves its database) and wait for the exit.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let _ = child.wait();
            wait_for_port(self.port, false);
        }
    }

    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    /// SIGSTOP: the broker keeps its sockets but answers nothing (no PUBACKs).
    pub fn freeze(&mut self) {
        if let Some(child) = &self.child {
            let _ = Command::new("kill")
                .args(["-STOP", &child.id().to_string()])
                .status();
        }
    }

    /// SIGKILL (whatever was in flight and not yet saved is gone) and start again from the
    /// database saved at the last graceful stop.
    pub fn kill9_and_restart(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
            wait_for_port(self.port, false);
        }
        self.spawn();
    }
}

impl Drop for Mosquitto {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Sends `sig` (e.g. `TERM`, `KILL`) to a child process.
pub fn signal(child: &Child, sig: &str) {
    let _ = Command::new("kill")
        .args([&format!("-{sig}"), &child.id().to_string()])
        .status();
}
