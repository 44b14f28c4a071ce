// Crashes and rejoins of the cluster schedule (WorkerCore, sim/worker/core.hpp; issue 5).

#include <algorithm>

#include "sim/worker/core.hpp"

namespace stalesim {

void WorkerCore::schedule_crashes() {
  const auto& crashes = schedule_.crashes();
  for (size_t i = 0; i < crashes.size(); ++i) {
    engine_.schedule(crashes[i].at, kCrash, static_cast<uint32_t>(crashes[i].worker), i);
    if (crashes[i].rejoin) {
      engine_.schedule(*crashes[i].rejoin, kRejoin, static_cast<uint32_t>(crashes[i].worker), i);
      ++pending_rejoins_;
    }
  }
}

bool WorkerCore::crash(Worker& w) {
  if (w.down || stopped_) return false;
  w.down = true;
  ++w.gen;
  w.push_bytes.clear();  // its pushes in flight are lost with it
  ++down_count_;
  DeferredGradient* pending = defer_ ? &pending_[static_cast<size_t>(w.id)] : nullptr;
  if (math_ && (w.task || (pending && pending->pending) || w.params))
    begun_ = std::max<int64_t>(0, begun_ - 1);
  release_task(w);
  w.params.reset();
  if (pending) pending->pending = false;
  set_state(w, WorkerState::kWaiting);
  if (const auto it = std::find(waiting_.begin(), waiting_.end(), w.id); it != waiting_.end())
    waiting_.erase(it);
  const bool alone = down_count_ == clocks_.workers();
  if (sc_.cluster.on_crash == OnCrash::kDrop && !alone && clocks_.drop(w.id)) release_waiting();
  if (all_blocked()) deadlock();
  return true;
}

void WorkerCore::rejoin(Worker& w) {
  --pending_rejoins_;
  if (!w.down || stopped_) return;
  w.down = false;
  --down_count_;
  if (clocks_.dropped(w.id)) clocks_.rejoin(w.id);
  engine_.schedule_in(latency_of(w), kRejoinRequest, static_cast<uint32_t>(w.id), w.gen);
}

void WorkerCore::on_rejoin_request(Worker& w) {
  if (policy_->may_start(w.id, clocks_)) return grant(w);
  waiting_.push_back(w.id);
}

}  // namespace stalesim
