#include "sim/param_store.hpp"

#include <algorithm>

namespace stalesim {

ParamStore::ParamStore(int64_t count) : count_(count) {
  current_ = fresh_block();
  std::fill(current_->values.begin(), current_->values.end(), 0.0f);
  current_->refs = 1;
}

detail::Block* ParamStore::take_block() {
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
  return b;
}

detail::Block* ParamStore::fresh_block() {
  detail::Block* b = take_block();
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
  } else if (current_->pins > 0) {
    const detail::Block* old = move_pinned_current();
    current_->values = old->values;
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
  if (current_->pins > 0) {
    const detail::Block* old = move_pinned_current();
    return {old->values, current_->values};
  }
  return {current_->values, current_->values};
}

detail::Block* ParamStore::move_pinned_current() {
  detail::Block* old = current_;
  detail::Block* next = take_block();
  next->version = old->version;
  next->refs = 1;
  old->refs = 0;
  old->orphan = true;
  current_ = next;
  return old;
}

const detail::Block* ParamStore::pin(const Snapshot& s) {
  ++s.block_->pins;
  return s.block_;
}

void ParamStore::unpin(const detail::Block* pinned) {
  auto* b = const_cast<detail::Block*>(pinned);  // one of blocks_, all of them owned here
  if (--b->pins == 0 && b->orphan) {
    b->orphan = false;
    free_.push_back(b);
  }
}

void ParamStore::on_last_release(detail::Block* b) {
  --live_;
  if (b->pins > 0)
    b->orphan = true;  // freed by its last unpin
  else
    free_.push_back(b);
}

}  // namespace stalesim
