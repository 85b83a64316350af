//! A bumped camera: frames moved by whole pixels, and the committed simulated game
//! (`fixtures/sim-game`) bumped in the middle.
#![allow(dead_code)] // each test file uses a different part

/// A copy of the fixture game in which the camera is bumped at `from_frame`: every later frame
/// moved by (`dx`, `dy`) pixels, the uncovered border filled with the nearest pixel.
pub fn bumped_game(dir: &std::path::Path, from_frame: usize, dx: i64, dy: i64) {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sim-game");
    std::fs::create_dir_all(dir.join("frames")).unwrap();
    for f in ["clock.jsonl", "truth.jsonl", "game.json"] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    let mut names: Vec<_> = std::fs::read_dir(src.join("frames"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    for (i, name) in names.iter().enumerate() {
        let (from, to) = (src.join("frames").join(name), dir.join("frames").join(name));
        if i < from_frame {
            std::fs::copy(&from, &to).unwrap();
            continue;
        }
        let moved = shifted(&image::open(&from).unwrap().to_rgb8(), dx, dy);
        // JPEG at quality 92, so that recompression alone costs the reader little.
        let out = std::io::BufWriter::new(std::fs::File::create(&to).unwrap());
        image::codecs::jpeg::JpegEncoder::new_with_quality(out, 92)
            .encode_image(&moved)
            .unwrap();
    }
}

/// `img` moved by (`dx`, `dy`) whole pixels, the uncovered border filled with the nearest pixel.
pub fn shifted(img: &image::RgbImage, dx: i64, dy: i64) -> image::RgbImage {
    let (w, h) = (img.width() as i64, img.height() as i64);
    image::RgbImage::from_fn(img.width(), img.height(), |x, y| {
        let sx = (x as i64 - dx).clamp(0, w - 1) as u32;
        let sy = (y as i64 - dy).clamp(0, h - 1) as u32;
        *img.get_pixel(sx, sy)
    })
}
