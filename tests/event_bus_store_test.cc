// The event bus's stored tables as the EVT checks read them (properties/event_bus_store.h): brought
// up to date from the row-change journal at any moment, in the middle of transactions and
// savepoints too, every answer equals the statement over the live store that it stands for (the
// statements the checks ran before the mirrors).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/conventions.h"
#include "engine/event_bus_schema.h"
#include "properties/event_bus_store.h"
#include "sim/sqlite_store.h"

namespace durasim {
namespace {

using nlohmann::json;

constexpr int64_t kNow = 1'700'000'000'000;

const std::vector<std::string> kKeyPrefixes = {"evtack:t:c:", "evtatt:t:c:", "evtdead:t:c:", "evtack:t:d:", "evtcursor:t:"};
const std::vector<std::string> kNamespaces = {"evt:t", "evt:u", "evtpend:t:c", "evtdlq:t:c"};
// Values as the bus stores them (serialize: the value wrapped).
const std::vector<json> kValues = {true, json{{"n", 2}, {"nextAt", 5}}, "17", json{{"releases", 1}}};

struct Bus {
  uint64_t bits = 1;
  sim::SqliteStore store{sim::SqlEnvironment{[this] { return bits++; }, [] { return kNow; }}};
  properties::StoredBus mirrored;
  properties::StoreReader reader{
      [this](const std::string&, std::string_view sql, const std::vector<SqlValue>& params) { return store.observe_live(sql, params); }, nullptr,
      [this](const std::string&, std::string_view table, sim::RowChangeCursor& cursor) { return store.observe_live_changes(table, cursor); },
      [this](const std::string&, std::string_view table, sim::RowChangeCursor& cursor) { return store.observe_live_key_changes(table, cursor); }};

  Bus() {
    store.exec("CREATE TABLE " DURASIM_EVENTS_LOG " (seq INTEGER PRIMARY KEY AUTOINCREMENT, ns TEXT NOT NULL, id TEXT NOT NULL,"
               " payload TEXT NOT NULL, ts INTEGER NOT NULL, UNIQUE (ns, id))");
    store.exec("CREATE TABLE " DURASIM_EVENTS_KV " (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID");
    store.commit_local();
  }

