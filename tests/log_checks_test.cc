// The LOG checks (properties/log_checks.h) on synthetic histories: a small in-test log keeps the
// tables of log.md 2 in a real in-memory store and emits the events of docs/log-trace-events.md, as
// the engine would; each invariant (and SCH-11 for the log's schema) is shown to pass on a correct
// history and to fail on a mutated one. Then the checker watches the real DurabilityLog on the
// simulator (tests/log_test_rig.h).
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "properties/log_checks.h"
#include "sim/sqlite_store.h"
#include "tests/log_test_rig.h"

namespace durasim::properties {
namespace {

using nlohmann::json;

constexpr const char* kObject = "Log/a";

// A correct log over a real store; each operation writes the tables and emits the events.
struct Synth {
  sim::SqliteStore store{sim::SqlEnvironment{[] { return uint64_t{7}; }, [] { return int64_t{0}; }}};
  LogChecks checks{StoreReader{[this](const std::string&, std::string_view sql, const std::vector<SqlValue>& params) { return store.exec(sql, params); }},
                   "Log"};
  int64_t incarnation = 1;
  uint64_t commitNumber = 0;
  int64_t now = 1000;
  json alarm = nullptr;
  bool autoConfirm = true;

  Synth() {
    for (const char* sql :
         {"CREATE TABLE durability_log_records (\"offset\" INTEGER PRIMARY KEY, dedup_key TEXT NOT NULL UNIQUE, payload TEXT NOT NULL, "
          "bytes INTEGER NOT NULL, appended_at INTEGER NOT NULL)",
          "CREATE TABLE durability_log_cursors (consumer TEXT PRIMARY KEY, \"offset\" INTEGER NOT NULL, committed_at INTEGER NOT NULL)",
          "CREATE TABLE durability_log_segments (first_offset INTEGER PRIMARY KEY, last_offset INTEGER NOT NULL, locator TEXT NOT NULL, "
          "bytes INTEGER NOT NULL, flushed_at INTEGER NOT NULL)",
          "CREATE TABLE durability_log_seq (id INTEGER PRIMARY KEY CHECK (id = 1), next_offset INTEGER NOT NULL, total_bytes INTEGER NOT NULL)",
          "INSERT INTO durability_log_seq (id, next_offset, total_bytes) VALUES (1, 0, 0)",
          "CREATE TABLE durability_log_flush (id INTEGER PRIMARY KEY CHECK (id = 1), first_offset INTEGER NOT NULL, last_offset INTEGER NOT NULL, "
          "created_at INTEGER NOT NULL)",
          "CREATE TABLE durability_migrations (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE, applied_at INTEGER NOT NULL, "
          "capability TEXT NOT NULL, down TEXT NOT NULL)",
          "INSERT INTO durability_migrations (name, applied_at, capability, down) VALUES ('durability_0006_create_log', 0, 'log', '')"})
      store.exec(sql);
    emit({{"ev", "incarnation.start"}});
  }

  void emit(json e) {
    if (!e.contains("object")) e["object"] = kObject;
    if (!e.contains("incarnation") && e.at("ev").get<std::string>().rfind("app.", 0) != 0 && e.at("ev") != "fault") e["incarnation"] = incarnation;
    e["t"] = now;
    checks.record(e);
  }
  void sql(const std::string& statement) { store.exec(statement); }
  int64_t scalar(const std::string& statement) { return store.exec(statement).one().int64("n"); }
  int64_t next() { return scalar("SELECT next_offset AS n FROM durability_log_seq"); }
  int64_t hot() { return scalar("SELECT COALESCE(MIN(\"offset\"), (SELECT next_offset FROM durability_log_seq)) AS n FROM durability_log_records"); }

  uint64_t commit() {
    emit({{"ev", "commit"}, {"commit", ++commitNumber}, {"changes", "00"}, {"alarm", alarm}});
    if (autoConfirm) confirm(commitNumber);
    return commitNumber;
  }
  void confirm(uint64_t number) { emit({{"ev", "confirm"}, {"commit", number}}); }
  // The incarnation dies keeping `kept` of its unconfirmed commits; the store is rolled back by the
  // caller (here: by deleting what the lost commits wrote).
  void crash(int64_t kept, int64_t unconfirmed) {
    emit({{"ev", "durability"}, {"kept", kept}, {"unconfirmed", unconfirmed}});
    emit({{"ev", "incarnation.end"}, {"reset", true}, {"cause", "crash"}});
    ++incarnation;
    emit({{"ev", "incarnation.start"}});
  }

  void options(bool cold, json retention = nullptr, int64_t maxBatchSize = 100) {
    emit({{"ev", "log.options"}, {"maxBatchSize", maxBatchSize}, {"retention", retention}, {"cold", cold}, {"leases", nullptr}});
  }

  // log.md 3: dedup against hot keys, last duplicate's body, new offsets in first-occurrence order.
  std::vector<int64_t> append(const std::vector<std::string>& keys, const std::vector<std::string>& bodies, bool returns = true) {
    const int64_t first = next();
    std::map<std::string, int64_t> offsetOf;
    std::vector<std::string> fresh;
    std::map<std::string, std::string> bodyOf;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      bodyOf[keys[i]] = bodies[i];
      if (offsetOf.count(keys[i])) continue;
      const std::optional<SqlRow> hit = store.exec("SELECT \"offset\" FROM durability_log_records WHERE dedup_key = '" + keys[i] + "'").next();
      if (hit) offsetOf[keys[i]] = hit->int64("offset");
      else {
        offsetOf[keys[i]] = first + static_cast<int64_t>(fresh.size());
        fresh.push_back(keys[i]);
      }
    }
    int64_t bytes = 0;
    for (const std::string& key : fresh) {
      const std::string& body = bodyOf[key];
      bytes += static_cast<int64_t>(body.size());
      sql("INSERT INTO durability_log_records VALUES (" + std::to_string(offsetOf[key]) + ", '" + key + "', '" + body + "', " +
          std::to_string(body.size()) + ", " + std::to_string(now) + ")");
    }
    sql("UPDATE durability_log_seq SET next_offset = next_offset + " + std::to_string(fresh.size()) + ", total_bytes = total_bytes + " +
        std::to_string(bytes));
    std::vector<int64_t> offsets;
    std::vector<int64_t> sizes;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      offsets.push_back(offsetOf[keys[i]]);
      sizes.push_back(static_cast<int64_t>(bodies[i].size()));
    }
    emit({{"ev", "log.append.write"}, {"keys", keys}, {"offsets", offsets}, {"new", fresh.size()}, {"first", first},
          {"next", first + static_cast<int64_t>(fresh.size())}, {"bytes", sizes}, {"at", now}});
    if (fresh.empty()) emit({{"ev", "commit.noop"}});
    else commit();
    if (returns) emit({{"ev", "log.append"}, {"keys", keys}, {"offsets", offsets}});
    return offsets;
  }
  std::vector<int64_t> append(int n, const std::string& prefix) {
    std::vector<std::string> keys, bodies;
    for (int i = 0; i < n; ++i) {
      keys.push_back(prefix + std::to_string(i));
      bodies.push_back("\"" + prefix + "-body-" + std::to_string(i) + "\"");
    }
    return append(keys, bodies);
  }

