#include "launcher/output_forwarder.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/testing/test_dir.h"

namespace coach::launcher {
namespace {

using ::testing::ElementsAre;

// A destination file that the test reads back.
class Dest {
 public:
  explicit Dest(const std::string& name) {
    path_ = ::coach::testing::FreshTestDir("output_forwarder") + "/" + name;
    fd_ = open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  }
  ~Dest() { close(fd_); }
  int fd() const { return fd_; }
  std::string Read() const {
    std::string out;
    char buf[4096];
    for (off_t off = 0;;) {
      const ssize_t n = pread(fd_, buf, sizeof(buf), off);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
      off += n;
    }
    return out;
  }

 private:
  std::string path_;
  int fd_ = -1;
};

void Write(int fd, const std::string& s) {
  ASSERT_EQ(write(fd, s.data(), s.size()), static_cast<ssize_t>(s.size()));
}

TEST(OutputForwarderTest, SyncDeliversWhatThePipesHoldBeforeTheLaunchersLine) {
  Dest err("fwd_sync");
  auto f = OutputForwarder::Create();
  ASSERT_TRUE(f.ok());
  absl::StatusOr<int> w = (*f)->AddPipe(err.fd(), "");
  ASSERT_TRUE(w.ok());
  (*f)->Start();
  for (int round = 0; round < 50; ++round) {
    const std::string line = "worker line " + std::to_string(round) + "\n";
    Write(*w, line);
    (*f)->Sync(absl::Seconds(5));
    const std::string got = err.Read();
    ASSERT_EQ(got.substr(got.size() - line.size()), line) << "round " << round;
    (*f)->Write(err.fd(), "launcher line\n");
  }
  (*f)->Finish(absl::Seconds(1));
  (*f)->Sync(absl::Seconds(5));  // after Finish: returns at once
}

TEST(OutputForwarderTest, EndLinesEndsAnUnterminatedLineSoTheNextWorkersStartTheirOwn) {
  Dest out("fwd_end_lines");
  auto f = OutputForwarder::Create();
  ASSERT_TRUE(f.ok());
  absl::StatusOr<int> w = (*f)->AddPipe(out.fd(), "[rank0]:");
  ASSERT_TRUE(w.ok());
  (*f)->Start();
  Write(*w, "attempt 0 whole\nattempt 0 cut");
  (*f)->Sync(absl::Seconds(5));
  EXPECT_EQ(out.Read(), "[rank0]:attempt 0 whole\n");  // the cut line waits for its end
  (*f)->EndLines(absl::Seconds(5));
  Write(*w, "attempt 1 first\n");
  (*f)->Finish(absl::Seconds(1));
  EXPECT_EQ(out.Read(),
            "[rank0]:attempt 0 whole\n[rank0]:attempt 0 cut\n[rank0]:attempt 1 first\n");
}

TEST(OutputForwarderTest, EndLinesEndsAProgressBarLine) {
  Dest out("fwd_end_bar");
  auto f = OutputForwarder::Create();
  ASSERT_TRUE(f.ok());
  absl::StatusOr<int> w = (*f)->AddPipe(out.fd(), "");
  ASSERT_TRUE(w.ok());
  (*f)->Start();
  Write(*w, "10%\r20%\rx");  // pieces end at each '\r'; "x" is held
  (*f)->Sync(absl::Seconds(5));
  (*f)->EndLines(absl::Seconds(5));
  Write(*w, "30%\r");
  (*f)->Sync(absl::Seconds(5));
  (*f)->EndLines(absl::Seconds(5));
  Write(*w, "next\n");
  (*f)->Finish(absl::Seconds(1));
  EXPECT_EQ(out.Read(), "10%\r20%\rx\n30%\r\nnext\n");
}

TEST(OutputForwarderTest, PrefixesLinesPerStreamAndKeepsDestinationsApart) {
  Dest out("fwd_out"), err("fwd_err");
  auto f = OutputForwarder::Create();
  ASSERT_TRUE(f.ok());
  std::vector<std::string> lines;
  absl::StatusOr<int> a = (*f)->AddPipe(out.fd(), "[rank0]:", [&](absl::string_view l) {
    lines.emplace_back(l);  // only the forwarder thread calls it
  });
  absl::StatusOr<int> b = (*f)->AddPipe(out.fd(), "[rank1]:");
  absl::StatusOr<int> c = (*f)->AddPipe(err.fd(), "");
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  (*f)->Start();
  Write(*a, "hello ");
  Write(*b, "from one\n");
  Write(*c, "an error\n");
  Write(*a, "world\nno newline");
  (*f)->Finish(absl::Seconds(5));
  std::vector<std::string> got = absl::StrSplit(out.Read(), '\n', absl::SkipEmpty());
  EXPECT_EQ(out.Read().back(), '\n');  // the tail got one
  std::sort(got.begin(), got.end());
  EXPECT_THAT(got, ElementsAre("[rank0]:hello world", "[rank0]:no newline", "[rank1]:from one"));
  EXPECT_EQ(err.Read(), "an error\n");
  EXPECT_THAT(lines, ElementsAre("hello world\n", "no newline"));
}

TEST(OutputForwarderTest, OwnMessagesGoBetweenLinesNeverInsideOne) {
  Dest err("fwd_own");
  auto f = OutputForwarder::Create();
  ASSERT_TRUE(f.ok());
  absl::StatusOr<int> a = (*f)->AddPipe(err.fd(), "");
  ASSERT_TRUE(a.ok());
  (*f)->Start();
  Write(*a, "a worker's half ");
  (*f)->Write(err.fd(), "coach-launch: a message\n");
  Write(*a, "line\n");
  (*f)->Finish(absl::Seconds(5));
  EXPECT_EQ(err.Read(), "coach-launch: a message\na worker's half line\n");
}

TEST(OutputForwarderTest, FinishReturnsWhileAWorkersChildHoldsAPipeAndKeepsWhatWasWritten) {
  Dest out("fwd_held");
  auto f = OutputForwarder::Create();
  ASSERT_TRUE(f.ok());
  absl::StatusOr<int> a = (*f)->AddPipe(out.fd(), "");
  ASSERT_TRUE(a.ok());
  const int held = dup(*a);  // a worker's child still holding the pipe
  (*f)->Start();
  Write(held, "before finish\npartial");
  (*f)->Finish(absl::Milliseconds(100));  // would hang here if it waited for end of file
  EXPECT_EQ(out.Read(), "before finish\npartial\n");
  close(held);
}

TEST(OutputForwarderTest, AClosedDestinationClosesThePipesIntoIt) {
  // `coach-launch ... | head`: the worker must see EPIPE as it would writing there directly.
  int dest[2];
  ASSERT_EQ(pipe2(dest, O_CLOEXEC), 0);
  close(dest[0]);
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);  // this thread plays the worker
  auto f = OutputForwarder::Create();
  ASSERT_TRUE(f.ok());
  absl::StatusOr<int> a = (*f)->AddPipe(dest[1], "");
  ASSERT_TRUE(a.ok());
  (*f)->Start();
  Write(*a, "nobody reads this\n");
  ssize_t n = 0;
  for (int i = 0; i < 1000 && n >= 0; ++i) {  // until the forwarder closed its end
    n = write(*a, "x\n", 2);
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(n, -1);
  EXPECT_EQ(errno, EPIPE);
  (*f)->Finish(absl::Seconds(1));
  close(dest[1]);
  timespec zero{0, 0};
  sigtimedwait(&pipe_set, nullptr, &zero);  // consume the SIGPIPE our writes raised
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

TEST(OutputForwarderTest, AddPipeAfterStartIsRefused) {
  auto f = OutputForwarder::Create();
  ASSERT_TRUE(f.ok());
  (*f)->Start();
  EXPECT_EQ((*f)->AddPipe(STDOUT_FILENO, "").status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace coach::launcher
