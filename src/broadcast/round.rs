//! The round: every table's live game, in a fixed order, as one file per format.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use crate::engine::BoardId;
use crate::rules::Event;

use super::BroadcastError;
use super::config::BroadcastConfig;
use super::live::{LiveGame, Rendered};

/// All live games of a round.
///
/// Invariant: the game order is the configured table order, then tables that are not configured
/// sorted by id; it never depends on which table sent an event first, so a poller's game K stays
/// the same table all round.
#[derive(Debug)]
pub struct Round {
    config: BroadcastConfig,
    configured: Vec<String>,
    games: BTreeMap<String, LiveGame>,
    version: u64,
    cache: RoundCache,
}

#[derive(Debug, Default)]
struct RoundCache {
    bpgn: OnceLock<Rendered>,
    pgn: [OnceLock<Rendered>; 2],
}

impl Round {
    /// A round with an empty game for every configured table (so their URLs answer at once). The
    /// `Date` tag is fixed now if the configuration leaves it open.
    pub fn from_config(config: &BroadcastConfig) -> Self {
        let mut config = config.clone();
        if config.date.is_none() {
            config.date = Some(super::config::today_utc());
        }
        let mut configured = Vec::new();
        let mut games = BTreeMap::new();
        for table in &config.tables {
            if games.contains_key(&table.id) {
                continue;
            }
            configured.push(table.id.clone());
            games.insert(
                table.id.clone(),
                LiveGame::new(&table.id, config.game_info(&table.id)),
            );
        }
        Round {
            config,
            configured,
            games,
            version: 0,
            cache: RoundCache::default(),
        }
    }

    /// Puts `game` at its table, replacing what was there (a replay brings its own tags).
    pub fn insert_game(&mut self, game: LiveGame) {
        self.games.insert(game.table().to_string(), game);
        self.changed();
    }

    /// Applies an event to its table's game. A table seen for the first time gets a game with
    /// the configured tags; an event of a later game number starts that game afresh (the next
    /// game at the table), an earlier one is refused as stale.
    pub fn publish(&mut self, event: &Event) -> Result<bool, BroadcastError> {
        let info = self.config.game_info(&event.table);
        let game = self
            .games
            .entry(event.table.clone())
            .or_insert_with(|| LiveGame::new(&event.table, info));
        let changed = match game.apply(event) {
            Err(BroadcastError::OtherGame { expected, got, .. }) if got > expected => {
                let mut fresh = LiveGame::new(&event.table, game.info().clone());
                fresh.apply(event)?;
                *game = fresh;
                true
            }
            other => other?,
        };
        if changed {
            self.changed();
        }
        Ok(changed)
    }

    fn changed(&mut self) {
        self.version += 1;
        self.cache = RoundCache::default();
    }

    /// The table ids in round order.
    pub fn tables(&self) -> Vec<&str> {
        let mut order: Vec<&str> = self
            .configured
            .iter()
            .map(String::as_str)
            .filter(|t| self.games.contains_key(*t))
            .collect();
        order.extend(
            self.games
                .keys()
                .map(String::as_str)
                .filter(|t| !self.configured.iter().any(|c| c == t)),
        );
        order
    }

    /// The game at `table`, if the table is configured or has sent an event.
    pub fn game(&self, table: &str) -> Option<&LiveGame> {
        self.games.get(table)
    }

    /// The games in round order.
    pub fn games(&self) -> impl Iterator<Item = &LiveGame> {
        self.tables().into_iter().filter_map(|t| self.games.get(t))
    }

    /// Counts the changes to any game of the round.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The latest change of any game (the round file's `Last-Modified`).
    pub fn modified(&self) -> SystemTime {
        self.games
            .values()
            .map(LiveGame::modified)
            .max()
            .unwrap_or(SystemTime::UNIX_EPOCH)
    }

