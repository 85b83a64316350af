//! Whole-game rendering: the committed rendered game is consistent with its truth and with the
//! rules engine; timing follows the clocks; hands, handovers and incidents show up where the
//! truth says; a render is deterministic.

use std::path::Path;

use tandem_monitor::engine::bpgn::{BpgnGame, parse_bpgn};
use tandem_monitor::engine::{BoardId, Table, Variant};
use tandem_monitor::sim::game::{
    FrameTruth, GameInfo, GameOptions, IncidentKind, IncidentRequest, plan_game, render_game,
    time_moves,
};
use tandem_monitor::sim::scene::PieceSpot;
use tandem_monitor::sim::{PieceSet, SimSettings, TableLayout, Variation};

const GAME: &str = "fixtures/games/fics-1921708.bpgn";
const FIXTURE: &str = "fixtures/sim-game";
const HEIGHTS: [f32; 6] = [0.05, 0.06, 0.065, 0.07, 0.085, 0.095];

fn game() -> BpgnGame {
    let bytes = std::fs::read(GAME).expect("fixture BPGN is committed");
    parse_bpgn(&bytes).expect("fixture BPGN parses").remove(0)
}

fn truth_lines(dir: &Path) -> Vec<FrameTruth> {
    std::fs::read_to_string(dir.join("truth.jsonl"))
        .expect("truth.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("truth line parses"))
        .collect()
}

fn info(dir: &Path) -> GameInfo {
    serde_json::from_str(&std::fs::read_to_string(dir.join("game.json")).expect("game.json"))
        .expect("game.json parses")
}

/// Placement part of an engine FEN (promotion markers dropped).
fn engine_placement(t: &Table, b: BoardId) -> String {
    let fen = t.board(b).to_fen();
    fen.split([' ', '[']).next().unwrap_or("").replace('~', "")
}

fn board_placement(table_fen: &str, b: usize) -> String {
    let part = table_fen.split(" | ").nth(b).expect("two boards");
    part.split('[').next().unwrap_or("").to_string()
}

#[test]
fn committed_game_frames_match_truth_and_replay_through_the_engine() {
    let dir = Path::new(FIXTURE);
    let info = info(dir);
    let lines = truth_lines(dir);
    assert_eq!(lines.len() as u64, info.frames);
    let mut files: Vec<_> = std::fs::read_dir(dir.join("frames"))
        .expect("frames/")
        .map(|e| {
            e.expect("dir entry")
                .file_name()
                .into_string()
                .expect("utf-8")
        })
        .collect();
    files.sort();
    assert_eq!(files.len() as u64, info.frames);
    for (i, (line, name)) in lines.iter().zip(&files).enumerate() {
        assert_eq!(line.frame, i as u64);
        assert_eq!(name, &format!("{i:06}.jpg"));
        if i > 0 {
            assert!(line.ts_ms > lines[i - 1].ts_ms, "monotonic ts at {i}");
        }
        assert_eq!(line.ts_ms, (i as f64 * 1000.0 / info.fps).round() as u64);
    }
    for name in files.iter().step_by(25) {
        let img = image::open(dir.join("frames").join(name)).expect("frame decodes");
        assert_eq!((img.width(), img.height()), (info.width, info.height));
    }
    // Every placement a board shows while no hand is over it is a position the engine reaches
    // by replaying the game, in order.
    let g = game();
    let v = Variant::fics();
    let mut table = Table::new();
    let mut positions = [
        vec![engine_placement(&table, BoardId::A)],
        vec![engine_placement(&table, BoardId::B)],
    ];
    for m in g.moves.iter().take(info.moves) {
        let mv = table.parse_san(m.board, &m.san, &v).expect("game SAN");
        table.play(m.board, mv, &v).expect("game move is legal");
        positions[m.board.index()].push(engine_placement(&table, m.board));
    }
    for (b, positions) in positions.iter().enumerate() {
        let mut k = 0;
        let mut seen = 0;
        for line in lines.iter().filter(|l| !l.hands[b]) {
            let p = board_placement(&line.table_fen, b);
            match positions[k..].iter().position(|q| *q == p) {
                Some(d) => k += d,
                None => panic!(
                    "frame {}: board {b} shows {p}, not a later position of the game",
                    line.frame
                ),
            }
            seen += 1;
        }
        assert!(seen > 20, "board {b} has hand-free frames");
        assert!(k >= 4, "board {b} advanced through the game ({k} moves)");
    }
}

#[test]
fn press_times_are_the_time_both_clocks_used() {
    let g = game();
    let moves = time_moves(&g, &Variant::fics()).expect("game resolves");
    let mut last = [0.0f64; 2];
    let mut clocks = [[120.0f64; 2]; 2];
    for (m, src) in moves.iter().zip(&g.moves) {
        let b = m.board;
        clocks[b][src.color.index()] = src.clock.expect("every move has a clock");
        let used = 240.0 - clocks[b][0] - clocks[b][1];
        assert!((m.press - used.max(last[b] + 0.1)).abs() < 1e-9);
        assert!(m.press > last[b]);
        last[b] = m.press;
        assert_eq!(m.remaining, clocks[b]);
    }
    // 1B. e4{118.305}: White of B used 1.695 s.
    assert!((moves[0].press - 1.695).abs() < 1e-9);
}

#[test]
fn hands_reach_in_before_each_press_and_leave_after() {
    let dir = Path::new(FIXTURE);
    let lines = truth_lines(dir);
    let info = info(dir);
    let moves = time_moves(&game(), &Variant::fics()).expect("game resolves");
    let at = |t: f64| {
        let f = (t * info.fps).round() as usize;
        lines.get(f)
    };
    let mut checked = 0;
    for m in moves.iter().take(info.moves) {
        let Some(before) = at(m.press - 0.1) else {
            continue;
        };
        assert!(
            before.hands[m.board],
            "hand over board {} before press at {}",
            m.board, m.press
        );
        checked += 1;
    }
    assert!(checked >= 10);
    // The plan: a hand is off the table long before a slow move and gone after it.
    let plan = plan_game(&game(), &TableLayout::default(), HEIGHTS, &[], 1, None).expect("plan");
    let mut slow = 0;
    for (i, m) in plan.moves.iter().enumerate() {
        let hand = &plan.hands[m.board][m.side as usize];
        let prev = plan.moves[..i]
            .iter()
            .rev()
            .find(|p| p.board == m.board && p.side == m.side)
            .map_or(0.0, |p| p.press);
        let next = plan.moves[i + 1..]
            .iter()
            .find(|p| p.board == m.board && p.side == m.side)
            .map_or(f64::INFINITY, |p| p.press);
        assert!(
            hand.palm(m.press - 0.02).is_some(),
            "hand at the clock for move {i}"
        );
        if m.press - prev > 6.0 && next - m.press > 6.0 && m.outcome.captured.is_none() {
            assert!(
                hand.palm(m.press - 4.0).is_none(),
                "hand away while thinking, move {i}"
            );
            assert!(
                hand.palm(m.press + 1.0).is_none(),
                "hand gone after move {i}"
            );
            slow += 1;
        }
    }
    assert!(slow >= 3);
}

#[test]
fn captured_pieces_end_in_the_partners_pocket() {
    let dir = Path::new(FIXTURE);
    let lines = truth_lines(dir);
    let info = info(dir);
    let moves = time_moves(&game(), &Variant::fics()).expect("game resolves");
    let mut checked = 0;
    for (i, m) in moves.iter().enumerate().take(info.moves) {
        let Some(cap) = m.outcome.captured else {
            continue;
        };
        // Skip a piece the partner drops again right away (it is in a hand, not the pocket).
        let dropped_soon = moves[i + 1..].iter().any(|n| {
            n.board != m.board
                && n.press < m.press + 2.5
                && matches!(n.mv, tandem_monitor::engine::Move::Drop { role, .. } if role == cap.role)
        });
        if dropped_soon {
            continue;
        }
        let f = ((m.press + 0.3) * info.fps).ceil() as usize;
        let Some(line) = lines.get(f) else { continue };
        let partner = 1 - m.board;
        let side = cap.color.index();
        assert!(
            line.pockets[partner][side].contains(cap.char()),
            "frame {f}: {} captured on board {} is in pocket {:?}",
            cap.char(),
            m.board,
            line.pockets[partner]
        );
        checked += 1;
    }
    assert!(checked >= 1, "the fixture holds a capture");
}

#[test]
fn every_incident_kind_is_planned_with_its_frames() {
    let out = tempfile::tempdir().expect("tempdir");
    let requests: Vec<IncidentRequest> = IncidentKind::ALL
        .iter()
        .map(|k| IncidentRequest {
            kind: *k,
            at_move: 0,
        })
        .collect();
    let settings = SimSettings {
        width: 64,
        height: 36,
        shadow_map: 256,
        ..SimSettings::default()
    };
    let options = GameOptions {
        plan_only: true,
        ..GameOptions::default()
    };
    let s = render_game(
        &game(),
        GAME,
        0,
        &requests,
        &PieceSet::builtin(),
        &settings,
        &options,
        out.path(),
    )
    .expect("plan with every incident");
    let json = info(out.path());
    assert_eq!(json.incidents.len(), IncidentKind::ALL.len());
    for k in IncidentKind::ALL {
        let inc = json
            .incidents
            .iter()
            .find(|i| i.kind == k)
            .unwrap_or_else(|| panic!("{k:?} in game.json"));
        assert!(inc.frames[0] <= inc.frames[1]);
        assert!(inc.ts_ms[0] <= inc.ts_ms[1]);
        let fps_frames = (inc.ts_ms[1] as f64 * json.fps / 1000.0).floor() as u64;
        assert_eq!(inc.frames[1], fps_frames.max(inc.frames[0]));
        assert!(inc.ts_ms[1] <= s.info.duration_ms);
    }
    // The illegal move pressed the clock once more than the game has moves.
    let presses = std::fs::read_to_string(out.path().join("clock.jsonl")).expect("clock.jsonl");
    let extra = presses
        .lines()
        .filter(|l| l.contains("\"move_index\":null"))
        .count();
    assert_eq!(extra, 1);
    assert_eq!(presses.lines().count(), json.moves + 1);
    // The drop-mate ends the game with a mating drop.
    let dm = json
        .incidents
        .iter()
        .find(|i| i.kind == IncidentKind::DropMate)
        .expect("drop-mate");
    assert!(dm.san.contains('@') && dm.san.ends_with('#'), "{}", dm.san);
    assert_eq!(dm.move_index + 1, json.moves);
}

/// The fixture game planned with one incident of `kind`.
fn plan_with(kind: IncidentKind) -> tandem_monitor::sim::game::GamePlan {
    let req = [IncidentRequest { kind, at_move: 0 }];
    plan_game(&game(), &TableLayout::default(), HEIGHTS, &req, 3, None).expect("plan")
}

#[test]
fn a_late_handover_keeps_the_piece_out_of_the_partners_pocket() {
    let plan = plan_with(IncidentKind::MissingHandover);
    let inc = &plan.incidents[0];
    let m = &plan.moves[inc.move_index];
    let partner = 1 - m.board;
    let pocket_count = |t: f64| {
        plan.pieces
            .iter()
            .filter(
                |p| matches!(p.pose(t).spot, PieceSpot::Pocket { board, .. } if board == partner),
            )
            .count()
    };
    let mid = (inc.ts_ms[0] + inc.ts_ms[1]) as f64 / 2000.0;
    let after = inc.ts_ms[1] as f64 / 1000.0 + 0.05;
    assert!(inc.ts_ms[1] - inc.ts_ms[0] >= 900, "the incident lasts");
    assert!(
        pocket_count(after) > pocket_count(mid),
        "the piece reaches the pocket only at the end"
    );
}

#[test]
fn a_hidden_pocket_piece_leaves_the_owners_zone_for_his_hand_and_comes_back() {
    let plan = plan_with(IncidentKind::HiddenPocket);
    let inc = &plan.incidents[0];
    let m = &plan.moves[inc.move_index];
    let (b, side) = (m.board, m.side);
    // The mover's own zone on his own board (rule 004 §5c: pieces "in der Hand" hidden).
    let own = |t: f64| -> Vec<usize> {
        (0..plan.pieces.len())
            .filter(|&i| {
                matches!(plan.pieces[i].pose(t).spot,
                    PieceSpot::Pocket { board, side: s, .. } if board == b && s == side)
            })
            .collect()
    };
    let t0 = inc.ts_ms[0] as f64 / 1000.0;
    let t1 = inc.ts_ms[1] as f64 / 1000.0;
    assert!(t0 >= m.press, "hidden after the press");
    assert!(
        t1 - t0 >= 4.0,
        "long enough to outlast a 3-s grace: {t0}..{t1}"
    );
    let before = own(t0 - 0.05);
    let during = own((t0 + t1) / 2.0);
    let after = own(t1 + 0.05);
    // Exactly one piece of the zone is gone meanwhile (a partner's capture may arrive).
    let hidden: Vec<usize> = before
        .iter()
        .copied()
        .filter(|p| !during.contains(p))
        .collect();
    assert_eq!(hidden.len(), 1);
    let h = hidden[0];
    assert_eq!(plan.pieces[h].pose((t0 + t1) / 2.0).spot, PieceSpot::InHand);
    assert!(after.contains(&h), "the same piece is back in the zone");
    assert!(before.iter().all(|p| after.contains(p)));
    // It is still the owner's piece.
    assert_eq!(plan.pieces[h].pose(t1 + 0.05).piece.side, side);
}

#[test]
fn slide_moves_the_piece_over_the_squares_in_between() {
    let out = tempfile::tempdir().expect("tempdir");
    let req = ["slide".parse::<IncidentRequest>().expect("request")];
    let settings = SimSettings {
        width: 64,
        height: 36,
        shadow_map: 256,
        variation: Variation::none(),
        ..SimSettings::default()
    };
    let plan = plan_game(&game(), &TableLayout::default(), HEIGHTS, &req, 0, None).expect("plan");
    let inc = plan.incidents[0].clone();
    let options = GameOptions {
        max_seconds: Some(inc.ts_ms[1] as f64 / 1000.0 + 0.2),
        threads: 2,
        ..GameOptions::default()
    };
    render_game(
        &game(),
        GAME,
        0,
        &req,
        &PieceSet::builtin(),
        &settings,
        &options,
        out.path(),
    )
    .expect("render");
    let lines = truth_lines(out.path());
    let json = info(out.path());
    let inc = &json.incidents[0];
    let m = &plan.moves[inc.move_index];
    let (from, to) = match m.mv {
        tandem_monitor::engine::Move::Normal { from, to, .. } => (from, to),
        other => panic!("slide on a normal move, got {other:?}"),
    };
    let b = m.board;
    let letter = m
        .before
        .board(if b == 0 { BoardId::A } else { BoardId::B })
        .piece_at(from)
        .expect("moved piece")
        .char();
    // Intermediate squares along the line.
    let (df, dr) = (
        (to.file() as i32 - from.file() as i32).signum(),
        (to.rank() as i32 - from.rank() as i32).signum(),
    );
    let mut between = Vec::new();
    let (mut f, mut r) = (from.file() as i32 + df, from.rank() as i32 + dr);
    while (f, r) != (to.file() as i32, to.rank() as i32) {
        between.push((r * 8 + f) as usize);
        f += df;
        r += dr;
    }
    let on_between = lines
        .iter()
        .filter(|l| l.incidents.contains(&IncidentKind::Slide))
        .any(|l| {
            let squares = expand(&board_placement(&l.table_fen, b));
            between.iter().any(|&s| squares[s] == Some(letter))
        });
    assert!(
        !between.is_empty() && on_between,
        "slid piece seen on a square in between"
    );
}

/// 64 squares (index rank * 8 + file) from a FEN placement.
fn expand(placement: &str) -> Vec<Option<char>> {
    let mut sq = vec![None; 64];
    for (i, rank) in placement.split('/').enumerate() {
        let r = 7 - i;
        let mut f = 0;
        for c in rank.chars() {
            if let Some(d) = c.to_digit(10) {
                f += d as usize;
            } else {
                sq[r * 8 + f] = Some(c);
                f += 1;
            }
        }
    }
    sq
}

#[test]
fn a_short_render_is_deterministic_across_thread_counts() {
    let dirs = [
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
    ];
    let settings = SimSettings {
        width: 96,
        height: 54,
        shadow_map: 256,
        seed: 5,
        ..SimSettings::default()
    };
    for (dir, threads) in dirs.iter().zip([1, 2]) {
        let options = GameOptions {
            max_seconds: Some(1.85),
            threads,
            ..GameOptions::default()
        };
        render_game(
            &game(),
            GAME,
            0,
            &[],
            &PieceSet::builtin(),
            &settings,
            &options,
            dir.path(),
        )
        .expect("render");
    }
    for name in [
        "truth.jsonl",
        "clock.jsonl",
        "frames/000000.jpg",
        "frames/000017.jpg",
    ] {
        let a = std::fs::read(dirs[0].path().join(name)).expect("first");
        let b = std::fs::read(dirs[1].path().join(name)).expect("second");
        assert_eq!(a, b, "{name}");
    }
    let frames = std::fs::read_dir(dirs[0].path().join("frames"))
        .expect("frames")
        .count();
    assert_eq!(frames, 19);
}

#[test]
fn dataset_export_writes_labelled_square_and_pocket_crops() {
    use tandem_monitor::sim::dataset::{DatasetOptions, export_dataset};
    let out = tempfile::tempdir().expect("tempdir");
    let opts = DatasetOptions {
        frames: 1,
        seed: 4,
        width: 160,
        height: 90,
        square_crop: [16, 24],
        pocket_crop: [32, 24],
        ..DatasetOptions::default()
    };
    let s = export_dataset(&PieceSet::builtin(), &opts, out.path()).expect("export");
    assert_eq!(s.squares, 128);
    assert_eq!(s.pockets, 4);
    let labels = std::fs::read_to_string(out.path().join("labels.csv")).expect("labels.csv");
    let mut lines = labels.lines();
    assert_eq!(lines.next(), Some("path,label,split"));
    let allowed = [
        "empty", "P", "N", "B", "R", "Q", "K", "p", "n", "b", "r", "q", "k",
    ];
    let mut kings = 0;
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        assert_eq!(f.len(), 3, "{l}");
        assert!(allowed.contains(&f[1]), "{l}");
        assert!(["train", "val", "test"].contains(&f[2]), "{l}");
        kings += (f[1] == "K" || f[1] == "k") as usize;
        let img = image::open(out.path().join(f[0])).expect("crop decodes");
        assert_eq!((img.width(), img.height()), (16, 24));
    }
    assert_eq!(kings, 4, "two kings per board");
}
