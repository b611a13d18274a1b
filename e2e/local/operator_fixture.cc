#include "e2e/local/operator_fixture.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

extern char** environ;

namespace coach::e2e {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

// The test's environment without COACH_* (an operator or CLI must see only what the
// fixture gives it), with `overrides` ("NAME=value") replacing or adding entries.
std::vector<std::string> ChildEnv(const std::vector<std::string>& overrides) {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (absl::StartsWith(entry, "COACH_")) continue;
    bool replaced = false;
    for (const std::string& o : overrides) {
      const std::string key = o.substr(0, o.find('=') + 1);
      if (absl::StartsWith(entry, key)) replaced = true;
    }
    if (!replaced) out.push_back(entry);
  }
  for (const std::string& o : overrides) out.push_back(o);
  return out;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// fork + execve with stdout/stderr appended to the given files. In the child, a parent
// death kills it when `die_with_parent`.
pid_t Spawn(std::vector<std::string> argv, std::vector<std::string> env, const std::string& out,
            const std::string& err, bool die_with_parent) {
  std::vector<char*> cargv = CStrings(argv);
  std::vector<char*> cenv = CStrings(env);
  const pid_t pid = fork();
  if (pid != 0) return pid;
  if (die_with_parent) prctl(PR_SET_PDEATHSIG, SIGKILL);
  const int in_fd = open("/dev/null", O_RDONLY);
  const int out_fd = open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  const int err_fd = open(err.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (in_fd < 0 || out_fd < 0 || err_fd < 0) _exit(126);
  dup2(in_fd, 0);
  dup2(out_fd, 1);
  dup2(err_fd, 2);
  execve(cargv[0], cargv.data(), cenv.data());
  _exit(127);
}

// Waits for `pid` up to `timeout`; its wait status, or nullopt when still running.
std::optional<int> WaitFor(pid_t pid, absl::Duration timeout) {
  const absl::Time end = absl::Now() + timeout;
  while (true) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0) return -1;
    if (absl::Now() >= end) return std::nullopt;
    absl::SleepFor(absl::Milliseconds(20));
  }
}

std::string ReadProcFile(pid_t pid, const char* what) {
  return ReadFileOrEmpty(absl::StrCat("/proc/", pid, "/", what));
}

char ProcState(pid_t pid) {
  const std::string stat = ReadProcFile(pid, "stat");
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return '?';
  return stat[paren + 2];
}

}  // namespace

std::string Runfile(const std::string& path) {
  return absl::StrCat(Env("TEST_SRCDIR"), "/coach/", path);
}

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    socklen_t len = sizeof(addr);
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

bool Eventually(const std::function<bool()>& pred, absl::Duration timeout) {
  const absl::Time end = absl::Now() + timeout;
  while (!pred()) {
    if (absl::Now() >= end) return false;
    absl::SleepFor(absl::Milliseconds(100));
  }
  return true;
}

std::string DescribeProcesses(const std::vector<ProcessInfo>& processes) {
  std::string out;
  for (const ProcessInfo& p : processes) absl::StrAppend(&out, p.pid, ": ", p.cmdline, "\n");
  return out;
}

void WriteFileOrDie(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::abort();
  }
}

OperatorFixture::OperatorFixture(const std::string& name, OperatorOptions options)
    : options_(std::move(options)) {
  std::string base = Env("TEST_TMPDIR");
  if (base.empty()) base = "/tmp";
  std::string templ = absl::StrCat(base, "/", name, ".XXXXXX");
  if (mkdtemp(templ.data()) == nullptr) {
    std::fprintf(stderr, "mkdtemp %s failed\n", templ.c_str());
    std::abort();
  }
  root_ = templ;
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
  }
}

OperatorFixture::~OperatorFixture() {
  const absl::Time begin = absl::Now();
  const absl::Status stopped = Stop(absl::Seconds(10));
  std::fprintf(stderr, "[fixture] operator stopped in %s: %s\n",
               absl::FormatDuration(absl::Now() - begin).c_str(), stopped.ToString().c_str());
  // Leftovers of a failed test; a replica in its grace period may need a second pass.
  for (int i = 0; i < 3 && KillLeftovers() > 0; ++i) absl::SleepFor(absl::Milliseconds(200));
}

std::string OperatorFixture::server() const { return absl::StrCat("127.0.0.1:", grpc_port_); }

std::string OperatorFixture::OperatorLog() const {
  std::string all;
  for (int i = 1; i <= starts_; ++i) {
    absl::StrAppend(&all, "--- operator start ", i, " ---\n",
                    ReadFileOrEmpty(absl::StrCat(root_, "/operator-", i, ".log")));
  }
  return all;
}

absl::Status OperatorFixture::Start(absl::Duration timeout) {
  if (running()) return absl::FailedPreconditionError("operator already running");
  absl::Status last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    last = StartOnce(timeout);
    if (last.ok()) return last;
  }
  return absl::Status(last.code(), absl::StrCat(last.message(), "\n", OperatorLog()));
}

