#include "bench/controlplane/harness_client.h"

#include <unistd.h>

#include <atomic>
#include <iostream>
#include <thread>
#include <utility>

#include "bench/controlplane/watch_counter.h"

namespace coach::bench::controlplane {

using json = nlohmann::json;
namespace k8s = coach::kubeclient;
namespace res = coach::kubeclient::resources;

int CreateAll(k8s::KubeClient* client, const std::string& ns, const std::vector<Item>& items,
              int threads, std::vector<json>* created) {
  if (created != nullptr) created->assign(items.size(), json());
  std::atomic<int> failed{0};
  ParallelFor(items.size(), threads, [&](size_t i) {
    for (int attempt = 0;; ++attempt) {
      auto r = client->Create(items[i].resource, ns, items[i].body);
      if (r.ok() && created != nullptr) (*created)[i] = std::move(r).value();
      if (r.ok() || r.status().code() == absl::StatusCode::kAlreadyExists) break;
      const bool retry = (r.status().code() == absl::StatusCode::kUnavailable ||
                          r.status().code() == absl::StatusCode::kResourceExhausted) &&
                         attempt < 20;
      if (!retry) {
        if (failed++ < 3) std::cerr << "create: " << r.status() << "\n";
        break;
      }
      usleep(50 * 1000);
    }
  });
  return failed.load();
}

absl::Status CreateNamespace(k8s::KubeClient* client, const std::string& ns) {
  json body = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}};
  auto r = client->Create(res::Namespaces(), "", body);
  return r.ok() ? absl::OkStatus() : r.status();
}

double DeleteNamespace(k8s::KubeClient* client, const std::string& ns) {
  const double t0 = NowS();
  (void)client->Delete(res::Namespaces(), "", ns, {});
  for (int i = 0; i < 3000; ++i) {
    auto g = client->Get(res::Namespaces(), "", ns);
    if (!g.ok() && g.status().code() == absl::StatusCode::kNotFound) return NowS() - t0;
    usleep(100 * 1000);
  }
  std::cerr << "namespace " << ns << " still there after 300 s\n";
  return NowS() - t0;
}

// Paged because one unpaged answer for 16,000 pods is larger than the REST client accepts
// (64 MiB).
absl::StatusOr<std::vector<json>> ListAllPages(k8s::KubeClient* client,
                                               const k8s::ResourceDescriptor& r,
                                               const std::string& ns) {
  std::vector<json> items;
  k8s::ListOptions options;
  options.limit = 500;
  while (true) {
    auto page = client->List(r, ns, options);
    if (!page.ok()) return page.status();
    for (auto& o : page->items) items.push_back(std::move(o));
    if (page->continue_token.empty()) return items;
    options.continue_token = page->continue_token;
  }
}

void ParallelFor(size_t n, int threads, const std::function<void(size_t)>& fn) {
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (size_t i = next++; i < n; i = next++) fn(i);
    });
  }
  for (auto& t : pool) t.join();
}

}  // namespace coach::bench::controlplane
