//! The square classifier: 128 square patches (both boards) in one batched ONNX call → 13 class
//! probabilities per square, adapted to the table's own piece set without any training step.
//!
//! The network (`models/squares.onnx`, see the model card) outputs `logits` over
//! [`SquareClass`], an L2-normalised `embedding` and (since 2026-12-06) its last feature map
//! `features`. Adaptation keeps a bank of labelled samples of *this* table (the start position
//! gives 32 pieces and 32 empty squares per board, every label known; positions the tracker
//! confirmed add more) and classifies by mixing the network's softmax with k-nearest-neighbour
//! softmaxes over that bank:
//!
//! `p = (1 − mix) · p_net + mix · p_knn`, where `p_knn` is a softmax over the classes present in
//! the bank of `s_c / temperature`, `s_c` being the mean cosine similarity of the `neighbours`
//! most similar bank samples of class `c` (the start position supplies all 13). A square's
//! `p_knn` is by default the mean of that vote over the embeddings (there averaging the
//! `embedding_neighbours` most similar) and the same vote over the feature maps after the
//! table's within-class whitening ([`super::whiten`], fitted on the start position), which leaves
//! out the sample of the square itself ([`Descriptor`]). Every term is a distribution, so the
//! result is one.
//!
//! Invariants: the bank holds at most `bank_per_class` samples per class (one class can never
//! drown the others) and at most one sample per (square, class) when samples come with a square
//! (a static piece refreshes its sample instead of filling the bank with copies); the oldest
//! sample of a class is evicted first.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::gate::ChangeGate;
use super::model::{ModelError, ModelOptions, OnnxModel, Output};
use super::rectify::Crops;
use super::whiten::Whitening;
use crate::engine::{Position, Square};
use crate::tracker::SquareClass;

/// Number of square patches per frame (board A's 64, then board B's).
pub const SQUARES_PER_FRAME: usize = 128;

/// Why a vision model could not be found, loaded or run, or refused its input.
#[derive(Debug, thiserror::Error)]
pub enum VisionModelError {
    #[error(
        "model {name} not found (looked in {searched}); build it with training/ or pass its path"
    )]
    ModelNotFound { name: String, searched: String },
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error("model {path} does not have the expected inputs/outputs: {reason}")]
    WrongIo { path: PathBuf, reason: String },
    #[error("patch size {got_w}×{got_h}, but the model takes {want_w}×{want_h}")]
    CropSize {
        got_w: u32,
        got_h: u32,
        want_w: u32,
        want_h: u32,
    },
    #[error("expected {want} patches ({want_bytes} bytes), got {got_bytes} bytes")]
    CropCount {
        want: usize,
        want_bytes: usize,
        got_bytes: usize,
    },
    #[error("{got} labels for {want} patches")]
    LabelCount { want: usize, got: usize },
    #[error("model output {name} has shape {shape:?}, expected {expected}")]
    OutputShape {
        name: &'static str,
        shape: Vec<i64>,
        expected: String,
    },
    #[error("classifier config: {0}")]
    Config(String),
}

/// Where the models live: `TANDEM_MODELS_DIR` (a directory), then `models/` beside the working
/// directory, the executable's ancestors and the source checkout this binary was built from.
pub fn find_model(file_name: &str) -> Result<PathBuf, VisionModelError> {
    let mut searched = Vec::new();
    if let Some(dir) = std::env::var_os("TANDEM_MODELS_DIR") {
        let path = PathBuf::from(dir).join(file_name);
        if path.is_file() {
            return Ok(path);
        }
        searched.push(path.display().to_string());
    }
    let mut roots: Vec<PathBuf> = Vec::new();
    if let Ok(cwd) = std::env::current_dir() {
        roots.push(cwd);
    }
    if let Ok(exe) = std::env::current_exe() {
        roots.extend(exe.ancestors().skip(1).map(Path::to_path_buf));
    }
    roots.push(PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    for root in roots {
        let path = root.join("models").join(file_name);
        if path.is_file() {
            return Ok(path);
        }
        let shown = path.display().to_string();
        if !searched.contains(&shown) {
            searched.push(shown);
        }
    }
    Err(VisionModelError::ModelNotFound {
        name: file_name.to_string(),
        searched: searched.join(", "),
    })
}

/// Checks a declared shape against the expected one; `-1` (dynamic) matches anything.
pub(crate) fn shape_matches(declared: &[i64], want: &[i64]) -> bool {
    declared.len() == want.len()
        && declared
            .iter()
            .zip(want)
            .all(|(&d, &w)| d < 0 || w < 0 || d == w)
}

/// Appends a left-right mirror image of every image of an NCHW batch of width `w`.
fn append_mirrored(input: &mut Vec<f32>, w: usize) {
    let n = input.len();
    input.extend_from_within(..);
    for row in input[n..].chunks_exact_mut(w) {
        row.reverse();
    }
}

/// Averages the two halves of a mirrored batch (`2n` rows: the patches, then their mirror
/// images) into `n` rows: logits by their mean, an embedding (`[2n, D]`) by its normalised sum,
/// a feature map (`[2n, C, H, W]`) by its mean with the mirror image's map mirrored back.
fn fold_mirrored(outputs: &mut [Output], n: usize) {
    for (k, out) in outputs.iter_mut().enumerate() {
        let rows_ok = out.shape.first() == Some(&(2 * n as i64));
        if !rows_ok || !(out.shape.len() == 2 || out.shape.len() == 4) {
            continue; // left for the shape check to report
        }
        let d = out.shape[1..].iter().product::<i64>().max(0) as usize;
        let (first, second) = out.data.split_at_mut(n * d);
        if out.shape.len() == 4 {
            let w = out.shape[3].max(1) as usize;
            for (a, b) in first.chunks_exact_mut(w).zip(second.chunks_exact(w)) {
                for (x, y) in a.iter_mut().zip(b.iter().rev()) {
                    *x = 0.5 * (*x + *y);
                }
            }
        } else {
            for (a, b) in first.iter_mut().zip(second.iter()) {
                *a = 0.5 * (*a + *b);
            }
            if k == 1 {
                for e in first.chunks_exact_mut(d) {
                    let norm = e.iter().map(|v| v * v).sum::<f32>().sqrt();
                    if norm > 1e-12 {
                        e.iter_mut().for_each(|v| *v /= norm);
                    }
                }
            }
        }
        out.data.truncate(n * d);
        out.shape[0] = n as i64;
    }
}

/// Classifier settings (TOML section `[classifier]`, every field has a default).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClassifierConfig {
    /// The square model; `None` searches `models/squares.onnx` (see [`find_model`]).
    pub model: Option<PathBuf>,
    /// ONNX Runtime intra-op threads; also the parts the feature vote's heavy frames are
    /// computed in.
    pub threads: usize,
    /// Let idle ONNX Runtime workers spin (costs CPU the other stages need).
    pub spinning: bool,
    /// Weight of the k-NN vote in `[0, 1]` once the bank has samples (0 = network only).
    pub mix: f32,
    /// Softmax temperature over the embedding's cosine similarities (smaller = sharper).
    pub temperature: f32,
    /// How many of a class's most similar samples are averaged into its similarity (the
    /// feature vote, pocket windows, and squares when they vote by the embedding alone).
    pub neighbours: usize,
    /// With `descriptor = both`, the same for a square's embedding vote. With two, no single
    /// sample (such as the one banked from the square itself before its piece moved) decides
    /// that vote alone: the chain's changed squares read better, its static ones a little worse
    /// (`docs/classifier.md`, "Two neighbours for a square's embedding vote").
    pub embedding_neighbours: usize,
    /// Bank capacity per class.
    pub bank_per_class: usize,
    /// What the squares' k-NN vote compares ([`Descriptor`]). Pocket windows always compare
    /// embeddings. Without a `features` output in the model, `embedding`.
    pub descriptor: Descriptor,
    /// Softmax temperature over the whitened features' cosine similarities.
    pub feature_temperature: f32,
    /// Shrinkage λ of the table's within-class whitening of the features ([`super::whiten`]),
    /// in `(0, 1]`: how far the metric stays from the one the start position measures;
    /// 1 = no whitening.
    pub shrinkage: f32,
    /// Whether a square's features are also compared with the sample banked from that very
    /// square. The feature map keeps the square's surroundings, so its own earlier sample
    /// outvotes a piece that has just arrived there (`docs/classifier.md`).
    pub own_square_features: bool,
    /// After a start-position adaptation, choose `mix` and `temperature` from a grid by the
    /// leave-one-out likelihood of the bank's own samples (see [`SquareClassifier::fit`]).
    pub fit_mixture: bool,
    /// Also classify each patch mirrored left-right and average the two (test-time
    /// augmentation: twice the network time, +1.2 points per square on the validation pose;
    /// `docs/vision-classifier.md`).
    pub mirror: bool,
    /// Reuse the network's outputs for a square whose patch has not changed since the network
    /// last saw it: no block mean of `gate_block`² pixels moved by more than this many grey
    /// levels ([`super::gate`]). 0 runs the network on all 128 squares every frame.
    pub gate_threshold: f32,
    /// Block size in pixels for [`ClassifierConfig::gate_threshold`].
    pub gate_block: u32,
    /// With the gate on, a square's kept outputs are refreshed after this many frames even if
    /// its patch did not change (staggered over the squares; 0 = never).
    pub gate_refresh_frames: u32,
}

/// What a square is compared by in the k-NN vote (see [`ClassifierConfig::descriptor`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Descriptor {
    /// The L2-normalised `embedding` output the network was trained to classify by.
    Embedding,
    /// The final feature map (`features` output, flattened), whitened per table: it keeps
    /// where in the patch things are, which the embedding's linear layer mixes away.
    Features,
    /// Both votes, averaged.
    Both,
}

impl std::str::FromStr for Descriptor {
    type Err = String;

    /// The names of the TOML key (`embedding`, `features`, `both`).
    fn from_str(s: &str) -> Result<Descriptor, String> {
        match s {
            "embedding" => Ok(Descriptor::Embedding),
            "features" => Ok(Descriptor::Features),
            "both" => Ok(Descriptor::Both),
            _ => Err(format!("`{s}`: expected embedding, features or both")),
        }
    }
}

impl Default for ClassifierConfig {
    fn default() -> Self {
        ClassifierConfig {
            model: None,
            threads: 2,
            spinning: false,
            mix: 0.9,
            temperature: 0.02,
            neighbours: 1,
            embedding_neighbours: 2,
            bank_per_class: 64,
            descriptor: Descriptor::Both,
            feature_temperature: 0.03,
            shrinkage: 0.6,
            own_square_features: false,
            fit_mixture: false,
            mirror: true,
            gate_threshold: 4.0,
            gate_block: 16,
            gate_refresh_frames: 25,
        }
    }
}

