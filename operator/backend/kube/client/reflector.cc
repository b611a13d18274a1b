#include "operator/backend/kube/client/reflector.h"

#include <algorithm>
#include <random>

#include "operator/backend/kube/client/errors.h"
#include "spdlog/spdlog.h"

namespace coach::kubeclient {

Reflector::Reflector(KubeClient* client, ResourceDescriptor resource, std::string ns,
                     ReflectorOptions options, ReflectorHandlers handlers)
    : client_(client),
      resource_(std::move(resource)),
      ns_(std::move(ns)),
      options_(std::move(options)),
      handlers_(std::move(handlers)) {}

void Reflector::Stop() {
  if (!stop_.exchange(true)) stopped_.Notify();
}

std::string Reflector::last_resource_version() const {
  absl::MutexLock l(&mu_);
  return resource_version_;
}

void Reflector::Sleep(absl::Duration d) { stopped_.WaitForNotificationWithTimeout(d); }

absl::Status Reflector::ListAll() {
  lists_.fetch_add(1);
  std::vector<nlohmann::json> items;
  ListOptions lo;
  lo.label_selector = options_.label_selector;
  lo.field_selector = options_.field_selector;
  lo.limit = options_.page_size;
  std::string rv;
  int paged_restarts = 0;
  while (true) {
    auto page = client_->List(resource_, ns_, lo);
    if (!page.ok()) {
      // An expired continue token (the list took longer than etcd's compaction window): start
      // over. Paged again first, since one unpaged answer for a large cluster can be bigger than
      // the client accepts (RestKubeClient cuts bodies at 64 MiB, about 12,000 pods); only when
      // fresh paged lists keep expiring, one unpaged list, as client-go's pager does at once.
      if (IsGone(page.status()) && !lo.continue_token.empty()) {
        items.clear();
        lo.continue_token.clear();
        if (++paged_restarts > kMaxPagedRestarts) lo.limit = 0;
        continue;
      }
      return page.status();
    }
    for (auto& item : page->items) {
      items.push_back(handlers_.transform ? handlers_.transform(std::move(item)) : std::move(item));
    }
    if (rv.empty() || lo.continue_token.empty()) rv = page->resource_version;
    if (page->continue_token.empty() || stop_.load()) break;
    lo.continue_token = page->continue_token;
  }
  if (stop_.load()) return absl::CancelledError("stopped");
  {
    absl::MutexLock l(&mu_);
    resource_version_ = rv;
  }
  if (handlers_.on_replace) handlers_.on_replace(items, rv);
  return absl::OkStatus();
}

void Reflector::Run() {
  std::mt19937_64 rng(std::random_device{}());
  absl::Duration backoff = options_.initial_backoff;
  auto wait = [&] {
    std::uniform_real_distribution<double> u(0.0, 0.5);
    Sleep(backoff * (1.0 + u(rng)));
    backoff = std::min(backoff * 2, options_.max_backoff);
  };
  bool need_list = true;
  while (!stop_.load()) {
    if (need_list) {
      absl::Status s = ListAll();
      if (stop_.load()) break;
      if (!s.ok()) {
        SPDLOG_WARN("reflector {}: list failed: {}", resource_.GroupResource(), s.ToString());
        if (handlers_.on_error) handlers_.on_error(s);
        wait();
        continue;
      }
      need_list = false;
      backoff = options_.initial_backoff;
    }
    WatchOptions wo;
    wo.label_selector = options_.label_selector;
    wo.field_selector = options_.field_selector;
    wo.resource_version = last_resource_version();
    wo.allow_bookmarks = true;
    wo.timeout_seconds = options_.watch_timeout_seconds;
    wo.stop = &stop_;
    watches_.fetch_add(1);
    absl::Status s = client_->Watch(resource_, ns_, wo, [&](const WatchEvent& ev) {
      if (!ev.resource_version.empty()) {
        absl::MutexLock l(&mu_);
        resource_version_ = ev.resource_version;
      }
      backoff = options_.initial_backoff;
      if (ev.type != WatchEventType::kBookmark && handlers_.on_event) handlers_.on_event(ev);
      return !stop_.load();
    });
    if (stop_.load()) break;
    if (s.ok()) continue;
    if (handlers_.on_error) handlers_.on_error(s);
    if (IsGone(s)) {
      SPDLOG_INFO("reflector {}: resourceVersion {} is gone; re-listing", resource_.GroupResource(),
                  wo.resource_version);
      need_list = true;
      continue;
    }
    SPDLOG_WARN("reflector {}: watch failed: {}", resource_.GroupResource(), s.ToString());
    wait();
  }
}

}  // namespace coach::kubeclient
