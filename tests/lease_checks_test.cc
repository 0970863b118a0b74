// The LSE checker (properties/lease_checks.h) on synthetic histories: a small reference log writes
// real lease tables into in-memory SQLite stores and emits the contract's events
// (docs/log-trace-events.md); a correct history checks every LSE invariant without a violation, and
// each hazard the reference log can be switched into (an ack past a pending range, a reclaim that
// keeps the old batch id, a grant beyond maxParallelism, a poison callback before its skip commits,
// an uncovered gap, ...) is reported under its invariant. Scripted scenarios on the real
// DurabilityLog (simulated runtime) pass every check and together check every LSE ID, and the same
// real event stream altered in one place is caught.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <string>
#include <vector>

#include "engine/errors.h"
#include "engine/log.h"
#include "properties/lease_checks.h"
#include "sim/sqlite_store.h"
#include "tests/log_test_rig.h"

namespace durasim::properties {
namespace {

using nlohmann::json;
using sim::SqliteStore;

constexpr int64_t kStart = 1'000'000;
constexpr int64_t kLeaseMs = 1'000;

// Switches that make the reference log misbehave the way a hazard would.
struct Faults {
  bool ackWithoutAdvance = false;     // the settle commits without advance (H6 ack in three units)
  bool advanceIgnoresHeld = false;    // advance walks over active and pending rows
  bool reclaimKeepsId = false;        // a reclaim does not fence the old batch id
  bool ignoreParallelism = false;     // fresh grants beyond maxParallelism
  bool callbackBeforeCommit = false;  // onPoison runs before the skip commits
  bool noGapRow = false;              // trimmed offsets below a fresh lease, or a trimmed tail, stay uncovered (H5)
  bool skipWithoutAdvance = false;    // gap, truncation and poison skips do not advance (H6)
  bool settleIgnoresConsumer = false; // ack/nack do not check the consumer (H8)
  bool baseIgnoresAllocation = false; // fresh leases start at the cursor, not the allocation
  bool truncationBlocks = false;      // a trimmed range throws without being skipped (H7)
  bool poisonWithoutHandler = false;  // poison skip although onPoison is not set
  bool wrongBody = false;             // a returned lease carries a wrong record body
  bool ackAnyState = false;           // ack matches settled rows too
  bool touchOtherConsumer = false;    // an ack also rewrites another consumer's rows
  bool lateCallbackAttempt = false;   // onPoison sees the attempt before the reclaim
  bool advanceKeepsRows = false;      // advance moves the cursor but deletes no settled row
};

// A minimal DurabilityLog (log.md 7) over one SqliteStore, emitting the engine's events.
class ReferenceLog {
 public:
  ReferenceLog(SqliteStore& store, LeaseChecks& checks, std::string label, json leases)
      : store_(store), checks_(checks), label_(std::move(label)), leases_(std::move(leases)) {
    store_.exec(
        "CREATE TABLE durability_log_records (\"offset\" INTEGER PRIMARY KEY, dedup_key TEXT NOT NULL UNIQUE, payload TEXT NOT NULL,"
        " bytes INTEGER NOT NULL, appended_at INTEGER NOT NULL)");
    store_.exec("CREATE TABLE durability_log_cursors (consumer TEXT PRIMARY KEY, \"offset\" INTEGER NOT NULL, committed_at INTEGER NOT NULL)");
    store_.exec(
        "CREATE TABLE durability_log_segments (first_offset INTEGER PRIMARY KEY, last_offset INTEGER NOT NULL, locator TEXT NOT NULL,"
        " bytes INTEGER NOT NULL, flushed_at INTEGER NOT NULL)");
    store_.exec("CREATE TABLE durability_log_seq (id INTEGER PRIMARY KEY, next_offset INTEGER NOT NULL, total_bytes INTEGER NOT NULL)");
    store_.exec("INSERT INTO durability_log_seq VALUES (1, 0, 0)");
    if (!leases_.is_null()) {
      store_.exec(
          "CREATE TABLE durability_log_leases (batch_id TEXT PRIMARY KEY, consumer TEXT NOT NULL, first_offset INTEGER NOT NULL,"
          " last_offset INTEGER NOT NULL, state TEXT NOT NULL, attempt INTEGER NOT NULL, expires_at INTEGER NOT NULL, created_at INTEGER NOT NULL)");
      store_.exec("CREATE TABLE durability_log_allocations (consumer TEXT PRIMARY KEY, allocated_offset INTEGER NOT NULL)");
    }
    commit();
    confirm();
    emitOptions();
  }

  Faults faults;
  int64_t now = kStart;  // the World's time; the log's clock adds the incarnation's offset
  bool holdConfirm = false;  // commits stay unconfirmed until the next crash decides them

  void emit(const std::string& ev, json fields = json::object()) {
    fields["ev"] = ev;
    fields["object"] = label_;
    fields["incarnation"] = incarnation_;
    fields["t"] = now;
    checks_.record(fields);
  }
  void commit() {
    if (std::optional<sim::LocalCommit> c = store_.commit_local()) {
      emit("commit", {{"commit", c->number}, {"changes", "00"}, {"alarm", nullptr}});
      unconfirmed_.push_back(c->number);
    }
  }
  void confirm() {
    if (holdConfirm) return;
    for (uint64_t n : unconfirmed_) {
      store_.confirm(n);
      emit("confirm", {{"commit", n}});
    }
    unconfirmed_.clear();
  }
  // The incarnation ends keeping the first `kept` unconfirmed commits; a new one starts.
  void crash(std::size_t kept) {
    if (!unconfirmed_.empty()) emit("durability", {{"kept", kept}, {"unconfirmed", unconfirmed_.size()}});
    store_.decide(kept);
    unconfirmed_.clear();
    emit("incarnation.end", {{"reset", true}, {"cause", "crash"}});
    ++incarnation_;
    clockOffset_ = 0;
    emit("incarnation.start");
    emitOptions();
  }

  // clock.incarnation_offset: this incarnation's clock reads the World's time plus `offset`;
  // `announce` emits the fault event the runtime traces.
  void offsetClock(int64_t offset, bool announce) {
    clockOffset_ = offset;
    if (announce) emit("fault", {{"fault", "clock.incarnation_offset"}, {"point", "start"}, {"details", {{"offset", offset}}}});
  }

  // An ack whose transaction body fails after its write event: the savepoint rolls the write back.
  // `announce` emits the statement-error fault event the runtime traces.
  void ackRolledBack(const std::string& consumer, const std::string& id, bool announce) {
    store_.savepoint_begin();
    store_.exec("UPDATE durability_log_leases SET state = 'acked' WHERE batch_id = ?", {id});
    emit("log.ack.write", {{"consumer", consumer}, {"batchId", id}});
    if (announce) emit("fault", {{"fault", "storage.statement_error"}, {"point", "statement"}, {"details", json::object()}});
    store_.savepoint_rollback();
  }

  void append(int64_t count) {
    const int64_t first = next();
    json keys = json::array(), offsets = json::array();
    for (int64_t o = first; o < first + count; ++o) {
      store_.exec("INSERT INTO durability_log_records VALUES (?, ?, ?, 3, ?)", {o, key(o), payload(o), now});
      keys.push_back(key(o));
      offsets.push_back(o);
    }
    store_.exec("UPDATE durability_log_seq SET next_offset = ?", {first + count});
    emit("log.append.write", {{"keys", keys}, {"offsets", offsets}, {"new", count}, {"first", first}, {"next", first + count}, {"at", now}});
    commit();
    confirm();
  }
  void trimBelow(int64_t offset) {
    store_.exec("DELETE FROM durability_log_records WHERE \"offset\" < ?", {offset});
    emit("log.trim.delete", {{"first", 0}, {"last", offset - 1}, {"deleted", 0}});
    commit();
    confirm();
  }
  // Cold storage is configured from now on (as a new incarnation's options would say).
  void configureCold() {
    coldConfigured_ = true;
    emitOptions();
  }
  // trim with cold: [first, last] leave the hot rows for an indexed segment at `locator`.
  void flush(int64_t first, int64_t last, const std::string& locator) {
    for (const SqlRow& r : store_.exec("SELECT \"offset\" AS o, dedup_key, payload FROM durability_log_records WHERE \"offset\" BETWEEN ? AND ?",
                                       {first, last})
                               .toVector())
      cold_[r.int64("o")] = {r.text("dedup_key"), r.text("payload")};
    store_.exec("INSERT INTO durability_log_segments VALUES (?, ?, ?, 0, ?)", {first, last, locator, now});
    store_.exec("DELETE FROM durability_log_records WHERE \"offset\" BETWEEN ? AND ?", {first, last});
    commit();
    confirm();
  }
  // log.md 7.2 step 2: offset `missing` of the active lease `id` could not be read; the lease is
  // released and LogTruncatedError thrown.
  void releaseUnreadable(const std::string& consumer, const std::string& id, int64_t missing) {
    store_.exec("UPDATE durability_log_leases SET state = 'pending', expires_at = 0, attempt = attempt - 1 WHERE batch_id = ?", {id});
    emit("log.lease.release.write", {{"consumer", consumer}, {"batchId", id}, {"missing", missing}});
    commit();
    confirm();
    emit("log.lease.unreadable", {{"consumer", consumer}, {"batchId", id}, {"requested", missing}, {"oldest", std::max(missing + 1, hot())}});
  }
  void manualCommit(const std::string& consumer, int64_t offset) {
    const bool moved = !cursor(consumer) || *cursor(consumer) < offset;
    if (moved) store_.exec("INSERT OR REPLACE INTO durability_log_cursors VALUES (?, ?, ?)", {consumer, offset, now});
    emit("log.commit.write", {{"consumer", consumer}, {"offset", offset}, {"moved", moved}});
    commit();
    confirm();
  }

