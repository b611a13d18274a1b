"""Unit tests of bench/report_lib.py and bench/scale/scale_lib.py (pure helpers of the benches)."""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "scale"))
import report_lib  # noqa: E402
import scale_lib  # noqa: E402

LOCAL = """\
ms from just before CreateJob                    n      p50      p90      p99      min      max
CreateJob returned (accepted, durable)          50     2.18     2.92     3.17     1.50     3.17
all 4 replica processes started (probe)         50    10.72    11.89    14.44     9.10    14.44
operator view (active==N and Running)           50    12.44    13.96    14.59    11.18    14.59
baseline: posix_spawn 4 probes, all started     50     3.25     3.51     3.80     2.35     3.80
ratio coach/baseline at p50: processes started 3.3x, operator view 3.8x
completion rate (Succeeded seen on watch)         127.0 jobs/s  (7.88 s from first CreateJob)
operator CPU (utime+stime) during the run          7.39 s  (7.39 ms per job, 94% of one CPU)
operator peak RSS (VmHWM)                          37.8 MiB (RSS now 37.8 MiB)
baseline: posix_spawn+wait /bin/true             3178.3 /s      (0.31 s for all)
"""

CONTROLPLANE = """\
coach, default settings                   2.61 s    306.6 obj/s  submit   0.20 s  x 1.15  cpu  0.44 s (settled  0.48)  peak RSS  40.3 MiB  [400 pods, 400 svcs; load 2.60 2.80 2.89]
coach/baseline, median of 5 round(s), pods left unscheduled: default settings vs pods+services x1.15 [1.33 1.15 1.15 1.19 1.15]; to the same end state (jobs, owned objects, statuses) x1.05 [1.04 1.07 1.00 1.05 1.06] (goal x1.25)
(a) 10 jobs, empty cluster                                    peak RSS   36.8 MiB  RSS   36.5 MiB  cpu  0.20 s
"""


