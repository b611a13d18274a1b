#include "operator/backend/local/local_backend.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/v1/kinds.h"
#include "common/status_macros.h"
#include "integrations/mlflow/binding.h"
#include "operator/backend/local/fs_util.h"
#include "operator/backend/local/net/local_address_plan.h"
#include "operator/backend/local/process/exit_record.h"
#include "operator/backend/local/process/log_files.h"
#include "operator/backend/local/process/pod_process.h"
#include "operator/backend/local/process/shim_process_runner.h"
#include "operator/model/listen_ports.h"
#include "operator/model/pod_identity.h"
#include "operator/model/replicas.h"

extern char** environ;

namespace coach::backend::local {
namespace {

using model::Json;
using model::PodPhase;

std::map<std::string, std::string> OwnEnvironment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    const size_t eq = entry.find('=');
    if (eq != std::string::npos) env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

// Every running replica holds one descriptor here (its end watch), and the soft limit is
// 1024 by default: raise it to the hard limit, as the Go runtime does for every program.
void RaiseOpenFileLimit() {
  struct rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  const rlim_t before = limit.rlim_cur;
  limit.rlim_cur = limit.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &limit) == 0) {
    spdlog::debug("local backend: open file limit {} -> {}", before, limit.rlim_cur);
  }
}

// Replica shims started at once; the replicas of one job start in parallel up to this.
constexpr int kStarterThreads = 8;

}  // namespace

bool LocalBackend::Terminal(model::PodPhase p) {
  return p == PodPhase::kSucceeded || p == PodPhase::kFailed;
}

std::string LocalBackend::ShortName(const JobKey& job, const std::string& pod) {
  const std::string prefix = job.name + "-";
  return pod.compare(0, prefix.size(), prefix) == 0 ? pod.substr(prefix.size()) : pod;
}

void LocalBackend::AddMlflowBinding(PodProcess& proc) const {
  if (mlflow_binding_dir_.empty()) return;
  bool tracked = false;
  std::string* python_path = nullptr;
  for (auto& [name, value] : proc.env) {
    if (name == "COACH_MLFLOW_RUN_ID") tracked = true;
    if (name == "PYTHONPATH") python_path = &value;
  }
  if (!tracked) return;
  if (python_path != nullptr) {
    *python_path = mlflow::PythonPathWithBinding(mlflow_binding_dir_, *python_path);
  } else {
    proc.env.emplace_back("PYTHONPATH", mlflow_binding_dir_);
  }
  proc.env.emplace_back(mlflow::kBindingDirEnv, mlflow_binding_dir_);
}

absl::StatusOr<std::unique_ptr<LocalBackend>> LocalBackend::Create(LocalBackendOptions options) {
  if (options.store == nullptr) return absl::InvalidArgumentError("LocalBackend: no store");
  if (options.jobs == nullptr) return absl::InvalidArgumentError("LocalBackend: no job store");
  if (options.state_dir.empty() || options.state_dir[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("LocalBackend: state_dir must be absolute, got \"", options.state_dir, "\""));
  }
  RETURN_IF_ERROR(MakeDirs(options.state_dir));
  std::unique_ptr<ProcessRunner> owned;
  if (options.runner == nullptr) {
    ShimProcessRunner::Options runner_options;
    runner_options.clock = options.clock;
    ASSIGN_OR_RETURN(auto shim, ShimProcessRunner::Create(options.shim_path, runner_options));
    owned = std::move(shim);
  }
  std::unique_ptr<GpuDiscovery> own_discovery;
  GpuDiscovery* discovery = options.gpus;
  if (discovery == nullptr) {
    own_discovery = std::make_unique<NvidiaSmiGpuDiscovery>();
    discovery = own_discovery.get();
  }
  ASSIGN_OR_RETURN(std::unique_ptr<GpuAllocator> gpus, GpuAllocator::Create(*discovery));
  if (options.node_name.empty()) options.node_name = HostName();
  if (options.base_env.empty()) options.base_env = OwnEnvironment();
  ASSIGN_OR_RETURN(std::unique_ptr<EndWatcher> end_watcher, EndWatcher::Create());
  RaiseOpenFileLimit();
  std::string binding_dir = LocalLayout(options.state_dir).MlflowBindingDir();
  if (absl::Status s = mlflow::WriteBinding(binding_dir); !s.ok()) {
    // Tracked replicas then make runs of their own under the job's run, as on a plain pod.
    spdlog::warn("local backend: MLflow binding not written: {}", s.ToString());
    binding_dir.clear();
  }
  return std::unique_ptr<LocalBackend>(new LocalBackend(std::move(options), std::move(owned),
                                                        std::move(gpus), std::move(end_watcher),
                                                        std::move(binding_dir)));
}

