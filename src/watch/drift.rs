//! Watching the calibration: noticing that the camera or a board moved, and finding the boards
//! again.
//!
//! A calibration holds only while neither the camera nor a board moves; after a bump every patch
//! is cut from the wrong place and the tracker would read nonsense. Every `check_every_ms` of
//! frame time the interior lattice corners are tested where the calibration put them
//! ([`Calibration::check`]). A board whose lattice fails is not read from then on. A hand over a
//! board hides its lattice too, so a failure counts only on a frame calm on that board, or when
//! the lattice shows displaced (which no hand can do). After `failed_checks` displaced failures,
//! or failures lasting `unconfirmed_ms`, the calibration is declared lost (`status`
//! `calibration_lost`, an alert). The watcher then looks for the boards in the frame every
//! `search_every_ms` (detected afresh, or where the displaced lattices showed) and takes a new
//! calibration only when the frame read through it shows the tracked positions (`recalibrated`);
//! boards put back where they were make the old calibration hold again (`calibration_restored`).

use serde::{Deserialize, Serialize};

use crate::vision::{Calibration, Drift, Point};

/// The `state`s of the `status` events the calibration watch raises (the daemon forwards these,
/// not the statuses of the tracker's referee, which its own referee raises again).
pub const STATUS_STATES: [&str; 3] = ["calibration_lost", RECALIBRATED, "calibration_restored"];

/// The status the watcher raises when it took a new calibration.
pub const RECALIBRATED: &str = "recalibrated";

/// `[drift]`: how the calibration is watched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DriftConfig {
    /// Frame time between two lattice checks; 0 = never check.
    pub check_every_ms: u64,
    /// Checks that find a board's lattice displaced (the camera or the board moved) before the
    /// calibration is declared lost (≥ 1), counted while the board keeps failing.
    pub failed_checks: u32,
    /// How long a board's lattice may stay unconfirmed without being found displaced (a hand
    /// over it, or a move too large to tell) before the calibration is declared lost anyway.
    pub unconfirmed_ms: u64,
    /// Look for the boards again once the calibration is lost.
    pub recalibrate: bool,
    /// Frame time between two searches for the boards while the calibration is lost (a search
    /// takes tens of milliseconds).
    pub search_every_ms: u64,
    /// Squares of each board (of 64) that must read as the tracked position for a new
    /// calibration to be taken. A hand over a board lowers a right candidate's count (33–57 on
    /// its worse board, two bumped 640×360 games); a wrong one (a1 elsewhere, the boards
    /// swapped) reached 44 there at most (`docs/watch.md`, "The agreement a candidate needs").
    pub min_agreement: usize,
}

impl Default for DriftConfig {
    fn default() -> DriftConfig {
        DriftConfig {
            check_every_ms: 200,
            failed_checks: 3,
            unconfirmed_ms: 10_000,
            recalibrate: true,
            search_every_ms: 1000,
            min_agreement: 47,
        }
    }
}

impl DriftConfig {
    /// Refuses settings that cannot work.
    pub fn validate(&self) -> Result<(), String> {
        if self.failed_checks == 0 {
            return Err("drift.failed_checks must be at least 1".into());
        }
        if self.min_agreement > 64 {
            return Err(format!(
                "drift.min_agreement counts squares of a board: at most 64, not {}",
                self.min_agreement
            ));
        }
        Ok(())
    }
}

/// What a frame's check found, for the watcher to act on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DriftReport {
    /// Boards not to be read on this frame: their lattice did not confirm at their last check.
    pub blocked: [bool; 2],
    /// The calibration has just been declared lost, with the check that made it so.
    pub lost: Option<Drift>,
    /// The old calibration holds again after it had been declared lost.
    pub restored: bool,
    /// The calibration is lost and a search for the boards is due on this frame.
    pub retry: bool,
    /// With `retry`: per board, the displacement (pixels) at which its lattice showed in this
    /// frame, if it did.
    pub shift: [Option<Point>; 2],
}

/// The state of the calibration watch.
///
/// Invariant: `lost` implies that since the calibration was last taken some board failed its
/// checks `failed_checks` times with its lattice displaced, or for `unconfirmed_ms`.
#[derive(Debug, Clone)]
pub struct CalibrationWatch {
    cfg: DriftConfig,
    calibration: Calibration,
    next_check: Option<u64>,
    /// Per board, since when its checks fail (a failure counts on a frame calm on the board, or
    /// when the lattice shows displaced).
    failing_since: [Option<u64>; 2],
    /// Per board, how many of those checks found the lattice displaced.
    displaced: [u32; 2],
    lost: bool,
    next_search: u64,
}

impl CalibrationWatch {
    pub fn new(calibration: Calibration, cfg: DriftConfig) -> CalibrationWatch {
        CalibrationWatch {
            cfg,
            calibration,
            next_check: None,
            failing_since: [None; 2],
            displaced: [0; 2],
            lost: false,
            next_search: 0,
        }
    }

