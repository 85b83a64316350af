//! JSON payloads: what clocks and the arbiter send in, what the daemon sends to clocks, status and
//! error payloads, and the minimal shape every outgoing event must have.
//!
//! Inbound parsing never panics: anything a client can put on a subscribed topic (any bytes) ends
//! in either an [`Inbound`] or an [`InboundError`] that the daemon turns into an `error` event.
//! Unknown extra fields are ignored (forward compatibility); missing or mistyped fields are errors.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::topics::{
    Board, ClockInputKind, DaemonId, InboundTopic, InboundTopicError, TableId, parse_inbound_topic,
};

/// Largest inbound payload accepted; real ones are well under 1 KiB.
pub const MAX_INBOUND_BYTES: usize = 16 * 1024;

/// The player colour on one board.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    White,
    Black,
}

/// `clock/<board>/press`: a player pressed the clock, completing their move (rule text 004 §7).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClockPress {
    /// The player who pressed (whose move is now complete); the other clock starts running.
    pub side: Side,
    /// When the press happened, integer ms (clock bridge time, epoch or since start).
    pub ts: u64,
    /// White's remaining time after the press, if the clock reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub white_ms: Option<u64>,
    /// Black's remaining time after the press, if the clock reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub black_ms: Option<u64>,
    /// A per-clock counter, so that a QoS 1 redelivery can be recognised as the same press.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// Optional echo of the topic's table; must match the topic when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    /// Optional echo of the topic's board; must match the topic when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub board: Option<String>,
}

/// `clock/<board>/flag`: a player's time ran out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClockFlag {
    /// The player whose flag fell.
    pub side: Side,
    /// When the flag fell, integer ms.
    pub ts: u64,
    /// Optional echo of the topic's table; must match the topic when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    /// Optional echo of the topic's board; must match the topic when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub board: Option<String>,
}

/// `clock/<board>/time`: the remaining times, sent periodically (e.g. every second) and on change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClockTime {
    /// White's remaining time in ms.
    pub white_ms: u64,
    /// Black's remaining time in ms.
    pub black_ms: u64,
    /// Whose clock is running; `null`/absent when stopped.
    #[serde(default)]
    pub running: Option<Side>,
    /// When the reading was taken, integer ms.
    pub ts: u64,
    /// Optional echo of the topic's table; must match the topic when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    /// Optional echo of the topic's board; must match the topic when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub board: Option<String>,
}

/// One clock report, by topic kind.
#[derive(Debug, Clone, PartialEq)]
pub enum ClockInput {
    Press(ClockPress),
    Flag(ClockFlag),
    Time(ClockTime),
}

/// What a claim is about; the rule set decides its consequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimKind {
    /// The opponent's last move was illegal.
    IllegalMove,
    /// The opponent's flag has fallen.
    Flag,
    /// Checkmate on the board.
    Mate,
    /// A draw (e.g. simultaneous claims, both flags, stalemate on both boards).
    Draw,
    /// Anything else; `note` should say what.
    Other,
}

