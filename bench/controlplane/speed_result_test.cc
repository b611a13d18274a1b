#include "bench/controlplane/speed_result.h"

#include <gtest/gtest.h>

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

// The lines pinned here are what bench/report_lib.py's parse_controlplane reads (the coach row's
// wall, CPU, peak RSS and pods; a memory run's peak RSS) and what bench/README.md quotes.

namespace coach::bench::controlplane {
namespace {

SpeedResult CoachRun() {
  SpeedResult r;
  r.ok = true;
  r.wall_s = 0.43;
  r.submit_s = 0.32;
  r.first_s = 0.05;
  r.half_s = 0.32;
  r.end_state_s = 0.48;
  r.control_plane = {0.21, 0.04, 0, 0, 0};
  r.cpu_s = 0.09;
  r.cpu_settled_s = 0.10;
  r.hwm_kb = 37786;
  r.rss_kb = 37786;
  r.ready_after = 0.47;
  r.pods = 8;
  r.services = 8;
  r.load = "6.87 8.51 7.47";
  r.requests = "POST pods 8, POST services 8";
  r.passes = 6;
  r.pass_mean_ms = 131.9;
  return r;
}

std::string Printed(const std::string& label, const SpeedResult& r, double baseline_wall) {
  std::ostringstream out;
  std::streambuf* was = std::cout.rdbuf(out.rdbuf());
  PrintSpeed(label, r, baseline_wall);
  std::cout.rdbuf(was);
  return out.str();
}

TEST(PrintSpeedTest, CoachRowAgainstTheFloor) {
  EXPECT_EQ(Printed("coach, default settings", CoachRun(), 0.15),
            "coach, default settings                   0.43 s     37.2 obj/s  submit   0.32 s  "
            "x 2.87  cpu  0.09 s (settled  0.10)  peak RSS  36.9 MiB  [8 pods, 8 svcs; load 6.87 "
            "8.51 7.47]\n"
            "      first object 0.05 s, half 0.32 s, all 0.43 s after the first POST, every job's "
            "status too 0.48 s; control plane CPU meanwhile: kube-apiserver 0.21 s, etcd 0.04 s, "
            "controller-manager 0.00 s, scheduler 0.00 s, kwok 0.00 s\n"
            "      operator: 6 reconcile passes, 131.9 ms each on average\n"
            "      apiserver requests meanwhile: POST pods 8, POST services 8\n");
}

TEST(PrintSpeedTest, FailedFloorRunWithoutOperatorFigures) {
  SpeedResult r;
  r.wall_s = 2;
  r.pods = 3;
  r.services = 1;
  r.load = "1.00 1.00 1.00";
  EXPECT_EQ(Printed("baseline: pods+services, 32 threads", r, 0),
            "baseline: pods+services, 32 threads !!     2.00 s      2.0 obj/s  submit   0.00 s  "
            "[3 pods, 1 svcs; load 1.00 1.00 1.00]\n"
            "      first object 0.00 s, half 0.00 s, all 2.00 s after the first POST; control "
            "plane CPU meanwhile: kube-apiserver 0.00 s, etcd 0.00 s, controller-manager 0.00 s, "
            "scheduler 0.00 s, kwok 0.00 s\n");
}

TEST(MemoryFiguresTest, OkAndFailed) {
  SpeedResult r = CoachRun();
  EXPECT_EQ(MemoryFigures(r),
            "   peak RSS   36.9 MiB  RSS   36.9 MiB  cpu  0.10 s  ready 0.47 s  [8 pods, 8 svcs; "
            "load 6.87 8.51 7.47]\n");
  r.ok = false;
  EXPECT_EQ(MemoryFigures(r).substr(0, 12), "!! peak RSS ");
}

TEST(MedianTest, OddEvenAndEmpty) {
  EXPECT_EQ(Median({3, 1, 2}), 2);
  EXPECT_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(Median({}), 0);
}

TEST(MedianRunTest, LowerMiddleOfTheSuccessfulRuns) {
  std::vector<SpeedResult> runs(4);
  const double walls[] = {3, 1, 9, 2};
  for (size_t i = 0; i < runs.size(); ++i) {
    runs[i].ok = i != 2;
    runs[i].wall_s = walls[i];
  }
  ASSERT_NE(MedianRun(runs), nullptr);
  EXPECT_EQ(MedianRun(runs)->wall_s, 2);
  runs.resize(1);
  runs[0].ok = false;
  EXPECT_EQ(MedianRun(runs), nullptr);
}

TEST(EachFixed2Test, TwoDecimalsSpaceSeparated) {
  EXPECT_EQ(EachFixed2({1.154, 1.33, 2}), "1.15 1.33 2.00");
  EXPECT_EQ(EachFixed2({}), "");
}

}  // namespace
}  // namespace coach::bench::controlplane
