//! Keyframe tracks: where every physical piece and every player's hand is at any instant.
//!
//! A track is a time-ordered list of keys; between two keys the position is eased (smoothstep)
//! and the logical spot is the one of the earlier key, so a piece leaves its square the moment
//! it is grasped and arrives on the next one when it is put down.

use crate::sim::fen::Piece;
use crate::sim::math::Vec3;
use crate::sim::scene::PieceSpot;

/// One key of a piece track: from `t` on the piece heads for the next key's pose; `spot` is
/// where it logically is during that segment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PieceKey {
    pub t: f64,
    pub pos: Vec3,
    pub turn: f32,
    pub spot: PieceSpot,
    /// What the object is from `t` on (a promoted pawn becomes a queen, a captured promoted
    /// piece a pawn again when it enters the pocket).
    pub piece: Piece,
}

/// The life of one physical piece object.
#[derive(Clone, Debug)]
pub struct PieceTrack {
    pub keys: Vec<PieceKey>,
}

/// A piece's state at one instant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PiecePose {
    pub pos: Vec3,
    pub turn: f32,
    pub spot: PieceSpot,
    pub piece: Piece,
}

fn ease(u: f64) -> f32 {
    let u = u.clamp(0.0, 1.0);
    (u * u * (3.0 - 2.0 * u)) as f32
}

/// Index of the last key at or before `t` (0 if `t` precedes every key).
fn segment<T>(keys: &[T], t: f64, at: impl Fn(&T) -> f64) -> usize {
    keys.partition_point(|k| at(k) <= t).saturating_sub(1)
}

impl PieceTrack {
    pub fn new(first: PieceKey) -> PieceTrack {
        PieceTrack { keys: vec![first] }
    }

    /// The last key (a track is never empty).
    pub fn last(&self) -> PieceKey {
        *self.keys.last().expect("a track starts with one key")
    }

    /// Appends a key; a key earlier than the last one is moved to the last one's time so the
    /// track stays ordered.
    pub fn push(&mut self, mut key: PieceKey) {
        let last = self.last();
        if key.t < last.t {
            key.t = last.t;
        }
        self.keys.push(key);
    }

    pub fn pose(&self, t: f64) -> PiecePose {
        let i = segment(&self.keys, t, |k| k.t);
        let a = self.keys[i];
        let (pos, turn) = match self.keys.get(i + 1) {
            Some(b) if t > a.t && b.t > a.t => {
                let u = ease((t - a.t) / (b.t - a.t));
                (a.pos.lerp(b.pos, u), a.turn + (b.turn - a.turn) * u)
            }
            _ => (a.pos, a.turn),
        };
        PiecePose {
            pos,
            turn,
            spot: a.spot,
            piece: a.piece,
        }
    }
}

/// One key of a hand track: the palm centre, or `None` = resting off the table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HandKey {
    pub t: f64,
    pub palm: Option<Vec3>,
}

/// One player's hand over the game.
#[derive(Clone, Debug)]
pub struct HandTrack {
    /// Where the arm comes from (the player's shoulder).
    pub shoulder: Vec3,
    /// Where the palm enters the table area from (at the player's table edge).
    pub entry: Vec3,
    pub keys: Vec<HandKey>,
}

impl HandTrack {
    pub fn new(shoulder: Vec3, entry: Vec3) -> HandTrack {
        HandTrack {
            shoulder,
            entry,
            keys: vec![HandKey { t: 0.0, palm: None }],
        }
    }

    /// Palm position at `t`, `None` when the hand is off the table. Entering and leaving are
    /// movements from and to `entry`.
    pub fn palm(&self, t: f64) -> Option<Vec3> {
        let i = segment(&self.keys, t, |k| k.t);
        let a = self.keys[i];
        match self.keys.get(i + 1) {
            Some(b) if t > a.t && b.t > a.t => {
                let u = ease((t - a.t) / (b.t - a.t));
                match (a.palm, b.palm) {
                    (None, None) => None,
                    (pa, pb) => {
                        let pa = pa.unwrap_or(self.entry);
                        let pb = pb.unwrap_or(self.entry);
                        Some(pa.lerp(pb, u))
                    }
                }
            }
            _ => a.palm,
        }
    }

    /// Starts a new action at `t`: cuts whatever the hand was still doing after `t` (a
    /// retraction in progress) and continues from where the hand is then.
    pub fn cut_at(&mut self, t: f64) {
        // Never cut before the first key: a track is never empty (`palm` relies on it). Games
        // whose first recorded move lies before the timeline's zero asked for exactly that.
        let t = self.keys.first().map_or(t, |k| t.max(k.t));
        let here = self.palm(t);
        self.keys.retain(|k| k.t <= t);
        if self.keys.last().is_some_and(|k| k.t < t) {
            self.keys.push(HandKey { t, palm: here });
        }
    }

    /// Appends a key (clamped to the last key's time).
    pub fn push(&mut self, t: f64, palm: Option<Vec3>) {
        let t = self.keys.last().map_or(t, |k| k.t.max(t));
        self.keys.push(HandKey { t, palm });
    }

    /// The time of the last key.
    pub fn end(&self) -> f64 {
        self.keys.last().map_or(0.0, |k| k.t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cutting_before_the_first_key_keeps_the_track() {
        let mut hand = HandTrack::new(Vec3::new(0.0, -1.0, 0.5), Vec3::new(0.0, -0.5, 0.0));
        hand.cut_at(-1.5);
        assert_eq!(hand.keys.len(), 1);
        assert_eq!(hand.palm(0.25), None);
        hand.push(1.0, Some(Vec3::new(0.1, 0.1, 0.0)));
        assert!(hand.palm(0.5).is_some());
    }
    use crate::sim::fen::{PieceKind, Side};

    fn key(t: f64, x: f32, spot: PieceSpot) -> PieceKey {
        PieceKey {
            t,
            pos: Vec3::new(x, 0.0, 0.0),
            turn: 0.0,
            spot,
            piece: Piece {
                kind: PieceKind::Pawn,
                side: Side::White,
            },
        }
    }

    #[test]
    fn piece_leaves_when_grasped_and_arrives_when_put_down() {
        let sq = |i| PieceSpot::Square { board: 0, index: i };
        let mut tr = PieceTrack::new(key(0.0, 0.0, sq(8)));
        tr.push(key(1.0, 0.0, PieceSpot::InHand));
        tr.push(key(2.0, 1.0, sq(16)));
        assert_eq!(tr.pose(0.5).spot, sq(8));
        assert_eq!(tr.pose(1.5).spot, PieceSpot::InHand);
        assert!((tr.pose(1.5).pos.x - 0.5).abs() < 1e-6);
        assert_eq!(tr.pose(2.0).spot, sq(16));
        assert_eq!(tr.pose(9.0).pos.x, 1.0);
    }

    #[test]
    fn hand_cut_continues_from_current_position() {
        let mut h = HandTrack::new(Vec3::new(0.0, -1.0, 0.3), Vec3::new(0.0, -0.5, 0.1));
        h.push(1.0, None);
        h.push(2.0, Some(Vec3::new(0.0, 0.0, 0.1)));
        h.push(3.0, None);
        assert!(h.palm(0.5).is_none());
        assert!(h.palm(2.5).is_some());
        assert!(h.palm(3.5).is_none());
        let at = h.palm(2.5);
        h.cut_at(2.5);
        assert_eq!(h.palm(2.5), at);
        assert_eq!(h.end(), 2.5);
    }
}