impl ClassifierConfig {
    /// Refuses values that would make the mixture meaningless.
    pub fn validate(&self) -> Result<(), VisionModelError> {
        let bad = |m: &str| Err(VisionModelError::Config(m.to_string()));
        if !(0.0..=1.0).contains(&self.mix) {
            return bad("mix must be in [0, 1]");
        }
        if !(self.temperature.is_finite() && self.temperature > 0.0) {
            return bad("temperature must be a positive number");
        }
        if self.neighbours == 0 || self.neighbours > 64 {
            return bad("neighbours must be 1..=64");
        }
        if self.embedding_neighbours == 0 || self.embedding_neighbours > 64 {
            return bad("embedding_neighbours must be 1..=64");
        }
        if self.bank_per_class == 0 || self.bank_per_class > 4096 {
            return bad("bank_per_class must be 1..=4096");
        }
        if !(self.feature_temperature.is_finite() && self.feature_temperature > 0.0) {
            return bad("feature_temperature must be a positive number");
        }
        if !(self.shrinkage > 0.0 && self.shrinkage <= 1.0) {
            return bad("shrinkage must be in (0, 1] (1 = no whitening)");
        }
        if self.threads == 0 || self.threads > 64 {
            return bad("threads must be 1..=64");
        }
        if !(self.gate_threshold.is_finite() && self.gate_threshold >= 0.0) {
            return bad("gate_threshold must be a number of grey levels >= 0 (0 = off)");
        }
        if self.gate_block == 0 || self.gate_block > 64 {
            return bad("gate_block must be 1..=64 pixels");
        }
        Ok(())
    }
}

/// The classes of the standard start position, index `rank * 8 + file` (a1 = 0).
pub fn start_labels() -> [SquareClass; 64] {
    let pos = Position::new();
    let mut out = [SquareClass::Empty; 64];
    for sq in Square::all() {
        out[sq.index()] = SquareClass::on(&pos, sq);
    }
    out
}

/// `lut[b] = b / 255` exactly as the training pipeline scales bytes.
fn byte_scale() -> [f32; 256] {
    std::array::from_fn(|b| b as f32 / 255.0)
}

/// Writes `n` RGB patches (`w × h`, row-major, interleaved) as planar NCHW floats into `out`
/// (resized to fit, reusing its allocation).
pub fn patches_to_nchw(patches: &[u8], n: usize, w: usize, h: usize, out: &mut Vec<f32>) {
    let lut = byte_scale();
    let plane = w * h;
    out.resize(n * 3 * plane, 0.0);
    for (src, dst) in patches
        .chunks_exact(3 * plane)
        .zip(out.chunks_exact_mut(3 * plane))
        .take(n)
    {
        let (r, gb) = dst.split_at_mut(plane);
        let (g, b) = gb.split_at_mut(plane);
        for (i, px) in src.chunks_exact(3).enumerate() {
            r[i] = lut[px[0] as usize];
            g[i] = lut[px[1] as usize];
            b[i] = lut[px[2] as usize];
        }
    }
}

/// 1 / |v|, or 0 for a (near) zero vector, which then matches nothing.
#[inline]
fn inverse_norm(v: &[f32]) -> f32 {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 1e-12 { 1.0 / norm } else { 0.0 }
}

/// The descriptor of the unit vector `raw`: whitened when a whitening is given, unit length.
fn describe_unit(raw: &[f32], whitening: Option<&Whitening>, out: &mut [f32]) {
    match whitening {
        Some(w) => {
            w.apply(raw, out);
            let scale = inverse_norm(out);
            out.iter_mut().for_each(|v| *v *= scale);
        }
        None => out.copy_from_slice(raw),
    }
}

/// Per row of `source` (rows of `dim` floats), the first `rows` of them: scales it to unit
/// length in place and writes its descriptor to the same row of `out` (resized to match; the
/// other rows are left as they were).
fn describe_rows(
    source: &mut Output,
    dim: usize,
    rows: usize,
    whitening: Option<&Whitening>,
    out: &mut Output,
    threads: usize,
) {
    let n = source.data.len() / dim.max(1);
    out.shape.clear();
    out.shape.extend([n as i64, dim as i64]);
    out.data.resize(n * dim, 0.0);
    let rows = rows.min(n);
    let work = |_: usize, src: &mut [f32], dst: &mut [f32]| {
        for (x, d) in src.chunks_exact_mut(dim).zip(dst.chunks_exact_mut(dim)) {
            let scale = inverse_norm(x);
            x.iter_mut().for_each(|v| *v *= scale);
            describe_unit(x, whitening, d);
        }
    };
    let parts = if whitening.is_some() { threads } else { 1 };
    in_parts(
        parts,
        rows,
        (&mut source.data[..rows * dim], dim),
        (&mut out.data[..rows * dim], dim),
        work,
    );
}

/// Runs `work(first_row, a_rows, b_rows)` over the first `rows` rows of two row-major arrays
/// (`a` of `da` floats per row, `b` of `db`), in up to `parts` contiguous parts at once (scoped
/// threads; one part when there are few rows: a thread costs more than a few rows).
fn in_parts<F>(parts: usize, rows: usize, a: (&mut [f32], usize), b: (&mut [f32], usize), work: F)
where
    F: Fn(usize, &mut [f32], &mut [f32]) + Sync,
{
    const MIN_ROWS_PER_PART: usize = 8;
    let (a, da) = a;
    let (b, db) = b;
    let parts = parts.clamp(1, (rows / MIN_ROWS_PER_PART).max(1));
    if parts == 1 {
        work(0, &mut a[..rows * da], &mut b[..rows * db]);
        return;
    }
    let per = rows.div_ceil(parts);
    std::thread::scope(|scope| {
        let work = &work;
        let mut a = &mut a[..rows * da];
        let mut b = &mut b[..rows * db];
        let mut first = 0;
        while first < rows {
            let take = per.min(rows - first);
            let (pa, ra) = std::mem::take(&mut a).split_at_mut(take * da);
            let (pb, rb) = std::mem::take(&mut b).split_at_mut(take * db);
            a = ra;
            b = rb;
            if first + take < rows {
                scope.spawn(move || work(first, pa, pb));
            } else {
                work(first, pa, pb);
            }
            first += take;
        }
    });
}

/// Dot product with eight independent accumulators (vectorises, and keeps the adds
/// pipelined even where the compiler does not vectorise).
#[inline]
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// Numerically stable softmax of `logits` into `out`.
pub(crate) fn softmax_into(logits: &[f32], out: &mut [f32]) {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for (o, &l) in out.iter_mut().zip(logits) {
        *o = (l - max).exp();
        sum += *o;
    }
    if sum > 0.0 && sum.is_finite() {
        for o in out.iter_mut() {
            *o /= sum;
        }
    } else {
        let u = 1.0 / out.len().max(1) as f32;
        out.iter_mut().for_each(|o| *o = u);
    }
}

/// One bank slot's bookkeeping; its vectors live in the [`Bank`]'s arrays at the same index.
#[derive(Clone, Copy, Debug)]
struct Slot {
    /// The square (0..128) the sample was cut from, if known.
    square: Option<u16>,
    /// Insertion order; the smallest stamp of a class is evicted first.
    stamp: u64,
}

/// Labelled samples, `cap` slots per class stored contiguously: per slot the unit embedding,
/// and (when the model has features) the unit feature map and its descriptor.
#[derive(Clone, Debug)]
struct Bank {
    dim: usize,
    fdim: usize,
    cap: usize,
    slots: Vec<Vec<Slot>>,
    /// `13 * cap * dim` floats; class `c`'s slot `i` at `(c * cap + i) * dim`.
    vectors: Vec<f32>,
    /// `13 * cap * fdim` floats, the same layout: the feature maps at unit length, to fit the
    /// whitening on and to describe again when it changes.
    features: Vec<f32>,
    /// Their descriptors (whitened when the table's whitening is fitted; unit length).
    described: Vec<f32>,
    /// The network's softmax for each sample (same slot order), for [`SquareClassifier::fit`].
    network: Vec<[f32; SquareClass::COUNT]>,
    clock: u64,
    /// Slots whose descriptor changed since [`Bank::take_changed`] last asked (`None`: all).
    changed: Option<Vec<usize>>,
}

impl Bank {
    fn new(dim: usize, fdim: usize, cap: usize) -> Bank {
        let slots = SquareClass::COUNT * cap;
        Bank {
            dim,
            fdim,
            cap,
            slots: (0..SquareClass::COUNT)
                .map(|_| Vec::with_capacity(cap))
                .collect(),
            vectors: vec![0.0; slots * dim],
            features: vec![0.0; slots * fdim],
            described: vec![0.0; slots * fdim],
            network: vec![[0.0; SquareClass::COUNT]; slots],
            clock: 0,
            changed: None,
        }
    }

    fn len(&self, class: usize) -> usize {
        self.slots[class].len()
    }

    fn is_empty(&self) -> bool {
        self.slots.iter().all(Vec::is_empty)
    }

    /// Adds (or refreshes) one sample: its unit `embedding`, its unit `features` and their
    /// `descriptor` (both empty without features), and the network's softmax for it.
    fn insert(
        &mut self,
        class: SquareClass,
        square: Option<u16>,
        sample: Sample<'_>,
        network: &[f32; SquareClass::COUNT],
    ) {
        let c = class.index();
        self.clock += 1;
        let stamp = self.clock;
        let slots = &mut self.slots[c];
        let i = match square.and_then(|s| slots.iter().position(|x| x.square == Some(s))) {
            Some(i) => i,
            None if slots.len() < self.cap => {
                slots.push(Slot { square, stamp });
                slots.len() - 1
            }
            None => slots
                .iter()
                .enumerate()
                .min_by_key(|(_, s)| s.stamp)
                .map_or(0, |(i, _)| i),
        };
        slots[i] = Slot { square, stamp };
        let k = c * self.cap + i;
        if let Some(changed) = &mut self.changed {
            if changed.len() < self.network.len() {
                changed.push(k);
            } else {
                self.changed = None;
            }
        }
        self.network[k] = *network;
        let scale = inverse_norm(sample.embedding);
        for (v, &e) in self.vectors[k * self.dim..(k + 1) * self.dim]
            .iter_mut()
            .zip(sample.embedding)
        {
            *v = e * scale;
        }
        if self.fdim > 0 {
            let f = k * self.fdim..(k + 1) * self.fdim;
            self.features[f.clone()].copy_from_slice(sample.features);
            self.described[f].copy_from_slice(sample.descriptor);
        }
    }

    /// Every sample's unit feature map and its class, for fitting a whitening.
    fn feature_samples(&self) -> (Vec<f32>, Vec<usize>) {
        let mut rows = Vec::new();
        let mut labels = Vec::new();
        for c in 0..SquareClass::COUNT {
            let at = c * self.cap * self.fdim;
            rows.extend_from_slice(&self.features[at..at + self.len(c) * self.fdim]);
            labels.extend(std::iter::repeat_n(c, self.len(c)));
        }
        (rows, labels)
    }

    /// The slots (`class * cap + index`) whose descriptors changed since the last call, or
    /// `None` when all may have.
    fn take_changed(&mut self) -> Option<Vec<usize>> {
        self.changed.replace(Vec::new())
    }

