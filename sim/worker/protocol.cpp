// WorkerProtocol's default start and make_protocol(): which protocol a scenario runs
// (sim/worker/protocol.hpp).

#include "sim/worker/protocol.hpp"

#include "sim/worker/pull.hpp"

namespace stalesim {

std::unique_ptr<WorkerProtocol> make_cache_protocol(WorkerCore& c);  // cache.cpp
std::unique_ptr<WorkerProtocol> make_uniform_order(WorkerCore& c);   // uniform.cpp

void WorkerProtocol::start() {
  WorkerCore& c = c_;
  for (auto& w : c.workers())
    c.engine().schedule(c.latency_of(w), kPullRequestArrives, static_cast<uint32_t>(w.id), w.gen);
  c.schedule_crashes();
}

// The flows of a parameter server's policy: its cache mode's, else the pull modes in the
// cluster's order.
std::unique_ptr<WorkerProtocol> make_ps_protocol(WorkerCore& c) {
  if (c.policy().cache_mode() != CacheMode::kPullEveryIteration) return make_cache_protocol(c);
  if (c.scenario().cluster.order == Order::kUniform) return make_uniform_order(c);
  return std::make_unique<PullProtocol>(c);
}

// The protocol the policy's line in STALESIM_POLICIES names (all-reduce and VAP have their own),
// so that a policy with its own data flow adds no case here.
std::unique_ptr<WorkerProtocol> make_protocol(WorkerCore& c) {
  switch (c.scenario().policy.type) {
#define STALESIM_PROTOCOL_CASE(value, protocol) \
  case PolicyType::value:                       \
    return make_##protocol##_protocol(c);
    STALESIM_POLICIES(STALESIM_PROTOCOL_CASE)
#undef STALESIM_PROTOCOL_CASE
  }
  return nullptr;  // not reached: the switch covers every PolicyType
}

}  // namespace stalesim
