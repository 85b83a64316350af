//! Square-classifier evaluation on labelled patch sets (`tandem eval squares`).
//!
//! A set is a directory with `labels.csv` (`path,label,split`; split `adapt` or `test`; label one
//! of `empty,P,N,B,R,Q,K,p,n,b,r,q,k`; paths relative to the directory; images of any size,
//! resized to the model's patch size). The classifier starts with an empty bank, adapts on the
//! `adapt` rows, and is scored on the `test` rows, with and without adaptation from the same
//! forward pass. A directory without `labels.csv` is read as a parent of such sets ("sessions",
//! one table each): each is evaluated with its own fresh bank and the report sums them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use image::imageops::FilterType;
use serde::Serialize;

use super::classify::{MixtureFit, SquareClassifier, VisionModelError};
use super::pockets::{PocketReader, ZoneCount};
use crate::tracker::SquareClass;

/// Why an evaluation set could not be read.
#[derive(Debug, thiserror::Error)]
pub enum EvalSetError {
    #[error("{}: {reason}", path.display())]
    Io { path: PathBuf, reason: String },
    #[error("{}: line {line}: {reason}", path.display())]
    Row {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    #[error("{}: neither labels.csv nor session directories with one", .0.display())]
    NoSets(PathBuf),
    #[error("image {}: {reason}", path.display())]
    Image { path: PathBuf, reason: String },
    #[error(transparent)]
    Model(#[from] VisionModelError),
}

/// The contract's label of a class: `empty` or the FEN letter.
pub fn class_label(c: SquareClass) -> &'static str {
    const LABELS: [&str; SquareClass::COUNT] = [
        "empty", "P", "N", "B", "R", "Q", "K", "p", "n", "b", "r", "q", "k",
    ];
    LABELS[c.index()]
}

/// Parses a contract label (`empty` or a FEN letter, case-sensitive).
pub fn parse_label(text: &str) -> Option<SquareClass> {
    SquareClass::ALL
        .iter()
        .copied()
        .find(|&c| class_label(c) == text)
}

/// Whether a row adapts the classifier or tests it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    Adapt,
    Test,
}

/// A CSV file read whole: columns found by header name, rows parsed on demand with their 1-based
/// line numbers (blank lines skipped), every error naming the file and line.
struct CsvFile {
    path: PathBuf,
    header: Vec<String>,
    /// (1-based line number, raw line) of every non-blank line after the header.
    lines: Vec<(usize, String)>,
}

impl CsvFile {
    /// Reads `path`; `expected` names the header in the error for an empty file.
    fn read(path: PathBuf, expected: &str) -> Result<CsvFile, EvalSetError> {
        let text = std::fs::read_to_string(&path).map_err(|e| EvalSetError::Io {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| (i + 1, l.trim_end_matches('\r').to_string()));
        let mut csv = CsvFile {
            path,
            header: Vec::new(),
            lines: Vec::new(),
        };
        let Some((_, header)) = lines.next() else {
            return Err(csv.error(1, format!("empty file, expected the header {expected}")));
        };
        csv.header =
            csv_fields(header.trim_start_matches('\u{feff}')).map_err(|e| csv.error(1, e))?;
        csv.lines = lines.collect();
        Ok(csv)
    }

    fn error(&self, line: usize, reason: String) -> EvalSetError {
        EvalSetError::Row {
            path: self.path.clone(),
            line,
            reason,
        }
    }

    /// Index of the header column `name`.
    fn column(&self, name: &str) -> Result<usize, EvalSetError> {
        self.header
            .iter()
            .position(|h| h.trim() == name)
            .ok_or_else(|| self.error(1, format!("header lacks column `{name}`")))
    }

    /// The data rows as (line number, fields).
    fn rows(&self) -> impl Iterator<Item = Result<(usize, Vec<String>), EvalSetError>> + '_ {
        self.lines.iter().map(|(n, l)| {
            csv_fields(l)
                .map(|f| (*n, f))
                .map_err(|e| self.error(*n, e))
        })
    }

