#include "sdk/cpp/training_client.h"

#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "sdk/cpp/grpc_status.h"

namespace coach::sdk {

using Stub = api::v1::TrainingService::StubInterface;

using api::v1::JobEvent;
using api::v1::TrainingJob;

void CancelHandle::Cancel() {
  std::lock_guard<std::mutex> lock(mutex_);
  cancelled_ = true;
  if (context_ != nullptr) context_->TryCancel();
}

bool CancelHandle::cancelled() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cancelled_;
}

bool CancelHandle::Attach(grpc::ClientContext* context) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (cancelled_) return false;
  context_ = context;
  return true;
}

void CancelHandle::Detach() {
  std::lock_guard<std::mutex> lock(mutex_);
  context_ = nullptr;
}

absl::StatusOr<std::unique_ptr<TrainingClient>> TrainingClient::Create(
    const ConnectionOptions& options) {
  ASSIGN_OR_RETURN(ConnectionSettings settings, ResolveConnection(options));
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel, CreateChannel(settings));
  ClientConfig config;
  config.server = settings.server;
  config.token = settings.token;
  config.call_timeout = settings.call_timeout;
  return std::make_unique<TrainingClient>(std::move(channel), std::move(config));
}

TrainingClient::TrainingClient(std::shared_ptr<grpc::ChannelInterface> channel, ClientConfig config)
    : channel_(channel),
      stub_(api::v1::TrainingService::NewStub(channel)),
      config_(std::move(config)) {}

TrainingClient::TrainingClient(std::unique_ptr<api::v1::TrainingService::StubInterface> stub,
                               ClientConfig config)
    : stub_(std::move(stub)), config_(std::move(config)) {}

void TrainingClient::Prepare(grpc::ClientContext* context, absl::Duration timeout) const {
  if (!config_.token.empty()) {
    context->AddMetadata("authorization", "Bearer " + config_.token);
  }
  if (timeout != absl::InfiniteDuration()) {
    context->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  }
}

absl::Status TrainingClient::Error(const grpc::Status& status, const std::string& what) const {
  return FromGrpcStatus(status, what, config_.server);
}

absl::StatusOr<TrainingJob> TrainingClient::CreateJob(const TrainingJob& job,
                                                      const std::string& namespace_, bool dry_run) {
  api::v1::CreateJobRequest request;
  *request.mutable_job() = job;
  request.set_namespace_(namespace_);
  request.set_dry_run(dry_run);
  return Unary<TrainingJob>(&Stub::CreateJob, request,
                            absl::StrCat("CreateJob ", job.metadata().name()));
}

absl::StatusOr<TrainingJob> TrainingClient::CreateJobFromManifest(const std::string& manifest,
                                                                  const std::string& namespace_,
                                                                  bool dry_run) {
  api::v1::CreateJobRequest request;
  request.set_manifest(manifest);
  request.set_namespace_(namespace_);
  request.set_dry_run(dry_run);
  return Unary<TrainingJob>(&Stub::CreateJob, request, "CreateJob");
}

absl::StatusOr<TrainingJob> TrainingClient::GetJob(const std::string& namespace_,
                                                   const std::string& name) {
  api::v1::GetJobRequest request;
  request.set_namespace_(namespace_);
  request.set_name(name);
  return Unary<TrainingJob>(&Stub::GetJob, request, absl::StrCat("GetJob ", namespace_, "/", name));
}

absl::StatusOr<api::v1::ListJobsResponse> TrainingClient::ListJobs(const ListOptions& options) {
  api::v1::ListJobsRequest request;
  request.set_namespace_(options.namespace_);
  request.set_label_selector(options.label_selector);
  request.set_page_size(options.page_size);
  request.set_page_token(options.page_token);
  return Unary<api::v1::ListJobsResponse>(&Stub::ListJobs, request, "ListJobs");
}