    /// Describes every sample's features anew.
    fn redescribe(&mut self, whitening: Option<&Whitening>) {
        self.changed = None;
        let d = self.fdim;
        for c in 0..SquareClass::COUNT {
            let at = c * self.cap * d;
            let end = at + self.len(c) * d;
            for (out, f) in self.described[at..end]
                .chunks_exact_mut(d)
                .zip(self.features[at..end].chunks_exact(d))
            {
                describe_unit(f, whitening, out);
            }
        }
    }

    /// Per class, the mean of the `k` highest cosine similarities between the embedding `q`
    /// (scaled by `qs` to unit length) and the class's samples, skipping slot `skip` (class,
    /// index); `-inf` for classes without samples.
    fn scores(
        &self,
        q: &[f32],
        qs: f32,
        k: usize,
        skip: Option<(usize, usize)>,
    ) -> [f32; SquareClass::COUNT] {
        let dim = self.dim;
        std::array::from_fn(|c| {
            let base = c * self.cap * dim;
            let sims = self.vectors[base..base + self.len(c) * dim]
                .chunks_exact(dim)
                .enumerate()
                .filter(|&(i, _)| skip != Some((c, i)))
                .map(|(_, v)| dot(v, q) * qs);
            mean_of_top(k, sims)
        })
    }

    /// Writes into `row` (one per slot) the cosine of the descriptor `q` with every used slot's
    /// descriptor, or with the slots in `only`.
    fn similarities(&self, q: &[f32], only: Option<&[usize]>, row: &mut [f32]) {
        let d = self.fdim;
        let mut put = |k: usize| row[k] = dot(&self.described[k * d..(k + 1) * d], q);
        match only {
            Some(slots) => slots.iter().for_each(|&k| put(k)),
            None => {
                for c in 0..SquareClass::COUNT {
                    (c * self.cap..c * self.cap + self.len(c)).for_each(&mut put);
                }
            }
        }
    }

    /// As [`Bank::scores`] for the feature descriptors, from one row of their similarities
    /// ([`Bank::similarities`]), leaving out the samples of square `own`.
    fn scores_from(&self, row: &[f32], k: usize, own: Option<u16>) -> [f32; SquareClass::COUNT] {
        std::array::from_fn(|c| {
            let sims = self.slots[c]
                .iter()
                .enumerate()
                .filter(|(_, slot)| own.is_none() || slot.square != own)
                .map(|(i, _)| row[c * self.cap + i]);
            mean_of_top(k, sims)
        })
    }
}

/// The mean of the `k` (1..=64) largest of `sims`, or `-inf` when there are none.
fn mean_of_top(k: usize, sims: impl Iterator<Item = f32>) -> f32 {
    let mut top = [f32::NEG_INFINITY; 64];
    let kk = k.clamp(1, 64);
    let mut seen = 0;
    for sim in sims {
        seen += 1;
        if sim > top[kk - 1] {
            let mut j = kk - 1;
            while j > 0 && top[j - 1] < sim {
                top[j] = top[j - 1];
                j -= 1;
            }
            top[j] = sim;
        }
    }
    if seen == 0 {
        return f32::NEG_INFINITY;
    }
    let kk = kk.min(seen);
    top[..kk].iter().sum::<f32>() / kk as f32
}

/// One sample's vectors as the bank keeps them.
#[derive(Clone, Copy)]
struct Sample<'a> {
    embedding: &'a [f32],
    features: &'a [f32],
    descriptor: &'a [f32],
}

/// The k-NN softmax of `score / t` over the classes with a finite score, into `out`; false
/// (and `out` untouched) when no class has one.
fn knn_softmax(
    score: &[f32; SquareClass::COUNT],
    inv_t: f32,
    out: &mut [f32; SquareClass::COUNT],
) -> bool {
    let max = score.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if !max.is_finite() {
        return false;
    }
    let mut z = 0.0;
    for (p, &s) in out.iter_mut().zip(score) {
        *p = if s.is_finite() {
            ((s - max) * inv_t).exp()
        } else {
            0.0
        };
        z += *p;
    }
    out.iter_mut().for_each(|p| *p /= z);
    true
}

/// `(1 − mix) · net + mix · softmax(scores / t)` over the classes with a finite score.
fn mixture(
    net: &[f32; SquareClass::COUNT],
    score: &[f32; SquareClass::COUNT],
    mix: f32,
    inv_t: f32,
    out: &mut [f32; SquareClass::COUNT],
) {
    let max = score.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut knn = [0.0f32; SquareClass::COUNT];
    let mut z = 0.0;
    for (p, &s) in knn.iter_mut().zip(score) {
        if s.is_finite() {
            *p = ((s - max) * inv_t).exp();
            z += *p;
        }
    }
    let w = if z > 0.0 { mix / z } else { 0.0 };
    let keep = if z > 0.0 { 1.0 - mix } else { 1.0 };
    for c in 0..SquareClass::COUNT {
        out[c] = keep * net[c] + w * knn[c];
    }
}

/// Temperatures tried by [`SquareClassifier::fit`].
const FIT_TEMPERATURES: [f32; 8] = [0.01, 0.02, 0.03, 0.05, 0.08, 0.12, 0.2, 0.3];
/// Probability floor of the leave-one-out likelihood (one hopeless sample costs at most 9.2 nats).
const FIT_FLOOR: f32 = 1e-4;

/// What [`SquareClassifier::fit`] chose and how well the bank predicts itself with it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MixtureFit {
    pub mix: f32,
    pub temperature: f32,
    /// Leave-one-out accuracy of the bank's samples with the chosen settings.
    pub loo_accuracy: f32,
    /// The same for the network alone.
    pub network_accuracy: f32,
    pub samples: usize,
}

/// The square classifier over `models/squares.onnx` with its adaptation bank.
pub struct SquareClassifier {
    model: OnnxModel,
    config: ClassifierConfig,
    patch_w: u32,
    patch_h: u32,
    /// Embedding dimension.
    dim: usize,
    /// Feature map size (0: the model has no `features` output, or the config does not use it).
    fdim: usize,
    /// The table's within-class whitening of the features, once fitted on its labelled samples.
    whitening: Option<Whitening>,
    bank: Bank,
    input: Vec<f32>,
    /// Of the last classified batch, one row per patch (for a frame, rows of unchanged squares
    /// are kept from earlier frames; see `gate`): the logits, the unit embeddings, the unit
    /// feature maps (`[N, fdim]` once described) and their descriptors (the last two empty
    /// without features).
    outputs: [Output; 4],
    /// Softmax of the network alone for the last classified batch.
    network: Vec<[f32; SquareClass::COUNT]>,
    /// Which of a frame's 128 patches the network must see again.
    gate: ChangeGate,
    /// Scratch: indices the gate reported, their patches, the network's rows for them.
    changed: Vec<usize>,
    gathered: Vec<u8>,
    partial: [Output; 4],
    network_rows: usize,
    /// Cosines of the squares' feature descriptors (rows, up to 128) with every bank slot's
    /// (`13 * bank_per_class` columns), kept between frames: only the rows the network saw again
    /// and the slots the bank changed are computed anew (a full row costs a thousand dot
    /// products of the feature map's length).
    sims: Vec<f32>,
    /// Rows of `sims` to compute anew.
    stale: Vec<bool>,
    /// Unit embeddings of the pocket windows when their zones were empty (row `i` for the
    /// frame's patch `128 + i`), where `window_known[i]`.
    window_empty: Vec<f32>,
    window_known: Vec<bool>,
    /// Unit embeddings of pieces seen in this table's pocket zones, with the class the tracker's
    /// position gave them (oldest first, at most [`WINDOW_PIECES_PER_CLASS`] per class); pocket
    /// windows compare with them besides the bank.
    window_pieces: Vec<(SquareClass, Vec<f32>)>,
}

/// Pieces kept per class from the pocket zones ([`SquareClassifier::remember_window_piece`]).
const WINDOW_PIECES_PER_CLASS: usize = 4;

impl SquareClassifier {
    /// Loads the model named by `config.model` (or found by [`find_model`]) and checks its I/O.
    pub fn load(config: &ClassifierConfig) -> Result<SquareClassifier, VisionModelError> {
        let path = match &config.model {
            Some(p) => p.clone(),
            None => find_model("squares.onnx")?,
        };
        Self::from_path(&path, config)
    }

    /// Loads `path` (I/O per the contract: `crops` `[N, 3, H, W]` → `logits` `[N, 13]`,
    /// `embedding` `[N, D]`).
    pub fn from_path(
        path: &Path,
        config: &ClassifierConfig,
    ) -> Result<SquareClassifier, VisionModelError> {
        config.validate()?;
        let model = OnnxModel::load_with(
            path,
            &ModelOptions {
                threads: config.threads,
                spinning: config.spinning,
            },
        )?;
        let wrong = |reason: String| VisionModelError::WrongIo {
            path: path.to_path_buf(),
            reason,
        };
        if model.input_names().len() != 1 {
            return Err(wrong(format!(
                "one input expected, found {:?}",
                model.input_names()
            )));
        }
        let input = model.input_shape(0).unwrap_or_default();
        if input.len() != 4 || input[1] != 3 || input[2] <= 0 || input[3] <= 0 {
            return Err(wrong(format!(
                "input must be float [N, 3, H, W] with fixed H, W; it is {input:?}"
            )));
        }
        let logits = model
            .output_shape("logits")
            .ok_or_else(|| wrong(format!("no `logits` output ({:?})", model.output_names())))?;
        if !shape_matches(&logits, &[-1, SquareClass::COUNT as i64]) {
            return Err(wrong(format!("`logits` must be [N, 13]; it is {logits:?}")));
        }
        let embedding = model.output_shape("embedding").ok_or_else(|| {
            wrong(format!(
                "no `embedding` output ({:?})",
                model.output_names()
            ))
        })?;
        if embedding.len() != 2 {
            return Err(wrong(format!(
                "`embedding` must be [N, D]; it is {embedding:?}"
            )));
        }
        // A model exported before the `features` output was added has only the embedding.
        let fdim = match model.output_shape("features") {
            Some(_) if config.descriptor == Descriptor::Embedding => 0,
            Some(shape) => {
                if shape.len() != 4 || shape[1..].iter().any(|&d| d <= 0) {
                    return Err(wrong(format!(
                        "`features` must be [N, C, H, W] with fixed C, H, W; it is {shape:?}"
                    )));
                }
                shape[1..].iter().product::<i64>() as usize
            }
            None => 0,
        };
        if fdim > 16384 {
            return Err(wrong(format!(
                "feature map of {fdim} values is implausible"
            )));
        }
        let mut classifier = SquareClassifier {
            model,
            config: config.clone(),
            patch_w: input[3] as u32,
            patch_h: input[2] as u32,
            dim: embedding[1].max(0) as usize,
            fdim,
            whitening: None,
            bank: Bank::new(0, 0, 1),
            input: Vec::new(),
            outputs: Default::default(),
            network: Vec::new(),
            gate: ChangeGate::new(
                input[3] as u32,
                input[2] as u32,
                config.gate_block,
                config.gate_threshold,
                config.gate_refresh_frames,
            ),
            changed: Vec::new(),
            gathered: Vec::new(),
            partial: Default::default(),
            network_rows: 0,
            sims: Vec::new(),
            stale: vec![true; SQUARES_PER_FRAME],
            window_empty: Vec::new(),
            window_known: Vec::new(),
            window_pieces: Vec::new(),
        };
        if classifier.dim == 0 {
            // Exporters often leave D symbolic: one probe run on a blank patch tells it.
            let (w, h) = (classifier.patch_w as usize, classifier.patch_h as usize);
            classifier.input = vec![0.0; 3 * w * h];
            classifier.model.run_named(
                &[1, 3, h as i64, w as i64],
                &classifier.input,
                &["logits", "embedding"],
                &mut classifier.outputs[..2],
            )?;
            let shape = &classifier.outputs[1].shape;
            if shape.len() != 2 || shape[1] <= 0 {
                return Err(wrong(format!("`embedding` ran as {shape:?}, not [1, D]")));
            }
            classifier.dim = shape[1] as usize;
        }
        if classifier.dim > 4096 {
            return Err(wrong(format!(
                "embedding dimension {} is implausible",
                classifier.dim
            )));
        }
        classifier.bank = Bank::new(classifier.dim, fdim, config.bank_per_class);
        Ok(classifier)
    }

