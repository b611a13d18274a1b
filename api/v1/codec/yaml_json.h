#pragma once

// YAML (and therefore JSON) text <-> nlohmann::json values.
//
// Reading types plain scalars by the YAML 1.2 core schema: null (`~`, `null`, empty), bool
// (`true`/`false` in three casings), int (decimal, `0o` octal, `0x` hex; beyond 64 bits a
// float, as JSON parsers do), float (incl. exponents; `.inf`/`.nan` are rejected because
// JSON cannot hold them). Quoted scalars and scalars tagged `!!str` stay strings.
// Writing quotes every string that would re-read as something else, so that
// ParseYamlDocuments(ToYaml(v)) gives back v.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace coach::api::v1::codec {

// Documents nested deeper than this (maps and sequences) are rejected, so that hostile
// input cannot exhaust the stack of anything that walks the value recursively.
inline constexpr int kMaxYamlDepth = 100;
// Upper bounds on what one document may expand to through aliases (alias bombs): values, and
// bytes of scalars and keys (a few aliases of a long string multiply it without adding values).
// The byte bound is above the 1.5 MiB a Kubernetes object may have, so an object that could be
// stored is never refused by it, and low enough that refusing a bomb costs little.
inline constexpr int kMaxYamlNodes = 1000000;
inline constexpr int64_t kMaxYamlBytes = 4 << 20;

// Every non-empty document of `text`, in order; documents that are empty or hold only
// null (`---` alone) are skipped. Errors (InvalidArgument, message naming line and
// column, 1-based): YAML syntax errors, non-scalar or duplicate mapping keys, unknown
// aliases, non-finite floats, nesting deeper than kMaxYamlDepth, more than
// kMaxYamlNodes values or kMaxYamlBytes bytes of scalars and keys.
// `outer_depth`: for text that is one field of a larger document (a TrainingJob's
// template_json), the levels that enclose it there; they count toward kMaxYamlDepth, so that
// the field is held to the limit its whole document would be.
absl::StatusOr<std::vector<nlohmann::json>> ParseYamlDocuments(const std::string& text,
                                                               int outer_depth = 0);

// Exactly one document: InvalidArgument when `text` holds none or several.
absl::StatusOr<nlohmann::json> ParseYaml(const std::string& text, int outer_depth = 0);

// The core-schema value of a plain (unquoted, untagged) scalar: "1" -> 1, "1.5" -> 1.5,
// "true" -> true, "~" -> null, "abc" -> "abc". Non-finite floats resolve to strings.
nlohmann::json ResolvePlainScalar(const std::string& text);

// Block-style YAML of one value, ending in a newline, without a "---" line.
std::string ToYaml(const nlohmann::json& value);

// Several documents, each preceded by a "---" line.
std::string ToYamlDocuments(const std::vector<nlohmann::json>& values);

}  // namespace coach::api::v1::codec
