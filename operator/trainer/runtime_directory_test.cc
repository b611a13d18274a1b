#include "operator/trainer/runtime_directory.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace coach::trainer {
namespace {

std::string Runtimes() {
  const char* dir = std::getenv("COACH_SHARED_DIR");
  EXPECT_NE(dir, nullptr) << "COACH_SHARED_DIR must point at the shared folder";
  return std::string(dir != nullptr ? dir : "") + "/reference/kubeflow-v2/runtimes";
}

TEST(RuntimeDirectoryTest, FindsUpstreamsShippedRuntimesByKindAndName) {
  auto torch =
      FindRuntimeInDirectory(Runtimes(), "ClusterTrainingRuntime", "", "torch-distributed");
  ASSERT_TRUE(torch.ok()) << torch.status();
  ASSERT_TRUE(torch->has_value());
  EXPECT_EQ((**torch)["spec"]["mlPolicy"].contains("torch"), true);
  // In a subdirectory (kubectl apply -R reads them too).
  auto tune =
      FindRuntimeInDirectory(Runtimes(), "ClusterTrainingRuntime", "", "torchtune-llama3.2-1b");
  ASSERT_TRUE(tune.ok()) << tune.status();
  EXPECT_TRUE(tune->has_value());
  // Another kind or name: none.
  auto other =
      FindRuntimeInDirectory(Runtimes(), "TrainingRuntime", "default", "torch-distributed");
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->has_value());
  auto missing = FindRuntimeInDirectory(Runtimes(), "ClusterTrainingRuntime", "", "nope");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
}

TEST(RuntimeDirectoryTest, ADirectoryThatIsNotThereIsNotFound) {
  EXPECT_EQ(FindRuntimeInDirectory("/nonexistent/coach", "ClusterTrainingRuntime", "", "x")
                .status()
                .code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace coach::trainer
