//! Tampering with a recorded game — one byte of a record, a whole record, the order of two
//! records, one byte of a frame, a frame file — is named exactly by `verify`, both in the game
//! directory and in a game unzipped from `export`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use tandem_monitor::evidence::{
    self, EvidenceConfig, Frame, GameMeta, GameRecorder, ProblemKind, SigningKey, VerifyOptions,
};

fn tiny_jpeg(shade: u8) -> Vec<u8> {
    let img = image::RgbImage::from_fn(32, 18, |x, y| {
        image::Rgb([shade, (x * 7) as u8, (y * 13) as u8])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Jpeg)
        .expect("encoding to memory cannot fail");
    out.into_inner()
}

/// Records a short game: 12 moves with commit frames, frames at 10 fps for 6 s, one incident.
fn record_game(root: &Path, key: Option<SigningKey>) -> PathBuf {
    let config = EvidenceConfig {
        dir: root.to_path_buf(),
        before_secs: 1.0,
        after_secs: 1.0,
        ..EvidenceConfig::default()
    };
    let meta = GameMeta {
        table: "t1".into(),
        game: "g1".into(),
        calibration: Some("[board_a]\ncorners = [[0,0],[1,0],[1,1],[0,1]]\n".into()),
        model_sha256: Some(evidence::sha256_hex(b"model")),
        rule_set: "tandem-2024".into(),
        started_ts: 0,
    };
    let mut rec = GameRecorder::start(&meta, &config, key).unwrap();
    let moves = ["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6"];
    let mut n = 0;
    for ts in (0..6000).step_by(100) {
        let bytes = tiny_jpeg((ts / 100) as u8);
        rec.push_frame(Frame::new(ts, bytes.clone())).unwrap();
        if ts % 500 == 0 && n < 12 {
            let board = if n % 2 == 0 { "A" } else { "B" };
            let id = format!("m{n}");
            rec.record_event(
                &json!({"id": id, "type": "move", "table": "t1", "board": board,
                "ts": ts, "uci": moves[n / 2]}),
            )
            .unwrap();
            rec.commit_frame(&id, ts, &bytes).unwrap();
            n += 1;
        }
        if ts == 3000 {
            rec.record_event(&json!({"id": "i1", "type": "illegal_move", "table": "t1",
                "board": "A", "ts": ts, "squares": ["e4", "e5"]}))
                .unwrap();
        }
    }
    rec.finish(
        6000,
        Some(
            &json!({"id": "r", "type": "result", "table": "t1", "ts": 6000,
        "result": "1-0", "reason": "mate"}),
        ),
    )
    .unwrap()
}

fn log_lines(dir: &Path) -> Vec<Vec<u8>> {
    let data = std::fs::read(dir.join("log.jsonl")).unwrap();
    data.split_inclusive(|b| *b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

fn write_lines(dir: &Path, lines: &[Vec<u8>]) {
    std::fs::write(dir.join("log.jsonl"), lines.concat()).unwrap();
}

fn record_at(dir: &Path, seq: usize) -> Value {
    serde_json::from_slice(&log_lines(dir)[seq]).unwrap()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.join("frames")).unwrap();
    std::fs::copy(from.join("log.jsonl"), to.join("log.jsonl")).unwrap();
    for e in std::fs::read_dir(from.join("frames")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join("frames").join(e.file_name())).unwrap();
    }
}

/// The problems of `dir` as (seq, kind) pairs.
fn problems(dir: &Path) -> Vec<(Option<u64>, ProblemKind)> {
    evidence::verify(dir)
        .unwrap()
        .problems
        .into_iter()
        .map(|p| (p.seq, p.kind))
        .collect()
}

/// Index of the first frame record and its file.
fn first_frame(dir: &Path) -> (u64, String) {
    log_lines(dir)
        .iter()
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .find(|r| r["kind"] == "frame")
        .map(|r| {
            (
                r["seq"].as_u64().unwrap(),
                r["payload"]["file"].as_str().unwrap().to_string(),
            )
        })
        .unwrap()
}

/// Applies each tampering to a fresh copy of `game` and checks verify's exact findings.
fn check_all_tamperings(game: &Path, scratch: &Path) {
    let intact = evidence::verify(game).unwrap();
    assert!(intact.is_intact(), "{:?}", intact.problems);
    assert!(intact.finished);
    let n = intact.records as u64;
    assert!(n > 20, "game too small to tamper with: {n} records");

    // One byte of a record: change a digit inside record 5's payload.
    let d = scratch.join("byte");
    copy_dir(game, &d);
    let mut lines = log_lines(&d);
    let payload_start = lines[5]
        .windows(10)
        .position(|w| w == b"\"payload\":")
        .unwrap();
    let pos = payload_start
        + lines[5][payload_start..]
            .iter()
            .position(u8::is_ascii_digit)
            .unwrap();
    lines[5][pos] = if lines[5][pos] == b'9' {
        b'8'
    } else {
        lines[5][pos] + 1
    };
    write_lines(&d, &lines);
    let mut found = problems(&d);
    found.retain(|(_, k)| *k != ProblemKind::BadSignature || intact.signed);
    let mut want = vec![(Some(5), ProblemKind::HashMismatch { next_seq: 6 })];
    if intact.signed {
        // Found while reading record 5 itself, before record 6 reveals the broken link.
        want.insert(0, (Some(5), ProblemKind::BadSignature));
    }
    assert_eq!(found, want, "one changed byte in record 5");

    // One byte that breaks the record's structure.
    let d = scratch.join("structure");
    copy_dir(game, &d);
    let mut lines = log_lines(&d);
    lines[7][0] = b'[';
    write_lines(&d, &lines);
    let found = problems(&d);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(matches!(found[0], (None, ProblemKind::Malformed { .. })));
    assert_eq!(evidence::verify(&d).unwrap().problems[0].line, 8);

    // A whole record removed.
    let d = scratch.join("remove");
    copy_dir(game, &d);
    let mut lines = log_lines(&d);
    lines.remove(9);
    write_lines(&d, &lines);
    assert_eq!(
        problems(&d),
        vec![(
            Some(10),
            ProblemKind::SequenceGap {
                missing_from: 9,
                missing_to: 9
            }
        )]
    );

    // Two records swapped.
    let d = scratch.join("swap");
    copy_dir(game, &d);
    let mut lines = log_lines(&d);
    lines.swap(11, 12);
    write_lines(&d, &lines);
    assert_eq!(
        problems(&d),
        vec![
            (Some(12), ProblemKind::Reordered { expected: 11 }),
            (Some(11), ProblemKind::Reordered { expected: 13 }),
        ]
    );

    // One byte of a frame file.
    let (frame_seq, file) = first_frame(game);
    let d = scratch.join("frame-byte");
    copy_dir(game, &d);
    let mut bytes = std::fs::read(d.join(&file)).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x01;
    std::fs::write(d.join(&file), bytes).unwrap();
    assert_eq!(
        problems(&d),
        vec![(
            Some(frame_seq),
            ProblemKind::FrameHashMismatch { file: file.clone() }
        )]
    );

    // A frame file deleted.
    let d = scratch.join("frame-gone");
    copy_dir(game, &d);
    std::fs::remove_file(d.join(&file)).unwrap();
    assert_eq!(
        problems(&d),
        vec![(Some(frame_seq), ProblemKind::FrameFileMissing { file })]
    );
}

#[test]
fn tampering_in_the_game_directory_is_named_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let game = record_game(&tmp.path().join("ev"), None);
    check_all_tamperings(&game, &tmp.path().join("scratch"));
}

