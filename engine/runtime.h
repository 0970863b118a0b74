// The port: everything capability code may ask of the object it runs in (DESIGN.md, "The port and
// coroutines"; runtime.md 2-10). The engine is written against these interfaces only; the simulator
// implements them in sim/, and a wall-clock implementation could implement them without touching
// engine/. Like LevelDB's Env, each member says what it does, how it fails, and what it promises
// about atomicity and suspension.
//
// Suspension: only Task-returning members suspend (time, RPC, cold store, durability waits). SQL
// never suspends, so no other event of the object runs during a statement or a transactionSync body.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/runtime_errors.h"
#include "engine/task.h"

namespace durasim {

// ---------------------------------------------------------------------------------------------
// Fields of probes and trace events

// Builds a JSON object field by field: a value nested in an event's fields (routing's load
// snapshots). nlohmann::json's initializer-list syntax ({{"key", value}, ...}) first builds a
// two-element array per field and then moves it into the object: about twice the time of inserting
// the fields directly, which is what this does. The object is the same either way.
class JsonFields {
 public:
  JsonFields() : json_(nlohmann::json::value_t::object) {}

  // Sets `key` to `value` (a later call with the same key replaces the earlier value).
  template <class Value>
  JsonFields& add(std::string_view key, Value&& value) & {
    object().insert_or_assign(std::string(key), nlohmann::json(std::forward<Value>(value)));
    return *this;
  }
  template <class Value>
  JsonFields&& add(std::string_view key, Value&& value) && {
    return std::move(add(key, std::forward<Value>(value)));
  }

  operator nlohmann::json() && { return std::move(json_); }

 private:
  nlohmann::json::object_t& object() { return json_.get_ref<nlohmann::json::object_t&>(); }

  nlohmann::json json_;
};

// The fields of one probe or trace event: a flat list of (key, value) pairs, the object an event
// is in a trace. Events are built, observed and dropped by the hundreds of thousands per run, most
// with a handful of scalar fields; a nlohmann::json object costs a tree node per field (and a
// two-element array per field when built from an initializer list) and a heap stack when dropped.
// This holds the fields in one vector, in the order they were set; readers look keys up by name.
// Its JSON object (to_json) is what the trace writes and hashes, so it says the same as an object
// built from the same initializer list: keys unique, the first of a repeated key in an initializer
// list kept (as nlohmann::json keeps it), a later operator[] or add of a key replacing its value.
class EventFields {
 public:
  struct Field {
    Field(std::string_view k, nlohmann::json v) : key(k), value(std::move(v)) {}
    std::string key;
    // Mutable so that the constructor can move it out of its initializer list, whose elements are
    // const temporaries that die with the call (nlohmann::json's json_ref does the same).
    mutable nlohmann::json value;
  };
  using const_iterator = std::vector<Field>::const_iterator;

  EventFields() = default;
  EventFields(std::initializer_list<Field> fields);
  // The members of a JSON object (null: none), for callers that built one; anything else is
  // refused with nlohmann::json's type_error, as setting a field of it would be.
  EventFields(const nlohmann::json& object);  // NOLINT(google-explicit-constructor): a probe's fields
  EventFields(nlohmann::json&& object);       // NOLINT(google-explicit-constructor)

  // The value of `key`, added as null when absent.
  nlohmann::json& operator[](std::string_view key);
  template <class Value>
  EventFields& add(std::string_view key, Value&& value) & {
    (*this)[key] = nlohmann::json(std::forward<Value>(value));
    return *this;
  }
  template <class Value>
  EventFields&& add(std::string_view key, Value&& value) && {
    return std::move(add(key, std::forward<Value>(value)));
  }
  // Sets each of `fields`, as add() does (of a key repeated in `fields`, the last value stays).
  void update(std::initializer_list<Field> fields) {
    for (const Field& field : fields) (*this)[field.key] = std::move(field.value);
  }
  // Sets `key` to a value its producer keeps and shares with every event that carries it (the
  // routing client's map of observed loads), instead of a copy built and dropped per event. Readers
  // see it as any other value; a write to the field (operator[], add) first takes the field's own
  // copy, so the shared value is never written through.
  EventFields& share(std::string_view key, std::shared_ptr<const nlohmann::json> value) &;
  EventFields&& share(std::string_view key, std::shared_ptr<const nlohmann::json> value) && {
    return std::move(share(key, std::move(value)));
  }
  // The value of `field`, one of these fields (as iterated): where share() put it, or its own.
  const nlohmann::json& read(const Field& field) const {
    if (shared_.empty()) [[likely]] return field.value;
    return read_shared(field);
  }