  // What the statements say.
  std::optional<json> value(const std::string& key) {
    const std::optional<SqlRow> r = store.observe_live("SELECT value FROM " DURASIM_EVENTS_KV " WHERE key = ?", {key}).next();
    return r ? std::optional<json>(deserialize(r->text("value"))) : std::nullopt;
  }
  std::map<std::string, json> valuesUnder(std::string prefix) {
    std::string past = prefix;
    past.back() = ';';
    std::map<std::string, json> out;
    for (const SqlRow& r : store.observe_live("SELECT key, value FROM " DURASIM_EVENTS_KV " WHERE key >= ? AND key < ?", {prefix, past}).toVector())
      out[r.text("key")] = deserialize(r.text("value"));
    return out;
  }
  std::optional<std::pair<int64_t, std::string>> entry(const std::string& ns, const std::string& id) {
    const std::optional<SqlRow> r = store.observe_live("SELECT seq, payload FROM " DURASIM_EVENTS_LOG " WHERE ns = ? AND id = ?", {ns, id}).next();
    return r ? std::optional(std::make_pair(r->int64("seq"), r->text("payload"))) : std::nullopt;
  }
  std::map<std::string, int64_t> entries(const std::string& ns) {
    std::map<std::string, int64_t> out;
    for (const SqlRow& r : store.observe_live("SELECT seq, id, payload FROM " DURASIM_EVENTS_LOG " WHERE ns = ?", {ns}).toVector()) {
      int64_t seq = r.int64("seq");
      if (ns.rfind("evt:", 0) != 0) {
        const json payload = deserialize(r.text("payload"));
        seq = payload.is_object() && payload.contains("seq") && payload.at("seq").is_number_integer() ? payload.at("seq").get<int64_t>() : -1;
      }
      out[r.text("id")] = seq;
    }
    return out;
  }
};

std::string idOf(int n) { return "e" + std::to_string(n); }

void change(Bus& bus, int& savepoints) {
  const int op = *rc::gen::inRange(0, 10);
  const int n = *rc::gen::inRange(0, 12);
  const std::string key = *rc::gen::elementOf(kKeyPrefixes) + idOf(n);
  const std::string ns = *rc::gen::elementOf(kNamespaces);
  switch (op) {
    case 0:
    case 1:
      bus.store.exec("INSERT INTO " DURASIM_EVENTS_KV " (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                     {key, *serialize(*rc::gen::elementOf(kValues))});
      break;
    case 2: bus.store.exec("DELETE FROM " DURASIM_EVENTS_KV " WHERE key = ?", {key}); break;
    case 3:
    case 4: {
      const std::string payload = *serialize(ns.rfind("evt:", 0) == 0 ? json{{"body", n}} : json{{"seq", n}});
      bus.store.exec("INSERT OR IGNORE INTO " DURASIM_EVENTS_LOG " (ns, id, payload, ts) VALUES (?, ?, ?, 0)", {ns, idOf(n), payload});
      break;
    }
    case 5: bus.store.exec("DELETE FROM " DURASIM_EVENTS_LOG " WHERE ns = ? AND id = ?", {ns, idOf(n)}); break;
    case 6:
      bus.store.savepoint_begin();
      ++savepoints;
      break;
    case 7:
      if (savepoints > 0) {
        bus.store.savepoint_rollback();
        --savepoints;
      }
      break;
    case 8:
      for (; savepoints > 0; --savepoints) bus.store.savepoint_release();
      bus.store.commit_local();
      break;
    case 9:
      bus.store.rollback_open();
      savepoints = 0;
      break;
  }
}

RC_GTEST_PROP(StoredBus, AnswersAsTheStatementsOverTheLiveStore, ()) {
  Bus bus;
  int savepoints = 0;
  const int steps = *rc::gen::inRange(1, 60);
  for (int step = 0; step < steps; ++step) {
    change(bus, savepoints);
    if (*rc::gen::inRange(0, 3) == 0) continue;  // some changes pile up between two looks
    bus.mirrored.refresh(bus.reader, "Bus/a");
    RC_ASSERT(bus.mirrored.hasKv() && bus.mirrored.hasLog());
    for (const std::string& prefix : kKeyPrefixes) {
      const std::map<std::string, json> stored = bus.valuesUnder(prefix);
      RC_ASSERT(bus.mirrored.valuesUnder(prefix) == stored);
      RC_ASSERT(bus.mirrored.countUnder(prefix) == static_cast<int64_t>(stored.size()));
      std::set<std::string> keys;
      for (const auto& [key, value] : stored) keys.insert(key);
      RC_ASSERT(bus.mirrored.keysUnder(prefix) == keys);
      for (int n = 0; n < 12; ++n) RC_ASSERT(bus.mirrored.value(prefix + idOf(n)) == bus.value(prefix + idOf(n)));
    }
    for (const std::string& ns : kNamespaces) {
      const std::map<std::string, int64_t> entries = bus.entries(ns);
      RC_ASSERT(bus.mirrored.entries(ns) == entries);
      RC_ASSERT(bus.mirrored.count(ns) == static_cast<int64_t>(entries.size()));
      for (int n = 0; n < 12; ++n) RC_ASSERT(bus.mirrored.entry(ns, idOf(n)) == bus.entry(ns, idOf(n)));
    }
  }
}

TEST(StoredBus, AnObjectWithoutTheBusTablesHasNone) {
  uint64_t bits = 1;
  sim::SqliteStore store{sim::SqlEnvironment{[&bits] { return bits++; }, [] { return kNow; }}};
  const properties::StoreReader reader{
      [&](const std::string&, std::string_view sql, const std::vector<SqlValue>& params) { return store.observe_live(sql, params); }};
  properties::StoredBus mirrored;
  mirrored.refresh(reader, "Bus/a");
  EXPECT_FALSE(mirrored.hasKv());
  EXPECT_FALSE(mirrored.hasLog());
  EXPECT_EQ(mirrored.value("evtack:t:c:e1"), std::nullopt);
  EXPECT_EQ(mirrored.count("evt:t"), 0);
}

}  // namespace
}  // namespace durasim
