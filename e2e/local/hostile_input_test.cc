// Hostile input against one real local operator: what a job author or a local user can send
// it. Each case prints one line: what the operator did (refused / failed cleanly / survived),
// its peak RSS so far, and whether it still answers. Every case must end as expected, the
// operator must answer after each, its peak RSS must stay under 256 MiB, and nothing accepted
// before the cases may be lost. docs/security.md says what each bound is.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "e2e/common/child_process.h"
#include "e2e/common/test_env.h"
#include "e2e/local/operator_fixture.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "sdk/cpp/job_status.h"

namespace coach::e2e {
namespace {

using api::v1::TrainingJob;

constexpr int64_t kRssLimitKib = 256 * 1024;

enum class Verdict { kRefused, kFailedCleanly, kSurvived };

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kRefused:
      return "refused";
    case Verdict::kFailedCleanly:
      return "failed cleanly";
    case Verdict::kSurvived:
      return "survived";
  }
  return "?";
}

// What a case saw: the verdict it observed (nullopt: something else happened, said in
// `detail`).
struct Seen {
  std::optional<Verdict> verdict;
  std::string detail;
};

// kB of a /proc/<pid>/status field ("VmHWM", "VmRSS"); -1 when unreadable.
int64_t StatusKib(pid_t pid, const std::string& field) {
  for (absl::string_view line : absl::StrSplit(ReadProcFile(pid, "status"), '\n')) {
    if (!absl::ConsumePrefix(&line, field + ":")) continue;
    int64_t kib = -1;
    std::vector<absl::string_view> parts = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    if (!parts.empty() && absl::SimpleAtoi(parts[0], &kib)) return kib;
  }
  return -1;
}

// A PyTorchJob manifest whose annotations hold an alias bomb: a `scalar_bytes` anchor, then
// `levels` levels of ten aliases to the level before. Text, not a JobManifest: the anchors and
// aliases are the input under test, and a builder writes neither.
std::string AliasBomb(const std::string& name, int scalar_bytes, int levels) {
  std::string anchors = absl::StrCat("    a0: &a0 \"", std::string(scalar_bytes, 'x'), "\"\n");
  for (int l = 1; l <= levels; ++l) {
    absl::StrAppend(&anchors, "    a", l, ": &a", l, " [");
    for (int i = 0; i < 10; ++i) absl::StrAppend(&anchors, i ? ", " : "", "*a", l - 1);
    absl::StrAppend(&anchors, "]\n");
  }
  return absl::StrCat("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata:\n  name: ", name,
                      "\n  annotations:\n", anchors,
                      "spec:\n  pytorchReplicaSpecs:\n    Master:\n      replicas: 1\n"
                      "      template:\n        spec:\n          containers:\n"
                      "          - {name: pytorch, image: x, command: [\"true\"]}\n");
}

class HostileInputTest : public OperatorTest {
 protected:
  void SetUp() override { StartOperator({}, "hostile"); }

  // Runs one case and records its line.
  void Case(const std::string& name, Verdict want, const std::function<Seen()>& run) {
    const absl::Time begin = absl::Now();
    Seen seen = run();
    const bool answers = op_->client().ListAllJobs().ok();
    const int64_t peak = StatusKib(op_->operator_pid(), "VmHWM");
    peak_kib_ = std::max(peak_kib_, peak);
    const std::string line = absl::StrFormat(
        "[hostile] %-58s %-15s peak RSS %6.1f MiB  answers %-3s %5.1fs %s", name,
        seen.verdict ? VerdictName(*seen.verdict) : "UNEXPECTED", peak / 1024.0,
        answers ? "yes" : "NO", absl::ToDoubleSeconds(absl::Now() - begin), seen.detail);
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
    ++cases_;
    EXPECT_TRUE(seen.verdict.has_value() && *seen.verdict == want)
        << line << " (want " << VerdictName(want) << ")";
    EXPECT_TRUE(answers) << name;
  }

