#include "operator/backend/kube/testing/fake_kube_client.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "operator/backend/kube/client/errors.h"
#include "operator/backend/kube/client/selector.h"

namespace coach::kubeclient::testing {

using nlohmann::json;

namespace {

std::string Now3339() {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone());
}

bool ValidName(const std::string& n) {
  if (n.empty() || n.size() > 253) return false;
  for (size_t i = 0; i < n.size(); ++i) {
    char c = n[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && c != '-' && c != '.') return false;
    if ((i == 0 || i + 1 == n.size()) && !alnum) return false;
  }
  return true;
}

absl::Status Invalid(const ResourceDescriptor& r, const std::string& name, const std::string& field,
                     const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(r.kind, " \"", name, "\" is invalid: ", field,
                                                 ": ", what, " [fields: ", field, "]"));
}

absl::Status Conflict(const ResourceDescriptor& r, const std::string& name) {
  return absl::AbortedError(
      absl::StrCat("Operation cannot be fulfilled on ", r.GroupResource(), " \"", name,
                   "\": the object has been modified; please apply your changes to the "
                   "latest version and try again"));
}

absl::Status NotFound(const ResourceDescriptor& r, const std::string& name) {
  return absl::NotFoundError(absl::StrCat(r.GroupResource(), " \"", name, "\" not found"));
}

}  // namespace

FakeKubeClient::FakeKubeClient(FakeKubeClientOptions options) : options_(options) {}
FakeKubeClient::~FakeKubeClient() { CloseWatches(); }

absl::Status FakeKubeClient::Begin(FakeCall call) {
  std::function<absl::Status(const FakeCall&)> hook;
  absl::Status injected;
  {
    std::lock_guard<std::mutex> l(mu_);
    calls_.push_back(call);
    auto it = fail_next_.find(call.method);
    if (it != fail_next_.end() && !it->second.empty()) {
      injected = it->second.front();
      it->second.erase(it->second.begin());
    }
    hook = hook_;
  }
  if (!injected.ok()) return injected;
  if (hook) return hook(call);
  return absl::OkStatus();
}

std::string FakeKubeClient::Key(const ResourceDescriptor& r, const std::string& ns,
                                const std::string& name) const {
  return absl::StrCat(r.GroupResource(), "|", r.namespaced ? ns : "", "|", name);
}

void FakeKubeClient::EmitLocked(const ResourceDescriptor& r, const std::string& ns,
                                WatchEventType type, const json& object) {
  history_.push_back(Event{rv_, r.GroupResource(), r.namespaced ? ns : "", type, object});
  while (history_.size() > options_.history_limit) {
    oldest_rv_ = history_.front().rv + 1;
    history_.pop_front();
  }
  cv_.notify_all();
}

