//! One table's game as the broadcast shows it, built from the referee's events.

use std::str::FromStr;
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use crate::engine::bpgn::{
    BoardPgnOptions, BpgnGame, BpgnMove, GameResult, write_board_pgn, write_bpgn,
};
use crate::engine::{BoardId, Color, Position, Role, Square, UciMove};
use crate::rules::{Event, EventBody, IllegalConsequence, MatchResult};

use super::BroadcastError;
use super::config::GameInfo;

/// The comment a move gets when the camera only guessed it ([`crate::rules::MoveReading`]):
/// viewers should not take it for certain until later moves bear it out.
pub const UNCERTAIN_READING: &str = "uncertain reading";

/// The live game of one table: a [`BpgnGame`] kept in step with the referee's events.
///
/// Invariants: the moves are those that stand on the boards, in the order they were played (a
/// retracted move is removed, an illegal move that stands is kept with an `illegal:` comment);
/// the rendered texts are cached and dropped on every change, so a render costs nothing until
/// the next event and a poller never sees a stale text.
#[derive(Debug, Clone)]
pub struct LiveGame {
    table: String,
    /// The game number from the event ids (`<table>/<game>/<seq>`), once an event was seen.
    game_number: Option<u32>,
    info: GameInfo,
    game: BpgnGame,
    /// Per board: the number and colour of the next move.
    next: [(u32, Color); 2],
    /// Per board: the FEN after its last move (for writing an illegal move that stands).
    fen: [Option<String>; 2],
    /// Per board: the text of an illegal move announced but whose `move` event is still to come.
    pending_illegal: [Option<String>; 2],
    version: u64,
    modified: SystemTime,
    last_event_id: Option<String>,
    cache: Cache,
}

#[derive(Debug, Default, Clone)]
struct Cache {
    bpgn: OnceLock<Rendered>,
    pgn: [OnceLock<Rendered>; 2],
}

/// A rendered text and its content hash (the HTTP `ETag`), computed together once per change.
#[derive(Debug, Clone)]
pub(crate) struct Rendered {
    pub text: Arc<str>,
    pub hash: u64,
}

impl Rendered {
    pub(crate) fn new(text: String) -> Self {
        let hash = fnv1a(text.as_bytes());
        Rendered {
            text: text.into(),
            hash,
        }
    }
}

/// 64-bit FNV-1a: a content hash for ETags (not for security; a collision only costs a refresh).
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

impl LiveGame {
    /// An empty game at `table` with the given tags; it starts at the info's `start_fen` if any.
    pub fn new(table: &str, info: GameInfo) -> Self {
        let mut next = [(1, Color::White); 2];
        let mut fen = [None, None];
        if let Some(table_fen) = &info.start_fen
            && let Some((a, b)) = table_fen.split_once('|')
        {
            for (i, board_fen) in [a.trim(), b.trim()].into_iter().enumerate() {
                if let Ok(position) = Position::from_fen(board_fen) {
                    next[i] = (position.fullmoves(), position.turn());
                    fen[i] = Some(board_fen.to_string());
                }
            }
        }
        // A running game ends its movetext with `*`, so that readers know where it stops.
        let game = BpgnGame {
            tags: info.tags(GameResult::Unknown.as_str()),
            result: Some(GameResult::Unknown),
            ..BpgnGame::default()
        };
        LiveGame {
            table: table.to_string(),
            game_number: None,
            info,
            game,
            next,
            fen,
            pending_illegal: [None, None],
            version: 0,
            modified: SystemTime::now(),
            last_event_id: None,
            cache: Cache::default(),
        }
    }

    /// The table id.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The game number of the events applied so far (`None` before the first event).
    pub fn game_number(&self) -> Option<u32> {
        self.game_number
    }

    /// The tags the game was created with.
    pub fn info(&self) -> &GameInfo {
        &self.info
    }

    /// The game as BPGN data (tags, moves with clocks, result).
    pub fn game(&self) -> &BpgnGame {
        &self.game
    }

