#pragma once

// KubeClient: the boundary between coach and the Kubernetes API server. Objects are
// unstructured JSON (nlohmann::json) exactly as the apiserver reads and writes them.
//
// Implementations: RestKubeClient (libcurl, rest_kube_client.h) and FakeKubeClient
// (in-memory, operator/backend/kube/testing/). kube_client_contract_test.cc runs one suite
// against both, the real one on a real kube-apiserver (tools/testenv), so the fake cannot drift.
//
// Error codes shared by every method (mapping in errors.h):
//   InvalidArgument    the server rejected the object or request (400/422); the message
//                      names the offending fields
//   Unauthenticated    401: bad or expired credentials
//   PermissionDenied   403: RBAC
//   NotFound           404: the object (or its namespace, or the resource type) does not exist
//   Unavailable        429/5xx/connection errors after the client's own retries; retry later
//   DeadlineExceeded   the request timeout passed
//   Cancelled          a stop flag was raised (Watch, StreamLogs)
// Method-specific codes are listed at each method. Implementations are thread-safe.
//
// Namespace: coach::kubeclient, not coach::kubeclient. The backend that drives pods through this
// client is coach::backend::kube; two namespaces both called `kube` made `kube::X` mean the
// client or the backend depending on where it was written, so the client names what it is.

#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "operator/backend/kube/client/resource.h"

namespace coach::kubeclient {

struct ListOptions {
  std::string label_selector;  // "app=x,tier!=db,env in (a,b),!legacy"
  std::string field_selector;  // "metadata.name=x" (plus per-resource fields on the server)
  int64_t limit = 0;           // 0: no paging
  std::string continue_token;  // from ListResult::continue_token
  // "" = most recent (quorum read); "0" = any (cache); otherwise "not older than".
  std::string resource_version;
};

struct ListResult {
  std::vector<nlohmann::json> items;
  std::string resource_version;  // the list's metadata.resourceVersion: where to watch from
  std::string continue_token;    // non-empty when more pages remain
};

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };
const char* WatchEventTypeName(WatchEventType t);

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  // The object (for kBookmark only metadata.resourceVersion matters; for kError the
  // metav1.Status). Watch never hands kError to the handler: it ends the watch with the
  // mapped status instead.
  nlohmann::json object;
  // object.metadata.resourceVersion, for convenience.
  std::string resource_version;
};

struct WatchOptions {
  std::string label_selector;
  std::string field_selector;
  // Where the watch starts: events after this version. "" = the current state first as
  // synthetic ADDED events, then changes (as the apiserver does).
  std::string resource_version;
  bool allow_bookmarks = true;
  // Server-side timeout (the server ends the stream cleanly after it); 0 = server default.
  int64_t timeout_seconds = 0;
  // When set and raised, the watch ends with Cancelled (RestKubeClient notices within about
  // a second, the fake at once).
  const std::atomic<bool>* stop = nullptr;
};

// Returns false to end the watch (Watch then returns OK).
using WatchHandler = std::function<bool(const WatchEvent&)>;

enum class PatchType {
  kMerge,           // application/merge-patch+json (RFC 7386)
  kJson,            // application/json-patch+json (RFC 6902)
  kStrategicMerge,  // application/strategic-merge-patch+json (built-in types only; the fake
                    // applies it as a merge patch, which matches for maps and replaced lists)
};
const char* PatchContentType(PatchType t);

enum class PropagationPolicy { kDefault, kOrphan, kBackground, kForeground };

struct DeleteOptions {
  std::optional<std::string> precondition_uid;
  std::optional<std::string> precondition_resource_version;
  PropagationPolicy propagation = PropagationPolicy::kDefault;
  // 0 on a Pod: removed at once, without waiting for its kubelet to confirm that the containers
  // stopped (what a pod on a lost node needs; `kubectl delete --force --grace-period=0`).
  std::optional<int64_t> grace_period_seconds;
};

// `options` as the meta/v1 DeleteOptions body of a DELETE request (kind, apiVersion,
// preconditions, propagationPolicy, gracePeriodSeconds), what RestKubeClient sends and
// FakeKubeClient records.
nlohmann::json DeleteOptionsBody(const DeleteOptions& options);

struct LogOptions {
  std::string container;  // required when the pod has several containers
  bool follow = false;
  std::optional<int64_t> tail_lines;
  bool previous = false;  // the previous (terminated) instance of the container
  bool timestamps = false;
  const std::atomic<bool>* stop = nullptr;  // StreamLogs only
};

// Receives log bytes as they arrive (arbitrary chunks, not lines). Returns false to stop.
using LogHandler = std::function<bool(absl::string_view chunk)>;

class KubeClient {
 public:
  virtual ~KubeClient() = default;

  // POST. `object` needs metadata.name (or generateName); metadata.namespace, when set, must
  // equal `ns`. Returns the stored object (uid, resourceVersion, creationTimestamp set).
  // AlreadyExists: an object with that name exists. InvalidArgument: invalid object, or
  // metadata.resourceVersion set (checked by the client: the apiserver answers that with a 500).
  // NotFound: the namespace does not exist.
  virtual absl::StatusOr<nlohmann::json> Create(const ResourceDescriptor& resource,
                                                const std::string& ns,
                                                const nlohmann::json& object) = 0;

  // GET. NotFound.
  virtual absl::StatusOr<nlohmann::json> Get(const ResourceDescriptor& resource,
                                             const std::string& ns, const std::string& name) = 0;

