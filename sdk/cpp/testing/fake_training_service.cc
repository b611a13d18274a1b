#include "sdk/cpp/testing/fake_training_service.h"

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace coach::sdk::testing {

using api::v1::JobEvent;
using api::v1::TrainingJob;

namespace {

std::string Key(const std::string& namespace_, const std::string& name) {
  return absl::StrCat(namespace_, "/", name);
}

// Equality selectors only ("a=b,c=d"): enough for the SDK's tests.
bool Matches(const TrainingJob& job, const std::string& selector) {
  if (selector.empty()) return true;
  std::vector<std::string> terms = absl::StrSplit(selector, ',');
  for (const std::string& term : terms) {
    std::vector<std::string> parts = absl::StrSplit(term, '=');
    if (parts.size() != 2) return false;
    auto it = job.metadata().labels().find(parts[0]);
    if (it == job.metadata().labels().end() || it->second != parts[1]) return false;
  }
  return true;
}

grpc::Status NotFound(const std::string& namespace_, const std::string& name) {
  return grpc::Status(grpc::StatusCode::NOT_FOUND,
                      absl::StrCat("job ", namespace_, "/", name, " not found"));
}

}  // namespace

void FakeTrainingService::AddJob(const TrainingJob& job) {
  std::lock_guard<std::mutex> lock(mutex_);
  jobs_[Key(job.metadata().namespace_(), job.metadata().name())] = job;
}

std::optional<TrainingJob> FakeTrainingService::FindJob(const std::string& namespace_,
                                                        const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = jobs_.find(Key(namespace_, name));
  if (it == jobs_.end()) return std::nullopt;
  return it->second;
}

void FakeTrainingService::InjectError(const std::string& method, grpc::Status status, int times) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (int i = 0; i < times; ++i) errors_[method].push_back(status);
}

void FakeTrainingService::ScriptGetJob(std::vector<TrainingJob> jobs) {
  std::lock_guard<std::mutex> lock(mutex_);
  get_script_.assign(jobs.begin(), jobs.end());
}

void FakeTrainingService::ScriptWatch(WatchScript script) {
  std::lock_guard<std::mutex> lock(mutex_);
  watch_scripts_.push_back(std::move(script));
}

void FakeTrainingService::SetManifestResult(TrainingJob job) {
  std::lock_guard<std::mutex> lock(mutex_);
  manifest_result_ = std::move(job);
}

void FakeTrainingService::AddLogChunk(const std::string& replica, const std::string& data) {
  std::lock_guard<std::mutex> lock(mutex_);
  logs_.emplace_back(replica, data);
}

void FakeTrainingService::SetDescribe(api::v1::DescribeJobResponse response) {
  std::lock_guard<std::mutex> lock(mutex_);
  describe_ = std::move(response);
}

std::vector<std::string> FakeTrainingService::calls() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return calls_;
}
std::vector<std::string> FakeTrainingService::authorizations() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return authorizations_;
}
std::vector<api::v1::CreateJobRequest> FakeTrainingService::create_requests() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return create_requests_;
}
std::vector<api::v1::ListJobsRequest> FakeTrainingService::list_requests() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return list_requests_;
}
std::vector<api::v1::GetJobLogsRequest> FakeTrainingService::log_requests() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return log_requests_;
}
std::vector<api::v1::WatchJobsRequest> FakeTrainingService::watch_requests() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return watch_requests_;
}

std::optional<grpc::Status> FakeTrainingService::Record(const std::string& method,
                                                        grpc::ServerContext* context) {
  std::lock_guard<std::mutex> lock(mutex_);
  calls_.push_back(method);
  auto header = context->client_metadata().find("authorization");
  authorizations_.push_back(header == context->client_metadata().end()
                                ? ""
                                : std::string(header->second.data(), header->second.size()));
  auto it = errors_.find(method);
  if (it == errors_.end() || it->second.empty()) return std::nullopt;
  grpc::Status status = it->second.front();
  it->second.pop_front();
  return status;
}

