#include "operator/backend/local/net/port_allocator.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <deque>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/testing/test_dir.h"
#include "operator/backend/local/store/sqlite_job_store.h"
#include "operator/store/testing/test_jobs.h"

namespace coach::backend::local {
namespace {

// A listening socket on a kernel-chosen loopback port, held for the test's duration.
struct Listener {
  Listener() {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(listen(fd, 1), 0);
    socklen_t len = sizeof(addr);
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
  }
  ~Listener() { close(fd); }
  int fd;
  int port;
};

class PortAllocatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = SqliteJobStore::Open(::coach::testing::FreshTestDir(
        absl::StrCat("ports-", ::testing::UnitTest::GetInstance()->current_test_info()->name())));
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    for (const char* name : {"a", "b"}) {
      ASSERT_TRUE(store_->Create(store::testing::MakeJob("ns", name)).ok());
    }
  }
  std::unique_ptr<SqliteJobStore> store_;
};

TEST_F(PortAllocatorTest, AllocatesDistinctBindableReservedPorts) {
  PortAllocator alloc(store_->replicas());
  auto ports = alloc.Allocate({"ns", "a"}, "a-master-0", {"master", "rdzv", "metrics"});
  ASSERT_TRUE(ports.ok()) << ports.status();
  ASSERT_EQ(ports->size(), 3u);
  std::set<int> distinct;
  for (const auto& [name, port] : *ports) {
    EXPECT_TRUE(IsPortBindable(port)) << port;
    distinct.insert(port);
  }
  EXPECT_EQ(distinct.size(), 3u);
  auto reserved = store_->replicas()->ListPortReservations();
  ASSERT_TRUE(reserved.ok());
  ASSERT_EQ(reserved->size(), 3u);
  for (const auto& r : *reserved) {
    EXPECT_EQ(r.job, (JobKey{"ns", "a"}));
    EXPECT_EQ(r.replica, "a-master-0");
    EXPECT_EQ(ports->at(r.port_name), r.port);
  }
}

TEST_F(PortAllocatorTest, SkipsPortsInUseAndPortsOfOtherJobs) {
  Listener busy;
  EXPECT_FALSE(IsPortBindable(busy.port));
  PortAllocator first(store_->replicas());
  auto a = first.Allocate({"ns", "a"}, "a-0", {"master"});
  ASSERT_TRUE(a.ok());
  int reserved_by_a = a->at("master");
  int free_port;
  {
    Listener probe;  // Find a free port, then free it.
    free_port = probe.port;
  }
  // Candidates: in use, reserved by job a, then free.
  std::deque<int> candidates = {busy.port, reserved_by_a, free_port};
  PortAllocator::Options options;
  options.candidate = [&candidates]() -> absl::StatusOr<int> {
    if (candidates.empty()) return absl::InternalError("out of candidates");
    int p = candidates.front();
    candidates.pop_front();
    return p;
  };
  PortAllocator second(store_->replicas(), options);
  auto b = second.Allocate({"ns", "b"}, "b-0", {"master"});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->at("master"), free_port);
}

TEST_F(PortAllocatorTest, GivesUpWhenNothingIsFree) {
  Listener busy;
  PortAllocator::Options options;
  options.candidate = [&busy]() -> absl::StatusOr<int> { return busy.port; };
  options.max_attempts = 5;
  PortAllocator alloc(store_->replicas(), options);
  EXPECT_EQ(alloc.Allocate({"ns", "a"}, "a-0", {"master"}).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(store_->replicas()->ListPortReservations()->empty());
}

// A job of many replicas needs as many ports: the tries are counted per port, not per job
// (a 64-replica job could not start).
TEST_F(PortAllocatorTest, ManyReplicasEachGetTheirPort) {
  std::map<std::string, std::vector<std::string>> names;
  for (int i = 0; i < 200; ++i) names["r-" + std::to_string(i)] = {"master"};
  PortAllocator alloc(store_->replicas());
  absl::StatusOr<std::map<std::string, std::map<std::string, int>>> got =
      alloc.AllocateAll({"ns", "a"}, names);
  ASSERT_TRUE(got.ok()) << got.status();
  std::set<int> ports;
  for (const auto& [replica, by_name] : *got) ports.insert(by_name.at("master"));
  EXPECT_EQ(ports.size(), 200u);
}

TEST_F(PortAllocatorTest, ConcurrentAllocatorsNeverCollide) {
  // Two allocators (as two operator threads) draw from the same tiny candidate range.
  int base;
  {
    Listener probe;
    base = probe.port;
  }
  std::vector<int> range;
  for (int p = base; p < base + 40 && p < 65536; ++p) {
    if (IsPortBindable(p)) range.push_back(p);
  }
  ASSERT_GE(range.size(), 20u);
  std::atomic<size_t> next_a{0}, next_b{0};
  auto make = [&range](std::atomic<size_t>* next) {
    PortAllocator::Options o;
    o.candidate = [&range, next]() -> absl::StatusOr<int> {
      return range[(*next)++ % range.size()];
    };
    o.max_attempts = 1000;
    return o;
  };
  PortAllocator a(store_->replicas(), make(&next_a));
  PortAllocator b(store_->replicas(), make(&next_b));
  absl::Status sa, sb;
  std::thread ta([&] {
    for (int i = 0; i < 5 && sa.ok(); ++i) {
      sa = a.Allocate({"ns", "a"}, absl::StrCat("a-", i), {"p"}).status();
    }
  });
  std::thread tb([&] {
    for (int i = 0; i < 5 && sb.ok(); ++i) {
      sb = b.Allocate({"ns", "b"}, absl::StrCat("b-", i), {"p"}).status();
    }
  });
  ta.join();
  tb.join();
  ASSERT_TRUE(sa.ok()) << sa;
  ASSERT_TRUE(sb.ok()) << sb;
  auto all = store_->replicas()->ListPortReservations();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 10u);
  std::set<int> distinct;
  for (const auto& r : *all) distinct.insert(r.port);
  EXPECT_EQ(distinct.size(), 10u);
}

TEST_F(PortAllocatorTest, ReleaseAndJobDeletionFreePorts) {
  PortAllocator alloc(store_->replicas());
  ASSERT_TRUE(alloc.Allocate({"ns", "a"}, "a-0", {"master"}).ok());
  ASSERT_TRUE(alloc.Allocate({"ns", "b"}, "b-0", {"master"}).ok());
  ASSERT_TRUE(alloc.Release({"ns", "a"}).ok());
  EXPECT_EQ(store_->replicas()->ListPortReservations()->size(), 1u);
  ASSERT_TRUE(store_->Delete({"ns", "b"}, std::nullopt).ok());
  EXPECT_TRUE(store_->replicas()->ListPortReservations()->empty());
  EXPECT_EQ(alloc.Allocate({"ns", "b"}, "b-0", {"master"}).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace coach::backend::local