class ReportLibTest(unittest.TestCase):
    def test_local_rows_and_ratios(self):
        rows = dict((f, v) for f, v, _ in report_lib.parse_local(LOCAL))
        self.assertEqual(rows["submit to all 4 replicas started, p50 / p99"], "10.72 / 14.44 ms")
        self.assertEqual(rows["CreateJob returned, p50 / p99"], "2.18 / 3.17 ms")
        self.assertEqual(rows["4-replica start / floor, p50"], "x3.3 (operator view x3.8)")
        self.assertEqual(rows["tiny jobs completed"], "127.0 jobs/s (floor / coach x25.0)")
        self.assertEqual(rows["operator CPU per tiny job"], "7.39 ms")
        self.assertEqual(rows["operator peak RSS (tiny jobs run)"], "37.8 MiB")

    def test_nothing_parseable_gives_no_rows(self):
        for parse in report_lib.PARSERS.values():
            self.assertEqual(parse("build failed\n"), [])

    def test_store_ratios_against_first_stage(self):
        text = ("noise\nSTORE-SUMMARY s0_create_p50=2.0 s0_create_p99=4.0 s0_started_p50=10.0 "
                "s0_started_p99=20.0 s0_view_p50=12 s0_view_p99=22 s0_rss_mib=30.0 s0_load=3.1 "
                "s500_create_p50=2.2 s500_create_p99=4.4 s500_started_p50=11.0 s500_started_p99=30.0 "
                "s500_view_p50=13 s500_view_p99=33 s500_rss_mib=33.0 s500_load=3.5 stages=0,500\n")
        rows = dict((f, v) for f, v, _ in report_lib.parse_store(text))
        self.assertEqual(rows["0 jobs stored: submit to 4 started p50 / p99"], "10.0 / 20.0 ms")
        self.assertEqual(rows["500 jobs stored: submit to 4 started p50 / p99"],
                         "11.0 / 30.0 ms (x1.10 / x1.50 of 0 stored)")
        self.assertEqual(rows["500 jobs stored: operator RSS"], "33.0 MiB (x1.10)")

    def test_controlplane_summary_and_coach_row(self):
        rows = dict((f, v) for f, v, _ in report_lib.parse_controlplane(CONTROLPLANE))
        self.assertEqual(rows["coach / floor (pods+services), median of 5"],
                         "x1.15 [1.33 1.15 1.15 1.19 1.15]")
        self.assertEqual(rows["coach / floor to the same end state"], "x1.05")
        self.assertEqual(rows["coach: operator CPU / peak RSS (last round)"], "0.44 s / 40.3 MiB")
        self.assertEqual(rows["memory (a) 10 jobs, empty cluster"], "36.8 MiB peak RSS")

    def test_scale_summary(self):
        line = scale_lib.summary_line("SCALE-SUMMARY", {
            "jobs": 30, "replicas": 8, "pods": 240, "running_s": 12.5, "cpu_s_per_1k_pods": 2.8333,
            "rss_mib": 39.5, "rss_empty_mib": 29.4, "rss_mib_per_1k_pods": 42.4, "lat_n": 30,
            "lat_p50_ms": 344.4, "lat_p90_ms": 1064.3, "lat_p99_ms": 1122.3})
        self.assertIn(" cpu_s_per_1k_pods=2.833 ", line)
        rows = dict((f, v) for f, v, _ in report_lib.parse_scale(line))
        self.assertEqual(rows["Master Succeeded -> job Succeeded, p50 / p90 / p99"],
                         "344 / 1064 / 1122 ms (n 30)")
        self.assertEqual(rows["operator CPU per 1,000 owned pods"], "2.83 s")

    def test_chaos_json_and_mlflow(self):
        chaos = ('{"duplicates": 0, "jobs": 30, "lost": 0, "suite": "kills", "unfinished": 0, '
                 '"wrong_end_state": 0}\nchaos_kube: PASS in 177 s\n')
        rows = report_lib.parse_chaos(chaos)
        self.assertEqual(rows[0], ("chaos kills: 30 jobs",
                                   "duplicates 0, lost 0, unfinished 0, wrong end state 0",
                                   "want 0 each"))
        self.assertEqual(rows[1][1], "PASS in 177 s")
        mlflow = "coach (4 senders) / python:    61.2x   (goal >= 50x)\n"
        self.assertEqual(report_lib.parse_mlflow(mlflow)[0][1], "x61.2")

    def test_generic_summary_lines(self):
        rows = report_lib.parse_generic(
            "UPSTREAM-SUMMARY memory with 0 unrelated pods: coach 34.4 MiB, upstream 56.4 MiB\n"
            "UPSTREAM-SUMMARY upstream (defaults: qps 20): every pod 7.24 s\n"
            "OTHER-SUMMARY k=1 v=2\nSCALE-SUMMARY jobs=1\n")
        self.assertEqual(rows, [("memory with 0 unrelated pods", "coach 34.4 MiB, upstream 56.4 MiB",
                                 ""), ("upstream (defaults: qps 20)", "every pod 7.24 s", ""),
                                ("other-summary", "k=1 v=2", "")])

    def test_render_and_replace_between_markers(self):
        block = report_lib.render(["run: x"], [("b", "cmd", "ok", "1.0", [("f|g", "v", "")]),
                                               ("c", "cmd2", "exit 1", "2.0", [])])
        self.assertIn("| b (`cmd`) | f\\|g | v |  | 1.0 |", block)
        self.assertIn("nothing parseable", block)
        doc = "# T\n\ntext\n"
        once = report_lib.replace_between_markers(doc, block)
        self.assertTrue(once.startswith(doc.rstrip("\n")))
        twice = report_lib.replace_between_markers(once, block.replace("run: x", "run: y"))
        self.assertEqual(twice.count(report_lib.BEGIN), 1)
        self.assertIn("run: y", twice)
        self.assertNotIn("run: x", twice)


class ScaleLibTest(unittest.TestCase):
    def test_percentiles_nearest_rank(self):
        s = scale_lib.summarize([float(x) for x in range(100, 0, -1)])
        self.assertEqual((s["n"], s["p50"], s["p90"], s["p99"], s["max"]), (100, 50, 90, 99, 100))
        self.assertEqual(scale_lib.summarize([])["p99"], 0.0)
        self.assertEqual(scale_lib.summarize([7.0])["p50"], 7.0)

    def test_latencies_pair_by_job_and_clamp(self):
        lat = scale_lib.latencies({"a": 1.0, "b": 2.0, "c": 3.0}, {"a": 1.5, "b": 1.9})
        self.assertEqual(sorted(lat), [0.0, 500.0])

    def test_job_and_conditions(self):
        job = scale_lib.pytorch_job("ns", "j", 8)
        specs = job["spec"]["pytorchReplicaSpecs"]
        self.assertEqual((specs["Master"]["replicas"], specs["Worker"]["replicas"]), (1, 7))
        self.assertNotIn("Worker", scale_lib.pytorch_job("ns", "j", 1)["spec"]["pytorchReplicaSpecs"])
        self.assertEqual(job["spec"]["runPolicy"]["cleanPodPolicy"], "None")
        done = {"status": {"conditions": [{"type": "Succeeded", "status": "True"}]}}
        self.assertTrue(scale_lib.has_condition(done, "Succeeded"))
        self.assertFalse(scale_lib.has_condition(done, "Failed"))
        self.assertFalse(scale_lib.has_condition({"status": None}, "Succeeded"))


if __name__ == "__main__":
    unittest.main()
