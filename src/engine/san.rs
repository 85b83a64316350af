//! SAN placeholder.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid SAN")]
pub struct SanError;
