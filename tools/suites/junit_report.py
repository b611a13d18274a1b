"""Writes a suite's JUnit report: its own cases (tools/suites/lib.sh records them) and the cases of
the reports its runners wrote (pytest --junitxml, GoogleTest --gtest_output=xml).

Usage: junit_report.py SUITE CASES_TSV XML_OUT [REPORT ...]
CASES_TSV has one line per case: status (passed|failed|skipped), name, seconds, message.
XML_OUT may be empty (a suite run outside Bazel): the counts are printed either way. A report
that is missing or unreadable is a failed case of its own, so a runner that died is never
counted as passing.
"""
import sys
import xml.etree.ElementTree as ET


def own_cases(suite, path):
    cases = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) < 4:
                continue
            status, name, seconds, message = fields[:4]
            # A failure recorded in a subshell and again by the suite's exit: one case.
            if cases and cases[-1][1] == name:
                if cases[-1][0] == "failed":
                    continue
                cases.pop()
            cases.append((status, name, seconds, message))
    suite_el = ET.Element("testsuite", name=suite)
    for status, name, seconds, message in cases:
        case = ET.SubElement(suite_el, "testcase", name=name, classname=suite, time=seconds)
        if status == "failed":
            ET.SubElement(case, "failure", message=message).text = message
        elif status == "skipped":
            ET.SubElement(case, "skipped", message=message)
    return suite_el


def runner_suites(suite, path):
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        broken = ET.Element("testsuite", name=f"{suite}.report")
        case = ET.SubElement(broken, "testcase", name=path, classname=suite, time="0")
        ET.SubElement(case, "failure", message=f"unreadable report: {e}")
        return [broken]
    return [root] if root.tag == "testsuite" else list(root.iter("testsuite"))


def count(suites):
    passed = failed = skipped = 0
    for s in suites:
        for case in s.iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failed += 1
            elif case.find("skipped") is not None or case.get("status") == "notrun":
                skipped += 1
            else:
                passed += 1
    return passed, failed, skipped


def main(argv):
    if len(argv) < 4:
        sys.exit("usage: junit_report.py SUITE CASES_TSV XML_OUT [REPORT ...]")
    suite, cases_path, out = argv[1], argv[2], argv[3]
    suites = [own_cases(suite, cases_path)]
    for report in argv[4:]:
        suites.extend(runner_suites(suite, report))
    passed, failed, skipped = count(suites)
    root = ET.Element("testsuites", tests=str(passed + failed + skipped), failures=str(failed))
    for s in suites:
        s.set("tests", str(len(list(s.iter("testcase")))))
        root.append(s)
    if out:
        ET.ElementTree(root).write(out, encoding="utf-8", xml_declaration=True)
    print(f"{suite}: {passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
