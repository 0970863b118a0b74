// The JSON form of the load envelope (engine/load.h) as it crosses RPC between an application
// object and its callers: a LoadSnapshot (averages absent as null) and an EnqueueResult
// {success, value | error {name, message}, load}. Each reader is the exact inverse of its writer.
#pragma once

#include <nlohmann/json.hpp>

#include "engine/load.h"

namespace durasim::workloads {

nlohmann::json toJson(const LoadSnapshot& load);
// Throws nlohmann::json::exception for a value toJson did not produce.
LoadSnapshot loadFromJson(const nlohmann::json& j);

template <class T>
nlohmann::json toJson(const EnqueueResult<T>& r) {
  nlohmann::json j = {{"success", r.success}, {"load", toJson(r.load)}};
  if (r.value) j["value"] = *r.value;
  if (r.error) j["error"] = {{"name", r.error->name}, {"message", r.error->message}};
  return j;
}

template <class T>
EnqueueResult<T> enqueueResultFromJson(const nlohmann::json& reply) {
  EnqueueResult<T> r;
  r.success = reply.at("success").get<bool>();
  if (reply.contains("value")) r.value = reply.at("value").get<T>();
  if (reply.contains("error"))
    r.error = ErrorInfo{reply.at("error").at("name").get<std::string>(), reply.at("error").at("message").get<std::string>()};
  r.load = loadFromJson(reply.at("load"));
  return r;
}

}  // namespace durasim::workloads
