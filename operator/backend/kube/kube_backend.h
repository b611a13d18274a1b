#pragma once

// KubeBackend: the Backend that runs a job's replicas as Pods (with headless Services, ConfigMaps,
// Secrets, PersistentVolumeClaims, RBAC objects and gang-scheduling PodGroups) on a Kubernetes API
// server, through a KubeClient. How its caches, expectations and side watches are organised:
// docs/architecture.md, "The Kubernetes backend".
//
// Callers may rely on:
//   - Observe: Unavailable only before Start() has synced every cache. After that it returns the
//     caches merged with the pending expectations: an object whose create was sent is reported
//     (a pod as Pending), one whose delete was sent with deleting = true, so a pass never creates
//     an object twice nor recreates one being deleted. Only objects that name the job's uid among
//     their ownerReferences (or have none) are the job's. On the leader it also brings the job's
//     HorizontalPodAutoscaler (an elastic PyTorchJob with metrics: hpa.h) to what the job says,
//     creating, patching or deleting it; an API server that does not answer makes Observe
//     Unavailable, any other refusal is logged and leaves the job alone.
//   - Apply/ApplyAll: AlreadyExists on create and NotFound on delete are success (names are
//     deterministic). ApplyAll creates what pods need before the pods. A delete with
//     action.force has gracePeriodSeconds=0. Creating a PodGroup whose CRD is absent:
//     FailedPrecondition naming the CRD.
//   - Every object created carries coach.dev/job-name; every change to a cached object calls the
//     change callback for its job. Facts from optional watches (ObservedPod::waiting and
//     node_lost, ObservedState::queue) stay empty where the API server or RBAC refuses them.
//   - ReceiveProgress keeps a report only for a pod the cache holds with that UID.
//
// Thread-safety: every method is thread-safe; the controller serialises calls per job.

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/backend/backend.h"
#include "operator/backend/kube/client/kube_client.h"
#include "operator/backend/kube/client/reflector.h"
#include "operator/backend/kube/expectations.h"
#include "operator/backend/kube/node_health.h"
#include "operator/backend/kube/progress_book.h"
#include "operator/backend/kube/queue_facts.h"
#include "operator/backend/kube/scheduling_facts.h"
#include "operator/backend/progress_receiver.h"
#include "operator/metrics/registry.h"

namespace coach::backend::kube {

// "namespace/name": how the backend keys a job (its caches, expectations, directives).
std::string JobKeyOf(const model::Job& job);

struct KubeBackendOptions {
  coach::kubeclient::KubeClient* client = nullptr;  // required; outlives the backend
  // Namespaces to watch; empty: all namespaces (one cluster-wide watch per kind).
  std::vector<std::string> namespaces;
  // "", "none", "volcano" or "scheduler-plugins" (InvalidArgument otherwise).
  std::string gang_scheduler;
  // Most pod/service requests ApplyAll has in flight at once (>= 1).
  int create_parallelism = 16;
  // Time for expectation ages and the apply linger. Not owned.
  ::coach::Clock* clock = ::coach::Clock::Real();
  // How long Start() waits for every cache's first list (Unavailable after).
  absl::Duration sync_timeout = absl::Seconds(60);
  // Age after which an unmet expectation is dropped.
  absl::Duration expectation_timeout = absl::Minutes(5);
  // Backoff and watch timeouts of the reflectors (selectors are set by the backend).
  coach::kubeclient::ReflectorOptions reflector;
  // Test hook: called on the request thread around every create/delete request
  // (entering = true before, false after). Lets tests count requests in flight.
  std::function<void(const model::Action& action, bool entering)> request_hook;
  // Limits of the progress reports of replica pods.
  ProgressBookOptions progress;
};

class KubeBackend : public Backend, public ProgressReceiver {
 public:
  // InvalidArgument: no client, an unknown gang scheduler, create_parallelism < 1.
  static absl::StatusOr<std::unique_ptr<KubeBackend>> Create(KubeBackendOptions options);
  ~KubeBackend() override;

