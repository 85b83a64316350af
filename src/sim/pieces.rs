//! Procedural piece sets.
//!
//! A classifier trained on two Staunton meshes learns those meshes, not chess pieces: a club's
//! own set is a new design. [`staunton`] draws an unbounded family of turned Staunton-like sets
//! (foot, stem, collar, and per role the features a player recognises: the pawn's ball, the
//! rook's turret, the knight's head, the bishop's mitre, the queen's coronet, the king's cross
//! or finial), so that training sees many designs. [`geometric`] is a set of another design
//! family (cubes, cylinders, a ball; after the Bauhaus sets of the 1920s) that the generator
//! never produces: it is kept out of training to measure adaptation to a set never seen.
//!
//! While building, the king is about 1 tall; [`PieceSet`] normalisation scales to the
//! configured king height. Invariants as in `mesh`: z up, base on z = 0, knight facing +y.

use std::f32::consts::{PI, TAU};

use super::SimError;
use super::math::{Mat3, Vec3};
use super::mesh::{Mesh, PieceSet, PieceSetConfig};
use super::rng::SimRng;

/// A set named on the command line instead of a directory: `geometric`, `turned` (the
/// built-in set) or `staunton:SEED` (one draw of the procedural family). `None` if `spec`
/// names none of them (it is then a directory).
pub fn named_set(spec: &str) -> Option<Result<PieceSet, SimError>> {
    match spec {
        "geometric" => Some(Ok(geometric())),
        "turned" => Some(Ok(PieceSet::builtin())),
        _ => {
            let seed = spec.strip_prefix("staunton:")?;
            Some(
                seed.parse::<u64>()
                    .map(|s| staunton(&mut SimRng::new(s)))
                    .map_err(|_| {
                        SimError::Config(format!("staunton:{seed}: the seed must be an integer"))
                    }),
            )
        }
    }
}

/// A lathe profile under construction: (radius, height) points from the base centre upwards.
struct Profile {
    pts: Vec<(f32, f32)>,
}

impl Profile {
    fn new(radius: f32) -> Self {
        Profile {
            pts: vec![(0.0, 0.0), (radius, 0.0)],
        }
    }

    fn top(&self) -> (f32, f32) {
        *self.pts.last().expect("a profile starts with two points")
    }

    /// A straight segment to `radius`, `dz` higher.
    fn line(mut self, radius: f32, dz: f32) -> Self {
        let (_, z) = self.top();
        self.pts.push((radius.max(0.0), z + dz));
        self
    }

    /// A curve to `radius`, `dz` higher, bulging outwards by `bulge` (inwards if negative).
    fn curve(mut self, radius: f32, dz: f32, bulge: f32) -> Self {
        let (r0, z0) = self.top();
        let n = 6;
        for i in 1..=n {
            let t = i as f32 / n as f32;
            let r = r0 + (radius - r0) * t + bulge * (PI * t).sin();
            self.pts.push((r.max(0.0), z0 + dz * t));
        }
        self
    }

    /// A rounded bead out to `radius` and back to the current radius, `height` tall.
    fn bead(mut self, radius: f32, height: f32) -> Self {
        let (r0, z0) = self.top();
        let n = 6;
        for i in 1..=n {
            let t = i as f32 / n as f32;
            let r = r0 + (radius - r0) * (PI * t).sin().max(0.0).sqrt();
            self.pts.push((r, z0 + height * t));
        }
        self
    }

    /// A ball of `radius` resting on the current top (narrower than the ball); closes the
    /// profile.
    fn ball(mut self, radius: f32) -> Vec<(f32, f32)> {
        let (r0, z0) = self.top();
        let a0 = (r0 / radius).clamp(0.0, 0.95).asin();
        let centre = z0 + radius * a0.cos();
        let n = 10;
        for i in 1..=n {
            let a = a0 + (PI - a0) * i as f32 / n as f32;
            let r = if i == n { 0.0 } else { radius * a.sin() };
            self.pts.push((r, centre - radius * a.cos()));
        }
        self.pts
    }

    /// Closes the profile with a flat top.
    fn close(mut self) -> Vec<(f32, f32)> {
        let (_, z) = self.top();
        self.pts.push((0.0, z));
        self.pts
    }
}

