//! The append-only, hash-chained game log and the frame files beside it.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use ed25519_dalek::SigningKey;
use serde_json::{Value, json};

use super::config::{EvidenceConfig, FsyncPolicy};
use super::error::{EvidenceError, IoContext};
use super::record::{self, GENESIS_PREV, RecordKind};

/// File name of the record log inside a game directory.
pub const LOG_FILE: &str = "log.jsonl";
/// Directory of frame files inside a game directory.
pub const FRAMES_DIR: &str = "frames";
/// Format tag written into the meta record; bump when the record format changes.
pub const FORMAT: &str = "tandem-evidence/1";

/// What was in force when a game started; becomes the `meta` record.
#[derive(Debug, Clone, PartialEq)]
pub struct GameMeta {
    /// Table id (as in events' `table`).
    pub table: String,
    /// Game id, unique per table.
    pub game: String,
    /// Calibration text (TOML/JSON as loaded); stored verbatim together with its SHA-256.
    pub calibration: Option<String>,
    /// SHA-256 (hex) of the classifier model file in use.
    pub model_sha256: Option<String>,
    /// Rule set name (e.g. `tandem-2024`).
    pub rule_set: String,
    /// Start time in ms, same clock as the events' `ts`.
    pub started_ts: i64,
}

/// A frame file that has been written and recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameRef {
    /// Path relative to the game directory, e.g. `frames/000123.jpg`.
    pub file: String,
    /// Hex SHA-256 of the file's bytes.
    pub sha256: String,
    /// File length in bytes.
    pub bytes: u64,
}

/// Why a frame is kept: it committed a move, or it lies in an incident window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameLink<'a> {
    /// The frame on which the event with this id (a move) was committed.
    Commit { event_id: &'a str },
    /// The frame lies in the window of the incident with this event id.
    Incident { incident_id: &'a str },
}

/// What happened to a frame handed to the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameOutcome {
    /// Written to disk and recorded.
    Written(FrameRef),
    /// Skipped because the game directory reached `max_game_bytes`; counted in `frames_dropped`.
    Dropped,
}

/// The newest record of a log: publishing it elsewhere (e.g. with each MQTT event) anchors the
/// log, so that later truncation or a rewritten tail is detected by [`super::verify_with`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainHead {
    /// Sequence number of the newest record.
    pub seq: u64,
    /// Hex SHA-256 of that record's line.
    pub hash: String,
}

impl std::fmt::Display for ChainHead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.seq, self.hash)
    }
}

impl std::str::FromStr for ChainHead {
    type Err = String;

    /// Parses `SEQ:HASH` as printed by `Display`.
    fn from_str(s: &str) -> Result<Self, String> {
        let (seq, hash) = s
            .split_once(':')
            .ok_or_else(|| format!("`{s}` is not SEQ:HASH"))?;
        let seq = seq
            .trim()
            .parse()
            .map_err(|e| format!("bad sequence number `{seq}`: {e}"))?;
        let hash = hash.trim().to_ascii_lowercase();
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("`{hash}` is not a hex SHA-256"));
        }
        Ok(Self { seq, hash })
    }
}

#[derive(Debug, Clone, Copy)]
struct PendingDrops {
    count: u64,
    first_ts: i64,
    last_ts: i64,
}

/// Writer of one game's evidence directory.
///
/// Invariants: records are appended with strictly increasing `seq` starting at 0 (`meta`), each
/// line is written with one `write_all` of the full line plus `\n` and then flushed, and a frame
/// file is complete on disk (written under a temporary name, then renamed) before its record is
/// appended. Dropping the writer without [`EvidenceLog::finish`] leaves a valid, unfinished log.
#[derive(Debug)]
pub struct EvidenceLog {
    dir: PathBuf,
    log_path: PathBuf,
    file: File,
    next_seq: u64,
    prev: String,
    key: Option<SigningKey>,
    fsync: FsyncPolicy,
    max_game_bytes: u64,
    game_bytes: u64,
    frames: u64,
    dropped_total: u64,
    pending_drops: Option<PendingDrops>,
}

/// Replaces characters that are unsafe in a directory name.
fn sanitize(s: &str) -> String {
    let t: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if t.is_empty() || t.chars().all(|c| c == '.') {
        "_".to_string()
    } else {
        t
    }
}

/// The directory of one game under the evidence root: `<root>/<table>/<game>`.
pub fn game_dir(root: &Path, table: &str, game: &str) -> PathBuf {
    root.join(sanitize(table)).join(sanitize(game))
}

