#include "launcher/checkpoint_relay.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "launcher/checkpoint_files.h"

namespace coach::launcher {
absl::StatusOr<bool> ParseCheckpointSignal(const EnvMap& env) {
  const std::string v = EnvValue(env, "COACH_CHECKPOINT_SIGNAL");
  if (v.empty() || v == "SIGUSR1") return true;
  if (v == "none") return false;
  return absl::InvalidArgumentError(absl::StrCat("COACH_CHECKPOINT_SIGNAL: \"", BoundedMessage(v),
                                                 "\" is neither SIGUSR1 nor none"));
}

std::string CheckpointRequestFile(const std::string& dir, int local_rank) {
  return absl::StrCat(dir, "/checkpoint-request-", local_rank, ".json");
}

absl::StatusOr<std::string> MakeCheckpointDir(const EnvMap& env) {
  std::string parent = EnvValue(env, "TMPDIR");
  if (parent.empty()) parent = "/tmp";
  std::string path = parent + "/coach-launch-checkpoint-XXXXXX";
  if (mkdtemp(path.data()) == nullptr) {
    return absl::InternalError(
        absl::StrCat("cannot make a directory in ", parent, ": ", std::strerror(errno)));
  }
  return path;
}

void RemoveCheckpointDir(const std::string& dir) {
  if (DIR* d = opendir(dir.c_str()); d != nullptr) {
    const int fd = dirfd(d);
    // Entries only, never what a link names: unlinkat removes the link itself.
    while (const dirent* e = readdir(d)) {
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
        unlinkat(fd, e->d_name, 0);
      }
    }
    closedir(d);
  }
  rmdir(dir.c_str());
}

CheckpointRelay::CheckpointRelay(CheckpointRelayOptions options) : options_(std::move(options)) {}

CheckpointRelay::~CheckpointRelay() { Stop(); }

void CheckpointRelay::OnRequest(const api::v1::CheckpointRequest& request) {
  absl::MutexLock lock(&mu_);
  // The same request comes with every answer: only a later one wakes the thread.
  const int64_t newest = incoming_ ? incoming_->id() : seen_id_;
  if (request.id() <= newest) return;
  incoming_ = request;
}

bool CheckpointRelay::WakeLocked() const { return stop_ || incoming_.has_value(); }

void CheckpointRelay::Start() {
  thread_ = std::thread([this] {
    while (true) {
      {
        absl::MutexLock lock(&mu_);
        const absl::Condition wake(this, &CheckpointRelay::WakeLocked);
        // Without a request the workers' answers are still looked at now and then: their peers
        // may have told them of one this pod has not heard of yet (AdoptAnswersAhead).
        mu_.AwaitWithTimeout(wake, current_ ? options_.poll : options_.look_ahead);
        if (stop_) return;
      }
      Poll();
    }
  });
}

void CheckpointRelay::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

bool CheckpointRelay::Busy() {
  absl::MutexLock lock(&mu_);
  return incoming_.has_value() || busy_;
}

int64_t CheckpointRelay::NewestId() {
  absl::MutexLock lock(&mu_);
  return incoming_ ? std::max(seen_id_, incoming_->id()) : seen_id_;
}

void CheckpointRelay::Poll() {
  Round();
  absl::MutexLock lock(&mu_);
  busy_ = current_.has_value();
}

void CheckpointRelay::Round() {
  std::optional<api::v1::CheckpointRequest> incoming;
  {
    absl::MutexLock lock(&mu_);
    incoming = std::exchange(incoming_, std::nullopt);
    if (incoming) {
      seen_id_ = std::max(seen_id_, incoming->id());
      busy_ = true;  // until the round ends: Busy never misses a request being taken
    }
  }
  if (incoming && incoming->id() > last_id_) {
    last_id_ = incoming->id();
    Begin(incoming->id(), absl::FromUnixSeconds(incoming->deadline().seconds()) +
                              absl::Nanoseconds(incoming->deadline().nanos()));
  }
  if (!current_) AdoptAnswersAhead();
  if (!current_) return;
  if (!current_->ahead) SignalOptedIn();
  ReadAnswers();
  bool all = true;
  for (const Worker& w : current_->workers) all = all && w.answered;
  if (all) {
    Finish(false);
  } else if (options_.clock->Now() >= current_->deadline) {
    Finish(true);
  }
}

void CheckpointRelay::Begin(int64_t id, absl::Time deadline) {
  if (current_) {
    Log(absl::StrCat("coach-launch: checkpoint request ", current_->id, " replaced by request ", id,
                     " before every worker answered"));
  }
  current_.reset();
  const absl::Duration left = deadline - options_.clock->Now();
  if (left <= absl::ZeroDuration()) {
    Log(absl::StrCat("coach-launch: checkpoint request ", id,
                     " arrived after its deadline; not passed on to the workers"));
    Report(id, false, 0, "the request reached the pod after its deadline");
    return;
  }
  Current current{id, deadline, {}};
  const std::string content = RenderCheckpointRequest(id, absl::ToUnixMillis(deadline));
  for (int local = 0; local < options_.workers; ++local) {
    Worker w;
    w.file = CheckpointRequestFile(options_.dir, local);
    if (absl::Status written = WriteFileAtomically(w.file, content); !written.ok()) {
      Log(absl::StrCat("coach-launch: checkpoint request ", id, ": ", written.message()));
      Report(id, false, 0, std::string(written.message()));
      return;
    }
    current.workers.push_back(std::move(w));
  }
  Log(absl::StrCat("coach-launch: checkpoint request ", id, " (deadline in ",
                   absl::FormatDuration(absl::Trunc(left, absl::Milliseconds(100))),
                   ") passed on to ", options_.workers, " worker(s) in ", kCheckpointRequestFileEnv,
                   options_.signal ? ", with SIGUSR1 to those that opted in" : ""));
  current_ = std::move(current);
}

