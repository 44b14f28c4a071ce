// Flow-level sharing of links (sim/network/flows.hpp): max-min fair rates by progressive filling,
// recomputed at every flow start and end, one rescheduled engine event at the earliest finish.

#include "sim/network/flows.hpp"

#include <algorithm>
#include <cmath>

namespace stalesim {

namespace {
constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
}  // namespace

FlowNetwork::FlowNetwork(std::vector<double> channel_gbps, uint32_t event_kind)
    : capacity_(std::move(channel_gbps)),
      kind_(event_kind),
      stats_(capacity_.size()),
      on_channel_(capacity_.size()),
      used_at_(capacity_.size(), -1) {}

std::vector<double> FlowNetwork::rates() const {
  std::vector<std::pair<uint64_t, double>> by_start;
  for (size_t i = 0; i < flows_.size(); ++i)
    if (flows_[i].seq != 0) by_start.emplace_back(flows_[i].seq, rate_[i]);
  std::sort(by_start.begin(), by_start.end());
  std::vector<double> r;
  for (const auto& sr : by_start) r.push_back(sr.second);
  return r;
}

void FlowNetwork::channel_up(int32_t ch, int32_t slot, int64_t now) {
  const auto c = static_cast<size_t>(ch);
  ChannelStats& s = stats_[c];
  if (s.active++ == 0) s.since_ns = now;
  s.peak = std::max(s.peak, s.active);
  // Slots start in increasing order of seq, so appending keeps the list in start order.
  on_channel_[c].push_back(slot);
  if (used_at_[c] < 0) {
    used_at_[c] = static_cast<int32_t>(used_.size());
    used_.push_back(ch);
  }
}

void FlowNetwork::channel_down(int32_t ch, int32_t slot, int64_t now) {
  const auto c = static_cast<size_t>(ch);
  ChannelStats& s = stats_[c];
  if (--s.active == 0) s.busy_ns += now - s.since_ns;
  auto& on = on_channel_[c];
  on.erase(std::find(on.begin(), on.end(), slot));
  if (on.empty()) {
    const int32_t last = used_.back();
    used_[static_cast<size_t>(used_at_[c])] = last;
    used_at_[static_cast<size_t>(last)] = used_at_[c];
    used_.pop_back();
    used_at_[c] = -1;
  }
}

void FlowNetwork::send(Engine& engine, std::span<const Part> parts, Done done) {
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
    int32_t slot = 0;
    if (!free_slots_.empty()) {
      slot = free_slots_.back();
      free_slots_.pop_back();
    } else {
      slot = static_cast<int32_t>(flows_.size());
      flows_.emplace_back();
      left_.push_back(0.0);
      rate_.push_back(0.0);
      finish_.push_back(kNever);
      fixed_.push_back(0);
      fixed_at_.push_back(0);
    }
    const auto i = static_cast<size_t>(slot);
    flows_[i] = Flow{p.route, p.bytes, p.latency, m, next_seq_++};
    left_[i] = static_cast<double>(p.bytes) * 8.0;
    rate_[i] = 0.0;
    ++live_;
    for (int32_t ch : p.route) channel_up(ch, slot, now.ns());
    started = true;
  }
  part_arrived(engine, m, now);  // the +1 above: no completion before every part is registered
  if (!started) return;
  recompute(engine, now);
  if (hook_) report_loads(now);
}

void FlowNetwork::report_loads(SimTime now) {
  // Every channel in use now, and those that were in use at the last report; a channel's load is
  // the sum of its flows' rates in start order.
  for (int32_t ch : used_) touched_.push_back(ch);
  std::sort(touched_.begin(), touched_.end());
  touched_.erase(std::unique(touched_.begin(), touched_.end()), touched_.end());
  still_.clear();
  for (int32_t ch : touched_) {
    const auto c = static_cast<size_t>(ch);
    double load = 0.0;
    for (int32_t slot : on_channel_[c]) load += rate_[static_cast<size_t>(slot)];
    const int32_t n = stats_[c].active;
    if (load != last_load_[c] || n != last_flows_[c]) hook_(now, ch, load, n);
    last_load_[c] = load;
    last_flows_[c] = n;
    if (n > 0) still_.push_back(ch);
  }
  touched_.swap(still_);
}

void FlowNetwork::part_arrived(Engine& engine, int32_t message, SimTime at) {
  Message& msg = messages_[static_cast<size_t>(message)];
  msg.arrive = max(msg.arrive, at);
  if (--msg.parts_left > 0) return;
  engine.schedule(msg.arrive, msg.done.kind, msg.done.target, msg.done.payload);
  free_messages_.push_back(message);
}

void FlowNetwork::on_event(Engine& engine) {
  const SimTime now = engine.now();
  if (now.ns() != pending_at_) return;  // superseded (cancelled events do not run; kept for safety)
  pending_ = EventId{};
  pending_at_ = -1;
  advance(now);
  // End the flows due now, in start order.
  std::vector<int32_t>& ended = ended_;
  ended.clear();
  for (size_t i = 0; i < finish_.size(); ++i)
    if (finish_[i] <= now.ns()) ended.push_back(static_cast<int32_t>(i));
  std::sort(ended.begin(), ended.end(), [this](int32_t a, int32_t b) {
    return flows_[static_cast<size_t>(a)].seq < flows_[static_cast<size_t>(b)].seq;
  });
  for (int32_t slot : ended) {
    const auto i = static_cast<size_t>(slot);
    for (int32_t ch : flows_[i].route) {
      stats_[static_cast<size_t>(ch)].bytes += flows_[i].bytes;
      channel_down(ch, slot, now.ns());
    }
    flows_[i].seq = 0;
    left_[i] = 0.0;
    rate_[i] = 0.0;
    finish_[i] = kNever;
    --live_;
  }
  if (live_ > 0)
    recompute(engine, now);
  else
    reschedule(engine, -1);
  if (hook_) report_loads(now);
  for (int32_t slot : ended) {
    const auto i = static_cast<size_t>(slot);
    part_arrived(engine, flows_[i].message, now + flows_[i].latency);
    free_slots_.push_back(slot);
  }
}

