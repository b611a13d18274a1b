#pragma once

// The local backend: every replica ("pod") of a job runs as a supervised process group
// on this host (shim_process_runner.h), with the environment the reconciler wires into
// its Pod, except that every replica address is 127.0.0.1 and every port is one reserved
// for the job at Admit (local_address_plan.h), so concurrent jobs never collide.
//
// How a Pod becomes a process, and what differs from Kubernetes, is in pod_process.h:
// the image is ignored (the command runs on this host), only the default container runs,
// init containers are rejected (except the MPI launcher's kubectl-delivery, skipped),
// `$(VAR)` is expanded as a kubelet does, fieldRef is answered for this host, envFrom
// and configMap/secret refs are rejected unless optional, the base environment is
// HOSTNAME (pod name) plus the operator's PATH, HOME and LANG, and CUDA_VISIBLE_DEVICES
// comes from the GPU allocator. Every replica also gets COACH_HEARTBEAT_FILE (below).
//
// Recovery facts (model::ObservedPod): `attempt` is the pod's coach.dev/attempt label, kept in
// its replica record; `progress` is what the replica reported in this run: its coach-metric
// lines, as the shim keeps them in the replica's progress file (process/progress_file.h), and
// the mtime of the file COACH_HEARTBEAT_FILE names, which the program may touch to say it is
// alive without a metric; `stopped` says a process of a running replica is stopped by a signal
// (replica_facts.h; looked at no more than once a second). Deleting a pod continues its stopped
// processes after the SIGTERM, so that they end within the grace. `disruption`, `node_lost` and
// `deletion_requested` do not occur on this host. Nothing wakes a job when its progress changes or
// a process stops: the reconciler reads them when it passes (it requeues itself for a progress
// deadline).
//
// Other objects (Service, ConfigMap, ServiceAccount, Role, RoleBinding, PodGroup) have no
// effect here; they are recorded (object_table.h) so that Observe reports them. A
// ConfigMap's `data` is also written as files under the state dir (local_layout.h).
//
// Restart policy: this backend runs each pod's process once; a pod whose process ended
// is observed Succeeded/Failed and the reconciler decides (delete + create). In-place
// restarts of OnFailure/Always pods, as a kubelet does them, are not done here; instead
// deleting a Failed pod carries restart_count + 1 over to the next pod of the same name
// (LocalLayout::CarryRestartCount), so the pod's restart_count, which backoffLimit counts,
// grows as a kubelet's would.
//
// State: the files of each job in one directory under state_dir (local_layout.h); replica
// records, port reservations and recorded non-pod objects in the ReplicaStore. The record of a
// pod is written (pid 0, Pending) before its process starts, so an operator killed in between
// finds it at Start() and recovers the handle from the shim's process file (or drops the record
// when the process never started), and a pod is never run twice.
//
// Starts run on a pool of starter threads (replica_starter.h); a poller thread learns of
// replica ends (replica_poller.h).
//
// Thread-safety: thread-safe; the controller calls it from several workers (never two at
// once for one job), and a poller thread watches processes between Start() and Stop().

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/backend/backend.h"
#include "operator/backend/local/end_watcher.h"
#include "operator/backend/local/gpu_allocator.h"
#include "operator/backend/local/local_layout.h"
#include "operator/backend/local/net/port_allocator.h"
#include "operator/backend/local/object_table.h"
#include "operator/backend/local/process/pod_process.h"
#include "operator/backend/local/process/process_runner.h"
#include "operator/backend/local/replica_facts.h"
#include "operator/backend/local/replica_poller.h"
#include "operator/backend/local/replica_starter.h"
#include "operator/backend/local/store/replica_store.h"

