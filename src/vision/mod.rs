//! Vision: from a camera frame to per-square and per-pocket observations.
//!
//! Today this holds the ONNX inference path ([`model`]); calibration, rectification, the square
//! classifier and the pocket reader build on it.

pub mod model;
