//! One table inside the daemon: the referee, the action journal, clocks and alerts, and the
//! translation of clock and arbiter inputs into referee actions.
//!
//! Invariant: the events of a table are a pure function of its journal. Every input that can
//! cause an event is appended to `<state_dir>/<table>/journal.jsonl` *before* its events go to the
//! outbox, so a restarted daemon replays the journal silently, re-publishes the events of the last
//! entry (they may not have reached the outbox) and continues with the same event ids; receivers
//! deduplicate the repeats by id. Event ids are `<table>/<game>/<n>`, `n` counting every event of
//! the game (referee and daemon events alike), so they stay unique when the referee is replaced
//! (position correction).

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::engine::{BoardId, Color, Table};
use crate::evidence::{EvidenceConfig, GameMeta, GameRecorder, game_dir};
use crate::publish::{
    ArbiterCommand, ArbiterMessage, Board, ClaimKind as InClaim, ClockCommand, ClockCommandKind,
    ClockInput, Inbound, Side, TableId,
};
use crate::rules::{Action, ClaimKind, Event, EventBody, Referee, RuleSet, TimedAction};

use super::DaemonError;
use super::config::TableSpec;

/// One input that can change a table, as journaled (one JSON object per line).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "input", rename_all = "snake_case")]
pub enum TableInput {
    /// A move seen on a board (by the tracker, or replayed); `clock_ms` is the mover's time left.
    Move {
        board: BoardId,
        notation: String,
        #[serde(default)]
        ts: Option<u64>,
        #[serde(default)]
        clock_ms: Option<u64>,
    },
    /// A referee-script action object (`docs/referee.md`).
    Script { action: Value },
    /// A clock press by `side` (whose move is now complete).
    Press {
        board: BoardId,
        side: Color,
        ts: u64,
        #[serde(default)]
        white_ms: Option<u64>,
        #[serde(default)]
        black_ms: Option<u64>,
        #[serde(default)]
        seq: Option<u64>,
    },
    /// A flag fell for `side`.
    Flag {
        board: BoardId,
        side: Color,
        ts: u64,
    },
    /// An arbiter command.
    Arbiter { message: ArbiterMessage },
    /// Something the daemon itself reports as a `status` event (camera lost, camera back).
    Notice { state: String, detail: String },
    /// What the camera's tracker found on its own (`desync`, `hidden_pocket`,
    /// `handover_missing`): published as it is, the referee is not involved. The tracker's moves and
    /// presses arrive as [`TableInput::Script`] actions instead, so the referee judges them.
    Observed {
        #[serde(default)]
        board: Option<BoardId>,
        ts: u64,
        body: EventBody,
    },
}

