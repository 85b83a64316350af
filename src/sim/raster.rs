//! Triangle rasterization: a visibility buffer (depth + which triangle + perspective-correct
//! barycentrics per pixel) for the camera, and a depth-only orthographic shadow map.
//!
//! Pixel centres are at integer coordinates (the camera's convention), so a triangle covers a
//! pixel when the pixel centre lies inside it.

use super::math::Vec3;

/// Marks an empty visibility-buffer pixel.
pub const NO_OBJECT: u32 = u32::MAX;

/// Per-pixel result of the camera pass.
#[derive(Clone, Debug)]
pub struct VisBuffer {
    pub width: usize,
    pub height: usize,
    /// 1 / camera depth of the nearest surface (0 = nothing).
    pub inv_depth: Vec<f32>,
    pub object: Vec<u32>,
    pub triangle: Vec<u32>,
    /// Perspective-correct barycentric weights of vertices 1 and 2 (vertex 0 = 1 − b1 − b2).
    pub bary: Vec<[f32; 2]>,
}

/// A vertex in camera space with its barycentric position in the source triangle.
#[derive(Clone, Copy, Debug)]
struct ClipVertex {
    p: Vec3,
    b: [f32; 2],
}

impl VisBuffer {
    pub fn new(width: usize, height: usize) -> VisBuffer {
        let n = width * height;
        VisBuffer {
            width,
            height,
            inv_depth: vec![0.0; n],
            object: vec![NO_OBJECT; n],
            triangle: vec![0; n],
            bary: vec![[0.0; 2]; n],
        }
    }

    /// Draws one triangle given in camera space (x right, y down, z forward). `screen` maps
    /// normalised image coordinates to buffer pixels: `px = s·x/z + ox`, `py = s·y/z + oy`.
    /// Back faces (seen from the camera) are skipped when `cull` is set.
    pub fn draw(
        &mut self,
        tri: [Vec3; 3],
        screen: (f32, f32, f32),
        object: u32,
        triangle: u32,
        cull: bool,
    ) {
        const NEAR: f32 = 0.01;
        if cull {
            let n = (tri[1] - tri[0]).cross(tri[2] - tri[0]);
            if n.dot(tri[0]) >= 0.0 {
                return;
            }
        }
        let verts = [
            ClipVertex {
                p: tri[0],
                b: [0.0, 0.0],
            },
            ClipVertex {
                p: tri[1],
                b: [1.0, 0.0],
            },
            ClipVertex {
                p: tri[2],
                b: [0.0, 1.0],
            },
        ];
        if verts.iter().all(|v| v.p.z >= NEAR) {
            self.fill(&verts, screen, object, triangle);
            return;
        }
        if verts.iter().all(|v| v.p.z < NEAR) {
            return;
        }
        // Clip against the near plane (Sutherland–Hodgman), then fan.
        let mut poly: Vec<ClipVertex> = Vec::with_capacity(4);
        for i in 0..3 {
            let (a, b) = (verts[i], verts[(i + 1) % 3]);
            if a.p.z >= NEAR {
                poly.push(a);
            }
            if (a.p.z >= NEAR) != (b.p.z >= NEAR) {
                let t = (NEAR - a.p.z) / (b.p.z - a.p.z);
                poly.push(ClipVertex {
                    p: a.p.lerp(b.p, t),
                    b: [
                        a.b[0] + (b.b[0] - a.b[0]) * t,
                        a.b[1] + (b.b[1] - a.b[1]) * t,
                    ],
                });
            }
        }
        for i in 1..poly.len().saturating_sub(1) {
            self.fill(&[poly[0], poly[i], poly[i + 1]], screen, object, triangle);
        }
    }