absl::StatusOr<json> FakeKubeClient::Create(const ResourceDescriptor& r, const std::string& ns,
                                            const json& object) {
  absl::Status b = Begin({"Create", r.GroupResource(), ns, NameOf(object), object});
  if (!b.ok()) return b;
  if (!object.is_object())
    return absl::InvalidArgumentError("Create: the object is not a JSON object");
  json o = object;
  if (!o.contains("metadata") || !o["metadata"].is_object()) o["metadata"] = json::object();
  json& m = o["metadata"];
  std::lock_guard<std::mutex> l(mu_);
  std::string name = m.value("name", "");
  if (name.empty() && m.contains("generateName") && m["generateName"].is_string()) {
    static const char kAlnum[] = "bcdfghjklmnpqrstvwxz2456789";
    uint64_t x = static_cast<uint64_t>(rv_) * 2654435761u + static_cast<uint64_t>(uid_counter_);
    name = m["generateName"].get<std::string>();
    for (int i = 0; i < 5; ++i, x /= 27) name.push_back(kAlnum[x % 27]);
    m["name"] = name;
  }
  if (name.empty())
    return Invalid(r, name, "metadata.name", "Required value: name or generateName is required");
  if (!ValidName(name)) {
    return Invalid(r, name, "metadata.name",
                   absl::StrCat("Invalid value: \"", name,
                                "\": a lowercase RFC 1123 subdomain must consist of "
                                "lower case alphanumeric characters, '-' or '.'"));
  }
  if (r.namespaced) {
    if (ns.empty()) return absl::InvalidArgumentError("Create: a namespace is required");
    std::string obj_ns = m.value("namespace", "");
    if (!obj_ns.empty() && obj_ns != ns) {
      return absl::InvalidArgumentError(
          "the namespace of the provided object does not match the namespace sent on the request");
    }
    m["namespace"] = ns;
    if (options_.require_namespaces && !objects_.count(Key(resources::Namespaces(), "", ns))) {
      return absl::NotFoundError(absl::StrCat("namespaces \"", ns, "\" not found"));
    }
  } else {
    m.erase("namespace");
  }
  if (m.contains("resourceVersion") && !m["resourceVersion"].is_null() &&
      m["resourceVersion"] != "") {
    return absl::InvalidArgumentError("resourceVersion should not be set on objects to be created");
  }
  std::string key = Key(r, ns, name);
  if (objects_.count(key)) {
    return absl::AlreadyExistsError(
        absl::StrCat(r.GroupResource(), " \"", name, "\" already exists"));
  }
  ++rv_;
  ++uid_counter_;
  o["apiVersion"] = r.ApiVersion();
  if (!r.kind.empty()) o["kind"] = r.kind;
  m["uid"] = absl::StrFormat("00000000-0000-4000-8000-%012d", uid_counter_);
  m["resourceVersion"] = absl::StrCat(rv_);
  m["creationTimestamp"] = Now3339();
  m.erase("deletionTimestamp");
  if (r.has_status && !r.group.empty()) m["generation"] = 1;
  if (r.has_status) o.erase("status");
  objects_[key] = o;
  EmitLocked(r, ns, WatchEventType::kAdded, o);
  return o;
}

absl::StatusOr<json> FakeKubeClient::Get(const ResourceDescriptor& r, const std::string& ns,
                                         const std::string& name) {
  absl::Status b = Begin({"Get", r.GroupResource(), ns, name, nullptr});
  if (!b.ok()) return b;
  std::lock_guard<std::mutex> l(mu_);
  auto it = objects_.find(Key(r, ns, name));
  if (it == objects_.end()) return NotFound(r, name);
  return it->second;
}

absl::StatusOr<ListResult> FakeKubeClient::List(const ResourceDescriptor& r, const std::string& ns,
                                                const ListOptions& options) {
  absl::Status b = Begin({"List", r.GroupResource(), ns, "", nullptr});
  if (!b.ok()) return b;
  auto labels = Selector::ParseLabels(options.label_selector);
  if (!labels.ok()) return labels.status();
  auto fields = Selector::ParseFields(options.field_selector);
  if (!fields.ok()) return fields.status();
  std::lock_guard<std::mutex> l(mu_);
  std::string prefix =
      absl::StrCat(r.GroupResource(), "|", r.namespaced && !ns.empty() ? ns + "|" : "");
  auto it = objects_.lower_bound(prefix);
  if (!options.continue_token.empty()) {
    std::vector<std::string> parts =
        absl::StrSplit(options.continue_token, absl::MaxSplits(':', 1));
    int64_t token_rv = 0;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &token_rv)) {
      return absl::InvalidArgumentError("continue key is not valid");
    }
    if (token_rv < oldest_rv_ - 1) return GoneError("The provided continue parameter is too old");
    it = objects_.upper_bound(parts[1]);
  }
  ListResult out;
  out.resource_version = absl::StrCat(rv_);
  for (; it != objects_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    if (!labels->Matches(it->second) || !fields->Matches(it->second)) continue;
    if (options.limit > 0 && static_cast<int64_t>(out.items.size()) == options.limit) {
      auto prev = std::prev(it);
      out.continue_token = absl::StrCat(rv_, ":", prev->first);
      break;
    }
    out.items.push_back(it->second);
  }
  return out;
}

