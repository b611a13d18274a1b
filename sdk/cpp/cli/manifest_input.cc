#include "sdk/cpp/cli/manifest_input.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/v1/codec/job_codec.h"
#include "api/v1/defaults.h"
#include "api/v1/validation.h"

namespace coach::cli {

namespace {

// At most kMaxManifestBytes of `in`; InvalidArgument naming `what` beyond it.
absl::StatusOr<std::string> ReadBounded(std::istream& in, const std::string& what) {
  std::string text;
  char buffer[64 * 1024];
  while (in.read(buffer, sizeof(buffer)) || in.gcount() > 0) {
    text.append(buffer, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxManifestBytes) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": longer than ", kMaxManifestBytes,
                                                     " bytes, more than a manifest may be"));
    }
  }
  if (in.bad()) return absl::InternalError(absl::StrCat(what, ": read failed"));
  return text;
}

}  // namespace

absl::StatusOr<std::string> ReadInput(const std::string& path) {
  if (path == "-") return ReadBounded(std::cin, "standard input");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory, not a manifest"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int err = errno;
    std::string message = absl::StrCat(path, ": ", std::strerror(err));
    if (err == EACCES) return absl::PermissionDeniedError(message);
    return absl::NotFoundError(message);
  }
  return ReadBounded(in, path);
}

absl::StatusOr<std::vector<api::v1::TrainingJob>> LoadJobs(const std::string& text,
                                                           const std::string& namespace_override) {
  absl::StatusOr<std::vector<api::v1::TrainingJob>> jobs = api::v1::codec::ParseManifests(text);
  if (!jobs.ok()) return jobs.status();
  if (jobs->empty()) return absl::InvalidArgumentError("no job in the input");

  std::vector<std::string> errors;
  for (size_t i = 0; i < jobs->size(); ++i) {
    api::v1::TrainingJob& job = (*jobs)[i];
    // Several documents: say which one each error is about.
    // 1-based, as the decoder counts them.
    std::string prefix = jobs->size() > 1 ? absl::StrCat("document ", i + 1, ": ") : "";
    // As kubectl: the manifest's own namespace wins over the default; only a -n the user
    // typed that says otherwise is a conflict.
    const std::string& ns = job.metadata().namespace_();
    if (ns.empty()) {
      job.mutable_metadata()->set_namespace_(namespace_override.empty() ? "default"
                                                                        : namespace_override);
    } else if (!namespace_override.empty() && ns != namespace_override) {
      errors.push_back(absl::StrCat(prefix, "metadata.namespace: the manifest says \"", ns,
                                    "\" but --namespace says \"", namespace_override, "\""));
    }
    api::v1::SetDefaults(&job);
    for (const api::v1::FieldError& error : api::v1::Validate(job)) {
      errors.push_back(absl::StrCat(prefix, error.path, ": ", error.message));
    }
  }
  if (!errors.empty()) return absl::InvalidArgumentError(absl::StrJoin(errors, "\n"));
  return jobs;
}

}  // namespace coach::cli