  // Submits `job`, waits for its end: kFailedCleanly when it Failed with a message that holds
  // `because`; kRefused when CreateJob refused it naming `because`.
  Seen SubmitExpectingFailure(const TrainingJob& job, const std::string& because) {
    absl::StatusOr<TrainingJob> created = op_->client().CreateJob(job, kNs);
    if (!created.ok()) {
      if (absl::StrContains(created.status().message(), because)) {
        return {Verdict::kRefused, std::string(created.status().message()).substr(0, 100)};
      }
      return {std::nullopt, created.status().ToString()};
    }
    absl::StatusOr<TrainingJob> done = op_->WaitJob(
        job.metadata().name(), [](const TrainingJob& j) { return sdk::IsJobFinished(j); },
        absl::Seconds(60));
    if (!done.ok()) return {std::nullopt, done.status().ToString()};
    if (!sdk::IsJobFailed(*done)) return {std::nullopt, done->status().ShortDebugString()};
    for (const api::v1::JobCondition& c : done->status().conditions()) {
      if (c.type() == "Failed" && absl::StrContains(c.message(), because)) {
        return {Verdict::kFailedCleanly, c.message().substr(0, 100)};
      }
    }
    return {std::nullopt, done->status().ShortDebugString()};
  }

  Seen ManifestRefused(const std::string& manifest, const std::string& because) {
    absl::StatusOr<TrainingJob> created = op_->client().CreateJobFromManifest(manifest, kNs);
    if (created.ok()) return {std::nullopt, "accepted"};
    if (!absl::IsInvalidArgument(created.status()) ||
        !absl::StrContains(created.status().message(), because)) {
      return {std::nullopt, created.status().ToString().substr(0, 300)};
    }
    return {Verdict::kRefused, std::string(created.status().message()).substr(0, 100)};
  }

  Seen RunsToSuccess(const TrainingJob& job, absl::Duration timeout = absl::Seconds(120)) {
    absl::StatusOr<TrainingJob> created = op_->client().CreateJob(job, kNs);
    if (!created.ok()) return {std::nullopt, created.status().ToString()};
    absl::StatusOr<TrainingJob> done = op_->WaitJob(
        job.metadata().name(), [](const TrainingJob& j) { return sdk::IsJobFinished(j); }, timeout);
    if (!done.ok()) return {std::nullopt, done.status().ToString()};
    if (!sdk::IsJobSucceeded(*done)) return {std::nullopt, done->status().ShortDebugString()};
    return {Verdict::kSurvived, ""};
  }

  // The operator binary with `args` on a state directory of its own: its exit code and output.
  CommandResult RunOperator(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {
        Runfile("operator/coach-operator"), "--listen=127.0.0.1:0", "--http-listen=127.0.0.1:0",
        "--shim=" + Runfile("operator/backend/local/coach-replica-shim")};
    argv.insert(argv.end(), args.begin(), args.end());
    static int runs = 0;
    return RunProcess(argv, {"HOME=" + op_->home(), "PATH=/usr/bin:/bin"}, "",
                      absl::StrCat(op_->root(), "/operator-run-", ++runs), absl::Seconds(20));
  }

  // The operator started with `args`: kRefused when it exits 2 naming `because`.
  Seen StartRefused(const std::vector<std::string>& args, const std::string& because) {
    CommandResult r = RunOperator(args);
    if (r.exit_code == 2 && absl::StrContains(r.err, because)) return {Verdict::kRefused, "exit 2"};
    return {std::nullopt, absl::StrCat("exit ", r.exit_code, ": ", r.err)};
  }

  int64_t peak_kib_ = 0;
  int cases_ = 0;
};

