//! Frame folders and clock feeds on disk.
//!
//! A frame folder is any folder of `.jpg`/`.jpeg`/`.png` files, replayed sorted by name. A
//! frame's timestamp comes from its name when the stem is `<digits>ms` (milliseconds) — else
//! from its frame number (a stem of digits, as `tandem sim game` writes) or its position in the
//! sorted list, times `1000 / fps`. A clock feed is JSON lines with `ts_ms` (or `ts`) and `board`
//! (`"A"`/`"B"`), as the simulator's `clock.jsonl`.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::engine::{BoardId, Color};

use super::WatchError;

/// One frame file and its time (ms since the start of the recording).
#[derive(Debug, Clone, PartialEq)]
pub struct FrameFile {
    pub path: PathBuf,
    pub ts: u64,
}

/// Timestamp of the frame named `stem` at `position` in the sorted list.
fn frame_ts(stem: &str, position: usize, fps: f64) -> u64 {
    if let Some(ms) = stem.strip_suffix("ms")
        && let Ok(v) = ms.parse::<u64>()
    {
        return v;
    }
    let index = stem.parse::<u64>().unwrap_or(position as u64);
    (index as f64 * 1000.0 / fps).round() as u64
}

/// The image files of `dir` sorted by name, with timestamps (see the module doc). Errors when the
/// folder is unreadable, holds no image, `fps` is not positive, or the times go backwards.
pub fn list_frames(dir: &Path, fps: f64) -> Result<Vec<FrameFile>, WatchError> {
    if !(fps.is_finite() && fps > 0.0) {
        return Err(WatchError::Config(format!(
            "fps must be a positive number, got {fps}"
        )));
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| WatchError::file(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| matches!(e.to_ascii_lowercase().as_str(), "jpg" | "jpeg" | "png"))
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(WatchError::file(dir, "no .jpg/.jpeg/.png frames"));
    }
    let mut out = Vec::with_capacity(files.len());
    let mut last = None;
    for (i, path) in files.into_iter().enumerate() {
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        let ts = frame_ts(stem, i, fps);
        if last.is_some_and(|l| ts < l) {
            return Err(WatchError::file(
                &path,
                "its timestamp goes back in time (frames are sorted by name)",
            ));
        }
        last = Some(ts);
        out.push(FrameFile { path, ts });
    }
    Ok(out)
}

#[derive(Deserialize)]
struct PressLine {
    #[serde(alias = "ts")]
    ts_ms: u64,
    board: String,
    #[serde(default, alias = "side")]
    color: Option<String>,
}

/// One clock press of a feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockPress {
    pub ts: u64,
    pub board: BoardId,
    /// The player who pressed, if the feed says (`color` or `side`: `white`/`black`).
    pub side: Option<Color>,
}

/// Clock presses in time order, handed out up to a given time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClockFeed {
    presses: Vec<ClockPress>,
    next: usize,
}

impl ClockFeed {
    /// Parses JSON lines (`ts_ms`/`ts`, `board`, optionally `color`/`side`); blank lines are
    /// skipped; presses are sorted by time (stable, so equal times keep the file's order).
    pub fn parse(text: &str) -> Result<ClockFeed, String> {
        let mut presses = Vec::new();
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let p: PressLine =
                serde_json::from_str(line).map_err(|e| format!("line {}: {e}", n + 1))?;
            let board = match p.board.as_str() {
                "A" | "a" => BoardId::A,
                "B" | "b" => BoardId::B,
                other => {
                    return Err(format!(
                        "line {}: board must be A or B, got {other:?}",
                        n + 1
                    ));
                }
            };
            let side = match p.color.as_deref() {
                None => None,
                Some("white" | "w") => Some(Color::White),
                Some("black" | "b") => Some(Color::Black),
                Some(other) => {
                    return Err(format!(
                        "line {}: color must be white or black, got {other:?}",
                        n + 1
                    ));
                }
            };
            presses.push(ClockPress {
                ts: p.ts_ms,
                board,
                side,
            });
        }
        presses.sort_by_key(|p| p.ts);
        Ok(ClockFeed { presses, next: 0 })
    }

    /// Reads a clock feed file.
    pub fn load(path: &Path) -> Result<ClockFeed, WatchError> {
        let text = std::fs::read_to_string(path).map_err(|e| WatchError::file(path, e))?;
        ClockFeed::parse(&text).map_err(|e| WatchError::file(path, e))
    }

    /// The presses at or before `ts` not handed out yet.
    pub fn due(&mut self, ts: u64) -> &[ClockPress] {
        let start = self.next;
        while self.next < self.presses.len() && self.presses[self.next].ts <= ts {
            self.next += 1;
        }
        &self.presses[start..self.next]
    }

    /// Every press of the feed, in time order (handed out or not).
    pub fn presses(&self) -> &[ClockPress] {
        &self.presses
    }

    /// Number of presses in the feed.
    pub fn len(&self) -> usize {
        self.presses.len()
    }

    /// Whether the feed has no press.
    pub fn is_empty(&self) -> bool {
        self.presses.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_from_names_numbers_or_positions() {
        assert_eq!(frame_ts("000012", 0, 10.0), 1200);
        assert_eq!(frame_ts("1234ms", 0, 10.0), 1234);
        assert_eq!(frame_ts("shot", 3, 4.0), 750);
        let dir = tempfile::tempdir().unwrap();
        for name in ["000002.jpg", "000000.jpg", "000001.png", "notes.txt"] {
            std::fs::write(dir.path().join(name), b"x").unwrap();
        }
        let frames = list_frames(dir.path(), 10.0).unwrap();
        let ts: Vec<u64> = frames.iter().map(|f| f.ts).collect();
        assert_eq!(ts, [0, 100, 200]);
        assert!(list_frames(dir.path(), 0.0).is_err());
        let empty = tempfile::tempdir().unwrap();
        assert!(list_frames(empty.path(), 10.0).is_err());
    }

    #[test]
    fn clock_feed_hands_out_presses_once_in_order() {
        let mut feed = ClockFeed::parse(
            "{\"ts_ms\":300,\"board\":\"B\"}\n\n{\"ts_ms\":100,\"board\":\"A\",\"color\":\"white\"}\n",
        )
        .unwrap();
        assert_eq!(feed.len(), 2);
        assert_eq!(feed.due(50), &[]);
        let press = |ts, board, side| ClockPress { ts, board, side };
        assert_eq!(feed.due(100), &[press(100, BoardId::A, Some(Color::White))]);
        assert_eq!(feed.due(1000), &[press(300, BoardId::B, None)]);
        assert_eq!(feed.due(2000), &[]);
        let wrong = ClockFeed::parse("{\"ts_ms\":1,\"board\":\"A\",\"color\":\"red\"}\n");
        assert!(wrong.unwrap_err().contains("white or black"));
        assert!(ClockFeed::parse("{\"ts_ms\":1,\"board\":\"C\"}").is_err());
        assert!(ClockFeed::parse("not json").is_err());
    }
}
