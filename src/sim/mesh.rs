//! Triangle meshes: the piece loaders (dreamchess `.dcm`, Wavefront OBJ), a built-in turned set,
//! procedural boxes, and seeded geometry variation.
//!
//! Every piece mesh is normalised on load: metres, z up, base on z = 0, centred on the z axis,
//! the knight's head facing +y (towards Black for a White piece on board A).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::SimError;
use super::fen::PieceKind;
use super::math::{Mat3, Vec3};
use super::texture::Texture;

/// An indexed triangle mesh with per-vertex normals and texture coordinates.
///
/// Invariant: all index triples are in range and triangles wind counter-clockwise seen from
/// outside (agreeing with the vertex normals), so back faces may be culled.
#[derive(Clone, Debug, Default)]
pub struct Mesh {
    pub positions: Vec<Vec3>,
    pub normals: Vec<Vec3>,
    pub uvs: Vec<[f32; 2]>,
    pub triangles: Vec<[u32; 3]>,
}

impl Mesh {
    /// Axis-aligned bounds (min, max); the empty mesh gives zeros.
    pub fn bounds(&self) -> (Vec3, Vec3) {
        let mut it = self.positions.iter();
        let Some(&first) = it.next() else {
            return (Vec3::ZERO, Vec3::ZERO);
        };
        it.fold((first, first), |(lo, hi), &p| (lo.min(p), hi.max(p)))
    }

    /// Orients every triangle so that its face normal agrees with its vertex normals, drops
    /// degenerate ones. Needed for strips and for OBJ files of unknown winding.
    pub(super) fn orient_triangles(&mut self) {
        let (pos, nor) = (&self.positions, &self.normals);
        self.triangles.retain_mut(|t| {
            let [a, b, c] = t.map(|i| i as usize);
            if a == b || b == c || a == c {
                return false;
            }
            let face = (pos[b] - pos[a]).cross(pos[c] - pos[a]);
            if face.length() <= 1e-12 {
                return false;
            }
            if face.dot(nor[a] + nor[b] + nor[c]) < 0.0 {
                t.swap(1, 2);
            }
            true
        });
    }

    /// Recomputes smooth vertex normals from the faces (area weighted).
    fn compute_normals(&mut self) {
        let mut n = vec![Vec3::ZERO; self.positions.len()];
        for t in &self.triangles {
            let [a, b, c] = t.map(|i| i as usize);
            let f = (self.positions[b] - self.positions[a])
                .cross(self.positions[c] - self.positions[a]);
            for i in [a, b, c] {
                n[i] = n[i] + f;
            }
        }
        self.normals = n
            .into_iter()
            .map(|v| {
                if v.length() > 0.0 {
                    v.normalized()
                } else {
                    Vec3::Z
                }
            })
            .collect();
    }

    /// Moves the base to z = 0 and the bounding-box centre onto the z axis, then scales by `s`.
    fn normalise(&mut self, s: f32) {
        let (lo, hi) = self.bounds();
        let shift = Vec3::new((lo.x + hi.x) * 0.5, (lo.y + hi.y) * 0.5, lo.z);
        for p in &mut self.positions {
            *p = (*p - shift) * s;
        }
    }

    pub(super) fn transform_linear(&mut self, m: &Mat3) {
        let nm = *m;
        for p in &mut self.positions {
            *p = m.apply(*p);
        }
        for n in &mut self.normals {
            *n = nm.apply(*n).normalized();
        }
    }

    /// A seeded shape variation: per-axis scale and a taper (top narrower for `taper > 0`).
    /// Normals are corrected for the scale; the small taper is ignored for shading.
    pub fn varied(&self, scale: Vec3, taper: f32) -> Mesh {
        let (_, hi) = self.bounds();
        let h = hi.z.max(1e-6);
        let mut m = self.clone();
        for p in &mut m.positions {
            let t = 1.0 - taper * (p.z / h - 0.5);
            *p = Vec3::new(p.x * scale.x * t, p.y * scale.y * t, p.z * scale.z);
        }
        let inv = Vec3::new(1.0 / scale.x, 1.0 / scale.y, 1.0 / scale.z);
        for n in &mut m.normals {
            *n = n.mul_elem(inv).normalized();
        }
        m
    }