  // log.md 4.2 for a hot read; returns the event.
  json read(int64_t from, std::optional<int64_t> limit = std::nullopt, int64_t maxBatchSize = 100) {
    const int64_t capped = std::min(limit.value_or(maxBatchSize), maxBatchSize);
    json offsets = json::array(), keys = json::array(), bodies = json::array();
    for (const SqlRow& r : store.exec("SELECT \"offset\", dedup_key, payload FROM durability_log_records WHERE \"offset\" >= " + std::to_string(from) +
                                      " ORDER BY \"offset\" LIMIT " + std::to_string(capped))
                               .toVector()) {
      offsets.push_back(r.int64("offset"));
      keys.push_back(r.text("dedup_key"));
      bodies.push_back(r.text("payload"));
    }
    const int64_t n = next(), h = hot();
    const int64_t oldest = std::min(h, scalar("SELECT COALESCE(MIN(first_offset), " + std::to_string(h) + ") AS n FROM durability_log_segments"));
    const int64_t nextOffset = offsets.empty() ? std::max(from, n) : offsets.back().get<int64_t>() + 1;
    json e = {{"ev", "log.read"}, {"from", from}, {"limit", limit ? json(*limit) : json()}, {"capped", capped}, {"offsets", offsets},
              {"keys", keys}, {"bodies", bodies}, {"nextOffset", nextOffset}, {"lag", std::max<int64_t>(0, n - nextOffset)},
              {"oldest", oldest}, {"hot", h}, {"next", n}};
    return e;
  }

  void commitCursor(const std::string& consumer, int64_t offset) {
    const std::optional<SqlRow> row = store.exec("SELECT \"offset\" FROM durability_log_cursors WHERE consumer = '" + consumer + "'").next();
    const bool moved = !row || offset > row->int64("offset");
    if (moved)
      sql("INSERT INTO durability_log_cursors VALUES ('" + consumer + "', " + std::to_string(offset) + ", " + std::to_string(now) +
          ") ON CONFLICT(consumer) DO UPDATE SET \"offset\" = excluded.\"offset\"");
    emit({{"ev", "log.commit.write"}, {"consumer", consumer}, {"offset", offset}, {"moved", moved}});
    if (moved) commit();
    else emit({{"ev", "commit.noop"}});
  }

  void load() {
    const std::optional<int64_t> least = store.exec("SELECT MIN(\"offset\") AS m FROM durability_log_cursors").one().optInt64("m");
    emit({{"ev", "log.load"}, {"pendingDeliveries", least ? std::max<int64_t>(0, next() - *least) : 0}});
  }

  // Retention without cold: delete the first n hot records.
  void trimDelete(int64_t n) {
    emit({{"ev", "log.trim.begin"}, {"now", now}});
    const int64_t first = hot(), last = first + n - 1;
    deleteHot(first, last);
    emit({{"ev", "log.trim.delete"}, {"first", first}, {"last", last}, {"deleted", n}});
    commit();
    emit({{"ev", "log.trim.end"}, {"removed", n}, {"now", now}});
  }
  void deleteHot(int64_t first, int64_t last) {
    const std::string range = " WHERE \"offset\" BETWEEN " + std::to_string(first) + " AND " + std::to_string(last);
    const int64_t bytes = scalar("SELECT COALESCE(SUM(bytes), 0) AS n FROM durability_log_records" + range);
    sql("DELETE FROM durability_log_records" + range);
    sql("UPDATE durability_log_seq SET total_bytes = MAX(0, total_bytes - " + std::to_string(bytes) + ")");
  }
  json coldWrite(int64_t first, int64_t last) {
    json offsets = json::array(), keys = json::array(), bodies = json::array();
    for (const SqlRow& r : store.exec("SELECT \"offset\", dedup_key, payload FROM durability_log_records WHERE \"offset\" BETWEEN " + std::to_string(first) +
                                      " AND " + std::to_string(last) + " ORDER BY \"offset\"")
                               .toVector()) {
      offsets.push_back(r.int64("offset"));
      keys.push_back(r.text("dedup_key"));
      bodies.push_back(r.text("payload"));
    }
    return {{"ev", "log.cold.write"}, {"first", first}, {"last", last}, {"offsets", offsets}, {"keys", keys}, {"bodies", bodies}};
  }
  void intent(int64_t first, int64_t last) {
    sql("INSERT INTO durability_log_flush VALUES (1, " + std::to_string(first) + ", " + std::to_string(last) + ", " + std::to_string(now) + ")");
    emit({{"ev", "log.trim.intent"}, {"first", first}, {"last", last}});
    commit();
  }
  void flushCommit(int64_t first, int64_t last, const std::string& locator) {
    sql("INSERT INTO durability_log_segments VALUES (" + std::to_string(first) + ", " + std::to_string(last) + ", '" + locator + "', 0, " +
        std::to_string(now) + ")");
    deleteHot(first, last);
    sql("DELETE FROM durability_log_flush");
    emit({{"ev", "log.trim.flush"}, {"first", first}, {"last", last}, {"locator", locator}, {"deleted", last - first + 1}});
    commit();
  }
  // Retention with cold: flush the first n hot records as one segment.
  void trimFlush(int64_t n, const std::string& locator) {
    emit({{"ev", "log.trim.begin"}, {"now", now}});
    const int64_t first = hot(), last = first + n - 1;
    intent(first, last);
    emit(coldWrite(first, last));
    flushCommit(first, last, locator);
    emit({{"ev", "log.trim.end"}, {"removed", n}, {"now", now}});
  }

