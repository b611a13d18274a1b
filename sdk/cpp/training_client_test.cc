#include "sdk/cpp/training_client.h"

#include <gmock/gmock.h>
#include <grpcpp/create_channel.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "operator/core/job_service.h"
#include "operator/core/testing/fake_backend.h"
#include "operator/model/observed_state.h"
#include "operator/server/testing/in_memory_server.h"
#include "operator/store/testing/fake_job_store.h"
#include "sdk/cpp/job_builder.h"
#include "sdk/cpp/testing/fake_history_server.h"
#include "sdk/cpp/testing/test_jobs.h"

namespace coach::sdk {
namespace {

using api::v1::JobEvent;
using api::v1::TrainingJob;
using server::testing::InMemoryServer;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::JobWithConditions;

constexpr char kManifest[] = R"(apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: from-yaml
spec:
  pytorchReplicaSpecs:
    Master:
      template:
        spec:
          containers:
          - name: pytorch
            image: busybox
)";

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

  // Sets the conditions of the stored job default/a, as the controller would.
  void SetConditions(const std::vector<std::string>& conditions, const std::string& message = "") {
    server_.SetStatus("default", "a",
                      JobWithConditions("default", "a", conditions, message).status());
  }

  std::vector<api::v1::CreateJobRequest> CreateRequests() {
    return server_.recorder().Requests<api::v1::CreateJobRequest>("CreateJob");
  }

  InMemoryServer server_;
};

TEST_F(TrainingClientTest, CreateJobSendsJobNamespaceAndDryRun) {
  auto client = MakeClient();
  absl::StatusOr<TrainingJob> job =
      JobBuilder::PyTorch("mnist").Image("busybox").Masters(1).Build();
  ASSERT_TRUE(job.ok()) << job.status();
  absl::StatusOr<TrainingJob> created = client->CreateJob(*job, "ml", /*dry_run=*/true);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->metadata().namespace_(), "ml");
  ASSERT_EQ(CreateRequests().size(), 1u);
  EXPECT_TRUE(CreateRequests()[0].dry_run());
  EXPECT_EQ(CreateRequests()[0].namespace_(), "ml");
  EXPECT_EQ(server_.jobs().Get("ml", "mnist").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(TrainingClientTest, CreateJobFromManifestSendsTheText) {
  auto client = MakeClient();
  absl::StatusOr<TrainingJob> created = client->CreateJobFromManifest(kManifest);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->metadata().name(), "from-yaml");
  EXPECT_EQ(CreateRequests()[0].manifest(), kManifest);
  EXPECT_TRUE(server_.jobs().Get("default", "from-yaml").ok());
}

TEST_F(TrainingClientTest, TokenIsSentAsBearerMetadata) {
  auto client = MakeClient("tok-123");
  server_.AddJob(JobWithConditions("default", "a", {}));
  ASSERT_TRUE(client->GetJob("default", "a").ok());
  EXPECT_THAT(server_.recorder().authorizations(), ElementsAre("Bearer tok-123"));
}

TEST_F(TrainingClientTest, NoAuthorizationMetadataWithoutToken) {
  auto client = MakeClient();
  server_.AddJob(JobWithConditions("default", "a", {}));
  ASSERT_TRUE(client->GetJob("default", "a").ok());
  EXPECT_THAT(server_.recorder().authorizations(), ElementsAre(""));
}

TEST_F(TrainingClientTest, ServerCodesBecomeTheSameAbslCodes) {
  auto client = MakeClient();
  // The server answers the store's code as the gRPC code of the same name.
  for (absl::StatusCode code :
       {absl::StatusCode::kInvalidArgument, absl::StatusCode::kNotFound,
        absl::StatusCode::kAlreadyExists, absl::StatusCode::kFailedPrecondition,
        absl::StatusCode::kUnauthenticated, absl::StatusCode::kPermissionDenied,
        absl::StatusCode::kUnavailable}) {
    server_.store().InjectError("Get", absl::Status(code, "boom"));
    absl::StatusOr<TrainingJob> job = client->GetJob("default", "a");
    EXPECT_EQ(job.status().code(), code) << job.status();
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
    server_.AddJob(job);
  }
  server_.AddJob(JobWithConditions("other", "x", {}));
  absl::StatusOr<std::vector<TrainingJob>> jobs = client->ListAllJobs("ml", "team=nlp", 2);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 5u);
  EXPECT_EQ((*jobs)[0].metadata().name(), "job-0");
  EXPECT_EQ((*jobs)[4].metadata().name(), "job-4");
  std::vector<api::v1::ListJobsRequest> requests =
      server_.recorder().Requests<api::v1::ListJobsRequest>("ListJobs");
  ASSERT_EQ(requests.size(), 3u);
  // Each page asks for the page the previous one's token names.
  absl::StatusOr<core::ListResponse> page1 = server_.jobs().List({"ml", "team=nlp", 2, ""});
  ASSERT_TRUE(page1.ok()) << page1.status();
  absl::StatusOr<core::ListResponse> page2 =
      server_.jobs().List({"ml", "team=nlp", 2, page1->next_page_token});
  ASSERT_TRUE(page2.ok()) << page2.status();
  EXPECT_EQ(requests[0].page_token(), "");
  EXPECT_EQ(requests[1].page_token(), page1->next_page_token);
  EXPECT_EQ(requests[2].page_token(), page2->next_page_token);
  EXPECT_EQ(requests[0].label_selector(), "team=nlp");
  EXPECT_EQ(requests[0].page_size(), 2);
}

