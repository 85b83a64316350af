//! The daemon's TOML configuration (`tandem run --config FILE.toml`), validated on load.
//!
//! Every section has defaults that work: only `[[tables]]` is required. Relative paths are
//! resolved against the configuration file's directory, so a file works from any working
//! directory. Validation errors are one line naming the file, the field and the problem.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::broadcast::BroadcastConfig;
use crate::evidence::EvidenceConfig;
use crate::publish::{MqttConfig, TableId};
use crate::rules::RuleSet;

use super::DaemonError;

/// The whole file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DaemonConfig {
    /// The tables this daemon's camera watches (at least one).
    pub tables: Vec<TableSpec>,
    /// Where frames (or, for `replay`, moves) come from.
    #[serde(default)]
    pub source: SourceConfig,
    /// A scripted move source next to a frame source (until the tracker exists).
    #[serde(default)]
    pub moves: Option<ReplayConfig>,
    /// The publisher's settings; no `host` starts the embedded broker.
    #[serde(default)]
    pub mqtt: MqttConfig,
    #[serde(default)]
    pub evidence: EvidenceConfig,
    /// The live feed and `/health`; absent = no HTTP server.
    #[serde(default)]
    pub broadcast: Option<BroadcastConfig>,
    /// The per-table action journals that let a restarted daemon continue its games.
    #[serde(default = "default_state_dir")]
    pub state_dir: PathBuf,
    /// Stop by itself once the move source is exhausted and every event is acknowledged
    /// (demos and tests); a production daemon runs until SIGINT/SIGTERM.
    #[serde(default)]
    pub exit_when_done: bool,
    /// How tables with a `calibration` are watched: frames → vision → tracker.
    #[serde(default)]
    pub vision: VisionConfig,
}

/// `[vision]`: the camera chain of the tables that have a `calibration`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VisionConfig {
    /// Frames wait this long (ms of frame time) before they are read, so that a clock press that
    /// arrives a little after the frames it follows is still handed to the tracker in time order.
    /// Moves committed at a press are not delayed by it; moves committed at stability are.
    pub hold_ms: u64,
    /// Motion, tracker, reader and calibration-watch settings (`[vision.watch.motion]`,
    /// `[vision.watch.tracker]`, `[vision.watch.reader]`, `[vision.watch.drift]`), as for
    /// `tandem watch --config`.
    pub watch: crate::watch::WatchConfig,
}

impl Default for VisionConfig {
    fn default() -> Self {
        Self {
            hold_ms: 1000,
            watch: crate::watch::WatchConfig::default(),
        }
    }
}

fn default_state_dir() -> PathBuf {
    PathBuf::from("state")
}

/// One table (`[[tables]]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableSpec {
    /// The MQTT/evidence table id (`[A-Za-z0-9_-]`, as in topics).
    pub id: String,
    /// A rule-set preset name or a path to a rule-set TOML file.
    #[serde(default = "default_rules")]
    pub rules: String,
    /// The calibration's region names of board A and board B in the camera image.
    #[serde(default = "default_regions")]
    pub boards: [String; 2],
    /// Start position as a table FEN (`<A> | <B>`); absent = the standard start.
    #[serde(default)]
    pub start: Option<String>,
    /// The table's calibration in the camera image (`tandem calibrate`). With a frame source, a
    /// table that has one is watched: its moves come from the camera (and the clock presses).
    #[serde(default)]
    pub calibration: Option<PathBuf>,
}

fn default_rules() -> String {
    "tandem-2024".to_string()
}

fn default_regions() -> [String; 2] {
    ["A".to_string(), "B".to_string()]
}

/// The frame source (`[source]`, selected by `kind`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum SourceConfig {
    /// No frames: inputs come only from MQTT (clocks, arbiter) and `[moves]`.
    #[default]
    None,
    /// A V4L2 camera through nokhwa.
    V4l2(V4l2Config),
    /// An image-sequence folder (`*.jpg`, `*.jpeg`, `*.png`, sorted by name).
    Folder(FolderConfig),
    /// The simulator rendering the first table's current position.
    Sim(SimSourceConfig),
    /// No frames; a BPGN game or referee script is replayed as the move source.
    Replay(ReplayConfig),
}