/// Reads a per-table Ed25519 secret key: a file holding 64 hex digits (32 bytes), whitespace ignored.
pub fn load_signing_key(path: &Path) -> Result<SigningKey, EvidenceError> {
    let text = std::fs::read_to_string(path).at(path)?;
    let bytes = hex::decode(text.trim()).map_err(|e| EvidenceError::Key {
        path: path.to_path_buf(),
        reason: format!("not hex: {e}"),
    })?;
    let secret: [u8; 32] = bytes.try_into().map_err(|b: Vec<u8>| EvidenceError::Key {
        path: path.to_path_buf(),
        reason: format!("expected 32 bytes, found {}", b.len()),
    })?;
    Ok(SigningKey::from_bytes(&secret))
}

/// Creates a new secret key file (mode 0600) from the OS random source; refuses to overwrite.
pub fn generate_signing_key(path: &Path) -> Result<SigningKey, EvidenceError> {
    let mut secret = [0u8; 32];
    File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut secret))
        .at("/dev/urandom")?;
    let key = SigningKey::from_bytes(&secret);
    let mut opts = OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(path).at(path)?;
    f.write_all(format!("{}\n", hex::encode(secret)).as_bytes())
        .at(path)?;
    Ok(key)
}

/// Checks the fields every event must have and returns its `ts`.
pub(crate) fn validate_event(event: &Value) -> Result<i64, EvidenceError> {
    let obj = event
        .as_object()
        .ok_or_else(|| EvidenceError::InvalidEvent("not a JSON object".into()))?;
    for field in ["id", "type", "table"] {
        if !obj.get(field).is_some_and(Value::is_string) {
            return Err(EvidenceError::InvalidEvent(format!(
                "missing string field `{field}`"
            )));
        }
    }
    obj.get("ts")
        .and_then(Value::as_i64)
        .ok_or_else(|| EvidenceError::InvalidEvent("missing integer field `ts`".into()))
}

/// File extension from the image's magic bytes.
fn frame_extension(bytes: &[u8]) -> &'static str {
    if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        "jpg"
    } else if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        "png"
    } else {
        "bin"
    }
}

