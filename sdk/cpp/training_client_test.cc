#include "sdk/cpp/training_client.h"

#include <gmock/gmock.h>
#include <grpcpp/create_channel.h>
#include <gtest/gtest.h>

#include <thread>

#include "sdk/cpp/testing/fake_training_service.h"

namespace coach::sdk {
namespace {

using api::v1::JobEvent;
using api::v1::TrainingJob;
using ::testing::ElementsAre;
using testing::FakeServer;
using ::testing::HasSubstr;
using testing::JobWithConditions;
using testing::WatchScript;

class TrainingClientTest : public ::testing::Test {
 protected:
  std::unique_ptr<TrainingClient> MakeClient(const std::string& token = "") {
    ClientConfig config;
    config.server = server_.address();
    config.token = token;
    config.call_timeout = absl::Seconds(5);
    config.poll_interval = absl::Milliseconds(20);
    return std::make_unique<TrainingClient>(
        grpc::CreateChannel(server_.address(), grpc::InsecureChannelCredentials()), config);
  }

  static JobEvent Event(JobEvent::Type type, const TrainingJob& job) {
    JobEvent event;
    event.set_type(type);
    *event.mutable_job() = job;
    return event;
  }

  FakeServer server_;
};

TEST_F(TrainingClientTest, CreateJobSendsJobNamespaceAndDryRun) {
  auto client = MakeClient();
  TrainingJob job = JobWithConditions("", "mnist", {});
  absl::StatusOr<TrainingJob> created = client->CreateJob(job, "ml", /*dry_run=*/true);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->metadata().namespace_(), "ml");
  ASSERT_EQ(server_.service().create_requests().size(), 1u);
  EXPECT_TRUE(server_.service().create_requests()[0].dry_run());
  EXPECT_EQ(server_.service().create_requests()[0].namespace_(), "ml");
  EXPECT_FALSE(server_.service().FindJob("ml", "mnist").has_value());
}

TEST_F(TrainingClientTest, CreateJobFromManifestSendsTheText) {
  auto client = MakeClient();
  server_.service().SetManifestResult(JobWithConditions("", "from-yaml", {}));
  absl::StatusOr<TrainingJob> created = client->CreateJobFromManifest("kind: PyTorchJob\n");
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->metadata().name(), "from-yaml");
  EXPECT_EQ(server_.service().create_requests()[0].manifest(), "kind: PyTorchJob\n");
  EXPECT_TRUE(server_.service().FindJob("default", "from-yaml").has_value());
}

TEST_F(TrainingClientTest, TokenIsSentAsBearerMetadata) {
  auto client = MakeClient("tok-123");
  server_.service().AddJob(JobWithConditions("default", "a", {}));
  ASSERT_TRUE(client->GetJob("default", "a").ok());
  EXPECT_THAT(server_.service().authorizations(), ElementsAre("Bearer tok-123"));
}

TEST_F(TrainingClientTest, NoAuthorizationMetadataWithoutToken) {
  auto client = MakeClient();
  server_.service().AddJob(JobWithConditions("default", "a", {}));
  ASSERT_TRUE(client->GetJob("default", "a").ok());
  EXPECT_THAT(server_.service().authorizations(), ElementsAre(""));
}

TEST_F(TrainingClientTest, ServerCodesBecomeTheSameAbslCodes) {
  auto client = MakeClient();
  const std::vector<std::pair<grpc::StatusCode, absl::StatusCode>> cases = {
      {grpc::StatusCode::INVALID_ARGUMENT, absl::StatusCode::kInvalidArgument},
      {grpc::StatusCode::NOT_FOUND, absl::StatusCode::kNotFound},
      {grpc::StatusCode::ALREADY_EXISTS, absl::StatusCode::kAlreadyExists},
      {grpc::StatusCode::FAILED_PRECONDITION, absl::StatusCode::kFailedPrecondition},
      {grpc::StatusCode::UNAUTHENTICATED, absl::StatusCode::kUnauthenticated},
      {grpc::StatusCode::PERMISSION_DENIED, absl::StatusCode::kPermissionDenied},
      {grpc::StatusCode::UNAVAILABLE, absl::StatusCode::kUnavailable},
  };
  for (const auto& [grpc_code, absl_code] : cases) {
    server_.service().InjectError("GetJob", grpc::Status(grpc_code, "boom"));
    absl::StatusOr<TrainingJob> job = client->GetJob("default", "a");
    EXPECT_EQ(job.status().code(), absl_code) << job.status();
    EXPECT_THAT(job.status().message(), HasSubstr("GetJob default/a"));
    EXPECT_THAT(job.status().message(), HasSubstr("boom"));
  }
}

TEST_F(TrainingClientTest, NotFoundForUnknownJob) {
  auto client = MakeClient();
  EXPECT_EQ(client->GetJob("default", "nope").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client->DeleteJob("default", "nope").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client->DescribeJob("default", "nope").status().code(), absl::StatusCode::kNotFound);
}