absl::Status FakeKubeClient::Watch(const ResourceDescriptor& r, const std::string& ns,
                                   const WatchOptions& options, const WatchHandler& handler) {
  absl::Status b = Begin({"Watch", r.GroupResource(), ns, "", nullptr});
  if (!b.ok()) return b;
  auto labels = Selector::ParseLabels(options.label_selector);
  if (!labels.ok()) return labels.status();
  auto fields = Selector::ParseFields(options.field_selector);
  if (!fields.ok()) return fields.status();
  const std::string res = r.GroupResource();
  const std::string want_ns = r.namespaced ? ns : "";
  auto matches = [&](const std::string& e_res, const std::string& e_ns, const json& o) {
    return e_res == res && (want_ns.empty() || e_ns == want_ns) && labels->Matches(o) &&
           fields->Matches(o);
  };
  const absl::Time deadline = options.timeout_seconds > 0
                                  ? absl::Now() + absl::Seconds(options.timeout_seconds)
                                  : absl::InfiniteFuture();

  std::unique_lock<std::mutex> l(mu_);
  ++open_watches_;
  struct Closer {
    FakeKubeClient* self;
    ~Closer() { --self->open_watches_; }
  } closer{this};
  const int64_t epoch = close_epoch_;
  int64_t cursor = 0;
  std::vector<WatchEvent> batch;
  if (options.resource_version.empty() || options.resource_version == "0") {
    cursor = rv_;
    std::string prefix = absl::StrCat(res, "|", want_ns.empty() ? "" : want_ns + "|");
    for (auto it = objects_.lower_bound(prefix);
         it != objects_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
      if (!labels->Matches(it->second) || !fields->Matches(it->second)) continue;
      batch.push_back(
          WatchEvent{WatchEventType::kAdded, it->second, ResourceVersionOf(it->second)});
    }
  } else if (!absl::SimpleAtoi(options.resource_version, &cursor)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid resource version \"", options.resource_version, "\""));
  }
  int64_t bookmarks_seen = bookmark_seq_;
  while (true) {
    if (cursor < oldest_rv_ - 1) {
      return GoneError(
          absl::StrCat("too old resource version: ", cursor, " (", oldest_rv_ - 1, ")"));
    }
    for (const Event& e : history_) {
      if (e.rv <= cursor) continue;
      cursor = e.rv;
      if (matches(e.resource, e.ns, e.object)) {
        batch.push_back(WatchEvent{e.type, e.object, ResourceVersionOf(e.object)});
      }
    }
    if (bookmark_seq_ != bookmarks_seen) {
      bookmarks_seen = bookmark_seq_;
      if (options.allow_bookmarks && bookmark_resources_.count(res)) {
        cursor = std::max(cursor, rv_);
        json bm = {{"kind", r.kind},
                   {"apiVersion", r.ApiVersion()},
                   {"metadata", {{"resourceVersion", absl::StrCat(rv_)}}}};
        batch.push_back(WatchEvent{WatchEventType::kBookmark, bm, absl::StrCat(rv_)});
      }
      bookmark_resources_.clear();
    }
    if (!batch.empty()) {
      std::vector<WatchEvent> deliver;
      deliver.swap(batch);
      l.unlock();
      for (const WatchEvent& ev : deliver) {
        if (options.stop != nullptr && options.stop->load()) {
          l.lock();
          return absl::CancelledError("watch stopped");
        }
        if (!handler(ev)) {
          l.lock();
          return absl::OkStatus();
        }
      }
      l.lock();
      continue;
    }
    if (options.stop != nullptr && options.stop->load())
      return absl::CancelledError("watch stopped");
    if (close_epoch_ != epoch || absl::Now() >= deadline) return absl::OkStatus();
    cv_.wait_for(l, std::chrono::milliseconds(20));
  }
}

