//! Locating the ONNX Runtime shared library at run time.
//!
//! `ort` is built with `load-dynamic`: nothing is linked or downloaded at build time. The library comes
//! from the `onnxruntime` wheel on PyPI (see `scripts/bootstrap.sh`), which puts it under
//! `.cache/onnxruntime/` in the checkout. The search order is: `TANDEM_ORT_DYLIB` (a file), then
//! `ORT_DYLIB_PATH` (ort's own variable), then `.cache/onnxruntime/` beside the working directory, the
//! executable's ancestors and the source checkout this binary was built from.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Why the ONNX Runtime could not be made ready.
#[derive(Debug, thiserror::Error, Clone)]
pub enum RuntimeError {
    /// No candidate library file exists.
    #[error(
        "ONNX Runtime library not found (looked in {searched}); run scripts/bootstrap.sh or set TANDEM_ORT_DYLIB to libonnxruntime.so"
    )]
    NotFound { searched: String },
    /// A file exists but could not be loaded or has the wrong version.
    #[error("cannot load ONNX Runtime from {path}: {reason}")]
    Load { path: PathBuf, reason: String },
}

const CACHE_DIR: &str = ".cache/onnxruntime";

/// Returns the library file to load, without loading it.
pub fn find_onnxruntime() -> Result<PathBuf, RuntimeError> {
    let mut searched = Vec::new();
    for var in ["TANDEM_ORT_DYLIB", "ORT_DYLIB_PATH"] {
        if let Some(value) = std::env::var_os(var) {
            let path = PathBuf::from(value);
            if path.is_file() {
                return Ok(path);
            }
            searched.push(format!("${var}={}", path.display()));
        }
    }
    for dir in candidate_dirs() {
        if let Some(lib) = library_in(&dir) {
            return Ok(lib);
        }
        searched.push(dir.display().to_string());
    }
    Err(RuntimeError::NotFound {
        searched: searched.join(", "),
    })
}

fn candidate_dirs() -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = Vec::new();
    if let Ok(cwd) = std::env::current_dir() {
        roots.push(cwd);
    }
    if let Ok(exe) = std::env::current_exe() {
        roots.extend(exe.ancestors().skip(1).map(Path::to_path_buf));
    }
    roots.push(PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    let mut dirs: Vec<PathBuf> = Vec::new();
    for root in roots {
        let dir = root.join(CACHE_DIR);
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}

/// The newest `libonnxruntime.so.*` in `dir` (the wheel ships one versioned file).
fn library_in(dir: &Path) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libonnxruntime.so"))
        })
        .collect();
    found.sort();
    found.pop()
}

/// Loads the ONNX Runtime once per process and returns its environment; later calls return the
/// first outcome (the library cannot be unloaded or swapped within a process).
pub fn onnx_environment() -> Result<ort::environment::Environment, RuntimeError> {
    static LOADED: OnceLock<Result<ort::environment::Environment, RuntimeError>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            let path = find_onnxruntime()?;
            let load_error = |reason: String| RuntimeError::Load {
                path: path.clone(),
                reason,
            };
            ort::init_from(&path)
                .map_err(|e| load_error(e.to_string()))?
                .with_name("tandem-monitor")
                .with_telemetry(false)
                .build()
                .map_err(|e| load_error(e.to_string()))
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_in_picks_only_onnxruntime_files() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(library_in(dir.path()), None);
        std::fs::write(dir.path().join("libother.so"), b"").unwrap();
        assert_eq!(library_in(dir.path()), None);
        std::fs::write(dir.path().join("libonnxruntime.so.1.31.1"), b"").unwrap();
        assert_eq!(
            library_in(dir.path()).unwrap().file_name().unwrap(),
            "libonnxruntime.so.1.31.1"
        );
    }
}
