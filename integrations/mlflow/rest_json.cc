#include "integrations/mlflow/rest_json.h"

#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace coach::mlflow::internal {

using json = nlohmann::json;

int64_t Int64Field(const json& j, const char* name, int64_t fallback) {
  auto it = j.find(name);
  if (it == j.end()) return fallback;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_number()) return static_cast<int64_t>(it->get<double>());
  if (it->is_string()) {
    int64_t v = 0;
    if (absl::SimpleAtoi(it->get<std::string>(), &v)) return v;
  }
  return fallback;
}

std::string StringField(const json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

Metric ParseMetric(const json& j) {
  Metric m;
  m.key = StringField(j, "key");
  m.timestamp_ms = Int64Field(j, "timestamp");
  m.step = Int64Field(j, "step");
  auto it = j.find("value");
  if (it != j.end()) {
    if (it->is_number()) {
      m.value = it->get<double>();
    } else if (it->is_string()) {
      std::string v = it->get<std::string>();
      if (v == "NaN")
        m.value = std::nan("");
      else if (v == "Infinity")
        m.value = INFINITY;
      else if (v == "-Infinity")
        m.value = -INFINITY;
      else
        absl::SimpleAtod(v, &m.value);
    }
  }
  return m;
}

RunInfo ParseRunInfo(const json& j) {
  RunInfo info;
  info.run_id = StringField(j, "run_id");
  if (info.run_id.empty()) info.run_id = StringField(j, "run_uuid");
  info.experiment_id = StringField(j, "experiment_id");
  info.run_name = StringField(j, "run_name");
  info.status = ParseRunStatus(StringField(j, "status")).value_or(RunStatus::kRunning);
  info.start_time_ms = Int64Field(j, "start_time");
  if (j.contains("end_time")) info.end_time_ms = Int64Field(j, "end_time");
  info.artifact_uri = StringField(j, "artifact_uri");
  info.lifecycle_stage = StringField(j, "lifecycle_stage");
  return info;
}

Run ParseRun(const json& j) {
  Run run;
  if (auto it = j.find("info"); it != j.end()) run.info = ParseRunInfo(*it);
  if (auto d = j.find("data"); d != j.end() && d->is_object()) {
    for (const json& m : d->value("metrics", json::array()))
      run.latest_metrics.push_back(ParseMetric(m));
    for (const json& p : d->value("params", json::array())) {
      run.params[StringField(p, "key")] = StringField(p, "value");
    }
    for (const json& t : d->value("tags", json::array())) {
      run.tags[StringField(t, "key")] = StringField(t, "value");
    }
  }
  return run;
}

absl::StatusOr<json> ParseJson(const std::string& body, absl::string_view what) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return absl::UnavailableError(absl::StrCat("MLflow ", what, ": response is not JSON"));
  }
  return j;
}

json TagsJson(const std::vector<Tag>& tags) {
  json arr = json::array();
  for (const Tag& t : tags) arr.push_back({{"key", t.key}, {"value", t.value}});
  return arr;
}

}  // namespace coach::mlflow::internal
