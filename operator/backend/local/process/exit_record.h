#pragma once

// The files the replica shim leaves for a replica, read back by the runner even after an
// operator restart (when the replica is no longer the operator's child). `replica_files`
// names them (ReplicaFile):
//   process    {"pid","pgid","start_time"[,"cgroup"]}   written once the command started
//   exit       {"exit_code","signal","finished_at","message",
//               "process": {"pid","pgid","start_time"}}  written last
//   progress   the replica's progress (progress_file.h), when it reported any
//   heartbeat  the replica's own (COACH_HEARTBEAT_FILE), when it touched it
// The exit and progress files are written atomically (tmp + rename), so a reader sees all of
// one or none; the process file in place (a temporary file would cost an inode per start).
// Only the exit file is synced: it also names the process, so that an ended replica is still
// recognised when a power cut lost its process file.

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace coach::backend::local {

inline constexpr char kExitFileName[] = "exit";

// The shim's exit status when the replica ended but its exit file could not be written (a
// full disk): the runner, when it is the shim's parent, says so instead of "gone".
inline constexpr int kShimExitNotRecorded = 75;  // EX_TEMPFAIL
inline constexpr char kProcessFileName[] = "process";
inline constexpr char kProgressFileName[] = "progress";
inline constexpr char kHeartbeatFileName[] = "heartbeat";
// The files of one run of a replica: removed before the next run of the same pod starts, so
// that nothing of an ended run reads as the new one's (its exit, its process, its progress).
inline constexpr const char* kRunFileNames[] = {kExitFileName, kProcessFileName, kProgressFileName,
                                                kHeartbeatFileName};

// The path of the replica's file `name`: `replica_files` is a prefix ending in '.'
// ("<job dir>/<pod>." names <job dir>/<pod>.exit: one directory per job, not per replica, as
// a directory costs an inode allocation, the dearest file-system call of a start on ext4).
std::string ReplicaFile(const std::string& replica_files, const char* name);
// The directory that holds the replica's files.
std::string ReplicaFilesDir(const std::string& replica_files);
// Whether `replica_files` is such a prefix: absolute and ending in '.'.
bool IsReplicaFilesPrefix(const std::string& replica_files);

struct ExitRecord {
  // The command's exit status; 128 + signal when a signal killed it; 127 when the
  // command was not found, 126 when it could not be executed.
  int exit_code = 0;
  int signal = 0;  // 0 unless a signal killed the command.
  absl::Time finished_at = absl::UnixEpoch();
  std::string message;  // Why, when known ("exec foo: No such file or directory").
  // The shim that wrote it (ProcessFile's fields); pid 0 when the shim failed before it
  // started the command.
  pid_t pid = 0;
  pid_t pgid = 0;
  uint64_t start_time = 0;
};

// The shim's own process (pid, start_time), the process group of the command, and the
// replica's cgroup (replica_cgroup.h) when it has one.
struct ProcessFile {
  pid_t pid = 0;
  pid_t pgid = 0;
  uint64_t start_time = 0;
  std::string cgroup;  // Empty: none (the shim is the replica's subreaper alone).
};

std::string ExitRecordToJson(const ExitRecord& record);
// Errors: InvalidArgument (not the JSON ExitRecordToJson writes).
absl::StatusOr<ExitRecord> ExitRecordFromJson(const std::string& json);

// Errors: Internal (I/O).
absl::Status WriteExitRecord(const std::string& replica_files, const ExitRecord& record);
// Errors: NotFound (no exit file yet), InvalidArgument (corrupt), Internal (I/O).
absl::StatusOr<ExitRecord> ReadExitRecord(const std::string& replica_files);

absl::Status WriteProcessFile(const std::string& replica_files, const ProcessFile& file);
// Errors: NotFound, InvalidArgument, Internal.
absl::StatusOr<ProcessFile> ReadProcessFile(const std::string& replica_files);

}  // namespace coach::backend::local