    /// Patch width and height the model takes.
    pub fn patch_size(&self) -> (u32, u32) {
        (self.patch_w, self.patch_h)
    }

    /// Embedding dimension.
    pub fn embedding_dim(&self) -> usize {
        self.dim
    }

    /// Size of the feature map the squares are compared by (0 when only the embedding is).
    pub fn feature_dim(&self) -> usize {
        self.fdim
    }

    /// The table's whitening, once fitted ([`SquareClassifier::refit_whitening`]).
    pub fn whitening(&self) -> Option<&Whitening> {
        self.whitening.as_ref()
    }

    pub fn config(&self) -> &ClassifierConfig {
        &self.config
    }

    /// Changes the mixture settings (bank kept; its capacity is fixed at load).
    pub fn set_mixture(
        &mut self,
        mix: f32,
        temperature: f32,
        neighbours: usize,
    ) -> Result<(), VisionModelError> {
        let next = ClassifierConfig {
            mix,
            temperature,
            neighbours,
            ..self.config.clone()
        };
        next.validate()?;
        self.config = next;
        Ok(())
    }

    /// Samples per class in the bank, in [`SquareClass`] order.
    pub fn bank_sizes(&self) -> [usize; SquareClass::COUNT] {
        std::array::from_fn(|c| self.bank.len(c))
    }

    /// Forgets every adaptation sample and the whitening fitted on them (a new piece set or a
    /// new table).
    pub fn clear_bank(&mut self) {
        self.bank = Bank::new(self.dim, self.fdim, self.config.bank_per_class);
        self.window_pieces.clear();
        if self.whitening.take().is_some() {
            let [_, _, features, descriptors] = &mut self.outputs;
            describe_rows(features, self.fdim, usize::MAX, None, descriptors, 1);
            self.stale.fill(true);
        }
    }

    /// Fits the table's within-class whitening of the features ([`super::whiten`]) on every
    /// sample in the bank (after the start position: 32 pieces and 32 empty squares per board,
    /// all labelled) and describes the bank and the last batch anew with it. Does nothing
    /// without features or with `shrinkage = 1`; leaves no whitening when the bank has no class
    /// with two samples. Returns whether a whitening is in force.
    pub fn refit_whitening(&mut self) -> bool {
        let fdim = self.fdim;
        if fdim == 0 {
            return false;
        }
        self.whitening = if self.config.shrinkage < 1.0 {
            let (rows, labels) = self.bank.feature_samples();
            Whitening::fit(&rows, &labels, fdim, self.config.shrinkage)
        } else {
            None
        };
        let w = self.whitening.as_ref();
        self.bank.redescribe(w);
        let [_, _, features, descriptors] = &mut self.outputs;
        describe_rows(
            features,
            fdim,
            usize::MAX,
            w,
            descriptors,
            self.config.threads,
        );
        self.stale.fill(true);
        self.whitening.is_some()
    }

    fn check_crops(&self, crops: &Crops) -> Result<(), VisionModelError> {
        if crops.patch_w != self.patch_w || crops.patch_h != self.patch_h {
            return Err(VisionModelError::CropSize {
                got_w: crops.patch_w,
                got_h: crops.patch_h,
                want_w: self.patch_w,
                want_h: self.patch_h,
            });
        }
        Ok(())
    }

    fn patch_bytes(&self) -> usize {
        (self.patch_w * self.patch_h * 3) as usize
    }

    /// One forward pass over `n` patches; leaves logits and embeddings in `self.outputs` (which
    /// then no longer hold a frame the gate could reuse).
    fn forward(&mut self, patches: &[u8], n: usize) -> Result<(), VisionModelError> {
        self.gate.clear();
        self.stale.fill(true);
        self.infer(patches, n, false, n)
    }

    /// One forward pass over `n` patches into `self.partial` (`partial`) or `self.outputs`; the
    /// features of the first `describe` of them are described (the others are pocket windows,
    /// which vote by the embedding alone).
    fn infer(
        &mut self,
        patches: &[u8],
        n: usize,
        partial: bool,
        describe: usize,
    ) -> Result<(), VisionModelError> {
        let want_bytes = n * self.patch_bytes();
        if patches.len() != want_bytes || n == 0 {
            return Err(VisionModelError::CropCount {
                want: n,
                want_bytes,
                got_bytes: patches.len(),
            });
        }
        let (w, h) = (self.patch_w as usize, self.patch_h as usize);
        patches_to_nchw(patches, n, w, h, &mut self.input);
        let rows = if self.config.mirror {
            // Every patch again, mirrored left-right (the model was trained with mirrored
            // crops; no piece is chiral enough to matter): one call of 2n rows.
            append_mirrored(&mut self.input, w);
            2 * n
        } else {
            n
        };
        let shape = [rows as i64, 3, h as i64, w as i64];
        let outputs = if partial {
            &mut self.partial
        } else {
            &mut self.outputs
        };
        let names: &[&str] = if self.fdim > 0 {
            &["logits", "embedding", "features"]
        } else {
            &["logits", "embedding"]
        };
        self.model
            .run_named(&shape, &self.input, names, &mut outputs[..names.len()])?;
        if rows != n {
            fold_mirrored(&mut outputs[..names.len()], n);
        }
        let [logits, embedding, features, descriptors] = outputs;
        if logits.shape != [n as i64, SquareClass::COUNT as i64] {
            return Err(VisionModelError::OutputShape {
                name: "logits",
                shape: logits.shape.clone(),
                expected: format!("[{n}, 13]"),
            });
        }
        if embedding.shape != [n as i64, self.dim as i64] {
            return Err(VisionModelError::OutputShape {
                name: "embedding",
                shape: embedding.shape.clone(),
                expected: format!("[{n}, {}]", self.dim),
            });
        }
        if self.fdim > 0 {
            let per_row = features.shape[1..].iter().product::<i64>();
            if features.shape.first() != Some(&(n as i64)) || per_row != self.fdim as i64 {
                return Err(VisionModelError::OutputShape {
                    name: "features",
                    shape: features.shape.clone(),
                    expected: format!("[{n}, …] of {} values per row", self.fdim),
                });
            }
            features.shape = vec![n as i64, self.fdim as i64];
            describe_rows(
                features,
                self.fdim,
                describe,
                self.whitening.as_ref(),
                descriptors,
                self.config.threads,
            );
        }
        Ok(())
    }

    /// Classifies both boards' 128 square patches, and the pocket windows cut after them, in
    /// one call into `out` (one probability vector per patch: board A's squares by
    /// `rank * 8 + file`, then board B's, then the windows). With
    /// [`ClassifierConfig::gate_threshold`] > 0 the network sees only the patches that changed
    /// since it last saw them; the adaptation bank is applied to all 128 every time.
    pub fn classify(
        &mut self,
        crops: &Crops,
        out: &mut Vec<[f32; SquareClass::COUNT]>,
    ) -> Result<(), VisionModelError> {
        self.check_crops(crops)?;
        let n = SQUARES_PER_FRAME + crops.windows;
        if crops.squares.len() != n * self.patch_bytes() {
            return Err(VisionModelError::CropCount {
                want: n,
                want_bytes: n * self.patch_bytes(),
                got_bytes: crops.squares.len(),
            });
        }
        if self.config.gate_threshold <= 0.0 {
            self.network_rows = n;
            return self.classify_patches(&crops.squares, n, out);
        }
        let mut changed = std::mem::take(&mut self.changed);
        self.gate.changed(&crops.squares, &mut changed);
        let result = self.classify_changed(&crops.squares, n, &changed);
        self.network_rows = changed.len();
        self.changed = changed;
        result?;
        self.combine(n, out);
        Ok(())
    }

    /// Runs the network on the `changed` patches of a frame of `n` and updates their rows of
    /// `self.outputs` and the gate's reference (all rows when the gate has none).
    fn classify_changed(
        &mut self,
        patches: &[u8],
        n: usize,
        changed: &[usize],
    ) -> Result<(), VisionModelError> {
        if changed.is_empty() {
            return Ok(());
        }
        if changed.len() == n {
            self.forward(patches, n)?;
            self.gate.remember(patches, changed);
            return Ok(());
        }
        let pb = self.patch_bytes();
        let mut gathered = std::mem::take(&mut self.gathered);
        gathered.clear();
        for &i in changed {
            gathered.extend_from_slice(&patches[i * pb..(i + 1) * pb]);
        }
        // `changed` is ascending: the squares among them come first.
        let squares = changed.partition_point(|&i| i < SQUARES_PER_FRAME);
        let result = self.infer(&gathered, changed.len(), true, squares);
        self.gathered = gathered;
        if let Err(e) = result {
            self.gate.clear();
            return Err(e);
        }
        for (k, out) in self.outputs.iter_mut().enumerate() {
            let d = [SquareClass::COUNT, self.dim, self.fdim, self.fdim][k];
            let rows = &self.partial[k].data;
            for (j, &i) in changed.iter().enumerate() {
                out.data[i * d..(i + 1) * d].copy_from_slice(&rows[j * d..(j + 1) * d]);
            }
        }
        for &i in changed {
            if let Some(s) = self.stale.get_mut(i) {
                *s = true;
            }
        }
        self.gate.remember(patches, changed);
        Ok(())
    }

    /// How many patches the network ran on in the last [`SquareClassifier::classify`] (128
    /// without the gate or when everything changed; 0 when nothing did).
    pub fn last_network_rows(&self) -> usize {
        self.network_rows
    }

    /// Classifies `n` patches of the model's size (RGB, row-major) in one call.
    pub fn classify_patches(
        &mut self,
        patches: &[u8],
        n: usize,
        out: &mut Vec<[f32; SquareClass::COUNT]>,
    ) -> Result<(), VisionModelError> {
        self.forward(patches, n)?;
        self.combine(n, out);
        Ok(())
    }

    /// The network's own softmax (no adaptation) for the last classified batch.
    pub fn network_probabilities(&self) -> &[[f32; SquareClass::COUNT]] {
        &self.network
    }

