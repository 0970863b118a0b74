// Research variant flags (hazards.md, "Variant flags"): each reintroduces one reference hazard or
// contract change. They are read from ObjectContext::variants at construction; none is on by default.
#pragma once

#include <string_view>

namespace durasim::variants {

// H-A: reconcile computes `next` only from the participant that requested it (SCH-01, 02, 14).
inline constexpr std::string_view kReconcileOwnKindOnly = "scheduler.reconcile_own_kind_only";

}  // namespace durasim::variants
