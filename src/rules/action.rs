//! What happens at a table, in the order it happens: the referee's input.
//!
//! The JSON shapes are a public interface (`tandem referee`, the tracker, arbiter commands), documented
//! in `docs/referee.md`. Each action is one JSON object with exactly one of the keys `move` (with
//! `board`), `press`, `flag`, `claim`, `resign`, `draw_agreed` or `simultaneous`, and an optional `ts`
//! (milliseconds).

use serde::{Deserialize, Serialize};

use super::event::MoveReading;
use crate::engine::{BoardId, Color};

/// One thing that happened at the table.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// A move on a board, in UCI (`e2e4`, `N@f3`, steal `e7e8^d1`) or SAN (`Nf3`, `N@f3`);
    /// `reading`, from the camera tracker, goes into the `move` event as it is.
    Move {
        board: BoardId,
        notation: String,
        reading: Option<MoveReading>,
    },
    /// The player to move on `board` pressed the clock: his move is complete.
    Press { board: BoardId },
    /// A flag fell (time exceeded) and was pointed out.
    Flag { board: BoardId, color: Color },
    /// A player claims something.
    Claim {
        kind: ClaimKind,
        board: BoardId,
        by: Color,
    },
    /// A player resigns (his team loses).
    Resign { board: BoardId, color: Color },
    /// All four players agree to a draw.
    DrawAgreed,
    /// The last move recorded on `board` was never made: the camera misread it. The board goes
    /// back to the position before it (the other board keeps what happened since), and the
    /// tracker then records what was really played.
    Retract { board: BoardId },
    /// Actions observed at the same moment (two flags, two claims, two mates), judged together.
    Simultaneous(Vec<Action>),
}

/// What a player may claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimKind {
    /// The opponent's last move was illegal.
    IllegalMove,
    /// The opponent's flag fell.
    Flag,
    /// The opponent gives perpetual check (002 9.3).
    PerpetualCheck,
}

/// An action with its time stamp.
#[derive(Debug, Clone, PartialEq)]
pub struct TimedAction {
    pub ts: Option<u64>,
    pub action: Action,
}