  // GET of the collection (ns "" = all namespaces for namespaced resources). Items are
  // sorted by namespace then name. InvalidArgument: bad selector. Gone (IsGone): the
  // continue token expired; list again from the start.
  virtual absl::StatusOr<ListResult> List(const ResourceDescriptor& resource, const std::string& ns,
                                          const ListOptions& options) = 0;

  // A streaming GET (?watch=1). Blocks, calling `handler` for every event in order, until:
  // the server ends the stream (OK: watch again from the last resourceVersion), the handler
  // returns false (OK), options.stop is raised (Cancelled), or an error. Gone (IsGone): the
  // resourceVersion is too old (410 or an ERROR event with code 410): re-list. Other ERROR
  // events end the watch with their mapped status. Never retried internally.
  virtual absl::Status Watch(const ResourceDescriptor& resource, const std::string& ns,
                             const WatchOptions& options, const WatchHandler& handler) = 0;

  // PUT. The object's metadata.name names it; when metadata.resourceVersion is set the
  // update is conditional on it. For resources with a status subresource, .status is
  // ignored. Aborted: resourceVersion is stale (409 Conflict): RetryOnConflict.
  // NotFound. InvalidArgument: invalid object or immutable fields changed.
  virtual absl::StatusOr<nlohmann::json> Update(const ResourceDescriptor& resource,
                                                const std::string& ns,
                                                const nlohmann::json& object) = 0;

  // PATCH. `patch` is the patch document (a JSON object for merge patches, an array for JSON
  // patches). A merge patch carrying metadata.resourceVersion is conditional on it (Aborted
  // when stale). NotFound. InvalidArgument: malformed patch or invalid result. A JSON patch
  // whose "test" operation fails: InvalidArgument.
  virtual absl::StatusOr<nlohmann::json> Patch(const ResourceDescriptor& resource,
                                               const std::string& ns, const std::string& name,
                                               PatchType type, const nlohmann::json& patch) = 0;

  // DELETE. OK once accepted: objects with finalizers or a grace period (Pods) may remain
  // for a while with metadata.deletionTimestamp set. NotFound. Aborted: a precondition
  // (uid, resourceVersion) does not hold.
  virtual absl::Status Delete(const ResourceDescriptor& resource, const std::string& ns,
                              const std::string& name, const DeleteOptions& options) = 0;

  // The /status subresource (resource.has_status must be true, else NotFound). GetStatus
  // returns the whole object; UpdateStatus/PatchStatus change only .status (spec changes are
  // ignored; so are metadata changes for custom resources, while Pods' status endpoint still
  // takes label/annotation changes: do not rely on either). A resourceVersion in the object or
  // patch is a precondition (Aborted when stale). Codes as Get/Update/Patch.
  virtual absl::StatusOr<nlohmann::json> GetStatus(const ResourceDescriptor& resource,
                                                   const std::string& ns,
                                                   const std::string& name) = 0;
  virtual absl::StatusOr<nlohmann::json> UpdateStatus(const ResourceDescriptor& resource,
                                                      const std::string& ns,
                                                      const nlohmann::json& object) = 0;
  virtual absl::StatusOr<nlohmann::json> PatchStatus(const ResourceDescriptor& resource,
                                                     const std::string& ns, const std::string& name,
                                                     PatchType type,
                                                     const nlohmann::json& patch) = 0;

  // A pod's log (/api/v1/namespaces/NS/pods/NAME/log). With options.follow the stream stays
  // open until the container ends, the handler returns false (OK) or options.stop is raised
  // (Cancelled). NotFound: no such pod. InvalidArgument: the container is missing or
  // ambiguous. Unavailable/InvalidArgument: the container has not started.
  virtual absl::Status StreamLogs(const std::string& ns, const std::string& pod,
                                  const LogOptions& options, const LogHandler& handler) = 0;
};

// The whole log (follow ignored) as one string; codes as StreamLogs.
absl::StatusOr<std::string> GetLogs(KubeClient& client, const std::string& ns,
                                    const std::string& pod, LogOptions options);

// The Trainer v2 runtime of `kind` ("ClusterTrainingRuntime", else a TrainingRuntime in `ns`)
// called `name`; nullopt when it does not exist. Codes as Get, NotFound excepted.
absl::StatusOr<std::optional<nlohmann::json>> GetTrainingRuntime(KubeClient& client,
                                                                 const std::string& kind,
                                                                 const std::string& ns,
                                                                 const std::string& name);

struct RetryOnConflictOptions {
  int max_attempts = 5;  // as client-go's retry.DefaultRetry
  absl::Duration initial_backoff = absl::Milliseconds(10);
  double factor = 1.0;
  double jitter = 0.1;
};

// Runs `fn` (which should re-read the object, modify it and write it) until it returns
// anything but Aborted, at most max_attempts times with backoff in between; then returns
// the last status (Aborted when every attempt conflicted).
absl::Status RetryOnConflict(const std::function<absl::Status()>& fn,
                             const RetryOnConflictOptions& options = {});

// Helpers over object JSON (missing fields read as "").
std::string NameOf(const nlohmann::json& object);
std::string NamespaceOf(const nlohmann::json& object);
std::string ResourceVersionOf(const nlohmann::json& object);
std::string UidOf(const nlohmann::json& object);

}  // namespace coach::kubeclient
