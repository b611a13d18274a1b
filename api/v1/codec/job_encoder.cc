#include "api/v1/codec/job_encoder.h"

#include "absl/strings/str_cat.h"
#include "api/v1/codec/kind_fields.h"
#include "api/v1/codec/yaml_json.h"
#include "api/v1/kinds.h"
#include "google/protobuf/util/time_util.h"

namespace coach::api::v1::codec {
namespace {

using google::protobuf::Timestamp;
using google::protobuf::util::TimeUtil;
using nlohmann::json;

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

}  // namespace

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
