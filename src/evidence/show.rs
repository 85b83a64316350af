//! Human views of a game: a one-line-per-record timeline and a contact sheet per incident.

use std::path::{Path, PathBuf};

use image::imageops::FilterType;
use image::{Rgb, RgbImage};
use imageproc::drawing::{draw_filled_rect_mut, draw_line_segment_mut};
use imageproc::rect::Rect;
use serde_json::Value;

use super::error::{EvidenceError, IoContext};
use super::font::{draw_text, text_width};
use super::log::LOG_FILE;
use super::record::{self, Record};

/// One timeline line: when, what kind, which board, and a short summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimelineEntry {
    /// 1-based line in `log.jsonl`.
    pub line: usize,
    /// Record sequence number (the line number minus one in an intact log).
    pub seq: u64,
    /// Record time in ms.
    pub ts: i64,
    /// Record kind, or the event `type` for events.
    pub what: String,
    /// `A`/`B` when the record concerns one board.
    pub board: Option<String>,
    /// A short description.
    pub summary: String,
}

impl std::fmt::Display for TimelineEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:>5} {}  {:<16} {:<1}  {}",
            self.seq,
            format_ts(self.ts),
            self.what,
            self.board.as_deref().unwrap_or("-"),
            self.summary
        )
    }
}

/// Formats ms: epoch times (after 1973) as UTC `HH:MM:SS.mmm`, smaller values as `+M:SS.mmm`.
pub fn format_ts(ts: i64) -> String {
    let sign = if ts < 0 { "-" } else { "+" };
    let abs = ts.unsigned_abs();
    let ms = abs % 1000;
    let s = abs / 1000;
    if ts >= 100_000_000_000 {
        let day_s = s % 86_400;
        format!(
            "{:02}:{:02}:{:02}.{ms:03}",
            day_s / 3600,
            day_s / 60 % 60,
            day_s % 60
        )
    } else {
        format!("{sign}{}:{:02}.{ms:03}", s / 60, s % 60)
    }
}

/// Complete lines of the log, each parsed or with the reason it is not a record.
fn read_lines(dir: &Path) -> Result<Vec<Result<Record, String>>, EvidenceError> {
    let path = dir.join(LOG_FILE);
    if !path.is_file() {
        return Err(EvidenceError::NotAGame(dir.to_path_buf()));
    }
    let data = std::fs::read(&path).at(&path)?;
    let complete = match data.iter().rposition(|b| *b == b'\n') {
        Some(p) => &data[..p],
        None => return Ok(Vec::new()),
    };
    Ok(complete
        .split(|b| *b == b'\n')
        .map(record::decode)
        .collect())
}

fn short(v: &Value, max: usize) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if s.chars().count() > max {
        let t: String = s.chars().take(max.saturating_sub(1)).collect();
        format!("{t}…")
    } else {
        s
    }
}

