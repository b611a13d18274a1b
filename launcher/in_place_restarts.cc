#include "launcher/in_place_restarts.h"

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace coach::launcher {
namespace {

using api::v1::LaunchDirective;
using api::v1::LaunchState;

LaunchState State(int attempt, LaunchState::Phase phase, int exit_code = 0) {
  LaunchState s;
  s.set_attempt(attempt);
  s.set_phase(phase);
  s.set_exit_code(exit_code);
  return s;
}

// The operator's word on the state the launcher waits in.
struct Word {
  enum Kind { kStart, kExit, kNotInPlace } kind;
  int attempt = 0;  // kStart
};

// What waiting ends in: the next attempt, or the launcher's exit.
struct AfterWait {
  std::optional<int> attempt;
  int exit_code = 0;
};

class Loop {
 public:
  Loop(AttemptRunner& runner, ProgressReporter& reporter, const InPlaceRestartOptions& options)
      : runner_(runner), reporter_(reporter), options_(options) {}

  absl::StatusOr<int> Run() {
    reporter_.SetLaunchAnswerCallback(
        [this](const LaunchState& sent, const std::optional<LaunchDirective>& directive) {
          OnAnswer(sent, directive);
        });
    absl::StatusOr<int> code = Attempts();
    reporter_.SetLaunchAnswerCallback(nullptr);
    return code;
  }

 private:
  absl::StatusOr<int> Attempts() {
    int attempt = options_.first_attempt;
    for (bool first = true;; first = false) {
      if (!first) Log(absl::StrCat("coach-launch: starting attempt ", attempt, " (in place)"));
      StopRequest stop;
      {
        absl::MutexLock lock(&mu_);
        attempt_ = attempt;
        stop_ = &stop;
        waiting_.reset();
        word_.reset();
      }
      reporter_.SetLaunchState(State(attempt, LaunchState::RUNNING));
      absl::StatusOr<SupervisionResult> result = runner_.Run(attempt, stop);
      {
        absl::MutexLock lock(&mu_);
        stop_ = nullptr;
      }
      if (!result.ok()) return result.status();
      if (result->received_signal != 0) return result->exit_code;
      const bool stopped = result->stopped_on_request;
      if (!stopped && result->exit_code == 0) return 0;
      const int code = stopped ? 128 + SIGTERM : result->exit_code;
      const LaunchState waiting = stopped ? State(attempt, LaunchState::STOPPED)
                                          : State(attempt, LaunchState::FAILED, code);
      {
        absl::MutexLock lock(&mu_);
        waiting_ = waiting;
      }
      reporter_.SetLaunchState(waiting);
      Log(absl::StrCat("coach-launch: attempt ", attempt,
                       stopped ? " stopped" : absl::StrCat(" failed with code ", code),
                       "; waiting up to ", absl::FormatDuration(options_.wait),
                       " for the operator to restart the job in place"));
      const AfterWait after = WaitForWord(code);
      if (!after.attempt) return after.exit_code;
      attempt = *after.attempt;
    }
  }

  // `code`: the exit code unless the operator starts another attempt or a signal comes.
  AfterWait WaitForWord(int code) {
    const absl::Duration deadline = options_.clock->Monotonic() + options_.wait;
    const std::string exiting = absl::StrCat("; exiting with code ", code);
    while (true) {
      std::optional<Word> word;
      {
        absl::MutexLock lock(&mu_);
        word = word_;
      }
      if (word && word->kind == Word::kStart) return {word->attempt, 0};
      if (word && word->kind == Word::kExit) {
        Log(absl::StrCat("coach-launch: the operator ends the job here (exit)", exiting));
        return {std::nullopt, code};
      }
      if (word) {
        Log(absl::StrCat("coach-launch: the operator does not restart this job in place", exiting));
        return {std::nullopt, code};
      }
      if (reporter_.stats().stopped) {
        Log(absl::StrCat("coach-launch: the operator takes no reports (no in-place restart)",
                         exiting));
        return {std::nullopt, code};
      }
      const absl::Duration left = deadline - options_.clock->Monotonic();
      if (left <= absl::ZeroDuration()) {
        Log(absl::StrCat("coach-launch: no word from the operator within ",
                         absl::FormatDuration(options_.wait),
                         " (COACH_IN_PLACE_WAIT) on an in-place restart", exiting,
                         " (the pod fails, and the operator recreates it)"));
        return {std::nullopt, code};
      }
      if (const int sig = runner_.WaitForSignal(std::min(options_.poll, left)); sig != 0) {
        Log(absl::StrCat("coach-launch: got ", strsignal(sig),
                         " while waiting for the operator; exiting with code ", 128 + sig));
        return {std::nullopt, 128 + sig};
      }
    }
  }

  // On the reporter's thread.
  void OnAnswer(const LaunchState& sent, const std::optional<LaunchDirective>& directive) {
    absl::MutexLock lock(&mu_);
    if (stop_ != nullptr && directive && directive->attempt() > attempt_) {
      stop_->Request(
          absl::StrCat("the operator restarts the job in place as attempt ", directive->attempt()));
    }
    // Only answers to the reports of the state waited in: an older answer was given before
    // the operator knew this pod's workers were gone.
    if (!waiting_ || word_ || sent.attempt() != waiting_->attempt() ||
        sent.phase() != waiting_->phase()) {
      return;
    }
    if (!directive) {
      word_ = Word{Word::kNotInPlace};
    } else if (directive->exit()) {
      word_ = Word{Word::kExit};
    } else if (directive->start() && directive->attempt() > attempt_) {
      word_ = Word{Word::kStart, directive->attempt()};
    }
  }

  void Log(const std::string& line) {
    if (options_.log) {
      options_.log(line);
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  }

  AttemptRunner& runner_;
  ProgressReporter& reporter_;
  const InPlaceRestartOptions& options_;

  absl::Mutex mu_;
  int attempt_ ABSL_GUARDED_BY(mu_) = 0;
  // While the workers of attempt_ run.
  StopRequest* stop_ ABSL_GUARDED_BY(mu_) = nullptr;
  // While the launcher waits: the state it reports, and the operator's word on it.
  std::optional<LaunchState> waiting_ ABSL_GUARDED_BY(mu_);
  std::optional<Word> word_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::StatusOr<int> RunInPlace(AttemptRunner& runner, ProgressReporter& reporter,
                               const InPlaceRestartOptions& options) {
  Loop loop(runner, reporter, options);
  return loop.Run();
}

}  // namespace coach::launcher
