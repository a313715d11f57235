#!/usr/bin/env python3
"""Build the provenance corpora: real prose and code that holds no handoff.

usage: python3 scripts/provenance-corpus.py MIRRORS_DIR

MIRRORS_DIR holds bare git mirrors named OWNER+NAME/repo (as a `git clone
--mirror` of https://github.com/OWNER/NAME into OWNER+NAME/repo makes them).
Each corpus is the Markdown of documentation repositories cut into
answer-sized chunks (200 to 3000 bytes, cut at paragraph ends, never inside
a fence unless one block is longer), or the text messages of real agent
transcripts; it is written to internal/handoff/testdata/corpora/NAME.jsonl.gz,
one {"src": "OWNER/NAME@COMMIT:PATH", "text": CHUNK} a line. The sources,
their commits and licences are in that directory's README.md. The output
is deterministic: the same mirrors give the same files.
"""
import gzip
import json
import os
import subprocess
import sys

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "internal", "handoff", "testdata", "corpora")

# corpus name -> [(repository, commit, path prefix or None)], limit of chunks
CORPORA = {
    "go": ([("quii/learn-go-with-tests", "651622ac66d6629ec23306389bb5b429cce81760", None)], 700),
    "typescript": ([("basarat/typescript-book", "e31fe92c3afeea1bbcac4381d290e75e5b3ab6e3", "docs/")], 700),
    "shell": ([("dylanaraps/pure-bash-bible", "8c19d0b482b04d8d50fb72b4c5148b41ce605c6d", None),
               ("denysdovhan/bash-handbook", "662be2812b342f1f96581e444a3ab5b9df286963", None),
               ("jlevy/the-art-of-command-line", "6b50745d2e788add2e8f1ed29010e72659a9a074", None)], 700),
    "python": ([("encode/httpx", "ae1b9f66238f75ced3ced5e4485408435de10768", "docs/"),
                ("encode/starlette", "cb8f84f5284dc301ca7a31eb732b9e140769dd48", "docs/")], 700),
    "c": ([("curl/curl", "5c61e168698a72b87437d58ed728bcdea6d5db42", "docs/libcurl/")], 700),
}
AGENT = ("marot/spotter", "8cc42b0bd39d04e71e509d7d58e6782ab435329f", "test/fixtures/transcripts/")
TARGETS = [300, 700, 1200, 2000, 2900]


def git(mirror, *args):
    return subprocess.run(["git", "--git-dir", mirror, *args], check=True, capture_output=True).stdout


def files(mirror, commit, prefix, ext):
    names = git(mirror, "ls-tree", "-r", "--name-only", commit).decode().splitlines()
    return sorted(n for n in names if n.endswith(ext) and (prefix is None or n.startswith(prefix))
                  and "/vendor/" not in n and "node_modules/" not in n)


def blocks(text):
    """Paragraphs, with a fenced block kept whole."""
    out, cur, fence = [], [], None
    for line in text.splitlines(keepends=True):
        s = line.lstrip()
        mark = s[:3]
        if fence is None and mark in ("```", "~~~"):
            fence = mark
        elif fence is not None and s.startswith(fence):
            fence = None
        cur.append(line)
        if fence is None and not line.strip():
            out.append("".join(cur))
            cur = []
    if cur:
        out.append("".join(cur))
    return [b for b in out if b.strip()]


def chunks(text, k):
    cur = ""
    for b in blocks(text):
        target = TARGETS[k[0] % len(TARGETS)]
        if cur and len((cur + b).encode()) > 3000:
            yield cur
            k[0] += 1
            cur = ""
        cur += b
        if len(cur.encode()) >= target:
            yield cur[:6000]
            k[0] += 1
            cur = ""
    if len(cur.encode()) >= 200:
        yield cur


def spread(items, limit):
    """limit items taken evenly over the list, so that every file counts."""
    if len(items) <= limit:
        return items
    step = len(items) / limit
    return [items[int(i * step)] for i in range(limit)]


def build_docs(mirrors, name, sources, limit):
    rows = []
    for repo, commit, prefix in sources:
        mirror = os.path.join(mirrors, repo.replace("/", "+"), "repo")
        commit = commit or git(mirror, "rev-parse", "HEAD").decode().strip()
        k = [0]
        for path in files(mirror, commit, prefix, ".md"):
            text = git(mirror, "show", f"{commit}:{path}").decode("utf-8", "replace")
            for c in chunks(text, k):
                if len(c.encode()) >= 200:
                    rows.append({"src": f"{repo}@{commit[:12]}:{path}", "text": c})
    return spread(rows, limit)


def build_agent(mirrors):
    repo, commit, prefix = AGENT
    mirror = os.path.join(mirrors, repo.replace("/", "+"), "repo")
    rows = []
    for path in files(mirror, commit, prefix, ".jsonl"):
        try:
            body = git(mirror, "show", f"{commit}:{path}")
        except subprocess.CalledProcessError:
            continue  # a file the mirror lacks (over 4 MiB)
        for line in body.decode("utf-8", "replace").splitlines():
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if not isinstance(ev, dict) or ev.get("type") != "assistant":
                continue
            for c in (ev.get("message") or {}).get("content") or []:
                if isinstance(c, dict) and c.get("type") == "text" and len(c["text"].encode()) >= 200:
                    rows.append({"src": f"{repo}@{commit[:12]}:{path}", "text": c["text"][:6000]})
    return rows


def write(name, rows):
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, name + ".jsonl.gz")
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
        for r in rows:
            f.write((json.dumps(r, ensure_ascii=False) + "\n").encode())
    print(f"{name}: {len(rows)} chunks, {os.path.getsize(path)} bytes", file=sys.stderr)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    mirrors = sys.argv[1]
    for name, (sources, limit) in CORPORA.items():
        write(name, build_docs(mirrors, name, sources, limit))
    write("agent", build_agent(mirrors))


if __name__ == "__main__":
    main()
