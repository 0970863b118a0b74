// The cold store as the objects see it (runtime.md 10): each call is an outbound effect of the
// calling incarnation (held by its output gate), takes one cold.latency draw, may fail before it
// runs (cold.request_failed; refused during episode.cold_outage or the caller's episode.isolation) or
// after a write ran (cold.reply_lost), and then applies to the model
// in sim/cold_store.h at the time it runs. Keeps RT-10 for cold calls; RT-20..22 live in the model.
#include "sim/object_internals.h"

namespace durasim::sim {
namespace {

constexpr const char* kInternalError = "We encountered an internal error. Please try again.";  // runtime.md 10

std::exception_ptr internal_error() { return std::make_exception_ptr(ColdError(500, true, kInternalError)); }

}  // namespace

class SimColdBucket final : public ColdBucket {
 public:
  SimColdBucket(ObjectRuntime& runtime, SimObject* caller, std::string name)
      : runtime_(runtime), caller_(caller), name_(std::move(name)) {}

  Task<std::optional<ColdObject>> put(std::string key, std::string body, ColdPutOptions options) override {
    std::function<std::optional<ColdObject>(ColdStore&, int64_t)> op = [this, key, body, options](ColdStore& store, int64_t now) {
      return store.put(name_, key, body, options, now);
    };
    return awaited(send<std::optional<ColdObject>>("put", key, true, std::move(op)));
  }
  Task<std::optional<ColdObjectBody>> get(std::string key) override {
    std::function<std::optional<ColdObjectBody>(ColdStore&, int64_t)> op = [this, key](ColdStore& store, int64_t now) {
      return store.get(name_, key, now);
    };
    return awaited(send<std::optional<ColdObjectBody>>("get", key, false, std::move(op)));
  }
  Task<std::optional<ColdObject>> head(std::string key) override {
    std::function<std::optional<ColdObject>(ColdStore&, int64_t)> op = [this, key](ColdStore& store, int64_t now) {
      return store.head(name_, key, now);
    };
    return awaited(send<std::optional<ColdObject>>("head", key, false, std::move(op)));
  }
  Task<void> remove(std::vector<std::string> keys) override {
    const std::string first = keys.empty() ? "" : keys.front();
    std::function<Done(ColdStore&, int64_t)> op = [this, keys](ColdStore& store, int64_t now) {
      store.remove(name_, keys, now);
      return Done{};
    };
    return discard(awaited(send<Done>("delete", first, true, std::move(op))));
  }
  Task<ColdList> list(std::string prefix, std::optional<std::string> cursor, int64_t limit) override {
    std::function<ColdList(ColdStore&, int64_t)> op = [this, prefix, cursor, limit](ColdStore& store, int64_t now) {
      return store.list(name_, prefix, cursor, limit, now);
    };
    return awaited(send<ColdList>("list", prefix, false, std::move(op)));
  }

 private:
  template <class T>
  struct InFlight {
    std::shared_ptr<OneShot<T>> outcome;
    SimObject* object;    // the calling object, or null for clients
    int64_t incarnation;  // the calling incarnation, 0 for clients
  };

  // Sends one request through the caller's output gate; `op` runs on the model after the latency.
  template <class T>
  InFlight<T> send(const char* verb, const std::string& key, bool write, std::function<T(ColdStore&, int64_t)> op) {
    World& world = runtime_.world();
    auto outcome = std::make_shared<OneShot<T>>(world.executor());
    ObjectRuntime* runtime = &runtime_;
    const std::string label = caller_ ? caller_->label() : "client";
    const std::string bucket = name_;
    auto go = [runtime, outcome, op, verb, key, write, label, bucket] {
      FaultInjector& faults = runtime->faults();
      const FaultSite site{label, 0, verb};
      const int64_t latency = faults.latency(LatencyKind::cold);
      // An episode refuses the call outright; otherwise the call is an opportunity of cold.request_failed.
      const char* refused = runtime->cold_refusal(label);
      if (!refused && faults.fires(FaultKind::cold_request_failed, site)) refused = "request_failed";
      runtime->world().executor().after(latency, [runtime, outcome, op, verb, key, write, label, bucket, refused] {
        World& w = runtime->world();
        const auto report = [&](const std::string& how, bool applied = false) {
          EventFields fields{{"from", label}, {"bucket", bucket}, {"op", verb}, {"key", key}, {"outcome", how}};
          if (write) fields["applied"] = applied;  // RT-22: whether the write changed the store
          w.emit("cold.call", std::move(fields));
        };
        if (refused) {
          report(refused);
          outcome->set_error(internal_error());
          return;
        }
        try {
          ColdStore& store = runtime->cold_store();
          store.expire(w.now());
          T result = op(store, w.now());
          const bool reply_lost = write && runtime->faults().fires(FaultKind::cold_reply_lost, FaultSite{label, 0, verb});
          bool applied = write;  // a put whose precondition failed returns nullopt and writes nothing
          if constexpr (std::is_same_v<T, std::optional<ColdObject>>) applied = write && result.has_value();
          report(reply_lost ? "reply_lost" : "ok", applied);
          if (reply_lost) outcome->set_error(internal_error());
          else outcome->set_value(std::move(result));
        } catch (const std::exception& e) {
          report(e.what());
          outcome->set_error(std::current_exception());
        }
      });
    };
    Incarnation* incarnation = caller_ ? caller_->live() : nullptr;
    if (incarnation) {
      incarnation->begin_external_wait();
      incarnation->hold("cold", std::move(go), [] {});
    } else {
      go();
    }
    return InFlight<T>{outcome, caller_, incarnation ? incarnation->number() : 0};
  }

  template <class T>
  static Task<T> awaited(InFlight<T> call) {
    struct Leave {
      SimObject* object;
      int64_t incarnation;
      ~Leave() {
        if (object && object->live() && object->live()->number() == incarnation) object->live()->end_external_wait();
      }
    } leave{call.object, call.incarnation};
    T result = co_await *call.outcome;
    co_return result;
  }

  static Task<void> discard(Task<Done> task) { co_await std::move(task); }

  ObjectRuntime& runtime_;
  SimObject* caller_;
  std::string name_;
};

ColdBucket& ObjectRuntime::bucket_for(SimObject* caller, const std::string& name) {
  bucket_names_.insert(name);
  auto& slot = buckets_[{caller, name}];
  if (!slot) slot = std::make_unique<SimColdBucket>(*this, caller, name);
  return *slot;
}

ColdBucket& ObjectRuntime::client_bucket(const std::string& name) { return bucket_for(nullptr, name); }

ColdBucket& Incarnation::bucket(std::string_view name) { return object_.runtime().bucket_for(&object_, std::string(name)); }

bool ObjectRuntime::partitioned(const std::string& label) const {
  auto it = partitioned_until_.find(label);
  return (it != partitioned_until_.end() && it->second > world_.now()) || isolated(label);
}

bool ObjectRuntime::isolated(const std::string& label) const {
  auto it = isolated_until_.find(label);
  return it != isolated_until_.end() && it->second > world_.now();
}

const char* ObjectRuntime::cold_refusal(const std::string& caller) const {
  if (cold_outage_until_ > world_.now()) return "outage";
  if (isolated(caller)) return "isolated";
  return nullptr;
}

}  // namespace durasim::sim
