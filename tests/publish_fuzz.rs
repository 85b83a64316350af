//! Property tests: `parse_inbound` never panics, whatever arrives on any subscribed topic, and its
//! answers are consistent (an accepted message belongs to the topic's table; a rejection can always
//! be turned into a valid `error` event).

use proptest::prelude::*;
use serde_json::Value;
use tandem_monitor::publish::{
    EventMeta, Inbound, InboundError, TableId, parse_inbound, parse_inbound_for,
    parse_inbound_message,
};

/// Every topic shape the daemon subscribes to, plus near misses.
fn topics() -> impl Strategy<Value = String> {
    let table = prop_oneof![
        Just("t1".to_string()),
        Just("table-07".to_string()),
        Just("daemon".to_string()),
        Just(String::new()),
        "[a-z0-9+#ä-]{0,70}",
    ];
    let board = prop_oneof![Just("A"), Just("B"), Just("C"), Just("a"), Just("")];
    let kind = prop_oneof![
        Just("press"),
        Just("flag"),
        Just("time"),
        Just("cmd"),
        Just("x")
    ];
    prop_oneof![
        4 => (table.clone(), board, kind)
            .prop_map(|(t, b, k)| format!("tandem/v1/{t}/clock/{b}/{k}")),
        2 => table.clone().prop_map(|t| format!("tandem/v1/{t}/arbiter/cmd")),
        1 => "[ -~]{0,40}",
    ]
}

/// Valid payloads of every inbound kind, to be mutated.
const VALID: &[&str] = &[
    r#"{"side":"white","ts":1200,"white_ms":299000,"black_ms":300000,"seq":3}"#,
    r#"{"side":"black","ts":5,"table":"t1","board":"A"}"#,
    r#"{"white_ms":1000,"black_ms":2000,"running":"white","ts":9}"#,
    r#"{"cmd":"start","rules":"tandem-2024","game_id":"g1","id":"c1","ts":3,"by":"Anna"}"#,
    r#"{"cmd":"reset"}"#,
    r#"{"cmd":"set_rules","rules":"dsb"}"#,
    r#"{"cmd":"ack_alert","alert_id":"e17"}"#,
    r#"{"cmd":"claim","board":"B","side":"black","claim":"illegal_move","event_id":"e9"}"#,
    r#"{"cmd":"correct_position","fen":"rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1 | rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1"}"#,
    r#"{"cmd":"resign","board":"A","side":"white"}"#,
    r#"{"cmd":"agree_draw","table":"t1"}"#,
];

#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Insert(usize, u8),
    Delete(usize),
    Truncate(usize),
}

fn mutated() -> impl Strategy<Value = Vec<u8>> {
    let mutation = prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        any::<usize>().prop_map(Mutation::Delete),
        any::<usize>().prop_map(Mutation::Truncate),
    ];
    (
        prop::sample::select(VALID),
        prop::collection::vec(mutation, 0..6),
    )
        .prop_map(|(base, mutations)| {
            let mut bytes = base.as_bytes().to_vec();
            for m in mutations {
                let len = bytes.len().max(1);
                match m {
                    Mutation::Flip(i, b) if !bytes.is_empty() => bytes[i % len] ^= b,
                    Mutation::Insert(i, b) => bytes.insert(i % (bytes.len() + 1), b),
                    Mutation::Delete(i) if !bytes.is_empty() => {
                        bytes.remove(i % len);
                    }
                    Mutation::Truncate(i) => bytes.truncate(i % (bytes.len() + 1)),
                    _ => {}
                }
            }
            bytes
        })
}

/// Structurally random JSON using the payload field names, so that deep paths get exercised.
fn json_value() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("cmd"),
        Just("side"),
        Just("ts"),
        Just("white_ms"),
        Just("black_ms"),
        Just("running"),
        Just("table"),
        Just("board"),
        Just("rules"),
        Just("fen"),
        Just("claim"),
        Just("alert_id"),
        Just("seq"),
        Just("x"),
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        prop_oneof![
            Just("white".to_string()),
            Just("black".to_string()),
            Just("A".to_string()),
            Just("t1".to_string()),
            Just("claim".to_string()),
            Just("start".to_string()),
            Just("correct_position".to_string()),
            Just(" | ".to_string()),
            ".{0,12}",
        ]
        .prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(key.clone().prop_map(str::to_string), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn check(topic: &str, bytes: &[u8]) {
    // The broker-facing entry point agrees with parse_inbound for live messages and only adds
    // refusals for retained ones.
    let live = parse_inbound_message(&[], topic, bytes, false);
    assert_eq!(live.is_ok(), parse_inbound(topic, bytes).is_ok());
    if let Err(e) = parse_inbound_message(&[], topic, bytes, true)
        && live.is_ok()
    {
        assert_eq!(e.code(), "retained_input");
    }
    match parse_inbound(topic, bytes) {
        Ok(inbound) => {
            let table = InboundError::table_in_topic(topic).expect("accepted topic has a table");
            assert_eq!(inbound.table(), &table);
            if let Inbound::Clock { .. } = inbound {
                assert!(topic.contains("/clock/"));
            }
            // Restricting to the topic's own table accepts it too; another table rejects it.
            assert!(parse_inbound_for(std::slice::from_ref(&table), topic, bytes).is_ok());
            let other = TableId::new("some-other-table").unwrap();
            assert!(matches!(
                parse_inbound_for(&[other], topic, bytes),
                Err(InboundError::UnknownTable { .. })
            ));
        }
        Err(error) => {
            assert!(!error.code().is_empty());
            assert!(!error.to_string().is_empty());
            if let Some(table) = InboundError::table_in_topic(topic) {
                let event = error.error_event("err-1", &table, topic, 1);
                EventMeta::from_event(&event).expect("error events satisfy the event contract");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(topic in topics(), bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        check(&topic, &bytes);
    }

    #[test]
    fn mutated_valid_payloads_never_panic(topic in topics(), bytes in mutated()) {
        check(&topic, &bytes);
    }

    #[test]
    fn random_json_never_panics(topic in topics(), value in json_value()) {
        check(&topic, value.to_string().as_bytes());
    }
}

#[test]
fn every_valid_sample_is_accepted_on_its_topic() {
    // The mutation seeds themselves must be valid, or the mutation test explores only garbage.
    for body in VALID {
        let topic = if body.contains("\"cmd\"") {
            "tandem/v1/t1/arbiter/cmd"
        } else if body.contains("white_ms\":1000") {
            "tandem/v1/t1/clock/A/time"
        } else {
            "tandem/v1/t1/clock/A/press"
        };
        let topic = if body.contains("\"black\",\"ts\":5") {
            "tandem/v1/t1/clock/A/flag"
        } else {
            topic
        };
        parse_inbound(topic, body.as_bytes()).unwrap_or_else(|e| panic!("{body} on {topic}: {e}"));
    }
}
