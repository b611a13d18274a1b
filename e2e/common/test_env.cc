#include "e2e/common/test_env.h"

#include <stdlib.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace coach::e2e {

std::string EnvOrEmpty(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

std::string Runfile(const std::string& path) {
  return absl::StrCat(EnvOrEmpty("TEST_SRCDIR"), "/coach/", path);
}

std::string TestTmpDir() {
  std::string base = EnvOrEmpty("TEST_TMPDIR");
  return base.empty() ? "/tmp" : base;
}

absl::StatusOr<std::string> MakeTempDir(const std::string& prefix) {
  std::string templ = prefix + "XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp ", templ, " failed"));
  }
  return templ;
}

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

bool WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  return static_cast<bool>(out);
}

void WriteFileOrDie(const std::string& path, const std::string& content) {
  if (!WriteFile(path, content)) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::abort();
  }
}

}  // namespace coach::e2e