fn summarize(r: &Record) -> (String, Option<String>, String) {
    let p = &r.payload;
    let board = p.get("board").and_then(Value::as_str).map(str::to_string);
    let get = |k: &str| p.get(k).map(|v| short(v, 40)).unwrap_or_else(|| "?".into());
    match r.kind.as_str() {
        "meta" => (
            "meta".into(),
            None,
            format!(
                "table {} game {} rules {} {} {} model {} {}",
                get("table"),
                get("game"),
                get("rule_set"),
                get("software"),
                get("version"),
                p.get("model_sha256")
                    .and_then(Value::as_str)
                    .map(|h| h.chars().take(12).collect::<String>())
                    .unwrap_or_else(|| "-".into()),
                if p.get("pubkey").is_some_and(Value::is_string) {
                    "signed"
                } else {
                    "unsigned"
                }
            ),
        ),
        "event" => {
            let what = p
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("event")
                .to_string();
            let rest: Vec<String> = p
                .as_object()
                .map(|o| {
                    o.iter()
                        .filter(|(k, _)| !matches!(k.as_str(), "type" | "table" | "ts" | "board"))
                        .map(|(k, v)| format!("{k}={}", short(v, 24)))
                        .collect()
                })
                .unwrap_or_default();
            (what, board, short(&Value::String(rest.join(" ")), 100))
        }
        "frame" => {
            let link = match p.get("role").and_then(Value::as_str) {
                Some("commit") => format!("commit of {}", get("event_id")),
                Some("incident") => format!("incident {}", get("incident_id")),
                _ => "?".into(),
            };
            let kb = p.get("bytes").and_then(Value::as_u64).unwrap_or(0) as f64 / 1024.0;
            (
                "frame".into(),
                board,
                format!("{} {kb:.0} KB, {link}", get("file")),
            )
        }
        "incident_window" => (
            "incident_window".into(),
            board,
            format!(
                "{} {} frames {}..{}{}",
                get("incident_type"),
                get("incident_id"),
                format_ts(p.get("from_ts").and_then(Value::as_i64).unwrap_or(0)),
                format_ts(p.get("to_ts").and_then(Value::as_i64).unwrap_or(0)),
                p.get("squares")
                    .map(|s| format!(" squares {}", short(s, 40)))
                    .unwrap_or_default()
            ),
        ),
        "frames_dropped" => (
            "frames_dropped".into(),
            None,
            format!("{} frames skipped ({})", get("count"), get("reason")),
        ),
        "end" => (
            "end".into(),
            None,
            format!(
                "{} records, {} frames, {} dropped, result {}",
                get("records"),
                get("frames"),
                get("frames_dropped"),
                p.get("result")
                    .and_then(|r| r.get("result"))
                    .map(|v| short(v, 12))
                    .unwrap_or_else(|| "-".into())
            ),
        ),
        other => (other.to_string(), board, short(p, 80)),
    }
}

/// The timeline of a game: one entry per complete record (a truncated tail is skipped).
pub fn timeline(dir: &Path) -> Result<Vec<TimelineEntry>, EvidenceError> {
    // Boards of events and incidents, so that their frames show the board too.
    let mut boards: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    let lines = read_lines(dir)?;
    for r in lines.iter().flatten() {
        if let (Some(id), Some(b)) = (
            r.payload.get("id").and_then(Value::as_str),
            r.payload.get("board").and_then(Value::as_str),
        ) {
            boards.insert(id.to_string(), b.to_string());
        }
    }
    Ok(lines
        .iter()
        .enumerate()
        .map(|(i, r)| match r {
            Ok(r) => {
                let (what, mut board, summary) = summarize(r);
                if board.is_none() && r.kind == "frame" {
                    board = ["event_id", "incident_id"]
                        .iter()
                        .filter_map(|k| r.payload.get(*k).and_then(Value::as_str))
                        .find_map(|id| boards.get(id).cloned());
                }
                TimelineEntry {
                    line: i + 1,
                    seq: r.seq,
                    ts: r.ts,
                    what,
                    board,
                    summary,
                }
            }
            // A damaged line is shown, not hidden: `verify` says what is wrong with it.
            Err(reason) => TimelineEntry {
                line: i + 1,
                seq: i as u64,
                ts: 0,
                what: "malformed".into(),
                board: None,
                summary: format!("line {}: {reason}", i + 1),
            },
        })
        .collect())
}

/// Most frames on one contact sheet (sampled evenly over the window).
const MAX_TILES: usize = 10;
/// Tiles per row.
const COLUMNS: usize = 5;
/// Width of one scaled-down frame.
const TILE_W: u32 = 320;
const CAPTION_H: u32 = 12;
const HEADER_H: u32 = 18;

/// Board corner points in image pixels, in the order a8, h8, h1, a1.
type Quad = [(f32, f32); 4];

