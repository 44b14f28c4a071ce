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

// The policy says which flow it needs: its own protocol, named by its traits row (all-reduce,
// VAP; PolicyTraits::own_protocol in sim/algorithms.hpp), so that a policy with its own data flow
// adds no case here; else its cache mode; else the pull modes, in the cluster's order.
std::unique_ptr<WorkerProtocol> make_protocol(WorkerCore& c) {
  if (const ProtocolFactory own = traits(c.scenario().policy.type).own_protocol) return own(c);
  if (c.policy().cache_mode() != CacheMode::kPullEveryIteration) return make_cache_protocol(c);
  if (c.scenario().cluster.order == Order::kUniform) return make_uniform_order(c);
  return std::make_unique<PullProtocol>(c);
}

}  // namespace stalesim
