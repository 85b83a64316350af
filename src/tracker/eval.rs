//! Evaluation of the tracker on simulated observations of recorded games.
//!
//! Moves are scored per board as the longest common subsequence of the committed moves and the
//! truth (so one missed move costs one move, not the rest of the game), divided by the longer of
//! the two sequences. A game is all right when both boards' committed sequences equal the truth.
//! False alerts are `desync`, `illegal_move` (the recorded games are legal) and pocket alerts that
//! match no injected incident. Latency is the wall time of the `observe` call that received the
//! stable observation and returned the move event.

use std::collections::BTreeMap;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::engine::BoardId;
use crate::engine::bpgn::BpgnGame;
use crate::rules::{DesyncState, Event, EventBody, MISREAD, MoveReading, RuleSet};

use super::simulate::{SimConfig, simulate_game};
use super::{Tracker, TrackerConfig};

/// The moves that stand on each board after `events` (UCI, in order): every `move`, less those a
/// later `move_retracted` for a misread took back.
pub fn moves_standing<'a>(events: impl IntoIterator<Item = &'a Event>) -> [Vec<String>; 2] {
    ucis(&standing_readings(events))
}

/// The moves of [`standing_readings`] without their readings.
pub fn ucis(standing: &[Vec<(String, Option<MoveReading>)>; 2]) -> [Vec<String>; 2] {
    standing
        .each_ref()
        .map(|moves| moves.iter().map(|(uci, _)| uci.clone()).collect())
}

/// [`moves_standing`] with how surely each move was read (`None` for moves not read by the
/// camera tracker).
pub fn standing_readings<'a>(
    events: impl IntoIterator<Item = &'a Event>,
) -> [Vec<(String, Option<MoveReading>)>; 2] {
    let mut out: [Vec<_>; 2] = [Vec::new(), Vec::new()];
    for e in events {
        match (&e.body, e.board) {
            (EventBody::Move { uci, reading, .. }, Some(b)) => {
                out[b.index()].push((uci.clone(), *reading))
            }
            (EventBody::MoveRetracted { reason, .. }, Some(b)) if reason == MISREAD => {
                out[b.index()].pop();
            }
            _ => {}
        }
    }
    out
}

/// Moves committed and right, for one kind of reading.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ReadTally {
    pub committed: usize,
    pub right: usize,
}

/// How often the tracker's sure moves and its guesses were right ([`MoveReading::guess`]); a
/// move is right when it is in a longest common subsequence with the truth (as `moves_right`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ReadingScore {
    pub sure: ReadTally,
    pub guessed: ReadTally,
}

impl ReadingScore {
    /// Scores one board's standing moves against its true moves.
    pub fn of_board(standing: &[(String, Option<MoveReading>)], truth: &[String]) -> ReadingScore {
        let moves: Vec<String> = standing.iter().map(|(u, _)| u.clone()).collect();
        let mut score = ReadingScore::default();
        for ((_, reading), right) in standing.iter().zip(lcs_members(&moves, truth)) {
            let tally = if reading.is_some_and(|r| r.guess) {
                &mut score.guessed
            } else {
                &mut score.sure
            };
            tally.committed += 1;
            tally.right += usize::from(right);
        }
        score
    }

    /// Adds another score to this one.
    pub fn add(&mut self, other: &ReadingScore) {
        for (a, b) in [
            (&mut self.sure, &other.sure),
            (&mut self.guessed, &other.guessed),
        ] {
            a.committed += b.committed;
            a.right += b.right;
        }
    }
}

/// What to evaluate with.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    pub sim: SimConfig,
    pub tracker: TrackerConfig,
    pub rules: RuleSet,
    pub seed: u64,
    /// Feed the simulated clock presses to the tracker.
    pub clock: bool,
    /// Record each game's decisions and events in [`GameReport::trace`].
    pub trace: bool,
    /// Evaluate only the game with this index (its simulation is the same as in a full run).
    pub only_game: Option<usize>,
}

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions {
            sim: SimConfig::default(),
            tracker: TrackerConfig::default(),
            rules: RuleSet::fics(),
            seed: 1,
            clock: false,
            trace: false,
            only_game: None,
        }
    }
}

