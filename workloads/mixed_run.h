// The state of one run of the mixed workload (mixed_workload.cc) and its roles besides the log's.
// The chain: producers append to LogPartition objects through routing (log_producers.cc); consumer
// group g0 (log_groups.cc) hands each page to the forwarder (mixed_chain.cc), which enqueues every
// record into the partition's Mailbox under a key derived from the record, so a record read again is
// a duplicate, not a second message; each Mailbox's consumer target is an Account (account.h) that
// applies each record once, staging its balance to the outbox, which publishes to the OutboxSink, and
// emits one event per record to the Bus, whose consumers acknowledge it. Leased pollers read the
// partitions beside the chain, as in the log workload. Before heal an operator redrives dead
// letters and a ticker schedules the mailboxes' named alarm (mixed_operators.cc); after heal the
// sweeper redrives every dead letter and releases every quarantined event until the chain converges.
// Names: partitions "p<i>", mailboxes "mb<j>" (partition p<i> feeds mailbox mb<i mod mailboxes>),
// accounts "a<j>" (the consumer target of mb<j>), the sink "OutboxSink/s0", the bus "Bus/b0".
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/task.h"
#include "workloads/account.h"
#include "workloads/bus_app.h"
#include "workloads/client.h"
#include "workloads/log_roles.h"
#include "workloads/mailbox.h"

namespace durasim::workloads {

inline constexpr char kMixedBus[] = "b0";
inline constexpr char kAppliedTopic[] = "ledger:applied";  // the topic of the accounts' events

inline std::string mixedMailbox(int64_t j) { return numbered("mb", j); }
inline std::string mixedAccount(int64_t j) { return numbered("a", j); }

// What the mixed roles count, for the workload's metrics.
struct MixedCounts {
  int64_t forwarded = 0;    // records enqueued (duplicates included)
  int64_t unforwarded = 0;  // pages a mailbox refused definitely (read again)
  int64_t redrives = 0;     // redrive calls
  int64_t releases = 0;     // quarantined events released after heal
};

// REQUIRES: it outlives every role's task.
struct MixedRun {
  LogRun log;  // the partitions, their producers and consumers; log.runtime hosts every object
  int64_t mailboxes = 0;
  MailboxConfig mailbox;  // drawn per seed (every mailbox has a DLQ)
  AccountConfig account;  // drawn per seed ("ledger" only)
  BusConfig bus;          // the applied topic and its consumers, drawn per seed
  std::unique_ptr<ObjectClient> mailboxClient, busClient;
  MixedCounts counts;

  sim::World& world() const { return *log.world; }
  // The mailbox partition `name` feeds.
  std::string mailboxOf(const std::string& partition) const;
};

// The group's page handler: enqueues every record of the page into its partition's mailbox as
// {id = deduplication key = "<partition>:<offset>", body {key: the producer named by the record's
// key ("P1" of "P1-4"), amount: 1}}, repeated until the answer is definite; true when the mailbox
// accepted the batch.
Task<bool> forwardPage(MixedRun& run, std::string partition, nlohmann::json records);
// What keeps the chain from having converged (empty once every appended record's deposit is at the
// sink, read from the stores): "the sink holds n of m appended records".
std::vector<std::string> chainBehind(const MixedRun& run);
// Every bus consumer that has not acknowledged every event (bus_drivers.h).
std::vector<std::string> busBehind(const MixedRun& run);
// After heal, until the chain converged and the bus drained: every 30 s redrives every mailbox's
// dead letters and releases every quarantined bus event. It draws nothing (it must run to drain).
Task<void> sweeper(MixedRun& run);

// Before heal (mixed_operators.cc): every 40 s asks one mailbox to redrive a few dead letters.
Task<void> redriver(MixedRun& run);
// Before heal, for mailboxes with named alarms: schedules the "tick" alarm now and then.
Task<void> ticker(MixedRun& run);

}  // namespace durasim::workloads