#[test]
fn tampering_in_an_exported_and_unzipped_game_is_named_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let key = SigningKey::from_bytes(&[42u8; 32]);
    let game = record_game(&tmp.path().join("ev"), Some(key));
    let zip_path = tmp.path().join("game.zip");
    let summary = evidence::export(&game, &zip_path).unwrap();
    assert_eq!(summary.problems, 0);
    let unzipped = tmp.path().join("unzipped");
    let mut archive = zip::ZipArchive::new(std::fs::File::open(&zip_path).unwrap()).unwrap();
    archive.extract(&unzipped).unwrap();
    let dir = unzipped.join("t1-g1");
    let readme = std::fs::read_to_string(dir.join("README.txt")).unwrap();
    assert!(
        readme.contains("Table: t1") && readme.contains("intact"),
        "{readme}"
    );
    let report = evidence::verify(&dir).unwrap();
    assert!(report.signed && report.is_intact(), "{:?}", report.problems);
    assert_eq!(report.frames, summary.frames);
    check_all_tamperings(&dir, &tmp.path().join("scratch"));

    // The CLI verifies the archive itself.
    let out = Command::new(env!("CARGO_BIN_EXE_tandem"))
        .args(["evidence", "verify"])
        .arg(&zip_path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("ok: {} records, {} frames", report.records, report.frames)
    );
}