impl EvidenceLog {
    /// Creates `dir` (and `dir/frames`), writes the `meta` record, and returns the writer.
    ///
    /// Fails if `dir` already holds a log: evidence is never overwritten.
    pub fn create(
        dir: &Path,
        meta: &GameMeta,
        config: &EvidenceConfig,
        key: Option<SigningKey>,
    ) -> Result<Self, EvidenceError> {
        let frames = dir.join(FRAMES_DIR);
        std::fs::create_dir_all(&frames).at(&frames)?;
        let log_path = dir.join(LOG_FILE);
        let file = match OpenOptions::new()
            .append(true)
            .create_new(true)
            .open(&log_path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(EvidenceError::AlreadyExists(dir.to_path_buf()));
            }
            Err(e) => return Err(e).at(&log_path),
        };
        let mut log = Self {
            dir: dir.to_path_buf(),
            log_path,
            file,
            next_seq: 0,
            prev: GENESIS_PREV.to_string(),
            key,
            fsync: config.fsync,
            max_game_bytes: config.max_game_bytes,
            game_bytes: 0,
            frames: 0,
            dropped_total: 0,
            pending_drops: None,
        };
        let payload = json!({
            "format": FORMAT,
            "table": meta.table,
            "game": meta.game,
            "calibration": meta.calibration,
            "calibration_sha256": meta.calibration.as_deref().map(|c| record::sha256_hex(c.as_bytes())),
            "model_sha256": meta.model_sha256,
            "software": env!("CARGO_PKG_NAME"),
            "version": env!("CARGO_PKG_VERSION"),
            "rule_set": meta.rule_set,
            "pubkey": log.key.as_ref().map(|k| hex::encode(k.verifying_key().to_bytes())),
        });
        log.append_raw(RecordKind::Meta, meta.started_ts, &payload, true)?;
        Ok(log)
    }

    /// Continues an unfinished log after a crash or restart.
    ///
    /// The log must verify (a truncated tail is allowed and is cut off); with `key` the log must
    /// be signed by it, without `key` it must be unsigned. Appends a `resumed` record saying how
    /// many bytes of an incomplete record were removed, so the restart is itself evidence.
    pub fn resume(
        dir: &Path,
        config: &EvidenceConfig,
        key: Option<SigningKey>,
    ) -> Result<Self, EvidenceError> {
        let not = |reason: String| EvidenceError::NotResumable {
            dir: dir.to_path_buf(),
            reason,
        };
        let opts = super::VerifyOptions {
            expected_key: key.as_ref().map(SigningKey::verifying_key),
            ..Default::default()
        };
        let report = super::verify_with(dir, &opts)?;
        if let Some(p) = report.problems.first() {
            return Err(not(format!("{p} ({} problem(s))", report.problems.len())));
        }
        if report.finished {
            return Err(EvidenceError::Finished);
        }
        if report.signed != key.is_some() {
            return Err(not(if report.signed {
                "the log is signed; its key is needed".into()
            } else {
                "the log is unsigned; it cannot continue signed".into()
            }));
        }
        let log_path = dir.join(LOG_FILE);
        let file = OpenOptions::new()
            .append(true)
            .open(&log_path)
            .at(&log_path)?;
        let cut = report.truncated_tail.as_ref().map_or(0, |t| t.bytes);
        if let Some(t) = &report.truncated_tail {
            file.set_len(t.offset).at(&log_path)?;
            file.sync_data().at(&log_path)?;
        }
        let data = std::fs::read(&log_path).at(&log_path)?;
        let body = data.strip_suffix(b"\n").unwrap_or(&data);
        let last = body.rsplit(|b| *b == b'\n').next().unwrap_or_default();
        let last_rec = record::decode(last).map_err(not)?;
        let mut game_bytes = data.len() as u64;
        let mut frames = 0;
        for line in body.split(|b| *b == b'\n') {
            if let Ok(r) = record::decode(line)
                && r.kind == "frame"
            {
                frames += 1;
            }
        }
        let frames_dir = dir.join(FRAMES_DIR);
        if let Ok(entries) = std::fs::read_dir(&frames_dir) {
            for e in entries.filter_map(Result::ok) {
                let name = e.file_name();
                if name.to_string_lossy().starts_with('.') {
                    // A frame file the crash left half written under its temporary name.
                    std::fs::remove_file(e.path()).at(e.path())?;
                } else if let Ok(m) = e.metadata() {
                    game_bytes += m.len();
                }
            }
        }
        let mut log = Self {
            dir: dir.to_path_buf(),
            log_path,
            file,
            next_seq: last_rec.seq + 1,
            prev: record::sha256_hex(last),
            key,
            fsync: config.fsync,
            max_game_bytes: config.max_game_bytes,
            game_bytes,
            frames,
            dropped_total: 0,
            pending_drops: None,
        };
        let payload = json!({
            "truncated_tail_bytes": cut,
            "software": env!("CARGO_PKG_NAME"),
            "version": env!("CARGO_PKG_VERSION"),
        });
        log.append_raw(RecordKind::Resumed, last_rec.ts, &payload, true)?;
        Ok(log)
    }

    /// The newest record's number and hash, for anchoring the log outside the game directory.
    pub fn head(&self) -> ChainHead {
        ChainHead {
            seq: self.next_seq.saturating_sub(1),
            hash: self.prev.clone(),
        }
    }

    /// The game directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Sequence number the next record will get (= records written so far).
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Bytes of log and frame files written so far.
    pub fn game_bytes(&self) -> u64 {
        self.game_bytes
    }

    /// Frame records written so far.
    pub fn frames_written(&self) -> u64 {
        self.frames
    }

    /// Frames skipped so far because of `max_game_bytes`.
    pub fn frames_dropped(&self) -> u64 {
        self.dropped_total + self.pending_drops.map_or(0, |p| p.count)
    }

    fn append_raw(
        &mut self,
        kind: RecordKind,
        ts: i64,
        payload: &Value,
        sync: bool,
    ) -> Result<u64, EvidenceError> {
        let seq = self.next_seq;
        let mut line = record::encode(seq, kind, ts, &self.prev, payload, self.key.as_ref())?;
        let hash = record::sha256_hex(&line);
        line.push(b'\n');
        self.file.write_all(&line).at(&self.log_path)?;
        self.file.flush().at(&self.log_path)?;
        if self.fsync == FsyncPolicy::Always || (sync && self.fsync == FsyncPolicy::Incidents) {
            self.file.sync_data().at(&self.log_path)?;
        }
        self.prev = hash;
        self.next_seq += 1;
        self.game_bytes += line.len() as u64;
        Ok(seq)
    }

    /// Appends a record after writing out any pending `frames_dropped` record.
    fn append(
        &mut self,
        kind: RecordKind,
        ts: i64,
        payload: &Value,
        sync: bool,
    ) -> Result<u64, EvidenceError> {
        self.flush_drops()?;
        self.append_raw(kind, ts, payload, sync)
    }

    fn flush_drops(&mut self) -> Result<(), EvidenceError> {
        if let Some(p) = self.pending_drops.take() {
            let payload = json!({
                "count": p.count,
                "first_ts": p.first_ts,
                "last_ts": p.last_ts,
                "reason": "max_game_bytes",
                "max_game_bytes": self.max_game_bytes,
            });
            self.append_raw(RecordKind::FramesDropped, p.last_ts, &payload, true)?;
            self.dropped_total += p.count;
        }
        Ok(())
    }

    /// Appends an event (any JSON object with string `id`, `type`, `table` and integer `ts`).
    /// Events are never dropped, whatever the disk bound. Returns the record's `seq`.
    pub fn append_event(&mut self, event: &Value) -> Result<u64, EvidenceError> {
        let ts = validate_event(event)?;
        self.append(RecordKind::Event, ts, event, false)
    }

    /// Appends the `incident_window` record that announces the frames of an incident.
    pub fn append_incident_window(
        &mut self,
        incident: &Value,
        from_ts: i64,
        to_ts: i64,
    ) -> Result<u64, EvidenceError> {
        let ts = validate_event(incident)?;
        let mut payload = json!({
            "incident_id": incident["id"],
            "incident_type": incident["type"],
            "from_ts": from_ts,
            "to_ts": to_ts,
        });
        for key in ["board", "squares"] {
            if let Some(v) = incident.get(key) {
                payload[key] = v.clone();
            }
        }
        self.append(RecordKind::IncidentWindow, ts, &payload, true)
    }

    /// Stores the frame on which the event `event_id` (a move) was committed.
    pub fn commit_frame(
        &mut self,
        event_id: &str,
        ts_ms: i64,
        bytes: &[u8],
    ) -> Result<FrameOutcome, EvidenceError> {
        self.write_frame(ts_ms, bytes, None, FrameLink::Commit { event_id })
    }

    /// Writes a frame file (temp name, then rename) and appends its `frame` record. `meta` is
    /// stored in the record as is (e.g. `{"corners": {"A": [[x,y]×4], …}}`).
    pub fn write_frame(
        &mut self,
        ts_ms: i64,
        bytes: &[u8],
        meta: Option<&Value>,
        link: FrameLink<'_>,
    ) -> Result<FrameOutcome, EvidenceError> {
        if self.game_bytes + bytes.len() as u64 > self.max_game_bytes {
            let p = self.pending_drops.get_or_insert(PendingDrops {
                count: 0,
                first_ts: ts_ms,
                last_ts: ts_ms,
            });
            p.count += 1;
            p.last_ts = ts_ms;
            return Ok(FrameOutcome::Dropped);
        }
        self.flush_drops()?;
        let name = format!("{:06}.{}", self.next_seq, frame_extension(bytes));
        let frames_dir = self.dir.join(FRAMES_DIR);
        let tmp = frames_dir.join(format!(".{name}.tmp"));
        let dest = frames_dir.join(&name);
        {
            let mut f = File::create(&tmp).at(&tmp)?;
            f.write_all(bytes).at(&tmp)?;
            if self.fsync == FsyncPolicy::Always {
                f.sync_data().at(&tmp)?;
            }
        }
        std::fs::rename(&tmp, &dest).at(&dest)?;
        self.game_bytes += bytes.len() as u64;
        let frame = FrameRef {
            file: format!("{FRAMES_DIR}/{name}"),
            sha256: record::sha256_hex(bytes),
            bytes: bytes.len() as u64,
        };
        self.link_frame(&frame, ts_ms, meta, link)?;
        Ok(FrameOutcome::Written(frame))
    }

    /// Appends a `frame` record for a file already written (a frame shared by two incident
    /// windows is stored once and recorded for each).
    pub fn link_frame(
        &mut self,
        frame: &FrameRef,
        ts_ms: i64,
        meta: Option<&Value>,
        link: FrameLink<'_>,
    ) -> Result<u64, EvidenceError> {
        let mut payload = json!({
            "file": frame.file,
            "sha256": frame.sha256,
            "bytes": frame.bytes,
        });
        match link {
            FrameLink::Commit { event_id } => {
                payload["role"] = "commit".into();
                payload["event_id"] = event_id.into();
            }
            FrameLink::Incident { incident_id } => {
                payload["role"] = "incident".into();
                payload["incident_id"] = incident_id.into();
            }
        }
        if let Some(meta) = meta {
            payload["meta"] = meta.clone();
        }
        let seq = self.append_raw(RecordKind::Frame, ts_ms, &payload, false)?;
        self.frames += 1;
        Ok(seq)
    }

    /// Forces everything written so far to stable storage.
    pub fn sync(&mut self) -> Result<(), EvidenceError> {
        self.file.sync_data().at(&self.log_path)
    }

    /// Syncs unless the policy is `never` (used at incident boundaries).
    pub(crate) fn checkpoint(&mut self) -> Result<(), EvidenceError> {
        if self.fsync == FsyncPolicy::Never {
            Ok(())
        } else {
            self.sync()
        }
    }

    /// Closes the game with an `end` record (holding `result`, e.g. the `result` event, if any).
    pub fn finish(mut self, ts: i64, result: Option<&Value>) -> Result<PathBuf, EvidenceError> {
        self.flush_drops()?;
        let payload = json!({
            "records": self.next_seq + 1,
            "frames": self.frames,
            "frames_dropped": self.dropped_total,
            "result": result,
        });
        self.append_raw(RecordKind::End, ts, &payload, true)?;
        Ok(self.dir)
    }
}
