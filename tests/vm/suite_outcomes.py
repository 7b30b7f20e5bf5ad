#!/usr/bin/env python3
"""Per-test outcomes of a verbose unittest run (rdma-core's tests/run_tests.py -v).

Prints one line per test, sorted: "<module.Class.test> <ok|skip|fail|error|xfail|xpass>".
unittest writes "name (id) ... outcome", or "name (id)\\ndocstring ... outcome" when the test has
a docstring. What the test or a library prints to stderr can land between " ... " and the
outcome, which then starts a line of its own. A test without an outcome is "noresult".
"""
import re
import sys

START = re.compile(r"^(test\w*) \(([\w.]+)\)")
OUTCOME = re.compile(r"\.\.\. (ok|skipped|ERROR|FAIL|expected failure|unexpected success)\b")
BARE = re.compile(r"^(ok|skipped\b|ERROR|FAIL|expected failure|unexpected success)\s*(?:['\"].*)?$")
NAMES = {"ok": "ok", "skipped": "skip", "ERROR": "error", "FAIL": "fail",
         "expected failure": "xfail", "unexpected success": "xpass"}


def outcomes(lines):
    result = {}
    current = None
    for line in lines:
        m = START.match(line)
        if m:
            if current and current not in result:
                result[current] = "noresult"
            ident = m.group(2)
            # Python 3.11 prints the full id (module.Class.test); older ones module.Class.
            current = ident if ident.endswith("." + m.group(1)) else ident + "." + m.group(1)
        o = OUTCOME.search(line) or BARE.match(line)
        if o and current and current not in result:
            result[current] = NAMES[o.group(1)]
    if current and current not in result:
        result[current] = "noresult"
    return result


def main():
    with open(sys.argv[1], errors="replace") as f:
        res = outcomes(f)
    for test in sorted(res):
        print(test, res[test])


if __name__ == "__main__":
    main()
