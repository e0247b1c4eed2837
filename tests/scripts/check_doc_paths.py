#!/usr/bin/python3
"""Every repository path the Markdown files name must exist.

Usage: check_doc_paths.py [REPO_ROOT]   (default: two folders above this script)

Docs go stale silently when files move; this fails with file:line for each path that is gone.
What is checked, and why the rest is left alone:

- Markdown links [text](target): relative to the Markdown file's folder (a leading / means the
  repository root). URLs, #anchors and targets that leave the repository are skipped.
- Paths in inline code (`...`, each word of it): a path whose first part is a top-level entry of
  the repository (`engine/src/io/json.cpp`, `docs/vulkan.md`, `tools/reference/`) is checked from
  the root; a path whose first folder exists next to the Markdown file (`src/serve/` in
  server/README.md) is checked from there; `mnemo/...` is an include path (engine/include/).
  Anything else (another project's files such as `olmo/model.py`, build outputs such as
  `build/bin/mnemo`, install paths such as `usr/lib/mnemo`) cannot be told apart from prose and is
  not checked; neither is `../x` in code, which is relative to whatever folder the text speaks of
  (a program's, a shader family's).
- Placeholders are skipped (`op_cases_<family>.hpp`, `HOST:PORT`), globs must match at least one
  file (`tools/convert/test_*.py`), and braces name each file (`src/bank/corpus.{hpp,cpp}`).
- Fenced code blocks are commands and their output, not references: not checked.
"""
import os
import re
import subprocess
import sys
import tempfile
import urllib.parse

FENCE = re.compile(r"^\s*(```|~~~)")
# A code span: a run of backticks, the shortest text, the same run; not across a blank line.
CODE_SPAN = re.compile(r"(`+)((?:(?!\n\s*\n).)+?)\1", re.S)
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.M)
# What a path written in the docs is made of; anything else (spaces, <>, $, =, quotes, ...) is prose,
# a placeholder or a command line.
PATH_WORD = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_.\-/*{},]*$")
LINE_SUFFIX = re.compile(r":\d+(-\d+)?$")  # file.cpp:42


def repo_root():
    if len(sys.argv) > 1:
        return os.path.abspath(sys.argv[1])
    return os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def repo_files(root):
    """The repository's files: what git tracks or would add (ignored files, such as build outputs
    and local model folders, do not count, so the result does not depend on what lies around), or,
    outside a git checkout, a walk that skips build*/ and hidden folders."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             check=True, capture_output=True).stdout.decode()
        return {f for f in out.split("\0") if f and os.path.lexists(os.path.join(root, f))}
    except (OSError, subprocess.CalledProcessError):
        found = set()
        for folder, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(".") and not d.startswith("build")]
            found |= {os.path.relpath(os.path.join(folder, n), root) for n in names}
        return found


def blank_fences(text):
    """The text with fenced code blocks blanked (their lines kept, so line numbers stay right)."""
    lines, inside = text.split("\n"), None
    for i, line in enumerate(lines):
        m = FENCE.match(line)
        if inside is None and m:
            inside, lines[i] = m.group(1), ""
        elif inside is not None:
            if m and m.group(1) == inside:
                inside = None
            lines[i] = ""
    return "\n".join(lines)


def expand_braces(path):
    m = re.search(r"\{([^{}]*)\}", path)
    if not m:
        return [path]
    return [v for alt in m.group(1).split(",") for v in expand_braces(path[:m.start()] + alt + path[m.end():])]


def glob_regex(pattern):
    """A shell glob as a regex over repository paths: * and ? stay within one folder."""
    out = ""
    for c in pattern:
        out += "[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c)
    return re.compile(out + "$")


