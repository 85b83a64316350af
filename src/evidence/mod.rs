//! Tamper-evident evidence for disputes.
//!
//! Per game a directory `<root>/<table>/<game>/` holds `log.jsonl` — an append-only log whose
//! records each carry the SHA-256 of the previous record's bytes and, optionally, an Ed25519
//! signature by the table's key — and `frames/` with the frames that committed moves and the
//! frames around incidents. [`verify`] finds any change, removal or reordering and says where;
//! a log cut short by a crash verifies up to its last complete record.
//!
//! The module takes events as JSON (`id`, `type`, `table`, `ts`, optional `board`) and frames
//! as encoded bytes, so it does not depend on the referee's or tracker's Rust types.

mod config;
mod error;
mod export;
mod font;
mod log;
mod record;
mod recorder;
mod ring;
mod show;
mod verify;

pub use config::{EvidenceConfig, FsyncPolicy};
pub use error::EvidenceError;
pub use export::{ExportSummary, GameEntry, export, list_games, prune};
pub use log::{
    ChainHead, EvidenceLog, FORMAT, FRAMES_DIR, FrameLink, FrameOutcome, FrameRef, GameMeta,
    LOG_FILE, game_dir, generate_signing_key, load_signing_key,
};
pub use record::{GENESIS_PREV, Record, RecordKind, sha256_hex};
pub use recorder::GameRecorder;
pub use ring::{Frame, FrameRing};
pub use show::{TimelineEntry, contact_sheets, format_ts, timeline};
pub use verify::{
    Problem, ProblemKind, TruncatedTail, VerifyOptions, VerifyReport, verify, verify_with,
};

/// Re-exported so callers can hold keys without naming `ed25519_dalek` themselves.
pub use ed25519_dalek::{SigningKey, VerifyingKey};
