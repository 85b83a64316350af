//! The table scene: layout (where boards, squares, pockets and clocks are), the seeded style
//! (colours, textures, light, piece shapes) and the list of placed objects the renderer draws.
//!
//! Designed for a later animation layer: every piece is its own [`SceneObject`] carrying its
//! logical [`PieceSpot`], and [`TableLayout`] answers where any square or pocket slot is, so a
//! hand can be added as another object and pieces can be moved by changing their transform.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::fen::{Piece, PieceKind, Side, TablePlacement};
use super::math::{Mat3, Transform, Vec3};
use super::mesh::{Mesh, PieceSet};
use super::rng::SimRng;
use super::texture::{self, BoardLook, Texture, Wood, srgb};

/// Physical dimensions of a table; metres. Defaults follow tournament equipment
/// (55 mm squares, ~95 mm king, two boards side by side on a 2 m table).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TableLayout {
    pub square: f32,
    /// Width of the board frame around the playing area.
    pub border: f32,
    pub board_thickness: f32,
    /// Gap between the two boards.
    pub board_gap: f32,
    pub table_size: [f32; 2],
    /// Clock body (along x, along y, height).
    pub clock_size: [f32; 3],
    /// Pocket zone size (along x, along y) and its distance from the board edge.
    pub pocket_size: [f32; 2],
    pub pocket_margin: f32,
}

impl Default for TableLayout {
    fn default() -> Self {
        TableLayout {
            square: 0.055,
            border: 0.025,
            board_thickness: 0.014,
            board_gap: 0.12,
            table_size: [2.0, 0.9],
            clock_size: [0.075, 0.17, 0.06],
            pocket_size: [0.13, 0.2],
            pocket_margin: 0.018,
        }
    }
}

/// Board index: 0 = board A, 1 = board B.
pub type BoardId = usize;

impl TableLayout {
    pub fn board_half(&self) -> f32 {
        4.0 * self.square + self.border
    }

    /// Centre of a board's top surface.
    pub fn board_centre(&self, board: BoardId) -> Vec3 {
        let x = self.board_half() + self.board_gap * 0.5;
        Vec3::new(if board == 0 { -x } else { x }, 0.0, self.board_thickness)
    }

    /// World direction of increasing file and of increasing rank on a board. Board A has
    /// White at the near edge (y < 0); board B is turned 180° so Black sits at the near edge,
    /// next to White of board A.
    pub fn board_axes(&self, board: BoardId) -> (Vec3, Vec3) {
        if board == 0 {
            (Vec3::new(1.0, 0.0, 0.0), Vec3::new(0.0, 1.0, 0.0))
        } else {
            (Vec3::new(-1.0, 0.0, 0.0), Vec3::new(0.0, -1.0, 0.0))
        }
    }

    /// Point on the board top at fractional (file, rank) coordinates: (0, 0) is the outer
    /// corner of a1, (8, 8) the outer corner of h8.
    pub fn board_point(&self, board: BoardId, file: f32, rank: f32) -> Vec3 {
        let (fx, ry) = self.board_axes(board);
        self.board_centre(board)
            + fx * ((file - 4.0) * self.square)
            + ry * ((rank - 4.0) * self.square)
    }

    /// Centre of square `index` (`rank * 8 + file`) on the board top.
    pub fn square_centre(&self, board: BoardId, index: usize) -> Vec3 {
        self.board_point(board, (index % 8) as f32 + 0.5, (index / 8) as f32 + 0.5)
    }

    /// Outer corners of the playing area: a1, h1, h8, a8.
    pub fn playing_corners(&self, board: BoardId) -> [Vec3; 4] {
        [
            self.board_point(board, 0.0, 0.0),
            self.board_point(board, 8.0, 0.0),
            self.board_point(board, 8.0, 8.0),
            self.board_point(board, 0.0, 8.0),
        ]
    }

    /// Whether `side` of `board` sits at the near table edge (y < 0).
    pub fn sits_near(&self, board: BoardId, side: Side) -> bool {
        (board == 0) == (side == Side::White)
    }