    /// The calibration in force.
    pub fn calibration(&self) -> &Calibration {
        &self.calibration
    }

    pub fn config(&self) -> &DriftConfig {
        &self.cfg
    }

    /// Whether the calibration is declared lost.
    pub fn is_lost(&self) -> bool {
        self.lost
    }

    /// Checks `frame` (taken at `ts`) when a check is due. `calm` says which boards are free
    /// of hands and motion: elsewhere a lattice may be hidden, so only a displaced one counts.
    pub fn observe(
        &mut self,
        frame: &image::RgbImage,
        ts: u64,
        calm: [bool; 2],
    ) -> Result<DriftReport, crate::vision::CalibrationError> {
        let mut report = DriftReport::default();
        if self.cfg.check_every_ms == 0 {
            return Ok(report);
        }
        let due = self.next_check.is_none_or(|t| ts >= t);
        let mut checked = None;
        if due {
            self.next_check = Some(ts + self.cfg.check_every_ms);
            let drift = self.calibration.check(frame)?;
            log::debug!("calibration check at {ts} ms: {drift:?}");
            for (b, &calm) in calm.iter().enumerate() {
                if !drift.moved[b] {
                    self.failing_since[b] = None;
                    self.displaced[b] = 0;
                } else if calm || drift.shift[b].is_some() {
                    // A hand can hide a lattice but not show it displaced: on a board that is
                    // not calm only a displaced lattice counts.
                    self.failing_since[b].get_or_insert(ts);
                    self.displaced[b] += u32::from(drift.shift[b].is_some());
                }
            }
            checked = Some(drift);
        }
        if let Some(drift) = checked {
            let shift = drift.shift;
            let gone = (0..2).any(|b| {
                self.displaced[b] >= self.cfg.failed_checks
                    || self.failing_since[b]
                        .is_some_and(|t| ts.saturating_sub(t) >= self.cfg.unconfirmed_ms)
            });
            if !self.lost && gone {
                self.lost = true;
                report.lost = Some(drift);
            } else if self.lost && self.failing_since == [None; 2] {
                self.lost = false;
                report.restored = true;
            }
            report.retry = self.lost && ts >= self.next_search;
            if report.retry {
                self.next_search = ts + self.cfg.search_every_ms;
                report.shift = shift;
            }
        }
        report.blocked = self.failing_since.map(|f| f.is_some());
        Ok(report)
    }

    /// Takes `calibration` (found again in the frame just checked) as the one in force.
    pub fn replace(&mut self, calibration: Calibration) {
        self.calibration = calibration;
        self.failing_since = [None; 2];
        self.displaced = [0; 2];
        self.lost = false;
    }
}

