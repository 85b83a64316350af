//! The frame reader: one camera frame → both boards' square probabilities and the four pocket
//! counts, with the patches kept for adaptation.
//!
//! It composes the stages calibration → [`Rectifier`] → [`SquareClassifier`] (128 squares in one
//! call) → [`PocketReader`] (4 zones in one call). Buffers live in the reader and are reused, so
//! a steady stream of frames allocates nothing in Rust beyond what ONNX Runtime does per run.
//! The `watch` stage turns a [`FrameReading`] into [`Observation`]s with its own motion value.

use image::RgbImage;
use serde::{Deserialize, Serialize};

use super::calibration::{Calibration, CalibrationError};
use super::classify::{
    ClassifierConfig, SQUARES_PER_FRAME, SquareClassifier, VisionModelError, start_labels,
};
use super::pockets::{
    PocketConfig, PocketCounts, PocketMethod, PocketReader, ZONES, count_pieces, near_zones,
};
use super::rectify::{Crops, Rectifier, RectifyConfig};
use crate::engine::BoardId;
use crate::tracker::{Observation, ObservationError, SquareClass};

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Calibration(#[from] CalibrationError),
    #[error(transparent)]
    Model(#[from] VisionModelError),
}

/// Settings of the whole reader (TOML sections `[rectify]`, `[classifier]`, `[pockets]`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReaderConfig {
    pub rectify: RectifyConfig,
    pub classifier: ClassifierConfig,
    pub pockets: PocketConfig,
    /// Read frames without a pocket model (pocket readings are then absent).
    pub without_pockets: bool,
}

/// What one frame showed.
#[derive(Debug, Clone)]
pub struct FrameReading {
    /// 128 probability vectors in [`SquareClass`] order: board A's squares by
    /// `rank * 8 + file`, then board B's.
    pub squares: Vec<[f32; SquareClass::COUNT]>,
    /// The four pocket zones, when the reader has a pocket model.
    pub pockets: Option<PocketCounts>,
    /// The patches this reading was made from (for adaptation and evidence).
    pub crops: Crops,
}

impl FrameReading {
    fn empty() -> FrameReading {
        FrameReading {
            squares: Vec::with_capacity(SQUARES_PER_FRAME),
            pockets: None,
            crops: Crops::empty(),
        }
    }

    /// The 64 probability vectors of `board`.
    pub fn board(&self, board: BoardId) -> &[[f32; SquareClass::COUNT]] {
        let start = board.index() * 64;
        self.squares.get(start..start + 64).unwrap_or(&[])
    }

    /// Most probable class and its probability for every square of `board`.
    pub fn labels(&self, board: BoardId) -> Vec<(SquareClass, f32)> {
        self.board(board)
            .iter()
            .map(|v| {
                let (i, p) = v
                    .iter()
                    .copied()
                    .enumerate()
                    .max_by(|a, b| a.1.total_cmp(&b.1))
                    .unwrap_or((0, 0.0));
                (SquareClass::from_index(i).unwrap_or(SquareClass::Empty), p)
            })
            .collect()
    }

    /// The tracker's observation of `board` at `ts` (ms) with the motion value the caller
    /// measured (0 calm … 1 a hand over the board).
    pub fn observation(
        &self,
        board: BoardId,
        ts: u64,
        motion: f32,
    ) -> Result<Observation, ObservationError> {
        Observation::new(
            board,
            ts,
            self.board(board),
            motion,
            self.pockets.map(|p| p.reading(board)),
        )
    }
}

/// Windows only where the split reader reads them: the zones farther from the camera. A zone
/// layout that cannot be tiled (a zone that does not map onto the table) leaves every zone to
/// the network, as `counts` would read it. Returns which zones the network reads.
fn split_windows(rectifier: &mut Rectifier, cal: &Calibration, step: f64) -> [bool; ZONES] {
    let near = near_zones(cal);
    match rectifier.add_pocket_windows(cal, step, near.map(|n| !n)) {
        Ok(_) => near,
        Err(_) => [true; ZONES],
    }
}

