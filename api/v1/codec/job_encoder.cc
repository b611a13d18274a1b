#include "api/v1/codec/job_encoder.h"

#include <cmath>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "api/v1/codec/field_decoder.h"
#include "api/v1/codec/kind_fields.h"
#include "api/v1/codec/yaml_json.h"
#include "api/v1/job_conditions.h"
#include "api/v1/job_policies.h"
#include "api/v1/kinds.h"
#include "google/protobuf/util/time_util.h"

namespace coach::api::v1::codec {
namespace {

using google::protobuf::Timestamp;
using google::protobuf::util::TimeUtil;
using nlohmann::json;

std::string FormatTime(const Timestamp& ts) { return TimeUtil::ToString(ts); }

// Accepts every JSON text and keeps the first syntax error: a check that builds no value, so
// that no input is too deep for it.
class JsonSyntax : public nlohmann::json_sax<json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    // "[json.exception.parse_error.101] parse error at line 1, ...": the part after the tag.
    error = e.what();
    if (size_t tag = error.find("] "); tag != std::string::npos) error = error.substr(tag + 2);
    return false;
  }

  std::string error;
};

class Encoder {
 public:
  explicit Encoder(std::vector<FieldError>* errors) : errors_(errors) {}

  json Job(const TrainingJob& job) {
    const KindInfo* info = FindKind(job.kind());
    json out = json::object();
    out["apiVersion"] = std::string(info != nullptr ? info->api_version : kApiVersion);
    if (info != nullptr) out["kind"] = std::string(info->name);
    out["metadata"] = Metadata(job.metadata());
    if (job.kind() == TRAIN_JOB) {
      // A TTL set through the model lives where a TrainJob keeps it: coach's annotation.
      if (job.spec().run_policy().has_ttl_seconds_after_finished()) {
        out["metadata"]["annotations"][kAnnotationTtlSecondsAfterFinished] =
            absl::StrCat(job.spec().run_policy().ttl_seconds_after_finished());
      }
      out["spec"] = TrainJobSpec(job.spec());
      if (job.has_status()) out["status"] = TrainJobStatus(job.status());
      return out;
    }
    if (info != nullptr) out["spec"] = Spec(job, *info);
    if (job.has_status()) out["status"] = Status(job.status());
    return out;
  }

 private:
  // The value of a free-form JSON field, read as the text of a manifest is read (its limits
  // included, `outer_depth` being the levels that enclose the field in a manifest), so that a
  // value a manifest could not hold cannot enter this way either. nullopt when unusable, with an
  // error at `path` naming `field`.
  std::optional<json> Stored(const std::string& text, const std::string& path, const char* field,
                             int outer_depth) {
    JsonSyntax syntax;
    if (!json::sax_parse(text, &syntax)) {
      Error(path, absl::StrCat(field, " is not valid JSON: ", syntax.error));
      return std::nullopt;
    }
    absl::StatusOr<std::vector<json>> docs = ParseYamlDocuments(text, outer_depth);
    if (!docs.ok()) {
      Error(path, absl::StrCat(field, ": ", docs.status().message()));
      return std::nullopt;
    }
    // A document of only null is no document to the YAML reader; valid JSON holds one value.
    return docs->empty() ? json() : std::move(docs->front());
  }

  void Error(const std::string& path, std::string message) {
    if (errors_ != nullptr) errors_->push_back({path, std::move(message)});
  }

  json Metadata(const ObjectMeta& meta) {
    json m = json::object();
    if (!meta.extra_json().empty()) {
      const std::string path = "metadata.extra_json";
      std::optional<json> extra = Stored(meta.extra_json(), path, "extra_json", 1);
      if (extra.has_value() && !extra->is_object()) {
        Error(path, absl::StrCat("must be a JSON object (the metadata fields ObjectMeta does not "
                                 "model), got ",
                                 Describe(*extra)));
      } else if (extra.has_value()) {
        for (auto it = extra->begin(); it != extra->end(); ++it) {
          if (ModelledMetadataFields().count(it.key()) > 0) {
            Error(path, absl::StrCat("must not hold \"", it.key(),
                                     "\": ObjectMeta has a field of its own for it"));
          }
        }
        m = std::move(*extra);
      }
    }
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
    return m;
  }