absl::StatusOr<std::vector<TrainingJob>> TrainingClient::ListAllJobs(
    const std::string& namespace_, const std::string& label_selector, int page_size) {
  ListOptions options{namespace_, label_selector, page_size, ""};
  std::vector<TrainingJob> jobs;
  std::set<std::string> seen_tokens;
  while (true) {
    ASSIGN_OR_RETURN(api::v1::ListJobsResponse page, ListJobs(options));
    for (TrainingJob& job : *page.mutable_jobs()) jobs.push_back(std::move(job));
    if (page.next_page_token().empty()) return jobs;
    // A server that hands out the same token twice would keep us here forever.
    if (!seen_tokens.insert(page.next_page_token()).second) {
      return absl::InternalError("ListJobs: the server repeated a page token");
    }
    options.page_token = page.next_page_token();
  }
}

absl::Status TrainingClient::DeleteJob(const std::string& namespace_, const std::string& name) {
  api::v1::DeleteJobRequest request;
  request.set_namespace_(namespace_);
  request.set_name(name);
  return Unary<api::v1::DeleteJobResponse>(&Stub::DeleteJob, request,
                                           absl::StrCat("DeleteJob ", namespace_, "/", name))
      .status();
}

absl::StatusOr<TrainingJob> TrainingClient::SuspendJob(const std::string& namespace_,
                                                       const std::string& name) {
  api::v1::SuspendJobRequest request;
  request.set_namespace_(namespace_);
  request.set_name(name);
  return Unary<TrainingJob>(&Stub::SuspendJob, request,
                            absl::StrCat("SuspendJob ", namespace_, "/", name));
}

absl::StatusOr<TrainingJob> TrainingClient::ResumeJob(const std::string& namespace_,
                                                      const std::string& name) {
  api::v1::ResumeJobRequest request;
  request.set_namespace_(namespace_);
  request.set_name(name);
  return Unary<TrainingJob>(&Stub::ResumeJob, request,
                            absl::StrCat("ResumeJob ", namespace_, "/", name));
}

absl::StatusOr<api::v1::DescribeJobResponse> TrainingClient::DescribeJob(
    const std::string& namespace_, const std::string& name) {
  api::v1::DescribeJobRequest request;
  request.set_namespace_(namespace_);
  request.set_name(name);
  return Unary<api::v1::DescribeJobResponse>(&Stub::DescribeJob, request,
                                             absl::StrCat("DescribeJob ", namespace_, "/", name));
}

namespace {

// Runs a server stream to completion: OK when `on_message` stopped it, Cancelled when
// `cancel` fired, otherwise the stream's own status (gRPC's, still unmapped).
template <typename Message, typename Callback>
std::pair<bool, grpc::Status> Drain(grpc::ClientReaderInterface<Message>* reader,
                                    grpc::ClientContext* context, const Callback& on_message) {
  Message message;
  bool stopped = false;
  while (reader->Read(&message)) {
    if (!on_message(message)) {
      stopped = true;
      context->TryCancel();
      // Finish() wants the stream drained; after TryCancel this ends promptly.
      while (reader->Read(&message)) {
      }
      break;
    }
  }
  return {stopped, reader->Finish()};
}

}  // namespace

absl::Status TrainingClient::Watch(const WatchOptions& options,
                                   const std::function<bool(const JobEvent&)>& on_event,
                                   CancelHandle* cancel) {
  api::v1::WatchJobsRequest request;
  request.set_namespace_(options.namespace_);
  request.set_name(options.name);
  request.set_label_selector(options.label_selector);
  grpc::ClientContext context;
  Prepare(&context, options.timeout);
  if (cancel != nullptr && !cancel->Attach(&context)) {
    return absl::CancelledError("WatchJobs: cancelled");
  }
  std::unique_ptr<grpc::ClientReaderInterface<JobEvent>> reader =
      stub_->WatchJobs(&context, request);
  auto [stopped, status] = Drain(reader.get(), &context, on_event);
  if (cancel != nullptr) cancel->Detach();
  if (stopped) return absl::OkStatus();
  if (cancel != nullptr && cancel->cancelled()) return absl::CancelledError("WatchJobs: cancelled");
  if (status.ok()) return absl::UnavailableError("WatchJobs: the server ended the watch");
  return Error(status, "WatchJobs");
}