  // lease(c, limit): the granted batch id, or nullopt (none, truncated, poisoned).
  std::optional<std::string> lease(const std::string& consumer, int64_t limit = 3) {
    if (leases_.is_null()) {
      emit("log.lease.disabled", {{"method", "lease"}});
      return std::nullopt;
    }
    const int64_t leaseMs = leases_.at("leaseMs").get<int64_t>();
    const int64_t clock = now + clockOffset_;
    const std::optional<int64_t> curBefore = cursor(consumer), allocBefore = allocation(consumer);
    const int64_t oldest = this->oldest(), hotOffset = hot(), nextOffset = next();
    json common = {{"consumer", consumer}, {"held", held(consumer)}, {"cursor", opt(curBefore)}, {"allocation", opt(allocBefore)},
                   {"oldest", oldest}, {"hot", hotOffset}, {"next", nextOffset}};
    std::vector<SqlRow> reclaimable =
        store_.exec("SELECT * FROM durability_log_leases WHERE consumer = ? AND (state = 'pending' OR (state = 'active' AND expires_at <= ?))"
                    " ORDER BY first_offset LIMIT 1",
                    {consumer, clock})
            .toVector();
    std::string id;
    int64_t first = 0, last = 0, attempt = 1;
    bool reclaimed = false;
    if (!reclaimable.empty()) {
      const std::string previous = reclaimable[0].text("batch_id");
      id = faults.reclaimKeepsId ? previous : newId();
      first = reclaimable[0].int64("first_offset");
      last = reclaimable[0].int64("last_offset");
      attempt = reclaimable[0].int64("attempt") + 1;
      reclaimed = true;
      store_.exec("UPDATE durability_log_leases SET batch_id = ?, state = 'active', attempt = ?, expires_at = ? WHERE batch_id = ?",
                  {id, attempt, clock + leaseMs, previous});
      common.update({{"batchId", id}, {"first", first}, {"last", last}, {"attempt", attempt}, {"expiresAt", clock + leaseMs}, {"reclaimed", true},
                     {"previousBatchId", previous}, {"base", nullptr}, {"gap", nullptr}, {"gapBatchId", nullptr}});
      emit("log.lease.write", common);
    } else {
      if (!faults.ignoreParallelism && held(consumer) >= leases_.at("maxParallelism").get<int64_t>()) {
        emit("log.lease.none", {{"consumer", consumer}, {"reason", "parallelism"}});
        return std::nullopt;
      }
      const int64_t base = std::max(curBefore.value_or(0), faults.baseIgnoresAllocation ? 0 : allocBefore.value_or(0));
      first = std::max(oldest, base);
      if (first >= nextOffset) {
        if (first > base && !faults.noGapRow) coverTrimmedTail(consumer, base, first);
        emit("log.lease.none", {{"consumer", consumer}, {"reason", "empty"}});
        commit();
        confirm();
        return std::nullopt;
      }
      last = std::min(first + limit - 1, nextOffset - 1);
      if (first < hotOffset) last = std::min(last, hotOffset - 1);  // flushed offsets come from one segment
      id = newId();
      const bool gap = first > base && !faults.noGapRow;
      std::string gapId;
      if (gap) {
        gapId = newId();
        store_.exec("INSERT INTO durability_log_leases VALUES (?, ?, ?, ?, 'skipped', 0, 0, ?)", {gapId, consumer, base, first - 1, now});
      }
      store_.exec("INSERT INTO durability_log_leases VALUES (?, ?, ?, ?, 'active', 1, ?, ?)", {id, consumer, first, last, clock + leaseMs, now});
      store_.exec("INSERT OR REPLACE INTO durability_log_allocations VALUES (?, ?)", {consumer, last + 1});
      common.update({{"batchId", id}, {"first", first}, {"last", last}, {"attempt", 1}, {"expiresAt", clock + leaseMs}, {"reclaimed", false},
                     {"base", base}, {"gap", gap ? json::array({base, first - 1}) : json()}, {"gapBatchId", gap ? json(gapId) : json()}});
      emit("log.lease.write", common);
      if (gap && !faults.skipWithoutAdvance) advance(consumer);
    }
    commit();
    confirm();
    if (first < this->oldest()) return truncate(consumer, id, first, last);
    const json& maxAttempts = leases_.at("maxAttempts");
    const bool poisoned = reclaimed && !maxAttempts.is_null() && attempt > maxAttempts.get<int64_t>();
    if (poisoned && (leases_.at("onPoison").get<bool>() || faults.poisonWithoutHandler)) return poison(consumer, id, first, last, attempt);
    json offsets = json::array(), keys = json::array(), bodies = json::array();
    for (int64_t o = first; o <= last; ++o) {
      const std::optional<std::pair<std::string, std::string>> record = readRecord(o);
      if (!record) continue;
      offsets.push_back(o);
      keys.push_back(record->first);
      bodies.push_back(faults.wrongBody ? std::string("\"tampered\"") : record->second);
    }
    emit("log.lease", {{"consumer", consumer}, {"batchId", id}, {"first", first}, {"last", last}, {"attempt", attempt},
                       {"expiresAt", clock + leaseMs}, {"reclaimed", reclaimed}, {"offsets", offsets}, {"keys", keys}, {"bodies", bodies}});
    return id;
  }

  // ack/nack(c, id): whether the settle matched.
  bool settle(const std::string& consumer, const std::string& id, bool ack) {
    const std::string verb = ack ? "ack" : "nack";
    if (leases_.is_null()) {
      emit("log.lease.disabled", {{"method", verb}});
      return false;
    }
    std::string sql = ack ? "UPDATE durability_log_leases SET state = 'acked' WHERE batch_id = ?"
                          : "UPDATE durability_log_leases SET state = 'pending', expires_at = 0 WHERE batch_id = ?";
    std::vector<SqlValue> params = {id};
    if (!faults.settleIgnoresConsumer) {
      sql += " AND consumer = ?";
      params.push_back(consumer);
    }
    if (!faults.ackAnyState) sql += " AND state = 'active'";
    if (store_.exec(sql, params).rowsWritten() == 0) {
      emit("log." + verb + ".rejected", {{"consumer", consumer}, {"batchId", id}});
      return false;
    }
    emit("log." + verb + ".write", {{"consumer", consumer}, {"batchId", id}});
    if (ack && !faults.ackWithoutAdvance) advance(consumer);
    if (faults.touchOtherConsumer) store_.exec("UPDATE durability_log_leases SET attempt = attempt + 7 WHERE consumer <> ?", {consumer});
    commit();
    confirm();
    return true;
  }
  bool ack(const std::string& consumer, const std::string& id) { return settle(consumer, id, true); }
  bool nack(const std::string& consumer, const std::string& id) { return settle(consumer, id, false); }

  // Leases and acks until the consumer's cursor reaches the end of the log.
  void catchUp(const std::string& consumer) {
    for (int round = 0; round < 50 && cursor(consumer) != next(); ++round) {
      if (std::optional<std::string> id = lease(consumer)) {
        ack(consumer, *id);
      } else {
        now += kLeaseMs;
      }
    }
  }

  std::optional<int64_t> cursor(const std::string& consumer) {
    return store_.exec("SELECT max(\"offset\") AS o FROM durability_log_cursors WHERE consumer = ?", {consumer}).one().optInt64("o");
  }
  int64_t next() { return store_.exec("SELECT next_offset AS n FROM durability_log_seq").one().int64("n"); }
  int64_t hot() {
    return store_.exec("SELECT MIN(\"offset\") AS o FROM durability_log_records").one().optInt64("o").value_or(next());
  }
  int64_t oldest() {
    return std::min(hot(), store_.exec("SELECT MIN(first_offset) AS o FROM durability_log_segments").one().optInt64("o").value_or(hot()));
  }

