#include "operator/server/token_auth.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"

namespace coach::server {

bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  const size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  // Stat the open descriptor, not the path: what is checked is what is read.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::NotFoundError("cannot read " + path);
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return absl::InvalidArgumentError(path + " is not a regular file");
  }
  if ((st.st_mode & (S_IROTH | S_IWOTH)) != 0) {
    close(fd);
    return absl::InvalidArgumentError(
        absl::StrFormat("%s is %s by every user (mode %04o); chmod 600 it", path,
                        (st.st_mode & S_IROTH) != 0 ? "readable" : "writable", st.st_mode & 07777));
  }
  std::string content;
  char buf[4096];
  ssize_t n;
  // A token file is small; more than this is not a token.
  constexpr size_t kMaxTokenFileBytes = 64 * 1024;
  while ((n = read(fd, buf, sizeof(buf))) > 0 && content.size() <= kMaxTokenFileBytes) {
    content.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  if (n < 0) return absl::NotFoundError("cannot read " + path);
  if (content.size() > kMaxTokenFileBytes) {
    return absl::InvalidArgumentError(path + " is larger than 64 KiB: not a token");
  }
  std::string token(absl::StripAsciiWhitespace(content));
  if (token.empty()) return absl::InvalidArgumentError(path + " is empty");
  for (char c : token) {
    if (absl::ascii_isspace(static_cast<unsigned char>(c)) ||
        absl::ascii_iscntrl(static_cast<unsigned char>(c))) {
      return absl::InvalidArgumentError(path +
                                        " holds whitespace or control characters inside the token");
    }
  }
  if (token.size() < kMinTokenLength) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s holds a token of %d characters; use at least %d (e.g. openssl rand -hex 32)", path,
        token.size(), kMinTokenLength));
  }
  return token;
}

absl::StatusOr<std::string> EnsureOwnTokenFile(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    unsigned char random[32];
    if (getrandom(random, sizeof(random), 0) != static_cast<ssize_t>(sizeof(random))) {
      return absl::InternalError("cannot read random bytes for the API token");
    }
    const std::string token = absl::BytesToHexString(
        absl::string_view(reinterpret_cast<const char*>(random), sizeof(random)));
    std::string tmp = path + ".XXXXXX";
    const int fd = mkostemp(tmp.data(), O_CLOEXEC);  // mode 0600
    if (fd < 0) return absl::InternalError("cannot create " + tmp + ": " + strerror(errno));
    const std::string line = token + "\n";
    const bool written =
        write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) && fsync(fd) == 0;
    close(fd);
    // link() fails when the name exists: a concurrent start's token wins and is read below.
    const bool linked = written && link(tmp.c_str(), path.c_str()) == 0;
    const int link_errno = errno;
    unlink(tmp.c_str());
    if (!written) return absl::InternalError("cannot write " + tmp);
    if (!linked && link_errno != EEXIST) {
      return absl::InternalError("cannot create " + path + ": " + strerror(link_errno));
    }
    if (lstat(path.c_str(), &st) != 0) return absl::InternalError("cannot stat " + path);
  }
  if (!S_ISREG(st.st_mode)) return absl::InvalidArgumentError(path + " is not a regular file");
  if (st.st_uid != geteuid()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s is owned by uid %d, not by this user (uid %d)", path, st.st_uid, geteuid()));
  }
  if ((st.st_mode & 077) != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s may be read or written by other users (mode %04o); chmod 600 it", path,
                        st.st_mode & 07777));
  }
  return ReadTokenFile(path);
}

absl::StatusOr<std::string> BearerToken(const std::string* authorization_header) {
  if (authorization_header == nullptr) {
    return absl::UnauthenticatedError("missing authorization metadata (Bearer token)");
  }
  constexpr char kPrefix[] = "Bearer ";
  if (!absl::StartsWithIgnoreCase(*authorization_header, kPrefix)) {
    return absl::UnauthenticatedError("authorization metadata is not a Bearer token");
  }
  std::string token = authorization_header->substr(sizeof(kPrefix) - 1);
  if (token.empty()) return absl::UnauthenticatedError("the Bearer token is empty");
  return token;
}

absl::Status TokenAuth::Check(const std::string* authorization_header) const {
  if (!enabled()) return absl::OkStatus();
  absl::StatusOr<std::string> presented = BearerToken(authorization_header);
  if (!presented.ok()) return presented.status();
  if (!ConstantTimeEquals(*presented, token_)) {
    return absl::UnauthenticatedError("invalid token");
  }
  return absl::OkStatus();
}

}  // namespace coach::server
