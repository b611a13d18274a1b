#include "launcher/self_install.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace coach::launcher {
namespace {

absl::Status Errno(const std::string& what, const std::string& path, int err) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", std::strerror(err)));
}

absl::Status MakeDir(const std::string& path) {
  if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) return Errno("mkdir", path, errno);
  return absl::OkStatus();
}

// Copies the contents of `from` (following links) to `to`, replacing it, with `mode`.
absl::Status CopyFile(const std::string& from, const std::string& to, mode_t mode) {
  int in = open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return Errno("open", from, errno);
  // A fresh inode: a running copy of the old file (an earlier install) is left untouched.
  const std::string tmp = to + ".tmp";
  unlink(tmp.c_str());
  int out = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (out < 0) {
    int err = errno;
    close(in);
    return Errno("create", tmp, err);
  }
  std::vector<char> buf(1 << 16);
  absl::Status status;
  for (;;) {
    ssize_t n = read(in, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      status = Errno("read", from, errno);
      break;
    }
    if (n == 0) break;
    for (ssize_t done = 0; done < n;) {
      ssize_t w = write(out, buf.data() + done, n - done);
      if (w < 0) {
        if (errno == EINTR) continue;
        status = Errno("write", tmp, errno);
        break;
      }
      done += w;
    }
    if (!status.ok()) break;
  }
  close(in);
  if (status.ok() && fchmod(out, mode) != 0) status = Errno("chmod", tmp, errno);
  if (close(out) != 0 && status.ok()) status = Errno("close", tmp, errno);
  if (status.ok() && rename(tmp.c_str(), to.c_str()) != 0) status = Errno("rename", to, errno);
  if (!status.ok()) unlink(tmp.c_str());
  return status;
}

struct Loaded {
  std::string interp;              // PT_INTERP of the executable
  std::vector<std::string> paths;  // shared objects the loader opened, by the path it used
};

int Collect(struct dl_phdr_info* info, size_t, void* data) {
  auto* loaded = static_cast<Loaded*>(data);
  const char* name = info->dlpi_name;
  if (name == nullptr || name[0] == '\0') {
    // The executable: its PT_INTERP names the loader.
    for (int i = 0; i < info->dlpi_phnum; ++i) {
      if (info->dlpi_phdr[i].p_type == PT_INTERP) {
        loaded->interp =
            reinterpret_cast<const char*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
      }
    }
    return 0;
  }
  if (name[0] != '/') return 0;  // linux-vdso.so.1: not a file
  loaded->paths.push_back(name);
  return 0;
}

std::string Basename(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

absl::Status SelfInstall(const std::string& dir) {
  if (dir.empty()) return absl::InvalidArgumentError("--install: directory required");
  const std::string bin = dir + "/bin";
  const std::string lib = dir + "/lib";
  for (const std::string& d : {dir, bin, lib}) {
    if (absl::Status s = MakeDir(d); !s.ok()) return s;
  }
  Loaded loaded;
  dl_iterate_phdr(Collect, &loaded);
  if (loaded.interp.empty()) {
    return absl::FailedPreconditionError(
        "/proc/self/exe: no PT_INTERP (not a dynamically linked executable)");
  }
  if (absl::Status s = CopyFile("/proc/self/exe", bin + "/coach-launch", 0755); !s.ok()) return s;
  for (const std::string& path : loaded.paths) {
    if (absl::Status s = CopyFile(path, lib + "/" + Basename(path), 0755); !s.ok()) return s;
  }
  return CopyFile(loaded.interp, lib + "/ld.so", 0755);
}

}  // namespace coach::launcher