  // Reading, with the names and failures of nlohmann::json's object interface: at() throws its
  // out_of_range error (id 403) for a missing key; value() gives `fallback` for a missing key and
  // throws its type_error for a value of another type.
  const nlohmann::json* find(std::string_view key) const;
  bool contains(std::string_view key) const { return find(key) != nullptr; }
  const nlohmann::json& at(std::string_view key) const;
  template <class T>
  T value(std::string_view key, const T& fallback) const {
    const nlohmann::json* found = find(key);
    return found ? found->get<T>() : fallback;
  }
  std::string value(std::string_view key, const char* fallback) const { return value<std::string>(key, fallback); }

  std::size_t size() const { return fields_.size(); }
  bool empty() const { return fields_.empty(); }
  // The fields in the order they were set; read a field's value with read(field) (a shared one's
  // own `value` is null).
  const_iterator begin() const { return fields_.begin(); }
  const_iterator end() const { return fields_.end(); }

  // The JSON object of the fields, and its compact text (keys sorted, as nlohmann::json dumps).
  nlohmann::json to_json() const;
  std::string dump() const { return to_json().dump(); }

 private:
  void take(nlohmann::json&& object);
  nlohmann::json* find_mutable(std::string_view key);
  const nlohmann::json& read_shared(const Field& field) const;

  // A field whose value share() set: its position in fields_ (fields are never removed), and the
  // value. Most events have none, and pay one empty vector for the possibility.
  struct Shared {
    std::size_t index;
    std::shared_ptr<const nlohmann::json> value;
  };
  std::vector<Field> fields_;
  std::vector<Shared> shared_;
};

// An optional as JSON: its value, or null.
template <class T>
nlohmann::json json_or_null(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json();
}

// ---------------------------------------------------------------------------------------------
// Time and randomness

// The object's view of time: int64 milliseconds, never decreasing within an incarnation.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t now() const = 0;
  // Suspends for `ms` >= 0 milliseconds; sleepFor(0) is a pure yield that lets other events of the
  // object in. A negative delay throws std::invalid_argument. The timer dies with the incarnation.
  virtual Task<void> sleepFor(int64_t ms) = 0;
  // Suspends until `t`; a time at or before now() is a pure yield.
  virtual Task<void> sleepUntil(int64_t t) = 0;
};

// Deterministic under the simulator (seeded, recorded).
class Random {
 public:
  virtual ~Random() = default;
  virtual double random() = 0;     // uniform in [0, 1): (next() >> 11) * 2^-53
  virtual std::string uuid() = 0;  // RFC 4122 version 4, lower case
};

// Structured log lines; logging never changes durable state.
class Logger {
 public:
  virtual ~Logger() = default;
  virtual void log(std::string_view level, std::string_view event, const nlohmann::json& fields) = 0;
  void error(std::string_view event, const nlohmann::json& fields = nlohmann::json::object()) { log("error", event, fields); }
  void warn(std::string_view event, const nlohmann::json& fields = nlohmann::json::object()) { log("warn", event, fields); }
  void info(std::string_view event, const nlohmann::json& fields = nlohmann::json::object()) { log("info", event, fields); }
};

// ---------------------------------------------------------------------------------------------
// SQL values, rows and cursors

struct SqlBlob {
  std::string bytes;
  friend bool operator==(const SqlBlob&, const SqlBlob&) = default;
};
using SqlNull = std::monostate;
// NULL, INTEGER (exact int64), REAL, TEXT, BLOB.
using SqlValue = std::variant<SqlNull, int64_t, double, std::string, SqlBlob>;

inline SqlValue toSqlValue(std::nullptr_t) { return SqlNull{}; }
inline SqlValue toSqlValue(SqlNull) { return SqlNull{}; }
inline SqlValue toSqlValue(bool v) { return static_cast<int64_t>(v); }
template <class I>
  requires(std::is_integral_v<I> && !std::is_same_v<I, bool>)
