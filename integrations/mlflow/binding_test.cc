#include "integrations/mlflow/binding.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string>

#include "common/testing/test_dir.h"
#include "gtest/gtest.h"

namespace coach::mlflow {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(BindingTest, WritesTheSourceReadableByAll) {
  // A directory WriteBinding makes, as it makes one for a replica.
  const std::string dir = ::coach::testing::FreshTestDir("binding") + "/binding";
  ::umask(077);
  ASSERT_TRUE(WriteBinding(dir).ok());
  EXPECT_EQ(Slurp(dir + "/sitecustomize.py"), BindingSource());
  struct stat st {};
  ASSERT_EQ(::stat((dir + "/sitecustomize.py").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
  ::umask(022);
  // The compiled-in source is the Python file, whole.
  EXPECT_NE(BindingSource().find("COACH_MLFLOW_RESUME"), absl::string_view::npos);
  EXPECT_NE(BindingSource().find("_chain_next_sitecustomize()\n"), absl::string_view::npos);

  // A stale copy is replaced.
  std::ofstream(dir + "/sitecustomize.py") << "old";
  ASSERT_TRUE(WriteBinding(dir).ok());
  EXPECT_EQ(Slurp(dir + "/sitecustomize.py"), BindingSource());
}

TEST(BindingTest, PythonPath) {
  EXPECT_EQ(PythonPathWithBinding("/b", ""), "/b");
  EXPECT_EQ(PythonPathWithBinding("/b", "/app:/lib"), "/b:/app:/lib");
}

TEST(BindingTest, UnwritableDirectory) { EXPECT_FALSE(WriteBinding("/proc/coach-binding").ok()); }

}  // namespace
}  // namespace coach::mlflow
