#pragma once

// The `coach-result key=value ...` line every rank of the example programs prints at its end
// (examples/README.md), read back from the replicas' logs by the suites that run them.

#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace coach::e2e {

using ResultFields = std::map<std::string, std::string>;

// The fields of every coach-result line in `logs`, in order. A line may carry a launcher's
// prefix before "coach-result " (torchrun --tee).
std::vector<ResultFields> ResultLines(absl::string_view logs);

// Adds a test failure unless the coach-result lines of `logs` are ranks 0..world_size-1 once
// each, every one status=ok with that world_size and a non-empty `checksum_key`, all agreeing
// on it (the trained parameters). `logs` is quoted in the failures.
void ExpectRanksAgree(absl::string_view logs, int world_size,
                      const std::string& checksum_key = "params_checksum");

}  // namespace coach::e2e
