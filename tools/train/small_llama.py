#!/usr/bin/python3
"""Trains a small plain Llama (256 wide) on the world text and writes it as a Hugging Face Llama
folder, for comparing quantizers on trained weights (issue 25).

    /usr/bin/python3 tools/train/small_llama.py --out DIR [--steps 1500] [--seed 0]

Why it exists: the default model is 128 wide, narrower than a K-quant super-block (256), so its
weights cannot show what Q4_K/Q5_K/Q6_K do, and its Memory3 architecture is not one llama.cpp
runs. This model is a standard Llama (RMSNorm, RoPE with rotate-half pairs as Hugging Face writes
it, SwiGLU, untied head) of widths that are multiples of 256, trained for a few minutes on one
core on assets/world/knowledge.txt (its last 10 % held out) with the default model's
SentencePiece tokenizer, so both Mnemo and llama.cpp can load and quantize the same checkpoint.
docs/benchmarks.md ("Quantization quality on a trained model") has the comparison and the
commands.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "common"))
import safetensors_io  # noqa: E402
TOKENIZER_DIR = os.path.join(ROOT, "assets", "default-model")

CONFIG = dict(hidden=256, layers=4, heads=4, kv_heads=2, ffn=768, ctx=128, theta=10000.0, eps=1e-5)


class Llama(torch.nn.Module):
    def __init__(self, vocab: int, c: dict, gen: torch.Generator):
        super().__init__()
        self.c = c
        h, hd = c["hidden"], c["hidden"] // c["heads"]

        def w(rows, cols):
            return torch.nn.Parameter(torch.randn(rows, cols, generator=gen) * (1.0 / math.sqrt(cols)))

        self.embed = torch.nn.Parameter(torch.randn(vocab, h, generator=gen) * 0.02)
        self.blocks = torch.nn.ModuleList()
        for _ in range(c["layers"]):
            b = torch.nn.Module()
            b.attn_norm = torch.nn.Parameter(torch.ones(h))
            b.q, b.k, b.v = w(c["heads"] * hd, h), w(c["kv_heads"] * hd, h), w(c["kv_heads"] * hd, h)
            b.o = w(h, c["heads"] * hd)
            b.ffn_norm = torch.nn.Parameter(torch.ones(h))
            b.gate, b.up, b.down = w(c["ffn"], h), w(c["ffn"], h), w(h, c["ffn"])
            self.blocks.append(b)
        self.norm = torch.nn.Parameter(torch.ones(h))
        self.head = w(vocab, h)
        inv = 1.0 / (c["theta"] ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
        ang = torch.outer(torch.arange(c["ctx"], dtype=torch.float32), inv)
        self.register_buffer("cos", torch.cat([ang.cos(), ang.cos()], -1), persistent=False)
        self.register_buffer("sin", torch.cat([ang.sin(), ang.sin()], -1), persistent=False)
        self.register_buffer("causal", torch.ones(c["ctx"], c["ctx"], dtype=torch.bool).triu(1), persistent=False)

    def rms(self, x, g):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.c["eps"]) * g

    def rope(self, x):  # x [B, H, T, D]; Hugging Face's rotate_half: pairs (i, i + D/2)
        t = x.shape[2]
        half = x.shape[-1] // 2
        rot = torch.cat([-x[..., half:], x[..., :half]], -1)
        return x * self.cos[:t] + rot * self.sin[:t]

    def forward(self, ids):
        c = self.c
        bsz, t = ids.shape
        hd = c["hidden"] // c["heads"]
        x = self.embed[ids]
        for b in self.blocks:
            a = self.rms(x, b.attn_norm)
            q = (a @ b.q.T).view(bsz, t, c["heads"], hd).transpose(1, 2)
            k = (a @ b.k.T).view(bsz, t, c["kv_heads"], hd).transpose(1, 2)
            v = (a @ b.v.T).view(bsz, t, c["kv_heads"], hd).transpose(1, 2)
            q, k = self.rope(q), self.rope(k)
            rep = c["heads"] // c["kv_heads"]
            k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
            scores = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
            scores = scores.masked_fill(self.causal[:t, :t], float("-inf"))
            att = scores.softmax(-1) @ v
            x = x + att.transpose(1, 2).reshape(bsz, t, -1) @ b.o.T
            f = self.rms(x, b.ffn_norm)
            x = x + (F.silu(f @ b.gate.T) * (f @ b.up.T)) @ b.down.T
        return self.rms(x, self.norm) @ self.head.T


def encode(text: str) -> list[int]:
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=os.path.join(TOKENIZER_DIR, "tokenizer.model"))
    return sp.encode(text), sp.get_piece_size()


def export(model: Llama, vocab: int, out: str) -> None:
    """The Hugging Face Llama folder: config.json, model.safetensors (f32), the tokenizer."""
    c = model.c
    t = {"model.embed_tokens.weight": model.embed, "model.norm.weight": model.norm, "lm_head.weight": model.head}
    for i, b in enumerate(model.blocks):
        p = f"model.layers.{i}."
        t |= {p + "input_layernorm.weight": b.attn_norm, p + "post_attention_layernorm.weight": b.ffn_norm,
              p + "self_attn.q_proj.weight": b.q, p + "self_attn.k_proj.weight": b.k,
              p + "self_attn.v_proj.weight": b.v, p + "self_attn.o_proj.weight": b.o,
              p + "mlp.gate_proj.weight": b.gate, p + "mlp.up_proj.weight": b.up, p + "mlp.down_proj.weight": b.down}
    os.makedirs(out, exist_ok=True)
    safetensors_io.write_safetensors(
        os.path.join(out, "model.safetensors"),
        {k: safetensors_io.Tensor("F32", v.detach().to(torch.float32).contiguous().numpy()) for k, v in t.items()})
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": c["hidden"],
        "intermediate_size": c["ffn"], "num_hidden_layers": c["layers"], "num_attention_heads": c["heads"],
        "num_key_value_heads": c["kv_heads"], "vocab_size": vocab, "max_position_embeddings": 2048,
        "rms_norm_eps": c["eps"], "rope_theta": c["theta"], "tie_word_embeddings": False, "hidden_act": "silu",
        "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "float32",
    }
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    for name in ("tokenizer.model", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(TOKENIZER_DIR, name), os.path.join(out, name))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--held-out-text", help="also write the held-out 10 %% of the text here (for perplexity)")
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    torch.set_num_threads(1)
    text = open(os.path.join(ROOT, "assets", "world", "knowledge.txt"), encoding="utf-8").read()
    cut = text.rfind("\n", 0, int(len(text) * 0.9)) + 1
    ids, vocab = encode(text[:cut])
    if a.held_out_text:
        with open(a.held_out_text, "w", encoding="utf-8") as f:
            f.write(text[cut:])
    data = torch.tensor(ids, dtype=torch.long)
    gen = torch.Generator().manual_seed(a.seed)
    model = Llama(vocab, CONFIG, gen)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01, betas=(0.9, 0.95))
    ctx = CONFIG["ctx"]
    for step in range(a.steps):
        lr = 3e-3 * min(1.0, (step + 1) / 100) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / a.steps)))
        for g in opt.param_groups:
            g["lr"] = lr
        starts = torch.randint(0, len(data) - ctx - 1, (a.batch,), generator=gen)
        x = torch.stack([data[s:s + ctx] for s in starts])
        y = torch.stack([data[s + 1:s + ctx + 1] for s in starts])
        loss = F.cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 100 == 0 or step + 1 == a.steps:
            print(f"step {step:5d}  loss {loss.item():.3f}  lr {lr:.2e}", flush=True)
    export(model, vocab, a.out)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
