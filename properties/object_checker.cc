// The per-class checker base; see object_checker.h.
#include "properties/object_checker.h"

namespace durasim::properties {

void ObjectChecker::record(const sim::TraceEvent& header) {
  const EventType name = header.type();
  if (name.empty()) return;
  const EventFields& event = header.fields();
  struct Observing {
    const sim::TraceEvent*& slot;
    ~Observing() { slot = nullptr; }
  } observing{observing_ = &header};
  try {
    observe(name, event);
  } catch (const nlohmann::json::exception& error) {
    tallies_.check(invariant_for(name), false, [&] { return "malformed '" + std::string(name) + "' event " + event.dump() + ": " + error.what(); });
  }
}

bool config_of_class(const EventFields& config, std::string_view className) {
  const nlohmann::json* named = config.find("class");
  return !named || !named->is_string() || named->get_ref<const std::string&>() == className;
}

bool ObjectChecker::mineByField(const EventFields& event) const {
  const nlohmann::json* object = event.find("object");
  return object && object->is_string() && of_class(object->get_ref<const std::string&>(), className_);
}

const std::string& ObjectChecker::label(const EventFields& event) const {
  if (observing_ && &event == &observing_->fields() && observing_->object()) return *observing_->object();
  return event.at("object").get_ref<const std::string&>();
}

}  // namespace durasim::properties
