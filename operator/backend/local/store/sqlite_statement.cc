#include "operator/backend/local/store/sqlite_statement.h"

#include <sqlite3.h>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace coach::backend::local {

absl::Status SqliteError(sqlite3* db, int rc, const std::string& what) {
  std::string msg = absl::StrCat(what, ": ", sqlite3_errstr(rc), " (", sqlite3_errmsg(db), ")");
  int primary = rc & 0xff;
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) return absl::UnavailableError(msg);
  return absl::InternalError(msg);
}

absl::Status SqliteExec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err != nullptr ? err : "";
    sqlite3_free(err);
    return SqliteError(db, rc, absl::StrCat("exec (", msg, ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<SqliteStatement> SqliteStatement::Prepare(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* s = nullptr;
  int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr);
  if (rc != SQLITE_OK) return SqliteError(db, rc, "prepare");
  return SqliteStatement(db, s, /*owned=*/true);
}

absl::StatusOr<SqliteStatement> SqliteStatement::Cached(sqlite3* db, Cache& cache,
                                                        const std::string& sql) {
  // Prepared once per connection: parsing and planning the SQL on every call costs about a
  // quarter of the operator's CPU.
  sqlite3_stmt*& s = cache[sql];
  if (s == nullptr) {
    int rc = sqlite3_prepare_v3(db, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr);
    if (rc != SQLITE_OK) {
      cache.erase(sql);
      return SqliteError(db, rc, "prepare");
    }
  }
  return SqliteStatement(db, s, /*owned=*/false);
}

SqliteStatement::SqliteStatement(SqliteStatement&& o) noexcept
    : db_(o.db_), s_(o.s_), owned_(o.owned_) {
  o.s_ = nullptr;
}

SqliteStatement::~SqliteStatement() {
  if (s_ == nullptr) return;
  if (owned_) {
    sqlite3_finalize(s_);
  } else {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
}

SqliteStatement& SqliteStatement::Bind(int i, const std::string& v) {
  sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}

SqliteStatement& SqliteStatement::BindBlob(int i, const std::string& v) {
  sqlite3_bind_blob(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}

SqliteStatement& SqliteStatement::Bind(int i, int64_t v) {
  sqlite3_bind_int64(s_, i, v);
  return *this;
}

SqliteStatement& SqliteStatement::BindTime(int i, absl::Time t) {
  if (t == absl::InfinitePast()) {
    sqlite3_bind_null(s_, i);
  } else {
    sqlite3_bind_int64(s_, i, absl::ToUnixMicros(t));
  }
  return *this;
}

absl::StatusOr<bool> SqliteStatement::Step() {
  int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  if ((rc & 0xff) == SQLITE_CONSTRAINT) {
    return absl::AlreadyExistsError(sqlite3_errmsg(db_));
  }
  return SqliteError(db_, rc, "step");
}

absl::Status SqliteStatement::Run() {
  ASSIGN_OR_RETURN(bool row, Step());
  (void)row;
  return absl::OkStatus();
}

int64_t SqliteStatement::Int(int c) const { return sqlite3_column_int64(s_, c); }

bool SqliteStatement::IsNull(int c) const { return sqlite3_column_type(s_, c) == SQLITE_NULL; }

std::string SqliteStatement::Text(int c) const {
  const void* p = sqlite3_column_blob(s_, c);
  int n = sqlite3_column_bytes(s_, c);
  return p == nullptr ? std::string() : std::string(static_cast<const char*>(p), n);
}

absl::Time SqliteStatement::Time(int c) const {
  return IsNull(c) ? absl::InfinitePast() : absl::FromUnixMicros(Int(c));
}

}  // namespace coach::backend::local
