//! Ground truth of a rendered frame, derived from the scene's logical state and the exact
//! camera model (never from pixels).

use serde::{Deserialize, Serialize};

use super::camera::{Camera, CameraConfig};
use super::fen::{Side, square_name};
use super::math::Vec3;
use super::render::WorldMesh;
use super::scene::{ObjectKind, PieceSpot, Scene};

/// Pixel coordinates in the distorted output image; the top-left pixel's centre is (0, 0).
pub type Pixel = [f32; 2];

/// One player's pocket: where it stands and what is in it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PocketTruth {
    pub side: Side,
    /// The zone on the table top: a convex quadrilateral (projected corners).
    pub quad: [Pixel; 4],
    /// FEN letters of the pieces in the pocket (uppercase = White's).
    pub pieces: String,
    /// How many of them the camera cannot see (see [`Truth::compute`]).
    #[serde(default)]
    pub hidden: usize,
}

/// One board's truth.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BoardTruth {
    /// "A" or "B".
    pub board: String,
    /// Outer corners of the 8×8 playing area on the board top: a1, h1, h8, a8.
    pub corners: [Pixel; 4],
    /// Square centres, index `rank * 8 + file` (a1 = 0, h8 = 63).
    pub square_centres: Vec<Pixel>,
    /// Occupancy by FEN letter, same indexing; `null` = empty.
    pub squares: Vec<Option<char>>,
    /// Squares whose centre is hidden from the camera by another piece (or clock), by name.
    pub occluded: Vec<String>,
    /// White's pocket, then Black's.
    pub pockets: [PocketTruth; 2],
}

/// Everything a vision stage could be asked to recover from one frame.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Truth {
    pub table_fen: String,
    pub width: u32,
    pub height: u32,
    pub seed: u64,
    /// The camera actually used (after pose jitter).
    pub camera: CameraConfig,
    pub boards: [BoardTruth; 2],
}

fn px(cam: &Camera, p: Vec3) -> Pixel {
    cam.project(p).unwrap_or([f32::NAN, f32::NAN])
}

/// Ray from `o` towards `d` (unnormalised, t ∈ (0, 1)) against a triangle (Möller–Trumbore).
fn hits_triangle(o: Vec3, d: Vec3, a: Vec3, b: Vec3, c: Vec3) -> bool {
    let e1 = b - a;
    let e2 = c - a;
    let p = d.cross(e2);
    let det = e1.dot(p);
    if det.abs() < 1e-12 {
        return false;
    }
    let inv = 1.0 / det;
    let s = o - a;
    let u = s.dot(p) * inv;
    if !(0.0..=1.0).contains(&u) {
        return false;
    }
    let q = s.cross(e1);
    let v = d.dot(q) * inv;
    if v < 0.0 || u + v > 1.0 {
        return false;
    }
    let t = e2.dot(q) * inv;
    t > 1e-6 && t < 1.0 - 1e-4
}

fn segment_hits_box(o: Vec3, d: Vec3, lo: Vec3, hi: Vec3) -> bool {
    let (mut t0, mut t1) = (0.0f32, 1.0f32);
    for (oa, da, l, h) in [
        (o.x, d.x, lo.x, hi.x),
        (o.y, d.y, lo.y, hi.y),
        (o.z, d.z, lo.z, hi.z),
    ] {
        if da.abs() < 1e-12 {
            if oa < l || oa > h {
                return false;
            }
        } else {
            let (a, b) = ((l - oa) / da, (h - oa) / da);
            t0 = t0.max(a.min(b));
            t1 = t1.min(a.max(b));
            if t0 > t1 {
                return false;
            }
        }
    }
    true
}

/// Whether the segment from `from` to `to` meets any occluding object of the scene other than
/// `skip` (an index into `scene.objects`, which `world` follows).
fn blocked(scene: &Scene, world: &[WorldMesh], from: Vec3, to: Vec3, skip: Option<usize>) -> bool {
    let d = to - from;
    scene
        .objects
        .iter()
        .zip(world)
        .enumerate()
        .any(|(k, (obj, wm))| {
            Some(k) != skip
                && obj.occludes()
                && segment_hits_box(from, d, wm.lo, wm.hi)
                && obj.mesh.triangles.iter().any(|t| {
                    let [a, b, c] = t.map(|i| wm.positions[i as usize]);
                    hits_triangle(from, d, a, b, c)
                })
        })
}

