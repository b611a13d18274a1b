#include "operator/backend/local/process/exit_record.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "operator/backend/local/fs_util.h"

namespace coach::backend::local {

std::string ExitRecordToJson(const ExitRecord& record) {
  nlohmann::json j = {
      {"exit_code", record.exit_code},
      {"signal", record.signal},
      {"finished_at",
       absl::FormatTime(absl::RFC3339_full, record.finished_at, absl::UTCTimeZone())},
      {"message", record.message},
  };
  if (record.pid != 0) {
    j["process"] = {{"pid", record.pid}, {"pgid", record.pgid}, {"start_time", record.start_time}};
  }
  return j.dump();
}

absl::StatusOr<ExitRecord> ExitRecordFromJson(const std::string& json) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("exit_code") || !j["exit_code"].is_number_integer()) {
    return absl::InvalidArgumentError("exit file is not an exit record");
  }
  ExitRecord r;
  r.exit_code = j["exit_code"].get<int>();
  if (j.contains("signal") && j["signal"].is_number_integer()) r.signal = j["signal"].get<int>();
  if (j.contains("message") && j["message"].is_string())
    r.message = j["message"].get<std::string>();
  if (j.contains("process") && j["process"].is_object()) {
    const nlohmann::json& p = j["process"];
    if (p.contains("pid") && p["pid"].is_number_integer() && p.contains("pgid") &&
        p["pgid"].is_number_integer() && p.contains("start_time") &&
        p["start_time"].is_number_unsigned()) {
      r.pid = p["pid"].get<pid_t>();
      r.pgid = p["pgid"].get<pid_t>();
      r.start_time = p["start_time"].get<uint64_t>();
    }
  }
  if (j.contains("finished_at") && j["finished_at"].is_string()) {
    std::string err;
    if (!absl::ParseTime(absl::RFC3339_full, j["finished_at"].get<std::string>(), &r.finished_at,
                         &err)) {
      return absl::InvalidArgumentError(absl::StrCat("exit file finished_at: ", err));
    }
  }
  return r;
}

std::string ReplicaFile(const std::string& replica_files, const char* name) {
  return absl::StrCat(replica_files, name);
}

std::string ReplicaFilesDir(const std::string& replica_files) { return DirName(replica_files); }

bool IsReplicaFilesPrefix(const std::string& replica_files) {
  return replica_files.size() > 1 && replica_files.front() == '/' && replica_files.back() == '.';
}

absl::Status WriteExitRecord(const std::string& replica_files, const ExitRecord& record) {
  return WriteFileAtomic(ReplicaFile(replica_files, kExitFileName), ExitRecordToJson(record));
}

absl::StatusOr<ExitRecord> ReadExitRecord(const std::string& replica_files) {
  absl::StatusOr<std::string> text = ReadFile(ReplicaFile(replica_files, kExitFileName));
  if (!text.ok()) return text.status();
  return ExitRecordFromJson(*text);
}

absl::Status WriteProcessFile(const std::string& replica_files, const ProcessFile& file) {
  nlohmann::json j = {{"pid", file.pid}, {"pgid", file.pgid}, {"start_time", file.start_time}};
  if (!file.cgroup.empty()) j["cgroup"] = file.cgroup;
  // Written in place, neither synced nor renamed: a power cut ends the process it names (a
  // missing file then reads as "never started", or the exit file names the process), and
  // the runner reads it only after the shim reported its start, so no reader sees it half
  // written (Recover retries one that is). A temporary file and a rename cost an inode
  // allocation per replica start, the shim's largest single cost (bench/README.md).
  const std::string path = ReplicaFile(replica_files, kProcessFileName);
  const std::string text = j.dump();
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return absl::InternalError(absl::StrCat("open ", path, ": ", strerror(errno)));
  const ssize_t n = write(fd, text.data(), text.size());
  const int write_errno = errno;
  close(fd);
  if (n != static_cast<ssize_t>(text.size())) {
    return absl::InternalError(
        absl::StrCat("write ", path, ": ", n < 0 ? strerror(write_errno) : "short write"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ProcessFile> ReadProcessFile(const std::string& replica_files) {
  absl::StatusOr<std::string> text = ReadFile(ReplicaFile(replica_files, kProcessFileName));
  if (!text.ok()) return text.status();
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("pid") || !j["pid"].is_number_integer() ||
      !j.contains("pgid") || !j["pgid"].is_number_integer() || !j.contains("start_time") ||
      !j["start_time"].is_number_unsigned()) {
    return absl::InvalidArgumentError("process file is malformed");
  }
  ProcessFile f;
  f.pid = j["pid"].get<pid_t>();
  f.pgid = j["pgid"].get<pid_t>();
  f.start_time = j["start_time"].get<uint64_t>();
  if (j.contains("cgroup") && j["cgroup"].is_string()) f.cgroup = j["cgroup"].get<std::string>();
  return f;
}

}  // namespace coach::backend::local
