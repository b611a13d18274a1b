#pragma once

// What the job-history suites (history_test, history_store_test; docs/history.md) share: a
// PyTorchJob restarted as a whole after its worker-1 SIGKILLs itself, reading its logs of one
// attempt, and checking its attempt timeline as the API and the `coach` CLI show it.

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "api/v1/training_job.pb.h"
#include "api/v1/training_service.pb.h"
#include "e2e/common/job_manifest.h"
#include "e2e/local/operator_fixture.h"
#include "sdk/cpp/training_client.h"

namespace coach::e2e {

// The replicas of RestartingJob, by RANK: master-0 is 0, worker-0 1, worker-1 2.
inline constexpr const char* kHistoryReplicas[] = {"master-0", "worker-0", "worker-1"};

// The line rank `rank` prints in attempt `attempt`: "hello from rank 2 attempt 0\n".
std::string Hello(int rank, int attempt);

// A PyTorchJob of a Master and 2 Workers (`/bin/sh` replicas) under
// coach.dev/restart-scope: Job and coach.dev/max-restarts: "3". Every replica prints its Hello
// line, "store secret: <$AWS_SECRET_ACCESS_KEY or none>" and a progress line of step
// 10 * (attempt + 1). In the first `failing` attempts worker-1 SIGKILLs itself (exit 137) once
// the other two printed; in the next one every replica exits 0, the Master last, after
// "master done". `marks` is an existing directory for the replicas' marker files.
JobManifest RestartingJob(const std::string& name, const std::string& marks, int failing);

// gethostname(): the node of every local replica.
std::string ThisHostName();
bool PathExists(const std::string& path);

// What one GetJobLogs call returned.
struct LogRead {
  absl::Status status;
  std::string text;
  std::map<std::string, std::string> sources;  // replica -> its first chunk's source
  std::set<int> attempts;                      // of every chunk
};

// GetJobLogs of job `name` (namespace kNs): `replica` ("": every one), `attempt` (nullopt: the
// current), `uid` ("": the job that exists).
LogRead ReadLogs(sdk::TrainingClient& client, const std::string& name, const std::string& replica,
                 std::optional<int> attempt, const std::string& uid = "");

// Checks that the log of kHistoryReplicas[replica_index] of RestartingJob `name` in `attempt`
// comes from `source`, holds that attempt's Hello line and no other attempt's, and that the
// replica did not see the store's secret.
void ExpectAttemptLog(sdk::TrainingClient& client, const std::string& name, size_t replica_index,
                      int attempt, const std::string& source, const std::string& uid = "");

// Checks status.coach.attempts of a RestartingJob that failed `failing` times and then succeeded:
// each failed attempt's reason Failed, replica worker-1, exit 137, SIGKILL, counted, the three
// replicas on this host, its last step; the last one Succeeded, not counted.
void ExpectTimeline(const api::v1::TrainingJob& job, int failing);

// The rows of the first attempts table in `text` (`coach describe`, `coach history`), by attempt:
// each cell by its column's header ("REASON", "LAST STEP"), cut at the header's column starts.
std::map<int, std::map<std::string, std::string>> AttemptRows(const std::string& text);

// Checks the attempts table in `text` of a RestartingJob that failed `failing` times and then
// succeeded, column by column.
void ExpectAttemptRows(const std::string& text, int failing);

// An OperatorTest that runs RestartingJobs.
class RestartingJobTest : public OperatorTest {
 protected:
  // Submits RestartingJob(name, <a new directory>, failing) and waits up to 2 minutes for its
  // end (a failure when it does not end Succeeded); the job as it ended, {} when it did not end.
  api::v1::TrainingJob RunRestartingJob(const std::string& name, int failing);
  // Submits a Master-only shell job printing "<name> says bye" under ttlSecondsAfterFinished
  // `ttl` and waits until the TTL deleted it; its uid, "" (and a failure) when not.
  std::string RunTtlJob(const std::string& name, int ttl);
  // The kept history of the deleted job `name` of `uid` (ListJobHistories), once the operator
  // wrote it: within 60 s, else the last answer's error or NotFound.
  absl::StatusOr<api::v1::JobHistory> WaitHistory(const std::string& name, const std::string& uid);
};

}  // namespace coach::e2e
