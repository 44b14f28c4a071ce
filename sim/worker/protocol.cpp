// WorkerProtocol's default start and make_protocol(): which protocol a scenario runs
// (sim/worker/protocol.hpp).

#include "sim/worker/protocol.hpp"

#include "sim/worker/faults.hpp"
#include "sim/worker/pull.hpp"

namespace stalesim {

std::unique_ptr<WorkerProtocol> make_cache_protocol(WorkerCore& c);  // cache.cpp
std::unique_ptr<WorkerProtocol> make_vap_protocol(WorkerCore& c);    // vap.cpp
std::unique_ptr<WorkerProtocol> make_uniform_order(WorkerCore& c);   // uniform.cpp

void WorkerProtocol::start() {
  WorkerCore& c = c_;
  for (auto& w : c.workers)
    c.engine.schedule(c.latency_of(w), kPullRequestArrives, static_cast<uint32_t>(w.id), w.gen);
  schedule_crashes(c);
}

std::unique_ptr<WorkerProtocol> make_protocol(WorkerCore& c) {
  if (c.sc.policy.type == PolicyType::kVap) return make_vap_protocol(c);  // VAP's protocol builds its policy
  c.policy = make_policy(c.sc.policy, c.clocks.workers());
  if (c.policy->cache_mode() != CacheMode::kPullEveryIteration) return make_cache_protocol(c);
  if (c.sc.cluster.order == Order::kUniform) return make_uniform_order(c);
  return std::make_unique<PullProtocol>(c);
}

}  // namespace stalesim
