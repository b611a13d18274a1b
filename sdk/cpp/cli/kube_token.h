#pragma once

// `coach --kubeconfig PATH [--context NAME]`: present the Kubernetes credentials of a
// kubeconfig's user to coach-operator (--api-auth=kubernetes), as kubectl would present them
// to the API server. Only bearer tokens travel over coach's API: the user's `token` or
// `tokenFile` (read on every run, so a rotated file is picked up). A user with only a client
// certificate or an exec plugin cannot be presented; pass --token-file with a token instead
// (`kubectl create token SA` gives one; inside a pod the projected ServiceAccount token is
// /var/run/secrets/kubernetes.io/serviceaccount/token).

#include <string>

#include "absl/status/status.h"
#include "sdk/cpp/connection.h"

namespace coach::cli {

// Sets connection->token or connection->token_file from the kubeconfig at `path`
// (`context` empty: its current-context). InvalidArgument naming --kubeconfig: unreadable
// or invalid file, no token for that user, or --token-file given as well.
absl::Status UseKubeconfigToken(const std::string& path, const std::string& context,
                                sdk::ConnectionOptions* connection);

}  // namespace coach::cli
