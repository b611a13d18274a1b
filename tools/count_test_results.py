"""Counts passed and failed test cases of one `bazel test` invocation.

Usage: count_test_results.py BEP_JSON_FILE //label ... ; prints "PASSED FAILED".

Each failed case is also written to stderr with the end of its failure text (an assertion is at the
end of pytest's and GoogleTest's), so that the tail of a long run's log says what failed and why.

Only the reports that this invocation's build event stream names are read (results Bazel
took from its cache included), so stale files left in bazel-testlogs by an earlier run can
never be counted. A test target without a result in the stream (it failed to build, or
Bazel stopped before running it) counts as one failure; so does a result without a report.
"""
import json
import os
import sys
import urllib.parse
import xml.etree.ElementTree as ET


def reports_by_label(bep_path):
    reports = {}
    if not os.path.exists(bep_path):
        return reports
    with open(bep_path, encoding="utf-8") as f:
        for line in f:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            result = event.get("testResult")
            label = event.get("id", {}).get("testResult", {}).get("label")
            if result is None or label is None:
                continue
            xml = None
            for output in result.get("testActionOutput", []):
                if output.get("name") == "test.xml":
                    xml = urllib.parse.unquote(urllib.parse.urlparse(output.get("uri", "")).path)
            reports.setdefault(label, []).append((result.get("status", ""), xml))
    return reports


FAILURE_LINES = 25  # of each failed case's text
FAILURES_SHOWN = 12


def failure_text(case):
    """The end of a failed case's failure (or error) message and text."""
    found = case.find("failure")
    if found is None:
        found = case.find("error")
    text = "\n".join(t for t in (found.get("message", ""), found.text or "") if t.strip())
    lines = text.strip().splitlines()
    shown = lines[-FAILURE_LINES:]
    if len(lines) > len(shown):
        shown.insert(0, "... (%d lines before)" % (len(lines) - len(shown)))
    return shown


def count_report(status, path, failures=None):
    """(passed, failed) for one test run; appends (case, text lines) of each failed case to
    `failures`."""
    if not path or not os.path.exists(path):
        return (0, 1)
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError:
        return (0, 1)
    passed = failed = 0
    any_case = False
    for case in root.iter("testcase"):
        any_case = True
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
            if failures is not None:
                name = ".".join(n for n in (case.get("classname", ""), case.get("name", "")) if n)
                failures.append((name, failure_text(case)))
        elif case.get("status", "run") == "run" and case.find("skipped") is None:
            passed += 1
    if not any_case:
        # A test without GoogleTest cases (sh_test): its verdict is the run's.
        return (1, 0) if status == "PASSED" else (0, 1)
    if status != "PASSED" and failed == 0:
        # Crashed or timed out after writing some cases: the run itself failed.
        failed = 1
    return (passed, failed)


def count(bep_path, labels, out=None):
    """(passed, failed); with `out`, the failed cases written there."""
    reports = reports_by_label(bep_path)
    passed = failed = 0
    shown = 0
    for label in labels:
        runs = reports.get(label)
        if not runs:
            failed += 1
            if out is not None:
                print("== failed: %s (no result: it did not build or did not run)" % label, file=out)
            continue
        for status, path in runs:
            failures = []
            p, f = count_report(status, path, failures)
            passed += p
            failed += f
            if out is None:
                continue
            if f and not failures:
                print("== failed: %s (%s, no failed case in its report)" % (label, status), file=out)
            for name, lines in failures:
                shown += 1
                if shown > FAILURES_SHOWN:
                    continue
                print("== failed: %s %s" % (label, name), file=out)
                for line in lines:
                    print("   " + line, file=out)
    if out is not None and shown > FAILURES_SHOWN:
        print("== ... and %d failed case(s) more" % (shown - FAILURES_SHOWN), file=out)
    return passed, failed


if __name__ == "__main__":
    p, f = count(sys.argv[1], sys.argv[2:], out=sys.stderr)
    print(p, f)