    /// A box centred on the origin in x/y with its bottom at z = 0 and size `size`.
    /// The top face maps uv `[0,1]²` over x/y (v grows with y); side faces map to a thin strip
    /// along the matching top edge so they pick up the border of a board texture.
    pub fn cuboid(size: Vec3) -> Mesh {
        let (hx, hy, h) = (size.x * 0.5, size.y * 0.5, size.z);
        let mut m = Mesh::default();
        let uv_of = |p: Vec3, n: Vec3| -> [f32; 2] {
            let u = (p.x + hx) / (2.0 * hx);
            let v = (p.y + hy) / (2.0 * hy);
            if n.z.abs() > 0.5 {
                [u, v]
            } else if n.x.abs() > 0.5 {
                [
                    if n.x > 0.0 { 0.995 } else { 0.005 }
                        - 0.003 * p.z / h.max(1e-6) * n.x.signum(),
                    v,
                ]
            } else {
                [
                    u,
                    if n.y > 0.0 { 0.995 } else { 0.005 }
                        - 0.003 * p.z / h.max(1e-6) * n.y.signum(),
                ]
            }
        };
        let faces: [(Vec3, [Vec3; 4]); 6] = [
            (
                Vec3::Z,
                [
                    Vec3::new(-hx, -hy, h),
                    Vec3::new(hx, -hy, h),
                    Vec3::new(hx, hy, h),
                    Vec3::new(-hx, hy, h),
                ],
            ),
            (
                -Vec3::Z,
                [
                    Vec3::new(-hx, -hy, 0.0),
                    Vec3::new(-hx, hy, 0.0),
                    Vec3::new(hx, hy, 0.0),
                    Vec3::new(hx, -hy, 0.0),
                ],
            ),
            (
                Vec3::new(0.0, -1.0, 0.0),
                [
                    Vec3::new(-hx, -hy, 0.0),
                    Vec3::new(hx, -hy, 0.0),
                    Vec3::new(hx, -hy, h),
                    Vec3::new(-hx, -hy, h),
                ],
            ),
            (
                Vec3::new(0.0, 1.0, 0.0),
                [
                    Vec3::new(hx, hy, 0.0),
                    Vec3::new(-hx, hy, 0.0),
                    Vec3::new(-hx, hy, h),
                    Vec3::new(hx, hy, h),
                ],
            ),
            (
                Vec3::new(1.0, 0.0, 0.0),
                [
                    Vec3::new(hx, -hy, 0.0),
                    Vec3::new(hx, hy, 0.0),
                    Vec3::new(hx, hy, h),
                    Vec3::new(hx, -hy, h),
                ],
            ),
            (
                Vec3::new(-1.0, 0.0, 0.0),
                [
                    Vec3::new(-hx, hy, 0.0),
                    Vec3::new(-hx, -hy, 0.0),
                    Vec3::new(-hx, -hy, h),
                    Vec3::new(-hx, hy, h),
                ],
            ),
        ];
        for (n, quad) in faces {
            let base = m.positions.len() as u32;
            for p in quad {
                m.positions.push(p);
                m.normals.push(n);
                m.uvs.push(uv_of(p, n));
            }
            m.triangles.push([base, base + 1, base + 2]);
            m.triangles.push([base, base + 2, base + 3]);
        }
        m
    }

    /// A flat rectangle in the plane z = 0 facing +z, uv `[0,1]²` (or `uv_repeat` times).
    pub fn quad(size_x: f32, size_y: f32, uv_repeat: [f32; 2]) -> Mesh {
        let (hx, hy) = (size_x * 0.5, size_y * 0.5);
        Mesh {
            positions: vec![
                Vec3::new(-hx, -hy, 0.0),
                Vec3::new(hx, -hy, 0.0),
                Vec3::new(hx, hy, 0.0),
                Vec3::new(-hx, hy, 0.0),
            ],
            normals: vec![Vec3::Z; 4],
            uvs: vec![
                [0.0, 0.0],
                [uv_repeat[0], 0.0],
                [uv_repeat[0], uv_repeat[1]],
                [0.0, uv_repeat[1]],
            ],
            triangles: vec![[0, 1, 2], [0, 2, 3]],
        }
    }