SqlValue toSqlValue(I v) {
  return static_cast<int64_t>(v);
}
inline SqlValue toSqlValue(double v) { return v; }
inline SqlValue toSqlValue(std::string v) { return SqlValue(std::move(v)); }
inline SqlValue toSqlValue(std::string_view v) { return SqlValue(std::string(v)); }
inline SqlValue toSqlValue(const char* v) { return SqlValue(std::string(v)); }
inline SqlValue toSqlValue(SqlBlob v) { return SqlValue(std::move(v)); }
inline SqlValue toSqlValue(SqlValue v) { return v; }
template <class T>
SqlValue toSqlValue(const std::optional<T>& v) {
  return v ? toSqlValue(*v) : SqlValue(SqlNull{});
}

// One result row; columns by index or by name. Accessors throw SqlError on a missing column or a
// value of another type (NULL is only read through isNull / optional accessors).
class SqlRow {
 public:
  SqlRow(std::shared_ptr<const std::vector<std::string>> columns, std::vector<SqlValue> values)
      : columns_(std::move(columns)), values_(std::move(values)) {}

  std::size_t size() const { return values_.size(); }
  const SqlValue& operator[](std::size_t i) const { return values_.at(i); }
  const SqlValue& at(std::string_view column) const;
  bool isNull(std::string_view column) const { return std::holds_alternative<SqlNull>(at(column)); }
  int64_t int64(std::string_view column) const;
  double real(std::string_view column) const;  // REAL, or INTEGER converted
  const std::string& text(std::string_view column) const;
  const std::string& blob(std::string_view column) const;
  std::optional<int64_t> optInt64(std::string_view column) const;
  std::optional<std::string> optText(std::string_view column) const;
  const std::vector<std::string>& columnNames() const { return *columns_; }
  const std::vector<SqlValue>& values() const { return values_; }

 private:
  std::shared_ptr<const std::vector<std::string>> columns_;
  std::vector<SqlValue> values_;
};

// The rows of one statement, materialised when exec returned (its writes had already taken effect).
// Each row is handed out once: next, one and toVector move the rows they return out of the cursor.
class SqlCursor {
 public:
  SqlCursor() = default;
  // `columns`: the names, shared with the rows and the statement that produced them (may be null:
  // none).
  SqlCursor(std::shared_ptr<const std::vector<std::string>> columns, std::vector<SqlRow> rows, int64_t rowsRead, int64_t rowsWritten)
      : columns_(std::move(columns)), rows_(std::move(rows)), rowsRead_(rowsRead), rowsWritten_(rowsWritten) {}

  std::optional<SqlRow> next() {
    if (position_ >= rows_.size()) return std::nullopt;
    return std::move(rows_[position_++]);
  }
  std::vector<SqlRow> toVector() {
    if (position_ == 0) {
      position_ = rows_.size();
      return std::move(rows_);
    }
    std::vector<SqlRow> rest(std::make_move_iterator(rows_.begin() + static_cast<std::ptrdiff_t>(position_)),
                             std::make_move_iterator(rows_.end()));
    position_ = rows_.size();
    return rest;
  }
  SqlRow one();  // throws SqlError unless exactly one row remains
  const std::vector<std::string>& columnNames() const;
  int64_t rowsRead() const { return rowsRead_; }
  int64_t rowsWritten() const { return rowsWritten_; }

 private:
  std::shared_ptr<const std::vector<std::string>> columns_;
  std::vector<SqlRow> rows_;
  std::size_t position_ = 0;
  int64_t rowsRead_ = 0, rowsWritten_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Storage (runtime.md 4)

// The handle a transaction body writes through. Valid only during the body.
class StorageTxn {
 public:
  virtual ~StorageTxn() = default;
  // One statement, with `?` parameters bound in order. Throws SqlError (statement rolled back, the
  // transaction continues) or SqlCriticalError (everything rolled back; storage poisoned).
  template <class... P>
  SqlCursor exec(std::string_view sql, P&&... params) {
    return execValues(sql, {toSqlValue(std::forward<P>(params))...});
  }
  virtual SqlCursor execValues(std::string_view sql, std::vector<SqlValue> params) = 0;
  virtual std::optional<int64_t> getAlarm() = 0;
  virtual void setAlarm(int64_t scheduledTime) = 0;  // rolls back with the body
  virtual void deleteAlarm() = 0;
  // Runs inside the transaction after the body, before it is released; may write.
  virtual void beforeCommit(std::function<void(StorageTxn&)> hook) = 0;
  // beforeCommit, unless a hook with the same `key` is already registered on this transaction (a
  // request made once per transaction, whoever asks first).
  virtual void beforeCommitOnce(std::string_view key, std::function<void(StorageTxn&)> hook) = 0;
  // Runs once the commit holding this transaction is confirmed; dropped if it never is.
  virtual void afterCommit(std::function<void()> hook) = 0;
};

// The object's SQLite store and its single alarm. Writes join the implicit transaction of the
// running segment, which commits locally when the segment ends and is durable once confirmed.
class ObjectStorage {
 public:
  virtual ~ObjectStorage() = default;

