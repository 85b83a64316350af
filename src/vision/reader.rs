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
    CountedPiece, PocketConfig, PocketCounts, PocketMethod, PocketReader, ZONES, find_pieces,
    near_zones,
};
use super::rectify::{Crops, Rectifier, RectifyConfig};
use crate::engine::{BoardId, Color, Piece, Role};
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

/// Pieces per zone up to which [`FrameReader::confirm_pockets_last`] keeps windows (the
/// assignment tries every order).
const MAX_KEPT_PER_ZONE: usize = 4;

/// The windows of `zone` to keep as pieces, with their roles: when `pieces` (those the windows
/// counted) in the zone are as many as `held` (per role, pawn to queen) says, at most
/// [`MAX_KEPT_PER_ZONE`], each with the role of the likeliest assignment.
fn windows_to_keep(pieces: &[CountedPiece], zone: usize, held: &[u8; 5]) -> Vec<(usize, Role)> {
    let here: Vec<CountedPiece> = pieces.iter().filter(|p| p.zone == zone).copied().collect();
    let want: Vec<usize> = (0..held.len())
        .flat_map(|r| std::iter::repeat_n(r, usize::from(held[r])))
        .collect();
    if want.is_empty() || want.len() != here.len() || want.len() > MAX_KEPT_PER_ZONE {
        return Vec::new();
    }
    (here.iter().zip(likeliest_roles(&here, &want)))
        .map(|(p, r)| (p.window, Role::POCKET[r]))
        .collect()
}

