#pragma once
// A std::deque that allocates nothing until its first element (issue 5: per-worker state size).
// libstdc++'s std::deque allocates a map and a 512-byte node when constructed, which for 100,000
// workers with two per worker is over 100 MB of state most runs (the pull modes) never use.
// Holds the deque behind a pointer; offers the operations the simulation uses.

#include <cstddef>
#include <deque>
#include <memory>
#include <utility>

namespace stalesim {

template <class T>
class LazyDeque {
 public:
  using iterator = typename std::deque<T>::iterator;
  using const_iterator = typename std::deque<T>::const_iterator;

  bool empty() const { return !d_ || d_->empty(); }
  size_t size() const { return d_ ? d_->size() : 0; }
  T& front() { return d_->front(); }
  const T& front() const { return d_->front(); }
  T& back() { return d_->back(); }
  const T& back() const { return d_->back(); }
  T& operator[](size_t i) { return (*d_)[i]; }
  const T& operator[](size_t i) const { return (*d_)[i]; }
  void push_back(T&& x) { deque().push_back(std::move(x)); }
  void push_back(const T& x) { deque().push_back(x); }
  void pop_front() { d_->pop_front(); }
  void clear() { d_.reset(); }
  iterator begin() { return deque().begin(); }
  iterator end() { return deque().end(); }
  const_iterator begin() const { return d_ ? d_->cbegin() : const_iterator(); }
  const_iterator end() const { return d_ ? d_->cend() : const_iterator(); }

 private:
  std::deque<T>& deque() {
    if (!d_) d_ = std::make_unique<std::deque<T>>();
    return *d_;
  }
  std::unique_ptr<std::deque<T>> d_;
};

// A FIFO queue that keeps its oldest element inline and only the others in a LazyDeque, so that a
// queue that rarely holds more than one element (a worker's pushes on the wire in the pull modes)
// allocates nothing (issue 21: at 100,000 workers a deque each was 65 MB of allocations and page
// faults in the first clock). kEmpty marks the empty head, so the queue is two words.
// REQUIRES: kEmpty is never pushed.
template <class T, T kEmpty>
class InlineHeadQueue {
 public:
  bool empty() const { return head_ == kEmpty; }
  size_t size() const { return empty() ? 0 : 1 + rest_.size(); }
  const T& front() const { return head_; }
  void push_back(const T& x) {
    if (empty())
      head_ = x;
    else
      rest_.push_back(x);
  }
  void pop_front() {
    if (rest_.empty()) {
      head_ = kEmpty;
    } else {
      head_ = rest_.front();
      rest_.pop_front();
    }
  }
  void clear() {
    head_ = kEmpty;
    rest_.clear();
  }

 private:
  T head_ = kEmpty;
  LazyDeque<T> rest_;
};

}  // namespace stalesim