impl TableInput {
    /// The input a parsed clock or arbiter message stands for; `None` for remaining-time
    /// reports, which only update the state.
    pub fn from_inbound(inbound: &Inbound) -> Option<TableInput> {
        match inbound {
            Inbound::Clock { board, input, .. } => match input {
                ClockInput::Press(p) => Some(TableInput::Press {
                    board: board_of(*board),
                    side: color_of(p.side),
                    ts: p.ts,
                    white_ms: p.white_ms,
                    black_ms: p.black_ms,
                    seq: p.seq,
                }),
                ClockInput::Flag(f) => Some(TableInput::Flag {
                    board: board_of(*board),
                    side: color_of(f.side),
                    ts: f.ts,
                }),
                ClockInput::Time(_) => None,
            },
            Inbound::Arbiter { message, .. } => Some(TableInput::Arbiter {
                message: message.clone(),
            }),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct JournalLine {
    /// Whether the input came from the replay move source (counted to resume it).
    #[serde(default)]
    replay: bool,
    #[serde(flatten)]
    input: TableInput,
}

/// A clock's last known reading.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ClockReading {
    pub white_ms: Option<u64>,
    pub black_ms: Option<u64>,
    pub running: Option<Color>,
    pub ts: Option<u64>,
}

/// What one input caused.
#[derive(Debug, Default)]
pub struct Outcome {
    pub events: Vec<Event>,
    pub clock_commands: Vec<ClockCommand>,
    /// A new game started: the evidence log must move on.
    pub new_game: bool,
}

/// Event types that stay open as alerts until the arbiter acknowledges them.
const ALERT_TYPES: [&str; 6] = [
    "illegal_move",
    "piece_removed",
    "claim_rejected",
    "desync",
    "hidden_pocket",
    "handover_missing",
];

/// One table's live state.
pub struct TableRuntime {
    id: TableId,
    spec: TableSpec,
    rules: RuleSet,
    next_rules: RuleSet,
    game: u32,
    seq: u64,
    referee: Referee,
    last_ts: u64,
    clocks: [ClockReading; 2],
    press_seq: [Option<u64>; 2],
    last_event_id: Option<String>,
    result: Option<Value>,
    alerts: BTreeSet<String>,
    replay_consumed: usize,
    replay_last_ts: Option<u64>,
    journal: Option<File>,
    journal_path: PathBuf,
    recorder: Option<GameRecorder>,
    /// The camera's tracker decides the moves: a clock press only updates the clock reading and
    /// reaches the referee through the tracker (after the move it completes).
    watched: bool,
    /// For the evidence log of a watched table: the calibration text and the model's SHA-256.
    camera: Option<(String, Option<String>)>,
}

fn board_of(b: Board) -> BoardId {
    match b {
        Board::A => BoardId::A,
        Board::B => BoardId::B,
    }
}

/// The engine colour of a clock side.
pub fn color_of(s: Side) -> Color {
    match s {
        Side::White => Color::White,
        Side::Black => Color::Black,
    }
}

impl TableRuntime {
    /// A table with no history and no journal file (tests, one-shot replays).
    pub fn new(spec: &TableSpec) -> Result<Self, DaemonError> {
        let id = TableId::new(&spec.id).map_err(|e| DaemonError::Table(e.to_string()))?;
        let rules = RuleSet::load(&spec.rules).map_err(|e| DaemonError::Table(e.to_string()))?;
        let referee = Referee::new(&spec.id, 1, rules.clone(), spec.start.as_deref())
            .map_err(|e| DaemonError::Table(e.to_string()))?;
        Ok(Self {
            id,
            spec: spec.clone(),
            next_rules: rules.clone(),
            rules,
            game: 1,
            seq: 0,
            referee,
            last_ts: 0,
            clocks: Default::default(),
            press_seq: [None; 2],
            last_event_id: None,
            result: None,
            alerts: BTreeSet::new(),
            replay_consumed: 0,
            replay_last_ts: None,
            journal: None,
            journal_path: PathBuf::new(),
            recorder: None,
            watched: false,
            camera: None,
        })
    }

    /// What the evidence log of each game keeps about the camera chain: the calibration as
    /// loaded and the square model's SHA-256 (call before [`TableRuntime::open_evidence`]).
    pub fn set_camera(&mut self, calibration: String, model_sha256: Option<String>) {
        self.camera = Some((calibration, model_sha256));
    }

    /// The rule set of the current game.
    pub fn rules(&self) -> &RuleSet {
        &self.rules
    }

    /// Opens (or creates) the table's journal under `state_dir` and replays it silently.
    /// `watched`: the camera's tracker decides this table's moves (see [`TableInput::Observed`]).
    ///
    /// Returns the table, every event of the journal (to rebuild in-memory views such as the
    /// broadcast feed) and the outcome of the last entry, which the caller re-publishes.
    pub fn open(
        spec: &TableSpec,
        state_dir: &Path,
        watched: bool,
    ) -> Result<(Self, Vec<Event>, Outcome), DaemonError> {
        let mut table = Self::new(spec)?;
        table.watched = watched;
        let dir = state_dir.join(&spec.id);
        std::fs::create_dir_all(&dir).map_err(|e| DaemonError::io(&dir, e))?;
        let path = dir.join("journal.jsonl");
        let mut all = Vec::new();
        let mut last = Outcome::default();
        let mut valid_len: u64 = 0;
        if path.exists() {
            let file = File::open(&path).map_err(|e| DaemonError::io(&path, e))?;
            let mut reader = BufReader::new(file);
            let mut line = String::new();
            let mut number = 0usize;
            loop {
                line.clear();
                let n = reader
                    .read_line(&mut line)
                    .map_err(|e| DaemonError::io(&path, e))?;
                if n == 0 {
                    break;
                }
                number += 1;
                if !line.ends_with('\n') {
                    // A line torn by a crash: its input never reached the outbox; drop it.
                    log::warn!("{}: dropping torn last line {number}", path.display());
                    break;
                }
                let entry: JournalLine = serde_json::from_str(&line).map_err(|e| {
                    DaemonError::Journal(format!("{} line {number}: {e}", path.display()))
                })?;
                valid_len += n as u64;
                if entry.replay {
                    table.replay_consumed += 1;
                    if let TableInput::Move { ts: Some(ts), .. } = &entry.input {
                        table.replay_last_ts = Some(*ts);
                    }
                }
                let outcome = table.process(&entry.input);
                all.extend(outcome.events.iter().cloned());
                last = outcome;
            }
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| DaemonError::io(&path, e))?;
        // Cut a torn tail so the next entry starts on a line of its own.
        file.set_len(valid_len)
            .map_err(|e| DaemonError::io(&path, e))?;
        table.journal = Some(file);
        table.journal_path = path;
        Ok((table, all, last))
    }

    pub fn id(&self) -> &TableId {
        &self.id
    }

    pub fn game(&self) -> u32 {
        self.game
    }

    /// True once the current game has a result.
    pub fn is_over(&self) -> bool {
        self.referee.is_over()
    }

    /// The current table FEN (`<A> | <B>`).
    pub fn fen(&self) -> String {
        self.referee.table().to_fen()
    }

    /// How many replayed inputs the journal holds, and the timeline ts of the last one.
    pub fn replay_progress(&self) -> (usize, Option<u64>) {
        (self.replay_consumed, self.replay_last_ts)
    }

    /// The timeline time of the latest input.
    pub fn last_ts(&self) -> u64 {
        self.last_ts
    }

    /// Whether `input` is new (a clock's redelivered press, recognised by `seq`, is not).
    pub fn accepts(&self, input: &TableInput) -> bool {
        match input {
            TableInput::Press {
                board,
                seq: Some(seq),
                ..
            } => self.press_seq[board.index()].is_none_or(|last| *seq > last),
            _ => true,
        }
    }

    /// Appends `input` to the journal (before its events are published).
    pub fn journal(&mut self, input: &TableInput, replay: bool) -> Result<(), DaemonError> {
        if replay {
            self.replay_consumed += 1;
            if let TableInput::Move { ts: Some(ts), .. } = input {
                self.replay_last_ts = Some(*ts);
            }
        }
        let Some(file) = &mut self.journal else {
            return Ok(());
        };
        let mut line = serde_json::to_string(&JournalLine {
            replay,
            input: input.clone(),
        })
        .map_err(|e| DaemonError::Journal(e.to_string()))?;
        line.push('\n');
        file.write_all(line.as_bytes())
            .map_err(|e| DaemonError::io(&self.journal_path, e))
    }

    /// Records a remaining-time report (state only; no event, not journaled).
    pub fn clock_time(
        &mut self,
        board: BoardId,
        white_ms: u64,
        black_ms: u64,
        running: Option<Color>,
        ts: u64,
    ) {
        self.clocks[board.index()] = ClockReading {
            white_ms: Some(white_ms),
            black_ms: Some(black_ms),
            running,
            ts: Some(ts),
        };
    }

    /// Applies one input and returns what it caused. Deterministic: the same journal gives the
    /// same events.
    pub fn process(&mut self, input: &TableInput) -> Outcome {
        let mut out = Outcome::default();
        let raw = match input {
            TableInput::Move {
                board,
                notation,
                ts,
                clock_ms,
            } => {
                if let Some(ts) = ts {
                    self.last_ts = self.last_ts.max(*ts);
                }
                self.referee
                    .apply_move_with_clock(*board, notation, *ts, *clock_ms)
            }
            TableInput::Script { action } => match TimedAction::from_json(action, 0) {
                Ok(timed) => {
                    if let Some(ts) = timed.ts {
                        self.last_ts = self.last_ts.max(ts);
                    }
                    self.referee.apply(timed)
                }
                Err(e) => vec![self.status("rejected", &format!("script action: {e}"))],
            },
            TableInput::Press {
                board,
                side,
                ts,
                white_ms,
                black_ms,
                seq,
            } => {
                self.last_ts = self.last_ts.max(*ts);
                if seq.is_some() {
                    self.press_seq[board.index()] = *seq;
                }
                let reading = &mut self.clocks[board.index()];
                reading.white_ms = white_ms.or(reading.white_ms);
                reading.black_ms = black_ms.or(reading.black_ms);
                reading.running = Some(side.other());
                reading.ts = Some(*ts);
                if self.watched {
                    Vec::new()
                } else {
                    self.referee.apply(TimedAction {
                        ts: Some(*ts),
                        action: Action::Press { board: *board },
                    })
                }
            }
            TableInput::Flag { board, side, ts } => {
                self.last_ts = self.last_ts.max(*ts);
                self.referee.apply(TimedAction {
                    ts: Some(*ts),
                    action: Action::Flag {
                        board: *board,
                        color: *side,
                    },
                })
            }
            TableInput::Arbiter { message } => {
                if let Some(ts) = message.ts {
                    self.last_ts = self.last_ts.max(ts);
                }
                self.arbiter(message, &mut out)
            }
            TableInput::Notice { state, detail } => vec![self.status(state, detail)],
            TableInput::Observed { board, ts, body } => {
                self.last_ts = self.last_ts.max(*ts);
                vec![Event {
                    id: String::new(),
                    table: self.id.to_string(),
                    ts: *ts,
                    board: *board,
                    body: body.clone(),
                }]
            }
        };
        for mut event in raw {
            self.seq += 1;
            event.id = format!("{}/{}/{}", self.id, self.game, self.seq);
            event.ts = event.ts.max(self.last_ts);
            self.note_event(&event, &mut out.clock_commands);
            out.events.push(event);
        }
        out
    }

    fn status(&self, state: &str, detail: &str) -> Event {
        // The id is assigned in `process`.
        Event {
            id: String::new(),
            table: self.id.to_string(),
            ts: self.last_ts,
            board: None,
            body: EventBody::Status {
                state: state.to_string(),
                detail: detail.to_string(),
            },
        }
    }

    fn arbiter(&mut self, message: &ArbiterMessage, out: &mut Outcome) -> Vec<Event> {
        let ts = message.ts.or(Some(self.last_ts));
        let by = message
            .by
            .as_deref()
            .map(|b| format!(" (by {b})"))
            .unwrap_or_default();
        match &message.command {
            ArbiterCommand::Start { rules, .. } | ArbiterCommand::Reset { rules } => {
                let verb = if matches!(message.command, ArbiterCommand::Start { .. }) {
                    "game_started"
                } else {
                    "game_reset"
                };
                if let Some(name) = rules {
                    match RuleSet::load(name) {
                        Ok(r) => self.next_rules = r,
                        Err(e) => return vec![self.status("rejected", &format!("{e}{by}"))],
                    }
                }
                let referee = match Referee::new(
                    self.id.as_str(),
                    self.game + 1,
                    self.next_rules.clone(),
                    self.spec.start.as_deref(),
                ) {
                    Ok(r) => r,
                    Err(e) => return vec![self.status("rejected", &format!("{e}{by}"))],
                };
                self.game += 1;
                self.seq = 0;
                self.referee = referee;
                self.rules = self.next_rules.clone();
                self.result = None;
                self.alerts.clear();
                self.clocks = Default::default();
                self.press_seq = [None; 2];
                out.new_game = true;
                vec![self.status(
                    verb,
                    &format!("game {} under {}{by}", self.game, self.rules.name),
                )]
            }
            ArbiterCommand::SetRules { rules } => match RuleSet::load(rules) {
                Ok(r) => {
                    self.next_rules = r;
                    vec![self.status(
                        "rules_set",
                        &format!("{rules} applies from the next game{by}"),
                    )]
                }
                Err(e) => vec![self.status("rejected", &format!("{e}{by}"))],
            },
            ArbiterCommand::AckAlert { alert_id } => {
                if self.alerts.remove(alert_id) {
                    vec![self.status("alert_acknowledged", &format!("{alert_id}{by}"))]
                } else {
                    vec![self.status(
                        "rejected",
                        &format!("no open alert {alert_id:?} to acknowledge{by}"),
                    )]
                }
            }
            ArbiterCommand::Claim {
                board,
                side,
                claim,
                note,
                ..
            } => {
                let kind = match claim {
                    InClaim::IllegalMove => Some(ClaimKind::IllegalMove),
                    InClaim::Flag => Some(ClaimKind::Flag),
                    InClaim::Mate | InClaim::Draw | InClaim::Other => None,
                };
                // A claim stops both clocks (the arbiter restarts them).
                let stop_id = format!("{}/{}/claim{}", self.id, self.game, self.seq + 1);
                out.clock_commands.extend(self.stop_both(&stop_id));
                match kind {
                    Some(kind) => self.referee.apply(TimedAction {
                        ts,
                        action: Action::Claim {
                            kind,
                            board: board_of(*board),
                            by: color_of(*side),
                        },
                    }),
                    None => vec![self.status(
                        "claim_recorded",
                        &format!(
                            "{:?} claim by {} on {}: for the arbiter to decide{}{by}",
                            claim,
                            color_of(*side).name(),
                            board,
                            note.as_deref().map(|n| format!(": {n}")).unwrap_or_default()
                        ),
                    )],
                }
            }
            ArbiterCommand::CorrectPosition { fen } => {
                if let Err(e) = Table::from_fen(fen) {
                    return vec![self.status("rejected", &format!("correct_position: {e}{by}"))];
                }
                match Referee::new(self.id.as_str(), self.game, self.rules.clone(), Some(fen)) {
                    Ok(r) => {
                        self.referee = r;
                        vec![self.status("position_corrected", &format!("{fen}{by}"))]
                    }
                    Err(e) => vec![self.status("rejected", &format!("correct_position: {e}{by}"))],
                }
            }
            ArbiterCommand::Resign { board, side } => self.referee.apply(TimedAction {
                ts,
                action: Action::Resign {
                    board: board_of(*board),
                    color: color_of(*side),
                },
            }),
            ArbiterCommand::AgreeDraw {} => self.referee.apply(TimedAction {
                ts,
                action: Action::DrawAgreed,
            }),
        }
    }

    fn stop_both(&self, id: &str) -> Vec<ClockCommand> {
        [Board::A, Board::B]
            .into_iter()
            .map(|board| ClockCommand {
                id: format!("{id}/stop-{board}"),
                table: self.id.clone(),
                board,
                ts: self.last_ts,
                command: ClockCommandKind::Stop,
            })
            .collect()
    }

    /// Tracks alerts, the result and the last id; a result stops both clocks and shows it.
    fn note_event(&mut self, event: &Event, commands: &mut Vec<ClockCommand>) {
        self.last_event_id = Some(event.id.clone());
        let kind = match serde_json::to_value(&event.body) {
            Ok(v) => v["type"].as_str().unwrap_or_default().to_string(),
            Err(_) => String::new(),
        };
        let capture_alert = matches!(&event.body, EventBody::Status { state, .. }
            if matches!(state.as_str(), "camera_lost" | "camera_unavailable" | "calibration_lost"));
        if ALERT_TYPES.contains(&kind.as_str()) || capture_alert {
            self.alerts.insert(event.id.clone());
        }
        if let EventBody::Result { result, text, .. } = &event.body {
            self.result = serde_json::to_value(event).ok();
            commands.extend(self.stop_both(&event.id));
            for board in [Board::A, Board::B] {
                commands.push(ClockCommand {
                    id: format!("{}/msg-{board}", event.id),
                    table: self.id.clone(),
                    board,
                    ts: event.ts,
                    command: ClockCommandKind::Message {
                        text: format!("{} {text}", result.as_str()),
                    },
                });
            }
        }
    }

    /// The retained `tandem/v1/<table>/state` payload.
    pub fn state(&self) -> Value {
        let table = self.referee.table();
        let board = |b: BoardId| {
            let pos = table.board(b);
            json!({"fen": pos.to_fen(), "to_move": pos.turn().name()})
        };
        json!({
            "table": self.id,
            "game": self.game,
            "ts": self.last_ts,
            "rules": self.rules.name,
            "fen": table.to_fen(),
            "boards": {"A": board(BoardId::A), "B": board(BoardId::B)},
            "clocks": {"A": self.clocks[0], "B": self.clocks[1]},
            "last_event_id": self.last_event_id,
            "over": self.referee.is_over(),
            "result": self.result,
            "open_alerts": self.alerts,
            // The evidence chain's head, retained off the machine: with it `tandem evidence verify
            // --head` also detects records cut from the end of the log.
            "evidence_head": self.recorder.as_ref().map(|r| r.log().head().to_string()),
        })
    }

    /// Opens the evidence log of the current game: resumes an unfinished one, otherwise starts
    /// a fresh directory (`<game>`, or `<game>.<n>` when a finished log is already there).
    pub fn open_evidence(&mut self, config: &EvidenceConfig) -> Result<(), DaemonError> {
        let game = self.game.to_string();
        let dir = game_dir(&config.dir, self.id.as_str(), &game);
        if dir.join(crate::evidence::LOG_FILE).exists() {
            match GameRecorder::resume(&dir, config, None) {
                Ok(r) => {
                    self.recorder = Some(r);
                    return Ok(());
                }
                Err(e) => log::info!("{}: not resumable ({e}); starting a new log", dir.display()),
            }
        }
        let mut name = game.clone();
        let mut n = 1;
        while game_dir(&config.dir, self.id.as_str(), &name).exists() {
            n += 1;
            name = format!("{game}.{n}");
        }
        let meta = GameMeta {
            table: self.id.to_string(),
            game: name,
            calibration: self.camera.as_ref().map(|c| c.0.clone()),
            model_sha256: self.camera.as_ref().and_then(|c| c.1.clone()),
            rule_set: self.rules.name.clone(),
            started_ts: self.last_ts as i64,
        };
        self.recorder = Some(GameRecorder::start(&meta, config, None)?);
        Ok(())
    }

    /// Appends an event to the evidence log (if one is open).
    pub fn record(&mut self, event: &Value) -> Result<(), DaemonError> {
        if let Some(r) = &mut self.recorder {
            r.record_event(event)?;
        }
        Ok(())
    }

    /// Offers a captured frame to the evidence ring.
    pub fn push_frame(&mut self, frame: crate::evidence::Frame) -> Result<(), DaemonError> {
        if let Some(r) = &mut self.recorder {
            r.push_frame(frame)?;
        }
        Ok(())
    }

    /// Ends the evidence log of the current game (at a new game or at shutdown).
    pub fn finish_evidence(&mut self) -> Result<Option<PathBuf>, DaemonError> {
        match self.recorder.take() {
            Some(r) => Ok(Some(r.finish(self.last_ts as i64, self.result.as_ref())?)),
            None => Ok(None),
        }
    }
}

trait Named {
    fn name(self) -> &'static str;
}

impl Named for Color {
    fn name(self) -> &'static str {
        match self {
            Color::White => "white",
            Color::Black => "black",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> TableSpec {
        TableSpec {
            id: "t1".into(),
            rules: "fics".into(),
            boards: ["A".into(), "B".into()],
            start: None,
            calibration: None,
        }
    }

    fn mv(board: BoardId, san: &str, ts: u64) -> TableInput {
        TableInput::Move {
            board,
            notation: san.into(),
            ts: Some(ts),
            clock_ms: None,
        }
    }

    fn arbiter(json: Value) -> TableInput {
        TableInput::Arbiter {
            message: serde_json::from_value(json).unwrap(),
        }
    }

    #[test]
    fn ids_are_consecutive_and_resign_stops_both_clocks() {
        let mut t = TableRuntime::new(&spec()).unwrap();
        let a = t.process(&mv(BoardId::A, "e4", 100));
        let b = t.process(&mv(BoardId::B, "d4", 200));
        assert_eq!(a.events[0].id, "t1/1/1");
        assert_eq!(b.events[0].id, "t1/1/2");
        let r = t.process(&arbiter(
            json!({"cmd": "resign", "board": "B", "side": "black"}),
        ));
        let result = r
            .events
            .iter()
            .find(|e| matches!(e.body, EventBody::Result { .. }))
            .unwrap();
        assert_eq!(serde_json::to_value(result).unwrap()["result"], "0-1");
        let stops: Vec<_> = r
            .clock_commands
            .iter()
            .filter(|c| c.command == ClockCommandKind::Stop)
            .map(|c| c.board)
            .collect();
        assert_eq!(stops, vec![Board::A, Board::B]);
        assert!(t.is_over());
        assert_eq!(t.state()["last_event_id"], json!(result.id));
        assert_eq!(t.state()["result"]["result"], "0-1");
    }

    #[test]
    fn a_watched_table_takes_its_moves_from_the_tracker() {
        let dir = tempfile::tempdir().unwrap();
        let press = TableInput::Press {
            board: BoardId::A,
            side: Color::White,
            ts: 900,
            white_ms: Some(179_000),
            black_ms: Some(180_000),
            seq: Some(1),
        };
        let tracked = [
            TableInput::Script {
                action: json!({"board": "A", "move": "e2e4", "ts": 1000}),
            },
            TableInput::Script {
                action: json!({"press": "A", "ts": 1000}),
            },
            TableInput::Observed {
                board: Some(BoardId::B),
                ts: 1100,
                body: EventBody::HiddenPocket {
                    color: Color::White,
                    piece: "N".into(),
                    held: 1,
                    visible: 0,
                },
            },
        ];
        let (mut t, _, _) = TableRuntime::open(&spec(), dir.path(), true).unwrap();
        // The press updates the clock; the referee hears of it from the tracker, after the move.
        t.journal(&press, false).unwrap();
        assert!(t.process(&press).events.is_empty());
        assert_eq!(t.state()["clocks"]["A"]["white_ms"], 179_000);
        let mut all = Vec::new();
        for input in &tracked {
            t.journal(input, false).unwrap();
            all.extend(t.process(input).events);
        }
        let kinds: Vec<String> = all
            .iter()
            .map(|e| {
                serde_json::to_value(e).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(kinds, ["move", "clock", "hidden_pocket"]);
        assert_eq!(all[2].id, "t1/1/3");
        assert!(t.state()["open_alerts"].to_string().contains("t1/1/3"));
        // The journal reproduces it, presses included.
        let (again, history, _) = TableRuntime::open(&spec(), dir.path(), true).unwrap();
        assert_eq!(history, all);
        assert_eq!(again.fen(), t.fen());
    }

    #[test]
    fn journal_replay_reproduces_events_and_state() {
        let dir = tempfile::tempdir().unwrap();
        let inputs = [
            mv(BoardId::A, "e4", 100),
            TableInput::Press {
                board: BoardId::A,
                side: Color::White,
                ts: 150,
                white_ms: Some(299_000),
                black_ms: Some(300_000),
                seq: Some(1),
            },
            arbiter(json!({"cmd": "set_rules", "rules": "tandem-2024"})),
            mv(BoardId::A, "e5", 300),
            arbiter(json!({"cmd": "start"})),
            mv(BoardId::B, "Nf3", 400),
        ];
        let mut first = Vec::new();
        let state;
        {
            let (mut t, old, _) = TableRuntime::open(&spec(), dir.path(), false).unwrap();
            assert!(old.is_empty());
            for (i, input) in inputs.iter().enumerate() {
                t.journal(input, i % 2 == 0).unwrap();
                first.extend(t.process(input).events);
            }
            state = t.state();
        }
        let (t, again, last) = TableRuntime::open(&spec(), dir.path(), false).unwrap();
        assert_eq!(again, first);
        assert_eq!(t.state(), state);
        assert_eq!(last.events, first[first.len() - 1..].to_vec());
        assert_eq!(t.game(), 2);
        assert_eq!(t.replay_progress(), (3, Some(100)));
        assert_eq!(state["rules"], "tandem-2024");
    }

    #[test]
    fn redelivered_press_is_not_accepted() {
        let mut t = TableRuntime::new(&spec()).unwrap();
        let press = TableInput::Press {
            board: BoardId::B,
            side: Color::White,
            ts: 10,
            white_ms: None,
            black_ms: None,
            seq: Some(4),
        };
        assert!(t.accepts(&press));
        t.process(&press);
        assert!(!t.accepts(&press));
    }

    #[test]
    fn bad_arbiter_input_becomes_a_status_event() {
        let mut t = TableRuntime::new(&spec()).unwrap();
        for cmd in [
            json!({"cmd": "set_rules", "rules": "nope"}),
            json!({"cmd": "ack_alert", "alert_id": "t1/1/99"}),
            json!({"cmd": "correct_position", "fen": "x | y"}),
        ] {
            let out = t.process(&arbiter(cmd.clone()));
            assert_eq!(out.events.len(), 1, "{cmd}");
            assert!(
                matches!(&out.events[0].body, EventBody::Status { state, .. } if state == "rejected"),
                "{cmd}: {:?}",
                out.events
            );
        }
    }

    #[test]
    fn unsupported_claims_are_recorded_and_stop_clocks() {
        let mut t = TableRuntime::new(&spec()).unwrap();
        let out = t.process(&arbiter(
            json!({"cmd": "claim", "board": "A", "side": "white", "claim": "mate"}),
        ));
        assert!(
            matches!(&out.events[0].body, EventBody::Status { state, .. } if state == "claim_recorded")
        );
        assert_eq!(out.clock_commands.len(), 2);
    }

    #[test]
    fn a_lost_camera_or_calibration_is_an_alert_until_acknowledged() {
        for state in ["camera_lost", "calibration_lost"] {
            let mut t = TableRuntime::new(&spec()).unwrap();
            let lost = t.process(&TableInput::Notice {
                state: state.into(),
                detail: "/dev/video0".into(),
            });
            let id = lost.events[0].id.clone();
            assert_eq!(t.state()["open_alerts"], json!([id]), "{state}");
            let ack = t.process(&arbiter(json!({"cmd": "ack_alert", "alert_id": id})));
            assert!(
                matches!(&ack.events[0].body, EventBody::Status { state, .. } if state == "alert_acknowledged")
            );
            assert_eq!(t.state()["open_alerts"], json!([]));
        }
        // A notice that is not a problem opens nothing.
        let mut t = TableRuntime::new(&spec()).unwrap();
        t.process(&TableInput::Notice {
            state: "recalibrated".into(),
            detail: String::new(),
        });
        assert_eq!(t.state()["open_alerts"], json!([]));
    }
}
