//! The frame pipeline: shadow map → visibility buffer → shading → lens distortion warp →
//! exposure, vignette, defocus blur, sensor noise → 8-bit sRGB (→ optional JPEG round trip).

use image::RgbImage;

use super::camera::Camera;
use super::math::Vec3;
use super::raster::{NO_OBJECT, ShadowMap, VisBuffer};
use super::rng::SimRng;
use super::scene::{Material, ObjectKind, Scene, SceneObject};
use super::texture::linear_to_srgb;

/// Render quality knobs (not part of the look).
#[derive(Clone, Debug, PartialEq)]
pub struct RenderOptions {
    /// Samples per pixel side before the warp (1 = fast, 2 = anti-aliased).
    pub supersample: u32,
    /// Shadow map side in texels.
    pub shadow_map: usize,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            supersample: 1,
            shadow_map: 2048,
        }
    }
}

/// Seeded photographic degradations, resolved per frame.
#[derive(Clone, Debug, PartialEq)]
pub struct PostEffects {
    /// Exposure multiplier (1 = nominal).
    pub exposure: f32,
    /// Corner darkening, 0..1.
    pub vignette: f32,
    /// Gaussian blur sigma in output pixels (0 = none).
    pub blur_sigma: f32,
    /// Noise standard deviation at mid grey, fraction of full scale.
    pub noise: f32,
    /// JPEG round trip at this quality, to bake compression artefacts into the pixels.
    pub jpeg_quality: Option<u8>,
}

impl PostEffects {
    /// Nothing applied: the clean rendering.
    pub fn clean() -> PostEffects {
        PostEffects {
            exposure: 1.0,
            vignette: 0.0,
            blur_sigma: 0.0,
            noise: 0.0,
            jpeg_quality: None,
        }
    }
}

/// An object's vertices in world space (positions and normals), transformed once per frame.
#[derive(Clone)]
pub struct WorldMesh {
    pub positions: Vec<Vec3>,
    pub normals: Vec<Vec3>,
    pub lo: Vec3,
    pub hi: Vec3,
}

/// Transforms every object of the scene into world space.
pub fn world_meshes(scene: &Scene) -> Vec<WorldMesh> {
    scene.objects.iter().map(world_mesh).collect()
}

/// One object in world space (an animation layer transforms only what moved).
pub fn world_mesh(o: &SceneObject) -> WorldMesh {
    let positions: Vec<Vec3> = o
        .mesh
        .positions
        .iter()
        .map(|&p| o.transform.point(p))
        .collect();
    let normals = o
        .mesh
        .normals
        .iter()
        .map(|&n| o.transform.normal(n))
        .collect();
    let (lo, hi) = positions.iter().fold(
        (
            Vec3::new(f32::MAX, f32::MAX, f32::MAX),
            Vec3::new(f32::MIN, f32::MIN, f32::MIN),
        ),
        |(lo, hi), &p| (lo.min(p), hi.max(p)),
    );
    WorldMesh {
        positions,
        normals,
        lo,
        hi,
    }
}

/// Where the undistorted canvas sits relative to the output image.
struct Canvas {
    width: usize,
    height: usize,
    /// Canvas pixel = `scale · (f·x_n + cx − min) + (scale − 1)/2` per axis.
    scale: f32,
    min_x: f32,
    min_y: f32,
}

