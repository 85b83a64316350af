//! The on-disk record format of `log.jsonl`.
//!
//! One record per line: a JSON object `{"seq":N,"kind":K,"ts":T,"prev":H,"payload":P}` where `H` is
//! the lowercase hex SHA-256 of the previous line's exact bytes (without its `\n`; 64 zeros for the
//! first record). A signed record appends `,"sig":"<128 hex>"` before the final `}`: the Ed25519
//! signature covers the line with that suffix removed, so checking it needs no re-serialisation.

use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The `prev` of the first record.
pub const GENESIS_PREV: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Bytes of the signature suffix: `,"sig":"` + 128 hex + `"}`.
const SIG_SUFFIX_LEN: usize = 8 + 128 + 2;

/// The kinds of record a log holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    /// First record: table, game, calibration, model hash, software version, rule set, key.
    Meta,
    /// A referee/tracker event, stored verbatim as the payload.
    Event,
    /// A frame file beside the log, with its SHA-256 and what it belongs to.
    Frame,
    /// An incident opened a window of frames from `from_ts` to `to_ts`.
    IncidentWindow,
    /// Frames were skipped because the game directory reached its byte bound.
    FramesDropped,
    /// The writer was restarted on an existing log (after a crash); says what was cut off.
    Resumed,
    /// Last record of a finished game.
    End,
}

impl RecordKind {
    /// The name used in the log.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordKind::Meta => "meta",
            RecordKind::Event => "event",
            RecordKind::Frame => "frame",
            RecordKind::IncidentWindow => "incident_window",
            RecordKind::FramesDropped => "frames_dropped",
            RecordKind::Resumed => "resumed",
            RecordKind::End => "end",
        }
    }
}

#[derive(Serialize)]
struct Body<'a> {
    seq: u64,
    kind: RecordKind,
    ts: i64,
    prev: &'a str,
    payload: &'a Value,
}

/// A record as read back from a log line.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// 0 for `meta`, then +1 per record.
    pub seq: u64,
    /// Record kind (kept as text so that unknown kinds are reported, not rejected).
    pub kind: String,
    /// Time of what the record describes, in ms (event `ts`, frame timestamp, …).
    pub ts: i64,
    /// Hex SHA-256 of the previous line.
    pub prev: String,
    /// Kind-specific content.
    pub payload: Value,
    /// Hex Ed25519 signature of the line without this field, when the table signs.
    #[serde(default)]
    pub sig: Option<String>,
}

/// Encodes one record as a line (without `\n`), signed when a key is given.
pub fn encode(
    seq: u64,
    kind: RecordKind,
    ts: i64,
    prev: &str,
    payload: &Value,
    key: Option<&SigningKey>,
) -> Result<Vec<u8>, serde_json::Error> {
    let mut line = serde_json::to_vec(&Body {
        seq,
        kind,
        ts,
        prev,
        payload,
    })?;
    if let Some(key) = key {
        let sig = key.sign(&line);
        line.pop(); // the closing brace, re-added after the signature
        line.extend_from_slice(b",\"sig\":\"");
        line.extend_from_slice(hex::encode(sig.to_bytes()).as_bytes());
        line.extend_from_slice(b"\"}");
    }
    Ok(line)
}

/// Hex SHA-256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Parses one line into a record.
pub fn decode(line: &[u8]) -> Result<Record, String> {
    serde_json::from_slice(line).map_err(|e| format!("not a valid record: {e}"))
}

/// The outcome of checking a record's signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SigCheck {
    /// The record carries no signature.
    Unsigned,
    /// The signature verifies against the key.
    Valid,
    /// A signature is there but does not verify (or is not where the format puts it).
    Invalid,
}

/// Checks the signature of `line` (whose parsed form is `record`) against `key`.
pub fn check_signature(line: &[u8], record: &Record, key: &VerifyingKey) -> SigCheck {
    let Some(sig_hex) = record.sig.as_deref() else {
        return SigCheck::Unsigned;
    };
    if line.len() < SIG_SUFFIX_LEN + 2 {
        return SigCheck::Invalid;
    }
    let (body, suffix) = line.split_at(line.len() - SIG_SUFFIX_LEN);
    let expected_suffix = format!(",\"sig\":\"{sig_hex}\"}}");
    if suffix != expected_suffix.as_bytes() {
        return SigCheck::Invalid;
    }
    // Only the canonical lowercase form: `hex` also decodes uppercase digits, and a letter's case
    // flipped in the log must not pass as the same signature.
    if sig_hex.bytes().any(|b| b.is_ascii_uppercase()) {
        return SigCheck::Invalid;
    }
    let Ok(sig_bytes) = hex::decode(sig_hex) else {
        return SigCheck::Invalid;
    };
    let Ok(sig) = Signature::from_slice(&sig_bytes) else {
        return SigCheck::Invalid;
    };
    let mut signed = body.to_vec();
    signed.push(b'}');
    if key.verify(&signed, &sig).is_ok() {
        SigCheck::Valid
    } else {
        SigCheck::Invalid
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn encode_decode_round_trip_and_signature() {
        let key = SigningKey::from_bytes(&[7u8; 32]);
        let payload = json!({"id": "e1", "type": "move", "table": "t1", "ts": 5});
        let line = encode(3, RecordKind::Event, 5, GENESIS_PREV, &payload, Some(&key)).unwrap();
        let rec = decode(&line).unwrap();
        assert_eq!(rec.seq, 3);
        assert_eq!(rec.kind, "event");
        assert_eq!(rec.payload, payload);
        assert_eq!(
            check_signature(&line, &rec, &key.verifying_key()),
            SigCheck::Valid
        );
        let other = SigningKey::from_bytes(&[8u8; 32]).verifying_key();
        assert_eq!(check_signature(&line, &rec, &other), SigCheck::Invalid);

        let unsigned = encode(3, RecordKind::Event, 5, GENESIS_PREV, &payload, None).unwrap();
        let rec = decode(&unsigned).unwrap();
        assert_eq!(rec.sig, None);
        assert_eq!(
            check_signature(&unsigned, &rec, &key.verifying_key()),
            SigCheck::Unsigned
        );
    }

    #[test]
    fn signature_breaks_when_body_changes() {
        let key = SigningKey::from_bytes(&[1u8; 32]);
        let payload = json!({"n": 1});
        let mut line = encode(0, RecordKind::Meta, 0, GENESIS_PREV, &payload, Some(&key)).unwrap();
        let pos = line.windows(5).position(|w| w == b"\"n\":1").unwrap() + 4;
        line[pos] = b'2';
        let rec = decode(&line).unwrap();
        assert_eq!(
            check_signature(&line, &rec, &key.verifying_key()),
            SigCheck::Invalid
        );
    }
}