  // One statement; see StorageTxn::exec.
  template <class... P>
  SqlCursor exec(std::string_view sql, P&&... params) {
    return execValues(sql, {toSqlValue(std::forward<P>(params))...});
  }
  virtual SqlCursor execValues(std::string_view sql, std::vector<SqlValue> params) = 0;

  // Runs `body` synchronously as a savepoint inside the implicit transaction; if it throws, its
  // writes (alarm changes included) roll back and the exception propagates; the object is not
  // reset. Nests. Durability comes with the implicit commit.
  template <class F>
  auto transactionSync(F&& body) -> std::invoke_result_t<F&, StorageTxn&> {
    using R = std::invoke_result_t<F&, StorageTxn&>;
    if constexpr (std::is_void_v<R>) {
      runTransaction([&](StorageTxn& txn) { body(txn); });
    } else {
      std::optional<R> result;
      runTransaction([&](StorageTxn& txn) { result.emplace(body(txn)); });
      return std::move(*result);
    }
  }

  // transactionSync(body), then suspends until the commit holding it is confirmed. A commit failure
  // throws StorageCommitError to the awaiting coroutine.
  template <class F>
  auto transaction(F body) -> Task<std::invoke_result_t<F&, StorageTxn&>> {
    using R = std::invoke_result_t<F&, StorageTxn&>;
    if constexpr (std::is_void_v<R>) {
      transactionSync(body);
      co_await sync();
    } else {
      R result = transactionSync(body);
      co_await sync();
      co_return result;
    }
  }

  // Completes when every write issued before the call (the open implicit transaction included) is
  // confirmed; throws StorageCommitError if one of those commits failed.
  virtual Task<void> sync() = 0;

  virtual std::optional<int64_t> getAlarm() = 0;
  // Throws TypeError for t <= 0, or when the object has no alarm handler (outside its constructor).
  // A past time is clamped to now.
  virtual void setAlarm(int64_t scheduledTime) = 0;
  virtual void deleteAlarm() = 0;
  // Deletes every table, row and the alarm, atomically. Throws TypeError inside transactionSync.
  virtual void deleteAll() = 0;
  virtual int64_t databaseSize() const = 0;

 protected:
  virtual void runTransaction(const std::function<void(StorageTxn&)>& body) = 0;
};

// ---------------------------------------------------------------------------------------------
// RPC (runtime.md 9)

// The host's side of a stub. Calls on one channel are delivered in call order (E-order).
class StubChannel {
 public:
  virtual ~StubChannel() = default;
  // Throws RpcError. The Task keeps the channel alive until it is destroyed, so that a call
  // outlives the Stub that made it.
  virtual Task<nlohmann::json> call(std::string method, nlohmann::json args) = 0;
  virtual bool broken() const = 0;
};

// A stub to one object. Once any call on it failed, every call in flight and every later call fails
// with that error: make a new stub.
class Stub {
 public:
  explicit Stub(std::shared_ptr<StubChannel> channel) : channel_(std::move(channel)) {}
  Task<nlohmann::json> call(std::string method, nlohmann::json args) { return channel_->call(std::move(method), std::move(args)); }
  bool broken() const { return channel_->broken(); }