impl Canvas {
    fn plan(cam: &Camera, ss: u32) -> Canvas {
        let (w, h) = (cam.width as usize, cam.height as usize);
        let (mut lo_x, mut hi_x, mut lo_y, mut hi_y) = (f32::MAX, f32::MIN, f32::MAX, f32::MIN);
        let mut visit = |u: f32, v: f32| {
            let (xn, yn) = cam.undistort((u - cam.cx) / cam.f, (v - cam.cy) / cam.f);
            let (x, y) = (cam.cx + cam.f * xn, cam.cy + cam.f * yn);
            lo_x = lo_x.min(x);
            hi_x = hi_x.max(x);
            lo_y = lo_y.min(y);
            hi_y = hi_y.max(y);
        };
        for i in 0..=32 {
            let t = i as f32 / 32.0;
            visit(t * (w - 1) as f32, 0.0);
            visit(t * (w - 1) as f32, (h - 1) as f32);
            visit(0.0, t * (h - 1) as f32);
            visit((w - 1) as f32, t * (h - 1) as f32);
        }
        // Strong pincushion could ask for a huge canvas; beyond 1.5× per side the warp clamps.
        let (wl, hl) = (w as f32 * 0.25, h as f32 * 0.25);
        let min_x = lo_x.max(-wl).floor() - 2.0;
        let min_y = lo_y.max(-hl).floor() - 2.0;
        let max_x = hi_x.min(w as f32 + wl).ceil() + 2.0;
        let max_y = hi_y.min(h as f32 + hl).ceil() + 2.0;
        let s = ss.max(1) as f32;
        Canvas {
            width: ((max_x - min_x) * s).ceil() as usize + 1,
            height: ((max_y - min_y) * s).ceil() as usize + 1,
            scale: s,
            min_x,
            min_y,
        }
    }

    /// Buffer mapping for the rasterizer: `px = k·x/z + ox`.
    fn screen(&self, cam: &Camera) -> (f32, f32, f32) {
        let half = (self.scale - 1.0) * 0.5;
        (
            self.scale * cam.f,
            self.scale * (cam.cx - self.min_x) + half,
            self.scale * (cam.cy - self.min_y) + half,
        )
    }
}

/// Renders the scene's linear radiance as an 8-bit sRGB image of the camera's size.
pub fn render_image(
    scene: &Scene,
    cam: &Camera,
    opts: &RenderOptions,
    post: &PostEffects,
    rng: &mut SimRng,
) -> RgbImage {
    let world = world_meshes(scene);
    render_image_world(scene, &world, cam, opts, post, rng, None)
}

/// The shadow map of a scene's first objects (those that never move), to be reused for every
/// frame of an animation; see [`render_image_world`].
#[derive(Clone, Debug)]
pub struct StaticShadow {
    map: ShadowMap,
    objects: usize,
}

impl StaticShadow {
    /// Rasterises the shadow casters among `scene.objects[..objects]` once.
    pub fn build(scene: &Scene, world: &[WorldMesh], objects: usize, size: usize) -> StaticShadow {
        let objects = objects.min(scene.objects.len());
        let mut map = empty_shadow_map(scene, size);
        draw_shadows(&mut map, &scene.objects[..objects], &world[..objects]);
        StaticShadow { map, objects }
    }
}

/// [`render_image`] with the scene's world meshes already computed (`world[i]` is object `i`),
/// so a caller rendering many frames transforms static objects once and reuses them for the
/// truth.
pub fn render_image_world(
    scene: &Scene,
    world: &[WorldMesh],
    cam: &Camera,
    opts: &RenderOptions,
    post: &PostEffects,
    rng: &mut SimRng,
    cached: Option<&StaticShadow>,
) -> RgbImage {
    let shadow = match cached {
        // Static casters are already in the map; only the rest is drawn per frame.
        Some(c) if c.map.size == opts.shadow_map.max(16) => {
            let mut map = c.map.clone();
            draw_shadows(&mut map, &scene.objects[c.objects..], &world[c.objects..]);
            map
        }
        _ => build_shadow_map(scene, world, opts.shadow_map),
    };
    let canvas = Canvas::plan(cam, opts.supersample);
    let screen = canvas.screen(cam);
    let mut vis = VisBuffer::new(canvas.width, canvas.height);
    for (oi, (obj, wm)) in scene.objects.iter().zip(world).enumerate() {
        let cam_pos: Vec<Vec3> = wm.positions.iter().map(|&p| cam.to_camera(p)).collect();
        let cull = !matches!(obj.kind, ObjectKind::Floor);
        for (ti, t) in obj.mesh.triangles.iter().enumerate() {
            let tri = t.map(|i| cam_pos[i as usize]);
            vis.draw(tri, screen, oi as u32, ti as u32, cull);
        }
    }
    let contact = ContactMap::build(scene, world);
    let radiance = shade(scene, world, &vis, &shadow, &contact, cam, canvas.scale);
    let mut out = warp(&radiance, &canvas, cam);
    finish(&mut out, cam.width as usize, cam.height as usize, post, rng)
}

