//! The pocket reader: the four pocket-zone patches in one ONNX call → how many pawns, knights,
//! bishops, rooks and queens stand in each zone.
//!
//! `models/pockets.onnx` gives, per zone and droppable role (`P N B R Q`), logits over the count
//! 0..=8; the reading is the argmax per role with its softmax probability as confidence. Zones are
//! A White, A Black, B White, B Black (the order of [`Crops::pockets`]); the pieces in a zone are
//! its owner's colour, so zone `2 * board + colour` fills `PocketReading::counts[colour]`.
//!
//! The alternative, [`PocketMethod::Pieces`], reads square-sized windows over each zone with the
//! square classifier (which adapts to the table's set) and counts the pieces they show
//! ([`count_pieces`]). The two fail in different zones, so the default, [`PocketMethod::Split`],
//! takes each board's nearer zone from the network and the farther one from the windows
//! (measured in `docs/classifier.md`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::calibration::Calibration;
use super::classify::{VisionModelError, find_model, patches_to_nchw, shape_matches, softmax_into};
use super::geometry::{Point, signed_area};
use super::model::{ModelOptions, OnnxModel, Output};
use super::rectify::{Crops, PocketWindow};
use crate::engine::BoardId;
use crate::tracker::{PocketReading, SquareClass};

/// Pocket zones per frame.
pub const ZONES: usize = 4;
/// Droppable roles the model counts (`P N B R Q`).
pub const ROLES: usize = 5;
/// Count classes per role: 0..=8.
pub const COUNTS: usize = 9;

/// How the pockets are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PocketMethod {
    /// Windows over each zone read by the square classifier, adapted to the table's set, and
    /// the pieces found in them counted ([`count_pieces`]).
    Pieces,
    /// The counting network `models/pockets.onnx` on one patch per zone ([`PocketReader`]); it
    /// does not adapt to the set.
    Counts,
    /// Both, each where it reads better: the counting network for each board's zone that is
    /// larger in the image (nearer the camera), the windows for the other ([`near_zones`]).
    Split,
}

/// Pocket reader settings (TOML section `[pockets]`, every field has a default).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PocketConfig {
    pub method: PocketMethod,
    /// `pieces`, `split`: most distance between neighbouring window centres, in squares.
    pub window_step: f64,
    /// `pieces`, `split`: how sure a window must be of a piece (any droppable role, either
    /// colour) for the piece to be counted. 0.7 since 2026-12-06 (0.9 before): the windows
    /// missed pieces about twice as often as they saw pieces that were not there, and every
    /// missed piece is a pocket alert waiting to happen (`docs/classifier.md`).
    pub piece_threshold: f32,
    /// `pieces`, `split`: windows closer than this (squares) to a counted piece see that same
    /// piece.
    pub separation: f64,
    /// `counts`, `split`: the pocket model; `None` searches `models/pockets.onnx`.
    pub model: Option<PathBuf>,
    /// `counts`, `split`: ONNX Runtime intra-op threads.
    pub threads: usize,
    /// `counts`, `split`: let idle ONNX Runtime workers spin.
    pub spinning: bool,
    /// A zone with less of its area inside the frame is out of view: the watcher tells the
    /// tracker so, and nothing missing from it is alerted on (0 = every zone in view).
    pub min_in_view: f64,
}

impl Default for PocketConfig {
    fn default() -> Self {
        PocketConfig {
            method: PocketMethod::Split,
            window_step: 0.5,
            piece_threshold: 0.7,
            separation: 0.75,
            model: None,
            threads: 2,
            spinning: false,
            min_in_view: 0.8,
        }
    }
}

impl PocketConfig {
    /// Checks the ranges.
    pub fn validate(&self) -> Result<(), VisionModelError> {
        if !(0.05..=4.0).contains(&self.window_step) {
            return Err(VisionModelError::Config(
                "pockets.window_step must be 0.05..=4 squares".into(),
            ));
        }
        if !(0.0..1.0).contains(&self.piece_threshold) {
            return Err(VisionModelError::Config(
                "pockets.piece_threshold must be in [0, 1)".into(),
            ));
        }
        if !(0.0..=4.0).contains(&self.separation) {
            return Err(VisionModelError::Config(
                "pockets.separation must be 0..=4 squares".into(),
            ));
        }
        if !(0.0..=1.0).contains(&self.min_in_view) {
            return Err(VisionModelError::Config(
                "pockets.min_in_view must be a fraction in [0, 1]".into(),
            ));
        }
        Ok(())
    }
}

