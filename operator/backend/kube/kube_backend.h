#pragma once

// KubeBackend: the Backend that runs a job's replicas as Pods (plus headless Services,
// the MPI ConfigMap and RBAC objects, and gang-scheduling PodGroups) on a Kubernetes API
// server, through a KubeClient.
//
// Caches. One Reflector (list + watch, re-list on Gone) per kind and watched namespace,
// label-selected so that memory follows coach's objects, not the cluster:
//   Pods, Services                 training.kubeflow.org/operator-name (exists): what the
//                                  reconciler labels every v1 pod and service with (objects
//                                  of an earlier operator are adopted, as upstream does); and
//                                  coach.dev/job-name,!training.kubeflow.org/operator-name: a
//                                  TrainJob's, which carry upstream's JobSet labels instead
//   ConfigMaps, ServiceAccounts,   coach.dev/job-name (exists): the reconciler does not label
//   Roles, RoleBindings, PodGroups, these, so Apply stamps the label on every object it creates
//   PersistentVolumeClaims
// Objects are indexed by job: namespace + the job-name label (training.kubeflow.org/job-name
// for v1 pods and services, coach.dev/job-name for the rest). A TrainJob's runtime snapshot
// ConfigMap keeps its data.runtime in the cache (ObserveRuntime reads it). Cached objects are
// trimmed to the fields Observe reads (metadata, a pod's container names and status). Observe
// keeps the cached objects that name the job's uid among their ownerReferences (or have none):
// a TrainJob and a v1 job may share a name, and so a job-name label, in one namespace. Secrets
// (an MPI TrainJob's SSH keys, generated here at creation: ssh_auth_keys.h) are created and
// never read back: see created_secrets_. Every event
// calls the change callback for the owning job. PodGroups are watched only with a gang scheduler
// configured ("volcano": scheduling.volcano.sh/v1beta1, "scheduler-plugins":
// scheduling.x-k8s.io/v1alpha1); when their CRD is absent Start() logs a warning, skips that
// cache, and creating a PodGroup fails with FailedPrecondition naming the missing CRD.
//
// Why Pending pods wait (scheduling_facts.h), beside the caches and never holding up Start():
// a watch on Karpenter's events about Pods (field selector source=karpenter, per watched
// namespace) and one on nodeclaims.karpenter.sh. Either is skipped, with one log line, when
// the API server does not serve it (no Karpenter CRDs) or RBAC forbids it; the pods' own
// PodScheduled condition (kube-scheduler's Unschedulable) is read from the pod cache anyway.
// Observe fills ObservedPod::waiting from them; a change notifies the pod's job.
//
// Kueue (queue_facts.h): watches on workloads.kueue.x-k8s.io and localqueues, where served and
// allowed (one log line otherwise). Observe fills ObservedState::queue from the Workload the job
// owns; a Workload or LocalQueue change notifies the jobs it concerns.
//
// Lost nodes (node_health.h): a watch on Nodes (cluster-scoped, unselected; only each node's
// Ready condition is kept) started and synced with the caches. Observe sets
// ObservedPod::node_lost for a pod whose spec.nodeName is NotReady/Unknown or was deleted; a
// node turning lost or back notifies the jobs with cached pods on it. Without RBAC to list
// nodes Start() logs one warning, skips the watch, and node_lost stays false.
// Metric (ExportMetrics): coach_replica_schedule_seconds{nodepool}, pod creation to
// PodScheduled=True, both the API server's times, observed when the pod watch shows the
// transition.
//
// Expectations (the guarantee that a lagging cache never creates an object twice).
//   raise   Apply raises an expectation (job -> kind/name -> create|delete) before its request;
//   lower   the watch lowers it when the cache sees the object (create) or sees it gone or
//           carrying a deletionTimestamp (delete); Observe also lowers those the cache
//           already satisfies (robust to re-lists); a failed request lowers it at once;
//           an expectation older than expectation_timeout (5 min, as upstream's
//           ExpectationsTimeout) is dropped with a warning (a lost event cannot wedge a job).
//   observe Observe never hides work behind Unavailable: it returns the cache merged with
//           the pending expectations. An object expected to be created but not yet seen
//           is reported as existing (a pod as Pending, `created` = when the create was
//           sent), so the reconciler does not create it again; an object expected to be
//           deleted that the cache still shows alive is reported with deleting = true (pods)
//           so the reconciler does not recreate it before the deletion lands (and, when the
//           cache shows no deletionTimestamp, deletion_requested = when the delete was sent).
//           Observe is
//           Unavailable only before Start() has synced every cache.
//   AlreadyExists on create is success: names are deterministic, so an existing object is
//           the one a previous pass or process created; its expectation stays raised until
//           the watch shows it (or times out, when the object lacks our labels and so can
//           never appear in a cache: the log names it). NotFound on delete is success.
//
// Apply/ApplyAll. kCreate POSTs object.body (labels stamped as above) into
// object.namespace_; kDelete DELETEs with propagationPolicy=Background, and with
// gracePeriodSeconds=0 when action.force (a Pod on a lost node, which its kubelet will never
// confirm gone; the uid precondition holds as for any delete). ApplyAll applies what pods need
// first (the ConfigMaps, Secrets and claims they mount, ServiceAccount/Role/RoleBinding,
// PodGroup), in order, and then pods, services and a TrainJob's runtime snapshot concurrently on
// up to create_parallelism threads.
//
// Progress (ProgressReceiver): the API hands each replica pod's report of its own progress to
// ReceiveProgress, which keeps it in a ProgressBook (progress_book.h: bounded, one report per
// second per pod, the job reconciled at most every 5 s for it) only for a pod the cache holds
// with that UID and a job-name label; Observe fills ObservedPod::progress from the book and
// ObservedState::progress_since with when the caches started (reports made before are not
// known). A pod's entry goes with the pod (deleted, or gone at a re-list).
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

// The label Apply stamps on every object it creates (value: the job's name).
inline constexpr char kCoachJobNameLabel[] = "coach.dev/job-name";

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
  void OnReplace(KindState* state, const std::string& ns, const std::string& selector,
                 const std::vector<nlohmann::json>& items);
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
