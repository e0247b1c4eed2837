#!/usr/bin/python3
"""Build throughput and peak RSS of `mnemo-kb build` against the corpus size (docs/benchmarks.md,
"Build throughput"). For each size N: a synthetic corpus of N one-paragraph documents (one
reference each, words drawn by a seeded generator, so the same N gives the same corpus on every
run), then `mnemo-kb build` under /usr/bin/time -v. Prints one row per size (references, tokens,
seconds, references/s, peak RSS, the stages' seconds) and writes them as JSON.

    bench/kb/build_scaling.py --model assets/default-model --sizes 1000,10000,100000 \\
        --factory OPQ8_32,Residual2x10,PQ4x8 --codec-sample 40000 --segment-records 4096

With a fixed --codec-sample the codec's training costs the same at every size above it, so
time should grow linearly with N and peak RSS stay flat (one batch, the sample, one segment, and
the corpus's token ids, ~4 bytes per token). --mnemo-kb names the program (default
build/bin/mnemo-kb); --work the scratch folder (corpora and banks, removed after each size unless
--keep). Any option after `--` goes to `mnemo-kb build` as it is.
"""

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def syllable_words(count, seed):
    """`count` distinct pseudo-words of 2-4 syllables: a vocabulary a BPE/SentencePiece tokenizer
    cuts into several pieces, as real text is."""
    rng = random.Random(seed)
    onsets = ["b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "st", "tr", "pl", "gr"]
    vowels = ["a", "e", "i", "o", "u", "ai", "ou"]
    words = set()
    while len(words) < count:
        words.add("".join(rng.choice(onsets) + rng.choice(vowels) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def write_corpus(path, n, words_per_reference, seed):
    """n documents of one paragraph each (one reference each while a paragraph stays below the
    model's reference_length tokens; the build reports the references it cut)."""
    vocab = syllable_words(400, seed)
    rng = random.Random(seed + n)
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            text = " ".join(rng.choice(vocab) for _ in range(words_per_reference)) + "."
            f.write(json.dumps({"id": "doc%07d" % i, "text": text, "source": "synthetic/%d" % (i % 100)}) + "\n")


def parse_time_v(stderr):
    """Peak RSS (KiB) and wall seconds from /usr/bin/time -v."""
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr)
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", stderr)
    if not rss or not wall:
        raise RuntimeError("no /usr/bin/time -v figures in:\n" + stderr[-2000:])
    h, m, s = wall.groups()
    return int(rss.group(1)), int(h or 0) * 3600 + int(m) * 60 + float(s)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="the Memory3 model folder (with a tokenizer)")
    p.add_argument("--sizes", default="1000,10000,100000", help="corpus sizes N (documents of one reference)")
    p.add_argument("--mnemo-kb", default=os.path.join(ROOT, "build", "bin", "mnemo-kb"))
    p.add_argument("--work", default="/tmp/mnemo-kb-build-scaling")
    p.add_argument("--words-per-reference", type=int, default=40)
    p.add_argument("--seed", type=int, default=30)
    p.add_argument("--factory", default="", help="both codecs' factory (default: mnemo-kb's)")
    p.add_argument("--codec-sample", type=int, default=0, help="0: mnemo-kb's default")
    p.add_argument("--segment-records", type=int, default=0, help="0: mnemo-kb's default (65536)")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--opq-iterations", type=int, default=0)
    p.add_argument("--kmeans-iterations", type=int, default=0)
    p.add_argument("--json-out", default="", help="write the rows here too")
    p.add_argument("--keep", action="store_true", help="keep each size's corpus and bank")
    args, extra = p.parse_known_args()
    extra = [a for a in extra if a != "--"]

    os.makedirs(args.work, exist_ok=True)
    rows = []
    print("%9s %10s %9s %10s %12s %14s %10s %9s %8s %8s %8s" % ("N", "tokens", "seconds", "refs/s", "peak RSS MiB", "before publish", "memorize",
                                                                "train", "write", "encode", "index"))
    for n in [int(x) for x in args.sizes.split(",")]:
        corpus = os.path.join(args.work, "corpus-%d.jsonl" % n)
        bank = os.path.join(args.work, "bank-%d" % n)
        write_corpus(corpus, n, args.words_per_reference, args.seed)
        shutil.rmtree(bank, ignore_errors=True)
        cmd = ["/usr/bin/time", "-v", args.mnemo_kb, "build", corpus, "-m", args.model, "-o", bank, "--json", "--batch", str(args.batch)]
        for flag, value in (("--factory", args.factory), ("--codec-sample", args.codec_sample), ("--segment-records", args.segment_records),
                            ("--threads", args.threads), ("--opq-iterations", args.opq_iterations),
                            ("--kmeans-iterations", args.kmeans_iterations)):
            if value:
                cmd += [flag, str(value)]
        cmd += extra
        t0 = time.time()
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            sys.stderr.write(run.stderr[-4000:])
            sys.exit("mnemo-kb build failed for N = %d (exit %d)" % (n, run.returncode))
        rss_kib, wall = parse_time_v(run.stderr)
        report = json.loads(run.stdout.strip().splitlines()[-1])
        secs = report["seconds"]
        row = {"n": n, "references": report["references"], "tokens": report["tokens"], "seconds": round(wall, 2),
               "references_per_second": round(report["references"] / wall, 1), "peak_rss_mib": round(rss_kib / 1024, 1),
               "memorize_s": round(secs["memorize"], 2), "train_s": round(secs["train"], 2), "write_s": round(secs["write"], 2),
               "encode_s": round(secs.get("encode", 0), 2), "segments": report.get("segments_written"),
               "rss_before_publish_mib": round(report.get("peak_rss_before_publish_kib", 0) / 1024, 1),
               "index": report.get("index", {}).get("kind"), "index_s": round(report.get("index", {}).get("seconds", 0), 2),
               "codec_sample": report.get("codec_sample"), "corpus_vectors": report.get("corpus_vectors"),
               "training_vectors": report.get("training_vectors"), "record_bytes": report["record_bytes"],
               "record_bytes_f32": report["record_bytes_f32"], "bytes_written": report["bytes_written"],
               "key_factory": report["key_factory"], "run_seconds": round(time.time() - t0, 2)}
        rows.append(row)
        print("%9d %10d %9.1f %10.1f %12.1f %14.1f %10.1f %9.1f %8.1f %8.1f %8.1f" % (
            row["references"], row["tokens"], row["seconds"], row["references_per_second"], row["peak_rss_mib"], row["rss_before_publish_mib"],
            row["memorize_s"], row["train_s"], row["write_s"], row["encode_s"], row["index_s"]), flush=True)
        if not args.keep:
            shutil.rmtree(bank, ignore_errors=True)
            os.remove(corpus)
    out = json.dumps({"model": args.model, "factory": args.factory, "codec_sample": args.codec_sample, "batch": args.batch,
                      "segment_records": args.segment_records, "threads": args.threads, "rows": rows}, indent=1)
    print(out)
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as f:
            f.write(out + "\n")


if __name__ == "__main__":
    main()
