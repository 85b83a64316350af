//! The perspective camera with radial lens distortion, and its presets.
//!
//! Pixel convention (as OpenCV): the centre of the top-left pixel is (0, 0); x right, y down.
//! Projection of a world point: camera frame (x right, y down, z forward) → normalised
//! (x/z, y/z) → distortion `s = 1 + k1 r² + k2 r⁴` → pixel `c + f·s·(x, y)`. The renderer
//! applies exactly this model as a post-warp, so truth points projected here are exact.

use serde::{Deserialize, Serialize};

use super::SimError;
use super::math::Vec3;
use super::rng::SimRng;

/// A camera pose and lens; TOML via serde, every field has a default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CameraConfig {
    /// World point the camera is placed relative to and (without `elevation_deg`) aims at.
    pub target: [f32; 3],
    /// Horizontal distance from the target, metres.
    pub distance: f32,
    /// Height above the table top, metres.
    pub height: f32,
    /// Azimuth, degrees: 0 = behind the near long edge (board A on the left), positive turns
    /// the camera counter-clockwise around the table seen from above.
    pub yaw_deg: f32,
    /// Downward pitch of the optical axis, degrees; `None` aims at the target.
    pub elevation_deg: Option<f32>,
    /// Roll about the optical axis, degrees.
    pub roll_deg: f32,
    /// Focal length as a fraction of the image width (0.8 ≈ 64° horizontal field of view).
    pub focal: f32,
    /// Principal point as a fraction of (width − 1, height − 1); (0.5, 0.5) is the centre.
    pub principal: [f32; 2],
    /// Radial distortion coefficients (negative k1 = barrel).
    pub k1: f32,
    pub k2: f32,
}

impl Default for CameraConfig {
    fn default() -> Self {
        CameraConfig {
            target: [0.0, 0.0, 0.0],
            distance: 0.95,
            height: 0.95,
            yaw_deg: 0.0,
            elevation_deg: None,
            roll_deg: 0.0,
            focal: 0.78,
            principal: [0.5, 0.5],
            k1: -0.06,
            k2: 0.01,
        }
    }
}

/// Names accepted by [`CameraConfig::preset`].
pub const CAMERA_PRESETS: [&str; 4] = ["tripod", "overhead", "oblique", "low-side"];

impl CameraConfig {
    /// Named poses: `tripod` (behind the near edge, 45°), `overhead` (ceiling mount, nearly
    /// top-down), `oblique` (from a corner), `low-side` (a spectator's view, flat angle).
    pub fn preset(name: &str) -> Result<CameraConfig, SimError> {
        let d = CameraConfig::default();
        Ok(match name {
            "tripod" => d,
            "overhead" => CameraConfig {
                distance: 0.12,
                height: 1.45,
                focal: 0.72,
                k1: -0.08,
                k2: 0.015,
                ..d
            },
            "oblique" => CameraConfig {
                distance: 1.0,
                height: 0.85,
                yaw_deg: 28.0,
                roll_deg: 1.5,
                focal: 0.82,
                k1: -0.04,
                k2: 0.0,
                ..d
            },
            "low-side" => CameraConfig {
                distance: 1.25,
                height: 0.6,
                yaw_deg: -10.0,
                focal: 0.95,
                k1: -0.03,
                k2: 0.0,
                ..d
            },
            other => {
                return Err(SimError::Config(format!(
                    "unknown camera preset '{other}' (known: {})",
                    CAMERA_PRESETS.join(", ")
                )));
            }
        })
    }

    /// Parses a TOML camera file.
    pub fn from_toml(text: &str) -> Result<CameraConfig, SimError> {
        let c: CameraConfig =
            toml::from_str(text).map_err(|e| SimError::Config(format!("camera: {e}")))?;
        c.validate()?;
        Ok(c)
    }