    /// Field `c` of row `fields` (line `n`), trimmed.
    fn field<'a>(&self, n: usize, fields: &'a [String], c: usize) -> Result<&'a str, EvalSetError> {
        fields.get(c).map(|s| s.trim()).ok_or_else(|| {
            self.error(
                n,
                format!("{} fields, need {}", fields.len(), self.header.len()),
            )
        })
    }
}

/// One row of `labels.csv`.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelledPatch {
    pub path: PathBuf,
    pub label: SquareClass,
    pub split: Split,
}

/// Splits one CSV line into fields (double quotes may enclose a field; `""` is a quote).
fn csv_fields(line: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    while let Some(ch) = chars.next() {
        match (quoted, ch) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (false, '"') if field.is_empty() => quoted = true,
            (false, ',') => out.push(std::mem::take(&mut field)),
            (_, c) => field.push(c),
        }
    }
    if quoted {
        return Err("unterminated quote".into());
    }
    out.push(field);
    Ok(out)
}

/// Reads `dir/labels.csv` (header `path,label,split` in any column order; extra columns ignored).
pub fn read_labels(dir: &Path) -> Result<Vec<LabelledPatch>, EvalSetError> {
    let csv = CsvFile::read(dir.join("labels.csv"), "path,label,split")?;
    let (pc, lc, sc) = (
        csv.column("path")?,
        csv.column("label")?,
        csv.column("split")?,
    );
    let mut rows = Vec::new();
    for row in csv.rows() {
        let (n, f) = row?;
        let get = |c: usize| csv.field(n, &f, c);
        let (p, l, s) = (get(pc)?, get(lc)?, get(sc)?);
        if p.is_empty() {
            return Err(csv.error(n, "empty path".into()));
        }
        let label = parse_label(l).ok_or_else(|| {
            csv.error(
                n,
                format!("unknown label `{l}` (known: empty,P,N,B,R,Q,K,p,n,b,r,q,k)"),
            )
        })?;
        let split = match s {
            "adapt" => Split::Adapt,
            "test" => Split::Test,
            other => {
                return Err(csv.error(n, format!("unknown split `{other}` (adapt or test)")));
            }
        };
        rows.push(LabelledPatch {
            path: PathBuf::from(p),
            label,
            split,
        });
    }
    Ok(rows)
}

