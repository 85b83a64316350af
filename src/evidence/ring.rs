//! In-memory ring of recent frames, so that an incident can show what happened before it.

use std::collections::VecDeque;
use std::sync::Arc;

use serde_json::Value;

/// One encoded camera frame (JPEG/PNG bytes) with its timestamp.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// Capture time in ms, same clock as the events' `ts`.
    pub ts_ms: i64,
    /// Encoded image; shared so the ring and the writer never copy it.
    pub bytes: Arc<[u8]>,
    /// Optional metadata stored with the frame record, e.g. `{"corners": {"A": [[x,y]×4]}}`.
    pub meta: Option<Value>,
}

impl Frame {
    /// A frame without metadata.
    pub fn new(ts_ms: i64, bytes: impl Into<Arc<[u8]>>) -> Self {
        Self {
            ts_ms,
            bytes: bytes.into(),
            meta: None,
        }
    }
}

/// Keeps the frames of the last `keep_ms` milliseconds, bounded by count and by bytes.
///
/// Invariant: after every push, `len() <= max_frames`, `bytes() <= max_bytes` (unless a single
/// frame is larger, which is then not kept) and no frame is older than `newest - keep_ms`.
#[derive(Debug)]
pub struct FrameRing {
    keep_ms: i64,
    max_frames: usize,
    max_bytes: usize,
    frames: VecDeque<Frame>,
    bytes: usize,
    newest: Option<i64>,
}

impl FrameRing {
    /// An empty ring.
    pub fn new(keep_ms: i64, max_frames: usize, max_bytes: usize) -> Self {
        Self {
            keep_ms: keep_ms.max(0),
            max_frames,
            max_bytes,
            frames: VecDeque::new(),
            bytes: 0,
            newest: None,
        }
    }

    /// Adds a frame (frames normally arrive in time order; a late one is inserted in place) and
    /// evicts what falls outside the bounds.
    pub fn push(&mut self, frame: Frame) {
        if frame.bytes.len() > self.max_bytes || self.max_frames == 0 {
            return;
        }
        self.newest = Some(self.newest.map_or(frame.ts_ms, |n| n.max(frame.ts_ms)));
        self.bytes += frame.bytes.len();
        let pos = self.frames.partition_point(|f| f.ts_ms <= frame.ts_ms);
        self.frames.insert(pos, frame);
        let cutoff = self.newest.unwrap_or(i64::MIN).saturating_sub(self.keep_ms);
        while let Some(front) = self.frames.front() {
            if self.frames.len() > self.max_frames
                || self.bytes > self.max_bytes
                || front.ts_ms < cutoff
            {
                self.bytes -= front.bytes.len();
                self.frames.pop_front();
            } else {
                break;
            }
        }
    }

    /// Frames with `from_ms <= ts <= to_ms`, oldest first.
    pub fn window(&self, from_ms: i64, to_ms: i64) -> impl Iterator<Item = &Frame> {
        self.frames
            .iter()
            .filter(move |f| f.ts_ms >= from_ms && f.ts_ms <= to_ms)
    }

    /// Number of frames held.
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// True when no frame is held.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Encoded bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(ts: i64, len: usize) -> Frame {
        Frame::new(ts, vec![0u8; len])
    }

    #[test]
    fn keeps_only_the_last_seconds() {
        let mut ring = FrameRing::new(1000, 1000, 1 << 20);
        for ts in (0..=3000).step_by(100) {
            ring.push(frame(ts, 10));
        }
        let ts: Vec<i64> = ring.window(i64::MIN, i64::MAX).map(|f| f.ts_ms).collect();
        assert_eq!(ts.first(), Some(&2000));
        assert_eq!(ts.last(), Some(&3000));
        assert_eq!(ring.len(), 11);
        assert_eq!(ring.bytes(), 110);
    }

    #[test]
    fn bounded_by_count_and_bytes() {
        let mut ring = FrameRing::new(1_000_000, 5, 1 << 20);
        for ts in 0..20 {
            ring.push(frame(ts, 10));
        }
        assert_eq!(ring.len(), 5);
        assert_eq!(ring.window(0, 100).next().map(|f| f.ts_ms), Some(15));

        let mut ring = FrameRing::new(1_000_000, 1000, 35);
        for ts in 0..20 {
            ring.push(frame(ts, 10));
        }
        assert_eq!(ring.len(), 3);
        assert!(ring.bytes() <= 35);
        ring.push(frame(30, 36));
        assert_eq!(ring.len(), 3, "a frame larger than the ring is not kept");
    }

    #[test]
    fn late_frame_is_inserted_in_order() {
        let mut ring = FrameRing::new(10_000, 100, 1 << 20);
        for ts in [0, 100, 300, 200] {
            ring.push(frame(ts, 1));
        }
        let ts: Vec<i64> = ring.window(0, 1000).map(|f| f.ts_ms).collect();
        assert_eq!(ts, vec![0, 100, 200, 300]);
        let ts: Vec<i64> = ring.window(100, 200).map(|f| f.ts_ms).collect();
        assert_eq!(ts, vec![100, 200]);
    }
}