/// The outcome for one game.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GameReport {
    /// Index of the game in the input file.
    pub game: usize,
    pub moves_truth: usize,
    pub moves_committed: usize,
    pub moves_right: usize,
    /// The standing moves split by how surely they were read.
    #[serde(default)]
    pub readings: ReadingScore,
    pub all_right: bool,
    pub desyncs: usize,
    pub false_alerts: usize,
    pub incidents_injected: usize,
    pub incidents_detected: usize,
    /// The same two counts per incident kind (`hidden_pocket`, `handover_missing`).
    pub incidents_by_kind: BTreeMap<String, KindRecall>,
    /// Observations fed to the tracker.
    pub observations: usize,
    /// With [`EvalOptions::trace`]: one JSON object per line to write, each with this game's
    /// index — every tracker decision (`"trace": "decision"`), every event (`"event"`) and the
    /// true moves (`"truth"`), for diagnosing a game afterwards. Not in the JSON report.
    #[serde(skip)]
    pub trace: Vec<serde_json::Value>,
}

/// The outcome over all games.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalReport {
    pub games: usize,
    /// Games that could not be simulated (index and reason), e.g. a truncated record.
    pub skipped: Vec<(usize, String)>,
    pub moves_truth: usize,
    pub moves_right: usize,
    pub move_accuracy: f64,
    /// The standing moves split by how surely they were read, summed over games.
    #[serde(default)]
    pub readings: ReadingScore,
    pub games_all_right: usize,
    pub games_all_right_fraction: f64,
    pub desyncs: usize,
    pub false_alerts: usize,
    pub incidents_injected: usize,
    pub incidents_detected: usize,
    pub incident_recall: Option<f64>,
    /// Injected, detected and recall per incident kind: the target holds for every kind.
    pub incidents_by_kind: BTreeMap<String, KindRecall>,
    pub latency_samples: usize,
    pub latency_ms_p50: f64,
    pub latency_ms_p99: f64,
    pub latency_ms_max: f64,
    pub per_game: Vec<GameReport>,
}

/// Detection of one kind of injected incident; `recall` is `None` when none was injected.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KindRecall {
    pub injected: usize,
    pub detected: usize,
    pub recall: Option<f64>,
}

impl KindRecall {
    fn add(&mut self, injected: usize, detected: usize) {
        self.injected += injected;
        self.detected += detected;
        self.recall = (self.injected > 0).then(|| self.detected as f64 / self.injected as f64);
    }
}