/// Loads one image as a `w × h` RGB patch (resized with a triangle filter when needed) and
/// appends its bytes to `out`.
fn load_patch(path: &Path, w: u32, h: u32, out: &mut Vec<u8>) -> Result<(), EvalSetError> {
    let img = image::open(path)
        .map_err(|e| EvalSetError::Image {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?
        .to_rgb8();
    if img.dimensions() == (w, h) {
        out.extend_from_slice(img.as_raw());
    } else {
        let r = image::imageops::resize(&img, w, h, FilterType::Triangle);
        out.extend_from_slice(r.as_raw());
    }
    Ok(())
}

/// Floor of a probability before its log in [`SquaresReport::log_loss`] (the tracker's default
/// `probability_floor`): one hopeless reading costs at most 13.8 nats.
const LOSS_FLOOR: f32 = 1e-6;
/// A reading at least this sure of its class is a confident one
/// ([`SquaresReport::confident_errors`]).
const CONFIDENT: f32 = 0.9;

/// Right and total per class, the confusion counts (`confusion[truth][predicted]`), the summed
/// log loss and the confident misreads.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Tally {
    right: [usize; SquareClass::COUNT],
    total: [usize; SquareClass::COUNT],
    confusion: [[usize; SquareClass::COUNT]; SquareClass::COUNT],
    loss: f64,
    confident_wrong: usize,
}

impl Tally {
    pub(crate) fn add(&mut self, truth: SquareClass, probs: &[f32; SquareClass::COUNT]) {
        let pred = (0..SquareClass::COUNT)
            .max_by(|&a, &b| probs[a].total_cmp(&probs[b]))
            .unwrap_or(0);
        let t = truth.index();
        self.total[t] += 1;
        if pred == t {
            self.right[t] += 1;
        }
        self.confusion[t][pred] += 1;
        self.loss -= f64::from(probs[t].max(LOSS_FLOOR).ln());
        if pred != t && probs[pred] >= CONFIDENT {
            self.confident_wrong += 1;
        }
    }

    fn merge(&mut self, o: &Tally) {
        self.loss += o.loss;
        self.confident_wrong += o.confident_wrong;
        for c in 0..SquareClass::COUNT {
            self.right[c] += o.right[c];
            self.total[c] += o.total[c];
            for p in 0..SquareClass::COUNT {
                self.confusion[c][p] += o.confusion[c][p];
            }
        }
    }

    fn accuracy(&self) -> f64 {
        self.per_row(self.right.iter().sum::<usize>() as f64)
    }

    fn per_row(&self, x: f64) -> f64 {
        let t: usize = self.total.iter().sum();
        if t == 0 { 0.0 } else { x / t as f64 }
    }

    pub(crate) fn summary(&self) -> ReadingSummary {
        ReadingSummary {
            rows: self.total.iter().sum(),
            accuracy: self.accuracy(),
            log_loss: self.per_row(self.loss),
            confident_errors: self.per_row(self.confident_wrong as f64),
            errors: self.errors().into_iter().take(SUMMARY_ERRORS).collect(),
        }
    }

    fn per_class(&self) -> BTreeMap<String, ClassScore> {
        SquareClass::ALL
            .iter()
            .filter(|c| self.total[c.index()] > 0)
            .map(|&c| {
                let (r, t) = (self.right[c.index()], self.total[c.index()]);
                (
                    class_label(c).to_string(),
                    ClassScore {
                        test_rows: t,
                        right: r,
                        accuracy: r as f64 / t as f64,
                    },
                )
            })
            .collect()
    }

    fn errors(&self) -> Vec<Confusion> {
        let mut out = Vec::new();
        for (t, row) in self.confusion.iter().enumerate() {
            for (p, &n) in row.iter().enumerate() {
                if t != p && n > 0 {
                    out.push(Confusion {
                        truth: class_label(SquareClass::ALL[t]).to_string(),
                        predicted: class_label(SquareClass::ALL[p]).to_string(),
                        count: n,
                    });
                }
            }
        }
        out.sort_by_key(|c| std::cmp::Reverse(c.count));
        out
    }
}

/// How well a set of square readings matched the truth (see [`SquaresReport::log_loss`] and
/// [`SquaresReport::confident_errors`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ReadingSummary {
    pub rows: usize,
    pub accuracy: f64,
    pub log_loss: f64,
    pub confident_errors: f64,
    /// The most frequent misreads, at most five.
    pub errors: Vec<Confusion>,
}

/// How many confusions a [`ReadingSummary`] lists.
const SUMMARY_ERRORS: usize = 5;

/// Accuracy on one class's test rows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassScore {
    pub test_rows: usize,
    pub right: usize,
    pub accuracy: f64,
}

/// How often a true class was read as another.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Confusion {
    pub truth: String,
    pub predicted: String,
    pub count: usize,
}

/// One set's (session's) figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionScore {
    pub dir: String,
    pub adapt_rows: usize,
    pub test_rows: usize,
    pub accuracy: f64,
    pub accuracy_without_adaptation: f64,
    /// The mixture used for this session (fitted on its adapt rows when configured).
    pub mix: f32,
    pub temperature: f32,
    /// Leave-one-out figures of the fit on the adapt rows, when fitted.
    pub fit: Option<MixtureFit>,
}

/// The report of `tandem eval squares`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SquaresReport {
    pub dataset: String,
    pub model: String,
    pub sessions: usize,
    pub adapt_rows: usize,
    pub test_rows: usize,
    /// After adaptation on the `adapt` rows (per session).
    pub accuracy: f64,
    pub per_class: BTreeMap<String, ClassScore>,
    /// Mean negative log-probability of the true class after adaptation (nats per test row,
    /// probabilities floored at 1e-6 as the tracker floors them): what the tracker pays for the
    /// readings, which accuracy does not see (a sure misread costs more than an unsure one).
    pub log_loss: f64,
    /// Share of test rows read as another class with probability ≥ 0.9 after adaptation: the
    /// misreads the tracker cannot outvote.
    pub confident_errors: f64,
    /// The network alone on the same rows.
    pub accuracy_without_adaptation: f64,
    pub log_loss_without_adaptation: f64,
    pub per_class_without_adaptation: BTreeMap<String, ClassScore>,
    /// Misreads after adaptation, most frequent first.
    pub errors: Vec<Confusion>,
    pub per_session: Vec<SessionScore>,
    /// Mixture settings configured (see `ClassifierConfig`; with `fit_mixture` each session
    /// fits its own `mix` and `temperature`, listed in `per_session`).
    pub mix: f32,
    pub temperature: f32,
    pub neighbours: usize,
    pub embedding_neighbours: usize,
    pub fit_mixture: bool,
}