absl::StatusOr<json> FakeKubeClient::WriteLocked(const ResourceDescriptor& r, const std::string& ns,
                                                 const std::string& name, json desired,
                                                 bool status_only,
                                                 const std::string& precondition_rv) {
  auto it = objects_.find(Key(r, ns, name));
  if (it == objects_.end()) return NotFound(r, name);
  const json& cur = it->second;
  if (!precondition_rv.empty() && precondition_rv != ResourceVersionOf(cur))
    return Conflict(r, name);
  if (!desired.is_object()) return absl::InvalidArgumentError("the object is not a JSON object");
  std::string desired_uid = UidOf(desired);
  if (!desired_uid.empty() && desired_uid != UidOf(cur)) {
    return absl::AbortedError(absl::StrCat("Precondition failed: UID in precondition: ",
                                           desired_uid, ", UID in object meta: ", UidOf(cur)));
  }
  json next;
  if (status_only) {
    next = cur;
    if (desired.contains("status"))
      next["status"] = desired["status"];
    else
      next.erase("status");
  } else {
    next = desired;
    if (!next.contains("metadata") || !next["metadata"].is_object())
      next["metadata"] = json::object();
    json& m = next["metadata"];
    const json& cm = cur["metadata"];
    std::string desired_ns = m.value("namespace", "");
    if (r.namespaced && !desired_ns.empty() && desired_ns != ns) {
      return absl::InvalidArgumentError(
          "the namespace of the provided object does not match the namespace sent on the request");
    }
    if (m.value("name", "") != name) {
      return absl::InvalidArgumentError(
          "the name of the object does not match the name on the URL");
    }
    for (const char* k :
         {"uid", "creationTimestamp", "namespace", "deletionTimestamp", "generation"}) {
      if (cm.contains(k))
        m[k] = cm[k];
      else
        m.erase(k);
    }
    next["apiVersion"] = cur.value("apiVersion", r.ApiVersion());
    if (cur.contains("kind")) next["kind"] = cur["kind"];
    if (r.has_status) {
      if (cur.contains("status"))
        next["status"] = cur["status"];
      else
        next.erase("status");
    }
    if (cm.contains("generation") && next.value("spec", json()) != cur.value("spec", json())) {
      m["generation"] = cm["generation"].get<int64_t>() + 1;
    }
  }
  next["metadata"]["resourceVersion"] = ResourceVersionOf(cur);
  if (next == cur) return cur;  // a no-op write does not bump the resourceVersion
  ++rv_;
  next["metadata"]["resourceVersion"] = absl::StrCat(rv_);
  const json& nm = next["metadata"];
  bool finalizers =
      nm.contains("finalizers") && nm["finalizers"].is_array() && !nm["finalizers"].empty();
  if (nm.contains("deletionTimestamp") && !finalizers) {
    objects_.erase(it);
    EmitLocked(r, ns, WatchEventType::kDeleted, next);
    return next;
  }
  it->second = next;
  EmitLocked(r, ns, WatchEventType::kModified, next);
  return next;
}

absl::StatusOr<json> FakeKubeClient::Update(const ResourceDescriptor& r, const std::string& ns,
                                            const json& object) {
  absl::Status b = Begin({"Update", r.GroupResource(), ns, NameOf(object), object});
  if (!b.ok()) return b;
  std::string name = NameOf(object);
  if (name.empty()) return absl::InvalidArgumentError("Update: metadata.name is empty");
  std::lock_guard<std::mutex> l(mu_);
  return WriteLocked(r, ns, name, object, false, ResourceVersionOf(object));
}

absl::StatusOr<json> FakeKubeClient::UpdateStatus(const ResourceDescriptor& r,
                                                  const std::string& ns, const json& object) {
  absl::Status b = Begin({"UpdateStatus", r.GroupResource(), ns, NameOf(object), object});
  if (!b.ok()) return b;
  if (!r.has_status)
    return absl::NotFoundError(absl::StrCat(r.GroupResource(), " has no status subresource"));
  std::string name = NameOf(object);
  if (name.empty()) return absl::InvalidArgumentError("UpdateStatus: metadata.name is empty");
  std::lock_guard<std::mutex> l(mu_);
  return WriteLocked(r, ns, name, object, true, ResourceVersionOf(object));
}

absl::StatusOr<json> FakeKubeClient::ApplyPatch(const json& current, PatchType type,
                                                const json& patch) const {
  try {
    if (type == PatchType::kJson) {
      if (!patch.is_array()) return absl::InvalidArgumentError("a JSON patch must be an array");
      return current.patch(patch);
    }
    if (!patch.is_object())
      return absl::InvalidArgumentError("a merge patch must be a JSON object");
    json out = current;
    out.merge_patch(patch);
    return out;
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("the patch could not be applied: ", e.what()));
  }
}

absl::StatusOr<json> FakeKubeClient::Patch(const ResourceDescriptor& r, const std::string& ns,
                                           const std::string& name, PatchType type,
                                           const json& patch) {
  absl::Status b = Begin({"Patch", r.GroupResource(), ns, name, patch});
  if (!b.ok()) return b;
  std::lock_guard<std::mutex> l(mu_);
  auto it = objects_.find(Key(r, ns, name));
  if (it == objects_.end()) return NotFound(r, name);
  auto next = ApplyPatch(it->second, type, patch);
  if (!next.ok()) return next.status();
  // A resourceVersion in the patch is a precondition (the apiserver compares it after applying).
  std::string want_rv = ResourceVersionOf(*next);
  std::string precondition = want_rv != ResourceVersionOf(it->second) ? want_rv : "";
  if (!precondition.empty()) return Conflict(r, name);
  return WriteLocked(r, ns, name, *next, false, precondition);
}

