#include "operator/backend/log_tails.h"

#include <atomic>

namespace coach::backend {
namespace {

void KeepTail(std::string& log, int64_t max_bytes) {
  if (static_cast<int64_t>(log.size()) > max_bytes) {
    log.erase(0, log.size() - static_cast<size_t>(max_bytes));
  }
}

}  // namespace

absl::StatusOr<std::map<std::string, std::string>> ReadLogTails(Backend& backend,
                                                                const model::Job& job,
                                                                const LogOptions& options,
                                                                int64_t max_bytes) {
  std::map<std::string, std::string> logs;
  std::atomic<bool> cancelled{false};
  absl::Status read = backend.StreamLogs(
      job, options,
      [&](const std::string& replica, const std::string& data) {
        std::string& log = logs[replica];
        log += data;
        // Cut now and then rather than at every chunk: one copy per max_bytes read.
        if (static_cast<int64_t>(log.size()) > 2 * max_bytes) KeepTail(log, max_bytes);
        return true;
      },
      cancelled);
  if (!read.ok()) return read;
  for (auto& [replica, log] : logs) KeepTail(log, max_bytes);
  return logs;
}

}  // namespace coach::backend
