//! Crash safety: a writer killed with SIGKILL at a random moment leaves a log that verifies up to
//! its last whole record, and a log cut at any byte of its last record reports a truncated tail,
//! never tampering.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use tandem_monitor::evidence::{
    self, EvidenceConfig, Frame, FsyncPolicy, GameMeta, GameRecorder, SigningKey,
};

const CHILD_ENV: &str = "TANDEM_EVIDENCE_CRASH_CHILD_DIR";

fn meta() -> GameMeta {
    GameMeta {
        table: "t9".into(),
        game: "crash".into(),
        calibration: None,
        model_sha256: None,
        rule_set: "fics".into(),
        started_ts: 0,
    }
}

/// A cheap pseudo-random sequence (xorshift) so the test needs no extra crate.
struct Xorshift(u64);
impl Xorshift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Not a test of its own: when re-invoked by `kill_9_mid_write_leaves_a_verifiable_log` with
/// `CHILD_ENV` set, appends records and frames forever (until killed).
#[test]
fn crash_child_writer() {
    let Ok(root) = std::env::var(CHILD_ENV) else {
        return;
    };
    let config = EvidenceConfig {
        dir: PathBuf::from(root),
        before_secs: 0.5,
        after_secs: 0.5,
        fsync: FsyncPolicy::Never,
        ..EvidenceConfig::default()
    };
    let key = SigningKey::from_bytes(&[9u8; 32]);
    let mut rec = GameRecorder::start(&meta(), &config, Some(key)).unwrap();
    let mut rng = Xorshift(0x9E37_79B9_7F4A_7C15);
    for i in 0i64.. {
        let ts = i * 100;
        let len = 1000 + (rng.next() % 60_000) as usize;
        let frame: Vec<u8> = (0..len).map(|j| (j as u64 ^ rng.0) as u8).collect();
        rec.push_frame(Frame::new(ts, frame.clone())).unwrap();
        // Large events make a kill inside one write() of a record likely.
        let note = "x".repeat((rng.next() % 4_000_000) as usize);
        let ty = if i % 25 == 0 { "illegal_move" } else { "move" };
        let id = format!("e{i}");
        rec.record_event(&json!({"id": id, "type": ty, "table": "t9", "ts": ts, "note": note}))
            .unwrap();
        if i % 3 == 0 {
            rec.commit_frame(&id, ts, &frame).unwrap();
        }
    }
}

fn log_len(dir: &Path) -> u64 {
    std::fs::metadata(dir.join("log.jsonl"))
        .map(|m| m.len())
        .unwrap_or(0)
}

fn last_byte(dir: &Path) -> Option<u8> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(dir.join("log.jsonl")).ok()?;
    f.seek(SeekFrom::End(-1)).ok()?;
    let mut b = [0u8; 1];
    f.read_exact(&mut b).ok()?;
    Some(b[0])
}

