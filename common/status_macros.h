#pragma once

// Early-return helpers for absl::Status / absl::StatusOr, as in Google's codebases.

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define COACH_STATUS_CONCAT_INNER_(a, b) a##b
#define COACH_STATUS_CONCAT_(a, b) COACH_STATUS_CONCAT_INNER_(a, b)

// Returns from the enclosing function when `expr` (an absl::Status) is not OK.
#define RETURN_IF_ERROR(expr)                      \
  do {                                             \
    ::absl::Status coach_status_ = (expr);         \
    if (!coach_status_.ok()) return coach_status_; \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, F());` assigns the value of an absl::StatusOr or
// returns its error from the enclosing function.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(COACH_STATUS_CONCAT_(coach_statusor_, __LINE__), lhs, expr)

#define ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                           \
  if (!statusor.ok()) return statusor.status();     \
  lhs = std::move(statusor).value()