    fn fill(
        &mut self,
        v: &[ClipVertex; 3],
        (s, ox, oy): (f32, f32, f32),
        object: u32,
        triangle: u32,
    ) {
        let mut sx = [0.0f32; 3];
        let mut sy = [0.0f32; 3];
        let mut iw = [0.0f32; 3];
        for i in 0..3 {
            iw[i] = 1.0 / v[i].p.z;
            sx[i] = s * v[i].p.x * iw[i] + ox;
            sy[i] = s * v[i].p.y * iw[i] + oy;
        }
        let area = (sx[1] - sx[0]) * (sy[2] - sy[0]) - (sx[2] - sx[0]) * (sy[1] - sy[0]);
        if area.abs() < 1e-12 || !area.is_finite() {
            return;
        }
        let inv_area = 1.0 / area;
        let min_x = sx
            .iter()
            .cloned()
            .fold(f32::INFINITY, f32::min)
            .ceil()
            .max(0.0);
        let max_x = sx
            .iter()
            .cloned()
            .fold(f32::NEG_INFINITY, f32::max)
            .floor()
            .min(self.width as f32 - 1.0);
        let min_y = sy
            .iter()
            .cloned()
            .fold(f32::INFINITY, f32::min)
            .ceil()
            .max(0.0);
        let max_y = sy
            .iter()
            .cloned()
            .fold(f32::NEG_INFINITY, f32::max)
            .floor()
            .min(self.height as f32 - 1.0);
        if min_x > max_x || min_y > max_y {
            return;
        }
        // Edge function of the edge opposite vertex i, normalised so it is 1 at vertex i.
        let edge = |i: usize| {
            let (j, k) = ((i + 1) % 3, (i + 2) % 3);
            let a = (sy[j] - sy[k]) * inv_area;
            let b = (sx[k] - sx[j]) * inv_area;
            let c = (sx[j] * sy[k] - sx[k] * sy[j]) * inv_area;
            (a, b, c)
        };
        let e = [edge(0), edge(1), edge(2)];
        // Attribute planes over screen space: 1/z and b/z (perspective-correct).
        let bw1 = [v[0].b[0] * iw[0], v[1].b[0] * iw[1], v[2].b[0] * iw[2]];
        let bw2 = [v[0].b[1] * iw[0], v[1].b[1] * iw[1], v[2].b[1] * iw[2]];
        let (x0, x1, y0, y1) = (
            min_x as usize,
            max_x as usize,
            min_y as usize,
            max_y as usize,
        );
        for y in y0..=y1 {
            let fy = y as f32;
            let row = y * self.width;
            for x in x0..=x1 {
                let fx = x as f32;
                let l0 = e[0].0 * fx + e[0].1 * fy + e[0].2;
                let l1 = e[1].0 * fx + e[1].1 * fy + e[1].2;
                let l2 = e[2].0 * fx + e[2].1 * fy + e[2].2;
                if l0 < 0.0 || l1 < 0.0 || l2 < 0.0 {
                    continue;
                }
                let inv_z = l0 * iw[0] + l1 * iw[1] + l2 * iw[2];
                let idx = row + x;
                if inv_z <= self.inv_depth[idx] {
                    continue;
                }
                let z = 1.0 / inv_z;
                self.inv_depth[idx] = inv_z;
                self.object[idx] = object;
                self.triangle[idx] = triangle;
                self.bary[idx] = [
                    (l0 * bw1[0] + l1 * bw1[1] + l2 * bw1[2]) * z,
                    (l0 * bw2[0] + l1 * bw2[1] + l2 * bw2[2]) * z,
                ];
            }
        }
    }
}

/// Depth map seen from a directional light (orthographic), for shadow tests.
#[derive(Clone, Debug)]
pub struct ShadowMap {
    pub size: usize,
    /// Light-space axes: `u`, `v` across the map, `toward` = unit vector to the light.
    pub u: Vec3,
    pub v: Vec3,
    pub toward: Vec3,
    /// Light-space origin (u, v) and metres per texel.
    pub origin: (f32, f32),
    pub texel: f32,
    /// Height along `toward` of the nearest surface (larger = closer to the light).
    pub depth: Vec<f32>,
}