    /// Which way x points away from a board's outer short edge (towards its clock).
    fn outward(&self, board: BoardId) -> f32 {
        if board == 0 { -1.0 } else { 1.0 }
    }

    /// The pocket zone of a player on the table top: beside the board's outer edge, in the
    /// player's half. Corners in order near-inner, near-outer, far-outer, far-inner as seen
    /// along the zone (a convex quadrilateral).
    pub fn pocket_zone(&self, board: BoardId, side: Side) -> [Vec3; 4] {
        let o = self.outward(board);
        let edge = self.board_centre(board).x + o * self.board_half();
        let x0 = edge + o * self.pocket_margin;
        let x1 = x0 + o * self.pocket_size[0];
        let s = if self.sits_near(board, side) {
            -1.0
        } else {
            1.0
        };
        let y0 = s * (self.clock_size[1] * 0.5 + 0.01);
        let y1 = y0 + s * self.pocket_size[1];
        [
            Vec3::new(x0, y1, 0.0),
            Vec3::new(x1, y1, 0.0),
            Vec3::new(x1, y0, 0.0),
            Vec3::new(x0, y0, 0.0),
        ]
    }

    /// Where the `slot`-th of `count` pocket pieces stands (table top).
    pub fn pocket_slot(&self, board: BoardId, side: Side, slot: usize, count: usize) -> Vec3 {
        let z = self.pocket_zone(board, side);
        let cols = if count <= 6 {
            2
        } else if count <= 15 {
            3
        } else {
            4
        };
        // Three columns of five hold 15 pieces ~4 cm apart; more crowd together, as in play.
        let rows = count.div_ceil(cols).max(4);
        let (c, r) = (slot % cols, slot / cols);
        let fu = (c as f32 + 0.5) / cols as f32;
        let fv = (r as f32 + 0.5) / rows as f32;
        // u from inner to outer edge, v from the player's end towards the clock.
        let a = z[0].lerp(z[1], fu);
        let b = z[3].lerp(z[2], fu);
        a.lerp(b, fv)
    }

    /// Centre of the bottom of a board's clock, at the outer short side.
    pub fn clock_position(&self, board: BoardId) -> Vec3 {
        let o = self.outward(board);
        let edge = self.board_centre(board).x + o * self.board_half();
        Vec3::new(
            edge + o * (self.pocket_margin + self.clock_size[0] * 0.5),
            0.0,
            0.0,
        )
    }
}

/// How much the look varies between seeds; TOML via serde. `Variation::none()` gives the
/// canonical look for a seed-independent scene (post noise still follows the seed).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Variation {
    /// Draw board, table, piece colours and textures from the seed.
    pub colours: bool,
    /// Camera pose jitter amplitudes (degrees, metres).
    pub camera_jitter_deg: f32,
    pub camera_jitter_m: f32,
    /// Randomise the light direction and colour.
    pub light: bool,
    /// Relative amplitude of piece shape variation (per-axis scale, taper).
    pub piece_shape: f32,
    /// Maximum off-centre offset of a piece on its square (metres) and turn (degrees).
    pub piece_offset_m: f32,
    pub piece_turn_deg: f32,
    /// Sensor noise standard deviation at mid grey (fraction of full scale).
    pub noise: f32,
    /// Defocus blur sigma in pixels (a seeded fraction of it up to the full value is used).
    pub blur_px: f32,
    /// Exposure drift amplitude in stops.
    pub exposure_stops: f32,
    /// Surround the table with neighbouring tables (a tournament hall), for realistic clutter.
    pub hall: bool,
}

impl Default for Variation {
    fn default() -> Self {
        Variation {
            colours: true,
            camera_jitter_deg: 2.0,
            camera_jitter_m: 0.02,
            light: true,
            piece_shape: 0.05,
            piece_offset_m: 0.005,
            piece_turn_deg: 25.0,
            noise: 0.012,
            blur_px: 0.8,
            exposure_stops: 0.3,
            hall: true,
        }
    }
}