TEST(TrainingClientUnreachableTest, UnreachableServerIsUnavailable) {
  ClientConfig config;
  config.server = "127.0.0.1:1";
  config.call_timeout = absl::Seconds(5);
  TrainingClient client(grpc::CreateChannel("127.0.0.1:1", grpc::InsecureChannelCredentials()),
                        config);
  absl::StatusOr<TrainingJob> job = client.GetJob("default", "a");
  EXPECT_EQ(job.status().code(), absl::StatusCode::kUnavailable) << job.status();
  EXPECT_THAT(job.status().message(), HasSubstr("127.0.0.1:1"));
}

TEST(TrainingClientCreateTest, CreateRejectsBadOptionsWithoutContactingAnything) {
  ConnectionOptions options;
  options.use_environment = false;
  options.tls_ca = "/nonexistent/ca.pem";
  EXPECT_EQ(TrainingClient::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
  options.tls_ca.clear();
  EXPECT_TRUE(TrainingClient::Create(options).ok());
}

TEST_F(TrainingClientTest, ListAllJobsFollowsPages) {
  auto client = MakeClient();
  for (int i = 0; i < 5; ++i) {
    TrainingJob job = JobWithConditions("ml", "job-" + std::to_string(i), {});
    (*job.mutable_metadata()->mutable_labels())["team"] = "nlp";
    server_.service().AddJob(job);
  }
  server_.service().AddJob(JobWithConditions("other", "x", {}));
  absl::StatusOr<std::vector<TrainingJob>> jobs = client->ListAllJobs("ml", "team=nlp", 2);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 5u);
  EXPECT_EQ((*jobs)[0].metadata().name(), "job-0");
  EXPECT_EQ((*jobs)[4].metadata().name(), "job-4");
  std::vector<api::v1::ListJobsRequest> requests = server_.service().list_requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].page_token(), "");
  EXPECT_EQ(requests[1].page_token(), "2");
  EXPECT_EQ(requests[2].page_token(), "4");
  EXPECT_EQ(requests[0].label_selector(), "team=nlp");
  EXPECT_EQ(requests[0].page_size(), 2);
}

