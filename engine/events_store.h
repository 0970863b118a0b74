// The event bus's store port (events.md 3): a key-value space with insert-if-absent and
// compare-and-swap on the serialized value, and a log space of namespaces whose records carry a
// store-wide sequence number that is never reused; `atomically` groups operations into one unit.
// Two adapters: SqliteWorkStore on the object's storage (work_kv, work_log; events.md 3.5) and
// InMemoryWorkStore over ordered maps (events.md 3.6). Operations never suspend. Keeps EVT-39 (CAS
// contract) and EVT-40 (list contract: whole-namespace equality, ascending seq, never reused).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/runtime.h"

namespace durasim::events {

inline constexpr int64_t kPageSize = 50;  // every list call of the bus (events.md 1)

struct LogRecord {
  int64_t seq = 0;
  std::string id;
  nlohmann::json payload;
  int64_t ts = 0;
};
struct LogPage {
  std::vector<LogRecord> items;
  bool more = false;  // a further record exists after the last one returned
};
struct AppendResult {
  std::string id;
  int64_t seq = 0;
  bool inserted = false;
};

// Monotone counters, read by benchmarks, tests and EVT-17.
struct StoreStats {
  int64_t lists = 0;    // list
  int64_t gets = 0;     // get + getRecord
  int64_t counts = 0;   // count
  int64_t writes = 0;   // put, putIfAbsent, compareAndSwap, erase, append, eraseRecord
  int64_t atomics = 0;  // atomically blocks run to completion (committed or rolled back)
};

// Synchronous operations; inside `atomically` they form one unit. Values are compared and stored in
// their serialized form (conventions.h serialize); an unserializable value throws TypeError and
// writes nothing.
class WorkTxn {
 public:
  virtual ~WorkTxn() = default;
  // Key-value space. Any stored value counts as present, false, 0 and null included.
  virtual std::optional<nlohmann::json> get(std::string_view key) = 0;
  virtual void put(std::string_view key, const nlohmann::json& value) = 0;
  // Writes iff absent; true only to the call that created the key.
  virtual bool putIfAbsent(std::string_view key, const nlohmann::json& value) = 0;
  // Writes iff present and serialize(stored) == serialize(expected); false, nothing written, otherwise.
  virtual bool compareAndSwap(std::string_view key, const nlohmann::json& expected, const nlohmann::json& value) = 0;
  virtual bool erase(std::string_view key) = 0;
  // Log space. append is idempotent by (ns, id): the first payload and ts win, the existing seq is
  // returned with inserted = false. A new record gets ts = clock.now() and the next store-wide seq.
  virtual AppendResult append(std::string_view ns, std::string_view id, const nlohmann::json& payload) = 0;
  virtual std::optional<LogRecord> getRecord(std::string_view ns, std::string_view id) = 0;
  // Records of exactly `ns` with seq > after (0 = the start), ascending, at most `limit`.
  // (Under events.order_by_timestamp on the SQLite adapter: ordered by (ts, id), `after` a row offset.)
  virtual LogPage list(std::string_view ns, int64_t after, int64_t limit) = 0;
  virtual int64_t count(std::string_view ns, int64_t limit) = 0;  // min(records in ns, limit)
  virtual bool eraseRecord(std::string_view ns, std::string_view id) = 0;
};

// Each call made outside `atomically` is its own unit.
class WorkStore : public WorkTxn {
 public:
  // Runs `body` synchronously; its writes take effect together or not at all (a throw rolls them
  // back and propagates). Nests. No other task of the object runs meanwhile.
  template <class F>
  auto atomically(F&& body) -> std::invoke_result_t<F, WorkTxn&> {
    using R = std::invoke_result_t<F, WorkTxn&>;
    if constexpr (std::is_void_v<R>) {
      runAtomically([&](WorkTxn& txn) { body(txn); });
    } else {
      std::optional<R> result;
      runAtomically([&](WorkTxn& txn) { result.emplace(body(txn)); });
      return std::move(*result);
    }
  }
  // Completes when every write issued so far is durable; throws the runtime's commit error if a
  // commit failed.
  virtual Task<void> sync() = 0;
  virtual const StoreStats& stats() const = 0;

 protected:
  virtual void runAtomically(const std::function<void(WorkTxn&)>& body) = 0;
};

// The operations of the SQLite adapter over one statement runner (the object's storage, or a
// transaction of it). Counts into the adapter's stats.
class SqlWorkTxn final : public WorkTxn {
 public:
  using Exec = std::function<SqlCursor(std::string_view sql, std::vector<SqlValue> params)>;
  SqlWorkTxn(Exec exec, Clock& clock, StoreStats& stats, bool orderByTimestamp)
      : exec_(std::move(exec)), clock_(clock), stats_(stats), orderByTimestamp_(orderByTimestamp) {}

