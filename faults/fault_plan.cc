// The per-seed fault plan; see fault_plan.h. Profile draws, fires() and latency draws all go through
// named streams of the World's random source, so every one is a recorded choice (RT-23).
#include "faults/fault_plan.h"

#include <stdexcept>
#include <string>

#include "faults/buggify.h"

namespace durasim::faults {
namespace {

constexpr uint32_t kEnablePpm = 500'000;  // runtime.md 11.3: a fault is enabled with probability 0.5
constexpr std::string_view kProfileStream = "faults.profile";
constexpr std::string_view kFaultStreamPrefix = "faults.";
constexpr std::string_view kConfirmBaseStream = "faults.storage.confirm_base";
constexpr std::string_view kFaultEvent = "fault";  // runtime.md 11.2: every injection is a traced `fault` event
constexpr std::string_view kProfileChoices = "none|recoverable|arbitrary";

// Whether a profile injects faults of a promise class (runtime.md 11.3).
bool covers(ProfileKind kind, PromiseClass promise) {
  switch (kind) {
    case ProfileKind::none: return false;
    case ProfileKind::recoverable: return promise != PromiseClass::arbitrary;
    case ProfileKind::arbitrary: return true;
  }
  return false;
}

std::size_t slot(sim::FaultKind kind) { return static_cast<std::size_t>(kind); }

}  // namespace

sim::SimTime draw_start_time(sim::RandomSource& random) {
  constexpr int64_t kSpread = 100'000'000'000;  // runtime.md 2.1: default + U[0, 10^11)
  const sim::StreamId stream = random.stream("swarm.start_time");
  switch (random.below(stream, 10)) {
    case 0: return 0;
    case 1: return random.between(stream, 1, 999);
    default: return sim::kDefaultStartTime + random.between(stream, 0, kSpread - 1);
  }
}

std::string_view profile_kind_name(ProfileKind kind) {
  switch (kind) {
    case ProfileKind::none: return "none";
    case ProfileKind::recoverable: return "recoverable";
    case ProfileKind::arbitrary: return "arbitrary";
  }
  return "?";
}

ProfileKind parse_profile_kind(std::string_view text) {
  for (ProfileKind kind : {ProfileKind::none, ProfileKind::recoverable, ProfileKind::arbitrary})
    if (text == profile_kind_name(kind)) return kind;
  throw std::invalid_argument("unknown fault profile '" + std::string(text) + "': expected one of " +
                              std::string(kProfileChoices) + " (runtime.md 11.3)");
}

FaultPlan::FaultPlan(sim::World& world, ProfileKind kind, FaultSet hosted)
    : world_(world), kind_(kind), hosted_(hosted) {
  const sim::StreamId profile = world_.random().stream(kProfileStream);
  for (const FaultSpec& spec : fault_atlas()) counts_[slot(spec.kind)] = draw_fault(spec, profile);
  rpc_ = draw_latency(profile, kRpcLatencyMinMs, kRpcLatencyMeanMs);
  cold_ = draw_latency(profile, kColdLatencyMinMs, kColdLatencyMeanMs);
  if (world_.mutants().uncounted_fault) untraced_ = sim::FaultKind::cold_lifecycle_lag;
  buggify_ = std::make_unique<Buggify>(world_, *this);
}

FaultPlan::~FaultPlan() = default;

bool FaultPlan::buggify(std::string_view site) { return (*buggify_)(site); }

std::map<std::string, BuggifyCount> FaultPlan::buggify_counts() const { return buggify_->counts(); }

FaultCount FaultPlan::draw_fault(const FaultSpec& spec, sim::StreamId profile) {
  FaultCount count{.kind = spec.kind};
  count.enabled = switched_on(spec, profile);
  if (count.enabled)
    count.rate_ppm = static_cast<uint32_t>(world_.random().between(profile, spec.min_ppm, spec.max_ppm));
  return count;
}

bool FaultPlan::switched_on(const FaultSpec& spec, sim::StreamId profile) {
  if (!hosted_.test(slot(spec.kind))) return false;
  switch (spec.always_on) {
    case AlwaysOn::every_profile: return true;
    case AlwaysOn::arbitrary_profile: return kind_ == ProfileKind::arbitrary;
    case AlwaysOn::no: return covers(kind_, spec.promise) && world_.random().chance(profile, kEnablePpm);
  }
  return false;
}

LatencyParams FaultPlan::draw_latency(sim::StreamId profile, MsRange min_ms, MsRange mean_ms) {
  LatencyParams params;
  params.min_ms = world_.random().between(profile, min_ms.lo, min_ms.hi);
  params.mean_ms = world_.random().between(profile, mean_ms.lo, mean_ms.hi);
  return params;
}

sim::StreamId FaultPlan::stream(sim::FaultKind kind) {
  std::optional<sim::StreamId>& cached = streams_.at(slot(kind));
  if (!cached) cached = world_.random().stream(std::string(kFaultStreamPrefix) + std::string(sim::fault_name(kind)));
  return *cached;
}

bool FaultPlan::fires(sim::FaultKind kind, const sim::FaultSite& site, const DetailsFn& draw_details) {
  if (fault_spec(kind).opportunity == Opportunity::latency_draw)
    throw std::logic_error("fault " + std::string(sim::fault_name(kind)) +
                           " is a latency family: draw it with latency(), not fires()");
  FaultCount& count = counts_[slot(kind)];
  ++count.opportunities;
  if (healed_ || !count.enabled) return false;
  if (!world_.random().chance(stream(kind), count.rate_ppm)) return false;
  record_firing(count, site, draw_details);
  return true;
}

void FaultPlan::record_firing(FaultCount& count, const sim::FaultSite& site, const DetailsFn& draw_details) {
  nlohmann::json details = draw_details ? draw_details() : nlohmann::json::object();
  if (details.is_null()) details = nlohmann::json::object();
  if (!details.is_object())
    throw std::logic_error("details of fault " + std::string(sim::fault_name(count.kind)) +
                           " must be a JSON object, got " + details.dump());
  ++count.firings;
  if (untraced_ == count.kind) return;
  world_.emit(kFaultEvent, {{"fault", sim::fault_name(count.kind)},
                            {"object", site.object},
                            {"incarnation", site.incarnation},
                            {"point", site.point},
                            {"details", std::move(details)}});
}

int64_t FaultPlan::latency(sim::LatencyKind kind) {
  switch (kind) {
    case sim::LatencyKind::rpc: return draw_family(sim::FaultKind::rpc_latency, rpc_);
    case sim::LatencyKind::cold: return draw_family(sim::FaultKind::cold_latency, cold_);
    case sim::LatencyKind::confirm: return draw_confirm_base();
  }
  throw std::logic_error("unknown latency kind " + std::to_string(static_cast<int>(kind)));
}

int64_t FaultPlan::draw_confirm_base() {
  if (!confirm_base_stream_) confirm_base_stream_ = world_.random().stream(kConfirmBaseStream);
  return world_.random().between(*confirm_base_stream_, kConfirmBaseMs.lo, kConfirmBaseMs.hi);
}

int64_t FaultPlan::draw_family(sim::FaultKind family, const LatencyParams& params) {
  ++counts_[slot(family)].opportunities;
  return params.min_ms + world_.random().exponential(stream(family), params.mean_ms);
}

nlohmann::json FaultPlan::profile_json() const {
  nlohmann::json faults = nlohmann::json::object();
  for (const FaultCount& count : counts_)
    faults[std::string(sim::fault_name(count.kind))] = {{"enabled", count.enabled}, {"rate_ppm", count.rate_ppm}};
  const auto params = [](const LatencyParams& p) { return nlohmann::json{{"min_ms", p.min_ms}, {"mean_ms", p.mean_ms}}; };
  return {{"kind", profile_kind_name(kind_)},
          {"faults", std::move(faults)},
          {"latency", {{"rpc", params(rpc_)}, {"cold", params(cold_)}}}};
}

}  // namespace durasim::faults
