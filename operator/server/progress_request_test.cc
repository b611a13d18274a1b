#include "operator/server/progress_request.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace coach::server {
namespace {

api::v1::ReportProgressRequest Valid() {
  api::v1::ReportProgressRequest r;
  r.set_namespace_("team-a");
  r.set_pod("ddp-worker-0");
  r.set_step(120);
  (*r.mutable_metrics())["loss"] = 0.5;
  (*r.mutable_metrics())["train/accuracy"] = 0.9;
  r.set_steps_per_second(3.5);
  return r;
}

std::string Problem(const api::v1::ReportProgressRequest& r) {
  absl::Status s = ValidateReportProgressRequest(r);
  EXPECT_TRUE(s.ok() || absl::IsInvalidArgument(s)) << s;
  return std::string(s.message());
}

TEST(ProgressRequestTest, AValidRequestAndItsReport) {
  api::v1::ReportProgressRequest r = Valid();
  r.set_heartbeat(true);
  EXPECT_TRUE(ValidateReportProgressRequest(r).ok());
  backend::ProgressReport report = ToProgressReport(r);
  EXPECT_EQ(report.step, 120);
  EXPECT_EQ(report.metrics.size(), 2u);
  EXPECT_EQ(report.metrics.at("loss"), 0.5);
  EXPECT_EQ(report.steps_per_second, 3.5);
  EXPECT_TRUE(report.heartbeat);
  EXPECT_FALSE(report.launch.has_value());
  EXPECT_FALSE(report.first_step.has_value());
  r.set_first_step(96);
  EXPECT_TRUE(ValidateReportProgressRequest(r).ok());
  EXPECT_EQ(ToProgressReport(r).first_step, 96);

  r.mutable_launch()->set_attempt(3);
  r.mutable_launch()->set_phase(api::v1::LaunchState::FAILED);
  r.mutable_launch()->set_exit_code(137);
  EXPECT_TRUE(ValidateReportProgressRequest(r).ok());
  report = ToProgressReport(r);
  ASSERT_TRUE(report.launch.has_value());
  EXPECT_EQ(report.launch->attempt, 3);
  EXPECT_EQ(report.launch->phase, model::ObservedPod::Launch::Phase::kFailed);
  EXPECT_EQ(report.launch->exit_code, 137);
}

// Each case: one field broken, and the message that names it.
TEST(ProgressRequestTest, EachRuleNamesItsField) {
  struct Case {
    void (*breaks)(api::v1::ReportProgressRequest&);
    std::string message;
  };
  const Case cases[] = {
      {[](auto& r) { r.clear_namespace_(); }, "namespace: required"},
      {[](auto& r) { r.set_namespace_("Team_A"); }, "namespace: must be a namespace name"},
      {[](auto& r) { r.clear_pod(); }, "pod: required"},
      {[](auto& r) { r.set_pod(std::string(254, 'a')); }, "pod: must be a pod name"},
      {[](auto& r) { r.set_pod("a..b"); }, "pod: must be a pod name"},
      {[](auto& r) { r.set_step(-1); }, "step: must be >= 0, got -1"},
      {[](auto& r) { r.set_first_step(121); }, "first_step: must be in 0..step (120), got 121"},
      {[](auto& r) { r.set_first_step(-1); }, "first_step: must be in 0..step (120), got -1"},
      {[](auto& r) { r.set_steps_per_second(-2); }, "steps_per_second: must be finite and >= 0"},
      {[](auto& r) { r.set_steps_per_second(std::numeric_limits<double>::infinity()); },
       "steps_per_second: must be finite"},
      {[](auto& r) { (*r.mutable_metrics())["loss"] = std::nan(""); },
       "metrics[\"loss\"]: value must be finite, got nan"},
      {[](auto& r) { (*r.mutable_metrics())["bad name"] = 1; },
       "metrics[\"bad name\"]: name must be 1 to 250 printable characters without spaces"},
      {[](auto& r) { (*r.mutable_metrics())[""] = 1; }, "metrics[\"\"]: name must be 1 to 250"},
      {[](auto& r) { (*r.mutable_metrics())[std::string(251, 'm')] = 1; },
       "metrics[\"" + std::string(64, 'm') + "...\"]: name must be 1 to 250"},
      {[](auto& r) {
         for (int i = 0; i < 63; ++i) (*r.mutable_metrics())["m" + std::to_string(i)] = i;
       },
       "metrics: at most 64 metrics, got 65"},
      {[](auto& r) { r.mutable_launch()->set_attempt(-1); },
       "launch.attempt: must be 0..1000000, got -1"},
      {[](auto& r) { r.mutable_launch()->set_attempt(1000001); }, "launch.attempt: must be"},
      {[](auto& r) { r.mutable_launch()->set_attempt(0); },
       "launch.phase: must be RUNNING, FAILED or STOPPED, got 0"},
      {[](auto& r) { r.mutable_launch()->set_phase(api::v1::LaunchState::FAILED); },
       "launch.exit_code: must be 1..255 when FAILED, got 0"},
      {[](auto& r) {
         r.mutable_launch()->set_phase(api::v1::LaunchState::RUNNING);
         r.mutable_launch()->set_exit_code(3);
       },
       "launch.exit_code: must be 0 unless FAILED, got 3"},
  };
  for (const Case& c : cases) {
    api::v1::ReportProgressRequest r = Valid();
    c.breaks(r);
    EXPECT_NE(Problem(r).find(c.message), std::string::npos)
        << "want \"" << c.message << "\" in \"" << Problem(r) << "\"";
  }
}

TEST(ProgressRequestTest, SixtyFourMetricsAreAllowedAndEveryProblemIsListed) {
  api::v1::ReportProgressRequest r = Valid();
  r.clear_metrics();
  for (int i = 0; i < 64; ++i) (*r.mutable_metrics())["m" + std::to_string(i)] = i;
  EXPECT_TRUE(ValidateReportProgressRequest(r).ok());

  r.clear_pod();
  r.set_step(-5);
  const std::string message = Problem(r);
  EXPECT_NE(message.find("pod: required"), std::string::npos) << message;
  EXPECT_NE(message.find("step: must be >= 0"), std::string::npos) << message;
}

}  // namespace
}  // namespace coach::server
