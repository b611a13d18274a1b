#pragma once

// CheckpointRelay: coach-launch's part of checkpoint on notice. The operator's checkpoint
// request (api/v1/training_service.proto: CheckpointRequest, in the answers to the progress
// reports) goes to the pod's workers through one contract, and their answer goes back in the
// next report (CheckpointReport). The training code's side is in docs/recovery.md ("Checkpoint
// on notice: the training code's side"); in short, for worker L:
//
//   COACH_CHECKPOINT_REQUEST_FILE=<dir>/checkpoint-request-<L>.json   (CheckpointRequestFile)
//
// in its environment, `dir` a directory of the launcher's own (mode 0700). For a request with
// an id above every id it acted on, the relay
//   1. writes {"id":N,"deadline_unix_ms":D} to every worker's file atomically (temp + rename);
//   2. sends SIGUSR1 to each worker that opted in: FILE.armed holds the worker's own process id
//      (the process the launcher started, not a child of it); a program that never opted in is
//      never signalled, and one that did not is left to look at the file itself. Not at all with
//      COACH_CHECKPOINT_SIGNAL=none. A worker that opts in later (it started after the request)
//      is signalled then;
//   3. reads every worker's FILE.done ({"id":N,"step":S} or {"id":N,"error":"..."}) until each
//      answered N: the pod's answer is `saved` at S when every worker saved at the same S, else
//      not saved, saying why; at the request's deadline, not saved, naming the workers that did
//      not answer. It goes to `report` (ProgressReporter::SetCheckpointReport) at once.
// A request that arrives past its deadline is answered not saved at once, and nothing is
// written. A later request replaces one still waiting for answers. The workers' files are read
// as checkpoint_files.h says (bounded, never through a link); nothing in them is a path.
// Without a request nothing is written and nothing is sent.

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "api/v1/training_service.pb.h"
#include "common/clock.h"
#include "launcher/launch_config.h"

namespace coach::launcher {

inline constexpr char kCheckpointRequestFileEnv[] = "COACH_CHECKPOINT_REQUEST_FILE";

// COACH_CHECKPOINT_SIGNAL: unset, empty or "SIGUSR1": signal workers that opted in (the
// default); "none": never signal, the workers look at their file. InvalidArgument otherwise,
// naming the variable.
absl::StatusOr<bool> ParseCheckpointSignal(const EnvMap& env);

// The request file of worker `local_rank` in `dir`.
std::string CheckpointRequestFile(const std::string& dir, int local_rank);

// A new directory of mode 0700 under $TMPDIR (else /tmp) for the request files. Errors:
// Internal, naming the directory.
absl::StatusOr<std::string> MakeCheckpointDir(const EnvMap& env);
// Removes what the launcher and its workers left in `dir` (files only), then `dir`. Best effort.
void RemoveCheckpointDir(const std::string& dir);

struct CheckpointRelayOptions {
  std::string dir;
  // Workers 0..workers-1 (local ranks).
  int workers = 1;
  bool signal = true;
  // How often the workers' files are looked at while a request waits for answers.
  absl::Duration poll = absl::Milliseconds(100);
  // Without a request, how often worker 0's answer is looked at: the training code agrees on a
  // request with one collective, so a pod's workers may answer one that reached only a peer pod.
  // Such answers are reported too, the other workers' awaited for answers_ahead_wait.
  absl::Duration look_ahead = absl::Seconds(1);
  absl::Duration answers_ahead_wait = absl::Seconds(30);
  Clock* clock = Clock::Real();  // not owned
  // Asks for SIGUSR1 to worker `local_rank` if it runs as `pid`, for request `id`
  // (WorkerSignals::Send).
  std::function<void(int local_rank, pid_t pid, int64_t id)> signal_worker;
  // The pod's answer.
  std::function<void(const api::v1::CheckpointReport& report)> report;
  std::function<void(const std::string& line)> log;  // default: a line on stderr
};

class CheckpointRelay {
 public:
  explicit CheckpointRelay(CheckpointRelayOptions options);
  ~CheckpointRelay();  // Stop()

  // The operator's request, from any answer (the same one comes in every answer). Never blocks
  // on files or workers. Thread-safe.
  void OnRequest(const api::v1::CheckpointRequest& request);

  // One round: a new request's files written, opted-in workers signalled, answers read and
  // reported. What the relay's thread runs; tests call it directly.
  void Poll();

  // A thread that runs Poll when a request comes, every `poll` while one waits, and every
  // `look_ahead` otherwise.
  void Start();
  void Stop();

  const std::string& dir() const { return options_.dir; }

  // A request is in hand and not yet answered (nor past its deadline). Thread-safe.
  bool Busy();
  // The highest request id the relay has been given or adopted (0: none). Thread-safe.
  int64_t NewestId();

 private:
  struct Worker {
    std::string file;
    pid_t signalled = 0;  // the pid last signalled for the current request
    std::optional<int64_t> step;
    std::string error;  // the worker's own, with a step unset: it answered
    bool answered = false;
    std::string problem;  // what was wrong with its files, for a report without its answer
  };
  struct Current {
    int64_t id = 0;
    absl::Time deadline;
    std::vector<Worker> workers;
    // Adopted from the workers' answers (AdoptAnswersAhead): nothing to write nor signal.
    bool ahead = false;
  };

  // Poll's work.
  void Round();
  void Begin(int64_t id, absl::Time deadline);
  // Worker 0 answered a request above every one acted on: it becomes current_, to report.
  void AdoptAnswersAhead();
  void SignalOptedIn();
  void ReadAnswers();
  // Reports current_ (when every worker answered, or at its deadline) and forgets it.
  void Finish(bool at_deadline);
  void Report(int64_t id, bool saved, int64_t step, const std::string& message);
  void Log(const std::string& line);
  bool WakeLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const CheckpointRelayOptions options_;

  absl::Mutex mu_;
  std::optional<api::v1::CheckpointRequest> incoming_ ABSL_GUARDED_BY(mu_);
  // The highest id Poll took.
  int64_t seen_id_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  // Poll holds a request (current_), as of its last round.
  bool busy_ ABSL_GUARDED_BY(mu_) = false;

  // Poll's own (one thread at a time).
  int64_t last_id_ = 0;
  std::optional<Current> current_;
  std::thread thread_;
};

}  // namespace coach::launcher
