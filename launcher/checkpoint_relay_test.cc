// coach-launch's relay of the operator's checkpoint requests to its workers, one Poll at a time
// on a fake clock: what is written, who is signalled (only who opted in), and what the pod
// answers.

#include "launcher/checkpoint_relay.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/testing/fake_clock.h"
#include "common/testing/test_dir.h"
#include "launcher/checkpoint_files.h"

namespace coach::launcher {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void Put(const std::string& path, const std::string& content) {
  ASSERT_TRUE(WriteFileAtomically(path, content).ok());
}

class CheckpointRelayTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = ::coach::testing::FreshTestDir("relay"); }

  std::unique_ptr<CheckpointRelay> Relay(int workers, bool signal = true) {
    CheckpointRelayOptions o;
    o.dir = dir_;
    o.workers = workers;
    o.signal = signal;
    o.clock = &clock_;
    o.signal_worker = [this](int local, pid_t pid, int64_t id) {
      absl::MutexLock lock(&mu_);
      signals_.emplace_back(local, pid, id);
    };
    o.report = [this](const api::v1::CheckpointReport& r) {
      absl::MutexLock lock(&mu_);
      reports_.push_back(r);
    };
    o.log = [this](const std::string& line) {
      absl::MutexLock lock(&mu_);
      log_ += line + "\n";
    };
    return std::make_unique<CheckpointRelay>(std::move(o));
  }

  api::v1::CheckpointRequest Request(int64_t id, absl::Duration grace) {
    api::v1::CheckpointRequest r;
    r.set_id(id);
    const absl::Time deadline = clock_.Now() + grace;
    r.mutable_deadline()->set_seconds(absl::ToUnixSeconds(deadline));
    r.mutable_deadline()->set_nanos(static_cast<int32_t>(absl::ToUnixNanos(deadline) % 1000000000));
    return r;
  }

  std::string File(int local) const { return CheckpointRequestFile(dir_, local); }

  std::vector<std::tuple<int, pid_t, int64_t>> Signals() {
    absl::MutexLock lock(&mu_);
    return signals_;
  }
  std::vector<api::v1::CheckpointReport> Reports() {
    absl::MutexLock lock(&mu_);
    return reports_;
  }

  FakeClock clock_;
  std::string dir_;
  absl::Mutex mu_;
  std::vector<std::tuple<int, pid_t, int64_t>> signals_;
  std::vector<api::v1::CheckpointReport> reports_;
  std::string log_;
};

TEST_F(CheckpointRelayTest, NothingHappensWithoutARequest) {
  auto relay = Relay(2);
  Put(File(0) + ".armed", "4242\n");
  relay->Poll();
  EXPECT_NE(access(File(0).c_str(), F_OK), 0);
  EXPECT_TRUE(Signals().empty());
  EXPECT_TRUE(Reports().empty());
}

// The training code agrees on a request with one collective: workers whose pod has not heard of
// it yet answer it all the same, and their answer is reported; the request, when it comes, is not
// passed on again.
TEST_F(CheckpointRelayTest, AnswersToARequestThePodHasNotHeardOfAreReported) {
  auto relay = Relay(2);
  Put(File(0) + ".done", R"({"id":5,"step":9})");
  relay->Poll();
  EXPECT_TRUE(Reports().empty()) << "worker 1 has not answered";
  Put(File(1) + ".done", R"({"id":5,"step":9})");
  relay->Poll();
  ASSERT_EQ(Reports().size(), 1u);
  EXPECT_EQ(Reports()[0].request_id(), 5);
  EXPECT_TRUE(Reports()[0].saved());
  EXPECT_EQ(Reports()[0].step(), 9);
  EXPECT_TRUE(Signals().empty());
  relay->OnRequest(Request(5, absl::Seconds(30)));
  relay->Poll();
  EXPECT_EQ(Reports().size(), 1u);
  EXPECT_FALSE(std::ifstream(File(0)).good()) << "no request file written";
}

