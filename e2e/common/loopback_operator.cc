#include "e2e/common/loopback_operator.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "e2e/common/child_process.h"
#include "e2e/common/test_env.h"

namespace coach::e2e {

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

bool HttpReady(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
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

LoopbackOperator::LoopbackOperator(std::string name, std::string log_dir,
                                   std::vector<std::string> flags, std::vector<std::string> env)
    : name_(std::move(name)),
      log_dir_(std::move(log_dir)),
      flags_(std::move(flags)),
      env_(std::move(env)) {}

LoopbackOperator::~LoopbackOperator() { Kill9(); }

std::string LoopbackOperator::server() const { return absl::StrCat("127.0.0.1:", grpc_port_); }

std::string LoopbackOperator::Log() const {
  std::string all;
  for (int i = 1; i <= starts_; ++i) {
    absl::StrAppend(&all, "--- ", name_, " start ", i, " ---\n",
                    ReadFileOrEmpty(absl::StrCat(log_dir_, "/", name_, "-", i, ".log")));
  }
  return all;
}

bool LoopbackOperator::Ready() const { return pid_ > 0 && HttpReady(http_port_); }

bool LoopbackOperator::Alive() {
  if (pid_ <= 0) return false;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    pid_ = -1;
    return false;
  }
  return true;
}

absl::Status LoopbackOperator::Start(absl::Duration timeout) {
  if (running()) return absl::FailedPreconditionError(absl::StrCat(name_, " already running"));
  absl::Status last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    last = StartOnce(timeout);
    if (last.ok()) return last;
  }
  return absl::Status(last.code(), absl::StrCat(last.message(), "\n", Log()));
}

absl::Status LoopbackOperator::StartOnce(absl::Duration timeout) {
  grpc_port_ = FreePort();
  http_port_ = FreePort();
  while (http_port_ == grpc_port_) http_port_ = FreePort();
  ++starts_;
  const std::string log = absl::StrCat(log_dir_, "/", name_, "-", starts_, ".log");
  std::vector<std::string> argv = {
      binary_.empty() ? Runfile("operator/coach-operator") : binary_,
      absl::StrCat("--listen=127.0.0.1:", grpc_port_),
      absl::StrCat("--http-listen=127.0.0.1:", http_port_),
  };
  argv.insert(argv.end(), flags_.begin(), flags_.end());
  const absl::Time spawned = absl::Now();
  pid_ = Spawn(argv, env_, "", log, log, /*die_with_parent=*/true);
  if (pid_ < 0) return absl::InternalError("fork failed");

  bool ready = false;
  std::optional<int> exited;
  Eventually(
      [&] {
        ready = HttpReady(http_port_);
        if (!ready) exited = WaitPid(pid_, absl::ZeroDuration());
        return ready || exited.has_value();
      },
      timeout, absl::Milliseconds(50));
  if (exited.has_value()) {
    pid_ = -1;
    return absl::UnavailableError(
        absl::StrCat(name_, " exited (status ", *exited, ") before it was ready"));
  }
  if (!ready) {
    Kill9();
    return absl::DeadlineExceededError(absl::StrCat(name_, " not ready in time"));
  }
  ready_after_ = absl::Now() - spawned;
  return absl::OkStatus();
}

absl::Status LoopbackOperator::Stop(absl::Duration timeout) {
  if (!running()) return absl::OkStatus();
  kill(pid_, SIGTERM);
  const std::optional<int> status = WaitPid(pid_, timeout);
  absl::Status result = absl::OkStatus();
  if (!status) {
    KillAndReap(pid_);
    result = absl::DeadlineExceededError(absl::StrCat(name_, " did not stop on SIGTERM"));
  } else if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    result = absl::InternalError(absl::StrCat(name_, " stopped with status ", *status));
  }
  pid_ = -1;
  return result;
}

void LoopbackOperator::Kill9() {
  if (!running()) return;
  KillAndReap(pid_);
  pid_ = -1;
}

}  // namespace coach::e2e
