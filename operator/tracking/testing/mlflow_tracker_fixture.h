#pragma once

// The tracker's test fixture: a tracker whose clients forward to one shared fake MLflow (which
// outlives trackers, as a real server outlives operator restarts), with recording hooks.

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/testing/fake_clock.h"
#include "integrations/mlflow/testing/fake_tracking_client.h"
#include "operator/metrics/registry.h"
#include "operator/model/testing/job_builder.h"
#include "operator/reconcile/conditions.h"
#include "operator/reconcile/mlflow_env.h"
#include "operator/tracking/mlflow_tracker.h"

namespace coach::tracking::testing {

using mlflow::RunStatus;
using mlflow::testing::FakeTrackingClient;
using Method = FakeTrackingClient::Method;
using reconcile::testing::MakePyTorchJob;

// Hands the tracker a client that forwards to one shared fake (which outlives trackers, as a
// real server outlives operator restarts).
class Forwarding : public mlflow::TrackingClient {
 public:
  explicit Forwarding(FakeTrackingClient* f) : f_(f) {}
  absl::StatusOr<std::string> GetOrCreateExperiment(absl::string_view n) override {
    return f_->GetOrCreateExperiment(n);
  }
  absl::StatusOr<mlflow::Experiment> GetExperimentByName(absl::string_view n) override {
    return f_->GetExperimentByName(n);
  }
  absl::StatusOr<mlflow::RunInfo> CreateRun(const mlflow::CreateRunRequest& r) override {
    return f_->CreateRun(r);
  }
  absl::StatusOr<mlflow::Run> GetRun(absl::string_view id) override { return f_->GetRun(id); }
  absl::StatusOr<mlflow::RunInfo> UpdateRun(const mlflow::UpdateRunRequest& r) override {
    return f_->UpdateRun(r);
  }
  absl::StatusOr<std::vector<std::string>> ListExperimentIds(int max_results) override {
    return f_->ListExperimentIds(max_results);
  }
  absl::StatusOr<std::vector<mlflow::RunInfo>> SearchRuns(
      const mlflow::SearchRunsRequest& r) override {
    return f_->SearchRuns(r);
  }
  absl::Status LogBatch(absl::string_view id, const std::vector<mlflow::Metric>& m,
                        const std::vector<mlflow::Param>& p,
                        const std::vector<mlflow::Tag>& t) override {
    return f_->LogBatch(id, m, p, t);
  }
  absl::StatusOr<std::vector<mlflow::Metric>> GetMetricHistory(absl::string_view id,
                                                               absl::string_view k) override {
    return f_->GetMetricHistory(id, k);
  }
  absl::Status UploadArtifact(absl::string_view id, absl::string_view p,
                              absl::string_view c) override {
    return f_->UploadArtifact(id, p, c);
  }
  absl::StatusOr<std::string> DownloadArtifact(absl::string_view id, absl::string_view p) override {
    return f_->DownloadArtifact(id, p);
  }
  absl::StatusOr<std::vector<mlflow::FileInfo>> ListArtifacts(absl::string_view id,
                                                              absl::string_view p,
                                                              int max) override {
    return f_->ListArtifacts(id, p, max);
  }

 private:
  FakeTrackingClient* f_;
};

class MlflowTrackerTest : public ::testing::Test {
 protected:
  std::unique_ptr<MlflowTracker> NewTracker(
      bool start = true, ::coach::Clock* clock = nullptr,
      const std::function<void(MlflowTrackerOptions*)>& tune = nullptr) {
    MlflowTrackerOptions options;
    options.mlflow.tracking_uri = "http://mlflow.test:5000";
    options.mlflow.experiment = "exp";
    options.backoff_base = absl::Milliseconds(5);
    options.backoff_cap = absl::Milliseconds(40);
    options.max_permanent_failures = 3;
    if (tune) tune(&options);
    MlflowTrackerHooks hooks;
    hooks.make_client =
        [this](const std::string& uri) -> absl::StatusOr<std::unique_ptr<mlflow::TrackingClient>> {
      absl::MutexLock lock(&mu_);
      uris_.push_back(uri);
      return std::make_unique<Forwarding>(&fake_);
    };
    hooks.annotate = [this](const model::Job& job,
                            const std::map<std::string, std::string>& annotations) {
      absl::MutexLock lock(&mu_);
      ++annotate_calls_;
      if (annotate_error_.has_value()) return *annotate_error_;
      annotations_[job.metadata().uid()] = annotations;
      return absl::OkStatus();
    };
    hooks.read_logs = [](const model::Job& job,
                         int64_t) -> absl::StatusOr<std::map<std::string, std::string>> {
      return std::map<std::string, std::string>{
          {"master-0", "log of " + job.metadata().name() + " master\n"},
          {"worker-0", "log of worker\n"}};
    };
    hooks.event = [this](const model::Job& job, const std::string& type, const std::string& reason,
                         const std::string& message, absl::Time) {
      absl::MutexLock lock(&mu_);
      events_.push_back({job.metadata().uid(), type, reason, message});
      return absl::OkStatus();
    };
    auto tracker = std::make_unique<MlflowTracker>(
        options, hooks, clock != nullptr ? clock : ::coach::Clock::Real(), &registry_);
    if (start) tracker->Start();
    return tracker;
  }

