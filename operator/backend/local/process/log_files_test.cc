#include "operator/backend/local/process/log_files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "operator/backend/local/fs_util.h"

namespace coach::backend::local {
namespace {

class LogFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = getenv("TEST_TMPDIR");
    dir_ = absl::StrCat(tmp ? tmp : "/tmp", "/",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(MakeDirs(dir_).ok());
    path_ = dir_ + "/r.log";
    // The writer keeps an O_APPEND descriptor across rotations, like the shim.
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

TEST_F(LogFilesTest, ReplicaLogPathRejectsTraversal) {
  auto p = ReplicaLogPath("/state", "ns", "job", "job-worker-0");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, "/state/replicas/ns/job/job-worker-0.log");
  EXPECT_EQ(ReplicaFilesBase("/state", "ns", "job", "job-worker-0"),
            "/state/replicas/ns/job/job-worker-0.");
  EXPECT_EQ(ReplicaLogPath("/state", "..", "job", "r").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(ReplicaLogPath("/state", "ns", "a/b", "r").ok());
  EXPECT_FALSE(ReplicaLogPath("/state", "ns", "job", "").ok());
}

TEST_F(LogFilesTest, TailLines) {
  Append("one\ntwo\nthree\nfour\n");
  EXPECT_EQ(*TailLines(path_, 2), "three\nfour\n");
  EXPECT_EQ(*TailLines(path_, 10), "one\ntwo\nthree\nfour\n");
  EXPECT_EQ(*TailLines(path_, 0), "");
  Append("partial");
  EXPECT_EQ(*TailLines(path_, 2), "four\npartial");
  EXPECT_EQ(TailLines(dir_ + "/none.log", 3).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(LogFilesTest, RotationKeepsWriterAppendingAtStart) {
  Append(std::string(100, 'a') + "\n");
  auto rotated = RotateIfOver(path_, 1000);
  ASSERT_TRUE(rotated.ok());
  EXPECT_FALSE(*rotated);
  EXPECT_FALSE(*RotateIfOver(path_, 0));  // Unbounded.
  Append(std::string(1000, 'b') + "\n");
  rotated = RotateIfOver(path_, 1000);
  ASSERT_TRUE(rotated.ok());
  EXPECT_TRUE(*rotated);
  EXPECT_EQ(*FileSize(path_), 0);
  EXPECT_EQ(*FileSize(path_ + ".1"), 1102);
  Append("after\n");
  // O_APPEND: the writer continues at the new end, not at its old offset (no hole).
  EXPECT_EQ(*ReadFile(path_), "after\n");
  // Tail reaches back into the rotated file when the live one is short.
  EXPECT_EQ(*TailLines(path_, 2), std::string(1000, 'b') + "\nafter\n");
  EXPECT_FALSE(*RotateIfOver(dir_ + "/missing.log", 1));
}

TEST_F(LogFilesTest, FollowAcrossTruncation) {
  auto c = Follow(path_, 0);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->data, "");
  Append("hello\n");
  c = Follow(path_, 0);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->data, "hello\n");
  EXPECT_EQ(c->next_offset, 6);
  Append("world\n");
  int64_t offset = c->next_offset;
  c = Follow(path_, offset);
  EXPECT_EQ(c->data, "world\n");
  offset = c->next_offset;
  EXPECT_EQ(offset, 12);
  Append("unread\n");  // Written before the rotation, not yet followed.
  ASSERT_TRUE(*RotateIfOver(path_, 10));
  Append("new\n");
  c = Follow(path_, offset);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->truncated);
  EXPECT_EQ(c->data, "unread\nnew\n");  // Nothing lost, nothing repeated.
  EXPECT_EQ(c->next_offset, 4);
  c = Follow(path_, c->next_offset);
  EXPECT_EQ(c->data, "");
  EXPECT_FALSE(c->truncated);
}

TEST_F(LogFilesTest, FollowRespectsMaxBytes) {
  Append("0123456789");
  auto c = Follow(path_, 0, 4);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->data, "0123");
  c = Follow(path_, c->next_offset, 100);
  EXPECT_EQ(c->data, "456789");
}

}  // namespace
}  // namespace coach::backend::local
