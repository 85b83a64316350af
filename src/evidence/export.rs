//! Bundling one game for an arbiter, and pruning old games.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use zip::CompressionMethod;
use zip::write::SimpleFileOptions;

use super::error::{EvidenceError, IoContext};
use super::log::{FRAMES_DIR, LOG_FILE};
use super::record;
use super::verify::verify;

/// What [`export`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportSummary {
    /// The zip file.
    pub out: PathBuf,
    /// Records in the exported log.
    pub records: usize,
    /// Frame files included.
    pub frames: usize,
    /// Problems `verify` found at export time (the game is exported anyway, as found).
    pub problems: usize,
}

/// Writes `out_zip` holding `<game>/log.jsonl`, `<game>/frames/*` and `<game>/README.txt`.
///
/// The files are copied byte for byte (frames stored, the log deflated), so the archive verifies
/// exactly as the directory did; the README records that result and how to check it again.
pub fn export(game_dir: &Path, out_zip: &Path) -> Result<ExportSummary, EvidenceError> {
    let report = verify(game_dir)?;
    let log_path = game_dir.join(LOG_FILE);
    let log = std::fs::read(&log_path).at(&log_path)?;
    let meta = log
        .split(|b| *b == b'\n')
        .next()
        .and_then(|l| record::decode(l).ok())
        .map(|r| r.payload)
        .unwrap_or_default();

    let mut frames: Vec<PathBuf> = match std::fs::read_dir(game_dir.join(FRAMES_DIR)) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                p.is_file()
                    && !p
                        .file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with('.'))
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    frames.sort();

    // `<table>-<game>`, so that archives of several tables unzip side by side.
    let name = match (
        meta.get("table").and_then(|v| v.as_str()),
        meta.get("game").and_then(|v| v.as_str()),
    ) {
        (Some(t), Some(g)) => format!("{}-{}", safe_name(t), safe_name(g)),
        _ => game_dir
            .file_name()
            .and_then(|n| n.to_str())
            .map(safe_name)
            .unwrap_or_else(|| "game".into()),
    };
    let field = |k: &str| {
        meta.get(k)
            .and_then(|v| v.as_str())
            .unwrap_or("?")
            .to_string()
    };
    let mut readme = String::new();
    readme.push_str("Tandem table evidence\n=====================\n\n");
    readme.push_str(&format!(
        "Table: {}\nGame: {}\nRule set: {}\nSoftware: {} {}\nModel SHA-256: {}\nCalibration SHA-256: {}\nSigning key (Ed25519, hex): {}\n\n",
        field("table"),
        field("game"),
        field("rule_set"),
        field("software"),
        field("version"),
        field("model_sha256"),
        field("calibration_sha256"),
        meta.get("pubkey").and_then(|v| v.as_str()).unwrap_or("none (unsigned)"),
    ));
    readme.push_str(&format!(
        "Verification at export: {} records, {} frames, {}.\n",
        report.records,
        report.frames,
        if report.is_intact() {
            "intact".to_string()
        } else {
            format!("{} problem(s)", report.problems.len())
        }
    ));
    for p in &report.problems {
        readme.push_str(&format!("  - {p}\n"));
    }
    for n in &report.notes {
        readme.push_str(&format!("  note: {n}\n"));
    }
    readme.push_str(
        "\nContents\n--------\n\
         log.jsonl   one JSON record per line: seq, kind (meta, event, frame, incident_window,\n\
         \x20           frames_dropped, resumed, end), ts (ms), prev, payload, and sig when signed.\n\
         \x20           prev is the SHA-256 (hex) of the previous line's bytes without its newline;\n\
         \x20           sig is an Ed25519 signature of the line with its ,\"sig\":\"...\" part removed.\n\
         frames/     images; each frame record names its file and the file's SHA-256.\n\n\
         To check: unzip, then run `tandem evidence verify <dir>`; or recompute the SHA-256\n\
         chain with any tool. `tandem evidence show <dir> --sheets out/` prints the timeline\n\
         and draws one contact sheet per incident.\n",
    );

    let file = File::create(out_zip).at(out_zip)?;
    let mut zip = zip::ZipWriter::new(file);
    let deflated = SimpleFileOptions::default()
        .compression_method(CompressionMethod::Deflated)
        .unix_permissions(0o644)
        .large_file(log.len() as u64 >= u32::MAX as u64);
    let stored = SimpleFileOptions::default()
        .compression_method(CompressionMethod::Stored)
        .unix_permissions(0o644);
    zip.start_file(format!("{name}/README.txt"), deflated)?;
    zip.write_all(readme.as_bytes()).at(out_zip)?;
    zip.start_file(format!("{name}/{LOG_FILE}"), deflated)?;
    zip.write_all(&log).at(out_zip)?;
    let mut n_frames = 0;
    for p in &frames {
        let Some(fname) = p.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let bytes = std::fs::read(p).at(p)?;
        zip.start_file(format!("{name}/{FRAMES_DIR}/{fname}"), stored)?;
        zip.write_all(&bytes).at(out_zip)?;
        n_frames += 1;
    }
    zip.finish()?.sync_all().at(out_zip)?;
    Ok(ExportSummary {
        out: out_zip.to_path_buf(),
        records: report.records,
        frames: n_frames,
        problems: report.problems.len(),
    })
}