void CheckpointRelay::AdoptAnswersAhead() {
  absl::StatusOr<std::string> text =
      ReadSmallFile(CheckpointRequestFile(options_.dir, 0) + ".done", kMaxAnswerFileBytes);
  if (!text.ok()) return;
  absl::StatusOr<WorkerAnswer> answer = ParseWorkerAnswer(*text);
  if (!answer.ok() || answer->id <= last_id_) return;
  last_id_ = answer->id;
  {
    // The request itself, when it comes, is not passed on again.
    absl::MutexLock lock(&mu_);
    seen_id_ = std::max(seen_id_, answer->id);
  }
  Current current{answer->id, options_.clock->Now() + options_.answers_ahead_wait, {}, true};
  for (int local = 0; local < options_.workers; ++local) {
    Worker w;
    w.file = CheckpointRequestFile(options_.dir, local);
    current.workers.push_back(std::move(w));
  }
  Log(absl::StrCat("coach-launch: the workers answer checkpoint request ", answer->id,
                   ", which their peers told them of before it reached this pod; reporting it"));
  current_ = std::move(current);
}

void CheckpointRelay::SignalOptedIn() {
  if (!options_.signal || !options_.signal_worker) return;
  for (size_t local = 0; local < current_->workers.size(); ++local) {
    Worker& w = current_->workers[local];
    if (w.answered) continue;
    absl::StatusOr<std::string> armed = ReadSmallFile(w.file + ".armed", kMaxArmedFileBytes);
    if (!armed.ok()) continue;  // not (yet) opted in: never signalled
    absl::StatusOr<pid_t> pid = ParseArmedPid(*armed);
    // The same pid is signalled once per request; a worker started again arms with another.
    if (!pid.ok() || *pid == w.signalled) continue;
    w.signalled = *pid;
    options_.signal_worker(static_cast<int>(local), *pid, current_->id);
  }
}

void CheckpointRelay::ReadAnswers() {
  for (size_t local = 0; local < current_->workers.size(); ++local) {
    Worker& w = current_->workers[local];
    if (w.answered) continue;
    const std::string done = w.file + ".done";
    // The report has room for the reason, not for the directory's path.
    auto problem = [&](absl::string_view why) {
      w.problem =
          absl::StrCat("local rank ", local, ": ", absl::StrReplaceAll(why, {{done, "its .done"}}));
    };
    absl::StatusOr<std::string> text = ReadSmallFile(done, kMaxAnswerFileBytes);
    if (!text.ok()) {
      if (!absl::IsNotFound(text.status())) problem(text.status().message());
      continue;
    }
    absl::StatusOr<WorkerAnswer> answer = ParseWorkerAnswer(*text);
    if (!answer.ok()) {
      // Perhaps written in place and not whole yet: looked at again until the deadline.
      problem(absl::StrCat(done, ": ", answer.status().message()));
      continue;
    }
    if (answer->id != current_->id) continue;  // an earlier request's
    w.answered = true;
    w.step = answer->step;
    w.error = answer->error;
  }
}

void CheckpointRelay::Finish(bool at_deadline) {
  const Current current = *std::move(current_);
  current_.reset();
  std::vector<std::string> missing, problems, errors, steps;
  std::optional<int64_t> step;
  bool same = true;
  for (size_t local = 0; local < current.workers.size(); ++local) {
    const Worker& w = current.workers[local];
    if (!w.answered) {
      missing.push_back(std::to_string(local));
      if (!w.problem.empty()) problems.push_back(w.problem);
      continue;
    }
    if (!w.step) {
      errors.push_back(absl::StrCat("local rank ", local, ": ", w.error));
      continue;
    }
    steps.push_back(absl::StrCat("local rank ", local, ": ", *w.step));
    if (step && *step != *w.step) same = false;
    step = w.step;
  }
  std::string why;
  if (at_deadline) {
    why =
        absl::StrCat("no answer by the deadline from local rank(s) ", absl::StrJoin(missing, ", "));
    if (!problems.empty()) absl::StrAppend(&why, " (", absl::StrJoin(problems, "; "), ")");
  } else if (!errors.empty()) {
    why = absl::StrJoin(errors, "; ");
  } else if (!same) {
    why = absl::StrCat("the workers saved at different steps (", absl::StrJoin(steps, ", "), ")");
  }
  if (why.empty()) {
    Log(absl::StrCat("coach-launch: checkpoint request ", current.id, ": saved at step ", *step,
                     " by ", current.workers.size(), " worker(s)"));
    Report(current.id, true, *step, "");
  } else {
    Log(absl::StrCat("coach-launch: checkpoint request ", current.id, ": not saved: ", why));
    Report(current.id, false, 0, why);
  }
}

void CheckpointRelay::Report(int64_t id, bool saved, int64_t step, const std::string& message) {
  if (!options_.report) return;
  api::v1::CheckpointReport report;
  report.set_request_id(id);
  report.set_saved(saved);
  report.set_step(step);
  report.set_message(BoundedMessage(message));
  options_.report(report);
}

void CheckpointRelay::Log(const std::string& line) {
  if (options_.log) {
    options_.log(line);
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

}  // namespace coach::launcher
