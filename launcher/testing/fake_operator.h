#pragma once

// FakeOperator: the operator's side of progress reports for tests of coach-launch's reporter and
// its in-place restarts, without a network. It records every request and answers each as the
// test says (by default: accepted, no launch directive). Thread-safe.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "api/v1/training_service.pb.h"
#include "launcher/progress_reporter.h"

namespace coach::launcher::testing {

class FakeOperator {
 public:
  using Answer = std::function<absl::StatusOr<api::v1::ReportProgressResponse>(
      const api::v1::ReportProgressRequest& request)>;

  // A sender whose reports reach this operator; it must not outlive it.
  std::unique_ptr<ProgressSender> NewSender();

  // How the requests from now on are answered; called under the operator's lock, so it must
  // not call back into the operator.
  void SetAnswer(Answer answer);
  std::vector<api::v1::ReportProgressRequest> Requests() const;
  // The launch states of the requests, in order, each state once in a row.
  std::vector<api::v1::LaunchState> LaunchStates() const;

  absl::StatusOr<api::v1::ReportProgressResponse> Receive(
      const api::v1::ReportProgressRequest& request);

 private:
  mutable absl::Mutex mu_;
  Answer answer_ ABSL_GUARDED_BY(mu_);
  std::vector<api::v1::ReportProgressRequest> requests_ ABSL_GUARDED_BY(mu_);
};

// An answer with a launch directive; `accepted` false: a dropped report's answer.
api::v1::ReportProgressResponse Directive(int attempt, bool start, bool exit, bool accepted = true);

// "attempt/PHASE[/code]", for readable expectations.
std::string Describe(const api::v1::LaunchState& state);

}  // namespace coach::launcher::testing