void FlowNetwork::advance(SimTime now) {
  const auto dt = static_cast<double>((now - last_).ns());
  last_ = now;
  if (dt <= 0) return;
  // Free slots have left 0 and rate 0, and stay so.
  const size_t n = left_.size();
  double* left = left_.data();
  const double* rate = rate_.data();
  for (size_t i = 0; i < n; ++i) left[i] = std::max(0.0, left[i] - rate[i] * dt);
}

void FlowNetwork::channel_state(size_t c, double& rem, int32_t& unfixed) {
  // The reference keeps rem and the count of unfixed flows of every channel up to date, each
  // fixed flow subtracting its rate from every channel of its route. Here they are computed when a
  // channel is popped, from its flows: rem = capacity minus the rate of each fixed flow, in the
  // order the reference subtracts them: fill after fill, and within one fill (one rate) as many
  // times as it fixed flows of this channel, so counts per fill suffice.
  unfixed = 0;
  marks_.clear();
  for (int32_t slot : on_channel_[c]) {
    const auto i = static_cast<size_t>(slot);
    if (fixed_[i] == fill_)
      marks_.push_back(fixed_at_[i]);
    else
      ++unfixed;
  }
  rem = capacity_[c];
  if (unfixed == 0) return;
  if (marks_.size() * 8 < shares_.size()) {
    std::sort(marks_.begin(), marks_.end());
    for (int32_t p : marks_) rem -= shares_[static_cast<size_t>(p)];
    return;
  }
  counts_.assign(shares_.size(), 0);
  for (int32_t p : marks_) ++counts_[static_cast<size_t>(p)];
  for (size_t p = 0; p < counts_.size(); ++p)
    for (int32_t k = 0; k < counts_[p]; ++k) rem -= shares_[p];
}

void FlowNetwork::recompute(Engine& engine, SimTime now) {
  ++fill_;
  shares_.clear();
  size_t to_fix = live_;
  // Progressive filling with a min-heap of channel shares (rem / unfixed flows). Fixing flows at
  // the smallest share r only raises another channel's share ((rem - k r) / (n - k) >= rem / n
  // when r <= rem / n), so a key in the heap is a lower bound of its channel's share: an entry
  // whose share has grown since is pushed back with the new one, and the first entry popped
  // whose share is current is the smallest. Ties go to the lower channel number. Once every flow
  // is fixed, every channel has unfixed 0 and the remaining entries would change nothing.
  heap_.clear();
  for (int32_t ch : used_) {
    const auto c = static_cast<size_t>(ch);
    heap_.emplace_back(capacity_[c] / static_cast<int32_t>(on_channel_[c].size()), ch);
  }
  const auto later = [](const std::pair<double, int32_t>& a, const std::pair<double, int32_t>& b) {
    return a.first != b.first ? a.first > b.first : a.second > b.second;
  };
  std::make_heap(heap_.begin(), heap_.end(), later);
  while (to_fix > 0 && !heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    const auto [key, best] = heap_.back();
    heap_.pop_back();
    const auto b = static_cast<size_t>(best);
    double rem = 0;
    int32_t unfixed = 0;
    channel_state(b, rem, unfixed);
    if (unfixed == 0) continue;
    double share = std::max(0.0, rem) / unfixed;
    if (share > key) {
      heap_.emplace_back(share, best);
      std::push_heap(heap_.begin(), heap_.end(), later);
      continue;
    }
    // A channel full to rounding error still gives its flows a positive rate.
    share = std::max(share, capacity_[b] * 1e-12);
    const auto fill = static_cast<int32_t>(shares_.size());
    shares_.push_back(share);
    for (int32_t slot : on_channel_[b]) {
      const auto i = static_cast<size_t>(slot);
      if (fixed_[i] == fill_) continue;
      fixed_[i] = fill_;
      fixed_at_[i] = fill;
      rate_[i] = share;
    }
    to_fix -= static_cast<size_t>(unfixed);
  }
  // Finish times, and the earliest (free slots have finish kNever and are left so).
  int64_t next = kNever;
  const size_t n = left_.size();
  for (size_t i = 0; i < n; ++i) {
    if (rate_[i] > 0) finish_[i] = now.ns() + static_cast<int64_t>(std::ceil(left_[i] / rate_[i]));
    next = std::min(next, finish_[i]);
  }
  reschedule(engine, next);
}

void FlowNetwork::reschedule(Engine& engine, int64_t next) {
  if (next == pending_at_) return;
  if (pending_at_ >= 0) engine.cancel(pending_);
  pending_at_ = next;
  pending_ = next >= 0 ? engine.schedule(SimTime::from_ns(next), kind_) : EventId{};
}

}  // namespace stalesim