TEST_F(CheckpointRelayTest, EveryWorkerGetsTheRequestOnceAndTheirAnswersMakeThePods) {
  auto relay = Relay(2);
  const int64_t deadline_ms = absl::ToUnixMillis(clock_.Now() + absl::Seconds(90));
  relay->OnRequest(Request(5, absl::Seconds(90)));
  relay->Poll();
  const std::string want = absl::StrCat("{\"id\":5,\"deadline_unix_ms\":", deadline_ms, "}\n");
  EXPECT_EQ(Slurp(File(0)), want);
  EXPECT_EQ(Slurp(File(1)), want);
  EXPECT_EQ(File(1), dir_ + "/checkpoint-request-1.json");
  EXPECT_NE(log_.find("coach-launch: checkpoint request 5 (deadline in 1m30s) passed on to 2 "
                      "worker(s) in COACH_CHECKPOINT_REQUEST_FILE, with SIGUSR1 to those that "
                      "opted in"),
            std::string::npos)
      << log_;
  // The same request in the next answers, or an older one: not written again.
  Put(File(0), "taken");
  relay->OnRequest(Request(5, absl::Seconds(90)));
  relay->OnRequest(Request(4, absl::Seconds(90)));
  relay->Poll();
  EXPECT_EQ(Slurp(File(0)), "taken");
  // An earlier request's answer, then half an answer: not yet the pod's.
  Put(File(0) + ".done", R"({"id":4,"step":3})");
  Put(File(1) + ".done", R"({"id":5,"step":)");
  relay->Poll();
  EXPECT_TRUE(Reports().empty());
  Put(File(0) + ".done", R"({"id":5,"step":40})");
  relay->Poll();
  EXPECT_TRUE(Reports().empty());
  Put(File(1) + ".done", R"({"id":5,"step":40})");
  relay->Poll();
  ASSERT_EQ(Reports().size(), 1u);
  const api::v1::CheckpointReport r = Reports()[0];
  EXPECT_EQ(r.request_id(), 5);
  EXPECT_TRUE(r.saved());
  EXPECT_EQ(r.step(), 40);
  EXPECT_EQ(r.message(), "");
  EXPECT_NE(log_.find("checkpoint request 5: saved at step 40 by 2 worker(s)"), std::string::npos);
  // Answered: later polls report nothing more.
  relay->Poll();
  EXPECT_EQ(Reports().size(), 1u);
}

TEST_F(CheckpointRelayTest, OnlyAWorkerThatOptedInIsSignalledOncePerProcess) {
  auto relay = Relay(3);
  Put(File(2) + ".armed", "777");  // before the request: signalled with it
  relay->OnRequest(Request(9, absl::Minutes(2)));
  relay->Poll();
  EXPECT_EQ(Signals(), (std::vector<std::tuple<int, pid_t, int64_t>>{{2, 777, 9}}));
  // Worker 0 never opts in; worker 1 does later; worker 2 is signalled once.
  Put(File(1) + ".armed", "4242\n");
  relay->Poll();
  relay->Poll();
  EXPECT_EQ(Signals(), (std::vector<std::tuple<int, pid_t, int64_t>>{{2, 777, 9}, {1, 4242, 9}}));
  // Worker 1 started again (an in-place restart) and armed as another process: signalled again.
  Put(File(1) + ".armed", "4343\n");
  relay->Poll();
  ASSERT_EQ(Signals().size(), 3u);
  EXPECT_EQ(Signals()[2], std::make_tuple(1, pid_t{4343}, int64_t{9}));
  // What is not one process id, or not a regular file, opts nobody in.
  const std::string bad_dir = ::coach::testing::FreshTestDir("relay-bad");
  std::ofstream(bad_dir + "/pid") << "5555";
  unlink((File(1) + ".armed").c_str());
  ASSERT_EQ(symlink((bad_dir + "/pid").c_str(), (File(1) + ".armed").c_str()), 0);
  Put(File(0) + ".armed", "1");
  Put(File(2) + ".armed", std::string(100, '8'));
  relay->Poll();
  EXPECT_EQ(Signals().size(), 3u);
}

TEST_F(CheckpointRelayTest, WithSignalsOffNobodyIsSignalled) {
  auto relay = Relay(1, /*signal=*/false);
  Put(File(0) + ".armed", "4242");
  relay->OnRequest(Request(1, absl::Minutes(1)));
  relay->Poll();
  EXPECT_EQ(Slurp(File(0)).substr(0, 8), "{\"id\":1,");
  EXPECT_TRUE(Signals().empty());
  EXPECT_EQ(log_.find("SIGUSR1"), std::string::npos) << log_;
}

TEST_F(CheckpointRelayTest, AnErrorOrStepsThatDifferAreNotSaved) {
  auto relay = Relay(2);
  relay->OnRequest(Request(3, absl::Minutes(1)));
  relay->Poll();
  Put(File(0) + ".done", R"({"id":3,"step":7})");
  Put(File(1) + ".done", R"({"id":3,"step":8})");
  relay->Poll();
  ASSERT_EQ(Reports().size(), 1u);
  EXPECT_FALSE(Reports()[0].saved());
  EXPECT_EQ(Reports()[0].step(), 0);
  EXPECT_EQ(Reports()[0].message(),
            "the workers saved at different steps (local rank 0: 7, local rank 1: 8)");

  relay->OnRequest(Request(4, absl::Minutes(1)));
  relay->Poll();
  Put(File(0) + ".done", R"({"id":4,"step":9})");
  Put(File(1) + ".done", R"({"id":4,"error":"no --checkpoint-dir: nothing to save"})");
  relay->Poll();
  ASSERT_EQ(Reports().size(), 2u);
  EXPECT_EQ(Reports()[1].request_id(), 4);
  EXPECT_FALSE(Reports()[1].saved());
  EXPECT_EQ(Reports()[1].message(), "local rank 1: no --checkpoint-dir: nothing to save");
}

