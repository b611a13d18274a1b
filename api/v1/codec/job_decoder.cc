#include "api/v1/codec/job_decoder.h"

#include <cmath>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/v1/coach_status.h"
#include "api/v1/codec/field_decoder.h"
#include "api/v1/codec/job_decoder_internal.h"
#include "api/v1/codec/kind_fields.h"
#include "api/v1/codec/yaml_json.h"
#include "api/v1/kinds.h"

namespace coach::api::v1::codec {

using nlohmann::json;

namespace internal {

void DecodeMetadata(FieldDecoder& d, const json& v, ObjectMeta* meta) {
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
  json extra = json::object();
  for (auto it = object->begin(); it != object->end(); ++it) {
    if (ModelledMetadataFields().count(it.key()) == 0) extra[it.key()] = it.value();
  }
  if (!extra.empty()) meta->set_extra_json(extra.dump());
}

}  // namespace internal

namespace {

using internal::DecodeMetadata;

void DecodeSchedulingPolicy(FieldDecoder& d, const json& v, const std::string& path,
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

void DecodeRunPolicy(FieldDecoder& d, const json& v, RunPolicy* policy) {
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

void DecodeElasticPolicy(FieldDecoder& d, const json& v, JobKind kind, ElasticPolicy* policy) {
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

void DecodeReplicaSpecs(FieldDecoder& d, const json& v, const KindInfo& info,
                        TrainingJobSpec* spec) {
  const std::string path = absl::StrCat("spec.", std::string(info.replica_specs_key));
  const json* object = d.Object(v, path);
  if (object == nullptr) return;
  for (auto it = object->begin(); it != object->end(); ++it) {
    const std::string rpath = Join(path, it.key());
    std::string type = CanonicalReplicaType(info.kind, it.key());
    if (type.empty()) {
      d.Error(rpath, absl::StrCat("unknown replica type \"", it.key(), "\" for ",
                                  std::string(info.name), "; allowed: ",
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

void DecodeSpec(FieldDecoder& d, const json& v, const KindInfo& info, TrainingJobSpec* spec) {
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
      d.String(
          *object, "nprocPerNode", path, [&](std::string s) { spec->set_nproc_per_node(s); },
          "a string (\"auto\", \"cpu\", \"gpu\" or a number in quotes)");
      break;
    case TF_JOB:
      d.String(*object, "successPolicy", path, [&](std::string s) { spec->set_success_policy(s); });
      d.Bool(*object, "enableDynamicWorker", path,
             [&](bool b) { spec->set_enable_dynamic_worker(b); });
      break;
    case MPI_JOB:
      d.Int32(*object, "slotsPerWorker", path, [&](int32_t i) { spec->set_slots_per_worker(i); });
      d.String(*object, "cleanPodPolicy", path,
               [&](std::string s) { spec->set_mpi_clean_pod_policy(s); });
      d.String(*object, "mainContainer", path, [&](std::string s) { spec->set_main_container(s); });
      break;
    default:
      break;
  }
}

// A count of status.coach: an int32 that is not negative.
template <typename Set>
void Count(FieldDecoder& d, const json& object, const std::string& key, const std::string& path,
           Set set) {
  d.Int32(object, key, path, [&](int32_t i) {
    if (i < 0) {
      d.Error(Join(path, key), absl::StrCat("must be >= 0, got ", i));
    } else {
      set(i);
    }
  });
}

// A finite number (JSON has no other; a value built in code might), integers included: the
// API server writes a float that has no fraction as an integer.
bool Number(FieldDecoder& d, const json& v, const std::string& path, double* out) {
  if (!v.is_number()) {
    d.Expected(path, "a number", v);
    return false;
  }
  *out = v.get<double>();
  if (!std::isfinite(*out)) {
    d.Error(path, "must be a finite number");
    return false;
  }
  return true;
}

// The members of the map at `path`, or nullptr (with an error) when it is no object or has more
// than `max` of them.
const json* BoundedMap(FieldDecoder& d, const json& v, const std::string& path, int max) {
  const json* map = d.Object(v, path);
  if (map != nullptr && map->size() > static_cast<size_t>(max)) {
    d.Error(path, absl::StrCat("must have at most ", max, " entries, got ", map->size()));
    return nullptr;
  }
  return map;
}

// Characters of UTF-8 text, as the CRD's rule counts them (CEL's size()): bytes that do not
// continue a character.
size_t Characters(const std::string& text) {
  size_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80;
  return n;
}

void DecodeProgress(FieldDecoder& d, const json& v, const std::string& path,
                    JobProgress* progress) {
  const json* object = d.Object(v, path);
  if (object == nullptr) return;
  d.Unknown(*object, path, {"step", "metrics", "stepsPerSecond", "lastProgressTime"});
  d.Int64(*object, "step", path, [&](int64_t step) {
    if (step < 0) {
      d.Error(Join(path, "step"), absl::StrCat("must be >= 0, got ", step));
    } else {
      progress->set_step(step);
    }
  });
  auto rate = object->find("stepsPerSecond");
  if (rate != object->end() && !rate->is_null()) {
    const std::string rate_path = Join(path, "stepsPerSecond");
    double value;
    if (Number(d, *rate, rate_path, &value)) {
      if (value < 0) {
        d.Error(rate_path, absl::StrCat("must be >= 0, got ", rate->dump()));
      } else {
        progress->set_steps_per_second(value);
      }
    }
  }
  COACH_TIME_FIELD(d, *object, "lastProgressTime", path, progress, JobProgress, last_progress_time);
  auto metrics = object->find("metrics");
  if (metrics == object->end() || metrics->is_null()) return;
  const std::string metrics_path = Join(path, "metrics");
  const json* map = BoundedMap(d, *metrics, metrics_path, kMaxProgressMetrics);
  if (map == nullptr) return;
  for (auto it = map->begin(); it != map->end(); ++it) {
    const size_t length = Characters(it.key());
    if (length == 0 || length > kMaxMetricNameLength) {
      d.Error(metrics_path, absl::StrCat("a metric name must have 1 to ", kMaxMetricNameLength,
                                         " characters, got ", Describe(json(it.key()))));
      continue;
    }
    double value;
    if (Number(d, *it, absl::StrCat(metrics_path, "[", it.key(), "]"), &value)) {
      (*progress->mutable_metrics())[it.key()] = value;
    }
  }
}

// A string of status.coach of at most `max` characters (as the CRD's maxLength counts them).
template <typename Set>
void BoundedString(FieldDecoder& d, const json& object, const std::string& key,
                   const std::string& path, size_t max, Set set) {
  d.String(object, key, path, [&](std::string s) {
    if (Characters(s) > max) {
      d.Error(Join(path, key), absl::StrCat("must have at most ", max, " characters"));
    } else {
      set(std::move(s));
    }
  });
}

void DecodeAttempt(FieldDecoder& d, const json& item, const std::string& path,
                   JobAttempt* attempt) {
  d.Unknown(item, path,
            {"attempt", "startTime", "runningTime", "endTime", "reason", "message", "replica",
             "exitCode", "signal", "nodes", "lastStep", "counted", "stepsLost"});
  Count(d, item, "attempt", path, [&](int32_t i) { attempt->set_attempt(i); });
  COACH_TIME_FIELD(d, item, "startTime", path, attempt, JobAttempt, start_time);
  COACH_TIME_FIELD(d, item, "runningTime", path, attempt, JobAttempt, running_time);
  COACH_TIME_FIELD(d, item, "endTime", path, attempt, JobAttempt, end_time);
  BoundedString(d, item, "reason", path, kMaxAttemptNameLength,
                [&](std::string s) { attempt->set_reason(std::move(s)); });
  BoundedString(d, item, "message", path, kMaxAttemptMessageLength,
                [&](std::string s) { attempt->set_message(std::move(s)); });
  BoundedString(d, item, "replica", path, kMaxAttemptNameLength,
                [&](std::string s) { attempt->set_replica(std::move(s)); });
  BoundedString(d, item, "signal", path, kMaxAttemptNameLength,
                [&](std::string s) { attempt->set_signal(std::move(s)); });
  d.Int32(item, "exitCode", path, [&](int32_t i) { attempt->set_exit_code(i); });
  d.Int64(item, "lastStep", path, [&](int64_t i) {
    if (i < 0) {
      d.Error(Join(path, "lastStep"), absl::StrCat("must be >= 0, got ", i));
    } else {
      attempt->set_last_step(i);
    }
  });
  d.Int64(item, "stepsLost", path, [&](int64_t i) {
    if (i < 0) {
      d.Error(Join(path, "stepsLost"), absl::StrCat("must be >= 0, got ", i));
    } else {
      attempt->set_steps_lost(i);
    }
  });
  d.Bool(item, "counted", path, [&](bool b) { attempt->set_counted(b); });
  auto nodes = item.find("nodes");
  if (nodes == item.end() || nodes->is_null()) return;
  const std::string nodes_path = Join(path, "nodes");
  const json* map = BoundedMap(d, *nodes, nodes_path, kMaxAttemptNodes);
  if (map == nullptr) return;
  for (auto it = map->begin(); it != map->end(); ++it) {
    const std::string entry_path = absl::StrCat(nodes_path, "[", it.key(), "]");
    if (!it->is_string()) {
      d.Expected(entry_path, "a string", *it);
    } else if (Characters(it.key()) > kMaxAttemptNameLength ||
               Characters(it->get<std::string>()) > kMaxAttemptNameLength) {
      d.Error(entry_path,
              absl::StrCat("names must have at most ", kMaxAttemptNameLength, " characters"));
    } else {
      (*attempt->mutable_nodes())[it.key()] = it->get<std::string>();
    }
  }
}

void DecodeWorkerCountChange(FieldDecoder& d, const json& item, const std::string& path,
                             WorkerCountChange* change) {
  d.Unknown(item, path, {"time", "workers", "step", "why"});
  COACH_TIME_FIELD(d, item, "time", path, change, WorkerCountChange, time);
  Count(d, item, "workers", path, [&](int32_t i) { change->set_workers(i); });
  d.Int64(item, "step", path, [&](int64_t i) {
    if (i < 0) {
      d.Error(Join(path, "step"), absl::StrCat("must be >= 0, got ", i));
    } else {
      change->set_step(i);
    }
  });
  BoundedString(d, item, "why", path, kMaxWorkerCountWhyLength,
                [&](std::string s) { change->set_why(std::move(s)); });
}

void DecodeElastic(FieldDecoder& d, const json& v, const std::string& path,
                   ElasticStatus* elastic) {
  const json* object = d.Object(v, path);
  if (object == nullptr) return;
  d.Unknown(*object, path, {"minWorkers", "maxWorkers", "workers", "changes"});
  Count(d, *object, "minWorkers", path, [&](int32_t i) { elastic->set_min_workers(i); });
  Count(d, *object, "maxWorkers", path, [&](int32_t i) { elastic->set_max_workers(i); });
  Count(d, *object, "workers", path, [&](int32_t i) { elastic->set_workers(i); });
  auto changes = object->find("changes");
  if (changes == object->end() || changes->is_null()) return;
  const std::string changes_path = Join(path, "changes");
  if (changes->is_array() && changes->size() > static_cast<size_t>(kMaxWorkerCountChanges)) {
    d.Error(changes_path, absl::StrCat("must have at most ", kMaxWorkerCountChanges,
                                       " entries, got ", changes->size()));
    return;
  }
  d.ObjectList(*changes, changes_path, [&](const json& item, const std::string& ipath) {
    DecodeWorkerCountChange(d, item, ipath, elastic->add_changes());
  });
}

}  // namespace

namespace internal {

const std::set<std::string>& CoachStatusFields() {
  static const std::set<std::string>* fields = new std::set<std::string>{
      "attempt",  "restarts",    "disruptions",     "restartsByType", "attemptRunningTime",
      "progress", "restartTime", "inPlaceRestarts", "attempts",       "elastic"};
  return *fields;
}

const std::set<std::string>& JobStatusFields() {
  static const std::set<std::string>* fields = new std::set<std::string>{
      "conditions", "replicaStatuses", "startTime", "completionTime", "lastReconcileTime"};
  return *fields;
}

void DecodeCoachStatus(FieldDecoder& d, const json& v, const std::string& path, bool check_unknown,
                       CoachJobStatus* coach) {
  const json* object = d.Object(v, path);
  if (object == nullptr) return;
  if (check_unknown) d.Unknown(*object, path, CoachStatusFields());
  Count(d, *object, "attempt", path, [&](int32_t i) { coach->set_attempt(i); });
  Count(d, *object, "restarts", path, [&](int32_t i) { coach->set_restarts(i); });
  Count(d, *object, "disruptions", path, [&](int32_t i) { coach->set_disruptions(i); });
  Count(d, *object, "inPlaceRestarts", path, [&](int32_t i) { coach->set_in_place_restarts(i); });
  COACH_TIME_FIELD(d, *object, "restartTime", path, coach, CoachJobStatus, restart_time);
  COACH_TIME_FIELD(d, *object, "attemptRunningTime", path, coach, CoachJobStatus,
                   attempt_running_time);
  auto by_type = object->find("restartsByType");
  if (by_type != object->end() && !by_type->is_null()) {
    const std::string by_type_path = Join(path, "restartsByType");
    const json* map = BoundedMap(d, *by_type, by_type_path, kMaxRestartsByType);
    if (map != nullptr) {
      for (auto it = map->begin(); it != map->end(); ++it) {
        int32_t restarts;
        const std::string entry_path = absl::StrCat(by_type_path, "[", it.key(), "]");
        if (!d.Integer(*it, entry_path, &restarts)) continue;
        if (restarts < 0) {
          d.Error(entry_path, absl::StrCat("must be >= 0, got ", restarts));
          continue;
        }
        (*coach->mutable_restarts_by_type())[it.key()] = restarts;
      }
    }
  }
  auto progress = object->find("progress");
  if (progress != object->end() && !progress->is_null()) {
    DecodeProgress(d, *progress, Join(path, "progress"), coach->mutable_progress());
  }
  auto attempts = object->find("attempts");
  if (attempts != object->end() && !attempts->is_null()) {
    const std::string attempts_path = Join(path, "attempts");
    if (attempts->is_array() && attempts->size() > static_cast<size_t>(kMaxAttempts)) {
      d.Error(attempts_path,
              absl::StrCat("must have at most ", kMaxAttempts, " entries, got ", attempts->size()));
    } else {
      d.ObjectList(*attempts, attempts_path, [&](const json& item, const std::string& ipath) {
        DecodeAttempt(d, item, ipath, coach->add_attempts());
      });
    }
  }
  auto elastic = object->find("elastic");
  if (elastic != object->end() && !elastic->is_null()) {
    DecodeElastic(d, *elastic, Join(path, "elastic"), coach->mutable_elastic());
  }
}

void DecodeStatusFields(FieldDecoder& d, const json& v, const std::string& path,
                        TrainingJobStatus* status) {
  const json* object = d.Object(v, path);
  if (object == nullptr) return;
  COACH_TIME_FIELD(d, *object, "startTime", path, status, TrainingJobStatus, start_time);
  COACH_TIME_FIELD(d, *object, "completionTime", path, status, TrainingJobStatus, completion_time);
  COACH_TIME_FIELD(d, *object, "lastReconcileTime", path, status, TrainingJobStatus,
                   last_reconcile_time);
  auto conditions = object->find("conditions");
  if (conditions != object->end() && !conditions->is_null()) {
    d.ObjectList(
        *conditions, Join(path, "conditions"), [&](const json& item, const std::string& ipath) {
          d.Unknown(
              item, ipath,
              {"type", "status", "reason", "message", "lastUpdateTime", "lastTransitionTime"});
          JobCondition* c = status->add_conditions();
          d.String(item, "type", ipath, [&](std::string s) { c->set_type(s); });
          d.String(item, "status", ipath, [&](std::string s) { c->set_status(s); });
          d.String(item, "reason", ipath, [&](std::string s) { c->set_reason(s); });
          d.String(item, "message", ipath, [&](std::string s) { c->set_message(s); });
          COACH_TIME_FIELD(d, item, "lastUpdateTime", ipath, c, JobCondition, last_update_time);
          COACH_TIME_FIELD(d, item, "lastTransitionTime", ipath, c, JobCondition,
                           last_transition_time);
        });
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
      d.Unknown(*it, ipath,
                {"active", "succeeded", "failed", "selector", "labelSelector", "replicas"});
      ReplicaStatus& rs = (*status->mutable_replica_statuses())[it.key()];
      d.Int32(*it, "active", ipath, [&](int32_t i) { rs.set_active(i); });
      d.Int32(*it, "succeeded", ipath, [&](int32_t i) { rs.set_succeeded(i); });
      d.Int32(*it, "failed", ipath, [&](int32_t i) { rs.set_failed(i); });
      d.Int32(*it, "replicas", ipath, [&](int32_t i) { rs.set_replicas(i); });
      d.String(*it, "selector", ipath, [&](std::string s) { rs.set_selector(s); });
      auto selector = it->find("labelSelector");
      if (selector != it->end() && !selector->is_null()) {
        if (selector->is_object()) {
          rs.set_label_selector_json(selector->dump());
        } else {
          d.Expected(Join(ipath, "labelSelector"), "an object (a metav1.LabelSelector)", *selector);
        }
      }
    }
  }
}

}  // namespace internal

namespace {

void DecodeStatus(FieldDecoder& d, const json& v, TrainingJobStatus* status) {
  const std::string path = "status";
  const json* object = d.Object(v, path);
  if (object == nullptr) return;
  std::set<std::string> known = internal::JobStatusFields();
  known.insert("coach");
  d.Unknown(*object, path, known);
  internal::DecodeStatusFields(d, *object, path, status);
  auto coach = object->find("coach");
  if (coach != object->end() && !coach->is_null()) {
    internal::DecodeCoachStatus(d, *coach, Join(path, "coach"), true, status->mutable_coach());
  }
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
  FieldDecoder d;
  job->Clear();
  if (!manifest.is_object()) {
    d.Error("", absl::StrCat("a manifest must be an object, got ", Describe(manifest)));
    return d.errors;
  }
  d.Unknown(manifest, "", {"apiVersion", "kind", "metadata", "spec", "status"});
  const KindInfo* info = nullptr;
  auto kind = manifest.find("kind");
  if (kind != manifest.end() && kind->is_string()) {
    info = FindKindByName(kind->get<std::string>());
  }
  // The kind says which apiVersion it needs (TrainJob: trainer.kubeflow.org/v1alpha1).
  const std::string_view want = info != nullptr ? info->api_version : kApiVersion;
  auto api_version = manifest.find("apiVersion");
  if (api_version == manifest.end() || !api_version->is_string() ||
      api_version->get<std::string>() != want) {
    d.Error("apiVersion",
            absl::StrCat("must be ", std::string(want), ", got ",
                         api_version == manifest.end() ? "nothing" : Describe(*api_version)));
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
  const bool train_job = info != nullptr && info->kind == TRAIN_JOB;
  if (info != nullptr) {
    auto spec = manifest.find("spec");
    const json& spec_value = spec == manifest.end() ? json() : *spec;
    if (train_job) {
      internal::DecodeTrainJobSpec(d, spec_value, job->mutable_spec());
      internal::DecodeTrainJobAnnotations(d, job->metadata(), job->mutable_spec());
    } else {
      DecodeSpec(d, spec_value, *info, job->mutable_spec());
    }
  }
  auto status = manifest.find("status");
  if (status != manifest.end() && !status->is_null()) {
    if (train_job) {
      internal::DecodeTrainJobStatus(d, *status, job->mutable_status());
    } else {
      DecodeStatus(d, *status, job->mutable_status());
    }
  }
  return d.errors;
}

absl::StatusOr<TrainingJob> JobFromJson(const json& manifest) {
  TrainingJob job;
  std::vector<FieldError> errors = DecodeJob(manifest, &job);
  if (!errors.empty()) return FieldErrorsToStatus(errors);
  return job;
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

}  // namespace coach::api::v1::codec
