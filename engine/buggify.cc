// The engine's buggify sites; see buggify.h.
#include "engine/buggify.h"

namespace durasim::buggify {

Task<void> yieldIf(ObjectContext& ctx, std::string_view site) {
  if (!fires(ctx, site)) co_return;
  Task<void> yielding = ctx.clock.sleepFor(0);
  co_await yielding;
}

}  // namespace durasim::buggify
