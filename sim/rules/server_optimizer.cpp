#include "sim/rules/server_optimizer.hpp"

#include <algorithm>

namespace stalesim {

ServerOptimizer::ServerOptimizer(const Scenario& s, int32_t workers, int64_t parameters, bool math,
                                 UpdateKind kind)
    : rule_(make_rule(s.optimizer, workers, parameters)),
      math_(math),
      kind_(kind),
      momentum_(static_cast<float>(s.optimizer.momentum)) {
  if (traits(s.policy.type).averages_pushes) c_ = std::max<int64_t>(1, workers / s.policy.n);
  const auto n = static_cast<size_t>(math ? parameters : 0);
  update_.resize(n);
  if (c_ > 1) sum_.resize(n);
  if (momentum_ > 0) velocity_.assign(n, 0.0f);
}

double ServerOptimizer::add(ParamStore& store, std::span<const float> grad, const GradientInfo& info,
                            std::span<const float> read_params) {
  if (kind_ == UpdateKind::kDelta) {  // added as is, in parameter order, in one pass
    const auto [from, to] = store.write_next();
    for (size_t i = 0; i < to.size(); ++i) to[i] = from[i] + grad[i];
    store.commit();
    return 1.0;
  }
  if (math_ && c_ == 1 && momentum_ == 0) {
    if (const auto step = rule_->uniform_step(info)) {
      // One pass: w' = w - step * g, read from the held version and written to the next one. The
      // same float operations as the general path below (update = step * g; w -= update).
      const float eta = *step;
      const auto [from, to] = store.write_next();
      for (size_t i = 0; i < to.size(); ++i) to[i] = from[i] - eta * grad[i];
      store.commit();
      return eta;
    }
  }
  double step = 0.0;
  std::span<const float> delta;
  if (math_) {
    step = rule_->compute_update(update_, grad, info, store.peek(), read_params);
    delta = update_;
    if (c_ > 1) {
      if (pending_ == 0)
        std::copy(update_.begin(), update_.end(), sum_.begin());
      else
        for (size_t i = 0; i < sum_.size(); ++i) sum_[i] += update_[i];
    }
  }
  if (c_ > 1) {
    if (++pending_ < c_) return step;
    pending_ = 0;
    const float inv = 1.0f / static_cast<float>(c_);
    for (auto& x : sum_) x *= inv;
    delta = sum_;
  }
  if (math_) {
    if (momentum_ > 0) {
      for (size_t i = 0; i < velocity_.size(); ++i) velocity_[i] = momentum_ * velocity_[i] + delta[i];
      delta = velocity_;
    }
    const auto [from, to] = store.write_next();
    for (size_t i = 0; i < to.size(); ++i) to[i] = from[i] - delta[i];
  }
  store.commit();
  return step;
}

}  // namespace stalesim
