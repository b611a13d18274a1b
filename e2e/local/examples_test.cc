// End to end on the local backend with real training: the PyTorch DDP example manifests
// (examples/pytorch) submitted unchanged to an operator whose working directory is the
// runfiles tree (the manifests use paths relative to the repository root), with
// coach-launch on its PATH. Every rank must report status=ok and all the checksums agree.

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "e2e/local/operator_fixture.h"
#include "e2e/local/rank_results.h"
#include "gtest/gtest.h"
#include "sdk/cpp/job_status.h"

namespace coach::e2e {
namespace {

using api::v1::TrainingJob;

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

    absl::StatusOr<TrainingJob> done = op_->WaitFinished(name, absl::Minutes(10));
    ASSERT_TRUE(done.ok()) << done.status();

    std::string all_logs;
    for (const std::string& replica : replicas) {
      absl::StatusOr<std::string> log = op_->Logs(name, replica);
      ASSERT_TRUE(log.ok()) << replica << ": " << log.status();
      absl::StrAppend(&all_logs, "--- ", replica, " ---\n", *log);
    }
    EXPECT_TRUE(sdk::IsJobSucceeded(*done)) << done->status().ShortDebugString() << "\n"
                                            << all_logs;
    ExpectRanksAgree(all_logs, world_size, checksum_key);
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
