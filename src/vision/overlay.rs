//! An overlay of a calibration on its frame for a person to check: board outlines, the square
//! grid, a1 marked with a filled dot, the boards' letters drawn beside a1, pocket quads (White's
//! in yellow, Black's in blue).

use image::{Rgb, RgbImage};
use imageproc::drawing::{draw_filled_circle_mut, draw_line_segment_mut};

use super::calibration::Calibration;
use super::geometry::Point;

fn line(img: &mut RgbImage, a: Point, b: Point, c: Rgb<u8>, thick: bool) {
    if !(a[0].is_finite() && a[1].is_finite() && b[0].is_finite() && b[1].is_finite()) {
        return;
    }
    let offs: &[(f32, f32)] = if thick {
        &[(0.0, 0.0), (1.0, 0.0), (0.0, 1.0)]
    } else {
        &[(0.0, 0.0)]
    };
    for (dx, dy) in offs {
        draw_line_segment_mut(
            img,
            (a[0] as f32 + dx, a[1] as f32 + dy),
            (b[0] as f32 + dx, b[1] as f32 + dy),
            c,
        );
    }
}

/// Strokes of the letters A and B in a unit box (x right, y down).
fn letter(ch: char) -> &'static [[f64; 4]] {
    match ch {
        'A' => &[
            [0.0, 1.0, 0.5, 0.0],
            [0.5, 0.0, 1.0, 1.0],
            [0.22, 0.6, 0.78, 0.6],
        ],
        _ => &[
            [0.0, 0.0, 0.0, 1.0],
            [0.0, 0.0, 0.7, 0.0],
            [0.7, 0.0, 0.9, 0.2],
            [0.9, 0.2, 0.9, 0.35],
            [0.9, 0.35, 0.7, 0.5],
            [0.0, 0.5, 0.7, 0.5],
            [0.7, 0.5, 1.0, 0.7],
            [1.0, 0.7, 1.0, 0.85],
            [1.0, 0.85, 0.8, 1.0],
            [0.8, 1.0, 0.0, 1.0],
        ],
    }
}

/// Draws `cal` onto a copy of `frame`.
pub fn draw(frame: &RgbImage, cal: &Calibration) -> RgbImage {
    let mut img = frame.clone();
    let grid = Rgb([0u8, 230, 0]);
    let outline = Rgb([255u8, 40, 40]);
    for board in &cal.boards {
        let h = &board.homography;
        for i in 1..8 {
            let t = i as f64;
            line(&mut img, h.map([t, 0.0]), h.map([t, 8.0]), grid, false);
            line(&mut img, h.map([0.0, t]), h.map([8.0, t]), grid, false);
        }
        for k in 0..4 {
            line(
                &mut img,
                board.corners[k],
                board.corners[(k + 1) % 4],
                outline,
                true,
            );
        }
        // a1: a filled dot on the square, sized by the square.
        let a1 = board.square_centre(0);
        let c = board.corners;
        let sq = (c[1][0] - c[0][0]).hypot(c[1][1] - c[0][1]) / 8.0;
        if a1[0].is_finite() && a1[1].is_finite() {
            draw_filled_circle_mut(
                &mut img,
                (a1[0] as i32, a1[1] as i32),
                (sq * 0.25).clamp(2.0, 12.0) as i32,
                Rgb([255, 0, 255]),
            );
        }
        // The board letter outside the a1 corner, away from the board centre.
        let mid = h.map([4.0, 4.0]);
        let (dx, dy) = (c[0][0] - mid[0], c[0][1] - mid[1]);
        let n = dx.hypot(dy).max(1.0);
        let size = (sq * 1.2).clamp(10.0, 60.0);
        let at = [c[0][0] + dx / n * size * 0.9, c[0][1] + dy / n * size * 0.9];
        let ch = board.label.chars().next().unwrap_or('A');
        for s in letter(ch) {
            let p = [
                at[0] - size / 2.0 + s[0] * size * 0.7,
                at[1] - size / 2.0 + s[1] * size,
            ];
            let q = [
                at[0] - size / 2.0 + s[2] * size * 0.7,
                at[1] - size / 2.0 + s[3] * size,
            ];
            line(&mut img, p, q, Rgb([255, 255, 255]), true);
        }
        for (k, q) in board.pockets.iter().enumerate() {
            let col = if k == 0 {
                Rgb([255, 220, 0])
            } else {
                Rgb([0, 140, 255])
            };
            for i in 0..4 {
                line(&mut img, q[i], q[(i + 1) % 4], col, true);
            }
        }
    }
    img
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vision::calibration::CalibrationConfig;

    #[test]
    fn overlay_marks_outline_grid_and_a1() {
        let c = |x0: f64| {
            [
                [x0, 180.0],
                [x0 + 160.0, 180.0],
                [x0 + 160.0, 20.0],
                [x0, 20.0],
            ]
        };
        let cal = Calibration::manual(
            "t",
            (400, 200),
            [c(20.0), c(220.0)],
            None,
            &CalibrationConfig::default(),
        )
        .unwrap();
        let frame = RgbImage::new(400, 200);
        let img = draw(&frame, &cal);
        assert_eq!(
            img.get_pixel(100, 180),
            &Rgb([255, 40, 40]),
            "bottom outline"
        );
        assert_eq!(
            img.get_pixel(40, 100),
            &Rgb([0, 230, 0]),
            "grid line b|c... a|b"
        );
        assert_eq!(img.get_pixel(30, 170), &Rgb([255, 0, 255]), "a1 dot");
        assert_eq!(
            img.get_pixel(30, 30),
            &Rgb([0, 0, 0]),
            "a8 square untouched"
        );
    }
}
