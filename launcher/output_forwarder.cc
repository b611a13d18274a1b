#include "launcher/output_forwarder.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace coach::launcher {
namespace {

constexpr size_t kReadChunk = 64 * 1024;  // a default pipe's capacity: one read empties it
// After Finish's deadline a writer may still be writing; the last look is bounded.
constexpr size_t kFinalReadLimit = 1024 * 1024;

}  // namespace

absl::StatusOr<std::unique_ptr<OutputForwarder>> OutputForwarder::Create(size_t max_piece) {
  int wake[2];
  if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    return absl::InternalError(absl::StrCat("pipe2: ", std::strerror(errno)));
  }
  return std::unique_ptr<OutputForwarder>(new OutputForwarder(wake[0], wake[1], max_piece));
}

OutputForwarder::OutputForwarder(int wake_read, int wake_write, size_t max_piece)
    : wake_read_(wake_read), wake_write_(wake_write), max_piece_(max_piece) {}

OutputForwarder::~OutputForwarder() {
  if (!finished_) Finish(absl::ZeroDuration());
  close(wake_read_);
  close(wake_write_);
}

absl::StatusOr<int> OutputForwarder::AddPipe(int dest_fd, std::string prefix,
                                             LineCallback on_line) {
  if (started_) return absl::FailedPreconditionError("AddPipe after Start");
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe2: ", std::strerror(errno)));
  }
  // Only our end is non-blocking: the final look at Finish must not wait for a writer.
  fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  auto s = std::make_unique<Stream>(max_piece_);
  s->read_fd = fds[0];
  s->dest_fd = dest_fd;
  s->prefix = std::move(prefix);
  s->on_line = std::move(on_line);
  streams_.push_back(std::move(s));
  write_ends_.push_back(fds[1]);
  return fds[1];
}

void OutputForwarder::Start() {
  if (started_ || finished_) return;
  started_ = true;
  thread_ = std::thread([this] { Loop(); });
}

void OutputForwarder::Write(int dest_fd, absl::string_view text) { WriteLocked(dest_fd, text); }