impl Truth {
    /// Computes the truth of `scene` seen by `cam`; `world` are the scene's world meshes.
    /// A square is occluded when the ray to its centre meets another object first.
    pub fn compute(scene: &Scene, cam: &Camera, world: &[WorldMesh], seed: u64) -> Truth {
        let layout = &scene.layout;
        let boards = std::array::from_fn(|b| {
            // Occupancy comes from where the piece objects are, so a scene an animation layer
            // has changed (a lifted piece, a drop) reports what the camera sees.
            let mut squares: Vec<Option<char>> = vec![None; 64];
            let mut pocket_slots: [Vec<(usize, char)>; 2] = [Vec::new(), Vec::new()];
            for obj in &scene.objects {
                match obj.kind {
                    ObjectKind::Piece {
                        piece,
                        spot: PieceSpot::Square { board, index },
                    } if board == b && index < 64 => {
                        squares[index] = Some(piece.fen_char());
                    }
                    ObjectKind::Piece {
                        piece,
                        spot: PieceSpot::Pocket { board, side, slot },
                    } if board == b => {
                        pocket_slots[(side == Side::Black) as usize].push((slot, piece.fen_char()));
                    }
                    _ => {}
                }
            }
            for p in &mut pocket_slots {
                p.sort_unstable();
            }
            let mut occluded = Vec::new();
            for index in 0..64 {
                let own = scene.objects.iter().position(|obj| {
                    matches!(obj.kind, ObjectKind::Piece {
                        spot: PieceSpot::Square { board, index: i },
                        ..
                    } if board == b && i == index)
                });
                if blocked(
                    scene,
                    world,
                    cam.position,
                    layout.square_centre(b, index),
                    own,
                ) {
                    occluded.push(square_name(index));
                }
            }
            // A pocket piece is hidden when the ray to a point 60 % up its body meets another
            // object first (the clock, a nearer pocket piece, a hand).
            let mut pocket_hidden = [0usize; 2];
            for (k, (obj, wm)) in scene.objects.iter().zip(world).enumerate() {
                if let ObjectKind::Piece {
                    spot: PieceSpot::Pocket { board, side, .. },
                    ..
                } = obj.kind
                    && board == b
                {
                    let target = Vec3::new(
                        (wm.lo.x + wm.hi.x) * 0.5,
                        (wm.lo.y + wm.hi.y) * 0.5,
                        wm.lo.z + 0.6 * (wm.hi.z - wm.lo.z),
                    );
                    if blocked(scene, world, cam.position, target, Some(k)) {
                        pocket_hidden[(side == Side::Black) as usize] += 1;
                    }
                }
            }
            let pockets = [Side::White, Side::Black].map(|side| PocketTruth {
                side,
                quad: layout.pocket_zone(b, side).map(|p| px(cam, p)),
                pieces: pocket_slots[(side == Side::Black) as usize]
                    .iter()
                    .map(|&(_, c)| c)
                    .collect(),
                hidden: pocket_hidden[(side == Side::Black) as usize],
            });
            BoardTruth {
                board: if b == 0 { "A".into() } else { "B".into() },
                corners: layout.playing_corners(b).map(|p| px(cam, p)),
                square_centres: (0..64)
                    .map(|i| px(cam, layout.square_centre(b, i)))
                    .collect(),
                squares,
                occluded,
                pockets,
            }
        });
        Truth {
            table_fen: scene.placement.fen.clone(),
            width: cam.width,
            height: cam.height,
            seed,
            camera: cam.config.clone(),
            boards,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ray_triangle_and_box() {
        let (a, b, c) = (
            Vec3::new(-1.0, -1.0, 1.0),
            Vec3::new(1.0, -1.0, 1.0),
            Vec3::new(0.0, 1.0, 1.0),
        );
        assert!(hits_triangle(Vec3::ZERO, Vec3::new(0.0, 0.0, 2.0), a, b, c));
        assert!(
            !hits_triangle(Vec3::ZERO, Vec3::new(0.0, 0.0, 0.5), a, b, c),
            "segment ends before"
        );
        assert!(!hits_triangle(
            Vec3::ZERO,
            Vec3::new(3.0, 0.0, 2.0),
            a,
            b,
            c
        ));
        assert!(segment_hits_box(
            Vec3::ZERO,
            Vec3::new(2.0, 2.0, 2.0),
            Vec3::new(0.5, 0.5, 0.5),
            Vec3::new(1.0, 1.0, 1.0)
        ));
        assert!(!segment_hits_box(
            Vec3::ZERO,
            Vec3::new(2.0, 0.0, 0.0),
            Vec3::new(0.5, 0.5, 0.5),
            Vec3::new(1.0, 1.0, 1.0)
        ));
    }
}