    /// Counts the changes to the feed; it grows with every event that changed the texts.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// When the feed last changed (for HTTP `Last-Modified`).
    pub fn modified(&self) -> SystemTime {
        self.modified
    }

    /// The id of the last event applied, if any.
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// The result so far (`*` while the game runs).
    pub fn result(&self) -> GameResult {
        self.game.result.unwrap_or(GameResult::Unknown)
    }

    /// Applies one referee event. Returns whether the feed changed (a clock press without a time,
    /// a rejected claim or a status event leave it as it was).
    ///
    /// An event of another table or game, or a retraction with no move to retract, is an error
    /// and changes nothing: the caller decides whether that starts a new game.
    pub fn apply(&mut self, event: &Event) -> Result<bool, BroadcastError> {
        if event.table != self.table {
            return Err(BroadcastError::OtherTable {
                expected: self.table.clone(),
                got: event.table.clone(),
            });
        }
        let number = game_number_of(&event.id);
        if let (Some(mine), Some(theirs)) = (self.game_number, number)
            && mine != theirs
        {
            return Err(BroadcastError::OtherGame {
                table: self.table.clone(),
                expected: mine,
                got: theirs,
            });
        }
        let changed = self.apply_body(event)?;
        self.game_number = self.game_number.or(number);
        self.last_event_id = Some(event.id.clone());
        if changed {
            self.version += 1;
            self.modified = SystemTime::now();
            self.cache = Cache::default();
        }
        Ok(changed)
    }

    fn apply_body(&mut self, event: &Event) -> Result<bool, BroadcastError> {
        let board = event.board;
        match &event.body {
            EventBody::Move {
                color,
                number,
                uci,
                san,
                fen,
                clock_ms,
                legal,
                reading,
            } => {
                let board = board.ok_or_else(|| missing_board(event))?;
                let i = board.index();
                let mut comments = Vec::new();
                if reading.is_some_and(|r| r.guess) {
                    comments.push(UNCERTAIN_READING.to_string());
                }
                let san = if *legal {
                    san.clone()
                } else {
                    if let Some(text) = self.pending_illegal[i].take() {
                        comments.push(format!("illegal: {text}"));
                    }
                    illegal_san(uci, self.fen[i].as_deref(), fen)
                };
                self.push_move(BpgnMove {
                    number: *number,
                    board,
                    color: *color,
                    san,
                    clock: clock_ms.map(|ms| ms as f64 / 1000.0),
                    nags: Vec::new(),
                    comments,
                });
                self.fen[i] = Some(fen.clone());
                Ok(true)
            }
            EventBody::IllegalMove {
                color,
                uci,
                text,
                consequence,
                applied,
                ..
            } => {
                let board = board.ok_or_else(|| missing_board(event))?;
                if !*applied {
                    return Ok(false);
                }
                if *consequence == IllegalConsequence::PieceRemoved {
                    // A forbidden drop-mate (000 §2(1)d): the drop was made and the turn passed,
                    // but the referee sends no `move` for it; the feed shows the drop.
                    let (number, _) = self.next[board.index()];
                    self.push_move(BpgnMove {
                        number,
                        board,
                        color: *color,
                        san: uci.clone(),
                        clock: None,
                        nags: Vec::new(),
                        comments: vec![format!("illegal: {text}; the dropped piece is removed")],
                    });
                    return Ok(true);
                }
                self.pending_illegal[board.index()] = Some(text.clone());
                Ok(false)
            }
            EventBody::MoveRetracted {
                color, uci, fen, ..
            } => {
                let board = board.ok_or_else(|| missing_board(event))?;
                let last = self.game.moves.iter().rposition(|m| m.board == board);
                match last {
                    Some(index) if self.game.moves[index].color == *color => {
                        let removed = self.game.moves.remove(index);
                        self.next[board.index()] = (removed.number, removed.color);
                        self.fen[board.index()] = Some(fen.clone());
                        Ok(true)
                    }
                    _ => Err(BroadcastError::NothingToRetract {
                        event: event.id.clone(),
                        uci: uci.clone(),
                    }),
                }
            }
            EventBody::PieceRemoved {
                square,
                piece,
                reason,
                ..
            } => {
                // Attach the note to the move that caused it (002 7.5 or a drop-mate).
                let board = board.ok_or_else(|| missing_board(event))?;
                match self.game.moves.iter_mut().rev().find(|m| m.board == board) {
                    Some(m) => {
                        m.comments
                            .push(format!("{piece} on {square} removed ({reason})"));
                        Ok(true)
                    }
                    None => Ok(false),
                }
            }
            EventBody::Clock {
                color,
                remaining_ms: Some(ms),
            } => {
                // A clock press completes the mover's last move: its time is the move's clock.
                let board = board.ok_or_else(|| missing_board(event))?;
                match self.game.moves.iter_mut().rev().find(|m| m.board == board) {
                    Some(m) if m.color == *color && m.clock.is_none() => {
                        m.clock = Some(*ms as f64 / 1000.0);
                        Ok(true)
                    }
                    _ => Ok(false),
                }
            }
            EventBody::Result { result, text, .. } => {
                let result = match result {
                    MatchResult::WhiteATeamWins => GameResult::FirstTeamWins,
                    MatchResult::BlackATeamWins => GameResult::SecondTeamWins,
                    MatchResult::Draw => GameResult::Draw,
                };
                self.game.result = Some(result);
                self.game.result_comment = Some(text.clone());
                self.game.tags = self.info.tags(result.as_str());
                Ok(true)
            }
            // Alerts and bookkeeping do not change the game record.
            EventBody::Clock { .. }
            | EventBody::ClaimRejected { .. }
            | EventBody::Status { .. }
            | EventBody::Desync { .. }
            | EventBody::HiddenPocket { .. }
            | EventBody::HandoverMissing { .. } => Ok(false),
        }
    }