LocalBackend::LocalBackend(LocalBackendOptions options, std::unique_ptr<ProcessRunner> owned_runner,
                           std::unique_ptr<GpuAllocator> gpus,
                           std::unique_ptr<EndWatcher> end_watcher, std::string mlflow_binding_dir)
    : options_(std::move(options)),
      layout_(options_.state_dir),
      mlflow_binding_dir_(std::move(mlflow_binding_dir)),
      owned_runner_(std::move(owned_runner)),
      runner_(options_.runner != nullptr ? options_.runner : owned_runner_.get()),
      gpus_(std::move(gpus)),
      end_watcher_(std::move(end_watcher)),
      ports_(options_.store),
      objects_(options_.store),
      facts_(options_.clock),
      poller_(
          end_watcher_.get(), options_.poll_interval, [this] { return PollRunning(); },
          [this](const std::set<JobKey>& jobs) { Wake(jobs); }),
      starter_(kStarterThreads, [this](const JobKey& job) { Wake({job}); }) {}

// The members' own destructors then stop the poller and drain the starters' queue.
LocalBackend::~LocalBackend() { Stop(); }

void LocalBackend::SetChangeCallback(ChangeCallback callback) {
  absl::MutexLock lock(&mu_);
  callback_ = std::move(callback);
}

void LocalBackend::Wake(const std::set<JobKey>& jobs) {
  ChangeCallback callback;
  {
    absl::MutexLock lock(&mu_);
    callback = callback_;
  }
  if (!callback) return;
  for (const JobKey& k : jobs) callback(k.namespace_, k.name);
}

std::string LocalBackend::GpuOwner(const JobKey& job, const std::string& pod) {
  return absl::StrCat(job.namespace_, "/", pod);
}

// ---------------------------------------------------------------------------------------
// Start / Stop / polling

absl::Status LocalBackend::Start() {
  {
    absl::MutexLock lock(&mu_);
    ASSIGN_OR_RETURN(std::vector<ReplicaRecord> records, options_.store->ListAllReplicas());
    for (ReplicaRecord& r : records) {
      if (r.process.pid == 0 && !Terminal(r.phase)) {
        // Killed between writing the record and persisting the handle.
        absl::StatusOr<ProcessHandle> h = runner_->Recover(layout_.ReplicaFiles(r.job, r.name));
        if (!h.ok()) {
          spdlog::info("local backend: {}/{} never started; dropping its record", r.job.namespace_,
                       r.name);
          absl::Status s = options_.store->DeleteReplica(r.job, r.name);
          if (!s.ok() && !absl::IsNotFound(s)) return s;
          continue;
        }
        r.process = *h;
        r.phase = PodPhase::kRunning;
        if (r.started_at == absl::InfinitePast()) r.started_at = Now();
        RETURN_IF_ERROR(options_.store->PutReplica(r));
      }
      if (r.phase == PodPhase::kRunning) Refresh(r);
      if (r.phase == PodPhase::kRunning && !r.gpus.empty()) {
        absl::Status s = gpus_->Restore(GpuOwner(r.job, r.name), r.gpus);
        if (!s.ok()) spdlog::warn("local backend: restoring GPUs of {}: {}", r.name, s.ToString());
      }
    }
  }
  poller_.Start();
  return absl::OkStatus();
}

