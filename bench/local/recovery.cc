// recovery: what a whole-job restart costs on the local backend, with real training
// (examples/pytorch/ddp_train.py, 1 Master + 2 Workers, gloo, a checkpoint every epoch, under
// coach.dev/restart-scope: Job). Prints figures; it is not a test. See bench/README.md.
//
// Kill rounds (--rounds): submit; the job's cold start is submit -> the first coach-metric
// line of rank 0 (the baseline, same round). Once epoch 2 is checkpointed, a random moment in
// the next epoch, rank 2 is SIGKILLed; the recovery time is that kill -> the first coach-metric
// line of the next attempt. Wasted work: completed epochs the next attempt trains again (the
// epochs rank 0 reported before the kill, less the epoch it resumed from).
// Stall rounds (--stall-rounds): the same job with coach.dev/progress-deadline; rank 1 is
// SIGSTOPped after epoch 2's checkpoint; the detection time is that stop -> the job's next
// attempt (status.coach.attempt), against the deadline + 5 s.
// Rank 0's log is read through GetJobLogs every --poll-ms.

#include <signal.h>
#include <sys/types.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/local/bench_util.h"
#include "bench/local/operator_session.h"
#include "sdk/cpp/training_client.h"

namespace coach::bench {
namespace {

struct Flags {
  int rounds = 5;
  int stall_rounds = 3;
  int epochs = 6;
  double epoch_seconds = 1.5;
  int deadline_s = 10;
  int poll_ms = 50;
  std::string program;  // ddp_train.py
  std::string ns = "bench-recovery";
  OperatorFlags op;
};

std::string Manifest(const Flags& f, const std::string& name, const std::string& checkpoints,
                     bool stall) {
  const std::string command =
      absl::StrCat(R"(["/usr/bin/python3", ")", f.program, R"(", "--epochs", ")", f.epochs,
                   R"(", "--epoch-seconds", ")", f.epoch_seconds, R"(", "--checkpoint-dir", ")",
                   checkpoints, R"("])");
  std::string specs;
  for (const auto& [type, n] : {std::pair<std::string, int>{"Master", 1}, {"Worker", 2}}) {
    absl::StrAppend(&specs, "    ", type, ":\n      replicas: ", n,
                    "\n      restartPolicy: OnFailure\n      template:\n        spec:\n"
                    "          containers:\n          - name: pytorch\n            image: x\n"
                    "            command: ",
                    command, "\n");
  }
  return absl::StrCat(
      "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata:\n  name: ", name,
      "\n  annotations:\n    coach.dev/restart-scope: Job\n    coach.dev/max-restarts: \"3\"\n",
      stall ? absl::StrCat("    coach.dev/progress-deadline: ", f.deadline_s, "s\n") : "",
      "spec:\n  pytorchReplicaSpecs:\n", specs);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The training process of global `rank` whose command line names `marker`.
pid_t RankPid(const std::string& marker, int rank) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    pid_t pid = 0;
    if (!absl::SimpleAtoi(entry.path().filename().string(), &pid)) continue;
    std::string cmdline = ReadFile(absl::StrCat("/proc/", pid, "/cmdline"));
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    // The training process itself, not its shim (whose command line and environment hold
    // the same words).
    if (!absl::StartsWith(cmdline, "/usr/bin/python3 ") || !absl::StrContains(cmdline, marker) ||
        !absl::StrContains(cmdline, "ddp_train.py")) {
      continue;
    }
    for (absl::string_view e :
         absl::StrSplit(ReadFile(absl::StrCat("/proc/", pid, "/environ")), '\0')) {
      if (e == absl::StrCat("RANK=", rank)) return pid;
    }
  }
  return 0;
}

class Round {
 public:
  Round(const Flags& f, sdk::TrainingClient& client, std::string name)
      : f_(f), client_(client), name_(std::move(name)) {}

