//! Unchanged squares: a square whose patch looks as it did when the tracker last confirmed it
//! still holds what it held then, whatever the classifier now makes of it.
//!
//! The classifier reads each square on its own, and on a piece set it was not trained on a few
//! squares are read wrongly, often persistently (a knight on f3 that half reads as a pawn, an
//! empty h3 that half reads as a knight). The engine prior cancels a misread that no hypothesis
//! touches, but not one on a square a candidate move would change: `g1h3` then competes with
//! the `g1f3` that was played. The pixels settle it: after `g1f3`, f3's patch changed and h3's
//! did not. So per square the tracker keeps the look (block means, [`SquareLook`]) of the last
//! decided view together with the class it confirmed there, and before decoding a new view
//! anchors every square whose look did not change to that class
//! ([`TrackerConfig::unchanged_look_nats`]).
//!
//! Invariants: a reference is only taken from a view the tracker decided on and only for
//! squares that view agreed with the tracked position on (never from a square left
//! unexplained, never when the referee refused the decision); a square that may be hidden behind
//! a nearer piece is never anchored (its patch shows that piece either way); the board's overall
//! gain (light, exposure) is taken out before comparing, per channel, as the median ratio over
//! all referenced blocks.

use crate::engine::{Position, Square};

use super::decode::LogLik;
use super::{SquareClass, SquareLook, TrackerConfig};

/// Darkest reference block (grey levels) whose ratio enters the gain estimate.
const GAIN_MIN_LEVEL: u8 = 24;

/// Per square: the look of the last decided view and the class confirmed there.
#[derive(Debug, Clone)]
pub struct LookRefs {
    refs: Box<[Option<(SquareLook, SquareClass)>; 64]>,
}

impl Default for LookRefs {
    fn default() -> Self {
        LookRefs {
            refs: Box::new([None; 64]),
        }
    }
}

impl LookRefs {
    /// Remembers the looks of `ll`'s view for every square `pos` (the tracked position after
    /// the decision) has and the decision explained, i.e. not in `unexplained`.
    pub fn confirm(&mut self, ll: &LogLik, pos: &Position, unexplained: &[Square]) {
        for sq in Square::all() {
            if unexplained.contains(&sq) {
                continue;
            }
            if let Some(look) = ll.look(sq) {
                self.refs[sq.index()] = Some((*look, SquareClass::on(pos, sq)));
            }
        }
    }

    /// Anchors in `ll` every square whose look is unchanged since its reference, when the
    /// reference's class is still the one `pos` (the tracked position) has. Returns how many
    /// squares were anchored.
    pub fn anchor(&self, ll: &mut LogLik, pos: &Position, cfg: &TrackerConfig) -> usize {
        if cfg.unchanged_look_nats <= 0.0 {
            return 0;
        }
        let gain = self.gain(ll);
        let mut anchored = 0;
        for sq in Square::all() {
            let Some((reference, class)) = &self.refs[sq.index()] else {
                continue;
            };
            if *class != SquareClass::on(pos, sq) {
                continue;
            }
            let Some(look) = ll.look(sq) else {
                continue;
            };
            if unchanged(reference, look, gain, cfg.unchanged_look_levels) {
                ll.anchor(sq, *class, cfg.unchanged_look_nats);
                anchored += 1;
            }
        }
        anchored
    }

    /// Per channel, the median ratio of `ll`'s looks to the references (1 when unknown).
    fn gain(&self, ll: &LogLik) -> [f32; 3] {
        let mut ratios: [Vec<f32>; 3] = Default::default();
        for sq in Square::all() {
            let (Some((reference, _)), Some(look)) = (&self.refs[sq.index()], ll.look(sq)) else {
                continue;
            };
            for (r, l) in reference.iter().zip(look) {
                for ch in 0..3 {
                    if r[ch] >= GAIN_MIN_LEVEL {
                        ratios[ch].push(l[ch] as f32 / r[ch] as f32);
                    }
                }
            }
        }
        ratios.map(median_or_one)
    }
}

/// Whether some block of `look` moved by more than `levels` from `reference` once the overall
/// gain between the two (per channel, the median ratio over the blocks) is taken out.
pub(crate) fn look_changed(reference: &[[u8; 3]], look: &[[u8; 3]], levels: f32) -> bool {
    let gain = [0, 1, 2].map(|ch| {
        median_or_one(
            reference
                .iter()
                .zip(look)
                .filter(|(r, _)| r[ch] >= GAIN_MIN_LEVEL)
                .map(|(r, l)| l[ch] as f32 / r[ch] as f32)
                .collect(),
        )
    });
    !unchanged(reference, look, gain, levels)
}