impl Variation {
    /// No look variation; pieces centred and unturned.
    pub fn none() -> Variation {
        Variation {
            colours: false,
            camera_jitter_deg: 0.0,
            camera_jitter_m: 0.0,
            light: false,
            piece_shape: 0.0,
            piece_offset_m: 0.0,
            piece_turn_deg: 0.0,
            noise: 0.0,
            blur_px: 0.0,
            exposure_stops: 0.0,
            hall: false,
        }
    }
}

/// The directional light (a hall's ceiling lights collapsed into one) plus hemispheric ambient.
#[derive(Clone, Debug, PartialEq)]
pub struct Light {
    /// Unit vector towards the light.
    pub direction: Vec3,
    /// Linear radiance of the direct light and the sky/ground ambient.
    pub colour: Vec3,
    pub sky: Vec3,
    pub ground: Vec3,
}

/// Surface appearance. Albedo = `tint` × texture, where a `detail` texture only contributes
/// its relative brightness (texel / mean) blended in by `detail`.
#[derive(Clone, Debug)]
pub struct Material {
    pub texture: Option<Arc<Texture>>,
    pub tint: Vec3,
    /// 0 = use the texture as albedo; > 0 = texture is a detail map of that strength.
    pub detail: f32,
    pub specular: f32,
    pub shininess: f32,
    /// Metres covered by one unit of texture coordinate (for mip selection).
    pub uv_metres: f32,
}

/// Where a piece logically is; the truth is derived from these, not from pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PieceSpot {
    Square {
        board: BoardId,
        index: usize,
    },
    Pocket {
        board: BoardId,
        side: Side,
        slot: usize,
    },
    /// Lifted or carried (for the animation layer): neither on a square nor in a pocket.
    InHand,
}

/// What a scene object is, for the truth and for later animation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectKind {
    Floor,
    Table,
    Board(BoardId),
    Clock(BoardId),
    Piece {
        piece: Piece,
        spot: PieceSpot,
    },
    /// Anything else (e.g. a hand); occludes like a piece.
    Prop,
    /// Neighbouring tables of the hall: scenery, not part of the truth.
    Background,
}

/// One drawn object: a shared mesh placed by a transform, with a material index.
#[derive(Clone, Debug)]
pub struct SceneObject {
    pub kind: ObjectKind,
    pub mesh: Arc<Mesh>,
    pub transform: Transform,
    pub material: usize,
    pub casts_shadow: bool,
}

impl SceneObject {
    /// Whether this object can hide a square from the camera (pieces, clocks, props).
    pub fn occludes(&self) -> bool {
        matches!(
            self.kind,
            ObjectKind::Piece { .. } | ObjectKind::Clock(_) | ObjectKind::Prop
        )
    }
}

/// A complete static scene: everything the renderer needs and the truth is computed from.
#[derive(Clone, Debug)]
pub struct Scene {
    pub layout: TableLayout,
    pub placement: TablePlacement,
    pub objects: Vec<SceneObject>,
    pub materials: Vec<Material>,
    pub light: Light,
}

/// Seeded appearance choices, resolved once per scene.
#[derive(Clone, Debug)]
pub struct SceneStyle {
    pub board: BoardLook,
    pub table: Arc<Texture>,
    pub table_is_cloth: bool,
    pub white: Vec3,
    pub black: Vec3,
    pub light: Light,
    /// Per piece kind: axis scales and taper.
    pub shapes: [(Vec3, f32); 6],
}

fn wood(light: [f32; 3], dark_factor: f32, rings: f32, seed: u32) -> Wood {
    let l = srgb(light);
    Wood {
        light: l,
        dark: l * dark_factor,
        ring_frequency: rings,
        turbulence: 0.35,
        seed,
    }
}

