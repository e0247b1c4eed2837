#!/usr/bin/python3
"""Reproduce UltraMem fig. 1(b) / appendix B on Mnemo: generation latency and weight bytes read per
token against batch size, for a dense model, an MoE and UltraMem / UltraMemV2 at equal activated
compute and (MoE, memory models) equal total parameters. Models: bench/fig1b/make_models.py.

For each model, one `mnemo bench --json` process measures token generation at every batch size B
(B sequences decoded together; median of --reps runs of --gen steps). Latency is the time of one
decode step, B / (tokens/s).

Bytes read per token are MODELLED, not counted by hardware: a step streams every weight that is
read whole (the engine's decode_weight_bytes at B = 1 minus the rows gathered at B = 1), plus the
distinct rows / experts the B tokens select. Selections of random-weight models are close to
uniform, so the expected number of distinct items among s uniform picks from R is
R (1 - (1 - 1/R)^s) (experts: E (1 - (1 - k/E)^B), each token's k experts being distinct).
Per-token bytes are the step bytes / B.

Writes <out>.json, <out>.md and <out>.png (default docs/benchmarks/ultramem-fig1b).
Usage: run.py [--models bench-models/fig1b] [--batches 1,2,...,256] [--threads N]
              [--backend cpu|vulkan|cuda [--device I]] [--replot]
A backend other than the CPU writes docs/benchmarks/ultramem-fig1b-<backend> by default.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ORDER = ["dense", "moe", "ultramem", "ultramem_v2"]
LABEL = {"dense": "Dense", "moe": "MoE (top-2 of 16)", "ultramem": "UltraMem", "ultramem_v2": "UltraMemV2"}
F32 = 4


def expected_distinct(rows: float, picks: float) -> float:
    return rows * (1.0 - (1.0 - 1.0 / rows) ** picks) if rows > 0 else 0.0


def gathered_tables(cfg: dict) -> list:
    """(rows R, bytes per row, picks per token, label) of every table read only at selected rows,
    per layer, from the model's config.json (f32 weights)."""
    d = cfg["hidden_size"]
    tables = [(cfg["vocab_size"], d * F32, 1, "embedding")]
    t = cfg["model_type"]
    if t in ("moe", "olmoe", "mixtral"):
        e = cfg.get("num_experts", cfg.get("num_local_experts"))
        k = cfg["num_experts_per_tok"]
        expert_bytes = 3 * d * cfg["intermediate_size"] * F32
        for _ in range(cfg["num_hidden_layers"]):
            tables.append((e, expert_bytes, k, "experts"))
    elif t in ("ultramem", "ultramem_v2"):
        m = cfg["memory"] if "memory" in cfg else cfg
        tables += memory_tables(cfg, m)
    return tables


def memory_tables(cfg: dict, m: dict) -> list:
    knum, vdim, knn, heads = m["mem_knum"], m["mem_vdim"], m["mem_knn"], m["mem_head"]
    insert = m.get("mem_insert_way", "full")
    n_mem = cfg["num_hidden_layers"] if insert == "full" else len(insert.split("/"))
    picks = heads * knn
    if cfg["model_type"] == "ultramem":
        return [(knum * knum, vdim * F32, picks, "values")] * n_mem
    rows = knum * knum * n_mem
    window = int((rows * m.get("mem_share_ratio", 1.0)) ** 0.5) ** 2
    row_bytes = (vdim + m.get("mem_pre_vdim", 0)) * F32  # value row + pre-value row
    return [(window, row_bytes, picks, "values+pre-values")] * n_mem


def modelled_bytes_per_token(cfg: dict, decode_weight_bytes_b1: int, batch: int) -> float:
    tables = gathered_tables(cfg)
    # Rows the engine counted at B = 1 (every pick counted; at B = 1 picks within one layer are
    # distinct, or nearly so).
    gathered_b1 = sum(min(r, p) * rb for r, rb, p, _ in tables)
    streamed = decode_weight_bytes_b1 - gathered_b1
    if cfg["model_type"] in ("moe", "olmoe", "mixtral"):
        step = streamed + sum(
            (r * (1.0 - (1.0 - p / r) ** batch) if lbl == "experts" else expected_distinct(r, p * batch)) * rb
            for r, rb, p, lbl in tables)
    else:
        step = streamed + sum(expected_distinct(r, p * batch) * rb for r, rb, p, _ in tables)
    return step / batch