    /// Rejects poses the renderer cannot honour.
    pub fn validate(&self) -> Result<(), SimError> {
        let finite = self
            .target
            .iter()
            .chain(self.principal.iter())
            .all(|v| v.is_finite())
            && [
                self.distance,
                self.height,
                self.yaw_deg,
                self.roll_deg,
                self.focal,
                self.k1,
                self.k2,
            ]
            .iter()
            .all(|v| v.is_finite());
        if !finite {
            return Err(SimError::Config("camera: non-finite value".into()));
        }
        if self.height <= 0.05 {
            return Err(SimError::Config(
                "camera: height must be above the table (> 0.05 m)".into(),
            ));
        }
        if !(0.1..=5.0).contains(&self.focal) {
            return Err(SimError::Config(
                "camera: focal must be in 0.1..=5 (fraction of image width)".into(),
            ));
        }
        if let Some(e) = self.elevation_deg
            && !(1.0..=90.0).contains(&e)
        {
            return Err(SimError::Config(
                "camera: elevation_deg must be in 1..=90".into(),
            ));
        }
        if self.k1.abs() > 0.5 || self.k2.abs() > 0.5 {
            return Err(SimError::Config("camera: |k1|, |k2| must be ≤ 0.5".into()));
        }
        Ok(())
    }

    /// A copy with seeded pose jitter of the given amplitudes (degrees / metres).
    pub fn jittered(&self, rng: &mut SimRng, angle_deg: f32, metres: f32) -> CameraConfig {
        CameraConfig {
            target: [
                self.target[0] + rng.sym(metres),
                self.target[1] + rng.sym(metres),
                self.target[2],
            ],
            distance: (self.distance + rng.sym(metres * 2.0)).max(0.0),
            height: (self.height + rng.sym(metres * 2.0)).max(0.1),
            yaw_deg: self.yaw_deg + rng.sym(angle_deg),
            roll_deg: self.roll_deg + rng.sym(angle_deg * 0.3),
            focal: self.focal * (1.0 + rng.sym(0.04)),
            ..self.clone()
        }
    }
}

/// A camera placed for one image size: world → pixel projection including distortion.
#[derive(Clone, Debug)]
pub struct Camera {
    pub config: CameraConfig,
    pub position: Vec3,
    /// Camera axes in world coordinates: right, down, forward (orthonormal, right-handed).
    pub right: Vec3,
    pub down: Vec3,
    pub forward: Vec3,
    /// Focal length and principal point in pixels.
    pub f: f32,
    pub cx: f32,
    pub cy: f32,
    pub width: u32,
    pub height: u32,
}

impl Camera {
    pub fn new(config: &CameraConfig, width: u32, height: u32) -> Result<Camera, SimError> {
        config.validate()?;
        if width < 8 || height < 8 || width > 16384 || height > 16384 {
            return Err(SimError::Config(format!(
                "image size {width}×{height} out of range 8..=16384"
            )));
        }
        let t = Vec3::new(config.target[0], config.target[1], config.target[2]);
        let yaw = config.yaw_deg.to_radians();
        let horizontal = Vec3::new(-yaw.sin(), yaw.cos(), 0.0);
        let position = t - horizontal * config.distance + Vec3::new(0.0, 0.0, config.height);
        let forward = match config.elevation_deg {
            Some(e) => {
                let e = e.to_radians();
                horizontal * e.cos() - Vec3::Z * e.sin()
            }
            None => (t - position).normalized(),
        };
        // Straight down: keep "right" from the yaw so the image is not degenerate.
        let mut right = forward.cross(Vec3::Z);
        if right.length() < 1e-4 {
            right = Vec3::new(yaw.cos(), yaw.sin(), 0.0);
        }
        let right = right.normalized();
        let down = forward.cross(right).normalized();
        let (sr, cr) = config.roll_deg.to_radians().sin_cos();
        let (right, down) = (right * cr + down * sr, down * cr - right * sr);
        Ok(Camera {
            config: config.clone(),
            position,
            right,
            down,
            forward,
            f: config.focal * width as f32,
            cx: config.principal[0] * (width - 1) as f32,
            cy: config.principal[1] * (height - 1) as f32,
            width,
            height,
        })
    }

    /// World point → camera frame (x right, y down, z forward).
    pub fn to_camera(&self, p: Vec3) -> Vec3 {
        let d = p - self.position;
        Vec3::new(d.dot(self.right), d.dot(self.down), d.dot(self.forward))
    }

    /// Radial distortion factor for undistorted normalised coordinates.
    pub fn distortion(&self, x: f32, y: f32) -> f32 {
        let r2 = x * x + y * y;
        1.0 + self.config.k1 * r2 + self.config.k2 * r2 * r2
    }