/// Longest common subsequence length: moves right in order, a missed or extra move counted once.
pub fn lcs(a: &[String], b: &[String]) -> usize {
    let mut prev = vec![0usize; b.len() + 1];
    let mut cur = vec![0usize; b.len() + 1];
    for x in a {
        for (j, y) in b.iter().enumerate() {
            cur[j + 1] = if x == y {
                prev[j] + 1
            } else {
                cur[j].max(prev[j + 1])
            };
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// Which elements of `a` belong to one longest common subsequence of `a` and `b` (as many as
/// [`lcs`] counts).
pub fn lcs_members(a: &[String], b: &[String]) -> Vec<bool> {
    let (n, m) = (a.len(), b.len());
    // table[i][j]: the LCS length of a[i..] and b[j..].
    let mut table = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            table[i][j] = if a[i] == b[j] {
                table[i + 1][j + 1] + 1
            } else {
                table[i + 1][j].max(table[i][j + 1])
            };
        }
    }
    let mut member = vec![false; n];
    let (mut i, mut j) = (0, 0);
    while i < n && j < m {
        if a[i] == b[j] {
            member[i] = true;
            i += 1;
            j += 1;
        } else if table[i + 1][j] >= table[i][j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    member
}

/// Runs the tracker on one simulated game; returns its report and the latencies (ms).
pub fn eval_game(
    game: &BpgnGame,
    index: usize,
    opts: &EvalOptions,
) -> Result<(GameReport, Vec<f64>), String> {
    let variant = opts.rules.variant();
    let seed = opts.seed.wrapping_mul(1_000_003).wrapping_add(index as u64);
    let sim = simulate_game(game, &variant, &opts.sim, seed).map_err(|e| e.to_string())?;
    let mut tracker = Tracker::new(
        "sim",
        index as u32,
        opts.rules.clone(),
        game.start_fen(),
        opts.tracker.clone(),
    )
    .map_err(|e| e.to_string())?;
    tracker.record_decisions(opts.trace);
    let mut events: Vec<Event> = Vec::new();
    let mut latencies = Vec::new();
    let mut presses = sim.presses.iter().peekable();
    for obs in &sim.observations {
        if opts.clock {
            while let Some(&&(ts, board)) = presses.peek() {
                if ts > obs.ts {
                    break;
                }
                presses.next();
                let t0 = Instant::now();
                let out = tracker.press(board, ts);
                if out.iter().any(|e| matches!(e.body, EventBody::Move { .. })) {
                    latencies.push(t0.elapsed().as_secs_f64() * 1000.0);
                }
                events.extend(out);
            }
        }
        let t0 = Instant::now();
        let out = tracker.observe(obs);
        if out.iter().any(|e| matches!(e.body, EventBody::Move { .. })) {
            latencies.push(t0.elapsed().as_secs_f64() * 1000.0);
        }
        events.extend(out);
    }
    let standing = standing_readings(&events);
    let committed = ucis(&standing);
    let mut right = 0;
    let mut all_right = true;
    let mut readings = ReadingScore::default();
    for b in [BoardId::A, BoardId::B] {
        right += lcs(&committed[b.index()], &sim.truth[b.index()]);
        all_right &= committed[b.index()] == sim.truth[b.index()];
        readings.add(&ReadingScore::of_board(
            &standing[b.index()],
            &sim.truth[b.index()],
        ));
    }
    let grace = opts.tracker.pocket_grace_ms;
    let detectable: Vec<_> = sim
        .incidents
        .iter()
        .filter(|i| i.end.saturating_sub(i.start) >= grace + 1000)
        .collect();
    let mut detected = 0;
    let mut by_kind: BTreeMap<String, KindRecall> = BTreeMap::new();
    let mut matched_events = vec![false; events.len()];
    for inc in &detectable {
        let hit = events.iter().enumerate().position(|(k, e)| {
            !matched_events[k]
                && e.board == Some(inc.board)
                && e.ts >= inc.start
                && e.ts <= inc.end + grace + 1000
                && match &e.body {
                    EventBody::HiddenPocket { color, .. } => {
                        inc.kind == "hidden_pocket" && *color == inc.color
                    }
                    EventBody::HandoverMissing { color, .. } => {
                        inc.kind == "handover_missing" && *color == inc.color
                    }
                    _ => false,
                }
        });
        if let Some(k) = hit {
            matched_events[k] = true;
            detected += 1;
        }
        by_kind
            .entry(inc.kind.clone())
            .or_default()
            .add(1, usize::from(hit.is_some()));
    }
    let mut desyncs = 0;
    let mut false_alerts = 0;
    for (k, e) in events.iter().enumerate() {
        match &e.body {
            EventBody::Desync {
                state: DesyncState::Lost,
                ..
            } => {
                desyncs += 1;
                false_alerts += 1;
            }
            EventBody::IllegalMove { .. } => false_alerts += 1,
            EventBody::HiddenPocket { .. } | EventBody::HandoverMissing { .. } => {
                // An alert for an injected incident too short to count is not false either.
                let explained = matched_events[k]
                    || sim.incidents.iter().any(|i| {
                        e.board == Some(i.board) && e.ts >= i.start && e.ts <= i.end + grace + 1000
                    });
                if !explained {
                    false_alerts += 1;
                }
            }
            _ => {}
        }
    }
    let mut trace = Vec::new();
    if opts.trace {
        let tagged = |kind: &str, value: serde_json::Value| {
            let mut line = serde_json::json!({ "game": index, "trace": kind });
            if let (Some(out), serde_json::Value::Object(fields)) = (line.as_object_mut(), value) {
                out.extend(fields);
            }
            line
        };
        for d in tracker.take_decisions() {
            trace.push(tagged(
                "decision",
                serde_json::to_value(&d).unwrap_or_default(),
            ));
        }
        for e in &events {
            trace.push(tagged("event", serde_json::to_value(e).unwrap_or_default()));
        }
        trace.push(tagged("truth", serde_json::json!({ "moves": sim.truth })));
    }
    let report = GameReport {
        game: index,
        moves_truth: sim.truth[0].len() + sim.truth[1].len(),
        moves_committed: committed[0].len() + committed[1].len(),
        moves_right: right,
        readings,
        all_right,
        desyncs,
        false_alerts,
        incidents_injected: detectable.len(),
        incidents_detected: detected,
        incidents_by_kind: by_kind,
        observations: sim.observations.len(),
        trace,
    };
    Ok((report, latencies))
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Evaluates every game; games that cannot be simulated are listed in `skipped`.
pub fn eval_games(games: &[BpgnGame], opts: &EvalOptions) -> EvalReport {
    let mut per_game = Vec::new();
    let mut skipped = Vec::new();
    let mut latencies = Vec::new();
    for (i, game) in games.iter().enumerate() {
        if opts.only_game.is_some_and(|only| only != i) {
            continue;
        }
        match eval_game(game, i, opts) {
            Ok((r, l)) => {
                per_game.push(r);
                latencies.extend(l);
            }
            Err(e) => skipped.push((i, e)),
        }
    }
    latencies.sort_by(f64::total_cmp);
    let sum = |f: fn(&GameReport) -> usize| per_game.iter().map(f).sum::<usize>();
    let moves_truth = sum(|g| g.moves_truth);
    let moves_denominator: usize = per_game
        .iter()
        .map(|g| g.moves_truth.max(g.moves_committed))
        .sum();
    let moves_right = sum(|g| g.moves_right);
    let games_all_right = per_game.iter().filter(|g| g.all_right).count();
    let mut readings = ReadingScore::default();
    for g in &per_game {
        readings.add(&g.readings);
    }
    let incidents_injected = sum(|g| g.incidents_injected);
    let incidents_detected = sum(|g| g.incidents_detected);
    let mut incidents_by_kind: BTreeMap<String, KindRecall> = BTreeMap::new();
    for g in &per_game {
        for (kind, k) in &g.incidents_by_kind {
            incidents_by_kind
                .entry(kind.clone())
                .or_default()
                .add(k.injected, k.detected);
        }
    }
    EvalReport {
        games: per_game.len(),
        skipped,
        moves_truth,
        moves_right,
        move_accuracy: moves_right as f64 / moves_denominator.max(1) as f64,
        readings,
        games_all_right,
        games_all_right_fraction: games_all_right as f64 / per_game.len().max(1) as f64,
        desyncs: sum(|g| g.desyncs),
        false_alerts: sum(|g| g.false_alerts),
        incidents_injected,
        incidents_detected,
        incident_recall: (incidents_injected > 0)
            .then(|| incidents_detected as f64 / incidents_injected as f64),
        incidents_by_kind,
        latency_samples: latencies.len(),
        latency_ms_p50: percentile(&latencies, 0.5),
        latency_ms_p99: percentile(&latencies, 0.99),
        latency_ms_max: latencies.last().copied().unwrap_or(0.0),
        per_game,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_misread_retraction_takes_a_standing_move_back() {
        let event = |board, body| Event {
            id: String::new(),
            table: "t".into(),
            ts: 0,
            board: Some(board),
            body,
        };
        let mv = |uci: &str| EventBody::Move {
            color: crate::engine::Color::White,
            number: 1,
            uci: uci.into(),
            san: uci.into(),
            fen: String::new(),
            clock_ms: None,
            legal: true,
            reading: None,
        };
        let retracted = |reason: &str| EventBody::MoveRetracted {
            color: crate::engine::Color::White,
            uci: String::new(),
            reason: reason.into(),
            fen: String::new(),
        };
        let events = [
            event(BoardId::A, mv("e2e4")),
            event(BoardId::B, mv("d2d4")),
            event(BoardId::A, mv("g1h3")),
            event(BoardId::A, retracted(MISREAD)),
            event(BoardId::A, mv("g1f3")),
            event(BoardId::B, mv("e1e3")),
            event(BoardId::B, retracted("illegal_move")),
        ];
        let standing = moves_standing(&events);
        assert_eq!(standing[0], ["e2e4", "g1f3"]);
        // A take-back under the rules leaves the illegal move in the record (it was made).
        assert_eq!(standing[1], ["d2d4", "e1e3"]);
    }

    #[test]
    fn a_traced_game_records_its_decisions_events_and_truth() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/games/fics-64.bpgn");
        let games = crate::engine::bpgn::parse_bpgn(&std::fs::read(path).unwrap()).unwrap();
        let opts = EvalOptions {
            trace: true,
            only_game: Some(1),
            clock: true,
            ..EvalOptions::default()
        };
        let report = eval_games(&games[..3], &opts);
        assert_eq!(report.per_game.len(), 1);
        let game = &report.per_game[0];
        assert_eq!(game.game, 1);
        assert!(game.trace.iter().all(|l| l["game"] == 1));
        let kind = |k: &'static str| game.trace.iter().filter(move |l| l["trace"] == k);
        assert!(kind("decision").count() > 0);
        assert!(kind("decision").all(|d| d["board"] == "A" || d["board"] == "B"));
        let moves = kind("event").filter(|e| e["type"] == "move").count();
        assert_eq!(moves, game.moves_committed);
        assert_eq!(kind("truth").count(), 1);
        // The same game evaluated alone is the same game as in a full run.
        let alone = eval_game(
            &games[1],
            1,
            &EvalOptions {
                clock: true,
                ..EvalOptions::default()
            },
        )
        .unwrap()
        .0;
        assert_eq!(alone.moves_right, game.moves_right);
        assert!(alone.trace.is_empty());
    }

    #[test]
    fn incidents_are_counted_per_kind_as_well_as_in_all() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/games/fics-64.bpgn");
        let games = crate::engine::bpgn::parse_bpgn(&std::fs::read(path).unwrap()).unwrap();
        let mut opts = EvalOptions {
            clock: true,
            ..EvalOptions::default()
        };
        opts.sim.handover_missing_rate = 0.5;
        opts.sim.hidden_pocket_rate = 0.1;
        let report = eval_games(&games[..4], &opts);
        let kinds: Vec<&str> = report
            .incidents_by_kind
            .keys()
            .map(|k| k.as_str())
            .collect();
        assert_eq!(kinds, ["handover_missing", "hidden_pocket"]);
        let injected: usize = report.incidents_by_kind.values().map(|k| k.injected).sum();
        let detected: usize = report.incidents_by_kind.values().map(|k| k.detected).sum();
        assert_eq!(injected, report.incidents_injected);
        assert_eq!(detected, report.incidents_detected);
        for k in report.incidents_by_kind.values() {
            assert!(k.detected <= k.injected);
            assert_eq!(k.recall, Some(k.detected as f64 / k.injected as f64));
        }
    }

    #[test]
    fn lcs_members_mark_as_many_moves_as_lcs_counts() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let (a, b) = (s(&["a", "x", "b", "c", "y"]), s(&["a", "b", "c", "d"]));
        assert_eq!(lcs_members(&a, &b), [true, false, true, true, false]);
        assert_eq!(
            lcs_members(&a, &b).iter().filter(|&&m| m).count(),
            lcs(&a, &b)
        );
        assert_eq!(lcs_members(&s(&["a"]), &s(&[])), [false]);
    }

    #[test]
    fn readings_split_the_standing_moves_into_sure_ones_and_guesses() {
        let guess = Some(MoveReading::new(0.4, true));
        let sure = Some(MoveReading::new(6.0, false));
        let standing = vec![
            ("e2e4".to_string(), sure),
            ("b2b3".to_string(), guess),
            ("e7e5".to_string(), None),
            ("g1f3".to_string(), guess),
        ];
        let truth: Vec<String> = ["e2e4", "e7e5", "g1f3", "b8c6"].map(String::from).to_vec();
        let score = ReadingScore::of_board(&standing, &truth);
        // The common subsequence is e2e4 e7e5 g1f3: both sure moves (a move without a reading
        // counts as sure) are right, one guess of two.
        assert_eq!(
            score,
            ReadingScore {
                sure: ReadTally {
                    committed: 2,
                    right: 2
                },
                guessed: ReadTally {
                    committed: 2,
                    right: 1
                },
            }
        );
        let mut twice = score;
        twice.add(&score);
        assert_eq!(twice.guessed.committed, 4);
        assert_eq!(twice.sure.right, 4);
    }

    #[test]
    fn lcs_counts_one_missed_move_once() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(lcs(&s(&["a", "b", "c", "d"]), &s(&["a", "c", "d"])), 3);
        assert_eq!(lcs(&s(&["a", "b"]), &s(&["b", "a"])), 1);
        assert_eq!(lcs(&s(&[]), &s(&["a"])), 0);
    }
}
