//! Within-class whitening of the square descriptors, fitted on one table's labelled samples.
//!
//! On a piece set the network never saw, the directions in which crops of one class differ from
//! each other (where on the board the square is, light or dark square, the light) are as large as
//! the directions that separate the classes. The start position labels 128 crops of this very
//! table, so the within-class scatter `S_w` of their descriptors can be measured and divided out
//! before the nearest-neighbour vote: similarities are cosines of `S^{-1/2} x`, with
//! `S = (1 − λ) S_w + λ·t·I` (`t` the mean variance, `λ` the shrinkage) so that the few samples
//! only bend the metric and never make it singular. Measured in `docs/classifier.md`
//! ("Whitened features").
//!
//! With `n` samples of dimension `d` (128 against 1152), `S_w` has rank below `n`, and `S^{-1/2}`
//! is `a^{-1/2}·(I + U·diag(g)·Uᵀ)` for the `r < n` eigenvectors `U` of `S_w`: it is fitted from
//! the `n × n` Gram matrix of the class-centred samples and applied in `O(r·d)`.

use super::classify::dot;

/// `x ↦ x + U·diag(gain)·Uᵀx` (the common factor `a^{-1/2}` dropped: cosines ignore it).
///
/// Invariant: the rows of `basis` are orthonormal, `gain.len()` rows of length `dim`.
#[derive(Debug, Clone, PartialEq)]
pub struct Whitening {
    dim: usize,
    basis: Vec<f32>,
    gain: Vec<f32>,
}

/// Eigenvalues below this share of the largest are treated as zero (the Gram matrix is summed
/// in `f32`: its null space comes out at about 1e-7 of the largest).
const RANK_TOLERANCE: f64 = 1e-5;

impl Whitening {
    /// Fits the whitening on `rows` (`labels.len()` descriptors of `dim` floats each) labelled
    /// by `labels` (any class ids), with shrinkage `shrink` in `(0, 1)`. `None` when no class has
    /// two samples (no within-class scatter to measure) or the inputs disagree in size.
    pub fn fit(rows: &[f32], labels: &[usize], dim: usize, shrink: f32) -> Option<Whitening> {
        let n = labels.len();
        if dim == 0 || n < 2 || rows.len() != n * dim || !(shrink > 0.0 && shrink < 1.0) {
            return None;
        }
        // Class-centred samples.
        let mut centred = rows.to_vec();
        let classes = labels.iter().copied().max().unwrap_or(0) + 1;
        let mut mean = vec![0.0f32; classes * dim];
        let mut count = vec![0usize; classes];
        for (row, &c) in centred.chunks_exact(dim).zip(labels) {
            count[c] += 1;
            for (m, v) in mean[c * dim..(c + 1) * dim].iter_mut().zip(row) {
                *m += v;
            }
        }
        for (c, &k) in count.iter().enumerate() {
            if k > 0 {
                mean[c * dim..(c + 1) * dim]
                    .iter_mut()
                    .for_each(|m| *m /= k as f32);
            }
        }
        for (row, &c) in centred.chunks_exact_mut(dim).zip(labels) {
            for (v, m) in row.iter_mut().zip(&mean[c * dim..(c + 1) * dim]) {
                *v -= m;
            }
        }
        // Gram matrix K = Xc Xcᵀ; S_w = Xcᵀ Xc / n shares its non-zero eigenvalues / n.
        let mut gram = vec![0.0f64; n * n];
        for i in 0..n {
            let a = &centred[i * dim..(i + 1) * dim];
            for j in 0..=i {
                let v = f64::from(dot(a, &centred[j * dim..(j + 1) * dim]));
                gram[i * n + j] = v;
                gram[j * n + i] = v;
            }
        }
        let trace: f64 = (0..n).map(|i| gram[i * n + i]).sum();
        if trace <= 0.0 {
            return None;
        }
        let (values, vectors) = symmetric_eigen(&gram, n);
        let largest = values.iter().copied().fold(0.0, f64::max);
        let lambda = f64::from(shrink);
        // a = λ·t with t = trace(S_w) / d.
        let a = lambda * trace / (n as f64 * dim as f64);
        let mut basis = Vec::new();
        let mut gain = Vec::new();
        for (k, &mu) in values.iter().enumerate() {
            if mu <= RANK_TOLERANCE * largest {
                continue;
            }
            // u = Xcᵀ v / √μ is a unit eigenvector of S_w with eigenvalue μ / n.
            let scale = 1.0 / mu.sqrt();
            let at = basis.len();
            basis.resize(at + dim, 0.0f32);
            let u = &mut basis[at..];
            for i in 0..n {
                let w = (vectors[i * n + k] * scale) as f32;
                for (ud, x) in u.iter_mut().zip(&centred[i * dim..(i + 1) * dim]) {
                    *ud += w * x;
                }
            }
            let s = (1.0 - lambda) * mu / n as f64 + a;
            // (s^{-1/2} − a^{-1/2}) / a^{-1/2}
            gain.push(((a / s).sqrt() - 1.0) as f32);
        }
        Some(Whitening { dim, basis, gain })
    }

