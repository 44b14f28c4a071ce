// Crashes and rejoins of the cluster schedule (sim/worker/faults.hpp).

#include "sim/worker/faults.hpp"

#include <algorithm>

namespace stalesim {

void schedule_crashes(WorkerCore& c) {
  const auto& crashes = c.schedule.crashes();
  for (size_t i = 0; i < crashes.size(); ++i) {
    c.engine.schedule(crashes[i].at, kCrash, static_cast<uint32_t>(crashes[i].worker), i);
    if (crashes[i].rejoin) {
      c.engine.schedule(*crashes[i].rejoin, kRejoin, static_cast<uint32_t>(crashes[i].worker), i);
      ++c.pending_rejoins;
    }
  }
}

void on_crash(WorkerCore& c, Worker& w) {
  if (w.down || c.stopped) return;
  w.down = true;
  ++w.gen;
  w.push_bytes.clear();  // its pushes in flight are lost with it
  c.changed_rows.forget(w.id);
  ++c.down_count;
  if (c.math && (w.task || (c.defer && c.cold_of(w).pending.pending) || w.params))
    c.begun = std::max<int64_t>(0, c.begun - 1);
  c.release_task(w);
  w.params.reset();
  if (c.defer) c.cold_of(w).pending.pending = false;
  c.set_state(w, WorkerState::kWaiting);
  if (const auto it = std::find(c.waiting.begin(), c.waiting.end(), w.id); it != c.waiting.end())
    c.waiting.erase(it);
  const bool alone = c.down_count == c.clocks.workers();
  if (c.sc.cluster.on_crash == OnCrash::kDrop && !alone && c.clocks.drop(w.id)) c.release_waiting();
  if (c.all_blocked()) c.deadlock();
}

void on_rejoin(WorkerCore& c, Worker& w) {
  --c.pending_rejoins;
  if (!w.down || c.stopped) return;
  w.down = false;
  --c.down_count;
  if (c.clocks.dropped(w.id)) c.clocks.rejoin(w.id);
  c.engine.schedule_in(c.latency_of(w), kRejoinRequest, static_cast<uint32_t>(w.id), w.gen);
}

void on_rejoin_request(WorkerCore& c, Worker& w) {
  if (c.policy->may_start(w.id, c.clocks)) return c.grant(w);
  c.waiting.push_back(w.id);
}

}  // namespace stalesim