impl ShadowMap {
    /// An empty map covering the light-space footprint of `lo..hi` (world bounds).
    pub fn new(toward: Vec3, lo: Vec3, hi: Vec3, size: usize) -> ShadowMap {
        let toward = toward.normalized();
        let helper = if toward.z.abs() < 0.9 {
            Vec3::Z
        } else {
            Vec3::new(1.0, 0.0, 0.0)
        };
        let u = helper.cross(toward).normalized();
        let v = toward.cross(u);
        let (mut umin, mut umax, mut vmin, mut vmax) = (
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::INFINITY,
            f32::NEG_INFINITY,
        );
        for i in 0..8 {
            let p = Vec3::new(
                if i & 1 == 0 { lo.x } else { hi.x },
                if i & 2 == 0 { lo.y } else { hi.y },
                if i & 4 == 0 { lo.z } else { hi.z },
            );
            let (pu, pv) = (p.dot(u), p.dot(v));
            umin = umin.min(pu);
            umax = umax.max(pu);
            vmin = vmin.min(pv);
            vmax = vmax.max(pv);
        }
        let texel = ((umax - umin).max(vmax - vmin) / size as f32).max(1e-6);
        ShadowMap {
            size,
            u,
            v,
            toward,
            origin: (umin, vmin),
            texel,
            depth: vec![f32::NEG_INFINITY; size * size],
        }
    }

    fn to_map(&self, p: Vec3) -> (f32, f32, f32) {
        (
            (p.dot(self.u) - self.origin.0) / self.texel,
            (p.dot(self.v) - self.origin.1) / self.texel,
            p.dot(self.toward),
        )
    }

    /// Draws one world-space triangle into the depth map.
    pub fn draw(&mut self, tri: [Vec3; 3]) {
        let m = tri.map(|p| self.to_map(p));
        let area = (m[1].0 - m[0].0) * (m[2].1 - m[0].1) - (m[2].0 - m[0].0) * (m[1].1 - m[0].1);
        if area.abs() < 1e-12 {
            return;
        }
        let inv = 1.0 / area;
        let n = self.size as f32 - 1.0;
        let x0 = m
            .iter()
            .map(|q| q.0)
            .fold(f32::INFINITY, f32::min)
            .ceil()
            .max(0.0);
        let x1 = m
            .iter()
            .map(|q| q.0)
            .fold(f32::NEG_INFINITY, f32::max)
            .floor()
            .min(n);
        let y0 = m
            .iter()
            .map(|q| q.1)
            .fold(f32::INFINITY, f32::min)
            .ceil()
            .max(0.0);
        let y1 = m
            .iter()
            .map(|q| q.1)
            .fold(f32::NEG_INFINITY, f32::max)
            .floor()
            .min(n);
        if x0 > x1 || y0 > y1 {
            return;
        }
        for y in y0 as usize..=y1 as usize {
            for x in x0 as usize..=x1 as usize {
                let (fx, fy) = (x as f32, y as f32);
                let l1 =
                    ((fx - m[0].0) * (m[2].1 - m[0].1) - (m[2].0 - m[0].0) * (fy - m[0].1)) * inv;
                let l2 =
                    ((m[1].0 - m[0].0) * (fy - m[0].1) - (fx - m[0].0) * (m[1].1 - m[0].1)) * inv;
                let l0 = 1.0 - l1 - l2;
                if l0 < 0.0 || l1 < 0.0 || l2 < 0.0 {
                    continue;
                }
                let d = l0 * m[0].2 + l1 * m[1].2 + l2 * m[2].2;
                let i = y * self.size + x;
                if d > self.depth[i] {
                    self.depth[i] = d;
                }
            }
        }
    }