TEST_F(TrainingClientTest, ListAllJobsStopsOnAnErrorMidway) {
  auto client = MakeClient();
  for (int i = 0; i < 3; ++i) server_.AddJob(JobWithConditions("ml", std::to_string(i), {}));
  absl::StatusOr<api::v1::ListJobsResponse> first = client->ListJobs({"ml", "", 1, ""});
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->next_page_token(), server_.jobs().List({"ml", "", 1, ""})->next_page_token);
  // The store fails from ListAllJobs' second page on.
  std::atomic<int> lists = 0;
  server_.recorder().OnAnswered([&](const std::string& method) {
    if (method == "ListJobs" && ++lists == 1) {
      server_.store().InjectError("List", absl::UnavailableError("down"));
    }
  });
  EXPECT_EQ(client->ListAllJobs("ml", "", 1).status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(TrainingClientTest, SuspendResumeDeleteDescribe) {
  auto client = MakeClient();
  server_.AddJob(JobWithConditions("default", "a", {"Created"}));
  server_.backend().SetPodPhase("default", "a", "master-0", model::PodPhase::kRunning);
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
  EXPECT_EQ(server_.jobs().Get("default", "a").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(TrainingClientTest, WatchDeliversEventsUntilTheCallbackStops) {
  auto client = MakeClient("t");
  server_.AddJob(JobWithConditions("default", "a", {}));
  server_.AddJob(JobWithConditions("default", "b", {}));
  std::vector<std::string> seen;
  absl::Status status =
      client->Watch({"default", "", "", absl::Seconds(5)}, [&](const JobEvent& event) {
        seen.push_back(event.job().metadata().name());
        return seen.size() < 2;
      });
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_THAT(seen, ElementsAre("a", "b"));
  EXPECT_THAT(server_.recorder().authorizations(), ElementsAre("Bearer t"));
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
  server_.EndStreams();
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
  server_.AddJob(JobWithConditions("default", "a", {"Created"}));
  server_.WhenWatched([this] {
    SetConditions({"Created", "Running"});
    SetConditions({"Created", "Running", "Succeeded"});
  });
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
  server_.AddJob(JobWithConditions("default", "a", {"Created", "Running"}));
  absl::StatusOr<TrainingJob> job = client->WaitForJobConditions("default", "a", {"Running"});
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_THAT(server_.recorder().calls(), ElementsAre("GetJob"));
}

TEST_F(TrainingClientTest, WaitReportsAFailedJobWithItsMessage) {
  auto client = MakeClient();
  server_.AddJob(JobWithConditions("default", "a", {"Created"}));
  server_.WhenWatched([this] { SetConditions({"Created", "Failed"}, "master-0 exited 1"); });
  absl::StatusOr<TrainingJob> job =
      client->WaitForJobConditions("default", "a", {"Succeeded"}, {absl::Seconds(10), nullptr});
  EXPECT_EQ(job.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(job.status().message(), HasSubstr("master-0 exited 1"));
}

TEST_F(TrainingClientTest, WaitForFailedReturnsTheFailedJob) {
  auto client = MakeClient();
  server_.AddJob(JobWithConditions("default", "a", {"Created", "Failed"}, "oom"));
  absl::StatusOr<TrainingJob> job =
      client->WaitForJobConditions("default", "a", {"Succeeded", "Failed"});
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_TRUE(IsJobFailed(*job));
}

TEST_F(TrainingClientTest, WaitTimesOut) {
  auto client = MakeClient();
  server_.AddJob(JobWithConditions("default", "a", {"Created", "Running"}));
  absl::Time start = absl::Now();
  absl::StatusOr<TrainingJob> job = client->WaitForJobConditions(
      "default", "a", {"Succeeded"}, {absl::Milliseconds(300), nullptr});
  EXPECT_EQ(job.status().code(), absl::StatusCode::kDeadlineExceeded) << job.status();
  EXPECT_THAT(job.status().message(), HasSubstr("state: Running"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
}

TEST_F(TrainingClientTest, WaitFallsBackToPollingWhenTheWatchBreaks) {
  auto client = MakeClient();
  server_.AddJob(JobWithConditions("default", "a", {"Created"}));
  // The watch's first listing fails; the job moves on after the 1st and the 3rd GetJob.
  server_.store().InjectError("List", absl::UnavailableError("gone"));
  std::atomic<int> gets = 0;
  server_.recorder().OnAnswered([&](const std::string& method) {
    if (method != "GetJob") return;
    const int n = ++gets;
    if (n == 1) SetConditions({"Created", "Running"});
    if (n == 3) SetConditions({"Running", "Succeeded"});
  });
  int progress_calls = 0;
  WaitOptions options;
  options.timeout = absl::Seconds(10);
  options.on_progress = [&](const TrainingJob&) { ++progress_calls; };
  absl::StatusOr<TrainingJob> job =
      client->WaitForJobConditions("default", "a", {"Succeeded"}, options);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_TRUE(IsJobSucceeded(*job));
  EXPECT_EQ(progress_calls, 3);  // the repeated Running is not a change
  std::vector<std::string> calls = server_.recorder().calls();
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "GetJob"), 4);
}

TEST_F(TrainingClientTest, WaitPollingSurvivesTransientErrors) {
  auto client = MakeClient();
  server_.AddJob(JobWithConditions("default", "a", {"Created"}));
  server_.EndStreams();  // the watch ends at once
  // After the first poll the job finishes, and the poll after it fails once.
  std::atomic<int> gets = 0;
  server_.recorder().OnAnswered([&](const std::string& method) {
    if (method != "GetJob" || ++gets != 2) return;
    SetConditions({"Succeeded"});
    server_.store().InjectError("Get", absl::UnavailableError("blip"));
  });
  absl::StatusOr<TrainingJob> job =
      client->WaitForJobConditions("default", "a", {"Succeeded"}, {absl::Seconds(10), nullptr});
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
  server_.AddJob(JobWithConditions("default", "a", {"Created"}));
  server_.WhenWatched([this] { EXPECT_TRUE(server_.jobs().Delete("default", "a").ok()); });
  EXPECT_EQ(client->WaitForJobConditions("default", "a", {"Succeeded"}).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(TrainingClientTest, LogsStreamChunksInOrder) {
  auto client = MakeClient();
  server_.AddJob(JobWithConditions("default", "a", {}));
  server_.backend().SetLog("master-0", "epoch 1\nepoch 2\n");
  server_.backend().SetLog("worker-0", "hello\n");
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
  std::vector<api::v1::GetJobLogsRequest> requests =
      server_.recorder().Requests<api::v1::GetJobLogsRequest>("GetJobLogs");
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].tail_lines(), 10);
  EXPECT_EQ(requests[0].replica(), "master-0");
}

TEST_F(TrainingClientTest, LogsStopWhenTheCallbackSaysSo) {
  auto client = MakeClient();
  server_.AddJob(JobWithConditions("default", "a", {}));
  for (int i = 0; i < 10; ++i) {  // a chunk per replica
    const std::string pod = absl::StrCat("worker-", i);
    server_.backend().SetPodPhase("default", "a", pod, model::PodPhase::kRunning);
    server_.backend().SetLog(pod, "line\n");
  }
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

class HistoryClientTest : public ::testing::Test {
 protected:
  std::unique_ptr<TrainingClient> MakeClient() {
    ClientConfig config;
    config.server = server_.address();
    config.call_timeout = absl::Seconds(5);
    return std::make_unique<TrainingClient>(
        grpc::CreateChannel(server_.address(), grpc::InsecureChannelCredentials()), config);
  }

  static api::v1::JobHistory History(const std::string& namespace_, const std::string& name,
                                     const std::string& uid, int64_t deleted) {
    api::v1::JobHistory history;
    *history.mutable_job() = JobWithConditions(namespace_, name, {"Created", "Succeeded"});
    history.mutable_job()->mutable_metadata()->set_uid(uid);
    history.mutable_deleted_time()->set_seconds(deleted);
    history.set_deleted_by("ttl");
    history.add_logs("attempt-0/master-0");
    return history;
  }

  testing::FakeHistoryServer server_;
};

TEST_F(HistoryClientTest, LogsOfAnAttemptOrADeletedJobSayWhereTheyComeFrom) {
  server_.AddLogChunk("master-0", "epoch 1\n", 1, "kept/store");
  server_.AddLogChunk("master-0", "epoch 2\n", 1);
  auto client = MakeClient();
  LogOptions options;
  options.namespace_ = "default";
  options.name = "a";
  options.attempt = 1;
  options.uid = "u1";
  std::vector<api::v1::LogChunk> chunks;
  absl::Status status = client->GetJobLogs(options, [&](const api::v1::LogChunk& chunk) {
    chunks.push_back(chunk);
    return true;
  });
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[0].source(), "kept/store");
  EXPECT_EQ(chunks[0].attempt(), 1);
  EXPECT_EQ(chunks[1].source(), "");
  ASSERT_EQ(server_.log_requests().size(), 1u);
  EXPECT_TRUE(server_.log_requests()[0].has_attempt());
  EXPECT_EQ(server_.log_requests()[0].attempt(), 1);
  EXPECT_EQ(server_.log_requests()[0].uid(), "u1");

  // Unset: the current attempt, which the request leaves unset too (0 is an attempt).
  options.attempt.reset();
  options.uid = "";
  ASSERT_TRUE(client->GetJobLogs(options, [](const api::v1::LogChunk&) { return true; }).ok());
  EXPECT_FALSE(server_.log_requests()[1].has_attempt());
}

TEST_F(HistoryClientTest, LogsRefuseAnAttemptOutOfRange) {
  auto client = MakeClient();
  LogOptions options;
  options.namespace_ = "default";
  options.name = "a";
  for (int attempt : {-1, kMaxAttempt + 1}) {
    options.attempt = attempt;
    absl::Status status =
        client->GetJobLogs(options, [](const api::v1::LogChunk&) { return true; });
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(),
                HasSubstr(absl::StrCat("attempt: must be 0..1000000, got ", attempt)));
  }
  EXPECT_TRUE(server_.log_requests().empty());
}

// An operator that predates `attempt` drops it and streams the current logs, without a source:
// those bytes must not pass for the attempt asked for.
TEST_F(HistoryClientTest, LogsOfAnAttemptFromAnOperatorThatIgnoresIt) {
  server_.AddLogChunk("master-0", "current\n", 0);
  auto client = MakeClient();
  LogOptions options;
  options.namespace_ = "default";
  options.name = "a";
  options.attempt = 0;
  int chunks = 0;
  absl::Status status = client->GetJobLogs(options, [&](const api::v1::LogChunk&) {
    ++chunks;
    return true;
  });
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(status.message(), HasSubstr("predates them"));
  EXPECT_EQ(chunks, 0);
  // The current logs, from the same operator, are what they always were.
  options.attempt.reset();
  EXPECT_TRUE(client
                  ->GetJobLogs(options,
                               [&](const api::v1::LogChunk&) {
                                 ++chunks;
                                 return true;
                               })
                  .ok());
  EXPECT_EQ(chunks, 1);
}

TEST_F(HistoryClientTest, ListJobHistoriesNewestFirst) {
  server_.AddHistory(History("default", "a", "u1", 1000));
  server_.AddHistory(History("default", "a", "u2", 2000));
  server_.AddHistory(History("default", "b", "u3", 3000));
  server_.AddHistory(History("other", "a", "u4", 4000));
  auto client = MakeClient();
  absl::StatusOr<api::v1::ListJobHistoriesResponse> response =
      client->ListJobHistories("default", "a", 1);
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->histories_size(), 1);
  EXPECT_EQ(response->histories(0).job().metadata().uid(), "u2");
  EXPECT_EQ(response->histories(0).deleted_by(), "ttl");
  EXPECT_TRUE(response->truncated());
  ASSERT_EQ(server_.history_requests().size(), 1u);
  EXPECT_EQ(server_.history_requests()[0].namespace_(), "default");
  EXPECT_EQ(server_.history_requests()[0].name(), "a");
  EXPECT_EQ(server_.history_requests()[0].page_size(), 1);

  response = client->ListJobHistories("", "");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->histories_size(), 4);
  EXPECT_FALSE(response->truncated());
}

TEST_F(HistoryClientTest, ListJobHistoriesErrors) {
  auto client = MakeClient();
  for (int page_size : {-1, kMaxHistoryPageSize + 1}) {
    absl::Status status = client->ListJobHistories("", "", page_size).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr("page_size: must be 0..1000"));
  }
  EXPECT_TRUE(server_.history_requests().empty());

  server_.InjectError("ListJobHistories",
                      grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "no history store"));
  absl::Status status = client->ListJobHistories("", "").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("no history store"));

  server_.InjectError("ListJobHistories",
                      grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "Method not found"));
  status = client->ListJobHistories("", "").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(status.message(), HasSubstr("does not serve the histories of deleted jobs"));
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
