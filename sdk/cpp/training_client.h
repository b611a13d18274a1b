#pragma once

// TrainingClient: the C++ SDK of coach-operator's TrainingService (api/v1/training_service.proto).
//
// Every method returns the server's error as an absl::Status with the same code; the ones
// a caller should expect:
//   InvalidArgument     bad manifest or request (the message names every offending field)
//   NotFound            no such job
//   AlreadyExists       CreateJob with a name already taken
//   FailedPrecondition  the job's state does not allow the operation
//   Unauthenticated     token missing or wrong; PermissionDenied: token not allowed
//   Unavailable         the server cannot be reached (safe to retry)
//   DeadlineExceeded    the call's deadline passed
// Unary calls run under ConnectionOptions::call_timeout. A TrainingClient is thread-safe.

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "api/v1/training_job.pb.h"
#include "api/v1/training_service.grpc.pb.h"
#include "api/v1/training_service.pb.h"
#include "sdk/cpp/connection.h"
#include "sdk/cpp/job_status.h"  // IsJobRunning/Succeeded/Failed, GetJobConditions

namespace coach::sdk {

// Cancels a running Watch or GetJobLogs from another thread. One handle per call; Cancel()
// before the call starts makes it return Cancelled at once.
class CancelHandle {
 public:
  void Cancel();
  bool cancelled() const;

 private:
  friend class TrainingClient;
  // Registers the call's context; false when already cancelled.
  bool Attach(grpc::ClientContext* context);
  void Detach();

  mutable std::mutex mutex_;
  grpc::ClientContext* context_ = nullptr;
  bool cancelled_ = false;
};

struct ClientConfig {
  std::string server;  // for messages only
  std::string token;   // empty: no authorization metadata
  absl::Duration call_timeout = absl::Seconds(30);
  // How often WaitForJobConditions polls GetJob once the watch has broken.
  absl::Duration poll_interval = absl::Seconds(2);
};

struct ListOptions {
  std::string namespace_;  // empty: every namespace
  std::string label_selector;
  int page_size = 0;  // 0: the server's default (100); at most 1000
  std::string page_token;
};

struct WatchOptions {
  std::string namespace_;  // empty: every namespace
  std::string name;        // only this job when set
  std::string label_selector;
  absl::Duration timeout = absl::InfiniteDuration();
};

// The highest attempt number the API takes (api/v1/training_service.proto).
inline constexpr int kMaxAttempt = 1000000;
// The most histories one ListJobHistories answers.
inline constexpr int kMaxHistoryPageSize = 1000;

struct LogOptions {
  std::string namespace_;
  std::string name;
  std::string replica;  // "master-0"; empty: every replica, interleaved by chunk
  bool follow = false;
  int64_t tail_lines = 0;  // 0: the whole log
  // The attempt whose logs to read (status.coach.attempts[].attempt), 0..kMaxAttempt; unset:
  // the current one. Earlier attempts' logs come from where the operator kept them.
  std::optional<int> attempt;
  // A deleted job's uid (ListJobHistories): its kept logs; the job need not exist.
  std::string uid;
  // Infinite by default when following, else call_timeout.
  std::optional<absl::Duration> timeout;
};

struct WaitOptions {
  absl::Duration timeout = absl::Minutes(10);
  // Called with the job first seen and after every observed change.
  std::function<void(const api::v1::TrainingJob&)> on_progress;
};

class TrainingClient {
 public:
  // Resolves `options` (see connection.h) and opens a lazily connecting channel.
  // InvalidArgument for bad options; never contacts the server.
  static absl::StatusOr<std::unique_ptr<TrainingClient>> Create(const ConnectionOptions& options);

  // Over an existing channel (tests, callers with custom channels).
  TrainingClient(std::shared_ptr<grpc::ChannelInterface> channel, ClientConfig config);
  // Over an existing stub (tests with a fake stub).
  TrainingClient(std::unique_ptr<api::v1::TrainingService::StubInterface> stub,
                 ClientConfig config);

  // Creates `job`; `namespace_` applies when the job names none. With dry_run the server
  // validates and defaults only. Returns the job as stored (defaulted, with uid).
  // InvalidArgument, AlreadyExists, Unauthenticated, Unavailable.
  absl::StatusOr<api::v1::TrainingJob> CreateJob(const api::v1::TrainingJob& job,
                                                 const std::string& namespace_ = "",
                                                 bool dry_run = false);
  // Same, from a kubeflow.org/v1 manifest (YAML or JSON) holding exactly one job; the
  // server parses it. InvalidArgument for a bad manifest.
  absl::StatusOr<api::v1::TrainingJob> CreateJobFromManifest(const std::string& manifest,
                                                             const std::string& namespace_ = "",
                                                             bool dry_run = false);

  // NotFound when there is no such job.
  absl::StatusOr<api::v1::TrainingJob> GetJob(const std::string& namespace_,
                                              const std::string& name);

