#include "api/v1/codec/job_codec.h"

#include <cstdint>
#include <limits>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/v1/codec/yaml_json.h"
#include "api/v1/kinds.h"
#include "google/protobuf/util/time_util.h"

namespace coach::api::v1::codec {
namespace {

using google::protobuf::Timestamp;
using google::protobuf::util::TimeUtil;
using nlohmann::json;

std::string Join(const std::string& path, const std::string& key) {
  return path.empty() ? key : absl::StrCat(path, ".", key);
}

std::string Describe(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return absl::StrCat("boolean ", v.dump());
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return absl::StrCat("integer ", v.dump());
    case json::value_t::number_float:
      return absl::StrCat("number ", v.dump());
    case json::value_t::string: {
      std::string s = v.get<std::string>();
      if (s.size() > 64) s = s.substr(0, 64) + "...";
      return absl::StrCat("string ", json(s).dump(-1, ' ', false,
                                                   json::error_handler_t::replace));
    }
    case json::value_t::array:
      return "a list";
    case json::value_t::object:
      return "an object";
    default:
      return "an unsupported value";
  }
}

// Spec fields that only some kinds have, with their owners, so that a field of another
// kind gets a message saying so.
const std::vector<std::pair<std::string, std::vector<JobKind>>>& KindSpecificFields() {
  static const auto* fields = new std::vector<std::pair<std::string, std::vector<JobKind>>>{
      {"elasticPolicy", {PYTORCH_JOB, PADDLE_JOB}},
      {"nprocPerNode", {PYTORCH_JOB}},
      {"successPolicy", {TF_JOB}},
      {"enableDynamicWorker", {TF_JOB}},
      {"slotsPerWorker", {MPI_JOB}},
      {"cleanPodPolicy", {MPI_JOB}},
      {"mainContainer", {MPI_JOB}},
  };
  return *fields;
}

bool KindHasField(JobKind kind, const std::string& field) {
  for (const auto& [name, kinds] : KindSpecificFields()) {
    if (name != field) continue;
    for (JobKind k : kinds) {
      if (k == kind) return true;
    }
  }
  return false;
}

class Decoder {
 public:
  std::vector<FieldError> errors;

  void Error(const std::string& path, std::string message) {
    errors.push_back({path, std::move(message)});
  }

  void Expected(const std::string& path, const char* what, const json& got) {
    Error(path, absl::StrCat("must be ", what, ", got ", Describe(got)));
  }

  // nullptr (with an error unless the value is null) when `v` is not an object.
  const json* Object(const json& v, const std::string& path) {
    if (v.is_object()) return &v;
    if (!v.is_null()) Expected(path, "an object", v);
    return nullptr;
  }

  // Errors for keys of `object` outside `known`.
  void Unknown(const json& object, const std::string& path, const std::set<std::string>& known) {
    for (auto it = object.begin(); it != object.end(); ++it) {
      if (known.count(it.key()) == 0) Error(Join(path, it.key()), "unknown field");
    }
  }

  template <typename Int>
  bool Integer(const json& v, const std::string& path, Int* out) {
    if (v.is_number_integer()) {
      bool fits;
      if (v.is_number_unsigned()) {
        fits = v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<Int>::max());
      } else {
        int64_t i = v.get<int64_t>();
        fits = i >= std::numeric_limits<Int>::min() && i <= std::numeric_limits<Int>::max();
      }
      if (fits) {
        *out = v.is_number_unsigned() ? static_cast<Int>(v.get<uint64_t>())
                                      : static_cast<Int>(v.get<int64_t>());
        return true;
      }
      Error(path, absl::StrCat("must be an integer in [", std::numeric_limits<Int>::min(), ", ",
                               std::numeric_limits<Int>::max(), "], got ", v.dump()));
      return false;
    }
    Expected(path, "an integer", v);
    return false;
  }