absl::StatusOr<json> FakeKubeClient::PatchStatus(const ResourceDescriptor& r, const std::string& ns,
                                                 const std::string& name, PatchType type,
                                                 const json& patch) {
  absl::Status b = Begin({"PatchStatus", r.GroupResource(), ns, name, patch});
  if (!b.ok()) return b;
  if (!r.has_status)
    return absl::NotFoundError(absl::StrCat(r.GroupResource(), " has no status subresource"));
  std::lock_guard<std::mutex> l(mu_);
  auto it = objects_.find(Key(r, ns, name));
  if (it == objects_.end()) return NotFound(r, name);
  auto next = ApplyPatch(it->second, type, patch);
  if (!next.ok()) return next.status();
  if (ResourceVersionOf(*next) != ResourceVersionOf(it->second)) return Conflict(r, name);
  return WriteLocked(r, ns, name, *next, true, "");
}

absl::StatusOr<json> FakeKubeClient::GetStatus(const ResourceDescriptor& r, const std::string& ns,
                                               const std::string& name) {
  absl::Status b = Begin({"GetStatus", r.GroupResource(), ns, name, nullptr});
  if (!b.ok()) return b;
  if (!r.has_status)
    return absl::NotFoundError(absl::StrCat(r.GroupResource(), " has no status subresource"));
  std::lock_guard<std::mutex> l(mu_);
  auto it = objects_.find(Key(r, ns, name));
  if (it == objects_.end()) return NotFound(r, name);
  return it->second;
}

absl::Status FakeKubeClient::Delete(const ResourceDescriptor& r, const std::string& ns,
                                    const std::string& name, const DeleteOptions& options) {
  absl::Status b = Begin({"Delete", r.GroupResource(), ns, name, DeleteOptionsBody(options)});
  if (!b.ok()) return b;
  std::lock_guard<std::mutex> l(mu_);
  auto it = objects_.find(Key(r, ns, name));
  if (it == objects_.end()) return NotFound(r, name);
  json& o = it->second;
  if (options.precondition_uid.has_value() && *options.precondition_uid != UidOf(o)) {
    return absl::AbortedError(
        absl::StrCat("Precondition failed: UID in precondition: ", *options.precondition_uid,
                     ", UID in object meta: ", UidOf(o)));
  }
  if (options.precondition_resource_version.has_value() &&
      *options.precondition_resource_version != ResourceVersionOf(o)) {
    return absl::AbortedError(
        absl::StrCat("Precondition failed: ResourceVersion in precondition: ",
                     *options.precondition_resource_version,
                     ", ResourceVersion in object meta: ", ResourceVersionOf(o)));
  }
  const json& m = o["metadata"];
  bool finalizers =
      m.contains("finalizers") && m["finalizers"].is_array() && !m["finalizers"].empty();
  ++rv_;
  if (finalizers) {
    if (!m.contains("deletionTimestamp")) o["metadata"]["deletionTimestamp"] = Now3339();
    o["metadata"]["resourceVersion"] = absl::StrCat(rv_);
    EmitLocked(r, ns, WatchEventType::kModified, o);
    return absl::OkStatus();
  }
  json gone = o;
  gone["metadata"]["resourceVersion"] = absl::StrCat(rv_);
  objects_.erase(it);
  EmitLocked(r, ns, WatchEventType::kDeleted, gone);
  return absl::OkStatus();
}