#[test]
fn a_signed_log_fails_against_a_wrong_key_and_passes_against_its_own() {
    let tmp = tempfile::tempdir().unwrap();
    let key = SigningKey::from_bytes(&[3u8; 32]);
    let public = key.verifying_key();
    let game = record_game(tmp.path(), Some(key));
    let own = evidence::verify_with(
        &game,
        &VerifyOptions {
            expected_key: Some(public),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(own.is_intact(), "{:?}", own.problems);
    let wrong = SigningKey::from_bytes(&[4u8; 32]).verifying_key();
    let r = evidence::verify_with(
        &game,
        &VerifyOptions {
            expected_key: Some(wrong),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(matches!(r.problems.as_slice(), [p] if matches!(p.kind, ProblemKind::WrongKey { .. })));

    // A forger who swaps in their own public key breaks the meta signature and the chain.
    let mut lines = log_lines(&game);
    let forged_pk = hex::encode(wrong.to_bytes());
    let mut meta: Value = serde_json::from_slice(&lines[0]).unwrap();
    let old_pk = meta["payload"]["pubkey"].as_str().unwrap().to_string();
    meta["payload"]["pubkey"] = forged_pk.clone().into();
    let text = String::from_utf8(lines[0].clone())
        .unwrap()
        .replace(&old_pk, &forged_pk);
    lines[0] = text.into_bytes();
    write_lines(&game, &lines);
    let r = evidence::verify(&game).unwrap();
    assert!(
        r.problems
            .iter()
            .any(|p| p.seq == Some(0) && p.kind == ProblemKind::HashMismatch { next_seq: 1 })
    );
    assert!(
        r.problems
            .iter()
            .all(|p| p.kind == ProblemKind::BadSignature || p.seq == Some(0))
    );
    assert_eq!(
        r.problems
            .iter()
            .filter(|p| p.kind == ProblemKind::BadSignature)
            .count(),
        r.records,
        "every record now fails against the forged key"
    );
    let _ = record_at;
}

#[test]
fn cli_verify_reports_ok_and_problems_with_a_summary_line() {
    let tmp = tempfile::tempdir().unwrap();
    let game = record_game(tmp.path(), None);
    let report = evidence::verify(&game).unwrap();
    let exe = env!("CARGO_BIN_EXE_tandem");
    let out = Command::new(exe)
        .args(["evidence", "verify"])
        .arg(&game)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("ok: {} records, {} frames", report.records, report.frames)
    );

    let mut lines = log_lines(&game);
    lines.remove(4);
    write_lines(&game, &lines);
    let (_, file) = first_frame(&game);
    std::fs::remove_file(game.join(file)).unwrap();
    let out = Command::new(exe)
        .args(["evidence", "verify"])
        .arg(&game)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let err_lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(err_lines.len(), 3, "{stderr}");
    assert!(
        err_lines[0].contains("frame file missing: frames/"),
        "{stderr}"
    );
    assert!(
        err_lines[1].contains("record 5 (line 5): sequence gap: record 4 removed"),
        "{stderr}"
    );
    assert!(
        err_lines[2].contains("NOT intact: 2 problem(s)"),
        "{stderr}"
    );

    // show prints one line per record and one sheet per incident.
    let sheets = tmp.path().join("sheets");
    let out = Command::new(exe)
        .args(["evidence", "show"])
        .arg(&game)
        .arg("--sheets")
        .arg(&sheets)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.contains("contact sheet"))
            .count(),
        1
    );
    assert_eq!(stdout.lines().count(), lines.len() + 1);
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("illegal_move") && l.contains(" A ")),
        "{stdout}"
    );
}

