//! Whole-game rendering: a BPGN game becomes a JPEG frame sequence with hands moving the pieces,
//! clock presses timed from the BPGN clock comments, and per-frame ground truth.
//!
//! [`plan_game`] builds the timeline (keyframe tracks of every piece and hand); [`GameRenderer`]
//! evaluates it at any instant and renders frames; [`render_game`] writes a whole directory
//! (`frames/`, `truth.jsonl`, `clock.jsonl`, `game.json`). See `docs/sim-game.md`.

mod plan;
mod track;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use plan::{
    ClockPress, GamePlan, Incident, IncidentKind, IncidentRequest, TimedMove, plan_game, time_moves,
};
pub use track::{HandKey, HandTrack, PieceKey, PiecePose, PieceTrack};

use super::camera::{Camera, CameraConfig};
use super::fen::parse_table_fen;
use super::math::{Mat3, Transform, Vec3};
use super::mesh::{Mesh, PieceSet};
use super::render::{self, PostEffects, RenderOptions};
use super::rng::SimRng;
use super::scene::{Material, ObjectKind, PieceSpot, Scene, SceneObject};
use super::texture::srgb;
use super::truth::{Pixel, Truth};
use super::{SimError, SimSettings, build_scene, encode_jpeg, post_effects};
use crate::engine::bpgn::BpgnGame;

const START_FEN: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1 | rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1";

/// How a game is rendered besides the scene settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GameOptions {
    pub fps: f64,
    /// JPEG quality of the written frames.
    pub jpeg_quality: u8,
    /// Render only the first this many seconds.
    pub max_seconds: Option<f64>,
    /// Worker threads (0 = all cores).
    pub threads: usize,
    /// Only plan: write `clock.jsonl` and `game.json`, no frames and no `truth.jsonl`.
    pub plan_only: bool,
}

impl Default for GameOptions {
    fn default() -> Self {
        GameOptions {
            fps: 10.0,
            jpeg_quality: 80,
            max_seconds: None,
            threads: 0,
            plan_only: false,
        }
    }
}

/// One line of `truth.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FrameTruth {
    pub frame: u64,
    pub ts_ms: u64,
    /// The table as it physically stands: `<A>[<pocket A>] | <B>[<pocket B>]`, placement only;
    /// pieces in a hand or lying outside the zones are in neither.
    pub table_fen: String,
    /// Per board: White's pocket, Black's pocket (FEN letters).
    pub pockets: [[String; 2]; 2],
    /// Per board: names of squares hidden from the camera.
    pub occluded: [Vec<String>; 2],
    /// Per board: how many pieces of White's and of Black's pocket the camera cannot see
    /// (absent in recordings made before it was written).
    #[serde(default)]
    pub pockets_hidden: Option<[[usize; 2]; 2]>,
    /// Per board: playing-area corners a1, h1, h8, a8 in pixels.
    pub corners: [[Pixel; 4]; 2],
    /// Per board: a hand is over that board's half of the table.
    pub hands: [bool; 2],
    /// FEN letters of pieces off squares and pockets (carried, hidden, lying aside).
    pub in_hand: String,
    /// Incidents whose span contains this frame.
    pub incidents: Vec<IncidentKind>,
}

/// `game.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GameInfo {
    pub source: String,
    pub game_index: usize,
    pub seed: u64,
    pub camera: CameraConfig,
    pub fps: f64,
    pub width: u32,
    pub height: u32,
    pub frames: u64,
    pub duration_ms: u64,
    pub moves: usize,
    pub pieces: String,
    pub incidents: Vec<Incident>,
}

/// A piece's mesh and material index.
type Look = (Arc<Mesh>, usize);

/// Rendered frames of one worker: (frame, truth line, JPEG bytes).
type WorkerLines = Result<Vec<(u64, String, u64)>, SimError>;

/// The static part of a game's scene and everything needed to add the moving parts per frame.
pub struct GameRenderer<'a> {
    pub plan: &'a GamePlan,
    /// Every object that never moves (floor, table, boards, clocks, hall).
    static_scene: Scene,
    /// World meshes of `static_scene`'s objects, transformed once.
    static_world: Vec<render::WorldMesh>,
    /// Shadow map of the static objects, drawn once.
    static_shadow: render::StaticShadow,
    camera: Camera,
    settings: SimSettings,
    post: PostEffects,
    /// (mesh, material) by side and kind.
    looks: [[Look; 6]; 2],
    skin: usize,
    sleeves: [[usize; 2]; 2],
    palm: Arc<Mesh>,
    capsule: Arc<Mesh>,
}

