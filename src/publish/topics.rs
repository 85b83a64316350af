//! The MQTT topic tree, namespaced per table under `tandem/v1/`.
//!
//! Every topic this crate publishes or subscribes to is built or parsed here, so that the tree in
//! `docs/mqtt.md` has exactly one implementation. Table ids are validated once ([`TableId`]) and
//! can then be spliced into topics without further checks.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Prefix of every topic; the version segment changes only with incompatible payload changes.
pub const ROOT: &str = "tandem/v1";

/// Longest table id in bytes (keeps topics short and bounded).
pub const MAX_TABLE_ID_BYTES: usize = 64;

/// Why a table id, daemon id or topic segment was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopicError {
    /// Empty ids would produce `tandem/v1//…`, which matches nothing sensible.
    #[error("{what} must not be empty")]
    Empty { what: &'static str },
    /// Ids longer than [`MAX_TABLE_ID_BYTES`] are refused.
    #[error("{what} is {len} bytes long, at most {max} allowed")]
    TooLong {
        what: &'static str,
        len: usize,
        max: usize,
    },
    /// `/`, `+`, `#` (and control characters) would change the topic structure or wildcards.
    #[error(
        "{what} {value:?} contains the forbidden character {ch:?} (no '/', '+', '#' or control characters)"
    )]
    ForbiddenChar {
        what: &'static str,
        value: String,
        ch: char,
    },
    /// Table ids `daemon` is reserved for `tandem/v1/daemon/<id>/status`.
    #[error("table id {0:?} is reserved")]
    Reserved(String),
}

fn check_segment(what: &'static str, value: &str) -> Result<(), TopicError> {
    if value.is_empty() {
        return Err(TopicError::Empty { what });
    }
    if value.len() > MAX_TABLE_ID_BYTES {
        return Err(TopicError::TooLong {
            what,
            len: value.len(),
            max: MAX_TABLE_ID_BYTES,
        });
    }
    if let Some(ch) = value
        .chars()
        .find(|c| matches!(c, '/' | '+' | '#') || c.is_control())
    {
        return Err(TopicError::ForbiddenChar {
            what,
            value: value.to_string(),
            ch,
        });
    }
    Ok(())
}

/// A validated table id: non-empty, at most 64 bytes, no `/`, `+`, `#` or control characters,
/// and not the reserved word `daemon`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct TableId(String);

impl TableId {
    /// Validates `id`; the only way to build a `TableId`.
    pub fn new(id: impl Into<String>) -> Result<Self, TopicError> {
        let id = id.into();
        check_segment("table id", &id)?;
        if id == "daemon" {
            return Err(TopicError::Reserved(id));
        }
        Ok(Self(id))
    }

    /// The id as it appears in topics and payloads.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TableId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for TableId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        TableId::new(s).map_err(serde::de::Error::custom)
    }
}

/// A validated daemon id (same character rules as a table id); names the Last Will topic.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct DaemonId(String);

impl DaemonId {
    /// Validates `id` with the table-id rules.
    pub fn new(id: impl Into<String>) -> Result<Self, TopicError> {
        let id = id.into();
        check_segment("daemon id", &id)?;
        Ok(Self(id))
    }

    /// The id as it appears in topics and payloads.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DaemonId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for DaemonId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        DaemonId::new(s).map_err(serde::de::Error::custom)
    }
}

/// One of the two boards of a table; board A is where the first-named team has White.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Board {
    A,
    B,
}

impl Board {
    /// The topic segment and payload value (`"A"`/`"B"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Board::A => "A",
            Board::B => "B",
        }
    }

    /// Parses exactly `"A"` or `"B"` (case-sensitive, as in events).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "A" => Some(Board::A),
            "B" => Some(Board::B),
            _ => None,
        }
    }
}

