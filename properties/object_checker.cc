// The per-class checker base; see object_checker.h.
#include "properties/object_checker.h"

namespace durasim::properties {

void ObjectChecker::record(const sim::TraceEvent& header) {
  const std::string_view name = header.type();
  if (name.empty()) return;
  const nlohmann::json& event = header.json();
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

bool of_class(std::string_view label, std::string_view className) {
  return label.size() > className.size() && label.substr(0, className.size()) == className && label[className.size()] == '/';
}

bool config_of_class(const nlohmann::json& config, std::string_view className) {
  const auto named = config.find("class");
  return named == config.end() || !named->is_string() || named->get_ref<const std::string&>() == className;
}

bool ObjectChecker::mine(const nlohmann::json& event) const {
  if (observing_ && &event == &observing_->json()) {
    const std::string* object = observing_->object();
    return object && of_class(*object, className_);
  }
  const auto object = event.find("object");
  return object != event.end() && object->is_string() && of_class(object->get_ref<const std::string&>(), className_);
}

const std::string& ObjectChecker::label(const nlohmann::json& event) const {
  if (observing_ && &event == &observing_->json() && observing_->object()) return *observing_->object();
  return event.at("object").get_ref<const std::string&>();
}

}  // namespace durasim::properties
