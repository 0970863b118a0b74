// The application's own outbound samples on a partition's RoutingLoad (routing.md 2): each read the
// partition serves is one, begun when the call starts and finished when it returns or throws, and
// now and then finished a second time, as a caller with both a guard and an explicit finish would
// (finish is idempotent). Each begin and finish, and the outbound snapshot the application reads
// just before a sample begins and just after it ends, is an `app.load.*` event with the object's
// clock: the RTE-08 check replays them on the spec's window and compares what was read.
#pragma once

#include <cstdint>
#include <functional>

#include "engine/load.h"
#include "engine/runtime.h"

namespace durasim::workloads {

class OutboundSamples {
 public:
  struct Sample {
    int64_t id = 0;
    std::function<void()> finish;
    bool twice = false;
  };

  OutboundSamples(ObjectContext& ctx, RoutingLoad& load) : ctx_(ctx), load_(load) {}
  OutboundSamples(const OutboundSamples&) = delete;
  OutboundSamples& operator=(const OutboundSamples&) = delete;

  Sample begin();
  void end(Sample& sample);

 private:
  void read();

  ObjectContext& ctx_;
  RoutingLoad& load_;
  int64_t samples_ = 0;
};

}  // namespace durasim::workloads