fn empty_shadow_map(scene: &Scene, size: usize) -> ShadowMap {
    let [tw, td] = scene.layout.table_size;
    // The table and the floor around it: the table's own shadow grounds it in the room.
    let lo = Vec3::new(-tw * 0.5 - 0.4, -td * 0.5 - 0.4, -0.75);
    let hi = Vec3::new(tw * 0.5 + 0.4, td * 0.5 + 0.4, 0.25);
    ShadowMap::new(scene.light.direction, lo, hi, size.max(16))
}

fn draw_shadows(sm: &mut ShadowMap, objects: &[SceneObject], world: &[WorldMesh]) {
    for (obj, wm) in objects.iter().zip(world) {
        if !obj.casts_shadow {
            continue;
        }
        for t in &obj.mesh.triangles {
            sm.draw(t.map(|i| wm.positions[i as usize]));
        }
    }
}

fn build_shadow_map(scene: &Scene, world: &[WorldMesh], size: usize) -> ShadowMap {
    let mut sm = empty_shadow_map(scene, size);
    draw_shadows(&mut sm, &scene.objects, world);
    sm
}

fn luminance(c: Vec3) -> f32 {
    0.2126 * c.x + 0.7152 * c.y + 0.0722 * c.z
}

fn albedo(m: &Material, uv: [f32; 2], texels_per_metre_px: f32) -> Vec3 {
    let Some(tex) = &m.texture else { return m.tint };
    let (tw, _) = tex.size();
    let tpp = texels_per_metre_px * tw as f32 / m.uv_metres.max(1e-6);
    // A half-level sharpening bias, as GPUs commonly use: isotropic mips over-blur at slant.
    let lvl = if tpp <= 1.4 { 0.0 } else { tpp.log2() - 0.5 };
    let l0 = lvl.floor() as usize;
    let frac = lvl - l0 as f32;
    // Blend two mip levels only in the middle of the transition: one bilinear sample for most
    // pixels, without visible banding.
    let c = if frac < 0.2 {
        tex.sample(uv[0], uv[1], l0)
    } else if frac > 0.8 {
        tex.sample(uv[0], uv[1], l0 + 1)
    } else {
        let t = (frac - 0.2) / 0.6;
        tex.sample(uv[0], uv[1], l0)
            .lerp(tex.sample(uv[0], uv[1], l0 + 1), t)
    };
    if m.detail > 0.0 {
        let rel = luminance(c) / luminance(tex.mean()).max(1e-4);
        m.tint * (1.0 + (rel - 1.0) * m.detail)
    } else {
        c.mul_elem(m.tint)
    }
}