/// Calibration + rectifier + square classifier + pocket reader for one table and camera.
pub struct FrameReader {
    rectifier: Rectifier,
    rectify: RectifyConfig,
    classifier: SquareClassifier,
    pockets: PocketSource,
    reading: FrameReading,
}

/// Where a frame's pocket counts come from.
enum PocketSource {
    None,
    /// The square classifier's reading of the pocket windows.
    Pieces(PocketConfig),
    /// The counting network.
    Counts(PocketReader),
    /// The network for the zones marked in `near`, the windows for the others.
    Split {
        network: PocketReader,
        config: PocketConfig,
        near: [bool; ZONES],
    },
}

impl FrameReader {
    /// Builds the sampling maps for `cal` and loads the models named in `config`; refuses patch
    /// sizes the models do not take.
    pub fn new(cal: &Calibration, config: &ReaderConfig) -> Result<FrameReader, ReadError> {
        let c = &config.rectify;
        let classifier = SquareClassifier::load(&config.classifier)?;
        let size_error = |got: (u32, u32), want: (u32, u32)| VisionModelError::CropSize {
            got_w: got.0,
            got_h: got.1,
            want_w: want.0,
            want_h: want.1,
        };
        if (c.patch_w, c.patch_h) != classifier.patch_size() {
            return Err(size_error((c.patch_w, c.patch_h), classifier.patch_size()).into());
        }
        config.pockets.validate()?;
        let mut rectifier = Rectifier::new(cal, c)?;
        let pockets = match (config.without_pockets, config.pockets.method) {
            (true, _) => PocketSource::None,
            (false, PocketMethod::Pieces) => {
                rectifier.add_pocket_windows(cal, config.pockets.window_step, [true; ZONES])?;
                PocketSource::Pieces(config.pockets.clone())
            }
            (false, PocketMethod::Counts | PocketMethod::Split) => {
                let p = PocketReader::load(&config.pockets)?;
                if (c.pocket_w, c.pocket_h) != p.patch_size() {
                    return Err(size_error((c.pocket_w, c.pocket_h), p.patch_size()).into());
                }
                if config.pockets.method == PocketMethod::Split {
                    let near = split_windows(&mut rectifier, cal, config.pockets.window_step);
                    PocketSource::Split {
                        network: p,
                        config: config.pockets.clone(),
                        near,
                    }
                } else {
                    PocketSource::Counts(p)
                }
            }
        };
        Ok(FrameReader {
            rectifier,
            rectify: c.clone(),
            classifier,
            pockets,
            reading: FrameReading::empty(),
        })
    }

    /// Cuts the patches where `cal` (a new calibration of the same table: the camera or a board
    /// moved) puts them, keeping the models and what the classifier learnt of this table. On an
    /// error the reader cuts as before.
    pub fn recalibrate(&mut self, cal: &Calibration) -> Result<(), ReadError> {
        let mut rectifier = Rectifier::new(cal, &self.rectify)?;
        match &mut self.pockets {
            PocketSource::None | PocketSource::Counts(_) => {}
            PocketSource::Pieces(config) => {
                rectifier.add_pocket_windows(cal, config.window_step, [true; ZONES])?;
            }
            PocketSource::Split { config, near, .. } => {
                *near = split_windows(&mut rectifier, cal, config.window_step);
            }
        }
        self.rectifier = rectifier;
        self.reading = FrameReading::empty();
        Ok(())
    }

    /// Assembles a reader from loaded parts (patch sizes that the models do not take show up as
    /// errors of [`FrameReader::read`]).
    pub fn from_parts(
        rectifier: Rectifier,
        classifier: SquareClassifier,
        pockets: Option<PocketReader>,
    ) -> FrameReader {
        FrameReader {
            rectify: rectifier.config().clone(),
            rectifier,
            classifier,
            pockets: pockets.map_or(PocketSource::None, PocketSource::Counts),
            reading: FrameReading::empty(),
        }
    }