/// The roles `want` (one per piece of `pieces`, any order) assigned to `pieces` in the order
/// that makes the windows' role probabilities likeliest.
fn likeliest_roles(pieces: &[CountedPiece], want: &[usize]) -> Vec<usize> {
    let score = |order: &[usize]| -> f32 {
        (pieces.iter().zip(order))
            .map(|(p, &r)| p.roles.get(r).copied().unwrap_or(0.0).max(1e-6).ln())
            .sum()
    };
    let mut best = want.to_vec();
    let mut best_score = score(&best);
    let mut order = want.to_vec();
    // Heap's algorithm over at most `MAX_KEPT_PER_ZONE` roles.
    let n = order.len();
    let mut c = vec![0; n];
    let mut i = 0;
    while i < n {
        if c[i] < i {
            let j = if i % 2 == 0 { 0 } else { c[i] };
            order.swap(j, i);
            let s = score(&order);
            if s > best_score {
                best_score = s;
                best.copy_from_slice(&order);
            }
            c[i] += 1;
            i = 0;
        } else {
            c[i] = 0;
            i += 1;
        }
    }
    best
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
    /// The pieces the windows counted in the last frame read.
    window_pieces: Vec<CountedPiece>,
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
            window_pieces: Vec::new(),
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
        self.window_pieces.clear();
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
            window_pieces: Vec::new(),
        }
    }

    /// Reads one frame (of the calibrated size): rectify, classify 128 squares, count pockets.
    pub fn read(&mut self, frame: &RgbImage) -> Result<&FrameReading, ReadError> {
        let r = &mut self.reading;
        self.rectifier.rectify_into(frame, &mut r.crops)?;
        self.classifier.classify(&r.crops, &mut r.squares)?;
        r.pockets = match &mut self.pockets {
            PocketSource::Counts(p) => Some(p.read(&r.crops)?),
            PocketSource::Pieces(config) => Some(find_pieces(
                self.rectifier.pocket_windows(),
                r.squares.get(SQUARES_PER_FRAME..).unwrap_or(&[]),
                config,
                &mut self.window_pieces,
            )),
            PocketSource::Split {
                network,
                config,
                near,
            } => {
                let windows = find_pieces(
                    self.rectifier.pocket_windows(),
                    r.squares.get(SQUARES_PER_FRAME..).unwrap_or(&[]),
                    config,
                    &mut self.window_pieces,
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

    /// Tells the pocket reader what `board`'s zones held in the last frame read, as a position
    /// the tracker confirmed gives it (`held[colour][role]`, pawn to queen): in a zone read by
    /// the windows where that frame counted as many pieces as the position holds (one to
    /// four), each counted piece's window is kept as the role the position
    /// gives it (the likeliest assignment by the windows' own role probabilities). They are
    /// this table's pieces as they lie in its zones, which the bank's pieces on squares name
    /// worse than they count.
    pub fn confirm_pockets_last(&mut self, board: BoardId, held: [[u8; 5]; 2]) {
        for color in Color::ALL {
            let zone = 2 * board.index() + color.index();
            for (window, role) in windows_to_keep(&self.window_pieces, zone, &held[color.index()]) {
                let class = SquareClass::of(Some(Piece { color, role }));
                self.classifier.remember_window_piece(window, class);
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(window: usize, roles: [f32; 5]) -> CountedPiece {
        CountedPiece {
            window,
            zone: 1,
            roles,
        }
    }

    #[test]
    fn a_zones_pieces_take_the_roles_their_windows_make_likeliest() {
        // The position holds a pawn and a knight; the first window is surer of a knight.
        let pieces = [
            piece(3, [0.3, 0.6, 0.1, 0.0, 0.0]),
            piece(7, [0.5, 0.4, 0.1, 0.0, 0.0]),
        ];
        assert_eq!(likeliest_roles(&pieces, &[0, 1]), [1, 0]);
        assert_eq!(likeliest_roles(&pieces, &[1, 0]), [1, 0]);
        // The sum decides, not each window alone: both read a pawn best, one pawn is held.
        let pawns = [
            piece(0, [0.9, 0.1, 0.0, 0.0, 0.0]),
            piece(1, [0.6, 0.0, 0.4, 0.0, 0.0]),
        ];
        assert_eq!(likeliest_roles(&pawns, &[0, 2]), [0, 2]);
        assert_eq!(likeliest_roles(&pawns, &[2, 0]), [0, 2]);
        // Four pieces, every order tried.
        let four = [
            piece(0, [0.0, 0.0, 0.0, 0.0, 1.0]),
            piece(1, [0.0, 0.0, 0.0, 1.0, 0.0]),
            piece(2, [0.0, 0.0, 1.0, 0.0, 0.0]),
            piece(3, [0.0, 1.0, 0.0, 0.0, 0.0]),
        ];
        assert_eq!(likeliest_roles(&four, &[1, 2, 3, 4]), [4, 3, 2, 1]);
    }

    #[test]
    fn windows_are_kept_only_where_they_counted_what_the_position_holds() {
        let mut pieces = vec![
            piece(3, [0.3, 0.6, 0.1, 0.0, 0.0]),
            piece(7, [0.5, 0.4, 0.1, 0.0, 0.0]),
        ];
        pieces.push(CountedPiece {
            zone: 2,
            ..piece(20, [0.9, 0.0, 0.0, 0.0, 0.1])
        });
        let pawn_and_knight = [1, 1, 0, 0, 0];
        assert_eq!(
            windows_to_keep(&pieces, 1, &pawn_and_knight),
            [(3, Role::Knight), (7, Role::Pawn)]
        );
        // Zone 2 counted one piece: a queen held there keeps it as a queen, whatever it read.
        assert_eq!(
            windows_to_keep(&pieces, 2, &[0, 0, 0, 0, 1]),
            [(20, Role::Queen)]
        );
        // Counted and held differ, or nothing is held: nothing is kept.
        assert!(windows_to_keep(&pieces, 1, &[1, 0, 0, 0, 0]).is_empty());
        assert!(windows_to_keep(&pieces, 1, &[2, 1, 0, 0, 0]).is_empty());
        assert!(windows_to_keep(&pieces, 0, &[0; 5]).is_empty());
        assert!(windows_to_keep(&pieces, 3, &[1, 0, 0, 0, 0]).is_empty());
        // More pieces than are ever assigned: nothing is kept.
        let five: Vec<CountedPiece> = (0..5)
            .map(|w| piece(w, [1.0, 0.0, 0.0, 0.0, 0.0]))
            .collect();
        assert!(windows_to_keep(&five, 1, &[5, 0, 0, 0, 0]).is_empty());
        assert_eq!(windows_to_keep(&five[..4], 1, &[4, 0, 0, 0, 0]).len(), 4);
    }
}