fn parse_quad(v: &Value) -> Option<Quad> {
    let pts = v.as_array()?;
    if pts.len() != 4 {
        return None;
    }
    let mut q = [(0.0, 0.0); 4];
    for (i, p) in pts.iter().enumerate() {
        let xy = p.as_array()?;
        q[i] = (xy.first()?.as_f64()? as f32, xy.get(1)?.as_f64()? as f32);
    }
    Some(q)
}

/// Parses `e4`, `A:e4` or `B/e4` into (board, file 0..8, rank 1..=8).
fn parse_square(s: &str, default_board: Option<&str>) -> Option<(String, u8, u8)> {
    let (board, sq) = match s.split_once([':', '/']) {
        Some((b, sq)) => (b.to_ascii_uppercase(), sq),
        None => (default_board?.to_ascii_uppercase(), s),
    };
    let b = sq.as_bytes();
    if b.len() != 2 || !(b'a'..=b'h').contains(&b[0]) || !(b'1'..=b'8').contains(&b[1]) {
        return None;
    }
    Some((board, b[0] - b'a', b[1] - b'0'))
}

/// The four corners of a square inside a board quad (bilinear; exact for a fronto-parallel view).
fn square_quad(q: &Quad, file: u8, rank: u8) -> Quad {
    let at = |u: f32, v: f32| {
        let w = [(1.0 - u) * (1.0 - v), u * (1.0 - v), u * v, (1.0 - u) * v];
        (
            w.iter().zip(q).map(|(w, p)| w * p.0).sum::<f32>(),
            w.iter().zip(q).map(|(w, p)| w * p.1).sum::<f32>(),
        )
    };
    let (u0, u1) = (file as f32 / 8.0, (file + 1) as f32 / 8.0);
    let (v0, v1) = ((8 - rank) as f32 / 8.0, (9 - rank) as f32 / 8.0);
    [at(u0, v0), at(u1, v0), at(u1, v1), at(u0, v1)]
}

fn outline(img: &mut RgbImage, q: &Quad, color: Rgb<u8>) {
    for i in 0..4 {
        let (a, b) = (q[i], q[(i + 1) % 4]);
        for (dx, dy) in [(0.0, 0.0), (1.0, 0.0), (0.0, 1.0)] {
            draw_line_segment_mut(img, (a.0 + dx, a.1 + dy), (b.0 + dx, b.1 + dy), color);
        }
    }
}