class Checker:
    def __init__(self, root, files):
        self.root = root
        self.files = files
        self.dirs = {os.path.dirname(f) for f in files}
        for d in list(self.dirs):
            while d:
                d = os.path.dirname(d)
                self.dirs.add(d)
        self.top = {f.split("/", 1)[0] for f in files}
        self.missing = []  # (md file, line, written, resolved)
        self.checked = 0

    def exists(self, rel):
        """rel (relative to the root; * globs allowed; a trailing / asks for a folder) exists."""
        if "*" in rel or "?" in rel:
            rx = glob_regex(rel.rstrip("/"))
            return any(rx.match(p) for p in (self.dirs if rel.endswith("/") else self.files | self.dirs))
        if rel.endswith("/"):
            return rel.rstrip("/") in self.dirs
        return rel in self.files or rel in self.dirs

    def report(self, md, line, written, resolved):
        self.missing.append((md, line, written, resolved))

    def inside(self, rel):
        return rel != ".." and not rel.startswith("../") and not os.path.isabs(rel)

    def check_link(self, md, line, target):
        if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", target) or target.startswith("#"):
            return  # URL, mailto:, anchor
        target = urllib.parse.unquote(target.split("#", 1)[0].split("?", 1)[0])
        if not target:
            return
        base = "" if target.startswith("/") else os.path.dirname(md)
        rel = os.path.normpath(os.path.join(base, target.lstrip("/")))
        if not self.inside(rel):
            return  # outside the repository (../shared/ and the like)
        self.checked += 1
        if not self.exists(rel + ("/" if target.endswith("/") else "")):
            self.report(md, line, target, rel)

    def check_code_word(self, md, line, word):
        word = LINE_SUFFIX.sub("", word.rstrip(".,;:)"))
        if "/" not in word or "//" in word or not PATH_WORD.match(word) or "..." in word:
            return
        if "," in re.sub(r"\{[^{}]*\}", "", word):
            return  # a list written without spaces, not one path
        first = word.split("/", 1)[0]
        here = os.path.dirname(md)
        if first in (".", ".."):
            return  # relative to a folder the text names (a program's, a family's), not to this file
        if first in self.top:
            base = ""
        elif first == "mnemo" and "engine/include/mnemo" in self.dirs:
            base = "engine/include"  # an include path, as #include writes it
        elif here and os.path.join(here, first) in self.dirs:
            base = here  # a folder next to the Markdown file (src/ in server/README.md)
        else:
            return  # not anchored in this repository: another project's path, a build output, prose
        for path in expand_braces(word):
            trailing = "/" if path.endswith("/") else ""
            rel = os.path.normpath(os.path.join(base, path))
            if not self.inside(rel):
                continue
            self.checked += 1
            if not self.exists(rel + trailing):
                self.report(md, line, word, rel + trailing)

    def check_file(self, md):
        with open(os.path.join(self.root, md), encoding="utf-8") as f:
            text = blank_fences(f.read())

        def line_of(pos):
            return text.count("\n", 0, pos) + 1

        spans = []
        for m in CODE_SPAN.finditer(text):
            spans.append((m.start(), m.end()))
            for w in re.finditer(r"\S+", m.group(2)):
                self.check_code_word(md, line_of(m.start(2) + w.start()), w.group())
        # Links outside code spans: blank the spans first (same length, so offsets stay right).
        prose = list(text)
        for a, b in spans:
            prose[a:b] = [c if c == "\n" else " " for c in text[a:b]]
        prose = "".join(prose)
        for m in INLINE_LINK.finditer(prose):
            self.check_link(md, line_of(m.start(1)), m.group(1))
        for m in REFERENCE_LINK.finditer(prose):
            self.check_link(md, line_of(m.start(1)), m.group(1))


def check_tree(root):
    files = repo_files(root)
    checker = Checker(root, files)
    markdown = sorted(f for f in files if f.endswith(".md"))
    for md in markdown:
        checker.check_file(md)
    return checker, markdown


# A small tree whose stale paths are known: the checker must find exactly these, so a change to
# its heuristics that stops it finding anything (every path skipped) fails the test too.
SELF_TEST_FILES = {
    "engine/x.cpp": "",
    "shaders/topk/topk.cmake": "",
    "sub/src/y.hpp": "",
    "docs/a.md": "\n".join([
        "Present: `engine/x.cpp`, `shaders/*/*.cmake`, [up](../engine/x.cpp), [root](/engine/x.cpp#top).",
        "Missing: `engine/gone.cpp` and [a link](missing.md).",
        "Skipped: `op_cases_<family>.hpp`, `olmo/model.py`, `build/bin/mnemo`, `../share/x`, `grpc://h:1`,",
        "[a site](https://example.com/x), `shaders/*/*.glsl` is",  # a glob that matches nothing: missing
        "```sh",
        "cat engine/none.cpp `engine/none.cpp`",
        "```",
        "A span may wrap: `cat",
        "engine/wrapped.cpp` (reported at its own line).",
    ]),
    "sub/README.md": "`src/y.{hpp,cpp}` and `src/y.hpp`\n",
}
SELF_TEST_MISSING = [
    ("docs/a.md", 2, "engine/gone.cpp"),
    ("docs/a.md", 2, "missing.md"),
    ("docs/a.md", 4, "shaders/*/*.glsl"),
    ("docs/a.md", 9, "engine/wrapped.cpp"),
    ("sub/README.md", 1, "src/y.{hpp,cpp}"),
]


def self_test():
    with tempfile.TemporaryDirectory() as root:
        for rel, text in SELF_TEST_FILES.items():
            os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
                f.write(text)
        checker, _ = check_tree(root)
    got = sorted((md, line, written) for md, line, written, _ in checker.missing)
    return got == sorted(SELF_TEST_MISSING), got


def main():
    ok, got = self_test()
    if not ok:
        print(f"check_doc_paths: the checker itself is wrong: on its test tree it reported {got}, expected "
              f"{sorted(SELF_TEST_MISSING)}", file=sys.stderr)
        return 1
    root = repo_root()
    checker, markdown = check_tree(root)
    if not markdown:
        print(f"check_doc_paths: no Markdown files under {root}", file=sys.stderr)
        return 1
    for md, line, written, resolved in checker.missing:
        note = "" if written.rstrip("/") == resolved.rstrip("/") else f" (resolved as {resolved})"
        print(f"{md}:{line}: `{written}` does not exist{note}", file=sys.stderr)
    if checker.missing:
        print(f"check_doc_paths: {len(checker.missing)} missing of {checker.checked} paths in {len(markdown)} Markdown "
              "files", file=sys.stderr)
        return 1
    print(f"check_doc_paths: {checker.checked} paths in {len(markdown)} Markdown files, all present")
    return 0


if __name__ == "__main__":
    sys.exit(main())
