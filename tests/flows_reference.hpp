#pragma once
// The reference for sim/network/flows.hpp's FlowNetwork: the implementation as first written
// (issue 33), which recomputes everything at each flow start and end: the channels in use and
// their flow lists rebuilt, progressive filling over every channel with every rem and count kept
// up to date, every flow advanced and its finish recomputed. FlowNetwork must give bit-identical
// rates, finish times, counters and load reports (tests/test_flows.cpp drives both with random
// traffic). Kept verbatim but for the class name, so compare it with git history, not improve it.

#include <algorithm>
#include <cmath>
#include <functional>
#include <span>
#include <utility>
#include <vector>

#include "base/sim_time.hpp"
#include "sim/engine/engine.hpp"
#include "sim/network/flows.hpp"

namespace stalesim::testing {

class ReferenceFlowNetwork {
 public:
  using Part = FlowNetwork::Part;
  using Done = FlowNetwork::Done;
  using ChannelStats = FlowNetwork::ChannelStats;

  // `channel_gbps`: each channel's bandwidth (Gbit/s = bit/ns), > 0. `event_kind`: the engine
  // event kind the network's own finish events use; the owner routes them to on_event().
  ReferenceFlowNetwork(std::vector<double> channel_gbps, uint32_t event_kind);

  // Starts a message of `parts` now. `done` runs when every part has arrived (at once, after the
  // latency, when every part is empty).
  void send(Engine& engine, std::span<const Part> parts, Done done);
  // Runs the network's finish event: ends the flows due now, recomputes the rates.
  void on_event(Engine& engine);

  // Called, when set, for each channel whose flow count or used bandwidth changed, after the
  // rates are recomputed: (now, channel, used Gbit/s, flows). For the trace's link counters.
  using LoadHook = std::function<void(SimTime, int32_t, double, int32_t)>;
  void on_load(LoadHook hook) {
    hook_ = std::move(hook);
    last_load_.assign(capacity_.size(), 0.0);
    last_flows_.assign(capacity_.size(), 0);
  }

  const std::vector<ChannelStats>& stats() const { return stats_; }
  size_t active_flows() const { return flows_.size(); }
  // Current rate (Gbit/s) of the flows in start order, for tests.
  std::vector<double> rates() const;

 private:
  struct Flow {
    std::span<const int32_t> route;
    double left_bits = 0;
    double rate = 0;  // bit/ns
    int64_t finish = 0;
    int64_t bytes = 0;
    SimTime latency;
    int32_t message = 0;
  };
  struct Message {
    int32_t parts_left = 0;
    SimTime arrive;
    Done done;
  };
  void advance(SimTime now);
  void recompute(SimTime now);
  void reschedule(Engine& engine);
  void part_arrived(Engine& engine, int32_t message, SimTime at);
  void report_loads(SimTime now);
  void channel_up(int32_t ch, int64_t now);
  void channel_down(int32_t ch, int64_t now);