TEST_F(TrainingClientTest, ListAllJobsStopsOnAnErrorMidway) {
  auto client = MakeClient();
  for (int i = 0; i < 3; ++i)
    server_.service().AddJob(JobWithConditions("ml", std::to_string(i), {}));
  server_.service().InjectError("ListJobs", grpc::Status::OK, 0);
  absl::StatusOr<api::v1::ListJobsResponse> first = client->ListJobs({"ml", "", 1, ""});
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->next_page_token(), "1");
  server_.service().InjectError("ListJobs", grpc::Status(grpc::StatusCode::UNAVAILABLE, "down"));
  EXPECT_EQ(client->ListAllJobs("ml", "", 1).status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(TrainingClientTest, SuspendResumeDeleteDescribe) {
  auto client = MakeClient();
  server_.service().AddJob(JobWithConditions("default", "a", {"Created"}));
  api::v1::DescribeJobResponse describe;
  describe.add_replicas()->set_name("master-0");
  server_.service().SetDescribe(describe);
  absl::StatusOr<TrainingJob> suspended = client->SuspendJob("default", "a");
  ASSERT_TRUE(suspended.ok());
  EXPECT_TRUE(suspended->spec().run_policy().suspend());
  absl::StatusOr<TrainingJob> resumed = client->ResumeJob("default", "a");
  ASSERT_TRUE(resumed.ok());
  EXPECT_FALSE(resumed->spec().run_policy().suspend());
  absl::StatusOr<api::v1::DescribeJobResponse> described = client->DescribeJob("default", "a");
  ASSERT_TRUE(described.ok());
  EXPECT_EQ(described->job().metadata().name(), "a");
  EXPECT_EQ(described->replicas(0).name(), "master-0");
  EXPECT_TRUE(client->DeleteJob("default", "a").ok());
  EXPECT_FALSE(server_.service().FindJob("default", "a").has_value());
}

TEST_F(TrainingClientTest, WatchDeliversEventsUntilTheCallbackStops) {
  auto client = MakeClient("t");
  server_.service().AddJob(JobWithConditions("default", "a", {}));
  server_.service().AddJob(JobWithConditions("default", "b", {}));
  std::vector<std::string> seen;
  absl::Status status =
      client->Watch({"default", "", "", absl::Seconds(5)}, [&](const JobEvent& event) {
        seen.push_back(event.job().metadata().name());
        return seen.size() < 2;
      });
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_THAT(seen, ElementsAre("a", "b"));
  EXPECT_THAT(server_.service().authorizations(), ElementsAre("Bearer t"));
}

TEST_F(TrainingClientTest, WatchIsCancellableFromAnotherThread) {
  auto client = MakeClient();
  CancelHandle cancel;
  std::thread canceller([&cancel] {
    absl::SleepFor(absl::Milliseconds(100));
    cancel.Cancel();
  });
  absl::Status status = client->Watch(
      {"default", "", "", absl::Seconds(10)}, [](const JobEvent&) { return true; }, &cancel);
  canceller.join();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
}

TEST_F(TrainingClientTest, WatchEndedByServerIsUnavailable) {
  auto client = MakeClient();
  server_.service().ScriptWatch(WatchScript{});
  absl::Status status = client->Watch({}, [](const JobEvent&) { return true; });
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
}

TEST_F(TrainingClientTest, WatchTimeoutIsDeadlineExceeded) {
  auto client = MakeClient();
  absl::Status status =
      client->Watch({"", "", "", absl::Milliseconds(100)}, [](const JobEvent&) { return true; });
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
}

TEST_F(TrainingClientTest, WaitReturnsTheJobOnceAConditionIsTrue) {
  auto client = MakeClient();
  server_.service().AddJob(JobWithConditions("default", "a", {"Created"}));
  WatchScript script;
  script.events = {
      Event(JobEvent::ADDED, JobWithConditions("default", "a", {"Created"})),
      Event(JobEvent::MODIFIED, JobWithConditions("default", "a", {"Created", "Running"})),
      Event(JobEvent::MODIFIED,
            JobWithConditions("default", "a", {"Created", "Running", "Succeeded"}))};
  script.hang = true;
  server_.service().ScriptWatch(script);
  std::vector<std::string> states;
  WaitOptions options;
  options.timeout = absl::Seconds(10);
  options.on_progress = [&](const TrainingJob& job) { states.push_back(JobState(job)); };
  absl::StatusOr<TrainingJob> job =
      client->WaitForJobConditions("default", "a", {"Succeeded", "Failed"}, options);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_TRUE(IsJobSucceeded(*job));
  // The watch's ADDED repeats the GetJob's job: no second progress call for it.
  EXPECT_THAT(states, ElementsAre("Created", "Running", "Succeeded"));
}

TEST_F(TrainingClientTest, WaitReturnsAtOnceWhenAlreadyThere) {
  auto client = MakeClient();
  server_.service().AddJob(JobWithConditions("default", "a", {"Created", "Running"}));
  absl::StatusOr<TrainingJob> job = client->WaitForJobConditions("default", "a", {"Running"});
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_THAT(server_.service().calls(), ElementsAre("GetJob"));
}

TEST_F(TrainingClientTest, WaitReportsAFailedJobWithItsMessage) {
  auto client = MakeClient();
  server_.service().AddJob(JobWithConditions("default", "a", {"Created"}));
  WatchScript script;
  script.events = {
      Event(JobEvent::MODIFIED,
            JobWithConditions("default", "a", {"Created", "Failed"}, "master-0 exited 1"))};
  script.hang = true;
  server_.service().ScriptWatch(script);
  absl::StatusOr<TrainingJob> job =
      client->WaitForJobConditions("default", "a", {"Succeeded"}, {absl::Seconds(10), nullptr});
  EXPECT_EQ(job.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(job.status().message(), HasSubstr("master-0 exited 1"));
}

TEST_F(TrainingClientTest, WaitForFailedReturnsTheFailedJob) {
  auto client = MakeClient();
  server_.service().AddJob(JobWithConditions("default", "a", {"Created", "Failed"}, "oom"));
  absl::StatusOr<TrainingJob> job =
      client->WaitForJobConditions("default", "a", {"Succeeded", "Failed"});
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_TRUE(IsJobFailed(*job));
}

TEST_F(TrainingClientTest, WaitTimesOut) {
  auto client = MakeClient();
  server_.service().AddJob(JobWithConditions("default", "a", {"Created", "Running"}));
  absl::Time start = absl::Now();
  absl::StatusOr<TrainingJob> job = client->WaitForJobConditions(
      "default", "a", {"Succeeded"}, {absl::Milliseconds(300), nullptr});
  EXPECT_EQ(job.status().code(), absl::StatusCode::kDeadlineExceeded) << job.status();
  EXPECT_THAT(job.status().message(), HasSubstr("state: Running"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
}

TEST_F(TrainingClientTest, WaitFallsBackToPollingWhenTheWatchBreaks) {
  auto client = MakeClient();
  server_.service().InjectError("WatchJobs", grpc::Status(grpc::StatusCode::UNAVAILABLE, "gone"));
  server_.service().ScriptGetJob({JobWithConditions("default", "a", {"Created"}),
                                  JobWithConditions("default", "a", {"Created", "Running"}),
                                  JobWithConditions("default", "a", {"Created", "Running"}),
                                  JobWithConditions("default", "a", {"Running", "Succeeded"})});
  int progress_calls = 0;
  WaitOptions options;
  options.timeout = absl::Seconds(10);
  options.on_progress = [&](const TrainingJob&) { ++progress_calls; };
  absl::StatusOr<TrainingJob> job =
      client->WaitForJobConditions("default", "a", {"Succeeded"}, options);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_TRUE(IsJobSucceeded(*job));
  EXPECT_EQ(progress_calls, 3);  // the repeated Running is not a change
  std::vector<std::string> calls = server_.service().calls();
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "GetJob"), 4);
}

TEST_F(TrainingClientTest, WaitPollingSurvivesTransientErrors) {
  auto client = MakeClient();
  server_.service().AddJob(JobWithConditions("default", "a", {"Created"}));
  server_.service().ScriptWatch(WatchScript{});  // ends cleanly at once
  std::thread finisher([this] {
    absl::SleepFor(absl::Milliseconds(100));
    server_.service().InjectError("GetJob", grpc::Status(grpc::StatusCode::UNAVAILABLE, "blip"));
    server_.service().AddJob(JobWithConditions("default", "a", {"Succeeded"}));
  });
  absl::StatusOr<TrainingJob> job =
      client->WaitForJobConditions("default", "a", {"Succeeded"}, {absl::Seconds(10), nullptr});
  finisher.join();
  ASSERT_TRUE(job.ok()) << job.status();
}

TEST_F(TrainingClientTest, WaitOnUnknownJobIsNotFound) {
  auto client = MakeClient();
  EXPECT_EQ(client->WaitForJobConditions("default", "nope", {"Succeeded"}).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(client->WaitForJobConditions("default", "nope", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(TrainingClientTest, WaitSeesDeletion) {
  auto client = MakeClient();
  server_.service().AddJob(JobWithConditions("default", "a", {"Created"}));
  WatchScript script;
  script.events = {Event(JobEvent::DELETED, JobWithConditions("default", "a", {"Created"}))};
  script.hang = true;
  server_.service().ScriptWatch(script);
  EXPECT_EQ(client->WaitForJobConditions("default", "a", {"Succeeded"}).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(TrainingClientTest, LogsStreamChunksInOrder) {
  auto client = MakeClient();
  server_.service().AddJob(JobWithConditions("default", "a", {}));
  server_.service().AddLogChunk("master-0", "epoch 1\n");
  server_.service().AddLogChunk("worker-0", "hello\n");
  server_.service().AddLogChunk("master-0", "epoch 2\n");
  std::string text;
  LogOptions options;
  options.namespace_ = "default";
  options.name = "a";
  options.replica = "master-0";
  options.tail_lines = 10;
  absl::Status status = client->GetJobLogs(options, [&](const api::v1::LogChunk& chunk) {
    text += chunk.data();
    return true;
  });
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(text, "epoch 1\nepoch 2\n");
  ASSERT_EQ(server_.service().log_requests().size(), 1u);
  EXPECT_EQ(server_.service().log_requests()[0].tail_lines(), 10);
  EXPECT_EQ(server_.service().log_requests()[0].replica(), "master-0");
}

TEST_F(TrainingClientTest, LogsStopWhenTheCallbackSaysSo) {
  auto client = MakeClient();
  server_.service().AddJob(JobWithConditions("default", "a", {}));
  for (int i = 0; i < 10; ++i) server_.service().AddLogChunk("master-0", "line\n");
  int chunks = 0;
  LogOptions options;
  options.namespace_ = "default";
  options.name = "a";
  absl::Status status =
      client->GetJobLogs(options, [&](const api::v1::LogChunk&) { return ++chunks < 3; });
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(chunks, 3);
}

TEST_F(TrainingClientTest, LogsOfUnknownJobAreNotFound) {
  auto client = MakeClient();
  LogOptions options;
  options.namespace_ = "default";
  options.name = "nope";
  EXPECT_EQ(client->GetJobLogs(options, [](const api::v1::LogChunk&) { return true; }).code(),
            absl::StatusCode::kNotFound);
}

TEST(JobStatusTest, StateIsTheLastTrueCondition) {
  TrainingJob job = JobWithConditions("default", "a", {"Created", "Running"});
  api::v1::JobCondition* stale = job.mutable_status()->add_conditions();
  stale->set_type("Restarting");
  stale->set_status("False");
  EXPECT_EQ(JobState(job), "Running");
  EXPECT_TRUE(IsJobRunning(job));
  EXPECT_FALSE(IsJobSucceeded(job));
  EXPECT_FALSE(IsJobFinished(job));
  EXPECT_EQ(GetJobConditions(job).size(), 3u);
  EXPECT_EQ(JobState(TrainingJob()), "");
}

}  // namespace
}  // namespace coach::sdk
