// The files between coach-launch and its workers for checkpoint requests: the request replaced
// whole, the workers' files read within bounds and never through a link or into a FIFO.

#include "launcher/checkpoint_files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "common/testing/test_dir.h"

namespace coach::launcher {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(CheckpointFilesTest, TheRequestIsReplacedWholeAndNeverWrittenThroughALink) {
  const std::string dir = ::coach::testing::FreshTestDir("ckpt-write");
  const std::string path = dir + "/checkpoint-request-0.json";
  EXPECT_EQ(RenderCheckpointRequest(7, 1700000090000),
            "{\"id\":7,\"deadline_unix_ms\":1700000090000}\n");
  ASSERT_TRUE(WriteFileAtomically(path, RenderCheckpointRequest(7, 1)).ok());
  EXPECT_EQ(Slurp(path), "{\"id\":7,\"deadline_unix_ms\":1}\n");
  // A reader that opened the old request keeps reading it whole: the new one is another file
  // renamed over the name, not the old one rewritten in place.
  const int old_fd = open(path.c_str(), O_RDONLY);
  ASSERT_GE(old_fd, 0);
  // A link a worker left at the temporary name is removed, not written through.
  const std::string victim = dir + "/victim";
  std::ofstream(victim) << "keep me";
  ASSERT_EQ(symlink(victim.c_str(), (path + ".tmp").c_str()), 0);
  ASSERT_TRUE(WriteFileAtomically(path, RenderCheckpointRequest(8, 2)).ok());
  char buf[64] = {};
  ASSERT_GT(read(old_fd, buf, sizeof(buf) - 1), 0);
  close(old_fd);
  EXPECT_EQ(std::string(buf), "{\"id\":7,\"deadline_unix_ms\":1}\n");
  EXPECT_EQ(Slurp(path), "{\"id\":8,\"deadline_unix_ms\":2}\n");
  EXPECT_EQ(Slurp(victim), "keep me");
  EXPECT_NE(access((path + ".tmp").c_str(), F_OK), 0);
  // Where nothing can be written, the error names the place.
  absl::Status s = WriteFileAtomically(dir + "/no/such/dir/file", "x");
  EXPECT_TRUE(absl::IsInternal(s)) << s;
  EXPECT_NE(s.message().find(dir + "/no/such/dir/file.tmp"), std::string::npos) << s;
}

TEST(CheckpointFilesTest, AWorkersFileIsReadOnlyWhenARegularFileWithinItsBound) {
  const std::string dir = ::coach::testing::FreshTestDir("ckpt-read");
  const std::string file = dir + "/f";
  std::ofstream(file) << std::string(32, '7');
  absl::StatusOr<std::string> text = ReadSmallFile(file, 32);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, std::string(32, '7'));
  EXPECT_TRUE(absl::IsOutOfRange(ReadSmallFile(file, 31).status()));
  std::ofstream(file) << std::string(100000, 'x');
  EXPECT_TRUE(absl::IsOutOfRange(ReadSmallFile(file, kMaxAnswerFileBytes).status()));
  EXPECT_TRUE(absl::IsNotFound(ReadSmallFile(dir + "/none", 32).status()));
  // A link (to a file the launcher could read), a directory, a FIFO nobody writes to: refused,
  // and at once.
  ASSERT_EQ(symlink(file.c_str(), (dir + "/link").c_str()), 0);
  EXPECT_TRUE(absl::IsFailedPrecondition(ReadSmallFile(dir + "/link", 32).status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(ReadSmallFile(dir, 32).status()));
  ASSERT_EQ(mkfifo((dir + "/fifo").c_str(), 0600), 0);
  EXPECT_TRUE(absl::IsFailedPrecondition(ReadSmallFile(dir + "/fifo", 32).status()));
}

TEST(CheckpointFilesTest, AnArmedFileHoldsOneProcessId) {
  EXPECT_EQ(*ParseArmedPid("4242\n"), 4242);
  EXPECT_EQ(*ParseArmedPid("  17 "), 17);
  for (const char* bad :
       {"", "\n", "0", "1", "-5", "12a", "1 2", "0x10", "99999999999", "/proc/self"}) {
    EXPECT_TRUE(absl::IsInvalidArgument(ParseArmedPid(bad).status())) << bad;
  }
}

TEST(CheckpointFilesTest, AnAnswerIsAnIdWithAStepOrAnError) {
  absl::StatusOr<WorkerAnswer> a = ParseWorkerAnswer(R"({"id":3,"step":120})");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->id, 3);
  EXPECT_EQ(a->step, 120);
  EXPECT_EQ(a->error, "");
  a = ParseWorkerAnswer(R"({"id":3,"step":0,"epoch":2,"extra":{"x":[1]}})");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->step, 0);
  a = ParseWorkerAnswer(R"({"id":3,"error":"disk\nfull"})");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_FALSE(a->step.has_value());
  EXPECT_EQ(a->error, "disk?full");
  a = ParseWorkerAnswer(R"({"id":3,"error":""})");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->error, "(no reason given)");
  a = ParseWorkerAnswer(absl::StrCat(R"({"id":3,"error":")", std::string(1000, 'e'), "\"}"));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->error.size(), 200u);
  for (const char* bad :
       {"", "{", "[1]", "3", R"({"step":1})", R"({"id":0,"step":1})", R"({"id":"3","step":1})",
        R"({"id":3})", R"({"id":3,"step":-1})", R"({"id":3,"step":1.5})",
        R"({"id":18446744073709551615,"step":1})", R"({"id":3,"error":7})"}) {
    EXPECT_TRUE(absl::IsInvalidArgument(ParseWorkerAnswer(bad).status())) << bad;
  }
}

TEST(CheckpointFilesTest, MessagesArePrintableAndBounded) {
  EXPECT_EQ(BoundedMessage("ok"), "ok");
  EXPECT_EQ(BoundedMessage("a\tb\x01"), "a?b?");
  EXPECT_EQ(BoundedMessage(std::string(300, 'x')), std::string(253, 'x') + "...");
  EXPECT_EQ(BoundedMessage("abcdef", 5), "ab...");
}

}  // namespace
}  // namespace coach::launcher