namespace coach::backend::local {

struct LocalBackendOptions {
  // Absolute; created when missing.
  std::string state_dir;
  // Required; must outlive the backend. The replica records and port reservations.
  ReplicaStore* store = nullptr;
  // Required; must outlive the backend. Where the backend's own events of a job go
  // (ContainerIgnored); the operator passes the SqliteJobStore whose replicas() is `store`.
  store::JobStore* jobs = nullptr;
  // The coach-replica-shim executable (absolute). Ignored when `runner` is given.
  std::string shim_path;
  // How often the poller looks for exited replicas.
  absl::Duration poll_interval = absl::Milliseconds(100);
  // SIGTERM -> SIGKILL grace when a pod is deleted or a job forgotten.
  absl::Duration grace_period = absl::Seconds(10);
  // The most a replica's live log holds (and its rotated .1 as much); <= 0: unbounded.
  int64_t max_log_bytes = 64 << 20;
  // nullptr: the host's GPUs (nvidia-smi -L, else /dev/nvidia<N>). Must outlive Create().
  GpuDiscovery* gpus = nullptr;
  // nullptr: a ShimProcessRunner over shim_path. Must outlive the backend.
  ProcessRunner* runner = nullptr;
  // Time source (also the default runner's). Not owned.
  Clock* clock = Clock::Real();
  // spec.nodeName for fieldRef; empty: gethostname().
  std::string node_name;
  // The environment PATH/HOME/LANG are copied from; empty: the operator's own.
  std::map<std::string, std::string> base_env;
  // Working directory of replicas whose container sets no workingDir (absolute). Empty:
  // its job's directory under state_dir. The operator passes its own working
  // directory, so that relative paths in commands mean what they mean in a shell there.
  std::string default_working_dir;
  // A directory of training runtimes (YAML files of ClusterTrainingRuntimes and
  // TrainingRuntimes, operator/trainer/runtime_directory.h) that TrainJobs name; empty: none, and
  // every TrainJob is refused for want of its runtime.
  std::string training_runtimes_dir;
};

// The replica's heartbeat file (absolute): touching it (creating it, or setting its mtime) is
// progress in time only. Set in every replica's environment, replacing the pod's own value.
inline constexpr char kEnvHeartbeatFile[] = "COACH_HEARTBEAT_FILE";

class LocalBackend : public Backend {
 public:
  // Errors: InvalidArgument (no store, relative state_dir, bad shim path), NotFound (no
  // shim), Internal (state dir, GPU discovery).
  static absl::StatusOr<std::unique_ptr<LocalBackend>> Create(LocalBackendOptions options);
  // Whether a replica in `phase` has ended.
  static bool Terminal(model::PodPhase phase);
  // "master-0" for pod "<job>-master-0"; "launcher" for the MPI launcher "<job>-launcher".
  static std::string ShortName(const JobKey& job, const std::string& pod);
  // Stops the poller and waits for starts in flight; replicas keep running.
  ~LocalBackend() override;

  std::string Name() const override { return "local"; }
  void SetChangeCallback(ChangeCallback callback) override;
  // Re-adopts every replica in the store (running ones are kept, ended ones get their
  // exit recorded, GPUs of running ones are re-registered), then starts the poller,
  // which calls the change callback for a job whenever one of its replicas ends.
  absl::Status Start() override;
  // Stops the poller and waits for the starts in flight (their callbacks included).
  void Stop() override;

  // Reserves the job's ports (model::ListenPortsByPod) in the store; checks every replica's GPU
  // request against the host. Errors: ResourceExhausted (more GPUs than the host has),
  // NotFound (job not in the store), InvalidArgument (bad GPU quantity), Unavailable.
  absl::Status Admit(const model::Job& job) override;
  // A LocalAddressPlan from the job's reservations (reserving any still missing, e.g.
  // after a scale-up). Never null.
  std::shared_ptr<const model::AddressPlan> AddressPlanFor(const model::Job& job) override;
  // Pods: Pending while starting; Running; Succeeded (exit 0); Failed with exit_code
  // (128 + n for signal n) or, when the supervisor vanished, with a message and no code.
  // Changes are persisted in the replica records.
  absl::StatusOr<model::ObservedState> Observe(const model::Job& job) override;
  // A TrainJob's runtime: its snapshot (the ConfigMap's file under the state dir), else the one
  // training_runtimes_dir holds; one upstream's runtime webhook would refuse sets
  // observed.refused (local_runtime.cc).
  absl::Status ObserveRuntime(const model::Job& job, model::ObservedState& observed) const;
  // kCreate Pod: runs it (replica_starter.h); returns once the Pending record is stored, the
  // process starts in the background. Errors: InvalidArgument (pod_process.h),
  // FailedPrecondition ("waiting for N GPUs"), Internal (the previous start of this pod
  // failed, reported once).
  // kDelete Pod: stops the process group (SIGTERM, grace, SIGKILL), frees its GPUs,
  // drops the record. Other kinds: recorded / dropped.
  absl::Status Apply(const model::Job& job, const model::Action& action) override;
  // As Backend::ApplyAll, except that the records of the pass's new pods are written in
  // one synced transaction (one sync per pass, not per pod) before their starts; a pass
  // that deletes a pod is applied one action after another.
  absl::Status ApplyAll(const model::Job& job, const std::vector<model::Action>& actions,
                        std::vector<absl::Status>* results) override;
  using Backend::ApplyAll;
  // Stops every replica of the job in parallel (with grace), releases ports and GPUs,
  // drops records, objects, ConfigMap files, replica dirs and logs. Idempotent.
  absl::Status Forget(const model::Job& job) override;
  // `options.replica` is "<type lowercase>-<index>" ("master-0" is pod <job>-master-0;
  // the MPI launcher is "launcher"). tail_lines counts per replica. With follow, ends
  // when every streamed replica has ended and its log is drained, on `cancelled`, or
  // when the sink returns false. `options.attempt` other than the one the job's pods run: that
  // attempt's logs as kept (local_layout.h; tail_lines reaches into each .1, follow is ignored:
  // the attempt has ended). Errors: NotFound (no such replica / no replicas; an attempt whose
  // logs are not kept, or that the job has not reached), InvalidArgument (a negative attempt).
  absl::Status StreamLogs(const model::Job& job, const LogOptions& options, const LogSink& sink,
                          const std::atomic<bool>& cancelled) override;

