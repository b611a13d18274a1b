#pragma once

// Field errors rendered the way Kubernetes' apimachinery (v0.36, the one upstream Trainer
// v2.3.0 builds with) prints them, so that coach's admission messages read like upstream's:
// `<path>: Invalid value: <value>: <detail>`, `<path>: Forbidden: <detail>`, and an aggregate of
// several as `[first, second]` with repeats dropped.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace coach::trainer {

struct FieldError {
  // Dotted field path such as `spec.trainer.env[0]`; empty for an error that names no field
  // (upstream's plain `unsupported runtime: ...`).
  std::string path;
  // Everything after `<path>: `, e.g. `Invalid value: "x": must be ...`.
  std::string body;

  std::string ToString() const;
};

// A scalar bad value prints as Go's %v (numbers, booleans) or %q (strings); anything else as
// its JSON encoding with Go's escaping of <, > and &. `value` is taken as it is: callers that
// want Go's field order pass a nlohmann::ordered_json.
FieldError Invalid(const std::string& path, const nlohmann::ordered_json& value,
                   const std::string& detail);
FieldError Forbidden(const std::string& path, const std::string& detail);
FieldError Required(const std::string& path, const std::string& detail);
// An error naming no field: `message` is the whole text.
FieldError Plain(const std::string& message);

// Go's strconv.Quote for the strings this package renders.
std::string GoQuote(const std::string& s);

// utilerrors.Aggregate of field.ErrorList.ToAggregate(): "" when empty, the error itself when
// one, else `[a, b, ...]` without repeats.
std::string Aggregate(const std::vector<FieldError>& errors);

}  // namespace coach::trainer