    /// Undistorted normalised → distorted normalised, by fixed-point iteration of
    /// `u = d / s(u)` (converges for the validated coefficient range and image field).
    pub fn undistort(&self, xd: f32, yd: f32) -> (f32, f32) {
        let (mut x, mut y) = (xd, yd);
        for _ in 0..12 {
            let s = self.distortion(x, y);
            if s <= 0.05 {
                break;
            }
            let (nx, ny) = (xd / s, yd / s);
            let done = (nx - x).abs() + (ny - y).abs() < 1e-7;
            (x, y) = (nx, ny);
            if done {
                break;
            }
        }
        (x, y)
    }

    /// World point → pixel in the final (distorted) image; `None` behind the camera.
    pub fn project(&self, p: Vec3) -> Option<[f32; 2]> {
        let c = self.to_camera(p);
        if c.z <= 1e-4 {
            return None;
        }
        let (x, y) = (c.x / c.z, c.y / c.z);
        let s = self.distortion(x, y);
        Some([self.cx + self.f * s * x, self.cy + self.f * s * y])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_camera_sees_target_at_principal_point() {
        let cam = Camera::new(&CameraConfig::default(), 1280, 720).unwrap();
        let p = cam.project(Vec3::ZERO).unwrap();
        assert!(
            (p[0] - 639.5).abs() < 1e-2 && (p[1] - 359.5).abs() < 1e-2,
            "{p:?}"
        );
        // Board A (negative x) appears on the left, the far side (positive y) higher up.
        assert!(cam.project(Vec3::new(-0.3, 0.0, 0.0)).unwrap()[0] < p[0]);
        assert!(cam.project(Vec3::new(0.0, 0.3, 0.0)).unwrap()[1] < p[1]);
    }

    #[test]
    fn explicit_elevation_and_principal_point() {
        let base = CameraConfig {
            k1: 0.0,
            k2: 0.0,
            ..CameraConfig::default()
        };
        let aim = (base.height / base.distance).atan().to_degrees();
        let a = Camera::new(&base, 640, 480).unwrap();
        let b = Camera::new(
            &CameraConfig {
                elevation_deg: Some(aim),
                ..base.clone()
            },
            640,
            480,
        )
        .unwrap();
        let p = Vec3::new(0.1, 0.2, 0.05);
        let (pa, pb) = (a.project(p).unwrap(), b.project(p).unwrap());
        assert!(
            (pa[0] - pb[0]).abs() < 1e-2 && (pa[1] - pb[1]).abs() < 1e-2,
            "{pa:?} {pb:?}"
        );
        // Looking 10° lower moves the target up in the image.
        let c = Camera::new(
            &CameraConfig {
                elevation_deg: Some(aim + 10.0),
                ..base.clone()
            },
            640,
            480,
        )
        .unwrap();
        assert!(c.project(Vec3::ZERO).unwrap()[1] < a.project(Vec3::ZERO).unwrap()[1] - 50.0);
        // Shifting the principal point shifts every projection by the same pixels.
        let d = Camera::new(
            &CameraConfig {
                principal: [0.6, 0.45],
                ..base
            },
            640,
            480,
        )
        .unwrap();
        let (q, r) = (a.project(p).unwrap(), d.project(p).unwrap());
        assert!(
            (r[0] - q[0] - 0.1 * 639.0).abs() < 1e-2 && (r[1] - q[1] + 0.05 * 479.0).abs() < 1e-2
        );
    }

    #[test]
    fn undistort_inverts_distortion() {
        let cam = Camera::new(
            &CameraConfig {
                k1: -0.12,
                k2: 0.03,
                ..CameraConfig::default()
            },
            640,
            480,
        )
        .unwrap();
        for &(x, y) in &[(0.1f32, 0.2f32), (-0.6, 0.35), (0.7, -0.4)] {
            let s = cam.distortion(x, y);
            let (ux, uy) = cam.undistort(x * s, y * s);
            assert!(
                (ux - x).abs() < 1e-4 && (uy - y).abs() < 1e-4,
                "{x},{y} → {ux},{uy}"
            );
        }
    }

    #[test]
    fn presets_and_toml() {
        for n in CAMERA_PRESETS {
            let c = CameraConfig::preset(n).unwrap();
            Camera::new(&c, 320, 240).unwrap();
        }
        assert!(CameraConfig::preset("nope").is_err());
        let c = CameraConfig::from_toml("height = 1.2\nyaw_deg = 10\n").unwrap();
        assert_eq!(c.height, 1.2);
        assert!(CameraConfig::from_toml("hieght = 1").is_err());
        assert!(CameraConfig::from_toml("height = -1").is_err());
    }
}