/// Per zone (A White, A Black, B White, B Black), whether it is the larger of its board's two
/// zones in the image (both on a tie): the zone nearer the camera, where the counting network
/// reads well; the windows read the farther zones better (`docs/classifier.md`).
pub fn near_zones(cal: &Calibration) -> [bool; ZONES] {
    let area = |q: &[Point; 4]| signed_area(q).abs();
    std::array::from_fn(|z| {
        let zones = &cal.boards[z / 2].pockets;
        area(&zones[z % 2]) >= area(&zones[1 - z % 2])
    })
}

/// Counts the pieces in each zone from the square classifier's reading of its windows
/// (`probs[i]` for `windows[i]`). A window counts a piece when it is at least
/// `piece_threshold` sure of one; windows are taken from the surest down, and one closer than
/// `separation` to a piece already counted sees that piece again. The role is the window's
/// most probable one with both colours pooled (a zone holds its owner's pieces; kings are never
/// in hand). Confidence per role: the least sure decision among the zone's windows.
pub fn count_pieces(
    windows: &[PocketWindow],
    probs: &[[f32; SquareClass::COUNT]],
    config: &PocketConfig,
) -> PocketCounts {
    find_pieces(windows, probs, config, &mut Vec::new())
}

/// A piece [`find_pieces`] counted: the window that saw it (index into the windows) and that
/// window's probability of each role (both colours pooled, pawn to queen).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CountedPiece {
    pub window: usize,
    /// The window's zone (0..4: A White, A Black, B White, B Black).
    pub zone: usize,
    pub roles: [f32; ROLES],
}

/// [`count_pieces`], also listing the pieces counted (into `pieces`, cleared first).
pub fn find_pieces(
    windows: &[PocketWindow],
    probs: &[[f32; SquareClass::COUNT]],
    config: &PocketConfig,
    pieces: &mut Vec<CountedPiece>,
) -> PocketCounts {
    pieces.clear();
    let mut zones = [ZoneCount {
        counts: [0; ROLES],
        confidence: [1.0; ROLES],
    }; ZONES];
    // (window index, window, role probabilities, piece probability)
    let mut seen: Vec<(usize, &PocketWindow, [f32; ROLES], f32)> = windows
        .iter()
        .zip(probs)
        .enumerate()
        .filter(|(_, (w, _))| w.zone < ZONES)
        .map(|(i, (w, p))| {
            let roles: [f32; ROLES] = std::array::from_fn(|r| p[1 + r] + p[7 + r]);
            (i, w, roles, roles.iter().sum())
        })
        .collect();
    seen.sort_by(|a, b| b.3.total_cmp(&a.3));
    let mut counted: Vec<&PocketWindow> = Vec::new();
    for &(i, w, roles, piece) in &seen {
        let z = &mut zones[w.zone];
        let near = counted.iter().any(|q| {
            let (c, d) = (w.centre, q.centre);
            q.zone == w.zone && (c[0] - d[0]).hypot(c[1] - d[1]) < config.separation
        });
        if near {
            continue;
        }
        if piece >= config.piece_threshold {
            let best = (0..ROLES)
                .max_by(|&a, &b| roles[a].total_cmp(&roles[b]))
                .unwrap_or(0);
            z.counts[best] = z.counts[best].saturating_add(1);
            z.confidence[best] = z.confidence[best].min(roles[best]);
            counted.push(w);
            pieces.push(CountedPiece {
                window: i,
                zone: w.zone,
                roles,
            });
        } else {
            for (conf, p) in z.confidence.iter_mut().zip(roles) {
                *conf = conf.min(1.0 - p);
            }
        }
    }
    PocketCounts { zones }
}

/// What one zone holds: a count per role and the probability of that count.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ZoneCount {
    pub counts: [u8; ROLES],
    pub confidence: [f32; ROLES],
}

impl ZoneCount {
    /// The least certain role's probability: how sure the reader is of the whole zone.
    pub fn min_confidence(&self) -> f32 {
        self.confidence.iter().copied().fold(1.0, f32::min)
    }
}

/// The four zones of one frame: A White, A Black, B White, B Black.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct PocketCounts {
    pub zones: [ZoneCount; ZONES],
}

impl PocketCounts {
    /// Zone `z` from `near` where `use_near[z]`, else from `far`.
    pub fn merge(near: &PocketCounts, far: &PocketCounts, use_near: [bool; ZONES]) -> PocketCounts {
        PocketCounts {
            zones: std::array::from_fn(|z| {
                if use_near[z] {
                    near.zones[z]
                } else {
                    far.zones[z]
                }
            }),
        }
    }