absl::Status TrainingClient::GetJobLogs(
    const LogOptions& options, const std::function<bool(const api::v1::LogChunk&)>& on_chunk,
    CancelHandle* cancel) {
  if (options.attempt.has_value() && (*options.attempt < 0 || *options.attempt > kMaxAttempt)) {
    return absl::InvalidArgumentError(
        absl::StrCat("GetJobLogs: attempt: must be 0..", kMaxAttempt, ", got ", *options.attempt));
  }
  api::v1::GetJobLogsRequest request;
  request.set_namespace_(options.namespace_);
  request.set_name(options.name);
  request.set_replica(options.replica);
  request.set_follow(options.follow);
  request.set_tail_lines(options.tail_lines);
  if (options.attempt.has_value()) request.set_attempt(*options.attempt);
  request.set_uid(options.uid);
  // An operator that predates attempt and uid drops them as unknown fields and streams the
  // current logs; one that knows them names the source on the stream's first chunk. Passing on
  // such bytes would show the wrong attempt's log as the asked one.
  const bool asked_kept = options.attempt.has_value() || !options.uid.empty();
  bool first = true;
  bool ignored = false;
  auto checked = [&](const api::v1::LogChunk& chunk) {
    if (first && asked_kept && chunk.source().empty()) {
      ignored = true;
      return false;
    }
    first = false;
    return on_chunk(chunk);
  };
  grpc::ClientContext context;
  Prepare(&context, options.timeout.value_or(options.follow ? absl::InfiniteDuration()
                                                            : config_.call_timeout));
  if (cancel != nullptr && !cancel->Attach(&context)) {
    return absl::CancelledError("GetJobLogs: cancelled");
  }
  std::unique_ptr<grpc::ClientReaderInterface<api::v1::LogChunk>> reader =
      stub_->GetJobLogs(&context, request);
  auto [stopped, status] = Drain(reader.get(), &context, checked);
  if (cancel != nullptr) cancel->Detach();
  if (ignored) {
    return absl::UnimplementedError(
        absl::StrCat("GetJobLogs ", options.namespace_, "/", options.name, ": coach-operator at ",
                     config_.server,
                     " ignored the attempt and uid asked for (it predates them); upgrade it to "
                     "read earlier attempts' or deleted jobs' logs"));
  }
  if (stopped) return absl::OkStatus();
  if (cancel != nullptr && cancel->cancelled())
    return absl::CancelledError("GetJobLogs: cancelled");
  return Error(status, absl::StrCat("GetJobLogs ", options.namespace_, "/", options.name));
}

absl::StatusOr<api::v1::ListJobHistoriesResponse> TrainingClient::ListJobHistories(
    const std::string& namespace_, const std::string& name, int page_size) {
  if (page_size < 0 || page_size > kMaxHistoryPageSize) {
    return absl::InvalidArgumentError(absl::StrCat("ListJobHistories: page_size: must be 0..",
                                                   kMaxHistoryPageSize, ", got ", page_size));
  }
  api::v1::ListJobHistoriesRequest request;
  request.set_namespace_(namespace_);
  request.set_name(name);
  request.set_page_size(page_size);
  absl::StatusOr<api::v1::ListJobHistoriesResponse> response =
      Unary<api::v1::ListJobHistoriesResponse>(&Stub::ListJobHistories, request,
                                               "ListJobHistories");
  // gRPC's own words ("Method not found") do not tell a user what to do about it.
  if (response.status().code() == absl::StatusCode::kUnimplemented) {
    return absl::UnimplementedError(
        absl::StrCat("ListJobHistories: coach-operator at ", config_.server,
                     " does not serve the histories of deleted jobs (it predates them): ",
                     response.status().message()));
  }
  return response;
}

