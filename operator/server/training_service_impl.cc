#include "operator/server/training_service_impl.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "operator/reconcile/conditions.h"
#include "operator/server/grpc_status.h"
#include "operator/server/progress_token.h"
#include "operator/server/token_auth.h"

namespace coach::server {
namespace {

// How often a streaming call looks for cancellation and shutdown.
constexpr absl::Duration kStreamPoll = absl::Milliseconds(200);

template <typename T>
grpc::Status Reply(const absl::StatusOr<T>& result, T* response) {
  if (!result.ok()) return ToGrpcStatus(result.status());
  *response = *result;
  return grpc::Status::OK;
}

api::v1::JobEvent::Type EventType(core::WatchEventType type) {
  switch (type) {
    case core::WatchEventType::kAdded:
      return api::v1::JobEvent::ADDED;
    case core::WatchEventType::kModified:
      return api::v1::JobEvent::MODIFIED;
    case core::WatchEventType::kDeleted:
      return api::v1::JobEvent::DELETED;
  }
  return api::v1::JobEvent::TYPE_UNSPECIFIED;
}

// The `authorization` metadata into *value; false when absent.
bool AuthorizationHeader(grpc::ServerContext* context, std::string* value) {
  const auto& metadata = context->client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) return false;
  value->assign(it->second.data(), it->second.size());
  return true;
}

}  // namespace

grpc::Status TrainingServiceImpl::Authenticate(grpc::ServerContext* context, UserInfo* user) {
  std::string value;
  const bool present = AuthorizationHeader(context, &value);
  if (present) {
    // A pod's progress token is good for ReportProgress alone, whatever else would take it.
    absl::StatusOr<std::string> token = BearerToken(&value);
    if (token.ok() && IsProgressToken(*token)) {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          absl::StrCat("a token of audience \"", kProgressAudience,
                                       "\" may only report progress (ReportProgress)"));
    }
  }
  absl::StatusOr<UserInfo> who = calls_.Authenticate(present ? &value : nullptr);
  if (!who.ok()) return ToGrpcStatus(who.status());
  *user = *std::move(who);
  return grpc::Status::OK;
}

grpc::Status TrainingServiceImpl::AuthorizeJobCall(grpc::ServerContext* context, ApiCall call,
                                                   const std::string& ns, const std::string& name) {
  UserInfo user;
  if (grpc::Status s = Authenticate(context, &user); !s.ok()) return s;
  return ToGrpcStatus(calls_.ForJob(user, call, ns, name));
}

grpc::Status TrainingServiceImpl::CreateJob(grpc::ServerContext* context,
                                            const api::v1::CreateJobRequest* request,
                                            api::v1::TrainingJob* response) {
  UserInfo user;
  if (grpc::Status s = Authenticate(context, &user); !s.ok()) return s;
  core::CreateRequest create;
  if (request->has_job()) create.job = request->job();
  create.manifest = request->manifest();
  create.namespace_ = request->namespace_();
  create.dry_run = request->dry_run();
  if (auth_->Authorizes()) {
    // The kind and namespace to authorize are the admitted job's (after defaulting).
    absl::StatusOr<api::v1::TrainingJob> admitted = jobs_->Admission(create);
    if (!admitted.ok()) return ToGrpcStatus(admitted.status());
    if (absl::Status s = calls_.ForNewJob(user, *admitted); !s.ok()) return ToGrpcStatus(s);
  }
  return Reply(jobs_->Create(create), response);
}

grpc::Status TrainingServiceImpl::GetJob(grpc::ServerContext* context,
                                         const api::v1::GetJobRequest* request,
                                         api::v1::TrainingJob* response) {
  if (grpc::Status s =
          AuthorizeJobCall(context, ApiCall::kGetJob, request->namespace_(), request->name());
      !s.ok()) {
    return s;
  }
  return Reply(jobs_->Get(request->namespace_(), request->name()), response);
}

grpc::Status TrainingServiceImpl::ListJobs(grpc::ServerContext* context,
                                           const api::v1::ListJobsRequest* request,
                                           api::v1::ListJobsResponse* response) {
  UserInfo user;
  if (grpc::Status s = Authenticate(context, &user); !s.ok()) return s;
  absl::StatusOr<KindFilter> kinds =
      calls_.ForCollection(user, ApiCall::kListJobs, request->namespace_());
  if (!kinds.ok()) return ToGrpcStatus(kinds.status());
  core::ListRequest list;
  list.namespace_ = request->namespace_();
  list.label_selector = request->label_selector();
  list.page_size = request->page_size();
  list.page_token = request->page_token();
  absl::StatusOr<core::ListResponse> result = jobs_->List(list);
  if (!result.ok()) return ToGrpcStatus(result.status());
  // A page may hold fewer jobs than page_size once other kinds are filtered out; the
  // page token stays valid (as with a label selector the store cannot apply).
  for (auto& job : result->jobs) {
    if (kinds->Allows(job)) *response->add_jobs() = std::move(job);
  }
  response->set_next_page_token(result->next_page_token);
  return grpc::Status::OK;
}

