#include "launcher/metrics_tee.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace coach::launcher {
namespace {

constexpr size_t kMaxLine = 64 * 1024;  // longer "lines" are copied in pieces, never parsed
constexpr int kReportedMalformed = 5;

void WriteAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
}

}  // namespace

MetricsTee::MetricsTee(int out_fd, int err_fd, Sink sink)
    : out_fd_(out_fd), err_fd_(err_fd), sink_(std::move(sink)) {}

MetricsTee::~MetricsTee() {
  if (!finished_) Finish(absl::ZeroDuration());
}

absl::StatusOr<int> MetricsTee::AddPipe() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe2: ", std::strerror(errno)));
  }
  write_ends_.push_back(fds[1]);
  threads_.emplace_back([this, fd = fds[0]] { ReadPipe(fd); });
  return fds[1];
}

void MetricsTee::WatchFile(const std::string& path, absl::Duration poll) {
  threads_.emplace_back([this, path, poll] { TailFile(path, poll); });
}

void MetricsTee::Line(const std::string& line, bool echo) {
  if (echo) {
    std::lock_guard<std::mutex> lock(out_mu_);
    WriteAll(out_fd_, line.data(), line.size());
  }
  absl::StatusOr<std::optional<MetricLine>> parsed = ParseMetricLine(line);
  if (!parsed.ok()) {
    if (malformed_lines_.fetch_add(1) < kReportedMalformed) {
      const std::string msg = absl::StrCat("coach-launch: ", parsed.status().message(),
                                           " (line not logged to MLflow)\n");
      std::lock_guard<std::mutex> lock(out_mu_);
      WriteAll(err_fd_, msg.data(), msg.size());
    }
    return;
  }
  if (!parsed->has_value()) return;
  metric_lines_.fetch_add(1);
  sink_(**parsed, absl::ToUnixMillis(absl::Now()));
}

void MetricsTee::ReadPipe(int fd) {
  std::string buf;
  char chunk[16384];
  for (;;) {
    if (stop_.load()) break;
    pollfd p{fd, POLLIN, 0};
    int r = poll(&p, 1, 100);
    if (r < 0 && errno != EINTR) break;
    if (r <= 0) continue;
    ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      break;
    }
    if (n == 0) break;  // every writer closed it
    buf.append(chunk, static_cast<size_t>(n));
    size_t start = 0;
    for (size_t nl; (nl = buf.find('\n', start)) != std::string::npos; start = nl + 1) {
      Line(buf.substr(start, nl + 1 - start), true);
    }
    buf.erase(0, start);
    if (buf.size() > kMaxLine) {
      std::lock_guard<std::mutex> lock(out_mu_);
      WriteAll(out_fd_, buf.data(), buf.size());
      buf.clear();
    }
  }
  if (!buf.empty()) Line(buf, true);  // the last line without '\n'
  close(fd);
}

void MetricsTee::TailFile(std::string path, absl::Duration poll) {
  std::ifstream in;
  std::string partial;
  for (;;) {
    const bool last = draining_.load();  // read to the end once more after Finish began
    if (!in.is_open()) in.open(path, std::ios::binary);
    if (in.is_open()) {
      in.clear();
      std::string line;
      while (std::getline(in, line)) {
        if (in.eof()) {  // no '\n' yet: keep it for later
          partial += line;
          break;
        }
        Line(partial + line, false);
        partial.clear();
      }
      in.clear();
    }
    if (last || stop_.load()) break;
    absl::SleepFor(poll);
  }
}

void MetricsTee::Finish(absl::Duration timeout) {
  if (finished_) return;
  finished_ = true;
  for (int fd : write_ends_) close(fd);
  write_ends_.clear();
  draining_ = true;
  // Readers end at end-of-file; past the deadline they are told to stop.
  std::thread stopper;
  std::atomic<bool> joined{false};
  stopper = std::thread([this, timeout, &joined] {
    const absl::Time deadline = absl::Now() + timeout;
    while (!joined.load() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(10));
    stop_ = true;
  });
  for (std::thread& t : threads_) t.join();
  joined = true;
  stopper.join();
  threads_.clear();
}

}  // namespace coach::launcher
