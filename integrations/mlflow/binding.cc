#include "integrations/mlflow/binding.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "integrations/mlflow/binding_source.h"

namespace coach::mlflow {
namespace {

absl::Status Errno(absl::string_view what, const std::string& path) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

}  // namespace

absl::string_view BindingSource() { return kBindingSitecustomize; }

absl::Status WriteBinding(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return Errno("mkdir", dir);
  // Whatever the umask: replicas of other users must reach it.
  if (::chmod(dir.c_str(), 0755) != 0) return Errno("chmod", dir);
  const std::string path = dir + "/sitecustomize.py";
  {
    std::ifstream in(path, std::ios::binary);
    std::stringstream current;
    current << in.rdbuf();
    if (in && current.str() == BindingSource()) return absl::OkStatus();
  }
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("open", tmp);
  absl::string_view rest = BindingSource();
  while (!rest.empty()) {
    const ssize_t n = ::write(fd, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      absl::Status s = Errno("write", tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      return s;
    }
    rest.remove_prefix(static_cast<size_t>(n));
  }
  // The umask may have narrowed the mode; replicas of other users must read it.
  if (::fchmod(fd, 0644) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    return Errno("write", tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return Errno("rename", path);
  }
  return absl::OkStatus();
}

std::string PythonPathWithBinding(const std::string& dir, const std::string& existing) {
  return existing.empty() ? dir : absl::StrCat(dir, ":", existing);
}

}  // namespace coach::mlflow
