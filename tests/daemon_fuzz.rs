//! Property tests: whatever arrives on the daemon's subscribed topics, the input path
//! (parse → table input → referee) never panics, and every event it makes has the next id.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use serde_json::{Value, json};
use tandem_monitor::daemon::{TableInput, TableRuntime, TableSpec};
use tandem_monitor::publish::{TableId, parse_inbound_message};

const TOPICS: [&str; 7] = [
    "tandem/v1/t1/arbiter/cmd",
    "tandem/v1/t1/clock/A/press",
    "tandem/v1/t1/clock/B/press",
    "tandem/v1/t1/clock/A/flag",
    "tandem/v1/t1/clock/B/time",
    "tandem/v1/t2/arbiter/cmd",
    "tandem/v1/t1/clock/C/press",
];

fn spec() -> TableSpec {
    TableSpec {
        id: "t1".into(),
        rules: "tandem-2024".into(),
        boards: ["A".into(), "B".into()],
        start: None,
        calibration: None,
    }
}

fn word() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!("A")),
        Just(json!("B")),
        Just(json!("white")),
        Just(json!("black")),
        Just(json!("fics")),
        Just(json!("dsb")),
        Just(json!("illegal_move")),
        Just(json!("flag")),
        Just(json!("mate")),
        Just(json!("t1/1/1")),
        Just(json!(
            "8/8/8/8/8/8/8/8[] w - - 0 1 | 8/8/8/8/8/8/8/8[] w - - 0 1"
        )),
        Just(json!(null)),
        any::<u64>().prop_map(|n| json!(n)),
        "[a-z0-9/ |]{0,12}".prop_map(|s| json!(s)),
    ]
}

/// Valid inputs, each with its natural topic index.
fn templates() -> Vec<(usize, Value)> {
    vec![
        (0, json!({"cmd": "start"})),
        (0, json!({"cmd": "reset", "rules": "fics"})),
        (0, json!({"cmd": "set_rules", "rules": "dsb"})),
        (0, json!({"cmd": "ack_alert", "alert_id": "t1/1/1"})),
        (
            0,
            json!({"cmd": "claim", "board": "A", "side": "white", "claim": "illegal_move"}),
        ),
        (
            0,
            json!({"cmd": "claim", "board": "B", "side": "black", "claim": "flag"}),
        ),
        (
            0,
            json!({"cmd": "correct_position", "fen": "8/8/8/8/8/8/8/8[] w - - 0 1 | 8/8/8/8/8/8/8/8[] w - - 0 1"}),
        ),
        (0, json!({"cmd": "resign", "board": "B", "side": "black"})),
        (0, json!({"cmd": "agree_draw"})),
        (1, json!({"side": "white", "ts": 100, "seq": 1})),
        (2, json!({"side": "black", "ts": 200, "white_ms": 1000})),
        (3, json!({"side": "white", "ts": 300})),
        (
            4,
            json!({"white_ms": 1, "black_ms": 2, "ts": 3, "running": "white"}),
        ),
    ]
}

/// (topic, payload): mostly real inputs with a few fields replaced by random values (so the
/// referee paths are reached), sometimes on the wrong topic, sometimes random bytes.
fn message() -> impl Strategy<Value = (usize, Vec<u8>)> {
    let keys = prop_oneof![
        Just("cmd"),
        Just("board"),
        Just("side"),
        Just("claim"),
        Just("rules"),
        Just("alert_id"),
        Just("fen"),
        Just("ts"),
        Just("seq"),
        Just("white_ms"),
        Just("table"),
    ];
    let shaped = (
        0..templates().len(),
        prop::collection::vec((keys, word()), 0..3),
        prop::option::weighted(0.2, 0..TOPICS.len()),
    )
        .prop_map(|(i, changes, topic)| {
            let (natural, mut value) = templates().swap_remove(i);
            for (k, v) in changes {
                value[k] = v;
            }
            (topic.unwrap_or(natural), value.to_string().into_bytes())
        });
    let noise = (0..TOPICS.len(), prop::collection::vec(any::<u8>(), 0..64));
    prop_oneof![4 => shaped, 1 => noise]
}

#[test]
fn generator_reaches_the_referee() {
    // Runs the property itself with a fixed seed count and checks inputs got through.
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = prop::collection::vec((message(), any::<bool>()), 1..24);
    let tables = [TableId::new("t1").unwrap()];
    let mut reached = 0;
    for _ in 0..64 {
        let inputs = strategy.new_tree(&mut runner).unwrap().current();
        for ((topic, bytes), retained) in inputs {
            if let Ok(inbound) = parse_inbound_message(&tables, TOPICS[topic], &bytes, retained)
                && TableInput::from_inbound(&inbound).is_some()
            {
                reached += 1;
            }
        }
    }
    // 64 sequences of ~12 messages: well over a hundred should be usable inputs.
    assert!(reached >= 100, "only {reached} generated inputs parse");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn any_input_sequence_is_handled(
        inputs in prop::collection::vec((message(), prop::bool::weighted(0.1)), 1..24)
    ) {
        let tables = [TableId::new("t1").unwrap()];
        let mut table = TableRuntime::new(&spec()).unwrap();
        let mut last = (table.game(), 0u64);
        for ((topic, bytes), retained) in inputs {
            let Ok(inbound) = parse_inbound_message(&tables, TOPICS[topic], &bytes, retained) else {
                continue;
            };
            let Some(input) = TableInput::from_inbound(&inbound) else { continue };
            if !table.accepts(&input) {
                continue;
            }
            let outcome = table.process(&input);
            for event in &outcome.events {
                if table.game() != last.0 {
                    last = (table.game(), 0);
                }
                last.1 += 1;
                prop_assert_eq!(&event.id, &format!("t1/{}/{}", last.0, last.1));
            }
            let state = table.state();
            prop_assert_eq!(&state["game"], &json!(table.game()));
        }
    }
}