/// A sphere of `radius` with its bottom at z = 0.
fn sphere(radius: f32, segments: usize) -> Mesh {
    let from_the_bottom = Profile {
        pts: vec![(0.0, 0.0)],
    };
    Mesh::lathe(&from_the_bottom.ball(radius), segments)
}

/// `count` copies of `part` around the z axis at `radius`, each turned to face outwards,
/// their bottoms at height `z`.
fn ring_of(mesh: &mut Mesh, part: &Mesh, count: usize, radius: f32, z: f32, phase: f32) {
    for k in 0..count {
        let a = phase + TAU * k as f32 / count as f32;
        let mut p = part.clone();
        p.transform_linear(&Mat3::rot_z(a));
        mesh.append(&p, Vec3::new(radius * a.cos(), radius * a.sin(), z));
    }
}

/// A prism: the simple polygon `outline` in the (y, z) plane, `thickness` thick along x,
/// centred on x = 0. Flat-shaded (every face its own vertices).
fn extrude(outline: &[(f32, f32)], thickness: f32) -> Mesh {
    let mut poly = outline.to_vec();
    let area: f32 = (0..poly.len())
        .map(|i| {
            let (a, b) = (poly[i], poly[(i + 1) % poly.len()]);
            a.0 * b.1 - b.0 * a.1
        })
        .sum();
    if area < 0.0 {
        poly.reverse();
    }
    let mut m = Mesh::default();
    let hx = thickness * 0.5;
    fn push(m: &mut Mesh, p: Vec3, n: Vec3) -> u32 {
        m.positions.push(p);
        m.normals.push(n);
        m.uvs.push([0.5 + p.y, p.z]);
        m.positions.len() as u32 - 1
    }
    for (x, nx) in [(hx, 1.0), (-hx, -1.0)] {
        let base = m.positions.len() as u32;
        for &(y, z) in &poly {
            push(&mut m, Vec3::new(x, y, z), Vec3::new(nx, 0.0, 0.0));
        }
        for [a, b, c] in ear_clip(&poly) {
            m.triangles.push([base + a, base + b, base + c]);
        }
    }
    for i in 0..poly.len() {
        let (a, b) = (poly[i], poly[(i + 1) % poly.len()]);
        let (dy, dz) = (b.0 - a.0, b.1 - a.1);
        let len = (dy * dy + dz * dz).sqrt().max(1e-9);
        // Counter-clockwise outline: the outward normal is the edge turned clockwise.
        let n = Vec3::new(0.0, dz / len, -dy / len);
        let q = [
            push(&mut m, Vec3::new(hx, a.0, a.1), n),
            push(&mut m, Vec3::new(hx, b.0, b.1), n),
            push(&mut m, Vec3::new(-hx, b.0, b.1), n),
            push(&mut m, Vec3::new(-hx, a.0, a.1), n),
        ];
        m.triangles.push([q[0], q[1], q[2]]);
        m.triangles.push([q[0], q[2], q[3]]);
    }
    m.orient_triangles();
    m
}

/// Triangles of a simple counter-clockwise polygon by ear clipping (small polygons only).
fn ear_clip(poly: &[(f32, f32)]) -> Vec<[u32; 3]> {
    let cross = |o: (f32, f32), a: (f32, f32), b: (f32, f32)| {
        (a.0 - o.0) * (b.1 - o.1) - (a.1 - o.1) * (b.0 - o.0)
    };
    let inside =
        |p, a, b, c| cross(a, b, p) >= 0.0 && cross(b, c, p) >= 0.0 && cross(c, a, p) >= 0.0;
    let mut idx: Vec<usize> = (0..poly.len()).collect();
    let mut out = Vec::new();
    while idx.len() > 3 {
        let n = idx.len();
        let ear = (0..n).find(|&i| {
            let (ia, ib, ic) = (idx[(i + n - 1) % n], idx[i], idx[(i + 1) % n]);
            let (a, b, c) = (poly[ia], poly[ib], poly[ic]);
            cross(a, b, c) > 1e-9
                && idx
                    .iter()
                    .all(|&j| j == ia || j == ib || j == ic || !inside(poly[j], a, b, c))
        });
        // A degenerate outline has no ear left: fan the rest rather than loop forever.
        let i = ear.unwrap_or(1);
        out.push([
            idx[(i + n - 1) % n] as u32,
            idx[i] as u32,
            idx[(i + 1) % n] as u32,
        ]);
        idx.remove(i);
    }
    out.push([idx[0] as u32, idx[1] as u32, idx[2] as u32]);
    out
}

