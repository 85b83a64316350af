//! Publishing over MQTT: the topic tree, payloads, the persistent outbox, the rumqttc client and
//! the embedded rumqttd broker (issue 7; protocol reference in `docs/mqtt.md`).
//!
//! Events arrive as `serde_json::Value` objects from the referee (`id`, `type`, `table`, `ts`,
//! usually `board`); this module depends on no other module's Rust types. The guarantee it gives:
//! an event accepted by [`Publisher::publish_event`] is on disk and is delivered at least once,
//! across broker restarts and a `kill -9` of the daemon; receivers deduplicate by `id`.

pub mod broker;
pub mod client;
pub mod outbox;
pub mod payloads;
pub mod topics;

pub use broker::{BrokerError, EmbeddedBroker};
pub use client::{InboundMessage, MqttConfig, PublishError, Publisher, PublisherStats, TlsConfig};
pub use outbox::{FsyncPolicy, Outbox, OutboxConfig, OutboxEntry, OutboxError, RecoveryReport};
pub use payloads::{
    ArbiterCommand, ArbiterMessage, ClaimKind, ClockCommand, ClockCommandKind, ClockFlag,
    ClockInput, ClockPress, ClockTime, EventError, EventMeta, Inbound, InboundError, Presence,
    Side, StatusPayload, parse_inbound, parse_inbound_for, parse_inbound_message,
};
pub use topics::{Board, ClockInputKind, DaemonId, TableId, TopicError};
