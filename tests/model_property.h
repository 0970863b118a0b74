// Runs a model-based RapidCheck property the way every *_model_prop_test does: `defaultCases`
// cases unless RC_PARAMS sets max_success (so 1,000 cases are one environment variable away), under
// the id `id`. Returns RapidCheck's failure report, or nothing when the property held; the caller
// prints its coverage and fails the test with the report.
#pragma once

#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>

#include <rapidcheck.h>

namespace durasim {

inline std::optional<std::string> runModelProperty(const std::string& id, void (*property)(), int defaultCases) {
  rc::detail::TestParams params = rc::detail::configuration().testParams;
  const char* env = std::getenv("RC_PARAMS");
  if (env == nullptr || std::string(env).find("max_success") == std::string::npos) params.maxSuccess = defaultCases;
  rc::detail::TestMetadata metadata;
  metadata.id = id;
  metadata.description = id;
  const rc::detail::TestResult result = rc::detail::checkTestable(property, metadata, params);
  if (result.is<rc::detail::SuccessResult>()) return std::nullopt;
  std::ostringstream message;
  rc::detail::printResultMessage(result, message);
  return message.str();
}

}  // namespace durasim
