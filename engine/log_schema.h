// The tables of the retained log (log.md 2) and the migrations that create them (log.cc). Names are
// string-literal macros so that a statement is assembled by the compiler
// ("SELECT next_offset FROM " DURASIM_LOG_SEQ " WHERE id = 1"); the engine and the checkers spell a
// table or migration name only through these. Columns:
//   records      "offset" INTEGER PRIMARY KEY, dedup_key TEXT UNIQUE, payload TEXT, bytes, appended_at
//   cursors      consumer TEXT PRIMARY KEY, "offset", committed_at
//   segments     first_offset INTEGER PRIMARY KEY, last_offset, locator TEXT, bytes, flushed_at
//   seq          id = 1, next_offset, total_bytes
//   flush        id = 1, first_offset, last_offset, created_at (the flush intent, H20)
//   leases       batch_id TEXT PRIMARY KEY, consumer, first_offset, last_offset,
//                state ('active', 'pending', 'acked', 'skipped'), attempt, expires_at, created_at
//   allocations  consumer TEXT PRIMARY KEY, allocated_offset
#pragma once

#define DURASIM_LOG_RECORDS "durability_log_records"
#define DURASIM_LOG_CURSORS "durability_log_cursors"
#define DURASIM_LOG_SEGMENTS "durability_log_segments"
#define DURASIM_LOG_SEQ "durability_log_seq"
#define DURASIM_LOG_FLUSH "durability_log_flush"
#define DURASIM_LOG_LEASES "durability_log_leases"
#define DURASIM_LOG_ALLOCATIONS "durability_log_allocations"

#define DURASIM_LOG_MIGRATION "durability_0006_create_log"
#define DURASIM_LOG_LEASES_MIGRATION "durability_0007_create_log_leases"
