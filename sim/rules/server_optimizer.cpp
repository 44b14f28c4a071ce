#include "sim/rules/server_optimizer.hpp"

#include <algorithm>

namespace stalesim {

ServerOptimizer::ServerOptimizer(const Scenario& s, int32_t workers, int64_t parameters, bool math,
                                 UpdateKind kind)
    : rule_(make_rule(s.optimizer, workers, parameters)),
      math_(math),
      kind_(kind),
      momentum_(static_cast<float>(s.optimizer.momentum)),
      per_clock_(s.optimizer.momentum_step == MomentumStep::kPerClock && kind == UpdateKind::kGradient) {
  if (traits(s.policy.type).averages_pushes) c_ = std::max<int64_t>(1, workers / s.policy.n);
  const auto n = static_cast<size_t>(math ? parameters : 0);
  update_.resize(n);
  if (c_ > 1 || per_clock_) sum_.resize(n);
  if (momentum_ > 0 || per_clock_) velocity_.assign(n, 0.0f);
  if (per_clock_) clock_start_.resize(n);
}

double ServerOptimizer::add(ParamStore& store, std::span<const float> grad, const GradientInfo& info,
                            std::span<const float> read_params) {
  if (kind_ == UpdateKind::kDelta) {  // added as is, in parameter order, in one pass
    const auto [from, to] = store.write_next();
    for (size_t i = 0; i < to.size(); ++i) to[i] = from[i] + grad[i];
    store.commit();
    return 1.0;
  }
  if (per_clock_) return add_per_clock(store, grad, info, read_params);
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

// Per-clock momentum (server_optimizer.hpp). The sums run in push order, so a clock of n pushes of
// the same update u gives the bits of one momentum step on u + u + ... + u.
double ServerOptimizer::add_per_clock(ParamStore& store, std::span<const float> grad,
                                      const GradientInfo& info, std::span<const float> read_params) {
  double step = 0.0;
  if (math_) {
    step = rule_->compute_update(update_, grad, info, store.peek(), read_params);
    if (info.version_read != clock_read_) {  // a new clock: close the open one, v_k = mu v + sum
      if (clock_read_ >= 0)
        for (size_t i = 0; i < velocity_.size(); ++i) velocity_[i] = momentum_ * velocity_[i] + sum_[i];
      const auto now = store.peek();
      std::copy(now.begin(), now.end(), clock_start_.begin());
      std::copy(update_.begin(), update_.end(), sum_.begin());
    } else {
      for (size_t i = 0; i < sum_.size(); ++i) sum_[i] += update_[i];
    }
    const std::span<float> to = store.write_next().to;
    for (size_t i = 0; i < to.size(); ++i) to[i] = clock_start_[i] - (momentum_ * velocity_[i] + sum_[i]);
  }
  clock_read_ = info.version_read;
  store.commit();
  return step;
}

}  // namespace stalesim