/// The median of some gain ratios (1 when there are none).
fn median_or_one(mut v: Vec<f32>) -> f32 {
    if v.is_empty() {
        return 1.0;
    }
    let mid = v.len() / 2;
    *v.select_nth_unstable_by(mid, |a, b| a.total_cmp(b)).1
}

/// Whether every block of `look` is within `levels` of `reference` scaled by `gain`.
fn unchanged(reference: &[[u8; 3]], look: &[[u8; 3]], gain: [f32; 3], levels: f32) -> bool {
    reference
        .iter()
        .zip(look)
        .all(|(r, l)| (0..3).all(|ch| (l[ch] as f32 - r[ch] as f32 * gain[ch]).abs() <= levels))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{BoardId, Table};
    use crate::tracker::{LOOK_GRID, Observation};
    use std::sync::Arc;

    fn sq(name: &str) -> Square {
        name.parse().unwrap()
    }

    /// A view of `pos` whose classifier is unsure everywhere (uniform), with the given looks.
    fn view(pos: &Position, looks: [SquareLook; 64]) -> LogLik {
        let mut obs = Observation::exact(BoardId::A, 0, pos, 0.0);
        for s in Square::all() {
            obs.set_square(s, [1.0; SquareClass::COUNT]).unwrap();
        }
        obs.looks = Some(Arc::new(looks));
        LogLik::from_observation(&obs, &TrackerConfig::default())
    }

    fn flat(level: u8) -> [SquareLook; 64] {
        [[[level; 3]; LOOK_GRID * LOOK_GRID]; 64]
    }

    /// The start position, confirmed from a view where every block reads `level`, except on
    /// the `unexplained` squares.
    fn start_confirmed(level: u8, unexplained: &[Square]) -> (Position, LookRefs) {
        let pos = Table::new().board(BoardId::A).clone();
        let mut refs = LookRefs::default();
        refs.confirm(&view(&pos, flat(level)), &pos, unexplained);
        (pos, refs)
    }

    #[test]
    fn an_unchanged_square_is_anchored_to_its_confirmed_class_and_a_changed_one_is_not() {
        let cfg = TrackerConfig::default();
        let (pos, refs) = start_confirmed(100, &[]);
        let mut looks = flat(100);
        looks[sq("f3").index()][5] = [160, 150, 140];
        let mut ll = view(&pos, looks);
        assert_eq!(refs.anchor(&mut ll, &pos, &cfg), 63);
        // h3 stays empty by a margin, f3 (changed) is left to the classifier.
        let knight = SquareClass::WhiteKnight;
        let e = SquareClass::Empty;
        let h3 = ll.get(sq("h3"), e) - ll.get(sq("h3"), knight);
        let f3 = ll.get(sq("f3"), e) - ll.get(sq("f3"), knight);
        assert!((h3 - cfg.unchanged_look_nats).abs() < 1e-4, "{h3}");
        assert!(f3.abs() < 1e-4, "{f3}");
    }

    #[test]
    fn a_global_change_of_light_is_not_a_change_but_off_means_off() {
        let (pos, refs) = start_confirmed(100, &[sq("e4")]);
        // 20 % brighter everywhere: every block moves 20 levels, the gain takes it out.
        let mut ll = view(&pos, flat(120));
        assert_eq!(
            refs.anchor(&mut ll, &pos, &TrackerConfig::default()),
            63,
            "e4 has none"
        );
        let off = TrackerConfig {
            unchanged_look_nats: 0.0,
            ..TrackerConfig::default()
        };
        assert_eq!(refs.anchor(&mut view(&pos, flat(120)), &pos, &off), 0);
    }

    #[test]
    fn a_square_whose_class_changed_since_or_that_may_be_hidden_is_not_anchored() {
        let cfg = TrackerConfig::default();
        let (pos, refs) = start_confirmed(90, &[]);
        let mut after = pos.clone();
        let mv = after.parse_uci("e2e4").unwrap();
        after
            .play_physical(mv, &crate::engine::Variant::default())
            .unwrap();
        let mut obs = Observation::exact(BoardId::A, 0, &after, 0.0);
        obs.looks = Some(Arc::new(flat(90)));
        obs.hidden[sq("d2").index()] = 1;
        let mut ll = LogLik::from_observation(&obs, &cfg);
        // e2 and e4 changed class in the tracked position; d2 may be hidden.
        assert_eq!(refs.anchor(&mut ll, &after, &cfg), 61);
    }
}
