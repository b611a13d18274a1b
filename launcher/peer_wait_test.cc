#include "launcher/peer_wait.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

namespace coach::launcher {
namespace {

using ::testing::HasSubstr;

// A listening socket on 127.0.0.1; port() is valid from construction, Listen() opens it.
class Listener {
 public:
  Listener() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    socklen_t len = sizeof(addr);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~Listener() { close(fd_); }
  void Listen() { EXPECT_EQ(listen(fd_, 16), 0); }
  int port() const { return port_; }

 private:
  int fd_;
  int port_;
};

PeerWaitOptions Quiet(absl::Duration timeout, std::vector<std::string>* lines) {
  PeerWaitOptions o;
  o.timeout = timeout;
  o.initial_backoff = absl::Milliseconds(20);
  o.max_backoff = absl::Milliseconds(200);
  o.log = [lines](const std::string& l) { lines->push_back(l); };
  return o;
}

TEST(WaitForPeersTest, ListeningPeerIsImmediate) {
  Listener l;
  l.Listen();
  std::vector<std::string> lines;
  const absl::Time start = absl::Now();
  EXPECT_TRUE(
      WaitForPeers({{"127.0.0.1", l.port(), true, "TEST"}}, Quiet(absl::Seconds(5), &lines)).ok());
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  EXPECT_TRUE(lines.empty());
}

TEST(WaitForPeersTest, WaitsForLateListener) {
  Listener l;  // bound but not listening: connections are refused
  std::thread late([&] {
    absl::SleepFor(absl::Milliseconds(400));
    l.Listen();
  });
  std::vector<std::string> lines;
  const absl::Time start = absl::Now();
  absl::Status s = WaitForPeers({{"localhost", l.port(), true, "MASTER_ADDR"}},
                                Quiet(absl::Seconds(10), &lines));
  const absl::Duration took = absl::Now() - start;
  late.join();
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_GE(took, absl::Milliseconds(350));
  EXPECT_LT(took, absl::Seconds(5));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(lines[0], HasSubstr("waiting for localhost:" + std::to_string(l.port()) +
                                  " (from MASTER_ADDR)"));
  EXPECT_THAT(lines[1], HasSubstr("accepting connections"));
}

TEST(WaitForPeersTest, DeadlineNamesPeerAndErrno) {
  Listener l;  // never listens
  std::vector<std::string> lines;
  const absl::Time start = absl::Now();
  absl::Status s = WaitForPeers({{"127.0.0.1", l.port(), true, "PET_MASTER_ADDR"}},
                                Quiet(absl::Milliseconds(600), &lines));
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("127.0.0.1:" + std::to_string(l.port()) + " (from PET_MASTER_ADDR)"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("Connection refused (errno 111)"));
  EXPECT_GE(took, absl::Milliseconds(600));
  EXPECT_LT(took, absl::Seconds(3));
}

TEST(WaitForPeersTest, UnresolvableHostNamesGetaddrinfo) {
  std::vector<std::string> lines;
  absl::Status s = WaitForPeers({{"no-such-host.invalid", 80, true, "TF_CONFIG"}},
                                Quiet(absl::Milliseconds(300), &lines));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(s.message()), HasSubstr("no-such-host.invalid:80 (from TF_CONFIG)"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("getaddrinfo"));
}

TEST(WaitForPeersTest, ResolveOnlyDoesNotConnect) {
  Listener l;  // refusing connections, but the name resolves
  std::vector<std::string> lines;
  EXPECT_TRUE(WaitForPeers({{"127.0.0.1", l.port(), false, "TF_CONFIG"}},
                           Quiet(absl::Milliseconds(300), &lines))
                  .ok());
}

TEST(WaitForPeersTest, DeadlineIsOverallNotPerPeer) {
  Listener a, b;  // neither listens
  std::vector<std::string> lines;
  const absl::Time start = absl::Now();
  absl::Status s =
      WaitForPeers({{"127.0.0.1", a.port(), true, "A"}, {"127.0.0.1", b.port(), true, "B"}},
                   Quiet(absl::Milliseconds(500), &lines));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(s.message()), HasSubstr("(from A)"));
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(1500));
}

}  // namespace
}  // namespace coach::launcher