void LocalBackend::Stop() {
  poller_.Stop();
  // Starts in flight call the change callback when they end: let them, before the
  // caller tears down what the callback reaches.
  starter_.WaitForAll();
}

std::set<JobKey> LocalBackend::PollRunning() {
  std::set<JobKey> changed;
  absl::MutexLock lock(&mu_);
  absl::StatusOr<std::vector<ReplicaRecord>> records = options_.store->ListRunningReplicas();
  if (!records.ok()) {
    spdlog::warn("local backend: listing replicas: {}", records.status().ToString());
    return changed;
  }
  for (ReplicaRecord& r : *records) {
    if (r.phase == PodPhase::kRunning && Refresh(r)) changed.insert(r.job);
  }
  return changed;
}

bool LocalBackend::Refresh(ReplicaRecord& r) {
  if (r.process.pid == 0 || r.phase != PodPhase::kRunning) return false;
  absl::StatusOr<PollResult> p = runner_->Poll(r.process);
  if (!p.ok()) {
    spdlog::warn("local backend: polling {}: {}", r.name, p.status().ToString());
    return false;
  }
  switch (p->state) {
    case ProcessState::kRunning:
      return false;
    case ProcessState::kExited:
      r.phase = p->exit_code == 0 ? PodPhase::kSucceeded : PodPhase::kFailed;
      r.exit_code = p->exit_code;
      r.message = p->signal != 0 ? absl::StrCat("killed by signal ", p->signal) : p->message;
      break;
    case ProcessState::kVanished:
      r.phase = PodPhase::kFailed;
      r.exit_code.reset();
      // The runner's message says why when it knows (an exit it could not record).
      r.message = p->message.empty() ? "the replica's supervisor vanished without an exit status"
                                     : p->message;
      break;
  }
  r.finished_at = p->finished_at != absl::InfinitePast() ? p->finished_at : Now();
  // An ended pod holds no devices, as on a kubelet.
  gpus_->Release(GpuOwner(r.job, r.name));
  absl::Status s = options_.store->PutReplica(r);
  if (!s.ok()) spdlog::warn("local backend: recording exit of {}: {}", r.name, s.ToString());
  return true;
}

// ---------------------------------------------------------------------------------------
// Admit / AddressPlanFor

absl::Status LocalBackend::Admit(const model::Job& job) {
  const api::v1::KindInfo* kind = api::v1::FindKind(job.kind());
  if (kind == nullptr) return absl::InvalidArgumentError("job kind is not set");
  for (const std::string& type : reconcile::ReplicaTypes(job)) {
    ASSIGN_OR_RETURN(Json tmpl, reconcile::ParseTemplate(job, type));
    const Json* c = DefaultContainer(tmpl, *kind);
    if (c == nullptr) continue;
    absl::StatusOr<int> n = ContainerGpus(*c);
    if (!n.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.replicaSpecs[", type, "]: ", n.status().message()));
    }
    if (*n > gpus_->total()) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "spec.replicaSpecs[", type, "]: each replica asks for ", *n,
          " nvidia.com/gpu but this host has ", gpus_->total(), "; the job can never run here"));
    }
  }
  ASSIGN_OR_RETURN(std::vector<PortReservation> have,
                   options_.store->ListPortReservationsOf(KeyOf(job)));
  return EnsurePorts(job, have).status();
}

absl::StatusOr<bool> LocalBackend::EnsurePorts(const model::Job& job,
                                               const std::vector<PortReservation>& have) {
  std::map<std::string, std::set<std::string>> held;
  for (const PortReservation& r : have) held[r.replica].insert(r.port_name);
  std::map<std::string, std::vector<std::string>> missing;
  for (const auto& [pod, names] : model::ListenPortsByPod(job)) {
    for (const std::string& n : names) {
      if (held[pod].count(n) == 0) missing[pod].push_back(n);
    }
  }
  if (missing.empty()) return false;
  // Every pod's ports in one transaction.
  RETURN_IF_ERROR(ports_.AllocateAll(KeyOf(job), missing).status());
  return true;
}

