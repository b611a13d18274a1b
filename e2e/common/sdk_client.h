#pragma once

// An SDK client of a coach-operator that an end-to-end test started: it talks to that server
// only, with the token the test gives it, and takes nothing from the test's environment
// (COACH_SERVER, COACH_TOKEN_FILE, ...).

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "sdk/cpp/training_client.h"

namespace coach::e2e {

// A client of `server` ("127.0.0.1:<port>") presenting `token` ("" for none). Aborts when it
// cannot be made: only a bad option does that, which is a bug of the test.
std::unique_ptr<sdk::TrainingClient> NewTrainingClient(
    const std::string& server, const std::string& token,
    absl::Duration call_timeout = absl::Seconds(30));

}  // namespace coach::e2e
