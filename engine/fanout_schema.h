// The tables of DurabilityFanout (fanout.md 2) and the migration that creates them (fanout.cc).
// Names are string-literal macros so that a statement is assembled by the compiler
// ("SELECT ... FROM " DURASIM_FANOUT_DELIVERIES " WHERE ..."); the engine, the checkers and the
// workloads spell them only through these.
//   messages   (the manifest, one per live deduplication key): key PRIMARY KEY, id, payload,
//              targets (JSON array of the sorted target ids), remaining, seq, created_at, generation_id
//   deliveries (one per message and target): id PRIMARY KEY (json [key, target]), message_key,
//              target_id, seq, status ('pending'), phase ('delivery' | 'dead_letter'), attempt,
//              next_attempt_at, last_error, last_error_name, created_at, generation_id,
//              dead_lettered_at, dead_letter_reason ('explicit' | 'exhausted')
//   seq        one row (id = 1): next_seq
//   memos      (message_key, target_id, generation_id, step) PRIMARY KEY, value, attempt, created_at
#pragma once

#define DURASIM_FANOUT_MESSAGES "durability_fanout_messages"
#define DURASIM_FANOUT_DELIVERIES "durability_fanout_deliveries"
#define DURASIM_FANOUT_SEQ "durability_fanout_seq"
#define DURASIM_FANOUT_MEMOS "durability_fanout_memos"
#define DURASIM_FANOUT_MIGRATION "durability_0005_create_fanout"
