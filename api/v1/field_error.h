#pragma once

// One problem with one field of a manifest, and the conversion of a list of them into the
// single absl::Status that the codec, the validation and their callers return.

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace coach::api::v1 {

struct FieldError {
  // Dotted JSON path from the object root, e.g. "spec.runPolicy.backoffLimit",
  // "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].image", "metadata.labels[app]".
  // Empty for problems with the document as a whole.
  std::string path;
  // What is wrong and what is allowed, e.g. "must be >= 0, got -1".
  std::string message;

  bool operator==(const FieldError& other) const {
    return path == other.path && message == other.message;
  }
};

// "path: message" (or just "message" when the path is empty).
std::string FormatFieldError(const FieldError& error);

// OK when `errors` is empty; otherwise InvalidArgument whose message lists every error,
// one per line, as FormatFieldError writes it, each line preceded by `prefix` (e.g.
// "document 2: "; may be empty).
absl::Status FieldErrorsToStatus(const std::vector<FieldError>& errors,
                                 const std::string& prefix = "");

}  // namespace coach::api::v1
