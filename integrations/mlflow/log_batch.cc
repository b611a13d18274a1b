#include "integrations/mlflow/log_batch.h"

#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace coach::mlflow::internal {
namespace {

using json = nlohmann::json;

// MLflow's JSON spells the non-finite values as strings.
json MetricJson(const Metric& m) {
  json j = {{"key", m.key}, {"timestamp", m.timestamp_ms}, {"step", m.step}};
  if (std::isnan(m.value)) {
    j["value"] = "NaN";
  } else if (std::isinf(m.value)) {
    j["value"] = m.value > 0 ? "Infinity" : "-Infinity";
  } else {
    j["value"] = m.value;
  }
  return j;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> SplitLogBatch(absl::string_view run_id,
                                                       const std::vector<Metric>& metrics,
                                                       const std::vector<Param>& params,
                                                       const std::vector<Tag>& tags) {
  // Params: one per key (write-once), conflicts refused before anything is sent.
  std::vector<const Param*> unique_params;
  absl::flat_hash_map<absl::string_view, const Param*> seen;
  for (const Param& p : params) {
    RETURN_IF_ERROR(ValidateKey(p.key));
    auto [it, inserted] = seen.emplace(p.key, &p);
    if (inserted) {
      unique_params.push_back(&p);
    } else if (it->second->value != p.value) {
      return absl::InvalidArgumentError(absl::StrCat(
          "param \"", p.key, "\" given twice with different values (params are write-once)"));
    }
  }
  // Tags: the last value per key wins, as if set one after the other.
  std::vector<const Tag*> unique_tags;
  absl::flat_hash_map<absl::string_view, size_t> tag_index;
  for (const Tag& t : tags) {
    RETURN_IF_ERROR(ValidateKey(t.key));
    auto [it, inserted] = tag_index.emplace(t.key, unique_tags.size());
    if (inserted) {
      unique_tags.push_back(&t);
    } else {
      unique_tags[it->second] = &t;
    }
  }
  for (const Metric& m : metrics) RETURN_IF_ERROR(ValidateKey(m.key));

  std::vector<std::string> bodies;
  const std::string head = absl::StrCat("{\"run_id\":", json(std::string(run_id)).dump());
  struct Chunk {
    std::vector<std::string> metrics, params, tags;
    size_t bytes = 0;
    size_t entities() const { return metrics.size() + params.size() + tags.size(); }
  } chunk;
  chunk.bytes = head.size() + 40;
  auto flush = [&] {
    if (chunk.entities() == 0) return;
    std::string body = head;
    absl::StrAppend(&body, ",\"metrics\":[", absl::StrJoin(chunk.metrics, ","), "]");
    absl::StrAppend(&body, ",\"params\":[", absl::StrJoin(chunk.params, ","), "]");
    absl::StrAppend(&body, ",\"tags\":[", absl::StrJoin(chunk.tags, ","), "]}");
    bodies.push_back(std::move(body));
    chunk = Chunk{};
    chunk.bytes = head.size() + 40;
  };
  auto add = [&](std::string entity, std::vector<std::string> Chunk::*list,
                 size_t cap) -> absl::Status {
    if (entity.size() + head.size() + 40 > kMaxBatchJsonBytes) {
      return absl::InvalidArgumentError("one entity exceeds MLflow's 1 MB log-batch request limit");
    }
    if ((chunk.*list).size() >= cap ||
        chunk.entities() >= static_cast<size_t>(kMaxEntitiesPerBatch) ||
        chunk.bytes + entity.size() + 1 > kMaxBatchJsonBytes) {
      flush();
    }
    chunk.bytes += entity.size() + 1;
    (chunk.*list).push_back(std::move(entity));
    return absl::OkStatus();
  };
  for (const Param* p : unique_params) {
    RETURN_IF_ERROR(
        add(json{{"key", p->key}, {"value", p->value}}.dump(), &Chunk::params, kMaxParamsPerBatch));
  }
  for (const Tag* t : unique_tags) {
    RETURN_IF_ERROR(
        add(json{{"key", t->key}, {"value", t->value}}.dump(), &Chunk::tags, kMaxTagsPerBatch));
  }
  for (const Metric& m : metrics) {
    RETURN_IF_ERROR(add(MetricJson(m).dump(), &Chunk::metrics, kMaxMetricsPerBatch));
  }
  flush();
  return bodies;
}

}  // namespace coach::mlflow::internal