grpc::Status FakeTrainingService::CreateJob(grpc::ServerContext* context,
                                            const api::v1::CreateJobRequest* request,
                                            TrainingJob* response) {
  if (auto error = Record("CreateJob", context)) return *error;
  std::lock_guard<std::mutex> lock(mutex_);
  create_requests_.push_back(*request);
  TrainingJob job = request->has_job() ? request->job() : manifest_result_;
  if (job.metadata().namespace_().empty()) {
    job.mutable_metadata()->set_namespace_(request->namespace_().empty() ? "default"
                                                                         : request->namespace_());
  }
  std::string key = Key(job.metadata().namespace_(), job.metadata().name());
  if (jobs_.count(key) > 0) {
    return grpc::Status(grpc::StatusCode::ALREADY_EXISTS, absl::StrCat("job ", key, " exists"));
  }
  job.mutable_metadata()->set_uid(absl::StrCat("uid-", jobs_.size() + 1));
  if (!request->dry_run()) jobs_[key] = job;
  *response = job;
  return grpc::Status::OK;
}

grpc::Status FakeTrainingService::GetJob(grpc::ServerContext* context,
                                         const api::v1::GetJobRequest* request,
                                         TrainingJob* response) {
  if (auto error = Record("GetJob", context)) return *error;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!get_script_.empty()) {
    *response = get_script_.front();
    if (get_script_.size() > 1) get_script_.pop_front();
    return grpc::Status::OK;
  }
  auto it = jobs_.find(Key(request->namespace_(), request->name()));
  if (it == jobs_.end()) return NotFound(request->namespace_(), request->name());
  *response = it->second;
  return grpc::Status::OK;
}

grpc::Status FakeTrainingService::ListJobs(grpc::ServerContext* context,
                                           const api::v1::ListJobsRequest* request,
                                           api::v1::ListJobsResponse* response) {
  if (auto error = Record("ListJobs", context)) return *error;
  std::lock_guard<std::mutex> lock(mutex_);
  list_requests_.push_back(*request);
  std::vector<const TrainingJob*> matching;
  for (const auto& [key, job] : jobs_) {
    if (!request->namespace_().empty() && job.metadata().namespace_() != request->namespace_()) {
      continue;
    }
    if (Matches(job, request->label_selector())) matching.push_back(&job);
  }
  size_t start = 0;
  if (!request->page_token().empty() && !absl::SimpleAtoi(request->page_token(), &start)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "bad page token");
  }
  size_t size = request->page_size() > 0 ? request->page_size() : 100;
  for (size_t i = start; i < matching.size() && i < start + size; ++i) {
    *response->add_jobs() = *matching[i];
  }
  if (start + size < matching.size()) response->set_next_page_token(absl::StrCat(start + size));
  return grpc::Status::OK;
}

grpc::Status FakeTrainingService::DeleteJob(grpc::ServerContext* context,
                                            const api::v1::DeleteJobRequest* request,
                                            api::v1::DeleteJobResponse*) {
  if (auto error = Record("DeleteJob", context)) return *error;
  std::lock_guard<std::mutex> lock(mutex_);
  if (jobs_.erase(Key(request->namespace_(), request->name())) == 0) {
    return NotFound(request->namespace_(), request->name());
  }
  return grpc::Status::OK;
}

grpc::Status FakeTrainingService::WatchJobs(grpc::ServerContext* context,
                                            const api::v1::WatchJobsRequest* request,
                                            grpc::ServerWriter<JobEvent>* writer) {
  if (auto error = Record("WatchJobs", context)) return *error;
  WatchScript script;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    watch_requests_.push_back(*request);
    if (!watch_scripts_.empty()) {
      script = watch_scripts_.front();
      watch_scripts_.pop_front();
    } else {
      script.hang = true;
      for (const auto& [key, job] : jobs_) {
        if (!request->namespace_().empty() &&
            job.metadata().namespace_() != request->namespace_()) {
          continue;
        }
        if (!request->name().empty() && job.metadata().name() != request->name()) continue;
        JobEvent event;
        event.set_type(JobEvent::ADDED);
        *event.mutable_job() = job;
        script.events.push_back(event);
      }
    }
  }
  for (const JobEvent& event : script.events) {
    if (script.delay > absl::ZeroDuration()) absl::SleepFor(script.delay);
    if (context->IsCancelled() || !writer->Write(event)) return grpc::Status::CANCELLED;
  }
  if (!script.hang) return script.end;
  while (!context->IsCancelled()) absl::SleepFor(absl::Milliseconds(5));
  return grpc::Status::CANCELLED;
}