    /// The tracker's reading of `board`'s two pockets (White's zone, then Black's).
    pub fn reading(&self, board: BoardId) -> PocketReading {
        let b = board.index() * 2;
        PocketReading {
            counts: [self.zones[b].counts, self.zones[b + 1].counts],
            confidence: Some([
                self.zones[b].min_confidence(),
                self.zones[b + 1].min_confidence(),
            ]),
            ..PocketReading::default()
        }
    }
}

/// The pocket reader over `models/pockets.onnx`.
pub struct PocketReader {
    model: OnnxModel,
    patch_w: u32,
    patch_h: u32,
    input: Vec<f32>,
    output: [Output; 1],
}

impl PocketReader {
    /// Loads the model named by `config.model` (or found by [`find_model`]) and checks its I/O.
    pub fn load(config: &PocketConfig) -> Result<PocketReader, VisionModelError> {
        let path = match &config.model {
            Some(p) => p.clone(),
            None => find_model("pockets.onnx")?,
        };
        Self::from_path(&path, config)
    }

    /// Loads `path` (I/O per the contract: `pockets` `[N, 3, H, W]` → `counts` `[N, 5, 9]`).
    pub fn from_path(path: &Path, config: &PocketConfig) -> Result<PocketReader, VisionModelError> {
        if config.threads == 0 || config.threads > 64 {
            return Err(VisionModelError::Config("threads must be 1..=64".into()));
        }
        let model = OnnxModel::load_with(
            path,
            &ModelOptions {
                threads: config.threads,
                spinning: config.spinning,
            },
        )?;
        let wrong = |reason: String| VisionModelError::WrongIo {
            path: path.to_path_buf(),
            reason,
        };
        let input = model.input_shape(0).unwrap_or_default();
        if model.input_names().len() != 1
            || input.len() != 4
            || input[1] != 3
            || input[2] <= 0
            || input[3] <= 0
        {
            return Err(wrong(format!(
                "one float input [N, 3, H, W] with fixed H, W expected; it is {:?} {input:?}",
                model.input_names()
            )));
        }
        let counts = model
            .output_shape("counts")
            .ok_or_else(|| wrong(format!("no `counts` output ({:?})", model.output_names())))?;
        if !shape_matches(&counts, &[-1, ROLES as i64, COUNTS as i64]) {
            return Err(wrong(format!(
                "`counts` must be [N, 5, 9]; it is {counts:?}"
            )));
        }
        Ok(PocketReader {
            model,
            patch_w: input[3] as u32,
            patch_h: input[2] as u32,
            input: Vec::new(),
            output: Default::default(),
        })
    }

    /// Patch width and height the model takes.
    pub fn patch_size(&self) -> (u32, u32) {
        (self.patch_w, self.patch_h)
    }

    /// Reads the four pocket patches of `crops` in one call.
    pub fn read(&mut self, crops: &Crops) -> Result<PocketCounts, VisionModelError> {
        if crops.pocket_w != self.patch_w || crops.pocket_h != self.patch_h {
            return Err(VisionModelError::CropSize {
                got_w: crops.pocket_w,
                got_h: crops.pocket_h,
                want_w: self.patch_w,
                want_h: self.patch_h,
            });
        }
        let mut zones = [ZoneCount::default(); ZONES];
        self.read_patches(&crops.pockets, &mut zones)?;
        Ok(PocketCounts { zones })
    }