impl SceneStyle {
    /// Draws a style from `rng` within `variation`.
    pub fn sample(variation: &Variation, rng: &mut SimRng) -> SceneStyle {
        let mut r = rng.fork(0x5757);
        let seed = r.next_u64() as u32;
        let pick = |r: &mut SimRng, options: &[[f32; 3]]| {
            options[if variation.colours {
                r.below(options.len())
            } else {
                0
            }]
        };
        let light_sq = pick(
            &mut r,
            &[
                [0.86, 0.72, 0.50],
                [0.90, 0.80, 0.62],
                [0.82, 0.66, 0.44],
                [0.92, 0.85, 0.66],
            ],
        );
        let dark_sq = pick(
            &mut r,
            &[
                [0.42, 0.24, 0.12],
                [0.36, 0.20, 0.10],
                [0.50, 0.32, 0.16],
                [0.28, 0.36, 0.22],
            ],
        );
        let border = pick(
            &mut r,
            &[
                [0.25, 0.14, 0.07],
                [0.20, 0.11, 0.06],
                [0.30, 0.18, 0.09],
                [0.16, 0.12, 0.09],
            ],
        );
        // Brightness ± 6 % and a slight warm/cool shift; independent per-channel jitter would
        // turn maple pink and walnut purple.
        let jit = |c: [f32; 3], r: &mut SimRng| {
            if variation.colours {
                let k = 1.0 + r.sym(0.06);
                let warm = r.sym(0.025);
                [
                    (c[0] * k * (1.0 + warm)).clamp(0.0, 1.0),
                    (c[1] * k).clamp(0.0, 1.0),
                    (c[2] * k * (1.0 - warm)).clamp(0.0, 1.0),
                ]
            } else {
                c
            }
        };
        let (light_sq, dark_sq, border) = (
            jit(light_sq, &mut r),
            jit(dark_sq, &mut r),
            jit(border, &mut r),
        );
        // Most tournament boards carry notation on the frame (drawn from its own stream).
        let rv_notation = rng.fork(0x7272).unit() < 0.6;
        let mut board = BoardLook {
            light: wood(light_sq, 0.74, 12.0, seed),
            dark: wood(dark_sq, 0.62, 12.0, seed ^ 0xA5),
            border: wood(border, 0.65, 10.0, seed ^ 0x3C),
            border_fraction: 0.0,
            inlay: None,
            flat: false,
            notation: variation.colours && rv_notation,
        };
        // Roll-up vinyl boards (buff and green/brown, light margin) are as common in clubs as
        // wooden ones; drawn from a separate stream so the wooden looks keep their seeds.
        let mut rv = rng.fork(0x7171);
        if variation.colours && rv.unit() < 0.3 {
            let dark = [[0.22, 0.42, 0.27], [0.42, 0.27, 0.17], [0.2, 0.2, 0.21]][rv.below(3)];
            let light = [[0.90, 0.88, 0.76], [0.94, 0.93, 0.88]][rv.below(2)];
            board = BoardLook {
                light: wood(light, 1.0, 1.0, seed),
                dark: wood(dark, 1.0, 1.0, seed ^ 0xA5),
                border: wood(light, 1.0, 1.0, seed ^ 0x3C),
                border_fraction: 0.0,
                inlay: None,
                flat: true,
                notation: rv.unit() < 0.8,
            };
        }
        let table_kind = if variation.colours { r.below(5) } else { 0 };
        let table_colour = pick(
            &mut r,
            &[
                [0.62, 0.44, 0.27],
                [0.72, 0.56, 0.38],
                [0.50, 0.33, 0.20],
                [0.78, 0.68, 0.52],
            ],
        );
        let table_colour = jit(table_colour, &mut r);
        let cloth = table_kind == 3;
        let table = match table_kind {
            3 => {
                let c = pick(
                    &mut r,
                    &[
                        [0.18, 0.30, 0.20],
                        [0.22, 0.22, 0.30],
                        [0.55, 0.55, 0.52],
                        [0.40, 0.12, 0.12],
                    ],
                );
                texture::cloth(srgb(c), seed ^ 0x77, 512, 512)
            }
            4 => {
                let c = pick(
                    &mut r,
                    &[[0.80, 0.80, 0.78], [0.70, 0.66, 0.60], [0.55, 0.56, 0.58]],
                );
                texture::laminate(srgb(c), seed ^ 0x78, 256, 128)
            }
            _ => texture::table_wood(
                wood(table_colour, 0.72, 6.0, seed ^ 0x99),
                3,
                2.2,
                1024,
                512,
            ),
        };
        let white = pick(
            &mut r,
            &[
                [0.90, 0.78, 0.58],
                [0.94, 0.88, 0.74],
                [0.86, 0.70, 0.48],
                [0.95, 0.94, 0.90],
            ],
        );
        let black = pick(
            &mut r,
            &[
                [0.12, 0.09, 0.07],
                [0.08, 0.07, 0.07],
                [0.22, 0.12, 0.07],
                [0.16, 0.14, 0.13],
            ],
        );
        let tint = |c: [f32; 3], r: &mut SimRng| {
            // One brightness factor and a small hue shift: white pieces must not turn pink.
            let k = if variation.colours {
                1.0 + r.sym(0.05)
            } else {
                1.0
            };
            let warm = if variation.colours { r.sym(0.02) } else { 0.0 };
            [
                (c[0] * k * (1.0 + warm)).min(1.0),
                (c[1] * k).min(1.0),
                (c[2] * k * (1.0 - warm)).min(1.0),
            ]
        };
        let (white, black) = (srgb(tint(white, &mut r)), srgb(tint(black, &mut r)));
        let (az, el) = if variation.light {
            (
                r.range(0.0, std::f32::consts::TAU),
                r.range(50f32.to_radians(), 78f32.to_radians()),
            )
        } else {
            (2.2, 62f32.to_radians())
        };
        let direction = Vec3::new(az.cos() * el.cos(), az.sin() * el.cos(), el.sin());
        let warmth = if variation.light { r.sym(0.08) } else { 0.0 };
        let colour = Vec3::new(1.0 + warmth, 1.0, 1.0 - warmth) * 0.9;
        let ambient = if variation.light {
            r.range(0.8, 1.15)
        } else {
            1.0
        };
        let light = Light {
            direction,
            colour,
            sky: Vec3::new(0.36, 0.37, 0.4) * ambient,
            ground: Vec3::new(0.16, 0.15, 0.14) * ambient,
        };
        let a = variation.piece_shape;
        let shapes = std::array::from_fn(|_| {
            let xy = 1.0 + r.sym(a);
            (
                Vec3::new(xy, xy * (1.0 + r.sym(a * 0.3)), 1.0 + r.sym(a)),
                r.sym(a * 1.5),
            )
        });
        SceneStyle {
            board,
            table: Arc::new(table),
            table_is_cloth: cloth,
            white,
            black,
            light,
            shapes,
        }
    }
}

