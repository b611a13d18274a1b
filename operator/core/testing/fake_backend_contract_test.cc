// The Backend contract (operator/backend/testing/backend_contract.h) on FakeBackend, so that
// the controller's and server's tests stand on a fake that behaves as the real backends do.

#include <memory>

#include "gtest/gtest.h"
#include "operator/backend/testing/backend_contract.h"
#include "operator/core/testing/fake_backend.h"

namespace coach::core::testing {
namespace {

class FakeContractTest : public backend::testing::BackendContractTest {
 protected:
  std::unique_ptr<backend::Backend> Init() override {
    auto backend = std::make_unique<FakeBackend>();
    absl::Status started = backend->Start();
    EXPECT_TRUE(started.ok()) << started;
    return backend;
  }
};

COACH_BACKEND_CONTRACT_TESTS(FakeContractTest)

}  // namespace
}  // namespace coach::core::testing
