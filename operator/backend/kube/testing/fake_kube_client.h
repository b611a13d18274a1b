#pragma once

// FakeKubeClient: an in-memory API server behind the KubeClient interface, held to the real
// one by kube_client_contract_test.
//
// What it models: objects per resource (ResourceDescriptor::GroupResource) and namespace;
// one cluster-wide resourceVersion counter (decimal strings, bumped per write, not per no-op
// update); uid and creationTimestamp; generateName; name validation (DNS subdomain);
// conditional Update/Patch/Delete (resourceVersion, uid) -> Aborted; the status subresource
// (has_status); finalizers (Delete sets deletionTimestamp; the last finalizer's removal
// deletes); label and field selectors; paging with opaque continue tokens; watches with
// history (the last `history_limit` events; older resourceVersions are Gone), synthetic
// ADDED events for a watch without a resourceVersion, bookmarks on demand; pod logs set by
// the test.
// What it does not: namespaces need not exist (unless require_namespaces), a pod is removed at
// once whatever its grace period (as if its kubelet confirmed at once), strategic merge
// patches are applied as merge patches, no defaulting or schema validation, no garbage
// collection by ownerReferences, lists are not snapshots across pages.
//
// Test hooks: FailNext (injected errors per method), SetErrorHook, calls() (recorded calls).

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "operator/backend/kube/client/kube_client.h"

namespace coach::kubeclient::testing {

struct FakeCall {
  std::string method;    // "Create", "Get", "List", "Watch", "Update", "Patch", "Delete",
                         // "GetStatus", "UpdateStatus", "PatchStatus", "StreamLogs"
  std::string resource;  // GroupResource(): "pods", "pytorchjobs.kubeflow.org"
  std::string ns;
  std::string name;  // "" for List/Watch
  // The object or patch written, when any; for Delete the DeleteOptions body a real client
  // sends (DeleteOptionsBody: preconditions, propagationPolicy, gracePeriodSeconds).
  nlohmann::json body;
};

struct FakeKubeClientOptions {
  size_t history_limit = 1000;
  bool require_namespaces =
      false;  // Create in a namespace that is not a Namespace object: NotFound
};

class FakeKubeClient : public KubeClient {
 public:
  explicit FakeKubeClient(FakeKubeClientOptions options = {});
  ~FakeKubeClient() override;

  absl::StatusOr<nlohmann::json> Create(const ResourceDescriptor& resource, const std::string& ns,
                                        const nlohmann::json& object) override;
  absl::StatusOr<nlohmann::json> Get(const ResourceDescriptor& resource, const std::string& ns,
                                     const std::string& name) override;
  absl::StatusOr<ListResult> List(const ResourceDescriptor& resource, const std::string& ns,
                                  const ListOptions& options) override;
  absl::Status Watch(const ResourceDescriptor& resource, const std::string& ns,
                     const WatchOptions& options, const WatchHandler& handler) override;
  absl::StatusOr<nlohmann::json> Update(const ResourceDescriptor& resource, const std::string& ns,
                                        const nlohmann::json& object) override;
  absl::StatusOr<nlohmann::json> Patch(const ResourceDescriptor& resource, const std::string& ns,
                                       const std::string& name, PatchType type,
                                       const nlohmann::json& patch) override;
  absl::Status Delete(const ResourceDescriptor& resource, const std::string& ns,
                      const std::string& name, const DeleteOptions& options) override;
  absl::StatusOr<nlohmann::json> GetStatus(const ResourceDescriptor& resource,
                                           const std::string& ns, const std::string& name) override;
  absl::StatusOr<nlohmann::json> UpdateStatus(const ResourceDescriptor& resource,
                                              const std::string& ns,
                                              const nlohmann::json& object) override;
  absl::StatusOr<nlohmann::json> PatchStatus(const ResourceDescriptor& resource,
                                             const std::string& ns, const std::string& name,
                                             PatchType type, const nlohmann::json& patch) override;
  absl::Status StreamLogs(const std::string& ns, const std::string& pod, const LogOptions& options,
                          const LogHandler& handler) override;

  // --- test hooks ---
  // The next `times` calls of `method` fail with `status` (before doing anything).
  void FailNext(const std::string& method, absl::Status status, int times = 1);
  // Called for every call before it runs; a non-OK result fails the call.
  void SetErrorHook(std::function<absl::Status(const FakeCall&)> hook);
  std::vector<FakeCall> calls() const;
  std::vector<FakeCall> calls(const std::string& method) const;
  void ClearCalls();

  // A BOOKMARK at the current resourceVersion to every watch of `resource` that allows them.
  void SendBookmark(const ResourceDescriptor& resource);
  // Forgets the event history: every resourceVersion older than the current one is Gone.
  void CompactHistory();
  // Ends every open watch (as the apiserver does at its timeout): they return OK.
  void CloseWatches();
  // Pod logs (StreamLogs reads them; AppendLogs wakes followers). container "" = the only one.
  void SetLogs(const std::string& ns, const std::string& pod, const std::string& container,
               const std::string& text);
  void AppendLogs(const std::string& ns, const std::string& pod, const std::string& container,
                  const std::string& text);
  // The current cluster resourceVersion.
  std::string CurrentResourceVersion() const;
  // Number of watches currently open.
  int open_watches() const;

 private:
  struct Event {
    int64_t rv;
    std::string resource;
    std::string ns;
    WatchEventType type;
    nlohmann::json object;
  };

  absl::Status Begin(FakeCall call);  // records, applies injected errors
  std::string Key(const ResourceDescriptor& r, const std::string& ns,
                  const std::string& name) const;
  absl::StatusOr<nlohmann::json> WriteLocked(const ResourceDescriptor& r, const std::string& ns,
                                             const std::string& name, nlohmann::json desired,
                                             bool status_only, const std::string& precondition_rv);
  void EmitLocked(const ResourceDescriptor& r, const std::string& ns, WatchEventType type,
                  const nlohmann::json& object);
  absl::StatusOr<nlohmann::json> ApplyPatch(const nlohmann::json& current, PatchType type,
                                            const nlohmann::json& patch) const;

  const FakeKubeClientOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int64_t rv_ = 1;
  int64_t uid_counter_ = 0;
  int64_t oldest_rv_ = 1;  // events with rv > oldest_rv_ - 1 are in history_
  int64_t close_epoch_ = 0;
  int open_watches_ = 0;
  std::map<std::string, nlohmann::json> objects_;  // Key() -> object; ordered by ns/name
  std::deque<Event> history_;
  std::map<std::string, std::vector<absl::Status>> fail_next_;
  std::function<absl::Status(const FakeCall&)> hook_;
  std::vector<FakeCall> calls_;
  int64_t bookmark_seq_ = 0;
  std::set<std::string> bookmark_resources_;  // resources of the pending bookmark
  std::map<std::string, std::string> logs_;   // "ns/pod/container" -> text
};

}  // namespace coach::kubeclient::testing