    /// The embeddings of the last classified batch, `D` floats per patch.
    pub fn last_embeddings(&self) -> &[f32] {
        &self.outputs[1].data
    }

    fn combine(&mut self, n: usize, out: &mut Vec<[f32; SquareClass::COUNT]>) {
        const C: usize = SquareClass::COUNT;
        let [logits, embeddings, _, descriptors] = &self.outputs;
        self.network.resize(n, [0.0; C]);
        out.resize(n, [0.0; C]);
        for (row, net) in logits.data.chunks_exact(C).zip(self.network.iter_mut()) {
            softmax_into(row, net);
        }
        let use_bank = self.config.mix > 0.0 && !self.bank.is_empty();
        if !use_bank {
            out.copy_from_slice(&self.network);
            return;
        }
        let (mix, inv_t, k, k_embedding) = (
            self.config.mix,
            1.0 / self.config.temperature,
            self.config.neighbours,
            self.config.embedding_neighbours,
        );
        let (dim, fdim) = (self.dim, self.fdim);
        let with_features = fdim > 0 && descriptors.data.len() >= n * fdim;
        if with_features {
            // Bring the kept similarities up to date: rows the network saw again, slots the bank
            // changed.
            let slots = SquareClass::COUNT * self.bank.cap;
            let rows = n.min(SQUARES_PER_FRAME);
            self.sims.resize(SQUARES_PER_FRAME * slots, 0.0);
            let changed = self.bank.take_changed();
            let stale = &self.stale;
            let bank = &self.bank;
            // The squares' descriptors are only read: a second slice stands in for `b`.
            let work = |first: usize, sims: &mut [f32], _: &mut [f32]| {
                for (j, row) in sims.chunks_exact_mut(slots).enumerate() {
                    let r = first + j;
                    let q = &descriptors.data[r * fdim..(r + 1) * fdim];
                    let only = if stale[r] { None } else { changed.as_deref() };
                    bank.similarities(q, only, row);
                }
            };
            let heavy = changed.is_none() || stale[..rows].iter().filter(|&&x| x).count() >= 16;
            let parts = if heavy { self.config.threads } else { 1 };
            in_parts(
                parts,
                rows,
                (&mut self.sims[..rows * slots], slots),
                (&mut [], 0),
                work,
            );
            self.stale[..rows].fill(false);
        }
        let bank = &self.bank;
        let inv_ft = 1.0 / self.config.feature_temperature;
        let both = self.config.descriptor == Descriptor::Both;
        for (i, ((q, net), dst)) in embeddings
            .data
            .chunks_exact(dim)
            .zip(&self.network)
            .zip(out.iter_mut())
            .enumerate()
        {
            // Squares may vote by their features; pocket windows always by the embedding.
            if with_features && i < SQUARES_PER_FRAME {
                let own = (!self.config.own_square_features).then_some(i as u16);
                let slots = SquareClass::COUNT * bank.cap;
                let fscore = bank.scores_from(&self.sims[i * slots..(i + 1) * slots], k, own);
                let mut knn = [0.0; C];
                // No sample but the square's own: the embedding votes alone, below.
                if knn_softmax(&fscore, inv_ft, &mut knn) {
                    if both {
                        let mut e = [0.0; C];
                        let scores = bank.scores(q, inverse_norm(q), k_embedding, None);
                        if knn_softmax(&scores, inv_t, &mut e) {
                            knn.iter_mut().zip(e).for_each(|(p, x)| *p = 0.5 * (*p + x));
                        }
                    }
                    for c in 0..C {
                        dst[c] = (1.0 - mix) * net[c] + mix * knn[c];
                    }
                    continue;
                }
            }
            let qs = inverse_norm(q);
            let mut score = bank.scores(q, qs, k, None);
            // A pocket window also compares with itself when its zone was known to be empty.
            let w = i.wrapping_sub(SQUARES_PER_FRAME);
            if self.window_known.get(w) == Some(&true) {
                let e = &self.window_empty[w * dim..(w + 1) * dim];
                let empty = &mut score[SquareClass::Empty.index()];
                *empty = empty.max(dot(e, q) * qs);
            }
            if i >= SQUARES_PER_FRAME {
                for (class, e) in &self.window_pieces {
                    let c = &mut score[class.index()];
                    *c = c.max(dot(e, q) * qs);
                }
            }
            mixture(net, &score, mix, inv_t, dst);
        }
    }

    /// Keeps pocket windows `windows` (indices among the windows) of the last classified frame
    /// as examples of their own empty look: their zones must be empty in that frame, as at the
    /// start of a game. Each such window is then also compared with its own empty look, which
    /// the general bank cannot supply (a window can show the clock or the board's edge).
    pub fn remember_empty_windows(&mut self, windows: &[usize]) {
        let dim = self.dim;
        let rows = &self.outputs[1].data;
        let n = (rows.len() / dim.max(1)).saturating_sub(SQUARES_PER_FRAME);
        if self.window_known.len() != n {
            self.window_known = vec![false; n];
            self.window_empty = vec![0.0; n * dim];
        }
        for &w in windows.iter().filter(|&&w| w < n) {
            let at = (SQUARES_PER_FRAME + w) * dim;
            self.window_empty[w * dim..(w + 1) * dim].copy_from_slice(&rows[at..at + dim]);
            self.window_known[w] = true;
        }
    }

    /// Keeps pocket window `window` (index among the windows) of the last classified frame as a
    /// piece of `class` (the tracker's position says its zone holds it,
    /// [`super::FrameReader::confirm_pockets_last`]). Pieces lie in the zones on the table, not on
    /// squares, and the bank's samples (pieces on squares) name them worse than they count
    /// them; every later window is also compared with these. Squares never are.
    pub fn remember_window_piece(&mut self, window: usize, class: SquareClass) {
        if class == SquareClass::Empty {
            return;
        }
        let dim = self.dim;
        let rows = &self.outputs[1].data;
        let at = (SQUARES_PER_FRAME + window) * dim;
        let Some(row) = rows.get(at..at + dim) else {
            return;
        };
        let scale = inverse_norm(row);
        let e: Vec<f32> = row.iter().map(|x| x * scale).collect();
        let kept = self
            .window_pieces
            .iter()
            .filter(|(c, _)| *c == class)
            .count();
        if kept >= WINDOW_PIECES_PER_CLASS
            && let Some(oldest) = self.window_pieces.iter().position(|(c, _)| *c == class)
        {
            self.window_pieces.remove(oldest);
        }
        self.window_pieces.push((class, e));
    }

    /// Chooses `mix` (0, 0.1, …, 1) and `temperature` (from a fixed grid) that maximise the
    /// leave-one-out log-likelihood of the bank's samples (each scored against all other samples
    /// and the network's softmax for it), and applies them. A network that is confidently wrong
    /// on this piece set thereby loses weight, and the k-NN temperature follows how spread the
    /// embeddings of this table are. `None` when the bank has fewer than two samples.
    pub fn fit(&mut self) -> Option<MixtureFit> {
        const C: usize = SquareClass::COUNT;
        let bank = &self.bank;
        let dim = self.dim;
        let mut rows: Vec<(usize, [f32; C], [f32; C])> = Vec::new();
        for c in 0..C {
            for i in 0..bank.len(c) {
                let at = (c * bank.cap + i) * dim;
                let q = &bank.vectors[at..at + dim];
                let score = bank.scores(q, 1.0, self.config.neighbours, Some((c, i)));
                rows.push((c, bank.network[c * bank.cap + i], score));
            }
        }
        if rows.len() < 2 {
            return None;
        }
        let argmax = |p: &[f32; C]| (0..C).max_by(|&a, &b| p[a].total_cmp(&p[b])).unwrap_or(0);
        let mut best = (f32::NEG_INFINITY, 0.0f32, self.config.temperature, 0usize);
        let mut p = [0.0; C];
        for &t in &FIT_TEMPERATURES {
            for m in (0..=10).rev() {
                let mix = m as f32 / 10.0;
                let (mut ll, mut right) = (0.0f32, 0usize);
                for (label, net, score) in &rows {
                    mixture(net, score, mix, 1.0 / t, &mut p);
                    ll += p[*label].max(FIT_FLOOR).ln();
                    right += usize::from(argmax(&p) == *label);
                }
                if ll > best.0 {
                    best = (ll, mix, t, right);
                }
            }
        }
        let network_right = rows
            .iter()
            .filter(|(label, net, _)| argmax(net) == *label)
            .count();
        self.config.mix = best.1;
        self.config.temperature = best.2;
        Some(MixtureFit {
            mix: best.1,
            temperature: best.2,
            loo_accuracy: best.3 as f32 / rows.len() as f32,
            network_accuracy: network_right as f32 / rows.len() as f32,
            samples: rows.len(),
        })
    }

    /// Runs [`SquareClassifier::fit`] when the configuration asks for it.
    pub fn refit_if_configured(&mut self) -> Option<MixtureFit> {
        if self.config.fit_mixture {
            self.fit()
        } else {
            None
        }
    }

    /// Adds the last classified batch's embeddings with `labels` (one per patch) to the bank;
    /// `squares[i]` names patch `i`'s square (0..128) when known, so a square refreshes its own
    /// sample.
    fn bank_last(
        &mut self,
        labels: &[SquareClass],
        squares: Option<&[u16]>,
    ) -> Result<(), VisionModelError> {
        let n = self.outputs[1].data.len() / self.dim.max(1);
        if labels.len() != n {
            return Err(VisionModelError::LabelCount {
                want: n,
                got: labels.len(),
            });
        }
        let picks: Vec<(usize, Option<u16>, SquareClass)> = labels
            .iter()
            .enumerate()
            .map(|(i, &label)| (i, squares.and_then(|s| s.get(i).copied()), label))
            .collect();
        self.confirm_last(&picks)
    }

    /// Adapts to a table from the 128 patches of its start position (both boards in the standard
    /// start placement: every label is known): banks them and fits the table's whitening.
    /// Returns the number of samples added.
    pub fn adapt_start(&mut self, crops: &Crops) -> Result<usize, VisionModelError> {
        let start = start_labels();
        let labels: Vec<SquareClass> = start.iter().chain(start.iter()).copied().collect();
        self.confirm(crops, &labels)?;
        self.refit_whitening();
        self.refit_if_configured();
        Ok(labels.len())
    }

    /// Keeps adapting from a position the tracker confirmed: `labels` are the 128 true classes
    /// (board A's 64 by `rank * 8 + file`, then board B's) of `crops`. Runs the network once.
    pub fn confirm(
        &mut self,
        crops: &Crops,
        labels: &[SquareClass],
    ) -> Result<(), VisionModelError> {
        self.check_crops(crops)?;
        if labels.len() != SQUARES_PER_FRAME {
            return Err(VisionModelError::LabelCount {
                want: SQUARES_PER_FRAME,
                got: labels.len(),
            });
        }
        let want_bytes = SQUARES_PER_FRAME * self.patch_bytes();
        let patches = crops
            .squares
            .get(..want_bytes)
            .ok_or(VisionModelError::CropCount {
                want: SQUARES_PER_FRAME,
                want_bytes,
                got_bytes: crops.squares.len(),
            })?;
        self.forward(patches, SQUARES_PER_FRAME)?;
        let squares: Vec<u16> = (0..SQUARES_PER_FRAME as u16).collect();
        self.bank_last(labels, Some(&squares))
    }

