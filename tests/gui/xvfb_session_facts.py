"""What mnemo-chat saved of the open conversation, for tests/gui/xvfb_session.sh (standard library only).

    xvfb_session_facts.py CONVERSATIONS_DIR FACT [ARG]

FACT is one of:
  answers=N       "yes" when the newest conversation holds N finished answers (each with its text)
  versions=N      "yes" when its last answer has N versions (the one shown and the others kept)
  last-device     the backend of the last answer's device ("cpu", "vulkan", ...)
  last-reads DOC  "yes" when the last answer read a memory of document DOC
  summary         one line per answer: device, seed, versions, references' documents, text
"""
import glob
import json
import os
import sys


def newest(folder):
    files = [f for f in glob.glob(os.path.join(folder, "*.json")) if not f.endswith(".deleted")]
    if not files:
        return None
    with open(max(files, key=os.path.getmtime), encoding="utf-8") as f:
        return json.load(f)


def answers(conv):
    return [m for m in conv["messages"] if m.get("role") == "assistant"] if conv else []


def finished(m):
    return bool(m.get("text")) and bool(m.get("finish")) and not m.get("error")


def versions(m):
    alternatives = m.get("alternatives") or {}
    return 1 + len(alternatives.get("others") or [])


def main():
    folder, fact = sys.argv[1], sys.argv[2]
    arg = sys.argv[3] if len(sys.argv) > 3 else None
    conv = newest(folder)
    done = [m for m in answers(conv) if finished(m)]
    if fact.startswith("answers="):
        print("yes" if len(done) == int(fact.split("=")[1]) and len(done) == len(answers(conv)) else "no")
    elif fact.startswith("versions="):
        print("yes" if done and versions(done[-1]) == int(fact.split("=")[1]) and finished(answers(conv)[-1]) else "no")
    elif fact == "last-device":
        print(done[-1].get("device", "").split(":")[0] if done else "")
    elif fact == "last-reads":
        print("yes" if done and any(r.get("doc_id") == arg for r in done[-1].get("references", [])) else "no")
    elif fact == "summary":
        for i, m in enumerate(answers(conv), 1):
            docs = sorted({r.get("doc_id", "?") for r in m.get("references", [])})
            print(f"  answer {i}: device {m.get('device', '?')}, seed {m.get('seed', '?')}, "
                  f"{versions(m)} version(s), references from {docs or 'none'}: {m.get('text', '')!r}")
    else:
        sys.exit(f"xvfb_session_facts: unknown fact {fact!r}")


if __name__ == "__main__":
    main()
