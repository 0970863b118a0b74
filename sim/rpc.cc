// RPC between objects and from clients (runtime.md 9): stubs with E-order, dead stubs, request and
// reply latency, the output gate on both sides, and the failure modes of 9.3 with their flags.
// Keeps RT-15 (stub ordering, dead stubs) and RT-16 (error semantics).
#include "sim/object_internals.h"

namespace durasim::sim {
namespace {

constexpr const char* kConnectionLost = "Network connection lost.";                                       // runtime.md 9.3
constexpr const char* kOverloaded = "Durable Object is overloaded. Too many requests queued.";           // runtime.md 9.3
constexpr int64_t kStallMinMs = 1'000, kStallMaxMs = 30'000;                                           // runtime.md 11.2

std::exception_ptr connection_lost() {
  RpcError::Flags flags;
  flags.retryable = true;
  return std::make_exception_ptr(RpcError(RpcError::Kind::disconnected, flags, kConnectionLost));
}

std::exception_ptr overloaded() {
  RpcError::Flags flags;
  flags.overloaded = true;
  return std::make_exception_ptr(RpcError(RpcError::Kind::overloaded, flags, kOverloaded));
}

}  // namespace

// The channel behind a Stub: one caller (an incarnation or a client) to one callee object.
class SimStubChannel final : public StubChannel, public std::enable_shared_from_this<SimStubChannel> {
 public:
  SimStubChannel(ObjectRuntime& runtime, Incarnation* caller, std::string className, std::string name)
      : runtime_(runtime),
        caller_object_(caller ? &caller->object() : nullptr),
        caller_incarnation_(caller ? caller->number() : 0),
        class_name_(std::move(className)),
        name_(std::move(name)),
        id_(runtime.next_call_id()) {}

  bool broken() const override { return broken_ != nullptr; }

  // The call's frame holds the channel, so a call outlives every Stub that named it.
  Task<nlohmann::json> call(std::string method, nlohmann::json args) override {
    return run(shared_from_this(), std::move(method), std::move(args));
  }

 private:
  static Task<nlohmann::json> run(std::shared_ptr<SimStubChannel> self, std::string method, nlohmann::json args) {
    if (self->broken_) std::rethrow_exception(self->broken_);
    auto outcome = std::make_shared<Reply>(self->runtime_.world().executor());
    self->in_flight_.push_back(outcome);
    const uint64_t call_id = self->runtime_.next_call_id();
    self->runtime_.world().emit("rpc.call", EventFields()
                                                .add("call", call_id)
                                                .add("stub", self->id_)
                                                .add("from", self->caller_label())
                                                .add("to", self->callee_label())
                                                .add("method", method));
    // The request is sent once: the output gate releases it, or a broken gate drops it.
    auto send = [self, call_id, method, args = std::move(args), outcome]() mutable { self->send(call_id, method, std::move(args), outcome); };
    Incarnation* caller = self->live_caller();
    if (caller) {
      caller->begin_external_wait();
      caller->hold("call", std::move(send), [] {});
    } else {
      send();
    }
    struct Leave {
      SimObject* object;
      int64_t incarnation;
      ~Leave() {
        if (object && object->live() && object->live()->number() == incarnation) object->live()->end_external_wait();
      }
    } leave{self->caller_object_, self->caller_incarnation_};
    Reply::Outcome reply = co_await outcome->outcome();
    if (reply.error) co_return Rethrow{std::move(reply.error)};
    co_return std::move(*reply.value);
  }

  Incarnation* live_caller() const {
    if (!caller_object_ || !caller_object_->live() || caller_object_->live()->number() != caller_incarnation_) return nullptr;
    return caller_object_->live();
  }
  std::string caller_label() const { return caller_object_ ? caller_object_->label() : "client"; }
  std::string callee_label() const { return class_name_ + "/" + name_; }

  // The call leaves the caller (after its output gate released it).
  void send(uint64_t call_id, const std::string& method, nlohmann::json args, std::shared_ptr<Reply> outcome) {
    World& world = runtime_.world();
    FaultInjector& faults = runtime_.faults();
    const FaultSite site{callee_label(), 0, "call"};
    const int64_t request_latency = faults.latency(LatencyKind::rpc);
    const int64_t reply_latency = faults.latency(LatencyKind::rpc);
    auto self = shared_from_this();
    if (faults.fires(FaultKind::rpc_overloaded, site) || runtime_.partitioned(callee_label()) ||
        (caller_object_ && runtime_.partitioned(caller_object_->label()))) {
      const bool overload = !runtime_.partitioned(callee_label()) && !(caller_object_ && runtime_.partitioned(caller_object_->label()));
      world.executor().after(request_latency, [self, call_id, outcome, overload] {
        if (overload) self->fail(call_id, outcome, overloaded(), kOverloaded, "not_delivered");
        else self->fail(call_id, outcome, connection_lost(), kConnectionLost, "not_delivered");
      });
      return;
    }
    if (faults.fires(FaultKind::rpc_request_lost, site)) {
      world.executor().after(request_latency + reply_latency, [self, call_id, outcome] {
        self->fail(call_id, outcome, connection_lost(), kConnectionLost, "request_lost");
      });
      return;
    }
    const int64_t delivery = std::max(last_delivery_, world.now() + request_latency);
    last_delivery_ = delivery;
    queue_.push_back(Pending{call_id, method, std::move(args), outcome, reply_latency});
    world.executor().at(delivery, [self] { self->deliver_next(); });
  }