bool OutputForwarder::WriteLocked(int dest_fd, absl::string_view text) {
  std::lock_guard<std::mutex> lock(out_mu_);
  if (std::find(broken_dests_.begin(), broken_dests_.end(), dest_fd) != broken_dests_.end()) {
    return false;
  }
  const char* p = text.data();
  size_t n = text.size();
  while (n > 0) {
    const ssize_t w = write(dest_fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {  // an inherited non-blocking stdout: wait, as a blocking one would
        pollfd pfd{dest_fd, POLLOUT, 0};
        poll(&pfd, 1, -1);
        continue;
      }
      broken_dests_.push_back(dest_fd);
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  forwarded_bytes_.fetch_add(static_cast<int64_t>(text.size()));
  return true;
}

void OutputForwarder::Deliver(Stream& s, absl::string_view data, bool eof, std::string& out) {
  out.clear();
  auto emit = [&](const LinePiece& piece) {
    if (piece.starts_line) out.append(s.prefix);
    out.append(piece.bytes.data(), piece.bytes.size());
    if (piece.whole_line && s.on_line) s.on_line(piece.bytes);
  };
  s.splitter.Feed(data, emit);
  if (eof) {
    // The last line had no '\n': it gets one, so that whatever comes next, from any worker,
    // starts a line of its own. It is still a line for `on_line` (a final metric line counts).
    s.splitter.Flush([&](const LinePiece& piece) {
      if (piece.starts_line) out.append(s.prefix);
      out.append(piece.bytes.data(), piece.bytes.size());
      out.push_back('\n');
      if (piece.starts_line && s.on_line) s.on_line(piece.bytes);
    });
  }
  if (!out.empty() && !WriteLocked(s.dest_fd, out)) {
    // The destination is gone: so are the pipes into it, as if the workers wrote there.
    for (auto& other : streams_) {
      if (other->dest_fd == s.dest_fd) CloseStream(*other);
    }
  }
}

bool OutputForwarder::Drain(Stream& s, std::string& scratch, std::string& out) {
  for (;;) {
    const ssize_t n = read(s.read_fd, scratch.data(), scratch.size());
    if (n > 0) {
      Deliver(s, absl::string_view(scratch.data(), static_cast<size_t>(n)), false, out);
      return s.read_fd >= 0;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return true;
    return false;  // end of file (every writer closed it) or a read error
  }
}

void OutputForwarder::CloseStream(Stream& s) {
  if (s.read_fd < 0) return;
  close(s.read_fd);
  s.read_fd = -1;
}

void OutputForwarder::Loop() {
  // A closed destination must come back as EPIPE here, not kill the launcher and its workers.
  sigset_t pipe_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, nullptr);

  std::string scratch(kReadChunk, '\0');
  std::string out;
  std::vector<pollfd> fds;
  std::vector<Stream*> polled;
  while (!stop_.load()) {
    fds.assign(1, pollfd{wake_read_, POLLIN, 0});
    polled.clear();
    for (auto& s : streams_) {
      if (s->read_fd < 0) continue;
      fds.push_back(pollfd{s->read_fd, POLLIN, 0});
      polled.push_back(s.get());
    }
    if (polled.empty()) break;
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    uint64_t sync_target = 0;
    uint64_t end_lines_target = 0;
    if (fds[0].revents != 0) {
      char bytes[64];
      while (read(wake_read_, bytes, sizeof(bytes)) > 0) {
      }
      std::lock_guard<std::mutex> lock(done_mu_);
      sync_target = sync_requested_;
      if (end_lines_requested_ > end_lines_served_) end_lines_target = end_lines_requested_;
    }
    for (size_t i = 0; i < polled.size(); ++i) {
      Stream& s = *polled[i];
      // A Sync reads every pipe, ready or not: poll's answer predates the request.
      if ((fds[i + 1].revents == 0 && sync_target == 0) || s.read_fd < 0) continue;
      if (!Drain(s, scratch, out) && s.read_fd >= 0) {
        Deliver(s, {}, /*eof=*/true, out);
        CloseStream(s);
      }
    }
    if (end_lines_target != 0) {
      for (auto& s : streams_) {
        if (s->read_fd < 0) continue;
        const bool tail = s->splitter.held() > 0;
        Deliver(*s, {}, /*eof=*/true, out);  // a tail gets its '\n'
        // No tail, yet inside a line: a progress bar's '\r' piece, or a long line's last chunk.
        if (!tail && !s->splitter.at_line_start() && s->read_fd >= 0) {
          WriteLocked(s->dest_fd, "\n");
        }
        s->splitter.StartLine();
      }
    }
    if (sync_target != 0) {
      std::lock_guard<std::mutex> lock(done_mu_);
      sync_served_ = std::max(sync_served_, sync_target);
      end_lines_served_ = std::max(end_lines_served_, end_lines_target);
      done_cv_.notify_all();
    }
  }
  // Stopped (or all pipes ended): a last bounded look at what the pipes still hold.
  for (auto& s : streams_) {
    size_t taken = 0;
    while (s->read_fd >= 0 && taken < kFinalReadLimit) {
      const ssize_t n = read(s->read_fd, scratch.data(), scratch.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      taken += static_cast<size_t>(n);
      Deliver(*s, absl::string_view(scratch.data(), static_cast<size_t>(n)), false, out);
    }
    if (s->read_fd >= 0) Deliver(*s, {}, /*eof=*/true, out);
    CloseStream(*s);
  }
  std::lock_guard<std::mutex> lock(done_mu_);
  done_ = true;
  done_cv_.notify_all();
}

void OutputForwarder::Sync(absl::Duration timeout) { SyncAndMaybeEndLines(timeout, false); }

void OutputForwarder::EndLines(absl::Duration timeout) { SyncAndMaybeEndLines(timeout, true); }

void OutputForwarder::SyncAndMaybeEndLines(absl::Duration timeout, bool end_lines) {
  if (!started_ || finished_) return;
  uint64_t ticket = 0;
  {
    std::lock_guard<std::mutex> lock(done_mu_);
    if (done_) return;
    ticket = ++sync_requested_;
    if (end_lines) end_lines_requested_ = ticket;
  }
  const char byte = 0;
  (void)!write(wake_write_, &byte, 1);
  std::unique_lock<std::mutex> lock(done_mu_);
  done_cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout),
                    [&] { return done_ || sync_served_ >= ticket; });
}

void OutputForwarder::Finish(absl::Duration timeout) {
  if (finished_) return;
  finished_ = true;
  for (int fd : write_ends_) close(fd);
  write_ends_.clear();
  if (!started_) {
    for (auto& s : streams_) CloseStream(*s);
    return;
  }
  {
    std::unique_lock<std::mutex> lock(done_mu_);
    done_cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout), [this] { return done_; });
  }
  stop_ = true;
  const char byte = 0;
  (void)!write(wake_write_, &byte, 1);
  thread_.join();
}

}  // namespace coach::launcher
