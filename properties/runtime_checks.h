// History checks of the simulated runtime over the event stream (invariants-events-runtime.md,
// "Runtime and simulator"). One observer of the recorder sees every event as it is recorded and
// counts, per invariant ID, each check and each violation:
//   RT-03  an alarm handler never starts before its scheduled time (one run exempt per alarm.early
//          fault drawn for that scheduled time)
//   RT-04  per object, at most one alarm run at a time (a run ends at alarm.success / alarm.failure or
//          at the end of its incarnation)
//   RT-07  confirmations in commit order, commit numbers increasing, a durability decision keeps a
//          prefix of the unconfirmed commits and what vanished is never confirmed
//   RT-08  every commit and confirmation names the object's live incarnation (incarnations of one
//          object start one at a time, in increasing order)
//   RT-09  the "fault" events per fault id equal the fault plan's firings (report_faults)
//   RT-10  output gate: an effect leaves only once the commit it waited for is confirmed, in
//          production order, never after it was dropped or its incarnation ended; and no caller
//          receives more replies from an object than its output gate released (a reply that reached
//          its caller around the gate is a violation, counted on its own since no release was checked)
//   RT-18  after a storage.critical fault, its incarnation commits nothing and no effect of it leaves
//   RT-12  the alarm retry schedule of runtime.md 7.4, replayed per (object, scheduled) occurrence
//   RT-14  every alarm run starts no later than kAlarmMaxLateMs after the latest of its scheduled
//          time, the retry its occurrence's last failure announced and the end of the object's
//          previous run; at the check phase no object stores an alarm whose time (or announced retry)
//          passed more than kAlarmMaxLateMs ago, or at all once nothing is left to run, without a run
//          in progress (the stored value followed through commits and durability decisions; all
//          exempt after alarm.lost)
//   RT-24  at the check phase: no overdue stored alarm (as RT-14), and no commit awaiting a
//          confirmation once nothing is left to run
//   RT-15  per stub, deliveries in call order; no successful reply on a stub after one of its calls failed
//   RT-16  a call lost before delivery was not delivered, one whose reply was lost was delivered once,
//          no call is delivered twice (exempt after an rpc.duplicate_delivery fault on the callee)
//   RT-19  no event of an incarnation after its end, except the effects dropped by the end itself
//          (exempt within kShutdownGraceMs for an incarnation an object.zombie fault kept running);
//          an object's canary (runtime_events::kCanary, reported by workloads that set one up) was
//          set up by the incarnation reading it
//   RT-22  accepted writes to one cold-store key at least kColdWriteIntervalMs apart
//   RT-25  a sleep application code reports (runtime_events::kSlept) resumed no earlier than asked + ms
// Only IDs actually checked in a run are added to its tallies.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "faults/accounting.h"
#include "properties/durable_state.h"
#include "properties/event_type.h"
#include "properties/object_checker.h"
#include "sim/tally.h"
#include "sim/trace_sink.h"

namespace durasim::properties {

class RuntimeChecks final : public sim::TraceSink {
 public:
  static constexpr int64_t kColdWriteIntervalMs = 1'000;  // runtime.md 1
  static constexpr int64_t kShutdownGraceMs = 30'000;     // runtime.md 1 (object.zombie)
  static constexpr int64_t kAlarmMaxLateMs = 60'000;      // runtime.md 1: how late a fire may be

  using sim::TraceSink::record;
  void record(const sim::TraceEvent& event) override;
  // Adds this run's checks of RT-03, 04, 07, 08, 10, 12, 14, 15, 16, 19, 22, 24 and 25 to `tallies`
  // (RT-14 and RT-24 once the run's "phase: check" event was seen).
  void report(sim::Tallies& tallies) const;
  // RT-09: one check per fault id, the number of "fault" events seen against `accounting`'s firings.
  void report_faults(sim::Tallies& tallies, const faults::FaultAccounting& accounting) const;

 private:
  // RT-12: c, e and whether the last failure was uncounted, for one (object, scheduled) occurrence.
  struct Occurrence {
    int64_t counted = 0;
    int exponent = 0;
    bool last_uncounted = false;
    std::optional<int64_t> next;  // the retry time announced by the last failure
    bool abandoned = false;
  };

