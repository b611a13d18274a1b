#pragma once

// What the harness itself does on the API server with its unlimited client: namespaces made and
// deleted, objects POSTed on many threads (the submission, and the floor the operator is
// measured against), collections read page by page.

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "operator/backend/kube/client/kube_client.h"

namespace coach::bench::controlplane {

// One object to create: its resource and its body.
struct Item {
  kubeclient::ResourceDescriptor resource;
  nlohmann::json body;
};

// POSTs every item into ns on `threads` threads; returns the number that failed (the first
// errors are printed). Unavailable/ResourceExhausted are retried; AlreadyExists counts as
// created. With `created`, the server's answer for items[i] lands in (*created)[i] (null when
// it failed).
int CreateAll(kubeclient::KubeClient* client, const std::string& ns, const std::vector<Item>& items,
              int threads, std::vector<nlohmann::json>* created = nullptr);

// The API server's error when the namespace could not be created.
absl::Status CreateNamespace(kubeclient::KubeClient* client, const std::string& ns);

// Deletes the namespace and waits (up to 300 s) until it is gone; returns the seconds it took.
double DeleteNamespace(kubeclient::KubeClient* client, const std::string& ns);

// Every item of `r` in `ns`, read 500 at a time. The first failed page's error.
absl::StatusOr<std::vector<nlohmann::json>> ListAllPages(kubeclient::KubeClient* client,
                                                         const kubeclient::ResourceDescriptor& r,
                                                         const std::string& ns);

// Runs fn(0..n-1) on `threads` threads.
void ParallelFor(size_t n, int threads, const std::function<void(size_t)>& fn);

}  // namespace coach::bench::controlplane