absl::Status FakeKubeClient::StreamLogs(const std::string& ns, const std::string& pod,
                                        const LogOptions& options, const LogHandler& handler) {
  absl::Status b = Begin({"StreamLogs", "pods", ns, pod, nullptr});
  if (!b.ok()) return b;
  std::unique_lock<std::mutex> l(mu_);
  std::string key = Key(resources::Pods(), ns, pod);
  auto it = objects_.find(key);
  if (it == objects_.end()) return NotFound(resources::Pods(), pod);
  std::vector<std::string> containers;
  const json& spec = it->second.value("spec", json::object());
  if (spec.contains("containers") && spec["containers"].is_array()) {
    for (const auto& c : spec["containers"]) containers.push_back(c.value("name", ""));
  }
  std::string container = options.container;
  if (container.empty()) {
    if (containers.size() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("a container name must be specified for pod ", pod));
    }
    container = containers[0];
  } else if (std::find(containers.begin(), containers.end(), container) == containers.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("container ", container, " is not valid for pod ", pod));
  }
  std::string log_key = absl::StrCat(ns, "/", pod, "/", container);
  std::string text = logs_[log_key];
  if (options.tail_lines.has_value()) {
    int64_t n = *options.tail_lines;
    size_t pos = text.size();
    if (pos > 0 && text[pos - 1] == '\n') --pos;
    while (n > 0 && pos > 0) {
      size_t nl = text.rfind('\n', pos - 1);
      if (nl == std::string::npos) {
        pos = 0;
        break;
      }
      pos = nl;
      if (--n > 0) continue;
      ++pos;
    }
    if (*options.tail_lines <= 0) pos = text.size();
    text = text.substr(pos);
  }
  size_t sent = logs_[log_key].size();
  const int64_t epoch = close_epoch_;
  l.unlock();
  if (!text.empty() && !handler(text)) return absl::OkStatus();
  if (!options.follow) return absl::OkStatus();
  l.lock();
  while (true) {
    if (options.stop != nullptr && options.stop->load())
      return absl::CancelledError("log stream stopped");
    if (close_epoch_ != epoch || !objects_.count(key)) return absl::OkStatus();
    const std::string& all = logs_[log_key];
    if (all.size() > sent) {
      std::string more = all.substr(sent);
      sent = all.size();
      l.unlock();
      if (!handler(more)) return absl::OkStatus();
      l.lock();
      continue;
    }
    cv_.wait_for(l, std::chrono::milliseconds(20));
  }
}

void FakeKubeClient::FailNext(const std::string& method, absl::Status status, int times) {
  std::lock_guard<std::mutex> l(mu_);
  for (int i = 0; i < times; ++i) fail_next_[method].push_back(status);
}

void FakeKubeClient::SetErrorHook(std::function<absl::Status(const FakeCall&)> hook) {
  std::lock_guard<std::mutex> l(mu_);
  hook_ = std::move(hook);
}

std::vector<FakeCall> FakeKubeClient::calls() const {
  std::lock_guard<std::mutex> l(mu_);
  return calls_;
}

std::vector<FakeCall> FakeKubeClient::calls(const std::string& method) const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<FakeCall> out;
  for (const auto& c : calls_) {
    if (c.method == method) out.push_back(c);
  }
  return out;
}

void FakeKubeClient::ClearCalls() {
  std::lock_guard<std::mutex> l(mu_);
  calls_.clear();
}

void FakeKubeClient::SendBookmark(const ResourceDescriptor& resource) {
  std::lock_guard<std::mutex> l(mu_);
  bookmark_resources_.insert(resource.GroupResource());
  ++bookmark_seq_;
  cv_.notify_all();
}

void FakeKubeClient::CompactHistory() {
  std::lock_guard<std::mutex> l(mu_);
  history_.clear();
  oldest_rv_ = rv_ + 1;
  cv_.notify_all();
}

void FakeKubeClient::CloseWatches() {
  std::lock_guard<std::mutex> l(mu_);
  ++close_epoch_;
  cv_.notify_all();
}

void FakeKubeClient::SetLogs(const std::string& ns, const std::string& pod,
                             const std::string& container, const std::string& text) {
  std::lock_guard<std::mutex> l(mu_);
  logs_[absl::StrCat(ns, "/", pod, "/", container)] = text;
  cv_.notify_all();
}

void FakeKubeClient::AppendLogs(const std::string& ns, const std::string& pod,
                                const std::string& container, const std::string& text) {
  std::lock_guard<std::mutex> l(mu_);
  logs_[absl::StrCat(ns, "/", pod, "/", container)] += text;
  cv_.notify_all();
}

std::string FakeKubeClient::CurrentResourceVersion() const {
  std::lock_guard<std::mutex> l(mu_);
  return absl::StrCat(rv_);
}

int FakeKubeClient::open_watches() const {
  std::lock_guard<std::mutex> l(mu_);
  return open_watches_;
}

}  // namespace coach::kubeclient::testing
