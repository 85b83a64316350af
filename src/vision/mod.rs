//! Vision: from a camera frame to per-square and per-pocket observations.
//!
//! [`calibration`] finds both boards, a1, board A and the pockets in one frame (see
//! `docs/vision-calibration.md`), [`rectify`] cuts per-square and pocket crops with sampling
//! maps precomputed once per calibration, [`overlay`] draws a calibration for a person to
//! check, [`frame`] decodes a frame file only when it is whole, [`occlusion`] says which
//! squares a nearer piece may hide, [`gate`] says which square patches changed since the
//! network saw them, and [`model`] wraps ONNX inference. [`classify`] turns the 128 square
//! patches into class probabilities (adapted to the table's piece set), [`pockets`] counts the
//! pocket zones, and [`reader`] composes all of it into one call per frame.

pub mod calibration;
pub mod classify;
pub mod detect;
pub mod evaluate;
pub mod frame;
pub mod gate;
pub mod geometry;
pub mod model;
pub mod motion;
pub mod occlusion;
pub mod overlay;
pub mod pockets;
pub mod reader;
pub mod rectify;
pub mod whiten;

pub use calibration::{
    BoardCalibration, Calibration, CalibrationConfig, CalibrationError, Drift, OrientationSource,
    PocketLayout, parse_corners,
};
pub use classify::{ClassifierConfig, Descriptor, SquareClassifier, VisionModelError, find_model};
pub use frame::{FrameError, decode_frame, load_frame};
pub use geometry::{Homography, Point};
pub use occlusion::OcclusionMap;
pub use pockets::{
    PocketConfig, PocketCounts, PocketMethod, PocketReader, ZoneCount, count_pieces,
};
pub use reader::{FrameReader, FrameReading, ReadError, ReaderConfig};
pub use rectify::{Rectifier, RectifyConfig};
