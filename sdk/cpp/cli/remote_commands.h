#pragma once

// The `coach` commands that talk to coach-operator: submit, get, list, describe, logs,
// history, wait, delete, suspend, resume. Each returns the process exit code (exit_codes.h) and
// writes only to the streams of its RemoteEnv; nothing here parses flags (remote_cli.h).

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "api/v1/training_job.pb.h"
#include "sdk/cpp/connection.h"
#include "sdk/cpp/training_client.h"

namespace coach::cli {

struct RemoteOptions {
  sdk::ConnectionOptions connection;
  std::string namespace_ = "default";  // -n
  bool namespace_given = false;        // -n was on the command line (submit: else the manifest's)
  bool all_namespaces = false;         // -A (list)
  std::string job;                     // the JOB argument
  std::string file;                    // submit -f
  std::string output;                  // -o: "" (table), "json" or "yaml"
  std::string selector;                // list -l
  bool wait = false;                   // submit --wait
  std::string timeout = "10m";         // --timeout: "30s", "10m", "1h30m", or bare seconds
  std::string for_condition;           // wait --for
  std::string replica;                 // logs --replica
  bool follow = false;                 // logs -f
  int64_t tail = 0;                    // logs --tail
  std::string attempt;                 // logs --attempt, as typed ("": the current attempt)
  std::string uid;                     // logs, history --uid: a deleted job's
  bool deleted = false;                // history --deleted
};

struct RemoteEnv {
  std::ostream* out;
  std::ostream* err;
  // Whether `out` is a terminal: progress rewrites one line instead of printing many.
  bool interactive = false;
  // Reads a manifest file ("-": stdin). cli::ReadInput in the binary.
  std::function<absl::StatusOr<std::string>(const std::string& path)> read_input;
  // Parses, defaults and validates manifests. cli::LoadJobs in the binary.
  std::function<absl::StatusOr<std::vector<api::v1::TrainingJob>>(const std::string& text,
                                                                  const std::string& namespace_)>
      load_jobs;
  // Makes the client; TrainingClient::Create in the binary, a fake server's in tests.
  std::function<absl::StatusOr<std::unique_ptr<sdk::TrainingClient>>(const sdk::ConnectionOptions&)>
      make_client;
  std::function<absl::Time()> now = absl::Now;
};

// The exit code for an error status: InvalidArgument, AlreadyExists, FailedPrecondition,
// OutOfRange -> 1; NotFound -> 3; DeadlineExceeded -> 5; Unavailable -> 6;
// Unauthenticated, PermissionDenied -> 7; anything else -> 8. OK -> 0.
int ExitCodeFor(const absl::Status& status);

// "10m", "1h30m", "45s", "600" (seconds). InvalidArgument otherwise or when not positive.
absl::StatusOr<absl::Duration> ParseTimeout(const std::string& text);

// Validates the file locally (exit 1 on any error, nothing sent), then creates each job;
// a file with one job is sent as the manifest text, several as the validated jobs. With
// wait: waits for each job to be Succeeded or Failed (4 Failed, 5 timeout).
int RunSubmit(const RemoteOptions& options, RemoteEnv& env);
// One job: a table row, or its manifest with -o json|yaml.
// A job the server returns that is no valid manifest (api::v1::codec::JobToJsonChecked fails)
// is not printed: an error naming it and its bad fields, exit 8.
int RunGet(const RemoteOptions& options, RemoteEnv& env);
// Jobs of the namespace (-A: all) matching -l, every page: a table or a manifest list. With
// -o, a job that is no valid manifest is left out with an error naming it (exit 8); the others
// are printed.
int RunList(const RemoteOptions& options, RemoteEnv& env);
// Conditions, replicas (state, restarts, exit codes), the job's recovery and progress
// (coach_status_text.h), MLflow runs and recent events.
int RunDescribe(const RemoteOptions& options, RemoteEnv& env);
// The log bytes as they come, of --attempt (0..1000000; else exit 2 naming the flag) and of
// the deleted job --uid when given. Before a replica's bytes that are not live (an earlier
// attempt's, a deleted job's), one line on env.err says where they come from:
// "# worker-0, attempt 1: kept log (store)".
int RunLogs(const RemoteOptions& options, RemoteEnv& env);
// The job's attempt timeline (coach_status_text.h PrintAttemptTimeline), or with -o its
// attempts as status.coach.attempts holds them in a manifest: {namespace, name, uid, attempts}.
// With --deleted (or --uid): the kept histories of deleted jobs of the namespace (-A: all) and
// of JOB when given, newest deletion first: NAMESPACE, NAME, UID, DELETED (age), BY, RESULT
// (the job's last state), ATTEMPTS, LOGS (how many replicas' logs are kept); with -o a list of
// {namespace, name, uid, deletedTime, deletedBy, result, logs, attempts}. The one of --uid, and
// without -o the only one of JOB, as its timeline. JOB is required without --deleted (exit 2);
// no kept history of JOB or of --uid is exit 3.
int RunHistory(const RemoteOptions& options, RemoteEnv& env);
// 0 when --for is reached, 4 when the job Failed instead, 5 on timeout.
int RunWait(const RemoteOptions& options, RemoteEnv& env);
int RunDelete(const RemoteOptions& options, RemoteEnv& env);
int RunSuspend(const RemoteOptions& options, RemoteEnv& env);
int RunResume(const RemoteOptions& options, RemoteEnv& env);

}  // namespace coach::cli