  // Rank 0's whole log ("" on error).
  std::string Log() const {
    sdk::LogOptions o;
    o.namespace_ = f_.ns;
    o.name = name_;
    o.replica = "master-0";
    std::string out;
    client_
        .GetJobLogs(o,
                    [&](const api::v1::LogChunk& c) {
                      out += c.data();
                      return true;
                    })
        .IgnoreError();
    return out;
  }
  // Polls the log until `pred(log)`; the log, or nullopt after `timeout_s`.
  std::optional<std::string> WaitLog(const std::function<bool(const std::string&)>& pred,
                                     double timeout_s) const {
    const int64_t end = MonoNs() + static_cast<int64_t>(timeout_s * 1e9);
    while (MonoNs() < end) {
      std::string log = Log();
      if (pred(log)) return log;
      std::this_thread::sleep_for(std::chrono::milliseconds(f_.poll_ms));
    }
    return std::nullopt;
  }
  void Finish() const {
    sdk::WaitOptions w;
    w.timeout = absl::Minutes(5);
    client_.WaitForJobConditions(f_.ns, name_, {"Succeeded", "Failed"}, w).IgnoreError();
    client_.DeleteJob(f_.ns, name_).IgnoreError();
  }

 private:
  const Flags& f_;
  sdk::TrainingClient& client_;
  std::string name_;
};

// The highest step= of the coach-metric lines in `text`; -1 when none.
int MaxStep(absl::string_view text) {
  int best = -1;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, "coach-metric ")) continue;
    const size_t at = line.find(" step=");
    int step = -1;
    if (at != absl::string_view::npos &&
        absl::SimpleAtoi(line.substr(at + 6, line.find(' ', at + 6) - at - 6), &step)) {
      best = std::max(best, step);
    }
  }
  return best;
}

