#include "e2e/local/operator_fixture.h"

#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace coach::e2e {
namespace {

// What the operator and the CLI must not take from the test's environment: they see only
// the server and token the fixture gives them.
std::vector<std::string> DroppedEnv() { return {"COACH_"}; }

}  // namespace

OperatorFixture::OperatorFixture(const std::string& name, OperatorOptions options)
    : options_(std::move(options)) {
  absl::StatusOr<std::string> root = MakeTempDir(absl::StrCat(TestTmpDir(), "/", name, "."));
  if (!root.ok()) {
    std::fprintf(stderr, "%s\n", root.status().ToString().c_str());
    std::abort();
  }
  root_ = *root;
  state_dir_ = root_ + "/state";
  home_ = root_ + "/home";
  mkdir(home_.c_str(), 0755);
  workdir_ = options_.workdir;
  if (workdir_.empty()) {
    workdir_ = root_ + "/work";
    mkdir(workdir_.c_str(), 0755);
  }
  if (!options_.token.empty()) {
    token_file_ = root_ + "/token";
    WriteFileOrDie(token_file_, options_.token + "\n");
    chmod(token_file_.c_str(), 0600);
  }
  std::vector<std::string> flags = {
      "--backend=local",
      "--state-dir=" + state_dir_,
      "--shim=" + Runfile("operator/backend/local/coach-replica-shim"),
      "--workdir=" + workdir_,
  };
  if (!token_file_.empty()) flags.push_back("--token-file=" + token_file_);
  for (const std::string& a : options_.extra_args) flags.push_back(a);
  // coach-launch first on PATH (after path_prepend): replicas find it as the examples expect.
  std::string path;
  for (const std::string& dir : options_.path_prepend) absl::StrAppend(&path, dir, ":");
  absl::StrAppend(&path, Runfile("launcher"), ":/usr/local/bin:/usr/bin:/bin");
  std::vector<std::string> env = {"HOME=" + home_, "PATH=" + path, "LANG=C.UTF-8"};
  env.insert(env.end(), options_.extra_env.begin(), options_.extra_env.end());
  operator_ = std::make_unique<LoopbackOperator>("operator", root_, std::move(flags),
                                                 ChildEnv(env, DroppedEnv()));
}

OperatorFixture::~OperatorFixture() {
  const absl::Time begin = absl::Now();
  const absl::Status stopped = Stop(absl::Seconds(10));
  std::fprintf(stderr, "[fixture] operator stopped in %s: %s\n",
               absl::FormatDuration(absl::Now() - begin).c_str(), stopped.ToString().c_str());
  // Leftovers of a failed test; a replica in its grace period may need a second pass.
  Eventually([&] { return KillLeftovers() == 0; }, absl::Milliseconds(400),
             absl::Milliseconds(200));
}

absl::Status OperatorFixture::Start(absl::Duration timeout) {
  absl::Status started = operator_->Start(timeout);
  if (started.ok()) client_ = NewClient(token());
  return started;
}

std::string OperatorFixture::token() const {
  if (!options_.token.empty()) return options_.token;
  return std::string(absl::StripAsciiWhitespace(ReadFileOrEmpty(state_dir_ + "/api-token")));
}

absl::Status OperatorFixture::Stop(absl::Duration timeout) {
  if (!running()) return absl::OkStatus();
  // An idle connected channel holds gRPC's graceful shutdown until its deadline (5 s).
  client_.reset();
  return operator_->Stop(timeout);
}

absl::Status OperatorFixture::Kill9() {
  if (!running()) return absl::FailedPreconditionError("operator not running");
  operator_->Kill9();
  return absl::OkStatus();
}

absl::Status OperatorFixture::Restart(absl::Duration timeout) {
  if (running()) {
    absl::Status stopped = Stop();
    if (!stopped.ok()) return stopped;
  }
  return Start(timeout);
}

std::unique_ptr<sdk::TrainingClient> OperatorFixture::NewClient(const std::string& token) const {
  return NewTrainingClient(server(), token);
}

CliResult OperatorFixture::Cli(const std::vector<std::string>& args, bool with_token,
                               absl::Duration timeout) const {
  static int calls = 0;
  ++calls;
  std::vector<std::string> argv = {Runfile("sdk/cpp/cli/coach")};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> overrides = {"COACH_SERVER=" + server()};
  if (with_token && !token_file_.empty()) overrides.push_back("COACH_TOKEN_FILE=" + token_file_);
  if (with_token && token_file_.empty()) overrides.push_back("COACH_STATE_DIR=" + state_dir_);
  return RunProcess(argv, ChildEnv(overrides, DroppedEnv()), "",
                    absl::StrCat(root_, "/cli-", calls), timeout);
}

