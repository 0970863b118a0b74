// OutboundSamples; see outbound_samples.h.
#include "workloads/outbound_samples.h"

#include "engine/routing_events.h"

namespace durasim::workloads {

namespace {
constexpr double kTwicePerSample = 0.25;
}  // namespace

OutboundSamples::Sample OutboundSamples::begin() {
  read();
  Sample sample{++samples_, load_.begin(Direction::outbound), ctx_.random.random() < kTwicePerSample};
  ctx_.probe(routing_events::kAppLoadBegin, EventFields().add("sample", sample.id).add("now", ctx_.clock.now()));
  return sample;
}

void OutboundSamples::end(Sample& sample) {
  for (int i = 0; i < (sample.twice ? 2 : 1); ++i) {
    sample.finish();
    ctx_.probe(routing_events::kAppLoadFinish, EventFields().add("sample", sample.id).add("now", ctx_.clock.now()));
  }
  read();
}

void OutboundSamples::read() {
  const ProcessingLoad outbound = load_.snapshot(0).outbound;
  ctx_.probe(routing_events::kAppLoadRead, EventFields()
                                                .add("now", ctx_.clock.now())
                                                .add("inFlight", outbound.inFlight)
                                                .add("completed", outbound.completed)
                                                .add("averageProcessingMs", json_or_null(outbound.averageProcessingMs)));
}

}  // namespace durasim::workloads
