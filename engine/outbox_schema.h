// The tables of DurabilityOutbox (outbox.md 2) and the migration that creates them (outbox.cc).
// Names are string-literal macros so that a statement is assembled by the compiler
// ("SELECT ... FROM " DURASIM_OUTBOX " WHERE ..."); the engine, the checkers and the workloads spell
// them only through these.
//   outbox  (one row per (channel, key): the newest staged value not yet acknowledged):
//           (channel, key) PRIMARY KEY, version (UNIQUE, object-wide), value (serialized),
//           generation_id (new on every stage), attempt, next_attempt_at (due time, or publish
//           deadline while claimed), last_error, last_error_name, staged_at
//   seq     one row (id = 1): next_version (starts at 1, never decreases)
#pragma once

#define DURASIM_OUTBOX "durability_outbox"
#define DURASIM_OUTBOX_SEQ "durability_outbox_seq"
#define DURASIM_OUTBOX_MIGRATION "durability_0008_create_outbox"