/// The arbiter's commands (`"cmd"` field), one per action the referee supports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "snake_case")]
pub enum ArbiterCommand {
    /// Start a new game on the table, optionally under a named rule set (preset name).
    Start {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rules: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        game_id: Option<String>,
    },
    /// Abandon the current game and return to the start position, optionally changing rules.
    Reset {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rules: Option<String>,
    },
    /// Choose the rule set for the next game (preset name, e.g. `tandem-2024`).
    SetRules { rules: String },
    /// Acknowledge an alert event by its `id`.
    AckAlert { alert_id: String },
    /// A player's claim, entered by the arbiter.
    Claim {
        board: Board,
        side: Side,
        claim: ClaimKind,
        /// The event the claim refers to (e.g. an `illegal_move` event id).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        event_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// Replace the tracked position by a table FEN (two board FENs joined by `" | "`).
    CorrectPosition { fen: String },
    /// A player resigns (their team loses the match).
    Resign { board: Board, side: Side },
    /// All players agreed a draw.
    AgreeDraw {},
}

impl ArbiterCommand {
    /// Every accepted `cmd` value; anything else is [`InboundError::UnknownCommand`].
    pub const NAMES: [&'static str; 8] = [
        "start",
        "reset",
        "set_rules",
        "ack_alert",
        "claim",
        "correct_position",
        "resign",
        "agree_draw",
    ];
}

/// An arbiter command with its envelope fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArbiterMessage {
    /// The command's own id (for the arbiter UI to match replies); optional.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// When the arbiter issued it, integer ms; optional.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ts: Option<u64>,
    /// Who issued it (arbiter name), for the evidence log; optional.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// Optional echo of the topic's table; must match the topic when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    /// The command itself (its fields sit beside the envelope fields).
    #[serde(flatten)]
    pub command: ArbiterCommand,
}

/// One parsed inbound message.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// From a clock or clock bridge.
    Clock {
        table: TableId,
        board: Board,
        input: ClockInput,
    },
    /// From the arbiter.
    Arbiter {
        table: TableId,
        message: ArbiterMessage,
    },
}

impl Inbound {
    /// The table the message is for.
    pub fn table(&self) -> &TableId {
        match self {
            Inbound::Clock { table, .. } | Inbound::Arbiter { table, .. } => table,
        }
    }
}

/// Why an inbound message was rejected; the daemon publishes it as an `error` event and logs it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InboundError {
    /// The topic is not a valid input topic (bad table id, board, or kind).
    #[error(transparent)]
    Topic(#[from] InboundTopicError),
    /// A valid topic for a table this daemon does not serve.
    #[error("topic {topic:?}: table {table:?} is not served by this daemon")]
    UnknownTable { topic: String, table: String },
    /// Payload above [`MAX_INBOUND_BYTES`].
    #[error("topic {topic:?}: payload of {len} bytes exceeds {max} bytes")]
    TooLarge {
        topic: String,
        len: usize,
        max: usize,
    },
    /// Not UTF-8 JSON, or not a JSON object.
    #[error("topic {topic:?}: malformed JSON: {reason}")]
    Malformed { topic: String, reason: String },
    /// An arbiter command without a string `cmd` field.
    #[error("topic {topic:?}: missing string field \"cmd\"")]
    MissingCommand { topic: String },
    /// An arbiter command whose `cmd` is not one of [`ArbiterCommand::NAMES`].
    #[error("topic {topic:?}: unknown command {cmd:?}")]
    UnknownCommand { topic: String, cmd: String },
    /// Well-formed JSON with missing, mistyped or invalid fields.
    #[error("topic {topic:?}: invalid payload: {reason}")]
    Invalid { topic: String, reason: String },
    /// The payload's `table` differs from the topic's.
    #[error(
        "topic {topic:?}: payload table {found:?} does not match the topic's table {expected:?}"
    )]
    WrongTable {
        topic: String,
        expected: String,
        found: String,
    },
    /// A press, flag or arbiter command delivered from the broker's retained store: it would be
    /// replayed on every reconnect, so it is refused (only `clock/<board>/time` may be retained).
    #[error(
        "topic {topic:?}: retained message refused (publish presses, flags and commands with retain = false)"
    )]
    Retained { topic: String },
    /// The payload's `board` differs from the topic's (or is not `A`/`B`).
    #[error(
        "topic {topic:?}: payload board {found:?} does not match the topic's board {expected:?}"
    )]
    WrongBoard {
        topic: String,
        expected: String,
        found: String,
    },
}

