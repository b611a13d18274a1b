#include "bench/local/bench_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

extern char** environ;

namespace coach::bench {
namespace {

absl::Status Errno(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", strerror(errno)));
}

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

bool CanConnect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

}  // namespace

absl::StatusOr<std::string> MakeTempDir(const std::string& prefix) {
  // $TMPDIR as everywhere else: `TMPDIR=/dev/shm` puts the operator's state (its sqlite
  // store, replica and log files) on tmpfs, to tell the disk's part from the operator's.
  const char* tmpdir = getenv("TMPDIR");
  std::string tmpl =
      absl::StrCat(tmpdir != nullptr && tmpdir[0] == '/' ? tmpdir : "/tmp", "/", prefix, ".XXXXXX");
  if (mkdtemp(tmpl.data()) == nullptr) return Errno("mkdtemp");
  return tmpl;
}

int64_t MonoNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

double MsBetween(int64_t from_ns, int64_t to_ns) {
  return static_cast<double>(to_ns - from_ns) / 1e6;
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return absl::StrCat(a, " ", b, " ", c);
}

int CpuCount() {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

Summary Summarize(std::vector<double> v) {
  Summary s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto rank = [&](double p) {
    size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
    return v[std::min(v.size() - 1, i == 0 ? 0 : i - 1)];
  };
  s.p50 = rank(0.50);
  s.p90 = rank(0.90);
  s.p99 = rank(0.99);
  s.min = v.front();
  s.max = v.back();
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  return s;
}

std::string FormatRow(const std::string& label, const Summary& s) {
  return absl::StrFormat("%-44s %5d %8.2f %8.2f %8.2f %8.2f %8.2f", label, s.n, s.p50, s.p90, s.p99,
                         s.min, s.max);
}

absl::StatusOr<ProcUsage> ReadProcUsage(pid_t pid) {
  ProcUsage u;
  {
    std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
    std::string line;
    if (!std::getline(in, line)) return absl::NotFoundError(absl::StrCat("no process ", pid));
    // Fields after the command (which may hold spaces) start after the last ')'.
    const size_t close = line.rfind(')');
    std::vector<std::string> f = absl::StrSplit(line.substr(close + 2), ' ');
    // f[0] is field 3 (state); utime is field 14, stime 15.
    int64_t utime = 0, stime = 0;
    if (f.size() < 13 || !absl::SimpleAtoi(f[11], &utime) || !absl::SimpleAtoi(f[12], &stime)) {
      return absl::InternalError("unexpected /proc/<pid>/stat");
    }
    u.cpu_seconds = static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  }
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    auto value = [&](const char* key, int64_t* out) {
      absl::string_view v(line);
      if (!absl::ConsumePrefix(&v, key)) return;
      v = absl::StripAsciiWhitespace(v);
      absl::ConsumeSuffix(&v, " kB");
      (void)absl::SimpleAtoi(v, out);
    };
    value("VmHWM:", &u.vm_hwm_kb);
    value("VmRSS:", &u.vm_rss_kb);
  }
  return u;
}

// ---------------------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<OperatorProcess>> OperatorProcess::Start(const Options& options) {
  if (access(options.operator_path.c_str(), X_OK) != 0) {
    return absl::NotFoundError(
        absl::StrCat("coach-operator not executable: ", options.operator_path));
  }
  std::unique_ptr<OperatorProcess> op(new OperatorProcess());
  absl::StatusOr<std::string> dir = MakeTempDir("coach-bench-state");
  if (!dir.ok()) return dir.status();
  op->state_dir_ = *dir;
  const int grpc_port = FreePort();
  const int http_port = FreePort();
  op->server_ = absl::StrCat("127.0.0.1:", grpc_port);
  std::vector<std::string> args = {options.operator_path,
                                   "--backend=local",
                                   absl::StrCat("--listen=", op->server_),
                                   absl::StrCat("--http-listen=127.0.0.1:", http_port),
                                   absl::StrCat("--state-dir=", op->state_dir_),
                                   absl::StrCat("--shim=", options.shim_path),
                                   absl::StrCat("--log-level=", options.log_level)};
  if (options.workers > 0) args.push_back(absl::StrCat("--workers=", options.workers));
  for (const std::string& f : options.extra_flags) args.push_back(f);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  const std::string log = op->state_dir_ + ".operator.log";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    errno = rc;
    return Errno("spawn coach-operator");
  }
  op->pid_ = pid;
  for (int i = 0; i < 3000; ++i) {
    if (CanConnect(grpc_port)) return op;
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      op->pid_ = -1;
      return absl::InternalError(absl::StrCat("coach-operator exited; see ", log));
    }
    usleep(10000);
  }
  return absl::DeadlineExceededError(absl::StrCat("coach-operator did not listen; see ", log));
}

