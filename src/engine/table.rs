//! placeholder
#[derive(Debug)]
pub struct Table;
#[derive(Debug, thiserror::Error)]
#[error("x")]
pub struct TableError;
#[derive(Debug, thiserror::Error)]
#[error("x")]
pub struct TableFenError;
