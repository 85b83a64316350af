//! Typed errors of the evidence module.

use std::path::PathBuf;

/// Everything that can go wrong while writing, reading, exporting or showing evidence.
///
/// Verification findings (tampering, truncation) are *not* errors: they are reported in a
/// [`super::VerifyReport`]; an error here means the operation itself could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum EvidenceError {
    /// A file system operation failed; `path` says on what.
    #[error("{path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// An event handed to the log lacks a required field or has the wrong type.
    #[error("invalid event: {0}")]
    InvalidEvent(String),
    /// A new game log would overwrite an existing one.
    #[error("{0} already holds an evidence log")]
    AlreadyExists(PathBuf),
    /// The directory is not a game directory (no `log.jsonl`).
    #[error("{0}: not an evidence game directory (no log.jsonl)")]
    NotAGame(PathBuf),
    /// A signing or verifying key could not be read.
    #[error("key {path}: {reason}")]
    Key { path: PathBuf, reason: String },
    /// A log record could not be read where the operation needs it intact.
    #[error("{path} line {line}: {reason}")]
    Malformed {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    /// The log was already closed with an `end` record.
    #[error("the game log is already finished")]
    Finished,
    /// An existing log cannot be continued because it does not verify (or keys differ).
    #[error("{dir}: cannot resume: {reason}")]
    NotResumable { dir: PathBuf, reason: String },
    /// Writing the zip archive failed.
    #[error("zip archive")]
    Zip(#[from] zip::result::ZipError),
    /// A frame could not be decoded or a contact sheet not encoded.
    #[error("image {path}")]
    Image {
        path: PathBuf,
        #[source]
        source: image::ImageError,
    },
    /// The configuration file is not valid TOML for [`super::EvidenceConfig`].
    #[error("evidence config")]
    Config(#[from] toml::de::Error),
    /// JSON encoding of a record failed (only possible with non-string map keys).
    #[error("json encoding")]
    Json(#[from] serde_json::Error),
}

/// Attaches the path to an `io::Error`.
pub(crate) trait IoContext<T> {
    fn at(self, path: impl Into<PathBuf>) -> Result<T, EvidenceError>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn at(self, path: impl Into<PathBuf>) -> Result<T, EvidenceError> {
        self.map_err(|source| EvidenceError::Io {
            path: path.into(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chain as `anyhow`'s `{:#}` prints it in the CLI: each message once.
    fn chain(e: &dyn std::error::Error) -> String {
        let mut out = e.to_string();
        let mut cur = e.source();
        while let Some(s) = cur {
            out.push_str(": ");
            out.push_str(&s.to_string());
            cur = s.source();
        }
        out
    }

    #[test]
    fn chained_messages_do_not_repeat_their_source() {
        let io = std::fs::read("/nonexistent/x")
            .at("/nonexistent/x")
            .unwrap_err();
        let text = chain(&io);
        assert!(text.starts_with("/nonexistent/x: "), "{text}");
        assert_eq!(text.matches("No such file").count(), 1, "{text}");
        let cfg =
            crate::evidence::EvidenceConfig::from_toml_str("before_secs = \"x\"").unwrap_err();
        let text = chain(&cfg);
        assert!(text.starts_with("evidence config: "), "{text}");
        assert_eq!(text.matches("before_secs").count(), 1, "{text}");
    }
}
