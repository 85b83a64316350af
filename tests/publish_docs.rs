//! Keeps `docs/mqtt.md` and `docs/schemas/*.json` true: every example in the doc is valid under its
//! schema and accepted by the Rust types on its topic, and payloads the Rust types reject are
//! rejected by the schemas too.
//!
//! The validator below implements the JSON Schema subset the schema files use (`type`, `required`,
//! `properties`, `enum`, `const`, `oneOf`, `minimum`, `minLength`, `maxLength`); a schema using
//! anything else fails the test, so the subset cannot silently drift.

use std::path::{Path, PathBuf};

use serde_json::Value;
use tandem_monitor::publish::{ClockCommand, EventMeta, StatusPayload, parse_inbound};

const KNOWN_KEYWORDS: &[&str] = &[
    "$schema",
    "$id",
    "title",
    "description",
    "type",
    "required",
    "properties",
    "enum",
    "const",
    "oneOf",
    "minimum",
    "minLength",
    "maxLength",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn load_schema(name: &str) -> Value {
    let path = root().join("docs/schemas").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn type_matches(ty: &str, v: &Value) -> bool {
    match ty {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        other => panic!("unsupported type {other}"),
    }
}

/// Errors of `v` under `schema` (empty = valid).
fn validate(schema: &Value, v: &Value, at: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let Some(s) = schema.as_object() else {
        panic!("schema at {at} is not an object");
    };
    for key in s.keys() {
        assert!(
            KNOWN_KEYWORDS.contains(&key.as_str()),
            "schema keyword {key} at {at} is outside the supported subset"
        );
    }
    if let Some(ty) = s.get("type") {
        let ok = match ty {
            Value::String(t) => type_matches(t, v),
            Value::Array(ts) => ts.iter().any(|t| type_matches(t.as_str().unwrap(), v)),
            _ => panic!("bad type at {at}"),
        };
        if !ok {
            errors.push(format!("{at}: not of type {ty}"));
            return errors;
        }
    }
    if let Some(values) = s.get("enum").and_then(Value::as_array)
        && !values.contains(v)
    {
        errors.push(format!("{at}: {v} not in {values:?}"));
    }
    if let Some(c) = s.get("const")
        && c != v
    {
        errors.push(format!("{at}: {v} != {c}"));
    }
    if let Some(min) = s.get("minimum").and_then(Value::as_f64)
        && v.as_f64().is_some_and(|x| x < min)
    {
        errors.push(format!("{at}: {v} < {min}"));
    }
    if let Some(text) = v.as_str() {
        let len = text.chars().count() as u64;
        if s.get("minLength")
            .and_then(Value::as_u64)
            .is_some_and(|m| len < m)
        {
            errors.push(format!("{at}: too short"));
        }
        if s.get("maxLength")
            .and_then(Value::as_u64)
            .is_some_and(|m| len > m)
        {
            errors.push(format!("{at}: too long"));
        }
    }
    if let Some(object) = v.as_object() {
        for field in s
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let field = field.as_str().unwrap();
            if !object.contains_key(field) {
                errors.push(format!("{at}: missing {field}"));
            }
        }
        if let Some(props) = s.get("properties").and_then(Value::as_object) {
            for (name, sub) in props {
                if let Some(value) = object.get(name) {
                    errors.extend(validate(sub, value, &format!("{at}/{name}")));
                }
            }
        }
    }
    if let Some(branches) = s.get("oneOf").and_then(Value::as_array) {
        let passing = branches
            .iter()
            .enumerate()
            .filter(|(i, b)| validate(b, v, &format!("{at}/oneOf/{i}")).is_empty())
            .count();
        if passing != 1 {
            errors.push(format!(
                "{at}: {passing} oneOf branches match, need exactly 1"
            ));
        }
    }
    errors
}

/// Checks `payload` on `topic` with the Rust types the daemon uses for that schema.
fn accepted_by_rust(schema: &str, topic: &str, payload: &Value) -> Result<(), String> {
    match schema {
        "event.json" | "error-event.json" => {
            let meta = EventMeta::from_event(payload).map_err(|e| e.to_string())?;
            let expected = format!("tandem/v1/{}/event/{}", meta.table, meta.event_type);
            if expected != topic {
                return Err(format!(
                    "event belongs on {expected}, documented on {topic}"
                ));
            }
            Ok(())
        }
        "status.json" => serde_json::from_value::<StatusPayload>(payload.clone())
            .map(|_| ())
            .map_err(|e| e.to_string()),
        "clock-command.json" => {
            let c = serde_json::from_value::<ClockCommand>(payload.clone())
                .map_err(|e| e.to_string())?;
            let expected = format!("tandem/v1/{}/clock/{}/cmd", c.table, c.board);
            if expected != topic {
                return Err(format!(
                    "command belongs on {expected}, documented on {topic}"
                ));
            }
            Ok(())
        }
        "state.json" => payload
            .is_object()
            .then_some(())
            .ok_or_else(|| "state is not an object".to_string()),
        _ => parse_inbound(topic, payload.to_string().as_bytes())
            .map(|_| ())
            .map_err(|e| e.to_string()),
    }
}

struct Example {
    schema: String,
    topic: String,
    payload: Value,
}

fn doc_examples(doc: &Path) -> Vec<Example> {
    let text = std::fs::read_to_string(doc).unwrap();
    let mut examples = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(spec) = line
            .strip_prefix("<!-- example:")
            .and_then(|l| l.strip_suffix("-->"))
        else {
            continue;
        };
        let field = |key: &str| {
            spec.split_whitespace()
                .find_map(|kv| kv.strip_prefix(&format!("{key}=")))
                .unwrap_or_else(|| panic!("example marker without {key}: {line}"))
                .to_string()
        };
        assert_eq!(
            lines.next(),
            Some("```json"),
            "marker not followed by a json block: {line}"
        );
        let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        let payload = serde_json::from_str(&body.join("\n"))
            .unwrap_or_else(|e| panic!("example after {line} is not JSON: {e}"));
        examples.push(Example {
            schema: field("schema"),
            topic: field("topic"),
            payload,
        });
    }
    examples
}

