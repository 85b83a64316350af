//! The ONNX reader: [`crate::vision::FrameReader`] behind the [`TableReader`] interface.

use image::RgbImage;

use crate::engine::{BoardId, Color, Position, Role, Square};
use crate::tracker::SquareClass;
use crate::vision::{Calibration, FrameReader, ReaderConfig};

use super::{TableReader, TableReading, WatchError};

/// Square classifier and pocket reader on the calibrated frame. Without `models/pockets.onnx`
/// it reads squares only (no pocket alerts can then be raised); [`OnnxReader::has_pockets`] says
/// which.
pub struct OnnxReader {
    inner: FrameReader,
    pockets: bool,
}

impl OnnxReader {
    /// Loads the models (`config`); falls back to squares only when the pocket model is absent.
    pub fn new(cal: &Calibration, config: &ReaderConfig) -> Result<OnnxReader, WatchError> {
        match FrameReader::new(cal, config) {
            Ok(inner) => Ok(OnnxReader {
                inner,
                pockets: !config.without_pockets,
            }),
            Err(first) if !config.without_pockets => {
                let squares_only = ReaderConfig {
                    without_pockets: true,
                    ..config.clone()
                };
                let inner = FrameReader::new(cal, &squares_only)
                    .map_err(|e| WatchError::Reader(e.to_string()))?;
                log::warn!("reading squares only: {first}");
                Ok(OnnxReader {
                    inner,
                    pockets: false,
                })
            }
            Err(e) => Err(WatchError::Reader(e.to_string())),
        }
    }

    /// Whether pockets are read.
    pub fn has_pockets(&self) -> bool {
        self.pockets
    }
}

fn labels(pos: &Position) -> [SquareClass; 64] {
    std::array::from_fn(|i| SquareClass::on(pos, Square::new(i as u8).expect("i < 64")))
}

impl TableReader for OnnxReader {
    fn name(&self) -> &str {
        if self.pockets {
            "onnx"
        } else {
            "onnx-squares-only"
        }
    }

    fn read(&mut self, frame: &RgbImage, _ts: u64) -> Result<TableReading, WatchError> {
        let r = self
            .inner
            .read(frame)
            .map_err(|e| WatchError::Reader(e.to_string()))?;
        let board = |b: BoardId| -> Result<Box<[[f32; SquareClass::COUNT]; 64]>, WatchError> {
            let v = r.board(b);
            let arr: [[f32; SquareClass::COUNT]; 64] = v.try_into().map_err(|_| {
                WatchError::Reader(format!(
                    "the classifier gave {} squares, 64 needed",
                    v.len()
                ))
            })?;
            Ok(Box::new(arr))
        };
        let looks = match (r.crops.looks(0), r.crops.looks(1)) {
            (Some(a), Some(b)) => Some([a.into(), b.into()]),
            _ => None,
        };
        Ok(TableReading {
            looks,
            squares: [board(BoardId::A)?, board(BoardId::B)?],
            pockets: r.pockets.map(|p| {
                [BoardId::A, BoardId::B].map(|b| {
                    let zone = |k: usize| r.crops.pocket_look(2 * b.index() + k);
                    let looks = zone(0).zip(zone(1)).map(|(w, k)| [w, k]);
                    crate::tracker::PocketReading {
                        looks,
                        ..p.reading(b)
                    }
                })
            }),
        })
    }

    fn adapt(
        &mut self,
        _frame: &RgbImage,
        board: BoardId,
        start: &Position,
    ) -> Result<bool, WatchError> {
        self.inner
            .adapt_last(board, &labels(start))
            .map_err(|e| WatchError::Reader(e.to_string()))?;
        // A board in its start position has empty pockets. (Remembering a zone again whenever a
        // committed position says it is empty was tried and read fewer occupied zones right;
        // `docs/classifier.md`.)
        let empty = [Color::White, Color::Black].map(|c| start.pocket(c).is_empty());
        self.inner.remember_empty_pockets(board, empty);
        Ok(false)
    }

    fn recalibrate(&mut self, cal: &Calibration) -> Result<(), WatchError> {
        self.inner
            .recalibrate(cal)
            .map_err(|e| WatchError::Reader(e.to_string()))
    }

    fn confirm(
        &mut self,
        _frame: &RgbImage,
        board: BoardId,
        position: &Position,
    ) -> Result<(), WatchError> {
        // The watcher confirms right after reading this very frame: the reader's last frame.
        self.inner
            .confirm_last(board, &labels(position))
            .map_err(|e| WatchError::Reader(e.to_string()))?;
        let held =
            [Color::White, Color::Black].map(|c| Role::POCKET.map(|r| position.pocket(c).count(r)));
        self.inner.confirm_pockets_last(board, held);
        Ok(())
    }
}
