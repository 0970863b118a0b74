// Messages of the library errors (errors-and-contract.md 2) and the two classifiers over thrown
// values (2.1, 2.2). Both classifiers never throw, whatever was thrown.
#include "engine/errors.h"

#include <utility>

namespace durasim {

namespace {

constexpr char kDefaultName[] = "Error";
constexpr char kUnknownMessage[] = "Unknown thrown value";

std::string inQuotes(const std::string& s) { return "\"" + s + "\""; }

ErrorInfo normalized(std::string name, std::string message) {
  if (name.empty()) name = kDefaultName;
  if (message.empty()) message = kUnknownMessage;
  return ErrorInfo{std::move(name), std::move(message)};
}

// name() of a library or runtime error; an override that throws counts as an empty name.
template <class E>
std::string nameOf(const E& e) noexcept {
  try {
    return e.name();
  } catch (...) {
    return {};
  }
}

}  // namespace

DurableAlarmTimeoutError::DurableAlarmTimeoutError(std::string name, int64_t ms)
    : DurabilityError("Durable alarm " + inQuotes(name) + " timed out after " + std::to_string(ms) + "ms"),
      alarmName_(std::move(name)),
      timeoutMs_(ms) {}

DurableRetryPolicyError::DurableRetryPolicyError(std::string label, std::exception_ptr cause)
    : DurabilityError("Retry policy for " + label + " must produce a non-negative safe-integer timestamp"),
      label_(std::move(label)),
      cause_(std::move(cause)) {}

DurableAttemptsExhaustedError::DurableAttemptsExhaustedError(std::string name, int64_t max)
    : DurabilityError("Durable alarm " + inQuotes(name) + " exhausted its " + std::to_string(max) + " attempts"),
      alarmName_(std::move(name)),
      maxAttempts_(max) {}

FanoutSettlementError::FanoutSettlementError(const std::string& id, const std::optional<std::string>& outcome)
    : DurabilityError("Fanout delivery " + inQuotes(id) + (outcome ? " was already settled as " + inQuotes(*outcome) : " is stale")),
      outcome_(outcome) {}

FanoutTimeoutError::FanoutTimeoutError(int64_t ms)
    : DurabilityError("Fanout delivery timed out after " + std::to_string(ms) + "ms"), timeoutMs_(ms) {}

OutboxSettlementError::OutboxSettlementError(const std::string& key, int64_t version)
    : DurabilityError("Outbox entry " + inQuotes(key) + " version " + std::to_string(version) + " can no longer be marked for retry") {}

OutboxPublishTimeoutError::OutboxPublishTimeoutError(int64_t ms)
    : DurabilityError("Outbox publish timed out after " + std::to_string(ms) + "ms") {}

RoutingError::RoutingError() : DurabilityError("Routing requires a non-empty shard") {}

namespace {
std::string routingTimeoutMessage(int64_t ms) {
  std::string message = "Routing push timed out after ";
  message += std::to_string(ms);
  message += "ms";
  return message;
}
}  // namespace

RoutingTimeoutError::RoutingTimeoutError(int64_t ms) : DurabilityError(routingTimeoutMessage(ms)), timeoutMs_(ms) {}

LogTruncatedError::LogTruncatedError(int64_t requestedOffset, int64_t oldestOffset)
    : DurabilityError("Log offset " + std::to_string(requestedOffset) + " was trimmed; the oldest retained offset is " +
                      std::to_string(oldestOffset)),
      requestedOffset_(requestedOffset),
      oldestOffset_(oldestOffset) {}

LogLeaseError::LogLeaseError(const std::string& batchId)
    : DurabilityError("Log lease \"" + batchId + "\" is not held"), batchId_(batchId) {}

ErrorInfo serializeError(std::exception_ptr e) noexcept {
  try {
    if (!e) return normalized(kDefaultName, "null");
    try {
      std::rethrow_exception(e);
    } catch (const DurabilityError& error) {
      return normalized(nameOf(error), error.what());
    } catch (const RuntimeError& error) {
      return normalized(nameOf(error), error.what());
    } catch (const std::exception& error) {
      return normalized(kDefaultName, error.what());
    } catch (const std::string& text) {
      return normalized(kDefaultName, text);
    } catch (const char* text) {
      return normalized(kDefaultName, text ? text : "");
    } catch (...) {
      return normalized(kDefaultName, kUnknownMessage);
    }
  } catch (...) {  // allocation failure while building the strings: a short name needs no allocation
    return ErrorInfo{kDefaultName, {}};
  }
}

bool isNonRetryable(std::exception_ptr e) noexcept {
  if (!e) return false;
  try {
    std::rethrow_exception(e);
  } catch (const NonRetryableError&) {
    return true;
  } catch (const DurabilityError& error) {
    return nameOf(error) == "NonRetryableError";
  } catch (...) {
    return false;
  }
}

}  // namespace durasim