/// The design language one set shares across its six pieces.
struct Style {
    base: f32,
    foot_steps: usize,
    foot: f32,
    waist: f32,
    stem_bulge: f32,
    collar: f32,
    collar_h: f32,
    segments: usize,
}

impl Style {
    fn draw(rng: &mut SimRng) -> Style {
        Style {
            base: rng.range(0.17, 0.23),
            foot_steps: 1 + rng.below(3),
            foot: rng.range(0.05, 0.11),
            waist: rng.range(0.35, 0.6),
            stem_bulge: rng.range(-0.03, 0.015),
            collar: rng.range(0.55, 0.85),
            collar_h: rng.range(0.025, 0.05),
            segments: 20 + rng.below(13),
        }
    }

    /// Foot, stem and collar of a piece of base radius `r` whose collar tops out at `height`.
    fn body(&self, r: f32, height: f32) -> Profile {
        let mut p = Profile::new(r);
        let step_h = self.foot / self.foot_steps as f32;
        let mut radius = r;
        for _ in 0..self.foot_steps {
            p = p.line(radius, step_h * 0.45);
            radius *= 0.9;
            p = p.curve(radius, step_h * 0.55, step_h * 0.2);
        }
        let stem = (height - self.foot - self.collar_h).max(0.04);
        p.curve(r * self.waist, stem, self.stem_bulge * r / 0.2)
            .bead(r * self.collar, self.collar_h)
    }
}