  std::string Name() const override { return "kube"; }
  void SetChangeCallback(ChangeCallback callback) override;
  // Starts the reflectors and waits until each has listed once. Unavailable: a cache did not
  // sync within sync_timeout (the reflectors are stopped again). Calling it twice: OK.
  absl::Status Start() override;
  void Stop() override;
  // No-op: the cluster's scheduler decides what fits.
  absl::Status Admit(const model::Job& job) override;
  // nullptr: Kubernetes service names.
  std::shared_ptr<const model::AddressPlan> AddressPlanFor(const model::Job& job) override;
  // From the caches once started (the leader); before that, the job's pods listed from the API
  // server (a replica that does not lead answers describe that way; services are not listed).
  absl::StatusOr<model::ObservedState> Observe(const model::Job& job) override;
  // InvalidArgument: a kind this backend does not manage; `force` on anything but a kDelete of
  // a Pod. FailedPrecondition: the PodGroup
  // CRD is not installed. Otherwise the client's codes (AlreadyExists/NotFound are OK).
  absl::Status Apply(const model::Job& job, const model::Action& action) override;
  using Backend::ApplyAll;
  absl::Status ApplyAll(const model::Job& job, const std::vector<model::Action>& actions,
                        std::vector<absl::Status>* results) override;
  // Deletes every pod, service and other object the caches (and pending creates) hold for
  // the job, Background propagation, NotFound ignored; then drops its expectations. Does not
  // wait for pods to terminate (their grace period runs on the nodes). Idempotent.
  absl::Status Forget(const model::Job& job) override;
  // Pod logs through the API (GET .../pods/NAME/log): replica "master-0" -> pod
  // "<job>-master-0", "launcher" -> "<job>-launcher"; empty: every pod of the job, sorted by
  // name (concurrently when following). The default container is the kind's ("pytorch"),
  // else the first. NotFound: no such replica in the cache. A pod whose node has no kubelet
  // (kwok fake nodes: the apiserver answers 404 "the server could not find the requested
  // resource (pods/log NAME)"): Unavailable "logs of pod NAME are not available from its
  // node ...: <the apiserver's message>". A container that has not started yet: the
  // apiserver's error as the client maps it (InvalidArgument), prefixed "logs of pod NAME: ".
  absl::Status StreamLogs(const model::Job& job, const LogOptions& options, const LogSink& sink,
                          const std::atomic<bool>& cancelled) override;

  // A replica pod's report of its own progress (see the file comment). PermissionDenied names
  // the pod; Unavailable before Start() (a replica that does not lead).
  // With the launch directive of the pod's job, when it restarts in place.
  absl::StatusOr<ProgressReceipt> ReceiveProgress(const PodReport& report) override;
  // Kept in memory for ReceiveProgress's answers until replaced or the job is forgotten.
  void DirectLaunchers(const model::Job& job,
                       const std::optional<model::LaunchDirective>& directive) override;

  // Registers coach_replica_schedule_seconds{nodepool} and
  // coach_progress_reports_total{outcome} in `registry` (which outlives the backend) and
  // observes into them from then on.
  void ExportMetrics(coach::metrics::Registry* registry);

  // --- introspection (tests, metrics) ---
  // Pending expectations of the job (kind/name -> "create"|"delete"), after lowering those
  // the cache satisfies (as Observe does).
  std::map<std::string, std::string> PendingExpectations(const std::string& ns,
                                                         const std::string& name) const;
  // Cached object count of `kind` (all jobs).
  size_t CachedCount(const std::string& kind) const;
  // Pods in the progress book.
  size_t ProgressEntries() const { return progress_.size(); }
  // True while an ApplyAll runs or within `linger` after the last one ended: the operator is
  // creating objects, and work that can wait (Events) should.
  bool Busy(absl::Duration linger = absl::Milliseconds(250)) const;

 private:
  std::atomic<int> applies_in_flight_{0};
  std::atomic<int64_t> last_apply_end_ns_{0};
  struct KindState;

  explicit KubeBackend(KubeBackendOptions options);

  absl::Time Now() const { return options_.clock->Now(); }
  KindState* StateFor(const std::string& kind);
  const KindState* StateFor(const std::string& kind) const;
  // The job of the pod ns/name that the cache holds as the instance `uid`: its key, and its uid
  // from the pod's controller reference ("" without one). nullopt for another instance or none.
  struct PodJob {
    std::string key;
    std::string uid;
  };
  std::optional<PodJob> CachedPodJobLocked(const std::string& ns, const std::string& name,
                                           const std::string& uid) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Observe before the caches start: one List of the job's pods.
  absl::StatusOr<model::ObservedState> ObserveFromServer(const model::Job& job);
  // The pods labelled with the job's name (only `pod_name` when given), from the API server:
  // what a replica without started caches serves describe and logs from.
  absl::StatusOr<std::vector<nlohmann::json>> ListJobPods(const std::string& ns,
                                                          const std::string& job_name,
                                                          const std::string& pod_name);