int Run(Flags f) {
  auto session = OperatorSession::Open(f.op, f.ns);
  if (!session.ok()) {
    std::cerr << "recovery: " << session.status() << "\n";
    return 1;
  }
  auto dir = MakeTempDir("coach-bench-recovery");
  if (!dir.ok()) {
    std::cerr << "recovery: " << dir.status() << "\n";
    return 1;
  }
  sdk::TrainingClient& client = (*session)->client();
  std::mt19937 rng(7);
  std::vector<double> cold, recovery, ratio, wasted, detect;
  std::cout << absl::StrFormat(
      "== recovery: %d kill rounds, %d stall rounds, %d epochs of %.1f s,"
      " deadline %d s; load %s\n",
      f.rounds, f.stall_rounds, f.epochs, f.epoch_seconds, f.deadline_s, LoadAverage());
  for (int i = 0; i < f.rounds; ++i) {
    const std::string name = absl::StrCat("kill-", i);
    const std::string ckpt = absl::StrCat(*dir, "/", name);
    const int64_t t0 = MonoNs();
    auto created = client.CreateJobFromManifest(Manifest(f, name, ckpt, false), f.ns);
    if (!created.ok()) {
      std::cerr << "recovery: " << created.status() << "\n";
      return 1;
    }
    Round round(f, client, name);
    if (!round.WaitLog([](const std::string& l) { return absl::StrContains(l, "coach-metric "); },
                       120)) {
      std::cerr << "recovery: no first metric in round " << i << "\n";
      return 1;
    }
    const int64_t t_first = MonoNs();
    if (!round.WaitLog(
            [](const std::string& l) {
              return absl::StrContains(l, "coach-checkpoint saved epoch=2");
            },
            120)) {
      std::cerr << "recovery: no checkpoint in round " << i << "\n";
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(
        std::uniform_int_distribution<int>(0, static_cast<int>(f.epoch_seconds * 1000))(rng)));
    const pid_t pid = RankPid(ckpt, 2);
    const int before = MaxStep(round.Log());
    const int64_t t_kill = MonoNs();
    if (pid <= 0 || kill(pid, SIGKILL) != 0) {
      std::cerr << "recovery: rank 2 not found in round " << i << "\n";
      return 1;
    }
    // The next attempt's first metric comes after its resume line.
    std::optional<std::string> resumed = round.WaitLog(
        [](const std::string& l) {
          const size_t at = l.rfind("coach-checkpoint resumed_from_epoch=");
          return at != std::string::npos && l.find("coach-metric ", at) != std::string::npos;
        },
        180);
    if (!resumed) {
      std::cerr << "recovery: no metric of the next attempt in round " << i << "\n";
      return 1;
    }
    const int64_t t_back = MonoNs();
    int from = -1;
    const size_t at = resumed->rfind("resumed_from_epoch=");
    absl::SimpleAtoi(resumed->substr(at + 19, resumed->find(' ', at + 19) - at - 19), &from);
    cold.push_back(MsBetween(t0, t_first));
    recovery.push_back(MsBetween(t_kill, t_back));
    ratio.push_back(recovery.back() / cold.back());
    wasted.push_back(before - from);
    std::cout << absl::StrFormat(
        "kill round %d: cold start %.0f ms, recovery %.0f ms (x%.2f), "
        "epochs before the kill %d, resumed from %d\n",
        i, cold.back(), recovery.back(), ratio.back(), before, from);
    round.Finish();
  }
  for (int i = 0; i < f.stall_rounds; ++i) {
    const std::string name = absl::StrCat("stall-", i);
    const std::string ckpt = absl::StrCat(*dir, "/", name);
    if (!client.CreateJobFromManifest(Manifest(f, name, ckpt, true), f.ns).ok()) return 1;
    Round round(f, client, name);
    if (!round.WaitLog(
            [](const std::string& l) {
              return absl::StrContains(l, "coach-checkpoint saved epoch=2");
            },
            120)) {
      std::cerr << "recovery: no checkpoint in stall round " << i << "\n";
      return 1;
    }
    const pid_t pid = RankPid(ckpt, 1);
    const int64_t t_stop = MonoNs();
    if (pid <= 0 || kill(pid, SIGSTOP) != 0) return 1;
    const int64_t end = t_stop + static_cast<int64_t>((f.deadline_s + 60) * 1e9);
    std::optional<int64_t> t_restart;
    while (MonoNs() < end && !t_restart) {
      auto job = client.GetJob(f.ns, name);
      if (job.ok() && job->status().coach().attempt() >= 1) t_restart = MonoNs();
      std::this_thread::sleep_for(std::chrono::milliseconds(f.poll_ms));
    }
    if (!t_restart) {
      std::cerr << "recovery: stall not caught in round " << i << "\n";
      kill(pid, SIGKILL);
      return 1;
    }
    detect.push_back(MsBetween(t_stop, *t_restart));
    std::cout << absl::StrFormat("stall round %d: SIGSTOP -> restart %.0f ms (deadline %d s)\n", i,
                                 detect.back(), f.deadline_s);
    round.Finish();
  }
  std::cout << "\n"
            << FormatRow("cold start (submit -> first metric)", Summarize(cold)) << "\n"
            << FormatRow("recovery (kill -9 -> first metric again)", Summarize(recovery)) << "\n";
  const Summary r = Summarize(ratio);
  std::cout << absl::StrFormat("recovery / cold start: p50 x%.2f, max x%.2f (goal p50 <= x1.5)\n",
                               r.p50, r.max);
  if (!detect.empty()) {
    const Summary d = Summarize(detect);
    std::cout << FormatRow("stall detection (SIGSTOP -> restart)", d) << "\n"
              << absl::StrFormat("stall detection max %.1f s against the deadline + 5 s = %d s\n",
                                 d.max / 1000, f.deadline_s + 5);
  }
  std::cout << absl::StrFormat("completed epochs recomputed after a kill: max %.0f (goal <= 1)\n",
                               Summarize(wasted).max);
  std::cout << "load average at the end: " << LoadAverage() << "\n";
  (*session)->StopOperator();
  std::filesystem::remove_all(*dir);
  return 0;
}

}  // namespace
}  // namespace coach::bench

int main(int argc, char** argv) {
  coach::bench::Flags f;
  CLI::App app{
      "Whole-job recovery on the local backend: recovery time, stall detection, wasted work"};
  app.add_option("--rounds", f.rounds, "kill -9 rounds")->capture_default_str();
  app.add_option("--stall-rounds", f.stall_rounds, "SIGSTOP rounds")->capture_default_str();
  app.add_option("--epochs", f.epochs, "epochs per job")->capture_default_str();
  app.add_option("--epoch-seconds", f.epoch_seconds, "least seconds per epoch")
      ->capture_default_str();
  app.add_option("--deadline", f.deadline_s, "coach.dev/progress-deadline of the stall rounds, s")
      ->capture_default_str();
  app.add_option("--poll-ms", f.poll_ms, "how often rank 0's log is read")->capture_default_str();
  app.add_option("--program", f.program, "examples/pytorch/ddp_train.py, absolute")->required();
  coach::bench::AddOperatorFlags(app, &f.op);
  CLI11_PARSE(app, argc, argv);
  return coach::bench::Run(f);
}
