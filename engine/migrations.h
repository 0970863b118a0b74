// Versioned schema migrations of the capabilities (scheduler.md 8) and their history table
// `durability_migrations`. Keeps SCH-11 (the history table exists iff it has rows) and SCH-12
// (migrate(latest) is idempotent, step 4 is all or nothing, > 2 future migrations refused unchanged).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/runtime.h"

namespace durasim {

// The history table (a string-literal macro, so that statements are assembled by the compiler).
#define DURASIM_MIGRATIONS "durability_migrations"
inline constexpr char kMigrationTable[] = DURASIM_MIGRATIONS;
// The most unknown (future) migrations of one capability that migrate reverts (scheduler.md 8, step 3).
inline constexpr std::size_t kMaxFutureMigrations = 2;

// Where migrate moves a capability's schema: the last migration, nothing, or a named migration.
class MigrationTarget {
 public:
  enum class Kind { latest, none, named };
  static MigrationTarget latest() { return MigrationTarget(Kind::latest, {}); }
  static MigrationTarget none() { return MigrationTarget(Kind::none, {}); }
  static MigrationTarget named(std::string n) { return MigrationTarget(Kind::named, std::move(n)); }
  Kind kind() const { return kind_; }
  const std::string& name() const { return name_; }  // empty unless kind() == named

 private:
  MigrationTarget(Kind kind, std::string name) : kind_(kind), name_(std::move(name)) {}
  Kind kind_;
  std::string name_;
};

// `up` and `down` are SQL scripts: one or more statements separated by semicolons (see
// splitSqlStatements). `down` is stored with the history row when the migration is applied.
struct Migration {
  std::string name, up, down;
};

struct MigrationResult {
  std::vector<std::string> applied;     // in list order
  std::vector<std::string> rolledBack;  // future migrations reverted, then reverted ones, newest first
};

// scheduler.md 8, steps 1-6; synchronous, each step's transaction is a transactionSync.
// Throws MigrationError("Unknown durability migration target") before touching storage, and
// MigrationError("Durability history has <n> unknown migrations for <capability>; refusing to revert
// more than 2") with no change. A script or storage error propagates; step 4 then left nothing behind
// (nor does the history table this call created: it is dropped again when empty). applied_at is the
// simulated time read by SQL (julianday('now'), served by the runtime's clock). Never touches the alarm.
MigrationResult migrate(ObjectStorage& storage, const std::string& capability, const std::vector<Migration>& list,
                        MigrationTarget target);

// The statements of an SQL script, in order, each without its terminating semicolon; fragments that
// hold only whitespace and comments are left out. A semicolon ends a statement unless it is inside a
// quoted string or identifier ('...', "...", `...`, [...]), a comment (-- or /* */), or the body of a
// CREATE TRIGGER (which ends at the `END` that follows a body statement's semicolon), as sqlite3_complete
// decides.
std::vector<std::string> splitSqlStatements(std::string_view script);

}  // namespace durasim
