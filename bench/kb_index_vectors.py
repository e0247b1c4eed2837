#!/usr/bin/python3
"""Synthetic retrieval vectors for mnemo-kb-index-bench (bench/kb_index.cpp), fitted to a bank's
real ones so that recall figures mean something: random isotropic vectors make every neighbour
about as near as any other, which no model's retrieval vectors do.

  kb_index_vectors.py VECTORS.f32 DIM KIND N OUT.f32 [QUERIES]

KIND: gauss    one Gaussian with the real vectors' mean and full covariance (as anisotropic as
               they are, without their clusters: the hard case for IVF);
      mixture  64 Gaussians fitted by k-means (shrunk covariances): closer to real data;
      random   isotropic (the worst case).
Writes N unit vectors to OUT.f32 and QUERIES (default 200) more, drawn separately, to
OUT-q.f32. Needs numpy and faiss (Debian's python3-numpy, python3-faiss)."""
import sys

import faiss
import numpy as np


def fitted(real, n, kind, seed):
    d = real.shape[1]
    rng = np.random.default_rng(seed)
    if kind == "random":
        x = rng.standard_normal((n, d))
    elif kind == "gauss":
        chol = np.linalg.cholesky(np.cov(real.T) + 1e-6 * np.eye(d))
        x = real.mean(0) + rng.standard_normal((n, d)) @ chol.T
    elif kind == "mixture":
        km = faiss.Kmeans(d, 64, niter=20, seed=1)
        km.train(real)
        _, assign = km.index.search(real, 1)
        assign = assign[:, 0]
        parts, weights = [], []
        for c in range(64):
            members = real[assign == c]
            cov = np.cov(members.T) if len(members) > 2 else np.zeros((d, d))
            cov = 0.7 * cov + 0.3 * np.eye(d) * max(np.trace(cov) / d, 1e-4)
            mean = members.mean(0) if len(members) else km.centroids[c]
            parts.append((mean, np.linalg.cholesky(cov + 1e-6 * np.eye(d))))
            weights.append(len(members))
        w = np.array(weights, float) / sum(weights)
        label = rng.choice(64, n, p=w)
        x = np.empty((n, d))
        for c in range(64):
            idx = np.where(label == c)[0]
            x[idx] = parts[c][0] + rng.standard_normal((len(idx), d)) @ parts[c][1].T
    else:
        raise SystemExit(f"unknown KIND {kind!r} (gauss, mixture, random)")
    x = x.astype("float32")
    faiss.normalize_L2(x)
    return x


def main():
    if len(sys.argv) < 6:
        raise SystemExit(__doc__)
    src, dim, kind, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(float(sys.argv[4])), sys.argv[5]
    queries = int(sys.argv[6]) if len(sys.argv) > 6 else 200
    real = np.fromfile(src, dtype="<f4").reshape(-1, dim)
    fitted(real, n, kind, 1).astype("<f4").tofile(out)
    fitted(real, queries, kind, 2).astype("<f4").tofile(out[:-4] + "-q.f32" if out.endswith(".f32") else out + "-q")


if __name__ == "__main__":
    main()
