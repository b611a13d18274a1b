#pragma once

// The one place where gRPC status codes become absl::Status codes (the SDK's edge).

#include <grpcpp/support/status.h>

#include <string>

#include "absl/status/status.h"

namespace coach::sdk {

// Same code (gRPC and absl share google.rpc.Code's numbering; unknown values become
// UNKNOWN), message prefixed with `what` ("GetJob default/mnist: ..."). For UNAVAILABLE
// the prefix also names `server`, so "cannot reach" errors say where.
absl::Status FromGrpcStatus(const grpc::Status& status, const std::string& what,
                            const std::string& server = "");

}  // namespace coach::sdk