    /// Descriptor dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Directions the whitening rescales (the rank of the measured scatter).
    pub fn rank(&self) -> usize {
        self.gain.len()
    }

    /// Writes the whitened `x` into `out` (both `dim` long; not normalised).
    pub fn apply(&self, x: &[f32], out: &mut [f32]) {
        out.copy_from_slice(x);
        for (u, &g) in self.basis.chunks_exact(self.dim).zip(&self.gain) {
            let c = dot(u, x) * g;
            for (o, &b) in out.iter_mut().zip(u) {
                *o += c * b;
            }
        }
    }
}

/// Eigenvalues and eigenvectors (column `k` of the row-major `n × n` result) of the symmetric
/// row-major matrix `a` (Householder tridiagonalisation and implicit QL, `nalgebra`).
fn symmetric_eigen(a: &[f64], n: usize) -> (Vec<f64>, Vec<f64>) {
    let eigen = nalgebra::DMatrix::from_row_slice(n, n, a).symmetric_eigen();
    let mut vectors = vec![0.0f64; n * n];
    for i in 0..n {
        for k in 0..n {
            vectors[i * n + k] = eigen.eigenvectors[(i, k)];
        }
    }
    (eigen.eigenvalues.iter().copied().collect(), vectors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_eigen_decomposition_recovers_a_known_spectrum() {
        // A = Q diag(5, 2, 0.5) Qᵀ for a rotation Q.
        let (c, s) = (0.8f64, 0.6f64);
        let q = [c, -s, 0.0, s, c, 0.0, 0.0, 0.0, 1.0];
        let d = [5.0, 2.0, 0.5];
        let mut a = vec![0.0; 9];
        for i in 0..3 {
            for j in 0..3 {
                a[i * 3 + j] = (0..3).map(|k| q[i * 3 + k] * d[k] * q[j * 3 + k]).sum();
            }
        }
        let (values, vectors) = symmetric_eigen(&a, 3);
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        for (got, want) in sorted.iter().zip([0.5, 2.0, 5.0]) {
            assert!((got - want).abs() < 1e-9, "{sorted:?}");
        }
        // A v = λ v for every column.
        for k in 0..3 {
            for i in 0..3 {
                let av: f64 = (0..3).map(|j| a[i * 3 + j] * vectors[j * 3 + k]).sum();
                assert!((av - values[k] * vectors[i * 3 + k]).abs() < 1e-9);
            }
        }
    }

    /// Two classes spread along a nuisance axis (x) and apart along a weaker one (y): a query
    /// halfway along the nuisance axis is nearer the wrong class by plain cosine, nearer its own
    /// once the nuisance is divided out.
    #[test]
    fn whitening_discounts_the_direction_classes_vary_in() {
        let mut rows = Vec::new();
        let mut labels = Vec::new();
        for k in 0..8 {
            let x = -1.0 + k as f32 * 2.0 / 7.0;
            rows.extend([x, 1.0, 0.3]);
            labels.push(0);
            rows.extend([x, 1.0, -0.3]);
            labels.push(1);
        }
        let w = Whitening::fit(&rows, &labels, 3, 0.3).expect("a scatter to fit");
        assert!(w.rank() >= 1);
        let cos = |a: &[f32], b: &[f32]| {
            let d: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
            d / (a.iter().map(|x| x * x).sum::<f32>().sqrt()
                * b.iter().map(|x| x * x).sum::<f32>().sqrt())
        };
        // Class 0 sample at x = 1, class 1 sample at x = 0; the query is class 0 at x = 0.
        let (s0, s1, q) = ([1.0, 1.0, 0.3], [0.0, 1.0, -0.3], [0.0, 1.0, 0.25]);
        assert!(
            cos(&q, &s1) > cos(&q, &s0),
            "plain cosine prefers the wrong class"
        );
        let white = |x: &[f32]| {
            let mut o = [0.0; 3];
            w.apply(x, &mut o);
            o
        };
        assert!(cos(&white(&q), &white(&s0)) > cos(&white(&q), &white(&s1)));
    }

    #[test]
    fn no_scatter_no_whitening() {
        // One sample per class: nothing varies within a class.
        assert!(Whitening::fit(&[1.0, 0.0, 0.0, 1.0], &[0, 1], 2, 0.5).is_none());
        // Sizes that disagree, or a shrinkage outside (0, 1).
        assert!(Whitening::fit(&[1.0, 0.0, 0.0], &[0, 0], 2, 0.5).is_none());
        assert!(Whitening::fit(&[1.0, 0.0, 0.5, 0.0], &[0, 0], 2, 1.0).is_none());
    }
}