    /// Every game as BPGN, in round order, separated by blank lines.
    pub fn bpgn(&self) -> Arc<str> {
        self.rendered_bpgn().text.clone()
    }

    /// Every game's `board` as PGN, in round order, separated by blank lines.
    pub fn board_pgn(&self, board: BoardId) -> Arc<str> {
        self.rendered_pgn(board).text.clone()
    }

    pub(crate) fn rendered_bpgn(&self) -> &Rendered {
        self.cache
            .bpgn
            .get_or_init(|| join(self.games().map(|g| &g.rendered_bpgn().text)))
    }

    pub(crate) fn rendered_pgn(&self, board: BoardId) -> &Rendered {
        self.cache.pgn[board.index()]
            .get_or_init(|| join(self.games().map(|g| &g.rendered_pgn(board).text)))
    }
}

fn join<'a>(texts: impl Iterator<Item = &'a Arc<str>>) -> Rendered {
    let mut out = String::new();
    for text in texts {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(text);
    }
    Rendered::new(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::broadcast::config::TableConfig;
    use crate::engine::bpgn::parse_bpgn;
    use crate::rules::{Referee, RuleSet};

    fn config(ids: &[&str]) -> BroadcastConfig {
        BroadcastConfig {
            date: Some("2026.11.30".into()),
            tables: ids
                .iter()
                .map(|id| TableConfig {
                    id: id.to_string(),
                    white_a: Some(format!("{id}-wa")),
                    ..TableConfig::default()
                })
                .collect(),
            ..BroadcastConfig::default()
        }
    }

    fn first_move(table: &str, game: u32, san: &str) -> Vec<Event> {
        let mut r = Referee::new(table, game, RuleSet::fics(), None).unwrap();
        r.apply_move_with_clock(BoardId::A, san, Some(500), Some(119_000))
    }

    #[test]
    fn order_is_configured_never_arrival() {
        let mut round = Round::from_config(&config(&["t3", "t1", "t2"]));
        for (table, san) in [("t2", "d4"), ("zz", "c4"), ("t1", "e4"), ("aa", "b3")] {
            for e in first_move(table, 1, san) {
                assert!(round.publish(&e).unwrap());
            }
        }
        assert_eq!(round.tables(), ["t3", "t1", "t2", "aa", "zz"]);
        let games = parse_bpgn(round.bpgn().as_bytes()).unwrap();
        let white_a: Vec<_> = games.iter().map(|g| g.tag("WhiteA").unwrap()).collect();
        assert_eq!(white_a, ["t3-wa", "t1-wa", "t2-wa", "?", "?"]);
        let first: Vec<_> = games
            .iter()
            .map(|g| g.moves.first().map(|m| m.san.as_str()))
            .collect();
        assert_eq!(
            first,
            [None, Some("e4"), Some("d4"), Some("b3"), Some("c4")]
        );
        let pgn_a = round.board_pgn(BoardId::A);
        assert_eq!(pgn_a.matches("[Event ").count(), 5);
        assert!(pgn_a.find("1. e4").unwrap() < pgn_a.find("1. d4").unwrap());
    }

    #[test]
    fn a_new_game_number_replaces_the_table_game_and_an_old_one_is_refused() {
        let mut round = Round::from_config(&config(&["t1"]));
        for e in first_move("t1", 1, "e4") {
            round.publish(&e).unwrap();
        }
        let before = round.bpgn();
        for e in first_move("t1", 2, "d4") {
            round.publish(&e).unwrap();
        }
        let after = round.bpgn();
        assert_ne!(before, after);
        assert!(
            after.contains("1A. d4") && !after.contains("1A. e4"),
            "{after}"
        );
        assert_eq!(round.game("t1").unwrap().game_number(), Some(2));
        let stale = first_move("t1", 1, "c4");
        assert!(matches!(
            round.publish(&stale[0]),
            Err(BroadcastError::OtherGame { .. })
        ));
        assert_eq!(round.tables(), ["t1"]);
    }
}