    /// A solid of revolution about z from a profile of (radius, height) points, bottom to top.
    /// Used by the built-in piece set.
    pub fn lathe(profile: &[(f32, f32)], segments: usize) -> Mesh {
        let mut m = Mesh::default();
        let rings = profile.len();
        for (i, &(r, z)) in profile.iter().enumerate() {
            let prev = profile[i.saturating_sub(1)];
            let next = profile[(i + 1).min(rings - 1)];
            // Profile tangent (dr, dz) → outward normal (dz, -dr) in the (radial, z) plane.
            let (dr, dz) = (next.0 - prev.0, next.1 - prev.1);
            let len = (dr * dr + dz * dz).sqrt().max(1e-9);
            let (nr, nz) = (dz / len, -dr / len);
            for s in 0..=segments {
                let a = s as f32 / segments as f32 * std::f32::consts::TAU;
                let (sa, ca) = a.sin_cos();
                m.positions.push(Vec3::new(r * ca, r * sa, z));
                m.normals.push(Vec3::new(nr * ca, nr * sa, nz).normalized());
                m.uvs.push([
                    s as f32 / segments as f32,
                    i as f32 / (rings - 1).max(1) as f32,
                ]);
            }
        }
        let w = (segments + 1) as u32;
        for i in 0..rings.saturating_sub(1) as u32 {
            for s in 0..segments as u32 {
                let a = i * w + s;
                let b = a + w;
                m.triangles.push([a, a + 1, b + 1]);
                m.triangles.push([a, b + 1, b]);
            }
        }
        m.orient_triangles();
        m
    }

    /// Appends `other` moved by `offset` (for composing simple shapes).
    pub fn append(&mut self, other: &Mesh, offset: Vec3) {
        let base = self.positions.len() as u32;
        self.positions
            .extend(other.positions.iter().map(|&p| p + offset));
        self.normals.extend_from_slice(&other.normals);
        self.uvs.extend_from_slice(&other.uvs);
        self.triangles
            .extend(other.triangles.iter().map(|t| t.map(|i| i + base)));
    }
}

/// Reads a dreamchess `.dcm` mesh: `DCM 0100`, vertex count n, n×3 positions, n×3 normals,
/// n×2 texture coordinates, primitive count, then primitives `STRIP|FAN|TRIANGLES k i1 … ik`.
/// Source units are board squares with z up.
pub fn parse_dcm(text: &str) -> Result<Mesh, SimError> {
    let bad = |what: &str| SimError::Mesh(format!("dcm: {what}"));
    let mut tok = text.split_whitespace();
    if tok.next() != Some("DCM") {
        return Err(bad("missing 'DCM' header"));
    }
    tok.next().ok_or_else(|| bad("missing version"))?;
    let mut num = |what: &str| -> Result<f32, SimError> {
        tok.next()
            .ok_or_else(|| bad(&format!("file ends inside {what}")))?
            .parse::<f32>()
            .map_err(|_| bad(&format!("bad number in {what}")))
    };
    let n = num("vertex count")?;
    if !(0.0..=10_000_000.0).contains(&n) || n.fract() != 0.0 {
        return Err(bad("bad vertex count"));
    }
    let n = n as usize;
    let mut m = Mesh::default();
    for _ in 0..n {
        m.positions.push(Vec3::new(
            num("positions")?,
            num("positions")?,
            num("positions")?,
        ));
    }
    for _ in 0..n {
        m.normals
            .push(Vec3::new(num("normals")?, num("normals")?, num("normals")?).normalized());
    }
    for _ in 0..n {
        m.uvs
            .push([num("texture coordinates")?, num("texture coordinates")?]);
    }
    let prims = num("primitive count")? as usize;
    let mut tok = text.split_whitespace().skip(3 + 8 * n + 1);
    for _ in 0..prims {
        let kind = tok
            .next()
            .ok_or_else(|| bad("file ends inside primitives"))?;
        let count: usize = tok
            .next()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad("bad primitive length"))?;
        let mut idx = Vec::with_capacity(count.min(1 << 20));
        for _ in 0..count {
            let i: u32 = tok
                .next()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| bad("bad vertex index"))?;
            if i as usize >= n {
                return Err(bad(&format!(
                    "vertex index {i} out of range ({n} vertices)"
                )));
            }
            idx.push(i);
        }
        match kind {
            "TRIANGLES" => m
                .triangles
                .extend(idx.chunks_exact(3).map(|c| [c[0], c[1], c[2]])),
            "STRIP" => m
                .triangles
                .extend(idx.windows(3).map(|w| [w[0], w[1], w[2]])),
            "FAN" => {
                if let Some((&c, rest)) = idx.split_first() {
                    m.triangles.extend(rest.windows(2).map(|w| [c, w[0], w[1]]));
                }
            }
            other => return Err(bad(&format!("unknown primitive '{other}'"))),
        }
    }
    m.orient_triangles();
    Ok(m)
}