  // One page. InvalidArgument for a bad selector, page size or token.
  absl::StatusOr<api::v1::ListJobsResponse> ListJobs(const ListOptions& options);
  // Every page, in order. Internal when the server repeats a page token (a loop).
  absl::StatusOr<std::vector<api::v1::TrainingJob>> ListAllJobs(
      const std::string& namespace_ = "", const std::string& label_selector = "",
      int page_size = 0);

  // NotFound when there is no such job.
  absl::Status DeleteJob(const std::string& namespace_, const std::string& name);
  // NotFound; FailedPrecondition when the job has finished.
  absl::StatusOr<api::v1::TrainingJob> SuspendJob(const std::string& namespace_,
                                                  const std::string& name);
  // NotFound; FailedPrecondition when the job has finished.
  absl::StatusOr<api::v1::TrainingJob> ResumeJob(const std::string& namespace_,
                                                 const std::string& name);
  // The job, its replicas as observed and its recent events. NotFound.
  absl::StatusOr<api::v1::DescribeJobResponse> DescribeJob(const std::string& namespace_,
                                                           const std::string& name);

  // Streams the matching jobs (ADDED first, then each change) to `on_event` until it
  // returns false (OK), `cancel` fires (Cancelled), the timeout passes
  // (DeadlineExceeded), the stream fails (its code), or the server ends the stream
  // (Unavailable: watches end only when the server goes away).
  absl::Status Watch(const WatchOptions& options,
                     const std::function<bool(const api::v1::JobEvent&)>& on_event,
                     CancelHandle* cancel = nullptr);

  // Streams log chunks to `on_chunk` until the log ends (OK; with follow: when the
  // replica ends), `on_chunk` returns false (OK) or `cancel` fires (Cancelled). Each
  // replica's first chunk says where its bytes come from (LogChunk.source: "live",
  // "kept/local", "kept/mlflow", "kept/store"); every chunk names its attempt.
  //   InvalidArgument  attempt outside 0..kMaxAttempt (nothing is sent)
  //   NotFound         an unknown job, replica, attempt or uid
  //   Unimplemented    attempt or uid was asked for and the server ignored it (an operator
  //                    older than them answers with the current logs, which are not passed on)
  absl::Status GetJobLogs(const LogOptions& options,
                          const std::function<bool(const api::v1::LogChunk&)>& on_chunk,
                          CancelHandle* cancel = nullptr);

  // The kept histories of deleted jobs of `namespace_` (empty: every namespace) named `name`
  // (empty: any), newest deletion first: the job as last seen (status.coach.attempts: its
  // attempt timeline), when and by what it was deleted, the logs kept. At most `page_size`
  // (0: the server's default, 100; at most 1000); `truncated` when more exist.
  //   InvalidArgument     page_size outside 0..1000 (nothing is sent)
  //   FailedPrecondition  the operator keeps no history of deleted jobs
  //   Unimplemented       the operator predates this call
  absl::StatusOr<api::v1::ListJobHistoriesResponse> ListJobHistories(const std::string& namespace_,
                                                                     const std::string& name,
                                                                     int page_size = 0);

  // Waits until the job has one of `conditions` ("Succeeded", "Failed", "Running", ...)
  // True and returns the job. Watches the job; when the watch breaks, polls GetJob every
  // poll_interval instead.
  //   DeadlineExceeded    options.timeout passed first (the message says the last state)
  //   FailedPrecondition  the job finished (Failed, or Succeeded) without any wanted
  //                       condition; for Failed the message is the job's failure message
  //   NotFound            no such job, or it was deleted while waiting
  //   InvalidArgument     `conditions` is empty
  //   Unauthenticated, PermissionDenied and other non-transient errors as they come.
  absl::StatusOr<api::v1::TrainingJob> WaitForJobConditions(const std::string& namespace_,
                                                            const std::string& name,
                                                            const std::set<std::string>& conditions,
                                                            const WaitOptions& options = {});

  const ClientConfig& config() const { return config_; }

 private:
  // A context with the token and, when finite, a deadline `timeout` from now.
  void Prepare(grpc::ClientContext* context, absl::Duration timeout) const;
  absl::Status Error(const grpc::Status& status, const std::string& what) const;
  // One unary call through `method` of the stub with this client's token and deadline;
  // an error is mapped by Error() and names `what`.
  template <typename Response, typename Request, typename Method>
  absl::StatusOr<Response> Unary(Method method, const Request& request,
                                 const std::string& what) const {
    grpc::ClientContext context;
    Prepare(&context, config_.call_timeout);
    Response response;
    grpc::Status status = (stub_.get()->*method)(&context, request, &response);
    if (!status.ok()) return Error(status, what);
    return response;
  }

  std::shared_ptr<grpc::ChannelInterface> channel_;
  std::unique_ptr<api::v1::TrainingService::StubInterface> stub_;
  ClientConfig config_;
};

}  // namespace coach::sdk