    fn push_move(&mut self, m: BpgnMove) {
        self.next[m.board.index()] = match m.color {
            Color::White => (m.number, Color::Black),
            Color::Black => (m.number + 1, Color::White),
        };
        self.game.moves.push(m);
    }

    /// The game as BPGN with clocks as `{seconds}` comments (rendered once per change).
    pub fn bpgn(&self) -> Arc<str> {
        self.rendered_bpgn().text.clone()
    }

    /// One board as standard PGN with `[%clk h:mm:ss.s]` comments and the result from that
    /// board's view (rendered once per change).
    pub fn board_pgn(&self, board: BoardId) -> Arc<str> {
        self.rendered_pgn(board).text.clone()
    }

    pub(crate) fn rendered_bpgn(&self) -> &Rendered {
        self.cache
            .bpgn
            .get_or_init(|| Rendered::new(write_bpgn(&self.game)))
    }

    pub(crate) fn rendered_pgn(&self, board: BoardId) -> &Rendered {
        self.cache.pgn[board.index()].get_or_init(|| {
            Rendered::new(write_board_pgn(
                &self.game,
                board,
                BoardPgnOptions::default(),
            ))
        })
    }

    /// Retained MQTT payloads, topic suffixes under `tandem/v1/<table>/`: `feed/bpgn`,
    /// `feed/pgn/A`, `feed/pgn/B`.
    pub fn retained_payloads(&self) -> Vec<(String, String)> {
        vec![
            ("feed/bpgn".to_string(), self.bpgn().to_string()),
            (
                "feed/pgn/A".to_string(),
                self.board_pgn(BoardId::A).to_string(),
            ),
            (
                "feed/pgn/B".to_string(),
                self.board_pgn(BoardId::B).to_string(),
            ),
        ]
    }
}

/// The game number in an event id `<table>/<game>/<seq>` (the table id may itself hold `/`).
pub(crate) fn game_number_of(id: &str) -> Option<u32> {
    let mut parts = id.rsplitn(3, '/');
    let _seq = parts.next()?;
    let game = parts.next()?;
    parts.next()?;
    game.parse().ok()
}

