//! Broadcast configuration: where the feed is served and what the games' tags say.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

use crate::engine::bpgn::BpgnGame;

use super::BroadcastError;

/// The `[broadcast]` section of the daemon's TOML. Every field has a default, so an empty section
/// serves on `127.0.0.1:8080` with `?` tags.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BroadcastConfig {
    /// Address the HTTP server binds; port 0 picks a free port (tests).
    pub listen: SocketAddr,
    /// `Event` tag of every game.
    pub event: String,
    /// `Site` tag of every game.
    pub site: String,
    /// `Date` tag (`YYYY.MM.DD`); `None` means the UTC date when the server starts.
    pub date: Option<String>,
    /// `Round` tag; `None` leaves it out.
    pub round: Option<String>,
    /// `TimeControl` tag as `base+increment` seconds (`300+0`); `None` writes `-`.
    pub time_control: Option<String>,
    /// Events kept per table for server-sent-event clients resuming with `Last-Event-ID`.
    pub backlog: usize,
    /// Tables in the order the round files list them (the order never depends on arrival).
    pub tables: Vec<TableConfig>,
}

impl Default for BroadcastConfig {
    fn default() -> Self {
        BroadcastConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            event: "?".into(),
            site: "?".into(),
            date: None,
            round: None,
            time_control: None,
            backlog: 1024,
            tables: Vec::new(),
        }
    }
}

impl BroadcastConfig {
    /// Reads the configuration from TOML text holding the fields at the top level.
    pub fn from_toml_str(text: &str) -> Result<Self, BroadcastError> {
        toml::from_str(text).map_err(|e| BroadcastError::Config(e.to_string()))
    }

    /// The tags of a game at `table`: the round-wide fields plus the table's players.
    pub fn game_info(&self, table: &str) -> GameInfo {
        let players = self.tables.iter().find(|t| t.id == table);
        let name = |f: fn(&TableConfig) -> &Option<String>| {
            players
                .and_then(|t| f(t).clone())
                .unwrap_or_else(|| "?".into())
        };
        GameInfo {
            event: self.event.clone(),
            site: self.site.clone(),
            date: self.date.clone().unwrap_or_else(today_utc),
            round: self.round.clone(),
            white_a: name(|t| &t.white_a),
            black_a: name(|t| &t.black_a),
            white_b: name(|t| &t.white_b),
            black_b: name(|t| &t.black_b),
            time_control: self.time_control.clone(),
            start_fen: None,
        }
    }
}

/// One table of the round and its four players (names may be left out: `?`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TableConfig {
    /// The table id used in events and URLs (`t1`).
    pub id: String,
    pub white_a: Option<String>,
    pub black_a: Option<String>,
    pub white_b: Option<String>,
    pub black_b: Option<String>,
}

/// The tag values of one live game; they are fixed when the game starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GameInfo {
    pub event: String,
    pub site: String,
    pub date: String,
    pub round: Option<String>,
    pub white_a: String,
    pub black_a: String,
    pub white_b: String,
    pub black_b: String,
    pub time_control: Option<String>,
    /// Table FEN (`<A> | <B>`) when the game does not start from the initial position.
    pub start_fen: Option<String>,
}

impl Default for GameInfo {
    fn default() -> Self {
        GameInfo {
            event: "?".into(),
            site: "?".into(),
            date: "????.??.??".into(),
            round: None,
            white_a: "?".into(),
            black_a: "?".into(),
            white_b: "?".into(),
            black_b: "?".into(),
            time_control: None,
            start_fen: None,
        }
    }
}

impl GameInfo {
    /// The tags of a recorded game (for replaying a BPGN file into the feed); absent tags are `?`.
    pub fn from_bpgn(game: &BpgnGame) -> Self {
        let tag = |name: &str| game.tag(name).map(str::to_string);
        let or_unknown = |name: &str| tag(name).unwrap_or_else(|| "?".into());
        GameInfo {
            event: or_unknown("Event"),
            site: or_unknown("Site"),
            date: tag("Date").unwrap_or_else(|| "????.??.??".into()),
            round: tag("Round"),
            white_a: or_unknown("WhiteA"),
            black_a: or_unknown("BlackA"),
            white_b: or_unknown("WhiteB"),
            black_b: or_unknown("BlackB"),
            time_control: tag("TimeControl"),
            start_fen: tag("FEN"),
        }
    }

    /// The tag pairs in the order the feed writes them (the Result tag last).
    pub(crate) fn tags(&self, result: &str) -> Vec<(String, String)> {
        let mut tags = vec![
            ("Event".to_string(), self.event.clone()),
            ("Site".to_string(), self.site.clone()),
            ("Date".to_string(), self.date.clone()),
        ];
        if let Some(round) = &self.round {
            tags.push(("Round".into(), round.clone()));
        }
        tags.extend([
            ("WhiteA".to_string(), self.white_a.clone()),
            ("BlackA".to_string(), self.black_a.clone()),
            ("WhiteB".to_string(), self.white_b.clone()),
            ("BlackB".to_string(), self.black_b.clone()),
            (
                "TimeControl".to_string(),
                self.time_control.clone().unwrap_or_else(|| "-".into()),
            ),
        ]);
        if let Some(fen) = &self.start_fen {
            tags.push(("SetUp".into(), "1".into()));
            tags.push(("FEN".into(), fen.clone()));
        }
        tags.push(("Result".into(), result.to_string()));
        tags
    }
}

/// Today's date in UTC as `YYYY.MM.DD` (days since the epoch to the civil calendar).
pub fn today_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    civil_date((secs / 86_400) as i64)
}

/// The proleptic Gregorian date of a day count from 1970-01-01, as `YYYY.MM.DD`.
fn civil_date(days: i64) -> String {
    // Shift to an era starting on 0000-03-01 so that leap days fall at the end of a year.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}.{month:02}.{day:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_example_parses() {
        let doc = include_str!("../../docs/broadcast.md");
        let start = doc
            .find("```toml\n")
            .expect("docs/broadcast.md has a TOML example")
            + 8;
        let end = start + doc[start..].find("```").expect("the example is closed");
        let config = BroadcastConfig::from_toml_str(&doc[start..end]).unwrap();
        assert_eq!(config.tables.len(), 1);
        assert_eq!(config.game_info("t1").black_b, "Dan");
        assert_eq!(config.round.as_deref(), Some("3"));
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_date(0), "1970.01.01");
        assert_eq!(civil_date(59), "1970.03.01");
        assert_eq!(civil_date(11_016), "2000.02.29");
        assert_eq!(civil_date(20_787), "2026.11.30");
        assert_eq!(civil_date(-1), "1969.12.31");
    }

    #[test]
    fn toml_with_defaults_and_players() {
        let config = BroadcastConfig::from_toml_str(
            r#"
            listen = "127.0.0.1:0"
            event = "Club night"
            date = "2026.11.30"
            [[tables]]
            id = "t2"
            white_a = "Ann"
            black_b = "Dan"
            "#,
        )
        .unwrap();
        assert_eq!(config.listen.port(), 0);
        assert_eq!(config.backlog, 1024);
        let info = config.game_info("t2");
        assert_eq!((info.white_a.as_str(), info.black_a.as_str()), ("Ann", "?"));
        assert_eq!(info.black_b, "Dan");
        assert_eq!(config.game_info("t9").white_a, "?");
        let err = BroadcastConfig::from_toml_str("lisen = \"x\"").unwrap_err();
        assert!(err.to_string().contains("lisen"), "{err}");
        assert_eq!(
            BroadcastConfig::from_toml_str("").unwrap(),
            BroadcastConfig::default()
        );
    }
}