def run_model(mnemo: str, model_dir: str, batches: list, gen: int, reps: int, threads: int, backend: str,
              device: int) -> dict:
    cmd = [mnemo, "bench", "-m", model_dir, "-p", "0", "-n", str(gen), "-r", str(reps),
           "--batch", ",".join(map(str, batches)), "--backend", backend, "--device", str(device), "--json"]
    if threads:
        cmd += ["-t", str(threads)]
    print("run:", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"run: {' '.join(cmd)} failed (exit {r.returncode}):\n{r.stderr}")
    return json.loads(r.stdout)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default=os.path.join(REPO, "bench-models", "fig1b"))
    p.add_argument("--mnemo", default=os.path.join(REPO, "build", "bin", "mnemo"))
    p.add_argument("--batches", default="1,2,4,8,16,32,64,128,256")
    p.add_argument("--gen", type=int, default=8, help="decode steps per measurement")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--backend", default="cpu")
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--out", default=None, help="output stem (default docs/benchmarks/ultramem-fig1b[-<backend>])")
    p.add_argument("--replot", action="store_true", help="only rewrite <out>.md and <out>.png from <out>.json")
    a = p.parse_args()
    if a.out is None:
        stem = "ultramem-fig1b" + ("" if a.backend == "cpu" else "-" + a.backend)
        a.out = os.path.join(REPO, "docs", "benchmarks", stem)
    if a.replot:
        with open(a.out + ".json", encoding="utf-8") as f:
            result = json.load(f)
        write_markdown(result, a.out + ".md")
        plot(result, a.out + ".png")
        return
    batches = [int(b) for b in a.batches.split(",")]

    result = {"machine": {"cpu": "", "platform": platform.platform(), "backend": a.backend, "device": ""},
              "batches": batches, "models": {}}
    for name in ORDER:
        folder = os.path.join(a.models, name)
        with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
            cfg = json.load(f)
        doc = run_model(a.mnemo, folder, batches, a.gen, a.reps, a.threads, a.backend, a.device)
        result["machine"]["cpu"] = doc["build"]["cpu"]
        result["machine"]["device"] = doc["rows"][0]["device"] if doc["rows"] else ""
        m = doc["model"]
        rows = {r["batch"]: r for r in doc["rows"] if r["test"].startswith("tg")}
        entry = {"architecture": m["architecture"], "n_params": m["n_params"],
                 "activated_params": m["activated_params"], "decode_weight_bytes": m["decode_weight_bytes"],
                 "points": []}
        for b in batches:
            r = rows[b]
            entry["points"].append({
                "batch": b,
                "tokens_per_s_median": r["tps_median"],
                "step_latency_ms_median": 1000.0 * b / r["tps_median"],
                "step_latency_ms_best": 1000.0 * b / r["tps_max"],
                "modelled_bytes_per_token": modelled_bytes_per_token(cfg, m["decode_weight_bytes"], b),
            })
        result["models"][name] = entry
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out + ".json", "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    write_markdown(result, a.out + ".md")
    plot(result, a.out + ".png")
    print(f"wrote {a.out}.json, .md, .png")


def targets(result: dict) -> list:
    models = result["models"]
    lat = {n: {pt["batch"]: pt["step_latency_ms_median"] for pt in models[n]["points"]} for n in models}
    out = []
    for n in ("ultramem", "ultramem_v2"):
        ratio = lat[n][1] / lat["dense"][1]
        out.append((f"{LABEL[n]} batch-1 latency / dense <= 1.2", f"{ratio:.3f}", ratio <= 1.2))
        worse = [b for b in lat[n] if b >= 8 and not lat["moe"][b] > lat[n][b]]
        out.append((f"MoE slower than {LABEL[n]} at every batch >= 8",
                    "yes" if not worse else "no at B = " + ", ".join(map(str, worse)), not worse))
    return out


def write_markdown(result: dict, path: str) -> None:
    models = result["models"]
    mach = result["machine"]
    where = f"backend {mach['backend']} on {mach['device']}; " if mach.get("backend", "cpu") != "cpu" else ""
    lines = [f"Machine: {where}{mach['cpu']} ({mach['platform']}).", "",
             "| model | parameters | activated / token | weight bytes read at B=1 |", "|---|---:|---:|---:|"]
    for n, m in models.items():
        lines.append(f"| {LABEL[n]} | {m['n_params'] / 1e6:.1f} M | {m['activated_params'] / 1e6:.1f} M | "
                     f"{m['decode_weight_bytes'] / 2**20:.1f} MiB |")
    lines += ["", "Decode-step latency, ms (median), and modelled weight MiB read per token:", "",
              "| batch | " + " | ".join(f"{LABEL[n]} ms | MiB/tok" for n in models) + " |",
              "|---:|" + "---:|---:|" * len(models)]
    for i, b in enumerate(result["batches"]):
        cells = []
        for n in models:
            pt = models[n]["points"][i]
            cells.append(f"{pt['step_latency_ms_median']:.2f} | {pt['modelled_bytes_per_token'] / 2**20:.2f}")
        lines.append(f"| {b} | " + " | ".join(cells) + " |")
    lines += ["", "| target | measured | met |", "|---|---|---|"]
    for what, value, ok in targets(result):
        lines.append(f"| {what} | {value} | {'yes' if ok else 'NO'} |")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def plot(result: dict, path: str) -> None:
    import matplotlib
    import matplotlib.ticker
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for n, m in result["models"].items():
        b = [pt["batch"] for pt in m["points"]]
        ax1.plot(b, [pt["step_latency_ms_median"] for pt in m["points"]], marker="o", label=LABEL[n])
        ax2.plot(b, [pt["modelled_bytes_per_token"] / 2**20 for pt in m["points"]], marker="o", label=LABEL[n])
    for ax, title, ylabel in ((ax1, "Decode-step latency", "ms per step"),
                              (ax2, "Weight bytes read per token (modelled)", "MiB per token")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(result["batches"])
        ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("batch size")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.suptitle(f"Mnemo CPU backend, {result['machine']['cpu']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
