#!/usr/bin/env python3
"""Statements in the docs that the tree can contradict (issue 37), checked against the tree:

  counts   a number of tests stated as today's. Counts change with every test added, so prose
           states one only as a record: its paragraph names the commit or the date it was counted
           at ("Latest (2026-11-29, commit 316d30e ...)"); `ctest -N` gives today's.
  fuzz     the harnesses CI fuzzes and for how long: "each of the six fuzz harnesses for 30 s" must
           match tools/fuzz.sh's list and tools/ci-sanitize.sh's ZBPP_FUZZ_SECONDS default, unless
           its paragraph is such a record.
  select   how many tests a pattern selects: "`ctest -R oracle` ... the six tests" must be what
           `ctest -N -R oracle` in BUILD_DIR lists.

Usage: tools/doc_claims.py BUILD_DIR [DOC.md ...]  (default: README.md and docs/*.md)
Prints each contradiction as FILE:LINE: what the doc says, what the tree says; exit 1 if any.
"""
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
         "eleven", "twelve"]
NUMBER = r"(\d+|%s)" % "|".join(WORDS)
# "430 tests", "72 TSan tests", "the four tests"; not "| 1 tests that fail" (a table's class number).
TEST_COUNT = re.compile(r"(?<!\| )\b%s (?:(?:plain|TSan|ASan\S*|runtime|Catch2|unit|GPU-only|ctest) ){0,2}tests\b"
                        % NUMBER, re.I)
RECORD = re.compile(r"commit [0-9a-f]{7,40}|\b20\d\d-\d\d-\d\d\b")
HARNESSES = re.compile(r"\b%s (?:fuzz |libFuzzer )?harnesses\b" % NUMBER, re.I)
FUZZ_TIME = re.compile(r"harness(?:es)?\b[^.]{0,60}?\b(?:for|at) (\d+ s|a minute|\d+ seconds)\b")
SELECT = re.compile(r"-R\s+(?:'([^']+)'|\"([^\"]+)\"|([^\s`'\")]+))")


def number(text):
    text = text.lower()
    return WORDS.index(text) if text in WORDS else int(text)


def tree_facts(build):
    fuzz_sh = open(os.path.join(ROOT, "tools/fuzz.sh")).read()
    harnesses = set(re.findall(r"\bfuzz_[a-z_]+\b", fuzz_sh.split("harnesses=(", 2)[-1].split(")")[0]))
    ci = open(os.path.join(ROOT, "tools/ci-sanitize.sh")).read()
    seconds = int(re.search(r"ZBPP_FUZZ_SECONDS:-(\d+)", ci).group(1))
    return {"harnesses": len(harnesses), "seconds": seconds, "build": build}


def selected(build, pattern, cache={}):
    if pattern not in cache:
        out = subprocess.run(["ctest", "--test-dir", build, "-N", "-R", pattern], capture_output=True, text=True)
        m = re.search(r"Total Tests: (\d+)", out.stdout)
        cache[pattern] = int(m.group(1)) if m else None
    return cache[pattern]


def paragraphs(text):
    """(first line number, paragraph text) for each blank-line-separated paragraph."""
    line = 1
    for part in re.split(r"(\n\s*\n)", text):
        if part.strip() and not re.fullmatch(r"\n\s*\n", part):
            yield line, part
        line += part.count("\n")


def check(path, facts):
    found = []
    text = open(path).read()
    name = os.path.relpath(path, ROOT)
    for first, para in paragraphs(text):
        record = RECORD.search(para)
        at = lambda m: first + para.count("\n", 0, m.start())
        for sentence_match in re.finditer(r"[^.;]*?(?:[.;](?=\s|$)|$)", para, re.S):
            sentence = sentence_match.group(0)
            sel = SELECT.search(sentence)
            for m in TEST_COUNT.finditer(sentence):
                line = first + para.count("\n", 0, sentence_match.start() + m.start())
                if sel:
                    pattern = next(g for g in sel.groups() if g)
                    n = selected(facts["build"], pattern)
                    if n is not None and n != number(m.group(1)):
                        found.append(f"{name}:{line}: says \"{m.group(0)}\" of `-R {pattern}`, which selects {n}")
                elif not record:
                    found.append(f"{name}:{line}: states \"{m.group(0)}\" as today's count: name the commit or date "
                                 "it was counted at, or say `ctest -N`")
        if record:
            continue
        for m in HARNESSES.finditer(para):
            if number(m.group(1)) != facts["harnesses"]:
                found.append(f"{name}:{at(m)}: says \"{m.group(0)}\"; tools/fuzz.sh fuzzes {facts['harnesses']}")
        for m in FUZZ_TIME.finditer(para):
            said = 60 if m.group(1) == "a minute" else int(m.group(1).split()[0])
            if said != facts["seconds"]:
                found.append(f"{name}:{at(m)}: says \"{m.group(0)}\"; tools/ci-sanitize.sh fuzzes each harness for "
                             f"{facts['seconds']} s")
    return found


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    facts = tree_facts(argv[1])
    docs = argv[2:] or [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs/*.md")))
    found = [f for doc in docs for f in check(doc, facts)]
    for f in found:
        print("STALE " + f)
    print(f"doc claims: {len(docs)} files, {len(found)} contradicted")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
