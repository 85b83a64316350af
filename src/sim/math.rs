//! Small linear algebra for the renderer: 3-vectors and 3×3 matrices in `f32`.
//!
//! World frame: metres, z up, the table top at z = 0; x runs along the long table edge the
//! default camera looks across, y away from that edge.

use serde::{Deserialize, Serialize};
use std::ops::{Add, Mul, Neg, Sub};

/// `x.floor()` without the libm call (which the dev profile does not inline); exact for
/// |x| < 2³¹.
#[inline]
pub fn fast_floor(x: f32) -> f32 {
    let t = x as i32 as f32;
    if t > x { t - 1.0 } else { t }
}

/// A point or direction in world, mesh or camera space.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Vec3 {
    pub x: f32,
    pub y: f32,
    pub z: f32,
}

impl Vec3 {
    pub const ZERO: Vec3 = Vec3::new(0.0, 0.0, 0.0);
    pub const Z: Vec3 = Vec3::new(0.0, 0.0, 1.0);

    pub const fn new(x: f32, y: f32, z: f32) -> Self {
        Vec3 { x, y, z }
    }
    pub fn dot(self, o: Vec3) -> f32 {
        self.x * o.x + self.y * o.y + self.z * o.z
    }
    pub fn cross(self, o: Vec3) -> Vec3 {
        Vec3::new(
            self.y * o.z - self.z * o.y,
            self.z * o.x - self.x * o.z,
            self.x * o.y - self.y * o.x,
        )
    }
    pub fn length(self) -> f32 {
        self.dot(self).sqrt()
    }
    /// Unit vector in the same direction; the zero vector stays zero.
    pub fn normalized(self) -> Vec3 {
        let l = self.length();
        if l > 0.0 { self * (1.0 / l) } else { self }
    }
    pub fn mul_elem(self, o: Vec3) -> Vec3 {
        Vec3::new(self.x * o.x, self.y * o.y, self.z * o.z)
    }
    pub fn lerp(self, o: Vec3, t: f32) -> Vec3 {
        self + (o - self) * t
    }
    pub fn min(self, o: Vec3) -> Vec3 {
        Vec3::new(self.x.min(o.x), self.y.min(o.y), self.z.min(o.z))
    }
    pub fn max(self, o: Vec3) -> Vec3 {
        Vec3::new(self.x.max(o.x), self.y.max(o.y), self.z.max(o.z))
    }
}

impl Add for Vec3 {
    type Output = Vec3;
    fn add(self, o: Vec3) -> Vec3 {
        Vec3::new(self.x + o.x, self.y + o.y, self.z + o.z)
    }
}
impl Sub for Vec3 {
    type Output = Vec3;
    fn sub(self, o: Vec3) -> Vec3 {
        Vec3::new(self.x - o.x, self.y - o.y, self.z - o.z)
    }
}
impl Mul<f32> for Vec3 {
    type Output = Vec3;
    fn mul(self, s: f32) -> Vec3 {
        Vec3::new(self.x * s, self.y * s, self.z * s)
    }
}
impl Neg for Vec3 {
    type Output = Vec3;
    fn neg(self) -> Vec3 {
        Vec3::new(-self.x, -self.y, -self.z)
    }
}

/// A 3×3 matrix stored as rows; used for rotations and non-uniform scales.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mat3 {
    pub rows: [Vec3; 3],
}

impl Mat3 {
    pub const IDENTITY: Mat3 = Mat3 {
        rows: [
            Vec3::new(1.0, 0.0, 0.0),
            Vec3::new(0.0, 1.0, 0.0),
            Vec3::new(0.0, 0.0, 1.0),
        ],
    };