  // Calls `set` with the field's value when `key` is present and not null.
  template <typename Set>
  void Int32(const json& object, const std::string& key, const std::string& path, Set set) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return;
    int32_t value;
    if (Integer(*it, Join(path, key), &value)) set(value);
  }

  template <typename Set>
  void Int64(const json& object, const std::string& key, const std::string& path, Set set) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return;
    int64_t value;
    if (Integer(*it, Join(path, key), &value)) set(value);
  }

  template <typename Set>
  void String(const json& object, const std::string& key, const std::string& path, Set set,
              const char* what = "a string") {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return;
    if (it->is_string()) {
      set(it->get<std::string>());
    } else {
      Expected(Join(path, key), what, *it);
    }
  }

  template <typename Set>
  void Bool(const json& object, const std::string& key, const std::string& path, Set set) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return;
    if (it->is_boolean()) {
      set(it->get<bool>());
    } else {
      Expected(Join(path, key), "a boolean (true or false)", *it);
    }
  }

  void Time(const json& object, const std::string& key, const std::string& path,
            Timestamp* (*mutable_field)(void*), void* owner) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return;
    Timestamp ts;
    if (!it->is_string() || !TimeUtil::FromString(it->get<std::string>(), &ts)) {
      Expected(Join(path, key), "an RFC 3339 timestamp like \"2024-05-01T12:00:00Z\"", *it);
      return;
    }
    *mutable_field(owner) = ts;
  }

  // map<string, string> fields (labels, annotations).
  void StringMap(const json& object, const std::string& key, const std::string& path,
                 google::protobuf::Map<std::string, std::string>* out) {
    auto it = object.find(key);
    if (it == object.end()) return;
    const json* map = Object(*it, Join(path, key));
    if (map == nullptr) return;
    for (auto entry = map->begin(); entry != map->end(); ++entry) {
      if (entry->is_string()) {
        (*out)[entry.key()] = entry->get<std::string>();
      } else {
        Expected(absl::StrCat(Join(path, key), "[", entry.key(), "]"), "a string", *entry);
      }
    }
  }
};

template <typename Msg>
Timestamp* MutableTs(void* owner, Timestamp* (Msg::*getter)()) {
  return (static_cast<Msg*>(owner)->*getter)();
}