  uint64_t violations(const std::string& id) const {
    const auto it = checks.tallies().by_id().find(id);
    return it == checks.tallies().by_id().end() ? 0 : it->second.violated;
  }
  uint64_t checked(const std::string& id) const {
    const auto it = checks.tallies().by_id().find(id);
    return it == checks.tallies().by_id().end() ? 0 : it->second.checked;
  }
  std::string firstExample(const std::string& id) const {
    const auto it = checks.tallies().by_id().find(id);
    return it == checks.tallies().by_id().end() || it->second.examples.empty() ? "" : it->second.examples.front();
  }
  std::string allExamples() const {
    std::string out;
    for (const auto& [id, tally] : checks.tallies().by_id())
      for (const std::string& example : tally.examples) out += id + ": " + example + "\n";
    return out;
  }
};

// A history that uses every plain-log feature correctly.
void plainHistory(Synth& s) {
  s.options(false, json{{"maxAgeMs", nullptr}, {"maxRecords", 6}, {"maxBytes", nullptr}});
  s.append(5, "k");
  s.append({"k1", "x", "x"}, {"\"dup\"", "\"x1\"", "\"x2\""});  // a dedup hit and a duplicate in the batch
  s.emit({{"ev", "app.produce"}, {"partition", kObject}, {"producer", "p"}, {"keys", {"x"}}, {"offsets", {5}}});
  const json page = s.read(0, 3);
  s.emit(page);
  s.emit({{"ev", "app.consume"}, {"partition", kObject}, {"group", "g"}, {"from", 0}, {"offsets", page.at("offsets")}});
  s.commitCursor("g", 3);
  s.commitCursor("g", 2);  // late, ignored
  s.load();
  s.emit(s.read(3));
  s.emit({{"ev", "app.consume"}, {"partition", kObject}, {"group", "g"}, {"from", 3}, {"offsets", {3, 4, 5}}});
  s.emit({{"ev", "log.append.rejected"}, {"message", "Append requires at least one record"}});
  s.now += 10;
  s.trimDelete(1);  // 6 records, maxRecords 6: nothing required, one removed anyway as a prefix
  s.emit(s.read(1, 10));
  s.emit({{"ev", "log.read.truncated"}, {"from", 0}, {"requested", 0}, {"oldest", 1}});
}

TEST(LogChecks, PlainHistoryPasses) {
  Synth s;
  plainHistory(s);
  s.checks.finish();
  EXPECT_EQ(s.checks.tallies().violations(), 0u) << s.allExamples();
  for (const char* id : {"LOG-01", "LOG-02", "LOG-03", "LOG-04", "LOG-05", "LOG-06", "LOG-07", "LOG-08", "LOG-09", "LOG-10", "LOG-12", "LOG-13", "LOG-14",
                         "LOG-15"})
    EXPECT_GT(s.checked(id), 0u) << id;
}

TEST(LogChecks, ColdHistoryPasses) {
  Synth s;
  s.options(true, json{{"maxAgeMs", nullptr}, {"maxRecords", 7}, {"maxBytes", nullptr}});
  s.append(10, "k");
  s.trimFlush(3, "seg-0");
  s.trimFlush(3, "seg-3");
  // A failed cold write, then the retry with the same range after a crash.
  s.emit({{"ev", "log.trim.begin"}, {"now", s.now}});
  s.intent(6, 7);
  s.emit(s.coldWrite(6, 7));
  s.emit({{"ev", "log.cold.failed"}, {"first", 6}, {"last", 7}, {"message", "500"}});
  s.crash(0, 0);
  s.options(true, json{{"maxAgeMs", nullptr}, {"maxRecords", 7}, {"maxBytes", nullptr}});
  s.emit({{"ev", "log.trim.begin"}, {"now", s.now}});
  s.emit(s.coldWrite(6, 7));
  s.flushCommit(6, 7, "seg-6");
  s.emit({{"ev", "log.trim.end"}, {"removed", 2}, {"now", s.now}});
  s.emit({{"ev", "log.forget.write"}, {"offset", 3}, {"forgotten", 1}});
  s.sql("DELETE FROM durability_log_segments WHERE last_offset < 3");
  s.commit();
  s.emit({{"ev", "log.read.truncated"}, {"from", 1}, {"requested", 1}, {"oldest", 3}});
  s.checks.finish();
  EXPECT_EQ(s.checks.tallies().violations(), 0u) << s.allExamples();
  for (const char* id : {"LOG-10", "LOG-11", "LOG-12", "LOG-15", "LOG-16", "LOG-18"}) EXPECT_GT(s.checked(id), 0u) << id;
}

TEST(LogChecks, LostCommitMayReuseOffsetsButAcknowledgedOnesStay) {
  Synth s;
  s.options(false);
  s.append(2, "a");
  s.emit({{"ev", "app.produce"}, {"partition", kObject}, {"producer", "p"}, {"keys", {"a0", "a1"}}, {"offsets", {0, 1}}});
  s.autoConfirm = false;
  s.append({"b"}, {"\"b\""}, false);
  s.emit(s.read(2));
  // The crash keeps none of the unconfirmed commit: the store rolls back and offset 2 is free again.
  s.sql("DELETE FROM durability_log_records WHERE \"offset\" = 2");
  s.sql("UPDATE durability_log_seq SET next_offset = 2, total_bytes = total_bytes - 3");
  s.crash(0, 1);
  s.autoConfirm = true;
  s.append({"c"}, {"\"cc\""});
  s.emit(s.read(2));
  s.emit({{"ev", "app.produce"}, {"partition", kObject}, {"producer", "p"}, {"keys", {"c"}}, {"offsets", {2}}});
  s.checks.finish();
  EXPECT_EQ(s.checks.tallies().violations(), 0u) << s.allExamples();
}