    /// Reads `out.len()` model-sized RGB patches in one call.
    pub fn read_patches(
        &mut self,
        patches: &[u8],
        out: &mut [ZoneCount],
    ) -> Result<(), VisionModelError> {
        let n = out.len();
        let (w, h) = (self.patch_w as usize, self.patch_h as usize);
        let want_bytes = n * w * h * 3;
        if n == 0 || patches.len() != want_bytes {
            return Err(VisionModelError::CropCount {
                want: n,
                want_bytes,
                got_bytes: patches.len(),
            });
        }
        patches_to_nchw(patches, n, w, h, &mut self.input);
        self.model.run_named(
            &[n as i64, 3, h as i64, w as i64],
            &self.input,
            &["counts"],
            &mut self.output,
        )?;
        let counts = &self.output[0];
        if counts.shape != [n as i64, ROLES as i64, COUNTS as i64] {
            return Err(VisionModelError::OutputShape {
                name: "counts",
                shape: counts.shape.clone(),
                expected: format!("[{n}, 5, 9]"),
            });
        }
        let mut p = [0.0f32; COUNTS];
        for (zone, rows) in out.iter_mut().zip(counts.data.chunks_exact(ROLES * COUNTS)) {
            for (r, logits) in rows.chunks_exact(COUNTS).enumerate() {
                softmax_into(logits, &mut p);
                let best = (0..COUNTS)
                    .max_by(|&a, &b| p[a].total_cmp(&p[b]))
                    .unwrap_or(0);
                zone.counts[r] = best as u8;
                zone.confidence[r] = p[best];
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Color, Role};

    fn fixture() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vision/pockets-fixture.onnx")
    }

    fn crops(colours: [[u8; 3]; 4]) -> Crops {
        Crops {
            patch_w: 48,
            patch_h: 64,
            squares: Vec::new(),
            windows: 0,
            pocket_w: 96,
            pocket_h: 128,
            pockets: colours
                .iter()
                .flat_map(|c| std::iter::repeat_n(*c, 96 * 128).flatten())
                .collect(),
            pocket_wide: Vec::new(),
        }
    }

    #[test]
    fn counts_per_role_and_zone_order_end_to_end() {
        // Fixture: role r reads 8 when channel r % 3 has mean above ½, else 0.
        let mut reader = PocketReader::from_path(&fixture(), &PocketConfig::default()).unwrap();
        assert_eq!(reader.patch_size(), (96, 128));
        let counts = reader
            .read(&crops([
                [255, 0, 0],
                [0, 255, 0],
                [0, 0, 255],
                [255, 255, 255],
            ]))
            .unwrap();
        assert_eq!(counts.zones[0].counts, [8, 0, 0, 8, 0]);
        assert_eq!(counts.zones[1].counts, [0, 8, 0, 0, 8]);
        assert_eq!(counts.zones[2].counts, [0, 0, 8, 0, 0]);
        assert_eq!(counts.zones[3].counts, [8, 8, 8, 8, 8]);
        assert!(counts.zones[0].min_confidence() > 0.99);
        let a = counts.reading(BoardId::A);
        assert_eq!(a.count(Color::White, Role::Pawn), 8);
        assert_eq!(a.count(Color::Black, Role::Knight), 8);
        assert_eq!(a.count(Color::Black, Role::Pawn), 0);
        let b = counts.reading(BoardId::B);
        assert_eq!(b.count(Color::White, Role::Bishop), 8);
        assert_eq!(b.count(Color::White, Role::Pawn), 0);
        assert_eq!(b.count(Color::Black, Role::Queen), 8);
    }

    /// A probability vector: `p` on `class`, the rest on empty.
    fn sure(class: SquareClass, p: f32) -> [f32; SquareClass::COUNT] {
        let mut v = [0.0; SquareClass::COUNT];
        v[SquareClass::Empty.index()] = 1.0 - p;
        v[class.index()] += p;
        v
    }

    fn window(zone: usize, f: f64, r: f64) -> PocketWindow {
        PocketWindow {
            zone,
            centre: [f, r],
        }
    }

    #[test]
    fn overlapping_windows_count_one_piece_and_separate_ones_two() {
        let config = PocketConfig {
            method: PocketMethod::Pieces,
            ..PocketConfig::default()
        };
        let windows = [
            window(0, -1.3, 0.0),
            window(0, -1.3, 0.5), // half a square from the first: the same piece
            window(0, -2.6, 0.0), // another piece
            window(0, -2.6, 1.0), // empty
            window(3, -1.3, 7.0), // a black knight in B Black's zone
            window(1, -1.3, 7.0), // not sure enough of anything
        ];
        let probs = [
            sure(SquareClass::WhitePawn, 0.99),
            sure(SquareClass::WhiteBishop, 0.95),
            sure(SquareClass::BlackPawn, 0.97),
            sure(SquareClass::WhiteQueen, 0.05),
            sure(SquareClass::BlackKnight, 0.98),
            sure(SquareClass::BlackRook, 0.6),
        ];
        let mut pieces = Vec::new();
        let counts = find_pieces(&windows, &probs, &config, &mut pieces);
        assert_eq!(counts, count_pieces(&windows, &probs, &config));
        // The counted pieces, surest first: the windows that saw them and their zones.
        let seen: Vec<(usize, usize)> = pieces.iter().map(|p| (p.window, p.zone)).collect();
        assert_eq!(seen, [(0, 0), (4, 3), (2, 0)]);
        assert!(
            pieces[1].roles[1] > 0.9,
            "the black knight: {:?}",
            pieces[1]
        );
        // Colours pool: the black pawn read in White's zone counts as one of his pawns.
        assert_eq!(counts.zones[0].counts, [2, 0, 0, 0, 0]);
        assert_eq!(counts.zones[1].counts, [0; 5]);
        assert_eq!(counts.zones[2].counts, [0; 5]);
        assert_eq!(counts.zones[3].counts, [0, 1, 0, 0, 0]);
        assert!(
            counts.zones[1].confidence[3] < 0.5,
            "the unsure rook window"
        );
        // Without the separation both windows over the first pawn count.
        let apart = PocketConfig {
            separation: 0.4,
            ..config.clone()
        };
        assert_eq!(
            count_pieces(&windows, &probs, &apart).zones[0].counts,
            [2, 0, 1, 0, 0]
        );
        // A king is never in hand: a window sure of one counts nothing.
        let kings = count_pieces(
            &windows[..1],
            &[sure(SquareClass::WhiteKing, 0.99)],
            &config,
        );
        assert_eq!(kings.zones[0].counts, [0; 5]);
    }

    #[test]
    fn pocket_settings_out_of_range_are_refused() {
        for bad in [
            PocketConfig {
                piece_threshold: 1.0,
                ..PocketConfig::default()
            },
            PocketConfig {
                separation: -0.1,
                ..PocketConfig::default()
            },
            PocketConfig {
                window_step: 0.0,
                ..PocketConfig::default()
            },
        ] {
            assert!(matches!(bad.validate(), Err(VisionModelError::Config(_))));
        }
        assert!(PocketConfig::default().validate().is_ok());
        let toml: PocketConfig = toml::from_str("method = \"pieces\"").unwrap();
        assert_eq!(toml.method, PocketMethod::Pieces);
        let toml: PocketConfig = toml::from_str("method = \"split\"").unwrap();
        assert_eq!(toml.method, PocketMethod::Split);
        assert!(toml::from_str::<PocketConfig>("method = \"guess\"").is_err());
    }

    #[test]
    fn near_half_is_uncertain() {
        let mut reader = PocketReader::from_path(&fixture(), &PocketConfig::default()).unwrap();
        // 128/255 ≈ 0.502: logits 20·k·0.002 are nearly flat, so confidence is low.
        let counts = reader.read(&crops([[128, 128, 128]; 4])).unwrap();
        assert!(counts.zones[0].min_confidence() < 0.2);
    }

    #[test]
    fn wrong_sizes_and_models_are_errors() {
        let mut reader = PocketReader::from_path(&fixture(), &PocketConfig::default()).unwrap();
        let mut c = crops([[0, 0, 0]; 4]);
        c.pocket_w = 90;
        assert!(matches!(
            reader.read(&c),
            Err(VisionModelError::CropSize { got_w: 90, .. })
        ));
        let mut c = crops([[0, 0, 0]; 4]);
        c.pockets.truncate(100);
        assert!(matches!(
            reader.read(&c),
            Err(VisionModelError::CropCount { .. })
        ));
        let squares =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vision/squares-fixture.onnx");
        assert!(matches!(
            PocketReader::from_path(&squares, &PocketConfig::default()),
            Err(VisionModelError::WrongIo { .. })
        ));
    }

    #[test]
    fn the_network_reads_the_zones_nearer_the_camera_and_the_windows_the_others() {
        use crate::vision::calibration::CalibrationConfig;
        // Boards seen at an angle from below: the bottom edge is wider (nearer). Board A has
        // a1 at the bottom (White near), board B has a1 at the top (White far).
        let a = [[20.0, 180.0], [180.0, 180.0], [150.0, 40.0], [50.0, 40.0]];
        let b = [[350.0, 40.0], [250.0, 40.0], [220.0, 180.0], [380.0, 180.0]];
        let cal = Calibration::manual("t", (400, 200), [a, b], None, &CalibrationConfig::default())
            .unwrap();
        let near = near_zones(&cal);
        assert_eq!(near, [true, false, false, true]);
        let zone = |n: u8| ZoneCount {
            counts: [n; ROLES],
            confidence: [1.0; ROLES],
        };
        let network = PocketCounts {
            zones: [zone(1); ZONES],
        };
        let windows = PocketCounts {
            zones: [zone(2); ZONES],
        };
        let merged = PocketCounts::merge(&network, &windows, near);
        let read: Vec<u8> = merged.zones.iter().map(|z| z.counts[0]).collect();
        assert_eq!(read, [1, 2, 2, 1]);
    }
}