  // The stored alarm; each commit event says what it left.
  struct StoredAlarm {
    std::optional<int64_t> at;
    void apply(const std::optional<int64_t>& alarm) { at = alarm; }
  };

  // RT-14: when the last alarm run of an object ended, and for which scheduled time.
  struct AlarmEnd {
    int64_t scheduled = 0;
    int64_t at = 0;
  };

  struct ObjectState {
    std::optional<int64_t> live;    // RT-08: the incarnation between its start and its end
    int64_t last_started = 0;
    // RT-07
    uint64_t last_commit = 0;
    uint64_t last_confirm = 0;
    uint64_t durable = 0;                      // the last confirmed or kept commit
    std::set<uint64_t> vanished;
    // RT-14: the stored alarm as the object reads it (local: every local commit applied), and as
    // its durable state holds it (confirmed and kept commits only).
    DurableState<StoredAlarm, std::optional<int64_t>> alarm;
    std::optional<AlarmEnd> last_alarm_end;
    bool alarm_lost = false;  // an alarm.lost fault (arbitrary profile) excuses a silent alarm
    // RT-04
    std::optional<int64_t> alarm_running;  // the incarnation of the run in progress
    // RT-12
    std::map<int64_t, Occurrence> occurrences;
    // Exemptions for faults of the arbitrary profile.
    std::multiset<int64_t> early_fires;  // scheduled times of alarm.early faults not yet matched by an early run
    int64_t duplicate_deliveries = 0;
    // RT-18: the incarnation a storage.critical fault poisoned (nothing of it commits or leaves after)
    std::optional<int64_t> poisoned;
    // RT-10: replies its output gate released, and replies its callers received.
    uint64_t replies_released = 0;
    uint64_t replies_received = 0;
  };

  struct IncarnationState {
    std::optional<int64_t> ended_at;  // RT-19
    bool zombie = false;
    uint64_t last_released = 0;       // RT-10
    std::set<uint64_t> released, dropped;
  };

  struct CallState {
    uint64_t stub = 0;
    uint64_t index = 0;      // position among the calls of its stub
    std::string to;
    int64_t deliveries = 0;
    int64_t duplicates = 0;             // deliveries excused by rpc.duplicate_delivery faults
    std::optional<std::string> failed;  // the rpc.fail "how"
  };

  struct StubState {
    uint64_t calls = 0;
    std::optional<uint64_t> last_delivered;  // index of the last delivered call
    bool failed = false;
  };

  ObjectState& object(const std::string& label) { return objects_[label]; }
  IncarnationState& incarnation(const std::string& label, int64_t number) { return incarnations_.at(label, number); }

  void on_incarnation_start(const EventFields& e, int64_t t);
  void on_incarnation_end(const EventFields& e, int64_t t);
  void on_commit(const EventFields& e);
  void on_confirm(const EventFields& e);
  void on_durability(const EventFields& e);
  void on_effect(const EventFields& e, bool dropped);
  void on_alarm_run(const EventFields& e, int64_t t);
  void on_alarm_end(const EventFields& e, int64_t t, bool success);
  void on_rpc_call(const EventFields& e);
  void on_rpc_deliver(const EventFields& e);
  void on_rpc_reply(const EventFields& e);
  void on_rpc_fail(const EventFields& e);
  void on_cold_call(const EventFields& e, int64_t t);
  void on_fault(const EventFields& e);
  void on_canary(const EventFields& e);
  void on_slept(const EventFields& e);
  void on_phase(const EventFields& e, int64_t t);
  // RT-14 and RT-24 at the check phase, `idle` when the executor had nothing left to run.
  void check_liveness(int64_t t, bool idle);
  // RT-19 for any event tagged with an object's incarnation.
  void check_not_after_end(EventType ev, const std::string& label, int64_t number, int64_t t);

  sim::Tallies tallies_;
  std::map<std::string, ObjectState> objects_;
  IncarnationStates<IncarnationState> incarnations_;
  std::map<uint64_t, CallState> calls_;
  std::map<uint64_t, StubState> stubs_;
  std::map<std::pair<std::string, std::string>, int64_t> cold_last_write_;  // (bucket, key) -> t
  std::map<std::string, uint64_t> fault_events_;                             // fault id -> events
};

}  // namespace durasim::properties