#[test]
fn a_published_chain_head_reveals_cut_off_and_rewritten_tails() {
    let tmp = tempfile::tempdir().unwrap();
    let game = record_game(tmp.path(), None);
    let head = evidence::verify(&game).unwrap().head.unwrap();
    let with_head = VerifyOptions {
        expected_head: Some(head.clone()),
        ..Default::default()
    };
    assert!(
        evidence::verify_with(&game, &with_head)
            .unwrap()
            .is_intact()
    );
    let original = log_lines(&game);

    // Cutting off the last two records looks like an unfinished game without the anchor …
    write_lines(&game, &original[..original.len() - 2]);
    assert!(evidence::verify(&game).unwrap().is_intact());
    // … and is named with it.
    let r = evidence::verify_with(&game, &with_head).unwrap();
    assert_eq!(
        r.problems
            .iter()
            .map(|p| p.kind.clone())
            .collect::<Vec<_>>(),
        vec![ProblemKind::AnchorMissing { seq: head.seq }]
    );

    // Rewriting the last record (here: its result) is invisible to the chain but not to the anchor.
    let mut lines = original.clone();
    let last = lines.len() - 1;
    lines[last] = String::from_utf8(lines[last].clone())
        .unwrap()
        .replace("1-0", "0-1")
        .into_bytes();
    write_lines(&game, &lines);
    assert!(evidence::verify(&game).unwrap().is_intact());
    let r = evidence::verify_with(&game, &with_head).unwrap();
    assert_eq!(
        r.problems
            .iter()
            .map(|p| (p.seq, p.kind.clone()))
            .collect::<Vec<_>>(),
        vec![(
            Some(head.seq),
            ProblemKind::AnchorMismatch { seq: head.seq }
        )]
    );

    // The CLI takes the anchor as SEQ:HASH.
    let out = Command::new(env!("CARGO_BIN_EXE_tandem"))
        .args(["evidence", "verify", "--head", &head.to_string()])
        .arg(&game)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("differs from the published chain head"));
}

#[test]
fn without_its_meta_record_a_signed_log_is_still_checked_against_the_trusted_key() {
    let tmp = tempfile::tempdir().unwrap();
    let key = SigningKey::from_bytes(&[6u8; 32]);
    let public = key.verifying_key();
    let game = record_game(tmp.path(), Some(key));
    let mut lines = log_lines(&game);
    lines.remove(0);
    // Re-sign nothing: an attacker without the key can only change bytes.
    let pos = lines[4].iter().rposition(|b| *b == b'0').unwrap();
    lines[4][pos] = b'1';
    write_lines(&game, &lines);
    let trusted = VerifyOptions {
        expected_key: Some(public),
        ..Default::default()
    };
    let r = evidence::verify_with(&game, &trusted).unwrap();
    let kinds: Vec<(Option<u64>, ProblemKind)> =
        r.problems.iter().map(|p| (p.seq, p.kind.clone())).collect();
    assert!(kinds.contains(&(
        Some(1),
        ProblemKind::SequenceGap {
            missing_from: 0,
            missing_to: 0
        }
    )));
    assert!(
        kinds.contains(&(Some(5), ProblemKind::BadSignature)),
        "{kinds:?}"
    );
    assert_eq!(
        kinds
            .iter()
            .filter(|(_, k)| *k == ProblemKind::BadSignature)
            .count(),
        1,
        "only the changed record fails its signature: {kinds:?}"
    );
}