impl InboundError {
    /// A stable machine-readable code for the `error` event's `code` field.
    pub fn code(&self) -> &'static str {
        match self {
            InboundError::Topic(InboundTopicError::BadBoard { .. }) => "wrong_board",
            InboundError::Topic(InboundTopicError::BadTable { .. }) => "bad_table",
            InboundError::Topic(_) => "bad_topic",
            InboundError::UnknownTable { .. } => "wrong_table",
            InboundError::TooLarge { .. } => "too_large",
            InboundError::Malformed { .. } => "malformed_json",
            InboundError::MissingCommand { .. } => "missing_command",
            InboundError::UnknownCommand { .. } => "unknown_command",
            InboundError::Invalid { .. } => "invalid_payload",
            InboundError::WrongTable { .. } => "wrong_table",
            InboundError::Retained { .. } => "retained_input",
            InboundError::WrongBoard { .. } => "wrong_board",
        }
    }

    /// The table an `error` event can be published under: the topic's table segment when it is a
    /// valid table id (even if this daemon does not serve it), else `None` (log only).
    pub fn table_in_topic(topic: &str) -> Option<TableId> {
        let rest = topic.strip_prefix(super::topics::ROOT)?.strip_prefix('/')?;
        TableId::new(rest.split('/').next()?).ok()
    }

    /// The `error` event for this rejection: `{id, type: "error", table, ts, code, topic, message}`.
    pub fn error_event(&self, id: &str, table: &TableId, topic: &str, ts: u64) -> Value {
        serde_json::json!({
            "id": id,
            "type": "error",
            "table": table,
            "ts": ts,
            "code": self.code(),
            "topic": topic,
            "message": self.to_string(),
        })
    }
}

/// Parses a message on any subscribed topic, for any table.
pub fn parse_inbound(topic: &str, bytes: &[u8]) -> Result<Inbound, InboundError> {
    parse_inbound_for(&[], topic, bytes)
}

/// Parses a message as delivered by the broker: like [`parse_inbound_for`], and a `retained`
/// delivery is refused except on `clock/<board>/time` (a retained press, flag or command would be
/// replayed on every reconnect).
pub fn parse_inbound_message(
    tables: &[TableId],
    topic: &str,
    bytes: &[u8],
    retained: bool,
) -> Result<Inbound, InboundError> {
    let inbound = parse_inbound_for(tables, topic, bytes)?;
    let may_be_retained = matches!(
        inbound,
        Inbound::Clock {
            input: ClockInput::Time(_),
            ..
        }
    );
    if retained && !may_be_retained {
        return Err(InboundError::Retained {
            topic: topic.to_string(),
        });
    }
    Ok(inbound)
}

