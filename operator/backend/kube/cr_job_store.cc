#include "operator/backend/kube/cr_job_store.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "api/v1/codec/job_codec.h"
#include "api/v1/defaults.h"
#include "api/v1/kinds.h"
#include "common/status_macros.h"
#include "operator/backend/kube/client/errors.h"

namespace coach::backend::kube {
namespace {

namespace k8s = ::coach::kubeclient;
using nlohmann::json;

constexpr char kTokenPrefix[] = "crjs1";

int NumKinds() { return static_cast<int>(api::v1::AllKinds().size()); }

const api::v1::KindInfo& KindAt(int i) { return api::v1::AllKinds()[static_cast<size_t>(i)]; }

k8s::ResourceDescriptor Descriptor(int i) {
  const api::v1::KindInfo& info = KindAt(i);
  const std::string_view version = info.api_version.substr(info.api_version.find('/') + 1);
  return {std::string(info.group),
          std::string(version),
          std::string(info.plural),
          std::string(info.name),
          true,
          true};
}

std::string KindName(int i) { return std::string(KindAt(i).name); }

int KindIndexOf(api::v1::JobKind kind) {
  for (int i = 0; i < NumKinds(); ++i) {
    if (KindAt(i).kind == kind) return i;
  }
  return -1;
}

// "TFJob", "tfjobs" or "tfjob" -> index; -1 when none.
int KindIndexByWord(absl::string_view word) {
  for (int i = 0; i < NumKinds(); ++i) {
    const api::v1::KindInfo& info = KindAt(i);
    if (absl::EqualsIgnoreCase(word, std::string(info.name)) ||
        absl::EqualsIgnoreCase(word, std::string(info.plural))) {
      return i;
    }
  }
  return -1;
}

// The kind a key names and its plain name: the key's own kind (a stored job's key, the
// controller's), else the user's spelling "<kind>/<name>" (as kubectl's "tfjobs/x"); nullopt
// for a plain name without a kind, which the kind rule resolves. The index is -1 for a word
// that names no kind.
std::optional<std::pair<int, std::string>> KindOfKey(const JobKey& key) {
  if (!key.kind.empty()) return std::make_pair(KindIndexByWord(key.kind), key.name);
  const size_t slash = key.name.find('/');
  if (slash == std::string::npos) return std::nullopt;
  return std::make_pair(KindIndexByWord(absl::string_view(key.name).substr(0, slash)),
                        key.name.substr(slash + 1));
}

absl::Time ParseTimeOr(const json& v, absl::Time fallback) {
  if (!v.is_string()) return fallback;
  absl::Time t;
  std::string err;
  if (absl::ParseTime(absl::RFC3339_full, v.get<std::string>(), &t, &err)) return t;
  return fallback;
}

std::string Str(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

JobKey KeyOfObject(const json& object) { return {k8s::NamespaceOf(object), k8s::NameOf(object)}; }

struct Cursor {
  std::string ns;
  std::string name;
  int kind = -1;
};

std::string EncodeCursor(const JobKey& key, int kind) {
  return absl::WebSafeBase64Escape(absl::StrCat(kTokenPrefix, std::string(1, '\0'), key.namespace_,
                                                std::string(1, '\0'), key.name,
                                                std::string(1, '\0'), kind));
}

absl::StatusOr<Cursor> DecodeCursor(const std::string& token) {
  std::string raw;
  const absl::Status bad = absl::InvalidArgumentError("page_token: malformed");
  if (!absl::WebSafeBase64Unescape(token, &raw)) return bad;
  std::vector<std::string> parts = absl::StrSplit(raw, '\0');
  if (parts.size() != 4 || parts[0] != kTokenPrefix) return bad;
  Cursor c{parts[1], parts[2], -1};
  if (!absl::SimpleAtoi(parts[3], &c.kind) || c.kind < 0 || c.kind >= NumKinds()) return bad;
  return c;
}

bool HasStatus(const api::v1::TrainingJob& job) {
  return job.has_status() && job.status().ByteSizeLong() > 0;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CrJobStore>> CrJobStore::Create(k8s::KubeClient* client,
                                                               CrJobStoreOptions options) {
  if (client == nullptr) return absl::InvalidArgumentError("CrJobStore: client is null");
  if (options.list_chunk < 0) return absl::InvalidArgumentError("CrJobStore: list_chunk < 0");
  if (options.max_events_per_append < 1 || options.max_events_listed < 1) {
    return absl::InvalidArgumentError("CrJobStore: event bounds must be positive");
  }
  for (const std::string& ns : options.namespaces) {
    if (ns.empty()) return absl::InvalidArgumentError("CrJobStore: empty namespace in namespaces");
  }
  EventRecorderOptions ro = options.event_recorder;
  ro.component = options.event_component;
  ro.max_message_bytes = options.max_event_message_bytes;
  ASSIGN_OR_RETURN(std::unique_ptr<EventRecorder> recorder,
                   EventRecorder::Create(client, std::move(ro)));
  auto store = std::unique_ptr<CrJobStore>(new CrJobStore(client, std::move(options)));
  store->recorder_ = std::move(recorder);
  return store;
}

CrJobStore::CrJobStore(k8s::KubeClient* client, CrJobStoreOptions options)
    : client_(client), options_(std::move(options)) {}

CrJobStore::~CrJobStore() {
  StopWatching();
  recorder_->Stop(absl::Seconds(2));
}

bool CrJobStore::FlushEvents(absl::Duration timeout) { return recorder_->Flush(timeout); }

void CrJobStore::StopEvents(absl::Duration grace) { recorder_->Stop(grace); }

EventRecorder::Counts CrJobStore::EventCounts() const { return recorder_->counts(); }

void CrJobStore::ExportEventMetrics(::coach::metrics::Registry* registry) {
  recorder_->ExportMetrics(registry);
}

absl::StatusOr<api::v1::TrainingJob> CrJobStore::Decode(const json& object) const {
  absl::StatusOr<api::v1::TrainingJob> job = api::v1::codec::JobFromJson(object);
  if (!job.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", k8s::NamespaceOf(object), "/", k8s::NameOf(object),
                     " as stored cannot be read: ", job.status().message()));
  }
  if (options_.apply_defaults) api::v1::SetDefaults(&*job);
  return job;
}

void CrJobStore::Remember(const JobKey& key, int kind, const std::string& uid) {
  watch_.Remember(key, kind, uid);
}

void CrJobStore::Forget(const JobKey& key, int kind) { watch_.Forget(key, kind); }

std::map<int, std::string> CrJobStore::KnownKinds(const JobKey& key) const {
  return watch_.KnownKinds(key);
}

absl::StatusOr<CrJobStore::Found> CrJobStore::Resolve(const JobKey& key) {
  if (key.namespace_.empty() || key.name.empty()) {
    return absl::InvalidArgumentError("job key needs a namespace and a name");
  }
  // The key names its kind: that kind only.
  if (std::optional<std::pair<int, std::string>> named = KindOfKey(key); named.has_value()) {
    const auto& [kind, name] = *named;
    if (kind < 0) {
      const std::string word = key.kind.empty() ? key.name.substr(0, key.name.find('/')) : key.kind;
      return absl::InvalidArgumentError(absl::StrCat(
          "name: \"", word,
          "\" is not a kubeflow.org/v1 kind (PyTorchJob, TFJob, XGBoostJob, MPIJob, PaddleJob, "
          "JAXJob)"));
    }
    ASSIGN_OR_RETURN(json object, client_->Get(Descriptor(kind), key.namespace_, name));
    Remember({key.namespace_, name}, kind, k8s::UidOf(object));
    return Found{kind, std::move(object)};
  }

  // The watch's index, when it is complete and names exactly one kind: one GET.
  if (std::optional<int> hint = watch_.OnlyKind(key); hint.has_value()) {
    absl::StatusOr<json> object = client_->Get(Descriptor(*hint), key.namespace_, key.name);
    if (object.ok()) return Found{*hint, std::move(object).value()};
    if (!absl::IsNotFound(object.status())) return object.status();
  }

  // Every kind.
  std::vector<Found> found;
  for (int kind = 0; kind < NumKinds(); ++kind) {
    absl::StatusOr<json> object = client_->Get(Descriptor(kind), key.namespace_, key.name);
    if (absl::IsNotFound(object.status())) {
      Forget(key, kind);
      continue;
    }
    if (!object.ok()) return object.status();
    Remember(key, kind, k8s::UidOf(*object));
    found.push_back({kind, std::move(object).value()});
  }
  if (found.empty()) {
    return absl::NotFoundError(absl::StrCat("job ", key.namespace_, "/", key.name, " not found"));
  }
  if (found.size() > 1) {
    std::vector<std::string> kinds, qualified;
    for (const Found& f : found) {
      kinds.push_back(KindName(f.kind));
      qualified.push_back(absl::StrCat(std::string(KindAt(f.kind).plural), "/", key.name));
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", key.namespace_, "/", key.name, " exists as ", absl::StrJoin(kinds, " and "),
        "; name the kind: ", absl::StrJoin(qualified, " or ")));
  }
  return std::move(found.front());
}

absl::StatusOr<api::v1::TrainingJob> CrJobStore::Create(const api::v1::TrainingJob& job) {
  const JobKey key = store::WithoutKind(store::KeyOf(job));
  if (key.namespace_.empty()) return absl::InvalidArgumentError("metadata.namespace: required");
  if (key.name.empty()) return absl::InvalidArgumentError("metadata.name: required");
  const int kind = KindIndexOf(job.kind());
  if (kind < 0)
    return absl::InvalidArgumentError("kind: not one of the kubeflow.org/v1 kinds or TrainJob");
  if (!options_.namespaces.empty() &&
      std::find(options_.namespaces.begin(), options_.namespaces.end(), key.namespace_) ==
          options_.namespaces.end()) {
    // Stored there, it would never be reconciled: no watch of this operator covers it.
    return absl::FailedPreconditionError(
        absl::StrCat("metadata.namespace: \"", key.namespace_,
                     "\" is not watched by this operator (--namespaces ",
                     absl::StrJoin(options_.namespaces, ","), ")"));
  }

  // Checked: a job no manifest could give is refused here rather than written in part.
  ASSIGN_OR_RETURN(json manifest, api::v1::codec::JobToJsonChecked(job));
  json status = manifest.contains("status") ? manifest["status"] : json::object();
  manifest.erase("status");
  if (manifest.contains("metadata") && manifest["metadata"].is_object()) {
    json& md = manifest["metadata"];
    for (const char* field : {"resourceVersion", "uid", "creationTimestamp", "generation",
                              "deletionTimestamp", "managedFields", "selfLink"}) {
      md.erase(field);
    }
  }
  const k8s::ResourceDescriptor resource = Descriptor(kind);
  ASSIGN_OR_RETURN(json created, client_->Create(resource, key.namespace_, manifest));
  Remember(key, kind, k8s::UidOf(created));
  if (HasStatus(job)) {
    // The server drops .status on create (status subresource): write it separately.
    json with_status = created;
    with_status["status"] = std::move(status);
    absl::StatusOr<json> written = client_->UpdateStatus(resource, key.namespace_, with_status);
    if (written.ok()) {
      created = std::move(written).value();
    } else {
      spdlog::warn("job {}/{}: created, but its initial status was not written: {}", key.namespace_,
                   key.name, written.status().ToString());
    }
  }
  return Decode(created);
}

absl::StatusOr<api::v1::TrainingJob> CrJobStore::Get(const JobKey& key) {
  ASSIGN_OR_RETURN(Found found, Resolve(key));
  return Decode(found.object);
}

absl::StatusOr<api::v1::TrainingJob> CrJobStore::GetCached(const JobKey& key) {
  std::optional<json> cached = watch_.Cached(key, KindOfKey(key));
  if (!cached.has_value()) return Get(key);
  return Decode(*cached);
}

void CrJobStore::AwaitWatch(const JobKey& key, int kind, const std::string& resource_version) {
  watch_.AwaitWatch(key, kind, resource_version);
}

absl::StatusOr<store::ListResult> CrJobStore::List(const store::ListOptions& options) {
  if (options.page_size < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_size: must be >= 0, got ", options.page_size));
  }
  std::optional<Cursor> cursor;
  if (!options.page_token.empty()) {
    ASSIGN_OR_RETURN(Cursor c, DecodeCursor(options.page_token));
    cursor = std::move(c);
  }
  std::vector<std::string> namespaces;
  if (!options.namespace_.empty()) {
    if (!options_.namespaces.empty() &&
        std::find(options_.namespaces.begin(), options_.namespaces.end(), options.namespace_) ==
            options_.namespaces.end()) {
      return store::ListResult{};
    }
    namespaces.push_back(options.namespace_);
  } else if (!options_.namespaces.empty()) {
    namespaces = options_.namespaces;
  } else {
    namespaces.push_back("");
  }
  std::vector<std::string> selector;
  for (const auto& [k, v] : options.label_selector) selector.push_back(absl::StrCat(k, "=", v));

  struct Entry {
    JobKey key;
    int kind;
    json object;
  };
  std::vector<Entry> entries;
  for (int kind = 0; kind < NumKinds(); ++kind) {
    for (const std::string& ns : namespaces) {
      k8s::ListOptions lo;
      lo.label_selector = absl::StrJoin(selector, ",");
      lo.limit = options_.list_chunk;
      do {
        absl::StatusOr<k8s::ListResult> page = client_->List(Descriptor(kind), ns, lo);
        if (absl::IsNotFound(page.status())) break;  // this kind's CRD is not installed
        if (!page.ok()) return page.status();
        for (json& item : page->items) {
          JobKey key = KeyOfObject(item);
          if (cursor.has_value() && std::make_tuple(key.namespace_, key.name, kind) <=
                                        std::make_tuple(cursor->ns, cursor->name, cursor->kind)) {
            continue;
          }
          entries.push_back({std::move(key), kind, std::move(item)});
        }
        lo.continue_token = page->continue_token;
      } while (!lo.continue_token.empty());
    }
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.key.namespace_, a.key.name, a.kind) <
           std::tie(b.key.namespace_, b.key.name, b.kind);
  });
  store::ListResult result;
  const size_t n = options.page_size == 0
                       ? entries.size()
                       : std::min(entries.size(), static_cast<size_t>(options.page_size));
  for (size_t i = 0; i < n; ++i) {
    Entry& e = entries[i];
    if (!e.object.contains("kind")) e.object["kind"] = KindName(e.kind);
    if (!e.object.contains("apiVersion"))
      e.object["apiVersion"] = std::string(KindAt(e.kind).api_version);
    absl::StatusOr<api::v1::TrainingJob> job = Decode(e.object);
    if (!job.ok()) {
      // One unreadable object must not hide every other job.
      spdlog::warn("list: skipping {}: {}", KindName(e.kind), job.status().ToString());
      continue;
    }
    result.jobs.push_back(std::move(job).value());
  }
  if (n < entries.size() && n > 0)
    result.next_page_token = EncodeCursor(entries[n - 1].key, entries[n - 1].kind);
  return result;
}