/// The set directories under `dir`: `dir` itself if it has `labels.csv`, else its immediate
/// subdirectories that have one (sorted).
pub fn sets_under(dir: &Path) -> Result<Vec<PathBuf>, EvalSetError> {
    if dir.join("labels.csv").is_file() {
        return Ok(vec![dir.to_path_buf()]);
    }
    let entries = std::fs::read_dir(dir).map_err(|e| EvalSetError::Io {
        path: dir.to_path_buf(),
        reason: e.to_string(),
    })?;
    let mut sets: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("labels.csv").is_file())
        .collect();
    sets.sort();
    if sets.is_empty() {
        return Err(EvalSetError::NoSets(dir.to_path_buf()));
    }
    Ok(sets)
}

/// Rows per forward pass when scoring (the run-time batch is 128 as well).
const BATCH: usize = 128;

/// Evaluates `classifier` on every set under `dir` (see the module doc). The classifier's bank
/// is cleared before each set and left holding the last set's samples.
pub fn evaluate_squares(
    classifier: &mut SquareClassifier,
    dir: &Path,
) -> Result<SquaresReport, EvalSetError> {
    let sets = sets_under(dir)?;
    // Read every labels.csv first so that a malformed file fails before any inference.
    let mut all = Vec::with_capacity(sets.len());
    for set in &sets {
        all.push((set.clone(), read_labels(set)?));
    }
    let (w, h) = classifier.patch_size();
    let mut adapted = Tally::default();
    let mut plain = Tally::default();
    let mut per_session = Vec::new();
    let (mut adapt_rows, mut test_rows) = (0, 0);
    let mut patches = Vec::new();
    let mut probs = Vec::new();
    let configured = classifier.config().clone();
    for (set, rows) in &all {
        classifier.clear_bank();
        classifier.set_mixture(
            configured.mix,
            configured.temperature,
            configured.neighbours,
        )?;
        let (adapt, test): (Vec<&LabelledPatch>, Vec<&LabelledPatch>) =
            rows.iter().partition(|r| r.split == Split::Adapt);
        for chunk in adapt.chunks(BATCH) {
            patches.clear();
            for r in chunk {
                load_patch(&set.join(&r.path), w, h, &mut patches)?;
            }
            let labels: Vec<SquareClass> = chunk.iter().map(|r| r.label).collect();
            classifier.adapt_patches(&patches, &labels)?;
        }
        let fit = classifier.refit_if_configured();
        let (mut a, mut p) = (Tally::default(), Tally::default());
        for chunk in test.chunks(BATCH) {
            patches.clear();
            for r in chunk {
                load_patch(&set.join(&r.path), w, h, &mut patches)?;
            }
            classifier.classify_patches(&patches, chunk.len(), &mut probs)?;
            for (i, r) in chunk.iter().enumerate() {
                a.add(r.label, &probs[i]);
                p.add(r.label, &classifier.network_probabilities()[i]);
            }
        }
        per_session.push(SessionScore {
            dir: set.display().to_string(),
            adapt_rows: adapt.len(),
            test_rows: test.len(),
            accuracy: a.accuracy(),
            accuracy_without_adaptation: p.accuracy(),
            mix: classifier.config().mix,
            temperature: classifier.config().temperature,
            fit,
        });
        adapt_rows += adapt.len();
        test_rows += test.len();
        adapted.merge(&a);
        plain.merge(&p);
    }
    let cfg = &configured;
    let summary = adapted.summary();
    Ok(SquaresReport {
        dataset: dir.display().to_string(),
        model: cfg
            .model
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        sessions: all.len(),
        adapt_rows,
        test_rows,
        accuracy: adapted.accuracy(),
        per_class: adapted.per_class(),
        log_loss: summary.log_loss,
        confident_errors: summary.confident_errors,
        accuracy_without_adaptation: plain.accuracy(),
        log_loss_without_adaptation: plain.summary().log_loss,
        per_class_without_adaptation: plain.per_class(),
        errors: adapted.errors(),
        per_session,
        mix: cfg.mix,
        temperature: cfg.temperature,
        neighbours: cfg.neighbours,
        embedding_neighbours: cfg.embedding_neighbours,
        fit_mixture: cfg.fit_mixture,
    })
}

