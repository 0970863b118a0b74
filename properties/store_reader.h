// The read-only window every state check uses onto the objects' live stores: it runs one statement
// on the store of the object labelled "Class/name" at the instant of the event being checked.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "engine/runtime.h"

namespace durasim::properties {

// Runs a read-only statement on the live store of the object labelled "Class/name".
using StoreReader = std::function<SqlCursor(const std::string& label, std::string_view sql)>;

}  // namespace durasim::properties
