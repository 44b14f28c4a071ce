#include "sim/worker/cluster_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace stalesim {

namespace {
constexpr int32_t kSlow = 0, kPause = 1, kDrift = 2;
constexpr int64_t kForever = std::numeric_limits<int64_t>::max();
}  // namespace

ClusterSchedule::ClusterSchedule(const ClusterSpec& cluster) {
  std::vector<int32_t> first(cluster.workers.size(), 0);
  for (size_t g = 1; g < cluster.workers.size(); ++g) first[g] = first[g - 1] + cluster.workers[g - 1].count;
  for (const auto& e : cluster.schedule) {
    std::vector<int32_t> ids;
    if (e.group) {
      const auto g = static_cast<size_t>(*e.group);
      for (int32_t k = 0; k < cluster.workers[g].count; ++k) ids.push_back(first[g] + k);
    } else {
      for (int64_t id : e.workers) ids.push_back(static_cast<int32_t>(id));
    }
    const int64_t from = SimTime::from_seconds(e.at_s).ns();
    const int64_t to = e.until_s ? SimTime::from_seconds(*e.until_s).ns() : kForever;
    for (int32_t id : ids) {
      if (e.kind == ScheduleKind::kCrash) {
        crashes_.push_back({SimTime::from_ns(from), id,
                            e.until_s ? std::optional<SimTime>(SimTime::from_ns(to)) : std::nullopt});
        continue;
      }
      const int32_t kind = e.kind == ScheduleKind::kSlow    ? kSlow
                           : e.kind == ScheduleKind::kPause ? kPause
                                                            : kDrift;
      entries_.push_back({id, kind, from, to, e.factor});
    }
  }
  std::stable_sort(entries_.begin(), entries_.end());
  std::stable_sort(crashes_.begin(), crashes_.end(), [](const Crash& a, const Crash& b) {
    return a.at != b.at ? a.at < b.at : a.worker < b.worker;
  });
}

bool ClusterSchedule::affects_compute(int32_t w) const {
  return std::binary_search(entries_.begin(), entries_.end(), Entry{.worker = w});
}

SimTime ClusterSchedule::compute_end(int32_t w, SimTime start, double work_ns) const {
  const auto [lo, hi] = std::equal_range(entries_.begin(), entries_.end(), Entry{.worker = w});
  double remaining = work_ns;
  // Drift: the multiplier at the iteration's start, 1 at `from` rising linearly to `factor` at `to`.
  for (auto it = lo; it != hi; ++it) {
    if (it->kind != kDrift || start.ns() < it->from) continue;
    const double f =
        std::min(1.0, static_cast<double>(start.ns() - it->from) / static_cast<double>(it->to - it->from));
    remaining *= 1.0 + (it->factor - 1.0) * f;
  }
  int64_t t = start.ns();
  double end = 0;
  for (;;) {
    double mult = 1.0;
    bool paused = false;
    int64_t next = kForever;
    for (auto it = lo; it != hi; ++it) {
      if (it->kind == kDrift) continue;
      if (t < it->from) {
        next = std::min(next, it->from);
      } else if (t < it->to) {
        next = std::min(next, it->to);
        if (it->kind == kPause)
          paused = true;
        else
          mult *= it->factor;
      }
    }
    if (paused) {  // a pause always ends (validated): no progress until then
      t = next;
      continue;
    }
    const double need = remaining * mult;
    if (next == kForever || need <= static_cast<double>(next - t)) {
      end = static_cast<double>(t) + need;
      break;
    }
    remaining -= static_cast<double>(next - t) / mult;
    t = next;
  }
  const SimTime at = SimTime::from_ns_checked(end, "the iteration's end under cluster.schedule");
  return SimTime::from_ns(std::max(start.ns() + 1, at.ns()));
}

}  // namespace stalesim
