#include "operator/core/testing/fake_backend.h"

#include <cctype>
#include <string>
#include <utility>

namespace coach::core::testing {

void FakeBackend::SetChangeCallback(backend::ChangeCallback callback) {
  absl::MutexLock lock(&mu_);
  callback_ = std::move(callback);
}

absl::Status FakeBackend::Start() {
  absl::MutexLock lock(&mu_);
  started_ = true;
  return absl::OkStatus();
}

void FakeBackend::Stop() {
  absl::MutexLock lock(&mu_);
  stopped_ = true;
}

absl::Status FakeBackend::Admit(const model::Job& job) {
  absl::MutexLock lock(&mu_);
  if (!admit_error_.ok()) return admit_error_;
  admitted_.push_back(Key(job.metadata().namespace_(), job.metadata().name()));
  return absl::OkStatus();
}

std::shared_ptr<const model::AddressPlan> FakeBackend::AddressPlanFor(const model::Job&) {
  return nullptr;
}

absl::StatusOr<model::ObservedState> FakeBackend::Observe(const model::Job& job) {
  absl::MutexLock lock(&mu_);
  if (!observe_error_.ok()) return observe_error_;
  model::ObservedState state;
  if (job.kind() == api::v1::TRAIN_JOB) state.train_job_runtime = train_job_runtime_;
  auto it = jobs_.find(Key(job.metadata().namespace_(), job.metadata().name()));
  if (it == jobs_.end()) return state;
  for (const auto& [name, pod] : it->second.pods) state.pods.push_back(pod);
  for (const auto& [name, kind] : it->second.objects) state.objects.push_back({kind, name});
  return state;
}

void FakeBackend::SetTrainJobRuntime(const std::string& runtime_json) {
  absl::MutexLock lock(&mu_);
  train_job_runtime_ = runtime_json;
}

absl::Status FakeBackend::Apply(const model::Job& job, const model::Action& action) {
  absl::MutexLock lock(&mu_);
  const std::string key = Key(job.metadata().namespace_(), job.metadata().name());
  applied_.push_back({key, action.type, action.object.kind, action.object.name});
  if (!apply_error_.ok()) return apply_error_;
  JobState& state = jobs_[key];
  const model::KubeObject& obj = action.object;
  if (action.type == model::Action::Type::kCreate) {
    if (obj.kind == "Pod") {
      if (state.pods.count(obj.name) > 0) return absl::OkStatus();
      model::ObservedPod pod;
      pod.name = obj.name;
      const auto& labels = obj.body["metadata"]["labels"];
      // Upstream's labels: training.kubeflow.org/replica-type (lowercase) and -index.
      for (const auto& [type, spec] : job.spec().replica_specs()) {
        std::string lower;
        for (char c : type) lower += static_cast<char>(std::tolower(c));
        if (labels.value("training.kubeflow.org/replica-type", "") == lower) {
          pod.replica_type = type;
        }
      }
      pod.index = std::stoi(labels.value("training.kubeflow.org/replica-index", "0"));
      pod.phase = model::PodPhase::kPending;
      state.pods[obj.name] = pod;
    } else {
      state.objects[obj.name] = obj.kind;
    }
  } else if (action.type == model::Action::Type::kDelete) {
    if (obj.kind == "Pod") {
      state.pods.erase(obj.name);
    } else {
      state.objects.erase(obj.name);
    }
  }
  return absl::OkStatus();
}

absl::Status FakeBackend::Forget(const model::Job& job) {
  absl::MutexLock lock(&mu_);
  const std::string key = Key(job.metadata().namespace_(), job.metadata().name());
  forgotten_.push_back(key);
  jobs_.erase(key);
  return absl::OkStatus();
}

absl::Status FakeBackend::StreamLogs(const model::Job& job, const backend::LogOptions& options,
                                     const backend::LogSink& sink,
                                     const std::atomic<bool>& cancelled) {
  std::vector<std::pair<std::string, std::string>> chunks;
  {
    absl::MutexLock lock(&mu_);
    auto it = jobs_.find(Key(job.metadata().namespace_(), job.metadata().name()));
    if (!options.replica.empty()) {
      if (logs_.count(options.replica) == 0) {
        return absl::NotFoundError("no replica " + options.replica);
      }
      chunks.emplace_back(options.replica, logs_[options.replica]);
    } else if (it != jobs_.end()) {
      for (const auto& [name, pod] : it->second.pods) {
        if (logs_.count(name) > 0) chunks.emplace_back(name, logs_[name]);
      }
    }
  }
  for (const auto& [replica, text] : chunks) {
    if (cancelled.load()) return absl::CancelledError("cancelled");
    if (!sink(replica, text)) return absl::OkStatus();
  }
  return absl::OkStatus();
}

void FakeBackend::Notify(const std::string& ns, const std::string& name) {
  backend::ChangeCallback cb;
  {
    absl::MutexLock lock(&mu_);
    cb = callback_;
  }
  if (cb) cb(ns, name);
}

void FakeBackend::SetPodPhase(const std::string& ns, const std::string& job, const std::string& pod,
                              model::PodPhase phase, std::optional<int> exit_code, bool notify) {
  {
    absl::MutexLock lock(&mu_);
    model::ObservedPod& p = jobs_[Key(ns, job)].pods[pod];
    p.name = pod;
    p.phase = phase;
    p.exit_code = exit_code;
  }
  if (notify) Notify(ns, job);
}

void FakeBackend::SetPod(const std::string& ns, const std::string& job,
                         const model::ObservedPod& pod) {
  {
    absl::MutexLock lock(&mu_);
    jobs_[Key(ns, job)].pods[pod.name] = pod;
  }
  Notify(ns, job);
}

void FakeBackend::SetAllPods(const std::string& ns, const std::string& job, model::PodPhase phase,
                             std::optional<int> exit_code) {
  {
    absl::MutexLock lock(&mu_);
    for (auto& [name, pod] : jobs_[Key(ns, job)].pods) {
      pod.phase = phase;
      pod.exit_code = exit_code;
    }
  }
  Notify(ns, job);
}

void FakeBackend::SetAdmitError(absl::Status s) {
  absl::MutexLock lock(&mu_);
  admit_error_ = std::move(s);
}
void FakeBackend::SetObserveError(absl::Status s) {
  absl::MutexLock lock(&mu_);
  observe_error_ = std::move(s);
}
void FakeBackend::SetApplyError(absl::Status s) {
  absl::MutexLock lock(&mu_);
  apply_error_ = std::move(s);
}
void FakeBackend::SetLog(const std::string& pod, const std::string& text) {
  absl::MutexLock lock(&mu_);
  logs_[pod] = text;
}

std::vector<FakeBackend::AppliedAction> FakeBackend::applied() const {
  absl::MutexLock lock(&mu_);
  return applied_;
}

int FakeBackend::CreateCount(const std::string& ns, const std::string& job) const {
  absl::MutexLock lock(&mu_);
  int n = 0;
  for (const auto& a : applied_) {
    if (a.job == Key(ns, job) && a.type == model::Action::Type::kCreate && a.kind == "Pod") ++n;
  }
  return n;
}

std::vector<std::string> FakeBackend::PodNames(const std::string& ns,
                                               const std::string& job) const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> out;
  auto it = jobs_.find(Key(ns, job));
  if (it == jobs_.end()) return out;
  for (const auto& [name, pod] : it->second.pods) out.push_back(name);
  return out;
}

std::vector<std::string> FakeBackend::forgotten() const {
  absl::MutexLock lock(&mu_);
  return forgotten_;
}
std::vector<std::string> FakeBackend::admitted() const {
  absl::MutexLock lock(&mu_);
  return admitted_;
}
bool FakeBackend::started() const {
  absl::MutexLock lock(&mu_);
  return started_;
}
bool FakeBackend::stopped() const {
  absl::MutexLock lock(&mu_);
  return stopped_;
}

}  // namespace coach::core::testing