/// Pixel format asked of the camera.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CaptureFormat {
    /// Compressed by the camera: frames are stored as they come, no decoding.
    Mjpeg,
    /// Raw 4:2:2: decoded and JPEG-encoded for evidence.
    Yuyv,
}

/// `kind = "v4l2"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct V4l2Config {
    /// `/dev/video<device>`.
    pub device: u32,
    pub format: CaptureFormat,
    pub width: u32,
    pub height: u32,
    pub fps: u32,
    /// First delay before reopening a lost camera; doubled per failure up to the max.
    pub reconnect_min_ms: u64,
    pub reconnect_max_ms: u64,
    /// JPEG quality for decoded (YUYV) frames.
    pub jpeg_quality: u8,
}

impl Default for V4l2Config {
    fn default() -> Self {
        Self {
            device: 0,
            format: CaptureFormat::Mjpeg,
            width: 1280,
            height: 720,
            fps: 30,
            reconnect_min_ms: 500,
            reconnect_max_ms: 10_000,
            jpeg_quality: 85,
        }
    }
}

/// `kind = "folder"`: a recording. A frame's time comes from its name (`<digits>ms`, or a frame
/// number × 1000 / `fps`, as `tandem sim game` writes them), so a replay and its clock presses
/// share the recording's timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FolderConfig {
    pub dir: PathBuf,
    /// Pace frames by their times (true) or send them as fast as the daemon takes them.
    #[serde(default = "yes")]
    pub realtime: bool,
    /// Speed factor for `realtime` (2 = twice as fast).
    #[serde(default = "one")]
    pub speed: f64,
    /// Frame rate for names that carry a frame number rather than a time.
    #[serde(default = "ten")]
    pub fps: f64,
}

/// `kind = "sim"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SimSourceConfig {
    /// Frames per second rendered (rendering costs tens of ms per frame at small sizes).
    pub fps: f64,
    pub width: u32,
    pub height: u32,
    pub seed: u64,
    /// A fixed table FEN to render; absent = the first table's current position.
    pub fen: Option<String>,
}

impl Default for SimSourceConfig {
    fn default() -> Self {
        Self {
            fps: 2.0,
            width: 320,
            height: 180,
            seed: 0,
            fen: None,
        }
    }
}

/// `kind = "replay"` (or `[moves]`): a recorded game or a referee script as the move source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayConfig {
    /// A BPGN file; its moves (with clock comments) are replayed.
    #[serde(default)]
    pub bpgn: Option<PathBuf>,
    /// A referee script (`docs/referee.md`); its actions are replayed.
    #[serde(default)]
    pub script: Option<PathBuf>,
    /// 1-based game number in the BPGN file.
    #[serde(default = "one_usize")]
    pub game: usize,
    /// 1 = real time from the clock comments / `ts`; 0 = as fast as possible.
    #[serde(default = "one")]
    pub speed: f64,
    /// The table that receives the moves (default: the first); `"*"` = every table replays the
    /// game (load tests).
    #[serde(default)]
    pub table: Option<String>,
}

fn yes() -> bool {
    true
}
fn one() -> f64 {
    1.0
}
fn ten() -> f64 {
    10.0
}
fn one_usize() -> usize {
    1
}

impl DaemonConfig {
    /// Reads, parses, resolves paths and validates `path`.
    pub fn load(path: &Path) -> Result<Self, DaemonError> {
        let text = std::fs::read_to_string(path).map_err(|e| DaemonError::Config {
            file: path.display().to_string(),
            problem: format!("cannot read: {e}"),
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        Self::from_toml_str(&text, base).map_err(|problem| DaemonError::Config {
            file: path.display().to_string(),
            problem,
        })
    }

    /// Parses and validates TOML text; relative paths are taken relative to `base`. The error is
    /// one line.
    pub fn from_toml_str(text: &str, base: &Path) -> Result<Self, String> {
        let mut config: DaemonConfig = toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
            let msg = one_line(e.message());
            match line {
                Some(l) => format!("line {l}: {msg}"),
                None => msg,
            }
        })?;
        config.resolve(base);
        config.validate()?;
        Ok(config)
    }