#define COACH_TIME_FIELD(decoder, object, key, path, msg, Type, field)                \
  (decoder).Time((object), (key), (path),                                              \
                 [](void* o) { return static_cast<Type*>(o)->mutable_##field(); }, (msg))

void DecodeMetadata(Decoder& d, const json& v, ObjectMeta* meta) {
  const std::string path = "metadata";
  const json* object = d.Object(v, path);
  if (object == nullptr) return;
  d.String(*object, "name", path, [&](std::string s) { meta->set_name(s); });
  d.String(*object, "namespace", path, [&](std::string s) { meta->set_namespace_(s); });
  d.String(*object, "uid", path, [&](std::string s) { meta->set_uid(s); });
  d.String(*object, "resourceVersion", path, [&](std::string s) { meta->set_resource_version(s); });
  d.String(*object, "generateName", path, [&](std::string s) { meta->set_generate_name(s); });
  d.Int64(*object, "generation", path, [&](int64_t g) { meta->set_generation(g); });
  COACH_TIME_FIELD(d, *object, "creationTimestamp", path, meta, ObjectMeta, creation_timestamp);
  COACH_TIME_FIELD(d, *object, "deletionTimestamp", path, meta, ObjectMeta, deletion_timestamp);
  d.StringMap(*object, "labels", path, meta->mutable_labels());
  d.StringMap(*object, "annotations", path, meta->mutable_annotations());
  static const std::set<std::string> kModelled = {
      "name", "namespace", "uid", "resourceVersion", "generateName", "generation",
      "creationTimestamp", "deletionTimestamp", "labels", "annotations"};
  json extra = json::object();
  for (auto it = object->begin(); it != object->end(); ++it) {
    if (kModelled.count(it.key()) == 0) extra[it.key()] = it.value();
  }
  if (!extra.empty()) meta->set_extra_json(extra.dump());
}

void DecodeSchedulingPolicy(Decoder& d, const json& v, const std::string& path,
                            SchedulingPolicy* policy) {
  const json* object = d.Object(v, path);
  if (object == nullptr) return;
  d.Unknown(*object, path,
            {"minAvailable", "queue", "minResources", "priorityClass", "scheduleTimeoutSeconds"});
  d.Int32(*object, "minAvailable", path, [&](int32_t i) { policy->set_min_available(i); });
  d.String(*object, "queue", path, [&](std::string s) { policy->set_queue(s); });
  d.String(*object, "priorityClass", path, [&](std::string s) { policy->set_priority_class(s); });
  d.Int32(*object, "scheduleTimeoutSeconds", path,
          [&](int32_t i) { policy->set_schedule_timeout_seconds(i); });
  auto it = object->find("minResources");
  if (it == object->end()) return;
  const std::string resources_path = Join(path, "minResources");
  const json* resources = d.Object(*it, resources_path);
  if (resources == nullptr) return;
  for (auto entry = resources->begin(); entry != resources->end(); ++entry) {
    if (entry->is_string() || entry->is_number()) {
      (*policy->mutable_min_resources())[entry.key()] =
          entry->is_string() ? entry->get<std::string>() : entry->dump();
    } else {
      d.Expected(absl::StrCat(resources_path, "[", entry.key(), "]"),
                 "a quantity (a string like \"16Gi\" or a number)", *entry);
    }
  }
}

void DecodeRunPolicy(Decoder& d, const json& v, RunPolicy* policy) {
  const std::string path = "spec.runPolicy";
  const json* object = d.Object(v, path);
  if (object == nullptr) return;
  d.Unknown(*object, path,
            {"cleanPodPolicy", "ttlSecondsAfterFinished", "activeDeadlineSeconds", "backoffLimit",
             "schedulingPolicy", "suspend", "managedBy"});
  d.String(*object, "cleanPodPolicy", path,
           [&](std::string s) { policy->set_clean_pod_policy(s); });
  d.Int32(*object, "ttlSecondsAfterFinished", path,
          [&](int32_t i) { policy->set_ttl_seconds_after_finished(i); });
  d.Int64(*object, "activeDeadlineSeconds", path,
          [&](int64_t i) { policy->set_active_deadline_seconds(i); });
  d.Int32(*object, "backoffLimit", path, [&](int32_t i) { policy->set_backoff_limit(i); });
  d.Bool(*object, "suspend", path, [&](bool b) { policy->set_suspend(b); });
  d.String(*object, "managedBy", path, [&](std::string s) { policy->set_managed_by(s); });
  auto it = object->find("schedulingPolicy");
  if (it != object->end() && !it->is_null()) {
    DecodeSchedulingPolicy(d, *it, Join(path, "schedulingPolicy"),
                           policy->mutable_scheduling_policy());
  }
}

void DecodeElasticPolicy(Decoder& d, const json& v, JobKind kind, ElasticPolicy* policy) {
  const std::string path = "spec.elasticPolicy";
  const json* object = d.Object(v, path);
  if (object == nullptr) return;
  if (kind == PADDLE_JOB) {
    d.Unknown(*object, path, {"minReplicas", "maxReplicas", "maxRestarts", "metrics"});
  } else {
    d.Unknown(*object, path,
              {"minReplicas", "maxReplicas", "rdzvBackend", "rdzvPort", "rdzvHost", "rdzvId",
               "rdzvConf", "standalone", "nProcPerNode", "maxRestarts", "metrics"});
  }
  d.Int32(*object, "minReplicas", path, [&](int32_t i) { policy->set_min_replicas(i); });
  d.Int32(*object, "maxReplicas", path, [&](int32_t i) { policy->set_max_replicas(i); });
  d.Int32(*object, "maxRestarts", path, [&](int32_t i) { policy->set_max_restarts(i); });
  auto metrics = object->find("metrics");
  if (metrics != object->end() && !metrics->is_null()) {
    if (metrics->is_array()) {
      policy->set_metrics_json(metrics->dump());
    } else {
      d.Expected(Join(path, "metrics"), "a list of autoscaling/v2 MetricSpecs", *metrics);
    }
  }
  if (kind == PADDLE_JOB) return;
  d.String(*object, "rdzvBackend", path, [&](std::string s) { policy->set_rdzv_backend(s); });
  d.Int32(*object, "rdzvPort", path, [&](int32_t i) { policy->set_rdzv_port(i); });
  d.String(*object, "rdzvHost", path, [&](std::string s) { policy->set_rdzv_host(s); });
  d.String(*object, "rdzvId", path, [&](std::string s) { policy->set_rdzv_id(s); });
  d.Bool(*object, "standalone", path, [&](bool b) { policy->set_standalone(b); });
  d.Int32(*object, "nProcPerNode", path, [&](int32_t i) { policy->set_n_proc_per_node(i); });
  auto conf = object->find("rdzvConf");
  if (conf == object->end() || conf->is_null()) return;
  const std::string conf_path = Join(path, "rdzvConf");
  if (!conf->is_array()) {
    d.Expected(conf_path, "a list of {key, value}", *conf);
    return;
  }
  for (size_t i = 0; i < conf->size(); ++i) {
    const std::string item_path = absl::StrCat(conf_path, "[", i, "]");
    const json* item = d.Object((*conf)[i], item_path);
    if (item == nullptr) {
      if ((*conf)[i].is_null()) d.Expected(item_path, "an object", (*conf)[i]);
      continue;
    }
    d.Unknown(*item, item_path, {"key", "value"});
    RdzvConf* entry = policy->add_rdzv_conf();
    d.String(*item, "key", item_path, [&](std::string s) { entry->set_key(s); });
    d.String(*item, "value", item_path, [&](std::string s) { entry->set_value(s); });
  }
}

void DecodeReplicaSpecs(Decoder& d, const json& v, const KindInfo& info,
                        TrainingJobSpec* spec) {
  const std::string path = absl::StrCat("spec.", std::string(info.replica_specs_key));
  const json* object = d.Object(v, path);
  if (object == nullptr) return;
  for (auto it = object->begin(); it != object->end(); ++it) {
    const std::string rpath = Join(path, it.key());
    std::string type = CanonicalReplicaType(info.kind, it.key());
    if (type.empty()) {
      d.Error(rpath, absl::StrCat("unknown replica type \"", it.key(), "\" for ", std::string(info.name),
                                  "; allowed: ",
                                  absl::StrJoin(info.replica_types, ", ",
                                                [](std::string* out, std::string_view t) {
                                                  out->append(std::string(t));
                                                })));
      continue;
    }
    if (spec->replica_specs().count(type) > 0) {
      d.Error(rpath, absl::StrCat("replica type ", type, " is given more than once"));
      continue;
    }
    ReplicaSpec& replica = (*spec->mutable_replica_specs())[type];
    const json* r = d.Object(it.value(), rpath);
    if (r == nullptr) {
      if (it.value().is_null()) d.Expected(rpath, "an object", it.value());
      continue;
    }
    d.Unknown(*r, rpath, {"replicas", "restartPolicy", "template"});
    d.Int32(*r, "replicas", rpath, [&](int32_t i) { replica.set_replicas(i); });
    d.String(*r, "restartPolicy", rpath, [&](std::string s) { replica.set_restart_policy(s); });
    auto tmpl = r->find("template");
    if (tmpl != r->end() && !tmpl->is_null()) {
      if (tmpl->is_object()) {
        replica.set_template_json(tmpl->dump());
      } else {
        d.Expected(Join(rpath, "template"), "an object (a core/v1 PodTemplateSpec)", *tmpl);
      }
    }
  }
}

void DecodeSpec(Decoder& d, const json& v, const KindInfo& info, TrainingJobSpec* spec) {
  const std::string path = "spec";
  if (v.is_null()) {
    d.Error(path, "required");
    return;
  }
  const json* object = d.Object(v, path);
  if (object == nullptr) return;
  const std::string replica_key(info.replica_specs_key);
  for (auto it = object->begin(); it != object->end(); ++it) {
    const std::string& key = it.key();
    if (key == "runPolicy" || key == replica_key || KindHasField(info.kind, key)) continue;
    std::vector<std::string> owners;
    for (const auto& [field, kinds] : KindSpecificFields()) {
      if (field != key) continue;
      for (JobKind k : kinds) owners.push_back(std::string(FindKind(k)->name));
    }
    for (const KindInfo& other : AllKinds()) {
      if (other.replica_specs_key == key) owners.push_back(std::string(other.name));
    }
    if (owners.empty()) {
      d.Error(Join(path, key), "unknown field");
    } else {
      d.Error(Join(path, key), absl::StrCat("not a field of ", std::string(info.name), " (only of ",
                                            absl::StrJoin(owners, ", "), ")"));
    }
  }
  auto replicas = object->find(replica_key);
  if (replicas == object->end() || replicas->is_null()) {
    d.Error(Join(path, replica_key), "required");
  } else {
    DecodeReplicaSpecs(d, *replicas, info, spec);
  }
  auto run_policy = object->find("runPolicy");
  if (run_policy != object->end() && !run_policy->is_null()) {
    DecodeRunPolicy(d, *run_policy, spec->mutable_run_policy());
  }
  if (KindHasField(info.kind, "elasticPolicy")) {
    auto elastic = object->find("elasticPolicy");
    if (elastic != object->end() && !elastic->is_null()) {
      DecodeElasticPolicy(d, *elastic, info.kind, spec->mutable_elastic_policy());
    }
  }
  switch (info.kind) {
    case PYTORCH_JOB:
      d.String(*object, "nprocPerNode", path,
               [&](std::string s) { spec->set_nproc_per_node(s); },
               "a string (\"auto\", \"cpu\", \"gpu\" or a number in quotes)");
      break;
    case TF_JOB:
      d.String(*object, "successPolicy", path,
               [&](std::string s) { spec->set_success_policy(s); });
      d.Bool(*object, "enableDynamicWorker", path,
             [&](bool b) { spec->set_enable_dynamic_worker(b); });
      break;
    case MPI_JOB:
      d.Int32(*object, "slotsPerWorker", path, [&](int32_t i) { spec->set_slots_per_worker(i); });
      d.String(*object, "cleanPodPolicy", path,
               [&](std::string s) { spec->set_mpi_clean_pod_policy(s); });
      d.String(*object, "mainContainer", path,
               [&](std::string s) { spec->set_main_container(s); });
      break;
    default:
      break;
  }
}

void DecodeStatus(Decoder& d, const json& v, TrainingJobStatus* status) {
  const std::string path = "status";
  const json* object = d.Object(v, path);
  if (object == nullptr) return;
  d.Unknown(*object, path,
            {"conditions", "replicaStatuses", "startTime", "completionTime", "lastReconcileTime"});
  COACH_TIME_FIELD(d, *object, "startTime", path, status, TrainingJobStatus, start_time);
  COACH_TIME_FIELD(d, *object, "completionTime", path, status, TrainingJobStatus,
                   completion_time);
  COACH_TIME_FIELD(d, *object, "lastReconcileTime", path, status, TrainingJobStatus,
                   last_reconcile_time);
  auto conditions = object->find("conditions");
  if (conditions != object->end() && !conditions->is_null()) {
    const std::string cpath = Join(path, "conditions");
    if (!conditions->is_array()) {
      d.Expected(cpath, "a list", *conditions);
    } else {
      for (size_t i = 0; i < conditions->size(); ++i) {
        const std::string ipath = absl::StrCat(cpath, "[", i, "]");
        const json& item = (*conditions)[i];
        if (!item.is_object()) {
          d.Expected(ipath, "an object", item);
          continue;
        }
        d.Unknown(item, ipath,
                  {"type", "status", "reason", "message", "lastUpdateTime", "lastTransitionTime"});
        JobCondition* c = status->add_conditions();
        d.String(item, "type", ipath, [&](std::string s) { c->set_type(s); });
        d.String(item, "status", ipath, [&](std::string s) { c->set_status(s); });
        d.String(item, "reason", ipath, [&](std::string s) { c->set_reason(s); });
        d.String(item, "message", ipath, [&](std::string s) { c->set_message(s); });
        COACH_TIME_FIELD(d, item, "lastUpdateTime", ipath, c, JobCondition, last_update_time);
        COACH_TIME_FIELD(d, item, "lastTransitionTime", ipath, c, JobCondition,
                         last_transition_time);
      }
    }
  }
  auto replicas = object->find("replicaStatuses");
  if (replicas != object->end() && !replicas->is_null()) {
    const std::string rpath = Join(path, "replicaStatuses");
    const json* map = d.Object(*replicas, rpath);
    if (map == nullptr) return;
    for (auto it = map->begin(); it != map->end(); ++it) {
      const std::string ipath = Join(rpath, it.key());
      if (!it->is_object()) {
        d.Expected(ipath, "an object", *it);
        continue;
      }
      d.Unknown(*it, ipath, {"active", "succeeded", "failed", "selector", "labelSelector"});
      ReplicaStatus& rs = (*status->mutable_replica_statuses())[it.key()];
      d.Int32(*it, "active", ipath, [&](int32_t i) { rs.set_active(i); });
      d.Int32(*it, "succeeded", ipath, [&](int32_t i) { rs.set_succeeded(i); });
      d.Int32(*it, "failed", ipath, [&](int32_t i) { rs.set_failed(i); });
      d.String(*it, "selector", ipath, [&](std::string s) { rs.set_selector(s); });
      auto selector = it->find("labelSelector");
      if (selector != it->end() && !selector->is_null()) {
        if (selector->is_object()) {
          rs.set_label_selector_json(selector->dump());
        } else {
          d.Expected(Join(ipath, "labelSelector"), "an object (a metav1.LabelSelector)",
                     *selector);
        }
      }
    }
  }
}

std::string FormatTime(const Timestamp& ts) { return TimeUtil::ToString(ts); }

json ParseStored(const std::string& text) {
  json value = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return value.is_discarded() ? json::object() : value;
}

json EncodeSpec(const TrainingJob& job, const KindInfo& info) {
  const TrainingJobSpec& spec = job.spec();
  json out = json::object();
  if (spec.has_run_policy()) {
    const RunPolicy& rp = spec.run_policy();
    json policy = json::object();
    if (rp.has_clean_pod_policy()) policy["cleanPodPolicy"] = rp.clean_pod_policy();
    if (rp.has_ttl_seconds_after_finished()) {
      policy["ttlSecondsAfterFinished"] = rp.ttl_seconds_after_finished();
    }
    if (rp.has_active_deadline_seconds()) {
      policy["activeDeadlineSeconds"] = rp.active_deadline_seconds();
    }
    if (rp.has_backoff_limit()) policy["backoffLimit"] = rp.backoff_limit();
    if (rp.has_suspend()) policy["suspend"] = rp.suspend();
    if (rp.has_managed_by()) policy["managedBy"] = rp.managed_by();
    if (rp.has_scheduling_policy()) {
      const SchedulingPolicy& sp = rp.scheduling_policy();
      json s = json::object();
      if (sp.has_min_available()) s["minAvailable"] = sp.min_available();
      if (!sp.queue().empty()) s["queue"] = sp.queue();
      if (!sp.priority_class().empty()) s["priorityClass"] = sp.priority_class();
      if (sp.has_schedule_timeout_seconds()) {
        s["scheduleTimeoutSeconds"] = sp.schedule_timeout_seconds();
      }
      if (!sp.min_resources().empty()) {
        json resources = json::object();
        for (const auto& [name, quantity] : sp.min_resources()) resources[name] = quantity;
        s["minResources"] = resources;
      }
      policy["schedulingPolicy"] = s;
    }
    out["runPolicy"] = policy;
  }
  json replicas = json::object();
  for (const auto& [type, replica] : spec.replica_specs()) {
    json r = json::object();
    if (replica.has_replicas()) r["replicas"] = replica.replicas();
    if (!replica.restart_policy().empty()) r["restartPolicy"] = replica.restart_policy();
    if (!replica.template_json().empty()) r["template"] = ParseStored(replica.template_json());
    replicas[type] = r;
  }
  out[std::string(info.replica_specs_key)] = replicas;
  if (KindHasField(info.kind, "elasticPolicy") && spec.has_elastic_policy()) {
    const ElasticPolicy& ep = spec.elastic_policy();
    json e = json::object();
    if (ep.has_min_replicas()) e["minReplicas"] = ep.min_replicas();
    if (ep.has_max_replicas()) e["maxReplicas"] = ep.max_replicas();
    if (ep.has_max_restarts()) e["maxRestarts"] = ep.max_restarts();
    if (!ep.metrics_json().empty()) e["metrics"] = ParseStored(ep.metrics_json());
    if (info.kind == PYTORCH_JOB) {
      if (ep.has_rdzv_backend()) e["rdzvBackend"] = ep.rdzv_backend();
      if (ep.has_rdzv_port()) e["rdzvPort"] = ep.rdzv_port();
      if (ep.has_rdzv_host()) e["rdzvHost"] = ep.rdzv_host();
      if (ep.has_rdzv_id()) e["rdzvId"] = ep.rdzv_id();
      if (ep.has_standalone()) e["standalone"] = ep.standalone();
      if (ep.has_n_proc_per_node()) e["nProcPerNode"] = ep.n_proc_per_node();
      if (ep.rdzv_conf_size() > 0) {
        json conf = json::array();
        for (const RdzvConf& c : ep.rdzv_conf()) {
          json item = json::object();
          if (!c.key().empty()) item["key"] = c.key();
          if (!c.value().empty()) item["value"] = c.value();
          conf.push_back(item);
        }
        e["rdzvConf"] = conf;
      }
    }
    out["elasticPolicy"] = e;
  }
  switch (info.kind) {
    case PYTORCH_JOB:
      if (spec.has_nproc_per_node()) out["nprocPerNode"] = spec.nproc_per_node();
      break;
    case TF_JOB:
      if (spec.has_success_policy()) out["successPolicy"] = spec.success_policy();
      if (spec.has_enable_dynamic_worker()) {
        out["enableDynamicWorker"] = spec.enable_dynamic_worker();
      }
      break;
    case MPI_JOB:
      if (spec.has_slots_per_worker()) out["slotsPerWorker"] = spec.slots_per_worker();
      if (spec.has_mpi_clean_pod_policy()) out["cleanPodPolicy"] = spec.mpi_clean_pod_policy();
      if (spec.has_main_container()) out["mainContainer"] = spec.main_container();
      break;
    default:
      break;
  }
  return out;
}

json EncodeStatus(const TrainingJobStatus& status) {
  json out = json::object();
  if (status.conditions_size() > 0) {
    json conditions = json::array();
    for (const JobCondition& c : status.conditions()) {
      json item = {{"type", c.type()}, {"status", c.status()}};
      if (!c.reason().empty()) item["reason"] = c.reason();
      if (!c.message().empty()) item["message"] = c.message();
      if (c.has_last_update_time()) item["lastUpdateTime"] = FormatTime(c.last_update_time());
      if (c.has_last_transition_time()) {
        item["lastTransitionTime"] = FormatTime(c.last_transition_time());
      }
      conditions.push_back(item);
    }
    out["conditions"] = conditions;
  }
  if (!status.replica_statuses().empty()) {
    json replicas = json::object();
    for (const auto& [type, rs] : status.replica_statuses()) {
      json item = json::object();
      if (rs.active() != 0) item["active"] = rs.active();
      if (rs.succeeded() != 0) item["succeeded"] = rs.succeeded();
      if (rs.failed() != 0) item["failed"] = rs.failed();
      if (!rs.selector().empty()) item["selector"] = rs.selector();
      if (!rs.label_selector_json().empty()) {
        item["labelSelector"] = ParseStored(rs.label_selector_json());
      }
      replicas[type] = item;
    }
    out["replicaStatuses"] = replicas;
  }
  if (status.has_start_time()) out["startTime"] = FormatTime(status.start_time());
  if (status.has_completion_time()) out["completionTime"] = FormatTime(status.completion_time());
  if (status.has_last_reconcile_time()) {
    out["lastReconcileTime"] = FormatTime(status.last_reconcile_time());
  }
  return out;
}

std::string KindNames() {
  std::vector<std::string> names;
  for (const KindInfo& info : AllKinds()) names.push_back(std::string(info.name));
  return absl::StrJoin(names, ", ");
}

void PrefixPaths(std::vector<FieldError>* errors, const std::string& prefix) {
  for (FieldError& e : *errors) {
    e.path = e.path.empty() ? prefix : absl::StrCat(prefix, ".", e.path);
  }
}

}  // namespace

std::vector<FieldError> DecodeJob(const json& manifest, TrainingJob* job) {
  Decoder d;
  job->Clear();
  if (!manifest.is_object()) {
    d.Error("", absl::StrCat("a manifest must be an object, got ", Describe(manifest)));
    return d.errors;
  }
  d.Unknown(manifest, "", {"apiVersion", "kind", "metadata", "spec", "status"});
  auto api_version = manifest.find("apiVersion");
  if (api_version == manifest.end() || !api_version->is_string() ||
      api_version->get<std::string>() != kApiVersion) {
    d.Error("apiVersion",
            absl::StrCat("must be ", std::string(kApiVersion), ", got ",
                         api_version == manifest.end() ? "nothing" : Describe(*api_version)));
  }
  const KindInfo* info = nullptr;
  auto kind = manifest.find("kind");
  if (kind != manifest.end() && kind->is_string()) {
    info = FindKindByName(kind->get<std::string>());
  }
  if (info == nullptr) {
    d.Error("kind", absl::StrCat("must be one of ", KindNames(), ", got ",
                                 kind == manifest.end() ? "nothing" : Describe(*kind)));
  } else {
    job->set_kind(info->kind);
  }
  auto metadata = manifest.find("metadata");
  if (metadata == manifest.end() || metadata->is_null()) {
    d.Error("metadata", "required");
  } else {
    DecodeMetadata(d, *metadata, job->mutable_metadata());
  }
  if (info != nullptr) {
    auto spec = manifest.find("spec");
    DecodeSpec(d, spec == manifest.end() ? json() : *spec, *info, job->mutable_spec());
  }
  auto status = manifest.find("status");
  if (status != manifest.end() && !status->is_null()) {
    DecodeStatus(d, *status, job->mutable_status());
  }
  return d.errors;
}

absl::StatusOr<TrainingJob> JobFromJson(const json& manifest) {
  TrainingJob job;
  std::vector<FieldError> errors = DecodeJob(manifest, &job);
  if (!errors.empty()) return FieldErrorsToStatus(errors);
  return job;
}

json JobToJson(const TrainingJob& job) {
  const KindInfo* info = FindKind(job.kind());
  json out = json::object();
  out["apiVersion"] = std::string(kApiVersion);
  if (info != nullptr) out["kind"] = std::string(info->name);
  const ObjectMeta& meta = job.metadata();
  json m = meta.extra_json().empty() ? json::object() : ParseStored(meta.extra_json());
  if (!meta.name().empty()) m["name"] = meta.name();
  if (!meta.namespace_().empty()) m["namespace"] = meta.namespace_();
  if (!meta.uid().empty()) m["uid"] = meta.uid();
  if (!meta.resource_version().empty()) m["resourceVersion"] = meta.resource_version();
  if (!meta.generate_name().empty()) m["generateName"] = meta.generate_name();
  if (meta.generation() != 0) m["generation"] = meta.generation();
  if (meta.has_creation_timestamp()) {
    m["creationTimestamp"] = FormatTime(meta.creation_timestamp());
  }
  if (meta.has_deletion_timestamp()) {
    m["deletionTimestamp"] = FormatTime(meta.deletion_timestamp());
  }
  if (!meta.labels().empty()) {
    json labels = json::object();
    for (const auto& [k, v] : meta.labels()) labels[k] = v;
    m["labels"] = labels;
  }
  if (!meta.annotations().empty()) {
    json annotations = json::object();
    for (const auto& [k, v] : meta.annotations()) annotations[k] = v;
    m["annotations"] = annotations;
  }
  out["metadata"] = m;
  if (info != nullptr) out["spec"] = EncodeSpec(job, *info);
  if (job.has_status()) out["status"] = EncodeStatus(job.status());
  return out;
}

absl::StatusOr<std::vector<TrainingJob>> ParseManifests(const std::string& text) {
  auto docs = ParseYamlDocuments(text);
  if (!docs.ok()) return docs.status();
  if (docs->empty()) return absl::InvalidArgumentError("no manifest found: the text is empty");
  std::vector<TrainingJob> jobs;
  std::vector<std::string> lines;
  for (size_t i = 0; i < docs->size(); ++i) {
    const json& doc = (*docs)[i];
    const std::string prefix = docs->size() > 1 ? absl::StrCat("document ", i + 1, ": ") : "";
    std::vector<FieldError> errors;
    auto kind = doc.is_object() ? doc.find("kind") : doc.end();
    if (doc.is_object() && kind != doc.end() && *kind == "List") {
      auto items = doc.find("items");
      if (items == doc.end() || !items->is_array()) {
        errors.push_back({"items", "must be a list of jobs"});
      } else {
        for (size_t j = 0; j < items->size(); ++j) {
          TrainingJob job;
          std::vector<FieldError> item_errors = DecodeJob((*items)[j], &job);
          PrefixPaths(&item_errors, absl::StrCat("items[", j, "]"));
          errors.insert(errors.end(), item_errors.begin(), item_errors.end());
          if (item_errors.empty()) jobs.push_back(std::move(job));
        }
      }
    } else {
      TrainingJob job;
      errors = DecodeJob(doc, &job);
      if (errors.empty()) jobs.push_back(std::move(job));
    }
    for (const FieldError& e : errors) lines.push_back(prefix + FormatFieldError(e));
  }
  if (!lines.empty()) return absl::InvalidArgumentError(absl::StrJoin(lines, "\n"));
  return jobs;
}

std::string JobToYamlString(const TrainingJob& job) { return ToYaml(JobToJson(job)); }

std::string JobsToYaml(const std::vector<TrainingJob>& jobs) {
  std::vector<json> docs;
  docs.reserve(jobs.size());
  for (const TrainingJob& job : jobs) docs.push_back(JobToJson(job));
  return ToYamlDocuments(docs);
}

std::string JobsToJson(const std::vector<TrainingJob>& jobs) {
  json out;
  if (jobs.size() == 1) {
    out = JobToJson(jobs.front());
  } else {
    json items = json::array();
    for (const TrainingJob& job : jobs) items.push_back(JobToJson(job));
    out = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
  }
  return out.dump(2) + "\n";
}

}  // namespace coach::api::v1::codec
