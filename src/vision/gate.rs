//! The change gate: which square patches differ from the ones the network last saw.
//!
//! Between two frames of a game most squares do not change: a move touches two to four, a hand
//! covers a handful. Running the square network only on the patches that changed, and keeping
//! its outputs for the rest, is where most of a steady stream's frame time goes away.
//!
//! A patch counts as changed when, in any channel of any block of `block × block` pixels, the
//! block's mean differs from the same block of the *reference* patch (the one whose outputs are
//! kept) by more than `threshold` grey levels. Block means average sensor noise and compression
//! speckle away, while a piece arriving, leaving or being swapped moves many blocks by tens of
//! levels. Comparing with the reference rather than with the previous frame means slow drift
//! (light, auto-exposure) accumulates until it crosses the threshold; it cannot creep forever.
//!
//! A patch is also reported once its reference is `refresh` batches old, whatever it shows:
//! that bounds how long one reading can stand in for a square (the tracker then sees fresh
//! evidence of every square every few seconds). Ages start staggered, so refreshes spread
//! evenly over the batches instead of arriving all at once.
//!
//! Invariant: for every patch not reported as changed, the reference patch's block means are
//! within `threshold` of the current patch's and the reference is younger than `refresh`
//! batches. Nothing else is promised, so `threshold = 0` would re-run everything that is not
//! bit-identical, and the classifier treats 0 as "off".

/// Remembers the patches the network last saw and tells which of a new batch differ.
#[derive(Debug, Clone)]
pub struct ChangeGate {
    patch_w: usize,
    patch_h: usize,
    block: usize,
    threshold: f32,
    /// Batches after which a reference is refreshed regardless (0 = never).
    refresh: u32,
    /// `n` reference patches (RGB, row-major), or empty when nothing is remembered.
    reference: Vec<u8>,
    /// Per reference patch: batches seen since it was remembered.
    age: Vec<u32>,
}

impl ChangeGate {
    /// A gate for patches of `patch_w × patch_h` compared in blocks of `block` pixels (clamped
    /// to the patch; edge blocks are smaller), `threshold` grey levels per block mean, every
    /// reference refreshed after `refresh` batches (0 = never).
    pub fn new(patch_w: u32, patch_h: u32, block: u32, threshold: f32, refresh: u32) -> ChangeGate {
        ChangeGate {
            patch_w: patch_w as usize,
            patch_h: patch_h as usize,
            block: (block as usize).clamp(1, (patch_w.max(patch_h) as usize).max(1)),
            threshold,
            refresh,
            reference: Vec::new(),
            age: Vec::new(),
        }
    }

    fn patch_bytes(&self) -> usize {
        self.patch_w * self.patch_h * 3
    }

    /// Forgets the reference: the next batch counts as entirely changed.
    pub fn clear(&mut self) {
        self.reference.clear();
        self.age.clear();
    }

    /// Indices of the patches of `patches` (`n` of them) that differ from the reference or
    /// are due for a refresh, into `changed` (ascending). Every index when the reference is
    /// empty or of another size. Counts one batch of age for every reference.
    pub fn changed(&mut self, patches: &[u8], changed: &mut Vec<usize>) {
        changed.clear();
        let pb = self.patch_bytes();
        let n = patches.len().checked_div(pb).unwrap_or(0);
        if self.reference.len() != patches.len() || pb == 0 {
            changed.extend(0..n);
            return;
        }
        for i in 0..n {
            self.age[i] = self.age[i].saturating_add(1);
            let range = i * pb..(i + 1) * pb;
            let due = self.refresh > 0 && self.age[i] >= self.refresh;
            if due || self.differs(&patches[range.clone()], &self.reference[range]) {
                changed.push(i);
            }
        }
    }

    /// Makes `patches` the reference at `indices` (all of them if the reference was empty or of
    /// another size: then `indices` must list every patch, as [`ChangeGate::changed`] did).
    pub fn remember(&mut self, patches: &[u8], indices: &[usize]) {
        let pb = self.patch_bytes();
        if self.reference.len() != patches.len() {
            self.reference.clear();
            self.reference.extend_from_slice(patches);
            // Staggered ages: patch i is first refreshed after `refresh - i % refresh` batches.
            let n = patches.len().checked_div(pb).unwrap_or(0);
            let r = self.refresh.max(1) as usize;
            self.age = (0..n).map(|i| (i % r) as u32).collect();
            return;
        }
        for &i in indices {
            let range = i * pb..(i + 1) * pb;
            if range.end <= patches.len() {
                self.reference[range.clone()].copy_from_slice(&patches[range]);
                self.age[i] = 0;
            }
        }
    }