// Seed 308 of the log workload: a retry's reply waits at the output gate while retention trims the
// batch's first key and a later retry gives that key a new offset; each reply is judged against its
// own write, not the latest write of the same keys.
TEST(LogChecks, RetriesOfOneBatchInFlightTogetherEachReturnTheirOwnWrite) {
  Synth s;
  s.options(false, json{{"maxAgeMs", nullptr}, {"maxRecords", 1}, {"maxBytes", nullptr}});
  const std::vector<std::string> keys = {"a", "b"}, bodies = {"\"a\"", "\"b\""};
  EXPECT_EQ(s.append(keys, bodies, false), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(s.append(keys, bodies, false), (std::vector<int64_t>{0, 1}));  // dedup hits: nothing new
  s.trimDelete(1);
  EXPECT_EQ(s.append(keys, bodies, false), (std::vector<int64_t>{2, 1}));  // a was trimmed: a new offset
  for (const std::vector<int64_t>& offsets : {std::vector<int64_t>{0, 1}, {0, 1}, {2, 1}})
    s.emit({{"ev", "log.append"}, {"keys", keys}, {"offsets", offsets}});
  EXPECT_EQ(s.checks.tallies().violations(), 0u) << s.allExamples();
  // A fourth reply has no write left to claim.
  s.emit({{"ev", "log.append"}, {"keys", keys}, {"offsets", {0, 1}}});
  EXPECT_EQ(s.violations("LOG-02"), 1u) << s.allExamples();
}

// ---------------------------------------------------------------------------------------------
// Each check fails on a mutated history

TEST(LogChecksMutations, OffsetAllocationAndDedup) {
  Synth s;
  s.options(false);
  s.append(2, "k");
  s.emit({{"ev", "log.append.write"}, {"keys", {"z"}}, {"offsets", {5}}, {"new", 1}, {"first", 5}, {"next", 6}, {"bytes", {1}}, {"at", 0}});
  EXPECT_GT(s.violations("LOG-01"), 0u);

  Synth d;
  d.options(false);
  d.append(2, "k");
  // k0 is hot at offset 0 but the write gives it a new offset.
  d.emit({{"ev", "log.append.write"}, {"keys", {"k0"}}, {"offsets", {2}}, {"new", 1}, {"first", 2}, {"next", 3}, {"bytes", {1}}, {"at", 0}});
  EXPECT_GT(d.violations("LOG-02"), 0u) << d.allExamples();
  Synth r;
  r.options(false);
  r.append(2, "k");
  r.emit({{"ev", "log.append"}, {"keys", {"k0", "k1"}}, {"offsets", {1, 0}}});  // returned out of order
  EXPECT_GT(r.violations("LOG-02"), 0u);

  // A batch with a duplicate key must store the last occurrence's body; the first one is stored here.
  Synth b;
  b.options(false);
  const uint64_t before = b.checked("LOG-02");
  b.sql("INSERT INTO durability_log_records VALUES (0, 'd', '\"first\"', 7, 0)");
  b.sql("UPDATE durability_log_seq SET next_offset = 1, total_bytes = 7");
  b.emit({{"ev", "log.append.write"}, {"keys", {"d", "d"}}, {"offsets", {0, 0}}, {"new", 1}, {"first", 0}, {"next", 1}, {"bytes", {7, 4}}, {"at", 0}});
  b.commit();
  EXPECT_GT(b.checked("LOG-02"), before + 1);
  EXPECT_EQ(b.violations("LOG-02"), 1u) << b.allExamples();
}

TEST(LogChecksMutations, LostAppendAndPartialState) {
  Synth s;
  s.options(false);
  s.append(3, "k");
  s.sql("DELETE FROM durability_log_records WHERE \"offset\" = 1");  // a record vanishes without trim
  s.commitCursor("g", 1);
  EXPECT_GT(s.violations("LOG-03"), 0u);
  EXPECT_GT(s.violations("LOG-04"), 0u);  // the hot range has a hole
  EXPECT_GT(s.violations("LOG-05"), 0u);  // and total_bytes still counts it

  Synth lost;
  lost.options(false);
  lost.autoConfirm = false;
  lost.append({"a"}, {"\"a\""});
  lost.sql("DELETE FROM durability_log_records");
  lost.sql("UPDATE durability_log_seq SET next_offset = 0, total_bytes = 0");
  lost.crash(0, 1);
  // A producer was told offset 0 although the commit never became durable.
  lost.emit({{"ev", "app.produce"}, {"partition", kObject}, {"producer", "p"}, {"keys", {"a"}}, {"offsets", {0}}});
  EXPECT_GT(lost.violations("LOG-03"), 0u);

  Synth rejected;
  rejected.options(false);
  rejected.append(1, "k");
  rejected.sql("UPDATE durability_log_seq SET next_offset = 5");
  rejected.emit({{"ev", "log.append.rejected"}, {"message", "Append requires at least one record"}});
  EXPECT_GT(rejected.violations("LOG-03"), 0u);
  rejected.emit({{"ev", "log.append.rejected"}, {"message", "disk full"}});
  EXPECT_GT(rejected.violations("LOG-14"), 0u);
}

TEST(LogChecksMutations, CursorMovingBack) {
  Synth s;
  s.options(false);
  s.append(5, "k");
  s.commitCursor("g", 4);
  s.sql("UPDATE durability_log_cursors SET \"offset\" = 2");
  s.emit({{"ev", "log.commit.write"}, {"consumer", "g"}, {"offset", 2}, {"moved", true}});
  s.commit();
  EXPECT_GE(s.violations("LOG-06"), 2u) << s.allExamples();  // the write moved backwards, the stored cursor fell
}

TEST(LogChecksMutations, PageShapeAndSkippedOffsets) {
  Synth s;
  s.options(false);
  s.append(6, "k");
  json gap = s.read(0, 3);
  gap["offsets"] = {0, 2, 3};
  s.emit(gap);
  EXPECT_GT(s.violations("LOG-07"), 0u);
  json late = s.read(1, 2);
  late["offsets"] = {2, 3};
  late["keys"] = {"k2", "k3"};
  late["bodies"] = {"\"k-body-2\"", "\"k-body-3\""};
  late["nextOffset"] = 4;
  late["lag"] = 2;
  s.emit(late);
  EXPECT_GT(s.violations("LOG-08"), 0u);
  json lag = s.read(0, 2);
  lag["lag"] = 0;
  s.emit(lag);
  EXPECT_GE(s.violations("LOG-07"), 2u);

  Synth g;
  g.options(false);
  g.append(6, "k");
  g.emit({{"ev", "app.consume"}, {"partition", kObject}, {"group", "g"}, {"from", 0}, {"offsets", {0, 1}}});
  g.emit({{"ev", "app.consume"}, {"partition", kObject}, {"group", "g"}, {"from", 3}, {"offsets", {3, 4}}});  // 2 never seen
  EXPECT_GT(g.violations("LOG-08"), 0u);
  g.emit({{"ev", "log.read.truncated"}, {"from", 4}, {"requested", 4}, {"oldest", 0}});
  EXPECT_GE(g.violations("LOG-08"), 2u);
}

TEST(LogChecksMutations, RecordChangesBetweenReads) {
  Synth s;
  s.options(false);
  s.append(3, "k");
  s.emit(s.read(0));
  s.sql("UPDATE durability_log_records SET payload = '\"other\"' WHERE \"offset\" = 1");
  s.emit(s.read(0));
  EXPECT_GT(s.violations("LOG-09"), 0u);
}

TEST(LogChecksMutations, TrimOutsideThePrefixOrWithoutCold) {
  Synth s;
  s.options(false);
  s.append(5, "k");
  s.deleteHot(2, 2);
  s.emit({{"ev", "log.trim.delete"}, {"first", 2}, {"last", 2}, {"deleted", 1}});
  s.commit();
  EXPECT_GT(s.violations("LOG-10"), 0u);

  Synth c;
  c.options(true);
  c.append(5, "k");
  c.trimDelete(2);  // cold is configured: a plain delete loses records
  EXPECT_GT(c.violations("LOG-10"), 0u);

  Synth f;
  f.options(true);
  f.append(5, "k");
  f.intent(0, 1);
  f.emit(f.coldWrite(0, 1));
  f.deleteHot(0, 1);  // the failed write removed records anyway
  f.emit({{"ev", "log.cold.failed"}, {"first", 0}, {"last", 1}, {"message", "500"}});
  EXPECT_GT(f.violations("LOG-10"), 0u);
}

TEST(LogChecksMutations, FlushRangeChangingAfterACrash) {
  Synth s;
  s.options(true);
  s.append(6, "k");
  s.emit({{"ev", "log.trim.begin"}, {"now", s.now}});
  s.intent(0, 2);
  s.emit(s.coldWrite(0, 2));
  s.crash(1, 1);
  s.options(true, nullptr, 2);  // redeployed with a smaller batch: the retry must still flush [0, 2]
  s.emit(s.coldWrite(0, 1));
  EXPECT_GT(s.violations("LOG-11"), 0u) << s.allExamples();

  Synth twice;
  twice.options(true);
  twice.append(6, "k");
  twice.trimFlush(2, "seg-0");
  twice.emit({{"ev", "log.cold.write"}, {"first", 0}, {"last", 1}, {"offsets", {0, 1}}, {"keys", {"k0", "k1"}},
              {"bodies", {"\"k-body-0\"", "\"k-body-1\""}}});  // a flushed range written again
  EXPECT_GT(twice.violations("LOG-11"), 0u);
}

// LOG-12 by age judges the oldest append time as SQLite's MIN gives it: over integers the smallest,
// wherever its row stands; a REAL below them is what MIN answers, and it is no INTEGER.
TEST(LogChecksMutations, RetentionByAgeJudgesTheOldestAppendAsTheStoreOrdersThem) {
  const json byAge{{"maxAgeMs", 100}, {"maxRecords", nullptr}, {"maxBytes", nullptr}};
  Synth fresh;
  fresh.options(false, byAge);
  fresh.append(3, "k");  // appended at 1000
  fresh.now = 1050;
  fresh.trimDelete(1);  // the oldest left was appended 50 ms ago
  EXPECT_EQ(fresh.violations("LOG-12"), 0u) << fresh.allExamples();
  EXPECT_GT(fresh.checked("LOG-12"), 0u);

  Synth stale;
  stale.options(false, byAge);
  stale.append(3, "k");
  stale.sql("UPDATE durability_log_records SET appended_at = 5000 WHERE \"offset\" = 1");  // the first row left is the newest
  stale.now = 1200;
  stale.trimDelete(1);  // offset 2, appended at 1000, outlived maxAgeMs
  EXPECT_GT(stale.violations("LOG-12"), 0u);
  EXPECT_NE(stale.allExamples().find("the oldest appended at 1000"), std::string::npos) << stale.allExamples();

  Synth real;
  real.options(false, byAge);
  real.append(3, "k");
  real.sql("UPDATE durability_log_records SET appended_at = 999.5 WHERE \"offset\" = 2");
  real.now = 1050;
  EXPECT_THROW(real.trimDelete(1), SqlError);
}

TEST(LogChecksMutations, RetentionLoadAndSegmentShape) {
  Synth s;
  s.options(false, json{{"maxAgeMs", nullptr}, {"maxRecords", 2}, {"maxBytes", nullptr}});
  s.append(5, "k");
  s.trimDelete(1);  // leaves 4 records above maxRecords 2
  EXPECT_GT(s.violations("LOG-12"), 0u);
  s.commitCursor("g", 2);
  s.emit({{"ev", "log.load"}, {"pendingDeliveries", 0}});
  EXPECT_GT(s.violations("LOG-13"), 0u);

  Synth seg;
  seg.options(true);
  seg.append(6, "k");
  seg.trimFlush(3, "seg-0");
  seg.sql("INSERT INTO durability_log_segments VALUES (1, 4, 'bad', 0, 0)");  // overlaps and reaches the hot range
  seg.emit({{"ev", "log.forget.write"}, {"offset", 0}, {"forgotten", 0}});
  seg.commit();
  EXPECT_GT(seg.violations("LOG-15"), 0u);
  EXPECT_GT(seg.violations("LOG-16"), 0u);
}

TEST(LogChecksMutations, UnreadableFlushedOffsetNeedsAColdLoss) {
  Synth s;
  s.options(true);
  s.append(6, "k");
  s.trimFlush(3, "log/a/0");
  s.emit({{"ev", "log.read.truncated"}, {"from", 1}, {"requested", 1}, {"oldest", 3}});
  EXPECT_EQ(s.violations("LOG-16"), 1u);
  // The same failure after the cold store lost that segment is not a violation.
  s.emit({{"ev", "fault"}, {"fault", "cold.vanish"}, {"object", "bucket/log/a/0"}, {"incarnation", 0}, {"point", "hour"}, {"details", json::object()}});
  s.emit({{"ev", "log.read.truncated"}, {"from", 1}, {"requested", 1}, {"oldest", 3}});
  EXPECT_EQ(s.violations("LOG-16"), 1u);
  EXPECT_EQ(s.checked("LOG-16") > 2, true);

  // Under a lifecycle rule the segment may be gone only once its drawn lag has elapsed.
  Synth l;
  l.options(true);
  l.append(6, "k");
  l.emit({{"ev", "fault"}, {"fault", "cold.lifecycle_lag"}, {"object", ""}, {"incarnation", 0}, {"point", "put"}, {"details", {{"lag", 500}}}});
  l.emit({{"ev", "cold.call"}, {"from", kObject}, {"bucket", "log"}, {"op", "put"}, {"key", "seg-0"}, {"outcome", "ok"}, {"applied", true}});
  l.trimFlush(3, "seg-0");
  l.emit({{"ev", "log.read.truncated"}, {"from", 1}, {"requested", 1}, {"oldest", 3}});
  EXPECT_EQ(l.violations("LOG-16"), 1u);
  // A group that skips offsets of that segment before it may have expired is caught; after, not.
  l.emit({{"ev", "app.consume"}, {"partition", kObject}, {"group", "g"}, {"from", 2}, {"offsets", {2}}});
  EXPECT_EQ(l.violations("LOG-08"), 1u);
  l.now += 500;
  l.emit({{"ev", "log.read.truncated"}, {"from", 1}, {"requested", 1}, {"oldest", 3}});
  EXPECT_EQ(l.violations("LOG-16"), 1u);
  l.emit({{"ev", "app.consume"}, {"partition", kObject}, {"group", "h"}, {"from", 2}, {"offsets", {2}}});
  EXPECT_EQ(l.violations("LOG-08"), 1u);
}

TEST(LogChecksMutations, AfterHealAPutWithoutADrawnLagMayBeRemovedAtOnce) {
  // Before heal a put without a lag draw is under no lifecycle rule: losing it is a violation.
  Synth before;
  before.options(true);
  before.append(6, "k");
  before.emit({{"ev", "cold.call"}, {"from", kObject}, {"bucket", "log"}, {"op", "put"}, {"key", "seg-0"}, {"outcome", "ok"}, {"applied", true}});
  before.trimFlush(3, "seg-0");
  before.emit({{"ev", "log.read.truncated"}, {"from", 1}, {"requested", 1}, {"oldest", 3}});
  EXPECT_EQ(before.violations("LOG-16"), 1u);
  // After heal no lag is drawn (it is 0): the object may be gone from its put on.
  Synth after;
  after.options(true);
  after.append(6, "k");
  after.checks.healed();
  after.emit({{"ev", "cold.call"}, {"from", kObject}, {"bucket", "log"}, {"op", "put"}, {"key", "seg-0"}, {"outcome", "ok"}, {"applied", true}});
  after.trimFlush(3, "seg-0");
  after.emit({{"ev", "log.read.truncated"}, {"from", 1}, {"requested", 1}, {"oldest", 3}});
  EXPECT_EQ(after.violations("LOG-16"), 0u);
  EXPECT_GT(after.checked("LOG-16"), 0u);
}

TEST(LogChecksMutations, AlarmMovedByALogCommitAndFlushIntentLeft) {
  Synth s;
  s.options(true, json{{"maxAgeMs", nullptr}, {"maxRecords", 100}, {"maxBytes", nullptr}});
  s.append(2, "k");
  s.alarm = 5000;
  s.append(1, "m");
  EXPECT_GT(s.violations("LOG-17"), 0u);

  Synth f;
  f.options(true, json{{"maxAgeMs", nullptr}, {"maxRecords", 100}, {"maxBytes", nullptr}});
  f.append(3, "k");
  f.emit({{"ev", "log.trim.begin"}, {"now", f.now}});
  f.intent(0, 0);
  f.emit({{"ev", "log.trim.end"}, {"removed", 0}, {"now", f.now}});
  EXPECT_GT(f.violations("LOG-18"), 0u);
}

// A log that used leases, retired by the application (app.log.retired) after `retire` changed the
// store. Returns the SCH-11 violations, and all violations.
std::pair<uint64_t, uint64_t> retiredLogViolations(const std::vector<std::string>& retire) {
  Synth s;
  for (const char* sql : {"CREATE TABLE durability_log_leases (batch_id TEXT PRIMARY KEY)",
                          "CREATE TABLE durability_log_allocations (consumer TEXT PRIMARY KEY)",
                          "INSERT INTO durability_migrations (name, applied_at, capability, down) "
                          "VALUES ('durability_0007_create_log_leases', 0, 'logLeases', '')"})
    s.sql(sql);
  s.options(false);
  s.append(2, "k");
  for (const std::string& sql : retire) s.sql(sql);
  s.commit();
  s.emit({{"ev", "app.log.retired"}, {"partition", kObject}});
  s.checks.finish();
  return {s.violations("SCH-11"), s.checks.tallies().violations()};
}

const std::vector<std::string> kDropLog = {
    "DROP TABLE durability_log_flush", "DROP TABLE durability_log_seq", "DROP TABLE durability_log_segments",
    "DROP TABLE durability_log_cursors", "DROP TABLE durability_log_records",
    "DELETE FROM durability_migrations WHERE name = 'durability_0006_create_log'"};

TEST(LogChecksMutations, LeaseTablesLeftByARetiredLog) {
  // The spec's migrate(none): lease tables, then the log's; the history table goes with its last row.
  std::vector<std::string> full = {"DROP TABLE durability_log_allocations", "DROP TABLE durability_log_leases",
                                   "DELETE FROM durability_migrations WHERE name = 'durability_0007_create_log_leases'"};
  full.insert(full.end(), kDropLog.begin(), kDropLog.end());
  full.push_back("DROP TABLE durability_migrations");
  EXPECT_EQ(retiredLogViolations(full), std::make_pair(uint64_t{0}, uint64_t{0}));
  // H19: the log alone is reverted; the lease tables and their history row stay. No LOG check sees
  // it (the log's tables are gone); SCH-11 does, when the log is retired and at the end.
  EXPECT_EQ(retiredLogViolations(kDropLog), std::make_pair(uint64_t{2}, uint64_t{2}));
  // A log table missing while its migration is recorded.
  EXPECT_EQ(retiredLogViolations({"DROP TABLE durability_log_flush"}).first, 2u);
  // A history table left without rows.
  EXPECT_EQ(retiredLogViolations({"DELETE FROM durability_migrations"}).first, 2u);
}

TEST(LogChecksMutations, HotReadWithBoundsUnlikeTheStore) {
  // Every hot row trimmed: the store's bounds are 3/3/3. A read that took hotOffset as 0 (ordered,
  // 0 <= 0 <= 3) is caught only by comparing its bounds with the store's.
  Synth s;
  s.options(false, json{{"maxAgeMs", nullptr}, {"maxRecords", 1}, {"maxBytes", nullptr}});
  s.append(3, "k");
  s.trimDelete(3);
  json page = s.read(3);
  s.emit(page);
  EXPECT_EQ(s.violations("LOG-04"), 0u);
  page["oldest"] = 0;
  page["hot"] = 0;
  s.emit(page);
  EXPECT_EQ(s.violations("LOG-04"), 1u) << s.allExamples();
  EXPECT_EQ(s.checks.tallies().violations(), 1u) << s.allExamples();
}

// Six produced records, the first three flushed to a segment the cold store keeps: the segment
// index is contiguous, so only reading every offset back tells a readable log from one that is not.
void probedLog(Synth& s) {
  s.options(true, json{{"maxAgeMs", nullptr}, {"maxRecords", 3}, {"maxBytes", nullptr}});
  s.append(6, "k");
  json bodies = json::array();
  for (int i = 0; i < 6; ++i) bodies.push_back("k-body-" + std::to_string(i));
  s.emit({{"ev", "app.produce"}, {"partition", kObject}, {"producer", "p"}, {"keys", {"k0", "k1", "k2", "k3", "k4", "k5"}}, {"bodies", bodies},
          {"offsets", {0, 1, 2, 3, 4, 5}}});
  s.trimFlush(3, "seg-0");
}

json probeRead(int64_t offset, const std::string& body) {
  return {{"ev", "app.log.probe"}, {"partition", kObject}, {"from", offset},
          {"records", json::array({{{"offset", offset}, {"key", "k" + std::to_string(offset)}, {"body", body}}})}};
}

TEST(LogChecksMutations, ReadProbeOfEveryRetainedOffset) {
  Synth ok;
  probedLog(ok);
  for (int64_t o = 0; o < 6; ++o) ok.emit(probeRead(o, "k-body-" + std::to_string(o)));
  ok.emit({{"ev", "app.log.probe.done"}, {"partition", kObject}, {"oldest", 0}, {"next", 6}});
  ok.checks.finish();
  EXPECT_EQ(ok.checks.tallies().violations(), 0u) << ok.allExamples();

  // The last offset of the segment cannot be read though the cold store lost nothing.
  Synth lost;
  probedLog(lost);
  for (int64_t o = 0; o < 6; ++o)
    lost.emit(o == 2 ? json{{"ev", "app.log.probe"}, {"partition", kObject}, {"from", 2}, {"requested", 2}, {"oldest", 3}}
                     : probeRead(o, "k-body-" + std::to_string(o)));
  EXPECT_EQ(lost.violations("LOG-16"), 1u) << lost.allExamples();
  // ... which is allowed once the cold store may have lost the segment.
  lost.emit({{"ev", "fault"}, {"fault", "cold.vanish"}, {"object", "bucket/seg-0"}, {"incarnation", 0}, {"point", "hour"}, {"details", json::object()}});
  lost.emit({{"ev", "app.log.probe"}, {"partition", kObject}, {"from", 2}, {"requested", 2}, {"oldest", 3}});
  EXPECT_EQ(lost.violations("LOG-16"), 1u) << lost.allExamples();

  // A record read back with another body, or another offset's record.
  Synth changed;
  probedLog(changed);
  changed.emit(probeRead(1, "k-body-0"));
  json shifted = probeRead(4, "k-body-4");
  shifted["from"] = 3;
  changed.emit(shifted);
  EXPECT_EQ(changed.violations("LOG-16"), 2u) << changed.allExamples();

  // A retained offset the probe never read back.
  Synth partial;
  probedLog(partial);
  for (int64_t o : {0, 1, 2, 3, 5}) partial.emit(probeRead(o, "k-body-" + std::to_string(o)));
  partial.emit({{"ev", "app.log.probe.done"}, {"partition", kObject}, {"oldest", 0}, {"next", 6}});
  EXPECT_EQ(partial.violations("LOG-16"), 1u) << partial.allExamples();
  EXPECT_EQ(partial.checks.tallies().violations(), 1u) << partial.allExamples();
}

TEST(LogChecksMutations, FlushIntentLeftAfterATrimBeganWithTheFaultsHealed) {
  // A trim whose cold write failed (it threw, so no trim.end) may leave its intent while faults last...
  const auto failedTrim = [](Synth& s) {
    s.options(true, json{{"maxAgeMs", nullptr}, {"maxRecords", 1}, {"maxBytes", nullptr}});
    s.append(3, "k");
    s.emit({{"ev", "log.trim.begin"}, {"now", s.now}});
    s.intent(0, 1);
    s.emit(s.coldWrite(0, 1));
    s.emit({{"ev", "log.cold.failed"}, {"first", 0}, {"last", 1}, {"message", "500"}});
  };
  Synth before;
  failedTrim(before);
  before.checks.healed();
  before.checks.finish();
  EXPECT_EQ(before.checks.tallies().violations(), 0u) << before.allExamples();
  // ... but a trim that began after heal must finish it.
  Synth after;
  after.checks.healed();
  failedTrim(after);
  after.checks.finish();
  EXPECT_EQ(after.violations("LOG-18"), 1u) << after.allExamples();
}

TEST(LogChecks, AMalformedEventIsAViolationOfTheCheckItFeeds) {
  Synth s;
  EXPECT_NO_THROW(s.emit({{"ev", "log.append.write"}, {"keys", {"a"}}}));
  EXPECT_EQ(s.violations("LOG-01"), 1u);
  EXPECT_NE(s.allExamples().find("malformed 'log.append.write' event"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// The real DurabilityLog on the simulator

using rt_test::LogHost;
using rt_test::LogRig;
using rt_test::rec;

StoreReader rigReader(LogRig& rig) {
  return StoreReader{[&rig](const std::string& label, std::string_view sql, const std::vector<SqlValue>& params) {
    return rig.runtime.world().stores().live(label, sql, params);
  }};
}

struct MemoryCold {
  std::map<std::string, std::vector<LogRecord>> segments;
  int64_t failWrites = 0;
};

Task<std::string> memoryWrite(std::shared_ptr<MemoryCold> cold, LogSegment segment) {
  const std::string locator = "seg-" + std::to_string(segment.firstOffset);
  if (cold->failWrites > 0) {
    --cold->failWrites;
    throw std::runtime_error("cold write failed");
  }
  cold->segments.emplace(locator, segment.records);  // create-only
  co_return locator;
}

Task<std::optional<std::vector<LogRecord>>> memoryRead(std::shared_ptr<MemoryCold> cold, std::string locator) {
  auto it = cold->segments.find(locator);
  if (it == cold->segments.end()) co_return std::nullopt;
  co_return it->second;
}

Task<json> appendKeys(LogHost& h, const std::vector<std::string>& keys) {
  std::vector<LogAppendInput> inputs;
  for (const std::string& key : keys) inputs.push_back(rec(json{{"k", key}}, key));
  Task<EnqueueResult<std::vector<int64_t>>> call = h.log.append(inputs);
  EnqueueResult<std::vector<int64_t>> result = co_await call;
  co_return result.success ? json(*result.value) : json(nullptr);
}

Task<json> exercise(LogHost& h, bool cold) {
  json out = json::array();
  for (int batch = 0; batch < 6; ++batch) {
    const std::vector<std::string> keys = {"k" + std::to_string(batch * 2), "k" + std::to_string(batch * 2 + 1), "k" + std::to_string(batch * 2)};
    Task<json> appended = appendKeys(h, keys);
    json offsets = co_await appended;
    out.push_back(offsets);
  }
  const std::vector<std::string> retryKeys = {"k3", "k4"};  // a producer retry: dedup hits
  Task<json> retry = appendKeys(h, retryKeys);
  json retried = co_await retry;
  out.push_back(retried);
  std::vector<LogAppendInput> none;
  Task<EnqueueResult<std::vector<int64_t>>> rejected = h.log.append(none);
  (void)co_await rejected;
  Task<LogBounds> starting = h.log.bounds();
  const LogBounds start = co_await starting;
  Task<LogPage> first = h.log.read(start.oldestOffset, 4);
  LogPage page = co_await first;
  Task<void> committed = h.log.commit("g", page.nextOffset);
  co_await committed;
  Task<void> late = h.log.commit("g", 1);
  co_await late;
  Task<int64_t> trimmed = h.log.trim();
  const int64_t removed = co_await trimmed;
  out.push_back(removed);
  if (cold) {
    Task<LogPage> rehydrated = h.log.read(start.oldestOffset, 3);
    LogPage again = co_await rehydrated;
    out.push_back(static_cast<int64_t>(again.records.size()));
  }
  Task<LogBounds> bounding = h.log.bounds();
  const LogBounds bounds = co_await bounding;
  Task<LogPage> rest = h.log.read(std::max(page.nextOffset, bounds.oldestOffset));
  LogPage tail = co_await rest;
  out.push_back(tail.nextOffset);
  Task<LoadSnapshot> load = h.log.load();
  (void)co_await load;
  co_return out;
}

LogRetention keepRecords(int64_t n) {
  LogRetention retention;
  retention.maxRecords = n;
  return retention;
}

TEST(LogChecksOnTheEngine, PlainLogPasses) {
  LogRig rig;
  LogChecks checks(rigReader(rig), rt_test::kLogClass);
  rig.world.observe(checks);
  rig.env.options.retention = keepRecords(5);
  rig.run([](LogHost& h) { return exercise(h, false); });
  checks.finish();
  std::string examples;
  for (const auto& [id, tally] : checks.tallies().by_id())
    for (const std::string& example : tally.examples) examples += id + ": " + example + "\n";
  EXPECT_EQ(checks.tallies().violations(), 0u) << examples;
  for (const char* id : {"LOG-01", "LOG-02", "LOG-03", "LOG-04", "LOG-05", "LOG-06", "LOG-07", "LOG-08", "LOG-09", "LOG-10", "LOG-12",
                         "LOG-13", "LOG-14", "LOG-17"})
    EXPECT_GT(checks.tallies().by_id().at(id).checked, 0u) << id;
}

TEST(LogChecksOnTheEngine, ColdLogWithAFailedFlushPasses) {
  LogRig rig;
  LogChecks checks(rigReader(rig), rt_test::kLogClass);
  rig.world.observe(checks);
  auto cold = std::make_shared<MemoryCold>();
  cold->failWrites = 1;
  rig.env.options.retention = keepRecords(4);
  rig.env.options.maxBatchSize = 3;
  rig.env.options.cold = LogColdStorage{[cold](const LogSegment& s) { return memoryWrite(cold, s); },
                                        [cold](const std::string& l) { return memoryRead(cold, l); }};
  rig.env.script = [](LogHost& h) { return exercise(h, true); };
  rt_test::CallPtr failed = rig.call(rt_test::kLogClass, "a", "run");  // the first flush fails: trim throws
  rig.run_for(5'000);
  EXPECT_FALSE(failed->ok);
  rig.run([](LogHost& h) -> Task<json> {
    Task<int64_t> trimmed = h.log.trim();  // retries the recorded intent
    const int64_t removed = co_await trimmed;
    co_return json(removed);
  });
  checks.finish();
  std::string examples;
  for (const auto& [id, tally] : checks.tallies().by_id())
    for (const std::string& example : tally.examples) examples += id + ": " + example + "\n";
  EXPECT_EQ(checks.tallies().violations(), 0u) << examples;
  for (const char* id : {"LOG-09", "LOG-10", "LOG-11", "LOG-15", "LOG-16", "LOG-18"}) EXPECT_GT(checks.tallies().by_id().at(id).checked, 0u) << id;
}

// A run whose first call dies at the `nth` opportunity of `kind` (a commit failing definitely, or a
// confirmation failing so that only a drawn prefix of the unconfirmed commits survives), then a second
// call that repeats the work with the same keys. Returns the number of LOG violations; `crashed` tells
// whether the fault ended an incarnation.
uint64_t crashedRunViolations(sim::FaultKind kind, int64_t nth, bool cold, bool* crashed, std::string* examples) {
  LogRig rig;
  LogChecks checks(rigReader(rig), rt_test::kLogClass);
  rig.world.observe(checks);
  rig.faults.set_latency(sim::LatencyKind::confirm, 3);
  rig.faults.fire_at(kind, nth);
  auto store = std::make_shared<MemoryCold>();
  rig.env.options.retention = keepRecords(5);
  rig.env.options.maxBatchSize = 3;
  if (cold)
    rig.env.options.cold = LogColdStorage{[store](const LogSegment& s) { return memoryWrite(store, s); },
                                          [store](const std::string& l) { return memoryRead(store, l); }};
  rig.env.script = [cold](LogHost& h) { return exercise(h, cold); };
  rig.call(rt_test::kLogClass, "a", "run");
  rig.run_for(5'000);
  *crashed = !rig.events("incarnation.end", "Log/a").empty();
  rig.call(rt_test::kLogClass, "a", "run");  // may meet the fault too when the first call ended early
  rig.run_for(5'000);
  checks.finish();
  for (const auto& [id, tally] : checks.tallies().by_id())
    for (const std::string& example : tally.examples) *examples += id + ": " + example + "\n";
  return checks.tallies().violations();
}

TEST(LogChecksOnTheEngine, CrashesAndLostCommitsPass) {
  int crashes = 0;
  for (const sim::FaultKind kind : {sim::FaultKind::storage_commit_definite, sim::FaultKind::storage_commit_uncertain})
    for (const bool cold : {false, true})
      for (int64_t nth = 2; nth <= 14; nth += 3) {
        bool crashed = false;
        std::string examples;
        EXPECT_EQ(crashedRunViolations(kind, nth, cold, &crashed, &examples), 0u)
            << sim::fault_name(kind) << " at " << nth << (cold ? " with cold" : "") << "\n" << examples;
        crashes += crashed;
      }
  EXPECT_GT(crashes, 10);
}


}  // namespace
}  // namespace durasim::properties
