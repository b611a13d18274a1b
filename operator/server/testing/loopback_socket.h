#pragma once

// A raw TCP client on loopback for the HTTP servers' tests: bytes sent exactly as written
// (trickled, pipelined, malformed), and everything the server answers until it closes.

#include <string>

#include "absl/time/time.h"

namespace coach::server::testing {

// A connected socket to 127.0.0.1:`port`, or -1.
int ConnectLoopback(int port);

// All of `bytes`, without SIGPIPE; false when the socket took less.
bool SendAll(int fd, const std::string& bytes);

// Everything received until the server closes the connection or `timeout` passes; `closed`
// says which.
std::string ReadUntilClosed(int fd, absl::Duration timeout, bool* closed);

}  // namespace coach::server::testing
