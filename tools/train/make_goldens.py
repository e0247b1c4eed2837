#!/usr/bin/python3
"""Goldens of the default model for tests/test_default_model.cpp, from the float64 reference
tools/reference/memory3.py reading the exported files (not from the training code):

  tokenizer_cases.json   texts (plain, chat-templated with special tokens) -> ids as training tokenized them
  prompt_ids.npy         [T] a chat question about a held-out entity, <s> first
  references.npy         [5, n] its three one-fact references and two others (0-padded), reference_lengths.npy [5]
  logits_0.npy           [T, V] logits without memories
  logits_5.npy           [T, V] logits with the five references' memories in the prompt's chunk
  train_question.json    a training entity's question and answer (the model answers it from its weights)

    /usr/bin/python3 tools/train/make_goldens.py MODEL_DIR WORLD_DIR OUT_DIR
"""
import json
import os
import random
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "reference"))
from tokenizer import Tokenizer, chat_prompt  # noqa: E402
from world import World  # noqa: E402
import memory3  # noqa: E402
from check_export import conversation_example  # noqa: E402


def main() -> int:
    model_dir, world_dir, out = sys.argv[1:4]
    os.makedirs(out, exist_ok=True)
    tok = Tokenizer(model_dir)
    docs = [json.loads(line) for line in open(os.path.join(world_dir, "knowledge.jsonl"))]
    held = [d for d in docs if d["metadata"]["split"] == "held_out"]
    rng = random.Random(5)
    target = held[0]
    questions = [json.loads(line) for line in open(os.path.join(world_dir, "questions-held_out.jsonl"))]
    q = next(x for x in questions if x["id"].startswith(target["id"] + "."))
    texts = [target["text"], q["question"], chat_prompt(q["question"]) + " " + q["answer"] + "<|im_end|>",
             "Question: " + q["question"] + " Answer: " + q["answer"], "Reference:",
             "Zweeble 1999 snorkelled\tover  two spaces, caf\u00e9 \u00e9t\u00e9 \u2603 done."]
    cases = [{"text": t, "ids": tok.encode(t)} for t in texts]
    with open(os.path.join(out, "tokenizer_cases.json"), "w") as f:
        json.dump(cases, f, ensure_ascii=False, indent=1)
    ids = [tok.bos] + tok.encode(chat_prompt(q["question"]))
    # The references mnemo-kb cuts from the corpus: one per paragraph (one fact each). The held-out
    # entity's three facts and the first facts of two other entities.
    others = rng.sample([d for d in docs if d is not target], 2)
    texts = target["text"].split("\n\n") + [d["text"].split("\n\n")[0] for d in others]
    refs = [tok.encode(t) for t in texts]
    chosen = [target, target, target] + others
    n = max(map(len, refs))
    m = memory3.Memory3.load(model_dir)
    mems = [m.write(r) for r in refs]
    T = len(ids)
    np.save(os.path.join(out, "prompt_ids.npy"), np.array(ids, dtype=np.int32))
    np.save(os.path.join(out, "references.npy"), np.array([r + [0] * (n - len(r)) for r in refs], dtype=np.int32))
    np.save(os.path.join(out, "reference_lengths.npy"), np.array([len(r) for r in refs], dtype=np.int32))
    np.save(os.path.join(out, "logits_0.npy"), np.asarray(m.forward_chunkwise(ids, lambda c: [], prompt_len=T), dtype=np.float32))
    np.save(os.path.join(out, "logits_5.npy"), np.asarray(m.forward_chunkwise(ids, lambda c: mems, prompt_len=T), dtype=np.float32))
    trained = json.loads(open(os.path.join(world_dir, "questions-train.jsonl")).readline())
    prompt = [tok.bos] + tok.encode(chat_prompt(trained["question"]))
    with open(os.path.join(out, "train_question.json"), "w") as f:
        json.dump({"question": trained["question"], "answer": trained["answer"], "prompt_ids": prompt}, f, indent=1)
    # A conversation of two turns, each reading its own entity's references: the engine's chat
    # feeds the turns as segments (Session::append), the reference restarts its chunks there.
    ids, starts, turn_refs = conversation_example(World(14), tok)
    written = [[m.write(r) for r in turn] for turn in turn_refs]
    np.save(os.path.join(out, "logits_conversation.npy"),
            np.asarray(m.forward_chunkwise(ids, lambda c: written[c], prompt_len=len(ids), segment_starts=starts),
                       dtype=np.float32))
    with open(os.path.join(out, "conversation.json"), "w") as f:
        json.dump({"ids": ids, "turn_starts": starts, "references": turn_refs}, f)
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump({"generator": "tools/train/make_goldens.py (tools/reference/memory3.py, float64)",
                   "question": q, "references": [d["id"] for d in chosen]}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