impl fmt::Display for Board {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a clock (or clock bridge) reports; each kind has its own topic under `clock/<board>/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClockInputKind {
    /// A player pressed their clock: their move is complete.
    Press,
    /// A flag fell.
    Flag,
    /// Periodic remaining times.
    Time,
}

impl ClockInputKind {
    /// All kinds, in topic order.
    pub const ALL: [ClockInputKind; 3] = [
        ClockInputKind::Press,
        ClockInputKind::Flag,
        ClockInputKind::Time,
    ];

    /// The last topic segment.
    pub fn as_str(self) -> &'static str {
        match self {
            ClockInputKind::Press => "press",
            ClockInputKind::Flag => "flag",
            ClockInputKind::Time => "time",
        }
    }
}

/// `tandem/v1/<table>/event/<type>`: one referee event, QoS 1, not retained.
///
/// The event type must itself be a valid segment (same rules as a table id).
pub fn event_topic(table: &TableId, event_type: &str) -> Result<String, TopicError> {
    check_segment("event type", event_type)?;
    Ok(format!("{ROOT}/{table}/event/{event_type}"))
}

/// `tandem/v1/<table>/event/error`: rejected inbound messages and other input errors.
pub fn error_topic(table: &TableId) -> String {
    format!("{ROOT}/{table}/event/error")
}

/// `tandem/v1/<table>/state`: the latest table state, retained.
pub fn state_topic(table: &TableId) -> String {
    format!("{ROOT}/{table}/state")
}

/// `tandem/v1/<table>/feed/<kind>`: the live broadcast feed, retained (`kind` is `bpgn`, `pgn/A`
/// or `pgn/B`; the broadcast module names them).
pub fn feed_topic(table: &TableId, kind: &str) -> String {
    format!("{ROOT}/{table}/feed/{}", kind.trim_start_matches("feed/"))
}

/// `tandem/v1/<table>/status`: retained `online`/`offline` of the daemon serving the table.
pub fn table_status_topic(table: &TableId) -> String {
    format!("{ROOT}/{table}/status")
}

/// `tandem/v1/daemon/<daemon-id>/status`: retained daemon status; carries the Last Will.
pub fn daemon_status_topic(daemon: &DaemonId) -> String {
    format!("{ROOT}/daemon/{daemon}/status")
}

/// `tandem/v1/<table>/clock/<board>/<press|flag|time>`: published by a clock or clock bridge.
pub fn clock_input_topic(table: &TableId, board: Board, kind: ClockInputKind) -> String {
    format!("{ROOT}/{table}/clock/{board}/{}", kind.as_str())
}

/// `tandem/v1/<table>/clock/<board>/cmd`: commands to a clock (stop, start, message).
pub fn clock_command_topic(table: &TableId, board: Board) -> String {
    format!("{ROOT}/{table}/clock/{board}/cmd")
}

/// `tandem/v1/<table>/arbiter/cmd`: commands from the arbiter.
pub fn arbiter_command_topic(table: &TableId) -> String {
    format!("{ROOT}/{table}/arbiter/cmd")
}

/// The subscription filters of a daemon serving `tables` (all tables via `+` when empty).
///
/// Per table: `tandem/v1/<table>/clock/+/press`, `…/flag`, `…/time` and
/// `tandem/v1/<table>/arbiter/cmd`. The clock kinds are listed one by one (not `clock/+/+`) so
/// that the daemon does not receive its own `clock/<board>/cmd` publications.
pub fn subscription_filters(tables: &[TableId]) -> Vec<String> {
    let per_table = |t: &str| {
        let mut f: Vec<String> = ClockInputKind::ALL
            .iter()
            .map(|k| format!("{ROOT}/{t}/clock/+/{}", k.as_str()))
            .collect();
        f.push(format!("{ROOT}/{t}/arbiter/cmd"));
        f
    };
    if tables.is_empty() {
        return per_table("+");
    }
    tables.iter().flat_map(|t| per_table(t.as_str())).collect()
}

/// A topic the daemon subscribes to, split into its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InboundTopic {
    /// `…/<table>/clock/<board>/<kind>`.
    Clock {
        table: TableId,
        board: Board,
        kind: ClockInputKind,
    },
    /// `…/<table>/arbiter/cmd`.
    Arbiter { table: TableId },
}

/// Why a topic is not one the daemon accepts input on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InboundTopicError {
    /// Not under `tandem/v1/` or not a clock or arbiter topic at all.
    #[error("topic {0:?} is not a tandem/v1 clock or arbiter input topic")]
    Unknown(String),
    /// The table segment is not a valid table id.
    #[error("topic {topic:?}: {error}")]
    BadTable { topic: String, error: TopicError },
    /// The board segment is not `A` or `B`.
    #[error("topic {topic:?}: board {board:?} is neither \"A\" nor \"B\"")]
    BadBoard { topic: String, board: String },
    /// `clock/<board>/<x>` with an unknown `<x>`.
    #[error("topic {topic:?}: unknown clock input {kind:?} (expected press, flag or time)")]
    BadClockKind { topic: String, kind: String },
}

/// Splits an inbound topic; the counterpart of [`clock_input_topic`] and [`arbiter_command_topic`].
pub fn parse_inbound_topic(topic: &str) -> Result<InboundTopic, InboundTopicError> {
    let unknown = || InboundTopicError::Unknown(topic.to_string());
    let rest = topic
        .strip_prefix(ROOT)
        .and_then(|r| r.strip_prefix('/'))
        .ok_or_else(unknown)?;
    let parts: Vec<&str> = rest.split('/').collect();
    let table = |raw: &str| {
        TableId::new(raw).map_err(|error| InboundTopicError::BadTable {
            topic: topic.to_string(),
            error,
        })
    };
    match parts.as_slice() {
        [t, "arbiter", "cmd"] => Ok(InboundTopic::Arbiter { table: table(t)? }),
        [t, "clock", b, kind] => {
            let table = table(t)?;
            let board = Board::parse(b).ok_or_else(|| InboundTopicError::BadBoard {
                topic: topic.to_string(),
                board: b.to_string(),
            })?;
            let kind = match *kind {
                "press" => ClockInputKind::Press,
                "flag" => ClockInputKind::Flag,
                "time" => ClockInputKind::Time,
                other => {
                    return Err(InboundTopicError::BadClockKind {
                        topic: topic.to_string(),
                        kind: other.to_string(),
                    });
                }
            };
            Ok(InboundTopic::Clock { table, board, kind })
        }
        _ => Err(unknown()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> TableId {
        TableId::new(s).unwrap()
    }

    #[test]
    fn table_ids_are_validated() {
        assert!(TableId::new("table-7").is_ok());
        assert!(TableId::new("Tisch ä 3").is_ok());
        assert_eq!(
            TableId::new(""),
            Err(TopicError::Empty { what: "table id" })
        );
        for bad in ["a/b", "a+b", "a#", "x\n"] {
            assert!(
                matches!(TableId::new(bad), Err(TopicError::ForbiddenChar { .. })),
                "{bad:?}"
            );
        }
        assert!(TableId::new("x".repeat(64)).is_ok());
        assert!(matches!(
            TableId::new("x".repeat(65)),
            Err(TopicError::TooLong { len: 65, .. })
        ));
        // 64 bytes but 32 characters: the limit is bytes.
        assert!(TableId::new("ä".repeat(32)).is_ok());
        assert!(TableId::new("ä".repeat(33)).is_err());
        assert!(matches!(
            TableId::new("daemon"),
            Err(TopicError::Reserved(_))
        ));
        assert!(serde_json::from_str::<TableId>("\"a/b\"").is_err());
    }

    #[test]
    fn topics_have_the_documented_shape() {
        let table = t("t1");
        assert_eq!(
            event_topic(&table, "move").unwrap(),
            "tandem/v1/t1/event/move"
        );
        assert!(event_topic(&table, "a/b").is_err());
        assert_eq!(error_topic(&table), "tandem/v1/t1/event/error");
        assert_eq!(state_topic(&table), "tandem/v1/t1/state");
        assert_eq!(feed_topic(&table, "feed/pgn/A"), "tandem/v1/t1/feed/pgn/A");
        assert_eq!(feed_topic(&table, "bpgn"), "tandem/v1/t1/feed/bpgn");
        assert_eq!(table_status_topic(&table), "tandem/v1/t1/status");
        assert_eq!(
            daemon_status_topic(&DaemonId::new("cam1").unwrap()),
            "tandem/v1/daemon/cam1/status"
        );
        assert_eq!(
            clock_input_topic(&table, Board::B, ClockInputKind::Flag),
            "tandem/v1/t1/clock/B/flag"
        );
        assert_eq!(
            clock_command_topic(&table, Board::A),
            "tandem/v1/t1/clock/A/cmd"
        );
        assert_eq!(arbiter_command_topic(&table), "tandem/v1/t1/arbiter/cmd");
    }

    #[test]
    fn inbound_topics_round_trip() {
        let table = t("t1");
        for board in [Board::A, Board::B] {
            for kind in ClockInputKind::ALL {
                let topic = clock_input_topic(&table, board, kind);
                assert_eq!(
                    parse_inbound_topic(&topic).unwrap(),
                    InboundTopic::Clock {
                        table: table.clone(),
                        board,
                        kind
                    }
                );
            }
        }
        assert_eq!(
            parse_inbound_topic(&arbiter_command_topic(&table)).unwrap(),
            InboundTopic::Arbiter { table }
        );
        assert!(matches!(
            parse_inbound_topic("tandem/v1/t1/clock/C/press"),
            Err(InboundTopicError::BadBoard { .. })
        ));
        assert!(matches!(
            parse_inbound_topic("tandem/v1/t1/clock/A/cmd"),
            Err(InboundTopicError::BadClockKind { .. })
        ));
        assert!(matches!(
            parse_inbound_topic("tandem/v1/t1/clock/A/tick"),
            Err(InboundTopicError::BadClockKind { .. })
        ));
        assert!(matches!(
            parse_inbound_topic("tandem/v1/daemon/arbiter/cmd"),
            Err(InboundTopicError::BadTable { .. })
        ));
        for bad in [
            "tandem/v2/t/arbiter/cmd",
            "tandem/v1",
            "tandem/v1/t1/state",
            "",
        ] {
            assert!(
                matches!(parse_inbound_topic(bad), Err(InboundTopicError::Unknown(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn filters_cover_configured_tables_or_all() {
        assert_eq!(
            subscription_filters(&[]),
            vec![
                "tandem/v1/+/clock/+/press",
                "tandem/v1/+/clock/+/flag",
                "tandem/v1/+/clock/+/time",
                "tandem/v1/+/arbiter/cmd"
            ]
        );
        let f = subscription_filters(&[t("a"), t("b")]);
        assert_eq!(f.len(), 8);
        assert!(f.contains(&"tandem/v1/b/arbiter/cmd".to_string()));
    }
}
