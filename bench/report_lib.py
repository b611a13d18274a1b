"""Pure helpers of bench/report.sh: read the figures the benches print, render one Markdown table
and put it between the markers in bench/README.md. No I/O here beyond what the caller passes in.

Each parser takes a bench's whole output (a string) and returns a list of rows
(figure, value, against) where `value` is a string as printed; a bench that printed nothing
parseable gives []. The caller adds the bench's name, its command and the load average."""

import json
import re

BEGIN = "<!-- bench/report.sh: begin (generated; do not edit by hand) -->"
END = "<!-- bench/report.sh: end -->"

_NUM = r"-?[0-9]+(?:\.[0-9]+)?"


def summary_fields(text, tag):
    """key -> value of the last `TAG k=v ...` line, {} when none."""
    fields = {}
    for line in text.splitlines():
        if line.startswith(tag + " "):
            fields = dict(p.split("=", 1) for p in line.split()[1:] if "=" in p)
    return fields


def _row_p50_p99(text, label):
    """(p50, p99) of a bench/local table row `label  n p50 p90 p99 min max`, or None."""
    for line in text.splitlines():
        if line.startswith(label):
            nums = line[len(label):].split()[-6:]
            if len(nums) == 6 and all(re.fullmatch(_NUM, x) for x in nums):
                return nums[1], nums[3]
    return None


def parse_local(text):
    rows = []
    for label, name in (("CreateJob returned", "CreateJob returned"),
                        ("all 4 replica processes started", "submit to all 4 replicas started"),
                        ("operator view", "submit to Running (operator view, watch)"),
                        ("baseline: posix_spawn", "floor: posix_spawn of the same 4 processes")):
        got = _row_p50_p99(text, label)
        if got:
            rows.append((name + ", p50 / p99", "%s / %s ms" % got, ""))
    m = re.search(r"ratio coach/baseline at p50: processes started (%s)x, operator view (%s)x" %
                  (_NUM, _NUM), text)
    if m:
        rows.append(("4-replica start / floor, p50", "x%s (operator view x%s)" % m.groups(),
                     "posix_spawn floor, same run"))
    m = re.search(r"completion rate \(Succeeded seen on watch\)\s+(%s) jobs/s" % _NUM, text)
    b = re.search(r"baseline: posix_spawn\+wait \S+\s+(%s) /s" % _NUM, text)
    if m:
        ratio = " (floor / coach x%.1f)" % (float(b.group(1)) / float(m.group(1))) if b else ""
        rows.append(("tiny jobs completed", "%s jobs/s%s" % (m.group(1), ratio),
                     "floor %s /s (posix_spawn+wait)" % b.group(1) if b else ""))
    m = re.search(r"operator CPU \(utime\+stime\) during the run\s+(%s) s\s+\((%s) ms per job" %
                  (_NUM, _NUM), text)
    if m:
        rows.append(("operator CPU per tiny job", "%s ms" % m.group(2), ""))
    m = re.search(r"operator peak RSS \(VmHWM\)\s+(%s) MiB" % _NUM, text)
    if m:
        rows.append(("operator peak RSS (tiny jobs run)", "%s MiB" % m.group(1), ""))
    return rows


def parse_store(text):
    f = summary_fields(text, "STORE-SUMMARY")
    if not f:
        return []
    stages = f.get("stages", "").split(",")
    first = stages[0]
    rows = []
    for s in stages:
        what = ("%s jobs stored, operator restarted" % s[:-1]) if s.endswith("r") else (
            "%s jobs stored" % s)
        vs = "" if s == first else " (x%s / x%s of %s stored)" % (
            _ratio(f.get("s%s_started_p50" % s), f.get("s%s_started_p50" % first)),
            _ratio(f.get("s%s_started_p99" % s), f.get("s%s_started_p99" % first)), first)
        rows.append(("%s: submit to 4 started p50 / p99" % what,
                     "%s / %s ms%s" % (f.get("s%s_started_p50" % s), f.get("s%s_started_p99" % s),
                                       vs), "load %s" % f.get("s%s_load" % s, "?")))
        rows.append(("%s: CreateJob p50 / p99" % what,
                     "%s / %s ms" % (f.get("s%s_create_p50" % s), f.get("s%s_create_p99" % s)),
                     ""))
        vs = "" if s == first else " (x%s)" % _ratio(f.get("s%s_rss_mib" % s),
                                                     f.get("s%s_rss_mib" % first))
        rows.append(("%s: operator RSS" % what, "%s MiB%s" % (f.get("s%s_rss_mib" % s),
                                                                       vs), ""))
    return rows


def _ratio(a, b):
    try:
        return "%.2f" % (float(a) / float(b))
    except (TypeError, ValueError, ZeroDivisionError):
        return "n/a"


def parse_controlplane(text):
    """The summary line of bench/controlplane (speed) and the coach row's CPU and RSS."""
    rows = []
    m = re.search(r"coach/baseline, median of (\d+) round\(s\)(, [^:]*)?: default settings vs "
                  r"pods\+services x(%s) \[([^\]]*)\]; to the same end state \([^)]*\) x(%s)" %
                  (_NUM, _NUM), text)
    if m:
        rows.append(("coach / floor (pods+services), median of %s" % m.group(1),
                     "x%s [%s]" % (m.group(3), m.group(4)), "tight client, same run; goal x1.25"))
        rows.append(("coach / floor to the same end state", "x%s" % m.group(5),
                     "jobs + owned objects + statuses"))
    m = re.search(r"coach, default settings\s+(%s) s .*?cpu\s+(%s) s.*?peak RSS\s+(%s) MiB\s+\[(\d+) "
                  r"pods" % (_NUM, _NUM, _NUM), text)
    if m:
        rows.append(("coach: every pod and service (last round)",
                     "%s s, %s pods" % (m.group(1), m.group(4)), ""))
        rows.append(("coach: operator CPU / peak RSS (last round)",
                     "%s s / %s MiB" % (m.group(2), m.group(3)), ""))
    for label, mib in re.findall(r"^(\([abc]\) [^\n]*?)\s+(?:!!)?\s*peak RSS\s+(%s) MiB" % _NUM, text,
                                 re.M):
        rows.append(("memory " + label.strip(), "%s MiB peak RSS" % mib, ""))
    return rows


