//! Ties the log and the frame ring together: what the daemon calls per frame and per event.

use std::collections::VecDeque;

use ed25519_dalek::SigningKey;
use serde_json::Value;

use super::config::EvidenceConfig;
use super::error::EvidenceError;
use super::log::{
    EvidenceLog, FrameLink, FrameOutcome, FrameRef, GameMeta, game_dir, validate_event,
};
use super::ring::{Frame, FrameRing};

#[derive(Debug)]
struct OpenIncident {
    id: String,
    until_ms: i64,
    /// Newest frame timestamp already written for this incident (frames are written once each).
    written_upto: i64,
}

/// Records one game: every event, the commit frame of every move, and the frames around every
/// incident (`before_secs` from the ring, then live frames until `after_secs` have passed).
///
/// Invariant: a frame is stored on disk at most once even when incident windows overlap; each
/// window still gets its own `frame` record pointing at the shared file.
#[derive(Debug)]
pub struct GameRecorder {
    log: EvidenceLog,
    ring: FrameRing,
    open: Vec<OpenIncident>,
    /// Recently written incident frames, by timestamp, for sharing between overlapping windows.
    recent: VecDeque<(i64, std::sync::Arc<[u8]>, FrameRef)>,
    before_ms: i64,
    after_ms: i64,
    incident_types: Vec<String>,
}

impl GameRecorder {
    /// Starts a game under `config.dir/<table>/<game>`.
    pub fn start(
        meta: &GameMeta,
        config: &EvidenceConfig,
        key: Option<SigningKey>,
    ) -> Result<Self, EvidenceError> {
        let dir = game_dir(&config.dir, &meta.table, &meta.game);
        let log = EvidenceLog::create(&dir, meta, config, key)?;
        Ok(Self::with_log(log, config))
    }

    /// Continues the unfinished game in `dir` after a crash (see [`EvidenceLog::resume`]); the
    /// ring starts empty.
    pub fn resume(
        dir: &std::path::Path,
        config: &EvidenceConfig,
        key: Option<SigningKey>,
    ) -> Result<Self, EvidenceError> {
        let log = EvidenceLog::resume(dir, config, key)?;
        Ok(Self::with_log(log, config))
    }

    /// Wraps an already created log.
    pub fn with_log(log: EvidenceLog, config: &EvidenceConfig) -> Self {
        Self {
            log,
            // `before + after` rather than `before`: an incident reported up to `after` late
            // still finds its `before` frames (count and byte bounds still apply).
            ring: FrameRing::new(
                config.before_ms().saturating_add(config.after_ms()),
                config.max_ring_frames,
                config.max_ring_bytes,
            ),
            open: Vec::new(),
            recent: VecDeque::new(),
            before_ms: config.before_ms(),
            after_ms: config.after_ms(),
            incident_types: config.incident_types.clone(),
        }
    }

    /// The underlying log (for sizes and the directory).
    pub fn log(&self) -> &EvidenceLog {
        &self.log
    }

    /// The frame ring.
    pub fn ring(&self) -> &FrameRing {
        &self.ring
    }

    /// Number of incident windows still collecting frames.
    pub fn open_incidents(&self) -> usize {
        self.open.len()
    }

    /// Feeds a camera frame: kept in the ring, and written out for every open incident window
    /// it falls into. Windows whose end has passed are closed.
    pub fn push_frame(&mut self, frame: Frame) -> Result<(), EvidenceError> {
        let mut i = 0;
        while i < self.open.len() {
            let inc = &self.open[i];
            if frame.ts_ms > inc.until_ms {
                self.open.swap_remove(i);
                self.log.checkpoint()?;
                continue;
            }
            if frame.ts_ms > inc.written_upto {
                let id = inc.id.clone();
                self.store_incident_frame(&id, &frame)?;
                self.open[i].written_upto = frame.ts_ms;
            }
            i += 1;
        }
        self.ring.push(frame);
        Ok(())
    }

    /// Appends an event; an event whose `type` is an incident type (a `status` event: whose
    /// `status:<state>` is) opens a frame window.
    pub fn record_event(&mut self, event: &Value) -> Result<u64, EvidenceError> {
        let seq = self.log.append_event(event)?;
        let kind = match (
            event.get("type").and_then(Value::as_str),
            event.get("state"),
        ) {
            (Some("status"), Some(Value::String(state))) => Some(format!("status:{state}")),
            (t, _) => t.map(str::to_string),
        };
        let is_incident = kind.is_some_and(|t| self.incident_types.contains(&t));
        if is_incident {
            self.open_incident(event)?;
        }
        Ok(seq)
    }

