//! The live broadcast feed: each table's game as BPGN and per-board PGN with clocks, the round
//! as one file per format, served over HTTP with server-sent events, and retained MQTT payloads.
//!
//! Data flow: referee [`crate::rules::Event`]s → [`BroadcastHandle::publish`] → [`Round`] (one
//! [`LiveGame`] per table) → rendered on request (cached until the next change) by the
//! [`BroadcastServer`], or handed to the MQTT publisher by [`LiveGame::retained_payloads`].
//! See `docs/broadcast.md` for URLs, headers and payloads.

mod config;
mod live;
mod round;
mod server;

pub use config::{BroadcastConfig, GameInfo, TableConfig, today_utc};
pub use live::LiveGame;
pub use round::Round;
pub use server::{BroadcastHandle, BroadcastServer};

use std::net::SocketAddr;

/// What can go wrong in the feed. Event mismatches leave the feed unchanged.
#[derive(Debug, thiserror::Error)]
pub enum BroadcastError {
    #[error("broadcast configuration: {0}")]
    Config(String),
    #[error("event of table {got} given to the game of table {expected}")]
    OtherTable { expected: String, got: String },
    #[error("table {table}: event of game {got} given to game {expected}")]
    OtherGame {
        table: String,
        expected: u32,
        got: u32,
    },
    #[error("event {event}: no move {uci} to retract")]
    NothingToRetract { event: String, uci: String },
    #[error("event {event} needs a board")]
    MissingBoard { event: String },
    #[error("event as JSON: {0}")]
    Json(String),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("broadcast server: {0}")]
    Serve(std::io::Error),
}
