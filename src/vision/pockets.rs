//! The pocket reader: the four pocket-zone patches in one ONNX call → how many pawns, knights,
//! bishops, rooks and queens stand in each zone.
//!
//! `models/pockets.onnx` gives, per zone and droppable role (`P N B R Q`), logits over the count
//! 0..=8; the reading is the argmax per role with its softmax probability as confidence. Zones are
//! A White, A Black, B White, B Black (the order of [`Crops::pockets`]); the pieces in a zone are
//! its owner's colour, so zone `2 * board + colour` fills `PocketReading::counts[colour]`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::classify::{VisionModelError, find_model, patches_to_nchw, shape_matches, softmax_into};
use super::model::{ModelOptions, OnnxModel, Output};
use super::rectify::Crops;
use crate::engine::BoardId;
use crate::tracker::PocketReading;

/// Pocket zones per frame.
pub const ZONES: usize = 4;
/// Droppable roles the model counts (`P N B R Q`).
pub const ROLES: usize = 5;
/// Count classes per role: 0..=8.
pub const COUNTS: usize = 9;

/// Pocket reader settings (TOML section `[pockets]`, every field has a default).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PocketConfig {
    /// The pocket model; `None` searches `models/pockets.onnx`.
    pub model: Option<PathBuf>,
    /// ONNX Runtime intra-op threads.
    pub threads: usize,
    /// Let idle ONNX Runtime workers spin.
    pub spinning: bool,
}

impl Default for PocketConfig {
    fn default() -> Self {
        PocketConfig {
            model: None,
            threads: 2,
            spinning: false,
        }
    }
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
    /// The tracker's reading of `board`'s two pockets (White's zone, then Black's).
    pub fn reading(&self, board: BoardId) -> PocketReading {
        let b = board.index() * 2;
        PocketReading {
            counts: [self.zones[b].counts, self.zones[b + 1].counts],
            looks: None,
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
}
