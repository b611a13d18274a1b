"""Counts passed and failed test cases from Bazel's GoogleTest XML reports.

Usage: count_test_results.py TESTLOGS_DIR //label ... ; prints "PASSED FAILED".
A test target without a report (build failure, crash before writing) counts as one failure.
"""
import os
import sys
import xml.etree.ElementTree as ET


def count(testlogs, labels):
    passed = failed = 0
    for label in labels:
        path = label.lstrip("/").replace(":", "/")
        report = os.path.join(testlogs, path, "test.xml")
        if not os.path.exists(report):
            failed += 1
            continue
        try:
            root = ET.parse(report).getroot()
        except ET.ParseError:
            failed += 1
            continue
        cases = root.iter("testcase")
        any_case = False
        for case in cases:
            any_case = True
            if case.find("failure") is not None or case.find("error") is not None:
                failed += 1
            elif case.get("status", "run") == "run" and case.find("skipped") is None:
                passed += 1
        if not any_case:
            # A non-gtest test (sh_test): Bazel writes one testsuite with its verdict.
            suite = root.find(".//testsuite")
            bad = suite is not None and (int(suite.get("failures", 0)) or int(suite.get("errors", 0)))
            if bad:
                failed += 1
            else:
                passed += 1
    return passed, failed


if __name__ == "__main__":
    p, f = count(sys.argv[1], sys.argv[2:])
    print(p, f)
