// The storage facade of an incarnation (runtime.md 4, 7.1): liveness and poison checks, injected
// statement and critical errors, savepoints for transactionSync with their hooks, the alarm view
// inside a running handler, and durability waits. Keeps RT-06, RT-08, RT-17, RT-18, RT-26; the
// mutants zombie_storage_write (RT-08) and statement_error_resets (RT-26) break two of them here.
#include <cctype>

#include "sim/object_internals.h"

namespace durasim::sim {
namespace {

// Whether a statement writes, judged by its first keyword (the authorizer refuses the rest).
bool is_write_statement(std::string_view sql) {
  std::size_t i = 0;
  while (i < sql.size() && std::isspace(static_cast<unsigned char>(sql[i]))) ++i;
  std::string word;
  while (i < sql.size() && std::isalpha(static_cast<unsigned char>(sql[i])))
    word += static_cast<char>(std::toupper(static_cast<unsigned char>(sql[i++])));
  return word == "INSERT" || word == "UPDATE" || word == "DELETE" || word == "REPLACE" || word == "CREATE" ||
         word == "DROP" || word == "ALTER" || word == "WITH";
}

constexpr const char* kInjectedStatementError = "SQL query failed: Network connection lost.";  // runtime.md 4.4

}  // namespace

void IncarnationStorage::check_usable() {
  // RT-08: an ended incarnation's storage calls throw -- but sim.mutant.zombie_storage_write lets a
  // zombie's through.
  if (owner_.zombie() && !owner_.poison && owner_.object().runtime().world().mutants().zombie_storage_write) return;
  if (!owner_.alive()) throw ObjectResetError("Durable Object reset because its code was updated.");
  if (owner_.poison) throw *owner_.poison;
  if (owner_.doomed_) throw ObjectResetError(owner_.doomed_->message);
}

void IncarnationStorage::critical(SqlCriticalError error) {
  owner_.object().store().rollback_open();
  open_after_commit_.clear();
  before_commit_.clear();
  after_commit_.clear();
  savepoint_depth_ = 0;
  owner_.poison = error;
  owner_.break_gate();
  owner_.doom(ResetError{EndCause::storage, "broken.outputGateBroken; " + std::string(error.what()),
                         error.code() == SqlCriticalError::Code::interrupt});
  throw error;
}

SqlCursor IncarnationStorage::execValues(std::string_view sql, std::vector<SqlValue> params) {
  const bool write = is_write_statement(sql);
  check_usable();
  open_before_statement_ = owner_.object().store().in_transaction();
  FaultInjector& faults = owner_.object().runtime().faults();
  if (faults.fires(FaultKind::storage_statement_error, owner_.site("statement"))) statement_error(SqlError(kInjectedStatementError));
  if (write) {
    SqlCriticalError::Code code = SqlCriticalError::Code::ioerr;
    if (faults.fires(FaultKind::storage_critical, owner_.site("statement"), [&] {
          RandomSource& random = owner_.object().runtime().world().random();
          code = static_cast<SqlCriticalError::Code>(random.between(random.stream("storage.critical"), 1, 3));
          return nlohmann::json{{"code", static_cast<int>(code)}};
        })) {
      static constexpr const char* kMessages[] = {"database or disk is full: SQLITE_FULL", "disk I/O error: SQLITE_IOERR",
                                                  "out of memory: SQLITE_NOMEM", "interrupted: SQLITE_INTERRUPT"};
      critical(SqlCriticalError(code, kMessages[static_cast<int>(code)]));
    }
  }
  try {
    return owner_.object().store().exec(sql, params);
  } catch (const SqlCriticalError& e) {
    critical(e);
  } catch (const SqlError& e) {
    statement_error(e);
  }
}

// RT-26: a statement error is local: the open transaction stays open and the object is not reset
// -- unless sim.mutant.statement_error_resets dooms the incarnation as for a critical error.
void IncarnationStorage::statement_error(const SqlError& error) {
  if (owner_.object().runtime().world().mutants().statement_error_resets) {
    std::string message = "broken.outputGateBroken; ";
    message += error.what();
    owner_.doom(ResetError{EndCause::storage, std::move(message)});
  }
  const bool was_open = open_before_statement_;
  owner_.object().runtime().self_checks().check("RT-26", !owner_.doomed_ && owner_.object().store().in_transaction() == was_open, [&] {
    return owner_.object().label() + ": statement error '" + error.what() + "' ended the transaction or the incarnation";
  });
  throw error;
}

void IncarnationStorage::runTransaction(const std::function<void(StorageTxn&)>& body) {
  check_usable();
  SqliteStore& store = owner_.object().store();
  store.savepoint_begin();
  ++savepoint_depth_;
  before_commit_.emplace_back();
  after_commit_.emplace_back();
  try {
    body(*this);
    // beforeCommit hooks run inside the savepoint, after the body; they may add more hooks.
    for (std::size_t i = 0; i < before_commit_.back().hooks.size(); ++i) before_commit_.back().hooks[i](*this);
  } catch (...) {
    if (owner_.poison || !owner_.alive()) throw;  // a critical error already rolled everything back
    store.savepoint_rollback();
    --savepoint_depth_;
    before_commit_.pop_back();
    after_commit_.pop_back();
    throw;
  }
  store.savepoint_release();
  --savepoint_depth_;
  before_commit_.pop_back();
  std::vector<std::function<void()>> hooks = std::move(after_commit_.back());
  after_commit_.pop_back();
  auto& target = after_commit_.empty() ? open_after_commit_ : after_commit_.back();
  for (auto& hook : hooks) target.push_back(std::move(hook));
}

void IncarnationStorage::beforeCommit(std::function<void(StorageTxn&)> hook) {
  if (before_commit_.empty()) throw TypeError("beforeCommit() is only available inside a transaction");
  before_commit_.back().hooks.push_back(std::move(hook));
}

void IncarnationStorage::beforeCommitOnce(std::string_view key, std::function<void(StorageTxn&)> hook) {
  if (before_commit_.empty()) throw TypeError("beforeCommit() is only available inside a transaction");
  if (before_commit_.back().keys.emplace(key).second) before_commit_.back().hooks.push_back(std::move(hook));
}

void IncarnationStorage::afterCommit(std::function<void()> hook) {
  if (after_commit_.empty()) throw TypeError("afterCommit() is only available inside a transaction");
  after_commit_.back().push_back(std::move(hook));
}

Task<void> IncarnationStorage::sync() {
  check_usable();
  co_await owner_.wait_durable(owner_.watermark());
}

std::optional<int64_t> IncarnationStorage::getAlarm() {
  check_usable();
  // Inside a running handler the alarm reads as none until the handler sets one (runtime.md 7.3).
  if (owner_.object().alarm_running() && !owner_.alarm_touched) return std::nullopt;
  return owner_.object().store().get_alarm();
}

void IncarnationStorage::setAlarm(int64_t scheduledTime) {
  check_usable();
  if (scheduledTime <= 0) throw TypeError("setAlarm() requires a positive time");
  if (!owner_.constructing() && !owner_.instance().hasAlarmHandler())
    throw TypeError("setAlarm() requires an alarm() handler");
  const int64_t clamped = std::max(scheduledTime, owner_.now());  // runtime.md 7.1: past times clamp to now
  owner_.object().store().set_alarm(clamped);
  owner_.alarm_touched = true;
}

void IncarnationStorage::deleteAlarm() {
  check_usable();
  owner_.object().store().delete_alarm();
  owner_.alarm_touched = true;
}

void IncarnationStorage::deleteAll() {
  check_usable();
  if (savepoint_depth_ > 0) throw TypeError("deleteAll() cannot be called inside a transaction");
  owner_.object().store().delete_all();
  if (owner_.object().runtime().options().delete_all_deletes_alarm) owner_.alarm_touched = true;
}

int64_t IncarnationStorage::databaseSize() const { return owner_.object().store().database_size(); }

}  // namespace durasim::sim
