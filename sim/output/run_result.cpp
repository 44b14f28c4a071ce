#include "sim/output/run_result.hpp"

#include <algorithm>
#include <cmath>

namespace stalesim {

void Histogram::add(int64_t v) {
  const auto i = static_cast<size_t>(std::max<int64_t>(v, 0));
  if (i >= bins_.size()) bins_.resize(i + 1, 0);
  ++bins_[i];
  ++count_;
  sum_ += v;
  max_ = std::max(max_, v);
}

int64_t Histogram::percentile(double q) const {
  if (count_ == 0) return 0;
  // rank = ceil(q x count), at least 1, computed so that q = 0.99 with count 100 gives 99.
  auto rank = static_cast<int64_t>(std::ceil(q * static_cast<double>(count_) - 1e-9));
  rank = std::clamp<int64_t>(rank, 1, count_);
  int64_t seen = 0;
  for (size_t v = 0; v < bins_.size(); ++v) {
    seen += bins_[v];
    if (seen >= rank) return static_cast<int64_t>(v);
  }
  return max_;
}

const std::string& RunResult::recording(std::string_view file) const {
  static const std::string kNone;
  const auto it = recorded.find(file);
  return it == recorded.end() ? kNone : it->second;
}

}  // namespace stalesim
