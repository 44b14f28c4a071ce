// WorkerProtocol's default start and make_protocol(): which protocol a scenario runs
// (sim/worker/protocol.hpp).

#include "sim/worker/protocol.hpp"

#include "sim/worker/pull.hpp"

namespace stalesim {

std::unique_ptr<WorkerProtocol> make_cache_protocol(WorkerCore& c);  // cache.cpp
std::unique_ptr<WorkerProtocol> make_vap_protocol(WorkerCore& c);    // vap_protocol.cpp
std::unique_ptr<WorkerProtocol> make_uniform_order(WorkerCore& c);   // uniform.cpp
std::unique_ptr<WorkerProtocol> make_allreduce(WorkerCore& c);       // allreduce.cpp

void WorkerProtocol::start() {
  WorkerCore& c = c_;
  for (auto& w : c.workers())
    c.engine().schedule(c.latency_of(w), kPullRequestArrives, static_cast<uint32_t>(w.id), w.gen);
  c.schedule_crashes();
}

// The policy says which flow it needs: a collective (all-reduce), a value gate (VAP), a cache
// mode; else the pull modes.
std::unique_ptr<WorkerProtocol> make_protocol(WorkerCore& c) {
  if (c.policy().all_reduce()) return make_allreduce(c);
  if (c.policy().value_gate()) return make_vap_protocol(c);
  if (c.policy().cache_mode() != CacheMode::kPullEveryIteration) return make_cache_protocol(c);
  if (c.scenario().cluster.order == Order::kUniform) return make_uniform_order(c);
  return std::make_unique<PullProtocol>(c);
}

}  // namespace stalesim