/// `calibration` with each board moved by its `shift` (a board without one moved as the other
/// board): where the displaced lattices showed. None without any shift, or when the moved
/// corners do not make a calibration of `frame`.
pub fn displaced(
    calibration: &Calibration,
    shift: [Option<Point>; 2],
    frame: &image::RgbImage,
) -> Option<Calibration> {
    let d = [shift[0].or(shift[1])?, shift[1].or(shift[0])?];
    let corners = [0, 1].map(|b| {
        calibration.boards[b]
            .corners
            .map(|p| [p[0] + d[b][0], p[1] + d[b][1]])
    });
    let size = (frame.width(), frame.height());
    let config = crate::vision::CalibrationConfig::default();
    Calibration::manual(&calibration.table, size, corners, Some(frame), &config).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::RgbImage;

    fn fixture() -> (RgbImage, Calibration) {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/sim-game/frames/000000.jpg"
        );
        let frame = image::open(path).unwrap().to_rgb8();
        let cal = Calibration::detect(&frame, "t", &Default::default()).unwrap();
        (frame, cal)
    }

    /// The camera bumped: the picture 3 px right and 2 px down (a quarter of a square here).
    fn bumped(frame: &RgbImage) -> RgbImage {
        RgbImage::from_fn(frame.width(), frame.height(), |x, y| {
            *frame.get_pixel(x.saturating_sub(3), y.saturating_sub(2))
        })
    }

    /// A dark arm held over board A.
    fn covered(frame: &RgbImage, cal: &Calibration) -> RgbImage {
        let c = &cal.boards[0].corners;
        let lo = |k: usize| c.iter().map(|p| p[k]).fold(f64::MAX, f64::min) as u32;
        let hi = |k: usize| c.iter().map(|p| p[k]).fold(0.0, f64::max) as u32;
        let mut f = frame.clone();
        for y in lo(1)..hi(1).min(f.height()) {
            for x in lo(0)..hi(0).min(f.width()) {
                f.put_pixel(x, y, image::Rgb([40, 30, 25]));
            }
        }
        f
    }

    #[test]
    fn a_bumped_camera_blocks_the_boards_at_once_and_is_lost_at_the_third_check() {
        let (frame, cal) = fixture();
        let mut w = CalibrationWatch::new(cal, DriftConfig::default());
        let r = w.observe(&frame, 0, [true; 2]).unwrap();
        assert_eq!(r, DriftReport::default());
        let moved = bumped(&frame);
        let mut reports = Vec::new();
        for ts in [200, 300, 400, 500, 600] {
            reports.push(w.observe(&moved, ts, [true; 2]).unwrap());
        }
        // Checks at 200, 400 and 600 ms (every 200 ms); at 300 and 500 the boards stay blocked.
        assert!(
            reports.iter().all(|r| r.blocked == [true; 2]),
            "{reports:?}"
        );
        let lost: Vec<usize> = (0..5).filter(|&i| reports[i].lost.is_some()).collect();
        assert_eq!(lost, [4], "{reports:?}");
        assert!(reports[4].retry && w.is_lost());
        // The camera put back: the old calibration holds again.
        let r = w.observe(&frame, 800, [true; 2]).unwrap();
        assert!(
            r.restored && r.blocked == [false; 2] && !w.is_lost(),
            "{r:?}"
        );
    }

    #[test]
    fn a_hand_held_still_over_a_board_blocks_it_but_loses_the_calibration_only_when_it_stays() {
        let (frame, cal) = fixture();
        let cfg = DriftConfig::default();
        let mut w = CalibrationWatch::new(cal.clone(), cfg.clone());
        let arm = covered(&frame, &cal);
        // A moving arm (board A not calm) counts for nothing.
        let r = w.observe(&arm, 0, [false, true]).unwrap();
        assert_eq!(r.blocked, [false; 2], "{r:?}");
        // Held still, it hides the lattice: board A is not read, board B is.
        let first = 200;
        let mut ts = first;
        while ts < first + cfg.unconfirmed_ms {
            let r = w.observe(&arm, ts, [true; 2]).unwrap();
            assert_eq!(r.blocked, [true, false], "at {ts} ms: {r:?}");
            assert!(r.lost.is_none(), "at {ts} ms: {r:?}");
            ts += cfg.check_every_ms;
        }
        let r = w.observe(&arm, ts, [true; 2]).unwrap();
        assert!(r.lost.is_some(), "still hidden after {ts} ms: {r:?}");
    }

    #[test]
    fn a_lattice_seen_again_unblocks_the_board_whatever_the_motion() {
        let (frame, cal) = fixture();
        let mut w = CalibrationWatch::new(cal.clone(), DriftConfig::default());
        let r = w.observe(&covered(&frame, &cal), 0, [true; 2]).unwrap();
        assert_eq!(r.blocked, [true, false]);
        let r = w.observe(&frame, 200, [false; 2]).unwrap();
        assert_eq!(r.blocked, [false; 2], "{r:?}");
    }

    #[test]
    fn a_board_hidden_by_a_hand_is_moved_as_the_other_when_the_camera_was_bumped() {
        let (frame, cal) = fixture();
        let moved = bumped(&frame);
        // Board B under an arm in the bumped frame: only board A's lattice shows, displaced.
        let b_covered = {
            let mut swapped = cal.clone();
            swapped.boards.swap(0, 1);
            covered(&moved, &swapped)
        };
        let d = cal.check(&b_covered).unwrap();
        assert_eq!(d.moved, [true; 2], "{d:?}");
        assert!(d.shift[0].is_some() && d.shift[1].is_none(), "{d:?}");
        let found = displaced(&cal, d.shift, &b_covered).unwrap();
        for b in 0..2 {
            for (old, new) in cal.boards[b].corners.iter().zip(&found.boards[b].corners) {
                let (dx, dy) = (new[0] - old[0], new[1] - old[1]);
                assert!(
                    (dx - 3.0).abs() <= 1.0 && (dy - 2.0).abs() <= 1.0,
                    "board {b}: corner moved by ({dx:.2}, {dy:.2})"
                );
            }
        }
        // Through the moved calibration the bumped frame's lattices hold again.
        let again = found.check(&moved).unwrap();
        assert_eq!(again.moved, [false; 2], "{again:?}");
        assert!(displaced(&cal, [None; 2], &moved).is_none());
    }

    #[test]
    fn settings_that_cannot_work_are_refused() {
        let ok = DriftConfig::default();
        assert!(ok.validate().is_ok());
        let none = DriftConfig {
            failed_checks: 0,
            ..ok.clone()
        };
        assert!(none.validate().unwrap_err().contains("failed_checks"));
        let too_many = DriftConfig {
            min_agreement: 65,
            ..ok
        };
        assert!(too_many.validate().unwrap_err().contains("64"));
    }
}