impl Scene {
    /// Index of the piece object at a logical spot (for an animation layer that lifts or moves
    /// it: change its `transform` and its `kind`'s spot, the truth follows the objects).
    pub fn piece_at(&self, spot: PieceSpot) -> Option<usize> {
        self.objects
            .iter()
            .position(|o| matches!(o.kind, ObjectKind::Piece { spot: s, .. } if s == spot))
    }

    /// Builds the static scene for a table position.
    pub fn build(
        placement: &TablePlacement,
        set: &PieceSet,
        layout: &TableLayout,
        variation: &Variation,
        rng: &mut SimRng,
    ) -> Scene {
        let style = SceneStyle::sample(variation, rng);
        // A vinyl board lies flat on the table; the truth follows this layout.
        let mut layout = layout.clone();
        if style.board.flat {
            layout.board_thickness = 0.003;
        }
        let layout = &layout;
        let mut prng = rng.fork(0xB0A2D);
        let mut objects = Vec::new();
        let mut materials = Vec::new();
        let mut mat = |m: Material| {
            materials.push(m);
            materials.len() - 1
        };
        let plain = |c: Vec3, spec: f32, shin: f32| Material {
            texture: None,
            tint: c,
            detail: 0.0,
            specular: spec,
            shininess: shin,
            uv_metres: 1.0,
        };

        // Floor and table.
        let floor_tex = Arc::new(texture::cloth(srgb([0.2, 0.19, 0.2]), 91, 256, 256));
        let floor_mat = mat(Material {
            texture: Some(floor_tex),
            tint: Vec3::new(1.0, 1.0, 1.0),
            detail: 0.0,
            specular: 0.0,
            shininess: 1.0,
            uv_metres: 2.0,
        });
        objects.push(SceneObject {
            kind: ObjectKind::Floor,
            mesh: Arc::new(Mesh::quad(16.0, 16.0, [8.0, 8.0])),
            transform: Transform::at(Vec3::new(0.0, 0.0, -0.74)),
            material: floor_mat,
            casts_shadow: false,
        });
        let [tw, td] = layout.table_size;
        let table_mat = mat(Material {
            texture: Some(style.table.clone()),
            tint: Vec3::new(1.0, 1.0, 1.0),
            detail: 0.0,
            specular: if style.table_is_cloth { 0.0 } else { 0.12 },
            shininess: 30.0,
            uv_metres: tw,
        });
        objects.push(SceneObject {
            kind: ObjectKind::Table,
            mesh: Arc::new(Mesh::cuboid(Vec3::new(tw, td, 0.03))),
            transform: Transform::at(Vec3::new(0.0, 0.0, -0.03)),
            material: table_mat,
            casts_shadow: true,
        });
        let leg_mat = mat(plain(srgb([0.12, 0.12, 0.13]), 0.2, 20.0));
        let leg = Arc::new(Mesh::cuboid(Vec3::new(0.045, 0.045, 0.71)));
        for (sx, sy) in [(-1.0f32, -1.0f32), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)] {
            objects.push(SceneObject {
                kind: ObjectKind::Table,
                mesh: leg.clone(),
                transform: Transform::at(Vec3::new(
                    sx * (tw * 0.5 - 0.06),
                    sy * (td * 0.5 - 0.06),
                    -0.74,
                )),
                material: leg_mat,
                casts_shadow: true,
            });
        }

