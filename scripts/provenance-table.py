#!/usr/bin/env python3
"""Reproduce BENCHMARKS.md "Provenance": handoffs taken from text that holds
none, by cadence and by the Python json_repair library, side by side.

usage: python3 scripts/provenance-table.py --json-repair SRC [--before BINARY]

SRC is the src/ directory of a checkout of github.com/mangiucugna/json_repair
(it is run from source, through sys.path; nothing of it is kept here).
BINARY, if given, is a cadence built from an older commit, measured on the
same chunks through `cadence validate` for a before/after column.

For each corpus of internal/handoff/testdata/corpora (see its README), the
table counts the chunks that became a handoff:
  * cadence: TestCorpusInventions's verdicts (the pipeline as a step runs
    it: repair and coercion on), against no schema, {"type": "object"} and
    a schema requiring "status" and "summary" (strings); "invented" are
    those not written verbatim as JSON where they were found;
  * json_repair: repair_json(chunk, return_objects=True) gives an object
    (non-empty, and any), and one with the required keys.
It also scores cadence on the peer suite (../shared/repair-suite) when
that is there, with the wrong values returned with exit 0 and no flag.
"""
import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
CORPORA = os.path.join(ROOT, "internal", "handoff", "testdata", "corpora")
SUITE = os.path.join(ROOT, "..", "shared", "repair-suite", "run.py")
OBJECT = '{"type": "object"}'
REQUIRED = ('{"type": "object", "required": ["status", "summary"], "properties": '
            '{"status": {"type": "string"}, "summary": {"type": "string"}}}')


def corpora():
    out = {}
    for name in sorted(os.listdir(CORPORA)):
        if name.endswith(".jsonl.gz"):
            with gzip.open(os.path.join(CORPORA, name), "rt", encoding="utf-8") as f:
                out[name[:-len(".jsonl.gz")]] = [json.loads(line)["text"] for line in f]
    return out


def cadence_verdicts():
    with tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False) as tmp:
        path = tmp.name
    env = dict(os.environ, CADENCE_CORPUS_VERDICTS=path)
    subprocess.run(["go", "test", "-count=1", "-run", "^TestCorpusInventions$", "./internal/handoff/"],
                   cwd=ROOT, env=env, check=True, capture_output=True)
    with open(path) as f:
        rows = [json.loads(line) for line in f]
    os.unlink(path)
    return rows


def binary_accepts(binary, schema_path, text):
    p = subprocess.run([binary, "validate", "--schema", schema_path], input=text.encode(), capture_output=True)
    return p.returncode == 0


def json_repair_counts(src, texts):
    sys.path.insert(0, src)
    import json_repair  # noqa: E402  (from the checkout given)
    any_obj = nonempty = required = 0
    for t in texts:
        try:
            v = json_repair.repair_json(t, return_objects=True)
        except Exception:  # a crash is no object
            continue
        if isinstance(v, dict):
            any_obj += 1
            nonempty += bool(v)
            required += isinstance(v.get("status"), str) and isinstance(v.get("summary"), str)
    return any_obj, nonempty, required


def peer_suite(binary):
    if not os.path.exists(SUITE):
        return None
    out = subprocess.run([sys.executable, SUITE, binary, "--failures"], capture_output=True, text=True).stdout
    m = re.search(r"== overall: (\d+)/(\d+)", out)
    silent = len(re.findall(r"\] wrong_value_silent", out))
    return (m.group(1), m.group(2), silent) if m else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json-repair", required=True, help="src/ of a json_repair checkout")
    ap.add_argument("--before", help="a cadence binary of an older commit, for a before column")
    args = ap.parse_args()

    texts = corpora()
    verdicts = cadence_verdicts()
    with tempfile.TemporaryDirectory() as d:
        obj = os.path.join(d, "object.json")
        req = os.path.join(d, "required.json")
        open(obj, "w").write(OBJECT)
        open(req, "w").write(REQUIRED)
        before = {}
        if args.before:
            for name, ts in texts.items():
                before[name] = (sum(binary_accepts(args.before, obj, t) for t in ts),
                                sum(binary_accepts(args.before, req, t) for t in ts))
        binary = os.path.join(d, "cadence")
        subprocess.run(["go", "build", "-o", binary, "./cmd/cadence"], cwd=ROOT, check=True)
        suite_now = peer_suite(binary)
        suite_before = peer_suite(args.before) if args.before else None

    head = "| corpus | chunks | cadence: object (invented) | cadence: required | "
    sep = "| --- | ---: | ---: | ---: | "
    if args.before:
        head += "before: object | before: required | "
        sep += "---: | ---: | "
    head += "json_repair: object, non-empty (any) | json_repair: required |"
    sep += "---: | ---: |"
    print(head)
    print(sep)
    for name, ts in texts.items():
        rows = [v for v in verdicts if v["corpus"] == name]
        obj_n = sum(bool(v["object"]) for v in rows)
        obj_inv = sum(bool(v["object"]) and v["invented"] for v in rows)
        req_n = sum(bool(v["required"]) for v in rows)
        a, ne, r = json_repair_counts(args.json_repair, ts)
        line = f"| {name} | {len(ts)} | {obj_n} ({obj_inv}) | {req_n} | "
        if args.before:
            line += f"{before[name][0]} | {before[name][1]} | "
        line += f"{ne} ({a}) | {r} |"
        print(line)
    if suite_now:
        print(f"\npeer suite (jsonrepair's own cases): cadence {suite_now[0]}/{suite_now[1]}, "
              f"wrong value with exit 0 and no flag: {suite_now[2]}")
    if suite_before:
        print(f"peer suite, before: {suite_before[0]}/{suite_before[1]}, "
              f"wrong value with exit 0 and no flag: {suite_before[2]}")


if __name__ == "__main__":
    main()
