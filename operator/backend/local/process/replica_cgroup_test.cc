#include "operator/backend/local/process/replica_cgroup.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "common/testing/test_dir.h"
#include "operator/backend/local/process/proc_stat.h"

namespace coach::backend::local {
namespace {

constexpr char kHybrid[] =
    "25 1 0:23 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n"
    "30 25 0:26 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
    "41 25 0:38 / /sys/fs/cgroup/unified rw,relatime shared:5 - cgroup2 cgroup2 rw\n";
constexpr char kUnified[] =
    "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev shared:9 - cgroup2 cgroup2 rw,nsdelegate\n";
// A container that sees its own part of the host's hierarchy bind-mounted.
constexpr char kBound[] = "700 650 0:30 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
constexpr char kEscaped[] = "41 25 0:38 / /run/my\\040cgroup rw - cgroup2 none rw\n";

TEST(ReplicaCgroupTest, CgroupDirFromMountsAndMembership) {
  struct Case {
    const char* mountinfo;
    const char* proc_cgroup;
    const char* want;  // nullptr: Unavailable
  };
  const Case cases[] = {
      // Hybrid (v1 controllers + a v2 hierarchy at unified), in the root.
      {kHybrid, "4:memory:/x\n0::/\n", "/sys/fs/cgroup/unified"},
      // Unified, a systemd service.
      {kUnified, "0::/system.slice/coach.service\n", "/sys/fs/cgroup/system.slice/coach.service"},
      // The mount's root is a part of the hierarchy: paths below it only.
      {kBound, "0::/docker/abc/sub\n", "/sys/fs/cgroup/sub"},
      {kBound, "0::/docker/abc\n", "/sys/fs/cgroup"},
      {kBound, "0::/docker/abcd\n", nullptr},
      {kEscaped, "0::/a\n", "/run/my cgroup/a"},
      // cgroup v1 only: no 0:: line.
      {kHybrid, "4:memory:/x\n1:name=systemd:/\n", nullptr},
      // A v2 hierarchy, not mounted here.
      {"30 25 0:26 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n", "0::/\n", nullptr},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::string> dir = CgroupDirFrom(c.mountinfo, c.proc_cgroup);
    if (c.want == nullptr) {
      EXPECT_TRUE(absl::IsUnavailable(dir.status())) << c.proc_cgroup << " -> " << dir.status();
    } else {
      ASSERT_TRUE(dir.ok()) << c.proc_cgroup << ": " << dir.status();
      EXPECT_EQ(*dir, c.want) << c.proc_cgroup;
    }
  }
}

// On this host, when it lets a process make cgroups: a member and its children are killed
// together, and the cgroup is removed after.
TEST(ReplicaCgroupTest, KillsEveryMemberAndRemovesTheCgroup) {
  absl::StatusOr<std::string> own = OwnCgroupDir();
  if (!own.ok()) GTEST_SKIP() << own.status();
  const std::string dir = absl::StrCat(*own, "/coach-test-", getpid());
  absl::Status made = CreateCgroup(dir);
  if (absl::IsPermissionDenied(made)) GTEST_SKIP() << made;
  ASSERT_TRUE(made.ok()) << made;
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(go[1]);
    char c;
    (void)read(go[0], &c, 1);
    if (fork() == 0) setsid();  // a grandchild in a session of its own
    pause();
    _exit(0);
  }
  close(go[0]);
  ASSERT_TRUE(AddToCgroup(dir, child).ok());
  close(go[1]);
  absl::StatusOr<std::vector<pid_t>> members;
  for (int i = 0; i < 500; ++i) {
    members = CgroupMembers(dir);
    if (members.ok() && members->size() == 2) break;
    usleep(2000);
  }
  ASSERT_TRUE(members.ok()) << members.status();
  ASSERT_EQ(members->size(), 2u);
  EXPECT_TRUE(KillCgroup(dir, absl::Seconds(5), Clock::Real()).ok());
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  for (pid_t pid : *members) {
    auto st = ReadProcStat(pid);
    EXPECT_TRUE(!st.ok() || st->state == 'Z') << pid;
  }
  EXPECT_TRUE(RemoveCgroup(dir, absl::Seconds(5), Clock::Real()).ok());
  struct stat st;
  EXPECT_NE(stat(dir.c_str(), &st), 0);
  // Both are fine on a cgroup that is gone.
  EXPECT_TRUE(KillCgroup(dir, absl::Seconds(1), Clock::Real()).ok());
  EXPECT_TRUE(RemoveCgroup(dir, absl::Seconds(1), Clock::Real()).ok());
}

// Directories stand in for cgroups: rmdir refuses a non-empty one as it refuses (EBUSY) a
// populated cgroup.
TEST(ReplicaCgroupTest, RemovesOnlyEmptyCgroupsOfShimsThatAreGone) {
  const std::string parent = ::coach::testing::FreshTestDir("stale");
  pid_t gone = fork();
  ASSERT_GE(gone, 0);
  if (gone == 0) {
    pause();
    _exit(0);
  }
  auto gone_stat = ReadProcStat(gone);
  ASSERT_TRUE(gone_stat.ok());
  kill(gone, SIGKILL);
  ASSERT_EQ(waitpid(gone, nullptr, 0), gone);
  auto self = ReadProcStat(getpid());
  ASSERT_TRUE(self.ok());
  const std::string stale = parent + "/" + ReplicaCgroupName(gone, gone_stat->start_time);
  const std::string populated = parent + "/" + ReplicaCgroupName(gone, gone_stat->start_time + 1);
  const std::string running = parent + "/" + ReplicaCgroupName(getpid(), self->start_time);
  const std::string other = parent + "/something-else";
  for (const std::string& d : {stale, populated, running, other}) {
    ASSERT_EQ(mkdir(d.c_str(), 0755), 0) << d;
  }
  ASSERT_EQ(mkdir((populated + "/member").c_str(), 0755), 0);
  EXPECT_EQ(RemoveStaleReplicaCgroups(parent), 1);
  struct stat st;
  EXPECT_NE(stat(stale.c_str(), &st), 0);
  for (const std::string& d : {populated, running, other}) {
    EXPECT_EQ(stat(d.c_str(), &st), 0) << d;
  }
  EXPECT_EQ(RemoveStaleReplicaCgroups(parent + "/missing"), 0);
}

}  // namespace
}  // namespace coach::backend::local
