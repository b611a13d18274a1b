#include "operator/store/testing/fake_job_store.h"

#include <google/protobuf/util/message_differencer.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"

namespace coach::store::testing {
namespace {

absl::Status NoJob(const JobKey& key) {
  return absl::NotFoundError(absl::StrCat("job ", key.namespace_, "/", key.name, " not found"));
}

// Same shape as the sqlite store's token, but any opaque string would do.
std::string Token(const JobKey& k) { return absl::StrCat("fake:", k.namespace_, "\x1f", k.name); }

}  // namespace

void FakeJobStore::InjectError(const std::string& method, absl::Status error) {
  absl::MutexLock lock(&mu_);
  errors_[method] = std::move(error);
}

std::vector<std::string> FakeJobStore::calls() {
  absl::MutexLock lock(&mu_);
  return calls_;
}

absl::Status FakeJobStore::Enter(const std::string& method) {
  calls_.push_back(method);
  auto it = errors_.find(method);
  if (it == errors_.end()) return absl::OkStatus();
  absl::Status s = it->second;
  errors_.erase(it);
  return s;
}

absl::StatusOr<api::v1::TrainingJob> FakeJobStore::Create(const api::v1::TrainingJob& input) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(Enter("Create"));
  if (input.metadata().name().empty() || input.metadata().namespace_().empty()) {
    return absl::InvalidArgumentError("metadata.name and metadata.namespace are required");
  }
  const JobKey key = WithoutKind(KeyOf(input));
  if (jobs_.count(key) > 0) return absl::AlreadyExistsError("job already exists");
  api::v1::TrainingJob job = input;
  job.mutable_metadata()->set_uid(absl::StrFormat("00000000-0000-4000-8000-%012d", next_uid_++));
  job.mutable_metadata()->set_resource_version("1");
  job.mutable_metadata()->set_generation(1);
  job.mutable_metadata()->mutable_creation_timestamp()->set_seconds(
      absl::ToUnixSeconds(clock_->Now()));
  jobs_[key] = job;
  return job;
}

absl::StatusOr<api::v1::TrainingJob> FakeJobStore::Get(const JobKey& kinded) {
  const JobKey key = WithoutKind(kinded);
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(Enter("Get"));
  auto it = jobs_.find(key);
  if (it == jobs_.end()) return NoJob(key);
  return it->second;
}

absl::StatusOr<ListResult> FakeJobStore::List(const ListOptions& options) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(Enter("List"));
  if (options.page_size < 0) return absl::InvalidArgumentError("page_size: must be >= 0");
  std::optional<JobKey> after;
  if (!options.page_token.empty()) {
    const std::string& t = options.page_token;
    size_t sep = t.find('\x1f');
    if (t.rfind("fake:", 0) != 0 || sep == std::string::npos) {
      return absl::InvalidArgumentError("page_token: not a token this store returned");
    }
    after = JobKey{t.substr(5, sep - 5), t.substr(sep + 1)};
  }
  ListResult result;
  for (const auto& [key, job] : jobs_) {
    if (!options.namespace_.empty() && key.namespace_ != options.namespace_) continue;
    if (after.has_value() && !(*after < key)) continue;
    bool match = true;
    for (const auto& [k, v] : options.label_selector) {
      auto l = job.metadata().labels().find(k);
      if (l == job.metadata().labels().end() || l->second != v) match = false;
    }
    if (!match) continue;
    if (options.page_size > 0 && static_cast<int>(result.jobs.size()) == options.page_size) {
      result.next_page_token = Token(WithoutKind(KeyOf(result.jobs.back())));
      break;
    }
    result.jobs.push_back(job);
  }
  return result;
}

absl::StatusOr<api::v1::TrainingJob> FakeJobStore::CheckedUpdate(const api::v1::TrainingJob& input,
                                                                 bool status_only) {
  int64_t given;
  if (!absl::SimpleAtoi(input.metadata().resource_version(), &given)) {
    return absl::InvalidArgumentError("metadata.resourceVersion: required for updates");
  }
  const JobKey key = WithoutKind(KeyOf(input));
  auto it = jobs_.find(key);
  if (it == jobs_.end()) return NoJob(key);
  api::v1::TrainingJob& stored = it->second;
  int64_t current = 0;
  (void)absl::SimpleAtoi(stored.metadata().resource_version(), &current);
  if (given != current) return absl::AbortedError("resourceVersion is stale; re-read and retry");
  api::v1::TrainingJob next;
  if (status_only) {
    next = stored;
    *next.mutable_status() = input.status();
  } else {
    next = input;
    *next.mutable_status() = stored.status();
    next.mutable_metadata()->set_uid(stored.metadata().uid());
    *next.mutable_metadata()->mutable_creation_timestamp() = stored.metadata().creation_timestamp();
    bool changed =
        !google::protobuf::util::MessageDifferencer::Equals(stored.spec(), input.spec()) ||
        stored.kind() != input.kind();
    next.mutable_metadata()->set_generation(stored.metadata().generation() + (changed ? 1 : 0));
  }
  next.mutable_metadata()->set_resource_version(absl::StrCat(current + 1));
  stored = next;
  return next;
}

absl::StatusOr<api::v1::TrainingJob> FakeJobStore::Update(const api::v1::TrainingJob& job) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(Enter("Update"));
  return CheckedUpdate(job, /*status_only=*/false);
}

absl::StatusOr<api::v1::TrainingJob> FakeJobStore::UpdateStatus(const api::v1::TrainingJob& job) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(Enter("UpdateStatus"));
  return CheckedUpdate(job, /*status_only=*/true);
}

absl::Status FakeJobStore::Delete(const JobKey& kinded,
                                  std::optional<std::string> resource_version) {
  const JobKey key = WithoutKind(kinded);
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(Enter("Delete"));
  auto it = jobs_.find(key);
  if (it == jobs_.end()) return NoJob(key);
  if (resource_version.has_value() &&
      *resource_version != it->second.metadata().resource_version()) {
    return absl::AbortedError("resourceVersion is stale; re-read and retry");
  }
  jobs_.erase(it);
  events_.erase(key);
  return absl::OkStatus();
}

absl::Status FakeJobStore::AppendEvent(const JobKey& kinded, const JobEvent& event) {
  const JobKey job = WithoutKind(kinded);
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(Enter("AppendEvent"));
  if (jobs_.count(job) == 0) return NoJob(job);
  std::vector<JobEvent>& list = events_[job];
  list.push_back(event);
  if (static_cast<int>(list.size()) > max_events_per_job_) {
    list.erase(list.begin(), list.end() - max_events_per_job_);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<JobEvent>> FakeJobStore::ListEvents(const JobKey& kinded) {
  const JobKey job = WithoutKind(kinded);
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(Enter("ListEvents"));
  auto it = events_.find(job);
  return it == events_.end() ? std::vector<JobEvent>() : it->second;
}

}  // namespace coach::store::testing
