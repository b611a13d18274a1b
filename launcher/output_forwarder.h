#pragma once

// OutputForwarder: coach-launch's one path for its workers' output. Each worker's stdout and
// stderr is a pipe; one thread drains every pipe as data arrives and passes it on to the
// launcher's own stdout/stderr in pieces that never cut a line (line_splitter.h), each line
// optionally prefixed (torchrun's --log-line-prefix-template, e.g. "[rank3]:"). Lines of
// different workers therefore never splice into each other, however the workers split their
// writes. A worker's unterminated last line is passed on at end of file or at Finish, with a
// '\n' added so that the next line (any worker's) starts a line of its own.
//
// Never in the way of the workers: pipes are drained continuously, whatever a worker writes is
// held only until its line ends (at most LineSplitter::kDefaultMaxPiece bytes per pipe). When
// the launcher's own stdout is slow, the forwarder waits for it, and the workers then wait on
// their full pipes, as they would writing to that stdout directly. When a destination is
// closed (EPIPE, e.g. `coach-launch ... | head`), the pipes feeding it are closed too, so the
// workers get EPIPE/SIGPIPE as they would have without the launcher in between. The
// forwarder thread blocks SIGPIPE for itself; Write()'s callers should block it as well.
//
// Lifecycle: AddPipe() for every stream, Start(), run the workers, Finish().
// Write() is thread-safe; the others are called from one thread.

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "launcher/line_splitter.h"

namespace coach::launcher {

class OutputForwarder {
 public:
  // Gets each complete line (with its '\n') of a stream, and its unterminated last line,
  // unprefixed, from the forwarder thread; must not block. Chunks of over-long lines are not
  // lines and are not passed.
  using LineCallback = std::function<void(absl::string_view line)>;

  // Errors: Internal (pipe2 failed).
  static absl::StatusOr<std::unique_ptr<OutputForwarder>> Create(
      size_t max_piece = LineSplitter::kDefaultMaxPiece);
  ~OutputForwarder();  // Finish(absl::ZeroDuration()) unless finished

  OutputForwarder(const OutputForwarder&) = delete;
  OutputForwarder& operator=(const OutputForwarder&) = delete;

  // Before Start(): a new pipe whose output goes to `dest_fd` (not owned; typically
  // STDOUT_FILENO or STDERR_FILENO), every line starting with `prefix` (may be empty).
  // Returns the write end (close-on-exec) for a worker's stdout or stderr; the forwarder keeps
  // it open until Finish. Errors: Internal (pipe2 failed, e.g. out of file descriptors),
  // FailedPrecondition after Start().
  absl::StatusOr<int> AddPipe(int dest_fd, std::string prefix, LineCallback on_line = nullptr);

  // Starts the thread that drains the pipes.
  void Start();

  // Writes `text` to `dest_fd` between two forwarded pieces, never inside one: the launcher's
  // own messages stay whole lines too. Blocks while `dest_fd` is not writable.
  void Write(int dest_fd, absl::string_view text);

  // Returns once the thread has read and passed on what every pipe held when Sync was called,
  // or after `timeout`: a worker that has exited has written all it will, so the launcher's
  // line about its exit comes after the worker's last lines. No-op before Start, after Finish.
  void Sync(absl::Duration timeout);

  // Sync, then every stream's unterminated last line is passed on with '\n' added: its workers
  // have exited (an attempt ended, coach-launch restarts them in place), and the next workers'
  // first lines must not continue it.
  void EndLines(absl::Duration timeout);

  // Closes the write ends and lets the thread drain every pipe to end of file for up to
  // `timeout` (a worker's own child may still hold a pipe open); then whatever the pipes hold
  // is read once more, unterminated tails are passed on, and the pipes are closed.
  void Finish(absl::Duration timeout);

  int64_t forwarded_bytes() const { return forwarded_bytes_.load(); }

 private:
  struct Stream {
    explicit Stream(size_t max_piece) : splitter(max_piece) {}
    int read_fd = -1;
    int dest_fd = -1;
    std::string prefix;
    LineCallback on_line;
    LineSplitter splitter;
  };

  OutputForwarder(int wake_read, int wake_write, size_t max_piece);
  void Loop();
  void SyncAndMaybeEndLines(absl::Duration timeout, bool end_lines);
  // Reads what `s` holds now (up to a bound). False at end of file or on a read error.
  bool Drain(Stream& s, std::string& scratch, std::string& out);
  void Deliver(Stream& s, absl::string_view data, bool eof, std::string& out);
  // Writes to dest under the output lock; false when dest is closed (EPIPE) or failing.
  bool WriteLocked(int dest_fd, absl::string_view text);
  void CloseStream(Stream& s);

  const int wake_read_;
  const int wake_write_;
  const size_t max_piece_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<int> write_ends_;
  std::thread thread_;
  std::mutex out_mu_;              // one writer at a time on any destination
  std::vector<int> broken_dests_;  // guarded by out_mu_
  std::mutex done_mu_;
  std::condition_variable done_cv_;
  bool done_ = false;                 // guarded by done_mu_: every pipe reached end of file
  uint64_t sync_requested_ = 0;       // guarded by done_mu_
  uint64_t sync_served_ = 0;          // guarded by done_mu_
  uint64_t end_lines_requested_ = 0;  // guarded by done_mu_: the Sync ticket of the last EndLines
  uint64_t end_lines_served_ = 0;     // guarded by done_mu_
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> forwarded_bytes_{0};
  bool started_ = false;
  bool finished_ = false;
};

}  // namespace coach::launcher