    /// Opens a frame window around `incident` (an event already recorded, or one the caller
    /// treats as an incident): writes the ring's frames from `ts - before` on and keeps writing
    /// live frames until `ts + after`.
    pub fn open_incident(&mut self, incident: &Value) -> Result<(), EvidenceError> {
        let ts = validate_event(incident)?;
        let id = incident["id"].as_str().unwrap_or_default().to_string();
        let (from, until) = (
            ts.saturating_sub(self.before_ms),
            ts.saturating_add(self.after_ms),
        );
        self.log.append_incident_window(incident, from, until)?;
        let frames: Vec<Frame> = self.ring.window(from, until).cloned().collect();
        let mut written_upto = i64::MIN;
        for f in &frames {
            self.store_incident_frame(&id, f)?;
            written_upto = f.ts_ms;
        }
        self.log.checkpoint()?;
        self.open.push(OpenIncident {
            id,
            until_ms: until,
            written_upto,
        });
        Ok(())
    }

    fn store_incident_frame(
        &mut self,
        incident_id: &str,
        frame: &Frame,
    ) -> Result<(), EvidenceError> {
        let link = FrameLink::Incident { incident_id };
        if let Some((_, _, existing)) = self.recent.iter().find(|(ts, bytes, _)| {
            *ts == frame.ts_ms
                && (std::sync::Arc::ptr_eq(bytes, &frame.bytes) || bytes[..] == frame.bytes[..])
        }) {
            let existing = existing.clone();
            self.log
                .link_frame(&existing, frame.ts_ms, frame.meta.as_ref(), link)?;
            return Ok(());
        }
        if let FrameOutcome::Written(r) =
            self.log
                .write_frame(frame.ts_ms, &frame.bytes, frame.meta.as_ref(), link)?
        {
            self.recent.push_back((frame.ts_ms, frame.bytes.clone(), r));
            let horizon = frame
                .ts_ms
                .saturating_sub(self.before_ms)
                .saturating_sub(self.after_ms);
            while self.recent.front().is_some_and(|(ts, _, _)| *ts < horizon) {
                self.recent.pop_front();
            }
        }
        Ok(())
    }

    /// Stores the frame on which the move event `event_id` was committed.
    pub fn commit_frame(
        &mut self,
        event_id: &str,
        ts_ms: i64,
        bytes: &[u8],
    ) -> Result<FrameOutcome, EvidenceError> {
        self.log.commit_frame(event_id, ts_ms, bytes)
    }

