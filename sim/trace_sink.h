// Where the World sends its trace events. Each event is a JSON object with at least "ev" (its type)
// and "t" (the simulated time); traces/ serialises it canonically, hashes it and stores it, and
// property checkers observe the same stream. The World never depends on what listens.
//
// A sink receives the event with its header (type, time, the object it names) read once, so the
// dozen checkers that see every event do not each look the same fields up in the JSON again. The
// header is always what the JSON says: TraceEvent::of reads it from the JSON, and the World builds
// the same from the values it has just written.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace durasim::sim {

class TraceEvent {
 public:
  // The header of `json` as its fields say: no "ev" string gives type "", no integer "t" leaves t()
  // to throw as json.at("t") would, an "object" that is not a string gives no object.
  static TraceEvent of(const nlohmann::json& json);
  // An event whose "ev" is `type` and whose "t" is `t`, both already in `json` (the World's path).
  static TraceEvent written(const nlohmann::json& json, std::string_view type, int64_t t);

  const nlohmann::json& json() const { return json_; }
  std::string_view type() const { return type_; }
  bool is(std::string_view type) const { return type_ == type; }
  // The "t" field; throws nlohmann::json's error when the event has no integer "t".
  int64_t t() const { return has_t_ ? t_ : json_.at("t").get<int64_t>(); }
  // The "object" field's label, or null.
  const std::string* object() const { return object_; }

 private:
  explicit TraceEvent(const nlohmann::json& json) : json_(json) {}
  void read_object();

  const nlohmann::json& json_;
  std::string_view type_;
  int64_t t_ = 0;
  bool has_t_ = false;
  const std::string* object_ = nullptr;
};

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  virtual void record(const TraceEvent& event) = 0;
  // For callers that hold only the JSON (tests, a stream read back): its header is read first.
  // A sink overriding record brings this overload back with `using TraceSink::record;`.
  void record(const nlohmann::json& json) { record(TraceEvent::of(json)); }
};

inline TraceEvent TraceEvent::of(const nlohmann::json& json) {
  TraceEvent event(json);
  if (!json.is_object()) return event;
  if (const auto ev = json.find("ev"); ev != json.end() && ev->is_string()) event.type_ = ev->get_ref<const std::string&>();
  if (const auto t = json.find("t"); t != json.end() && t->is_number_integer()) {
    event.t_ = t->get<int64_t>();
    event.has_t_ = true;
  }
  event.read_object();
  return event;
}

inline TraceEvent TraceEvent::written(const nlohmann::json& json, std::string_view type, int64_t t) {
  TraceEvent event(json);
  event.type_ = type;
  event.t_ = t;
  event.has_t_ = true;
  event.read_object();
  return event;
}

inline void TraceEvent::read_object() {
  if (const auto object = json_.find("object"); object != json_.end() && object->is_string())
    object_ = &object->get_ref<const std::string&>();
}

}  // namespace durasim::sim
