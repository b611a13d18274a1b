#pragma once

// Flags of the server commands (remote_commands.h) and their wiring into the `coach`
// binary: main.cc calls RegisterRemoteCommands before parsing and RunRemoteCommand after.
//
// Global flags (before or after the subcommand): --server, --token-file, --tls-ca,
// --tls-cert, --tls-key, --tls-server-name; each falls back to its COACH_* variable
// (sdk/cpp/connection.h). --kubeconfig/--context present a kubeconfig user's token instead
// of --token-file (kube_token.h).

#include <CLI/CLI.hpp>
#include <optional>
#include <ostream>
#include <vector>

#include "sdk/cpp/cli/remote_commands.h"

namespace coach::cli {

struct RemoteCli {
  RemoteOptions options;
  std::string kubeconfig;  // --kubeconfig: present this kubeconfig user's token (kube_token.h)
  std::string context;     // --context: its context instead of current-context
  CLI::App* submit = nullptr;
  CLI::App* get = nullptr;
  CLI::App* list = nullptr;
  CLI::App* describe = nullptr;
  CLI::App* logs = nullptr;
  CLI::App* history = nullptr;
  CLI::App* wait = nullptr;
  CLI::App* delete_ = nullptr;
  CLI::App* suspend = nullptr;
  CLI::App* resume = nullptr;
};

// Adds the global connection flags to `app` and the server subcommands under it.
void RegisterRemoteCommands(CLI::App& app, RemoteCli* cli);

// Runs the server subcommand that was parsed, with the real client, manifest loader and
// terminal detection; nullopt when none of them was parsed.
std::optional<int> RunRemoteCommand(const RemoteCli& cli, std::ostream& out, std::ostream& err);

}  // namespace coach::cli
