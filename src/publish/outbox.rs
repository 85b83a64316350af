//! The persistent outbox: every outgoing message is appended to disk before it is published and
//! stays there until the broker acknowledged it.
//!
//! Layout: one append-only log `outbox.log` in the outbox directory, one record per line:
//! `<16 hex digits FNV-1a-64 of the JSON> <JSON>\n`, where the JSON is `{"put":{seq,topic,retain,
//! payload}}`, `{"ack":seq}` or `{"base":next_seq}`. Records are written with a single `write`
//! call on an `O_APPEND` handle, so a `kill -9` can at worst leave one half-written last line; a
//! power loss can lose what was not yet fsynced ([`FsyncPolicy`]). On open, lines that fail the
//! checksum or do not parse are skipped and counted, an unterminated tail is cut off, and the log
//! is compacted. Compaction rewrites the live entries to `outbox.log.tmp`, fsyncs it and renames it
//! over the log, so a crash during compaction leaves either the old or the new log.
//!
//! Invariants: sequence numbers only grow (across restarts too, via the `base` record); an entry
//! leaves the outbox only through [`Outbox::ack`]; a second process cannot open the same
//! directory (advisory lock on `outbox.lock`).

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

const LOG: &str = "outbox.log";
const TMP: &str = "outbox.log.tmp";
const LOCK: &str = "outbox.lock";

/// When appended records are flushed to stable storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FsyncPolicy {
    /// fsync after every put (survives power loss; costs one disk flush per event).
    #[default]
    Always,
    /// Leave flushing to the OS (survives `kill -9` of the process, not a power loss).
    Never,
}

/// Outbox settings (the `[mqtt.outbox]` TOML table).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OutboxConfig {
    /// Directory holding `outbox.log`; created if missing.
    pub dir: PathBuf,
    /// When to fsync.
    pub fsync: FsyncPolicy,
    /// Upper bound on the bytes of unacknowledged entries; a put beyond it fails with
    /// [`OutboxError::Full`].
    pub max_bytes: u64,
    /// Compact once at least this many dead records (acked puts, acks, skipped lines) are in
    /// the log and they outnumber the live entries.
    pub compact_min_dead: usize,
}

impl Default for OutboxConfig {
    fn default() -> Self {
        Self {
            dir: PathBuf::from("var/outbox"),
            fsync: FsyncPolicy::Always,
            max_bytes: 64 * 1024 * 1024,
            compact_min_dead: 4096,
        }
    }
}

/// Why the outbox failed.
#[derive(Debug, thiserror::Error)]
pub enum OutboxError {
    /// File-system failure (path says where).
    #[error("outbox {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Another process holds the outbox directory.
    #[error("outbox {0} is in use by another process")]
    Locked(PathBuf),
    /// The configured size bound would be exceeded; the broker has been unreachable too long
    /// or `max_bytes` is too small.
    #[error(
        "outbox full: {pending_entries} unacknowledged entries use {pending_bytes} bytes, adding {entry_bytes} would exceed max_bytes = {limit}"
    )]
    Full {
        limit: u64,
        pending_bytes: u64,
        pending_entries: usize,
        entry_bytes: u64,
    },
}

/// One message waiting for its broker acknowledgement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutboxEntry {
    /// Position in the outbox; strictly increasing.
    pub seq: u64,
    pub topic: String,
    pub retain: bool,
    /// The exact payload bytes to publish (UTF-8 JSON).
    pub payload: String,
}

/// What opening the outbox found in the log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Unacknowledged entries found (to be delivered again).
    pub pending: usize,
    /// Complete lines skipped because of a bad checksum or unparsable JSON.
    pub corrupt_lines: usize,
    /// Bytes of an unterminated last line that were cut off (a write torn by a crash).
    pub torn_tail_bytes: usize,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Record {
    Put(OutboxEntry),
    Ack(u64),
    Base(u64),
}

