#include "operator/backend/local/fs_util.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/testing/test_dir.h"

namespace coach::backend::local {
namespace {

std::string TestDir(const std::string& name) {
  return ::coach::testing::FreshTestDir(absl::StrCat("fs_util_", name));
}

bool IsDir(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

TEST(MakeDirsTest, CreatesEveryMissingComponentAndAcceptsExistingOnes) {
  const std::string base = TestDir("nested");
  const std::string deep = base + "/a/b/c";
  ASSERT_TRUE(MakeDirs(deep).ok());
  EXPECT_TRUE(IsDir(deep));
  EXPECT_TRUE(MakeDirs(deep).ok());             // exists
  EXPECT_TRUE(MakeDirs(base + "/a").ok());      // a parent that exists
  ASSERT_TRUE(MakeDirs(base + "/a/b/d").ok());  // only the last is missing
  EXPECT_TRUE(IsDir(base + "/a/b/d"));
}

TEST(MakeDirsTest, AFileInTheWayIsAnError) {
  const std::string base = TestDir("file");
  ASSERT_TRUE(MakeDirs(base).ok());
  std::ofstream(base + "/f") << "x";
  EXPECT_EQ(MakeDirs(base + "/f").code(), absl::StatusCode::kInternal);
  EXPECT_EQ(MakeDirs(base + "/f/below").code(), absl::StatusCode::kInternal);
  EXPECT_EQ(MakeDirs("").code(), absl::StatusCode::kInvalidArgument);
}

TEST(WriteFileAtomicTest, BothDurabilitiesReplaceTheWholeFile) {
  const std::string base = TestDir("write");
  ASSERT_TRUE(MakeDirs(base).ok());
  const std::string path = base + "/f";
  ASSERT_TRUE(WriteFileAtomic(path, "first, longer").ok());
  EXPECT_EQ(*ReadFile(path), "first, longer");
  ASSERT_TRUE(WriteFileAtomic(path, "second", Durability::kCrashSafe).ok());
  EXPECT_EQ(*ReadFile(path), "second");
  EXPECT_EQ(ReadFile(path + ".tmp").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace coach::backend::local