fn shade(
    scene: &Scene,
    world: &[WorldMesh],
    vis: &VisBuffer,
    shadow: &ShadowMap,
    contact: &ContactMap,
    cam: &Camera,
    scale: f32,
) -> Vec<Vec3> {
    let light = &scene.light;
    let l = light.direction.normalized();
    let background = Vec3::new(0.05, 0.05, 0.055);
    let metres_per_px_at_1m = 1.0 / (cam.f * scale);
    let pcf_radius = (0.0025 / shadow.texel).max(0.75);
    let mut out = vec![background; vis.width * vis.height];
    for (i, px) in out.iter_mut().enumerate() {
        let o = vis.object[i];
        if o == NO_OBJECT {
            continue;
        }
        let obj = &scene.objects[o as usize];
        let wm = &world[o as usize];
        let t = obj.mesh.triangles[vis.triangle[i] as usize];
        let [b1, b2] = vis.bary[i];
        let b0 = 1.0 - b1 - b2;
        let [i0, i1, i2] = t.map(|k| k as usize);
        let p = wm.positions[i0] * b0 + wm.positions[i1] * b1 + wm.positions[i2] * b2;
        let mut n = (wm.normals[i0] * b0 + wm.normals[i1] * b1 + wm.normals[i2] * b2).normalized();
        let to_cam = cam.position - p;
        let dist = to_cam.length();
        let v = to_cam * (1.0 / dist.max(1e-6));
        let ndv = n.dot(v);
        if ndv < 0.0 {
            // Interpolated normal turned away at a silhouette: bend it back into view.
            n = (n - v * (ndv * 1.05)).normalized();
        }
        let uvs = &obj.mesh.uvs;
        let uv = [
            uvs[i0][0] * b0 + uvs[i1][0] * b1 + uvs[i2][0] * b2,
            uvs[i0][1] * b0 + uvs[i1][1] * b1 + uvs[i2][1] * b2,
        ];
        let mat = &scene.materials[obj.material];
        let footprint = dist * metres_per_px_at_1m / n.dot(v).abs().max(0.3);
        let a = albedo(mat, uv, footprint);
        let ndl = n.dot(l);
        let lit = if ndl > 0.0 {
            shadow.light_fraction(p + n * (shadow.texel * 1.5), pcf_radius)
        } else {
            0.0
        };
        let ao = if n.z > 0.7 { contact.at(p) } else { 1.0 };
        let ambient = light.ground.lerp(light.sky, n.z * 0.5 + 0.5) * ao;
        let mut c = a.mul_elem(ambient + light.colour * (ndl.max(0.0) * lit * (0.6 + 0.4 * ao)));
        if mat.specular > 0.0 {
            let h = (l + v).normalized();
            let nh = n.dot(h);
            // x^s is below 1 % of the peak for x < 1 − 4.6/s: skip the power there.
            let spec = if ndl > 0.0 && nh > 1.0 - 4.6 / mat.shininess {
                nh.powf(mat.shininess) * mat.specular * lit
            } else {
                0.0
            };
            // Glossy surfaces also mirror the bright hall at grazing angles (Schlick Fresnel).
            let fres = (1.0 - n.dot(v).abs()).powi(5) * mat.specular * 0.5;
            c = c + light.colour * spec + light.sky * fres;
        }
        *px = c;
    }
    out
}

/// Contact shadows (ambient occlusion) on the table and board tops around each piece's base:
/// a top-down map, splatted per piece, because a shadow map from one light cannot give the
/// dark rim real pieces have where they stand.
struct ContactMap {
    x0: f32,
    y0: f32,
    cell: f32,
    w: usize,
    h: usize,
    /// Surface height each cell's occlusion belongs to.
    support: Vec<f32>,
    ao: Vec<f32>,
}

impl ContactMap {
    const CELL: f32 = 0.002;

    fn build(scene: &Scene, world: &[WorldMesh]) -> ContactMap {
        let [tw, td] = scene.layout.table_size;
        let (x0, y0) = (-tw * 0.5, -td * 0.5);
        let (w, h) = (
            (tw / Self::CELL) as usize + 1,
            (td / Self::CELL) as usize + 1,
        );
        let mut m = ContactMap {
            x0,
            y0,
            cell: Self::CELL,
            w,
            h,
            support: vec![0.0; w * h],
            ao: vec![1.0; w * h],
        };
        for (obj, wm) in scene.objects.iter().zip(world) {
            if !matches!(obj.kind, ObjectKind::Piece { .. }) {
                continue;
            }
            let c = obj.transform.translation;
            let r = ((wm.hi.x - wm.lo.x) + (wm.hi.y - wm.lo.y)) * 0.25 * 0.92;
            let reach = r * 3.5;
            let (cx, cy) = ((c.x - x0) / m.cell, (c.y - y0) / m.cell);
            let rc = reach / m.cell;
            let (ix0, ix1) = ((cx - rc).max(0.0) as usize, ((cx + rc) as usize).min(w - 1));
            let (iy0, iy1) = ((cy - rc).max(0.0) as usize, ((cy + rc) as usize).min(h - 1));
            for iy in iy0..=iy1 {
                for ix in ix0..=ix1 {
                    let (dx, dy) = (ix as f32 * m.cell + x0 - c.x, iy as f32 * m.cell + y0 - c.y);
                    let d = ((dx * dx + dy * dy).sqrt() - r).max(0.0) / r;
                    let occl = 0.5 * (-(d / 0.3) * (d / 0.3)).exp() + 0.2 * (-d / 1.1).exp();
                    let i = iy * w + ix;
                    m.ao[i] *= 1.0 - occl;
                    m.support[i] = c.z;
                }
            }
        }
        m
    }

