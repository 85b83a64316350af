//! The daemon (`tandem run --config FILE.toml`): one camera (or another frame source), one or
//! more tables, the referee per table, and every event through the publisher's durable outbox,
//! into the evidence log and into the broadcast feed.
//!
//! Data flow: a [`MoveSource`] (a replayed game or script), the camera's tracker for tables with a
//! calibration ([`TableWatch`]: frames → vision → tracker on a thread per table), clock and arbiter
//! inputs from MQTT and capture notices become [`TableInput`]s; each is journaled, then applied by
//! the table's [`TableRuntime`]; the resulting events go out in order. A restarted daemon (even after
//! `kill -9`) replays its journals and continues with the same event ids. See `docs/daemon.md`.

mod clock_sim;
mod config;
mod run;
mod source;
mod table;
mod vision;

pub use clock_sim::{ClockSimOptions, ClockSimSummary, run_clock_sim};
pub use config::{
    CaptureFormat, DaemonConfig, FolderConfig, ReplayConfig, SimSourceConfig, SourceConfig,
    TableSpec, V4l2Config, VisionConfig,
};
pub use run::{DaemonSummary, Ready, TableSummary, run_daemon, run_replay_demo};
pub use source::{
    BpgnReplay, ClockPressAt, MoveSource, ScriptReplay, SourceMessage, TimedInput, clock_timeline,
    load_clock_presses, load_game, open_camera, open_replay,
};
pub use table::{ClockReading, Outcome, TableInput, TableRuntime};
pub use vision::{TableWatch, WatchMessage, WatchOutput, WatchSetup};

use std::path::Path;

/// Why the daemon could not start or had to stop.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// The configuration file is unreadable or invalid (one line: file, field, problem).
    #[error("config {file}: {problem}")]
    Config { file: String, problem: String },
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("table: {0}")]
    Table(String),
    #[error("journal: {0}")]
    Journal(String),
    #[error("source: {0}")]
    Source(String),
    #[error(transparent)]
    Publish(#[from] crate::publish::PublishError),
    #[error(transparent)]
    Broker(#[from] crate::publish::BrokerError),
    #[error(transparent)]
    Evidence(#[from] crate::evidence::EvidenceError),
    #[error(transparent)]
    Broadcast(#[from] crate::broadcast::BroadcastError),
    #[error("mqtt: {0}")]
    Mqtt(String),
}

impl DaemonError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        DaemonError::Io {
            path: path.display().to_string(),
            source,
        }
    }
}