OperatorProcess::~OperatorProcess() { Stop(); }

void OperatorProcess::Stop(bool keep_state) {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    bool gone = false;
    for (int i = 0; i < 1000 && !gone; ++i) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_)
        gone = true;
      else
        usleep(10000);
    }
    if (!gone) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    pid_ = -1;
  }
  if (!keep_state && !state_dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(state_dir_, ec);
    state_dir_.clear();
  }
}

// ---------------------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<ProbeReceiver>> ProbeReceiver::Create() {
  std::unique_ptr<ProbeReceiver> r(new ProbeReceiver());
  absl::StatusOr<std::string> dir = MakeTempDir("coach-bench-probe");
  if (!dir.ok()) return dir.status();
  r->dir_ = *dir;
  r->path_ = r->dir_ + "/probe.sock";
  r->fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (r->fd_ < 0) return Errno("socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (r->path_.size() >= sizeof(addr.sun_path)) return absl::InternalError("socket path too long");
  strncpy(addr.sun_path, r->path_.c_str(), sizeof(addr.sun_path) - 1);
  if (bind(r->fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return Errno("bind");
  int buf = 4 << 20;
  setsockopt(r->fd_, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
  r->thread_ = std::thread([p = r.get()] { p->Loop(); });
  return r;
}

ProbeReceiver::~ProbeReceiver() {
  if (fd_ >= 0) shutdown(fd_, SHUT_RDWR);
  if (thread_.joinable()) {
    // A datagram to ourselves ends the blocking recv.
    int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    strncpy(addr.sun_path, path_.c_str(), sizeof(addr.sun_path) - 1);
    sendto(s, "", 0, 0, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    close(s);
    thread_.join();
  }
  if (fd_ >= 0) close(fd_);
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

void ProbeReceiver::Loop() {
  char buf[600];
  for (;;) {
    ssize_t n = recv(fd_, buf, sizeof(buf) - 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    buf[n] = '\0';
    std::vector<std::string> parts = absl::StrSplit(buf, ' ');
    int64_t ns = 0;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[1], &ns)) continue;
    std::lock_guard<std::mutex> lock(mu_);
    started_.emplace(parts[0], ns);
    cv_.notify_all();
  }
}

std::map<std::string, int64_t> ProbeReceiver::WaitFor(const std::vector<std::string>& names,
                                                      int64_t timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  auto all = [&] {
    for (const std::string& n : names) {
      if (started_.count(n) == 0) return false;
    }
    return true;
  };
  cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), all);
  std::map<std::string, int64_t> out;
  for (const std::string& n : names) {
    auto it = started_.find(n);
    if (it != started_.end()) out.emplace(n, it->second);
  }
  return out;
}

void ProbeReceiver::Erase(const std::vector<std::string>& names) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::string& n : names) started_.erase(n);
}

std::string FindBazelBin(const std::string& relative) {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  // <bin>/bench/local/<name>
  std::filesystem::path bin = self.parent_path().parent_path().parent_path();
  std::filesystem::path candidate = bin / relative;
  if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
  return "";
}

}  // namespace coach::bench