std::shared_ptr<const model::AddressPlan> LocalBackend::AddressPlanFor(const model::Job& job) {
  const JobKey key = KeyOf(job);
  // The job's reservations only: listing every job's made each pass cost what the store holds.
  absl::StatusOr<std::vector<PortReservation>> have = options_.store->ListPortReservationsOf(key);
  if (have.ok()) {
    absl::StatusOr<bool> added = EnsurePorts(job, *have);
    if (!added.ok()) {
      spdlog::warn("local backend: ports of {}: {}", job.metadata().name(),
                   added.status().ToString());
    } else if (*added) {
      have = options_.store->ListPortReservationsOf(key);
    }
  }
  if (!have.ok()) {
    spdlog::warn("local backend: listing ports: {}", have.status().ToString());
    return std::make_shared<LocalAddressPlan>(LocalAddressPlan::PortMap{});
  }
  return std::make_shared<LocalAddressPlan>(LocalAddressPlan::FromReservations(key, *have));
}

// ---------------------------------------------------------------------------------------
// Observe

absl::StatusOr<model::ObservedState> LocalBackend::Observe(const model::Job& job) {
  const JobKey key = KeyOf(job);
  model::ObservedState out;
  std::vector<ReplicaFacts::Replica> runs;
  {
    absl::MutexLock lock(&mu_);
    ASSIGN_OR_RETURN(std::vector<ReplicaRecord> records, options_.store->ListReplicas(key));
    for (ReplicaRecord& r : records) {
      Refresh(r);
      model::ObservedPod pod;
      pod.name = r.name;
      pod.replica_type = r.replica_type;
      pod.index = r.index;
      pod.phase = r.phase;
      pod.exit_code = r.exit_code;
      pod.restart_count = r.restart_count;
      pod.created = r.started_at;
      pod.message = r.message;
      pod.attempt = r.attempt;
      pod.node = options_.node_name;
      out.pods.push_back(std::move(pod));
      runs.push_back(ReplicaFacts::Replica{r.process, r.phase == PodPhase::kRunning});
    }
  }
  // Outside the lock: files and /proc, which the starters and the poller need not wait for.
  const std::vector<ReplicaFacts::Facts> facts = facts_.Read(runs);
  for (size_t i = 0; i < out.pods.size(); ++i) {
    out.pods[i].progress = facts[i].progress;
    out.pods[i].stopped = facts[i].stopped;
  }
  ASSIGN_OR_RETURN(out.objects, objects_.List(key));
  RETURN_IF_ERROR(ObserveRuntime(job, out));
  return out;
}

// ---------------------------------------------------------------------------------------
// Apply

absl::Status LocalBackend::Apply(const model::Job& job, const model::Action& action) {
  const model::KubeObject& o = action.object;
  const JobKey key = KeyOf(job);
  switch (action.type) {
    case model::Action::Type::kCreate:
      if (o.kind == "Pod") return CreatePod(job, o);
      if (o.kind == "ConfigMap") RETURN_IF_ERROR(WriteConfigMap(job, o));
      return objects_.Add(key, o.kind, o.name);
    case model::Action::Type::kDelete:
      if (o.kind == "Pod") return DeletePod(job, o.name);
      return objects_.Remove(key, o.kind, o.name);
    case model::Action::Type::kDeleteJob:
      break;
  }
  return absl::InvalidArgumentError("kDeleteJob is handled by the controller");
}