    /// Adds samples from the last classified batch without running the network again:
    /// `picks` are (patch index in that batch, square id 0..128 if known, true class). On a
    /// frame read through the gate only the squares (indices below 128) have feature
    /// descriptors; pocket windows are never banked.
    pub fn confirm_last(
        &mut self,
        picks: &[(usize, Option<u16>, SquareClass)],
    ) -> Result<(), VisionModelError> {
        let (dim, fdim) = (self.dim, self.fdim);
        let [logits, embeddings, features, descriptors] = &self.outputs;
        let n = embeddings.data.len() / dim.max(1);
        let with_features = fdim > 0 && features.data.len() >= n * fdim;
        for &(i, sq, label) in picks {
            if i >= n {
                return Err(VisionModelError::LabelCount {
                    want: n,
                    got: i + 1,
                });
            }
            let mut net = [0.0; SquareClass::COUNT];
            let l = i * SquareClass::COUNT;
            softmax_into(&logits.data[l..l + SquareClass::COUNT], &mut net);
            let f = if with_features {
                i * fdim..(i + 1) * fdim
            } else {
                0..0
            };
            let sample = Sample {
                embedding: &embeddings.data[i * dim..(i + 1) * dim],
                features: &features.data[f.clone()],
                descriptor: &descriptors.data[f],
            };
            self.bank.insert(label, sq, sample, &net);
        }
        Ok(())
    }

    /// Adds arbitrary labelled patches (any count, model-sized, no square identity), e.g. the
    /// `adapt` rows of an evaluation set, and refits the table's whitening on the whole bank.
    pub fn adapt_patches(
        &mut self,
        patches: &[u8],
        labels: &[SquareClass],
    ) -> Result<(), VisionModelError> {
        if labels.is_empty() {
            return Ok(());
        }
        self.forward(patches, labels.len())?;
        self.bank_last(labels, None)?;
        self.refit_whitening();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn fixture() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vision/squares-fixture.onnx")
    }

    fn solid_patches(colours: &[[u8; 3]]) -> Vec<u8> {
        colours
            .iter()
            .flat_map(|c| std::iter::repeat_n(*c, 48 * 64).flatten())
            .collect()
    }

    fn crops_of(colours: &[[u8; 3]]) -> Crops {
        Crops {
            patch_w: 48,
            patch_h: 64,
            squares: solid_patches(colours),
            windows: colours.len().saturating_sub(SQUARES_PER_FRAME),
            pocket_w: 96,
            pocket_h: 128,
            pockets: vec![0; 4 * 96 * 128 * 3],
            pocket_wide: Vec::new(),
        }
    }

    #[test]
    fn nchw_layout_is_planar_rgb_scaled_by_255() {
        // Two 3×2 patches with distinct bytes everywhere.
        let (w, h) = (3, 2);
        let patches: Vec<u8> = (0..2 * w * h * 3).map(|i| (i * 7 % 256) as u8).collect();
        let mut out = vec![9.0; 1];
        patches_to_nchw(&patches, 2, w, h, &mut out);
        assert_eq!(out.len(), 2 * 3 * w * h);
        for n in 0..2 {
            for y in 0..h {
                for x in 0..w {
                    for c in 0..3 {
                        let src = patches[((n * h + y) * w + x) * 3 + c] as f32 / 255.0;
                        let dst = out[((n * 3 + c) * h + y) * w + x];
                        assert_eq!(src, dst, "n{n} y{y} x{x} c{c}");
                    }
                }
            }
        }
    }