  std::optional<nlohmann::json> get(std::string_view key) override;
  void put(std::string_view key, const nlohmann::json& value) override;
  bool putIfAbsent(std::string_view key, const nlohmann::json& value) override;
  bool compareAndSwap(std::string_view key, const nlohmann::json& expected, const nlohmann::json& value) override;
  bool erase(std::string_view key) override;
  AppendResult append(std::string_view ns, std::string_view id, const nlohmann::json& payload) override;
  std::optional<LogRecord> getRecord(std::string_view ns, std::string_view id) override;
  LogPage list(std::string_view ns, int64_t after, int64_t limit) override;
  int64_t count(std::string_view ns, int64_t limit) override;
  bool eraseRecord(std::string_view ns, std::string_view id) override;

 private:
  Exec exec_;
  Clock& clock_;
  StoreStats& stats_;
  bool orderByTimestamp_;
};

// events.md 3.5: the store on the object's SQLite storage. `atomically` is transactionSync (a
// savepoint of the implicit transaction); durability comes with the object's commits (sync()).
class SqliteWorkStore final : public WorkStore {
 public:
  // Creates the tables idempotently (and, under events.order_by_timestamp, the (ns, ts, id) index);
  // the variant is read from ctx.variants here.
  explicit SqliteWorkStore(ObjectContext& ctx);
  SqliteWorkStore(ObjectStorage& storage, Clock& clock, bool orderByTimestamp);
  SqliteWorkStore(const SqliteWorkStore&) = delete;
  SqliteWorkStore& operator=(const SqliteWorkStore&) = delete;

  std::optional<nlohmann::json> get(std::string_view key) override { return ops_.get(key); }
  void put(std::string_view key, const nlohmann::json& value) override { ops_.put(key, value); }
  bool putIfAbsent(std::string_view key, const nlohmann::json& value) override { return ops_.putIfAbsent(key, value); }
  bool compareAndSwap(std::string_view key, const nlohmann::json& expected, const nlohmann::json& value) override {
    return ops_.compareAndSwap(key, expected, value);
  }
  bool erase(std::string_view key) override { return ops_.erase(key); }
  AppendResult append(std::string_view ns, std::string_view id, const nlohmann::json& payload) override {
    return ops_.append(ns, id, payload);
  }
  std::optional<LogRecord> getRecord(std::string_view ns, std::string_view id) override { return ops_.getRecord(ns, id); }
  LogPage list(std::string_view ns, int64_t after, int64_t limit) override { return ops_.list(ns, after, limit); }
  int64_t count(std::string_view ns, int64_t limit) override { return ops_.count(ns, limit); }
  bool eraseRecord(std::string_view ns, std::string_view id) override { return ops_.eraseRecord(ns, id); }

  Task<void> sync() override { return storage_.sync(); }
  const StoreStats& stats() const override { return stats_; }

  // The store's operations inside the application's own transaction `txn` (emitIn with the
  // application's writes). Valid only during that transaction's body.
  SqlWorkTxn within(StorageTxn& txn);

 protected:
  void runAtomically(const std::function<void(WorkTxn&)>& body) override;

 private:
  ObjectStorage& storage_;
  Clock& clock_;
  bool orderByTimestamp_;
  StoreStats stats_;
  SqlWorkTxn ops_;
};

// events.md 3.6: the same contract over ordered maps, for tests and the model. `atomically` runs the
// body against a copy and swaps it in on success. Time comes from `now`.
class InMemoryWorkStore final : public WorkStore {
 public:
  explicit InMemoryWorkStore(std::function<int64_t()> now) : now_(std::move(now)), current_(&state_) {}

  std::optional<nlohmann::json> get(std::string_view key) override;
  void put(std::string_view key, const nlohmann::json& value) override;
  bool putIfAbsent(std::string_view key, const nlohmann::json& value) override;
  bool compareAndSwap(std::string_view key, const nlohmann::json& expected, const nlohmann::json& value) override;
  bool erase(std::string_view key) override;
  AppendResult append(std::string_view ns, std::string_view id, const nlohmann::json& payload) override;
  std::optional<LogRecord> getRecord(std::string_view ns, std::string_view id) override;
  LogPage list(std::string_view ns, int64_t after, int64_t limit) override;
  int64_t count(std::string_view ns, int64_t limit) override;
  bool eraseRecord(std::string_view ns, std::string_view id) override;

  Task<void> sync() override { co_return; }
  const StoreStats& stats() const override { return stats_; }

  struct Record {
    std::string id, payload;  // payload serialized
    int64_t ts = 0;
    std::string ns;
  };
  struct State {
    std::map<std::string, std::string, std::less<>> kv;             // key -> serialized value
    std::map<int64_t, Record> log;                                   // seq -> record
    std::map<std::pair<std::string, std::string>, int64_t> byId;     // (ns, id) -> seq
    int64_t lastSeq = 0;                                             // never reused
  };
  const State& state() const { return *current_; }

 protected:
  void runAtomically(const std::function<void(WorkTxn&)>& body) override;

 private:
  std::function<int64_t()> now_;
  State state_;
  State* current_;
  StoreStats stats_;
};

}  // namespace durasim::events