grpc::Status TrainingServiceImpl::DeleteJob(grpc::ServerContext* context,
                                            const api::v1::DeleteJobRequest* request,
                                            api::v1::DeleteJobResponse*) {
  if (grpc::Status s =
          AuthorizeJobCall(context, ApiCall::kDeleteJob, request->namespace_(), request->name());
      !s.ok()) {
    return s;
  }
  return ToGrpcStatus(jobs_->Delete(request->namespace_(), request->name()));
}

grpc::Status TrainingServiceImpl::SuspendJob(grpc::ServerContext* context,
                                             const api::v1::SuspendJobRequest* request,
                                             api::v1::TrainingJob* response) {
  if (grpc::Status s =
          AuthorizeJobCall(context, ApiCall::kSuspendJob, request->namespace_(), request->name());
      !s.ok()) {
    return s;
  }
  return Reply(jobs_->Suspend(request->namespace_(), request->name()), response);
}

grpc::Status TrainingServiceImpl::ResumeJob(grpc::ServerContext* context,
                                            const api::v1::ResumeJobRequest* request,
                                            api::v1::TrainingJob* response) {
  if (grpc::Status s =
          AuthorizeJobCall(context, ApiCall::kResumeJob, request->namespace_(), request->name());
      !s.ok()) {
    return s;
  }
  return Reply(jobs_->Resume(request->namespace_(), request->name()), response);
}

grpc::Status TrainingServiceImpl::DescribeJob(grpc::ServerContext* context,
                                              const api::v1::DescribeJobRequest* request,
                                              api::v1::DescribeJobResponse* response) {
  if (grpc::Status s =
          AuthorizeJobCall(context, ApiCall::kDescribeJob, request->namespace_(), request->name());
      !s.ok()) {
    return s;
  }
  absl::StatusOr<core::JobDescription> d = jobs_->Describe(request->namespace_(), request->name());
  if (!d.ok()) return ToGrpcStatus(d.status());
  *response->mutable_job() = d->job;
  for (const core::ReplicaInfo& r : d->replicas) {
    api::v1::ReplicaState* out = response->add_replicas();
    out->set_name(r.name);
    out->set_replica_type(r.replica_type);
    out->set_index(r.index);
    out->set_phase(r.phase);
    out->set_restarts(r.restarts);
    if (r.exit_code.has_value()) out->set_exit_code(*r.exit_code);
    out->set_message(r.message);
  }
  for (const store::JobEvent& e : d->events) {
    api::v1::Event* out = response->add_events();
    out->set_type(e.type);
    out->set_reason(e.reason);
    out->set_message(e.message);
    *out->mutable_time() = reconcile::ToTimestamp(e.time);
  }
  return grpc::Status::OK;
}

grpc::Status TrainingServiceImpl::WatchJobs(grpc::ServerContext* context,
                                            const api::v1::WatchJobsRequest* request,
                                            grpc::ServerWriter<api::v1::JobEvent>* writer) {
  UserInfo user;
  if (grpc::Status s = Authenticate(context, &user); !s.ok()) return s;
  absl::StatusOr<KindFilter> kinds =
      calls_.ForCollection(user, ApiCall::kWatchJobs, request->namespace_(), request->name());
  if (!kinds.ok()) return ToGrpcStatus(kinds.status());
  absl::StatusOr<std::shared_ptr<core::Subscription>> sub =
      jobs_->Watch(request->namespace_(), request->name(), request->label_selector());
  if (!sub.ok()) return ToGrpcStatus(sub.status());
  while (true) {
    if (context->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
    if (shutting_down_) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down");
    }
    absl::StatusOr<std::optional<core::WatchEvent>> ev = (*sub)->Next(kStreamPoll);
    if (!ev.ok()) {
      if (absl::IsCancelled(ev.status())) {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, std::string(ev.status().message()));
      }
      return ToGrpcStatus(ev.status());
    }
    if (!ev->has_value() || !kinds->Allows((*ev)->job)) continue;
    api::v1::JobEvent out;
    out.set_type(EventType((*ev)->type));
    *out.mutable_job() = std::move((*ev)->job);
    if (!writer->Write(out)) return grpc::Status(grpc::StatusCode::CANCELLED, "stream closed");
  }
}

