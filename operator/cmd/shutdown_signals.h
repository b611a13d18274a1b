// SIGTERM and SIGINT, which end coach-operator gracefully, taken by sigwait() on the main thread
// rather than by a handler, so that shutdown runs as ordinary code.

#pragma once

#include <signal.h>

namespace coach::cmd {

// Blocks SIGTERM and SIGINT in the calling thread, and so in every thread it starts afterwards:
// call it before any thread starts. Returns the set AwaitShutdownSignal waits for.
sigset_t BlockShutdownSignals();

// Waits for one of `signals` and logs it.
void AwaitShutdownSignal(const sigset_t& signals);

}  // namespace coach::cmd
