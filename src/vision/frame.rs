//! Decoding a camera frame from its file bytes, whole or not at all.
//!
//! The `image` crate decodes a JPEG that was cut short (a frame file still being written, a
//! network camera's dropped packets) without an error: the rows it never received come out
//! grey. Such a frame is not a picture of the table: its grey part reads as empty squares and
//! as a moved camera. So a JPEG counts as a frame only when its scan data reaches its
//! end-of-image marker; PNG's decoder already refuses a cut file.

use std::path::Path;

use image::{ImageFormat, RgbImage};
use thiserror::Error;

/// Why bytes are not a frame. The messages do not name the file (callers do) and carry the
/// underlying error's text themselves (no `source` chain, so it is not printed twice).
#[derive(Debug, Error)]
pub enum FrameError {
    #[error("{0}")]
    Read(std::io::Error),
    #[error("the JPEG is cut short: {bytes} bytes, and no end-of-image marker after its scan")]
    Truncated { bytes: usize },
    #[error("undecodable image: {0}")]
    Undecodable(image::ImageError),
}

/// Decodes one frame (JPEG or PNG, told apart by their signatures) into RGB.
pub fn decode_frame(bytes: &[u8]) -> Result<RgbImage, FrameError> {
    let format = image::guess_format(bytes).map_err(FrameError::Undecodable)?;
    if format == ImageFormat::Jpeg && !jpeg_is_whole(bytes) {
        return Err(FrameError::Truncated { bytes: bytes.len() });
    }
    Ok(image::load_from_memory_with_format(bytes, format)
        .map_err(FrameError::Undecodable)?
        .to_rgb8())
}

/// Reads and decodes the frame file at `path` ([`decode_frame`]).
pub fn load_frame(path: &Path) -> Result<RgbImage, FrameError> {
    decode_frame(&std::fs::read(path).map_err(FrameError::Read)?)
}

/// Whether a JPEG's last scan reaches the end-of-image marker `FF D9`. The segments are
/// walked by their lengths, so a marker inside one (an EXIF thumbnail's) does not count; in the
/// scan data a marker is `FF` followed by anything but `00` (a stuffed byte), `FF` (fill) or a
/// restart marker. Bytes after the marker (padding, a camera's trailer) are allowed.
fn jpeg_is_whole(bytes: &[u8]) -> bool {
    const SOS: u8 = 0xDA;
    const EOI: u8 = 0xD9;
    let standalone = |m: u8| m == 0x01 || (0xD0..=0xD7).contains(&m);
    if !bytes.starts_with(&[0xFF, 0xD8]) {
        return false;
    }
    let mut i = 2;
    loop {
        // A marker: FF (any fill bytes) and its code.
        if bytes.get(i) != Some(&0xFF) {
            return false;
        }
        while bytes.get(i) == Some(&0xFF) {
            i += 1;
        }
        let Some(&marker) = bytes.get(i) else {
            return false;
        };
        i += 1;
        if marker == EOI {
            return true;
        }
        if standalone(marker) {
            continue;
        }
        let Some(len) = bytes
            .get(i..i + 2)
            .map(|l| u16::from_be_bytes([l[0], l[1]]) as usize)
        else {
            return false;
        };
        if len < 2 || i + len > bytes.len() {
            return false;
        }
        i += len;
        if marker == SOS {
            // The scan's data runs to the next marker that is not a stuffed byte, fill or a
            // restart.
            loop {
                let Some(at) = bytes[i..].iter().position(|&b| b == 0xFF) else {
                    return false;
                };
                i += at;
                match bytes.get(i + 1) {
                    None => return false,
                    Some(0x00) => i += 2,
                    Some(0xFF) => i += 1,
                    Some(&m) if (0xD0..=0xD7).contains(&m) => i += 2,
                    Some(_) => break,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jpeg() -> Vec<u8> {
        let img = RgbImage::from_fn(64, 48, |x, y| {
            image::Rgb([(x * 4) as u8, (y * 5) as u8, 90])
        });
        let mut bytes = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut bytes, 90)
            .encode_image(&img)
            .unwrap();
        bytes
    }

    #[test]
    fn a_whole_jpeg_decodes_and_one_cut_short_is_refused() {
        let whole = jpeg();
        let img = decode_frame(&whole).unwrap();
        assert_eq!(img.dimensions(), (64, 48));
        // Padding or a trailer after the marker is still a whole file.
        for tail in [&[0u8; 16][..], b"a camera's trailer \xFF\xD8"] {
            let mut longer = whole.clone();
            longer.extend_from_slice(tail);
            assert!(decode_frame(&longer).is_ok(), "{tail:?}");
        }
        // The premise: the `image` crate alone fills the missing rows in.
        assert!(image::load_from_memory(&whole[..whole.len() / 2]).is_ok());
        for keep in [whole.len() - 2, whole.len() * 2 / 3, whole.len() / 2] {
            match decode_frame(&whole[..keep]) {
                Err(FrameError::Truncated { bytes }) => assert_eq!(bytes, keep),
                other => panic!("{keep} of {} bytes: {other:?}", whole.len()),
            }
        }
    }

    #[test]
    fn a_thumbnails_end_marker_inside_a_segment_does_not_make_a_cut_file_whole() {
        // An APP1 segment right after SOI holding a thumbnail's own SOI … EOI.
        let whole = jpeg();
        let payload: &[u8] = &[
            b'E', b'x', b'i', b'f', 0, 0, 0xFF, 0xD8, 1, 2, 3, 0xFF, 0xD9,
        ];
        let mut with_thumb = vec![0xFF, 0xD8, 0xFF, 0xE1];
        with_thumb.extend_from_slice(&((payload.len() + 2) as u16).to_be_bytes());
        with_thumb.extend_from_slice(payload);
        with_thumb.extend_from_slice(&whole[2..]);
        assert!(decode_frame(&with_thumb).is_ok());
        // Cut right after the thumbnail's marker: the file ends in FF D9, yet its scan is missing.
        let cut = &with_thumb[..6 + payload.len()];
        assert!(cut.ends_with(&[0xFF, 0xD9]));
        assert!(matches!(
            decode_frame(cut),
            Err(FrameError::Truncated { .. })
        ));
        // Cut inside the scan.
        let half = &with_thumb[..with_thumb.len() / 2];
        assert!(matches!(
            decode_frame(half),
            Err(FrameError::Truncated { .. })
        ));
    }

    #[test]
    fn bytes_that_are_no_image_and_missing_files_are_errors() {
        assert!(matches!(
            decode_frame(b"not an image at all"),
            Err(FrameError::Undecodable(_))
        ));
        assert!(matches!(decode_frame(&[]), Err(FrameError::Undecodable(_))));
        let mut png = Vec::new();
        RgbImage::new(8, 8)
            .write_to(&mut std::io::Cursor::new(&mut png), ImageFormat::Png)
            .unwrap();
        assert!(decode_frame(&png).is_ok());
        assert!(decode_frame(&png[..png.len() - 12]).is_err());
        let missing = Path::new("/nonexistent/frame.jpg");
        assert!(matches!(load_frame(missing), Err(FrameError::Read(_))));
    }
}
