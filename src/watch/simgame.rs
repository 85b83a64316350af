//! A simulated game directory (`tandem sim game --out DIR`): frames, per-frame truth, the clock
//! feed and the game description, and [`TruthReader`], an oracle reader built from the truth.
//!
//! Only the fields the evaluation needs are read, so the simulator may add fields freely. The
//! true move list is the BPGN record named in `game.json` (resolved relative to the current
//! directory, then to DIR and its ancestors), cut to the moves the render covers, with an
//! injected drop-mate replacing the game's move.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use image::RgbImage;
use serde::Deserialize;

use crate::engine::bpgn;
use crate::engine::{BoardId, Color, Role, Table, Variant};
use crate::tracker::{PocketReading, SquareClass};

use super::frames::{ClockFeed, FrameFile, list_frames};
use super::{TableReader, TableReading, WatchError};

/// `game.json` (the fields used here).
#[derive(Debug, Clone, Deserialize)]
pub struct GameInfo {
    pub source: String,
    pub game_index: usize,
    pub fps: f64,
    pub width: u32,
    pub height: u32,
    pub moves: usize,
    #[serde(default)]
    pub pieces: String,
    #[serde(default)]
    pub incidents: Vec<IncidentInfo>,
}

/// One injected incident of `game.json`.
#[derive(Debug, Clone, Deserialize)]
pub struct IncidentInfo {
    pub kind: String,
    pub move_index: usize,
    pub board: String,
    pub san: String,
    pub ts_ms: [u64; 2],
}

/// One line of `truth.jsonl` (the fields used here).
#[derive(Debug, Clone, Deserialize)]
pub struct TruthLine {
    pub ts_ms: u64,
    pub table_fen: String,
    pub pockets: [[String; 2]; 2],
    pub occluded: [Vec<String>; 2],
    pub corners: [[[f64; 2]; 4]; 2],
    pub hands: [bool; 2],
    /// Per board: pieces of White's and Black's pocket the camera cannot see (newer recordings).
    #[serde(default)]
    pub pockets_hidden: Option<[[usize; 2]; 2]>,
}

/// The moves a simulated game rendered.
#[derive(Debug, Clone, PartialEq)]
pub struct TrueGame {
    /// Per board, the moves in UCI.
    pub moves: [Vec<String>; 2],
    /// Per move of the record (by its index), its board and the player who made it.
    pub movers: Vec<(BoardId, Color)>,
}

impl TrueGame {
    /// The pocket zone (board, colour) an injected pocket incident is about: the mover's own
    /// for `hidden-pocket` (he hides a piece of his pocket), the partner's pocket that should
    /// receive the captured piece for `missing-handover`; None for other kinds.
    pub fn incident_zone(&self, inc: &IncidentInfo) -> Option<(BoardId, Color)> {
        let &(board, mover) = self.movers.get(inc.move_index)?;
        match inc.kind.as_str() {
            "hidden-pocket" => Some((board, mover)),
            "missing-handover" => Some((board.other(), mover.other())),
            _ => None,
        }
    }
}

/// A simulated game directory, loaded.
#[derive(Debug, Clone)]
pub struct SimGameDir {
    pub dir: PathBuf,
    pub info: GameInfo,
    pub frames: Vec<FrameFile>,
    pub truth: Vec<TruthLine>,
    /// The clock feed text (`clock.jsonl`).
    pub clock_text: String,
}

fn read(path: &Path) -> Result<String, WatchError> {
    std::fs::read_to_string(path).map_err(|e| WatchError::file(path, e))
}