/// Why a JSON action was not understood.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ActionError {
    #[error("action #{index}: {problem}")]
    Shape { index: usize, problem: String },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAction {
    ts: Option<u64>,
    board: Option<BoardId>,
    #[serde(rename = "move")]
    mv: Option<String>,
    reading: Option<MoveReading>,
    press: Option<BoardId>,
    retract: Option<BoardId>,
    flag: Option<BoardColor>,
    claim: Option<RawClaim>,
    resign: Option<BoardColor>,
    draw_agreed: Option<bool>,
    simultaneous: Option<Vec<serde_json::Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BoardColor {
    board: BoardId,
    color: Color,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClaim {
    kind: ClaimKind,
    board: BoardId,
    by: Color,
}

impl TimedAction {
    /// Reads one action object; `index` only numbers the error message.
    pub fn from_json(value: &serde_json::Value, index: usize) -> Result<Self, ActionError> {
        let shape = |problem: String| ActionError::Shape { index, problem };
        let raw: RawAction =
            serde_json::from_value(value.clone()).map_err(|e| shape(e.to_string()))?;
        let mut found: Vec<Action> = Vec::new();
        if let Some(notation) = raw.mv {
            let board = raw
                .board
                .ok_or_else(|| shape("a `move` needs a `board`".into()))?;
            found.push(Action::Move {
                board,
                notation,
                reading: raw.reading,
            });
        } else if raw.board.is_some() || raw.reading.is_some() {
            return Err(shape("`board` or `reading` given without a `move`".into()));
        }
        if let Some(board) = raw.press {
            found.push(Action::Press { board });
        }
        if let Some(board) = raw.retract {
            found.push(Action::Retract { board });
        }
        if let Some(BoardColor { board, color }) = raw.flag {
            found.push(Action::Flag { board, color });
        }
        if let Some(RawClaim { kind, board, by }) = raw.claim {
            found.push(Action::Claim { kind, board, by });
        }
        if let Some(BoardColor { board, color }) = raw.resign {
            found.push(Action::Resign { board, color });
        }
        match raw.draw_agreed {
            Some(true) => found.push(Action::DrawAgreed),
            Some(false) => return Err(shape("`draw_agreed` can only be true".into())),
            None => {}
        }
        if let Some(items) = raw.simultaneous {
            if items.len() < 2 {
                return Err(shape("`simultaneous` needs at least two actions".into()));
            }
            let inner = items
                .iter()
                .map(|v| TimedAction::from_json(v, index).map(|t| t.action))
                .collect::<Result<Vec<_>, _>>()?;
            found.push(Action::Simultaneous(inner));
        }
        match found.len() {
            1 => Ok(Self {
                ts: raw.ts,
                action: found.pop().expect("length checked"),
            }),
            0 => Err(shape(
                "expected one of move, press, retract, flag, claim, resign, draw_agreed, simultaneous"
                    .into(),
            )),
            _ => Err(shape("an action has exactly one kind".into())),
        }
    }
}

impl Action {
    /// The documented JSON shape of this action (without `ts`); the inverse of
    /// [`TimedAction::from_json`].
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::json;
        match self {
            Action::Move {
                board,
                notation,
                reading: None,
            } => json!({"board": board, "move": notation}),
            Action::Move {
                board,
                notation,
                reading: Some(reading),
            } => json!({"board": board, "move": notation, "reading": reading}),
            Action::Press { board } => json!({"press": board}),
            Action::Retract { board } => json!({"retract": board}),
            Action::Flag { board, color } => json!({"flag": {"board": board, "color": color}}),
            Action::Claim { kind, board, by } => {
                json!({"claim": {"kind": kind, "board": board, "by": by}})
            }
            Action::Resign { board, color } => {
                json!({"resign": {"board": board, "color": color}})
            }
            Action::DrawAgreed => json!({"draw_agreed": true}),
            Action::Simultaneous(items) => {
                json!({"simultaneous": items.iter().map(Action::to_json).collect::<Vec<_>>()})
            }
        }
    }
}

impl TimedAction {
    /// The documented JSON shape, `ts` included when known (journals, referee scripts).
    pub fn to_json(&self) -> serde_json::Value {
        let mut value = self.action.to_json();
        if let (Some(ts), Some(map)) = (self.ts, value.as_object_mut()) {
            map.insert("ts".into(), ts.into());
        }
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: serde_json::Value) -> Result<TimedAction, ActionError> {
        TimedAction::from_json(&v, 0)
    }

    #[test]
    fn every_documented_shape_parses() {
        let cases = [
            (
                json!({"board": "A", "move": "e2e4", "ts": 5}),
                Action::Move {
                    board: BoardId::A,
                    notation: "e2e4".into(),
                    reading: None,
                },
            ),
            (
                json!({"board": "B", "move": "N@f3", "reading": {"lead": 0.5, "guess": true}}),
                Action::Move {
                    board: BoardId::B,
                    notation: "N@f3".into(),
                    reading: Some(MoveReading::new(0.5, true)),
                },
            ),
            (json!({"press": "B"}), Action::Press { board: BoardId::B }),
            (
                json!({"retract": "A"}),
                Action::Retract { board: BoardId::A },
            ),
            (
                json!({"flag": {"board": "A", "color": "white"}}),
                Action::Flag {
                    board: BoardId::A,
                    color: Color::White,
                },
            ),
            (
                json!({"claim": {"kind": "illegal_move", "board": "A", "by": "black"}}),
                Action::Claim {
                    kind: ClaimKind::IllegalMove,
                    board: BoardId::A,
                    by: Color::Black,
                },
            ),
            (
                json!({"resign": {"board": "B", "color": "black"}}),
                Action::Resign {
                    board: BoardId::B,
                    color: Color::Black,
                },
            ),
            (json!({"draw_agreed": true}), Action::DrawAgreed),
        ];
        for (value, want) in cases {
            let parsed = parse(value.clone()).unwrap();
            assert_eq!(parsed.action, want, "{value}");
            // The JSON shape written back is the one read.
            assert_eq!(parse(parsed.to_json()).unwrap(), parsed, "{value}");
        }
        let both = parse(json!({"simultaneous": [
            {"flag": {"board": "A", "color": "white"}},
            {"flag": {"board": "B", "color": "white"}}
        ]}))
        .unwrap();
        assert!(matches!(both.action, Action::Simultaneous(ref v) if v.len() == 2));
    }

    #[test]
    fn malformed_actions_are_errors() {
        for bad in [
            json!({}),
            json!({"move": "e2e4"}),
            json!({"board": "C", "move": "e2e4"}),
            json!({"press": "A", "draw_agreed": true}),
            json!({"flag": {"board": "A"}}),
            json!({"draw_agreed": false}),
            json!({"teleport": true}),
            json!({"simultaneous": [{"press": "A"}]}),
            json!("e2e4"),
        ] {
            assert!(parse(bad.clone()).is_err(), "{bad} should be rejected");
        }
    }
}
