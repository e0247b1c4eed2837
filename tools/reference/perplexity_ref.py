#!/usr/bin/python3
"""Reference for `mnemo perplexity` (app/cli/eval/perplexity_stats.cpp), in numpy float64.

Given the logits of every position of every chunk (float32 [n_chunks * n_ctx, vocab], as
`mnemo logits` writes them for one chunk) and the token ids of those chunks (BOS already put
first), it scores positions n_ctx/2 .. n_ctx-2 of each chunk against the next token, as
llama.cpp's perplexity tool does, and reports:
  ppl, ppl_error           exp(mean NLL), exp(mean NLL) * standard error of the mean NLL
  with base logits:        KL(base || model) per position: mean, mean_error, median, p99, max
                           (quantiles by linear interpolation), same_top_pct (+ error),
                           rms_dp_pct (+ error): RMS of p_model(next) - p_base(next), in %.

  /usr/bin/python3 tools/reference/perplexity_ref.py --logits M.npy [--base-logits B.npy] \
      --ids 1,2,3,... --n-ctx N          # prints the statistics as JSON
  /usr/bin/python3 tools/reference/perplexity_ref.py --make-golden tests/data/perplexity
      # seeded synthetic logits + expected.json for tests/test_cli_perplexity.cpp
"""
import argparse
import json
import os
import sys

import numpy as np


def log_softmax(logits):
    x = logits.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - (m + np.log(np.exp(x - m).sum(axis=-1, keepdims=True)))


def scored_rows(n_chunks, n_ctx):
    """(row index into the [n_chunks*n_ctx, vocab] logits, row index of the next token)."""
    first = n_ctx // 2
    rows = []
    for c in range(n_chunks):
        for j in range(first, n_ctx - 1):
            rows.append((c * n_ctx + j, c * n_ctx + j + 1))
    return rows


def stats(model_logits, ids, n_ctx, base_logits=None):
    n_chunks = len(ids) // n_ctx
    rows = scored_rows(n_chunks, n_ctx)
    lp = log_softmax(model_logits)
    nll = np.array([-lp[r, ids[t]] for r, t in rows])
    n = len(nll)
    mean = nll.mean()
    var = (nll * nll).mean() - mean * mean
    out = {"n_ctx": n_ctx, "chunks": n_chunks, "tokens_scored": n, "mean_nll": mean, "ppl": float(np.exp(mean)),
           "ppl_error": float(np.exp(mean) * np.sqrt(var / (n - 1))) if n > 1 and var > 0 else 0.0}
    if base_logits is None:
        return out
    lb = log_softmax(base_logits)
    idx = [r for r, _ in rows]
    pb = np.exp(lb[idx])
    kl = (pb * (lb[idx] - lp[idx])).sum(axis=1)
    kl = np.maximum(kl, 0.0)
    same = np.array([np.argmax(lb[r]) == np.argmax(lp[r]) for r in idx], dtype=np.float64)
    dp = np.array([np.exp(lp[r, ids[t]]) - np.exp(lb[r, ids[t]]) for r, t in rows])
    p = same.mean()
    ms = (dp ** 2).mean()
    var4 = max(0.0, (dp ** 4).mean() - ms * ms)
    base_nll = np.array([-lb[r, ids[t]] for r, t in rows])
    out["kl"] = {
        "base_ppl": float(np.exp(base_nll.mean())),
        "mean": float(kl.mean()),
        "mean_error": float(np.sqrt(max(0.0, (kl ** 2).mean() - kl.mean() ** 2) / (n - 1))),
        "median": float(np.quantile(kl, 0.5)),
        "p99": float(np.quantile(kl, 0.99)),
        "max": float(kl.max()),
        "same_top_pct": 100.0 * p,
        "same_top_error_pct": 100.0 * float(np.sqrt(p * (1 - p) / (n - 1))),
        "rms_dp_pct": 100.0 * float(np.sqrt(ms)),
        "rms_dp_error_pct": 100.0 * float(np.sqrt(var4 / (n - 1)) / (2 * np.sqrt(ms))) if ms > 0 else 0.0,
    }
    return out


def make_golden(out_dir):
    """3 chunks of 16 tokens, vocab 50: base logits N(0, 2), the model's the base plus N(0, 0.3)
    noise (a small positive KL, some top-1 disagreement). Seeded: regenerating is byte-identical."""
    rng = np.random.default_rng(25)
    n_chunks, n_ctx, vocab = 3, 16, 50
    base = (2.0 * rng.standard_normal((n_chunks * n_ctx, vocab))).astype(np.float32)
    model = (base + 0.3 * rng.standard_normal(base.shape)).astype(np.float32)
    ids = rng.integers(0, vocab, n_chunks * n_ctx)
    ids[::n_ctx] = 1  # BOS first in each chunk
    os.makedirs(out_dir, exist_ok=True)
    np.save(os.path.join(out_dir, "logits_base.npy"), base)
    np.save(os.path.join(out_dir, "logits_model.npy"), model)
    with open(os.path.join(out_dir, "ids.txt"), "w") as f:
        f.write(",".join(str(int(i)) for i in ids) + "\n")
    with open(os.path.join(out_dir, "expected.json"), "w") as f:
        json.dump(stats(model, [int(i) for i in ids], n_ctx, base), f, indent=1, sort_keys=True)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--make-golden", metavar="DIR")
    ap.add_argument("--logits")
    ap.add_argument("--base-logits")
    ap.add_argument("--ids", help="comma-separated ids of the chunks, or @FILE")
    ap.add_argument("--n-ctx", type=int)
    a = ap.parse_args()
    if a.make_golden:
        make_golden(a.make_golden)
        return 0
    if not (a.logits and a.ids and a.n_ctx):
        ap.error("give --make-golden DIR, or --logits, --ids and --n-ctx")
    text = open(a.ids[1:]).read() if a.ids.startswith("@") else a.ids
    ids = [int(x) for x in text.replace("\n", "").split(",") if x]
    base = np.load(a.base_logits) if a.base_logits else None
    print(json.dumps(stats(np.load(a.logits), ids, a.n_ctx, base), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