/// Piece heights (m) by kind index of the set as the scene varies it.
pub fn piece_heights(pieces: &PieceSet, settings: &SimSettings) -> Result<[f32; 6], SimError> {
    let (scene, _) = build_scene(&parse_table_fen(START_FEN)?, pieces, settings)?;
    let mut h = [0.06f32; 6];
    for o in &scene.objects {
        if let ObjectKind::Piece { piece, .. } = o.kind {
            h[piece.kind.index()] = o.mesh.bounds().1.z * o.transform.scale.z;
        }
    }
    Ok(h)
}

fn rotation_to(dir: Vec3) -> Mat3 {
    // Columns x', y', z' with z' = dir.
    let z = dir.normalized();
    let up = if z.z.abs() > 0.9 {
        Vec3::new(1.0, 0.0, 0.0)
    } else {
        Vec3::new(0.0, 0.0, 1.0)
    };
    let x = up.cross(z).normalized();
    let y = z.cross(x);
    Mat3 { rows: [x, y, z] }.transpose()
}

fn sphere() -> Mesh {
    let n = 10;
    let profile: Vec<(f32, f32)> = (0..=n)
        .map(|i| {
            let a = std::f32::consts::PI * i as f32 / n as f32;
            (a.sin(), -a.cos())
        })
        .collect();
    Mesh::lathe(&profile, 16)
}

fn capsule() -> Mesh {
    // Unit radius, z from 0 to 1, rounded ends (scaled along z, the ends flatten; fine for arms).
    let mut profile = vec![(0.0, 0.0)];
    for i in 1..=3 {
        let a = std::f32::consts::FRAC_PI_2 * i as f32 / 3.0;
        profile.push((a.sin(), 0.08 * (1.0 - a.cos())));
    }
    for i in 0..=3 {
        let a = std::f32::consts::FRAC_PI_2 * (3 - i) as f32 / 3.0;
        profile.push((a.sin().max(0.0), 1.0 - 0.08 * (1.0 - a.cos())));
    }
    Mesh::lathe(&profile, 12)
}

fn pocket_letters(mut v: Vec<char>) -> String {
    let order = |c: char| "KQRBNPkqrbnp".find(c).unwrap_or(12);
    v.sort_by_key(|&c| order(c));
    v.into_iter().collect()
}

/// Placement part of a FEN from 64 squares (index rank * 8 + file).
fn placement_fen(squares: &[Option<char>]) -> String {
    let mut out = String::new();
    for rank in (0..8).rev() {
        let mut empty = 0;
        for file in 0..8 {
            match squares[rank * 8 + file] {
                Some(c) => {
                    if empty > 0 {
                        out.push_str(&empty.to_string());
                        empty = 0;
                    }
                    out.push(c);
                }
                None => empty += 1,
            }
        }
        if empty > 0 {
            out.push_str(&empty.to_string());
        }
        if rank > 0 {
            out.push('/');
        }
    }
    out
}