    /// Ends the game with an `end` record; open windows stop collecting.
    pub fn finish(
        self,
        ts: i64,
        result: Option<&Value>,
    ) -> Result<std::path::PathBuf, EvidenceError> {
        self.log.finish(ts, result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::{Record, verify};
    use serde_json::json;

    fn meta() -> GameMeta {
        GameMeta {
            table: "t1".into(),
            game: "g".into(),
            calibration: None,
            model_sha256: None,
            rule_set: "dsb".into(),
            started_ts: 0,
        }
    }

    fn config(root: &std::path::Path) -> EvidenceConfig {
        EvidenceConfig {
            dir: root.to_path_buf(),
            before_secs: 1.0,
            after_secs: 1.0,
            ..EvidenceConfig::default()
        }
    }

    fn records(dir: &std::path::Path) -> Vec<Record> {
        std::fs::read_to_string(dir.join("log.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn incident(id: &str, ts: i64) -> Value {
        json!({"id": id, "type": "illegal_move", "table": "t1", "board": "B", "ts": ts})
    }

    /// Timestamps of the frames recorded for one incident.
    fn incident_frames(recs: &[Record], id: &str) -> Vec<i64> {
        recs.iter()
            .filter(|r| r.kind == "frame" && r.payload["incident_id"] == id)
            .map(|r| r.ts)
            .collect()
    }

    #[test]
    fn incident_window_spans_before_and_after() {
        let tmp = tempfile::tempdir().unwrap();
        let mut rec = GameRecorder::start(&meta(), &config(tmp.path()), None).unwrap();
        for ts in (0..=10_000).step_by(100) {
            if ts == 5_000 {
                rec.record_event(&incident("i1", 5_000)).unwrap();
                assert_eq!(rec.open_incidents(), 1);
            }
            rec.push_frame(Frame::new(ts, vec![ts as u8; 10])).unwrap();
        }
        assert_eq!(rec.open_incidents(), 0, "window closed after `after`");
        let dir = rec.finish(10_000, None).unwrap();
        let recs = records(&dir);
        let want: Vec<i64> = (4_000..=6_000).step_by(100).collect();
        assert_eq!(incident_frames(&recs, "i1"), want);
        let win = recs.iter().find(|r| r.kind == "incident_window").unwrap();
        assert_eq!(win.payload["from_ts"], 4_000);
        assert_eq!(win.payload["to_ts"], 6_000);
        assert_eq!(win.payload["board"], "B");
        assert!(verify(&dir).unwrap().is_intact());
    }

    #[test]
    fn a_status_opens_a_window_only_when_its_state_is_listed() {
        let tmp = tempfile::tempdir().unwrap();
        let mut rec = GameRecorder::start(&meta(), &config(tmp.path()), None).unwrap();
        let status = |id: &str, state: &str, ts: i64| {
            json!({"id": id, "type": "status", "table": "t1", "ts": ts, "state": state,
                   "detail": ""})
        };
        for ts in (0..=10_000).step_by(100) {
            if ts == 2_000 {
                rec.record_event(&status("s1", "recalibrated", 2_000))
                    .unwrap();
                assert_eq!(rec.open_incidents(), 0);
            }
            if ts == 5_000 {
                rec.record_event(&status("s2", "calibration_lost", 5_000))
                    .unwrap();
                assert_eq!(rec.open_incidents(), 1);
            }
            rec.push_frame(Frame::new(ts, vec![ts as u8; 10])).unwrap();
        }
        let dir = rec.finish(10_000, None).unwrap();
        let want: Vec<i64> = (4_000..=6_000).step_by(100).collect();
        assert_eq!(incident_frames(&records(&dir), "s2"), want);
    }

    #[test]
    fn late_incident_takes_frames_already_seen_and_overlaps_share_files() {
        let tmp = tempfile::tempdir().unwrap();
        let mut rec = GameRecorder::start(&meta(), &config(tmp.path()), None).unwrap();
        for ts in (0..=10_000).step_by(100) {
            rec.push_frame(Frame::new(ts, vec![1u8; 10])).unwrap();
            if ts == 5_500 {
                // Reported 500 ms late; a second incident overlaps it.
                rec.record_event(&incident("i1", 5_000)).unwrap();
                rec.record_event(&incident("i2", 5_500)).unwrap();
            }
        }
        let dir = rec.finish(10_000, None).unwrap();
        let recs = records(&dir);
        assert_eq!(
            incident_frames(&recs, "i1"),
            (4_000..=6_000).step_by(100).collect::<Vec<_>>()
        );
        assert_eq!(
            incident_frames(&recs, "i2"),
            (4_500..=6_500).step_by(100).collect::<Vec<_>>()
        );
        let files = std::fs::read_dir(dir.join("frames")).unwrap().count();
        assert_eq!(files, 26, "frames 4.0 s ..= 6.5 s stored once each");
        let report = verify(&dir).unwrap();
        assert!(report.is_intact(), "{:?}", report.problems);
        assert_eq!(report.frames, 26);
    }

    #[test]
    fn disk_bound_drops_frames_but_never_events() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = EvidenceConfig {
            max_game_bytes: 5_000,
            ..config(tmp.path())
        };
        let mut rec = GameRecorder::start(&meta(), &cfg, None).unwrap();
        for i in 0..20i64 {
            let id = format!("m{i}");
            rec.record_event(&json!({"id": id, "type": "move", "table": "t1", "ts": i}))
                .unwrap();
            rec.commit_frame(&id, i, &[7u8; 1000]).unwrap();
        }
        let dropped = rec.log().frames_dropped();
        let written = rec.log().frames_written();
        assert!(
            dropped > 0 && written > 0,
            "{written} written, {dropped} dropped"
        );
        assert_eq!(dropped + written, 20);
        let dir = rec.finish(99, None).unwrap();
        let recs = records(&dir);
        assert_eq!(recs.iter().filter(|r| r.kind == "event").count(), 20);
        let drops: u64 = recs
            .iter()
            .filter(|r| r.kind == "frames_dropped")
            .map(|r| r.payload["count"].as_u64().unwrap())
            .sum();
        assert_eq!(drops, dropped);
        assert_eq!(recs.last().unwrap().payload["frames_dropped"], dropped);
        assert!(verify(&dir).unwrap().is_intact());
    }

    #[test]
    fn invalid_events_are_rejected_and_nothing_is_written() {
        let tmp = tempfile::tempdir().unwrap();
        let mut rec = GameRecorder::start(&meta(), &config(tmp.path()), None).unwrap();
        let before = rec.log().next_seq();
        for bad in [
            json!({"type": "move", "table": "t1", "ts": 1}),
            json!({"id": "x", "type": "move", "table": "t1", "ts": "soon"}),
            json!([1, 2]),
        ] {
            assert!(matches!(
                rec.record_event(&bad),
                Err(EvidenceError::InvalidEvent(_))
            ));
        }
        assert_eq!(rec.log().next_seq(), before);
        assert!(matches!(
            GameRecorder::start(&meta(), &config(tmp.path()), None),
            Err(EvidenceError::AlreadyExists(_))
        ));
    }
}