impl SimGameDir {
    /// Loads `game.json`, `truth.jsonl`, `clock.jsonl` and the frame list of `dir`.
    pub fn load(dir: &Path) -> Result<SimGameDir, WatchError> {
        let info_path = dir.join("game.json");
        let info: GameInfo = serde_json::from_str(&read(&info_path)?)
            .map_err(|e| WatchError::file(&info_path, e))?;
        let truth_path = dir.join("truth.jsonl");
        let truth = read(&truth_path)?
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(n, l)| {
                serde_json::from_str::<TruthLine>(l)
                    .map_err(|e| WatchError::file(&truth_path, format!("line {}: {e}", n + 1)))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let clock_path = dir.join("clock.jsonl");
        let clock_text = read(&clock_path)?;
        ClockFeed::parse(&clock_text).map_err(|e| WatchError::file(&clock_path, e))?;
        let frames = list_frames(&dir.join("frames"), info.fps)?;
        Ok(SimGameDir {
            dir: dir.to_path_buf(),
            info,
            frames,
            truth,
            clock_text,
        })
    }

    /// The clock feed.
    pub fn clock(&self) -> ClockFeed {
        ClockFeed::parse(&self.clock_text).unwrap_or_default()
    }

    /// Finds the BPGN record named in `game.json`.
    fn source_path(&self, games: Option<&Path>) -> Result<PathBuf, WatchError> {
        if let Some(p) = games {
            return Ok(p.to_path_buf());
        }
        let src = Path::new(&self.info.source);
        if src.is_absolute() || src.exists() {
            return Ok(src.to_path_buf());
        }
        let mut dir = Some(self.dir.as_path());
        while let Some(d) = dir {
            if d.join(src).exists() {
                return Ok(d.join(src));
            }
            dir = d.parent();
        }
        Err(WatchError::file(
            src,
            "the game record named in game.json was not found (pass --games FILE)",
        ))
    }

    /// The true moves, as rendered.
    pub fn true_moves(
        &self,
        games: Option<&Path>,
        variant: &Variant,
    ) -> Result<TrueGame, WatchError> {
        let path = self.source_path(games)?;
        let bytes = std::fs::read(&path).map_err(|e| WatchError::file(&path, e))?;
        let mut all = bpgn::parse_bpgn_lenient(&bytes);
        if self.info.game_index >= all.len() {
            return Err(WatchError::file(
                &path,
                format!("no game {} in the record", self.info.game_index),
            ));
        }
        let game = all
            .swap_remove(self.info.game_index)
            .map_err(|e| WatchError::file(&path, e))?;
        let mut table = match game.start_fen() {
            Some(f) => Table::from_fen(f).map_err(|e| WatchError::file(&path, e))?,
            None => Table::new(),
        };
        let drop_mate = self
            .info
            .incidents
            .iter()
            .find(|i| i.kind == "drop-mate")
            .map(|i| (i.move_index, i.san.clone()));
        let mut out = TrueGame {
            moves: [Vec::new(), Vec::new()],
            movers: Vec::new(),
        };
        for (i, mv) in game.moves.iter().enumerate().take(self.info.moves) {
            let san = match &drop_mate {
                Some((k, san)) if *k == i => san.clone(),
                _ => mv.san.clone(),
            };
            let m = table
                .parse_san(mv.board, &san, variant)
                .map_err(|e| WatchError::file(&path, format!("move {i} {san}: {e}")))?;
            out.movers.push((mv.board, table.board(mv.board).turn()));
            table
                .play(mv.board, m, variant)
                .map_err(|e| WatchError::file(&path, format!("move {i} {san}: {e}")))?;
            out.moves[mv.board.index()].push(m.to_uci().to_string());
            if drop_mate.as_ref().is_some_and(|(k, _)| *k == i) {
                break;
            }
        }
        Ok(out)
    }

    /// The truth line of the frame at `ts`.
    pub fn truth_at(&self, ts: u64) -> Option<&TruthLine> {
        let i = self.truth.partition_point(|t| t.ts_ms < ts);
        self.truth.get(i).filter(|t| t.ts_ms == ts)
    }
}

/// The 64 classes of one board's placement (`rnbqkbnr/...`, rank 8 first; a pocket `[...]`,
/// promotion marks `~` and further fields are ignored).
pub fn placement_classes(fen: &str) -> Result<[SquareClass; 64], String> {
    let placement = fen
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .split('[')
        .next()
        .unwrap_or_default();
    let mut out = [SquareClass::Empty; 64];
    let ranks: Vec<&str> = placement.split('/').collect();
    if ranks.len() != 8 {
        return Err(format!("placement {placement:?}: 8 ranks needed"));
    }
    for (k, rank) in ranks.iter().enumerate() {
        let r = 7 - k;
        let mut f = 0usize;
        for ch in rank.chars() {
            if ch == '~' {
                continue;
            }
            if let Some(d) = ch.to_digit(10) {
                f += d as usize;
                continue;
            }
            let class = SquareClass::ALL
                .iter()
                .copied()
                .find(|c| c.char() == ch && *c != SquareClass::Empty)
                .ok_or_else(|| format!("placement {placement:?}: bad piece {ch:?}"))?;
            if f >= 8 {
                return Err(format!("placement {placement:?}: rank too long"));
            }
            out[r * 8 + f] = class;
            f += 1;
        }
        if f != 8 {
            return Err(format!(
                "placement {placement:?}: rank {} has {f} files",
                r + 1
            ));
        }
    }
    Ok(out)
}

fn square_index(name: &str) -> Option<usize> {
    let b = name.as_bytes();
    if b.len() != 2 || !(b'a'..=b'h').contains(&b[0]) || !(b'1'..=b'8').contains(&b[1]) {
        return None;
    }
    Some((b[1] - b'1') as usize * 8 + (b[0] - b'a') as usize)
}

/// Pocket counts from FEN letters (`"PPn"`): White's letters count for White, etc.
pub fn pocket_counts(white: &str, black: &str) -> PocketReading {
    let mut r = PocketReading::default();
    for (c, text) in [(Color::White, white), (Color::Black, black)] {
        for ch in text.chars() {
            let role = match ch.to_ascii_lowercase() {
                'p' => Role::Pawn,
                'n' => Role::Knight,
                'b' => Role::Bishop,
                'r' => Role::Rook,
                'q' => Role::Queen,
                _ => continue,
            };
            let slot = &mut r.counts[c.index()][role.index()];
            *slot = slot.saturating_add(1);
        }
    }
    r
}

/// Per board: classes, squares hidden by a hand; both pockets.
type TruthFrame = ([[SquareClass; 64]; 2], [[bool; 64]; 2], [PocketReading; 2]);

/// An oracle reader: what the simulator says stands on each square (squares hidden while a hand
/// is over the board read as uninformative) and in each pocket. It measures motion detection and tracking without the
/// classifier; its figures are an upper bound, never a vision result.
pub struct TruthReader {
    lines: HashMap<u64, TruthFrame>,
    confidence: f32,
}

impl TruthReader {
    /// Builds the oracle from a loaded game directory; `confidence` is the probability put on
    /// the true class of a visible square (the rest is spread evenly).
    pub fn new(game: &SimGameDir, confidence: f32) -> Result<TruthReader, WatchError> {
        let mut lines = HashMap::new();
        for t in &game.truth {
            let (a, b) = t.table_fen.split_once('|').ok_or_else(|| {
                WatchError::Reader(format!("truth at {}: bad table FEN", t.ts_ms))
            })?;
            let classes = [
                placement_classes(a).map_err(WatchError::Reader)?,
                placement_classes(b).map_err(WatchError::Reader)?,
            ];
            // Only what a hand hides is unreadable: a square hidden behind a nearer piece still
            // shows the body of its own piece to a classifier.
            let mut hidden = [[false; 64]; 2];
            for (bi, squares) in t.occluded.iter().enumerate() {
                if !t.hands[bi] {
                    continue;
                }
                for s in squares {
                    if let Some(i) = square_index(s) {
                        hidden[bi][i] = true;
                    }
                }
            }
            let pockets = [0, 1].map(|bi| pocket_counts(&t.pockets[bi][0], &t.pockets[bi][1]));
            lines.insert(t.ts_ms, (classes, hidden, pockets));
        }
        Ok(TruthReader {
            lines,
            confidence: confidence.clamp(1.0 / SquareClass::COUNT as f32, 1.0),
        })
    }
}

impl TableReader for TruthReader {
    fn name(&self) -> &str {
        "truth"
    }

