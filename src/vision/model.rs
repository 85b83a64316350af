//! A thin, typed wrapper around an ONNX Runtime session with one float input and one float output.
//!
//! Every vision model of the project has this shape (a batch of crops in, a batch of scores or
//! embeddings out), so callers deal in flat `f32` slices and shapes, never in `ort` types.

use std::path::{Path, PathBuf};

use ort::session::Session;
use ort::value::Tensor;

use crate::runtime::{RuntimeError, onnx_environment};

/// Why a model could not be loaded or run.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    #[error("model file {0} does not exist")]
    Missing(PathBuf),
    #[error("cannot load model {path}: {reason}")]
    Load { path: PathBuf, reason: String },
    #[error("model input has {got} values, but the shape {shape:?} needs {want}")]
    InputSize {
        shape: Vec<i64>,
        want: usize,
        got: usize,
    },
    #[error("inference failed: {0}")]
    Run(String),
}

/// An ONNX model with a single `f32` input and a single `f32` output.
pub struct OnnxModel {
    session: Session,
    path: PathBuf,
}

/// The output of one batched inference: a row-major tensor.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    pub shape: Vec<i64>,
    pub data: Vec<f32>,
}

impl OnnxModel {
    /// Loads `path` with `threads` intra-op threads (the daemon leaves cores to capture and tracking).
    pub fn load(path: &Path, threads: usize) -> Result<Self, ModelError> {
        if !path.is_file() {
            return Err(ModelError::Missing(path.to_path_buf()));
        }
        let env = onnx_environment()?;
        let load = |reason: String| ModelError::Load {
            path: path.to_path_buf(),
            reason,
        };
        let session = Session::builder(&env)
            .map_err(|e| load(e.to_string()))?
            .with_intra_threads(threads.max(1))
            .map_err(|e| load(e.to_string()))?
            .commit_from_file(path)
            .map_err(|e| load(e.to_string()))?;
        Ok(Self {
            session,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs one batch. `shape` is the full input shape, batch dimension first.
    pub fn run(&mut self, shape: &[i64], input: Vec<f32>) -> Result<Output, ModelError> {
        let want: usize = shape.iter().map(|&d| d.max(0) as usize).product();
        if want != input.len() {
            return Err(ModelError::InputSize {
                shape: shape.to_vec(),
                want,
                got: input.len(),
            });
        }
        let tensor = Tensor::from_array((shape.to_vec(), input))
            .map_err(|e| ModelError::Run(e.to_string()))?;
        let outputs = self
            .session
            .run(ort::inputs![tensor])
            .map_err(|e| ModelError::Run(e.to_string()))?;
        let (shape, data) = outputs[0]
            .try_extract_tensor::<f32>()
            .map_err(|e| ModelError::Run(e.to_string()))?;
        Ok(Output {
            shape: shape.to_vec(),
            data: data.to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/tiny-linear.onnx")
    }

    /// The weights of training/make_tiny_model.py, recomputed here.
    fn expected(x: &[f32]) -> Vec<f32> {
        let w = |i: usize, j: usize| ((i * 3 + j) as f32 - 5.0) / 8.0;
        let b = [0.5, -0.25, 0.0];
        x.chunks(4)
            .flat_map(|row| {
                (0..3).map(move |j| {
                    let z: f32 = (0..4).map(|i| row[i] * w(i, j)).sum::<f32>() + b[j];
                    z.max(0.0)
                })
            })
            .collect()
    }

    #[test]
    fn tiny_model_runs_through_ort_and_matches_by_hand() {
        let mut model = OnnxModel::load(&fixture(), 1).expect("load tiny model");
        let x: Vec<f32> = vec![1.0, 2.0, 3.0, 4.0, -1.0, 0.5, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0];
        let out = model.run(&[3, 4], x.clone()).expect("run");
        assert_eq!(out.shape, vec![3, 3]);
        let want = expected(&x);
        for (got, want) in out.data.iter().zip(&want) {
            assert!((got - want).abs() < 1e-5, "{got} != {want}");
        }
        // The all-zero row yields the bias [0.5, -0.25, 0.0], which the relu clips to [0.5, 0, 0].
        assert_eq!(&out.data[6..9], &[0.5, 0.0, 0.0]);
    }

    #[test]
    fn wrong_input_size_is_an_error_not_a_panic() {
        let mut model = OnnxModel::load(&fixture(), 1).expect("load tiny model");
        let err = model.run(&[2, 4], vec![0.0; 7]).unwrap_err();
        assert!(matches!(
            err,
            ModelError::InputSize {
                want: 8,
                got: 7,
                ..
            }
        ));
    }

    #[test]
    fn missing_model_is_a_clear_error() {
        let err = OnnxModel::load(Path::new("/nonexistent/model.onnx"), 1)
            .err()
            .expect("must fail");
        assert!(err.to_string().contains("does not exist"));
    }
}
