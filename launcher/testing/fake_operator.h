#pragma once

// FakeOperator: the operator's side of progress reports for tests of coach-launch's reporter,
// its in-place restarts and its checkpoint requests, without a network (NewSender) or over gRPC
// for a coach-launch process (Serve). It records every request and answers each as the test
// says (by default: accepted, no launch directive), with the checkpoint request the test set, if
// any, in every answer (as the operator sends a job's request to each of its pods). Thread-safe.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "api/v1/training_service.pb.h"
#include "launcher/progress_reporter.h"

namespace coach::launcher::testing {

class FakeOperator {
 public:
  using Answer = std::function<absl::StatusOr<api::v1::ReportProgressResponse>(
      const api::v1::ReportProgressRequest& request)>;

  FakeOperator();
  ~FakeOperator();

  // A sender whose reports reach this operator; it must not outlive it.
  std::unique_ptr<ProgressSender> NewSender();
  // Serves ReportProgress on 127.0.0.1 (plaintext) until this is destroyed; its address
  // ("127.0.0.1:PORT"). Once.
  std::string Serve();

  // Every answer from now on carries `request` (none: no checkpoint request).
  void SetCheckpoint(std::optional<api::v1::CheckpointRequest> request);
  // The checkpoint answers of the requests, in order, each once in a row.
  std::vector<api::v1::CheckpointReport> CheckpointReports() const;

  // How the requests from now on are answered; called under the operator's lock, so it must
  // not call back into the operator.
  void SetAnswer(Answer answer);
  std::vector<api::v1::ReportProgressRequest> Requests() const;
  // The launch states of the requests, in order, each state once in a row.
  std::vector<api::v1::LaunchState> LaunchStates() const;

  absl::StatusOr<api::v1::ReportProgressResponse> Receive(
      const api::v1::ReportProgressRequest& request);

 private:
  class Service;

  mutable absl::Mutex mu_;
  Answer answer_ ABSL_GUARDED_BY(mu_);
  std::optional<api::v1::CheckpointRequest> checkpoint_ ABSL_GUARDED_BY(mu_);
  std::vector<api::v1::ReportProgressRequest> requests_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<Service> service_;
};

// A checkpoint request with `id` and `deadline`.
api::v1::CheckpointRequest CheckpointRequestOf(int64_t id, absl::Time deadline);

// An answer with a launch directive; `accepted` false: a dropped report's answer.
api::v1::ReportProgressResponse Directive(int attempt, bool start, bool exit, bool accepted = true);

// "attempt/PHASE[/code]", for readable expectations.
std::string Describe(const api::v1::LaunchState& state);

}  // namespace coach::launcher::testing
