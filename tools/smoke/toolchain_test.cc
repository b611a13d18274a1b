// Proves the offline toolchain: generated protobuf + gRPC code, Abseil and GoogleTest link.
#include <gtest/gtest.h>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "api/v1/training_service.grpc.pb.h"

namespace {

TEST(Toolchain, ProtoAndAbslLink) {
  coach::api::v1::TrainingJob job;
  job.mutable_metadata()->set_name("smoke");
  absl::StatusOr<std::string> name = absl::StrCat(job.metadata().name(), "-0");
  ASSERT_TRUE(name.ok());
  EXPECT_EQ(*name, "smoke-0");
  EXPECT_NE(coach::api::v1::TrainingService::service_full_name(), nullptr);
}

}  // namespace