TEST_F(CheckpointRelayTest, AtTheDeadlineTheWorkersThatDidNotAnswerAreNamed) {
  auto relay = Relay(3);
  relay->OnRequest(Request(6, absl::Seconds(30)));
  relay->Poll();
  Put(File(0) + ".done", R"({"id":6,"step":2})");
  Put(File(2) + ".done", std::string(5000, ' '));
  clock_.Advance(absl::Seconds(29));
  relay->Poll();
  EXPECT_TRUE(Reports().empty());
  clock_.Advance(absl::Seconds(1));
  relay->Poll();
  ASSERT_EQ(Reports().size(), 1u);
  EXPECT_FALSE(Reports()[0].saved());
  const std::string m = Reports()[0].message();
  EXPECT_EQ(m.find("no answer by the deadline from local rank(s) 1, 2 ("), 0u) << m;
  EXPECT_EQ(m,
            "no answer by the deadline from local rank(s) 1, 2 (local rank 2: its .done holds "
            "more than 4096 bytes)");
  EXPECT_LE(m.size(), 256u);
}

TEST_F(CheckpointRelayTest, ALateRequestIsAnsweredAtOnceAndALaterOneReplacesAWaitingOne) {
  auto relay = Relay(1);
  relay->OnRequest(Request(2, -absl::Seconds(1)));
  relay->Poll();
  EXPECT_NE(access(File(0).c_str(), F_OK), 0);
  ASSERT_EQ(Reports().size(), 1u);
  EXPECT_FALSE(Reports()[0].saved());
  EXPECT_EQ(Reports()[0].message(), "the request reached the pod after its deadline");

  relay->OnRequest(Request(3, absl::Minutes(1)));
  relay->Poll();
  relay->OnRequest(Request(4, absl::Minutes(1)));
  relay->Poll();
  EXPECT_NE(log_.find("checkpoint request 3 replaced by request 4"), std::string::npos) << log_;
  Put(File(0) + ".done", R"({"id":3,"step":1})");
  relay->Poll();
  EXPECT_EQ(Reports().size(), 1u);
  Put(File(0) + ".done", R"({"id":4,"step":1})");
  relay->Poll();
  ASSERT_EQ(Reports().size(), 2u);
  EXPECT_EQ(Reports()[1].request_id(), 4);
  EXPECT_TRUE(Reports()[1].saved());
}

TEST_F(CheckpointRelayTest, ItsThreadPassesRequestsOnAndReportsAnswers) {
  CheckpointRelayOptions o;
  o.dir = dir_;
  o.poll = absl::Milliseconds(10);
  std::vector<api::v1::CheckpointReport> reports;
  absl::Mutex mu;
  o.report = [&](const api::v1::CheckpointReport& r) {
    absl::MutexLock lock(&mu);
    reports.push_back(r);
  };
  o.log = [](const std::string&) {};
  CheckpointRelay relay(std::move(o));
  relay.Start();
  api::v1::CheckpointRequest request;
  request.set_id(11);
  request.mutable_deadline()->set_seconds(absl::ToUnixSeconds(Clock::Real()->Now()) + 60);
  relay.OnRequest(request);
  const absl::Duration start = Clock::Real()->Monotonic();
  while (access(File(0).c_str(), F_OK) != 0 &&
         Clock::Real()->Monotonic() - start < absl::Seconds(10)) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  Put(File(0) + ".done", R"({"id":11,"step":5})");
  auto answered = [&] {
    absl::MutexLock lock(&mu);
    return !reports.empty();
  };
  while (!answered() && Clock::Real()->Monotonic() - start < absl::Seconds(10)) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  relay.Stop();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].step(), 5);
}

TEST(CheckpointSettingsTest, SignalSettingAndThePrivateDirectory) {
  EXPECT_TRUE(*ParseCheckpointSignal({}));
  EXPECT_TRUE(*ParseCheckpointSignal({{"COACH_CHECKPOINT_SIGNAL", "SIGUSR1"}}));
  EXPECT_FALSE(*ParseCheckpointSignal({{"COACH_CHECKPOINT_SIGNAL", "none"}}));
  absl::Status bad = ParseCheckpointSignal({{"COACH_CHECKPOINT_SIGNAL", "USR2"}}).status();
  EXPECT_TRUE(absl::IsInvalidArgument(bad));
  EXPECT_EQ(bad.message(), "COACH_CHECKPOINT_SIGNAL: \"USR2\" is neither SIGUSR1 nor none");

  const std::string parent = ::coach::testing::FreshTestDir("relay-parent");
  absl::StatusOr<std::string> dir = MakeCheckpointDir({{"TMPDIR", parent}});
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ(dir->rfind(parent + "/coach-launch-checkpoint-", 0), 0u) << *dir;
  struct stat st {};
  ASSERT_EQ(stat(dir->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // What the workers left goes, a link but not what it names.
  std::ofstream(parent + "/outside") << "x";
  std::ofstream(*dir + "/checkpoint-request-0.json.done") << "x";
  ASSERT_EQ(symlink((parent + "/outside").c_str(), (*dir + "/link").c_str()), 0);
  RemoveCheckpointDir(*dir);
  EXPECT_NE(access(dir->c_str(), F_OK), 0);
  EXPECT_EQ(access((parent + "/outside").c_str(), F_OK), 0);
  EXPECT_TRUE(absl::IsInternal(MakeCheckpointDir({{"TMPDIR", parent + "/none"}}).status()));
}

}  // namespace
}  // namespace coach::launcher