  json Spec(const TrainingJob& job, const KindInfo& info) {
    const TrainingJobSpec& spec = job.spec();
    json out = json::object();
    if (spec.has_run_policy()) out["runPolicy"] = RunPolicyOf(spec.run_policy());
    const std::string replicas_path = absl::StrCat("spec.", std::string(info.replica_specs_key));
    json replicas = json::object();
    for (const auto& [type, replica] : spec.replica_specs()) {
      json r = json::object();
      if (replica.has_replicas()) r["replicas"] = replica.replicas();
      if (!replica.restart_policy().empty()) r["restartPolicy"] = replica.restart_policy();
      if (!replica.template_json().empty()) {
        std::optional<json> tmpl =
            Stored(replica.template_json(), absl::StrCat(replicas_path, ".", type, ".template"),
                   "template_json", 4);
        if (tmpl.has_value()) r["template"] = std::move(*tmpl);
      }
      replicas[type] = r;
    }
    out[std::string(info.replica_specs_key)] = replicas;
    // Every field set is written, those of another kind too: what the job holds, so that the
    // decoder refuses on a job what it refuses in a manifest. Decoded jobs hold no such field.
    if (spec.has_elastic_policy()) out["elasticPolicy"] = Elastic(spec.elastic_policy());
    if (spec.has_nproc_per_node()) out["nprocPerNode"] = spec.nproc_per_node();
    if (spec.has_success_policy()) out["successPolicy"] = spec.success_policy();
    if (spec.has_enable_dynamic_worker()) {
      out["enableDynamicWorker"] = spec.enable_dynamic_worker();
    }
    if (spec.has_slots_per_worker()) out["slotsPerWorker"] = spec.slots_per_worker();
    if (spec.has_mpi_clean_pod_policy()) out["cleanPodPolicy"] = spec.mpi_clean_pod_policy();
    if (spec.has_main_container()) out["mainContainer"] = spec.main_container();
    return out;
  }

  static json RunPolicyOf(const RunPolicy& rp) {
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
    return policy;
  }

  json Elastic(const ElasticPolicy& ep) {
    json e = json::object();
    if (ep.has_min_replicas()) e["minReplicas"] = ep.min_replicas();
    if (ep.has_max_replicas()) e["maxReplicas"] = ep.max_replicas();
    if (ep.has_max_restarts()) e["maxRestarts"] = ep.max_restarts();
    if (!ep.metrics_json().empty()) {
      std::optional<json> metrics =
          Stored(ep.metrics_json(), "spec.elasticPolicy.metrics", "metrics_json", 3);
      if (metrics.has_value()) e["metrics"] = std::move(*metrics);
    }
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
    return e;
  }