    /// Occlusion factor at a point on a horizontal surface (1 = open).
    fn at(&self, p: Vec3) -> f32 {
        let (fx, fy) = ((p.x - self.x0) / self.cell, (p.y - self.y0) / self.cell);
        if fx < 0.0 || fy < 0.0 || fx >= (self.w - 1) as f32 || fy >= (self.h - 1) as f32 {
            return 1.0;
        }
        let i = fy as usize * self.w + fx as usize;
        if (p.z - self.support[i]).abs() > 0.003 {
            1.0
        } else {
            self.ao[i]
        }
    }
}

/// Output pixel → canvas position, through the inverse lens model. The map is smooth, so it is
/// evaluated exactly on a grid every `STEP` pixels and interpolated bilinearly in between
/// (error ≈ STEP²/8 · |∂²map|: < 0.04 output px even at k1 = −0.3; checked in a test).
struct LensMap {
    nodes_x: usize,
    nodes: Vec<(f32, f32)>,
}

impl LensMap {
    const STEP: usize = 8;

    fn exact(canvas: &Canvas, cam: &Camera, x: f32, y: f32) -> (f32, f32) {
        let half = (canvas.scale - 1.0) * 0.5;
        let (xn, yn) = cam.undistort((x - cam.cx) / cam.f, (y - cam.cy) / cam.f);
        (
            canvas.scale * (cam.cx + cam.f * xn - canvas.min_x) + half,
            canvas.scale * (cam.cy + cam.f * yn - canvas.min_y) + half,
        )
    }

    fn new(canvas: &Canvas, cam: &Camera) -> LensMap {
        let nodes_x = (cam.width as usize - 1) / Self::STEP + 2;
        let nodes_y = (cam.height as usize - 1) / Self::STEP + 2;
        let mut nodes = Vec::with_capacity(nodes_x * nodes_y);
        for gy in 0..nodes_y {
            for gx in 0..nodes_x {
                nodes.push(Self::exact(
                    canvas,
                    cam,
                    (gx * Self::STEP) as f32,
                    (gy * Self::STEP) as f32,
                ));
            }
        }
        LensMap { nodes_x, nodes }
    }

    fn at(&self, x: usize, y: usize) -> (f32, f32) {
        let (gx, gy) = (x / Self::STEP, y / Self::STEP);
        let (tx, ty) = (
            (x % Self::STEP) as f32 / Self::STEP as f32,
            (y % Self::STEP) as f32 / Self::STEP as f32,
        );
        let i = gy * self.nodes_x + gx;
        let (a, b, c, d) = (
            self.nodes[i],
            self.nodes[i + 1],
            self.nodes[i + self.nodes_x],
            self.nodes[i + self.nodes_x + 1],
        );
        let top = (a.0 + (b.0 - a.0) * tx, a.1 + (b.1 - a.1) * tx);
        let bottom = (c.0 + (d.0 - c.0) * tx, c.1 + (d.1 - c.1) * tx);
        (
            top.0 + (bottom.0 - top.0) * ty,
            top.1 + (bottom.1 - top.1) * ty,
        )
    }
}