std::vector<ProcessInfo> OperatorFixture::Processes() const {
  std::vector<ProcessInfo> out;
  const std::string home_entry = "HOME=" + home_;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return out;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long pid = strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || pid <= 0) continue;
    if (pid == operator_->pid() || pid == getpid()) continue;
    if (ProcState(pid) == 'Z') continue;  // gone, waiting for its parent to reap it
    std::string cmdline = ReadProcFile(pid, "cmdline");
    const std::string environ_text = ReadProcFile(pid, "environ");
    bool ours = absl::StrContains(cmdline, state_dir_ + "/");
    for (absl::string_view entry : absl::StrSplit(environ_text, '\0')) {
      if (entry == home_entry) ours = true;
    }
    if (!ours) continue;
    for (char& c : cmdline) {
      if (c == '\0') c = ' ';
    }
    out.push_back({static_cast<pid_t>(pid), cmdline});
  }
  closedir(dir);
  return out;
}

std::vector<ProcessInfo> OperatorFixture::WaitNoProcesses(absl::Duration timeout) const {
  std::vector<ProcessInfo> left;
  Eventually(
      [&] {
        left = Processes();
        return left.empty();
      },
      timeout, kProcessPoll);
  return left;
}

int OperatorFixture::KillLeftovers() const {
  int n = 0;
  for (const ProcessInfo& p : Processes()) {
    if (kill(p.pid, SIGKILL) == 0) ++n;
  }
  return n;
}

absl::StatusOr<api::v1::TrainingJob> OperatorFixture::WaitJob(
    const std::string& name, const std::function<bool(const api::v1::TrainingJob&)>& pred,
    absl::Duration timeout, const std::string& namespace_) {
  absl::StatusOr<api::v1::TrainingJob> last = absl::UnknownError("never read");
  if (Eventually(
          [&] {
            last = client_->GetJob(namespace_, name);
            return last.ok() && pred(*last);
          },
          timeout, kProcessPoll)) {
    return last;
  }
  if (!last.ok()) return last.status();
  return absl::DeadlineExceededError(absl::StrCat("job ", name, " did not reach the state in ",
                                                  absl::FormatDuration(timeout),
                                                  "; last: ", last->status().ShortDebugString()));
}

absl::StatusOr<api::v1::TrainingJob> OperatorFixture::WaitFinished(const std::string& name,
                                                                   absl::Duration timeout,
                                                                   const std::string& namespace_) {
  sdk::WaitOptions wait;
  wait.timeout = timeout;
  absl::StatusOr<api::v1::TrainingJob> done =
      client().WaitForJobConditions(namespace_, name, {"Succeeded", "Failed"}, wait);
  if (done.ok()) return done;
  absl::StatusOr<api::v1::TrainingJob> now = client().GetJob(namespace_, name);
  return absl::Status(done.status().code(), absl::StrCat(done.status().message(), "\n",
                                                         now.ok() ? now->status().ShortDebugString()
                                                                  : now.status().ToString()));
}

absl::Status OperatorFixture::WaitJobGone(const std::string& name, absl::Duration timeout,
                                          const std::string& namespace_) {
  absl::Status last;
  if (Eventually(
          [&] {
            last = client_->GetJob(namespace_, name).status();
            return absl::IsNotFound(last);
          },
          timeout, kProcessPoll)) {
    return absl::OkStatus();
  }
  return absl::DeadlineExceededError(absl::StrCat("job ", name, " still there: ", last.ToString()));
}

absl::StatusOr<std::string> OperatorFixture::Logs(const std::string& name,
                                                  const std::string& replica,
                                                  const std::string& namespace_) {
  sdk::LogOptions options;
  options.namespace_ = namespace_;
  options.name = name;
  options.replica = replica;
  std::string text;
  absl::Status s = client_->GetJobLogs(options, [&](const api::v1::LogChunk& chunk) {
    text += chunk.data();
    return true;
  });
  if (!s.ok()) return s;
  return text;
}

void OperatorTest::StartOperator(OperatorOptions options, const std::string& name) {
  op_ = std::make_unique<OperatorFixture>(
      name.empty() ? ::testing::UnitTest::GetInstance()->current_test_info()->name() : name,
      std::move(options));
  ASSERT_TRUE(op_->Start().ok()) << op_->OperatorLog();
}

void OperatorTest::TearDown() {
  if (HasFailure() && op_ != nullptr) std::fprintf(stderr, "%s\n", op_->OperatorLog().c_str());
  op_.reset();
}

sdk::JobBuilder ShellJob(const std::string& name, const std::string& script) {
  return sdk::JobBuilder::PyTorch(name).Image(kShellImage).Command({"/bin/sh", "-c", script});
}

JobManifest ShellManifest(const std::string& name, const std::string& script) {
  return JobManifest::PyTorch(name)
      .Replica("Master", 1)
      .RestartPolicy("Never")
      .Image(kShellImage)
      .Command({"/bin/sh", "-c", script});
}

api::v1::TrainingJob BuildOrDie(const sdk::JobBuilder& builder) {
  absl::StatusOr<api::v1::TrainingJob> job = builder.Build();
  if (!job.ok()) {
    std::fprintf(stderr, "JobBuilder: %s\n", job.status().ToString().c_str());
    std::abort();
  }
  return *job;
}

}  // namespace coach::e2e
