"""Counts passed and failed test cases of one `bazel test` invocation.

Usage: count_test_results.py BEP_JSON_FILE //label ... ; prints "PASSED FAILED".

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


def count_report(status, path):
    """(passed, failed) for one test run."""
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
        elif case.get("status", "run") == "run" and case.find("skipped") is None:
            passed += 1
    if not any_case:
        # A test without GoogleTest cases (sh_test): its verdict is the run's.
        return (1, 0) if status == "PASSED" else (0, 1)
    if status != "PASSED" and failed == 0:
        # Crashed or timed out after writing some cases: the run itself failed.
        failed = 1
    return (passed, failed)


def count(bep_path, labels):
    reports = reports_by_label(bep_path)
    passed = failed = 0
    for label in labels:
        runs = reports.get(label)
        if not runs:
            failed += 1
            continue
        for status, path in runs:
            p, f = count_report(status, path)
            passed += p
            failed += f
    return passed, failed


if __name__ == "__main__":
    p, f = count(sys.argv[1], sys.argv[2:])
    print(p, f)