#[test]
fn kill_9_mid_write_leaves_a_verifiable_log() {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
        | 1;
    println!("seed {seed}");
    let mut rng = Xorshift(seed);
    let exe = std::env::current_exe().unwrap();
    for round in 0..3 {
        let tmp = tempfile::tempdir().unwrap();
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "crash_child_writer",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, tmp.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let game = evidence::game_dir(tmp.path(), "t9", "crash");
        // Wait until the writer is well under way, then kill at a random moment.
        let threshold = 2_000_000 + rng.next() % 20_000_000;
        let start = Instant::now();
        while log_len(&game) < threshold && start.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(1));
        }
        // Aim for the inside of a write: spin until the file's last byte is not a newline (a
        // record is half copied), at most a random 0–200 ms, then SIGKILL.
        let aim = Duration::from_micros(rng.next() % 200_000);
        let aiming = Instant::now();
        while aiming.elapsed() < aim && last_byte(&game) == Some(b'\n') {}
        child.kill().unwrap(); // SIGKILL on Unix
        child.wait().unwrap();

        let report = evidence::verify(&game).unwrap();
        println!(
            "round {round}: {} records, {} frames, tail {:?}",
            report.records, report.frames, report.truncated_tail
        );
        assert!(report.is_intact(), "round {round}: {:?}", report.problems);
        assert!(report.signed);
        assert!(!report.finished, "the writer never finishes");
        assert!(
            report.records > 2,
            "the writer was killed before it wrote records"
        );
        // Everything verify accepted is whole: the accepted prefix ends with a newline and the
        // tail (if any) is exactly the rest of the file.
        let data = std::fs::read(game.join("log.jsonl")).unwrap();
        let accepted = data.iter().filter(|b| **b == b'\n').count();
        assert_eq!(accepted, report.records);
        let tail = report.truncated_tail.map_or(0, |t| t.bytes) as usize;
        assert_eq!(
            data.len() - tail,
            data.iter().rposition(|b| *b == b'\n').unwrap() + 1
        );

        // The daemon restarts: the log continues after the last whole record and can finish.
        let config = EvidenceConfig {
            dir: tmp.path().to_path_buf(),
            ..EvidenceConfig::default()
        };
        let key = SigningKey::from_bytes(&[9u8; 32]);
        assert!(
            GameRecorder::resume(&game, &config, None).is_err(),
            "key required"
        );
        let mut rec = GameRecorder::resume(&game, &config, Some(key)).unwrap();
        rec.record_event(&json!({"id": "after", "type": "move", "table": "t9", "ts": 1}))
            .unwrap();
        rec.finish(2, None).unwrap();
        let resumed = evidence::verify(&game).unwrap();
        assert!(resumed.is_intact(), "{:?}", resumed.problems);
        assert!(resumed.finished && resumed.truncated_tail.is_none());
        assert_eq!(resumed.records, report.records + 3);
        let lines = std::fs::read_to_string(game.join("log.jsonl")).unwrap();
        let resumed_rec: serde_json::Value =
            serde_json::from_str(lines.lines().nth(report.records).unwrap()).unwrap();
        assert_eq!(resumed_rec["kind"], "resumed");
        assert_eq!(resumed_rec["payload"]["truncated_tail_bytes"], tail as u64);
    }
}

fn small_game(root: &Path, key: Option<SigningKey>) -> PathBuf {
    let config = EvidenceConfig {
        dir: root.to_path_buf(),
        ..EvidenceConfig::default()
    };
    let mut rec = GameRecorder::start(&meta(), &config, key).unwrap();
    for i in 0..8i64 {
        let id = format!("m{i}");
        rec.record_event(
            &json!({"id": id, "type": "move", "table": "t9", "ts": i * 1000,
            "uci": "e2e4", "board": "A"}),
        )
        .unwrap();
        rec.commit_frame(&id, i * 1000, &[0xFF, 0xD8, 0xFF, i as u8])
            .unwrap();
    }
    rec.finish(9000, None).unwrap()
}

fn truncate_at_every_offset(game: &Path, scratch: &Path) {
    let data = std::fs::read(game.join("log.jsonl")).unwrap();
    let full = evidence::verify(game).unwrap();
    assert!(full.is_intact() && full.finished);
    // Start of the last record (the `end` record).
    let last_start = data[..data.len() - 1]
        .iter()
        .rposition(|b| *b == b'\n')
        .unwrap()
        + 1;
    std::fs::create_dir_all(scratch).unwrap();
    std::fs::create_dir_all(scratch.join("frames")).unwrap();
    for e in std::fs::read_dir(game.join("frames")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), scratch.join("frames").join(e.file_name())).unwrap();
    }
    for cut in last_start..data.len() {
        std::fs::write(scratch.join("log.jsonl"), &data[..cut]).unwrap();
        let r = evidence::verify(scratch).unwrap();
        assert!(r.is_intact(), "cut at {cut}: {:?}", r.problems);
        assert_eq!(r.records, full.records - 1, "cut at {cut}");
        assert!(!r.finished);
        match &r.truncated_tail {
            None => assert_eq!(cut, last_start),
            Some(t) => {
                assert_eq!(t.offset as usize, last_start);
                assert_eq!(t.bytes as usize, cut - last_start);
                assert_eq!(t.line, full.records);
            }
        }
    }
}

#[test]
fn truncation_at_every_byte_of_the_last_record_is_a_truncated_tail() {
    let tmp = tempfile::tempdir().unwrap();
    let game = small_game(&tmp.path().join("plain"), None);
    truncate_at_every_offset(&game, &tmp.path().join("cut-plain"));
    let game = small_game(
        &tmp.path().join("signed"),
        Some(SigningKey::from_bytes(&[5u8; 32])),
    );
    truncate_at_every_offset(&game, &tmp.path().join("cut-signed"));
}