  // Deliveries on one stub leave the queue in call order (E-order), whatever the executor's choice.
  void deliver_next() {
    Pending call = std::move(queue_.front());
    queue_.pop_front();
    if (call.outcome->settled()) return;  // the stub died meanwhile
    World& world = runtime_.world();
    SimObject& callee = runtime_.object(class_name_, name_);
    Incarnation& incarnation = callee.ensure_live();
    const auto trace_delivery = [&] {
      world.emit("rpc.deliver",
                 EventFields().add("call", call.id).add("stub", id_).add("to", callee.label()).add("incarnation", incarnation.number()));
    };
    trace_delivery();
    auto reply = std::make_shared<Reply>(world.executor());
    auto self = shared_from_this();
    world.tasks().spawn("rpc.reply", forward_reply(self, call.id, reply, call.outcome, call.reply_latency));
    // rpc.duplicate_delivery (arbitrary): the callee executes the call a second time; that reply is
    // lost. The request is kept for it only where the fault can fire.
    const bool may_duplicate = runtime_.faults().may_fire(FaultKind::rpc_duplicate_delivery);
    incarnation.deliver_call(call.method, may_duplicate ? call.args : std::move(call.args), reply);
    if (runtime_.faults().fires(FaultKind::rpc_duplicate_delivery, FaultSite{callee.label(), incarnation.number(), "deliver"}) && may_duplicate) {
      trace_delivery();
      incarnation.deliver_call(call.method, call.args, std::make_shared<Reply>(world.executor()));
    }
  }

  // Carries the callee's reply back: reply latency, stalls and lost replies.
  static Task<void> forward_reply(std::shared_ptr<SimStubChannel> self, uint64_t call_id, std::shared_ptr<Reply> reply,
                                  std::shared_ptr<Reply> outcome, int64_t latency) {
    World& world = self->runtime_.world();
    FaultInjector& faults = self->runtime_.faults();
    auto [value, error] = co_await reply->outcome();
    const FaultSite site{self->callee_label(), 0, "reply"};
    int64_t stall = 0;
    faults.fires(FaultKind::rpc_stall, site, [&] {
      stall = world.random().between(world.random().stream("rpc.stall"), kStallMinMs, kStallMaxMs);
      return nlohmann::json{{"delay", stall}};
    });
    co_await world.sleep_for(latency + stall);
    if (outcome->settled()) co_return;  // the stub died meanwhile: the caller already has its error
    if (!error && (faults.fires(FaultKind::rpc_reply_lost, site) || self->runtime_.partitioned(self->callee_label()))) {
      self->fail(call_id, outcome, connection_lost(), kConnectionLost, "reply_lost");
      co_return;
    }
    if (error) {
      bool breaks = true;
      std::string message;
      try {
        std::rethrow_exception(error);
      } catch (const RpcError& e) {
        breaks = !e.remote() || self->runtime_.options().remote_error_breaks_stub;
        message = e.what();
      } catch (const std::exception& e) {
        message = e.what();
      } catch (...) {
      }
      if (breaks) {
        self->fail(call_id, outcome, error, message, "error");
      } else {
        world.emit("rpc.reply", EventFields().add("call", call_id).add("ok", false));
        std::erase(self->in_flight_, outcome);
        outcome->set_error(error);
      }
      co_return;
    }
    world.emit("rpc.reply", EventFields().add("call", call_id).add("ok", true));
    std::erase(self->in_flight_, outcome);
    outcome->set_value(std::move(*value));
  }

  // A failure kills the stub: this call and every call in flight on it fail with the same error,
  // whose what() is `message`.
  void fail(uint64_t call_id, const std::shared_ptr<Reply>& outcome, std::exception_ptr error, std::string_view message, const char* how) {
    runtime_.world().emit("rpc.fail", {{"call", call_id}, {"stub", id_}, {"how", how}, {"error", message}});
    if (!broken_) broken_ = error;
    std::vector<std::shared_ptr<Reply>> all = std::move(in_flight_);
    in_flight_.clear();
    outcome->set_error(error);
    for (auto& other : all) other->set_error(broken_);
  }

  struct Pending {
    uint64_t id;
    std::string method;
    nlohmann::json args;
    std::shared_ptr<Reply> outcome;
    int64_t reply_latency;
  };

  ObjectRuntime& runtime_;
  SimObject* caller_object_;
  int64_t caller_incarnation_;
  std::string class_name_, name_;
  uint64_t id_;
  std::exception_ptr broken_;
  int64_t last_delivery_ = 0;
  std::deque<Pending> queue_;
  std::vector<std::shared_ptr<Reply>> in_flight_;
};

// Stubs handed out to one caller.
class CallerNamespace final : public ObjectNamespace {
 public:
  CallerNamespace(ObjectRuntime& runtime, Incarnation* caller, std::string className)
      : runtime_(runtime), caller_(caller), class_name_(std::move(className)) {}
  Stub get(std::string_view name) override {
    return Stub(std::make_shared<SimStubChannel>(runtime_, caller_, class_name_, std::string(name)));
  }

 private:
  ObjectRuntime& runtime_;
  Incarnation* caller_;
  std::string class_name_;
};

ObjectNamespace& Incarnation::objects(std::string_view className) {
  auto it = namespaces_.find(className);
  if (it == namespaces_.end())
    it = namespaces_.emplace(std::string(className), std::make_unique<CallerNamespace>(object_.runtime(), this, std::string(className))).first;
  return *it->second;
}

ObjectNamespace& ObjectRuntime::client(const std::string& className) {
  auto& slot = clients_[className];
  if (!slot) slot = std::make_unique<CallerNamespace>(*this, nullptr, className);
  return *slot;
}

}  // namespace durasim::sim
