#include "sim/policies/dssp.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <limits>

namespace stalesim {

namespace {}  // namespace

DsspPolicy::DsspPolicy(int64_t s_lower, int64_t r_max, Grant grant, int32_t workers)
    : s_(s_lower), r_max_(r_max), grant_(grant), w_(static_cast<size_t>(workers)) {}

void DsspPolicy::on_push(int32_t w, SimTime now, const ClockTable& clocks) {
  now_ = now;
  WorkerState& st = w_[static_cast<size_t>(w)];
  st.prev = st.last;
  st.last = now;
  ++st.pushes;
  if (st.extra > 0) {
    --st.extra;
    st.decision = true;
  } else {
    st.decision = decide(w, clocks);
  }
  st.fresh = true;
}

bool DsspPolicy::may_start(int32_t w, const ClockTable& clocks) {
  WorkerState& st = w_[static_cast<size_t>(w)];
  if (st.fresh) {
    st.fresh = false;
    return st.decision;
  }
  return decide(w, clocks);  // a waiting worker, re-checked after another worker's push
}

bool DsspPolicy::decide(int32_t w, const ClockTable& clocks) {
  if (clocks.clock(w) - clocks.min_clock() <= s_) return true;
  if (clocks.clock(w) != clocks.max_clock()) return false;
  // The gap after spending a grant of r is gap + r - 1 (bounded; the grant is the first extra
  // clock) or gap + r (literal); capping r here keeps it within the bound whatever the gap is now.
  // Unbounded: r_max is the only cap, whatever the gap already run ahead.
  const int64_t cap = grant_ == Grant::kUnbounded
                          ? r_max_
                          : std::min(r_max_, s_ + r_max_ + 1 - (clocks.clock(w) - clocks.min_clock()));
  if (cap <= 0) return false;
  const int64_t r = controller(w, clocks.slowest(), clocks, cap);
  if (r == 0) return false;
  w_[static_cast<size_t>(w)].extra = grant_ == Grant::kBounded ? r - 1 : r;
  return true;
}

int64_t DsspPolicy::controller(int32_t fastest, int32_t slowest, const ClockTable& clocks, int64_t cap) {
  const WorkerState& f = w_[static_cast<size_t>(fastest)];
  const WorkerState& s = w_[static_cast<size_t>(slowest)];
  Decision d;
  d.time = now_;
  d.worker = fastest;
  d.clock = clocks.clock(fastest);
  d.slowest = slowest;
  d.slowest_clock = clocks.clock(slowest);
  d.gap = clocks.clock(fastest) - clocks.min_clock();
  if (f.pushes >= 2) {
    const SimTime last_s = s.pushes >= 1 ? s.last : SimTime::zero();
    d.fastest_interval = f.last - f.prev;
    d.slowest_interval = s.pushes >= 2 ? s.last - s.prev : now_ - last_s;
    int64_t best = std::numeric_limits<int64_t>::max();
    for (int64_t k = 0; k <= cap; ++k) {
      const int64_t fk = f.last.ns() + k * d.fastest_interval.ns();
      for (int64_t j = 1; j <= r_max_; ++j) {
        const int64_t sj = last_s.ns() + j * d.slowest_interval.ns();
        const int64_t gap = std::llabs(fk - sj);
        if (gap < best) {  // strict: the first k (then the first j) wins ties
          best = gap;
          d.granted = k;
          d.predicted_wait = SimTime::from_ns(gap);
          d.fastest_at = SimTime::from_ns(fk);
          d.slowest_at = SimTime::from_ns(sj);
          d.slowest_step = j;
        }
      }
    }
  }
  d.threshold = d.gap - 1 + d.granted + (grant_ != Grant::kBounded && d.granted > 0 ? 1 : 0);
  decisions_.push_back(d);
  return d.granted;
}

nlohmann::json DsspPolicy::facts() const {
  std::vector<int64_t> histogram(static_cast<size_t>(r_max_ + 1), 0);
  // Sums in decision order (integers: exact).
  int64_t threshold_sum = 0, granted_sum = 0, threshold_max = 0;
  for (const auto& d : decisions_) {
    ++histogram[static_cast<size_t>(d.granted)];
    threshold_sum += d.threshold;
    granted_sum += d.granted;
    threshold_max = std::max(threshold_max, d.threshold);
  }
  const auto mean = [&](int64_t sum) {
    return decisions_.empty()
               ? nlohmann::json(nullptr)
               : nlohmann::json(static_cast<double>(sum) / static_cast<double>(decisions_.size()));
  };
  // mean_effective_threshold: the threshold each decision put in force (Decision::threshold),
  // averaged over decisions; it counts the gap already run ahead, which s_L + r* (mean_granted
  // added to s_L) does not once grants repeat.
  return {{"type", "dssp"},
          {"s_lower", s_},
          {"r_max", r_max_},
          {"grant", std::string(enum_name(grant_))},
          {"decisions", decisions_.size()},
          {"grants_histogram", histogram},
          {"mean_granted", mean(granted_sum)},
          {"mean_effective_threshold", mean(threshold_sum)},
          {"max_effective_threshold",
           decisions_.empty() ? nlohmann::json(nullptr) : nlohmann::json(threshold_max)}};
}

std::string DsspPolicy::bound_text() const {
  return fmt::format("s_L = {}, r_max = {}{}", s_, r_max_,
                     grant_ == Grant::kUnbounded ? ", unbounded grants" : "");
}

std::string DsspPolicy::wait_detail(int32_t, int64_t clock, const ClockTable& clocks,
                                    int64_t noted_clock) const {
  if (clock != clocks.max_clock())
    return fmt::format("; not the fastest (clock {}), so no grant", clocks.max_clock());
  if (noted_clock == clock || grant_ == Grant::kUnbounded) return "; the controller granted none";
  return "; a grant would break the bound s_L + r_max";
}

}  // namespace stalesim