/// Reads a Wavefront OBJ (`v`, `vt`, `vn`, `f` with polygons; negative indices allowed;
/// everything else ignored). Missing normals are computed; missing uvs are zero.
pub fn parse_obj(text: &str) -> Result<Mesh, SimError> {
    let mut pos = Vec::new();
    let mut tex = Vec::new();
    let mut nor = Vec::new();
    let mut m = Mesh::default();
    let mut has_normals = true;
    let mut cache = std::collections::BTreeMap::new();
    for (ln, line) in text.lines().enumerate() {
        let bad = |what: &str| SimError::Mesh(format!("obj line {}: {what}", ln + 1));
        let mut parts = line.split_whitespace();
        let Some(tag) = parts.next() else { continue };
        let floats = |parts: std::str::SplitWhitespace| -> Result<Vec<f32>, SimError> {
            parts
                .map(|s| {
                    s.parse::<f32>()
                        .map_err(|_| bad(&format!("bad number '{s}'")))
                })
                .collect()
        };
        match tag {
            "v" | "vn" => {
                let f = floats(parts)?;
                if f.len() < 3 {
                    return Err(bad("needs three coordinates"));
                }
                let v = Vec3::new(f[0], f[1], f[2]);
                if tag == "v" {
                    pos.push(v)
                } else {
                    nor.push(v.normalized())
                }
            }
            "vt" => {
                let f = floats(parts)?;
                if f.is_empty() {
                    return Err(bad("needs a coordinate"));
                }
                tex.push([f[0], f.get(1).copied().unwrap_or(0.0)]);
            }
            "f" => {
                let mut poly = Vec::new();
                for corner in parts {
                    let mut fields = corner.split('/');
                    let resolve =
                        |s: Option<&str>, len: usize| -> Result<Option<usize>, SimError> {
                            match s {
                                None | Some("") => Ok(None),
                                Some(s) => {
                                    let i: i64 =
                                        s.parse().map_err(|_| bad(&format!("bad index '{s}'")))?;
                                    let r = if i < 0 { len as i64 + i } else { i - 1 };
                                    if r < 0 || r as usize >= len {
                                        return Err(bad(&format!("index {i} out of range")));
                                    }
                                    Ok(Some(r as usize))
                                }
                            }
                        };
                    let vi = resolve(fields.next(), pos.len())?
                        .ok_or_else(|| bad("face corner without vertex"))?;
                    let ti = resolve(fields.next(), tex.len())?;
                    let ni = resolve(fields.next(), nor.len())?;
                    has_normals &= ni.is_some();
                    let key = (vi, ti, ni);
                    let id = *cache.entry(key).or_insert_with(|| {
                        m.positions.push(pos[vi]);
                        m.uvs.push(ti.map(|t| tex[t]).unwrap_or([0.0, 0.0]));
                        m.normals.push(ni.map(|n| nor[n]).unwrap_or(Vec3::Z));
                        (m.positions.len() - 1) as u32
                    });
                    poly.push(id);
                }
                if poly.len() < 3 {
                    return Err(bad("face with fewer than 3 corners"));
                }
                for i in 1..poly.len() - 1 {
                    m.triangles.push([poly[0], poly[i], poly[i + 1]]);
                }
            }
            _ => {}
        }
    }
    if m.triangles.is_empty() {
        return Err(SimError::Mesh("obj: no faces".into()));
    }
    if !has_normals {
        // Trust the file's winding (OBJ convention: counter-clockwise) for computed normals.
        m.compute_normals();
    }
    m.orient_triangles();
    Ok(m)
}

