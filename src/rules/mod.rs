//! Rule sets and the referee: what the clubs' texts say, applied to what happens at a table.
//!
//! [`RuleSet`] is configuration (presets plus TOML overrides); [`Referee`] turns [`Action`]s into
//! [`Event`]s over the engine's two-board [`crate::engine::Table`]. No I/O here.

mod action;
mod event;
mod referee;
mod replay;
mod ruleset;

pub use action::{Action, ActionError, ClaimKind, TimedAction};
pub use event::{
    DesyncState, Event, EventBody, IllegalConsequence, MISREAD, MatchResult, MoveReading,
    REPEATED_PRESS, ResultReason, SquareEvidence,
};
pub use referee::{Referee, RefereeError};
pub use replay::replay_game;
pub use ruleset::*;