    /// Rotation about the world z axis by `a` radians (counter-clockwise seen from above).
    pub fn rot_z(a: f32) -> Mat3 {
        let (s, c) = a.sin_cos();
        Mat3 {
            rows: [
                Vec3::new(c, -s, 0.0),
                Vec3::new(s, c, 0.0),
                Vec3::new(0.0, 0.0, 1.0),
            ],
        }
    }
    /// Rotation about the x axis by `a` radians.
    pub fn rot_x(a: f32) -> Mat3 {
        let (s, c) = a.sin_cos();
        Mat3 {
            rows: [
                Vec3::new(1.0, 0.0, 0.0),
                Vec3::new(0.0, c, -s),
                Vec3::new(0.0, s, c),
            ],
        }
    }
    pub fn apply(&self, v: Vec3) -> Vec3 {
        Vec3::new(
            self.rows[0].dot(v),
            self.rows[1].dot(v),
            self.rows[2].dot(v),
        )
    }
    pub fn transpose(&self) -> Mat3 {
        let r = &self.rows;
        Mat3 {
            rows: [
                Vec3::new(r[0].x, r[1].x, r[2].x),
                Vec3::new(r[0].y, r[1].y, r[2].y),
                Vec3::new(r[0].z, r[1].z, r[2].z),
            ],
        }
    }
    pub fn mul(&self, o: &Mat3) -> Mat3 {
        let t = o.transpose();
        let r = |i: usize| {
            Vec3::new(
                self.rows[i].dot(t.rows[0]),
                self.rows[i].dot(t.rows[1]),
                self.rows[i].dot(t.rows[2]),
            )
        };
        Mat3 {
            rows: [r(0), r(1), r(2)],
        }
    }
}

/// Placement of a mesh in the world: `world = linear · local + translation`.
///
/// The linear part is a rotation times a positive diagonal scale, so normals transform with
/// `normal_matrix` (rotation times inverse scale) and never flip.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Transform {
    pub rotation: Mat3,
    pub scale: Vec3,
    pub translation: Vec3,
}

impl Transform {
    pub const IDENTITY: Transform = Transform {
        rotation: Mat3::IDENTITY,
        scale: Vec3::new(1.0, 1.0, 1.0),
        translation: Vec3::ZERO,
    };

    pub fn at(translation: Vec3) -> Transform {
        Transform {
            translation,
            ..Transform::IDENTITY
        }
    }
    pub fn point(&self, p: Vec3) -> Vec3 {
        self.rotation.apply(p.mul_elem(self.scale)) + self.translation
    }
    pub fn normal(&self, n: Vec3) -> Vec3 {
        let inv = Vec3::new(1.0 / self.scale.x, 1.0 / self.scale.y, 1.0 / self.scale.z);
        self.rotation.apply(n.mul_elem(inv)).normalized()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_floor_matches_floor() {
        for x in [-2.5f32, -2.0, -0.1, 0.0, 0.1, 0.999, 1.0, 7.5, 1e6 + 0.5] {
            assert_eq!(fast_floor(x), x.floor(), "{x}");
        }
    }

    #[test]
    fn rotation_keeps_length_and_turns_counter_clockwise() {
        let r = Mat3::rot_z(std::f32::consts::FRAC_PI_2);
        let v = r.apply(Vec3::new(1.0, 0.0, 0.0));
        assert!((v - Vec3::new(0.0, 1.0, 0.0)).length() < 1e-6);
        let m = r.mul(&Mat3::rot_x(0.3));
        assert!(
            (m.apply(Vec3::new(0.3, -0.4, 1.2)).length() - Vec3::new(0.3, -0.4, 1.2).length())
                .abs()
                < 1e-5
        );
    }

    #[test]
    fn transform_normal_stays_perpendicular_under_scale() {
        let t = Transform {
            rotation: Mat3::rot_z(0.7),
            scale: Vec3::new(2.0, 0.5, 3.0),
            translation: Vec3::new(1.0, 2.0, 3.0),
        };
        // A plane through the origin with normal n contains tangent t0.
        let n = Vec3::new(1.0, 1.0, 0.0).normalized();
        let t0 = Vec3::new(1.0, -1.0, 0.5);
        let wt = t.point(t0) - t.point(Vec3::ZERO);
        assert!(t.normal(n).dot(wt).abs() < 1e-5);
    }
}
