#include "operator/trainer/runtime_directory.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "api/v1/codec/yaml_json.h"

namespace coach::trainer {

using nlohmann::json;

absl::StatusOr<std::optional<json>> FindRuntimeInDirectory(const std::string& dir,
                                                           const std::string& kind,
                                                           const std::string& namespace_,
                                                           const std::string& name) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat(dir, " is not a directory"));
  }
  std::vector<fs::path> files;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec),
       end;
       !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    const std::string ext = p.extension().string();
    if ((ext == ".yaml" || ext == ".yml") && it->is_regular_file(ec) &&
        it->file_size(ec) <= kMaxRuntimeFileBytes) {
      files.push_back(p);
    }
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<std::vector<json>> docs = api::v1::codec::ParseYamlDocuments(text.str());
    if (!docs.ok()) continue;
    for (json& doc : *docs) {
      if (!doc.is_object() || doc.value("kind", "") != kind ||
          doc.value("apiVersion", "") != "trainer.kubeflow.org/v1alpha1") {
        continue;
      }
      const json& meta = doc.contains("metadata") && doc["metadata"].is_object() ? doc["metadata"]
                                                                                 : json::object();
      if (meta.value("name", "") != name) continue;
      if (kind == "TrainingRuntime" && meta.value("namespace", "default") != namespace_) continue;
      return std::optional<json>(std::move(doc));
    }
  }
  return std::optional<json>();
}

}  // namespace coach::trainer