/// One draw of the turned Staunton-like family (see the module comment).
pub fn staunton(rng: &mut SimRng) -> PieceSet {
    let st = Style::draw(rng);
    let seg = st.segments;
    // Heights relative to the king, in the order of every Staunton set: pawn < rook < knight <
    // bishop < queen < king (the rook's merlons may lift it to the knight's height).
    let h_pawn = rng.range(0.48, 0.58);
    let h_rook = h_pawn + rng.range(0.03, 0.08);
    let h_knight = h_rook + rng.range(0.03, 0.09);
    let h_bishop = h_knight + rng.range(0.06, 0.12);
    let h_queen = rng.range(0.84, 0.94).max(h_bishop + 0.05);
    let r = |f: f32| st.base * f;

    // Pawn: ball on the collar.
    let pr = r(rng.range(0.78, 0.9));
    let ball = pr * rng.range(0.5, 0.65);
    let neck = pr * rng.range(0.3, 0.42);
    let pawn = st
        .body(pr, h_pawn - 1.85 * ball - 0.02)
        .line(neck, 0.02)
        .ball(ball);

    // Rook: a turret with a rim and a cavity; merlons on most sets.
    let rr = r(rng.range(0.85, 0.95));
    let tr = rr * rng.range(0.7, 0.9);
    let th = rng.range(0.1, 0.17);
    let cavity = rng.range(0.03, 0.06);
    let rook_profile = st
        .body(rr, h_rook - th)
        .curve(tr, th * 0.85, rng.range(-0.02, 0.01))
        .line(tr * 1.06, th * 0.05)
        .line(tr * 1.06, th * 0.1)
        .line(tr * 0.72, 0.0)
        .line(tr * 0.72, -cavity)
        .close();
    let mut rook = Mesh::lathe(&rook_profile, seg);
    if rng.unit() < 0.7 {
        let n = [4, 5, 6, 8][rng.below(4)];
        let w = TAU * tr / n as f32 * rng.range(0.35, 0.55);
        let merlon = Mesh::cuboid(Vec3::new(tr * 0.3, w, rng.range(0.03, 0.06)));
        ring_of(&mut rook, &merlon, n, tr * 0.9, h_rook, rng.unit() * TAU);
    }

    // Knight: a short body and an extruded head.
    let nr = r(rng.range(0.9, 1.0));
    let body_h = h_knight * rng.range(0.32, 0.42);
    let knight_body = st.body(nr, body_h).line(nr * st.collar * 0.8, 0.01).close();
    let mut knight = Mesh::lathe(&knight_body, seg);
    let head = knight_head(rng, nr, h_knight - body_h);
    knight.append(&head, Vec3::new(0.0, 0.0, body_h - 0.005));

    // Bishop: an ovoid mitre with a finial ball.
    let br = r(rng.range(0.88, 0.97));
    let mitre_h = rng.range(0.18, 0.26);
    let mitre_r = br * rng.range(0.5, 0.66);
    let finial = rng.range(0.025, 0.045);
    let bishop_profile = st
        .body(br, h_bishop - mitre_h - 1.8 * finial)
        .line(br * rng.range(0.3, 0.4), 0.015)
        .curve(mitre_r, mitre_h * 0.4, mitre_r * 0.15)
        .curve(mitre_r * 0.15, mitre_h * 0.6, mitre_r * rng.range(0.1, 0.3))
        .ball(finial);
    let bishop = Mesh::lathe(&bishop_profile, seg);

    // Queen: a flared crown, a coronet of small balls and a top ball.
    let qr = r(rng.range(0.97, 1.02));
    let crown_h = rng.range(0.12, 0.18);
    let crown_r = qr * rng.range(0.7, 0.9);
    let top_ball = rng.range(0.035, 0.055);
    let dip = rng.range(0.01, 0.03);
    let queen_profile = st
        .body(qr, h_queen - crown_h - 2.0 * top_ball)
        .line(qr * st.waist * 0.8, 0.015)
        .curve(crown_r, crown_h, -crown_r * rng.range(0.05, 0.2))
        .line(crown_r * 0.55, -dip)
        .curve(top_ball * 0.5, dip + top_ball * 0.3, 0.0)
        .ball(top_ball);
    let mut queen = Mesh::lathe(&queen_profile, seg);
    let points = 6 + rng.below(5);
    let point_r = rng.range(0.018, 0.03);
    ring_of(
        &mut queen,
        &sphere(point_r, 8),
        points,
        crown_r * 0.95,
        h_queen - 2.0 * top_ball - point_r,
        0.0,
    );

    // King: a crown closed by a dome, then a cross or a finial.
    let kr = r(rng.range(1.0, 1.05));
    let cross = rng.unit() < 0.7;
    let finial_h = rng.range(0.1, 0.16);
    let kcrown_h = rng.range(0.12, 0.18);
    let kcrown_r = kr * rng.range(0.68, 0.88);
    let dome = rng.range(0.04, 0.08);
    let king_profile = st
        .body(kr, 1.0 - finial_h - kcrown_h - dome)
        .line(kr * st.waist * 0.85, 0.015)
        .curve(kcrown_r, kcrown_h, -kcrown_r * rng.range(0.05, 0.2))
        .curve(kcrown_r * 0.25, dome, kcrown_r * 0.3)
        .line(0.02, 0.005)
        .close();
    let mut king = Mesh::lathe(&king_profile, seg);
    let (_, top) = king.bounds();
    if cross {
        let bar = rng.range(0.025, 0.04);
        king.append(
            &Mesh::cuboid(Vec3::new(bar, bar, finial_h)),
            Vec3::new(0.0, 0.0, top.z),
        );
        let arm = Mesh::cuboid(Vec3::new(bar, finial_h * rng.range(0.55, 0.8), bar));
        king.append(
            &arm,
            Vec3::new(0.0, 0.0, top.z + finial_h * rng.range(0.5, 0.7)),
        );
    } else {
        let fin = Profile::new(0.035)
            .curve(0.012, finial_h * 0.5, 0.0)
            .ball(finial_h * 0.25);
        king.append(&Mesh::lathe(&fin, 12), Vec3::new(0.0, 0.0, top.z));
    }

    let meshes = vec![Mesh::lathe(&pawn, seg), knight, bishop, rook, queen, king];
    let config = PieceSetConfig {
        king_height: rng.range(0.085, 0.1),
        ..PieceSetConfig::default()
    };
    PieceSet::from_meshes("staunton".into(), meshes, config)
        .expect("procedural kings have a positive height")
}