        // Boards: the border fraction follows the layout.
        let mut look = style.board;
        let side = 2.0 * layout.board_half();
        look.border_fraction = layout.border / side;
        let board_tex = Arc::new(texture::board_top(&look, 1024));
        let board_mat = mat(Material {
            texture: Some(board_tex),
            tint: Vec3::new(1.0, 1.0, 1.0),
            detail: 0.0,
            specular: if style.board.flat { 0.05 } else { 0.12 },
            shininess: 30.0,
            uv_metres: side,
        });
        let board_mesh = Arc::new(Mesh::cuboid(Vec3::new(side, side, layout.board_thickness)));
        for b in 0..2 {
            let mut c = layout.board_centre(b);
            c.z = 0.0;
            let rotation = if b == 0 {
                Mat3::IDENTITY
            } else {
                Mat3::rot_z(std::f32::consts::PI)
            };
            objects.push(SceneObject {
                kind: ObjectKind::Board(b),
                mesh: board_mesh.clone(),
                transform: Transform {
                    rotation,
                    scale: Vec3::new(1.0, 1.0, 1.0),
                    translation: c,
                },
                material: board_mat,
                casts_shadow: true,
            });
        }

        // Clocks: a body, a display plate on each long face, two buttons.
        let clock_body = mat(plain(srgb([0.09, 0.09, 0.1]), 0.3, 40.0));
        let face_mat = mat(Material {
            texture: Some(Arc::new(texture::clock_face(
                srgb([0.09, 0.09, 0.1]),
                prng.next_u64() as u32,
            ))),
            tint: Vec3::new(1.0, 1.0, 1.0),
            detail: 0.0,
            specular: 0.5,
            shininess: 80.0,
            uv_metres: 0.2,
        });
        let button_mat = mat(plain(srgb([0.2, 0.2, 0.21]), 0.4, 30.0));
        let [cw, cl, ch] = layout.clock_size;
        let body = Arc::new(Mesh::cuboid(Vec3::new(cw, cl, ch)));
        let plate = Arc::new(Mesh::quad(cl * 0.96, ch * 0.8, [1.0, 1.0]));
        let button = Arc::new(Mesh::cuboid(Vec3::new(cw * 0.35, cl * 0.14, 0.008)));
        for b in 0..2 {
            let p = layout.clock_position(b);
            objects.push(SceneObject {
                kind: ObjectKind::Clock(b),
                mesh: body.clone(),
                transform: Transform::at(p),
                material: clock_body,
                casts_shadow: true,
            });
            for s in [-1.0f32, 1.0] {
                let rotation = Mat3::rot_z(s * std::f32::consts::FRAC_PI_2)
                    .mul(&Mat3::rot_x(std::f32::consts::FRAC_PI_2));
                // rot_x(90°) turns the +z normal to −y; rot_z(±90°) turns −y to ±x.
                objects.push(SceneObject {
                    kind: ObjectKind::Clock(b),
                    mesh: plate.clone(),
                    transform: Transform {
                        rotation,
                        scale: Vec3::new(1.0, 1.0, 1.0),
                        translation: p + Vec3::new(s * (cw * 0.5 + 0.0005), 0.0, ch * 0.5),
                    },
                    material: face_mat,
                    casts_shadow: false,
                });
                objects.push(SceneObject {
                    kind: ObjectKind::Clock(b),
                    mesh: button.clone(),
                    transform: Transform::at(p + Vec3::new(0.0, s * cl * 0.28, ch)),
                    material: button_mat,
                    casts_shadow: true,
                });
            }
        }

