#include "launcher/checkpoint_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace coach::launcher {
namespace {

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

bool WriteAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// An integer of the JSON, whichever of nlohmann's integer kinds holds it.
std::optional<int64_t> Integer(const nlohmann::json& v) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  return std::nullopt;
}

}  // namespace

std::string RenderCheckpointRequest(int64_t id, int64_t deadline_unix_ms) {
  return absl::StrCat("{\"id\":", id, ",\"deadline_unix_ms\":", deadline_unix_ms, "}\n");
}

absl::Status WriteFileAtomically(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp";
  // The directory is the launcher's, but its workers may write there: whatever stands at the
  // temporary name goes, and O_EXCL refuses to open through a link made in between.
  if (unlink(tmp.c_str()) != 0 && errno != ENOENT) return Errno("cannot remove", tmp);
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("cannot create", tmp);
  const bool written = WriteAll(fd, content);
  const int write_errno = errno;
  const bool closed = close(fd) == 0;
  if (!written || !closed) {
    if (!written) errno = write_errno;
    absl::Status s = Errno("cannot write", tmp);
    unlink(tmp.c_str());
    return s;
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    absl::Status s = Errno(absl::StrCat("cannot rename ", tmp, " to"), path);
    unlink(tmp.c_str());
    return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadSmallFile(const std::string& path, size_t max_bytes) {
  // O_NONBLOCK: a FIFO put there must not hang the launcher in open().
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat("no file ", path));
    if (errno == ELOOP) {
      return absl::FailedPreconditionError(absl::StrCat(path, " is a symbolic link"));
    }
    return Errno("cannot open", path);
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return absl::FailedPreconditionError(absl::StrCat(path, " is not a regular file"));
  }
  std::string content;
  char buf[1024];
  while (content.size() <= max_bytes) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      absl::Status s = Errno("cannot read", path);
      close(fd);
      return s;
    }
    if (n == 0) break;
    content.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  if (content.size() > max_bytes) {
    return absl::OutOfRangeError(absl::StrCat(path, " holds more than ", max_bytes, " bytes"));
  }
  return content;
}

absl::StatusOr<pid_t> ParseArmedPid(absl::string_view text) {
  const absl::string_view digits = absl::StripAsciiWhitespace(text);
  int64_t pid = 0;
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), absl::ascii_isdigit) ||
      !absl::SimpleAtoi(digits, &pid) || pid <= 1 || pid > INT32_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a process id: \"", BoundedMessage(text, 32), "\""));
  }
  return static_cast<pid_t>(pid);
}

absl::StatusOr<WorkerAnswer> ParseWorkerAnswer(absl::string_view text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError("not a JSON object");
  }
  WorkerAnswer answer;
  auto id = j.find("id");
  std::optional<int64_t> id_value;
  if (id != j.end()) id_value = Integer(*id);
  if (!id_value || *id_value < 1) {
    return absl::InvalidArgumentError("\"id\": want an integer >= 1");
  }
  answer.id = *id_value;
  if (auto error = j.find("error"); error != j.end()) {
    if (!error->is_string()) return absl::InvalidArgumentError("\"error\": want a string");
    answer.error = BoundedMessage(error->get<std::string>(), 200);
    if (answer.error.empty()) answer.error = "(no reason given)";
    return answer;
  }
  auto step = j.find("step");
  std::optional<int64_t> step_value;
  if (step != j.end()) step_value = Integer(*step);
  if (!step_value || *step_value < 0) {
    return absl::InvalidArgumentError("\"step\": want an integer >= 0 (or an \"error\")");
  }
  answer.step = *step_value;
  return answer;
}

std::string BoundedMessage(absl::string_view text, size_t max_bytes) {
  std::string out;
  const bool cut = text.size() > max_bytes;
  const size_t keep = cut ? (max_bytes > 3 ? max_bytes - 3 : 0) : text.size();
  out.reserve(keep + 3);
  for (char c : text.substr(0, keep)) out += (c >= ' ' && c <= '~') ? c : '?';
  if (cut) out.append("...", std::min<size_t>(3, max_bytes));
  return out;
}

}  // namespace coach::launcher