grpc::Status TrainingServiceImpl::GetJobLogs(grpc::ServerContext* context,
                                             const api::v1::GetJobLogsRequest* request,
                                             grpc::ServerWriter<api::v1::LogChunk>* writer) {
  std::optional<KindFilter> deleted_kinds;
  if (request->uid().empty()) {
    if (grpc::Status s =
            AuthorizeJobCall(context, ApiCall::kGetJobLogs, request->namespace_(), request->name());
        !s.ok()) {
      return s;
    }
  } else {
    // A deleted job: no stored job names its kind; the record's kind is checked below.
    UserInfo user;
    if (grpc::Status s = Authenticate(context, &user); !s.ok()) return s;
    absl::StatusOr<KindFilter> kinds = calls_.ForCollection(user, ApiCall::kListJobHistories,
                                                            request->namespace_(), request->name());
    if (!kinds.ok()) return ToGrpcStatus(kinds.status());
    deleted_kinds = *kinds;
  }
  core::LogRequest log_request;
  log_request.uid = request->uid();
  backend::LogOptions& options = log_request.options;
  options.replica = request->replica();
  options.follow = request->follow();
  options.tail_lines = request->tail_lines();
  if (request->has_attempt()) options.attempt = request->attempt();
  if (deleted_kinds && !deleted_kinds->all()) {
    bool truncated = false;
    absl::StatusOr<std::vector<api::v1::JobHistory>> records =
        jobs_->Histories(request->namespace_(), request->name(), 1000, &truncated);
    if (!records.ok()) return ToGrpcStatus(records.status());
    bool allowed = false;
    for (const api::v1::JobHistory& record : *records) {
      if (record.job().metadata().uid() == request->uid())
        allowed = deleted_kinds->Allows(record.job());
    }
    if (!allowed) {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          "not allowed to read the logs of that deleted job");
    }
  }
  std::atomic<bool> cancelled{false};
  // A following stream may sit idle for long: a monitor turns client cancellation and
  // server shutdown into `cancelled`, which the backend polls.
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread monitor([&] {
    std::unique_lock<std::mutex> lock(mu);
    while (!done) {
      if (context->IsCancelled() || shutting_down_) {
        cancelled = true;
        return;
      }
      cv.wait_for(lock, std::chrono::milliseconds(absl::ToInt64Milliseconds(kStreamPoll)));
    }
  });
  std::set<std::string> sourced;  // replicas whose source was sent
  absl::Status status = jobs_->Logs(
      request->namespace_(), request->name(), log_request,
      [&](const std::string& replica, const std::string& data, const std::string& source,
          int attempt) {
        api::v1::LogChunk chunk;
        chunk.set_replica(replica);
        chunk.set_data(data);
        chunk.set_attempt(attempt);
        if (sourced.insert(replica).second) chunk.set_source(source);
        return !cancelled && writer->Write(chunk);
      },
      cancelled);
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_all();
  monitor.join();
  if (context->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
  return ToGrpcStatus(status);
}

grpc::Status TrainingServiceImpl::ListJobHistories(grpc::ServerContext* context,
                                                   const api::v1::ListJobHistoriesRequest* request,
                                                   api::v1::ListJobHistoriesResponse* response) {
  UserInfo user;
  if (grpc::Status s = Authenticate(context, &user); !s.ok()) return s;
  absl::StatusOr<KindFilter> kinds =
      calls_.ForCollection(user, ApiCall::kListJobHistories, request->namespace_());
  if (!kinds.ok()) return ToGrpcStatus(kinds.status());
  bool truncated = false;
  absl::StatusOr<std::vector<api::v1::JobHistory>> histories =
      jobs_->Histories(request->namespace_(), request->name(), request->page_size(), &truncated);
  if (!histories.ok()) return ToGrpcStatus(histories.status());
  for (auto& history : *histories) {
    if (kinds->Allows(history.job())) *response->add_histories() = std::move(history);
  }
  response->set_truncated(truncated);
  return grpc::Status::OK;
}

grpc::Status TrainingServiceImpl::ReportProgress(grpc::ServerContext* context,
                                                 const api::v1::ReportProgressRequest* request,
                                                 api::v1::ReportProgressResponse* response) {
  if (progress_ == nullptr) {
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                        "this operator takes no progress reports: they go to one with "
                        "--backend=kube and --progress-report-address (the local backend reads "
                        "its replicas' progress from their shim)");
  }
  std::string value;
  const bool present = AuthorizationHeader(context, &value);
  absl::StatusOr<api::v1::ReportProgressResponse> answer =
      progress_->Report(present ? &value : nullptr, *request);
  if (!answer.ok()) return ToGrpcStatus(answer.status());
  *response = *std::move(answer);
  return grpc::Status::OK;
}

}  // namespace coach::server