absl::Status LocalBackend::ApplyAll(const model::Job& job,
                                    const std::vector<model::Action>& actions,
                                    std::vector<absl::Status>* results) {
  for (const model::Action& a : actions) {
    // Stopping a pod waits for its process; keep such a pass in the reconciler's order.
    if (a.type == model::Action::Type::kDelete && a.object.kind == "Pod") {
      return Backend::ApplyAll(job, actions, results);
    }
  }
  std::vector<absl::Status> statuses(
      actions.size(), absl::CancelledError("not attempted: an earlier action failed"));
  const JobKey key = KeyOf(job);
  // The pods' records are written in one synced transaction, then the pods are started: one
  // sync per pass instead of one per pod. Services are recorded after that (nothing on this
  // host reads them, so the starts do not wait for their writes); everything else
  // (ConfigMaps the replicas read, RBAC, PodGroups) is applied in order before.
  std::vector<PreparedStart> prepared;
  std::vector<size_t> prepared_at;
  std::vector<size_t> services_at;
  std::optional<PassReads> reads;
  for (size_t i = 0; i < actions.size(); ++i) {
    const model::Action& a = actions[i];
    if (a.type == model::Action::Type::kCreate && a.object.kind == "Service") {
      services_at.push_back(i);
      continue;
    }
    if (a.type == model::Action::Type::kCreate && a.object.kind == "Pod") {
      if (!reads.has_value()) {
        absl::StatusOr<PassReads> read = ReadForPass(key);
        if (!read.ok()) {
          statuses[i] = read.status();
          break;
        }
        reads = std::move(read).value();
      }
      absl::StatusOr<std::optional<PreparedStart>> p = PreparePod(job, a.object, *reads);
      statuses[i] = p.status();
      if (!p.ok()) break;
      if (p->has_value()) {
        reads->existing.insert(a.object.name);  // a second create of it in this pass: exists
        prepared.push_back(std::move(**p));
        prepared_at.push_back(i);
      }
      continue;
    }
    statuses[i] = Apply(job, a);
    if (!statuses[i].ok()) break;
  }
  const absl::Status started = StartPrepared(key, std::move(prepared));
  if (!started.ok()) {
    for (size_t i : prepared_at) statuses[i] = started;
  }
  // A Service is recorded unless an action before it in the reconciler's order failed; all
  // of them in one transaction of the store.
  std::vector<size_t> recorded_at;
  std::vector<std::pair<std::string, std::string>> services;
  for (size_t i : services_at) {
    bool earlier_failed = false;
    for (size_t j = 0; j < i; ++j) {
      earlier_failed |= !statuses[j].ok() && !absl::IsCancelled(statuses[j]);
    }
    if (earlier_failed) break;
    recorded_at.push_back(i);
    services.emplace_back(actions[i].object.kind, actions[i].object.name);
  }
  if (!services.empty()) {
    const absl::Status recorded = objects_.AddAll(key, services);
    for (size_t i : recorded_at) statuses[i] = recorded;
  }
  if (results != nullptr) *results = statuses;
  for (size_t i = 0; i < actions.size(); ++i) {
    if (!statuses[i].ok() && !absl::IsCancelled(statuses[i])) {
      return AnnotateAction(actions[i], statuses[i]);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<LocalBackend::PassReads> LocalBackend::ReadForPass(const JobKey& key) {
  PassReads reads;
  {
    absl::MutexLock lock(&mu_);
    ASSIGN_OR_RETURN(std::vector<ReplicaRecord> records, options_.store->ListReplicas(key));
    for (const ReplicaRecord& r : records) reads.existing.insert(r.name);
  }
  ASSIGN_OR_RETURN(std::vector<PortReservation> ports, options_.store->ListPortReservationsOf(key));
  for (const PortReservation& r : ports) reads.ports[r.replica][r.port_name] = r.port;
  return reads;
}

absl::Status LocalBackend::CreatePod(const model::Job& job, const model::KubeObject& pod) {
  const JobKey key = KeyOf(job);
  ASSIGN_OR_RETURN(PassReads reads, ReadForPass(key));
  ASSIGN_OR_RETURN(std::optional<PreparedStart> prepared, PreparePod(job, pod, reads));
  if (!prepared.has_value()) return absl::OkStatus();  // exists: idempotent
  std::vector<PreparedStart> one;
  one.push_back(std::move(*prepared));
  return StartPrepared(key, std::move(one));
}

absl::StatusOr<std::optional<LocalBackend::PreparedStart>> LocalBackend::PreparePod(
    const model::Job& job, const model::KubeObject& pod, const PassReads& reads) {
  const JobKey key = KeyOf(job);
  const api::v1::KindInfo* kind = api::v1::FindKind(job.kind());
  if (kind == nullptr) return absl::InvalidArgumentError("job kind is not set");
  if (!IsSafePathComponent(pod.name)) {
    return absl::InvalidArgumentError(absl::StrCat("pod name \"", pod.name, "\" is not safe"));
  }
  // The previous start of this pod failed (its record is gone): say so once, so the
  // controller retries with its backoff rather than at once.
  RETURN_IF_ERROR(starter_.TakeError(key, pod.name));
  if (reads.existing.count(pod.name) > 0) return std::nullopt;  // exists: idempotent
  PodHost host;
  host.node_name = options_.node_name;
  host.base_env = options_.base_env;
  ASSIGN_OR_RETURN(PodProcess proc, PodToProcess(pod.body, *kind, host));
  AddMlflowBinding(proc);

  PreparedStart out;
  ReplicaRecord& record = out.record;
  record.job = key;
  record.name = pod.name;
  const model::PodIdentity id = model::IdentifyPod(job, pod.body);
  record.replica_type = id.replica_type;
  record.index = id.index;
  record.attempt = id.attempt;
  ASSIGN_OR_RETURN(record.log_path, layout_.LogPath(key, pod.name));
  if (auto ports = reads.ports.find(pod.name); ports != reads.ports.end()) {
    record.ports = ports->second;
  }

  const std::string owner = GpuOwner(key, pod.name);
  if (proc.gpus > 0) {
    absl::StatusOr<std::vector<int>> got = gpus_->Allocate(owner, proc.gpus);
    if (absl::IsResourceExhausted(got.status())) {
      return absl::FailedPreconditionError(absl::StrCat("waiting for ", proc.gpus, " GPUs (",
                                                        gpus_->free_count(), " of ", gpus_->total(),
                                                        " free now)"));
    }
    if (!got.ok()) return got.status();
    record.gpus = *got;
    // Kubernetes' device plugin sets it; the container's own value would be wrong here.
    bool set = false;
    for (auto& [n, v] : proc.env) {
      if (n == "CUDA_VISIBLE_DEVICES") v = CudaVisibleDevices(record.gpus), set = true;
    }
    if (!set) proc.env.emplace_back("CUDA_VISIBLE_DEVICES", CudaVisibleDevices(record.gpus));
  }

  const LocalLayout::Carried carried = layout_.CarriedOver(key, pod.name);
  record.restart_count = carried.restarts;
  // Before the record: Start() adopts a pid-0 record through the shim's process file.
  absl::Status cleared = layout_.RemoveEndedAttemptFiles(key, pod.name);
  // An earlier attempt's log goes to that attempt's directory before the record too: once the
  // record is written the process may start appending, and a crash before it leaves a move that
  // the retry completes (KeepAttemptLog is idempotent).
  if (cleared.ok() && carried.attempt.has_value() && *carried.attempt != record.attempt) {
    cleared = layout_.KeepAttemptLog(key, pod.name, *carried.attempt);
    if (cleared.ok()) {
      // Retried at the next move when it fails: an old attempt's logs are no reason to hold
      // the restart back.
      if (absl::Status s = layout_.TrimKeptAttempts(key); !s.ok()) {
        spdlog::warn("local backend: trimming the kept attempts of {}/{}: {}", key.namespace_,
                     key.name, s.ToString());
      }
    }
  }
  if (!cleared.ok()) {
    gpus_->Release(owner);
    return cleared;
  }

  ProcessSpec& spec = out.spec;
  spec.replica_files = layout_.ReplicaFiles(key, pod.name);
  // The backend's file, whatever the pod says, as CUDA_VISIBLE_DEVICES above.
  const std::string heartbeat = ReplicaFile(spec.replica_files, kHeartbeatFileName);
  bool heartbeat_set = false;
  for (auto& [n, v] : proc.env) {
    if (n == kEnvHeartbeatFile) v = heartbeat, heartbeat_set = true;
  }
  if (!heartbeat_set) proc.env.emplace_back(kEnvHeartbeatFile, heartbeat);
  spec.argv = proc.argv;
  spec.env = EnvEntries(proc.env);
  spec.working_dir = proc.working_dir.empty() ? options_.default_working_dir : proc.working_dir;
  spec.log_path = record.log_path;
  spec.max_log_bytes = options_.max_log_bytes;
  out.container = proc.container;
  out.ignored_containers = proc.ignored_containers;
  return out;
}

absl::Status LocalBackend::StartPrepared(const JobKey& key, std::vector<PreparedStart> prepared) {
  if (prepared.empty()) return absl::OkStatus();
  // The records first (pid 0): a crash after a start leaves a record that Start() re-adopts
  // through the replica dir, never an unknown process that would be started twice.
  {
    std::vector<ReplicaRecord> records;
    for (const PreparedStart& p : prepared) records.push_back(p.record);
    absl::MutexLock lock(&mu_);
    absl::Status s = options_.store->PutReplicas(records);
    if (!s.ok()) {
      for (const PreparedStart& p : prepared) gpus_->Release(GpuOwner(key, p.record.name));
      return s;
    }
  }
  for (PreparedStart& p : prepared) {
    for (const std::string& c : p.ignored_containers) {
      (void)options_.jobs->AppendEvent(
          key, JobEvent{"Warning", "ContainerIgnored",
                        absl::StrCat("pod ", p.record.name, ": container ", c,
                                     " is not run by the local backend (only ", p.container, ")"),
                        Now()});
    }
    // So that the logs of a starting pod read as empty. Best effort: the shim creates it too.
    (void)layout_.CreateLog(key, p.record.name);
    const std::string pod = p.record.name;
    starter_.Queue(key, pod,
                   [this, record = std::move(p.record), spec = std::move(p.spec)]() mutable {
                     return FinishStart(std::move(record), spec);
                   });
  }
  return absl::OkStatus();
}

absl::Status LocalBackend::FinishStart(ReplicaRecord record, const ProcessSpec& spec) {
  const JobKey key = record.job;
  absl::StatusOr<ProcessHandle> handle = runner_->Start(spec);
  absl::Status recorded;
  {
    absl::MutexLock lock(&mu_);
    if (!handle.ok()) {
      gpus_->Release(GpuOwner(key, record.name));
      (void)options_.store->DeleteReplica(key, record.name);
    } else {
      record.process = *handle;
      record.phase = PodPhase::kRunning;
      record.started_at = Now();
      recorded = options_.store->PutReplica(record);
    }
  }
  if (!handle.ok()) {
    spdlog::warn("local backend: starting {}/{}: {}", key.namespace_, record.name,
                 handle.status().ToString());
    return handle.status();
  }
  if (!recorded.ok()) {
    // The process runs and its process file is on disk: the next Start() adopts it.
    spdlog::error("local backend: recording the start of {}/{}: {}", key.namespace_, record.name,
                  recorded.ToString());
  }
  if (const int end_fd = runner_->TakeEndFd(*handle); end_fd >= 0) {
    // After the Running record: the pass that the end wakes finds the process to poll.
    absl::Status watched = end_watcher_->Watch(end_fd, key);
    if (!watched.ok()) {
      spdlog::warn("local backend: {}/{}: its end is found by polling: {}", key.namespace_,
                   record.name, watched.ToString());
    }
  }
  return absl::OkStatus();
}

absl::Status LocalBackend::DeletePod(const model::Job& job, const std::string& name) {
  const JobKey key = KeyOf(job);
  starter_.WaitForJob(key);
  std::optional<ReplicaRecord> record;
  {
    absl::MutexLock lock(&mu_);
    ASSIGN_OR_RETURN(std::vector<ReplicaRecord> records, options_.store->ListReplicas(key));
    for (ReplicaRecord& r : records) {
      if (r.name == name) record = std::move(r);
    }
  }
  if (!record.has_value()) return absl::OkStatus();
  if (record->process.pid != 0) {
    absl::StatusOr<PollResult> p = runner_->Stop(record->process, options_.grace_period);
    if (!p.ok()) return p.status();
  }
  // The reconciler replaces a failed pod by deleting and recreating it where a kubelet
  // would restart its container; carrying the count over keeps backoffLimit working.
  const int restarts = record->restart_count + (record->phase == PodPhase::kFailed ? 1 : 0);
  RETURN_IF_ERROR(layout_.CarryOver(key, name, LocalLayout::Carried{restarts, record->attempt}));
  RETURN_IF_ERROR(layout_.RemoveEndedAttemptFiles(key, name));
  facts_.Forget(layout_.ReplicaFiles(key, name));
  absl::MutexLock lock(&mu_);
  gpus_->Release(GpuOwner(key, name));
  absl::Status s = options_.store->DeleteReplica(key, name);
  if (!s.ok() && !absl::IsNotFound(s)) return s;
  return absl::OkStatus();
}

absl::Status LocalBackend::WriteConfigMap(const model::Job& job, const model::KubeObject& cm) {
  const JobKey key = KeyOf(job);
  // An unsafe name is refused even when there is nothing to write.
  RETURN_IF_ERROR(layout_.ConfigMapDir(key, cm.name).status());
  if (!cm.body.contains("data") || !cm.body["data"].is_object()) return absl::OkStatus();
  std::map<std::string, std::string> data;
  for (const auto& [k, v] : cm.body["data"].items()) {
    if (v.is_string()) data.emplace(k, v.get<std::string>());
  }
  return layout_.WriteConfigMap(key, cm.name, data);
}

// ---------------------------------------------------------------------------------------
// Forget

absl::Status LocalBackend::Forget(const model::Job& job) {
  const JobKey key = KeyOf(job);
  starter_.WaitForJob(key);
  starter_.ForgetErrors(key);
  std::vector<ReplicaRecord> records;
  {
    absl::MutexLock lock(&mu_);
    ASSIGN_OR_RETURN(records, options_.store->ListReplicas(key));
  }
  std::vector<absl::Status> results(records.size());
  {
    std::vector<std::thread> stoppers;
    for (size_t i = 0; i < records.size(); ++i) {
      if (records[i].process.pid == 0) continue;
      stoppers.emplace_back([this, &records, &results, i] {
        results[i] = runner_->Stop(records[i].process, options_.grace_period).status();
      });
    }
    for (std::thread& t : stoppers) t.join();
  }
  for (const absl::Status& s : results) RETURN_IF_ERROR(s);
  {
    absl::MutexLock lock(&mu_);
    for (const ReplicaRecord& r : records) {
      gpus_->Release(GpuOwner(key, r.name));
      facts_.Forget(layout_.ReplicaFiles(key, r.name));
      absl::Status s = options_.store->DeleteReplica(key, r.name);
      if (!s.ok() && !absl::IsNotFound(s)) return s;
    }
  }
  absl::Status s = ports_.Release(key);
  if (!s.ok() && !absl::IsNotFound(s)) return s;
  RETURN_IF_ERROR(objects_.Forget(key));
  return layout_.RemoveJob(key);
}

// ---------------------------------------------------------------------------------------
// StreamLogs

}  // namespace coach::backend::local