/// Which model axis points up in a user's OBJ set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UpAxis {
    Y,
    #[default]
    Z,
}

/// `set.toml` beside a user's OBJ pieces. All fields optional.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PieceSetConfig {
    /// Model axis pointing up.
    pub up: UpAxis,
    /// Height of the king in metres after scaling (tournament sets: 0.085–0.1); every piece
    /// gets the same factor.
    pub king_height: f32,
    /// Metres per model unit; when set it replaces the `king_height` normalisation.
    pub scale: Option<f32>,
    /// Extra turn of every mesh about its vertical axis, degrees (to make the knight face +y).
    pub turn_deg: f32,
    /// sRGB colour (0..1) of the white pieces; unset = drawn by the scene style.
    pub white: Option<[f32; 3]>,
    /// sRGB colour (0..1) of the black pieces; unset = drawn by the scene style.
    pub black: Option<[f32; 3]>,
}

impl Default for PieceSetConfig {
    fn default() -> Self {
        PieceSetConfig {
            up: UpAxis::Z,
            king_height: 0.095,
            scale: None,
            turn_deg: 0.0,
            white: None,
            black: None,
        }
    }
}

/// The six piece meshes of one set (normalised, metres) and optional wood textures.
#[derive(Clone, Debug)]
pub struct PieceSet {
    pub name: String,
    /// Indexed by `PieceKind::index()`.
    pub meshes: [Arc<Mesh>; 6],
    /// Detail textures (white, black); their luminance modulates the piece colour.
    pub textures: Option<[Arc<Texture>; 2]>,
    pub config: PieceSetConfig,
}

/// Where the Debian package `dreamchess-data` installs its classic set.
pub const DREAMCHESS_CLASSIC: &str = "/usr/share/games/dreamchess/pieces/classic";

impl PieceSet {
    /// Loads a set directory: a dreamchess set (`set.cfg` + `.dcm`) or an OBJ set
    /// (`pawn.obj` … `king.obj`, optional `set.toml`, optional `white.png`/`black.png`).
    pub fn load(dir: &Path) -> Result<PieceSet, SimError> {
        if dir.join("set.cfg").exists() || dir.join("pawn.dcm").exists() {
            Self::load_dreamchess(dir)
        } else {
            Self::load_obj_dir(dir)
        }
    }

    /// The installed dreamchess classic set if present, else the built-in turned set.
    pub fn default_set() -> Result<PieceSet, SimError> {
        let d = Path::new(DREAMCHESS_CLASSIC);
        if d.join("pawn.dcm").exists() {
            Self::load_dreamchess(d)
        } else {
            Ok(Self::builtin())
        }
    }

    fn read(path: &Path) -> Result<String, SimError> {
        std::fs::read_to_string(path).map_err(|e| SimError::Io(path.to_path_buf(), e))
    }

    /// Loads a dreamchess set; `set.cfg` lists (mesh, texture) pairs: pawn white, pawn black, …
    pub fn load_dreamchess(dir: &Path) -> Result<PieceSet, SimError> {
        let mut mesh_files: Vec<PathBuf> = PieceKind::ALL
            .iter()
            .map(|k| dir.join(format!("{}.dcm", k.name())))
            .collect();
        let mut tex_files = [dir.join("white.png"), dir.join("black.png")];
        let cfg = dir.join("set.cfg");
        if cfg.exists() {
            let text = Self::read(&cfg)?;
            let lines: Vec<&str> = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            if lines.len() < 24 {
                return Err(SimError::Mesh(format!(
                    "{}: expected 12 mesh/texture pairs",
                    cfg.display()
                )));
            }
            for (k, f) in mesh_files.iter_mut().enumerate() {
                *f = dir.join(lines[4 * k]);
            }
            tex_files = [dir.join(lines[1]), dir.join(lines[3])];
        }
        let mut meshes = Vec::new();
        for f in &mesh_files {
            let m = parse_dcm(&Self::read(f)?)
                .map_err(|e| SimError::Mesh(format!("{}: {e}", f.display())))?;
            meshes.push(m);
        }
        let textures = match (Texture::load(&tex_files[0]), Texture::load(&tex_files[1])) {
            (Ok(w), Ok(b)) => Some([Arc::new(w), Arc::new(b)]),
            _ => None,
        };
        let config = PieceSetConfig {
            turn_deg: 90.0,
            ..PieceSetConfig::default()
        };
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Self::finish(format!("dreamchess-{name}"), meshes, textures, config)
    }