absl::Status OperatorFixture::StartOnce(absl::Duration timeout) {
  grpc_port_ = FreePort();
  http_port_ = FreePort();
  while (http_port_ == grpc_port_) http_port_ = FreePort();
  ++starts_;
  const std::string log = absl::StrCat(root_, "/operator-", starts_, ".log");
  std::vector<std::string> argv = {
      Runfile("operator/coach-operator"),
      "--backend=local",
      absl::StrCat("--listen=127.0.0.1:", grpc_port_),
      absl::StrCat("--http-listen=127.0.0.1:", http_port_),
      "--state-dir=" + state_dir_,
      "--shim=" + Runfile("operator/backend/local/coach-replica-shim"),
      "--workdir=" + workdir_,
  };
  if (!token_file_.empty()) argv.push_back("--token-file=" + token_file_);
  for (const std::string& a : options_.extra_args) argv.push_back(a);
  const std::string path = absl::StrCat(Runfile("launcher"), ":/usr/local/bin:/usr/bin:/bin");
  pid_ = Spawn(argv, ChildEnv({"HOME=" + home_, "PATH=" + path, "LANG=C.UTF-8"}), log, log,
               /*die_with_parent=*/true);
  if (pid_ < 0) return absl::InternalError("fork failed");

  const absl::Time end = absl::Now() + timeout;
  while (!Ready()) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return absl::UnavailableError(absl::StrCat("coach-operator exited (status ", status,
                                                 ") before it was ready"));
    }
    if (absl::Now() >= end) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
      return absl::DeadlineExceededError("coach-operator not ready in time");
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  client_ = NewClient(options_.token);
  return absl::OkStatus();
}

bool OperatorFixture::Ready() const {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(http_port_));
  bool ok = false;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string req = "GET /readyz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char buf[64] = {};
      const ssize_t n = read(fd, buf, sizeof(buf) - 1);
      ok = n > 12 && absl::StrContains(std::string(buf, n), " 200");
    }
  }
  close(fd);
  return ok;
}

absl::Status OperatorFixture::Stop(absl::Duration timeout) {
  if (!running()) return absl::OkStatus();
  // An idle connected channel holds gRPC's graceful shutdown until its deadline (5 s).
  client_.reset();
  kill(pid_, SIGTERM);
  std::optional<int> status = WaitFor(pid_, timeout);
  absl::Status result = absl::OkStatus();
  if (!status) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    result = absl::DeadlineExceededError("coach-operator did not stop on SIGTERM");
  } else if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    result = absl::InternalError(absl::StrCat("coach-operator stopped with status ", *status));
  }
  pid_ = -1;
  return result;
}

absl::Status OperatorFixture::Kill9() {
  if (!running()) return absl::FailedPreconditionError("operator not running");
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
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
  sdk::ConnectionOptions options;
  options.server = server();
  options.token = token;
  options.use_environment = false;
  options.call_timeout = absl::Seconds(30);
  absl::StatusOr<std::unique_ptr<sdk::TrainingClient>> client =
      sdk::TrainingClient::Create(options);
  if (!client.ok()) {
    std::fprintf(stderr, "TrainingClient::Create: %s\n", client.status().ToString().c_str());
    std::abort();
  }
  return std::move(*client);
}

CliResult OperatorFixture::Cli(const std::vector<std::string>& args, bool with_token,
                               absl::Duration timeout) const {
  static int calls = 0;
  ++calls;
  const std::string out = absl::StrCat(root_, "/cli-", calls, ".out");
  const std::string err = absl::StrCat(root_, "/cli-", calls, ".err");
  std::vector<std::string> argv = {Runfile("sdk/cpp/cli/coach")};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> overrides = {"COACH_SERVER=" + server()};
  if (with_token && !token_file_.empty()) overrides.push_back("COACH_TOKEN_FILE=" + token_file_);
  CliResult result;
  const pid_t pid = Spawn(argv, ChildEnv(overrides), out, err, /*die_with_parent=*/true);
  std::optional<int> status = WaitFor(pid, timeout);
  if (!status) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  } else if (WIFEXITED(*status)) {
    result.exit_code = WEXITSTATUS(*status);
  }
  result.out = ReadFileOrEmpty(out);
  result.err = ReadFileOrEmpty(err);
  return result;
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
    if (pid == pid_ || pid == getpid()) continue;
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
  const absl::Time end = absl::Now() + timeout;
  while (true) {
    std::vector<ProcessInfo> left = Processes();
    if (left.empty() || absl::Now() >= end) return left;
    absl::SleepFor(absl::Milliseconds(100));
  }
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
  const absl::Time end = absl::Now() + timeout;
  absl::StatusOr<api::v1::TrainingJob> last = absl::UnknownError("never read");
  while (true) {
    last = client_->GetJob(namespace_, name);
    if (last.ok() && pred(*last)) return last;
    if (absl::Now() >= end) break;
    absl::SleepFor(absl::Milliseconds(100));
  }
  if (!last.ok()) return last.status();
  return absl::DeadlineExceededError(absl::StrCat("job ", name, " did not reach the state in ",
                                                  absl::FormatDuration(timeout), "; last: ",
                                                  last->status().ShortDebugString()));
}

absl::Status OperatorFixture::WaitJobGone(const std::string& name, absl::Duration timeout,
                                          const std::string& namespace_) {
  const absl::Time end = absl::Now() + timeout;
  while (true) {
    absl::StatusOr<api::v1::TrainingJob> job = client_->GetJob(namespace_, name);
    if (absl::IsNotFound(job.status())) return absl::OkStatus();
    if (absl::Now() >= end) {
      return absl::DeadlineExceededError(
          absl::StrCat("job ", name, " still there: ", job.status().ToString()));
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
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

}  // namespace coach::e2e

namespace coach::e2e {

sdk::JobBuilder ShellJob(const std::string& name, const std::string& script) {
  return sdk::JobBuilder::PyTorch(name).Image("busybox:1.36").Command({"/bin/sh", "-c", script});
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