        // Pieces.
        let piece_mat = |tint: Vec3, tex: Option<Arc<Texture>>| Material {
            texture: tex,
            tint,
            detail: 0.35,
            specular: 0.35,
            shininess: 45.0,
            uv_metres: 0.05,
        };
        let (wt, bt) = match &set.textures {
            Some([w, b]) => (Some(w.clone()), Some(b.clone())),
            None => (None, None),
        };
        // Colours a set's config names win over the style's.
        let wc = set.config.white.map(srgb).unwrap_or(style.white);
        let bc = set.config.black.map(srgb).unwrap_or(style.black);
        let white_mat = mat(piece_mat(wc, wt));
        let black_mat = mat(piece_mat(bc, bt));
        let meshes: Vec<Arc<Mesh>> = PieceKind::ALL
            .iter()
            .map(|k| {
                let (s, taper) = style.shapes[k.index()];
                Arc::new(set.meshes[k.index()].varied(s, taper))
            })
            .collect();
        let place = |piece: Piece,
                     at: Vec3,
                     facing: Vec3,
                     spot: PieceSpot,
                     r: &mut SimRng,
                     objects: &mut Vec<SceneObject>| {
            // Meshes face +y; turn them to `facing` and add the seeded jitter.
            let base = facing.y.atan2(facing.x) - std::f32::consts::FRAC_PI_2;
            let turn = base + r.sym(variation.piece_turn_deg.to_radians());
            let off = Vec3::new(
                r.sym(variation.piece_offset_m),
                r.sym(variation.piece_offset_m),
                0.0,
            );
            objects.push(SceneObject {
                kind: ObjectKind::Piece { piece, spot },
                mesh: meshes[piece.kind.index()].clone(),
                transform: Transform {
                    rotation: Mat3::rot_z(turn),
                    scale: Vec3::new(1.0, 1.0, 1.0),
                    translation: at + off,
                },
                material: if piece.side == Side::White {
                    white_mat
                } else {
                    black_mat
                },
                casts_shadow: true,
            });
        };
        for (b, board) in placement.boards.iter().enumerate() {
            let (_, rank_dir) = layout.board_axes(b);
            for (index, sq) in board.squares.iter().enumerate() {
                if let Some(p) = sq {
                    let facing = if p.side == Side::White {
                        rank_dir
                    } else {
                        -rank_dir
                    };
                    place(
                        *p,
                        layout.square_centre(b, index),
                        facing,
                        PieceSpot::Square { board: b, index },
                        &mut prng,
                        &mut objects,
                    );
                }
            }
            for side in [Side::White, Side::Black] {
                let mut pocket = board.pocket_of(side);
                pocket.sort_by_key(|p| std::cmp::Reverse(p.kind));
                let facing = if layout.sits_near(b, side) {
                    Vec3::new(0.0, 1.0, 0.0)
                } else {
                    Vec3::new(0.0, -1.0, 0.0)
                };
                let n = pocket.len();
                for (slot, p) in pocket.into_iter().enumerate() {
                    let at = layout.pocket_slot(b, side, slot, n);
                    place(
                        p,
                        at,
                        facing,
                        PieceSpot::Pocket {
                            board: b,
                            side,
                            slot,
                        },
                        &mut prng,
                        &mut objects,
                    );
                }
            }
        }
        if variation.hall {
            // Copies of this table (with a seeded subset of its pieces) left, right and behind.
            let main: Vec<SceneObject> = objects
                .iter()
                .filter(|o| !matches!(o.kind, ObjectKind::Floor))
                .cloned()
                .collect();
            let [tw, td] = layout.table_size;
            for (dx, dy) in [
                (-1.0f32, 0.0f32),
                (1.0, 0.0),
                (-1.0, 1.0),
                (0.0, 1.0),
                (1.0, 1.0),
            ] {
                let off = Vec3::new(dx * (tw + 0.7), dy * (td + 1.1), 0.0);
                for o in &main {
                    if matches!(o.kind, ObjectKind::Piece { .. }) && prng.unit() < 0.4 {
                        continue;
                    }
                    let mut c = o.clone();
                    c.kind = ObjectKind::Background;
                    c.casts_shadow = false;
                    c.transform.translation = c.transform.translation + off;
                    objects.push(c);
                }
            }
        }
        Scene {
            layout: layout.clone(),
            placement: placement.clone(),
            objects,
            materials,
            light: style.light,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::fen::parse_table_fen;

    #[test]
    fn partners_sit_side_by_side() {
        let l = TableLayout::default();
        // White of A and Black of B both at the near edge; a1 of A near-left, h8 of B near-left of B.
        assert!(l.sits_near(0, Side::White) && l.sits_near(1, Side::Black));
        let a1 = l.square_centre(0, 0);
        let h8_b = l.square_centre(1, 63);
        assert!(a1.y < 0.0 && h8_b.y < 0.0);
        assert!(a1.x < l.square_centre(0, 7).x);
        assert!(h8_b.x < l.square_centre(1, 56).x);
        assert!(l.board_centre(0).x < 0.0 && l.board_centre(1).x > 0.0);
    }

    #[test]
    fn pocket_zones_lie_beside_boards_and_hold_their_slots() {
        let l = TableLayout::default();
        for b in 0..2 {
            let bx = l.board_centre(b).x;
            for side in [Side::White, Side::Black] {
                let z = l.pocket_zone(b, side);
                let (lo, hi) = z
                    .iter()
                    .fold((z[0], z[0]), |(lo, hi), &p| (lo.min(p), hi.max(p)));
                assert!(
                    (lo.x - bx).abs().min((hi.x - bx).abs()) > l.board_half(),
                    "zone beside board"
                );
                for n in [1, 5, 12] {
                    for s in 0..n {
                        let p = l.pocket_slot(b, side, s, n);
                        assert!(p.x >= lo.x && p.x <= hi.x && p.y >= lo.y && p.y <= hi.y);
                    }
                }
            }
        }
    }

    #[test]
    fn scene_has_one_object_per_piece_and_finds_them() {
        let t = parse_table_fen("4k3/8/8/8/8/8/8/4K3[Qp] | 8/8/8/8/8/8/8/K6k[]").unwrap();
        let set = PieceSet::builtin();
        let s = Scene::build(
            &t,
            &set,
            &TableLayout::default(),
            &Variation::default(),
            &mut SimRng::new(1),
        );
        let pieces = s
            .objects
            .iter()
            .filter(|o| matches!(o.kind, ObjectKind::Piece { .. }))
            .count();
        assert_eq!(pieces, 6);
        let e1 = s
            .piece_at(PieceSpot::Square { board: 0, index: 4 })
            .unwrap();
        assert!(
            matches!(s.objects[e1].kind, ObjectKind::Piece { piece, .. } if piece.fen_char() == 'K')
        );
        assert!(
            (s.objects[e1].transform.translation - s.layout.square_centre(0, 4)).length() < 0.006
        );
        assert!(
            s.piece_at(PieceSpot::Square { board: 0, index: 5 })
                .is_none()
        );
        assert!(
            s.piece_at(PieceSpot::Pocket {
                board: 0,
                side: Side::Black,
                slot: 0
            })
            .is_some()
        );
    }
}