/// Resamples the undistorted canvas into the distorted output image (bilinear).
fn warp(src: &[Vec3], canvas: &Canvas, cam: &Camera) -> Vec<Vec3> {
    let (w, h) = (cam.width as usize, cam.height as usize);
    let (cw, ch) = (canvas.width as f32 - 1.0, canvas.height as f32 - 1.0);
    let map = LensMap::new(canvas, cam);
    let mut out = Vec::with_capacity(w * h);
    for y in 0..h {
        for x in 0..w {
            let (sx, sy) = map.at(x, y);
            let (sx, sy) = (sx.clamp(0.0, cw), sy.clamp(0.0, ch));
            // sx, sy ≥ 0 after the clamp: truncation is floor.
            let (x0, y0) = (sx as usize, sy as usize);
            let (x1, y1) = (
                (x0 + 1).min(canvas.width - 1),
                (y0 + 1).min(canvas.height - 1),
            );
            let (fx, fy) = (sx - x0 as f32, sy - y0 as f32);
            let at = |xx: usize, yy: usize| src[yy * canvas.width + xx];
            let top = at(x0, y0).lerp(at(x1, y0), fx);
            let bottom = at(x0, y1).lerp(at(x1, y1), fx);
            out.push(top.lerp(bottom, fy));
        }
    }
    out
}

fn blur(img: &mut [Vec3], w: usize, h: usize, sigma: f32) {
    if sigma < 0.05 {
        return;
    }
    let r = (sigma * 2.5).ceil() as isize;
    let mut k: Vec<f32> = (-r..=r)
        .map(|i| (-(i * i) as f32 / (2.0 * sigma * sigma)).exp())
        .collect();
    let s: f32 = k.iter().sum();
    k.iter_mut().for_each(|v| *v /= s);
    let mut tmp = vec![Vec3::ZERO; w * h];
    for y in 0..h {
        let row = &img[y * w..(y + 1) * w];
        for x in 0..w {
            let mut acc = Vec3::ZERO;
            for (j, kv) in k.iter().enumerate() {
                let xx = (x as isize + j as isize - r).clamp(0, w as isize - 1) as usize;
                acc = acc + row[xx] * *kv;
            }
            tmp[y * w + x] = acc;
        }
    }
    for y in 0..h {
        for x in 0..w {
            let mut acc = Vec3::ZERO;
            for (j, kv) in k.iter().enumerate() {
                let yy = (y as isize + j as isize - r).clamp(0, h as isize - 1) as usize;
                acc = acc + tmp[yy * w + x] * *kv;
            }
            img[y * w + x] = acc;
        }
    }
}

/// Tone curve with a soft shoulder: maps linear radiance to display-linear 0..1.
fn tone(x: f32) -> f32 {
    1.0 - (-1.15 * x.max(0.0)).exp()
}