  json Status(const TrainingJobStatus& status) {
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
        if (rs.replicas() != 0) item["replicas"] = rs.replicas();
        if (!rs.selector().empty()) item["selector"] = rs.selector();
        if (!rs.label_selector_json().empty()) {
          std::optional<json> selector =
              Stored(rs.label_selector_json(),
                     absl::StrCat("status.replicaStatuses.", type, ".labelSelector"),
                     "label_selector_json", 4);
          if (selector.has_value()) item["labelSelector"] = std::move(*selector);
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
    if (status.has_coach()) out["coach"] = Coach(status.coach());
    return out;
  }

  json TrainJobSpec(const TrainingJobSpec& spec) {
    json out = json::object();
    if (!spec.train_job_spec_json().empty()) {
      const std::string path = "spec.train_job_spec_json";
      std::optional<json> kept = Stored(spec.train_job_spec_json(), path, "train_job_spec_json", 1);
      if (kept.has_value() && kept->is_object()) {
        out = std::move(*kept);
      } else if (kept.has_value()) {
        Error(path,
              absl::StrCat("must be a JSON object (a TrainJob's spec), got ", Describe(*kept)));
      }
    }
    const RunPolicy& rp = spec.run_policy();
    if (rp.has_suspend()) out["suspend"] = rp.suspend();
    if (rp.has_active_deadline_seconds()) {
      out["activeDeadlineSeconds"] = rp.active_deadline_seconds();
    }
    if (rp.has_managed_by()) out["managedBy"] = rp.managed_by();
    return out;
  }

  // A TrainJob's status: upstream's conditions (Suspended, Complete, Failed) seen from coach's
  // (api/v1/job_conditions.h), jobsStatus, trainerStatus; coach's own conditions, replica
  // counts and times beside its status.coach fields, in status.coach.
  json TrainJobStatus(const TrainingJobStatus& status) {
    json out = json::object();
    json conditions = json::array();
    for (const JobCondition& c : status.conditions()) {
      json item;
      if (c.type() == kJobSuspended) {
        const bool suspended = c.status() == kConditionTrue;
        item = {{"type", kJobSuspended},
                {"status", c.status()},
                {"reason", suspended ? kTrainJobSuspendedReason : kTrainJobResumedReason},
                {"message", suspended ? kTrainJobSuspendedMessage : kTrainJobResumedMessage}};
      } else if (c.type() == kJobSucceeded && c.status() == kConditionTrue) {
        item = {{"type", kTrainJobComplete},
                {"status", kConditionTrue},
                {"reason", kTrainJobCompleteReason},
                {"message", kTrainJobCompleteMessage}};
      } else if (c.type() == kJobFailed && c.status() == kConditionTrue) {
        item = {{"type", kJobFailed},
                {"status", kConditionTrue},
                {"reason", c.reason().empty() ? kTrainJobFailedJobsReason : c.reason()},
                {"message", c.message()}};
      } else {
        continue;
      }
      if (c.has_last_transition_time()) {
        item["lastTransitionTime"] = FormatTime(c.last_transition_time());
      }
      conditions.push_back(std::move(item));
    }
    if (!conditions.empty()) out["conditions"] = std::move(conditions);
    if (status.jobs_status_size() > 0) {
      json jobs = json::array();
      for (const ReplicatedJobStatus& j : status.jobs_status()) {
        jobs.push_back({{"name", j.name()},
                        {"ready", j.ready()},
                        {"succeeded", j.succeeded()},
                        {"failed", j.failed()},
                        {"active", j.active()},
                        {"suspended", j.suspended()}});
      }
      out["jobsStatus"] = std::move(jobs);
    }
    if (!status.trainer_status_json().empty()) {
      std::optional<json> trainer =
          Stored(status.trainer_status_json(), "status.trainerStatus", "trainer_status_json", 2);
      if (trainer.has_value()) out["trainerStatus"] = std::move(*trainer);
    }
    TrainingJobStatus own = status;
    own.clear_coach();
    json coach = Status(own);
    if (status.has_coach()) coach.update(Coach(status.coach()));
    if (!coach.empty()) out["coach"] = std::move(coach);
    return out;
  }

  static json Coach(const CoachJobStatus& coach) {
    json out = json::object();
    if (coach.attempt() != 0) out["attempt"] = coach.attempt();
    if (coach.restarts() != 0) out["restarts"] = coach.restarts();
    if (coach.disruptions() != 0) out["disruptions"] = coach.disruptions();
    if (coach.in_place_restarts() != 0) out["inPlaceRestarts"] = coach.in_place_restarts();
    if (coach.has_restart_time()) out["restartTime"] = FormatTime(coach.restart_time());
    if (!coach.restarts_by_type().empty()) {
      json by_type = json::object();
      for (const auto& [type, restarts] : coach.restarts_by_type()) by_type[type] = restarts;
      out["restartsByType"] = by_type;
    }
    if (coach.has_attempt_running_time()) {
      out["attemptRunningTime"] = FormatTime(coach.attempt_running_time());
    }
    if (coach.has_progress()) out["progress"] = Progress(coach.progress());
    if (coach.attempts_size() > 0) {
      json attempts = json::array();
      for (const JobAttempt& attempt : coach.attempts()) attempts.push_back(Attempt(attempt));
      out["attempts"] = std::move(attempts);
    }
    if (coach.has_elastic()) out["elastic"] = Elastic(coach.elastic());
    return out;
  }

  // `workers` is always written, 0 included: it is what the job trains with, and a change's
  // count is what it changed to.
  static json Elastic(const ElasticStatus& elastic) {
    json out = json::object();
    if (elastic.min_workers() != 0) out["minWorkers"] = elastic.min_workers();
    if (elastic.max_workers() != 0) out["maxWorkers"] = elastic.max_workers();
    out["workers"] = elastic.workers();
    if (elastic.changes_size() > 0) {
      json changes = json::array();
      for (const WorkerCountChange& change : elastic.changes()) changes.push_back(Change(change));
      out["changes"] = std::move(changes);
    }
    return out;
  }

  static json Change(const WorkerCountChange& change) {
    json out = json::object();
    if (change.has_time()) out["time"] = FormatTime(change.time());
    out["workers"] = change.workers();
    if (change.step() != 0) out["step"] = change.step();
    if (!change.why().empty()) out["why"] = change.why();
    return out;
  }

  static json Attempt(const JobAttempt& attempt) {
    json out = json::object();
    out["attempt"] = attempt.attempt();
    if (attempt.has_start_time()) out["startTime"] = FormatTime(attempt.start_time());
    if (attempt.has_running_time()) out["runningTime"] = FormatTime(attempt.running_time());
    if (attempt.has_end_time()) out["endTime"] = FormatTime(attempt.end_time());
    if (!attempt.reason().empty()) out["reason"] = attempt.reason();
    if (!attempt.message().empty()) out["message"] = attempt.message();
    if (!attempt.replica().empty()) out["replica"] = attempt.replica();
    if (attempt.has_exit_code()) out["exitCode"] = attempt.exit_code();
    if (!attempt.signal().empty()) out["signal"] = attempt.signal();
    if (!attempt.nodes().empty()) {
      json nodes = json::object();
      for (const auto& [replica, node] : attempt.nodes()) nodes[replica] = node;
      out["nodes"] = std::move(nodes);
    }
    if (attempt.last_step() != 0) out["lastStep"] = attempt.last_step();
    if (attempt.counted()) out["counted"] = true;
    if (attempt.has_steps_lost()) out["stepsLost"] = attempt.steps_lost();
    return out;
  }

  // A metric or rate that is NaN or infinite is left out, silently: JSON has no such numbers
  // (nlohmann would write null, which the decoder refuses as a number and the API server
  // prunes), and a loss that went NaN is a fact of training, not a broken job: it must not make
  // the job's status unwritable or the job unreadable. The replica's log still has the value.
  static json Progress(const JobProgress& progress) {
    json out = json::object();
    if (progress.step() != 0) out["step"] = progress.step();
    json metrics = json::object();
    for (const auto& [name, value] : progress.metrics()) {
      if (std::isfinite(value)) metrics[name] = value;
    }
    if (!metrics.empty()) out["metrics"] = metrics;
    if (std::isfinite(progress.steps_per_second()) && progress.steps_per_second() != 0) {
      out["stepsPerSecond"] = progress.steps_per_second();
    }
    if (progress.has_last_progress_time()) {
      out["lastProgressTime"] = FormatTime(progress.last_progress_time());
    }
    return out;
  }

  std::vector<FieldError>* const errors_;
};

}  // namespace

std::vector<FieldError> EncodeJob(const TrainingJob& job, json* manifest) {
  std::vector<FieldError> errors;
  *manifest = Encoder(&errors).Job(job);
  return errors;
}

absl::StatusOr<json> JobToJsonChecked(const TrainingJob& job) {
  json manifest;
  std::vector<FieldError> errors = EncodeJob(job, &manifest);
  if (!errors.empty()) return FieldErrorsToStatus(errors);
  return manifest;
}

json JobToJson(const TrainingJob& job) { return Encoder(nullptr).Job(job); }

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
  // Replacing what is not UTF-8 (a job built in code may hold such a string) instead of throwing.
  return out.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace coach::api::v1::codec
