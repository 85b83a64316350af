//! A thin, typed wrapper around an ONNX Runtime session with one float input and one or more
//! float outputs.
//!
//! Every vision model of the project has this shape (a batch of crops in, a batch of scores or
//! embeddings out), so callers deal in flat `f32` slices and shapes, never in `ort` types.
//! Sessions are built for a machine whose cores are shared with capture and tracking: a fixed
//! number of intra-op threads, one inter-op thread, full graph optimisation, and no busy-waiting
//! worker threads unless asked for (see [`ModelOptions`]).

use std::path::{Path, PathBuf};

use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;
use ort::value::{Tensor, TensorRef};

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
    #[error("model {path} has no output named `{name}` (it has: {have})")]
    NoSuchOutput {
        path: PathBuf,
        name: String,
        have: String,
    },
}

/// Session options of a model. Invariant: `threads >= 1` (0 is read as 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelOptions {
    /// Intra-op threads (the parallelism inside one operator).
    pub threads: usize,
    /// Let idle intra-op workers spin (lower latency, but they burn the cores other stages need).
    pub spinning: bool,
}

impl Default for ModelOptions {
    fn default() -> Self {
        ModelOptions {
            threads: 2,
            spinning: false,
        }
    }
}

/// An ONNX model with a single `f32` input and a single `f32` output.
pub struct OnnxModel {
    session: Session,
    path: PathBuf,
}

/// The output of one batched inference: a row-major tensor.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Output {
    pub shape: Vec<i64>,
    pub data: Vec<f32>,
}

impl OnnxModel {
    /// Loads `path` with `threads` intra-op threads (the daemon leaves cores to capture and tracking).
    pub fn load(path: &Path, threads: usize) -> Result<Self, ModelError> {
        Self::load_with(
            path,
            &ModelOptions {
                threads,
                ..ModelOptions::default()
            },
        )
    }

    /// Loads `path` with explicit session options.
    pub fn load_with(path: &Path, options: &ModelOptions) -> Result<Self, ModelError> {
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
            .with_optimization_level(GraphOptimizationLevel::All)
            .map_err(|e| load(e.to_string()))?
            .with_intra_threads(options.threads.max(1))
            .map_err(|e| load(e.to_string()))?
            .with_inter_threads(1)
            .map_err(|e| load(e.to_string()))?
            .with_intra_op_spinning(options.spinning)
            .map_err(|e| load(e.to_string()))?
            .with_inter_op_spinning(false)
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

    /// Names of the model's inputs, in order.
    pub fn input_names(&self) -> Vec<String> {
        self.session
            .inputs()
            .iter()
            .map(|o| o.name().to_string())
            .collect()
    }

    /// Names of the model's outputs, in order.
    pub fn output_names(&self) -> Vec<String> {
        self.session
            .outputs()
            .iter()
            .map(|o| o.name().to_string())
            .collect()
    }

    /// Declared shape of input `index` (`-1` for a dynamic dimension), if it is a tensor.
    pub fn input_shape(&self, index: usize) -> Option<Vec<i64>> {
        let outlet = self.session.inputs().get(index)?;
        outlet.dtype().tensor_shape().map(|s| s.to_vec())
    }

    /// Declared shape of the output called `name` (`-1` for a dynamic dimension), if any.
    pub fn output_shape(&self, name: &str) -> Option<Vec<i64>> {
        let outlet = self.session.outputs().iter().find(|o| o.name() == name)?;
        outlet.dtype().tensor_shape().map(|s| s.to_vec())
    }

    /// Runs one batch on a borrowed input (no copy of it) and writes the outputs called `names`
    /// into `outs` (same order), reusing their buffers. `shape` is the full input shape.
    pub fn run_named(
        &mut self,
        shape: &[i64],
        input: &[f32],
        names: &[&str],
        outs: &mut [Output],
    ) -> Result<(), ModelError> {
        let want: usize = shape.iter().map(|&d| d.max(0) as usize).product();
        if want != input.len() {
            return Err(ModelError::InputSize {
                shape: shape.to_vec(),
                want,
                got: input.len(),
            });
        }
        let tensor = TensorRef::from_array_view((shape, input))
            .map_err(|e| ModelError::Run(e.to_string()))?;
        let outputs = self
            .session
            .run(ort::inputs![tensor])
            .map_err(|e| ModelError::Run(e.to_string()))?;
        let mut missing = None;
        for (name, out) in names.iter().zip(outs.iter_mut()) {
            let Some(value) = outputs.get(*name) else {
                missing = Some(name.to_string());
                break;
            };
            let (s, data) = value
                .try_extract_tensor::<f32>()
                .map_err(|e| ModelError::Run(e.to_string()))?;
            out.shape.clear();
            out.shape.extend_from_slice(s);
            out.data.clear();
            out.data.extend_from_slice(data);
        }
        drop(outputs);
        match missing {
            Some(name) => Err(ModelError::NoSuchOutput {
                path: self.path.clone(),
                name,
                have: self.output_names().join(", "),
            }),
            None => Ok(()),
        }
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