fn finish(img: &mut [Vec3], w: usize, h: usize, post: &PostEffects, rng: &mut SimRng) -> RgbImage {
    blur(img, w, h, post.blur_sigma);
    let mut out = RgbImage::new(w as u32, h as u32);
    let (cx, cy) = ((w as f32 - 1.0) * 0.5, (h as f32 - 1.0) * 0.5);
    let r2max = cx * cx + cy * cy;
    let lut: Vec<u8> = (0..4096)
        .map(|i| (linear_to_srgb(i as f32 / 4095.0) * 255.0 + 0.5) as u8)
        .collect();
    // Tone curve sampled over radiance 0..TONE_MAX; noise σ as a function of display level.
    const TONE_MAX: f32 = 8.0;
    let tone_lut: Vec<f32> = (0..=4096)
        .map(|i| tone(i as f32 / 4096.0 * TONE_MAX))
        .collect();
    let tone_of = |x: f32| tone_lut[((x * (4096.0 / TONE_MAX)) as usize).min(4096)];
    let sigma_lut: Vec<f32> = (0..=256)
        .map(|i| post.noise * (0.35 + (i as f32 / 256.0 / 0.2).sqrt() * 0.65))
        .collect();
    // Standard normal samples drawn once, indexed by random bits (4 per 64-bit draw).
    let normals: Vec<f32> = if post.noise > 0.0 {
        (0..65536).map(|_| rng.normal()).collect()
    } else {
        Vec::new()
    };
    for (i, px) in out.pixels_mut().enumerate() {
        let (x, y) = ((i % w) as f32, (i / w) as f32);
        let r2 = ((x - cx) * (x - cx) + (y - cy) * (y - cy)) / r2max;
        let gain = post.exposure * (1.0 - post.vignette * r2);
        let c = img[i] * gain;
        // Tone-map the luminance and keep the hue (a per-channel curve would turn warm
        // highlights green-yellow); then roll off channels that still exceed 1.
        let lum = luminance(c).max(1e-6);
        let c = c * (tone_of(lum) / lum);
        let mut rgb = [c.x, c.y, c.z].map(|v| {
            if v > 0.8 {
                0.8 + 0.2 * (1.0 - (-(v - 0.8) * 5.0).exp())
            } else {
                v.max(0.0)
            }
        });
        if post.noise > 0.0 {
            let bits = rng.next_u64();
            let shared = normals[(bits & 0xFFFF) as usize];
            for (k, ch) in rgb.iter_mut().enumerate() {
                let own = normals[((bits >> (16 * (k + 1))) & 0xFFFF) as usize];
                let sigma = sigma_lut[((*ch).clamp(0.0, 1.0) * 256.0) as usize];
                *ch += sigma * (0.7 * shared + 0.5 * own);
            }
        }
        px.0 = rgb.map(|v| lut[(v.clamp(0.0, 1.0) * 4095.0) as usize]);
    }
    if let Some(q) = post.jpeg_quality
        && let Ok(bytes) = super::encode_jpeg(&out, q)
        && let Ok(decoded) = image::load_from_memory_with_format(&bytes, image::ImageFormat::Jpeg)
    {
        out = decoded.to_rgb8();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blur_preserves_mean_and_smooths_a_step() {
        let (w, h) = (16, 4);
        let mut img: Vec<Vec3> = (0..w * h)
            .map(|i| {
                if i % w < 8 {
                    Vec3::ZERO
                } else {
                    Vec3::new(1.0, 1.0, 1.0)
                }
            })
            .collect();
        let before: f32 = img.iter().map(|c| c.x).sum();
        blur(&mut img, w, h, 1.0);
        let after: f32 = img.iter().map(|c| c.x).sum();
        assert!((before - after).abs() < 1e-3);
        assert!(img[7].x > 0.1 && img[8].x < 0.9);
    }

    #[test]
    fn interpolated_lens_map_matches_the_exact_inverse() {
        use crate::sim::camera::CameraConfig;
        for (k1, k2) in [(-0.06, 0.01), (-0.3, 0.08), (0.2, 0.0)] {
            let cam = Camera::new(
                &CameraConfig {
                    k1,
                    k2,
                    principal: [0.55, 0.45],
                    ..CameraConfig::default()
                },
                1280,
                720,
            )
            .unwrap();
            let canvas = Canvas::plan(&cam, 2);
            let map = LensMap::new(&canvas, &cam);
            let mut worst = 0.0f32;
            for y in (0..720).step_by(7) {
                for x in (0..1280).step_by(5) {
                    let (a, b) = (
                        map.at(x, y),
                        LensMap::exact(&canvas, &cam, x as f32, y as f32),
                    );
                    worst = worst.max((a.0 - b.0).abs().max((a.1 - b.1).abs()));
                }
            }
            // Canvas pixels at supersample 2 are half output pixels: < 0.04 output px.
            assert!(worst < 0.08, "k1 {k1}: {worst} canvas px");
        }
    }

    #[test]
    fn tone_curve_is_monotone_and_bounded() {
        let mut prev = -1.0;
        for i in 0..100 {
            let v = tone(i as f32 * 0.1);
            assert!(v > prev && v < 1.0);
            prev = v;
        }
    }
}