TEST_F(HostileInputTest, EveryCaseHandledAndTheOperatorStaysSmall) {
  // Accepted before any case: must be there, finished, at the end.
  ASSERT_TRUE(
      op_->client().CreateJob(BuildOrDie(ShellJob("kept", "echo kept").Masters(1)), kNs).ok());
  ASSERT_TRUE(
      op_->WaitJob("kept", [](const TrainingJob& j) { return sdk::IsJobSucceeded(j); }).ok());

  // --- A job's own content.
  Case("env: 7 variables x10 references, 1 KB -> 1 GB", Verdict::kFailedCleanly, [&] {
    sdk::JobBuilder bomb = ShellJob("env-bomb", "true").Masters(1).RestartPolicy("Never");
    bomb.Env("V0", std::string(100, 'x'));
    for (int i = 1; i < 8; ++i) {
      std::string value;
      for (int j = 0; j < 10; ++j) absl::StrAppend(&value, "$(V", i - 1, ")");
      bomb.Env(absl::StrCat("V", i), value);
    }
    return SubmitExpectingFailure(BuildOrDie(bomb), "env V");
  });
  Case("args: $(V) x1000 over a 100 KB variable", Verdict::kFailedCleanly, [&] {
    std::vector<std::string> args(1, std::string());
    for (int j = 0; j < 1000; ++j) absl::StrAppend(&args[0], "$(BIG)");
    sdk::JobBuilder job = ShellJob("args-bomb", "true").Masters(1).RestartPolicy("Never");
    job.Env("BIG", std::string(100 * 1024, 'y')).Args(args);
    return SubmitExpectingFailure(BuildOrDie(job), "arg");
  });
  Case("env: one 1.4 MB literal value (beyond execve)", Verdict::kFailedCleanly, [&] {
    sdk::JobBuilder job = ShellJob("env-huge", "true").Masters(1).RestartPolicy("Never");
    job.Env("HUGE", std::string(1400 * 1000, 'z'));
    Seen seen = SubmitExpectingFailure(BuildOrDie(job), "HUGE");
    // Refused at admission is as good: nothing runs, nothing loops.
    if (seen.verdict == Verdict::kRefused) seen.verdict = Verdict::kFailedCleanly;
    return seen;
  });
  Case("YAML alias bomb, 1 KB anchor x10^5 (~10 KB manifest)", Verdict::kRefused,
       [&] { return ManifestRefused(AliasBomb("yaml-bomb", 1000, 5), "expands to more than"); });
  Case("YAML alias bomb, 100 KB anchor x10^4 (~100 KB manifest)", Verdict::kRefused,
       [&] { return ManifestRefused(AliasBomb("yaml-bomb2", 100000, 4), "expands to more than"); });
  Case("YAML nested 100000 deep", Verdict::kRefused, [&] {
    return ManifestRefused(std::string(100000, '[') + std::string(100000, ']'), "deeper than");
  });
  Case("manifest of 2 MiB (over what Kubernetes stores)", Verdict::kRefused, [&] {
    sdk::JobBuilder job = ShellJob("too-big", "true").Masters(1);
    job.Annotation("big", std::string(2 << 20, 'b'));
    return SubmitExpectingFailure(BuildOrDie(job), "more than the 1572864");
  });
  Case("metadata.extra_json \"[1,2]\" (structured CreateJob)", Verdict::kRefused, [&] {
    TrainingJob job = BuildOrDie(ShellJob("extra", "true").Masters(1));
    job.mutable_metadata()->set_extra_json("[1,2]");
    return SubmitExpectingFailure(job, "metadata");
  });
  Case("template_json ports \"x\" (structured CreateJob)", Verdict::kRefused, [&] {
    TrainingJob job = BuildOrDie(ShellJob("ports", "true").Masters(1));
    api::v1::ReplicaSpec& master = (*job.mutable_spec()->mutable_replica_specs())["Master"];
    nlohmann::json tpl = nlohmann::json::parse(master.template_json());
    tpl["spec"]["containers"][0]["ports"] = "x";
    master.set_template_json(tpl.dump());
    return SubmitExpectingFailure(job, "ports");
  });

  // --- The operator's credentials.
  for (const char* uri : {"http://127.0.0.1:1", "http://169.254.169.254/latest/meta-data",
                          "http://[fd00:ec2::254]"}) {
    Case(absl::StrCat("job-named MLflow server ", uri), Verdict::kRefused, [&] {
      TrainingJob job = BuildOrDie(ShellJob("mlflow-uri", "true")
                                       .Masters(1)
                                       .Annotation("coach.dev/mlflow-tracking-uri", uri));
      return SubmitExpectingFailure(job, "mlflow-tracking-uri");
    });
  }
  Case("call without a token / with another token", Verdict::kRefused, [&] {
    const bool none = absl::IsUnauthenticated(op_->NewClient("")->ListAllJobs().status());
    const bool other = absl::IsUnauthenticated(
        op_->NewClient("0123456789abcdef0123456789abcdef")->ListAllJobs().status());
    return none && other ? Seen{Verdict::kRefused, "UNAUTHENTICATED"}
                         : Seen{std::nullopt, "an unauthenticated call was answered"};
  });

  // --- Resources a running job takes.
  Case("replica writes 150 MB as fast as it can", Verdict::kSurvived, [&] {
    Seen seen = RunsToSuccess(BuildOrDie(
        ShellJob("flood",
                 "yes 0123456789abcdef0123456789abcdef | head -c 150000000; echo LAST-LINE")
            .Masters(1)));
    if (!seen.verdict) return seen;
    absl::StatusOr<std::string> logs = op_->Logs("flood", "master-0");
    if (!logs.ok() || !absl::EndsWith(*logs, "LAST-LINE\n")) {
      return Seen{std::nullopt, "the last line is not the log's last"};
    }
    return Seen{Verdict::kSurvived,
                absl::StrCat("kept ", logs->size() >> 20, " MiB, last line kept")};
  });
  Case("replica leaves 20 processes behind (setsid)", Verdict::kSurvived, [&] {
    const std::string pids = op_->root() + "/escaped.pids";
    Seen seen = RunsToSuccess(BuildOrDie(
        ShellJob("escape", absl::StrCat("for i in $(seq 20); do setsid sleep 1000 & echo $! >> ",
                                        pids, "; done"))
            .Masters(1)));
    if (!seen.verdict) return seen;
    int alive = 0;
    Eventually(
        [&] {
          alive = 0;
          for (absl::string_view p :
               absl::StrSplit(ReadFileOrEmpty(pids), '\n', absl::SkipEmpty())) {
            int pid = 0;
            if (absl::SimpleAtoi(p, &pid) && kill(pid, 0) == 0 && ProcState(pid) != 'Z') ++alive;
          }
          return alive == 0;
        },
        absl::Seconds(10), kProcessPoll);
    return alive == 0 ? Seen{Verdict::kSurvived, "none left"}
                      : Seen{std::nullopt, absl::StrCat(alive, " still alive")};
  });
  Case("job of 80 replicas", Verdict::kSurvived, [&] {
    return RunsToSuccess(BuildOrDie(ShellJob("wide", "true").Masters(1).Workers(79)),
                         absl::Minutes(3));
  });

  // --- The command line.
  Case("coach submit -f DIR, -f /dev/zero", Verdict::kRefused, [&] {
    CliResult dir = op_->Cli({"submit", "-f", op_->root()}, true, absl::Seconds(20));
    CliResult zero = op_->Cli({"submit", "-f", "/dev/zero"}, true, absl::Seconds(20));
    if (dir.exit_code <= 0 || zero.exit_code <= 0) {
      return Seen{std::nullopt, absl::StrCat("exit ", dir.exit_code, ", ", zero.exit_code)};
    }
    return Seen{Verdict::kRefused,
                absl::StrCat(absl::StripAsciiWhitespace(zero.err).substr(0, 80))};
  });

  // --- Operators started on hostile files (their own processes; exit 2 naming the flag).
  Case("--token-file readable by every user", Verdict::kRefused, [&] {
    const std::string token = op_->root() + "/world-token";
    WriteFileOrDie(token, "0123456789abcdef0123456789abcdef\n");
    chmod(token.c_str(), 0644);
    return StartRefused({"--state-dir=" + op_->root() + "/s1", "--token-file=" + token},
                        "readable by every user");
  });
  Case("--token-file of one character", Verdict::kRefused, [&] {
    const std::string token = op_->root() + "/short-token";
    WriteFileOrDie(token, "x\n");
    chmod(token.c_str(), 0600);
    return StartRefused({"--state-dir=" + op_->root() + "/s2", "--token-file=" + token},
                        "at least 16");
  });
  Case("--tls-key of another certificate", Verdict::kRefused, [&] {
    const std::string d = op_->root();
    for (const char* pair : {"a", "b"}) {
      const std::string cmd =
          absl::StrCat("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=", pair,
                       " -keyout ", d, "/", pair, ".key -out ", d, "/", pair, ".pem 2>/dev/null");
      if (std::system(cmd.c_str()) != 0) return Seen{std::nullopt, "openssl req failed"};
    }
    return StartRefused(
        {"--state-dir=" + d + "/s3", "--tls-cert=" + d + "/a.pem", "--tls-key=" + d + "/b.key"},
        "--tls-key: it is not the private key");
  });

  // --- Idle connections on the HTTP port.
  Case("64 idle TCP connections to the HTTP port, then /healthz", Verdict::kSurvived, [&] {
    const int port = op_->http_port();
    std::vector<int> idle;
    for (int i = 0; i < 64; ++i) {
      int fd = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(port);
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0)
        idle.push_back(fd);
      else
        close(fd);
    }
    const absl::Time begin = absl::Now();
    CommandResult health = RunProcess(
        {"/usr/bin/curl", "-sS", "-m", "2", absl::StrCat("http://127.0.0.1:", port, "/healthz")},
        {}, "", op_->root() + "/healthz", absl::Seconds(5));
    const double ms = absl::ToDoubleMilliseconds(absl::Now() - begin);
    for (int fd : idle) close(fd);
    return health.exit_code == 0 && absl::StrContains(health.out, "ok")
               ? Seen{Verdict::kSurvived,
                      absl::StrFormat("%zu idle, /healthz in %.0f ms", idle.size(), ms)}
               : Seen{std::nullopt,
                      absl::StrCat("/healthz: exit ", health.exit_code, " ", health.err)};
  });

  Case("a 0-byte database beside replicas of an earlier run", Verdict::kRefused, [&] {
    const std::string state = op_->root() + "/lost-db";
    mkdir(state.c_str(), 0700);
    mkdir((state + "/replicas").c_str(), 0700);
    mkdir((state + "/replicas/default.job.master-0").c_str(), 0700);
    WriteFileOrDie(state + "/coach.db", "");
    CommandResult r = RunOperator({"--state-dir=" + state});
    return r.exit_code != 0 && absl::StrContains(r.err + r.out, "refusing to start")
               ? Seen{Verdict::kRefused, absl::StrCat("exit ", r.exit_code)}
               : Seen{std::nullopt, absl::StrCat("exit ", r.exit_code, ": ", r.err, r.out)};
  });

  // Nothing accepted was lost.
  absl::StatusOr<TrainingJob> kept = op_->client().GetJob(kNs, "kept");
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_TRUE(sdk::IsJobSucceeded(*kept));

  std::printf("[hostile] %d cases; operator peak RSS %.1f MiB (limit %lld MiB)\n", cases_,
              peak_kib_ / 1024.0, static_cast<long long>(kRssLimitKib / 1024));
  EXPECT_LT(peak_kib_, kRssLimitKib);
}

}  // namespace
}  // namespace coach::e2e