/// The report of `tandem eval pockets`: every row of every `pockets.csv` (no adaptation).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PocketsReport {
    pub dataset: String,
    pub sessions: usize,
    pub pockets: usize,
    /// Pockets with all five role counts right.
    pub exact: usize,
    pub exact_fraction: f64,
    /// Per role (`P N B R Q`): fraction of pockets with that role's count right.
    pub per_role: BTreeMap<String, f64>,
}

/// Reads `dir/pockets.csv` (`path,P,N,B,R,Q,split`): (path, counts).
pub fn read_pocket_labels(dir: &Path) -> Result<Vec<(PathBuf, [u8; 5])>, EvalSetError> {
    let csv = CsvFile::read(dir.join("pockets.csv"), "path,P,N,B,R,Q,split")?;
    let col = |name: &str| csv.column(name);
    let pc = col("path")?;
    let roles = [col("P")?, col("N")?, col("B")?, col("R")?, col("Q")?];
    let mut rows = Vec::new();
    for row in csv.rows() {
        let (n, f) = row?;
        let get = |c: usize| csv.field(n, &f, c);
        let mut counts = [0u8; 5];
        for (k, &c) in roles.iter().enumerate() {
            let v = get(c)?;
            counts[k] = v
                .parse::<u8>()
                .ok()
                .filter(|&x| x <= 8)
                .ok_or_else(|| csv.error(n, format!("count `{v}` is not 0..=8")))?;
        }
        rows.push((PathBuf::from(get(pc)?), counts));
    }
    Ok(rows)
}