    /// Fraction of light reaching `p` (0 = full shadow), percentage-closer filtered over a
    /// disc of `radius` texels. The four outer taps decide alone when they agree (most pixels
    /// are fully lit or fully shadowed); only penumbra pixels pay for all eight.
    pub fn light_fraction(&self, p: Vec3, radius: f32) -> f32 {
        const TAPS: [(f32, f32); 8] = [
            (1.0, 0.0),
            (-1.0, 0.0),
            (0.0, 1.0),
            (0.0, -1.0),
            (0.0, 0.0),
            (0.7, 0.7),
            (-0.7, -0.7),
            (0.7, -0.7),
        ];
        let (mx, my, d) = self.to_map(p);
        let limit = d + self.texel * 1.5;
        let tap = |(dx, dy): (f32, f32)| -> f32 {
            let (x, y) = (mx + dx * radius + 0.5, my + dy * radius + 0.5);
            if x < 0.0 || y < 0.0 || x >= self.size as f32 || y >= self.size as f32 {
                return 1.0;
            }
            // x, y ≥ 0: truncation rounds the tap to the nearest texel.
            (self.depth[y as usize * self.size + x as usize] <= limit) as u8 as f32
        };
        let outer: f32 = TAPS[..4].iter().map(|&t| tap(t)).sum();
        if outer == 0.0 || outer == 4.0 {
            return outer / 4.0;
        }
        (outer + TAPS[4..].iter().map(|&t| tap(t)).sum::<f32>()) / TAPS.len() as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearer_triangle_wins_and_barycentrics_sum_to_one() {
        let mut vb = VisBuffer::new(32, 32);
        let far = [
            Vec3::new(-1.0, -1.0, 2.0),
            Vec3::new(3.0, -1.0, 2.0),
            Vec3::new(-1.0, 3.0, 2.0),
        ];
        let near = [
            Vec3::new(-0.5, -0.5, 1.0),
            Vec3::new(1.0, -0.5, 1.0),
            Vec3::new(-0.5, 1.0, 1.0),
        ];
        // Clockwise seen from the camera at the origin (y down) = front facing.
        let flip = |t: [Vec3; 3]| [t[0], t[2], t[1]];
        vb.draw(flip(far), (16.0, 16.0, 16.0), 0, 0, true);
        vb.draw(flip(near), (16.0, 16.0, 16.0), 1, 0, true);
        assert_eq!(vb.object[16 * 32 + 16], 1);
        assert_eq!(vb.object[31 * 32 + 10], 0);
        // A back-facing copy is culled.
        let mut vb2 = VisBuffer::new(32, 32);
        vb2.draw(near, (16.0, 16.0, 16.0), 1, 0, true);
        assert!(vb2.object.iter().all(|&o| o == NO_OBJECT));
        // Perspective-correct interpolation reproduces the 3D point's depth.
        let i = 20 * 32 + 12;
        let [b1, b2] = vb.bary[i];
        let t = flip(near);
        let p = t[0] * (1.0 - b1 - b2) + t[1] * b1 + t[2] * b2;
        assert!((p.z - 1.0).abs() < 1e-5 && (16.0 * p.x / p.z + 16.0 - 12.0).abs() < 1e-3);
    }

    #[test]
    fn triangle_crossing_the_near_plane_is_clipped_not_lost() {
        let mut vb = VisBuffer::new(16, 16);
        let t = [
            Vec3::new(-5.0, 1.0, -1.0),
            Vec3::new(0.0, 1.0, 5.0),
            Vec3::new(5.0, 1.0, -1.0),
        ];
        vb.draw(t, (8.0, 8.0, 8.0), 0, 0, false);
        assert!(vb.object.contains(&0));
    }

    #[test]
    fn occluder_casts_shadow() {
        let mut sm = ShadowMap::new(
            Vec3::Z,
            Vec3::new(-1.0, -1.0, 0.0),
            Vec3::new(1.0, 1.0, 1.0),
            64,
        );
        sm.draw([
            Vec3::new(-0.5, -0.5, 0.5),
            Vec3::new(0.5, -0.5, 0.5),
            Vec3::new(0.0, 0.5, 0.5),
        ]);
        assert_eq!(sm.light_fraction(Vec3::new(0.0, 0.0, 0.0), 1.0), 0.0);
        assert_eq!(sm.light_fraction(Vec3::new(0.9, 0.9, 0.0), 1.0), 1.0);
    }
}