/// The on-disk outbox of one daemon.
#[derive(Debug)]
pub struct Outbox {
    config: OutboxConfig,
    log: File,
    _lock: File,
    live: BTreeMap<u64, (OutboxEntry, u64)>,
    live_bytes: u64,
    dead_records: usize,
    next_seq: u64,
    recovery: RecoveryReport,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> OutboxError + '_ {
    move |source| OutboxError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// FNV-1a 64: a cheap checksum that catches torn or garbled lines (not an integrity MAC).
fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

fn encode(record: &Record) -> Vec<u8> {
    let json = serde_json::to_vec(record).expect("outbox records are plain strings and integers");
    let mut line = format!("{:016x} ", fnv1a64(&json)).into_bytes();
    line.extend_from_slice(&json);
    line.push(b'\n');
    line
}

fn decode(line: &[u8]) -> Option<Record> {
    if line.len() < 18 || line[16] != b' ' {
        return None;
    }
    let sum = u64::from_str_radix(std::str::from_utf8(&line[..16]).ok()?, 16).ok()?;
    let json = &line[17..];
    if fnv1a64(json) != sum {
        return None;
    }
    serde_json::from_slice(json).ok()
}

impl Outbox {
    /// Opens (or creates) the outbox in `config.dir`, recovering pending entries from the log.
    pub fn open(config: OutboxConfig) -> Result<Self, OutboxError> {
        let dir = config.dir.clone();
        std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        let lock_path = dir.join(LOCK);
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io_err(&lock_path))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(OutboxError::Locked(dir)),
            Err(std::fs::TryLockError::Error(e)) => return Err(io_err(&lock_path)(e)),
        }
        let log_path = dir.join(LOG);
        let mut bytes = Vec::new();
        match File::open(&log_path) {
            Ok(mut f) => {
                f.read_to_end(&mut bytes).map_err(io_err(&log_path))?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(&log_path)(e)),
        }
        let mut live = BTreeMap::new();
        let mut live_bytes = 0;
        let mut dead_records = 0;
        let mut next_seq = 1;
        let mut recovery = RecoveryReport::default();
        let complete = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        recovery.torn_tail_bytes = bytes.len() - complete;
        for line in bytes[..complete].split(|b| *b == b'\n') {
            if line.is_empty() {
                continue;
            }
            match decode(line) {
                Some(Record::Put(entry)) => {
                    next_seq = next_seq.max(entry.seq + 1);
                    let size = line.len() as u64 + 1;
                    live_bytes += size;
                    if let Some((_, old)) = live.insert(entry.seq, (entry, size)) {
                        live_bytes -= old;
                        dead_records += 1;
                    }
                }
                Some(Record::Ack(seq)) => {
                    dead_records += 1;
                    if let Some((_, size)) = live.remove(&seq) {
                        live_bytes -= size;
                        dead_records += 1;
                    }
                }
                Some(Record::Base(base)) => {
                    next_seq = next_seq.max(base);
                    dead_records += 1;
                }
                None => {
                    recovery.corrupt_lines += 1;
                    dead_records += 1;
                }
            }
        }
        recovery.pending = live.len();
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(io_err(&log_path))?;
        let mut outbox = Self {
            config,
            log,
            _lock: lock,
            live,
            live_bytes,
            dead_records,
            next_seq,
            recovery,
        };
        if outbox.recovery.corrupt_lines > 0 || outbox.recovery.torn_tail_bytes > 0 {
            log::warn!(
                "outbox {}: skipped {} corrupt line(s) and a torn tail of {} byte(s); {} entries pending",
                dir.display(),
                outbox.recovery.corrupt_lines,
                outbox.recovery.torn_tail_bytes,
                outbox.recovery.pending
            );
            outbox.compact()?;
        } else if outbox.should_compact() {
            outbox.compact()?;
        }
        Ok(outbox)
    }

    /// What [`Outbox::open`] found.
    pub fn recovery(&self) -> &RecoveryReport {
        &self.recovery
    }

    /// Appends a message and returns its sequence number once it is on disk per the fsync policy
    /// (`always`: fsynced; `never`: written, i.e. safe from a process crash).
    pub fn push(
        &mut self,
        topic: impl Into<String>,
        payload: impl Into<String>,
        retain: bool,
    ) -> Result<u64, OutboxError> {
        let seq = self.append(topic, payload, retain)?;
        if self.config.fsync == FsyncPolicy::Always {
            self.sync()?;
        }
        Ok(seq)
    }

    /// Appends a message without fsync (it survives a process crash, not a power loss); for
    /// callers that group several appends under one [`Outbox::sync`] (group commit).
    pub fn append(
        &mut self,
        topic: impl Into<String>,
        payload: impl Into<String>,
        retain: bool,
    ) -> Result<u64, OutboxError> {
        let entry = OutboxEntry {
            seq: self.next_seq,
            topic: topic.into(),
            retain,
            payload: payload.into(),
        };
        let line = encode(&Record::Put(entry.clone()));
        let size = line.len() as u64;
        if self.live_bytes + size > self.config.max_bytes {
            return Err(OutboxError::Full {
                limit: self.config.max_bytes,
                pending_bytes: self.live_bytes,
                pending_entries: self.live.len(),
                entry_bytes: size,
            });
        }
        self.append_line(&line)?;
        self.next_seq += 1;
        self.live_bytes += size;
        self.live.insert(entry.seq, (entry, size));
        Ok(self.next_seq - 1)
    }

    /// Flushes everything appended so far to stable storage.
    pub fn sync(&self) -> Result<(), OutboxError> {
        let path = self.log_path();
        self.log.sync_data().map_err(io_err(&path))
    }

    /// A second handle on the current log file, to fsync without holding the outbox: an fsync on
    /// it covers every append made before the call (a compaction in between fsyncs by itself).
    pub fn sync_handle(&self) -> Result<File, OutboxError> {
        let path = self.log_path();
        self.log.try_clone().map_err(io_err(&path))
    }

    /// The highest sequence number ever assigned (0 if none).
    pub fn last_seq(&self) -> u64 {
        self.next_seq - 1
    }

    /// The configured fsync policy.
    pub fn fsync_policy(&self) -> FsyncPolicy {
        self.config.fsync
    }

    /// Records the broker's acknowledgement of `seq`; returns false if it was not pending
    /// (already acknowledged, e.g. a duplicate PUBACK after a resend). May compact the log.
    pub fn ack(&mut self, seq: u64) -> Result<bool, OutboxError> {
        let Some((_, size)) = self.live.remove(&seq) else {
            return Ok(false);
        };
        self.live_bytes -= size;
        // Acks are not fsynced: losing one only causes a duplicate delivery, never a loss.
        self.append_line(&encode(&Record::Ack(seq)))?;
        self.dead_records += 2;
        if self.should_compact() {
            self.compact()?;
        }
        Ok(true)
    }

    /// The pending entry `seq`, if not yet acknowledged.
    pub fn get(&self, seq: u64) -> Option<&OutboxEntry> {
        self.live.get(&seq).map(|(e, _)| e)
    }

    /// Unacknowledged entries in sequence order.
    pub fn pending(&self) -> impl Iterator<Item = &OutboxEntry> {
        self.live.values().map(|(e, _)| e)
    }

    /// Pending sequence numbers after `after` (exclusive), in order.
    pub fn pending_after(&self, after: u64) -> impl Iterator<Item = u64> + '_ {
        self.live
            .range(after.saturating_add(1)..)
            .map(|(seq, _)| *seq)
    }

    /// Number of unacknowledged entries.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// True when everything was acknowledged.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// Bytes of the log lines of unacknowledged entries (what `max_bytes` bounds).
    pub fn pending_bytes(&self) -> u64 {
        self.live_bytes
    }

    /// Current size of the log file in bytes.
    pub fn log_bytes(&self) -> Result<u64, OutboxError> {
        let path = self.log_path();
        Ok(self.log.metadata().map_err(io_err(&path))?.len())
    }

    fn log_path(&self) -> PathBuf {
        self.config.dir.join(LOG)
    }

    fn append_line(&mut self, line: &[u8]) -> Result<(), OutboxError> {
        let path = self.log_path();
        self.log.write_all(line).map_err(io_err(&path))
    }

    fn should_compact(&self) -> bool {
        self.dead_records >= self.config.compact_min_dead && self.dead_records >= self.live.len()
    }

    /// Rewrites the log with only the pending entries (atomic rename; fsynced).
    pub fn compact(&mut self) -> Result<(), OutboxError> {
        let tmp_path = self.config.dir.join(TMP);
        let log_path = self.log_path();
        let mut buf = encode(&Record::Base(self.next_seq));
        for (entry, _) in self.live.values() {
            buf.extend_from_slice(&encode(&Record::Put(entry.clone())));
        }
        {
            let mut tmp = File::create(&tmp_path).map_err(io_err(&tmp_path))?;
            tmp.write_all(&buf).map_err(io_err(&tmp_path))?;
            tmp.sync_all().map_err(io_err(&tmp_path))?;
        }
        std::fs::rename(&tmp_path, &log_path).map_err(io_err(&log_path))?;
        if let Ok(dir) = File::open(&self.config.dir) {
            // Persists the rename; failure here only risks replaying the old (superset) log.
            let _ = dir.sync_all();
        }
        self.log = OpenOptions::new()
            .append(true)
            .open(&log_path)
            .map_err(io_err(&log_path))?;
        self.dead_records = 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &Path) -> OutboxConfig {
        OutboxConfig {
            dir: dir.to_path_buf(),
            fsync: FsyncPolicy::Never,
            max_bytes: 1 << 20,
            compact_min_dead: 8,
        }
    }

    #[test]
    fn pending_entries_survive_reopen_and_acks_remove_them() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut ob = Outbox::open(config(dir.path())).unwrap();
            for i in 0..5 {
                assert_eq!(
                    ob.push("t/x", format!("{{\"i\":{i}}}"), false).unwrap(),
                    i + 1
                );
            }
            assert!(ob.ack(2).unwrap());
            assert!(
                !ob.ack(2).unwrap(),
                "second ack of the same entry is a no-op"
            );
            assert!(!ob.ack(99).unwrap());
        }
        let ob = Outbox::open(config(dir.path())).unwrap();
        let seqs: Vec<u64> = ob.pending().map(|e| e.seq).collect();
        assert_eq!(seqs, vec![1, 3, 4, 5]);
        assert_eq!(ob.get(3).unwrap().payload, "{\"i\":2}");
        assert_eq!(ob.recovery().pending, 4);
        assert_eq!(ob.pending_after(3).collect::<Vec<_>>(), vec![4, 5]);
    }

    #[test]
    fn torn_tail_and_corrupt_lines_are_skipped_without_losing_earlier_entries() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut ob = Outbox::open(config(dir.path())).unwrap();
            for i in 0..3 {
                ob.push("t/x", format!("\"p{i}\""), true).unwrap();
            }
        }
        let log = dir.path().join(LOG);
        let mut bytes = std::fs::read(&log).unwrap();
        // Garble the second line's payload (checksum must catch it), then add a torn write.
        let second = bytes.iter().position(|b| *b == b'\n').unwrap() + 1;
        let p = second + bytes[second..].windows(2).position(|w| w == b"p1").unwrap();
        bytes[p + 1] = b'9';
        let torn: &[u8] = b"0123456789abcdef {\"put\":{\"seq\":4,\"to";
        bytes.extend_from_slice(torn);
        std::fs::write(&log, &bytes).unwrap();

        let mut ob = Outbox::open(config(dir.path())).unwrap();
        assert_eq!(ob.recovery().corrupt_lines, 1);
        assert_eq!(ob.recovery().torn_tail_bytes, torn.len());
        let payloads: Vec<&str> = ob.pending().map(|e| e.payload.as_str()).collect();
        assert_eq!(payloads, vec!["\"p0\"", "\"p2\""]);
        // New entries continue after the highest seen seq, on a clean line.
        assert_eq!(ob.push("t/x", "\"p3\"", false).unwrap(), 4);
        drop(ob);
        let ob = Outbox::open(config(dir.path())).unwrap();
        assert_eq!(
            ob.recovery(),
            &RecoveryReport {
                pending: 3,
                ..Default::default()
            }
        );
    }

    #[test]
    fn compaction_bounds_the_log_and_keeps_seq_growing() {
        let dir = tempfile::tempdir().unwrap();
        let mut ob = Outbox::open(config(dir.path())).unwrap();
        for _ in 0..200 {
            let seq = ob.push("t/x", "\"payload\"", false).unwrap();
            ob.ack(seq).unwrap();
        }
        let kept = ob.push("t/x", "\"kept\"", false).unwrap();
        assert_eq!(kept, 201);
        let size = ob.log_bytes().unwrap();
        assert!(size < 20 * 80, "log not compacted: {size} bytes");
        drop(ob);
        let mut ob = Outbox::open(config(dir.path())).unwrap();
        assert_eq!(ob.pending().map(|e| e.seq).collect::<Vec<_>>(), vec![201]);
        ob.ack(201).unwrap();
        ob.compact().unwrap();
        drop(ob);
        let mut ob = Outbox::open(config(dir.path())).unwrap();
        assert!(ob.is_empty());
        assert_eq!(ob.push("t/x", "1", false).unwrap(), 202, "seq never reused");
    }

    #[test]
    fn full_outbox_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(dir.path());
        cfg.max_bytes = 300;
        let mut ob = Outbox::open(cfg).unwrap();
        let mut n = 0;
        let err = loop {
            match ob.push("t/x", "\"0123456789\"", false) {
                Ok(_) => n += 1,
                Err(e) => break e,
            }
        };
        assert!(n >= 2, "fits {n}");
        assert!(matches!(err, OutboxError::Full { pending_entries, .. } if pending_entries == n));
        assert!(err.to_string().contains("outbox full"));
        ob.ack(1).unwrap();
        assert!(ob.push("t/x", "\"0123456789\"", false).is_ok());
    }

    #[test]
    fn second_opener_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let _first = Outbox::open(config(dir.path())).unwrap();
        assert!(matches!(
            Outbox::open(config(dir.path())),
            Err(OutboxError::Locked(_))
        ));
    }

    #[test]
    fn config_reads_from_toml_with_defaults() {
        let cfg: OutboxConfig = toml::from_str("fsync = \"never\"\nmax_bytes = 1000").unwrap();
        assert_eq!(cfg.fsync, FsyncPolicy::Never);
        assert_eq!(cfg.max_bytes, 1000);
        assert_eq!(
            cfg.compact_min_dead,
            OutboxConfig::default().compact_min_dead
        );
        assert!(toml::from_str::<OutboxConfig>("fsync = \"sometimes\"").is_err());
    }
}
