#pragma once

// The figures of one timed run (an operator's, or the floor's) and the lines they are printed
// in. bench/report_lib.py and readers of bench/README.md parse these lines: their text and
// number formats are an interface.

#include <cstddef>
#include <string>
#include <vector>

#include "bench/controlplane/control_plane_figures.h"

namespace coach::bench::controlplane {

struct SpeedResult {
  bool ok = false;
  double wall_s = 0;              // first POST -> every pod and service seen
  double submit_s = 0;            // first POST -> last POST returned
  double first_s = 0;             // first POST -> the first pod or service seen
  double half_s = 0;              // first POST -> half of the pods and half of the services seen
  double end_state_s = 0;         // first POST -> also every job's status seen (0: not measured)
  ControlPlaneCpu control_plane;  // over wall_s
  double cpu_s = 0;               // operator utime+stime over wall_s
  double cpu_settled_s = 0;
  long hwm_kb = 0;
  long rss_kb = 0;
  double ready_after = 0;
  size_t pods = 0, services = 0;
  std::string load;
  std::string requests;  // apiserver requests during the run (all clients), by verb/resource
  double passes = 0;     // the operator's reconcile passes until every object was seen
  double pass_mean_ms = 0;
  bool webhook_refused = false;  // upstream: its webhook refused the probe job at create
};

// "round 2 of 3 ... wall  objects/s ...": the heading above a round's PrintSpeed lines.
void PrintRoundHeading(int round, int rounds);

// A run's lines: wall time, objects a second, submission, with `baseline_wall` > 0 the ratio to
// it, the operator's CPU and memory when read; then its milestones and the control plane's CPU,
// the operator's passes and the API server's requests.
void PrintSpeed(const std::string& label, const SpeedResult& r, double baseline_wall);

// "   peak RSS ... MiB  RSS ... MiB  cpu ... s  ready ... s  [N pods, N svcs; load ...]\n": a
// memory run's figures after its label ("!!" in front when the run failed).
std::string MemoryFigures(const SpeedResult& r);

// The median (the mean of the middle two for an even count); 0 for none.
double Median(std::vector<double> v);

// The successful run whose wall time is the median one (the lower middle for an even count),
// whose requests and load are printed next to the medians; nullptr when none succeeded.
const SpeedResult* MedianRun(const std::vector<SpeedResult>& runs);

// "1.15 1.33 1.15": each value with two decimals.
std::string EachFixed2(const std::vector<double>& values);

}  // namespace coach::bench::controlplane