  // Reflector handlers (one reflector thread per kind and namespace).
  // The caches' view of a job (Observe on the leader).
  absl::StatusOr<model::ObservedState> ObserveCached(const model::Job& job);
  // A TrainJob's runtime: its snapshot ConfigMap's, else the runtime its spec names, read from
  // the API server (ObservedState::train_job_runtime).
  absl::Status ObserveRuntime(const model::Job& job, model::ObservedState& observed);
  void OnReplace(KindState* state, const std::string& ns, const std::vector<nlohmann::json>& items);
  void OnEvent(KindState* state, const coach::kubeclient::WatchEvent& event);
  void Notify(const std::set<std::string>& job_keys);
  // The events and NodeClaim watches (see the file comment); called by Start().
  void StartSchedulingWatches(const std::vector<std::string>& namespaces);
  // The Workload and LocalQueue watches (Kueue; kube_backend_queue.cc); called by Start().
  void StartQueueWatches(const std::vector<std::string>& namespaces);
  // The Node watch, unless RBAC forbids listing nodes; called by Start().
  void StartNodeWatch();
  // One List of at most one object, before a watch is started: a resource not served
  // (NotFound) or not listable (PermissionDenied) gets a log line and no reflector, which would
  // retry and log for ever. Returns the List's status.
  absl::Status ProbeList(const coach::kubeclient::ResourceDescriptor& resource,
                         const std::string& ns, const std::string& field_selector = "") const;
  // Runs a reflector on `resource` in `ns` on its own thread until Stop().
  void StartReflector(const coach::kubeclient::ResourceDescriptor& resource, const std::string& ns,
                      const coach::kubeclient::ReflectorOptions& options,
                      coach::kubeclient::ReflectorHandlers handlers);
  // Whether the cache of `kind` runs (its resource is served and allowed). Requires mu_.
  bool WatchesLocked(const std::string& kind) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The cached (trimmed) object `kind` ns/name, or nullptr. Requires mu_.
  const nlohmann::json* CachedLocked(const std::string& kind, const std::string& ns,
                                     const std::string& name) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The jobs owning the cached pods `pod_keys` ("ns/name"). Requires mu_.
  std::set<std::string> JobsOfPodsLocked(const std::set<std::string>& pod_keys) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The jobs owning cached pods bound to one of `nodes`. Requires mu_.
  std::set<std::string> JobsOnNodesLocked(const std::set<std::string>& nodes) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Observes the schedule time of a pod whose watch event shows PodScheduled turning True.
  void ObserveScheduled(const nlohmann::json* before, const nlohmann::json& after);

  void Raise(const std::string& job_key, const std::string& object_key, Expectation e);
  void Lower(const std::string& job_key, const std::string& object_key);
  // Lowers what the cache satisfies and drops expired ones. Requires mu_.
  void SettleLocked(const std::string& job_key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Status ApplyOne(const model::Job& job, const model::Action& action);
  absl::Status ApplySecret(const model::Job& job, const model::Action& action);

  // The job's HorizontalPodAutoscaler (kube_backend_hpa.cc): the step hpa.h's NextHpaStep names
  // from the cache, the expectations and hpa_written_, taken with the expectations every object
  // has. Codes: the client's (AlreadyExists, NotFound and a failed uid precondition are OK).
  absl::Status TendHpa(const model::Job& job);
  absl::Status CreateHpa(const model::Job& job, const nlohmann::json& desired);
  absl::Status PatchHpa(const model::Job& job, const nlohmann::json& desired,
                        const nlohmann::json& current);
  absl::Status DeleteHpa(const model::Job& job, const nlohmann::json& current);
  // Remembers the spec written to the job's HPA and the server's answer (HpaView).
  void RememberHpaWrite(const std::string& job_key, const nlohmann::json& desired,
                        const nlohmann::json& answer);

  KubeBackendOptions options_;
  std::vector<std::unique_ptr<KindState>> kinds_;

  mutable absl::Mutex mu_;
  ChangeCallback callback_ ABSL_GUARDED_BY(mu_);
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  // job key "ns/name" -> object key "Kind/name" -> expectation.
  Expectations expectations_ ABSL_GUARDED_BY(mu_);
  // Secrets are created, never watched or read (the chart grants create only: the operator can
  // read no Secret of any job): job key -> the names this operator created, or found existing
  // when it tried (AlreadyExists, e.g. after a restart). Observe reports them as objects.
  std::map<std::string, std::set<std::string>> created_secrets_ ABSL_GUARDED_BY(mu_);
  // job key -> {the HPA spec last written, the spec the API server answered with}, dumped;
  // dropped when the HPA goes (watch, re-list, DeleteHpa, Forget).
  std::map<std::string, std::pair<std::string, std::string>> hpa_written_ ABSL_GUARDED_BY(mu_);
  SchedulingFacts facts_ ABSL_GUARDED_BY(mu_);
  QueueFacts queues_ ABSL_GUARDED_BY(mu_);
  NodeHealth nodes_ ABSL_GUARDED_BY(mu_);
  bool watch_nodes_ ABSL_GUARDED_BY(mu_) = false;  // the Node watch runs
  bool nodes_synced_ ABSL_GUARDED_BY(mu_) = false;
  std::string nodes_error_ ABSL_GUARDED_BY(mu_);
  // When Start() synced the caches: progress reports are known from then on.
  absl::Time started_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  // Its own lock, taken inside mu_ (never the other way round).
  ProgressBook progress_;
  // job key "ns/name" -> what its launchers are told; its own lock, taken inside mu_.
  absl::Mutex directives_mu_ ABSL_ACQUIRED_AFTER(mu_);
  std::unordered_map<std::string, model::LaunchDirective> directives_
      ABSL_GUARDED_BY(directives_mu_);
  std::atomic<coach::metrics::Family*> schedule_seconds_{nullptr};
  std::atomic<coach::metrics::Family*> progress_reports_{nullptr};

  absl::Mutex run_mu_;  // serialises Start/Stop
  std::vector<std::unique_ptr<coach::kubeclient::Reflector>> reflectors_;
  std::vector<std::thread> threads_;
};

}  // namespace coach::backend::kube
