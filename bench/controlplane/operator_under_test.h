#pragma once

// The operator a control-plane benchmark measures: coach-operator --backend=kube, the
// upstream Kubeflow Training Operator (bench/upstream builds it), as a child process on free
// loopback ports, or upstream Trainer v2 with its JobSet controller (two processes, started and
// stopped by bench/upstream/upstream-trainer). The harness reads the same things of both: its pid
// (CPU and RSS from /proc), when it became ready, and its Prometheus /metrics.
//
// Not thread-safe.

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace coach::bench {

enum class OperatorKind { kCoach, kUpstream, kUpstreamTrainer };

struct OperatorConfig {
  OperatorKind kind = OperatorKind::kCoach;
  std::string binary;      // coach-operator, training-operator or bench/upstream/upstream-trainer
  std::string kubeconfig;  // admin kubeconfig of the cluster
  std::vector<std::string> extra;  // flags after the harness's own (client limits)
  std::string log_dir;             // where its log goes
  std::string label;               // names the log file
  // Upstream: the port its webhook server listens on (the ValidatingWebhookConfiguration's
  // URL names it) and the namespace it believes it runs in (its Secret's).
  int webhook_port = 0;
  std::string upstream_namespace = "kubeflow";
};

class OperatorUnderTest {
 public:
  virtual ~OperatorUnderTest() = default;
  virtual pid_t pid() const = 0;
  // Every process of the operator (upstream Trainer: the trainer's and JobSet's managers), whose
  // CPU and memory the harness adds up.
  virtual std::vector<pid_t> pids() const { return {pid()}; }
  // Seconds from spawn until it is ready to work: coach's /readyz; upstream's /readyz (its
  // certificates and webhook server) and its PyTorchJob controller's workers started (that
  // controller's caches synced).
  virtual double ready_after() const = 0;
  // Its /metrics text ("" when it did not answer).
  virtual std::string Metrics() const = 0;
  // The Prometheus counter and seconds-sum of its reconcile passes (summed over series).
  virtual std::string PassesMetric() const = 0;
  virtual std::string PassSecondsMetric() const = 0;
  // Which series of those count (a label pair; "": all of them).
  virtual std::string PassesSeries() const = 0;
  virtual std::string log_path() const = 0;
  // SIGTERM, then SIGKILL after a grace period; idempotent.
  virtual void Stop() = 0;
};

// Starts the operator and waits (up to `timeout_s`) until it is ready. Unavailable when it
// exited, DeadlineExceeded when it was not ready in time (both name its log).
absl::StatusOr<std::unique_ptr<OperatorUnderTest>> StartOperator(const OperatorConfig& config,
                                                                 double timeout_s);

// GET http://127.0.0.1:<port><path>: the status (0 when nothing answered) and the body.
std::pair<long, std::string> HttpGet(int port, const std::string& path);

}  // namespace coach::bench
