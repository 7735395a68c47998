#!/usr/bin/python3
"""Every code name a document quotes exists: a document that names a removed
function, file or test fails.

    python3 tests/docs/names.py TOP [CTEST_LIST]

Reads TOP/README.md and TOP/docs/*.md (fenced blocks left out) and checks each
backticked name of code: a CamelCase name (`ProblemEvaluate`, `ProblemEvaluate()`)
or a snake_case one of six or more characters (`step_bound`, `cli_worst_ranks`)
must be a word of the sources (src, include, tests, jobs, input, .ci,
CMakeLists.txt) or a test's name (CTEST_LIST: the output of `ctest -N`); a
path (`src/worst/worst.cpp`, `jobs/study.sh`) must exist. Shorter snake_case names
are the documents' mathematics (`s_l`, `lr_t`). The names of other projects'
code that the documents cite are listed below. Before the documents, the check
is run on a document naming a removed function and a removed file, and must
report both.
"""
import os
import re
import sys
import tempfile

# Other projects' code the documents name (CMake's module, SLEEF's functions).
EXTERNAL = {"FindBLAS", "expd4_u10", "expd8_u10"}
SOURCES = ["src", "include", "tests", "jobs", "input", ".ci", "CMakeLists.txt"]
CAMEL = re.compile(r"[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+")
SNAKE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
PATH = re.compile(r"(?:src|include|tests|jobs|input|docs|\.ci)/[\w./-]+")


def source_words(top, tests):
    words = set(tests)
    for d in SOURCES:
        p = os.path.join(top, d)
        files = [p] if os.path.isfile(p) else [os.path.join(r, f) for r, _, fs in os.walk(p) for f in fs]
        for f in files:
            with open(f, errors="ignore") as fh:
                words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", fh.read()))
    return words


def missing(top, docs, words):
    """(document, name) for each quoted name of code that the sources lack."""
    out = []
    for doc in docs:
        with open(doc) as fh:
            text = re.sub(r"```.*?```", "", fh.read(), flags=re.S)
        for m in re.finditer(r"`([^`\n]+)`", text):
            q = m.group(1).strip()
            name = q[:-2] if q.endswith("()") else q
            if name in EXTERNAL:
                continue
            if CAMEL.fullmatch(name) or (SNAKE.fullmatch(name) and len(name) >= 6):
                if name not in words:
                    out.append((os.path.basename(doc), name))
            elif PATH.fullmatch(q) and "/X." not in q and not os.path.exists(os.path.join(top, q)):
                out.append((os.path.basename(doc), q))
    return sorted(set(out))


def main():
    top = sys.argv[1]
    tests = []
    if len(sys.argv) > 2:
        with open(sys.argv[2]) as fh:
            tests = re.findall(r"Test\s+#\d+: (\S+)", fh.read())
    words = source_words(top, tests)
    gone = "Velocity" + "Gone"  # (spelt in two: this file is among the sources)
    with tempfile.TemporaryDirectory() as tmp:
        probe = os.path.join(tmp, "probe.md")
        with open(probe, "w") as fh:
            fh.write(f"`ProblemEvaluate` and `src/worst/worst.cpp` stay; `{gone}()` and `src/gone.cpp` went.\n")
        found = missing(top, [probe], words)
    if found != [("probe.md", gone), ("probe.md", "src/gone.cpp")]:
        sys.exit(f"names.py: the check itself is broken: on a probe document it reports {found}")
    docs = [os.path.join(top, "README.md")] + sorted(
        os.path.join(top, "docs", f) for f in os.listdir(os.path.join(top, "docs")) if f.endswith(".md"))
    bad = missing(top, docs, words)
    for doc, name in bad:
        print(f"{doc}: `{name}` is named but is not in the sources")
    print(f"names.py: {len(docs)} documents, {len(bad)} names not found")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
