#include "sim/param_store.hpp"

#include <algorithm>

namespace stalesim {

ParamStore::ParamStore(int64_t count) : count_(count) {
  current_ = fresh_block();
  std::fill(current_->values.begin(), current_->values.end(), 0.0f);
  current_->refs = 1;
}

detail::Block* ParamStore::fresh_block() {
  detail::Block* b;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else {
    blocks_.push_back(std::make_unique<detail::Block>());
    b = blocks_.back().get();
    b->values.resize(static_cast<size_t>(count_));
  }
  b->refs = 0;
  ++live_;
  peak_live_ = std::max(peak_live_, live_);
  return b;
}

std::span<float> ParamStore::write() {
  if (current_->refs > 1) {
    detail::Block* copy = fresh_block();
    copy->values = current_->values;  // same size: copies without reallocating
    copy->version = current_->version;
    copy->refs = 1;
    --current_->refs;  // readers keep the old block alive
    current_ = copy;
    ++copies_;
  }
  return current_->values;
}

ParamStore::WriteView ParamStore::write_next() {
  if (current_->refs > 1) {
    detail::Block* next = fresh_block();
    next->version = current_->version;
    next->refs = 1;
    detail::Block* old = current_;
    --old->refs;  // readers keep the old block alive: `from` stays valid while they hold it
    current_ = next;
    ++copies_;
    return {old->values, next->values};
  }
  return {current_->values, current_->values};
}

void ParamStore::on_last_release(detail::Block* b) {
  --live_;
  free_.push_back(b);
}

}  // namespace stalesim