  std::vector<double> capacity_;
  uint32_t kind_;
  std::vector<Flow> flows_;
  std::vector<Message> messages_;
  std::vector<int32_t> free_messages_;
  std::vector<ChannelStats> stats_;
  SimTime last_;
  EventId pending_{};
  int64_t pending_at_ = -1;
  // Progressive filling scratch, by channel; `used_` lists the channels with flows.
  std::vector<double> rem_;
  std::vector<int32_t> unfixed_;
  std::vector<int32_t> used_;
  std::vector<int32_t> start_;  // per channel: its flows are on_channel_[start_, end_)
  std::vector<int32_t> end_;
  std::vector<int32_t> on_channel_;
  std::vector<uint8_t> fixed_;
  std::vector<std::pair<double, int32_t>> heap_;  // (share, channel)
  std::vector<Flow> ended_;                       // scratch of on_event
  std::vector<double> load_;                      // scratch of report_loads
  LoadHook hook_;
  std::vector<double> last_load_;  // by channel, as last reported (hook set only)
  std::vector<int32_t> last_flows_;
  std::vector<int32_t> touched_;  // channels whose load may have changed since the last report
};


inline ReferenceFlowNetwork::ReferenceFlowNetwork(std::vector<double> channel_gbps, uint32_t event_kind)
    : capacity_(std::move(channel_gbps)),
      kind_(event_kind),
      stats_(capacity_.size()),
      rem_(capacity_.size(), 0.0),
      unfixed_(capacity_.size(), 0),
      start_(capacity_.size(), 0),
      end_(capacity_.size(), 0) {}

inline std::vector<double> ReferenceFlowNetwork::rates() const {
  std::vector<double> r;
  for (const Flow& f : flows_) r.push_back(f.rate);
  return r;
}

inline void ReferenceFlowNetwork::channel_up(int32_t ch, int64_t now) {
  ChannelStats& s = stats_[static_cast<size_t>(ch)];
  if (s.active++ == 0) s.since_ns = now;
  s.peak = std::max(s.peak, s.active);
}

inline void ReferenceFlowNetwork::channel_down(int32_t ch, int64_t now) {
  ChannelStats& s = stats_[static_cast<size_t>(ch)];
  if (--s.active == 0) s.busy_ns += now - s.since_ns;
}

inline void ReferenceFlowNetwork::send(Engine& engine, std::span<const Part> parts, Done done) {
  const SimTime now = engine.now();
  int32_t m = 0;
  if (!free_messages_.empty()) {
    m = free_messages_.back();
    free_messages_.pop_back();
  } else {
    m = static_cast<int32_t>(messages_.size());
    messages_.emplace_back();
  }
  messages_[static_cast<size_t>(m)] = Message{static_cast<int32_t>(parts.size()) + 1, now, done};
  advance(now);
  bool started = false;
  for (const Part& p : parts) {
    if (p.bytes <= 0 || p.route.empty()) {
      part_arrived(engine, m, now + p.latency);
      continue;
    }
    for (int32_t ch : p.route) channel_up(ch, now.ns());
    flows_.push_back(Flow{p.route, static_cast<double>(p.bytes) * 8.0, 0.0, 0, p.bytes, p.latency, m});
    started = true;
  }
  part_arrived(engine, m, now);  // the +1 above: no completion before every part is registered
  if (!started) return;
  recompute(now);
  reschedule(engine);
  if (hook_) report_loads(now);
}

inline void ReferenceFlowNetwork::report_loads(SimTime now) {
  // Every channel in use now, and those that were in use at the last report.
  for (int32_t ch : used_) touched_.push_back(ch);
  std::vector<double>& load = load_;
  load.assign(capacity_.size(), 0.0);
  for (const Flow& f : flows_)
    for (int32_t ch : f.route) load[static_cast<size_t>(ch)] += f.rate;
  std::sort(touched_.begin(), touched_.end());
  touched_.erase(std::unique(touched_.begin(), touched_.end()), touched_.end());
  std::vector<int32_t> still;
  for (int32_t ch : touched_) {
    const auto c = static_cast<size_t>(ch);
    const int32_t n = stats_[c].active;
    if (load[c] != last_load_[c] || n != last_flows_[c]) hook_(now, ch, load[c], n);
    last_load_[c] = load[c];
    last_flows_[c] = n;
    if (n > 0) still.push_back(ch);
  }
  touched_ = std::move(still);
}

inline void ReferenceFlowNetwork::part_arrived(Engine& engine, int32_t message, SimTime at) {
  Message& msg = messages_[static_cast<size_t>(message)];
  msg.arrive = max(msg.arrive, at);
  if (--msg.parts_left > 0) return;
  engine.schedule(msg.arrive, msg.done.kind, msg.done.target, msg.done.payload);
  free_messages_.push_back(message);
}

inline void ReferenceFlowNetwork::on_event(Engine& engine) {
  const SimTime now = engine.now();
  if (now.ns() != pending_at_) return;  // superseded (cancelled events do not run; kept for safety)
  pending_ = EventId{};
  pending_at_ = -1;
  advance(now);
  // End the flows due now, in start order; keep the rest in order.
  size_t keep = 0;
  std::vector<Flow>& ended = ended_;
  ended.clear();
  for (Flow& f : flows_) {
    if (f.finish <= now.ns())
      ended.push_back(f);
    else
      flows_[keep++] = f;
  }
  flows_.resize(keep);
  for (const Flow& f : ended) {
    for (int32_t ch : f.route) {
      stats_[static_cast<size_t>(ch)].bytes += f.bytes;
      channel_down(ch, now.ns());
    }
  }
  if (!flows_.empty()) recompute(now);
  if (flows_.empty()) used_.clear();
  reschedule(engine);
  if (hook_) report_loads(now);
  for (const Flow& f : ended) part_arrived(engine, f.message, now + f.latency);
}

inline void ReferenceFlowNetwork::advance(SimTime now) {
  const auto dt = static_cast<double>((now - last_).ns());
  last_ = now;
  if (dt <= 0) return;
  for (Flow& f : flows_) f.left_bits = std::max(0.0, f.left_bits - f.rate * dt);
}

inline void ReferenceFlowNetwork::recompute(SimTime now) {
  // Channels in use, in first-use order, and each one's flows (a CSR list).
  for (int32_t ch : used_) unfixed_[static_cast<size_t>(ch)] = 0;
  used_.clear();
  for (const Flow& f : flows_)
    for (int32_t ch : f.route)
      if (unfixed_[static_cast<size_t>(ch)]++ == 0) used_.push_back(ch);
  int32_t total = 0;
  for (int32_t ch : used_) {
    start_[static_cast<size_t>(ch)] = total;
    total += unfixed_[static_cast<size_t>(ch)];
    rem_[static_cast<size_t>(ch)] = capacity_[static_cast<size_t>(ch)];
  }
  on_channel_.resize(static_cast<size_t>(total));
  for (int32_t ch : used_) end_[static_cast<size_t>(ch)] = start_[static_cast<size_t>(ch)];
  for (size_t i = 0; i < flows_.size(); ++i)
    for (int32_t ch : flows_[i].route)
      on_channel_[static_cast<size_t>(end_[static_cast<size_t>(ch)]++)] = static_cast<int32_t>(i);
  fixed_.assign(flows_.size(), 0);
  // Progressive filling with a min-heap of channel shares (rem / unfixed flows). Fixing flows at
  // the smallest share r only raises another channel's share ((rem - k r) / (n - k) >= rem / n
  // when r <= rem / n), so a key in the heap is a lower bound of its channel's share: an entry
  // whose share has grown since is pushed back with the new one, and the first entry popped
  // whose share is current is the smallest. Ties go to the lower channel number.
  heap_.clear();
  for (int32_t ch : used_)
    heap_.emplace_back(rem_[static_cast<size_t>(ch)] / unfixed_[static_cast<size_t>(ch)], ch);
  const auto later = [](const std::pair<double, int32_t>& a, const std::pair<double, int32_t>& b) {
    return a.first != b.first ? a.first > b.first : a.second > b.second;
  };
  std::make_heap(heap_.begin(), heap_.end(), later);
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    const auto [key, best] = heap_.back();
    heap_.pop_back();
    const auto b = static_cast<size_t>(best);
    if (unfixed_[b] == 0) continue;
    double share = std::max(0.0, rem_[b]) / unfixed_[b];
    if (share > key) {
      heap_.emplace_back(share, best);
      std::push_heap(heap_.begin(), heap_.end(), later);
      continue;
    }
    // A channel full to rounding error still gives its flows a positive rate.
    share = std::max(share, capacity_[b] * 1e-12);
    for (int32_t j = start_[b]; j < end_[b] && unfixed_[b] > 0; ++j) {
      const auto i = static_cast<size_t>(on_channel_[static_cast<size_t>(j)]);
      if (fixed_[i]) continue;
      fixed_[i] = 1;
      Flow& f = flows_[i];
      f.rate = share;
      for (int32_t ch : f.route) {
        rem_[static_cast<size_t>(ch)] -= share;
        --unfixed_[static_cast<size_t>(ch)];
      }
    }
  }
  for (Flow& f : flows_) {
    const double ns = f.left_bits / f.rate;
    f.finish = now.ns() + static_cast<int64_t>(std::ceil(ns));
  }
}

inline void ReferenceFlowNetwork::reschedule(Engine& engine) {
  int64_t next = -1;
  for (const Flow& f : flows_)
    if (next < 0 || f.finish < next) next = f.finish;
  if (next == pending_at_) return;
  if (pending_at_ >= 0) engine.cancel(pending_);
  pending_at_ = next;
  pending_ = next >= 0 ? engine.schedule(SimTime::from_ns(next), kind_) : EventId{};
}

}  // namespace stalesim::testing
