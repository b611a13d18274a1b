#include "operator/backend/local/object_table.h"

#include <dirent.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "operator/backend/local/fs_util.h"

namespace coach::backend::local {

namespace {

// The names in `dir` (not . and ..); empty when it does not exist.
absl::StatusOr<std::vector<std::string>> DirEntries(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) {
    if (errno == ENOENT) return names;
    return absl::InternalError(absl::StrCat("opendir ", dir, ": ", std::strerror(errno)));
  }
  while (struct dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(d);
  return names;
}

}  // namespace

absl::StatusOr<int> ObjectTable::ImportFiles() {
  absl::StatusOr<std::vector<std::string>> namespaces = DirEntries(legacy_dir_);
  if (!namespaces.ok()) return namespaces.status();
  int taken = 0;
  absl::Status first_error;
  for (const std::string& ns : *namespaces) {
    const std::string ns_dir = absl::StrCat(legacy_dir_, "/", ns);
    absl::StatusOr<std::vector<std::string>> files = DirEntries(ns_dir);
    if (!files.ok()) {
      first_error.Update(files.status());
      continue;
    }
    for (const std::string& file : *files) {
      const std::string path = absl::StrCat(ns_dir, "/", file);
      if (!absl::EndsWith(file, ".json")) {
        unlink(path.c_str());  // the .tmp of an interrupted write: nothing to take
        continue;
      }
      const JobKey job{ns, file.substr(0, file.size() - 5), ""};
      absl::StatusOr<std::string> text = ReadFile(path);
      if (!text.ok()) {
        first_error.Update(text.status());
        continue;
      }
      nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
      std::vector<std::pair<std::string, std::string>> objects;
      if (j.is_array()) {
        for (const auto& o : j) {
          if (o.is_array() && o.size() == 2 && o[0].is_string() && o[1].is_string()) {
            objects.emplace_back(o[0].get<std::string>(), o[1].get<std::string>());
          }
        }
      }
      // A corrupt file is dropped like a lost one: the next pass records its objects again.
      absl::Status added = objects.empty() ? absl::OkStatus() : store_->AddObjects(job, objects);
      if (!added.ok() && !absl::IsNotFound(added)) {
        first_error.Update(added);
        continue;
      }
      if (unlink(path.c_str()) != 0 && errno != ENOENT) {
        first_error.Update(
            absl::InternalError(absl::StrCat("unlink ", path, ": ", std::strerror(errno))));
        continue;
      }
      ++taken;
    }
    rmdir(ns_dir.c_str());  // best effort: empty once every file was taken
  }
  rmdir(legacy_dir_.c_str());
  if (!first_error.ok()) return first_error;
  return taken;
}

absl::Status ObjectTable::Add(const JobKey& job, const std::string& kind, const std::string& name) {
  return AddAll(job, {{kind, name}});
}

absl::Status ObjectTable::AddAll(const JobKey& job,
                                 const std::vector<std::pair<std::string, std::string>>& objects) {
  if (objects.empty()) return absl::OkStatus();
  return store_->AddObjects(job, objects);
}

absl::Status ObjectTable::Remove(const JobKey& job, const std::string& kind,
                                 const std::string& name) {
  return store_->RemoveObject(job, {kind, name});
}

absl::StatusOr<std::vector<model::ObservedObject>> ObjectTable::List(const JobKey& job) {
  absl::StatusOr<std::vector<ReplicaStore::ObjectName>> listed = store_->ListObjects(job);
  if (!listed.ok()) return listed.status();
  std::vector<model::ObservedObject> out;
  out.reserve(listed->size());
  for (auto& [kind, name] : *listed) out.push_back({std::move(kind), std::move(name)});
  return out;
}

absl::Status ObjectTable::Forget(const JobKey& job) { return store_->RemoveObjects(job); }

}  // namespace coach::backend::local
