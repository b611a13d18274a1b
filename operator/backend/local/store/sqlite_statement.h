#pragma once

// One prepared sqlite statement with bind, step and column helpers, and the mapping of
// sqlite's result codes to absl::Status that every caller of sqlite here shares.
//
// A statement is either owned (Prepare: finalized when the object goes) or borrowed from a
// connection's cache (Cached: reset and its bindings cleared when the object goes, kept for
// the next use). Not thread-safe: a statement is used under the lock of its connection
// (SqliteDatabase), and no two live objects borrow the same cached statement.

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

struct sqlite3;
struct sqlite3_stmt;

namespace coach::backend::local {

// The status of sqlite result code `rc` for `what` (with sqlite's message): Unavailable for
// SQLITE_BUSY and SQLITE_LOCKED (another connection held the database beyond the busy
// timeout; worth a retry), Internal for any other.
absl::Status SqliteError(sqlite3* db, int rc, const std::string& what);

// Runs `sql` (one or more statements; rows are discarded). Errors: as SqliteError.
absl::Status SqliteExec(sqlite3* db, const std::string& sql);

class SqliteStatement {
 public:
  // Prepared statements of one connection by their SQL.
  using Cache = std::map<std::string, sqlite3_stmt*>;

  // A one-off statement. Errors: as SqliteError (a syntax error is Internal).
  static absl::StatusOr<SqliteStatement> Prepare(sqlite3* db, const std::string& sql);
  // The cache's statement for `sql`, prepared on first use and kept until the connection
  // finalizes the cache. Errors: as Prepare (nothing is cached then).
  static absl::StatusOr<SqliteStatement> Cached(sqlite3* db, Cache& cache, const std::string& sql);

  SqliteStatement(SqliteStatement&& o) noexcept;
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;
  ~SqliteStatement();

  // Parameters count from 1. Text and blobs are copied.
  SqliteStatement& Bind(int i, const std::string& v);
  SqliteStatement& BindBlob(int i, const std::string& v);
  SqliteStatement& Bind(int i, int64_t v);
  // InfinitePast binds NULL; any other time its Unix microseconds.
  SqliteStatement& BindTime(int i, absl::Time t);

  // True when a row is available, false when the statement is done. Errors: AlreadyExists
  // (a constraint failed: a unique key taken, a foreign key missing, a trigger's RAISE),
  // otherwise as SqliteError.
  absl::StatusOr<bool> Step();
  // Step, for a statement whose rows (if any) do not matter.
  absl::Status Run();

  // Columns of the current row, counting from 0.
  int64_t Int(int c) const;
  bool IsNull(int c) const;
  // Text or blob, byte for byte ("" for NULL).
  std::string Text(int c) const;
  // NULL reads as InfinitePast (BindTime's inverse).
  absl::Time Time(int c) const;

 private:
  SqliteStatement(sqlite3* db, sqlite3_stmt* s, bool owned) : db_(db), s_(s), owned_(owned) {}

  sqlite3* db_;
  sqlite3_stmt* s_;
  bool owned_;
};

}  // namespace coach::backend::local