    fn differs(&self, a: &[u8], b: &[u8]) -> bool {
        let (w, h, s) = (self.patch_w, self.patch_h, self.block);
        let mut y0 = 0;
        while y0 < h {
            let y1 = (y0 + s).min(h);
            let mut x0 = 0;
            while x0 < w {
                let x1 = (x0 + s).min(w);
                let mut sum = [0i32; 3];
                for y in y0..y1 {
                    let row = (y * w + x0) * 3..(y * w + x1) * 3;
                    for (pa, pb) in a[row.clone()].chunks_exact(3).zip(b[row].chunks_exact(3)) {
                        for c in 0..3 {
                            sum[c] += pa[c] as i32 - pb[c] as i32;
                        }
                    }
                }
                let limit = self.threshold * ((y1 - y0) * (x1 - x0)) as f32;
                if sum.iter().any(|&d| d.unsigned_abs() as f32 > limit) {
                    return true;
                }
                x0 = x1;
            }
            y0 = y1;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: usize = 16;
    const H: usize = 24;

    fn patches(n: usize, grey: u8) -> Vec<u8> {
        vec![grey; n * W * H * 3]
    }

    fn gate() -> ChangeGate {
        ChangeGate::new(W as u32, H as u32, 8, 3.0, 0)
    }

    #[test]
    fn everything_is_changed_until_a_reference_exists() {
        let mut g = gate();
        let mut changed = Vec::new();
        g.changed(&patches(4, 100), &mut changed);
        assert_eq!(changed, vec![0, 1, 2, 3]);
    }

    #[test]
    fn unchanged_patches_are_refreshed_in_turn() {
        // Refresh after 3 batches, 6 patches that never change: every batch re-runs two of
        // them (staggered), and no patch goes 3 batches without a refresh.
        let mut g = ChangeGate::new(W as u32, H as u32, 8, 3.0, 3);
        let p = patches(6, 100);
        g.remember(&p, &[0, 1, 2, 3, 4, 5]);
        let mut changed = Vec::new();
        let mut last = [0usize; 6];
        for batch in 1..=9 {
            g.changed(&p, &mut changed);
            assert_eq!(changed.len(), 2, "batch {batch}: {changed:?}");
            for &i in &changed {
                assert!(batch - last[i] <= 3, "patch {i} waited too long");
                last[i] = batch;
            }
            g.remember(&p, &changed);
        }
    }

    #[test]
    fn a_block_that_moved_marks_only_its_patch() {
        let mut g = gate();
        let first = patches(4, 100);
        g.remember(&first, &[0, 1, 2, 3]);
        let mut next = first.clone();
        // Patch 2: one 8×8 block's red channel brighter by 10 levels.
        let base = 2 * W * H * 3;
        for y in 8..16 {
            for x in 8..16 {
                next[base + (y * W + x) * 3] += 10;
            }
        }
        let mut changed = Vec::new();
        g.changed(&next, &mut changed);
        assert_eq!(changed, vec![2]);
        g.remember(&next, &changed);
        g.changed(&next, &mut changed);
        assert!(changed.is_empty(), "remembered, so unchanged: {changed:?}");
    }

    #[test]
    fn noise_that_averages_out_within_a_block_is_not_a_change() {
        let mut g = gate();
        let first = patches(1, 100);
        g.remember(&first, &[0]);
        // ±20 levels alternating pixel by pixel: every block mean stays at 100.
        let noisy: Vec<u8> = first
            .iter()
            .enumerate()
            .map(|(i, &v)| if (i / 3) % 2 == 0 { v + 20 } else { v - 20 })
            .collect();
        let mut changed = Vec::new();
        g.changed(&noisy, &mut changed);
        assert!(changed.is_empty(), "{changed:?}");
        // A uniform shift of 4 levels (beyond the threshold of 3) is a change.
        let shifted: Vec<u8> = first.iter().map(|&v| v + 4).collect();
        g.changed(&shifted, &mut changed);
        assert_eq!(changed, vec![0]);
    }

    #[test]
    fn drift_accumulates_against_the_reference() {
        let mut g = gate();
        let first = patches(1, 100);
        g.remember(&first, &[0]);
        let mut changed = Vec::new();
        // +2 per frame, never remembered: the third step is 6 levels from the reference.
        for step in 1..=3u8 {
            let frame: Vec<u8> = first.iter().map(|&v| v + 2 * step).collect();
            g.changed(&frame, &mut changed);
            assert_eq!(changed.is_empty(), step == 1, "step {step}");
        }
    }

    #[test]
    fn a_batch_of_another_size_is_entirely_changed() {
        let mut g = gate();
        g.remember(&patches(4, 100), &[0, 1, 2, 3]);
        let mut changed = Vec::new();
        g.changed(&patches(3, 100), &mut changed);
        assert_eq!(changed, vec![0, 1, 2]);
        g.clear();
        g.changed(&patches(4, 100), &mut changed);
        assert_eq!(changed.len(), 4);
    }
}
