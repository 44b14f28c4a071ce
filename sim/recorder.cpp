#include "sim/recorder.hpp"

#include <algorithm>

namespace stalesim {

std::string_view to_string(RunStatus s) {
  switch (s) {
    case RunStatus::kCompleted: return "completed";
    case RunStatus::kDiverged: return "diverged";
    case RunStatus::kDeadlock: return "deadlock";
    case RunStatus::kInterrupted: return "interrupted";
  }
  return "unknown";
}

void Histogram::add(int64_t v) {
  const auto i = static_cast<size_t>(std::max<int64_t>(v, 0));
  if (i >= bins_.size()) bins_.resize(i + 1, 0);
  ++bins_[i];
  ++count_;
  sum_ += v;
  max_ = std::max(max_, v);
}

}  // namespace stalesim