  static model::Job Job(const std::string& name, const std::string& uid) {
    return MakePyTorchJob("ns", name).Master(1).Workers(2).Uid(uid).Build();
  }
  static model::Job Running(model::Job job) {
    reconcile::UpdateCondition(*job.mutable_status(), "PyTorchJob", "Created", "True", "Created",
                               "created", absl::FromUnixSeconds(100));
    reconcile::UpdateCondition(*job.mutable_status(), "PyTorchJob", "Running", "True", "Running",
                               "running", absl::FromUnixSeconds(101));
    return job;
  }
  static model::Job Finished(model::Job job, bool ok) {
    job = Running(std::move(job));
    reconcile::UpdateCondition(*job.mutable_status(), "PyTorchJob", ok ? "Succeeded" : "Failed",
                               "True", ok ? "Succeeded" : "Failed",
                               ok ? "job succeeded" : "master-0 exited 1",
                               absl::FromUnixSeconds(200));
    *job.mutable_status()->mutable_completion_time() =
        reconcile::ToTimestamp(absl::FromUnixSeconds(200));
    return job;
  }
  std::vector<mlflow::RunInfo> RunsOf(const std::string& uid) {
    auto exp = fake_.GetOrCreateExperiment("exp");
    EXPECT_TRUE(exp.ok());
    auto runs = fake_.SearchRuns({{*exp}, "tags.`coach.job_uid` = '" + uid + "'", 100});
    EXPECT_TRUE(runs.ok());
    return runs.ok() ? *runs : std::vector<mlflow::RunInfo>{};
  }
  mlflow::Run OnlyRun(const std::string& uid) {
    std::vector<mlflow::RunInfo> runs = RunsOf(uid);
    EXPECT_EQ(runs.size(), 1u);
    if (runs.empty()) return {};
    return fake_.GetRun(runs[0].run_id).value();
  }

  FakeTrackingClient fake_;
  metrics::Registry registry_;
  absl::Mutex mu_;
  std::vector<std::string> uris_;
  int annotate_calls_ = 0;
  std::optional<absl::Status> annotate_error_;
  std::map<std::string, std::map<std::string, std::string>> annotations_;
  struct RecordedEvent {
    std::string uid, type, reason, message;
  };
  std::vector<RecordedEvent> events_;

  std::vector<RecordedEvent> EventsWith(const std::string& reason) {
    absl::MutexLock lock(&mu_);
    std::vector<RecordedEvent> out;
    for (const RecordedEvent& e : events_) {
      if (e.reason == reason) out.push_back(e);
    }
    return out;
  }
  std::string RunIdAnnotation(const std::string& uid) {
    absl::MutexLock lock(&mu_);
    auto it = annotations_.find(uid);
    if (it == annotations_.end()) return "";
    auto a = it->second.find(reconcile::kAnnotationMlflowRunId);
    return a == it->second.end() ? "" : a->second;
  }
  // With a fake clock the tracker's retries come only as time moves: moves it by `step` until
  // the run id is annotated (at most `steps` times, each given real time to be acted on).
  std::string AdvanceUntilAnnotated(::coach::FakeClock* clock, const std::string& uid,
                                    absl::Duration step, int steps) {
    for (int i = 0; i < steps; ++i) {
      for (int j = 0; j < 100; ++j) {
        if (std::string id = RunIdAnnotation(uid); !id.empty()) return id;
        absl::SleepFor(absl::Milliseconds(5));
      }
      clock->Advance(step);
    }
    return RunIdAnnotation(uid);
  }
  static model::Job WithRunId(model::Job job, const std::string& run_id) {
    (*job.mutable_metadata()->mutable_annotations())[reconcile::kAnnotationMlflowRunId] = run_id;
    return job;
  }
};

}  // namespace coach::tracking::testing
