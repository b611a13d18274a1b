#include "common/testing/test_dir.h"

#include <stdlib.h>

#include <cstdio>
#include <cstdlib>

namespace coach::testing {

std::string FreshTestDir(const std::string& prefix) {
  const char* tmp = getenv("TEST_TMPDIR");
  std::string dir = std::string(tmp != nullptr ? tmp : "/tmp") + "/" + prefix + "-XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) {
    std::perror(("mkdtemp " + dir).c_str());
    std::abort();
  }
  return dir;
}

}  // namespace coach::testing