    #[test]
    fn dot_matches_the_plain_sum() {
        for n in [0, 3, 8, 13, 64] {
            let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 3.0).collect();
            let b: Vec<f32> = (0..n).map(|i| 1.0 / (i as f32 + 1.0)).collect();
            let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - plain).abs() < 1e-4, "n = {n}");
        }
    }

    #[test]
    fn softmax_is_a_distribution_even_for_extreme_logits() {
        let mut p = [0.0; 3];
        softmax_into(&[1000.0, 0.0, -1000.0], &mut p);
        assert!((p.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!(p[0] > 0.999);
        softmax_into(&[f32::NAN, 0.0, 0.0], &mut p);
        assert!(p.iter().all(|v| v.is_finite()));
    }

    #[test]
    fn start_labels_are_the_standard_start() {
        let s = start_labels();
        let text: String = s.iter().map(|c| c.char()).collect();
        assert_eq!(&text[..16], "RNBQKBNRPPPPPPPP");
        assert_eq!(&text[48..], "pppppppprnbqkbnr");
        assert!(text[16..48].chars().all(|c| c == '.'));
    }

    const N: [f32; 13] = [1.0 / 13.0; 13];

    #[test]
    fn bank_keeps_per_class_bounds_and_refreshes_squares() {
        let mut bank = Bank::new(2, 0, 3);
        let emb = |e: &'static [f32]| Sample {
            embedding: e,
            features: &[],
            descriptor: &[],
        };
        for i in 0..10u16 {
            let e = [1.0, i as f32];
            let sample = Sample {
                embedding: &e,
                features: &[],
                descriptor: &[],
            };
            bank.insert(SquareClass::Empty, Some(i), sample, &N);
        }
        bank.insert(SquareClass::WhiteKing, Some(4), emb(&[0.0, 2.0]), &N);
        assert_eq!(bank.len(SquareClass::Empty.index()), 3);
        assert_eq!(bank.len(SquareClass::WhiteKing.index()), 1);
        // The newest three empties (squares 7, 8, 9) survive.
        let mut kept: Vec<u16> = bank.slots[0].iter().filter_map(|s| s.square).collect();
        kept.sort();
        assert_eq!(kept, vec![7, 8, 9]);
        // Re-confirming square 8 refreshes its slot instead of evicting another square.
        bank.insert(SquareClass::Empty, Some(8), emb(&[0.0, 1.0]), &N);
        let mut kept: Vec<u16> = bank.slots[0].iter().filter_map(|s| s.square).collect();
        kept.sort();
        assert_eq!(kept, vec![7, 8, 9]);
        // Stored normalised.
        let i = bank.slots[0]
            .iter()
            .position(|s| s.square == Some(8))
            .unwrap();
        assert_eq!(&bank.vectors[i * 2..i * 2 + 2], &[0.0, 1.0]);
        // A flood of one class never touches another.
        for _ in 0..100 {
            bank.insert(SquareClass::Empty, None, emb(&[1.0, 0.0]), &N);
        }
        assert_eq!(bank.len(SquareClass::WhiteKing.index()), 1);
        assert_eq!(bank.len(SquareClass::Empty.index()), 3);
    }

    /// The feature vote leaves out the sample banked from the query's own square (unless asked):
    /// that sample shows the square's surroundings as well as its piece, and a piece that has
    /// just arrived would read as what stood there before.
    #[test]
    fn the_feature_vote_skips_the_squares_own_sample() {
        let mut bank = Bank::new(1, 2, 2);
        let put = |bank: &mut Bank, class, square, d: [f32; 2]| {
            let sample = Sample {
                embedding: &[1.0],
                features: &d,
                descriptor: &d,
            };
            bank.insert(class, Some(square), sample, &N);
        };
        // Square 5 was empty; a white pawn elsewhere looks nearly like the query.
        put(&mut bank, SquareClass::Empty, 5, [1.0, 0.0]);
        put(&mut bank, SquareClass::WhitePawn, 9, [0.8, 0.6]);
        let q = [0.96, 0.28];
        let mut row = vec![0.0; SquareClass::COUNT * 2];
        bank.similarities(&q, None, &mut row);
        assert!(
            bank.take_changed().is_none(),
            "a new bank has every slot to compute"
        );
        let with_own = bank.scores_from(&row, 1, None);
        assert!(with_own[0] > with_own[SquareClass::WhitePawn.index()]);
        let without = bank.scores_from(&row, 1, Some(5));
        assert_eq!(without[0], f32::NEG_INFINITY);
        assert!(without[SquareClass::WhitePawn.index()] > 0.9);
        // Only the slots asked for are computed again.
        put(&mut bank, SquareClass::WhitePawn, 9, [0.0, 1.0]);
        let changed = bank.take_changed().expect("one slot changed");
        assert_eq!(changed, vec![SquareClass::WhitePawn.index() * 2]);
        bank.similarities(&q, Some(&changed), &mut row);
        let after = bank.scores_from(&row, 1, Some(5));
        assert!((after[SquareClass::WhitePawn.index()] - 0.28).abs() < 1e-6);
        // The embedding vote is not affected by the square.
        let e = bank.scores(&[1.0], 1.0, 1, None);
        assert!(e[0].is_finite() && e[SquareClass::WhitePawn.index()].is_finite());
    }

    #[test]
    fn work_in_parts_sees_every_row_once_with_its_index() {
        for (parts, rows) in [(1, 20), (2, 20), (2, 7), (3, 25), (2, 0)] {
            let mut a = vec![0.0f32; rows * 3 + 6];
            let mut b = vec![0.0f32; rows * 2];
            in_parts(parts, rows, (&mut a, 3), (&mut b, 2), |first, pa, pb| {
                for (j, (ra, rb)) in pa
                    .chunks_exact_mut(3)
                    .zip(pb.chunks_exact_mut(2))
                    .enumerate()
                {
                    ra.fill((first + j) as f32);
                    rb[0] += 1.0;
                }
            });
            for r in 0..rows {
                assert_eq!(a[r * 3..r * 3 + 3], [r as f32; 3], "parts {parts}, row {r}");
                assert_eq!(b[r * 2], 1.0);
            }
            // Rows past `rows` are not touched.
            assert!(a[rows * 3..].iter().all(|&v| v == 0.0));
        }
    }

    #[test]
    fn config_validation() {
        assert!(ClassifierConfig::default().validate().is_ok());
        for bad in [
            ClassifierConfig {
                mix: 1.5,
                ..Default::default()
            },
            ClassifierConfig {
                temperature: 0.0,
                ..Default::default()
            },
            ClassifierConfig {
                feature_temperature: -0.1,
                ..Default::default()
            },
            ClassifierConfig {
                shrinkage: 0.0,
                ..Default::default()
            },
            ClassifierConfig {
                shrinkage: 1.5,
                ..Default::default()
            },
            ClassifierConfig {
                neighbours: 0,
                ..Default::default()
            },
            ClassifierConfig {
                embedding_neighbours: 65,
                ..Default::default()
            },
            ClassifierConfig {
                bank_per_class: 0,
                ..Default::default()
            },
            ClassifierConfig {
                gate_threshold: f32::NAN,
                ..Default::default()
            },
            ClassifierConfig {
                gate_block: 0,
                ..Default::default()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
        let t: ClassifierConfig = toml::from_str("mix = 0.5").unwrap();
        assert_eq!(t.mix, 0.5);
        assert_eq!(t.neighbours, ClassifierConfig::default().neighbours);
        assert!(toml::from_str::<ClassifierConfig>("mixx = 0.5").is_err());
        let t: ClassifierConfig = toml::from_str("descriptor = \"embedding\"").unwrap();
        assert_eq!(t.descriptor, Descriptor::Embedding);
        // The command line's names are the TOML's.
        for d in [
            Descriptor::Embedding,
            Descriptor::Features,
            Descriptor::Both,
        ] {
            let name = toml::Value::try_from(d).unwrap();
            assert_eq!(name.as_str().unwrap().parse::<Descriptor>(), Ok(d));
        }
        assert!("pixels".parse::<Descriptor>().is_err());
        assert!(toml::from_str::<ClassifierConfig>("descriptor = \"pixels\"").is_err());
    }

    #[test]
    fn mirroring_reverses_rows_and_folding_averages_the_halves() {
        // 12 values in rows of width 3: however they split into images and planes, each row
        // is mirrored on its own.
        let mut input: Vec<f32> = (0..12).map(|v| v as f32).collect();
        append_mirrored(&mut input, 3);
        assert_eq!(
            &input[..12],
            &(0..12).map(|v| v as f32).collect::<Vec<_>>()[..]
        );
        assert_eq!(
            &input[12..],
            &[2., 1., 0., 5., 4., 3., 8., 7., 6., 11., 10., 9.]
        );
        // n = 1: logits [1, 3] and mirrored [3, 5] → [2, 4]; embeddings [1, 0] and [0, 1] →
        // their normalised sum.
        let mut outputs = [
            Output {
                shape: vec![2, 2],
                data: vec![1., 3., 3., 5.],
            },
            Output {
                shape: vec![2, 2],
                data: vec![1., 0., 0., 1.],
            },
        ];
        fold_mirrored(&mut outputs, 1);
        assert_eq!(outputs[0].shape, [1, 2]);
        assert_eq!(outputs[0].data, [2., 4.]);
        let h = std::f32::consts::FRAC_1_SQRT_2;
        assert!(outputs[1].data.iter().all(|v| (v - h).abs() < 1e-6));
        assert_eq!(outputs[1].shape, [1, 2]);
    }

    #[test]
    fn a_mirrored_batch_keeps_one_row_per_patch() {
        // The fixture reads channel means, which mirroring keeps: same result, same shape.
        let colours = [[255, 0, 0], [0, 255, 0], [10, 20, 200]];
        let patches = solid_patches(&colours);
        let (mut plain, mut mirrored) = (Vec::new(), Vec::new());
        let unmirrored = ClassifierConfig {
            mirror: false,
            ..ClassifierConfig::default()
        };
        SquareClassifier::from_path(&fixture(), &unmirrored)
            .unwrap()
            .classify_patches(&patches, 3, &mut plain)
            .unwrap();
        let config = ClassifierConfig {
            mirror: true,
            ..ClassifierConfig::default()
        };
        let mut c = SquareClassifier::from_path(&fixture(), &config).unwrap();
        c.classify_patches(&patches, 3, &mut mirrored).unwrap();
        assert_eq!(mirrored.len(), 3);
        assert_eq!(c.last_embeddings().len(), 3 * c.embedding_dim());
        for (a, b) in plain.iter().zip(&mirrored) {
            for (x, y) in a.iter().zip(b) {
                assert!((x - y).abs() < 1e-5);
            }
        }
    }

    fn classifier() -> SquareClassifier {
        SquareClassifier::from_path(&fixture(), &ClassifierConfig::default())
            .expect("fixture model loads")
    }

    #[test]
    fn fixture_logits_follow_channel_means_end_to_end() {
        // The fixture's logits are 10 × the mean of R, G, B: a pure red patch must put its mass
        // on class 0, green on 1, blue on 2 (checks RGB order and /255 scaling through ORT).
        let mut c = classifier();
        assert_eq!(c.patch_size(), (48, 64));
        assert_eq!(c.embedding_dim(), 64);
        let colours = [[255, 0, 0], [0, 255, 0], [0, 0, 255], [51, 0, 0]];
        let mut out = Vec::new();
        c.classify_patches(&solid_patches(&colours), 4, &mut out)
            .unwrap();
        assert_eq!(out.len(), 4);
        for (i, row) in out.iter().take(3).enumerate() {
            let mut logits = [0.0f32; 13];
            logits[i] = 10.0;
            let mut want = [0.0; 13];
            softmax_into(&logits, &mut want);
            for (g, w) in row.iter().zip(&want) {
                assert!((g - w).abs() < 1e-5, "patch {i}: {row:?}");
            }
        }
        // 51/255 = 0.2 → logit 2 on class 0.
        let mut logits = [0.0f32; 13];
        logits[0] = 2.0;
        let mut want = [0.0; 13];
        softmax_into(&logits, &mut want);
        assert!((out[3][0] - want[0]).abs() < 1e-5);
    }

    /// 128 grey squares banked as both boards' start position, then two pocket windows that
    /// the network reads as a white pawn (green) with certainty; the classifier has read the
    /// frame once more after banking. Returns the crops, the classifier, the start's picks and
    /// the last reading.
    #[allow(clippy::type_complexity)]
    fn start_then_two_windows() -> (
        Crops,
        SquareClassifier,
        Vec<(usize, Option<u16>, SquareClass)>,
        Vec<[f32; SquareClass::COUNT]>,
    ) {
        let mut colours = vec![[90u8, 90, 90]; SQUARES_PER_FRAME];
        for (i, c) in colours.iter_mut().enumerate() {
            c[0] = 60 + (i % 7) as u8 * 20;
        }
        colours.extend([[0u8, 255, 0], [0, 250, 20]]);
        let crops = crops_of(&colours);
        let mut c = classifier();
        let mut out = Vec::new();
        c.classify(&crops, &mut out).unwrap();
        assert_eq!(
            out.len(),
            SQUARES_PER_FRAME + 2,
            "windows follow the squares"
        );
        let picks: Vec<(usize, Option<u16>, SquareClass)> = start_labels()
            .iter()
            .chain(start_labels().iter())
            .enumerate()
            .map(|(i, &l)| (i, Some(i as u16), l))
            .collect();
        c.confirm_last(&picks).unwrap();
        c.classify(&crops, &mut out).unwrap();
        (crops, c, picks, out)
    }

    /// What a classifier with only the start position banked reads from `crops`.
    fn read_with_start_only(
        crops: &Crops,
        picks: &[(usize, Option<u16>, SquareClass)],
    ) -> Vec<[f32; SquareClass::COUNT]> {
        let mut plain = classifier();
        plain.classify(crops, &mut Vec::new()).unwrap();
        plain.confirm_last(picks).unwrap();
        let mut want = Vec::new();
        plain.classify(crops, &mut want).unwrap();
        want
    }

    #[test]
    fn a_pocket_window_kept_as_a_piece_reads_as_that_piece_and_no_square_changes() {
        let (crops, mut c, picks, mut out) = start_then_two_windows();
        let knight = SquareClass::WhiteKnight.index();
        assert!(out[128][knight] < 0.5, "{:?}", out[128]);
        c.remember_window_piece(0, SquareClass::WhiteKnight);
        // A window the last frame did not have is ignored.
        c.remember_window_piece(99, SquareClass::BlackQueen);
        c.classify(&crops, &mut out).unwrap();
        assert!(out[128][knight] > 0.5, "{:?}", out[128]);
        assert_eq!(
            out[..SQUARES_PER_FRAME],
            read_with_start_only(&crops, &picks)[..SQUARES_PER_FRAME],
            "squares are never compared with the pocket's pieces"
        );
        // A new table forgets them.
        c.clear_bank();
        c.confirm_last(&picks).unwrap();
        c.classify(&crops, &mut out).unwrap();
        assert!(out[128][knight] < 0.5, "{:?}", out[128]);
    }

    #[test]
    fn a_pocket_window_that_looks_as_it_did_empty_reads_empty() {
        let (crops, mut c, picks, mut out) = start_then_two_windows();
        let empty = SquareClass::Empty.index();
        assert!(
            out[128][empty] < 0.5 && out[129][empty] < 0.5,
            "{:?}",
            &out[128..]
        );
        // Window 0 is known empty as it looks now; window 1 is not remembered.
        c.remember_empty_windows(&[0]);
        c.classify(&crops, &mut out).unwrap();
        assert!(out[128][empty] > 0.5, "{:?}", out[128]);
        assert!(out[129][empty] < 0.5, "{:?}", out[129]);
        // Squares are never compared with a window's empty look.
        let want = read_with_start_only(&crops, &picks);
        assert_eq!(out[..SQUARES_PER_FRAME], want[..SQUARES_PER_FRAME]);
    }

    #[test]
    fn the_gate_runs_the_network_only_on_changed_squares_and_matches_a_full_run() {
        let colours: Vec<[u8; 3]> = (0..128u32)
            .map(|i| [(i * 2) as u8, (255 - i) as u8, (i * 37 % 256) as u8])
            .collect();
        let mut crops = crops_of(&colours);
        let load = |config| SquareClassifier::from_path(&fixture(), &config).unwrap();
        // No refreshes: this test counts exactly which rows change.
        let mut gated = load(ClassifierConfig {
            gate_refresh_frames: 0,
            ..ClassifierConfig::default()
        });
        let mut full = load(ClassifierConfig {
            gate_threshold: 0.0,
            ..ClassifierConfig::default()
        });
        let (mut g, mut f) = (Vec::new(), Vec::new());
        gated.classify(&crops, &mut g).unwrap();
        assert_eq!(gated.last_network_rows(), 128, "no reference yet");
        gated.classify(&crops, &mut g).unwrap();
        assert_eq!(gated.last_network_rows(), 0, "nothing changed");
        // A piece arrives on two squares: only those two go through the network, and every
        // output (probabilities and the embeddings adaptation banks) equals a full run.
        let pb = 48 * 64 * 3;
        for (i, c) in [(5usize, [250u8, 10, 10]), (77, [10, 10, 250])] {
            for px in crops.squares[i * pb..(i + 1) * pb].chunks_exact_mut(3) {
                px.copy_from_slice(&c);
            }
        }
        gated.classify(&crops, &mut g).unwrap();
        assert_eq!(gated.last_network_rows(), 2);
        full.classify(&crops, &mut f).unwrap();
        assert_eq!(full.last_network_rows(), 128);
        assert_eq!(g, f);
        assert_eq!(gated.last_embeddings(), full.last_embeddings());
        assert_eq!(argmax(&g[5]), 0);
        assert_eq!(argmax(&g[77]), 2);
        // Two grey levels of drift everywhere is under the threshold: the outputs are kept.
        let before = g.clone();
        let drifted = Crops {
            squares: crops.squares.iter().map(|v| v.saturating_add(2)).collect(),
            ..crops.clone()
        };
        gated.classify(&drifted, &mut g).unwrap();
        assert_eq!(gated.last_network_rows(), 0);
        assert_eq!(g, before);
        // Another batch through the network invalidates the frame it remembered.
        gated
            .classify_patches(&solid_patches(&[[1, 2, 3]]), 1, &mut g)
            .unwrap();
        gated.classify(&crops, &mut g).unwrap();
        assert_eq!(gated.last_network_rows(), 128);
        assert_eq!(g, f);
    }

    #[test]
    fn adaptation_pulls_predictions_toward_labelled_samples() {
        let mut c = classifier();
        // A grey-blue patch: the network alone says class 2 (blue is the largest mean).
        let query = [[90, 100, 140]];
        let mut out = Vec::new();
        c.classify_patches(&solid_patches(&query), 1, &mut out)
            .unwrap();
        let before = out[0];
        assert_eq!(argmax(&before), 2);
        // Teach it: this look is a black knight; something quite different is empty.
        c.adapt_patches(
            &solid_patches(&[[92, 100, 138], [250, 250, 10]]),
            &[SquareClass::BlackKnight, SquareClass::Empty],
        )
        .unwrap();
        assert_eq!(c.bank_sizes()[SquareClass::BlackKnight.index()], 1);
        c.classify_patches(&solid_patches(&query), 1, &mut out)
            .unwrap();
        let after = out[0];
        let bn = SquareClass::BlackKnight.index();
        assert!(after[bn] > before[bn] + 0.3, "{before:?} → {after:?}");
        assert_eq!(argmax(&after), bn);
        assert!((after.iter().sum::<f32>() - 1.0).abs() < 1e-4);
        // The network-only view is still available and unchanged.
        assert_eq!(c.network_probabilities()[0], before);
        // mix = 0 turns adaptation off.
        c.set_mixture(0.0, 0.05, 3).unwrap();
        c.classify_patches(&solid_patches(&query), 1, &mut out)
            .unwrap();
        assert_eq!(out[0], before);
    }

    #[test]
    fn fit_trusts_the_bank_when_the_network_is_wrong_on_this_set() {
        let mut c = classifier();
        // Three tight colour clusters whose labels contradict the fixture network (which reads
        // the largest channel as class 0, 1 or 2).
        let mut colours = Vec::new();
        let mut labels = Vec::new();
        for (base, label) in [
            ([200u8, 30, 30], SquareClass::BlackQueen),
            ([30, 200, 30], SquareClass::WhiteRook),
            ([30, 30, 200], SquareClass::Empty),
        ] {
            for d in 0..4u8 {
                colours.push([base[0] + d, base[1] + 2 * d, base[2] + d]);
                labels.push(label);
            }
        }
        c.adapt_patches(&solid_patches(&colours), &labels).unwrap();
        assert!(c.fit().is_some());
        let fit = c.fit().unwrap();
        assert_eq!(fit.samples, 12);
        assert_eq!(fit.network_accuracy, 0.0);
        assert_eq!(fit.loo_accuracy, 1.0);
        assert!(fit.mix >= 0.9, "{fit:?}");
        assert_eq!(c.config().mix, fit.mix);
        // And a fresh sample of the first cluster now reads as the bank says.
        let mut out = Vec::new();
        c.classify_patches(&solid_patches(&[[203, 36, 33]]), 1, &mut out)
            .unwrap();
        assert_eq!(argmax(&out[0]), SquareClass::BlackQueen.index());
        // An empty bank has nothing to fit.
        c.clear_bank();
        assert!(c.fit().is_none());
    }

    fn argmax(v: &[f32]) -> usize {
        (0..v.len()).max_by(|&a, &b| v[a].total_cmp(&v[b])).unwrap()
    }

    #[test]
    fn adapt_start_banks_all_thirteen_classes() {
        let mut c = classifier();
        let colours: Vec<[u8; 3]> = (0..128).map(|i| [i as u8, 2 * i as u8, 100]).collect();
        let crops = crops_of(&colours);
        assert_eq!(c.adapt_start(&crops).unwrap(), 128);
        let sizes = c.bank_sizes();
        // Per board 32 empties, 8 pawns, 2 knights/bishops/rooks, 1 queen/king per colour;
        // squares are distinct per board so both boards' samples count.
        assert_eq!(sizes[0], 64);
        assert_eq!(sizes[SquareClass::WhitePawn.index()], 16);
        assert_eq!(sizes[SquareClass::BlackKing.index()], 2);
        assert_eq!(sizes.iter().sum::<usize>(), 128);
        // The same start again refreshes, it does not grow.
        c.adapt_start(&crops).unwrap();
        assert_eq!(c.bank_sizes(), sizes);
    }

    /// A patch whose left and right halves differ: the fixture's feature map (its 4 × 4 grid
    /// of channel means) of the mirrored copy must be mirrored back before the two are averaged,
    /// so that mirroring leaves the features of the plain patch.
    #[test]
    fn a_mirrored_feature_map_is_mirrored_back_before_averaging() {
        let (w, h) = (48usize, 64usize);
        let mut patch = vec![0u8; w * h * 3];
        for y in 0..h {
            for x in 0..w {
                let at = (y * w + x) * 3;
                patch[at] = (x * 5) as u8; // red rises to the right
                patch[at + 1] = (y * 3) as u8;
                patch[at + 2] = 40;
            }
        }
        let mut c = classifier();
        assert_eq!(c.feature_dim(), 48);
        let mut out = Vec::new();
        c.classify_patches(&patch, 1, &mut out).unwrap();
        let mirrored = c.outputs[2].data.clone();
        c.config.mirror = false;
        c.classify_patches(&patch, 1, &mut out).unwrap();
        let plain = c.outputs[2].data.clone();
        assert_eq!(plain.len(), 48);
        for (a, b) in mirrored.iter().zip(&plain) {
            assert!((a - b).abs() < 1e-5, "{mirrored:?} against {plain:?}");
        }
        // Unit length, and the red grid rises to the right as the patch does.
        assert!((plain.iter().map(|v| v * v).sum::<f32>() - 1.0).abs() < 1e-4);
        assert!(plain[3] > plain[0]);
    }

    /// Both boards' start position as solid patches: per class its own colour, the blue
    /// varied from square to square by `step` above `base`.
    fn start_colours(step: u8, base: u8) -> Vec<[u8; 3]> {
        let start = start_labels();
        (0..128)
            .map(|i| {
                let class = start[i % 64].index() as u8;
                [20 * class, 200 - 10 * class, (i % 7) as u8 * step + base]
            })
            .collect()
    }

    /// The start position fits the table's whitening of the features; with features alone the
    /// vote then reads a patch like the start square it matches, and `shrinkage = 1` or the
    /// embedding alone fit none.
    #[test]
    fn the_start_position_fits_the_whitening_the_feature_vote_uses() {
        let colours = start_colours(3, 60);
        let crops = crops_of(&colours);
        // The fixture network reads green as a white pawn: the vote alone decides here.
        let features = ClassifierConfig {
            descriptor: Descriptor::Features,
            mix: 1.0,
            ..ClassifierConfig::default()
        };
        let mut c = SquareClassifier::from_path(&fixture(), &features).unwrap();
        c.adapt_start(&crops).unwrap();
        let w = c
            .whitening()
            .expect("the start position has within-class scatter");
        assert_eq!(w.dim(), 48);
        assert!(w.rank() >= 1);
        let knight = SquareClass::WhiteKnight.index() as u8;
        let mut out = Vec::new();
        c.classify_patches(
            &solid_patches(&[[20 * knight, 200 - 10 * knight, 64]]),
            1,
            &mut out,
        )
        .unwrap();
        assert_eq!(argmax(&out[0]), SquareClass::WhiteKnight.index());
        for config in [
            ClassifierConfig {
                shrinkage: 1.0,
                ..features.clone()
            },
            ClassifierConfig {
                descriptor: Descriptor::Embedding,
                ..ClassifierConfig::default()
            },
        ] {
            let mut c = SquareClassifier::from_path(&fixture(), &config).unwrap();
            c.adapt_start(&crops).unwrap();
            assert!(c.whitening().is_none());
        }
        // Forgetting the table forgets its whitening.
        c.clear_bank();
        assert!(c.whitening().is_none());
    }

    /// `embedding_neighbours` changes what a square reads and leaves a pocket window showing the
    /// same patch as it was.
    #[test]
    fn a_squares_embedding_vote_averages_its_own_neighbours_and_windows_keep_one() {
        let colours = start_colours(9, 40);
        // The same patch on square 20 (empty at the start) and in one pocket window after it.
        let mut query = colours.clone();
        query[20] = [30, 170, 90];
        query.push([30, 170, 90]);
        let read = |embedding_neighbours| {
            let config = ClassifierConfig {
                embedding_neighbours,
                mix: 1.0,
                ..ClassifierConfig::default()
            };
            let mut c = SquareClassifier::from_path(&fixture(), &config).unwrap();
            c.adapt_start(&crops_of(&colours)).unwrap();
            let mut out = Vec::new();
            c.classify(&crops_of(&query), &mut out).unwrap();
            (out[20], out[128])
        };
        let (square_one, window_one) = read(1);
        let (square_two, window_two) = read(2);
        let moved = |a: &[f32; 13], b: &[f32; 13]| {
            a.iter()
                .zip(b)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0, f32::max)
        };
        assert!(
            moved(&square_one, &square_two) > 1e-4,
            "{square_one:?} {square_two:?}"
        );
        assert_eq!(window_one, window_two);
    }

    #[test]
    fn bad_inputs_are_typed_errors() {
        let mut c = classifier();
        let mut crops = crops_of(&vec![[0, 0, 0]; 128]);
        crops.patch_w = 32;
        assert!(matches!(
            c.classify(&crops, &mut Vec::new()),
            Err(VisionModelError::CropSize { got_w: 32, .. })
        ));
        let crops = crops_of(&vec![[0, 0, 0]; 100]);
        assert!(matches!(
            c.classify(&crops, &mut Vec::new()),
            Err(VisionModelError::CropCount { .. })
        ));
        let crops = crops_of(&vec![[0, 0, 0]; 128]);
        assert!(matches!(
            c.confirm(&crops, &[SquareClass::Empty; 5]),
            Err(VisionModelError::LabelCount { got: 5, .. })
        ));
        assert!(matches!(
            c.classify_patches(&[0u8; 10], 1, &mut Vec::new()),
            Err(VisionModelError::CropCount { .. })
        ));
        let missing = SquareClassifier::from_path(
            Path::new("/nonexistent/squares.onnx"),
            &ClassifierConfig::default(),
        );
        assert!(matches!(
            missing,
            Err(VisionModelError::Model(ModelError::Missing(_)))
        ));
        // A model with the wrong I/O (the pocket fixture) is refused at load time.
        let pockets =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vision/pockets-fixture.onnx");
        let wrong = SquareClassifier::from_path(&pockets, &ClassifierConfig::default());
        assert!(matches!(wrong, Err(VisionModelError::WrongIo { .. })));
    }

    #[test]
    fn shapes_match_with_dynamic_dims() {
        assert!(shape_matches(&[-1, 13], &[-1, 13]));
        assert!(shape_matches(&[128, 13], &[-1, 13]));
        assert!(!shape_matches(&[128, 12], &[-1, 13]));
        assert!(!shape_matches(&[128], &[-1, 13]));
    }
}
