//! Events: what the monitor tells the clocks, the arbiter, the evidence log and the broadcast.
//!
//! Every event is one JSON object with `id` (stable: `<table>/<game>/<seq>`), `type`, `table`, `ts`
//! (milliseconds) and, where it applies, `board`. The field names are a public interface (GUIDE §5,
//! `docs/mqtt.md`); add fields, never rename them.

use serde::{Deserialize, Serialize};

use crate::engine::{BoardId, Color};

use super::ruleset::Consequence;

/// The `reason` of a `move_retracted` sent when the tracker finds it misread a move (the move
/// was never made; [`super::Action::Retract`]).
pub const MISREAD: &str = "misread";

/// The `reason` of an `illegal_move` the tracker reports without a move (`uci` empty): the same
/// player pressed the clock twice before the opponent pressed, so the move of the first press
/// was taken back after it was complete, or there was none (pressing without a move counts as
/// an illegal move, FIDE 7.5.4), and the camera did not show an illegal move for it.
pub const REPEATED_PRESS: &str = "repeated_press";

/// One event with its envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub id: String,
    pub table: String,
    /// Milliseconds since the start of the game (or since the epoch, for a live daemon).
    pub ts: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub board: Option<BoardId>,
    #[serde(flatten)]
    pub body: EventBody,
}

/// The kinds of event; serialised as the `type` field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventBody {
    /// A move that stands (legal, or illegal but unclaimed so far).
    Move {
        color: Color,
        /// The move number on this board (1 for White's and Black's first moves).
        number: u32,
        uci: String,
        san: String,
        /// The board's FEN after the move, pockets included.
        fen: String,
        /// Remaining time of the mover after the move, if known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        clock_ms: Option<u64>,
        /// False when the move is illegal and stands only because nobody claimed it (yet).
        legal: bool,
        /// How surely the move was read from the board (moves read by the camera tracker only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reading: Option<MoveReading>,
    },
    /// A move broke the rules. Reported at once; `consequence` says what the rule set makes of it.
    IllegalMove {
        color: Color,
        /// The move as seen (UCI where it could be read, else as given).
        uci: String,
        /// Machine-readable reason, e.g. `leaves_king_in_check`, `drop_mate`.
        reason: String,
        /// One line for a person.
        text: String,
        consequence: IllegalConsequence,
        /// Whether the move was applied to the board (it stands until claimed, or forever).
        applied: bool,
    },
    /// A move was taken back: the position before it is restored and the same player moves again.
    MoveRetracted {
        color: Color,
        uci: String,
        reason: String,
        /// The board's FEN after the retraction.
        fen: String,
    },
    /// A piece was taken off the board by rule (a forbidden drop-mate, a pawn that reached the last
    /// rank under 002 7.5) and went to a pocket. The removal is not a move.
    PieceRemoved {
        square: String,
        /// The piece as a FEN letter (`N` white knight, `p` black pawn).
        piece: String,
        /// The pocket it went to.
        to_board: BoardId,
        to_color: Color,
        reason: String,
    },
    /// A claim the referee could not grant, and why.
    ClaimRejected {
        by: Color,
        kind: String,
        reason: String,
    },
    /// The match is over. `result` is for the team WhiteA + BlackB (BPGN convention).
    Result {
        result: MatchResult,
        reason: ResultReason,
        /// One line for a person.
        text: String,
    },
    /// A clock was pressed.
    Clock {
        color: Color,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        remaining_ms: Option<u64>,
    },
    /// The monitor's own state, and problems with input it could not use.
    Status { state: String, detail: String },
    /// The tracker cannot explain what the camera sees on `board` from the tracked position (state
    /// `lost`, with the disagreeing squares as evidence), or can again (state `recovered`, empty
    /// evidence). While lost, the last good position is kept and the other board goes on.
    Desync {
        state: DesyncState,
        /// The squares that disagree, observed vs expected.
        squares: Vec<SquareEvidence>,
        /// The tracked board FEN the observation was compared with.
        fen: String,
    },
    /// Fewer pieces are visible in a pocket than the player holds, for longer than the grace
    /// period (texts 000 §7(3), 002, 004 §5c: the pocket must stand visibly beside the board).
    HiddenPocket {
        color: Color,
        /// The role as a FEN letter of the owner's colour (`N`, `p`).
        piece: String,
        held: u8,
        visible: u8,
    },
    /// A piece captured on `from_board` never appeared in the partner's pocket on `board` within
    /// the grace period: the capturer did not hand it over.
    HandoverMissing {
        from_board: BoardId,
        color: Color,
        /// The piece as a FEN letter of the owner's colour.
        piece: String,
        /// When the capture was made (ms): the time of the clock press it completed, else of the
        /// view it was decided on.
        captured_ts: u64,
    },
}

/// Whether a `desync` event starts or ends a desync.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DesyncState {
    Lost,
    Recovered,
}

/// How surely the tracker read a move from the board: the evidence for the explanation it
/// committed against the next best one. Guesses are committed only because the clock presses
/// said moves were made and waiting longer would not settle them; they are wrong far more often
/// than the rest (`docs/tracker.md`, "How sure a move is"), so consumers may mark them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MoveReading {
    /// Nats by which the committed explanation led the runner-up; absent when nothing else
    /// explained the view.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lead: Option<f64>,
    /// Committed without the usual lead over the runner-up (an overdue press's best guess).
    pub guess: bool,
}