 private:
  std::shared_ptr<StubChannel> channel_;
};

class ObjectNamespace {
 public:
  virtual ~ObjectNamespace() = default;
  virtual Stub get(std::string_view name) = 0;
};

// ---------------------------------------------------------------------------------------------
// Cold store (runtime.md 10)

struct ColdObject {
  std::string key, etag;
  int64_t size = 0, uploaded = 0;
  std::map<std::string, std::string> customMetadata;
};
struct ColdObjectBody : ColdObject {
  std::string body;
};
struct ColdPutOptions {
  std::optional<std::string> etagMatches;       // replace only if the current etag equals
  std::optional<std::string> etagDoesNotMatch;  // "*" = create only
  std::map<std::string, std::string> customMetadata;
};
struct ColdList {
  std::vector<ColdObject> objects;
  bool truncated = false;
  std::optional<std::string> cursor;
};

// An R2-like bucket. Calls are outbound effects of the calling object (held by its output gate).
// Failures throw ColdError; a failed precondition is not a failure: put returns nullopt.
class ColdBucket {
 public:
  virtual ~ColdBucket() = default;
  virtual Task<std::optional<ColdObject>> put(std::string key, std::string body, ColdPutOptions options = {}) = 0;
  virtual Task<std::optional<ColdObjectBody>> get(std::string key) = 0;
  virtual Task<std::optional<ColdObject>> head(std::string key) = 0;
  virtual Task<void> remove(std::vector<std::string> keys) = 0;  // at most 1,000 keys
  virtual Task<ColdList> list(std::string prefix, std::optional<std::string> cursor, int64_t limit = 1000) = 0;
};

// ---------------------------------------------------------------------------------------------
// Objects (runtime.md 3)

struct AlarmInvocationInfo {
  int64_t retryCount = 0;
  bool isRetry = false;
  int64_t scheduledTime = 0;
};

// A one-way latch between coroutines of one incarnation (a promise resolved once, in JavaScript
// terms). Waiters resume as new events of the object, never inside set(), in the order the host
// chooses; a waiter whose frame is destroyed is simply forgotten. Dies with its incarnation.
class AsyncEvent {
 public:
  virtual ~AsyncEvent() = default;
  virtual void set() = 0;  // idempotent
  virtual bool isSet() const = 0;
  // Completes with true once set() was called, or with false after `timeoutMs` (>= 0) if given and
  // set() has not been called by then. The timer is cancelled when the event is set first.
  virtual Task<bool> wait(std::optional<int64_t> timeoutMs = std::nullopt) = 0;
};

// The host's services behind ObjectContext's member functions.
class ObjectServices {
 public:
  virtual ~ObjectServices() = default;
  virtual Task<void> blockConcurrencyWhile(std::function<Task<void>()> body) = 0;
  virtual ObjectNamespace& objects(std::string_view className) = 0;
  virtual ColdBucket& bucket(std::string_view name) = 0;
  [[noreturn]] virtual void abort(std::string_view reason) = 0;
  virtual std::shared_ptr<AsyncEvent> makeEvent() = 0;
  // Instrumentation for history checks: an observation the host records with the object's identity
  // (a trace event under the simulator). Never changes behaviour; a host may drop it.
  virtual void probe(std::string_view event, EventFields fields) = 0;
};

// What capability code may use. Lives as long as its incarnation.
struct ObjectContext {
  std::pair<std::string, std::string> id;  // (className, name)
  int64_t incarnation = 0;
  ObjectStorage& storage;
  Clock& clock;
  Random& random;
  Logger& logger;
  std::function<void(Task<void>)> waitUntil;  // background work; lost with the incarnation
  std::function<bool(std::string_view site)> buggify;
  std::set<std::string> variants;  // research variant flags of the run (hazards.md); empty = none
  ObjectServices& services;

  // Until `body` completes only its own continuations run in this object; a throw or more than
  // 30,000 ms resets the incarnation.
  Task<void> blockConcurrencyWhile(std::function<Task<void>()> body) {
    return services.blockConcurrencyWhile(std::move(body));
  }
  ObjectNamespace& objects(std::string_view className) { return services.objects(className); }
  ColdBucket& bucket(std::string_view name) { return services.bucket(name); }
  std::shared_ptr<AsyncEvent> makeEvent() { return services.makeEvent(); }
  void probe(std::string_view event, EventFields fields) { services.probe(event, std::move(fields)); }
  [[noreturn]] void abort(std::string_view reason) {
    services.abort(reason);
    std::terminate();  // not reached: ObjectServices::abort never returns
  }
};

// The application's class; the runtime constructs one per incarnation, with its ObjectContext. The
// constructor runs as the incarnation's first segment and may use storage synchronously.
// call and alarm take references although they are coroutines: the runtime owns the method name,
// arguments and info in the frame that awaits the returned Task, so they outlive it.
class DurableObject {
 public:
  virtual ~DurableObject() = default;
  virtual Task<nlohmann::json> call(std::string_view method, const nlohmann::json& args) = 0;
  virtual bool hasAlarmHandler() const { return false; }
  virtual Task<void> alarm(const AlarmInvocationInfo& info) {
    (void)info;
    co_return;
  }
};

using ObjectFactory = std::function<std::unique_ptr<DurableObject>(ObjectContext&)>;

}  // namespace durasim
