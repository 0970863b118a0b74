// RT-02 (time never goes backwards), checked over the trace: the World time stamped on every event
// never decreases. It observes the event stream as it is recorded.
#pragma once

#include <cstdint>
#include <string>

#include "sim/tally.h"
#include "sim/trace_sink.h"

namespace durasim::properties {

class TimeOrderCheck final : public sim::TraceSink {
 public:
  using sim::TraceSink::record;
  void record(const sim::TraceEvent& event) override;
  // Adds this run's RT-02 checks to `tallies`.
  void report(sim::Tallies& tallies) const;

 private:
  int64_t last_ = INT64_MIN;
  uint64_t checked_ = 0;
  uint64_t backwards_ = 0;
  std::string first_violation_;
};

}  // namespace durasim::properties
