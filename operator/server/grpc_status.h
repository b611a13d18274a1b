#pragma once

// absl::Status <-> grpc::Status at the edge: the codes are numerically the same
// (both follow google.rpc.Code), the message is kept.

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace coach::server {

grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace coach::server