absl::Status CrJobStore::ConflictOrMissing(int kind, const JobKey& key, absl::Status conflict) {
  // The apiserver answers a conditional PUT of a missing object with 409 too.
  absl::StatusOr<json> current = client_->Get(Descriptor(kind), key.namespace_, key.name);
  if (absl::IsNotFound(current.status())) return current.status();
  return conflict;
}

absl::StatusOr<api::v1::TrainingJob> CrJobStore::Update(const api::v1::TrainingJob& job) {
  return Write(job, /*status=*/false);
}

absl::StatusOr<api::v1::TrainingJob> CrJobStore::UpdateStatus(const api::v1::TrainingJob& job) {
  return Write(job, /*status=*/true);
}

absl::StatusOr<api::v1::TrainingJob> CrJobStore::Write(const api::v1::TrainingJob& job,
                                                       bool status) {
  const JobKey key = store::WithoutKind(store::KeyOf(job));
  if (job.metadata().resource_version().empty()) {
    return absl::InvalidArgumentError(absl::StrCat("metadata.resourceVersion: required for ",
                                                   status ? "a status update" : "an update"));
  }
  const int kind = KindIndexOf(job.kind());
  if (kind < 0)
    return absl::InvalidArgumentError("kind: not one of the kubeflow.org/v1 kinds or TrainJob");
  ASSIGN_OR_RETURN(json manifest, api::v1::codec::JobToJsonChecked(job));
  // PUT of the object ignores .status and PUT of /status ignores the rest: send what counts.
  if (!status) manifest.erase("status");
  if (status && !manifest.contains("status")) manifest["status"] = json::object();
  absl::StatusOr<json> updated =
      status ? client_->UpdateStatus(Descriptor(kind), key.namespace_, manifest)
             : client_->Update(Descriptor(kind), key.namespace_, manifest);
  if (absl::IsAborted(updated.status())) {
    AwaitWatch(key, kind, "");
    return ConflictOrMissing(kind, key, updated.status());
  }
  if (!updated.ok()) return updated.status();
  AwaitWatch(key, kind, k8s::ResourceVersionOf(*updated));
  Remember(key, kind, k8s::UidOf(*updated));
  return Decode(*updated);
}