/// Writes one PNG per incident window into `out_dir`: its frames side by side, scaled down,
/// captioned with their time relative to the incident, and with the incident's `squares` outlined
/// on frames that carry `corners` metadata. Returns the files written.
pub fn contact_sheets(dir: &Path, out_dir: &Path) -> Result<Vec<PathBuf>, EvidenceError> {
    let records: Vec<Record> = read_lines(dir)?
        .into_iter()
        .filter_map(Result::ok)
        .collect();
    std::fs::create_dir_all(out_dir).at(out_dir)?;
    let mut written = Vec::new();
    for (n, win) in records
        .iter()
        .filter(|r| r.kind == "incident_window")
        .enumerate()
    {
        let p = &win.payload;
        let id = p.get("incident_id").and_then(Value::as_str).unwrap_or("?");
        let board = p.get("board").and_then(Value::as_str);
        let squares: Vec<(String, u8, u8)> = p
            .get("squares")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|s| parse_square(s.as_str()?, board))
                    .collect()
            })
            .unwrap_or_default();
        let frames: Vec<&Record> = records
            .iter()
            .filter(|r| {
                r.kind == "frame"
                    && r.payload.get("incident_id").and_then(Value::as_str) == Some(id)
            })
            .collect();
        let picked: Vec<&Record> = if frames.len() <= MAX_TILES {
            frames.clone()
        } else {
            (0..MAX_TILES)
                .map(|i| frames[i * (frames.len() - 1) / (MAX_TILES - 1)])
                .collect()
        };
        let mut tiles: Vec<(RgbImage, String)> = Vec::new();
        for fr in &picked {
            let file = fr.payload.get("file").and_then(Value::as_str).unwrap_or("");
            let caption = format!("{:+.1}S", (fr.ts as f64 - win.ts as f64) / 1000.0);
            let decoded = super::verify::safe_frame_path(file)
                .then(|| std::fs::read(dir.join(file)).ok())
                .flatten()
                .and_then(|b| image::load_from_memory(&b).ok());
            let Some(img) = decoded else {
                let mut t = RgbImage::from_pixel(TILE_W, TILE_W * 9 / 16, Rgb([60, 60, 60]));
                draw_text(&mut t, 8, 8, "UNREADABLE", 2, Rgb([255, 255, 255]));
                tiles.push((t, caption));
                continue;
            };
            let (w, h) = (img.width().max(1), img.height().max(1));
            let th = (TILE_W * h / w).max(1);
            let mut t = image::imageops::resize(&img.to_rgb8(), TILE_W, th, FilterType::Triangle);
            let scale = TILE_W as f32 / w as f32;
            if let Some(corners) = fr.payload.get("meta").and_then(|m| m.get("corners")) {
                for (b, file, rank) in &squares {
                    if let Some(q) = corners.get(b.as_str()).and_then(parse_quad) {
                        let sq = square_quad(&q, *file, *rank).map(|(x, y)| (x * scale, y * scale));
                        outline(&mut t, &sq, Rgb([255, 30, 30]));
                    }
                }
            }
            tiles.push((t, caption));
        }
        let header = format!(
            "INCIDENT {id} {} BOARD {} {} FRAMES",
            p.get("incident_type")
                .and_then(Value::as_str)
                .unwrap_or("?"),
            board.unwrap_or("-"),
            frames.len()
        );
        let sheet = compose(&tiles, &header);
        let safe: String = id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let out = out_dir.join(format!("incident-{:02}-{safe}.png", n + 1));
        sheet.save(&out).map_err(|source| EvidenceError::Image {
            path: out.clone(),
            source,
        })?;
        written.push(out);
    }
    Ok(written)
}

fn compose(tiles: &[(RgbImage, String)], header: &str) -> RgbImage {
    let cols = tiles.len().clamp(1, COLUMNS) as u32;
    let rows = tiles.len().div_ceil(COLUMNS).max(1) as u32;
    let tile_h = tiles
        .iter()
        .map(|(t, _)| t.height())
        .max()
        .unwrap_or(TILE_W * 9 / 16);
    let cell_h = tile_h + CAPTION_H;
    let width = (cols * TILE_W).max(text_width(header, 2) + 8);
    let mut sheet = RgbImage::from_pixel(width, HEADER_H + rows * cell_h, Rgb([20, 20, 20]));
    draw_filled_rect_mut(
        &mut sheet,
        Rect::at(0, 0).of_size(width, HEADER_H),
        Rgb([40, 40, 90]),
    );
    draw_text(&mut sheet, 4, 2, header, 2, Rgb([255, 255, 255]));
    if tiles.is_empty() {
        return sheet;
    }
    for (i, (tile, caption)) in tiles.iter().enumerate() {
        let x = (i as u32 % cols) * TILE_W;
        let y = HEADER_H + (i as u32 / cols) * cell_h;
        image::imageops::replace(&mut sheet, tile, x as i64, y as i64);
        draw_text(
            &mut sheet,
            x + 4,
            y + tile_h + 3,
            caption,
            1,
            Rgb([230, 230, 120]),
        );
    }
    sheet
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_format_relative_and_epoch() {
        assert_eq!(format_ts(65_432), "+1:05.432");
        assert_eq!(format_ts(-1500), "-0:01.500");
        assert!(format_ts(i64::MIN).starts_with('-'));
        // 2026-11-30 20:31:57.123 UTC
        assert_eq!(format_ts(1_796_070_717_123), "20:31:57.123");
    }

    #[test]
    fn squares_parse_with_and_without_board() {
        assert_eq!(parse_square("e4", Some("a")), Some(("A".into(), 4, 4)));
        assert_eq!(parse_square("B:h8", None), Some(("B".into(), 7, 8)));
        assert_eq!(parse_square("e4", None), None);
        assert_eq!(parse_square("i9", Some("A")), None);
    }

    #[test]
    fn square_quad_corners_of_a_square_board() {
        let q: Quad = [(0.0, 0.0), (800.0, 0.0), (800.0, 800.0), (0.0, 800.0)];
        assert_eq!(square_quad(&q, 0, 8)[0], (0.0, 0.0));
        assert_eq!(square_quad(&q, 7, 1)[2], (800.0, 800.0));
        let e4 = square_quad(&q, 4, 4);
        assert_eq!(e4[0], (400.0, 400.0));
        assert_eq!(e4[2], (500.0, 500.0));
    }
}