impl<'a> GameRenderer<'a> {
    /// Prepares the static scene (textures baked once) and the camera for `plan`.
    pub fn new(
        plan: &'a GamePlan,
        pieces: &PieceSet,
        settings: &SimSettings,
    ) -> Result<GameRenderer<'a>, SimError> {
        let (mut scene, camera) = build_scene(&parse_table_fen(START_FEN)?, pieces, settings)?;
        let mut looks: [[Option<Look>; 6]; 2] = Default::default();
        for o in &scene.objects {
            if let ObjectKind::Piece { piece, .. } = o.kind {
                looks[piece.side as usize][piece.kind.index()] = Some((o.mesh.clone(), o.material));
            }
        }
        let looks = looks.map(|side| {
            side.map(|l| l.expect("the start position holds every kind of both colours"))
        });
        scene
            .objects
            .retain(|o| !matches!(o.kind, ObjectKind::Piece { .. }));
        let mut rng = SimRng::new(settings.seed).fork(0x4A4D);
        let plain = |c: [f32; 3], spec: f32| Material {
            texture: None,
            tint: srgb(c),
            detail: 0.0,
            specular: spec,
            shininess: 12.0,
            uv_metres: 1.0,
        };
        let tone = rng.range(0.35, 0.85);
        scene.materials.push(plain(
            [0.55 + 0.35 * tone, 0.38 + 0.3 * tone, 0.28 + 0.26 * tone],
            0.08,
        ));
        let skin = scene.materials.len() - 1;
        let mut sleeves = [[0; 2]; 2];
        for row in &mut sleeves {
            for s in row.iter_mut() {
                let c = [
                    rng.range(0.05, 0.7),
                    rng.range(0.05, 0.6),
                    rng.range(0.05, 0.7),
                ];
                scene.materials.push(plain(c, 0.02));
                *s = scene.materials.len() - 1;
            }
        }
        let post = post_effects(&settings.variation, settings.seed, settings.jpeg_artifacts);
        let static_world = render::world_meshes(&scene);
        let static_shadow = render::StaticShadow::build(
            &scene,
            &static_world,
            scene.objects.len(),
            settings.shadow_map.clamp(64, 8192),
        );
        Ok(GameRenderer {
            plan,
            static_scene: scene,
            static_world,
            static_shadow,
            camera,
            settings: settings.clone(),
            post,
            looks,
            skin,
            sleeves,
            palm: Arc::new(sphere()),
            capsule: Arc::new(capsule()),
        })
    }

    /// The camera every frame uses (pose jitter drawn once per game).
    pub fn camera(&self) -> &Camera {
        &self.camera
    }

    /// The scene at `t` seconds, with which boards a hand is over.
    pub fn scene_at(&self, t: f64) -> (Scene, [bool; 2]) {
        let mut scene = self.static_scene.clone();
        for tr in &self.plan.pieces {
            let p = tr.pose(t);
            let (mesh, material) = self.looks[p.piece.side as usize][p.piece.kind.index()].clone();
            scene.objects.push(SceneObject {
                kind: ObjectKind::Piece {
                    piece: p.piece,
                    spot: p.spot,
                },
                mesh,
                transform: Transform {
                    rotation: Mat3::rot_z(p.turn),
                    scale: Vec3::new(1.0, 1.0, 1.0),
                    translation: p.pos,
                },
                material,
                casts_shadow: true,
            });
        }
        let layout = &self.plan.layout;
        let mut present = [false; 2];
        for (b, hands) in self.plan.hands.iter().enumerate() {
            for (s, hand) in hands.iter().enumerate() {
                let Some(palm) = hand.palm(t) else { continue };
                for (ob, flag) in present.iter_mut().enumerate() {
                    let c = layout.board_centre(ob);
                    if (palm.x - c.x).abs() < layout.board_half() + 0.3
                        && palm.y.abs() < layout.table_size[1] * 0.5 + 0.02
                    {
                        *flag = true;
                    }
                }
                let to_shoulder = hand.shoulder - palm;
                let flat = Vec3::new(to_shoulder.x, to_shoulder.y, 0.0).normalized();
                let wrist = palm + flat * 0.06 + Vec3::new(0.0, 0.0, 0.01);
                let elbow = wrist + to_shoulder.normalized() * 0.27 + Vec3::new(0.0, 0.0, 0.03);
                let mut limb = |from: Vec3, to: Vec3, r: f32, mat: usize| {
                    let d = to - from;
                    scene.objects.push(SceneObject {
                        kind: ObjectKind::Prop,
                        mesh: self.capsule.clone(),
                        transform: Transform {
                            rotation: rotation_to(d),
                            scale: Vec3::new(r, r, d.length().max(0.01)),
                            translation: from,
                        },
                        material: mat,
                        casts_shadow: true,
                    });
                };
                limb(wrist, elbow, 0.026, self.skin);
                limb(elbow, hand.shoulder, 0.042, self.sleeves[b][s]);
                let yaw = flat.y.atan2(flat.x) + std::f32::consts::FRAC_PI_2;
                scene.objects.push(SceneObject {
                    kind: ObjectKind::Prop,
                    mesh: self.palm.clone(),
                    transform: Transform {
                        rotation: Mat3::rot_z(yaw),
                        scale: Vec3::new(0.042, 0.055, 0.017),
                        translation: palm + Vec3::new(0.0, 0.0, 0.008),
                    },
                    material: self.skin,
                    casts_shadow: true,
                });
            }
        }
        (scene, present)
    }

    /// Renders frame `index` at `fps`: the image and its truth line.
    pub fn frame(&self, index: u64, fps: f64) -> (image::RgbImage, FrameTruth) {
        let t = index as f64 / fps;
        let (scene, hands) = self.scene_at(t);
        let opts = RenderOptions {
            supersample: self.settings.supersample.clamp(1, 4),
            shadow_map: self.settings.shadow_map.clamp(64, 8192),
        };
        // Sensor noise differs per frame; exposure, blur and the look do not.
        let mut rng = SimRng::new(self.settings.seed).fork(4).fork(index);
        let mut world = self.static_world.clone();
        world.extend(
            scene.objects[self.static_world.len()..]
                .iter()
                .map(render::world_mesh),
        );
        let image = render::render_image_world(
            &scene,
            &world,
            &self.camera,
            &opts,
            &self.post,
            &mut rng,
            Some(&self.static_shadow),
        );
        let truth = Truth::compute(&scene, &self.camera, &world, self.settings.seed);
        let ts_ms = (t * 1000.0).round() as u64;
        (image, self.frame_truth(index, ts_ms, &scene, &truth, hands))
    }

    fn frame_truth(
        &self,
        frame: u64,
        ts_ms: u64,
        scene: &Scene,
        truth: &Truth,
        hands: [bool; 2],
    ) -> FrameTruth {
        let mut fens = Vec::new();
        for bt in &truth.boards {
            let pocket = pocket_letters(bt.pockets.iter().flat_map(|p| p.pieces.chars()).collect());
            fens.push(format!("{}[{pocket}]", placement_fen(&bt.squares)));
        }
        let in_hand = pocket_letters(
            scene
                .objects
                .iter()
                .filter_map(|o| match o.kind {
                    ObjectKind::Piece {
                        piece,
                        spot: PieceSpot::InHand,
                    } => Some(piece.fen_char()),
                    _ => None,
                })
                .collect(),
        );
        let incidents = self
            .plan
            .incidents
            .iter()
            .filter(|i| i.ts_ms[0] <= ts_ms && ts_ms <= i.ts_ms[1])
            .map(|i| i.kind)
            .collect();
        FrameTruth {
            frame,
            ts_ms,
            table_fen: fens.join(" | "),
            pockets: std::array::from_fn(|b| {
                std::array::from_fn(|s| {
                    pocket_letters(truth.boards[b].pockets[s].pieces.chars().collect())
                })
            }),
            occluded: std::array::from_fn(|b| truth.boards[b].occluded.clone()),
            pockets_hidden: Some(std::array::from_fn(|b| {
                std::array::from_fn(|s| truth.boards[b].pockets[s].hidden)
            })),
            corners: std::array::from_fn(|b| truth.boards[b].corners),
            hands,
            in_hand,
            incidents,
        }
    }
}