#[test]
fn every_doc_example_is_valid_under_its_schema_and_the_rust_types() {
    let examples = doc_examples(&root().join("docs/mqtt.md"));
    assert!(
        examples.len() >= 15,
        "only {} examples found",
        examples.len()
    );
    let schemas: Vec<String> = std::fs::read_dir(root().join("docs/schemas"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    for schema in &schemas {
        assert!(
            examples.iter().any(|e| &e.schema == schema),
            "docs/mqtt.md has no example for {schema}"
        );
    }
    for ex in &examples {
        let errors = validate(&load_schema(&ex.schema), &ex.payload, &ex.schema);
        assert!(
            errors.is_empty(),
            "{} on {}: {errors:?}",
            ex.payload,
            ex.topic
        );
        accepted_by_rust(&ex.schema, &ex.topic, &ex.payload)
            .unwrap_or_else(|e| panic!("{} on {}: {e}", ex.payload, ex.topic));
    }
}

#[test]
fn schemas_and_rust_types_reject_the_same_bad_payloads() {
    let bad: &[(&str, &str, &str)] = &[
        (
            "clock-press.json",
            "tandem/v1/t1/clock/A/press",
            r#"{"side":"red","ts":1}"#,
        ),
        (
            "clock-press.json",
            "tandem/v1/t1/clock/A/press",
            r#"{"ts":1}"#,
        ),
        (
            "clock-press.json",
            "tandem/v1/t1/clock/A/press",
            r#"{"side":"white","ts":-5}"#,
        ),
        (
            "clock-flag.json",
            "tandem/v1/t1/clock/A/flag",
            r#"{"side":"white","ts":"1"}"#,
        ),
        (
            "clock-time.json",
            "tandem/v1/t1/clock/A/time",
            r#"{"white_ms":1,"ts":1}"#,
        ),
        (
            "clock-time.json",
            "tandem/v1/t1/clock/A/time",
            r#"{"white_ms":1,"black_ms":2,"ts":1,"running":"both"}"#,
        ),
        (
            "arbiter-command.json",
            "tandem/v1/t1/arbiter/cmd",
            r#"{"cmd":"dance"}"#,
        ),
        (
            "arbiter-command.json",
            "tandem/v1/t1/arbiter/cmd",
            r#"{"cmd":"set_rules"}"#,
        ),
        (
            "arbiter-command.json",
            "tandem/v1/t1/arbiter/cmd",
            r#"{"cmd":"claim","board":"A","side":"white","claim":"boredom"}"#,
        ),
        (
            "arbiter-command.json",
            "tandem/v1/t1/arbiter/cmd",
            r#"{"cmd":"resign","board":"C","side":"white"}"#,
        ),
        (
            "arbiter-command.json",
            "tandem/v1/t1/arbiter/cmd",
            r#"{"cmd":"ack_alert","alert_id":""}"#,
        ),
        (
            "status.json",
            "tandem/v1/t1/status",
            r#"{"status":"sleeping","daemon":"d","ts":1}"#,
        ),
        (
            "clock-command.json",
            "tandem/v1/t1/clock/A/cmd",
            r#"{"cmd":"explode","id":"x","table":"t1","board":"A","ts":1}"#,
        ),
        (
            "event.json",
            "tandem/v1/t1/event/move",
            r#"{"id":"e","type":"move","table":"t1","ts":1,"board":"C"}"#,
        ),
        (
            "event.json",
            "tandem/v1/t1/event/move",
            r#"{"type":"move","table":"t1","ts":1}"#,
        ),
    ];
    for (schema, topic, body) in bad {
        let payload: Value = serde_json::from_str(body).unwrap();
        assert!(
            !validate(&load_schema(schema), &payload, schema).is_empty(),
            "schema {schema} accepts {body}"
        );
        assert!(
            accepted_by_rust(schema, topic, &payload).is_err(),
            "Rust types accept {body} on {topic}"
        );
    }
}
