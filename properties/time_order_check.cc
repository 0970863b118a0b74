// RT-02 over the event stream; see time_order_check.h.
#include "properties/time_order_check.h"

namespace durasim::properties {

void TimeOrderCheck::record(const sim::TraceEvent& event) {
  const int64_t t = event.t();
  ++checked_;
  if (t < last_) {
    if (backwards_++ == 0)
      first_violation_ = "event '" + std::string(event.type()) + "' at t=" + std::to_string(t) +
                         " follows an event at t=" + std::to_string(last_);
  }
  if (t > last_) last_ = t;
}

void TimeOrderCheck::report(sim::Tallies& tallies) const {
  tallies.add("RT-02", checked_, backwards_, first_violation_);
}

}  // namespace durasim::properties
