//! The table simulator's renderer: photographs of a bughouse table with exact ground truth.
//!
//! No camera footage of bughouse exists, so this is our camera. [`render_table`] turns a table
//! FEN into a [`Frame`]: an image from a CPU rasterizer (z-buffer, perspective-correct
//! textures, directional + ambient light with a shadow map, radial lens distortion, noise, blur,
//! exposure drift, JPEG) and a [`Truth`] computed from the scene and the same camera model.
//! Everything is a pure function of the inputs and the seed.

pub mod camera;
pub mod dataset;
pub mod fen;
pub mod game;
pub mod math;
pub mod mesh;
pub mod pieces;
mod raster;
pub mod render;
pub mod rng;
pub mod scene;
pub mod texture;
pub mod truth;

use std::path::{Path, PathBuf};

use image::RgbImage;
use serde::{Deserialize, Serialize};

pub use camera::{CAMERA_PRESETS, Camera, CameraConfig};
pub use fen::{Piece, PieceKind, Side, TablePlacement, parse_table_fen};
pub use mesh::{Mesh, PieceSet, PieceSetConfig};
pub use render::{PostEffects, RenderOptions};
pub use rng::SimRng;
pub use scene::{Scene, TableLayout, Variation};
pub use truth::Truth;

/// Errors of the simulator: bad input files or settings, never internal failures.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("table FEN: {0}")]
    Fen(String),
    #[error("mesh: {0}")]
    Mesh(String),
    #[error("config: {0}")]
    Config(String),
    #[error("image: {0}")]
    Image(String),
    #[error("{}", .0.display())]
    Io(PathBuf, #[source] std::io::Error),
}

/// Everything that decides a frame besides the position and the piece set; TOML via serde.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SimSettings {
    pub width: u32,
    pub height: u32,
    pub seed: u64,
    pub camera: CameraConfig,
    pub variation: Variation,
    pub layout: TableLayout,
    /// Anti-aliasing: samples per pixel side (1 or 2).
    pub supersample: u32,
    pub shadow_map: usize,
    /// Bake JPEG artefacts of this quality into the pixels (independent of the output file).
    pub jpeg_artifacts: Option<u8>,
}

impl Default for SimSettings {
    fn default() -> Self {
        SimSettings {
            width: 1280,
            height: 720,
            seed: 0,
            camera: CameraConfig::default(),
            variation: Variation::default(),
            layout: TableLayout::default(),
            supersample: 1,
            shadow_map: 2048,
            jpeg_artifacts: None,
        }
    }
}

/// A rendered frame and its truth.
#[derive(Clone, Debug)]
pub struct Frame {
    pub image: RgbImage,
    pub truth: Truth,
}

/// JPEG bytes of an image at `quality` (1..=100).
pub fn encode_jpeg(img: &RgbImage, quality: u8) -> Result<Vec<u8>, SimError> {
    let mut bytes = Vec::new();
    let enc = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut bytes, quality.clamp(1, 100));
    img.write_with_encoder(enc)
        .map_err(|e| SimError::Image(e.to_string()))?;
    Ok(bytes)
}

impl Frame {
    /// Writes the image: JPEG (quality 85) for `.jpg`/`.jpeg`, PNG otherwise.
    pub fn save(&self, path: &Path) -> Result<(), SimError> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("")
            .to_ascii_lowercase();
        let bytes = if ext == "jpg" || ext == "jpeg" {
            encode_jpeg(&self.image, 85)?
        } else {
            let mut b = Vec::new();
            self.image
                .write_to(&mut std::io::Cursor::new(&mut b), image::ImageFormat::Png)
                .map_err(|e| SimError::Image(e.to_string()))?;
            b
        };
        std::fs::write(path, bytes).map_err(|e| SimError::Io(path.to_path_buf(), e))
    }
}

/// Builds the scene of `placement` for `settings` (camera jitter, style, piece jitter drawn
/// from the seed) and returns it with the camera to use.
pub fn build_scene(
    placement: &TablePlacement,
    pieces: &PieceSet,
    settings: &SimSettings,
) -> Result<(Scene, Camera), SimError> {
    let root = SimRng::new(settings.seed);
    let v = &settings.variation;
    let cam_cfg =
        settings
            .camera
            .jittered(&mut root.fork(1), v.camera_jitter_deg, v.camera_jitter_m);
    let camera = Camera::new(&cam_cfg, settings.width, settings.height)?;
    let scene = Scene::build(placement, pieces, &settings.layout, v, &mut root.fork(2));
    Ok((scene, camera))
}

/// Post effects for a seed within `variation`.
pub fn post_effects(variation: &Variation, seed: u64, jpeg: Option<u8>) -> PostEffects {
    let mut r = SimRng::new(seed).fork(3);
    PostEffects {
        exposure: 2f32.powf(r.sym(variation.exposure_stops)),
        vignette: if variation.exposure_stops > 0.0 {
            r.range(0.1, 0.3)
        } else {
            0.0
        },
        blur_sigma: if variation.blur_px > 0.0 {
            r.range(0.3, 1.0) * variation.blur_px
        } else {
            0.0
        },
        noise: variation.noise * r.range(0.6, 1.4),
        jpeg_quality: jpeg,
    }
}

/// Renders a table FEN: the one call the CLI, tests and benches use.
pub fn render_table(
    fen: &str,
    pieces: &PieceSet,
    settings: &SimSettings,
) -> Result<Frame, SimError> {
    let placement = parse_table_fen(fen)?;
    let (scene, camera) = build_scene(&placement, pieces, settings)?;
    Ok(render_scene(&scene, &camera, settings))
}

/// Renders a prepared scene (e.g. one scene seen from several cameras, or a scene an animation
/// layer has changed); post effects and noise follow `settings.seed`.
pub fn render_scene(scene: &Scene, camera: &Camera, settings: &SimSettings) -> Frame {
    let post = post_effects(&settings.variation, settings.seed, settings.jpeg_artifacts);
    let opts = RenderOptions {
        supersample: settings.supersample.clamp(1, 4),
        shadow_map: settings.shadow_map.clamp(64, 8192),
    };
    let image = render::render_image(
        scene,
        camera,
        &opts,
        &post,
        &mut SimRng::new(settings.seed).fork(4),
    );
    let world = render::world_meshes(scene);
    let truth = Truth::compute(scene, camera, &world, settings.seed);
    Frame { image, truth }
}
