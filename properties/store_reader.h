// The read-only window every state check uses onto the objects' live stores: it runs one statement,
// `?` parameters bound in order, on the store of the object labelled "Class/name" at the instant of
// the event being checked. Values go in parameters, not in the text, so that each statement is
// prepared once per store.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/runtime.h"

namespace durasim::properties {

struct StoreReader {
  std::function<SqlCursor(const std::string& label, std::string_view sql, const std::vector<SqlValue>& params)> read;

  SqlCursor operator()(const std::string& label, std::string_view sql, const std::vector<SqlValue>& params = {}) const {
    return read(label, sql, params);
  }
};

}  // namespace durasim::properties
