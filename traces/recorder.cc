// Canonical serialisation and hashing of trace events; see recorder.h.
#include "traces/recorder.h"

#include <cstdio>

namespace durasim::traces {

std::string canonical_line(const nlohmann::json& event) {
  return event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string hash_hex(uint64_t hash) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

void Recorder::record(const nlohmann::json& event) {
  std::string line = canonical_line(event);
  hash_ = fold_event_line(hash_, line);
  ++events_;
  if (events_ % kCheckpointInterval == 0) checkpoints_.push_back({events_, hash_});
  if (keep_lines_) lines_.push_back(std::move(line));
}

}  // namespace durasim::traces
