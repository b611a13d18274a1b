#include "operator/backend/local/process/log_files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "common/testing/test_dir.h"
#include "operator/backend/local/fs_util.h"

namespace coach::backend::local {
namespace {

class LogFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::coach::testing::FreshTestDir(
        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    path_ = dir_ + "/r.log";
    fd_ = open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ASSERT_GE(fd_, 0);
  }
  void TearDown() override { close(fd_); }
  void Append(const std::string& s) {
    ASSERT_EQ(write(fd_, s.data(), s.size()), static_cast<ssize_t>(s.size()));
  }
  std::string dir_, path_;
  int fd_ = -1;
};

TEST_F(LogFilesTest, TailLines) {
  Append("one\ntwo\nthree\nfour\n");
  EXPECT_EQ(*TailLines(path_, 2), "three\nfour\n");
  EXPECT_EQ(*TailLines(path_, 10), "one\ntwo\nthree\nfour\n");
  EXPECT_EQ(*TailLines(path_, 0), "");
  Append("partial");
  EXPECT_EQ(*TailLines(path_, 2), "four\npartial");
  EXPECT_EQ(TailLines(dir_ + "/none.log", 3).status().code(), absl::StatusCode::kNotFound);
}

// Lines "line-<i>-xxx...\n" of 40 bytes each.
std::string Lines(int from, int to) {
  std::string out;
  for (int i = from; i < to; ++i) {
    std::string line = absl::StrCat("line-", i, "-");
    line.resize(39, 'x');
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

TEST_F(LogFilesTest, WriterKeepsTheNewestLinesWithinTheBound) {
  auto log = LogWriter::Open(dir_ + "/w.log", 4000);
  ASSERT_TRUE(log.ok()) << log.status();
  // 2 MB in writes of every size, from one line to 50 times the bound.
  int next = 0;
  for (int n : {1, 7, 100, 2500, 1, 99, 2500, 5000, 3}) {
    for (int k = 0; k < 5; ++k) {
      ASSERT_TRUE((*log)->Write(Lines(next, next + n)).ok());
      next += n;
      EXPECT_LE(FileSize(dir_ + "/w.log").value_or(0), 4000);
      EXPECT_LE(FileSize(dir_ + "/w.log.1").value_or(0), 4000);
    }
  }
  EXPECT_GT((*log)->rotations(), 400);
  // Whole lines only, in order, and they end with the last one written.
  const std::string kept = *ReadFile(dir_ + "/w.log.1") + *ReadFile(dir_ + "/w.log");
  const int first = next - static_cast<int>(kept.size()) / 40;
  EXPECT_EQ(kept, Lines(first, next));
  EXPECT_GT(kept.size(), 4000u);  // The rotated file holds the lines before the live ones.
  EXPECT_EQ(*TailLines(dir_ + "/w.log", 1), Lines(next - 1, next));
}

TEST_F(LogFilesTest, WriterSplitsOnlyALineLongerThanTheBound) {
  auto log = LogWriter::Open(dir_ + "/w.log", 100);
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_TRUE((*log)->Write("short\n").ok());
  ASSERT_TRUE((*log)->Write(std::string(250, 'a')).ok());  // no newline fits: split at the bound
  ASSERT_TRUE((*log)->Write("\nend\n").ok());
  EXPECT_EQ(*ReadFile(dir_ + "/w.log.1"), std::string(100, 'a'));
  EXPECT_EQ(*ReadFile(dir_ + "/w.log"), std::string(50, 'a') + "\nend\n");
  // A line that does not fit after others begins the next file whole.
  ASSERT_TRUE((*log)->Write(std::string(60, 'b') + "\n").ok());
  EXPECT_EQ(*ReadFile(dir_ + "/w.log.1"), std::string(50, 'a') + "\nend\n");
  EXPECT_EQ(*ReadFile(dir_ + "/w.log"), std::string(60, 'b') + "\n");
}

TEST_F(LogFilesTest, WriterCountsWhatTheFileHeldAndUnboundedNeverRotates) {
  Append(std::string(150, 'o') + "\n");  // an earlier attempt's log, over the bound
  auto log = LogWriter::Open(path_, 100);
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_TRUE((*log)->Write("new\n").ok());
  EXPECT_EQ(*ReadFile(path_), "new\n");
  EXPECT_EQ(*FileSize(path_ + ".1"), 151);
  auto unbounded = LogWriter::Open(dir_ + "/u.log", 0);
  ASSERT_TRUE(unbounded.ok());
  ASSERT_TRUE((*unbounded)->Write(std::string(1 << 20, 'u')).ok());
  EXPECT_EQ(*FileSize(dir_ + "/u.log"), 1 << 20);
  EXPECT_EQ((*unbounded)->rotations(), 0);
}

TEST_F(LogFilesTest, FollowAcrossRotation) {
  auto log = LogWriter::Open(path_, 40);
  ASSERT_TRUE(log.ok());
  auto c = Follow(path_, LogPosition());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->data, "");
  ASSERT_TRUE((*log)->Write("hello\n").ok());
  c = Follow(path_, LogPosition());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->data, "hello\n");
  EXPECT_EQ(c->next.offset, 6);
  ASSERT_TRUE((*log)->Write("world\n").ok());
  c = Follow(path_, c->next);
  EXPECT_EQ(c->data, "world\n");
  LogPosition at = c->next;
  EXPECT_EQ(at.offset, 12);
  ASSERT_TRUE((*log)->Write("unread\n").ok());  // before the rotation, not yet followed
  // Rotates; the new live file grows past the reader's offset before it looks again.
  ASSERT_TRUE((*log)->Write("new-line-that-is-long\n").ok());
  ASSERT_GT(*FileSize(path_), at.offset);
  c = Follow(path_, at);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->truncated);
  EXPECT_FALSE(c->lost);
  EXPECT_EQ(c->data, "unread\nnew-line-that-is-long\n");  // nothing lost, nothing repeated
  c = Follow(path_, c->next);
  EXPECT_EQ(c->data, "");
  EXPECT_FALSE(c->truncated);
  // Two rotations between reads: what the older file held past the position is gone.
  at = c->next;
  ASSERT_TRUE((*log)->Write("a-second-line-of-thirty-bytes\n").ok());
  ASSERT_TRUE((*log)->Write("a-third-line--of-thirty-bytes\n").ok());
  c = Follow(path_, at);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->lost);
  EXPECT_EQ(c->data, "a-third-line--of-thirty-bytes\n");
}

TEST_F(LogFilesTest, FollowReadsTheRestOfTheRotatedFileInChunks) {
  auto log = LogWriter::Open(path_, 100);
  ASSERT_TRUE(log.ok());
  ASSERT_TRUE((*log)->Write(Lines(0, 2)).ok());
  LogPosition at = LogEnd(path_);
  EXPECT_EQ(at.offset, 80);
  ASSERT_TRUE((*log)->Write("0123456789\n").ok());
  ASSERT_TRUE((*log)->Write(Lines(2, 3)).ok());  // rotates
  std::string got;
  for (int i = 0; i < 20; ++i) {
    auto c = Follow(path_, at, 4);
    ASSERT_TRUE(c.ok());
    EXPECT_FALSE(c->lost);
    got += c->data;
    at = c->next;
  }
  EXPECT_EQ(got, "0123456789\n" + Lines(2, 3));
}

TEST_F(LogFilesTest, FollowRespectsMaxBytes) {
  Append("0123456789");
  auto c = Follow(path_, LogPosition(), 4);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->data, "0123");
  c = Follow(path_, c->next, 100);
  EXPECT_EQ(c->data, "456789");
}

}  // namespace
}  // namespace coach::backend::local
