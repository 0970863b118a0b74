// Where the World sends its trace events. Each event is an object of fields (EventFields, the
// port's) with at least "ev" (its type) and "t" (the simulated time); traces/ serialises it
// canonically, hashes it and stores it, and property checkers observe the same stream. The World
// never depends on what listens.
//
// A sink receives the event with its header (type, time, the object it names) read once, so the
// dozen checkers that see every event do not each look the same fields up again. The header is
// always what the fields say: TraceEvent reads it from them, and the World builds the same from
// the values it has just written. Sinks read the fields; the event's JSON object is built only for
// a sink that asks for it (a kept trace line, a test).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/runtime.h"

namespace durasim::sim {

class TraceEvent {
 public:
  // The header of `fields` as they say: no "ev" string gives type "", no integer "t" leaves t() to
  // throw as fields.at("t") would, an "object" that is not a string gives no object.
  explicit TraceEvent(const EventFields& fields);
  // An event read back as JSON (tests, a stream read back): its members are the fields, and json()
  // is `json` itself, whatever it holds (an event that is not an object has no fields).
  explicit TraceEvent(const nlohmann::json& json);
  // An event whose "ev" is `type` and whose "t" is `t`, both already in `fields` (the World's path).
  TraceEvent(const EventFields& fields, std::string_view type, int64_t t);

  TraceEvent(const TraceEvent&) = delete;
  TraceEvent& operator=(const TraceEvent&) = delete;

  const EventFields& fields() const { return *fields_; }
  // The event as a JSON object, built at the first call.
  const nlohmann::json& json() const;
  std::string_view type() const { return type_; }
  // Inlined at every call, so that against a literal it is a length test and a word or two.
  [[gnu::always_inline]] bool is(std::string_view type) const {
    return type_.size() == type.size() && (type.empty() || __builtin_memcmp(type_.data(), type.data(), type.size()) == 0);
  }
  // The "t" field; throws nlohmann::json's error when the event has no integer "t".
  int64_t t() const { return has_t_ ? t_ : fields_->at("t").get<int64_t>(); }
  bool has_t() const { return has_t_; }  // the event has an integer "t"
  // The "object" field's label, or null.
  const std::string* object() const { return object_; }

 private:
  void read_header();

  const EventFields* fields_ = nullptr;
  std::optional<EventFields> owned_;           // the fields of an event read back as JSON
  const nlohmann::json* source_ = nullptr;     // that JSON
  mutable std::optional<nlohmann::json> json_;  // json(), once asked for
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
  void record(const nlohmann::json& json) { record(TraceEvent(json)); }
};

inline TraceEvent::TraceEvent(const EventFields& fields) : fields_(&fields) { read_header(); }

inline TraceEvent::TraceEvent(const nlohmann::json& json)
    : owned_(json.is_object() ? EventFields(json) : EventFields()), source_(&json) {
  fields_ = &*owned_;
  read_header();
}

inline TraceEvent::TraceEvent(const EventFields& fields, std::string_view type, int64_t t)
    : fields_(&fields), type_(type), t_(t), has_t_(true) {
  if (const nlohmann::json* object = fields.find("object"); object && object->is_string())
    object_ = &object->get_ref<const std::string&>();
}

inline void TraceEvent::read_header() {
  if (const nlohmann::json* ev = fields_->find("ev"); ev && ev->is_string()) type_ = ev->get_ref<const std::string&>();
  if (const nlohmann::json* t = fields_->find("t"); t && t->is_number_integer()) {
    t_ = t->get<int64_t>();
    has_t_ = true;
  }
  if (const nlohmann::json* object = fields_->find("object"); object && object->is_string())
    object_ = &object->get_ref<const std::string&>();
}

inline const nlohmann::json& TraceEvent::json() const {
  if (source_) return *source_;
  if (!json_) json_.emplace(fields_->to_json());
  return *json_;
}

}  // namespace durasim::sim
