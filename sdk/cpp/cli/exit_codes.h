#pragma once

// Exit codes of the `coach` command. Scripts rely on these; docs/cli.md lists them.

namespace coach::cli {

inline constexpr int kExitOk = 0;
// Bad input: an invalid manifest or request, or an unreadable file.
inline constexpr int kExitInvalid = 1;
// Wrong command-line usage (unknown flag, missing argument).
inline constexpr int kExitUsage = 2;
// The job (or namespace) does not exist.
inline constexpr int kExitNotFound = 3;
// `wait` / `submit --wait`: the job Failed (and Failed was not the condition waited for).
inline constexpr int kExitJobFailed = 4;
// `wait` / `submit --wait`: the timeout passed first; any call whose deadline passed.
inline constexpr int kExitTimeout = 5;
// coach-operator cannot be reached or is unavailable (safe to retry).
inline constexpr int kExitUnavailable = 6;
// The token is missing or wrong (unauthenticated) or not allowed (permission denied).
inline constexpr int kExitUnauthorized = 7;
// Any other server-side error (internal, unimplemented, ...).
inline constexpr int kExitServerError = 8;

}  // namespace coach::cli