/// A horse's head and neck in profile (facing +y), `height` tall, extruded.
fn knight_head(rng: &mut SimRng, base_r: f32, height: f32) -> Mesh {
    let snout = rng.range(-0.1, 0.15);
    let droop = rng.range(-0.1, 0.08);
    let ear = rng.range(0.0, 0.12);
    let mane = rng.range(0.0, 0.15);
    let mut j = |v: f32| v + rng.sym(0.04);
    // Unit outline: the neck's foot spans y in [-0.55, 0.45] at z = 0, the ears reach z ≈ 1.3.
    let outline = [
        (j(-0.55), 0.0),
        (j(0.45), 0.0),
        (j(0.55), j(0.25)),
        (j(0.35), j(0.5)),
        (j(0.9 + snout), j(0.55 + droop)),
        (j(1.0 + snout), j(0.62 + droop)),
        (j(1.0 + snout), j(0.8 + droop)),
        (j(0.5), j(1.05)),
        (j(0.25), j(1.18 + ear)),
        (j(0.1), 1.3 + ear),
        (j(-0.05), j(1.12)),
        (j(-0.35 - mane), j(0.95)),
        (j(-0.6 - mane), j(0.5)),
    ];
    let top = outline.iter().map(|p| p.1).fold(0.0, f32::max);
    let scale_z = height / top;
    let scale_y = base_r * rng.range(0.75, 1.0);
    let tilt = rng.sym(0.15);
    let outline: Vec<(f32, f32)> = outline
        .iter()
        .map(|&(y, z)| {
            let (y, z) = (y * scale_y, z * scale_z);
            (y * tilt.cos() - z * tilt.sin() * 0.3, z)
        })
        .collect();
    extrude(&outline, base_r * rng.range(0.75, 1.15))
}

