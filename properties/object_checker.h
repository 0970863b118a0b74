// The base of the checkers that follow the objects of one class through the trace ("Class/name"
// labels): which events are theirs, and a malformed event (a field missing or of the wrong type)
// reported as a violation of the invariant it would have fed, never a crash and never skipped
// silently.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "properties/event_type.h"
#include "sim/tally.h"
#include "sim/trace_sink.h"

namespace durasim::properties {

// Whether `label` ("Class/name") names an object of `className`.
inline bool of_class(std::string_view label, std::string_view className) {
  // The '/' first: a label of another class rarely has it at the same place, so most labels are
  // told apart without comparing their class names.
  return label.size() > className.size() && label[className.size()] == '/' && label.substr(0, className.size()) == className;
}

// Whether a "workload.config" event states the application of `className`. A workload composing
// several applications states one config per class, each naming it in "class"; a config without
// "class" (a workload of one application) states every class's.
bool config_of_class(const EventFields& config, std::string_view className);

// The state a checker keeps per object incarnation, keyed by (object label, incarnation number).
// An event's entry is found again without building its key when it is the one found last (the
// events of one incarnation come in runs); entries are never erased, so that one stays in place.
// A lookup that finds an entry copies no label.
template <class State>
class IncarnationStates {
 public:
  IncarnationStates() = default;
  // A copy finds its own entries (the entry found last is the source's).
  IncarnationStates(const IncarnationStates& other) : states_(other.states_) {}
  IncarnationStates& operator=(const IncarnationStates& other) {
    states_ = other.states_;
    last_ = nullptr;
    return *this;
  }

  // The entry of (label, incarnation), made empty if there was none.
  State& at(const std::string& label, int64_t incarnation) {
    if (State* found = find(label, incarnation)) return *found;
    last_ = &*states_.try_emplace(std::make_pair(label, incarnation)).first;
    return last_->second;
  }
  // The entry of (label, incarnation), or null if there is none (none is made).
  State* find(std::string_view label, int64_t incarnation) {
    if (last_ == nullptr || last_->first.second != incarnation || last_->first.first != label) {
      const auto found = states_.find(std::make_pair(label, incarnation));
      if (found == states_.end()) return nullptr;
      last_ = &*found;
    }
    return &last_->second;
  }

 private:
  // (label, incarnation) order, also over (string_view, number) keys.
  struct Order {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      const int byLabel = std::string_view(a.first).compare(std::string_view(b.first));
      return byLabel != 0 ? byLabel < 0 : a.second < b.second;
    }
  };
  using Map = std::map<std::pair<std::string, int64_t>, State, Order>;
  Map states_;
  typename Map::value_type* last_ = nullptr;
};

// The state a checker keeps per object, keyed by its label. As with IncarnationStates, the entry
// found last is found again by comparing one label (an object's events come in runs), and entries
// are never erased, so that one stays in place.
template <class State>
class ObjectStates {
 public:
  ObjectStates() = default;
  ObjectStates(const ObjectStates&) = delete;  // the entry found last points into this map
  ObjectStates& operator=(const ObjectStates&) = delete;

  // The entry of `label`, made empty if there was none.
  State& operator[](const std::string& label) {
    if (last_ == nullptr || last_->first != label) last_ = &*states_.try_emplace(label).first;
    return last_->second;
  }
  // The entry of `label`, or null if there is none (none is made).
  State* find(const std::string& label) {
    if (last_ == nullptr || last_->first != label) {
      const auto found = states_.find(label);
      if (found == states_.end()) return nullptr;
      last_ = &*found;
    }
    return &last_->second;
  }
  // Every entry, in label order.
  const std::map<std::string, State>& all() const { return states_; }
  std::map<std::string, State>& all() { return states_; }

 private:
  std::map<std::string, State> states_;
  typename std::map<std::string, State>::value_type* last_ = nullptr;
};

class ObjectChecker : public sim::TraceSink {
 public:
  // Hands every event with a string "ev" to observe(); a nlohmann::json error it raises becomes one
  // violation of invariant_for(ev).
  using sim::TraceSink::record;
  void record(const sim::TraceEvent& event) final;
  const sim::Tallies& tallies() const { return tallies_; }

 protected:
  explicit ObjectChecker(std::string className) : className_(std::move(className)) {}

  // Whether the event names an object of the class in its "object" field.
  bool mine(const EventFields& event) const {
    if (observing_ && &event == &observing_->fields()) {
      const std::string* object = observing_->object();
      return object && of_class(*object, className_);
    }
    return mineByField(event);
  }
  // The event's "object" label; throws nlohmann::json's error when it has none.
  const std::string& label(const EventFields& event) const;

  virtual void observe(EventType ev, const EventFields& event) = 0;
  // The event observe() is handling, with the header the World read.
  const sim::TraceEvent& observing() const { return *observing_; }
  // The invariant whose check a malformed `ev` event would have fed.
  virtual std::string invariant_for(EventType ev) const = 0;

  const std::string className_;
  sim::Tallies tallies_;

 private:
  // The event being observed, whose header the World read: mine() and label() of that event use
  // it instead of looking "object" up again.
  const sim::TraceEvent* observing_ = nullptr;
  // mine() of an event other than the one observed: its "object" field looked up.
  bool mineByField(const EventFields& event) const;
};

}  // namespace durasim::properties