    fn resolve(&mut self, base: &Path) {
        let fix = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        };
        fix(&mut self.state_dir);
        fix(&mut self.evidence.dir);
        fix(&mut self.mqtt.outbox.dir);
        let fix_replay = |r: &mut ReplayConfig| {
            for p in [&mut r.bpgn, &mut r.script].into_iter().flatten() {
                if p.is_relative() {
                    *p = base.join(&*p);
                }
            }
        };
        match &mut self.source {
            SourceConfig::Folder(f) => fix(&mut f.dir),
            SourceConfig::Replay(r) => fix_replay(r),
            _ => {}
        }
        if let Some(m) = &mut self.moves {
            fix_replay(m);
        }
        let reader = &mut self.vision.watch.reader;
        for model in [&mut reader.classifier.model, &mut reader.pockets.model]
            .into_iter()
            .flatten()
        {
            fix(model);
        }
        for t in &mut self.tables {
            if let Some(c) = &mut t.calibration {
                fix(c);
            }
            if t.rules.ends_with(".toml") {
                let mut p = PathBuf::from(&t.rules);
                fix(&mut p);
                t.rules = p.display().to_string();
            }
        }
    }

    /// Whether the frame source is a folder replayed once (it ends).
    pub fn replays_folder(&self) -> bool {
        matches!(self.source, SourceConfig::Folder(_))
    }

    /// The move source, from `[source] kind = "replay"` or `[moves]`.
    pub fn replay(&self) -> Option<&ReplayConfig> {
        match &self.source {
            SourceConfig::Replay(r) => Some(r),
            _ => self.moves.as_ref(),
        }
    }

    fn validate(&self) -> Result<(), String> {
        if self.tables.is_empty() {
            return Err("at least one [[tables]] entry is required".into());
        }
        let mut seen = Vec::new();
        for (i, t) in self.tables.iter().enumerate() {
            TableId::new(&t.id).map_err(|e| format!("tables[{i}].id {:?}: {e}", t.id))?;
            // The id also names directories (journal, evidence): keep it a plain file name.
            if t.id.starts_with('.')
                || !t
                    .id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
            {
                return Err(format!(
                    "tables[{i}].id {:?}: use only letters, digits, '_', '-' and '.' (not first)",
                    t.id
                ));
            }
            if seen.contains(&&t.id) {
                return Err(format!("tables[{i}].id {:?} is used twice", t.id));
            }
            seen.push(&t.id);
            RuleSet::load(&t.rules)
                .map_err(|e| format!("tables[{i}].rules: {}", one_line(&e.to_string())))?;
            if t.boards.iter().any(|b| b.trim().is_empty()) || t.boards[0] == t.boards[1] {
                return Err(format!(
                    "tables[{i}].boards must be two different, non-empty region names"
                ));
            }
            if let Some(fen) = &t.start {
                crate::engine::Table::from_fen(fen)
                    .map_err(|e| format!("tables[{i}].start: {}", one_line(&e.to_string())))?;
            }
        }
        match &self.source {
            SourceConfig::V4l2(v) => {
                if v.width == 0 || v.height == 0 || v.fps == 0 {
                    return Err("source: width, height and fps must be positive".into());
                }
                if v.reconnect_min_ms == 0 || v.reconnect_max_ms < v.reconnect_min_ms {
                    return Err("source: need 0 < reconnect_min_ms <= reconnect_max_ms".into());
                }
            }
            SourceConfig::Folder(f) => {
                if !f.dir.is_dir() {
                    return Err(format!("source.dir {} is not a directory", f.dir.display()));
                }
                if !(f.speed.is_finite() && f.speed > 0.0) {
                    return Err("source.speed must be a positive number".into());
                }
                if !(f.fps.is_finite() && f.fps > 0.0) {
                    return Err("source.fps must be a positive number".into());
                }
            }
            SourceConfig::Sim(s) => {
                if !(s.fps.is_finite() && s.fps > 0.0 && s.fps <= 60.0) {
                    return Err("source.fps must be in (0, 60]".into());
                }
                if s.width < 16 || s.height < 16 || s.width > 4096 || s.height > 4096 {
                    return Err("source: width and height must be within 16..=4096".into());
                }
                if let Some(fen) = &s.fen {
                    crate::engine::Table::from_fen(fen)
                        .map_err(|e| format!("source.fen: {}", one_line(&e.to_string())))?;
                }
            }
            SourceConfig::Replay(r) => self.validate_replay("source", r)?,
            SourceConfig::None => {}
        }
        if let Some(m) = &self.moves {
            if matches!(self.source, SourceConfig::Replay(_)) {
                return Err(
                    "[moves] cannot be combined with [source] kind = \"replay\" (one move source)"
                        .into(),
                );
            }
            self.validate_replay("moves", m)?;
        }
        if self.exit_when_done && self.replay().is_none() && !self.replays_folder() {
            return Err(
                "exit_when_done needs a source that ends ([source] kind = \"replay\" or \"folder\", or [moves])"
                    .into(),
            );
        }
        for (i, t) in self.tables.iter().enumerate() {
            if let Some(c) = &t.calibration {
                if !c.is_file() {
                    return Err(format!(
                        "tables[{i}].calibration {} does not exist (make one with `tandem calibrate`)",
                        c.display()
                    ));
                }
                if matches!(self.source, SourceConfig::None | SourceConfig::Replay(_)) {
                    return Err(format!(
                        "tables[{i}].calibration needs a frame source ([source] kind = \"v4l2\", \"folder\" or \"sim\")"
                    ));
                }
                if self.moves.as_ref().is_some_and(|m| {
                    m.table.as_deref() == Some("*")
                        || m.table.as_deref().unwrap_or(&self.tables[0].id) == t.id
                }) {
                    return Err(format!(
                        "tables[{i}] is watched by the camera and cannot also get [moves]"
                    ));
                }
            }
        }
        self.vision
            .watch
            .tracker
            .validate()
            .map_err(|e| format!("vision.watch.tracker: {e}"))?;
        self.vision
            .watch
            .drift
            .validate()
            .map_err(|e| format!("vision.watch.{e}"))?;
        self.vision
            .watch
            .reader
            .pockets
            .validate()
            .map_err(|e| format!("vision.watch.reader: {e}"))?;
        if self.mqtt.tls.is_some() && self.mqtt.needs_embedded_broker() {
            return Err(
                "mqtt.tls needs mqtt.host: the embedded broker only speaks plain TCP".into(),
            );
        }
        for t in &self.mqtt.tables {
            if !self.tables.iter().any(|s| &s.id == t) {
                return Err(format!(
                    "mqtt.tables names {t:?}, which is not in [[tables]]"
                ));
            }
        }
        Ok(())
    }

    fn validate_replay(&self, section: &str, r: &ReplayConfig) -> Result<(), String> {
        let file = match (&r.bpgn, &r.script) {
            (Some(f), None) | (None, Some(f)) => f,
            _ => return Err(format!("{section}: set exactly one of bpgn or script")),
        };
        if !file.is_file() {
            return Err(format!("{section}: {} does not exist", file.display()));
        }
        if r.game == 0 {
            return Err(format!("{section}.game counts from 1"));
        }
        if !(r.speed.is_finite() && r.speed >= 0.0) {
            return Err(format!(
                "{section}.speed must be 0 (as fast as possible) or positive"
            ));
        }
        if let Some(t) = &r.table
            && t != "*"
            && !self.tables.iter().any(|s| &s.id == t)
        {
            return Err(format!("{section}.table {t:?} is not in [[tables]]"));
        }
        Ok(())
    }
}