 private:
  // Built with += : g++ 12 warns (-Wrestrict, a false positive) on "literal" + std::string.
  static std::string key(int64_t offset) {
    std::string k = "k";
    k += std::to_string(offset);
    return k;
  }
  static std::string payload(int64_t offset) {
    std::string p = "\"v";
    p += std::to_string(offset);
    p += '"';
    return p;
  }
  static json opt(const std::optional<int64_t>& v) { return v ? json(*v) : json(); }
  // The key and stored payload of `offset`: hot, or flushed to cold storage.
  std::optional<std::pair<std::string, std::string>> readRecord(int64_t offset) {
    for (const SqlRow& r : store_.exec("SELECT dedup_key, payload FROM durability_log_records WHERE \"offset\" = ?", {offset}).toVector())
      return std::make_pair(r.text("dedup_key"), r.text("payload"));
    auto flushed = cold_.find(offset);
    if (flushed == cold_.end()) return std::nullopt;
    return flushed->second;
  }
  std::string newId() {
    std::string id = "b";
    id += std::to_string(++ids_);
    return id;
  }
  void emitOptions() {
    emit("log.options", {{"maxBatchSize", 10}, {"retention", nullptr}, {"cold", coldConfigured_}, {"leases", leases_}});
  }
  std::optional<int64_t> allocation(const std::string& consumer) {
    return store_.exec("SELECT max(allocated_offset) AS a FROM durability_log_allocations WHERE consumer = ?", {consumer}).one().optInt64("a");
  }
  int64_t held(const std::string& consumer) {
    return store_
        .exec("SELECT count(*) AS n FROM durability_log_leases WHERE consumer = ? AND (state = 'pending' OR (state = 'active' AND expires_at > ?))",
              {consumer, now + clockOffset_})
        .one()
        .int64("n");
  }

  void advance(const std::string& consumer) {
    const std::optional<int64_t> cur = cursor(consumer);
    int64_t x = cur.value_or(0);
    for (const SqlRow& r :
         store_.exec("SELECT * FROM durability_log_leases WHERE consumer = ? ORDER BY first_offset", {consumer}).toVector()) {
      if (r.int64("last_offset") < x) continue;
      if (r.int64("first_offset") > x) break;
      const std::string state = r.text("state");
      if (state != "acked" && state != "skipped" && !faults.advanceIgnoresHeld) break;
      x = r.int64("last_offset") + 1;
    }
    if (x > cur.value_or(0)) store_.exec("INSERT OR REPLACE INTO durability_log_cursors VALUES (?, ?, ?)", {consumer, x, now});
    const int64_t deleted =
        faults.advanceKeepsRows
            ? 0
            : store_.exec("DELETE FROM durability_log_leases WHERE consumer = ? AND state IN ('acked', 'skipped') AND last_offset < ?", {consumer, x})
                  .rowsWritten();
    const std::optional<int64_t> to = x > cur.value_or(0) ? std::optional<int64_t>(x) : cur;
    emit("log.advance.write", {{"consumer", consumer}, {"cursor", opt(cur)}, {"to", opt(to)}, {"deleted", deleted}});
  }

  // docs/decisions.md: with every offset from `base` on trimmed, the gap row alone.
  void coverTrimmedTail(const std::string& consumer, int64_t base, int64_t from) {
    const std::string gapId = newId();
    store_.exec("INSERT INTO durability_log_leases VALUES (?, ?, ?, ?, 'skipped', 0, 0, ?)", {gapId, consumer, base, from - 1, now});
    store_.exec("INSERT OR REPLACE INTO durability_log_allocations VALUES (?, ?)", {consumer, from});
    emit("log.lease.gap.write", {{"consumer", consumer}, {"gap", {base, from - 1}}, {"gapBatchId", gapId}, {"allocation", from}});
    if (!faults.skipWithoutAdvance) advance(consumer);
  }

  // log.md 7.2.1: the trimmed prefix becomes a skipped row, then LogTruncatedError.
  std::optional<std::string> truncate(const std::string& consumer, const std::string& id, int64_t first, int64_t last) {
    const int64_t oldest = this->oldest();
    if (!faults.truncationBlocks) {
      const bool whole = last < oldest;
      json fields = {{"consumer", consumer}, {"batchId", id}, {"first", first}, {"last", last}, {"oldest", oldest}, {"whole", whole}};
      if (whole) {
        store_.exec("UPDATE durability_log_leases SET state = 'skipped' WHERE batch_id = ?", {id});
      } else {
        const std::string skipped = newId();
        store_.exec("INSERT INTO durability_log_leases VALUES (?, ?, ?, ?, 'skipped', 0, 0, ?)", {skipped, consumer, first, oldest - 1, now});
        store_.exec("UPDATE durability_log_leases SET first_offset = ?, state = 'pending', expires_at = 0, attempt = attempt - 1 WHERE batch_id = ?",
                    {oldest, id});
        fields["skippedBatchId"] = skipped;
      }
      emit("log.lease.truncate.write", fields);
      if (!faults.skipWithoutAdvance) advance(consumer);
      commit();
      confirm();
    }
    emit("log.lease.truncated", {{"consumer", consumer}, {"batchId", id}, {"requested", first}, {"oldest", oldest}});
    return std::nullopt;
  }

  // log.md 7.1 step 4: the skip commits, then onPoison runs.
  std::optional<std::string> poison(const std::string& consumer, const std::string& id, int64_t first, int64_t last, int64_t attempt) {
    const bool matched =
        store_.exec("UPDATE durability_log_leases SET state = 'skipped' WHERE batch_id = ? AND state = 'active'", {id}).rowsWritten() > 0;
    emit("log.lease.poison.write",
         {{"consumer", consumer}, {"batchId", id}, {"first", first}, {"last", last}, {"attempt", attempt}, {"matched", matched}});
    if (matched && !faults.skipWithoutAdvance) advance(consumer);
    const json callback = {{"consumer", consumer}, {"batchId", id}, {"first", first}, {"last", last},
                           {"attempt", faults.lateCallbackAttempt ? attempt - 1 : attempt}};
    if (faults.callbackBeforeCommit) emit("log.poison.callback", callback);
    commit();
    confirm();
    if (matched && !faults.callbackBeforeCommit) emit("log.poison.callback", callback);
    return std::nullopt;
  }

  SqliteStore& store_;
  LeaseChecks& checks_;
  std::string label_;
  json leases_;
  int64_t incarnation_ = 1;
  int64_t clockOffset_ = 0;
  bool coldConfigured_ = false;
  std::map<int64_t, std::pair<std::string, std::string>> cold_;  // flushed offset -> key, payload
  int ids_ = 0;
  std::vector<uint64_t> unconfirmed_;
};

json leaseOptions(int64_t maxParallelism, std::optional<int64_t> maxAttempts, bool onPoison) {
  return {{"maxParallelism", maxParallelism}, {"leaseMs", kLeaseMs}, {"maxAttempts", maxAttempts ? json(*maxAttempts) : json()}, {"onPoison", onPoison}};
}

// Stores by object label, the checker reading them, and reference logs writing them.
struct Rig {
  sim::SqlEnvironment env{[] { return uint64_t{4}; }, [] { return kStart; }};
  std::map<std::string, std::unique_ptr<SqliteStore>> stores;
  LeaseChecks checks{StoreReader{[this](const std::string& label, std::string_view sql, const std::vector<SqlValue>& params) {
                       return stores.at(label)->exec(sql, params);
                     }},
                     "Log"};
  std::map<std::string, std::unique_ptr<ReferenceLog>> logs;

