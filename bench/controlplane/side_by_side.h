#pragma once

// The driver both comparisons of coach with an upstream operator share (--only upstream:
// the Training Operator on PyTorchJobs; --only trainjob: Trainer v2 + JobSet on TrainJobs): the
// operators one at a time on this control plane, in alternating rounds, with the same creating
// client and measurements, then each one's medians side by side. What differs between the two
// comparisons is data (SideBySide); the rounds, medians and request lines exist once.

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/controlplane/flags.h"
#include "bench/controlplane/installation.h"
#include "bench/controlplane/operator_under_test.h"
#include "bench/controlplane/speed_result.h"
#include "operator/backend/kube/client/rest_kube_client.h"

namespace coach::bench::controlplane {

// One operator configuration of a speed comparison and its rounds.
struct Row {
  std::string name;
  OperatorKind kind;
  std::vector<std::string> extra;
  std::vector<SpeedResult> runs;
};

// A row's medians over its successful rounds (at least one), for its line in the summary.
struct RowMedians {
  std::vector<double> walls;  // each successful round's wall time, in round order
  double wall_s = 0;          // the median of walls
  double cpu_s = 0;
  double hwm_mib = 0;
  double passes = 0;
  const SpeedResult* median_run = nullptr;  // MedianRun: its load is printed beside
  double coach_wall_s = 0;  // the first (coach) row's median wall; 0 when it had no success
};

// What differs between the comparisons.
struct SideBySide {
  std::string ns_prefix;      // namespaces <ns_prefix><row>-<run id>-<round>
  std::string label_prefix;   // the operators' logs, <label_prefix><row>-<round>
  std::string jobs_noun;      // "jobs" or "TrainJobs", and
  std::string replicas_noun;  // "replicas" or "nodes", in the summary's heading
  std::string table_heading;  // printed above the rows' lines ("": none)
  // Prints (or keeps) the summary line of a row with a successful round.
  std::function<void(const Row&, const RowMedians&)> print_row;
  std::string requests_heading;  // the line above each row's requests in its median round
};

// False, after printing which is missing, unless every flag in `required` (name, value) has a
// value; `only` is the mode that needs them.
bool HaveRequiredFlags(const std::string& only,
                       const std::vector<std::pair<const char*, const std::string*>>& required);

// Both operators' CRDs from f's folders, with f.upstream_webhook unless f.train_jobs
// (upstream-trainer registers Trainer's and JobSet's webhooks itself). Installation::Create's
// errors.
absl::StatusOr<std::unique_ptr<Installation>> InstallOperators(const Flags& f,
                                                               kubeclient::KubeClient* client);

// f.rounds rounds of every row (the first is coach, whose median the ratios divide by), each
// run's lines as it ends, then the medians and each row's requests in its median round. Returns
// 1 when a run failed, else 0.
int RunSideBySide(const Flags& f, kubeclient::RestKubeClient* client, Installation* installation,
                  const std::string& run_id, const SideBySide& how, std::vector<Row>* rows);

}  // namespace coach::bench::controlplane