/// Parses a message, accepting only `tables` (all tables when empty).
pub fn parse_inbound_for(
    tables: &[TableId],
    topic: &str,
    bytes: &[u8],
) -> Result<Inbound, InboundError> {
    let parsed = parse_inbound_topic(topic)?;
    let table = match &parsed {
        InboundTopic::Clock { table, .. } | InboundTopic::Arbiter { table } => table.clone(),
    };
    if !tables.is_empty() && !tables.contains(&table) {
        return Err(InboundError::UnknownTable {
            topic: topic.to_string(),
            table: table.to_string(),
        });
    }
    if bytes.len() > MAX_INBOUND_BYTES {
        return Err(InboundError::TooLarge {
            topic: topic.to_string(),
            len: bytes.len(),
            max: MAX_INBOUND_BYTES,
        });
    }
    let malformed = |reason: String| InboundError::Malformed {
        topic: topic.to_string(),
        reason,
    };
    let value: Value = serde_json::from_slice(bytes).map_err(|e| malformed(e.to_string()))?;
    let Value::Object(object) = &value else {
        return Err(malformed("payload is not a JSON object".to_string()));
    };
    let invalid = |e: serde_json::Error| InboundError::Invalid {
        topic: topic.to_string(),
        reason: e.to_string(),
    };
    let check_table = |found: Option<&String>| match found {
        Some(found) if found != table.as_str() => Err(InboundError::WrongTable {
            topic: topic.to_string(),
            expected: table.to_string(),
            found: found.clone(),
        }),
        _ => Ok(()),
    };
    match parsed {
        InboundTopic::Clock { board, kind, .. } => {
            let input = match kind {
                ClockInputKind::Press => {
                    ClockInput::Press(serde_json::from_value(value).map_err(invalid)?)
                }
                ClockInputKind::Flag => {
                    ClockInput::Flag(serde_json::from_value(value).map_err(invalid)?)
                }
                ClockInputKind::Time => {
                    ClockInput::Time(serde_json::from_value(value).map_err(invalid)?)
                }
            };
            let (t, b) = match &input {
                ClockInput::Press(p) => (&p.table, &p.board),
                ClockInput::Flag(f) => (&f.table, &f.board),
                ClockInput::Time(t) => (&t.table, &t.board),
            };
            check_table(t.as_ref())?;
            if let Some(found) = b
                && found != board.as_str()
            {
                return Err(InboundError::WrongBoard {
                    topic: topic.to_string(),
                    expected: board.to_string(),
                    found: found.clone(),
                });
            }
            Ok(Inbound::Clock {
                table,
                board,
                input,
            })
        }
        InboundTopic::Arbiter { .. } => {
            let cmd = match object.get("cmd") {
                Some(Value::String(cmd)) => cmd.clone(),
                _ => {
                    return Err(InboundError::MissingCommand {
                        topic: topic.to_string(),
                    });
                }
            };
            if !ArbiterCommand::NAMES.contains(&cmd.as_str()) {
                return Err(InboundError::UnknownCommand {
                    topic: topic.to_string(),
                    cmd,
                });
            }
            let message: ArbiterMessage = serde_json::from_value(value).map_err(invalid)?;
            check_table(message.table.as_ref())?;
            validate_command(&message.command).map_err(|reason| InboundError::Invalid {
                topic: topic.to_string(),
                reason,
            })?;
            Ok(Inbound::Arbiter { table, message })
        }
    }
}

/// Field checks serde cannot express: non-empty names, a two-board FEN.
fn validate_command(command: &ArbiterCommand) -> Result<(), String> {
    let name = |field: &str, value: &str| {
        if value.trim().is_empty() || value.len() > 64 {
            Err(format!("{field} must be 1 to 64 bytes and not blank"))
        } else {
            Ok(())
        }
    };
    match command {
        ArbiterCommand::Start { rules, .. } | ArbiterCommand::Reset { rules } => {
            rules.as_deref().map_or(Ok(()), |r| name("rules", r))
        }
        ArbiterCommand::SetRules { rules } => name("rules", rules),
        ArbiterCommand::AckAlert { alert_id } => {
            if alert_id.is_empty() {
                Err("alert_id must not be empty".to_string())
            } else {
                Ok(())
            }
        }
        ArbiterCommand::CorrectPosition { fen } => {
            let boards: Vec<&str> = fen.split(" | ").collect();
            if boards.len() == 2 && boards.iter().all(|b| !b.trim().is_empty()) {
                Ok(())
            } else {
                Err("fen must be two board FENs joined by \" | \"".to_string())
            }
        }
        ArbiterCommand::Claim { .. }
        | ArbiterCommand::Resign { .. }
        | ArbiterCommand::AgreeDraw {} => Ok(()),
    }
}

/// What the daemon tells a clock on `clock/<board>/cmd` (`"cmd"` field).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "snake_case")]
pub enum ClockCommandKind {
    /// Stop both sides (on a result or a claim).
    Stop,
    /// Start (or resume) the given side's clock, or the side to move when absent.
    Start {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        side: Option<Side>,
    },
    /// Show a short text on the clock's display.
    Message { text: String },
}

/// A clock command with its envelope: a stable `id` (clocks deduplicate on it) and `ts`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClockCommand {
    pub id: String,
    pub table: TableId,
    pub board: Board,
    pub ts: u64,
    #[serde(flatten)]
    pub command: ClockCommandKind,
}

