#include "operator/backend/local/net/port_allocator.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <set>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace coach::backend::local {
namespace {

// Binds a fresh socket to 127.0.0.1:port; returns the fd (caller closes) or -1.
int BindLoopback(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr;
  memset(&addr, 0, sizeof(addr));
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

absl::StatusOr<int> KernelChoice() {
  int fd = BindLoopback(0);
  if (fd < 0) return absl::InternalError(absl::StrCat("bind 127.0.0.1:0: ", strerror(errno)));
  sockaddr_in addr;
  socklen_t len = sizeof(addr);
  int rc = getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  if (rc != 0) return absl::InternalError(absl::StrCat("getsockname: ", strerror(errno)));
  return static_cast<int>(ntohs(addr.sin_port));
}

}  // namespace

bool IsPortBindable(int port) {
  if (port <= 0 || port > 65535) return false;
  int fd = BindLoopback(port);
  if (fd < 0) return false;
  close(fd);
  return true;
}

PortAllocator::PortAllocator(ReplicaStore* store, Options options)
    : store_(store), options_(std::move(options)) {
  if (!options_.candidate) options_.candidate = KernelChoice;
}

absl::StatusOr<std::map<std::string, int>> PortAllocator::Allocate(
    const JobKey& job, const std::string& replica, const std::vector<std::string>& names) {
  ASSIGN_OR_RETURN(auto all, AllocateAll(job, {{replica, names}}));
  return std::move(all[replica]);
}

absl::StatusOr<std::map<std::string, std::map<std::string, int>>> PortAllocator::AllocateAll(
    const JobKey& job, const std::map<std::string, std::vector<std::string>>& names) {
  std::map<std::string, std::map<std::string, int>> result;
  // A reservation race with another allocator (AlreadyExists) restarts the whole set.
  while (true) {
    // Each candidate is looked up on its own: listing every reservation here made each
    // job's admission cost what the store holds.
    std::set<int> taken;
    std::vector<PortReservation> want;
    for (const auto& [replica, port_names] : names) {
      for (const std::string& name : port_names) {
        // Per port: a job of many replicas needs as many ports, each found in a few tries.
        int attempts = 0;
        while (true) {
          if (++attempts > options_.max_attempts) {
            return absl::ResourceExhaustedError(absl::StrCat("no free TCP port on 127.0.0.1 after ",
                                                             options_.max_attempts, " attempts"));
          }
          ASSIGN_OR_RETURN(int port, options_.candidate());
          if (taken.count(port) > 0) continue;
          ASSIGN_OR_RETURN(bool reserved, store_->IsPortReserved(port));
          if (reserved || !IsPortBindable(port)) continue;
          taken.insert(port);
          want.push_back(PortReservation{port, job, replica, name});
          break;
        }
      }
    }
    if (want.empty()) return result;
    absl::Status s = store_->ReservePorts(want);
    if (absl::IsAlreadyExists(s)) continue;
    RETURN_IF_ERROR(s);
    for (const PortReservation& r : want) result[r.replica][r.port_name] = r.port;
    return result;
  }
}

absl::Status PortAllocator::Release(const JobKey& job) { return store_->ReleasePorts(job); }

}  // namespace coach::backend::local
