//! The size of a 5-minute game's evidence (a measurement, not a check; run with
//! `cargo test --test evidence_size -- --ignored --nocapture`).
//!
//! 300 s at 10 fps of 1280×720 JPEG frames (quality 75, textured synthetic boards), 120 move
//! events each with one commit frame, 2 incidents (illegal moves) with 5 s + 5 s windows.

use std::path::Path;
use std::time::Instant;

use image::codecs::jpeg::JpegEncoder;
use image::{Rgb, RgbImage};
use serde_json::json;
use tandem_monitor::evidence::{self, EvidenceConfig, Frame, GameMeta, GameRecorder, SigningKey};

/// A table seen from above: wood-like background, two 8×8 boards, some pieces as discs, and
/// sensor noise so that JPEG sizes are camera-like.
fn synthetic_frame(seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut rnd = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let (w, h) = (1280u32, 720u32);
    let mut img = RgbImage::from_fn(w, h, |x, y| {
        let grain = ((x as f32 * 0.05 + (y as f32 * 0.31).sin() * 3.0).sin() * 18.0) as i32;
        Rgb([
            (150 + grain).clamp(0, 255) as u8,
            (105 + grain).clamp(0, 255) as u8,
            (60 + grain / 2).clamp(0, 255) as u8,
        ])
    });
    for (bx, by) in [(90u32, 100u32), (690, 100)] {
        let sq = 62u32;
        for y in 0..8 * sq {
            for x in 0..8 * sq {
                let dark = ((x / sq) + (y / sq)) % 2 == 1;
                let c = if dark {
                    [118, 150, 86]
                } else {
                    [238, 238, 210]
                };
                img.put_pixel(bx + x, by + y, Rgb(c));
            }
        }
        for _ in 0..24 {
            let (f, r) = ((rnd() % 8) as u32, (rnd() % 8) as u32);
            let white = rnd() % 2 == 0;
            let (cx, cy) = (bx + f * sq + sq / 2, by + r * sq + sq / 2);
            for y in cy - 24..cy + 24 {
                for x in cx - 24..cx + 24 {
                    let d2 = (x as i32 - cx as i32).pow(2) + (y as i32 - cy as i32).pow(2);
                    if d2 < 22 * 22 {
                        let shade = 255 - (d2 / 4) as u8;
                        let c = if white {
                            [shade, shade, shade - 20]
                        } else {
                            [40, 35, 30]
                        };
                        img.put_pixel(x, y, Rgb(c));
                    }
                }
            }
        }
    }
    for p in img.pixels_mut() {
        let n = rnd();
        for (i, c) in p.0.iter_mut().enumerate() {
            let noise = ((n >> (i * 8)) & 0x03) as i16 - 2;
            *c = (*c as i16 + noise).clamp(0, 255) as u8;
        }
    }
    let mut out = Vec::new();
    JpegEncoder::new_with_quality(&mut out, 75)
        .encode_image(&img)
        .expect("encoding to memory cannot fail");
    out
}

fn dir_bytes(dir: &Path) -> (u64, u64) {
    let mut total = 0;
    let mut files = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else {
                total += m.len();
                files += 1;
            }
        }
    }
    (total, files)
}

#[test]
#[ignore = "measurement: writes ~30 MB; run with --ignored --nocapture"]
fn five_minute_game_evidence_size() {
    let t = Instant::now();
    let pool: Vec<std::sync::Arc<[u8]>> = (0..24).map(|s| synthetic_frame(s).into()).collect();
    let sizes: Vec<usize> = pool.iter().map(|f| f.len()).collect();
    let mean = sizes.iter().sum::<usize>() / sizes.len();
    println!(
        "frame pool: {} distinct 1280x720 JPEG q75 frames, {}..{} bytes, mean {mean} (encoded in {:.1} s)",
        pool.len(),
        sizes.iter().min().unwrap(),
        sizes.iter().max().unwrap(),
        t.elapsed().as_secs_f64()
    );

    let tmp = tempfile::tempdir().unwrap();
    // EVIDENCE_SIZE_DIR keeps the game for a look with `tandem evidence show`.
    let root = std::env::var_os("EVIDENCE_SIZE_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| tmp.path().to_path_buf());
    let config = EvidenceConfig {
        dir: root,
        ..EvidenceConfig::default()
    };
    let meta = GameMeta {
        table: "t1".into(),
        game: "five-minutes".into(),
        calibration: Some("[board_a]\ncorners = [[90,100],[586,100],[586,596],[90,596]]\n".into()),
        model_sha256: Some(evidence::sha256_hex(b"model")),
        rule_set: "tandem-2024".into(),
        started_ts: 0,
    };
    let t = Instant::now();
    let mut rec =
        GameRecorder::start(&meta, &config, Some(SigningKey::from_bytes(&[1u8; 32]))).unwrap();
    let mut moves = 0;
    for i in 0..3000i64 {
        let ts = i * 100;
        let bytes = pool[i as usize % pool.len()].clone();
        let mut frame = Frame::new(ts, bytes.clone());
        frame.meta = Some(json!({"corners": {
            "A": [[90, 100], [586, 100], [586, 596], [90, 596]],
            "B": [[690, 100], [1186, 100], [1186, 596], [690, 596]]}}));
        rec.push_frame(frame).unwrap();
        if i % 25 == 12 && moves < 120 {
            let id = format!("m{moves}");
            let board = if moves % 2 == 0 { "A" } else { "B" };
            rec.record_event(
                &json!({"id": id, "type": "move", "table": "t1", "board": board,
                "ts": ts, "uci": "e2e4", "san": "e4", "clock_ms": 300_000 - ts / 2}),
            )
            .unwrap();
            rec.commit_frame(&id, ts, &bytes).unwrap();
            moves += 1;
        }
        if ts == 100_000 || ts == 200_000 {
            rec.record_event(&json!({"id": format!("inc{ts}"), "type": "illegal_move",
                "table": "t1", "board": "A", "ts": ts, "squares": ["e4", "e5"]}))
                .unwrap();
        }
    }
    let records = rec.log().next_seq();
    let dir = rec.finish(300_000, None).unwrap();
    let write_s = t.elapsed().as_secs_f64();
    let (total, files) = dir_bytes(&dir);
    let log_bytes = std::fs::metadata(dir.join("log.jsonl")).unwrap().len();
    let t = Instant::now();
    let report = evidence::verify(&dir).unwrap();
    let verify_s = t.elapsed().as_secs_f64();
    let zip = tmp.path().join("game.zip");
    evidence::export(&dir, &zip).unwrap();
    let zip_bytes = std::fs::metadata(&zip).unwrap().len();
    println!(
        "5-minute game: {moves} moves, 2 incidents, {records} records, {} frames ({files} files): \
         total {total} bytes ({:.1} MiB), log.jsonl {log_bytes} bytes, zip {zip_bytes} bytes; \
         recording {write_s:.2} s, verify {verify_s:.2} s",
        report.frames,
        total as f64 / (1024.0 * 1024.0)
    );
    let t = Instant::now();
    let sheets_dir = std::env::var_os("EVIDENCE_SIZE_SHEETS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| tmp.path().join("sheets"));
    let sheets = evidence::contact_sheets(&dir, &sheets_dir).unwrap();
    println!(
        "contact sheets: {} in {:.2} s ({})",
        sheets.len(),
        t.elapsed().as_secs_f64(),
        sheets_dir.display()
    );
    assert!(report.is_intact(), "{:?}", report.problems);
    assert_eq!(report.frames, 120 + 2 * 101);
}
