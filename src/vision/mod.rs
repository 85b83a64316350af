//! Vision: from a camera frame to per-square and per-pocket observations.
//!
//! [`calibration`] finds both boards, a1, board A and the pockets in one frame (see
//! `docs/vision-calibration.md`), [`rectify`] cuts per-square and pocket crops with sampling
//! maps precomputed once per calibration, [`overlay`] draws a calibration for a person to
//! check, and [`model`] wraps ONNX inference for the square classifier.

pub mod calibration;
pub mod detect;
pub mod geometry;
pub mod model;
pub mod motion;
pub mod overlay;
pub mod rectify;

pub use calibration::{
    BoardCalibration, Calibration, CalibrationConfig, CalibrationError, Drift, OrientationSource,
    PocketLayout, parse_corners,
};
pub use geometry::{Homography, Point};
pub use rectify::{Rectifier, RectifyConfig};
