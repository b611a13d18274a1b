// LocalBackend's logs: the replicas' own, followed while they run, and the kept logs of earlier
// attempts (local_layout.h's attempts/<n>/).

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "operator/backend/local/local_backend.h"
#include "operator/backend/local/process/log_files.h"

namespace coach::backend::local {

namespace {

bool IsReplica(const JobKey& key, const std::string& pod, const std::string& replica) {
  const std::string short_name = LocalBackend::ShortName(key, pod);
  return replica.empty() || replica == short_name || replica == pod ||
         (short_name == "launcher" && replica == "launcher-0");
}

// The whole of an ended log, its rotated part first, in chunks; false when the reader stopped.
absl::StatusOr<bool> SendEndedLog(const std::string& path, const std::string& replica,
                                  const LogSink& sink, const std::atomic<bool>& cancelled) {
  for (const std::string& file : {path + ".1", path}) {
    LogPosition at;
    for (;;) {
      if (cancelled.load()) return false;
      ASSIGN_OR_RETURN(FollowChunk chunk, Follow(file, at));
      at = chunk.next;
      if (chunk.data.empty()) break;
      if (!sink(replica, chunk.data)) return false;
    }
  }
  return true;
}

}  // namespace

absl::Status LocalBackend::StreamLogs(const model::Job& job, const LogOptions& options,
                                      const LogSink& sink, const std::atomic<bool>& cancelled) {
  const JobKey key = KeyOf(job);
  std::vector<ReplicaRecord> records;
  {
    absl::MutexLock lock(&mu_);
    ASSIGN_OR_RETURN(records, options_.store->ListReplicas(key));
  }
  if (options.attempt.has_value()) {
    std::optional<int> current;
    for (const ReplicaRecord& r : records) {
      current = std::max(current.value_or(r.attempt), r.attempt);
    }
    if (current != options.attempt) {
      return StreamKeptLogs(key, records, options, sink, cancelled);
    }
  }
  std::vector<ReplicaRecord> targets;
  for (ReplicaRecord& r : records) {
    // Mid-restart, pods of the ended attempt may still be there: they are not the one asked for.
    if (options.attempt.has_value() && r.attempt != *options.attempt) continue;
    if (IsReplica(key, r.name, options.replica)) targets.push_back(std::move(r));
  }
  if (targets.empty()) {
    return absl::NotFoundError(
        options.replica.empty()
            ? absl::StrCat("job ", key.namespace_, "/", key.name, " has no replicas")
            : absl::StrCat("job ", key.namespace_, "/", key.name, " has no replica ",
                           options.replica));
  }
  struct Stream {
    std::string replica;
    std::string pod;
    std::string path;
    LogPosition position;
    bool done = false;
  };
  std::vector<Stream> streams;
  for (const ReplicaRecord& r : targets) {
    Stream s{ShortName(key, r.name), r.name, r.log_path, LogPosition(), false};
    if (options.tail_lines > 0) {
      const LogPosition end = LogEnd(r.log_path);
      absl::StatusOr<std::string> tail =
          TailLines(r.log_path, static_cast<int>(options.tail_lines));
      if (tail.ok() && !tail->empty() && !sink(s.replica, *tail)) return absl::OkStatus();
      s.position = end;
    }
    streams.push_back(std::move(s));
  }
  // Without follow: each replica's log once, to its current end.
  // With follow: round-robin until every replica has ended and its log is drained.
  for (;;) {
    bool all_done = true;
    for (Stream& s : streams) {
      if (s.done) continue;
      bool ended = !options.follow;
      if (options.follow) {
        // Check before reading, so bytes written before the exit are all drained.
        absl::MutexLock lock(&mu_);
        absl::StatusOr<std::vector<ReplicaRecord>> records = options_.store->ListReplicas(key);
        ended = true;
        if (records.ok()) {
          for (ReplicaRecord& r : *records) {
            if (r.name != s.pod) continue;
            Refresh(r);
            ended = Terminal(r.phase);
          }
        }
      }
      for (;;) {
        if (cancelled.load()) return absl::OkStatus();
        absl::StatusOr<FollowChunk> chunk = Follow(s.path, s.position);
        if (!chunk.ok()) return chunk.status();
        s.position = chunk->next;
        if (chunk->data.empty()) break;
        if (!sink(s.replica, chunk->data)) return absl::OkStatus();
      }
      if (ended)
        s.done = true;
      else
        all_done = false;
    }
    if (all_done || cancelled.load()) return absl::OkStatus();
    absl::SleepFor(std::min(options_.poll_interval, absl::Milliseconds(100)));
  }
}

absl::Status LocalBackend::StreamKeptLogs(const JobKey& key,
                                          const std::vector<ReplicaRecord>& records,
                                          const LogOptions& options, const LogSink& sink,
                                          const std::atomic<bool>& cancelled) {
  const int attempt = *options.attempt;
  const std::string job_name = absl::StrCat(key.namespace_, "/", key.name);
  if (attempt < 0) {
    return absl::InvalidArgumentError(absl::StrCat("attempt ", attempt, " of job ", job_name));
  }
  // Each pod's log of the attempt: kept in the attempt's directory, else still live, where a pod
  // of the attempt has its record (the restart has not deleted it yet), or has none and the log
  // it left was the attempt's (the job finished, or its next pods are not created yet). Kept
  // first: a live log that says it is the attempt's while one is kept is the log of a start that
  // failed before its process ran (KeepAttemptLog).
  std::map<std::string, std::string> logs;  // pod -> its log
  ASSIGN_OR_RETURN(const std::string kept_dir, layout_.AttemptLogDir(key, attempt));
  ASSIGN_OR_RETURN(const std::vector<std::string> kept_pods, layout_.KeptLogPods(key, attempt));
  for (const std::string& pod : kept_pods) {
    logs.emplace(pod, absl::StrCat(kept_dir, "/", pod, ".log"));
  }
  int latest = -1;
  std::set<std::string> recorded;
  for (const ReplicaRecord& r : records) {
    recorded.insert(r.name);
    latest = std::max(latest, r.attempt);
    if (r.attempt == attempt) logs.emplace(r.name, r.log_path);
  }
  ASSIGN_OR_RETURN(const auto carried, layout_.CarriedOverAll(key));
  for (const auto& [pod, c] : carried) {
    if (!c.attempt.has_value()) continue;
    latest = std::max(latest, *c.attempt);
    if (*c.attempt != attempt || recorded.count(pod) > 0) continue;
    ASSIGN_OR_RETURN(std::string path, layout_.LogPath(key, pod));
    logs.emplace(pod, std::move(path));
  }
  if (logs.empty()) {
    ASSIGN_OR_RETURN(const std::vector<int> kept, layout_.KeptAttempts(key));
    if (!kept.empty()) latest = std::max(latest, kept.back());
    if (attempt > latest) {
      return absl::NotFoundError(absl::StrCat("job ", job_name, " has no attempt ", attempt));
    }
    return absl::NotFoundError(absl::StrCat("the logs of attempt ", attempt, " of job ", job_name,
                                            " are not kept (the local backend keeps attempt 0's "
                                            "and the latest ",
                                            kKeptAttempts, " attempts')"));
  }
  bool any = false;
  for (const auto& [pod, path] : logs) {
    if (!IsReplica(key, pod, options.replica)) continue;
    any = true;
    const std::string replica = ShortName(key, pod);
    if (options.tail_lines > 0) {
      absl::StatusOr<std::string> tail = TailLines(path, static_cast<int>(options.tail_lines));
      if (absl::IsNotFound(tail.status())) continue;
      if (!tail.ok()) return tail.status();
      if (cancelled.load()) return absl::OkStatus();
      if (!tail->empty() && !sink(replica, *tail)) return absl::OkStatus();
      continue;
    }
    ASSIGN_OR_RETURN(const bool more, SendEndedLog(path, replica, sink, cancelled));
    if (!more) return absl::OkStatus();
  }
  if (!any) {
    return absl::NotFoundError(absl::StrCat("attempt ", attempt, " of job ", job_name,
                                            " has no replica ", options.replica));
  }
  return absl::OkStatus();
}

}  // namespace coach::backend::local