    /// Reads one frame (of the calibrated size): rectify, classify 128 squares, count pockets.
    pub fn read(&mut self, frame: &RgbImage) -> Result<&FrameReading, ReadError> {
        let r = &mut self.reading;
        self.rectifier.rectify_into(frame, &mut r.crops)?;
        self.classifier.classify(&r.crops, &mut r.squares)?;
        r.pockets = match &mut self.pockets {
            PocketSource::Counts(p) => Some(p.read(&r.crops)?),
            PocketSource::Pieces(config) => Some(count_pieces(
                self.rectifier.pocket_windows(),
                r.squares.get(SQUARES_PER_FRAME..).unwrap_or(&[]),
                config,
            )),
            PocketSource::Split {
                network,
                config,
                near,
            } => {
                let windows = count_pieces(
                    self.rectifier.pocket_windows(),
                    r.squares.get(SQUARES_PER_FRAME..).unwrap_or(&[]),
                    config,
                );
                Some(PocketCounts::merge(
                    &network.read(&r.crops)?,
                    &windows,
                    *near,
                ))
            }
            PocketSource::None => None,
        };
        r.squares.truncate(SQUARES_PER_FRAME);
        Ok(&self.reading)
    }

    /// The last reading (empty before the first [`FrameReader::read`]).
    pub fn reading(&self) -> &FrameReading {
        &self.reading
    }

    /// Adapts to the table from the last frame read, which must show both boards in the start
    /// position (uses that frame's descriptors; no second network run).
    pub fn adapt_start_from_last(&mut self) -> Result<(), ReadError> {
        let labels = start_labels();
        self.confirm_last(BoardId::A, &labels)?;
        self.confirm_last(BoardId::B, &labels)?;
        self.classifier.refit_whitening();
        self.remember_empty_pockets(BoardId::A, [true; 2]);
        self.remember_empty_pockets(BoardId::B, [true; 2]);
        self.classifier.refit_if_configured();
        Ok(())
    }

    /// Adapts to the table from `board` as the last frame read showed it in a known position
    /// (the start): banks its 64 squares like [`FrameReader::confirm_last`] and refits the
    /// table's whitening on everything banked so far.
    pub fn adapt_last(
        &mut self,
        board: BoardId,
        labels: &[SquareClass; 64],
    ) -> Result<(), ReadError> {
        self.confirm_last(board, labels)?;
        self.classifier.refit_whitening();
        Ok(())
    }

    /// Adapts from a position of `board` the tracker confirmed in the last frame read: `labels`
    /// are its 64 true classes (a1 = 0). Uses that frame's descriptors.
    pub fn confirm_last(
        &mut self,
        board: BoardId,
        labels: &[SquareClass; 64],
    ) -> Result<(), ReadError> {
        if self.reading.squares.len() != SQUARES_PER_FRAME {
            return Err(VisionModelError::LabelCount {
                want: SQUARES_PER_FRAME,
                got: self.reading.squares.len(),
            }
            .into());
        }
        let base = board.index() * 64;
        let picks: Vec<(usize, Option<u16>, SquareClass)> = labels
            .iter()
            .enumerate()
            .map(|(i, &l)| (base + i, Some((base + i) as u16), l))
            .collect();
        self.classifier.confirm_last(&picks)?;
        Ok(())
    }

    /// Tells the pocket reader that the pockets of `board` marked in `empty` (White's, Black's)
    /// were empty in the last frame read (as at the start of a game): each of their windows
    /// keeps its empty look.
    pub fn remember_empty_pockets(&mut self, board: BoardId, empty: [bool; 2]) {
        if matches!(self.pockets, PocketSource::None | PocketSource::Counts(_)) {
            return;
        }
        let windows: Vec<usize> = (self.rectifier.pocket_windows().iter().enumerate())
            .filter(|(_, w)| w.zone / 2 == board.index() && empty[w.zone % 2])
            .map(|(i, _)| i)
            .collect();
        self.classifier.remember_empty_windows(&windows);
    }

    pub fn classifier(&self) -> &SquareClassifier {
        &self.classifier
    }

    pub fn classifier_mut(&mut self) -> &mut SquareClassifier {
        &mut self.classifier
    }

    pub fn rectifier(&self) -> &Rectifier {
        &self.rectifier
    }
}
