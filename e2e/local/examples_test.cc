// End to end on the local backend with real training: the PyTorch DDP example manifests
// (examples/pytorch) submitted unchanged to an operator whose working directory is the
// runfiles tree (the manifests use paths relative to the repository root), with
// coach-launch on its PATH. Every rank must report status=ok and all the checksums agree.

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "e2e/local/operator_fixture.h"
#include "gtest/gtest.h"
#include "sdk/cpp/job_status.h"

namespace coach::e2e {
namespace {

using api::v1::TrainingJob;

// "key=value" fields of a `coach-result ...` line.
std::map<std::string, std::string> Fields(const std::string& line) {
  std::map<std::string, std::string> out;
  for (absl::string_view field : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
    const size_t eq = field.find('=');
    if (eq == absl::string_view::npos) continue;
    out[std::string(field.substr(0, eq))] = std::string(field.substr(eq + 1));
  }
  return out;
}

class ExamplesTest : public OperatorTest {
 protected:
  void SetUp() override {
    OperatorOptions options;
    options.workdir = Runfile("");
    StartOperator(options);
  }

  // Submits the manifest, waits for the end, and checks every rank's coach-result line:
  // `world_size` ranks in all over `replicas`, each status=ok, one params_checksum.
  // `checksum_key` names the field every rank must agree on (the model's parameters).
  void RunExample(const std::string& manifest_path, const std::string& name,
                  const std::vector<std::string>& replicas, int world_size,
                  const std::string& checksum_key = "params_checksum") {
    const std::string manifest = ReadFileOrEmpty(Runfile(manifest_path));
    ASSERT_FALSE(manifest.empty()) << manifest_path << " is not in the runfiles";
    absl::StatusOr<TrainingJob> created = op_->client().CreateJobFromManifest(manifest, kNs);
    ASSERT_TRUE(created.ok()) << created.status();
    ASSERT_EQ(created->metadata().name(), name);

    sdk::WaitOptions wait;
    wait.timeout = absl::Minutes(10);
    absl::StatusOr<TrainingJob> done =
        op_->client().WaitForJobConditions(kNs, name, {"Succeeded", "Failed"}, wait);
    ASSERT_TRUE(done.ok()) << done.status();

    std::set<int> ranks;
    std::set<std::string> checksums;
    std::string all_logs;
    for (const std::string& replica : replicas) {
      absl::StatusOr<std::string> log = op_->Logs(name, replica);
      ASSERT_TRUE(log.ok()) << replica << ": " << log.status();
      absl::StrAppend(&all_logs, "--- ", replica, " ---\n", *log);
      for (absl::string_view line : absl::StrSplit(*log, '\n')) {
        if (!absl::StartsWith(line, "coach-result ")) continue;
        std::map<std::string, std::string> f = Fields(std::string(line));
        EXPECT_EQ(f["status"], "ok") << line;
        EXPECT_EQ(f["world_size"], absl::StrCat(world_size)) << line;
        int rank = -1;
        EXPECT_TRUE(absl::SimpleAtoi(f["rank"], &rank)) << line;
        EXPECT_TRUE(ranks.insert(rank).second) << "rank " << rank << " reported twice";
        EXPECT_FALSE(f[checksum_key].empty()) << line;
        checksums.insert(f[checksum_key]);
      }
    }
    EXPECT_TRUE(sdk::IsJobSucceeded(*done)) << done->status().ShortDebugString() << "\n"
                                            << all_logs;
    EXPECT_EQ(static_cast<int>(ranks.size()), world_size) << all_logs;
    if (!ranks.empty()) {
      EXPECT_EQ(*ranks.begin(), 0);
      EXPECT_EQ(*ranks.rbegin(), world_size - 1);
    }
    EXPECT_EQ(checksums.size(), 1u) << "checksums differ:\n" << all_logs;
    EXPECT_TRUE(op_->WaitNoProcesses().empty());
  }
};

TEST_F(ExamplesTest, PyTorchDdpOneMasterTwoWorkers) {
  RunExample("examples/pytorch/pytorch-ddp.yaml", "pytorch-ddp",
             {"master-0", "worker-0", "worker-1"}, 3);
}

TEST_F(ExamplesTest, PyTorchDdpThroughCoachLaunchTwoByTwo) {
  RunExample("examples/pytorch/pytorch-ddp-launch.yaml", "pytorch-ddp-launch",
             {"master-0", "worker-0"}, 4);
}

// XGBoost's distributed mode (Rabit tracker on the Master at MASTER_ADDR:MASTER_PORT, which
// the local backend allocates) with the XGBoostJob env wiring.
TEST_F(ExamplesTest, XGBoostOneMasterTwoWorkers) {
  RunExample("examples/xgboost/xgboost-dist.yaml", "xgboost-dist",
             {"master-0", "worker-0", "worker-1"}, 3, "model_checksum");
}

}  // namespace
}  // namespace coach::e2e