    fn read(&mut self, _frame: &RgbImage, ts: u64) -> Result<TableReading, WatchError> {
        let (classes, hidden, pockets) = self
            .lines
            .get(&ts)
            .ok_or_else(|| WatchError::Reader(format!("no truth line for ts {ts}")))?;
        let rest = (1.0 - self.confidence) / (SquareClass::COUNT - 1) as f32;
        let squares = [0, 1].map(|b| {
            let mut sq = Box::new([[rest; SquareClass::COUNT]; 64]);
            for i in 0..64 {
                if hidden[b][i] {
                    sq[i] = [1.0 / SquareClass::COUNT as f32; SquareClass::COUNT];
                } else {
                    sq[i][classes[b][i].index()] = self.confidence;
                }
            }
            sq
        });
        Ok(TableReading {
            squares,
            pockets: Some(*pockets),
            looks: None,
        })
    }
}

/// The board a `game.json` board letter names.
pub fn board_of(letter: &str) -> Option<BoardId> {
    match letter {
        "A" | "a" => Some(BoardId::A),
        "B" | "b" => Some(BoardId::B),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placements_and_pockets_parse() {
        let c = placement_classes("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR[Pn]").unwrap();
        assert_eq!(c[0], SquareClass::WhiteRook);
        assert_eq!(c[28], SquareClass::WhitePawn);
        assert_eq!(c[12], SquareClass::Empty);
        assert_eq!(c[60], SquareClass::BlackKing);
        assert!(placement_classes("8/8/8").is_err());
        assert!(placement_classes("9/8/8/8/8/8/8/8").is_err());
        assert!(placement_classes("x7/8/8/8/8/8/8/8").is_err());
        let p = pocket_counts("PPQ", "n");
        assert_eq!(p.count(Color::White, Role::Pawn), 2);
        assert_eq!(p.count(Color::White, Role::Queen), 1);
        assert_eq!(p.count(Color::Black, Role::Knight), 1);
        assert_eq!(square_index("e4"), Some(28));
        assert_eq!(square_index("i9"), None);
    }
}
