// The per-class checker base; see object_checker.h.
#include "properties/object_checker.h"

namespace durasim::properties {

void ObjectChecker::record(const nlohmann::json& event) {
  const auto ev = event.find("ev");
  if (ev == event.end() || !ev->is_string()) return;
  const std::string_view name = ev->get_ref<const std::string&>();
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
  const auto object = event.find("object");
  return object != event.end() && object->is_string() && of_class(object->get_ref<const std::string&>(), className_);
}

}  // namespace durasim::properties