fn safe_name(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A game directory found under an evidence root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GameEntry {
    /// The directory holding `log.jsonl`.
    pub dir: PathBuf,
    /// True when the log's last complete record is `end`.
    pub finished: bool,
    /// Modification time of the log (last write).
    pub modified: std::time::SystemTime,
}

/// Lists game directories (any directory holding `log.jsonl`) up to two levels below `root`.
pub fn list_games(root: &Path) -> Result<Vec<GameEntry>, EvidenceError> {
    let mut out = Vec::new();
    let mut stack = vec![(root.to_path_buf(), 0)];
    while let Some((dir, depth)) = stack.pop() {
        let log = dir.join(LOG_FILE);
        if log.is_file() {
            let modified = std::fs::metadata(&log)
                .and_then(|m| m.modified())
                .at(&log)?;
            out.push(GameEntry {
                finished: last_record_is_end(&log)?,
                dir,
                modified,
            });
            continue;
        }
        if depth >= 2 {
            continue;
        }
        let entries = std::fs::read_dir(&dir).at(&dir)?;
        for e in entries.filter_map(Result::ok) {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push((e.path(), depth + 1));
            }
        }
    }
    out.sort_by(|a, b| a.modified.cmp(&b.modified).then(a.dir.cmp(&b.dir)));
    Ok(out)
}

fn last_record_is_end(log: &Path) -> Result<bool, EvidenceError> {
    let data = std::fs::read(log).at(log)?;
    let complete = match data.iter().rposition(|b| *b == b'\n') {
        Some(p) => &data[..p],
        None => return Ok(false),
    };
    let last = complete.rsplit(|b| *b == b'\n').next().unwrap_or_default();
    Ok(record::decode(last).is_ok_and(|r| r.kind == "end"))
}

/// Deletes the oldest finished games under `root` so that at most `keep_games` finished games
/// remain; unfinished games (possibly still being written) are never touched. Returns what was
/// deleted.
pub fn prune(root: &Path, keep_games: usize) -> Result<Vec<PathBuf>, EvidenceError> {
    let finished: Vec<GameEntry> = list_games(root)?
        .into_iter()
        .filter(|g| g.finished)
        .collect();
    let excess = finished.len().saturating_sub(keep_games);
    let mut removed = Vec::new();
    for g in finished.into_iter().take(excess) {
        std::fs::remove_dir_all(&g.dir).at(&g.dir)?;
        removed.push(g.dir);
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::{EvidenceConfig, EvidenceLog, GameMeta, game_dir};

    fn game(root: &Path, name: &str, finish: bool) -> PathBuf {
        let meta = GameMeta {
            table: "t".into(),
            game: name.into(),
            calibration: None,
            model_sha256: None,
            rule_set: "verein".into(),
            started_ts: 0,
        };
        let dir = game_dir(root, "t", name);
        let log = EvidenceLog::create(&dir, &meta, &EvidenceConfig::default(), None).unwrap();
        if finish {
            log.finish(1, None).unwrap();
        }
        // Distinct modification times, oldest first.
        std::thread::sleep(std::time::Duration::from_millis(20));
        dir
    }

    #[test]
    fn prune_keeps_the_newest_finished_games_and_all_unfinished_ones() {
        let tmp = tempfile::tempdir().unwrap();
        let g1 = game(tmp.path(), "g1", true);
        let open = game(tmp.path(), "g2", false);
        let g3 = game(tmp.path(), "g3", true);
        let g4 = game(tmp.path(), "g4", true);
        let removed = prune(tmp.path(), 1).unwrap();
        assert_eq!(removed, vec![g1.clone(), g3.clone()]);
        assert!(!g1.exists() && !g3.exists());
        assert!(open.exists() && g4.exists());
        assert!(prune(tmp.path(), 1).unwrap().is_empty());
    }
}