    /// Loads `pawn.obj` … `king.obj` with an optional `set.toml` ([`PieceSetConfig`]).
    pub fn load_obj_dir(dir: &Path) -> Result<PieceSet, SimError> {
        let cfg_path = dir.join("set.toml");
        let config: PieceSetConfig = if cfg_path.exists() {
            toml::from_str(&Self::read(&cfg_path)?)
                .map_err(|e| SimError::Config(format!("{}: {e}", cfg_path.display())))?
        } else {
            PieceSetConfig::default()
        };
        let mut meshes = Vec::new();
        for k in PieceKind::ALL {
            let f = dir.join(format!("{}.obj", k.name()));
            let mut m = parse_obj(&Self::read(&f)?)
                .map_err(|e| SimError::Mesh(format!("{}: {e}", f.display())))?;
            if config.up == UpAxis::Y {
                m.transform_linear(&Mat3::rot_x(std::f32::consts::FRAC_PI_2));
            }
            meshes.push(m);
        }
        let textures = match (
            Texture::load(&dir.join("white.png")),
            Texture::load(&dir.join("black.png")),
        ) {
            (Ok(w), Ok(b)) => Some([Arc::new(w), Arc::new(b)]),
            _ => None,
        };
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Self::finish(format!("obj-{name}"), meshes, textures, config)
    }

    /// A set from six meshes built in code (`PieceKind` order), normalised like a loaded one.
    pub(super) fn from_meshes(
        name: String,
        meshes: Vec<Mesh>,
        config: PieceSetConfig,
    ) -> Result<PieceSet, SimError> {
        Self::finish(name, meshes, None, config)
    }

    fn finish(
        name: String,
        mut meshes: Vec<Mesh>,
        textures: Option<[Arc<Texture>; 2]>,
        config: PieceSetConfig,
    ) -> Result<PieceSet, SimError> {
        let king_h = {
            let (lo, hi) = meshes[PieceKind::King.index()].bounds();
            hi.z - lo.z
        };
        if king_h.is_nan() || king_h <= 1e-9 {
            return Err(SimError::Mesh(format!(
                "{name}: the king has no height (flat or empty meshes are not supported)"
            )));
        }
        let s = config.scale.unwrap_or(config.king_height / king_h);
        if !s.is_finite() || s <= 0.0 || s * king_h > 1.0 {
            return Err(SimError::Config(format!(
                "{name}: scale/king_height must give a king between 0 and 1 m tall"
            )));
        }
        let turn = Mat3::rot_z(config.turn_deg.to_radians());
        for m in &mut meshes {
            m.transform_linear(&turn);
            m.normalise(s);
        }
        let meshes: [Arc<Mesh>; 6] =
            std::array::from_fn(|i| Arc::new(std::mem::take(&mut meshes[i])));
        Ok(PieceSet {
            name,
            meshes,
            textures,
            config,
        })
    }

