// The load envelope's JSON form; see envelope.h.
#include "workloads/envelope.h"

#include <optional>
#include <utility>


namespace durasim::workloads {
namespace {

nlohmann::json processingJson(const ProcessingLoad& load) {
  return JsonFields()
      .add("inFlight", load.inFlight)
      .add("completed", load.completed)
      .add("averageProcessingMs", load.averageProcessingMs ? nlohmann::json(*load.averageProcessingMs) : nlohmann::json());
}

void readProcessing(const nlohmann::json& j, ProcessingLoad& load) {
  load.inFlight = j.at("inFlight").get<int64_t>();
  load.completed = j.at("completed").get<int64_t>();
  const nlohmann::json& average = j.at("averageProcessingMs");
  load.averageProcessingMs = average.is_null() ? std::nullopt : std::optional<double>(average.get<double>());
}

}  // namespace

nlohmann::json toJson(const LoadSnapshot& load) {
  nlohmann::json outbound = processingJson(load.outbound);
  outbound["pendingDeliveries"] = load.outbound.pendingDeliveries;
  return JsonFields()
      .add("observedAt", load.observedAt)
      .add("windowMs", load.windowMs)
      .add("inbound", processingJson(load.inbound))
      .add("outbound", std::move(outbound));
}

LoadSnapshot loadFromJson(const nlohmann::json& j) {
  LoadSnapshot load;
  load.observedAt = j.at("observedAt").get<int64_t>();
  load.windowMs = j.at("windowMs").get<int64_t>();
  readProcessing(j.at("inbound"), load.inbound);
  readProcessing(j.at("outbound"), load.outbound);
  load.outbound.pendingDeliveries = j.at("outbound").at("pendingDeliveries").get<int64_t>();
  return load;
}

}  // namespace durasim::workloads