pub(crate) fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<DaemonConfig, String> {
        DaemonConfig::from_toml_str(text, Path::new("/nonexistent-base"))
    }

    #[test]
    fn minimal_config_takes_defaults() {
        let c = parse("[[tables]]\nid = \"t1\"\n").unwrap();
        assert_eq!(c.tables[0].rules, "tandem-2024");
        assert_eq!(c.source, SourceConfig::None);
        assert!(c.mqtt.needs_embedded_broker());
        assert_eq!(c.state_dir, Path::new("/nonexistent-base/state"));
        assert!(c.replay().is_none());
    }

    #[test]
    fn errors_are_one_line_and_name_the_problem() {
        let cases = [
            ("", "tables"),
            ("[[tables]]\nid = \"t 1\"\n", "tables[0].id"),
            (
                "[[tables]]\nid = \"t1\"\nrules = \"chess960\"\n",
                "tables[0].rules",
            ),
            (
                "[[tables]]\nid = \"t1\"\n[[tables]]\nid = \"t1\"\n",
                "used twice",
            ),
            (
                "[[tables]]\nid = \"t1\"\nboards = [\"x\", \"x\"]\n",
                "boards",
            ),
            (
                "[[tables]]\nid = \"t1\"\n[source]\nkind = \"webcam\"\n",
                "line ",
            ),
            (
                "[[tables]]\nid = \"t1\"\n[source]\nkind = \"sim\"\nfps = 0\n",
                "fps",
            ),
            (
                "[[tables]]\nid = \"t1\"\n[source]\nkind = \"replay\"\n",
                "exactly one",
            ),
            (
                "[[tables]]\nid = \"t1\"\n[source]\nkind = \"folder\"\ndir = \"nope\"\n",
                "not a directory",
            ),
            (
                "[[tables]]\nid = \"t1\"\nstart = \"8/8 | x\"\n",
                "tables[0].start",
            ),
            ("[[tables]]\nid = \"t1\"\n[mqtt]\nport = \"x\"\n", "line 4"),
            (
                "exit_when_done = true\n[[tables]]\nid = \"t1\"\n",
                "source that ends",
            ),
            (
                "[[tables]]\nid = \"t1\"\ncalibration = \"nope.toml\"\n",
                "tables[0].calibration",
            ),
            (
                "[[tables]]\nid = \"t1\"\n[vision.watch.tracker]\nstable_frames = 0\n",
                "vision.watch.tracker",
            ),
            ("[[tables]]\nid = \"t1\"\n[vision]\nhold = 3\n", "line "),
            (
                "[[tables]]\nid = \"t1\"\n[vision.watch.reader.pockets]\nmin_in_view = 2.0\n",
                "min_in_view",
            ),
        ];
        for (text, want) in cases {
            let err = parse(text).expect_err(text);
            assert!(err.contains(want), "{text:?}: {err}");
            assert!(!err.contains('\n'), "{err}");
        }
    }

    #[test]
    fn a_calibrated_table_needs_a_frame_source_and_resolves_its_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t1.toml"), "").unwrap();
        std::fs::create_dir(dir.path().join("frames")).unwrap();
        let table = "[[tables]]\nid = \"t1\"\ncalibration = \"t1.toml\"\n";
        let err = DaemonConfig::from_toml_str(table, dir.path()).unwrap_err();
        assert!(err.contains("needs a frame source"), "{err}");
        let text = format!(
            "exit_when_done = true\n{table}[source]\nkind = \"folder\"\ndir = \"frames\"\nfps = 5\n"
        );
        let c = DaemonConfig::from_toml_str(&text, dir.path()).unwrap();
        assert_eq!(
            c.tables[0].calibration.as_deref(),
            Some(dir.path().join("t1.toml").as_path())
        );
        assert!(c.replays_folder());
        assert_eq!(c.vision.hold_ms, 1000);
        let wide =
            format!("{text}[vision.watch.reader.classifier]\nmodel = \"m/squares-wide.onnx\"\n");
        let c = DaemonConfig::from_toml_str(&wide, dir.path()).unwrap();
        assert_eq!(
            c.vision.watch.reader.classifier.model.as_deref(),
            Some(dir.path().join("m/squares-wide.onnx").as_path())
        );
        let with_moves = format!("{text}[moves]\nbpgn = \"t1.toml\"\n");
        let err = DaemonConfig::from_toml_str(&with_moves, dir.path()).unwrap_err();
        assert!(err.contains("cannot also get [moves]"), "{err}");
    }

    #[test]
    fn replay_paths_resolve_against_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("g.bpgn"), "").unwrap();
        let c = DaemonConfig::from_toml_str(
            "[[tables]]\nid = \"t1\"\n[source]\nkind = \"replay\"\nbpgn = \"g.bpgn\"\nspeed = 0\n",
            dir.path(),
        )
        .unwrap();
        assert_eq!(
            c.replay().unwrap().bpgn.as_deref(),
            Some(dir.path().join("g.bpgn").as_path())
        );
    }
}