/// Number of frames covering `duration` seconds at `fps` (first frame at t = 0).
pub fn frame_count(duration: f64, fps: f64) -> u64 {
    (duration * fps).floor() as u64 + 1
}

/// What [`render_game`] wrote.
#[derive(Clone, Debug)]
pub struct GameSummary {
    pub info: GameInfo,
    pub bytes: u64,
    pub seconds: f64,
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), SimError> {
    std::fs::write(path, bytes).map_err(|e| SimError::Io(path.to_path_buf(), e))
}

fn json_line<T: Serialize>(v: &T) -> Result<String, SimError> {
    serde_json::to_string(v).map_err(|e| SimError::Config(e.to_string()))
}

/// Plans and renders game `game_index` of `source` into `out`: `frames/NNNNNN.jpg`,
/// `truth.jsonl`, `clock.jsonl`, `game.json`. Frames are rendered on `options.threads`
/// threads; the output does not depend on the thread count.
#[allow(clippy::too_many_arguments)]
pub fn render_game(
    game: &BpgnGame,
    source: &str,
    game_index: usize,
    requests: &[IncidentRequest],
    pieces: &PieceSet,
    settings: &SimSettings,
    options: &GameOptions,
    out: &Path,
) -> Result<GameSummary, SimError> {
    if !(options.fps > 0.0 && options.fps <= 120.0) {
        return Err(SimError::Config(format!(
            "fps {} out of (0, 120]",
            options.fps
        )));
    }
    let started = std::time::Instant::now();
    let heights = piece_heights(pieces, settings)?;
    let mut plan = plan_game(
        game,
        &settings.layout,
        heights,
        requests,
        settings.seed,
        options.max_seconds,
    )?;
    let fps = options.fps;
    for inc in &mut plan.incidents {
        inc.frames = [
            (inc.ts_ms[0] as f64 * fps / 1000.0).ceil() as u64,
            (inc.ts_ms[1] as f64 * fps / 1000.0).floor() as u64,
        ];
        if inc.frames[1] < inc.frames[0] {
            inc.frames[1] = inc.frames[0];
        }
    }
    let renderer = GameRenderer::new(&plan, pieces, settings)?;
    let frames_dir: PathBuf = out.join("frames");
    std::fs::create_dir_all(&frames_dir).map_err(|e| SimError::Io(frames_dir.clone(), e))?;
    let n = if options.plan_only {
        0
    } else {
        frame_count(plan.duration, fps)
    };
    let threads = if options.threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        options.threads
    }
    .clamp(1, 64)
    .min(n.max(1) as usize);
    let quality = options.jpeg_quality;
    let results: Vec<WorkerLines> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|k| {
                let renderer = &renderer;
                let frames_dir = &frames_dir;
                s.spawn(move || {
                    let mut lines = Vec::new();
                    let mut f = k as u64;
                    while f < n {
                        let (img, truth) = renderer.frame(f, fps);
                        let bytes = encode_jpeg(&img, quality)?;
                        write(&frames_dir.join(format!("{f:06}.jpg")), &bytes)?;
                        lines.push((f, json_line(&truth)?, bytes.len() as u64));
                        f += threads as u64;
                    }
                    Ok(lines)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("frame workers do not panic"))
            .collect()
    });
    let mut lines = Vec::with_capacity(n as usize);
    for r in results {
        lines.extend(r?);
    }
    lines.sort_by_key(|l| l.0);
    let mut bytes: u64 = lines.iter().map(|l| l.2).sum();
    let truth_text: String = lines.iter().map(|l| format!("{}\n", l.1)).collect();
    let mut clock_text = String::new();
    for p in &plan.presses {
        clock_text.push_str(&json_line(p)?);
        clock_text.push('\n');
    }
    let info = GameInfo {
        source: source.to_string(),
        game_index,
        seed: settings.seed,
        camera: renderer.camera().config.clone(),
        fps,
        width: settings.width,
        height: settings.height,
        frames: n,
        duration_ms: (plan.duration * 1000.0).round() as u64,
        moves: plan.moves.len(),
        pieces: pieces.name.clone(),
        incidents: plan.incidents.clone(),
    };
    let info_text =
        serde_json::to_string_pretty(&info).map_err(|e| SimError::Config(e.to_string()))?;
    if !options.plan_only {
        write(&out.join("truth.jsonl"), truth_text.as_bytes())?;
    }
    write(&out.join("clock.jsonl"), clock_text.as_bytes())?;
    write(&out.join("game.json"), info_text.as_bytes())?;
    bytes += (truth_text.len() + clock_text.len() + info_text.len()) as u64;
    Ok(GameSummary {
        info,
        bytes,
        seconds: started.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::scene::TableLayout;

    #[test]
    fn cached_static_parts_render_the_same_pixels_as_a_full_render() {
        let bytes = std::fs::read("fixtures/games/fics-1921708.bpgn").expect("fixture BPGN");
        let game = crate::engine::bpgn::parse_bpgn(&bytes)
            .expect("parses")
            .remove(0);
        let plan = plan_game(
            &game,
            &TableLayout::default(),
            [0.05, 0.06, 0.065, 0.07, 0.085, 0.095],
            &[],
            2,
            Some(3.0),
        )
        .expect("plan");
        let settings = SimSettings {
            width: 96,
            height: 54,
            shadow_map: 256,
            seed: 2,
            ..SimSettings::default()
        };
        let pieces = PieceSet::builtin();
        let r = GameRenderer::new(&plan, &pieces, &settings).expect("renderer");
        let (scene, hands) = r.scene_at(1.6);
        assert!(hands.iter().any(|&h| h), "a hand is in this scene");
        let (cached, truth) = r.frame(16, 10.0);
        let opts = RenderOptions {
            supersample: 1,
            shadow_map: 256,
        };
        let mut rng = SimRng::new(2).fork(4).fork(16);
        let full = render::render_image(&scene, r.camera(), &opts, &r.post, &mut rng);
        assert_eq!(cached.as_raw(), full.as_raw());
        assert_eq!(truth.hands, hands);
    }
}
