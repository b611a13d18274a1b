#pragma once

// LoopbackOperator: the real coach-operator binary (from the runfiles) as a child of an
// end-to-end test, listening on free loopback ports, ready when GET /readyz answers 200.
// The backend and everything else comes from the caller's flags; the fixture of each
// backend (e2e/local, e2e/kube) builds those.
//
// Logs: start n of the process (Start retries on new ports count too) writes stdout and
// stderr to <log_dir>/<name>-<n>.log; Log() concatenates them for failure messages.
// The child dies with the test process (PR_SET_PDEATHSIG), and the destructor SIGKILLs it.
//
// Not thread-safe.

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace coach::e2e {

// A loopback TCP port that was free a moment ago (0 when none could be bound).
int FreePort();

// Whether GET /readyz on 127.0.0.1:<port> answers 200 (2 s socket timeouts).
bool HttpReady(int port);

class LoopbackOperator {
 public:
  // `flags`: the operator's flags after --listen/--http-listen (which this class picks);
  // `env`: its whole environment ("NAME=value", see ChildEnv).
  LoopbackOperator(std::string name, std::string log_dir, std::vector<std::string> flags,
                   std::vector<std::string> env);
  virtual ~LoopbackOperator();
  LoopbackOperator(const LoopbackOperator&) = delete;
  LoopbackOperator& operator=(const LoopbackOperator&) = delete;

  // Starts it on fresh ports and waits up to `timeout` for /readyz; up to three tries on
  // new ports (a port taken meanwhile). FailedPrecondition when running; after the last
  // failed try Unavailable (it exited) or DeadlineExceeded (not ready), with Log().
  absl::Status Start(absl::Duration timeout = absl::Seconds(60));
  // SIGTERM, wait up to `timeout`, SIGKILL if still there (DeadlineExceeded then). OK when
  // not running; Internal when it exited with a signal or a non-zero status.
  absl::Status Stop(absl::Duration timeout = absl::Seconds(20));
  // SIGKILL and reap it; nothing when not running.
  void Kill9();

  bool running() const { return pid_ > 0; }
  // Whether it answers /readyz now.
  bool Ready() const;
  // Whether the process is still alive (reaps it when it exited).
  bool Alive();

  // The binary to run instead of the runfile operator/coach-operator (a bench runs the
  // -c opt build it was given). Before Start.
  void set_binary(std::string path) { binary_ = std::move(path); }

  pid_t pid() const { return pid_; }
  std::string server() const;  // "127.0.0.1:<grpc port>" of the latest start
  int http_port() const { return http_port_; }
  // From spawn to /readyz answering, for the latest successful start.
  absl::Duration ready_after() const { return ready_after_; }
  std::string Log() const;  // every start's output, each under a "--- <name> start n ---"
  const std::string& name() const { return name_; }

 private:
  absl::Status StartOnce(absl::Duration timeout);

  const std::string name_;
  const std::string log_dir_;
  const std::vector<std::string> flags_;
  const std::vector<std::string> env_;
  std::string binary_;
  pid_t pid_ = -1;
  absl::Duration ready_after_ = absl::ZeroDuration();
  int starts_ = 0;
  int grpc_port_ = 0;
  int http_port_ = 0;
};

}  // namespace coach::e2e