fn missing_board(event: &Event) -> BroadcastError {
    BroadcastError::MissingBoard {
        event: event.id.clone(),
    }
}

/// SAN-shaped text for an illegal move that stands (the referee only gives its UCI): the piece
/// letter and both squares (`Ke1e3`, `Nb1xd2`), a pawn by its target (`e5`, `exd5`, `e8=Q`), a
/// drop as is. `before` and `after` are the board's FENs around the move; without them the UCI
/// text is kept.
fn illegal_san(uci: &str, before: Option<&str>, after: &str) -> String {
    let Ok(mv) = UciMove::from_str(uci) else {
        return uci.to_string();
    };
    let piece_after = |sq: Square| Position::from_fen(after).ok()?.piece_at(sq);
    let occupied_before = |sq: Square| {
        let position = match before {
            Some(fen) => Position::from_fen(fen).ok(),
            None => Some(Position::new()),
        };
        position.is_some_and(|p| p.piece_at(sq).is_some())
    };
    match mv {
        UciMove::Drop { role, to } => format!("{}@{to}", role.upper_char()),
        UciMove::Normal {
            from,
            to,
            promotion,
        } => {
            let role = piece_after(to).map(|p| p.role);
            let capture = occupied_before(to);
            if promotion.is_some() || role == Some(Role::Pawn) {
                let mut san = if from.file() != to.file() {
                    format!("{}x{to}", char::from(b'a' + from.file()))
                } else {
                    to.to_string()
                };
                if let Some(p) = promotion.filter(|p| *p != Role::Pawn && *p != Role::King) {
                    san.push('=');
                    san.push(p.upper_char());
                }
                san
            } else {
                let letter = role.map_or('K', |r| r.upper_char());
                let x = if capture { "x" } else { "" };
                format!("{letter}{from}{x}{to}")
            }
        }
        UciMove::Steal { to, .. } => match piece_after(to) {
            Some(p) if p.role != Role::Pawn && p.role != Role::King => {
                format!("{to}={}", p.role.upper_char())
            }
            _ => to.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::bpgn::{is_san_shaped, parse_bpgn};
    use crate::rules::{Action, Referee, RuleSet, TimedAction};

    const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1";

    fn referee(rules: RuleSet) -> Referee {
        Referee::new("t1", 1, rules, None).expect("the start position is valid")
    }

    fn mv(board: BoardId, notation: &str) -> TimedAction {
        TimedAction {
            action: Action::Move {
                board,
                notation: notation.into(),
                reading: None,
            },
            ts: None,
        }
    }

    fn feed(events: &[Event]) -> LiveGame {
        let mut live = LiveGame::new("t1", GameInfo::default());
        for e in events {
            live.apply(e).expect("referee events fit the feed");
        }
        live
    }

    fn reread(text: &str) -> BpgnGame {
        let mut games = parse_bpgn(text.as_bytes()).expect("the feed is valid BPGN");
        assert_eq!(games.len(), 1);
        games.remove(0)
    }

    #[test]
    fn moves_with_clocks_render_and_cache_until_the_next_event() {
        let mut r = referee(RuleSet::fics());
        let mut events = r.apply_move_with_clock(BoardId::A, "e4", Some(1000), Some(179_500));
        events.extend(r.apply_move_with_clock(BoardId::B, "d4", Some(1200), Some(178_125)));
        let mut live = feed(&events);
        let first = live.bpgn();
        assert!(Arc::ptr_eq(&first, &live.bpgn()), "cached between events");
        assert!(first.contains("1A. e4{179.5} 1B. d4{178.125} *"), "{first}");
        let a = live.board_pgn(BoardId::A);
        assert!(a.contains("1. e4 {[%clk 0:02:59.5]} *"), "{a}");
        let version = live.version();
        let more = r.apply_move_with_clock(BoardId::A, "e5", Some(2000), Some(170_000));
        assert!(live.apply(&more[0]).unwrap());
        assert_eq!(live.version(), version + 1);
        let second = live.bpgn();
        assert!(!Arc::ptr_eq(&first, &second));
        assert!(second.contains("1a. e5{170.0}"), "{second}");
        assert_eq!(live.last_event_id(), Some(more[0].id.as_str()));
        assert_eq!(live.game_number(), Some(1));
    }

    #[test]
    fn a_claimed_illegal_move_disappears_from_the_feed() {
        // tandem-2024: an illegal move stands until claimed, then it is taken back (FIDE 7.5.1).
        let mut r = referee(RuleSet::tandem_2024());
        let mut events = Vec::new();
        for (b, m) in [
            (BoardId::A, "e2e4"),
            (BoardId::A, "e7e5"),
            (BoardId::A, "e1e3"),
        ] {
            events.extend(r.apply(mv(b, m)));
        }
        let live = feed(&events);
        let text = live.bpgn();
        let game = reread(&text);
        assert_eq!(game.moves.len(), 3, "{text}");
        let illegal = &game.moves[2];
        assert_eq!(illegal.san, "Ke1e3");
        assert!(is_san_shaped(&illegal.san));
        // The reader takes a comment just before the result token as the result's comment.
        let note = illegal.comments.first().or(game.result_comment.as_ref());
        assert!(note.is_some_and(|c| c.starts_with("illegal: ")), "{text}");

        events.extend(r.apply(TimedAction {
            action: Action::Claim {
                kind: crate::rules::ClaimKind::IllegalMove,
                board: BoardId::A,
                by: Color::Black,
            },
            ts: None,
        }));
        assert!(
            events
                .iter()
                .any(|e| matches!(e.body, EventBody::MoveRetracted { .. })),
            "{events:?}"
        );
        let mut live = feed(&events);
        let game = reread(&live.bpgn());
        assert_eq!(
            game.moves
                .iter()
                .map(|m| m.san.as_str())
                .collect::<Vec<_>>(),
            ["e4", "e5"]
        );
        // White moves again with the same number.
        events = r.apply(mv(BoardId::A, "g1f3"));
        live.apply(&events[0]).unwrap();
        assert!(live.bpgn().contains("2A. Nf3"), "{}", live.bpgn());
    }

    #[test]
    fn retracting_with_nothing_to_retract_is_an_error_not_a_panic() {
        let mut live = LiveGame::new("t1", GameInfo::default());
        let event = Event {
            id: "t1/1/1".into(),
            table: "t1".into(),
            ts: 0,
            board: Some(BoardId::B),
            body: EventBody::MoveRetracted {
                color: Color::White,
                uci: "e2e4".into(),
                reason: "x".into(),
                fen: START.into(),
            },
        };
        assert!(matches!(
            live.apply(&event),
            Err(BroadcastError::NothingToRetract { .. })
        ));
        let other = Event {
            table: "t2".into(),
            ..event.clone()
        };
        assert!(matches!(
            live.apply(&other),
            Err(BroadcastError::OtherTable { .. })
        ));
        assert_eq!(live.version(), 0);
        assert_eq!(
            live.game_number(),
            None,
            "a refused event fixes no game number"
        );
    }

    #[test]
    fn result_is_seen_from_each_board() {
        let mut r = referee(RuleSet::fics());
        let mut events = r.apply(mv(BoardId::A, "e4"));
        events.extend(r.apply(TimedAction {
            action: Action::Resign {
                board: BoardId::A,
                color: Color::Black,
            },
            ts: None,
        }));
        let live = feed(&events);
        assert_eq!(live.result(), GameResult::FirstTeamWins);
        let game = reread(&live.bpgn());
        assert_eq!(game.result, Some(GameResult::FirstTeamWins));
        assert_eq!(game.tag("Result"), Some("1-0"));
        assert!(live.board_pgn(BoardId::A).contains("[Result \"1-0\"]"));
        assert!(live.board_pgn(BoardId::B).contains("[Result \"0-1\"]"));
        assert!(live.board_pgn(BoardId::B).trim_end().ends_with("0-1"));
        let payloads = live.retained_payloads();
        let topics: Vec<_> = payloads.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(topics, ["feed/bpgn", "feed/pgn/A", "feed/pgn/B"]);
        assert_eq!(payloads[2].1, live.board_pgn(BoardId::B).to_string());
    }

    #[test]
    fn a_forbidden_drop_mate_shows_the_drop_and_the_removal() {
        // Black king h8 boxed in by its own rook and pawns: N@f7 would be a smothered mate.
        let start = "6rk/6pp/8/8/8/8/8/K7[N] w - - 0 1 | 4k3/8/8/8/8/8/8/4K3[] w - - 0 1";
        let rules = RuleSet::tandem_2024();
        let mut r = Referee::new("t1", 1, rules, Some(start)).unwrap();
        let events = r.apply(mv(BoardId::A, "N@f7"));
        let info = GameInfo {
            start_fen: Some(start.into()),
            ..GameInfo::default()
        };
        let mut live = LiveGame::new("t1", info);
        for e in &events {
            live.apply(e).unwrap();
        }
        let game = reread(&live.bpgn());
        if events.iter().any(|e| {
            matches!(
                e.body,
                EventBody::IllegalMove {
                    consequence: IllegalConsequence::PieceRemoved,
                    ..
                }
            )
        }) {
            assert_eq!(game.moves.len(), 1, "{events:?}");
            assert_eq!(game.moves[0].san, "N@f7");
            assert!(game.moves[0].comments.iter().any(|c| c.contains("removed")));
            // Black's reply is numbered after the drop.
            let reply = r.apply(mv(BoardId::A, "g8f8"));
            for e in &reply {
                live.apply(e).unwrap();
            }
            assert!(live.bpgn().contains("1a. Rf8"), "{}", live.bpgn());
        } else {
            panic!("N@f7 should be a forbidden drop-mate under tandem-2024: {events:?}");
        }
        assert_eq!(game.tag("FEN"), Some(start));
    }

    #[test]
    fn a_guessed_move_is_marked_uncertain_and_a_sure_one_is_not() {
        let mut r = Referee::new("t1", 1, RuleSet::fics(), None).unwrap();
        let mut live = LiveGame::new("t1", GameInfo::default());
        // (A comment just before the result token would be read back as the result's.)
        for (uci, guess) in [("e2e4", true), ("e7e5", false), ("g1f3", false)] {
            for mut e in r.apply(mv(BoardId::A, uci)) {
                if let EventBody::Move { reading, .. } = &mut e.body {
                    *reading = Some(crate::rules::MoveReading::new(1.0, guess));
                }
                live.apply(&e).unwrap();
            }
        }
        let game = reread(&live.bpgn());
        let marked: Vec<bool> = game
            .moves
            .iter()
            .map(|m| m.comments.iter().any(|c| c == UNCERTAIN_READING))
            .collect();
        assert_eq!(marked, [true, false, false], "{}", live.bpgn());
    }

    #[test]
    fn fnv_is_the_published_function() {
        // FNV-1a 64 test vectors.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        let rendered = Rendered::new("1A. e4 *".into());
        assert_eq!(rendered.hash, fnv1a(b"1A. e4 *"));
    }

    #[test]
    fn game_numbers_in_ids() {
        assert_eq!(game_number_of("t1/3/17"), Some(3));
        assert_eq!(game_number_of("hall/t1/2/5"), Some(2));
        assert_eq!(game_number_of("t1"), None);
        assert_eq!(game_number_of("t1/x/5"), None);
    }

    #[test]
    fn illegal_san_forms() {
        let after = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR[] b KQkq - 0 1";
        assert_eq!(illegal_san("e2e4", None, after), "e4");
        let after = "rnbqkbnr/pppppppp/8/8/8/8/PPPPNPPP/RNBQKB1R[] b KQkq - 0 1";
        assert_eq!(illegal_san("g1e2", Some(START), after), "Ng1xe2");
        assert_eq!(illegal_san("N@f3", None, after), "N@f3");
        assert_eq!(illegal_san("garbage", None, after), "garbage");
    }
}
