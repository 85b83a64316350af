//! Decoding a camera frame from its file bytes, whole or not at all.
//!
//! The `image` crate decodes a JPEG that was cut short (a frame file still being written, a
//! network camera's dropped packets) without an error: the rows it never received come out
//! grey. Such a frame is not a picture of the table: its grey part reads as empty squares and
//! as a moved camera. So a JPEG counts as a frame only when it ends with its end-of-image
//! marker; PNG's decoder already refuses a cut file.

use std::path::{Path, PathBuf};

use image::{ImageFormat, RgbImage};
use thiserror::Error;

/// Why bytes are not a frame.
#[derive(Debug, Error)]
pub enum FrameError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the JPEG is cut short: {bytes} bytes without its end-of-image marker")]
    Truncated { bytes: usize },
    #[error("undecodable image: {0}")]
    Undecodable(#[from] image::ImageError),
}

/// Decodes one frame (JPEG or PNG, told apart by their signatures) into RGB.
pub fn decode_frame(bytes: &[u8]) -> Result<RgbImage, FrameError> {
    let format = image::guess_format(bytes)?;
    if format == ImageFormat::Jpeg && !jpeg_is_whole(bytes) {
        return Err(FrameError::Truncated { bytes: bytes.len() });
    }
    Ok(image::load_from_memory_with_format(bytes, format)?.to_rgb8())
}

/// Reads and decodes the frame file at `path` ([`decode_frame`]).
pub fn load_frame(path: &Path) -> Result<RgbImage, FrameError> {
    let bytes = std::fs::read(path).map_err(|source| FrameError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    decode_frame(&bytes)
}

/// Whether a JPEG ends with the end-of-image marker `FF D9`, after any zero bytes some
/// encoders pad the file with.
fn jpeg_is_whole(bytes: &[u8]) -> bool {
    let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    end >= 4 && bytes[end - 2..end] == [0xFF, 0xD9]
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
        // Padding after the marker is still a whole file.
        let mut padded = whole.clone();
        padded.extend_from_slice(&[0; 16]);
        assert!(decode_frame(&padded).is_ok());
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
        assert!(matches!(load_frame(missing), Err(FrameError::Read { .. })));
    }
}