absl::StatusOr<TrainingJob> TrainingClient::WaitForJobConditions(
    const std::string& namespace_, const std::string& name, const std::set<std::string>& conditions,
    const WaitOptions& options) {
  if (conditions.empty()) {
    return absl::InvalidArgumentError("WaitForJobConditions: no condition to wait for");
  }
  const absl::Time deadline = absl::Now() + options.timeout;
  const std::string job_name = absl::StrCat(namespace_, "/", name);
  const std::string wanted = absl::StrJoin(conditions, " or ");
  std::optional<TrainingJob> last;

  // The verdict on one observation of the job; nullopt: keep waiting.
  auto observe = [&](const TrainingJob& job) -> std::optional<absl::StatusOr<TrainingJob>> {
    if (!last.has_value() || !google::protobuf::util::MessageDifferencer::Equals(*last, job)) {
      last = job;
      if (options.on_progress) options.on_progress(job);
    }
    for (const std::string& condition : conditions) {
      if (HasTrueCondition(job, condition)) return absl::StatusOr<TrainingJob>(job);
    }
    if (IsJobFailed(job)) {
      std::string message = ConditionMessage(job, kFailed);
      return absl::FailedPreconditionError(
          absl::StrCat("job ", job_name, " failed: ", message.empty() ? "(no message)" : message));
    }
    if (IsJobSucceeded(job)) {
      return absl::FailedPreconditionError(
          absl::StrCat("job ", job_name, " succeeded without becoming ", wanted));
    }
    return std::nullopt;
  };
  auto timed_out = [&]() {
    std::string state = last.has_value() ? JobState(*last) : "";
    return absl::DeadlineExceededError(absl::StrCat(
        "timed out after ", absl::FormatDuration(options.timeout), " waiting for job ", job_name,
        " to be ", wanted, " (state: ", state.empty() ? "none" : state, ")"));
  };

  // A GetJob first: NotFound at once for a wrong name, and no stream for a job already there.
  ASSIGN_OR_RETURN(TrainingJob current, GetJob(namespace_, name));
  if (auto verdict = observe(current)) return *verdict;

  absl::Duration remaining = deadline - absl::Now();
  if (remaining <= absl::ZeroDuration()) return timed_out();
  std::optional<absl::StatusOr<TrainingJob>> verdict;
  WatchOptions watch_options{namespace_, name, "", remaining};
  absl::Status watch = Watch(watch_options, [&](const JobEvent& event) {
    if (event.job().metadata().name() != name) return true;
    if (event.type() == JobEvent::DELETED) {
      verdict = absl::NotFoundError(absl::StrCat("job ", job_name, " was deleted while waiting"));
      return false;
    }
    verdict = observe(event.job());
    return !verdict.has_value();
  });
  if (verdict.has_value()) return *verdict;
  switch (watch.code()) {
    case absl::StatusCode::kDeadlineExceeded:
      if (absl::Now() >= deadline) return timed_out();
      break;
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kPermissionDenied:
      return watch;
    default:
      break;
  }

  // The watch broke (server restart, proxy timeout, no streaming support): poll.
  while (true) {
    remaining = deadline - absl::Now();
    if (remaining <= absl::ZeroDuration()) return timed_out();
    absl::SleepFor(std::min(config_.poll_interval, remaining));
    absl::StatusOr<TrainingJob> polled = GetJob(namespace_, name);
    if (!polled.ok()) {
      if (polled.status().code() == absl::StatusCode::kUnavailable ||
          polled.status().code() == absl::StatusCode::kDeadlineExceeded) {
        continue;
      }
      return polled.status();
    }
    if (auto polled_verdict = observe(*polled)) return *polled_verdict;
  }
}

}  // namespace coach::sdk