def parse_scale(text):
    f = summary_fields(text, "SCALE-SUMMARY")
    rows = []
    if f:
        rows.append(("%s jobs x %s: every pod Running" % (f["jobs"], f["replicas"]),
                     "%.1f s, %s pods" % (float(f["running_s"]), f["pods"]), ""))
        rows.append(("operator CPU per 1,000 owned pods", "%.2f s" % float(f["cpu_s_per_1k_pods"]),
                     "creation until Running"))
        rows.append(("operator RSS per 1,000 owned pods",
                     "%.2f MiB (%.1f MiB owning all, %.1f MiB empty)" % (
                         float(f["rss_mib_per_1k_pods"]), float(f["rss_mib"]),
                         float(f["rss_empty_mib"])), ""))
        rows.append(("Master Succeeded -> job Succeeded, p50 / p90 / p99",
                     "%.0f / %.0f / %.0f ms (n %s)" % (float(f["lat_p50_ms"]),
                                                       float(f["lat_p90_ms"]),
                                                       float(f["lat_p99_ms"]), f["lat_n"]),
                     "every job changing state at once; watches"))
    return rows + parse_controlplane(text)


def parse_chaos(text):
    rows = []
    for line in text.splitlines():
        if line.startswith("{") and '"suite"' in line:
            try:
                s = json.loads(line)
            except ValueError:
                continue
            counts = ", ".join("%s %s" % (k.replace("_", " "), s[k]) for k in (
                "duplicates", "lost", "unfinished", "wrong_end_state") if k in s)
            rows.append(("chaos %s: %s jobs" % (s["suite"], s.get("jobs", "?")), counts,
                         "want 0 each"))
    m = re.search(r"chaos_kube: (PASS|FAIL) in (\d+) s", text)
    if m:
        rows.append(("chaos suites", "%s in %s s" % m.groups(), ""))
    return rows


def parse_mlflow(text):
    rows = []
    for label in ("python mlflow.log_metric loop", "coach MetricLogger, 1 sender"):
        m = re.search(re.escape(label) + r"\s+([0-9,]+)", text)
        if m:
            rows.append((label, "%s metrics/s" % m.group(1), ""))
    m = re.search(r"coach \((\d+) senders\) / python:\s+(%s)x" % _NUM, text)
    if m:
        rows.append(("coach MetricLogger (%s senders) / python loop" % m.group(1),
                     "x%s" % m.group(2), "goal x50"))
    m = re.search(r"coach \((\d+) senders\) / server ceiling:\s+(%s)%%" % _NUM, text)
    if m:
        rows.append(("coach MetricLogger / server's log-batch ceiling", "%s%%" % m.group(2),
                     "goal 80%"))
    return rows


def parse_generic(text):
    """Any `NAME-SUMMARY ...` line (e.g. bench/upstream's), one row each: `NAME-SUMMARY what: value`
    splits at the first ": " outside parentheses, other lines go whole into the value."""
    rows = []
    for line in text.splitlines():
        m = re.match(r"([A-Z][A-Z0-9-]*-SUMMARY) (.*)", line)
        if m and m.group(1) not in ("SCALE-SUMMARY", "STORE-SUMMARY"):
            cut = _top_level_colon(m.group(2))
            rows.append((m.group(2)[:cut], m.group(2)[cut + 2:], "") if cut >= 0 else
                        (m.group(1).lower(), m.group(2), ""))
    return rows


def _top_level_colon(text):
    """Index of the first ": " outside parentheses, -1 when none."""
    depth = 0
    for i, c in enumerate(text):
        depth += {"(": 1, ")": -1}.get(c, 0)
        if depth == 0 and text.startswith(": ", i):
            return i
    return -1


PARSERS = {"local": parse_local, "store": parse_store, "controlplane": parse_controlplane,
           "scale": parse_scale, "chaos": parse_chaos, "mlflow": parse_mlflow,
           "generic": parse_generic}


def render(header, sections):
    """header: lines above the table; sections: [(bench, command, status, load, rows)]."""
    out = [BEGIN, ""] + header + ["",
                                  "| bench | figure | value | against / note | load (1 min) |",
                                  "|---|---|---|---|---|"]
    for bench, command, status, load, rows in sections:
        if not rows:
            out.append("| %s | `%s` | %s (nothing parseable printed) | | %s |" %
                       (bench, command, status, load))
        for i, (figure, value, note) in enumerate(rows):
            label = "%s (`%s`%s)" % (bench, command, "" if status == "ok" else ", " + status) \
                if i == 0 else ""
            out.append("| %s | %s | %s | %s | %s |" % (label, _cell(figure), _cell(value),
                                                      _cell(note), load))
    out += ["", END]
    return "\n".join(out)


def _cell(s):
    return str(s).replace("|", "\\|").replace("\n", " ")


def replace_between_markers(doc, block):
    """doc with the text from BEGIN to END replaced by block (appended at the end if absent)."""
    b, e = doc.find(BEGIN), doc.find(END)
    if b >= 0 and e > b:
        return doc[:b] + block + doc[e + len(END):]
    return doc.rstrip("\n") + "\n\n" + block + "\n"