/// A set of another design family, never drawn by [`staunton`] and kept out of training:
/// pawn a small cube, rook a larger one, knight an L of cubes, bishop an X of crossed slabs,
/// queen a cylinder with a ball, king a cube crowned by a cube turned 45°.
pub fn geometric() -> PieceSet {
    let cube = |s: f32| Mesh::cuboid(Vec3::new(s, s, s));
    let pawn = cube(0.3);
    let rook = cube(0.42);
    let mut knight = Mesh::cuboid(Vec3::new(0.4, 0.4, 0.34));
    let step = Mesh::cuboid(Vec3::new(0.4, 0.2, 0.26));
    knight.append(&step, Vec3::new(0.0, 0.1, 0.34));
    let mut bishop = Mesh::default();
    for a in [PI / 4.0, -PI / 4.0] {
        let mut slab = Mesh::cuboid(Vec3::new(0.12, 0.5, 0.62));
        slab.transform_linear(&Mat3::rot_z(a));
        bishop.append(&slab, Vec3::ZERO);
    }
    let mut queen = Mesh::lathe(&Profile::new(0.21).line(0.21, 0.62).close(), 32);
    queen.append(&sphere(0.14, 20), Vec3::new(0.0, 0.0, 0.6));
    let mut king = cube(0.42);
    let mut crown = Mesh::cuboid(Vec3::new(0.4, 0.4, 0.4));
    crown.transform_linear(&Mat3::rot_z(PI / 4.0));
    let tilt = Mat3::rot_x(PI / 4.0);
    let mut diamond = Mesh::cuboid(Vec3::new(0.26, 0.26, 0.26));
    diamond.transform_linear(&tilt);
    king.append(&crown, Vec3::new(0.0, 0.0, 0.42));
    king.append(&diamond, Vec3::new(0.0, 0.0, 0.82));
    let meshes = vec![pawn, knight, bishop, rook, queen, king];
    // Squat pieces: a king of 80 mm keeps the cubes within their squares.
    let config = PieceSetConfig {
        king_height: 0.08,
        ..PieceSetConfig::default()
    };
    PieceSet::from_meshes("geometric".into(), meshes, config)
        .expect("the geometric king has a positive height")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::fen::PieceKind;

    fn height(set: &PieceSet, kind: PieceKind) -> f32 {
        let (lo, hi) = set.meshes[kind.index()].bounds();
        hi.z - lo.z
    }

    #[test]
    fn staunton_sets_keep_the_height_order_and_differ_by_seed() {
        for seed in 0..40 {
            let s = staunton(&mut SimRng::new(seed));
            let h: Vec<f32> = PieceKind::ALL.iter().map(|&k| height(&s, k)).collect();
            let [pawn, knight, bishop, rook, queen, king] = h[..] else {
                unreachable!()
            };
            // Rook and knight stand about equally tall in real sets; the rest is ordered.
            assert!(
                pawn < rook && pawn < knight && knight < bishop,
                "seed {seed}: {h:?}"
            );
            assert!(bishop < queen && queen < king, "seed {seed}: {h:?}");
            assert!((0.084..=0.101).contains(&king), "seed {seed}: king {king}");
            for (k, m) in PieceKind::ALL.iter().zip(&s.meshes) {
                assert!(
                    m.positions
                        .iter()
                        .all(|p| p.x.is_finite() && p.y.is_finite() && p.z.is_finite())
                );
                assert!(
                    m.normals.iter().all(|n| (n.length() - 1.0).abs() < 1e-3),
                    "{k:?}"
                );
                // A piece stands within a 60 mm square.
                let (lo, hi) = m.bounds();
                assert!(
                    hi.x - lo.x < 0.06 && hi.y - lo.y < 0.06,
                    "seed {seed} {k:?}"
                );
            }
        }
        let a = staunton(&mut SimRng::new(1));
        let b = staunton(&mut SimRng::new(2));
        assert_eq!(
            a.meshes[0].positions,
            staunton(&mut SimRng::new(1)).meshes[0].positions
        );
        assert_ne!(a.meshes[0].positions, b.meshes[0].positions);
    }

    #[test]
    fn extruded_outline_is_closed_and_faces_outwards() {
        // An L-shaped (non-convex) outline.
        let l = [
            (0.0, 0.0),
            (2.0, 0.0),
            (2.0, 1.0),
            (1.0, 1.0),
            (1.0, 2.0),
            (0.0, 2.0),
        ];
        let m = extrude(&l, 0.5);
        // 4 cap triangles each side + 2 per side quad.
        assert_eq!(m.triangles.len(), 2 * 4 + 2 * 6);
        // Cap area equals the polygon's (3) on each side.
        let cap_area: f32 = m
            .triangles
            .iter()
            .map(|t| t.map(|i| m.positions[i as usize]))
            .filter(|[a, b, c]| a.x == b.x && b.x == c.x)
            .map(|[a, b, c]| (b - a).cross(c - a).length() * 0.5)
            .sum();
        assert!((cap_area - 6.0).abs() < 1e-4, "{cap_area}");
        // Winding agrees with the stored normals.
        for t in &m.triangles {
            let [a, b, c] = t.map(|i| m.positions[i as usize]);
            assert!((b - a).cross(c - a).dot(m.normals[t[0] as usize]) > 0.0);
        }
    }

    #[test]
    fn named_sets_resolve_and_bad_seeds_fail() {
        assert_eq!(named_set("geometric").unwrap().unwrap().name, "geometric");
        assert_eq!(named_set("turned").unwrap().unwrap().name, "builtin");
        assert!(named_set("staunton:7").unwrap().is_ok());
        assert!(named_set("staunton:x").unwrap().is_err());
        assert!(named_set("/usr/share/games/dreamchess/pieces/classic").is_none());
        let ball = sphere(0.5, 12);
        let (lo, hi) = ball.bounds();
        assert!(lo.z.abs() < 1e-6 && (hi.z - 1.0).abs() < 1e-5 && (hi.x - 0.5).abs() < 0.01);
        let g = geometric();
        assert!(height(&g, PieceKind::Pawn) < height(&g, PieceKind::Rook));
        assert!(height(&g, PieceKind::Queen) < height(&g, PieceKind::King));
    }
}