  ReferenceLog& add(const std::string& name, json leases) {
    const std::string label = "Log/" + name;
    stores[label] = std::make_unique<SqliteStore>(env);
    logs[label] = std::make_unique<ReferenceLog>(*stores[label], checks, label, std::move(leases));
    return *logs[label];
  }
  ReferenceLog& log(int64_t maxParallelism = 2, std::optional<int64_t> maxAttempts = std::nullopt, bool onPoison = false) {
    return add("a", leaseOptions(maxParallelism, maxAttempts, onPoison));
  }
  const sim::InvariantTally& tally(const std::string& id) const { return checks.tallies().by_id().at(id); }
};

std::string firstExample(const sim::InvariantTally& t) { return t.examples.empty() ? std::string() : t.examples.front(); }

#define EXPECT_VIOLATES(rig, id, text)                                                               \
  do {                                                                                                \
    const sim::InvariantTally& t_ = (rig).tally(id);                                                  \
    EXPECT_GT(t_.violated, 0u) << id << " was not violated";                                          \
    EXPECT_NE(firstExample(t_).find(text), std::string::npos) << id << " message: " << firstExample(t_); \
  } while (0)

// A history touching every LSE invariant, run by a correct log: every ID is checked, none violated.
TEST(LeaseChecks, CorrectHistoryChecksEveryInvariantWithoutViolation) {
  Rig rig;
  ReferenceLog& a = rig.log(2, 2, true);
  ReferenceLog& b = rig.add("b", leaseOptions(1, 1, false));
  ReferenceLog& c = rig.add("c", nullptr);
  a.append(12);
  // Two parallel leases, a third refused, acks out of order.
  const std::string l1 = *a.lease("c1"), l2 = *a.lease("c1");
  EXPECT_FALSE(a.lease("c1"));
  EXPECT_TRUE(a.ack("c1", l2));
  EXPECT_EQ(a.cursor("c1"), std::nullopt);
  EXPECT_FALSE(a.ack("c1", l2));      // settle once
  EXPECT_FALSE(a.ack("other", l1));   // consumer-checked
  EXPECT_TRUE(a.ack("c1", l1));
  EXPECT_EQ(a.cursor("c1"), 6);
  // Expiry and reclaim: the old id is fenced.
  const std::string l3 = *a.lease("c1");
  a.now += kLeaseMs;
  const std::string l3b = *a.lease("c1");
  EXPECT_NE(l3, l3b);
  EXPECT_FALSE(a.ack("c1", l3));
  // After a nack the third attempt is poisoned: skipped, and the cursor passes it at once.
  EXPECT_TRUE(a.nack("c1", l3b));
  EXPECT_FALSE(a.lease("c1"));
  EXPECT_EQ(a.cursor("c1"), 9);
  // A second consumer: retention trimmed its first offsets (gap row), then a pending range is
  // truncated.
  const std::string d1 = *a.lease("d");
  a.trimBelow(5);
  EXPECT_TRUE(a.nack("d", d1));
  EXPECT_FALSE(a.lease("d"));  // LogTruncatedError once; the whole range is skipped
  EXPECT_EQ(a.cursor("d"), 3);
  const std::string d2 = *a.lease("d");  // a gap row covers [3, 4]
  EXPECT_EQ(a.cursor("d"), 5);
  // A crash loses an unconfirmed reclaim: it never happened, the old id is alive again.
  a.now += kLeaseMs;
  a.holdConfirm = true;
  EXPECT_TRUE(a.lease("d"));
  a.holdConfirm = false;
  a.crash(0);
  EXPECT_TRUE(a.ack("d", d2));
  b.append(3);
  a.catchUp("c1");
  a.catchUp("d");
  // Without onPoison, a range past maxAttempts keeps coming back.
  const std::string e1 = *b.lease("e");
  EXPECT_TRUE(b.nack("e", e1));
  const std::string e2 = *b.lease("e");
  EXPECT_TRUE(b.ack("e", e2));
  EXPECT_FALSE(c.lease("x"));  // disabled
  rig.checks.finish(a.now);
  for (const auto& [id, tally] : rig.checks.tallies().by_id()) {
    EXPECT_GT(tally.checked, 0u) << id << " never checked";
    EXPECT_EQ(tally.violated, 0u) << id << ": " << firstExample(tally);
  }
  EXPECT_EQ(rig.checks.tallies().by_id().size(), 16u);
}

TEST(LeaseChecks, AckPastAPendingRangeViolatesContiguousCommit) {
  Rig rig;
  ReferenceLog& a = rig.log();
  a.append(6);
  ASSERT_TRUE(a.lease("c1"));  // [0, 2] stays active
  const std::string l2 = *a.lease("c1");
  a.faults.advanceIgnoresHeld = true;
  a.ack("c1", l2);
  EXPECT_VIOLATES(rig, "LSE-05", "advance of c1 from none to 6");
  EXPECT_GT(rig.tally("LSE-05").violated, 1u);  // and the stored cursor passed the active row
}

TEST(LeaseChecks, AckWithoutAdvanceInTheSameTransactionViolatesContiguousCommit) {
  Rig rig;
  ReferenceLog& a = rig.log();
  a.append(3);
  a.faults.ackWithoutAdvance = true;
  a.ack("c1", *a.lease("c1"));
  EXPECT_VIOLATES(rig, "LSE-05", "without advancing");
}

TEST(LeaseChecks, ReclaimKeepingTheOldBatchIdViolatesFencing) {
  Rig rig;
  ReferenceLog& a = rig.log();
  a.append(3);
  const std::string l1 = *a.lease("c1");
  a.now += kLeaseMs;
  a.faults.reclaimKeepsId = true;
  a.lease("c1");
  a.ack("c1", l1);  // the holder of the expired lease settles it
  EXPECT_VIOLATES(rig, "LSE-03", "reclaim of b1 as b1");
  EXPECT_GE(rig.tally("LSE-03").violated, 2u);  // and the fenced id matched
}

TEST(LeaseChecks, FreshLeaseBeyondMaxParallelismViolatesTheBound) {
  Rig rig;
  ReferenceLog& a = rig.log(1);
  a.append(6);
  a.lease("c1");
  a.faults.ignoreParallelism = true;
  a.lease("c1");
  EXPECT_VIOLATES(rig, "LSE-06", "holding 1 (event says 1) of maxParallelism 1");
}

TEST(LeaseChecks, LeaseNoneWhileARangeIsReclaimableViolatesTheBound) {
  Rig rig;
  ReferenceLog& a = rig.log(1);
  a.append(3);
  a.lease("c1");
  a.emit("log.lease.none", {{"consumer", "c1"}, {"reason", "parallelism"}});  // nothing expired: correct
  EXPECT_EQ(rig.tally("LSE-06").violated, 0u);
  a.now += kLeaseMs;
  a.emit("log.lease.none", {{"consumer", "c1"}, {"reason", "parallelism"}});
  EXPECT_VIOLATES(rig, "LSE-06", "with a reclaimable row");
}

TEST(LeaseChecks, PoisonCallbackBeforeTheSkipCommittedViolatesDurableFirst) {
  Rig rig;
  ReferenceLog& a = rig.log(1, 1, true);
  a.append(3);
  a.nack("c1", *a.lease("c1"));
  a.faults.callbackBeforeCommit = true;
  EXPECT_FALSE(a.lease("c1"));
  EXPECT_VIOLATES(rig, "LSE-08", "before its skip was durable");
}

TEST(LeaseChecks, PoisonCallbackWithTheWrongAttemptViolatesDurableFirst) {
  Rig rig;
  ReferenceLog& a = rig.log(1, 1, true);
  a.append(3);
  a.nack("c1", *a.lease("c1"));
  a.faults.lateCallbackAttempt = true;
  a.lease("c1");
  EXPECT_VIOLATES(rig, "LSE-08", "attempt 1 after skipping attempt 2");
}

TEST(LeaseChecks, PoisonedRangeReturnedWithAHandlerViolatesDurableFirst) {
  Rig rig;
  ReferenceLog& a = rig.log(1, 1, true);
  a.append(3);
  a.nack("c1", *a.lease("c1"));
  // A log that hands the range out again at attempt 2 instead of skipping it.
  a.emit("log.lease", {{"consumer", "c1"}, {"batchId", "b9"}, {"first", 0}, {"last", 2}, {"attempt", 2}, {"expiresAt", a.now + kLeaseMs},
                       {"reclaimed", true}, {"offsets", {0, 1, 2}}, {"keys", {"k0", "k1", "k2"}}, {"bodies", {"\"v0\"", "\"v1\"", "\"v2\""}}});
  EXPECT_VIOLATES(rig, "LSE-08", "instead of skipping it as poisoned");
}

TEST(LeaseChecks, PoisonSkipWithoutAHandlerViolatesPoisonNeedsAHandler) {
  Rig rig;
  ReferenceLog& a = rig.log(1, 1, false);
  a.append(3);
  a.nack("c1", *a.lease("c1"));
  a.faults.poisonWithoutHandler = true;
  a.lease("c1");
  EXPECT_VIOLATES(rig, "LSE-07", "without an onPoison handler");
}

TEST(LeaseChecks, UncoveredTrimmedOffsetsViolateCoverage) {
  Rig rig;
  ReferenceLog& a = rig.log();
  a.append(6);
  a.trimBelow(2);
  a.faults.noGapRow = true;
  a.lease("c1");
  EXPECT_VIOLATES(rig, "LSE-12", "offset 0 below allocation 5");
  EXPECT_VIOLATES(rig, "LSE-02", "with a gap row [0, 1]");
}

TEST(LeaseChecks, SkipsThatDoNotAdvanceViolatePromptSkips) {
  Rig rig;
  ReferenceLog& a = rig.log();
  a.append(6);
  a.trimBelow(2);
  a.faults.skipWithoutAdvance = true;
  a.lease("c1");
  EXPECT_VIOLATES(rig, "LSE-14", "without advancing");
  EXPECT_GE(rig.tally("LSE-14").violated, 2u);  // and the stored cursor rests on the gap row
}

TEST(LeaseChecks, SettleByAnotherConsumerViolatesConsumerCheckedSettlement) {
  Rig rig;
  ReferenceLog& a = rig.log();
  a.append(3);
  const std::string l1 = *a.lease("c1");
  a.faults.settleIgnoresConsumer = true;
  a.ack("intruder", l1);
  EXPECT_VIOLATES(rig, "LSE-11", "ack by intruder settled b1 of c1");
  EXPECT_VIOLATES(rig, "LSE-09", "changed the lease b1 of c1");
}

TEST(LeaseChecks, AHiddenWriteToAnotherConsumerViolatesIndependence) {
  Rig rig;
  ReferenceLog& a = rig.log();
  a.append(6);
  a.lease("c1");
  const std::string d1 = *a.lease("d");
  a.faults.touchOtherConsumer = true;
  a.ack("d", d1);
  EXPECT_VIOLATES(rig, "LSE-09", "consumer c1 untouched by the commit has stored lease rows");
}

TEST(LeaseChecks, GrantFromAStaleAllocationViolatesNoOverlapAndMonotonicAllocation) {
  Rig rig;
  ReferenceLog& a = rig.log();
  a.append(6);
  a.lease("c1");
  a.faults.baseIgnoresAllocation = true;
  a.lease("c1");
  EXPECT_VIOLATES(rig, "LSE-01", "overlapping held lease b1 [0, 2]");
  EXPECT_VIOLATES(rig, "LSE-02", "expected to start at 3");
}

TEST(LeaseChecks, SecondAckOfASettledLeaseViolatesSettleOnce) {
  Rig rig;
  ReferenceLog& a = rig.log();
  a.append(6);
  a.lease("c1");
  const std::string l2 = *a.lease("c1");
  a.ack("c1", l2);  // the cursor cannot pass the first lease, so the acked row stays
  a.faults.ackAnyState = true;
  a.ack("c1", l2);
  EXPECT_VIOLATES(rig, "LSE-04", "ack of b2 matched a acked lease");
}

TEST(LeaseChecks, WorkloadSeeingAnAckSucceedWithoutACommittedSettleViolatesSettleOnce) {
  Rig rig;
  ReferenceLog& a = rig.log();
  a.append(3);
  const std::string l1 = *a.lease("c1");
  json outcome = {{"ev", "app.lease.outcome"}, {"t", a.now}, {"partition", "a"}, {"consumer", "c1"}, {"batchId", l1},
                  {"first", 0}, {"last", 2}, {"outcome", "ack"}, {"result", "ok"}};
  rig.checks.record(outcome);
  EXPECT_VIOLATES(rig, "LSE-04", "returned normally without a committed settle");
  a.ack("c1", l1);
  rig.checks.record(outcome);
  EXPECT_EQ(rig.tally("LSE-04").violated, 1u);
}

TEST(LeaseChecks, TruncationThatDoesNotSkipViolatesLoudOnce) {
  Rig rig;
  ReferenceLog& a = rig.log();
  a.append(6);
  const std::string l1 = *a.lease("c1");
  a.nack("c1", l1);
  a.trimBelow(2);
  a.faults.truncationBlocks = true;
  a.lease("c1");
  EXPECT_VIOLATES(rig, "LSE-13", "without moving the trimmed offsets into a skipped row");
}

TEST(LeaseChecks, TruncationOfAPendingRangeSkipsOnlyTheTrimmedPrefix) {
  Rig rig;
  ReferenceLog& a = rig.log();
  a.append(6);
  a.nack("c1", *a.lease("c1"));
  a.trimBelow(2);
  EXPECT_FALSE(a.lease("c1"));
  EXPECT_EQ(a.cursor("c1"), 2);
  ASSERT_TRUE(a.lease("c1"));  // the rest [2, 2] comes back without another error
  EXPECT_GT(rig.tally("LSE-13").checked, 0u);
  for (const auto& [id, tally] : rig.checks.tallies().by_id()) EXPECT_EQ(tally.violated, 0u) << id << ": " << firstExample(tally);
}

// The advance of a truncation deletes nothing: the stored rows then differ from the mirror, and
// that is blamed on the advance (LSE-05), not on the truncation that touched the consumer first.
TEST(LeaseChecks, AnAdvanceThatKeepsSettledRowsIsBlamedForTheRowsLeft) {
  Rig rig;
  ReferenceLog& a = rig.log();
  a.append(6);
  a.nack("c1", *a.lease("c1"));
  a.trimBelow(4);
  a.faults.advanceKeepsRows = true;
  EXPECT_FALSE(a.lease("c1"));  // [0, 2] wholly trimmed: skipped, the cursor moves to 3
  EXPECT_VIOLATES(rig, "LSE-05", "advance of c1 from none to 3 deleting 0; the settled run from none gives 3 deleting 1");
  EXPECT_GE(rig.tally("LSE-05").violated, 2u);  // and the skipped row the store kept
  EXPECT_EQ(rig.tally("LSE-13").violated, 0u);
}

// A lease released (and LogTruncatedError thrown) for an offset that is still hot: no loss at all.
TEST(LeaseChecks, ReleasingAHotOffsetAsUnreadableViolatesLeaseContentAndLoudOnce) {
  Rig rig;
  ReferenceLog& a = rig.log();
  a.append(3);
  const std::string l1 = *a.lease("c1");
  a.releaseUnreadable("c1", l1, 1);
  EXPECT_VIOLATES(rig, "LSE-10", "released b1 for offset 1 that is still readable (hot)");
  EXPECT_VIOLATES(rig, "LSE-13", "threw LogTruncatedError(1, 2) for b1 though offset 1 is still readable (hot)");
}

// Flushed offsets are unreadable only if the cold store may have lost their segment: a cold.vanish
// fault, or a lifecycle lag that has elapsed; never while the segment is indexed and kept.
TEST(LeaseChecks, ReleasingAnOffsetOfARetainedSegmentViolatesLeaseContentAndLoudOnce) {
  Rig rig;
  ReferenceLog& a = rig.log(1);
  a.configureCold();
  a.append(4);
  a.flush(0, 2, "seg-0");
  const std::string l1 = *a.lease("c1");  // [0, 2], rehydrated
  a.releaseUnreadable("c1", l1, 0);
  EXPECT_VIOLATES(rig, "LSE-10", "for offset 0 that is still readable (in the cold segment seg-0)");
  EXPECT_VIOLATES(rig, "LSE-13", "though offset 0 is still readable (in the cold segment seg-0)");
  // The same once the store may have lost seg-0 is no violation.
  rig.checks.record({{"ev", "fault"}, {"fault", "cold.vanish"}, {"object", "segments/seg-0"}, {"incarnation", 0}, {"point", "hour"},
                     {"details", json::object()}, {"t", a.now}});
  const std::string l2 = *a.lease("c1");
  a.releaseUnreadable("c1", l2, 0);
  EXPECT_EQ(rig.tally("LSE-10").violated, 1u);
  EXPECT_EQ(rig.tally("LSE-13").violated, 1u);
  // A segment under a lifecycle rule may be gone once the lag its put drew has elapsed.
  rig.checks.record({{"ev", "fault"}, {"fault", "cold.lifecycle_lag"}, {"object", ""}, {"incarnation", 0}, {"point", "put"},
                     {"details", {{"lag", 500}}}, {"t", a.now}});
  rig.checks.record({{"ev", "cold.call"}, {"from", "Log/a"}, {"bucket", "segments"}, {"op", "put"}, {"key", "seg-3"}, {"outcome", "ok"},
                     {"applied", true}, {"t", a.now}});
  a.flush(3, 3, "seg-3");
  a.ack("c1", *a.lease("c1"));
  const std::string l3 = *a.lease("c1");  // [3, 3]
  a.releaseUnreadable("c1", l3, 3);
  EXPECT_EQ(rig.tally("LSE-13").violated, 2u);
  a.now += 500;
  const std::string l4 = *a.lease("c1");
  a.releaseUnreadable("c1", l4, 3);
  EXPECT_EQ(rig.tally("LSE-13").violated, 2u);
  EXPECT_EQ(rig.tally("LSE-10").violated, 2u);
}

TEST(LeaseChecks, WrongRecordsInALeaseViolateLeaseContent) {
  Rig rig;
  ReferenceLog& a = rig.log();
  a.append(3);
  a.faults.wrongBody = true;
  a.lease("c1");
  EXPECT_VIOLATES(rig, "LSE-10", "with wrong records at offset 0");
}

TEST(LeaseChecks, AConsumerLeftBehindAtTheEndViolatesLiveness) {
  Rig rig;
  ReferenceLog& a = rig.log();
  a.append(6);
  a.ack("c1", *a.lease("c1"));
  a.lease("c1");
  rig.checks.finish(a.now);
  EXPECT_VIOLATES(rig, "LSE-15", "c1 at 1000000 ends with cursor 3 of next offset 6 and 1 lease rows left");
}

TEST(LeaseChecks, LeaseEventsWithoutTheOptionAndStrayTablesViolateOptIn) {
  Rig rig;
  ReferenceLog& a = rig.log();
  a.emit("log.lease.disabled", {{"method", "ack"}});
  EXPECT_VIOLATES(rig, "LSE-16", "threw the disabled-leases TypeError from ack with the leases option set");
  Rig stray;
  ReferenceLog& s = stray.log();
  s.emit("log.options", {{"maxBatchSize", 10}, {"retention", nullptr}, {"cold", false}, {"leases", nullptr}});
  s.emit("log.ack.write", {{"consumer", "c1"}, {"batchId", "b1"}});
  EXPECT_VIOLATES(stray, "LSE-16", "emitted log.ack.write without the leases option");
  Rig never;
  never.add("n", nullptr);
  never.stores.at("Log/n")->exec("CREATE TABLE durability_log_leases (x INTEGER)");
  never.stores.at("Log/n")->exec("CREATE TABLE durability_log_allocations (x INTEGER)");
  never.checks.finish(kStart);
  EXPECT_VIOLATES(never, "LSE-16", "Log/n ends with lease tables but never had the leases option");
}

// A reclaim whose commit a crash loses never happened: the old id settles in the next incarnation.
// When the crash keeps it, the old id stays fenced.
TEST(LeaseChecks, ACrashDecidesWhetherAReclaimFencedTheOldBatchId) {
  for (const std::size_t kept : {std::size_t{0}, std::size_t{1}}) {
    Rig rig;
    ReferenceLog& a = rig.log();
    a.append(3);
    const std::string l1 = *a.lease("c1");
    a.now += kLeaseMs;
    a.holdConfirm = true;
    ASSERT_TRUE(a.lease("c1"));
    a.holdConfirm = false;
    a.crash(kept);
    EXPECT_EQ(a.ack("c1", l1), kept == 0);
    EXPECT_GT(rig.tally("LSE-03").checked, 0u);
    for (const auto& [id, tally] : rig.checks.tallies().by_id()) EXPECT_EQ(tally.violated, 0u) << id << ": " << firstExample(tally);
  }
}

TEST(LeaseChecks, AMalformedEventIsAViolationOfTheCheckItFeeds) {
  Rig rig;
  ReferenceLog& a = rig.log();
  EXPECT_NO_THROW(a.emit("log.ack.write", {{"consumer", "c1"}}));
  ASSERT_EQ(rig.tally("LSE-04").violated, 1u);
  EXPECT_NE(rig.tally("LSE-04").examples.front().find("malformed 'log.ack.write' event"), std::string::npos);
}

TEST(LeaseChecks, ExpiryIsJudgedOnTheIncarnationsOwnClock) {
  for (const bool announced : {true, false}) {
    Rig rig;
    ReferenceLog& a = rig.log(1);
    a.offsetClock(400, announced);
    a.append(6);
    const std::string l1 = *a.lease("c1");
    a.now += kLeaseMs;  // the object's clock reaches expiresAt; the World's time is 400 ms short of it
    EXPECT_NE(a.lease("c1"), std::nullopt);
    EXPECT_FALSE(a.ack("c1", l1));
    if (announced) {
      for (const auto& [id, tally] : rig.checks.tallies().by_id()) EXPECT_EQ(tally.violated, 0u) << id << ": " << firstExample(tally);
    } else {
      EXPECT_VIOLATES(rig, "LSE-02", "fresh lease of c1 [0, 2]");
    }
  }
}

TEST(LeaseChecks, AWriteRolledBackByAFailedStatementIsNotHeldAgainstTheLog) {
  for (const bool announced : {true, false}) {
    Rig rig;
    ReferenceLog& a = rig.log();
    a.append(3);
    const std::string l1 = *a.lease("c1");
    a.ackRolledBack("c1", l1, announced);
    a.append(1);  // the transaction commits without the ack
    if (announced) {
      EXPECT_TRUE(a.ack("c1", l1));
      for (const auto& [id, tally] : rig.checks.tallies().by_id()) EXPECT_EQ(tally.violated, 0u) << id << ": " << firstExample(tally);
    } else {
      EXPECT_VIOLATES(rig, "LSE-05", "without advancing");
      EXPECT_VIOLATES(rig, "LSE-04", "consumer c1 has stored lease rows");
    }
  }
}

// A consumer whose unleased tail was trimmed reaches nextOffset through a gap row of its own; a log
// that leaves the tail uncovered keeps it below nextOffset for good.
TEST(LeaseChecks, ATrimmedTailIsCoveredByAGapRowAlone) {
  for (const bool covered : {true, false}) {
    Rig rig;
    ReferenceLog& a = rig.log();
    a.append(3);
    a.ack("c1", *a.lease("c1"));
    a.append(3);
    a.trimBelow(6);  // nothing readable
    a.faults.noGapRow = !covered;
    EXPECT_FALSE(a.lease("c1"));
    EXPECT_EQ(a.cursor("c1"), covered ? 6 : 3);
    rig.checks.finish(a.now);
    if (covered) {
      EXPECT_GT(rig.tally("LSE-15").checked, 0u);
      for (const auto& [id, tally] : rig.checks.tallies().by_id()) EXPECT_EQ(tally.violated, 0u) << id << ": " << firstExample(tally);
    } else {
      EXPECT_VIOLATES(rig, "LSE-15", "c1 at 1000000 ends with cursor 3 of next offset 6");
    }
  }
}

TEST(LeaseChecks, ATailGapRowThatDoesNotStartAtTheBaseViolatesAllocation) {
  Rig rig;
  ReferenceLog& a = rig.log();
  a.append(3);
  a.ack("c1", *a.lease("c1"));
  a.emit("log.lease.gap.write", {{"consumer", "c1"}, {"gap", {4, 5}}, {"gapBatchId", "g1"}, {"allocation", 6}});
  EXPECT_VIOLATES(rig, "LSE-02", "tail gap row [4, 5] of c1 with allocation 6 after 3: expected to start at 3");
}

// ---------------------------------------------------------------------------------------------
// The real DurabilityLog on the simulated runtime: scripted lease scenarios, every event checked.

using rt_test::LogHost;
using rt_test::LogRig;

// A LogRig whose World feeds every event to a LeaseChecks reading the live stores.
// `tamper` may rewrite an event (or drop it, returning null) before the checker sees it.
using Tamper = std::function<json(json)>;

struct EngineRig : LogRig, sim::TraceSink {
  LeaseChecks checks{StoreReader{[this](const std::string& label, std::string_view sql, const std::vector<SqlValue>& params) {
                       return runtime.world().stores().live(label, sql, params);
                     }},
                     rt_test::kLogClass};
  Tamper tamper;
  explicit EngineRig(LogOptions options, Tamper tampering = nullptr) : tamper(std::move(tampering)) {
    env.options = std::move(options);
    world.observe(*this);
  }
  void record(const sim::TraceEvent& event) override {
    if (!tamper) return checks.record(event);
    const json changed = tamper(event.json());
    if (!changed.is_null()) checks.record(changed);
  }
};

LogOptions engineOptions(int64_t maxParallelism, std::optional<int64_t> maxAttempts = std::nullopt) {
  LogOptions o;
  o.maxBatchSize = 2;
  o.leases = LogLeaseOptions{};
  o.leases->maxParallelism = maxParallelism;
  o.leases->leaseMs = kLeaseMs;
  o.leases->maxAttempts = maxAttempts;
  return o;
}

Task<void> appendRecords(LogHost& h, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    Task<EnqueueResult<std::vector<int64_t>>> t = h.log.append(rt_test::rec(json(100 + i)));
    EnqueueResult<std::vector<int64_t>> r = co_await t;
    EXPECT_TRUE(r.success);
  }
}

// The lease's batch id, or "" when lease() granted nothing or threw. `consumer` is a literal.
Task<std::string> leaseId(LogHost& h, const char* consumer) {
  const std::string name = consumer;
  try {
    Task<std::optional<LogLease>> t = h.log.lease(name);
    std::optional<LogLease> lease = co_await t;
    co_return lease ? lease->batchId : std::string();
  } catch (const LogTruncatedError&) {
    co_return std::string();
  }
}

// Whether the settle was accepted (false: LogLeaseError).
Task<bool> settled(LogHost& h, bool ack, const char* consumer, const std::string& batchId) {
  const std::string name = consumer;
  try {
    Task<void> t = ack ? h.log.ack(name, batchId) : h.log.nack(name, batchId);
    co_await t;
    co_return true;
  } catch (const LogLeaseError&) {
    co_return false;
  }
}

// Leases and acks until the consumer has passed the end of the log, waiting out held leases.
Task<void> catchUp(LogHost& h, const std::string& consumer) {
  for (int round = 0; round < 40; ++round) {
    Task<LogBounds> tb = h.log.bounds();
    const LogBounds b = co_await tb;
    Task<std::optional<int64_t>> tc = h.log.cursor(consumer);
    const std::optional<int64_t> cursor = co_await tc;
    if (cursor == b.nextOffset) co_return;
    Task<std::string> tl = leaseId(h, consumer.c_str());
    const std::string id = co_await tl;
    if (id.empty()) {
      Task<void> wait = h.ctx.clock.sleepFor(kLeaseMs);
      co_await wait;
      continue;
    }
    Task<bool> ta = settled(h, true, consumer.c_str(), id);
    co_await ta;
  }
  ADD_FAILURE() << consumer << " did not catch up";
}

// Runs the script, lets every consumer in `consumers` catch up, and checks the end of the run.
sim::Tallies runEngine(EngineRig& rig, rt_test::LogScript script, std::vector<std::string> consumers) {
  rig.run(std::move(script));
  rig.run([consumers](LogHost& h) -> Task<json> {
    for (const std::string& consumer : consumers) {
      Task<void> t = catchUp(h, consumer);
      co_await t;
    }
    co_return json(nullptr);
  });
  rig.checks.finish(rig.world.now());
  return rig.checks.tallies();
}

void expectNoViolation(const sim::Tallies& tallies) {
  for (const auto& [id, tally] : tallies.by_id()) EXPECT_EQ(tally.violated, 0u) << id << ": " << firstExample(tally);
}

// Named awaits for the scripts below (no temporaries inside a co_await expression).
#define LEASE(var, consumer)              \
  Task<std::string> var##_t = leaseId(h, consumer); \
  const std::string var = co_await var##_t
#define SETTLE(var, ack, consumer, id)                      \
  Task<bool> var##_t = settled(h, ack, consumer, id); \
  const bool var = co_await var##_t
#define APPEND(n)                                \
  {                                              \
    Task<void> append_t = appendRecords(h, n);   \
    co_await append_t;                           \
  }
#define TRIM()                                   \
  {                                              \
    Task<int64_t> trim_t = h.log.trim();         \
    co_await trim_t;                             \
  }

sim::Tallies scenarioOutOfOrderAcksNacksExpiryAndFencing(Tamper tamper) {
  sim::Tallies tallies;
  EngineRig rig(engineOptions(2), std::move(tamper));
  tallies.merge(runEngine(rig, [](LogHost& h) -> Task<json> {
    APPEND(8);
    LEASE(a, "c");
    LEASE(b, "c");
    LEASE(none, "c");  // at maxParallelism
    SETTLE(ackB, true, "c", b);
    SETTLE(ackB2, true, "c", b);       // settled once
    SETTLE(ackOther, true, "other", a);  // another consumer's lease
    SETTLE(ackA, true, "c", a);
    LEASE(n, "c");
    SETTLE(nackN, false, "c", n);
    LEASE(r, "c");  // reclaimed after the nack
    Task<void> wait = h.ctx.clock.sleepFor(kLeaseMs);
    co_await wait;
    LEASE(e, "c");  // reclaimed after expiry
    SETTLE(ackR, true, "c", r);  // fenced
    SETTLE(nackN2, false, "c", n);
    SETTLE(ackE, true, "c", e);
    LEASE(d, "d");  // an independent consumer
    SETTLE(ackD, true, "d", d);
    EXPECT_EQ(none, "");
    EXPECT_TRUE(ackB && ackA && nackN && ackE && ackD);
    EXPECT_FALSE(ackB2 || ackOther || ackR || nackN2);
    EXPECT_NE(r, n);
    EXPECT_NE(e, r);
    co_return json(nullptr);
  }, {"c", "d"}));
  return tallies;
}

sim::Tallies scenarioPoisonWithAndWithoutAHandler() {
  sim::Tallies tallies;
  LogOptions withHandler = engineOptions(1, 1);
  auto calls = std::make_shared<int>(0);
  withHandler.leases->onPoison = [calls](const LogLease&) -> Task<void> {
    ++*calls;
    co_return;
  };
  EngineRig rig(std::move(withHandler));
  tallies.merge(runEngine(rig, [](LogHost& h) -> Task<json> {
    APPEND(4);
    LEASE(a, "c");
    SETTLE(nacked, false, "c", a);
    LEASE(poisoned, "c");  // skipped, onPoison called
    EXPECT_TRUE(nacked);
    EXPECT_EQ(poisoned, "");
    co_return json(nullptr);
  }, {"c"}));
  EXPECT_EQ(*calls, 1);
  EngineRig forever(engineOptions(1, 1));
  tallies.merge(runEngine(forever, [](LogHost& h) -> Task<json> {
    APPEND(2);
    for (int i = 0; i < 3; ++i) {
      LEASE(a, "c");
      SETTLE(nacked, false, "c", a);
      EXPECT_TRUE(nacked);
    }
    co_return json(nullptr);
  }, {"c"}));
  return tallies;
}

sim::Tallies scenarioTrimmedOffsetsGapRowsAndTruncatedRanges() {
  sim::Tallies tallies;
  LogOptions options = engineOptions(2);
  options.retention = LogRetention{std::nullopt, 3, std::nullopt};
  EngineRig rig(std::move(options));
  tallies.merge(runEngine(rig, [](LogHost& h) -> Task<json> {
    APPEND(5);
    TRIM();  // oldest 2: the first lease of "g" needs a gap row
    LEASE(g, "g");
    LEASE(a, "c");  // [2, 3]
    LEASE(b, "c");  // [4]
    SETTLE(nackA, false, "c", a);
    APPEND(3);
    TRIM();  // oldest 5: both ranges wholly trimmed
    LEASE(truncated, "c");  // LogTruncatedError once
    SETTLE(nackB, false, "c", b);
    LEASE(truncated2, "c");
    EXPECT_NE(g, "");
    EXPECT_TRUE(nackA && nackB);
    EXPECT_EQ(truncated, "");
    EXPECT_EQ(truncated2, "");
    co_return json(nullptr);
  }, {"c", "g"}));
  return tallies;
}

sim::Tallies scenarioAPartiallyTrimmedPendingRange() {
  sim::Tallies tallies;
  LogOptions options = engineOptions(1);
  options.maxBatchSize = 3;
  options.retention = LogRetention{std::nullopt, 3, std::nullopt};
  EngineRig rig(std::move(options));
  tallies.merge(runEngine(rig, [](LogHost& h) -> Task<json> {
    APPEND(3);
    LEASE(a, "c");  // [0, 2]
    SETTLE(nacked, false, "c", a);
    APPEND(1);
    TRIM();  // oldest 1
    LEASE(truncated, "c");  // [0] skipped, [1, 2] pending
    LEASE(rest, "c");
    EXPECT_TRUE(nacked);
    EXPECT_EQ(truncated, "");
    EXPECT_NE(rest, "");
    co_return json(nullptr);
  }, {"c"}));
  return tallies;
}

sim::Tallies scenarioAHeldLeaseSurvivesAResetAndIsReclaimedAfterExpiry() {
  sim::Tallies tallies;
  EngineRig rig(engineOptions(1));
  rig.run([](LogHost& h) -> Task<json> {
    APPEND(4);
    LEASE(a, "c");
    EXPECT_NE(a, "");
    co_return json(nullptr);
  });
  rig.env.script = [](LogHost&) -> Task<json> { co_return json(nullptr); };
  rig.faults.arm(sim::FaultKind::object_reset);
  rig.Rig::call(rt_test::kLogClass, "a", "run");
  rig.run_for(5'000);
  tallies.merge(runEngine(rig, [](LogHost& h) -> Task<json> {
    LEASE(held, "c");
    EXPECT_EQ(held, "");  // still held: leases survive the reset, and expire only with time
    co_return json(nullptr);
  }, {"c"}));
  return tallies;
}

sim::Tallies scenarioWithoutTheOptionEveryLeaseMethodIsRefused() {
  sim::Tallies tallies;
  EngineRig rig{LogOptions{}};
  rig.run([](LogHost& h) -> Task<json> {
    APPEND(1);
    bool refused = false;
    try {
      const std::string consumer = "c";
      Task<std::optional<LogLease>> t = h.log.lease(consumer);
      co_await t;
    } catch (const TypeError&) {
      refused = true;
    }
    EXPECT_TRUE(refused);
    co_return json(nullptr);
  });
  rig.checks.finish(rig.world.now());
  tallies.merge(rig.checks.tallies());
  EXPECT_GT(rig.checks.tallies().by_id().at("LSE-16").checked, 1u);
  return tallies;
}

// Retention by age trims the whole log: the consumer's unleased tail is covered by a gap row alone.
sim::Tallies scenarioAFullyTrimmedTail() {
  sim::Tallies tallies;
  LogOptions options = engineOptions(1);
  options.retention = LogRetention{1'000, std::nullopt, std::nullopt};
  EngineRig rig(std::move(options));
  tallies.merge(runEngine(rig, [](LogHost& h) -> Task<json> {
    APPEND(5);
    LEASE(a, "c");  // [0, 1]
    SETTLE(acked, true, "c", a);
    Task<void> wait = h.ctx.clock.sleepFor(2'000);
    co_await wait;
    TRIM();  // nothing readable
    LEASE(none, "c");
    EXPECT_TRUE(acked);
    EXPECT_EQ(none, "");
    co_return json(nullptr);
  }, {"c"}));
  EXPECT_EQ(rig.sink.count("log.lease.gap.write"), 1u);
  return tallies;
}

// Cold segments for the log: `lost` makes every read come back empty.
struct ColdSegments {
  std::map<std::string, std::vector<LogRecord>> segments;
  bool lost = false;
};

Task<std::string> writeSegment(std::shared_ptr<ColdSegments> cold, LogSegment segment) {
  const std::string locator = "seg-" + std::to_string(segment.firstOffset);
  cold->segments[locator] = segment.records;
  co_return locator;
}

Task<std::optional<std::vector<LogRecord>>> readSegment(std::shared_ptr<ColdSegments> cold, std::string locator) {
  if (cold->lost) co_return std::nullopt;
  co_return cold->segments.at(locator);
}

sim::Tallies scenarioRehydratedAndUnreadableRanges() {
  sim::Tallies tallies;
  auto cold = std::make_shared<ColdSegments>();
  LogOptions options = engineOptions(1);
  options.maxBatchSize = 3;
  options.retention = LogRetention{std::nullopt, 1, std::nullopt};
  options.cold = LogColdStorage{[cold](const LogSegment& s) { return writeSegment(cold, s); },
                                [cold](const std::string& l) { return readSegment(cold, l); }};
  EngineRig rig(std::move(options));
  sim::World* world = &rig.world;
  tallies.merge(runEngine(rig, [cold, world](LogHost& h) -> Task<json> {
    APPEND(4);
    LEASE(a, "c");  // [0, 2]
    SETTLE(nacked, false, "c", a);
    TRIM();  // flushes [0, 2] to a cold segment
    LEASE(rehydrated, "c");
    SETTLE(acked, true, "c", rehydrated);
    LEASE(b, "d");  // d's [0, 2] is cold: lost, the lease is released
    cold->lost = true;  // as a cold.vanish fault would, which the checker learns from the trace
    world->emit("fault", {{"fault", "cold.vanish"}, {"object", "segments/seg-0"}, {"incarnation", 0}, {"point", "hour"}, {"details", json::object()}});
    SETTLE(nackedB, false, "d", b);
    LEASE(unreadable, "d");
    cold->lost = false;
    EXPECT_TRUE(nacked && acked && nackedB);
    EXPECT_NE(rehydrated, "");
    EXPECT_EQ(unreadable, "");
    co_return json(nullptr);
  }, {"c", "d"}));
  EXPECT_EQ(rig.sink.count("log.lease.release.write"), 1u);
  EXPECT_GT(rig.sink.count("log.cold.write"), 0u);
  return tallies;
}

// The confirmation of the grant's commit fails: the reset keeps it or not (the World decides).
sim::Tallies scenarioAnUncertainGrantCommit() {
  sim::Tallies tallies;
  EngineRig rig(engineOptions(2));
  rig.run([](LogHost& h) -> Task<json> {
    APPEND(6);
    co_return json(nullptr);
  });
  rig.faults.arm(sim::FaultKind::storage_commit_uncertain);
  rig.env.script = [](LogHost& h) -> Task<json> {
    LEASE(a, "c");
    co_return json(a);
  };
  rig.Rig::call(rt_test::kLogClass, "a", "run");
  rig.run_for(5'000);
  EXPECT_EQ(rig.sink.count("durability"), 1u);
  tallies.merge(runEngine(rig, [](LogHost& h) -> Task<json> {
    LEASE(b, "c");
    EXPECT_NE(b, "");
    co_return json(nullptr);
  }, {"c"}));
  return tallies;
}

using Scenario = sim::Tallies (*)();
const std::map<std::string, Scenario>& scenarios() {
  static const std::map<std::string, Scenario> all = {
      {"out-of-order acks, nacks, expiry, fencing", [] { return scenarioOutOfOrderAcksNacksExpiryAndFencing(nullptr); }},
      {"poison with and without a handler", scenarioPoisonWithAndWithoutAHandler},
      {"gap rows and wholly truncated ranges", scenarioTrimmedOffsetsGapRowsAndTruncatedRanges},
      {"a partially trimmed pending range", scenarioAPartiallyTrimmedPendingRange},
      {"a held lease across a reset", scenarioAHeldLeaseSurvivesAResetAndIsReclaimedAfterExpiry},
      {"leases disabled", scenarioWithoutTheOptionEveryLeaseMethodIsRefused},
      {"rehydrated and unreadable ranges", scenarioRehydratedAndUnreadableRanges},
      {"an uncertain grant commit", scenarioAnUncertainGrantCommit},
      {"a fully trimmed tail", scenarioAFullyTrimmedTail},
  };
  return all;
}

TEST(EngineLeases, EveryScenarioPassesEveryCheck) {
  for (const auto& [name, scenario] : scenarios()) {
    SCOPED_TRACE(name);
    expectNoViolation(scenario());
  }
}

TEST(EngineLeases, TogetherTheScenariosCheckEveryLseInvariant) {
  sim::Tallies all;
  for (const auto& [name, scenario] : scenarios()) all.merge(scenario());
  ASSERT_EQ(all.by_id().size(), 16u);
  for (const auto& [id, tally] : all.by_id()) EXPECT_GT(tally.checked, 0u) << id << " was never checked on the real log";
}

// The real event stream, altered in one place, is caught: the checks are not vacuous on it.
TEST(EngineLeases, AnAlteredRealStreamIsCaught) {
  const auto nth = [](const char* type, int n, std::function<json(json)> change) {
    auto seen = std::make_shared<int>(0);
    return [=](json e) { return e.at("ev") == type && ++*seen == n ? change(std::move(e)) : e; };
  };
  const std::vector<std::tuple<std::string, std::string, Tamper>> cases = {
      {"LSE-05", "without advancing", nth("log.advance.write", 1, [](json) { return json(); })},
      {"LSE-02", "expected to start at 0", nth("log.lease.write", 1, [](json e) {
         e["first"] = 1;
         return e;
       })},
      {"LSE-11", "ack by x settled", nth("log.ack.write", 2, [](json e) {
         e["consumer"] = "x";
         return e;
       })},
      {"LSE-10", "with wrong records", nth("log.lease", 1, [](json e) {
         e["bodies"][0] = "\"changed\"";
         return e;
       })},
  };
  for (const auto& [id, text, tamper] : cases) {
    SCOPED_TRACE(id);
    const sim::Tallies tallies = scenarioOutOfOrderAcksNacksExpiryAndFencing(tamper);
    const sim::InvariantTally& tally = tallies.by_id().at(id);
    EXPECT_GT(tally.violated, 0u);
    EXPECT_NE(firstExample(tally).find(text), std::string::npos) << firstExample(tally);
  }
}

}  // namespace
}  // namespace durasim::properties
