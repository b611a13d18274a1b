#include "e2e/common/sdk_client.h"

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/status/statusor.h"

namespace coach::e2e {

std::unique_ptr<sdk::TrainingClient> NewTrainingClient(const std::string& server,
                                                       const std::string& token,
                                                       absl::Duration call_timeout) {
  sdk::ConnectionOptions options;
  options.server = server;
  options.token = token;
  options.use_environment = false;
  options.call_timeout = call_timeout;
  absl::StatusOr<std::unique_ptr<sdk::TrainingClient>> client =
      sdk::TrainingClient::Create(options);
  if (!client.ok()) {
    std::fprintf(stderr, "TrainingClient::Create: %s\n", client.status().ToString().c_str());
    std::abort();
  }
  return std::move(*client);
}

}  // namespace coach::e2e