impl MoveReading {
    /// A reading with lead `lead` (nats; infinite when nothing else explained the view).
    pub fn new(lead: f32, guess: bool) -> MoveReading {
        MoveReading {
            // Two decimals, as a double so that the JSON shows them without float noise.
            lead: lead
                .is_finite()
                .then_some((f64::from(lead) * 100.0).round() / 100.0),
            guess,
        }
    }
}

/// One square where the tracker's observation disagrees with the tracked position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SquareEvidence {
    pub square: String,
    /// FEN letter of the observed (most probable) class, `.` for empty.
    pub observed: char,
    /// FEN letter of the class the tracked position expects.
    pub expected: char,
    /// Log-likelihood gap (nats) between observed and expected.
    pub nats: f32,
}

/// What the rule set makes of an illegal move at the moment it is seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IllegalConsequence {
    /// Nothing happens (000 §4(1)c: the first illegal move has no consequence unless claimed).
    None,
    /// The arbiter warns the player.
    Warning,
    /// The team loses now (no claim needed).
    Loss,
    /// The opponent may claim it until he completes his next move; then the stated consequence applies.
    Claimable,
    /// The move is undone (refused online, or taken back by rule).
    Rejected,
    /// The dropped piece is removed by rule (000 §2(1)d).
    PieceRemoved,
    /// The dropped piece goes back to the pocket and the player moves again (002 7.3).
    TakenBack,
}

impl From<Consequence> for IllegalConsequence {
    fn from(c: Consequence) -> Self {
        match c {
            Consequence::None => Self::None,
            Consequence::Warning => Self::Warning,
            Consequence::TakeBack => Self::TakenBack,
            Consequence::Loss => Self::Loss,
            Consequence::Rejected => Self::Rejected,
        }
    }
}

/// A match result from the point of view of the team WhiteA + BlackB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MatchResult {
    #[serde(rename = "1-0")]
    WhiteATeamWins,
    #[serde(rename = "0-1")]
    BlackATeamWins,
    #[serde(rename = "1/2-1/2")]
    Draw,
}

impl MatchResult {
    /// The result when the player of `color` on `board` loses.
    pub fn loss_for(board: BoardId, color: Color) -> Self {
        // Team 1 is WhiteA + BlackB.
        let team_one = matches!(
            (board, color),
            (BoardId::A, Color::White) | (BoardId::B, Color::Black)
        );
        if team_one {
            Self::BlackATeamWins
        } else {
            Self::WhiteATeamWins
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::WhiteATeamWins => "1-0",
            Self::BlackATeamWins => "0-1",
            Self::Draw => "1/2-1/2",
        }
    }
}

/// Why the match ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultReason {
    Checkmate,
    Flag,
    DoubleFlag,
    IllegalMove,
    Resignation,
    SimultaneousMates,
    SimultaneousClaims,
    BothStalemated,
    PerpetualCheck,
    Agreement,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_and_type_are_flat_json() {
        let event = Event {
            id: "t1/1/7".into(),
            table: "t1".into(),
            ts: 1500,
            board: Some(BoardId::B),
            body: EventBody::Result {
                result: MatchResult::loss_for(BoardId::B, Color::Black),
                reason: ResultReason::Checkmate,
                text: "Black on B is checkmated".into(),
            },
        };
        let json = serde_json::to_value(&event).unwrap();
        assert_eq!(json["type"], "result");
        assert_eq!(json["board"], "B");
        assert_eq!(json["result"], "0-1");
        assert_eq!(json["reason"], "checkmate");
        let back: Event = serde_json::from_value(json).unwrap();
        assert_eq!(back, event);
    }

    #[test]
    fn a_move_says_how_surely_it_was_read_only_when_the_camera_read_it() {
        let mv = |reading| Event {
            id: "t1/1/3".into(),
            table: "t1".into(),
            ts: 900,
            board: Some(BoardId::A),
            body: EventBody::Move {
                color: Color::White,
                number: 1,
                uci: "e2e4".into(),
                san: "e4".into(),
                fen: String::new(),
                clock_ms: None,
                legal: true,
                reading,
            },
        };
        let json = serde_json::to_value(mv(None)).unwrap();
        assert!(json.get("reading").is_none(), "{json}");
        // Leads are kept to two decimals; an infinite lead (nothing else explained the view)
        // is left out.
        let guessed = mv(Some(MoveReading::new(0.4321, true)));
        let json = serde_json::to_value(&guessed).unwrap();
        assert_eq!(json["reading"]["guess"], true);
        assert_eq!(json["reading"]["lead"], serde_json::json!(0.43));
        assert_eq!(serde_json::from_value::<Event>(json).unwrap(), guessed);
        let json = serde_json::to_value(mv(Some(MoveReading::new(f32::INFINITY, false)))).unwrap();
        assert!(json["reading"].get("lead").is_none(), "{json}");
        assert_eq!(json["reading"]["guess"], false);
    }

    #[test]
    fn team_one_is_white_a_and_black_b() {
        assert_eq!(
            MatchResult::loss_for(BoardId::A, Color::White),
            MatchResult::BlackATeamWins
        );
        assert_eq!(
            MatchResult::loss_for(BoardId::A, Color::Black),
            MatchResult::WhiteATeamWins
        );
        assert_eq!(
            MatchResult::loss_for(BoardId::B, Color::White),
            MatchResult::WhiteATeamWins
        );
        assert_eq!(
            MatchResult::loss_for(BoardId::B, Color::Black),
            MatchResult::BlackATeamWins
        );
    }
}