    /// A turned (lathe) set built in code: needs no files, looks like a plain Staunton set.
    pub fn builtin() -> PieceSet {
        let base = |top: f32| {
            vec![
                (0.0, 0.0),
                (0.36, 0.0),
                (0.37, 0.05),
                (0.34, 0.11),
                (0.26, 0.16),
                (0.2, 0.22),
                (0.17, top),
            ]
        };
        let cap = |mut v: Vec<(f32, f32)>, tail: &[(f32, f32)]| {
            v.extend_from_slice(tail);
            v
        };
        let pawn = cap(
            base(0.45),
            &[
                (0.24, 0.5),
                (0.13, 0.56),
                (0.2, 0.64),
                (0.22, 0.74),
                (0.17, 0.84),
                (0.08, 0.9),
                (0.0, 0.92),
            ],
        );
        let rook = cap(
            base(0.7),
            &[
                (0.28, 0.74),
                (0.28, 0.98),
                (0.2, 0.98),
                (0.2, 0.92),
                (0.0, 0.92),
            ],
        );
        let bishop = cap(
            base(0.78),
            &[
                (0.27, 0.82),
                (0.13, 0.88),
                (0.2, 1.0),
                (0.2, 1.12),
                (0.12, 1.24),
                (0.05, 1.3),
                (0.07, 1.34),
                (0.0, 1.38),
            ],
        );
        let queen = cap(
            base(1.05),
            &[
                (0.3, 1.1),
                (0.15, 1.16),
                (0.22, 1.3),
                (0.3, 1.46),
                (0.18, 1.5),
                (0.1, 1.56),
                (0.0, 1.6),
            ],
        );
        let king = cap(
            base(1.15),
            &[
                (0.3, 1.2),
                (0.16, 1.26),
                (0.24, 1.52),
                (0.18, 1.6),
                (0.08, 1.64),
                (0.08, 1.84),
                (0.0, 1.86),
            ],
        );
        let mut knight = Mesh::lathe(&cap(base(0.5), &[(0.27, 0.54), (0.0, 0.56)]), 24);
        let mut head = Mesh::cuboid(Vec3::new(0.22, 0.5, 0.55));
        head.transform_linear(&Mat3::rot_x(-0.35));
        knight.append(&head, Vec3::new(0.0, 0.02, 0.5));
        let mut snout = Mesh::cuboid(Vec3::new(0.2, 0.22, 0.22));
        snout.transform_linear(&Mat3::rot_x(0.3));
        knight.append(&snout, Vec3::new(0.0, 0.25, 0.85));
        let meshes = vec![
            Mesh::lathe(&pawn, 24),
            knight,
            Mesh::lathe(&bishop, 24),
            Mesh::lathe(&rook, 24),
            Mesh::lathe(&queen, 24),
            Mesh::lathe(&king, 24),
        ];
        Self::finish("builtin".into(), meshes, None, PieceSetConfig::default())
            .expect("built-in profiles have a king of positive height")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuboid_is_closed_and_outward() {
        let m = Mesh::cuboid(Vec3::new(2.0, 1.0, 0.5));
        assert_eq!(m.triangles.len(), 12);
        // Each face normal points away from the centre.
        let c = Vec3::new(0.0, 0.0, 0.25);
        for t in &m.triangles {
            let [a, b, d] = t.map(|i| m.positions[i as usize]);
            let f = (b - a).cross(d - a);
            assert!(f.dot((a + b + d) * (1.0 / 3.0) - c) > 0.0);
        }
    }

    #[test]
    fn dcm_small_file_parses_and_bad_index_fails() {
        let nums = "0 0 0 1 0 0 0 1 0  0 0 1 0 0 1 0 0 1  0 0 1 0 0 1";
        let text = &format!(
            "DCM 0100\n3\n{}\n1\nSTRIP\n3\n0\n1\n2\n",
            nums.split_whitespace().collect::<Vec<_>>().join("\n")
        );
        let m = parse_dcm(text).unwrap();
        assert_eq!(m.triangles.len(), 1);
        assert!(parse_dcm(&text.replace("STRIP\n3\n0\n1\n2", "STRIP\n3\n0\n1\n7")).is_err());
        assert!(parse_dcm(&text.replace("STRIP", "QUADS")).is_err());
        assert!(parse_dcm("DCM 0100\n3\n0\n").is_err());
        assert!(parse_dcm("OBJ").is_err());
    }

    #[test]
    fn builtin_set_is_normalised() {
        let s = PieceSet::builtin();
        let (lo, hi) = s.meshes[PieceKind::King.index()].bounds();
        assert!(lo.z.abs() < 1e-6);
        assert!((hi.z - 0.095).abs() < 1e-4);
        let (plo, phi) = s.meshes[0].bounds();
        assert!(phi.z < hi.z && (plo.x + phi.x).abs() < 1e-4);
    }
}