 private:
  LocalBackend(LocalBackendOptions options, std::unique_ptr<ProcessRunner> owned_runner,
               std::unique_ptr<GpuAllocator> gpus, std::unique_ptr<EndWatcher> end_watcher,
               std::string mlflow_binding_dir);

  // Reserves the ports of the job that `have` (its reservations) lacks; whether it did.
  absl::StatusOr<bool> EnsurePorts(const model::Job& job, const std::vector<PortReservation>& have);
  // What a pass reads once for all its pod creates: the job's replica names and ports.
  struct PassReads {
    std::set<std::string> existing;
    std::map<std::string, std::map<std::string, int>> ports;  // pod -> port name -> port
  };
  // A pod ready to start: its record (pid 0) not yet written, its GPUs allocated.
  struct PreparedStart {
    ReplicaRecord record;
    ProcessSpec spec;
    std::string container;
    std::vector<std::string> ignored_containers;
  };
  absl::StatusOr<PassReads> ReadForPass(const JobKey& key);
  absl::Status CreatePod(const model::Job& job, const model::KubeObject& pod);
  // A tracked replica's process gets the MLflow binding first on its PYTHONPATH.
  void AddMlflowBinding(PodProcess& proc) const;
  // nullopt: the pod exists. Errors as Apply; nothing is held after an error.
  absl::StatusOr<std::optional<PreparedStart>> PreparePod(const model::Job& job,
                                                          const model::KubeObject& pod,
                                                          const PassReads& reads);
  // Writes the records in one synced transaction, then queues the starts. On error nothing
  // was written and the pods' GPUs are released.
  absl::Status StartPrepared(const JobKey& key, std::vector<PreparedStart> prepared);
  // Runs the shim for a stored Pending record, on a starter thread; the error when it did not
  // start (its record is then dropped).
  absl::Status FinishStart(ReplicaRecord record, const ProcessSpec& spec);
  absl::Status DeletePod(const model::Job& job, const std::string& name);
  // StreamLogs of an attempt that the job's pods do not run; `records`: the job's.
  absl::Status StreamKeptLogs(const JobKey& key, const std::vector<ReplicaRecord>& records,
                              const LogOptions& options, const LogSink& sink,
                              const std::atomic<bool>& cancelled);
  absl::Status WriteConfigMap(const model::Job& job, const model::KubeObject& cm);
  // Polls a started, running record and updates it (and the store) when it ended.
  // Returns whether it changed.
  bool Refresh(ReplicaRecord& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The poller's periodic poll: refreshes every running record; the jobs whose replicas ended.
  std::set<JobKey> PollRunning();
  // Fires the change callback for each job.
  void Wake(const std::set<JobKey>& jobs);
  absl::Time Now() const { return options_.clock->Now(); }
  static std::string GpuOwner(const JobKey& job, const std::string& pod);

  const LocalBackendOptions options_;
  const LocalLayout layout_;
  // Where the MLflow binding was written ("" when it could not be): a tracked replica gets it
  // first on its PYTHONPATH (integrations/mlflow/binding.h).
  const std::string mlflow_binding_dir_;
  std::unique_ptr<ProcessRunner> owned_runner_;
  ProcessRunner* const runner_;
  std::unique_ptr<GpuAllocator> gpus_;
  std::unique_ptr<EndWatcher> end_watcher_;
  PortAllocator ports_;
  ObjectTable objects_;
  ReplicaFacts facts_;

  // Serialises replica-record writes between the controller's calls, the starters and the
  // poller.
  absl::Mutex mu_;
  ChangeCallback callback_ ABSL_GUARDED_BY(mu_);

  // Last, so destroyed first: their threads end while everything they reach still exists.
  ReplicaPoller poller_;
  ReplicaStarter starter_;
};

}  // namespace coach::backend::local