/// The value of a status topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Presence {
    Online,
    Offline,
}

/// Retained payload of `tandem/v1/<table>/status` and `tandem/v1/daemon/<id>/status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusPayload {
    pub status: Presence,
    /// The daemon serving the table; its own status topic carries the Last Will.
    pub daemon: DaemonId,
    /// When the status was set, ms since the Unix epoch.
    pub ts: u64,
}

/// Why an outgoing event was refused before it reached the outbox.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    /// Events must be JSON objects.
    #[error("event is not a JSON object")]
    NotAnObject,
    /// A required field is missing or has the wrong JSON type.
    #[error("event field {field:?} is missing or not {expected}")]
    Field {
        field: &'static str,
        expected: &'static str,
    },
    /// `table`, `type` or `board` is not a valid topic segment / board.
    #[error("event field {field:?}: {reason}")]
    Invalid { field: &'static str, reason: String },
}

/// The fields of an event that decide where and how it is published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventMeta {
    pub id: String,
    pub event_type: String,
    pub table: TableId,
    pub ts: i64,
    pub board: Option<Board>,
}

impl EventMeta {
    /// Checks the event contract (`id`, `type`, `table` strings, integer `ts`, optional
    /// `board` `"A"`/`"B"`) without depending on the referee's Rust types.
    pub fn from_event(event: &Value) -> Result<Self, EventError> {
        let object = event.as_object().ok_or(EventError::NotAnObject)?;
        let string = |field: &'static str| {
            object
                .get(field)
                .and_then(Value::as_str)
                .ok_or(EventError::Field {
                    field,
                    expected: "a string",
                })
        };
        let id = string("id")?;
        if id.is_empty() {
            return Err(EventError::Invalid {
                field: "id",
                reason: "must not be empty".to_string(),
            });
        }
        let event_type = string("type")?;
        let table = TableId::new(string("table")?).map_err(|e| EventError::Invalid {
            field: "table",
            reason: e.to_string(),
        })?;
        super::topics::event_topic(&table, event_type).map_err(|e| EventError::Invalid {
            field: "type",
            reason: e.to_string(),
        })?;
        let ts = object
            .get("ts")
            .and_then(Value::as_i64)
            .ok_or(EventError::Field {
                field: "ts",
                expected: "an integer",
            })?;
        let board = match object.get("board") {
            None | Some(Value::Null) => None,
            Some(Value::String(b)) => Some(Board::parse(b).ok_or_else(|| EventError::Invalid {
                field: "board",
                reason: format!("{b:?} is neither \"A\" nor \"B\""),
            })?),
            Some(_) => {
                return Err(EventError::Field {
                    field: "board",
                    expected: "a string",
                });
            }
        };
        Ok(Self {
            id: id.to_string(),
            event_type: event_type.to_string(),
            table,
            ts,
            board,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRESS: &str = "tandem/v1/t1/clock/A/press";
    const ARB: &str = "tandem/v1/t1/arbiter/cmd";

    #[test]
    fn clock_inputs_parse() {
        let got = parse_inbound(
            PRESS,
            br#"{"side":"white","ts":1200,"white_ms":299000,"black_ms":300000,"seq":3}"#,
        )
        .unwrap();
        let Inbound::Clock {
            table,
            board,
            input: ClockInput::Press(press),
        } = got
        else {
            panic!("not a press: {got:?}");
        };
        assert_eq!(table.as_str(), "t1");
        assert_eq!(board, Board::A);
        assert_eq!(press.side, Side::White);
        assert_eq!(press.white_ms, Some(299000));
        assert_eq!(press.seq, Some(3));

        let got = parse_inbound(
            "tandem/v1/t1/clock/B/time",
            br#"{"white_ms":1,"black_ms":2,"running":null,"ts":5}"#,
        )
        .unwrap();
        assert!(matches!(
            got,
            Inbound::Clock {
                board: Board::B,
                input: ClockInput::Time(ClockTime { running: None, .. }),
                ..
            }
        ));
        let got = parse_inbound(
            "tandem/v1/t1/clock/B/flag",
            br#"{"side":"black","ts":5,"extra":"ignored"}"#,
        )
        .unwrap();
        assert!(matches!(
            got,
            Inbound::Clock {
                input: ClockInput::Flag(ClockFlag {
                    side: Side::Black,
                    ..
                }),
                ..
            }
        ));
    }

    #[test]
    fn bad_inputs_get_typed_errors() {
        let err = |topic: &str, body: &[u8]| parse_inbound(topic, body).unwrap_err();
        assert!(matches!(err(PRESS, b"{"), InboundError::Malformed { .. }));
        assert!(matches!(
            err(PRESS, b"\xff\xfe"),
            InboundError::Malformed { .. }
        ));
        assert!(matches!(
            err(PRESS, b"[1,2]"),
            InboundError::Malformed { .. }
        ));
        assert!(matches!(
            err(PRESS, br#"{"side":"red","ts":1}"#),
            InboundError::Invalid { .. }
        ));
        assert!(matches!(
            err(PRESS, br#"{"side":"white","ts":-1}"#),
            InboundError::Invalid { .. }
        ));
        assert!(matches!(
            err(PRESS, br#"{"side":"white","ts":1,"table":"t2"}"#),
            InboundError::WrongTable { .. }
        ));
        assert!(matches!(
            err(PRESS, br#"{"side":"white","ts":1,"board":"B"}"#),
            InboundError::WrongBoard { .. }
        ));
        let e = err("tandem/v1/t1/clock/Z/press", br#"{"side":"white","ts":1}"#);
        assert_eq!(e.code(), "wrong_board");
        assert!(matches!(
            err(ARB, br#"{"cmd":"dance"}"#),
            InboundError::UnknownCommand { ref cmd, .. } if cmd == "dance"
        ));
        assert!(matches!(
            err(ARB, br#"{"cmd":5}"#),
            InboundError::MissingCommand { .. }
        ));
        assert!(matches!(
            err(ARB, br#"{}"#),
            InboundError::MissingCommand { .. }
        ));
        assert!(matches!(
            err(ARB, br#"{"cmd":"claim","board":"A","side":"white"}"#),
            InboundError::Invalid { .. }
        ));
        assert!(matches!(
            err(
                ARB,
                br#"{"cmd":"correct_position","fen":"8/8/8/8/8/8/8/8 w - - 0 1"}"#
            ),
            InboundError::Invalid { .. }
        ));
        assert!(matches!(
            err(ARB, br#"{"cmd":"set_rules","rules":" "}"#),
            InboundError::Invalid { .. }
        ));
        let big = vec![b' '; MAX_INBOUND_BYTES + 1];
        assert!(matches!(err(ARB, &big), InboundError::TooLarge { .. }));
        assert!(matches!(
            parse_inbound_for(
                &[TableId::new("t2").unwrap()],
                ARB,
                br#"{"cmd":"agree_draw"}"#
            ),
            Err(InboundError::UnknownTable { .. })
        ));
    }

    #[test]
    fn arbiter_commands_parse() {
        let cases: [(&[u8], ArbiterCommand); 4] = [
            (
                br#"{"cmd":"start","rules":"dsb","id":"c1","by":"Anna"}"#,
                ArbiterCommand::Start {
                    rules: Some("dsb".into()),
                    game_id: None,
                },
            ),
            (br#"{"cmd":"agree_draw"}"#, ArbiterCommand::AgreeDraw {}),
            (
                br#"{"cmd":"resign","board":"B","side":"black"}"#,
                ArbiterCommand::Resign {
                    board: Board::B,
                    side: Side::Black,
                },
            ),
            (
                br#"{"cmd":"claim","board":"A","side":"white","claim":"illegal_move","event_id":"e9"}"#,
                ArbiterCommand::Claim {
                    board: Board::A,
                    side: Side::White,
                    claim: ClaimKind::IllegalMove,
                    event_id: Some("e9".into()),
                    note: None,
                },
            ),
        ];
        for (body, want) in cases {
            match parse_inbound(ARB, body).unwrap() {
                Inbound::Arbiter { message, .. } => assert_eq!(message.command, want),
                other => panic!("{other:?}"),
            }
        }
        // Every name in NAMES is a real variant: a serialised command's tag is listed.
        let sample = serde_json::to_value(ArbiterCommand::SetRules { rules: "x".into() }).unwrap();
        assert!(ArbiterCommand::NAMES.contains(&sample["cmd"].as_str().unwrap()));
    }

    #[test]
    fn retained_commands_are_refused_but_retained_times_accepted() {
        let time = br#"{"white_ms":1,"black_ms":2,"ts":5}"#;
        let press = br#"{"side":"white","ts":1}"#;
        let cmd = br#"{"cmd":"agree_draw"}"#;
        assert!(parse_inbound_message(&[], "tandem/v1/t1/clock/A/time", time, true).is_ok());
        assert!(parse_inbound_message(&[], PRESS, press, false).is_ok());
        let e = parse_inbound_message(&[], PRESS, press, true).unwrap_err();
        assert_eq!(e.code(), "retained_input");
        assert!(matches!(
            parse_inbound_message(&[], ARB, cmd, true),
            Err(InboundError::Retained { .. })
        ));
        // Malformed beats retained: the more specific error is reported.
        assert_eq!(
            parse_inbound_message(&[], ARB, b"{", true)
                .unwrap_err()
                .code(),
            "malformed_json"
        );
    }

    #[test]
    fn error_event_carries_code_and_table() {
        let topic = "tandem/v1/t9/arbiter/cmd";
        let e = parse_inbound(topic, b"nope").unwrap_err();
        let table = InboundError::table_in_topic(topic).unwrap();
        let ev = e.error_event("err-1", &table, topic, 42);
        assert_eq!(ev["type"], "error");
        assert_eq!(ev["table"], "t9");
        assert_eq!(ev["code"], "malformed_json");
        assert!(EventMeta::from_event(&ev).is_ok());
        assert_eq!(InboundError::table_in_topic("other/t9"), None);
    }

    #[test]
    fn event_meta_checks_the_contract() {
        let ok = serde_json::json!({"id":"e1","type":"move","table":"t1","ts":5,"board":"B"});
        let meta = EventMeta::from_event(&ok).unwrap();
        assert_eq!(meta.board, Some(Board::B));
        assert_eq!(meta.event_type, "move");
        for bad in [
            serde_json::json!([1]),
            serde_json::json!({"type":"move","table":"t1","ts":5}),
            serde_json::json!({"id":"","type":"move","table":"t1","ts":5}),
            serde_json::json!({"id":"e","type":"a/b","table":"t1","ts":5}),
            serde_json::json!({"id":"e","type":"move","table":"t+1","ts":5}),
            serde_json::json!({"id":"e","type":"move","table":"t1","ts":"5"}),
            serde_json::json!({"id":"e","type":"move","table":"t1","ts":5,"board":"C"}),
        ] {
            assert!(EventMeta::from_event(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn clock_command_serialises_flat() {
        let c = ClockCommand {
            id: "c1".into(),
            table: TableId::new("t1").unwrap(),
            board: Board::A,
            ts: 7,
            command: ClockCommandKind::Message {
                text: "Illegal move".into(),
            },
        };
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v["cmd"], "message");
        assert_eq!(v["text"], "Illegal move");
        let back: ClockCommand = serde_json::from_value(v).unwrap();
        assert_eq!(back, c);
    }
}