grpc::Status FakeTrainingService::GetJobLogs(grpc::ServerContext* context,
                                             const api::v1::GetJobLogsRequest* request,
                                             grpc::ServerWriter<api::v1::LogChunk>* writer) {
  if (auto error = Record("GetJobLogs", context)) return *error;
  std::vector<std::pair<std::string, std::string>> logs;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    log_requests_.push_back(*request);
    if (jobs_.count(Key(request->namespace_(), request->name())) == 0) {
      return NotFound(request->namespace_(), request->name());
    }
    logs = logs_;
  }
  for (const auto& [replica, data] : logs) {
    if (!request->replica().empty() && replica != request->replica()) continue;
    api::v1::LogChunk chunk;
    chunk.set_replica(replica);
    chunk.set_data(data);
    if (!writer->Write(chunk)) return grpc::Status::CANCELLED;
  }
  return grpc::Status::OK;
}

grpc::Status FakeTrainingService::SuspendJob(grpc::ServerContext* context,
                                             const api::v1::SuspendJobRequest* request,
                                             TrainingJob* response) {
  if (auto error = Record("SuspendJob", context)) return *error;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = jobs_.find(Key(request->namespace_(), request->name()));
  if (it == jobs_.end()) return NotFound(request->namespace_(), request->name());
  it->second.mutable_spec()->mutable_run_policy()->set_suspend(true);
  *response = it->second;
  return grpc::Status::OK;
}

grpc::Status FakeTrainingService::ResumeJob(grpc::ServerContext* context,
                                            const api::v1::ResumeJobRequest* request,
                                            TrainingJob* response) {
  if (auto error = Record("ResumeJob", context)) return *error;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = jobs_.find(Key(request->namespace_(), request->name()));
  if (it == jobs_.end()) return NotFound(request->namespace_(), request->name());
  it->second.mutable_spec()->mutable_run_policy()->set_suspend(false);
  *response = it->second;
  return grpc::Status::OK;
}

grpc::Status FakeTrainingService::DescribeJob(grpc::ServerContext* context,
                                              const api::v1::DescribeJobRequest* request,
                                              api::v1::DescribeJobResponse* response) {
  if (auto error = Record("DescribeJob", context)) return *error;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = jobs_.find(Key(request->namespace_(), request->name()));
  if (it == jobs_.end()) return NotFound(request->namespace_(), request->name());
  *response = describe_;
  *response->mutable_job() = it->second;
  return grpc::Status::OK;
}

FakeServer::FakeServer() {
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service_);
  server_ = builder.BuildAndStart();
  address_ = absl::StrCat("127.0.0.1:", port);
}

FakeServer::~FakeServer() {
  // Hanging watches end once their clients cancel; the deadline bounds the wait anyway.
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
}

TrainingJob JobWithConditions(const std::string& namespace_, const std::string& name,
                              const std::vector<std::string>& true_conditions,
                              const std::string& message) {
  TrainingJob job;
  job.set_kind(api::v1::PYTORCH_JOB);
  job.mutable_metadata()->set_namespace_(namespace_);
  job.mutable_metadata()->set_name(name);
  for (const std::string& type : true_conditions) {
    api::v1::JobCondition* condition = job.mutable_status()->add_conditions();
    condition->set_type(type);
    condition->set_status("True");
    condition->set_message(message);
  }
  return job;
}

}  // namespace coach::sdk::testing