#[cfg(test)]
mod sheet_tests {
    use super::*;
    use crate::evidence::{EvidenceConfig, Frame, GameMeta, GameRecorder};
    use serde_json::json;

    fn png(w: u32, h: u32) -> Vec<u8> {
        let img = RgbImage::from_pixel(w, h, Rgb([0, 0, 200]));
        let mut out = std::io::Cursor::new(Vec::new());
        img.write_to(&mut out, image::ImageFormat::Png)
            .expect("encoding to memory cannot fail");
        out.into_inner()
    }

    #[test]
    fn contact_sheet_outlines_the_incident_squares() {
        let tmp = tempfile::tempdir().unwrap();
        let config = EvidenceConfig {
            dir: tmp.path().join("ev"),
            before_secs: 0.2,
            after_secs: 0.2,
            ..EvidenceConfig::default()
        };
        let meta = GameMeta {
            table: "t".into(),
            game: "g".into(),
            calibration: None,
            model_sha256: None,
            rule_set: "dsb".into(),
            started_ts: 0,
        };
        let mut rec = GameRecorder::start(&meta, &config, None).unwrap();
        // Board A fills a 640×640 frame exactly: a8 top-left … a1 bottom-left.
        let corners = json!({"corners": {"A": [[0, 0], [640, 0], [640, 640], [0, 640]]}});
        let bytes = png(640, 640);
        for ts in (0..=1000).step_by(100) {
            let mut f = Frame::new(ts, bytes.clone());
            f.meta = Some(corners.clone());
            rec.push_frame(f).unwrap();
            if ts == 500 {
                rec.record_event(&json!({"id": "i1", "type": "illegal_move", "table": "t",
                    "board": "A", "ts": 500, "squares": ["a8"]}))
                    .unwrap();
            }
        }
        let dir = rec.finish(1000, None).unwrap();
        let sheets = contact_sheets(&dir, &tmp.path().join("sheets")).unwrap();
        assert_eq!(sheets.len(), 1);
        let sheet = image::open(&sheets[0]).unwrap().to_rgb8();
        // 5 frames (300..=700 ms) in one row of 320-px tiles under the header.
        assert_eq!(sheet.width(), 5 * TILE_W);
        assert_eq!(sheet.height(), HEADER_H + TILE_W + CAPTION_H);
        let red = |x: u32, y: u32| {
            let p = sheet.get_pixel(x, y).0;
            p[0] > 200 && p[2] < 100
        };
        // a8 is the top-left 40×40 of each 320-px tile: its right edge at x = 40 is red,
        // the middle of the square and a far square are not.
        for tile in 0..5 {
            let x0 = tile * TILE_W;
            assert!(red(x0 + 40, HEADER_H + 20), "tile {tile}: a8 outline");
            assert!(!red(x0 + 20, HEADER_H + 20), "tile {tile}: a8 inside");
            assert!(!red(x0 + 200, HEADER_H + 200), "tile {tile}: e4 untouched");
        }
    }
}