absl::Status CrJobStore::Delete(const JobKey& key, std::optional<std::string> resource_version) {
  ASSIGN_OR_RETURN(Found found, Resolve(key));
  k8s::DeleteOptions options;
  options.precondition_resource_version = std::move(resource_version);
  options.propagation = options_.delete_propagation;
  const std::string name = k8s::NameOf(found.object);
  RETURN_IF_ERROR(client_->Delete(Descriptor(found.kind), key.namespace_, name, options));
  Forget({key.namespace_, name}, found.kind);
  return absl::OkStatus();
}

absl::StatusOr<std::pair<int, std::string>> CrJobStore::KindAndUid(const JobKey& key) {
  if (auto known = watch_.KnownKindAndUid(key, KindOfKey(key)); known.has_value()) return *known;
  ASSIGN_OR_RETURN(Found found, Resolve(key));
  return std::make_pair(found.kind, k8s::UidOf(found.object));
}

absl::Status CrJobStore::AppendEvent(const JobKey& job, const JobEvent& event) {
  return AppendEvents(job, {event});
}

absl::Status CrJobStore::AppendEvents(const JobKey& job, const std::vector<JobEvent>& events) {
  if (events.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(auto kind_uid, KindAndUid(job));
  const std::string name = KindOfKey(job).value_or(std::make_pair(-1, job.name)).second;
  const size_t count = std::min(events.size(), static_cast<size_t>(options_.max_events_per_append));
  if (count < events.size()) {
    spdlog::warn("job {}/{}: {} event(s) dropped (at most {} per write)", job.namespace_, name,
                 events.size() - count, count);
  }
  const EventTarget target{job.namespace_, std::string(api::v1::kApiVersion),
                           KindName(kind_uid.first), name, kind_uid.second};
  size_t dropped = 0;
  for (size_t i = 0; i < count; ++i) dropped += recorder_->Record(target, events[i]) ? 0 : 1;
  if (dropped > 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat(dropped,
                     " event(s) dropped: over the job's or the operator's event queue "
                     "bound, or after shutdown (counted in coach_kube_events_total)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<JobEvent>> CrJobStore::ListEvents(const JobKey& job) {
  ASSIGN_OR_RETURN(auto kind_uid, KindAndUid(job));
  struct Item {
    absl::Time time;
    std::string name;
    JobEvent event;
  };
  std::vector<Item> items;
  k8s::ListOptions lo;
  lo.field_selector = absl::StrCat("involvedObject.uid=", kind_uid.second);
  lo.limit = options_.list_chunk;
  do {
    absl::StatusOr<k8s::ListResult> page =
        client_->List(k8s::resources::Events(), job.namespace_, lo);
    if (!page.ok()) {
      spdlog::warn("job {}/{}: events not listed: {}", job.namespace_, job.name,
                   page.status().ToString());
      return std::vector<JobEvent>();
    }
    for (const json& o : page->items) {
      const json& md = o.value("metadata", json::object());
      absl::Time t =
          ParseTimeOr(o.value("lastTimestamp", json()),
                      ParseTimeOr(o.value("firstTimestamp", json()),
                                  ParseTimeOr(o.value("eventTime", json()),
                                              ParseTimeOr(md.value("creationTimestamp", json()),
                                                          absl::InfinitePast()))));
      items.push_back(
          {t, Str(md, "name"), JobEvent{Str(o, "type"), Str(o, "reason"), Str(o, "message"), t}});
    }
    lo.continue_token = page->continue_token;
  } while (!lo.continue_token.empty());
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return std::tie(a.time, a.name) < std::tie(b.time, b.name);
  });
  const size_t skip = items.size() > static_cast<size_t>(options_.max_events_listed)
                          ? items.size() - static_cast<size_t>(options_.max_events_listed)
                          : 0;
  std::vector<JobEvent> out;
  for (size_t i = skip; i < items.size(); ++i) out.push_back(std::move(items[i].event));
  return out;
}

// --- change feed ---

absl::Status CrJobStore::StartWatching(JobChangeCallback callback) {
  std::vector<std::string> namespaces = options_.namespaces;
  if (namespaces.empty()) namespaces.push_back("");
  // A kind whose CRD is not installed is not watched: a chart upgraded by Helm keeps the CRDs
  // of its first install (Helm installs crds/ only then), and the v1 kinds must run without
  // trainer.kubeflow.org's.
  std::vector<int> served;
  for (int kind = 0; kind < NumKinds(); ++kind) {
    k8s::ListOptions probe;
    probe.limit = 1;
    absl::StatusOr<k8s::ListResult> listed = client_->List(Descriptor(kind), namespaces[0], probe);
    if (absl::IsNotFound(listed.status())) {
      spdlog::warn("{} is not served (is its CRD installed?): such jobs are not run",
                   Descriptor(kind).GroupResource());
      continue;
    }
    served.push_back(kind);
  }
  if (!watch_.Begin(served.size() * namespaces.size())) {
    return absl::FailedPreconditionError("CrJobStore: already watching");
  }
  callback_ = std::move(callback);
  for (int kind : served) {
    for (const std::string& ns : namespaces) {
      k8s::ReflectorHandlers handlers;
      handlers.on_replace = [this, kind, ns](const std::vector<json>& items, const std::string&) {
        OnReplace(kind, ns, items);
      };
      handlers.on_event = [this, kind](const k8s::WatchEvent& event) { OnEvent(kind, event); };
      handlers.on_error = [kind](const absl::Status& status) {
        spdlog::debug("watch {}: {}", KindName(kind), status.ToString());
      };
      reflectors_.push_back(std::make_unique<k8s::Reflector>(
          client_, Descriptor(kind), ns, options_.reflector, std::move(handlers)));
    }
  }
  for (auto& r : reflectors_) {
    k8s::Reflector* reflector = r.get();
    threads_.emplace_back([reflector] { reflector->Run(); });
  }
  return absl::OkStatus();
}

bool CrJobStore::WaitForSync(absl::Duration timeout) { return watch_.WaitForSync(timeout); }

void CrJobStore::StopWatching() {
  for (auto& r : reflectors_) r->Stop();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  reflectors_.clear();
  watch_.End();
}

void CrJobStore::OnReplace(int kind, const std::string& ns, const std::vector<json>& items) {
  const std::vector<JobKey> gone = watch_.Replace(kind, ns, items);
  for (const JobKey& key : gone) Notify(JobChangeType::kDeleted, kind, key, nullptr);
  for (const json& item : items) {
    json object = item;
    if (!object.contains("kind")) object["kind"] = KindName(kind);
    if (!object.contains("apiVersion"))
      object["apiVersion"] = std::string(KindAt(kind).api_version);
    Notify(JobChangeType::kAdded, kind, KeyOfObject(object), &object);
  }
  // Synced only once the callback has heard the listing (WaitForSync promises that).
  watch_.MarkSynced(kind, ns);
}

void CrJobStore::OnEvent(int kind, const k8s::WatchEvent& event) {
  json object = event.object;
  if (!object.contains("kind")) object["kind"] = KindName(kind);
  if (!object.contains("apiVersion")) object["apiVersion"] = std::string(KindAt(kind).api_version);
  const JobKey key = KeyOfObject(object);
  if (event.type == k8s::WatchEventType::kAdded || event.type == k8s::WatchEventType::kModified) {
    watch_.Put(key, kind, object);
  } else if (event.type == k8s::WatchEventType::kDeleted) {
    watch_.Drop(key, kind);
  }
  switch (event.type) {
    case k8s::WatchEventType::kAdded:
      Remember(key, kind, k8s::UidOf(object));
      Notify(JobChangeType::kAdded, kind, key, &object);
      break;
    case k8s::WatchEventType::kModified:
      Remember(key, kind, k8s::UidOf(object));
      Notify(JobChangeType::kModified, kind, key, &object);
      break;
    case k8s::WatchEventType::kDeleted:
      Forget(key, kind);
      Notify(JobChangeType::kDeleted, kind, key, &object);
      break;
    default:
      break;
  }
}

void CrJobStore::Notify(JobChangeType type, int kind, const JobKey& key, const json* object) {
  if (!callback_) return;
  JobChange change;
  change.type = type;
  change.key = {key.namespace_, key.name, KindName(kind)};
  if (object != nullptr) {
    absl::StatusOr<api::v1::TrainingJob> job = Decode(*object);
    if (job.ok()) {
      change.job = std::move(job).value();
    } else {
      spdlog::warn("watch: {}", job.status().ToString());
    }
  }
  callback_(change);
}

}  // namespace coach::backend::kube
