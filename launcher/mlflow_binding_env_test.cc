#include "launcher/mlflow_binding_env.h"

#include <unistd.h>

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"
#include "integrations/mlflow/binding.h"

namespace coach::launcher {
namespace {

TEST(MlflowBindingEnvTest, TrackedReplicaGetsTheBindingFirst) {
  std::string warning;
  EnvMap env = WithMlflowBinding({{"COACH_MLFLOW_RUN_ID", "r"},
                                  {"PYTHONPATH", "/app"},
                                  {"TMPDIR", std::getenv("TEST_TMPDIR")}},
                                 &warning);
  EXPECT_EQ(warning, "");
  const std::string dir = env[mlflow::kBindingDirEnv];
  ASSERT_EQ(dir.rfind(std::string(std::getenv("TEST_TMPDIR")) + "/coach-mlflow-", 0), 0u) << dir;
  EXPECT_EQ(env["PYTHONPATH"], dir + ":/app");
  EXPECT_EQ(::access((dir + "/sitecustomize.py").c_str(), R_OK), 0);
}

TEST(MlflowBindingEnvTest, UntouchedWhenUntrackedOrAlreadyBound) {
  std::string warning;
  EnvMap untracked = {{"PYTHONPATH", "/app"}};
  EXPECT_EQ(WithMlflowBinding(untracked, &warning), untracked);
  EnvMap bound = {
      {"COACH_MLFLOW_RUN_ID", "r"}, {"COACH_MLFLOW_BINDING", "/op"}, {"PYTHONPATH", "/op"}};
  EXPECT_EQ(WithMlflowBinding(bound, &warning), bound);
  EXPECT_EQ(warning, "");
}

TEST(MlflowBindingEnvTest, UnwritableTmpLeavesTheEnvironmentAndSaysWhy) {
  std::string warning;
  EnvMap env = {{"COACH_MLFLOW_RUN_ID", "r"}, {"TMPDIR", "/proc/nonexistent"}};
  EXPECT_EQ(WithMlflowBinding(env, &warning), env);
  EXPECT_NE(warning.find("MLflow binding not set up"), std::string::npos);
}

}  // namespace
}  // namespace coach::launcher
