// The tables of the event bus's store port (events.md 3.5) and its key families (events.md 4.2).
// Table names are string-literal macros so that a statement is assembled by the compiler
// ("SELECT ... FROM " DURASIM_EVENTS_LOG " WHERE ..."); the engine, the checkers and the workloads
// spell them only through these. The tables are created with IF NOT EXISTS by the SQLite adapter
// (no durability migration: the bus does not compose the scheduler; SCH-11 ignores them).
//   work_log  (the log space): seq INTEGER PRIMARY KEY AUTOINCREMENT (never reused), ns, id,
//             payload (serialized), ts; UNIQUE (ns, id); index (ns, seq)
//   work_kv   (the key-value space): key TEXT PRIMARY KEY, value (serialized); WITHOUT ROWID
#pragma once

#include <string_view>

#define DURASIM_EVENTS_LOG "work_log"
#define DURASIM_EVENTS_KV "work_kv"
#define DURASIM_EVENTS_LOG_NS_SEQ_INDEX "work_log_ns_seq"
// Added only under the variant events.order_by_timestamp (events.md 3.5).
#define DURASIM_EVENTS_LOG_NS_TS_INDEX "work_log_ns_ts"

namespace durasim::events::keys {

// Prefixes of the key families (events.md 4.2): T = enc(topic), C = enc(consumer), I = enc(id).
inline constexpr std::string_view kTopicLog = "evt:";        // log namespace evt:T, record id = raw id
inline constexpr std::string_view kAck = "evtack:";          // KV evtack:T:C:I = true
inline constexpr std::string_view kAttempts = "evtatt:";     // KV evtatt:T:C:I = StoredAttempts | legacy int
inline constexpr std::string_view kDead = "evtdead:";        // KV evtdead:T:C:I = StoredDead
inline constexpr std::string_view kCursor = "evtcursor:";    // KV evtcursor:T:C = decimal position
inline constexpr std::string_view kPending = "evtpend:";     // log namespace evtpend:T:C, payload {"seq"}
inline constexpr std::string_view kDeadIndex = "evtdlq:";    // log namespace evtdlq:T:C, payload {"seq"}
inline constexpr std::string_view kRescan = "evtrescan:";    // KV evtrescan:T:C (variant only)

}  // namespace durasim::events::keys
