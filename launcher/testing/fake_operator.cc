#include "launcher/testing/fake_operator.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace coach::launcher::testing {
namespace {

class FakeSender : public ProgressSender {
 public:
  explicit FakeSender(FakeOperator* op) : op_(op) {}
  absl::StatusOr<api::v1::ReportProgressResponse> Send(
      const api::v1::ReportProgressRequest& request, const std::string&, absl::Duration) override {
    return op_->Receive(request);
  }
  void Reconnect() override {}

 private:
  FakeOperator* const op_;
};

}  // namespace

std::unique_ptr<ProgressSender> FakeOperator::NewSender() {
  return std::make_unique<FakeSender>(this);
}

void FakeOperator::SetAnswer(Answer answer) {
  absl::MutexLock lock(&mu_);
  answer_ = std::move(answer);
}

std::vector<api::v1::ReportProgressRequest> FakeOperator::Requests() const {
  absl::MutexLock lock(&mu_);
  return requests_;
}

std::vector<api::v1::LaunchState> FakeOperator::LaunchStates() const {
  std::vector<api::v1::LaunchState> states;
  for (const api::v1::ReportProgressRequest& r : Requests()) {
    if (!r.has_launch()) continue;
    if (!states.empty() && states.back().SerializeAsString() == r.launch().SerializeAsString()) {
      continue;
    }
    states.push_back(r.launch());
  }
  return states;
}

absl::StatusOr<api::v1::ReportProgressResponse> FakeOperator::Receive(
    const api::v1::ReportProgressRequest& request) {
  absl::MutexLock lock(&mu_);
  requests_.push_back(request);
  if (answer_) return answer_(request);
  api::v1::ReportProgressResponse accepted;
  accepted.set_accepted(true);
  return accepted;
}

api::v1::ReportProgressResponse Directive(int attempt, bool start, bool exit, bool accepted) {
  api::v1::ReportProgressResponse r;
  r.set_accepted(accepted);
  r.mutable_launch()->set_attempt(attempt);
  r.mutable_launch()->set_start(start);
  r.mutable_launch()->set_exit(exit);
  return r;
}

std::string Describe(const api::v1::LaunchState& state) {
  std::string s =
      absl::StrCat(state.attempt(), "/", api::v1::LaunchState::Phase_Name(state.phase()));
  if (state.exit_code() != 0) absl::StrAppend(&s, "/", state.exit_code());
  return s;
}

}  // namespace coach::launcher::testing
