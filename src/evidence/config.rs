//! Retention, window and disk-bound settings (serde + TOML, every field defaulted).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::EvidenceError;

/// When the writer forces data to stable storage with `sync_data`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum FsyncPolicy {
    /// Never; rely on the OS (fastest, a power cut may lose the last seconds).
    Never,
    /// After incident windows, `frames_dropped` and the `end` record (the default).
    #[default]
    Incidents,
    /// After every record and frame file (slowest, strongest).
    Always,
}

/// Evidence settings. Every field has a default that works for a 5-minute game at 10 fps.
///
/// Invariant kept by the writer: events are never dropped; only frames are skipped once a game
/// directory exceeds `max_game_bytes`, and each skip is itself recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EvidenceConfig {
    /// Root directory; each game gets its own subdirectory.
    pub dir: PathBuf,
    /// Seconds of frames kept before an incident.
    pub before_secs: f64,
    /// Seconds of frames written after an incident.
    pub after_secs: f64,
    /// Upper bound on frames held in the ring buffer.
    pub max_ring_frames: usize,
    /// Upper bound on encoded bytes held in the ring buffer.
    pub max_ring_bytes: usize,
    /// Frames are skipped once a game directory holds this many bytes.
    pub max_game_bytes: u64,
    /// `prune` keeps this many finished games.
    pub keep_games: usize,
    /// When to call `sync_data`.
    pub fsync: FsyncPolicy,
    /// Event types that open an incident window; `status:<state>` names a `status` event by its
    /// state (`status:calibration_lost`: the frames that show a camera or board being moved).
    pub incident_types: Vec<String>,
}

impl Default for EvidenceConfig {
    fn default() -> Self {
        Self {
            dir: PathBuf::from("evidence"),
            before_secs: 5.0,
            after_secs: 5.0,
            max_ring_frames: 300,
            max_ring_bytes: 64 << 20,
            max_game_bytes: 1 << 30,
            keep_games: 500,
            fsync: FsyncPolicy::Incidents,
            incident_types: [
                "illegal_move",
                "hidden_pocket",
                "handover_missing",
                "desync",
                "piece_removed",
                "move_retracted",
                "status:calibration_lost",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        }
    }
}

impl EvidenceConfig {
    /// Parses a TOML table; missing fields take their defaults.
    pub fn from_toml_str(text: &str) -> Result<Self, EvidenceError> {
        Ok(toml::from_str(text)?)
    }

    /// `before_secs` in whole milliseconds (negative or NaN counts as 0).
    pub fn before_ms(&self) -> i64 {
        secs_to_ms(self.before_secs)
    }

    /// `after_secs` in whole milliseconds (negative or NaN counts as 0).
    pub fn after_ms(&self) -> i64 {
        secs_to_ms(self.after_secs)
    }
}

fn secs_to_ms(s: f64) -> i64 {
    if s.is_finite() && s > 0.0 {
        (s * 1000.0).round() as i64
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_toml_gives_defaults_and_fields_override() {
        assert_eq!(
            EvidenceConfig::from_toml_str("").unwrap(),
            EvidenceConfig::default()
        );
        let c = EvidenceConfig::from_toml_str("before_secs = 2.5\nfsync = \"always\"\n").unwrap();
        assert_eq!(c.before_ms(), 2500);
        assert_eq!(c.after_ms(), 5000);
        assert_eq!(c.fsync, FsyncPolicy::Always);
        assert!(EvidenceConfig::from_toml_str("befor_secs = 1").is_err());
    }
}
