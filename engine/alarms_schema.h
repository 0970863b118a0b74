// The table of named alarms (scheduler.md 6.2) and the migration that creates it (alarms.cc). Names
// are string-literal macros so that a statement is assembled by the compiler
// ("SELECT ... FROM " DURASIM_ALARMS " WHERE ..."); the engine and the checkers spell them only
// through these. Columns: name TEXT PRIMARY KEY, generation_id, status ('pending', 'failed'),
// scheduled_at, next_attempt_at, attempt, last_error, last_error_name, created_at.
#pragma once

#define DURASIM_ALARMS "durability_alarms"
#define DURASIM_ALARMS_MIGRATION "durability_0003_create_alarms"