/// Evaluates `reader` on every `pockets.csv` under `dir` (a session or a parent of sessions).
pub fn evaluate_pockets(
    reader: &mut PocketReader,
    dir: &Path,
) -> Result<PocketsReport, EvalSetError> {
    let mut sets: Vec<PathBuf> = if dir.join("pockets.csv").is_file() {
        vec![dir.to_path_buf()]
    } else {
        std::fs::read_dir(dir)
            .map_err(|e| EvalSetError::Io {
                path: dir.to_path_buf(),
                reason: e.to_string(),
            })?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join("pockets.csv").is_file())
            .collect()
    };
    sets.sort();
    if sets.is_empty() {
        return Err(EvalSetError::NoSets(dir.to_path_buf()));
    }
    let (w, h) = reader.patch_size();
    let (mut pockets, mut exact, mut role_right) = (0usize, 0usize, [0usize; 5]);
    let mut patches = Vec::new();
    for set in &sets {
        let rows = read_pocket_labels(set)?;
        for chunk in rows.chunks(16) {
            patches.clear();
            for (p, _) in chunk {
                load_patch(&set.join(p), w, h, &mut patches)?;
            }
            let mut zones = vec![ZoneCount::default(); chunk.len()];
            reader.read_patches(&patches, &mut zones)?;
            for ((_, truth), z) in chunk.iter().zip(&zones) {
                pockets += 1;
                exact += usize::from(z.counts == *truth);
                for r in 0..5 {
                    role_right[r] += usize::from(z.counts[r] == truth[r]);
                }
            }
        }
    }
    let frac = |n: usize| {
        if pockets == 0 {
            0.0
        } else {
            n as f64 / pockets as f64
        }
    };
    Ok(PocketsReport {
        dataset: dir.display().to_string(),
        sessions: sets.len(),
        pockets,
        exact,
        exact_fraction: frac(exact),
        per_role: ["P", "N", "B", "R", "Q"]
            .iter()
            .zip(role_right)
            .map(|(r, n)| (r.to_string(), frac(n)))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vision::classify::ClassifierConfig;
    use image::{Rgb, RgbImage};

    #[test]
    fn pocket_counts_are_scored_exactly() {
        // The pocket fixture reads 8 for role r when channel r % 3 is bright, else 0.
        let d = tempfile::tempdir().unwrap();
        RgbImage::from_pixel(96, 128, Rgb([250, 0, 0]))
            .save(d.path().join("red.png"))
            .unwrap();
        RgbImage::from_pixel(50, 50, Rgb([0, 0, 0]))
            .save(d.path().join("black.png"))
            .unwrap();
        write(
            d.path(),
            "pockets.csv",
            "path,P,N,B,R,Q,split\nred.png,8,0,0,8,0,test\nblack.png,0,0,0,0,1,test\n",
        );
        let fixture =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vision/pockets-fixture.onnx");
        let mut reader =
            PocketReader::from_path(&fixture, &crate::vision::PocketConfig::default()).unwrap();
        let r = evaluate_pockets(&mut reader, d.path()).unwrap();
        assert_eq!((r.pockets, r.exact), (2, 1));
        assert_eq!(r.per_role["P"], 1.0);
        assert_eq!(r.per_role["Q"], 0.5);
        write(
            d.path(),
            "pockets.csv",
            "path,P,N,B,R,Q,split\nred.png,9,0,0,8,0,test\n",
        );
        let e = evaluate_pockets(&mut reader, d.path())
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("0..=8"), "{e}");
    }

    #[test]
    fn a_sure_misread_costs_more_than_an_unsure_one_and_counts_as_confident() {
        let reading = |class: SquareClass, p: f32| {
            let mut v = [(1.0 - p) / 12.0; SquareClass::COUNT];
            v[class.index()] = p;
            v
        };
        let mut t = Tally::default();
        t.add(SquareClass::Empty, &reading(SquareClass::Empty, 0.8));
        t.add(SquareClass::Empty, &reading(SquareClass::WhitePawn, 0.6));
        t.add(SquareClass::Empty, &reading(SquareClass::WhitePawn, 0.95));
        let s = t.summary();
        assert!((s.confident_errors - 1.0 / 3.0).abs() < 1e-9);
        let expected = -(0.8f64.ln() + (0.4f64 / 12.0).ln() + (0.05f64 / 12.0).ln()) / 3.0;
        assert!((s.log_loss - expected).abs() < 1e-5, "{}", s.log_loss);
        assert_eq!(s.rows, 3);
        assert_eq!(s.errors.len(), 1, "{:?}", s.errors);
        assert_eq!(
            (s.errors[0].truth.as_str(), s.errors[0].count),
            ("empty", 2)
        );
        assert!((s.accuracy - 1.0 / 3.0).abs() < 1e-9);
    }

    #[test]
    fn labels_round_trip() {
        for c in SquareClass::ALL {
            assert_eq!(parse_label(class_label(c)), Some(c));
        }
        assert_eq!(parse_label("x"), None);
        assert_eq!(parse_label("Empty"), None);
    }

    #[test]
    fn csv_fields_handle_quotes() {
        assert_eq!(csv_fields("a,b,c").unwrap(), vec!["a", "b", "c"]);
        assert_eq!(
            csv_fields("\"x,y.png\",K,test").unwrap(),
            vec!["x,y.png", "K", "test"]
        );
        assert_eq!(csv_fields("\"a\"\"b\",,").unwrap(), vec!["a\"b", "", ""]);
        assert!(csv_fields("\"open,K,test").is_err());
    }

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::write(dir.join(name), text).unwrap();
    }

    #[test]
    fn malformed_rows_name_the_line() {
        let d = tempfile::tempdir().unwrap();
        write(
            d.path(),
            "labels.csv",
            "path,label,split\na.png,K,test\nb.png,X,test\n",
        );
        let e = read_labels(d.path()).unwrap_err().to_string();
        assert!(
            e.contains("line 3") && e.contains("unknown label `X`"),
            "{e}"
        );
        write(d.path(), "labels.csv", "path,label,split\na.png,K,train\n");
        let e = read_labels(d.path()).unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("unknown split"), "{e}");
        write(d.path(), "labels.csv", "path,label,split\na.png,K\n");
        let e = read_labels(d.path()).unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("fields"), "{e}");
        write(d.path(), "labels.csv", "file,label,split\n");
        let e = read_labels(d.path()).unwrap_err().to_string();
        assert!(e.contains("`path`"), "{e}");
        // Column order is free, extra columns are ignored, CRLF is fine.
        write(
            d.path(),
            "labels.csv",
            "split,extra,label,path\r\nadapt,1,empty,x.png\r\n\r\ntest,2,q,y.png\r\n",
        );
        let rows = read_labels(d.path()).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].label, SquareClass::BlackQueen);
        assert_eq!(rows[1].path, PathBuf::from("y.png"));
        assert_eq!(rows[0].split, Split::Adapt);
    }

    #[test]
    fn missing_dataset_and_corrupt_images_are_errors() {
        let d = tempfile::tempdir().unwrap();
        assert!(matches!(sets_under(d.path()), Err(EvalSetError::NoSets(_))));
        let fixture =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vision/squares-fixture.onnx");
        let mut c = SquareClassifier::from_path(&fixture, &ClassifierConfig::default()).unwrap();
        write(d.path(), "labels.csv", "path,label,split\nbad.png,K,test\n");
        write(d.path(), "bad.png", "not a png");
        let e = evaluate_squares(&mut c, d.path()).unwrap_err().to_string();
        assert!(e.contains("bad.png"), "{e}");
    }

    /// Solid-colour patches of different sizes; the fixture network reads the largest channel
    /// (empty ← red, P ← green, N ← blue), so the no-adaptation score is computable by hand,
    /// and adaptation on the `adapt` rows must fix a class the network gets wrong.
    #[test]
    fn scores_with_and_without_adaptation() {
        let root = tempfile::tempdir().unwrap();
        let d = root.path().join("s1");
        std::fs::create_dir(&d).unwrap();
        let solid = |name: &str, rgb: [u8; 3], w: u32, h: u32| {
            RgbImage::from_pixel(w, h, Rgb(rgb))
                .save(d.join(name))
                .unwrap();
        };
        solid("red.png", [200, 20, 20], 48, 64);
        solid("green.png", [20, 200, 20], 30, 30);
        solid("yellowish.png", [210, 190, 30], 100, 80);
        solid("yellowish2.png", [205, 195, 25], 48, 64);
        write(
            &d,
            "labels.csv",
            "path,label,split\n\
             red.png,empty,adapt\ngreen.png,P,adapt\nyellowish.png,k,adapt\n\
             red.png,empty,test\ngreen.png,P,test\nyellowish2.png,k,test\n",
        );
        let fixture =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vision/squares-fixture.onnx");
        let config = ClassifierConfig {
            fit_mixture: false,
            ..ClassifierConfig::default()
        };
        let mut c = SquareClassifier::from_path(&fixture, &config).unwrap();
        // The parent directory is read as a set of sessions.
        let r = evaluate_squares(&mut c, root.path()).unwrap();
        assert_eq!(r.sessions, 1);
        assert_eq!((r.adapt_rows, r.test_rows), (3, 3));
        // The network reads yellowish as empty (red largest): 2 of 3 without adaptation.
        assert!((r.accuracy_without_adaptation - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!(r.per_class_without_adaptation["k"].right, 0);
        // The network's misread costs more than the adapted readings, which cost something.
        assert!(r.log_loss_without_adaptation > r.log_loss, "{r:?}");
        assert!(r.log_loss > 0.0 && r.log_loss.is_finite());
        // With the adapt rows, the nearest sample of yellowish2 is the labelled yellowish: k.
        assert_eq!(r.accuracy, 1.0);
        assert_eq!(r.per_class["k"].accuracy, 1.0);
        assert!(r.errors.is_empty());
        assert_eq!(r.per_session.len(), 1);
    }
}
